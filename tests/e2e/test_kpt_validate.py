"""`kpt fn render --allow-exec` of overlays/kpt-validate: krm-fn as the Kptfile mutator and
as a validator (`spec.mode: validate`). With the mutator the render passes and validating
changes nothing; without it the validator fails (exit 1) naming item and field, and kpt
leaves the package untouched. Golden package files in overlays/kpt-validate/expected/."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from krm_e2e import (
    OVERLAYS,
    REPO,
    assert_pinned,
    check_golden_tree,
    docs,
    require,
    run,
    tool_env,
    tree,
)

pytestmark = pytest.mark.e2e

PKG = OVERLAYS / "kpt-validate"
EXPECTED = PKG / "expected"
EXPECTED_NAMES = {"Kptfile": "Kptfile.golden"}


@pytest.fixture(scope="module")
def kpt() -> str:
    return require("kpt")


def copy_package(dst: Path) -> Path:
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns("expected"))
    return dst


def package_objs(root: Path) -> list:
    return [o for p in sorted(root.rglob("*.yaml")) for o in docs(p.read_bytes())]


def test_validator_config_is_the_mutator_config_in_validate_mode():
    """A Kptfile function takes one config: validate.yaml must stay pin.yaml + mode."""
    pin = yaml.safe_load((PKG / "pin.yaml").read_text())
    check = yaml.safe_load((PKG / "validate.yaml").read_text())
    assert check["spec"].pop("mode") == "validate"
    assert "mode" not in pin["spec"]
    assert check["spec"] == pin["spec"]
    assert (PKG / "pin.yaml").read_bytes() == (OVERLAYS / "kpt/pin.yaml").read_bytes()
    for name, base in (("deployment.yaml", "bases/vllm-cpu/deployment.yaml"),
                       ("inferenceservice.yaml", "bases/kserve/inferenceservice.yaml"),
                       ("storage-container.yaml", "bases/kserve/storage-container.yaml")):
        assert (PKG / name).read_bytes() == (REPO / base).read_bytes()
    kptfile = yaml.safe_load((PKG / "Kptfile").read_text())
    assert kptfile["pipeline"] == {
        "mutators": [{"exec": "krm-fn", "configPath": "pin.yaml"}],
        "validators": [{"exec": "krm-fn", "configPath": "validate.yaml"}]}


def test_mutator_then_validator_passes(kpt, tmp_path):
    pkg = copy_package(tmp_path / "pkg")
    env = tool_env()
    results = tmp_path / "results"
    proc = run([kpt, "fn", "render", "--allow-exec", "--results-dir", results, pkg], env,
               cwd=tmp_path)
    check_golden_tree(EXPECTED, pkg, skip=(".krmignore",), names=EXPECTED_NAMES)
    assert_pinned(package_objs(pkg))
    # the mutated package is the same as the plain kpt example's
    for rel in ("deployment.yaml", "inferenceservice.yaml", "node/kubelet-cpu-inference.yaml"):
        assert (pkg / rel).read_bytes() == (OVERLAYS / "kpt/expected" / rel).read_bytes(), rel
    report = yaml.safe_load((results / "results.yaml").read_text())
    assert report["exitCode"] == 0
    validator = report["items"][1]
    assert validator["exec"] == "krm-fn" and validator["exitCode"] == 0
    sev = [r["severity"] for r in validator["results"]]
    assert "error" not in sev
    assert validator["results"][-1]["message"] == "validate mode: nothing would change"
    assert b"[PASS]" in proc.stderr + proc.stdout

    before = tree(pkg)
    run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd="/")
    assert tree(pkg) == before, "a second render changed the package (not idempotent)"


def test_validator_without_the_mutator_fails_and_changes_nothing(kpt, tmp_path):
    pkg = copy_package(tmp_path / "pkg")
    kptfile = pkg / "Kptfile"
    text = kptfile.read_text()
    mutator = "  mutators:\n  - exec: krm-fn\n    configPath: pin.yaml\n"
    assert mutator in text
    kptfile.write_text(text.replace(mutator, ""))
    before = tree(pkg)
    results = tmp_path / "results"
    proc = run([kpt, "fn", "render", "--allow-exec", "--truncate-output=false",
                "--results-dir", results, pkg], tool_env(), cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert tree(pkg) == before, "a failed validation changed the package"
    out = (proc.stdout + proc.stderr).decode()
    # overlays/README.md quotes these two lines (tests/test_docs_quotes.py)
    assert ("[error] apps/v1/Deployment/serving/vllm-cpu "
            "spec.template.spec.containers[0].resources.requests.cpu: not pinned: would "
            "change from \"3500m\" to \"4\"; ") in out
    assert ("[error] krm-fn.dev/v1alpha1/InferenceTuning/check-pinned: validate mode: 35 "
            "field(s) of 2 item(s) would change; 1 object(s) would be emitted. ") in out
    report = yaml.safe_load((results / "results.yaml").read_text())
    assert report["exitCode"] == 1
    errors = [r for r in report["items"][0]["results"] if r["severity"] == "error"]
    first = errors[0]
    assert first["resourceRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "vllm-cpu", "namespace": "serving"}
    assert first["field"] == {"path": "spec.template.spec.containers[0].resources.requests.cpu",
                              "currentValue": "3500m", "proposedValue": "4"}
    assert first["file"] == {"path": "deployment.yaml"}
    assert errors[-1]["message"] == (
        "validate mode: 35 field(s) of 2 item(s) would change; 1 object(s) would be "
        "emitted. Nothing was changed: run krm-fn in mutate mode (the Kptfile mutator, the "
        "kustomize transformer or `krm-fn run`) before this check")
    assert errors[-2]["resourceRef"]["name"] == "kubelet-config-cpu-inference"
    # run twice: same failure, still nothing written
    again = run([kpt, "fn", "render", "--allow-exec", pkg], tool_env(), cwd="/", check=False)
    assert again.returncode == 1 and tree(pkg) == before
