"""`krm-fn run --report`: the human report on stderr, built from the transform outcome;
stdout is never changed by it. The progress line for large inputs."""
import io

from krm_fn import pipeline, report, resourcelist
from tests.helpers import ROOT, case_input, check_golden, run_cli

GOLDEN = ROOT / "tests" / "golden"

CONFIG = """\
apiVersion: krm-fn.dev/v1alpha1
kind: InferenceTuning
metadata: {name: pin}
spec:
  workloads:
    threads: {env: [OMP_NUM_THREADS]}
  nodePools:
  - name: small
    nodeSelector: {krm-fn.dev/cpu-pinning: "true"}
    topology: {sockets: 1, coresPerSocket: 8, threadsPerCore: 2}
"""
INPUT = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - name: server
    image: s:1
    resources: {requests: {cpu: 1500m, memory: 2Gi}}
    env: [{name: OMP_NUM_THREADS, value: "16"}]
  - name: exporter
    image: e:1
    resources: {limits: {cpu: 100m}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  template:
    spec:
      containers:
      - {name: s, image: s:1, resources: {limits: {cpu: "2"}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
"""

WORKLOADS = """\
krm-fn report: 3 items, 1 changed, 2 errors, 4 warnings

Workloads (2):
  WORKLOAD / CONTAINER                    CPU req/lim         MEMORY req/lim     THREADS
  Pod ml/p (changed)
    server                                1500m/- → 2/2       2Gi/- → 2Gi/2Gi    16 → 2
    exporter                              -/100m → 100m/100m  -/- → 128Mi/128Mi  -
  Deployment bad (left unchanged: error)
    s                                     -/2                 -/-                -

Pods after admission:
  POD                                QOS                EXCLUSIVE CPUS  NUMA  INJECTED  PER NODE
  Pod ml/p spec                      Guaranteed         server 2        0     -         5
  Deployment bad spec.template.spec  Burstable (error)  -               -     -         6

Node pool small (1 workload):
  nodeSelector               krm-fn.dev/cpu-pinning=true
  cpuManagerPolicy           static
"""
FIT = """\
  fit                        12 exclusive CPUs per node (NUMA 0: 12)
                             Pod ml/p spec: needs 2 exclusive, 5 per node (allocatable cpu 12: 2 + 100m each)
"""


def _run(tmp_path, *extra, text=INPUT):
    cfg = tmp_path / "pin.yaml"
    cfg.write_text(CONFIG)
    f = tmp_path / "in.yaml"
    f.write_text(text)
    return run_cli(["run", *extra, "--config", str(cfg), str(f)])


def test_report_on_stderr_stdout_unchanged(tmp_path):
    plain = _run(tmp_path)
    rep = _run(tmp_path, "--report")
    assert rep.stdout == plain.stdout
    assert rep.returncode == plain.returncode == 1
    assert rep.stderr.startswith(plain.stderr)
    text = rep.stderr[len(plain.stderr):]
    assert text.startswith(WORKLOADS)
    assert text.endswith(FIT)
    # the pool section lists the plan's kubelet fields: reserved whole cores 0-1 + siblings
    assert "\n  reservedSystemCPUs         0-1,8-9\n" in text


def test_report_golden_on_the_kpt_example(tmp_path):
    d = ROOT / "overlays" / "kpt"
    p = run_cli(["run", "--report", "--config", str(d / "pin.yaml"),
                 str(d / "deployment.yaml"), str(d / "inferenceservice.yaml"),
                 str(d / "storage-container.yaml")])
    assert p.returncode == 0
    warnings = "".join(line + "\n" for line in p.stderr.splitlines()
                       if line.startswith("krm-fn: warning"))
    check_golden(GOLDEN / "report-kpt.txt", p.stderr[len(warnings):])
    assert "\n    vllm " in p.stderr and "3500m/- → 4/4" in p.stderr


def _transform(text, config_text=CONFIG):
    doc = resourcelist.parse(text, require_resource_list=False)
    fc = resourcelist.load_config_file(config_text)
    return doc, fc, pipeline.transform(doc.items, fc, keep_tuned=True)


def test_after_is_what_krm_fn_writes():
    doc, fc, out = _transform(INPUT)
    rendered = resourcelist.render(doc, out.ops, out.emitted, [], out.replace)
    again = resourcelist.parse(rendered, require_resource_list=False).items
    for i, item in enumerate(doc.items):
        assert report.after(doc.items, out, i) == again[i]
    assert report.after(doc.items, out, 0) != doc.items[0]


def test_several_pod_specs_are_named():
    text = case_input("kuberay-kinds")
    doc = resourcelist.parse(text, require_resource_list=True)
    out = pipeline.transform(doc.items, doc.function_config, keep_tuned=True)
    lines = report.render(doc.items, out, doc.function_config).splitlines()
    i = lines.index("  RayCluster raycluster-serve (changed)")
    assert lines[i + 1] == "    spec.headGroupSpec.template.spec"
    assert lines[i + 2].split()[:2] == ["ray-head", "2/2"]
    assert lines[i + 3] == "    spec.workerGroupSpecs[0].template.spec"


def test_no_workload_and_invalid_config():
    doc, fc, out = _transform("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert report.render(doc.items, out, fc) == (
        "krm-fn report: 1 item, 0 changed, 0 errors, 1 warning\n\n"
        "No workload was tuned or reported on.\n")
    bad = CONFIG.replace("threadsPerCore: 2", "threadsPerCore: 9")
    doc, fc, out = _transform(INPUT, bad)
    assert report.render(doc.items, out, fc) == (
        "krm-fn report: the function config is invalid (see the error above)\n")


def test_progress_not_a_terminal():
    s = io.StringIO()
    p = report.Progress(s, tty=False)
    for i in range(501):
        p(i, 501)
    assert s.getvalue() == ""
    p.done()
    assert s.getvalue() == "krm-fn: 501/501 items\n"


def test_progress_on_a_terminal():
    s = io.StringIO()
    p = report.Progress(s, tty=True)
    for i in range(250):
        p(i, 600)
    p.done()
    assert s.getvalue() == ("\rkrm-fn: 0/600 items\rkrm-fn: 100/600 items"
                            "\rkrm-fn: 200/600 items\rkrm-fn: 600/600 items\n")


def test_no_progress_for_small_inputs():
    s = io.StringIO()
    p = report.Progress(s, tty=True)
    for i in range(500):
        p(i, 500)
    p.done()
    assert s.getvalue() == ""


def test_progress_line_on_a_large_input(tmp_path):
    pod = INPUT.split("---")[0]
    text = "---\n".join(pod.replace("name: p,", f"name: p{i},") for i in range(520))
    plain = _run(tmp_path, text=text)
    rep = _run(tmp_path, "--report", text=text)
    assert plain.returncode == rep.returncode == 0
    assert rep.stdout == plain.stdout
    assert rep.stderr.startswith("krm-fn: 520/520 items\n" + plain.stderr)
    assert "krm-fn report: 520 items, 520 changed, 0 errors, 2080 warnings\n" in rep.stderr
    assert "/520 items" not in plain.stderr


SKIPPED_ODD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: legacy
  annotations: {krm-fn.dev/skip: "true"}
spec:
  template:
    spec:
      containers:
      - name: app
        image: x
        env:
        - name: [OMP_NUM_THREADS]
          value: "8"
"""


def test_report_never_changes_the_outcome_of_a_run(tmp_path):
    """A skipped item is never validated: the report must read it without crashing, and
    stdout and the exit code are those of the run without --report."""
    plain = _run(tmp_path, text=SKIPPED_ODD + "---\n" + INPUT)
    rep = _run(tmp_path, "--report", text=SKIPPED_ODD + "---\n" + INPUT)
    assert (rep.returncode, rep.stdout) == (plain.returncode, plain.stdout)
    assert "Deployment legacy (skipped)" in rep.stderr
    assert "internal error" not in rep.stderr


def test_report_is_linear_in_the_workloads():
    import time
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n"
           "  - {name: s, image: s:1, resources: {limits: {cpu: '2', memory: 1Gi}}}\n")
    text = "---\n".join(pod % i for i in range(3000))
    doc = resourcelist.parse(text, False)
    out = pipeline.transform(doc.items, resourcelist.load_config_file(CONFIG), keep_tuned=True)
    start = time.monotonic()
    report.render(doc.items, out, resourcelist.load_config_file(CONFIG))
    assert time.monotonic() - start < 10


def test_a_control_character_in_a_name_is_written_escaped_in_the_tables(tmp_path):
    # a raw carriage return would move the cursor and print another row over the name
    from tests.helpers import run_cli
    dep = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: \"real\\rspoofed\"\n"
           "  namespace: ai\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
           "        image: srv:1\n        resources: {requests: {cpu: \"4\", memory: 1Gi}}\n")
    (tmp_path / "d.yaml").write_text(dep)
    p = run_cli(["run", "--report", "d.yaml"], cwd=tmp_path)
    assert "\r" not in p.stderr
    assert "real\\rspoofed" in p.stderr
