"""The command line: modes, exit codes, messages on stderr, no tracebacks."""
import re

import pytest

from krm_fn import __version__
from tests.helpers import ROOT, TESTDATA, load, run_cli

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: s, image: s:1, resources: {limits: {cpu: "2", memory: 1Gi}}}
"""
CONFIG = """\
apiVersion: krm-fn.dev/v1alpha1
kind: InferenceTuning
metadata: {name: pin}
spec:
  workloads:
    threads: {env: [OMP_NUM_THREADS]}
  nodePools:
  - {name: inference, nodeSelector: {krm-fn.dev/cpu-pinning: "true"}}
"""


def test_version():
    p = run_cli(["--version"])
    assert p.returncode == 0 and p.stdout == f"krm-fn, version {__version__}\n"


def test_run_on_files_and_stdin(tmp_path):
    cfg = tmp_path / "pin.yaml"
    cfg.write_text(CONFIG)
    f = tmp_path / "pod.yaml"
    f.write_text(POD)
    a = run_cli(["run", "--config", str(cfg), str(f)])
    b = run_cli(["run", "--config", str(cfg), "-"], POD)
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout
    docs = list(filter(None, __import__("yaml").safe_load_all(a.stdout)))
    assert [d["kind"] for d in docs] == ["Pod", "ConfigMap"]
    assert docs[0]["spec"]["containers"][0]["env"] == [{"name": "OMP_NUM_THREADS", "value": "2"}]
    assert a.stdout.startswith("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n")


def test_run_reports_errors_on_stderr_and_exits_1(tmp_path):
    bad = POD.replace('memory: 1Gi', 'memory: lots')
    p = run_cli(["run", "-"], bad)
    assert p.returncode == 1
    assert p.stdout == bad          # unchanged, still written
    assert p.stderr == (
        "krm-fn: error: Pod p spec.containers[0].resources.limits.memory: container 's': "
        "'lots' is not a quantity (expected a number and an optional suffix such as 500m, 4, "
        "1Gi, 1e3)\nkrm-fn: error: Pod p: left unchanged because of the errors above\n"
        "krm-fn: warning: no function config: defaults used (node pool 'inference' with "
        "nodeSelector krm-fn.dev/cpu-pinning=true, 2 sockets x 16 cores x 2 threads, "
        "kubernetesVersion 1.35); give a config that describes your nodes (`krm-fn explain`, "
        "README Configuration)\n")


def test_legacy_plugin_mode(tmp_path):
    cfg = tmp_path / "kust-plugin-config-1"
    cfg.write_text(CONFIG)
    p = run_cli(["plugin", str(cfg), "--ignored-arg"], POD)
    assert p.returncode == 0, p.stderr
    assert 'OMP_NUM_THREADS' in p.stdout and "kind: ConfigMap" in p.stdout


def test_config_error_is_a_result_on_the_function_config():
    text = (TESTDATA / "c11-fractional-cpu" / "input.yaml").read_text() + (
        "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
        "  metadata: {name: pin}\n  spec: {workloads: {cpuRouding: up}}\n")
    p = run_cli([], text)
    assert p.returncode == 1
    out = load(p.stdout)
    assert out["results"] == [{
        "message": "invalid function config: unknown field 'cpuRouding' (did you mean "
                       "'cpuRounding'?) (known: cpuRounding, "
                   "pinnedContainers, defaultCpus, defaultMemory, sidecarResources, "
                   "initContainerCpu, threads, injection, shm)",
        "severity": "error",
        "resourceRef": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                        "name": "pin"},
        "field": {"path": "spec.workloads"}}]
    assert out["items"] == load((TESTDATA / "c11-fractional-cpu" / "input.yaml").read_text())["items"]


def test_not_yaml_is_one_line_exit_1():
    p = run_cli([], "kind: ResourceList\nitems: [\n")
    assert p.returncode == 1 and p.stdout == ""
    assert re.fullmatch(r"krm-fn: input is not valid YAML at line \d+, column \d+: .*\n", p.stderr)


def test_not_a_resource_list():
    p = run_cli([], POD)
    assert p.returncode == 1
    assert p.stderr == ("krm-fn: input is not a ResourceList (kind: ResourceList, apiVersion: "
                        "config.kubernetes.io/v1); use `krm-fn run` for plain YAML\n")


def test_non_utf8_input():
    p = run_cli([], b"apiVersion: v1\nkind: \xff\n")
    assert p.returncode == 1
    assert p.stderr == "krm-fn: stdin is not UTF-8 text (byte 0xff at offset 21)\n"


def test_readme_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme.split("## On a fresh machine")[1], re.S)
    main_job, tests = blocks[0], blocks[1]
    assert "kubectl kustomize --enable-alpha-plugins overlays/legacy-plugin" in main_job
    ci = (ROOT / ".ci" / "run").read_text()
    # every line of the test block, as written (the Debian install runs there when a tool
    # is missing)
    assert all(line in ci for line in tests.splitlines()), tests


def test_run_output_creates_parent_dirs_and_fail_on_change_reports_new_files(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "pin.yaml").write_text(CONFIG)
    args = ["run", "--config", "pin.yaml", "--output", "rendered/serving.yaml",
            "--fail-on-change", "pod.yaml"]
    p = run_cli(args, cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr == ("krm-fn: rendered/serving.yaml was out of date and has been "
                        "rewritten: review and stage it\n")
    written = (tmp_path / "rendered" / "serving.yaml").read_text()
    assert written.startswith(POD[:40]) and 'OMP_NUM_THREADS' in written
    p = run_cli(args, cwd=tmp_path)                       # up to date: untouched, exit 0
    assert (p.returncode, p.stderr) == (0, "")
    p = run_cli(["run", "--fail-on-change", "pod.yaml"], cwd=tmp_path)
    assert p.returncode == 2 and "--fail-on-change needs --output" in p.stderr


def test_output_is_replaced_only_after_a_complete_write(tmp_path, monkeypatch):
    # a write that fails midway (a full disk) leaves the old render whole and no temporary
    # file; a good write keeps the old file's permission bits
    import errno
    import os
    from krm_fn.cli import render as render_mod
    out = tmp_path / "rendered.yaml"
    out.write_text("old render\n")
    os.chmod(out, 0o640)
    real = os.fsync

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(Exception, match="No space left on device"):
        render_mod._write_if_changed(str(out), "new render\n")
    assert out.read_text() == "old render\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rendered.yaml"]
    monkeypatch.setattr(os, "fsync", real)
    assert render_mod._write_if_changed(str(out), "new render\n") is True
    assert out.read_text() == "new render\n"
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rendered.yaml"]


def test_run_output_that_cannot_be_written_is_one_clean_line(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "file").write_text("")
    p = run_cli(["run", "--output", "file/x.yaml", "pod.yaml"], cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr == "krm-fn: --output file/x.yaml: cannot read it (Not a directory)\n"
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr


def test_run_baseline_file_sets_the_baseline(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "pin.yaml").write_text(CONFIG)
    (tmp_path / "configz.json").write_text('{"kubeletconfig": {"cpuManagerPolicy": "none"}}')
    p = run_cli(["run", "--config", "pin.yaml", "--baseline", "configz.json", "pod.yaml"],
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    docs = [d for d in re.split(r"^---\n", p.stdout, flags=re.M) if "ConfigMap" in d]
    assert "krm-fn.dev/rollout-note: \"drain the node and delete " \
           "/var/lib/kubelet/cpu_manager_state while the kubelet is stopped (cpuManagerPolicy " \
           "none -> static; reservedSystemCPUs (unset) -> 0-1,32-33)\"" in docs[0]
    assert "spec.output.baseline.kubeletconfig.cpuManagerPolicy" in p.stderr
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
                                      "data: {threadsPerCore: '2'}\n")
    p = run_cli(["run", "--config", "cm.yaml", "--baseline", "configz.json", "pod.yaml"],
                cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr == ("krm-fn: --baseline configz.json: the config is a ConfigMap, which "
                        "cannot hold a baseline; write it as an InferenceTuning\n")


def test_run_says_when_it_writes_back_a_function_config(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "pin.yaml").write_text(CONFIG)
    p = run_cli(["run", "--config", "pin.yaml", "pod.yaml", "pin.yaml"], cwd=tmp_path)
    assert p.returncode == 0
    assert p.stderr == ("krm-fn: warning: document 2 (InferenceTuning pin): a krm-fn function "
                        "config, written back unchanged; kubectl apply would reject it (the "
                        "cluster has no InferenceTuning kind); it is not this run's function "
                        "config (a config among FILES is only an item): pass it with "
                        "--config\n")


NODE = """\
# the Node topology.fromNode reads (kubectl get node n1 -o yaml)
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {krm-fn.dev/cpu-pinning: "true"}
  annotations: {config.kubernetes.io/local-config: "true"}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
"""
FROM_NODE = CONFIG.replace("nodeSelector: {krm-fn.dev/cpu-pinning: \"true\"}}",
                           "nodeSelector: {krm-fn.dev/cpu-pinning: \"true\"},\n"
                           "     topology: {fromNode: n1, sockets: 1, threadsPerCore: 1}}")


def test_run_writes_a_local_config_node_back_and_says_what_kubectl_apply_does(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "pin.yaml").write_text(FROM_NODE)
    p = run_cli(["run", "--config", "pin.yaml", "node.yaml", "pod.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(NODE + "---\napiVersion: v1\nkind: Pod\n")
    assert p.stderr == ("krm-fn: warning: document 1 (Node n1): local-config, written back unchanged: "
                        "kustomize and kpt leave it out of their output, but kubectl apply "
                        "-f of this output would create or update it in the cluster; "
                        "--drop-local-config leaves it out\n")


def test_run_drop_local_config_leaves_the_local_config_documents_out(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "pin.yaml").write_text(FROM_NODE)
    (tmp_path / "pod2.yaml").write_text(POD.replace("name: p}", "name: p2}"))
    kept = run_cli(["run", "--config", "pin.yaml", "node.yaml", "pod.yaml"], cwd=tmp_path)
    # first, between and last: the documents around each stay apart
    for files, want in ((["node.yaml", "pod.yaml"], "---\n" + kept.stdout[len(NODE) + 4:]),
                        (["pod.yaml", "node.yaml"], kept.stdout[len(NODE) + 4:]),
                        (["pod.yaml", "node.yaml", "pod2.yaml"], None)):
        p = run_cli(["run", "--drop-local-config", "--config", "pin.yaml", *files],
                    cwd=tmp_path)
        assert (p.returncode, p.stderr) == (0, ""), files
        assert "kind: Node" not in p.stdout and "fromNode" not in p.stdout
        if want is not None:
            assert p.stdout == want, files
    assert p.stdout.count("kind: Pod\n") == 2
    assert p.stdout.startswith("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    assert "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p2}\n" in p.stdout
    assert "---\n---" not in p.stdout


@pytest.mark.parametrize("end", ["", "...\n"])
def test_run_drop_local_config_keeps_what_follows_a_kept_document(tmp_path, end):
    """Hostile review: the trailing comment (and `...` end marker) of the document before a
    dropped one went with it; a kept document comes out byte for byte, the dropped one's
    own trailing comment goes."""
    kept = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  a: \"1\"\n"
            "# about kept: keep me\n" + end)
    local = ("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  annotations: "
             "{config.kubernetes.io/local-config: \"true\"}\n# about local\n")
    (tmp_path / "in.yaml").write_text(kept + local + "---\n" + kept.replace("kept", "last"))
    p = run_cli(["run", "--drop-local-config", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == kept + "---\n" + kept.replace("kept", "last")


def test_run_drop_local_config_leaves_each_documents_directives_with_it(tmp_path):
    """Hostile test: the next document's `%TAG` directive went with a dropped one (the
    output did not parse); a dropped document's own directives go with it (left behind,
    they would clash with the next one's)."""
    def doc(name, local=False, tag=None):
        ann = ("  annotations: {config.kubernetes.io/local-config: \"true\"}\n"
               if local else "")
        head = f"%TAG !e! {tag}\n---\n" if tag else "---\n"
        return (f"{head}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{ann}"
                f"data: {{k: {'!e!x ' if tag else ''}v}}\n...\n")
    first = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z}\n...\n"
    text = first + doc("local", True, "tag:a.com,2000:") + doc("a", tag="tag:b.com,2000:")
    (tmp_path / "in.yaml").write_text(text)
    p = run_cli(["run", "--drop-local-config", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == first + doc("a", tag="tag:b.com,2000:")
    import yaml
    assert len(list(yaml.compose_all(p.stdout))) == 2      # the tag handle is defined


@pytest.mark.parametrize("args", [
    ["run", "--config", "broken.yaml", "pod.yaml"],
    ["plugin", "broken.yaml"],
    ["run", "pod.yaml", "broken.yaml"],        # its own line, not the joined stream's
    ["run", "--baseline", "broken.yaml", "pod.yaml"],
])
def test_a_file_that_is_not_yaml_is_named_with_its_own_line(tmp_path, args):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "broken.yaml").write_text("a: [\n")
    p = run_cli(args, stdin=POD if args[0] == "plugin" else "", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.splitlines()[0].startswith(
        "krm-fn: broken.yaml: it is not valid YAML at line 2, column 1:"), p.stderr


def test_run_help_names_drop_local_config():
    p = run_cli(["run", "--help"])
    assert p.returncode == 0
    assert "--drop-local-config" in p.stdout
    assert "config.kubernetes.io/local-config" in " ".join(p.stdout.split())


def test_validate_mode_prints_no_manifests_even_when_the_config_is_invalid(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "bad.yaml").write_text(CONFIG + "  bogus: 1\n")
    (tmp_path / "bad-validate.yaml").write_text(CONFIG + "  mode: validate\n  bogus: 1\n")
    for args in (["run", "--mode", "validate", "--config", "bad.yaml", "pod.yaml"],
                 ["run", "--config", "bad-validate.yaml", "pod.yaml"]):
        p = run_cli(args, cwd=tmp_path)
        assert (p.returncode, p.stdout) == (1, ""), args
        assert "unknown field 'bogus'" in p.stderr


def test_run_output_must_not_be_an_input_a_directory_or_a_device(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "pin.yaml").write_text(CONFIG)
    (tmp_path / "base.yaml").write_text("cpuManagerPolicy: static\n")
    for out, why in (("pin.yaml", "--output pin.yaml is also an input (pin.yaml)"),
                     ("base.yaml", "--output base.yaml is also an input (base.yaml)"),
                     ("pod.yaml", "--output pod.yaml is also an input (pod.yaml)"),
                     ("/dev/null", "--output /dev/null is not a regular file"),
                     ("newdir/", "--output newdir/ is a directory; name a file")):
        p = run_cli(["run", "--config", "pin.yaml", "--baseline", "base.yaml", "--output", out,
                     "pod.yaml"], cwd=tmp_path)
        assert p.returncode == 2 and why in p.stderr, (out, p.stderr)
    assert (tmp_path / "pin.yaml").read_text() == CONFIG
    assert not (tmp_path / "newdir").exists()
    p = run_cli(["run", "--config", "pin.yaml", "--output", "-", "pod.yaml"], cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("apiVersion: v1\nkind: Pod")
    assert not (tmp_path / "-").exists()


def test_run_baseline_file_errors_name_the_file_and_keep_config_errors(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "empty.yaml").write_text("")
    p = run_cli(["run", "--baseline", "empty.yaml", "pod.yaml"], cwd=tmp_path)
    assert (p.returncode, p.stderr) == (
        1, "krm-fn: --baseline empty.yaml must hold exactly one YAML document, found 0\n")
    (tmp_path / "badspec.yaml").write_text(CONFIG[:CONFIG.index("spec:")] + "spec: [nodePools]\n")
    (tmp_path / "base.yaml").write_text("cpuManagerPolicy: static\n")
    p = run_cli(["run", "--config", "badspec.yaml", "--baseline", "base.yaml", "pod.yaml"],
                cwd=tmp_path)
    assert p.returncode == 1
    assert "pin spec: invalid function config: expected a mapping, found a list" in p.stderr


# --- start-up: a run imports only what it uses (krm_fn/cli/__init__.py) -------------------

def _imported(args: list[str], stdin: str, cwd=None, code: int = 0) -> set[str]:
    """The modules `python -m krm_fn ARGS` imports (from -X importtime), after checking it
    exits with `code`."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("_KRM_FN_COMPLETE", None)
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "krm_fn", *args],
                       input=stdin.encode(), capture_output=True, cwd=cwd, env=env, timeout=120)
    assert p.returncode == code, p.stderr.decode()[-2000:]
    return {m.group(1) for m in re.finditer(r"^import time:[^|]*\|[^|]*\| *(\S+)$",
                                            p.stderr.decode(), re.M)}


_NOT_FOR_A_RENDER = ("krm_fn.verify", "krm_fn.config.schema", "krm_fn.config.explain", "krm_fn.selfcheck",
                     "krm_fn.report", "jsonpatch", "ruamel", "krm_fn.probe", "aiohttp",
                     "krm_fn.monitoring", "krm_fn.guard", "hashlib")


def _loaded(mods: set[str], names) -> list[str]:
    return sorted(m for m in mods for n in names if m == n or m.startswith(n + "."))


def test_the_function_path_imports_neither_click_nor_other_commands():
    text = (TESTDATA / "c11-fractional-cpu" / "input.yaml").read_text()
    mods = _imported([], text)
    assert "krm_fn.pipeline" in mods and "krm_fn.cli.render" in mods
    assert _loaded(mods, ("click", "krm_fn.cli.commands", *_NOT_FOR_A_RENDER)) == []
    # only the output format the config selects (the default, configmap) is loaded
    assert [m for m in _loaded(mods, ("krm_fn.node.formats",)) if m not in (
        "krm_fn.node.formats", "krm_fn.node.formats._common",
        "krm_fn.node.formats.configmap")] == []


# modules a render never needs: their import cost is most of a small render's (docs/
# performance.md, P4); render-path records are namedtuples or plain __slots__ classes, since a
# dataclass costs ~1.5 ms to define and `dataclasses` brings inspect, ast, dis (CONTRIBUTING.md);
# annotations are strings (`from __future__ import annotations`), so typing is not needed
# (~3 ms); `copy` is imported where a deep copy is made, `difflib` where a hint is made;
# quantities are exact integers at a fixed scale (krm_fn/quantity.py), so neither
# `fractions` nor `decimal` (a C extension) and `numbers` are needed;
# Knative's webhook tables (admission/knative.py) for a Knative or Serverless KServe pod,
# a whole-object check (krm_fn/objects/) for an item of its kind
_NOT_ON_THE_RENDER_PATH = ("click", "krm_fn.cli.commands", *_NOT_FOR_A_RENDER, "dataclasses",
                           "inspect", "ast", "dis", "tokenize", "typing", "copy", "difflib",
                           "fractions", "decimal", "numbers", "krm_fn.yaml.ruamel", "krm_fn.node.from_node", "krm_fn.validate",
                           "krm_fn.admission.knative", "krm_fn.objects.kserve",
                           "krm_fn.objects.knative_config", "krm_fn.objects.passthrough",
                           "hypothesis", "pytest")


def _ten_items() -> str:
    """A ResourceList of 10 items as the benchmark makes them: inference Deployments (vLLM,
    a fractional CPU request and a sidecar), a ConfigMap and a Service."""
    items = []
    for i in range(10):
        if i % 5 == 2:
            items.append(f"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: cm-{i}}}\n"
                         f"  data: {{mode: \"0644\"}}\n")
        elif i % 5 == 3:
            items.append(f"- apiVersion: v1\n  kind: Service\n  metadata: {{name: svc-{i}}}\n"
                         f"  spec:\n    ports:\n    - port: 80\n")
        else:
            items.append(
                f"- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: llm-{i}\n"
                f"    labels: {{tier: inference}}\n  spec:\n    template:\n      spec:\n"
                f"        containers:\n        - name: server\n"
                f"          image: registry.example/vllm-cpu:0.6.{i}\n"
                f"          args: [\"--model\", \"/models/m{i}\"]\n"
                f"          resources:\n            requests: {{cpu: 3500m, memory: 16Gi}}\n"
                f"        - name: agent\n          image: registry.example/agent:1.0\n"
                f"          resources:\n            requests: {{cpu: 50m, memory: 64Mi}}\n")
    return ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            + "".join(items))


def _started_with() -> set[str]:
    """The modules this interpreter imports before running any code (site, .pth files)."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                       capture_output=True, timeout=60)
    return {m.group(1) for m in re.finditer(r"^import time:[^|]*\|[^|]*\| *(\S+)$",
                                            p.stderr.decode(), re.M)}


def test_a_plain_render_imports_only_what_it_uses():
    mods = _imported([], _ten_items()) - _started_with()
    assert "krm_fn.pipeline.verdict" in mods
    assert "krm_fn.admission.injectors" in mods
    assert _loaded(mods, _NOT_ON_THE_RENDER_PATH) == []
    # no pod of the list carries what could make an admission injector fire
    from krm_fn.admission.injectors import NAMES
    assert sorted(m for m in mods if m.startswith("krm_fn.admission.injectors.")) == [
        "krm_fn.admission.injectors.base"]
    assert len(NAMES) == 11
    # every container is vLLM or unrecognised; no Go or glibc option is set
    assert _engine_modules(mods) == ["base", "programs", "ranks", "recognition", "vllm",
                                     "workers"]


# json (~1.3 ms of import: its decoder, scanner and encoder compile regular expressions):
# no function a plain render runs imports it
_JSON_IMPORTED_ON_A_PLAIN_RENDER_BY: set = set()


def test_a_plain_render_imports_no_json():
    mods = _imported([], _ten_items()) - _started_with()
    assert "krm_fn.node.upstream" in mods and "krm_fn.node.data.kubelet_1_35" in mods
    assert _loaded(mods, ("json", "_json")) == []


_WHO_IMPORTS_JSON = """
import builtins, os, sys
_import = builtins.__import__
def _hook(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "json" and level == 0 and (globals or {}).get("__name__", "").startswith("krm_fn"):
        code = sys._getframe(1).f_code.co_name
        os.write(2, f"json imported by {globals['__name__']}.{code}\\n".encode())
    return _import(name, globals, locals, fromlist, level)
builtins.__import__ = _hook
from krm_fn.cli import main
sys.exit(main())
"""


def test_a_plain_render_imports_json_only_where_it_is_listed():
    """Every `import json` statement a plain render runs in krm_fn, by the function that
    runs it (an import inside a function runs each call, so none hides behind an earlier
    one): the kubelet facts are Python modules, and results, changes, objects and the config
    types import json only for a value that needs it."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _WHO_IMPORTS_JSON], input=_ten_items().encode(),
                       capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    callers = set(re.findall(r"^json imported by (\S+)$", p.stderr.decode(), re.M))
    assert callers == _JSON_IMPORTED_ON_A_PLAIN_RENDER_BY


def _engine_modules(mods: set[str]) -> list[str]:
    """The modules of krm_fn/rules/engines/ in `mods`, by their short names."""
    from krm_fn.rules.engines import recognition
    assert len(recognition.TABLE) == 13, (
        f"{len(recognition.TABLE)} engines: a new engine changes this count; update it and "
        f"check the engine modules the tests below expect (CONTRIBUTING.md, A serving engine)")
    return sorted(m.rpartition(".")[2] for m in mods if m.startswith("krm_fn.rules.engines."))


def test_a_render_imports_the_engine_a_container_runs():
    """A llama.cpp container imports its engine module too, a JVM env var the JVM one, and
    spec.workloads.threads.mallocArenaMax the glibc check (and no other engine module)."""
    text = _ten_items().replace("registry.example/vllm-cpu:0.6.0",
                                "ghcr.io/ggml-org/llama.cpp:server-b4000", 1)
    text = text.replace("\"/models/m1\"]\n", "\"/models/m1\"]\n          env: [{name: JAVA_OPTS, "
                        "value: -Xmx1g}]\n", 1)
    assert text.count("llama.cpp:server") == 1 and text.count("JAVA_OPTS") == 1
    text += ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
             "  metadata: {name: t}\n  spec:\n    selector: {matchLabels: {tier: inference}}\n"
             "    workloads: {threads: {mallocArenaMax: 2}}\n")
    mods = _imported([], text) - _started_with()
    assert _engine_modules(mods) == ["base", "glibc", "jvm", "llama_cpp", "programs", "ranks",
                                     "recognition", "vllm", "workers"]


# standard-library modules a render does not need, that an editable install's import hook
# (a .pth file) may load before krm_fn starts, so the -X importtime check above cannot see
# them: checked in the source of every krm_fn module a render imports instead
_STDLIB_NOT_FOR_A_RENDER = ("pathlib", "fnmatch", "urllib", "ipaddress", "dataclasses",
                            "typing", "inspect", "copy", "difflib", "tempfile", "shutil",
                            "importlib", "warnings", "json", "shlex", "fractions", "decimal",
                            "numbers")


def _top_level_imports(module: str) -> set[str]:
    """The modules `module`'s source imports outside functions (absolute names)."""
    import ast
    import importlib.util
    tree = ast.parse(open(importlib.util.find_spec(module).origin).read())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []      # imports inside functions are lazy: not walked
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_module_of_a_render_imports_what_a_render_does_not_need():
    mods = sorted(m for m in _imported([], _ten_items()) if m.startswith("krm_fn"))
    assert "krm_fn.node.upstream" in mods and len(mods) > 40
    found = {(m, i) for m in mods for i in _top_level_imports(m)
             if i.split(".")[0] in _STDLIB_NOT_FOR_A_RENDER}
    assert found == set()


def test_a_render_imports_the_injector_a_pod_triggers():
    text = _ten_items().replace("    template:\n      spec:\n",
                                "    template:\n      metadata:\n        annotations:\n"
                                "          dapr.io/enabled: \"true\"\n      spec:\n", 1)
    assert text.count("dapr.io/enabled") == 1
    mods = _imported([], text, code=1) - _started_with()   # 1: daprd keeps it Burstable
    assert sorted(m for m in mods if m.startswith("krm_fn.admission.injectors.")) == [
        "krm_fn.admission.injectors.base", "krm_fn.admission.injectors.dapr"]


_API_REFUSAL_MODULES = ("krm_fn.admission.limitrange", "krm_fn.admission.resourcequota",
                        "krm_fn.admission.vpa", "krm_fn.admission.hpa")


def test_a_render_imports_the_api_refusal_checks_only_for_their_objects():
    """LimitRange, ResourceQuota, VerticalPodAutoscaler and HorizontalPodAutoscaler checks
    (admission/verdict.py) are imported only when the input holds such an object."""
    assert _loaded(_imported([], _ten_items()) - _started_with(), _API_REFUSAL_MODULES) == []
    quota = ("- apiVersion: v1\n  kind: ResourceQuota\n  metadata: {name: q}\n"
             "  spec:\n    hard: {limits.cpu: \"1000\"}\n")
    text = _ten_items().replace("items:\n", "items:\n" + quota, 1)
    assert text.count("kind: ResourceQuota") == 1
    mods = _imported([], text) - _started_with()
    assert _loaded(mods, _API_REFUSAL_MODULES) == ["krm_fn.admission.resourcequota"]
    hpa = ("- apiVersion: autoscaling/v2\n  kind: HorizontalPodAutoscaler\n  metadata: "
           "{name: h}\n  spec:\n    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, "
           "name: nowhere}\n"
           "    maxReplicas: 3\n")
    text = _ten_items().replace("items:\n", "items:\n" + hpa.replace("nowhere", "llm-0"), 1)
    mods = _imported([], text) - _started_with()
    assert _loaded(mods, _API_REFUSAL_MODULES) == ["krm_fn.admission.hpa"]


def test_a_render_imports_knatives_webhook_tables_only_for_a_knative_pod():
    """admission/knative.py (the field mask and feature flags) is imported when a pod is a
    Knative revision's (admission/serving_mode.py), not for the Deployments of a plain
    render (test_a_plain_render_imports_only_what_it_uses)."""
    ksvc = ("- apiVersion: serving.knative.dev/v1\n  kind: Service\n  metadata:\n"
            "    name: k\n    labels: {tier: inference}\n  spec:\n    template:\n      spec:\n"
            "        containers:\n        - name: server\n          image: vllm/vllm-cpu:0.6\n"
            "          resources:\n            requests: {cpu: \"2\", memory: 4Gi}\n")
    text = _ten_items().replace("items:\n", "items:\n" + ksvc, 1)
    mods = _imported([], text, code=1) - _started_with()
    assert _loaded(mods, ("krm_fn.admission.knative",)) == ["krm_fn.admission.knative"]


def test_a_render_imports_a_whole_object_check_only_for_its_kind():
    nim = ("- apiVersion: apps.nvidia.com/v1alpha1\n  kind: NIMService\n  metadata:\n"
           "    name: nim\n  spec: {resources: {limits: {cpu: \"4\"}}}\n")
    cfg = ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
           "  metadata: {name: t}\n  spec:\n    selector:\n"
           "      kinds: [Deployment, NIMService]\n")
    text = _ten_items().replace("items:\n", "items:\n" + nim, 1) + cfg
    mods = _imported([], text) - _started_with()
    assert _loaded(mods, ("krm_fn.objects",)) == ["krm_fn.objects", "krm_fn.objects.passthrough"]


def test_the_function_path_ends_the_process_only_when_it_owns_it(monkeypatch):
    from krm_fn.cli import common
    exits = []
    monkeypatch.setattr(common.os, "_exit", exits.append)
    common.end_process(0)                       # not started by krm_fn.cli.main
    monkeypatch.setattr(common, "OWN_PROCESS", True)
    common.end_process(1)                       # pytest's captured streams, not the process's
    monkeypatch.setattr(common.sys, "stdout", common.sys.__stdout__)
    monkeypatch.setattr(common.sys, "stderr", common.sys.__stderr__)
    common.end_process(1)
    assert exits == [1]


def test_the_legacy_plugin_path_imports_no_click(tmp_path):
    cfg = tmp_path / "kust-plugin-config-1"
    cfg.write_text(CONFIG)
    mods = _imported(["plugin", str(cfg)], POD) - _started_with()
    assert "krm_fn.pipeline" in mods
    assert _loaded(mods, _NOT_ON_THE_RENDER_PATH) == []


def test_run_imports_click_but_no_other_command(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    mods = _imported(["run", "pod.yaml"], "", cwd=tmp_path)
    assert "click" in mods and "krm_fn.pipeline" in mods
    assert _loaded(mods, _NOT_FOR_A_RENDER) == []


def test_verify_imports_no_render_module():
    mods = _imported(["verify", "--root", str(ROOT / "tests" / "verify_fixtures" / "good")],
                     "")
    assert "krm_fn.verify.checks" in mods
    assert _loaded(mods, ("krm_fn.pipeline", "krm_fn.resourcelist", "krm_fn.cli.render",
                          "yaml", "ruamel")) == []


def test_which_command_lines_skip_click(tmp_path, monkeypatch):
    from krm_fn.cli import without_click
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    monkeypatch.delenv("_KRM_FN_COMPLETE", raising=False)
    assert without_click([]) == ("function", ())
    assert without_click(["plugin", str(cfg)]) == ("plugin", (str(cfg),))
    assert without_click(["plugin", str(cfg), "extra"]) == ("plugin", (str(cfg),))
    # everything else is click's, which parses it and reports its own usage errors
    for args in (["plugin"], ["plugin", str(tmp_path)], ["plugin", str(tmp_path / "no")],
                 ["plugin", str(cfg), "--ignored-arg"], ["plugin", str(cfg), "-h"],
                 ["plugin", "--", str(cfg)], ["run", "-"], ["--help"], ["--version"],
                 ["verify"], ["nope"]):
        assert without_click(args) is None, args
    monkeypatch.setenv("_KRM_FN_COMPLETE", "bash_source")
    assert without_click([]) is None


def test_plugin_usage_errors_still_come_from_click(tmp_path):
    p = run_cli(["plugin", str(tmp_path / "missing.yaml")])
    assert p.returncode == 2
    assert p.stderr.startswith("Usage: krm-fn plugin [OPTIONS] CONFIG_FILE [ARGS]...\n")
    assert "Error: Invalid value for 'CONFIG_FILE': File " in p.stderr


def test_run_drop_local_config_refuses_a_resource_list():
    rl = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
          + "".join("- " + line + "\n" if i == 0 else "  " + line + "\n"
                    for i, line in enumerate(NODE.splitlines()[1:])))
    p = run_cli(["run", "--drop-local-config", "-"], stdin=rl)
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr == ("krm-fn: --drop-local-config: the input is a ResourceList, whose "
                        "items krm-fn keeps (kustomize and kpt leave local-config items out "
                        "of their own output)\n")


def test_run_on_a_file_without_a_final_line_break_adds_no_empty_line(tmp_path):
    """Hostile test: two insertions at the end of a file without a final line break (a new
    `limits`, then the `env`) each started a line, leaving an empty line between them."""
    (tmp_path / "p.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n"
        "    image: b\n    resources:\n      requests: {cpu: \"2\", memory: 1Gi}")
    p = run_cli(["run", "p.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "\n\n" not in p.stdout
    assert "      requests: {cpu: \"2\", memory: 1Gi}\n      limits:\n        cpu: \"2\"\n" \
           "        memory: \"1Gi\"\n    env:\n    - name: OMP_NUM_THREADS\n" in p.stdout
