"""The command line: modes, exit codes, messages on stderr, no tracebacks."""
import re

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
        "1Gi, 1e3)\nkrm-fn: error: Pod p: left unchanged because of the errors above\n")


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
        "message": "invalid function config: unknown field 'cpuRouding' (known: cpuRounding, "
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
    assert tests in (ROOT / ".ci" / "run").read_text()
