"""Validate mode (spec.mode / `krm-fn run --mode validate`), `krm-fn run --output`,
`krm-fn selfcheck`, and the render-in-CI pieces for Flux: the hooks of
.pre-commit-hooks.yaml and the render/check steps of deploy/flux/render-workflow.yaml, run
for real on the bundled example (bases/ + overlays/kpt/pin.yaml). The workflow's publish
steps (docker login, flux push artifact, git push) need a registry and a remote: they are
checked for shape only."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, check_golden, item, load, results, run_cli

PIN = ROOT / "overlays/kpt/pin.yaml"
INPUTS = [ROOT / "bases/vllm-cpu/deployment.yaml", ROOT / "bases/kserve/inferenceservice.yaml",
          ROOT / "bases/kserve/storage-container.yaml"]
GOLDEN = ROOT / "deploy/flux/example-rendered.yaml"
WORKFLOW = ROOT / "deploy/flux/render-workflow.yaml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
VENV_BIN = Path(sys.executable).parent


def rendered() -> str:
    p = run_cli(["run", "--config", str(PIN), *map(str, INPUTS)])
    assert p.returncode == 0, p.stderr
    return p.stdout


def resource_list(objs_text: str, mode: str) -> str:
    cfg = yaml.safe_load(PIN.read_text())
    cfg["spec"]["mode"] = mode
    items = [d for d in yaml.safe_load_all(objs_text) if d]
    return yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                           "items": items, "functionConfig": cfg}, sort_keys=False)


# --- validate mode ---------------------------------------------------------------------

def test_validate_mode_changes_nothing_and_reports_each_field():
    raw = "".join(p.read_text() if not i else "---\n" + p.read_text()
                  for i, p in enumerate(INPUTS))
    text = resource_list(raw, "validate")
    p = run_cli([], text)
    assert p.returncode == 1
    out = load(p.stdout)
    assert out["items"] == load(text)["items"], "validate mode changed an item"
    assert len(out["items"]) == len(INPUTS), "validate mode emitted an object"
    errors = results(out, "error")
    cpu = errors[0]
    assert cpu["resourceRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "name": "vllm-cpu", "namespace": "serving"}
    assert cpu["field"] == {"path": "spec.template.spec.containers[0].resources.requests.cpu",
                            "currentValue": "3500m", "proposedValue": "4"}
    assert cpu["message"].startswith('not pinned: would change from "3500m" to "4"; '
                                     "container 'vllm': requests.cpu 3500m -> 4")
    limit = errors[1]
    assert limit["field"] == {"path": "spec.template.spec.containers[0].resources.limits.cpu",
                              "proposedValue": "4"}
    assert limit["message"].startswith('not pinned: would be set to "4"; ')
    emit = [e for e in errors if e["resourceRef"]["kind"] == "ConfigMap"]
    assert [e["message"] for e in emit] == [
        ("missing: mutate mode would emit it (node pool 'cpu-inference': emitted configmap "
         "(2 workload(s) placed))")]
    assert errors[-1]["resourceRef"]["kind"] == "InferenceTuning"
    assert errors[-1]["message"].startswith("validate mode: 35 field(s) of 2 item(s) would "
                                            "change; 1 object(s) would be emitted.")
    # mutate mode's warnings stay warnings, its verdicts stay; its change infos are gone
    assert any("metrics-exporter" in w["message"] for w in results(out, "warning"))
    assert [r["message"][:58] for r in results(out, "info")
            if r["message"].startswith("verdict:")] == [
        "verdict: Guaranteed after admission; exclusive CPUs vllm 4",
        "verdict: Guaranteed after admission; exclusive CPUs kserve"]
    assert not [r for r in results(out, "info") if (r.get("field") or {}).get("proposedValue")]
    assert ("krm-fn: error: Deployment serving/vllm-cpu "
            "spec.template.spec.containers[0].resources.requests.cpu: not pinned: would change "
            "from \"3500m\" to \"4\"") in p.stderr


def test_validate_mode_passes_on_the_mutated_output():
    p = run_cli([], resource_list(rendered(), "validate"))
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    assert not results(out, "error")
    assert results(out, "info")[-1]["message"] == "validate mode: nothing would change"
    assert item(out, "ConfigMap", "kubelet-config-cpu-inference")


def test_validate_mode_flags_an_out_of_date_kubelet_config():
    text = rendered().replace('podPidsLimit: 4096', 'podPidsLimit: 1024')
    assert "podPidsLimit: 1024" in text
    p = run_cli([], resource_list(text, "validate"))
    assert p.returncode == 1
    errors = results(load(p.stdout), "error")
    assert errors[0]["resourceRef"]["name"] == "kubelet-config-cpu-inference"
    assert errors[0]["message"].startswith("would be rewritten to the node plan: ")
    assert errors[0]["field"]["path"] == "data['kubelet-config.yaml']"


def test_validate_mode_flat_key_and_bad_value():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "function-input"},
          "data": {"mode": "check"}}
    text = yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                           "items": [], "functionConfig": cm})
    p = run_cli([], text)
    assert p.returncode == 1
    assert results(load(p.stdout), "error")[0]["message"] == (
        "invalid function config: must be one of mutate, validate; found 'check'")
    assert results(load(p.stdout), "error")[0]["field"]["path"] == "data.mode"


def test_run_mode_validate_prints_no_manifests(tmp_path):
    out = tmp_path / "rendered.yaml"
    out.write_text(rendered())
    ok = run_cli(["run", "--mode", "validate", "--config", str(PIN), str(out)])
    assert (ok.returncode, ok.stdout) == (0, "")
    bad = run_cli(["run", "--mode", "validate", "--config", str(PIN), *map(str, INPUTS)])
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr.count("krm-fn: error: ") == 37


def test_run_output_writes_only_when_changed_and_never_on_error(tmp_path):
    out = tmp_path / "rendered.yaml"
    p = run_cli(["run", "--config", str(PIN), "--output", str(out), *map(str, INPUTS)])
    assert (p.returncode, p.stdout) == (0, "")
    assert out.read_text() == rendered()
    os.utime(out, (1, 1))
    p = run_cli(["run", "--config", str(PIN), "-o", str(out), *map(str, INPUTS)])
    assert p.returncode == 0 and out.stat().st_mtime == 1, "an up-to-date file was rewritten"
    bad = tmp_path / "bad.yaml"
    bad.write_text(INPUTS[0].read_text().replace("memory: 12Gi", "memory: 12Gi\n"
                                                 "          ephemeral-storage: 1Gi", 1)
                   .replace("requests:\n            cpu: 3500m\n            memory: 12Gi",
                            "requests:\n            cpu: 3500m"))
    before = out.read_bytes()
    p = run_cli(["run", "--config", str(PIN), "-o", str(out), str(bad)])
    assert p.returncode == 1
    assert out.read_bytes() == before


def test_selfcheck():
    p = run_cli(["selfcheck"])
    assert p.returncode == 0
    assert p.stdout.startswith("krm-fn 0.1.0 ok: Python ")
    from krm_fn import selfcheck
    assert selfcheck.problems() == []
    msgs = selfcheck.problems((("krm_fn_no_such_module", "example-pkg"),))
    assert msgs == [(f"cannot import krm_fn_no_such_module (ModuleNotFoundError: No module "
                     f"named 'krm_fn_no_such_module'); install example-pkg into the Python "
                     f"that runs krm-fn ({sys.executable})")]


# --- pre-commit hooks ------------------------------------------------------------------

def hooks() -> dict:
    return {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}


def run_hook(hook: dict, args: list, filenames: list, cwd: Path):
    """As pre-commit runs a hook: entry + args (+ filenames unless pass_filenames: false),
    with the hook's environment (here the venv holding krm-fn) first on PATH."""
    cmd = shlex.split(hook["entry"]) + list(args)
    if hook.get("pass_filenames", True):
        cmd += filenames
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_hook_manifest_is_valid_for_pre_commit():
    pytest.importorskip("pre_commit", reason="pre-commit is in the test extra")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    h = hooks()
    assert sorted(h) == ["krm-fn-check", "krm-fn-render"]
    assert h["krm-fn-render"]["entry"] == "krm-fn run --fail-on-change"
    assert h["krm-fn-render"]["pass_filenames"] is False
    assert h["krm-fn-check"]["entry"] == "krm-fn run --mode validate"
    assert {x["language"] for x in h.values()} == {"python"}


def example_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "manifests").mkdir(parents=True)
    (repo / "deploy").mkdir()
    shutil.copy(INPUTS[0], repo / "manifests/vllm-cpu.yaml")
    shutil.copy(INPUTS[1], repo / "manifests/qwen-chat.yaml")
    shutil.copy(INPUTS[2], repo / "manifests/storage-container.yaml")
    shutil.copy(PIN, repo / "deploy/pin.yaml")
    (repo / "rendered").mkdir()
    return repo


RENDER_ARGS = ["--config", "deploy/pin.yaml", "--output", "rendered/serving.yaml",
               "manifests/vllm-cpu.yaml", "manifests/qwen-chat.yaml",
               "manifests/storage-container.yaml"]


def test_render_hook_then_check_hook(tmp_path):
    import re
    repo = example_repo(tmp_path)
    h = hooks()
    render, check = h["krm-fn-render"], h["krm-fn-check"]
    assert re.search(render["files"], "manifests/vllm-cpu.yaml")
    assert re.search(check["files"], "rendered/serving.yaml")
    assert not re.search(check["files"], "manifests/vllm-cpu.yaml")

    # first run: rendered/ does not exist yet; the new file fails the hook so it is staged
    shutil.rmtree(repo / "rendered")
    p = run_hook(render, RENDER_ARGS, [], repo)
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr.startswith("krm-fn: rendered/serving.yaml was out of date and has been "
                               "rewritten: review and stage it\n")
    out = repo / "rendered/serving.yaml"
    assert out.read_text() == rendered()
    stamp = out.stat().st_mtime_ns
    p = run_hook(render, RENDER_ARGS, [], repo)
    assert p.returncode == 0 and out.stat().st_mtime_ns == stamp, \
        "an up-to-date rendered file was rewritten (pre-commit would fail the hook)"

    p = run_hook(check, ["--config", "deploy/pin.yaml"], ["rendered/serving.yaml"], repo)
    assert (p.returncode, p.stdout, p.stderr.count("error")) == (0, "", 0)
    # a stale rendered file (someone edited the source and skipped the render) fails
    shutil.copy(INPUTS[0], out)
    p = run_hook(check, ["--config", "deploy/pin.yaml"], ["rendered/serving.yaml"], repo)
    assert p.returncode == 1 and p.stdout == ""
    assert ("krm-fn: error: Deployment serving/vllm-cpu spec.template.spec.nodeSelector"
            "['node.kubernetes.io/instance-type']: not pinned: would be set to "
            "\"m7i.8xlarge\"") in p.stderr


# --- the Flux render-in-CI workflow ----------------------------------------------------

def workflow() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True) if True in doc else doc["on"]   # YAML 1.1 reads `on` as true
    return doc


def steps() -> dict:
    return {s["id"]: s for s in workflow()["jobs"]["render"]["steps"] if "id" in s}


def run_step(step: dict, cwd: Path, env: dict):
    e = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env)
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=120, check=False)


def test_workflow_shape():
    doc = workflow()
    assert doc["on"] == {"push": {"branches": ["main"]}, "workflow_dispatch": {}}
    assert WORKFLOW.parent.name == "flux" and ".github" not in WORKFLOW.parts
    s = steps()
    assert list(s) == ["install", "render", "check", "publish-oci", "publish-branch"]
    assert "krm-fn selfcheck" in s["install"]["run"]
    oci = s["publish-oci"]["run"]
    for flag in ('flux push artifact "$OCI_REPO:$GITHUB_REF_NAME"', "--path=", "--source=",
                 '--revision="$GITHUB_REF_NAME@sha1:$GITHUB_SHA"'):
        assert flag in oci
    assert "git push origin rendered" in s["publish-branch"]["run"]
    flux = [d for d in yaml.safe_load_all((WORKFLOW.parent / "flux-oci.yaml").read_text())]
    assert [(d["apiVersion"], d["kind"]) for d in flux] == [
        ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization")]
    assert flux[0]["spec"]["ref"] == {"tag": "main"}
    assert flux[1]["spec"]["sourceRef"] == {"kind": "OCIRepository", "name": "serving"}


def test_workflow_render_and_check_steps_on_the_example(tmp_path):
    repo = example_repo(tmp_path)
    env = {k: str(v) for k, v in workflow()["env"].items() if "${{" not in str(v)}
    assert env["KRM_FN_CONFIG"] == "deploy/pin.yaml"
    assert env["RENDERED"] == "rendered/serving.yaml"
    shutil.rmtree(repo / "rendered")
    s = steps()
    p = run_step(s["render"], repo, env)
    assert p.returncode == 0, p.stderr
    out = (repo / env["RENDERED"]).read_bytes()
    check_golden(GOLDEN, out)
    objs = [d for d in yaml.safe_load_all(out) if d]
    assert [o["kind"] for o in objs] == ["Deployment", "InferenceService",
                                         "ClusterStorageContainer", "ConfigMap"]
    p = run_step(s["check"], repo, env)
    assert (p.returncode, p.stdout) == (0, "")
    # the check catches a render that did not pin (e.g. a function kustomize skipped)
    (repo / env["RENDERED"]).write_bytes(INPUTS[0].read_bytes())
    p = run_step(s["check"], repo, env)
    assert p.returncode == 1
    assert "validate mode: 20 field(s) of 1 item(s) would change; 1 object(s) would be " \
           "emitted." in p.stderr


# --- copy-paste recipes install something that exists (issue #16) -----------------------

def test_workflow_pins_every_third_party_action_to_a_full_commit_sha():
    import re
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["render"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses, "no action in the workflow"
    for u in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u), u
    text = WORKFLOW.read_text()
    for u in uses:        # the tag each SHA is, for the reader who updates it
        assert re.search(re.escape(u) + r"  # v\d+\.\d+\.\d+\n", text), u


def test_workflow_installs_krm_fn_from_its_git_repository_at_a_tag():
    spec = yaml.safe_load(WORKFLOW.read_text())["env"]["KRM_FN_SPEC"]
    assert spec == "krm-fn @ git+https://github.com/krm-fn/krm-fn@v0.1.0"
    hooks = yaml.safe_load(HOOKS.read_text())
    # language: python: pre-commit pip-installs the hook repository at its `rev`
    assert {h["language"] for h in hooks} == {"python"}
    assert not any("additional_dependencies" in h for h in hooks)
