"""`krm-fn verify` (krm_fn/verify/) and the verify Job (`spec.output.verifyJob`,
krm_fn/node/verify_job.py): fixture trees laid out like /proc and /sys
(tests/verify_fixtures/, written by build.py), this machine's own /proc and /sys, exit codes.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from krm_fn import config, pipeline
from krm_fn.cli import cli
from krm_fn.node import plan as plan_mod
from krm_fn.node import verify_job
from krm_fn.node.formats import RenderContext
from krm_fn.verify import checks, read as probe, report
from tests.helpers import ROOT

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
_spec = importlib.util.spec_from_file_location("verify_fixture_build", FIXTURES / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

# What the good container's pod spec and node pool promise (see build.py).
ARGS = ["--cpus", "4", "--memory", "12Gi", "--pids", "4096", "--full-pcpus-only",
        "--topology-policy", "single-numa-node", "--kubernetes-version", "1.35"]
PIDS_HIDDEN = ("the kubelet puts podPidsLimit on the pod's cgroup (https://kubernetes.io/docs/concepts/policy/pid-limiting/), the "
               "parent of this container's; inside a cgroup namespace that parent is hidden, "
               "so only a lower container limit could be seen")


def verify(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, ["verify", *args], env=env, catch_exceptions=False)
    return result


def fixture(case: str) -> str:
    return str(FIXTURES / case)


def mismatches(case: str, args: list[str]) -> list[tuple[str, str, str]]:
    """(check, expected, found) of every mismatch row, via --json."""
    r = verify("--root", fixture(case), "--json", *args)
    doc = json.loads(r.stdout)
    bad = [(c["check"], c["expected"], c["found"]) for c in doc["checks"] if c["ok"] is False]
    assert r.exit_code == (1 if bad else 0), r.stdout
    assert doc["ok"] is (not bad)
    return bad


def rows_of(case: str, args: list[str]) -> dict[str, dict]:
    r = verify("--root", fixture(case), "--json", *args)
    return {c["check"]: c for c in json.loads(r.stdout)["checks"]}


# --- fixtures on disk are what build.py writes ------------------------------------------------

def test_fixture_trees_match_build_py(tmp_path):
    build.write(tmp_path)
    for case in build.CASES:
        want = {p.relative_to(tmp_path / case): p.read_bytes()
                for p in (tmp_path / case).rglob("*") if p.is_file()}
        have = {p.relative_to(FIXTURES / case): p.read_bytes()
                for p in (FIXTURES / case).rglob("*") if p.is_file()}
        assert have == want, f"tests/verify_fixtures/{case} is stale: run build.py"


# --- good containers pass ---------------------------------------------------------------------

def test_good_134_exact_table():
    r = verify("--root", fixture("good"), *ARGS)
    assert r.exit_code == 0
    assert r.stdout == f"""\
CHECK                       EXPECTED     FOUND                  RESULT
cgroup v2                   v2           v2                     ok
cpuset                      4            4 (2-3,18-19)          ok
affinity                    2-3,18-19    2-3,18-19              ok
whole cores                 whole cores  yes (2 cores)          ok
NUMA nodes                  1            1 (node 0)             ok
cpu.max                     max 100000   max 100000             ok
memory.max                  12884901888  12884901888            ok
pids.max                    4096         max                    skip
env OMP_NUM_THREADS         4            4                      ok
env MKL_NUM_THREADS         4            4                      ok
env OPENBLAS_NUM_THREADS    4            4                      ok
env NUMEXPR_NUM_THREADS     4            4                      ok
env NUMEXPR_MAX_THREADS     4            4                      ok
env VECLIB_MAXIMUM_THREADS  4            4                      ok
env BLIS_NUM_THREADS        4            4                      ok
env TORCH_NUM_THREADS       4            4                      ok
env TF_NUM_INTRAOP_THREADS  4            4                      ok
env RAYON_NUM_THREADS       4            4                      ok
env GOMAXPROCS              4            4                      ok
env PYTHON_CPU_COUNT        4            4                      ok
thread-affinity             2-3,18-19    3 threads, all inside  ok
runnable-threads            <= 4         1                      ok

pids.max (skipped): {PIDS_HIDDEN}

verify: PASS (21 ok, 1 skipped)
"""


def test_good_with_the_quota_gate_off_keeps_quota_equal_to_the_limit():
    """A node whose kubelet turns DisableCPUQuotaWithExclusiveCPUs off (on by default in
    every supported version): --cpu-quota, the quota equals the limit."""
    args = [*ARGS, "--cpu-quota"]
    assert mismatches("good-cpu-quota", args) == []
    row = rows_of("good-cpu-quota", args)["cpu.max"]
    assert (row["expected"], row["found"], row["result"]) == ("400000 100000", "400000 100000",
                                                              "ok")


def test_good_with_the_quota_derives_the_cpu_count_from_the_quota():
    rows = rows_of("good-cpu-quota", ["--kubernetes-version", "1.35", "--cpu-quota"])
    assert rows["cpuset"]["expected"] == "4" and rows["cpuset"]["ok"] is True
    assert rows["cpuset"]["detail"] == "expected count taken from cpu.max"
    assert rows["env OMP_NUM_THREADS"]["expected"] == "4"


def test_good_without_cgroup_namespace_sees_the_pod_pids_limit():
    assert mismatches("good-host-cgroup", ARGS) == []
    row = rows_of("good-host-cgroup", ARGS)["pids.max"]
    assert row["found"] == "4096 (/sys/fs/cgroup/kubepods.slice/kubepods-pod0a1b2c3d.slice/pids.max)"
    assert row["ok"] is True
    r = verify("--root", fixture("good-host-cgroup"), "--json", *ARGS)
    assert json.loads(r.stdout)["cgroup_dir"] == \
        "/sys/fs/cgroup" + build.CONTAINER_CGROUP


def test_no_expected_cpus_and_no_quota_skips_the_size_but_checks_threads_against_the_set():
    rows = rows_of("good", [])
    assert rows["cpuset"]["ok"] is None and rows["cpuset"]["found"] == "4 (2-3,18-19)"
    assert rows["env GOMAXPROCS"]["expected"] == "4" and rows["env GOMAXPROCS"]["ok"] is True
    assert rows["cpu.max"]["ok"] is None     # no version: quota expectation unknown
    assert rows["whole cores"]["ok"] is None and rows["NUMA nodes"]["ok"] is None


# --- each bad container names its exact mismatch ---------------------------------------------

BEST_EFFORT = [a if a != "single-numa-node" else "best-effort" for a in ARGS]


@pytest.mark.parametrize("case,args,want", [
    ("bad-cgroup-v1", ARGS, [("cgroup v2", "v2", "v1")]),
    ("bad-shared-pool", BEST_EFFORT, [("cpuset", "4", "24 (4-15,20-31)")]),
    ("bad-shared-pool", ARGS, [("cpuset", "4", "24 (4-15,20-31)"),
                               ("NUMA nodes", "1", "2 (nodes 0,1)")]),
    ("bad-split-smt", ARGS, [("whole cores", "whole cores",
                              "no: 2 (sibling 18), 3 (sibling 19), 4 (sibling 20), "
                              "5 (sibling 21)")]),
    ("bad-two-numa", ARGS, [("NUMA nodes", "1", "2 (nodes 0,1)")]),
    ("bad-quota", ARGS, [("cpu.max", "max 100000", "400000 100000")]),
    ("bad-memory", ARGS, [("memory.max", "12884901888", "8589934592")]),
    ("bad-pids", ARGS, [("pids.max", "4096", "1024 (/sys/fs/cgroup/pids.max)")]),
    ("bad-thread-env", ARGS, [("env OMP_NUM_THREADS", "4", "32")]),
    ("bad-missing-file", ARGS, [("memory.max", "12884901888", "unreadable")]),
    ("good-cpu-quota", ARGS, [("cpu.max", "max 100000", "400000 100000")]),
])
def test_bad_fixture_names_the_mismatch(case, args, want):
    assert mismatches(case, args) == want


def test_split_smt_passes_without_full_pcpus_only():
    args = [a if a != "--full-pcpus-only" else "--no-full-pcpus-only" for a in ARGS]
    assert mismatches("bad-split-smt", args) == []
    assert rows_of("bad-split-smt", args)["whole cores"]["result"] == "skip"


def test_missing_file_message_names_the_path_without_traceback():
    r = verify("--root", fixture("bad-missing-file"), *ARGS)
    assert r.exit_code == 1
    assert ("memory.max: cannot read /sys/fs/cgroup/memory.max: No such file or directory\n"
            in r.stdout)
    assert "Traceback" not in r.output


def test_cgroup_v1_falls_back_to_the_affinity_list():
    rows = rows_of("bad-cgroup-v1", ARGS)
    assert rows["cpuset"]["found"] == "4 (2-3,18-19)" and rows["cpuset"]["ok"] is True
    assert [rows[c]["result"] for c in ("cpu.max", "memory.max", "pids.max")] == ["skip"] * 3
    assert "affinity" not in rows
    assert rows["cgroup v2"]["detail"].startswith(
        "/sys/fs/cgroup/cgroup.controllers is missing: the node runs cgroup v1")


def test_bad_memory_exact_json():
    r = verify("--root", fixture("bad-memory"), "--json", *ARGS)
    assert r.exit_code == 1
    env_rows = [{"check": f"env {n}", "expected": "4", "found": "4", "ok": True, "detail": "",
                 "result": "ok"} for n in config.DEFAULT_THREAD_ENV]
    want = {
        "ok": False,
        "root": fixture("bad-memory"),
        "expected": {"cpus": 4, "memory": 12884901888, "pids": 4096, "threads": None,
                     "full_pcpus_only": True, "topology_policy": "single-numa-node",
                     "kubernetes_version": "1.35", "cpu_quota": None, "thread_env": []},
        "cpus_source": "given",
        "cgroup_dir": "/sys/fs/cgroup",
        "unreadable": {},
        "checks": [
            {"check": "cgroup v2", "expected": "v2", "found": "v2", "ok": True, "detail": "",
             "result": "ok"},
            {"check": "cpuset", "expected": "4", "found": "4 (2-3,18-19)", "ok": True,
             "detail": "", "result": "ok"},
            {"check": "affinity", "expected": "2-3,18-19", "found": "2-3,18-19", "ok": True,
             "detail": "", "result": "ok"},
            {"check": "whole cores", "expected": "whole cores", "found": "yes (2 cores)",
             "ok": True, "detail": "", "result": "ok"},
            {"check": "NUMA nodes", "expected": "1", "found": "1 (node 0)", "ok": True,
             "detail": "", "result": "ok"},
            {"check": "cpu.max", "expected": "max 100000", "found": "max 100000", "ok": True,
             "detail": "", "result": "ok"},
            {"check": "memory.max", "expected": "12884901888", "found": "8589934592",
             "ok": False,
             "detail": "memory.max is 8589934592 bytes, not the 12884901888-byte limit: the "
                       "kubelet writes memory.max = limits.memory (https://kubernetes.io/docs/concepts/architecture/cgroups/), so the "
                       "container's memory limit is not the one expected",
             "result": "MISMATCH"},
            {"check": "pids.max", "expected": "4096", "found": "max", "ok": None,
             "detail": PIDS_HIDDEN, "result": "skip"},
            *env_rows,
            {"check": "thread-affinity", "expected": "2-3,18-19",
             "found": "3 threads, all inside", "ok": True, "detail": "", "result": "ok"},
            {"check": "runnable-threads", "expected": "<= 4", "found": "1", "ok": True,
             "detail": "", "result": "ok"},
        ],
    }
    assert r.stdout == json.dumps(want, indent=2, ensure_ascii=False) + "\n"


# --- pure checks ---------------------------------------------------------------------------

def good_probe(**changes) -> probe.Probe:
    p = probe.read(fixture("good"), page_size=4096)
    return probe.Probe(**{**p.__dict__, **changes})


def test_memory_max_is_compared_in_whole_pages():
    # 1G = 10^9 bytes is 244140.625 pages of 4 KiB: the kernel keeps 999997440 (mm/page_counter.c)
    rows = {r.check: r for r in checks.run(good_probe(memory_max="999997440"),
                                           checks.Expected(memory=10 ** 9))}
    assert rows["memory.max"].ok is True
    assert rows["memory.max"].detail == ("the limit rounded down to whole 4096-byte pages, as "
                                         "the kernel keeps it")
    rows = {r.check: r for r in checks.run(good_probe(memory_max="max"), checks.Expected())}
    assert (rows["memory.max"].expected, rows["memory.max"].found, rows["memory.max"].ok) == \
        ("a limit", "max", False)


def test_quota_expectation_by_version_and_override():
    """DisableCPUQuotaWithExclusiveCPUs is on by default in every supported version
    (generated data): no quota expected unless --cpu-quota says the node keeps one."""
    E = checks.Expected
    for version in ((1, 35), (1, 36), (1, 37)):
        assert checks.quota_expected(E(kubernetes_version=version)) is False
    assert checks.quota_expected(E()) is None
    assert checks.quota_expected(E(kubernetes_version=(1, 35), cpu_quota=True)) is True
    assert checks.parse_version("v1.36.1-eks-1") == (1, 36)
    with pytest.raises(ValueError):
        checks.parse_version("1.x")


@pytest.mark.parametrize("text,why", [
    ("1.34", "Kubernetes 1.34 is not supported: krm-fn supports Kubernetes 1.35, 1.36 and "
             "1.37, as upstream maintains the three most recent minor releases "
             "(https://kubernetes.io/releases/)"),
    ("v1.38.0", "Kubernetes v1.38.0 is not supported yet: krm-fn has no kubelet data for 1.38 "
                "yet; krm-fn supports Kubernetes 1.35, 1.36 and 1.37, as upstream maintains "
                "the three most recent minor releases (https://kubernetes.io/releases/)"),
    ("2.0", "'2.0' is not a Kubernetes version such as 1.36 or v1.36.2"),
])
def test_a_version_outside_the_supported_minors_is_refused_naming_them(text, why):
    with pytest.raises(ValueError) as e:
        checks.parse_version(text)
    assert str(e.value) == why
    r = verify("--root", fixture("good"), "--kubernetes-version", text)
    assert r.exit_code == 2 and "--kubernetes-version" in r.output


def test_restricted_policy_does_not_require_one_numa_node():
    p = probe.read(fixture("bad-two-numa"), page_size=4096)
    row = {r.check: r for r in checks.run(p, checks.Expected(topology_policy="restricted"))}
    assert row["NUMA nodes"].ok is None and row["NUMA nodes"].found == "2 (nodes 0,1)"


def test_thread_env_names_come_from_the_registries():
    names = checks.thread_env_names(("APP_THREADS", "OMP_NUM_THREADS"))
    assert names[:len(config.DEFAULT_THREAD_ENV)] == tuple(config.DEFAULT_THREAD_ENV)
    assert names[len(config.DEFAULT_THREAD_ENV):] == ("LLAMA_ARG_THREADS", "N_THREADS",
                                                     "N_THREADS_BATCH", "APP_THREADS"), (
        "the env vars of the engines with env= (recognition.TABLE order), then the other "
        "names given: a new engine with env= adds its variables here")


def test_no_thread_env_at_all_is_a_mismatch():
    rows = checks.run(good_probe(environ={"PATH": "/bin"}), checks.Expected(cpus=4))
    assert [(r.check, r.found, r.ok) for r in rows if r.check.startswith("thread")] == \
        [("thread env", "none set", False)]


def test_garbage_in_files_is_a_mismatch_not_a_crash():
    rows = {r.check: r for r in checks.run(
        good_probe(cpuset_effective="2-x", cpu_max="lots", pids_max=(("/p", "many"),)),
        checks.Expected(cpus=4, pids=10, kubernetes_version=(1, 35)))}
    assert rows["cpuset"].ok is False and "bad range '2-x'" in rows["cpuset"].detail
    assert rows["cpu.max"].ok is False and rows["cpu.max"].found == "'lots'"
    assert rows["pids.max"].ok is False and rows["pids.max"].detail == "/p: not a count or max"


@pytest.mark.parametrize("text", ["100000 0", "0 0", "0 100000"])
def test_zero_quota_or_period_is_a_mismatch_never_a_division(text):
    rows = {r.check: r for r in checks.run(
        good_probe(cpu_max=text), checks.Expected(cpus=4, cpu_quota=True))}
    assert rows["cpu.max"].ok is False
    assert rows["cpu.max"].detail.endswith(f"{text!r} has a zero quota or period")


def test_a_fifo_in_the_tree_cannot_block(tmp_path):
    import shutil
    import time
    root = tmp_path / "root"
    shutil.copytree(fixture("good"), root)
    target = root / "sys/fs/cgroup/memory.max"
    target.unlink()
    os.mkfifo(target)
    start = time.monotonic()
    r = verify("--root", str(root), "--json", "--cpus", "4", "--memory", "8Gi")
    assert time.monotonic() - start < 10
    row = {c["check"]: c for c in json.loads(r.stdout)["checks"]}["memory.max"]
    assert row["ok"] is False and "not a regular file" in row["detail"]


def test_many_cpus_with_shared_sibling_lists_stay_fast(tmp_path):
    import shutil
    import time
    n = 4096
    root = tmp_path / "root"
    shutil.copytree(fixture("good"), root)
    shutil.rmtree(root / "sys/devices/system/cpu")
    (root / "sys/fs/cgroup/cpuset.cpus.effective").write_text(f"0-{n - 1}\n")
    status = root / "proc/self/status"
    status.write_text("\n".join(f"Cpus_allowed_list:\t0-{n - 1}" if line.startswith(
        "Cpus_allowed_list") else line for line in status.read_text().splitlines()) + "\n")
    for i in range(n):
        d = root / f"sys/devices/system/cpu/cpu{i}/topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(f"0-{n - 1}\n")
    start = time.monotonic()
    r = verify("--root", str(root), "--json", "--cpus", str(n), "--full-pcpus-only")
    assert time.monotonic() - start < 10
    row = {c["check"]: c for c in json.loads(r.stdout)["checks"]}["whole cores"]
    assert row["ok"] is True and row["found"] == "yes (1 core)"


def test_report_summary_counts():
    rows = [checks.Row("a", "1", "1", True), checks.Row("b", "1", "2", False, "why"),
            checks.Row("c", "", "x", None)]
    assert report.summary(rows) == "verify: FAIL (1 mismatch, 1 ok, 1 skipped)"
    assert report.failed(rows) and not report.failed(rows[::2])


# --- this machine ------------------------------------------------------------------------------

def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "krm_fn", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_runs_against_this_machine():
    p = _run("verify", "--cpus", str(len(os.sched_getaffinity(0))), "--kubernetes-version",
             "1.35")
    assert p.returncode in (0, 1), p.stderr
    assert p.stdout.startswith("CHECK ") and "\nverify: " in p.stdout
    assert p.stdout.splitlines()[1].startswith("cgroup v2 ")
    assert p.stderr == ""
    j = _run("verify", "--json")
    assert j.returncode in (0, 1) and "Traceback" not in j.stderr
    doc = json.loads(j.stdout)
    assert doc["root"] == "/" and doc["ok"] is (j.returncode == 0)
    assert doc["checks"][0]["check"] == "cgroup v2"


# --- command line: exit codes --------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["--memory", "1x"], "Invalid value for '--memory'"),
    (["--memory", "0"], "must be greater than zero"),
    (["--kubernetes-version", "one"], "is not a Kubernetes version"),
    (["--topology-policy", "numa"], "Invalid value for '--topology-policy'"),
    (["--cpus", "0"], "Invalid value for '--cpus'"),
    (["--thread-env", "BAD-NAME"], "is not an environment variable name"),
    (["--root", "/does/not/exist"], "Invalid value for '--root'"),
])
def test_usage_errors_exit_2(args, message):
    r = verify(*args)
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output


def test_exit_codes_in_a_real_process():
    ok = _run("verify", "--root", fixture("good"), *ARGS)
    bad = _run("verify", "--root", fixture("bad-pids"), *ARGS)
    usage = _run("verify", "--cpus", "many")
    assert (ok.returncode, bad.returncode, usage.returncode) == (0, 1, 2)
    assert bad.stdout.endswith("verify: FAIL (1 mismatch, 21 ok, 0 skipped)\n")
    assert "Traceback" not in ok.stderr + bad.stderr + usage.stderr


def test_expected_values_from_env_vars():
    env = {"KRM_FN_CPUS": "4", "KRM_FN_MEMORY": "8589934592", "KRM_FN_KUBERNETES_VERSION": "1.35",
           "KRM_FN_TOPOLOGY_POLICY": "single-numa-node", "KRM_FN_FULL_PCPUS_ONLY": "true"}
    r = verify("--root", fixture("bad-memory"), "--json", env=env)
    doc = json.loads(r.stdout)
    assert r.exit_code == 0, r.stdout
    assert doc["expected"]["memory"] == 8589934592 and doc["expected"]["cpus"] == 4


# --- the verify Job ---------------------------------------------------------------------------

def pool_plan(**pool):
    cfg = config.load({"apiVersion": config.API_VERSION, "kind": config.KIND,
                       "metadata": {"name": "pin"},
                       "spec": {"nodePools": [{"name": "inference", **pool}]}})
    plan, results = plan_mod.build(cfg.nodePools[0], cfg.kubernetesVersion, None)
    return cfg, plan


def test_job_is_guaranteed_pinned_and_non_root():
    cfg, plan = pool_plan()
    job = verify_job.render(plan, RenderContext("kube-system", set_path=True),
                            cfg.output.verifyImage, (1, 35), cfg.workloads.threads.env)
    assert job["metadata"]["annotations"] == {"krm-fn.dev/skip": "true",
                                              "internal.config.kubernetes.io/path":
                                                  "node/verify-inference.yaml"}
    spec = job["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "2",
                                                                      "memory": "256Mi"}
    assert {e["name"]: e["value"] for e in c["env"]} == {n: "2" for n in config.DEFAULT_THREAD_ENV}
    assert c["args"] == ["verify", "--cpus", "2", "--memory", "256Mi", "--kubernetes-version",
                         "1.35", "--topology-policy", "best-effort", "--full-pcpus-only",
                         "--pids", "4096"]
    assert spec["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    assert (job["spec"]["backoffLimit"], spec["restartPolicy"]) == (0, "Never")
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["image"] == "ghcr.io/krm-fn/krm-fn:0.1.0"


def test_job_quota_args_follow_the_plan():
    _, plan = pool_plan(kubelet={"extra": {"cpuCFSQuota": False}})    # dropped by the plan
    assert not {"--cpu-quota", "--no-cpu-quota"} & set(verify_job.args(plan, (1, 35), [], ()))
    _, plan = pool_plan(kubelet={"extra": {"featureGates":
                                           {"DisableCPUQuotaWithExclusiveCPUs": False}}})
    assert verify_job.args(plan, (1, 36), [], ())[-1] == "--cpu-quota"
    _, plan = pool_plan()
    assert "--cpu-quota" not in verify_job.args(plan, (1, 37), [], ())


def test_job_args_pass_on_a_correctly_pinned_container(tmp_path):
    """The emitted Job's own args against a tree of what its container would see on a good
    node of the pool: 2 CPUs = one whole core, 256Mi, thread vars "2"."""
    cfg, plan = pool_plan(kubelet={"topologyManagerPolicy": "single-numa-node"})
    job = verify_job.render(plan, RenderContext("kube-system"), cfg.output.verifyImage,
                            cfg.kubernetesVersion, cfg.workloads.threads.env)
    c = job["spec"]["template"]["spec"]["containers"][0]
    files = build.container(cpus="3,19", memory_max=str(256 * 2 ** 20),
                            env={e["name"]: e["value"] for e in c["env"]})
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    r = verify(*c["args"][1:], "--root", str(tmp_path))
    assert r.exit_code == 0, r.stdout
    assert r.stdout.endswith("verify: PASS (21 ok, 1 skipped)\n")


def test_engine_emits_the_job_only_when_asked():
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "m", "namespace": "ns"},
           "spec": {"template": {"spec": {"containers": [
               {"name": "m", "image": "m:1",
                "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}]}}}}
    fc = {"apiVersion": config.API_VERSION, "kind": config.KIND, "metadata": {"name": "pin"},
          "spec": {}}
    assert [o["kind"] for o in pipeline.transform([dep], fc).emitted] == ["ConfigMap"]
    fc["spec"] = {"output": {"verifyJob": True, "namespace": "ops"}}
    out = pipeline.transform([dep], fc)
    assert [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])
            for o in out.emitted] == [("ConfigMap", "ops", "kubelet-config-inference"),
                                      ("Job", "ops", "krm-fn-verify-inference")]
    assert not out.has_errors


VERIFY_DEP = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "m", "namespace": "ns"},
              "spec": {"template": {"spec": {"containers": [
                  {"name": "m", "image": "m:1",
                   "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}]}}}}


def _image_warnings(fc: dict) -> list:
    out = pipeline.transform([json.loads(json.dumps(VERIFY_DEP))], fc)
    return [(r.severity, r.path, r.message) for r in out.results
            if "verifyImage" in (r.path or "")]


def test_verify_job_with_the_unpublished_default_image_is_warned_naming_the_field():
    fc = {"apiVersion": config.API_VERSION, "kind": config.KIND, "metadata": {"name": "pin"},
          "spec": {"output": {"verifyJob": True}}}
    assert _image_warnings(fc) == [(
        "warning", "spec.output.verifyImage",
        "spec.output.verifyJob is on with the default spec.output.verifyImage "
        "ghcr.io/krm-fn/krm-fn:0.1.0, which is not published to a registry yet: its pod "
        "would fail to pull it (ErrImagePull, "
        "https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff); build the "
        "image from krm-fn's Dockerfile, push it to a registry your nodes pull from and set "
        "spec.output.verifyImage to it")]
    fc["spec"]["output"]["verifyImage"] = "registry.example/krm-fn:0.1.0"
    assert _image_warnings(fc) == []
    fc["spec"]["output"] = {}
    assert _image_warnings(fc) == []


def test_verify_job_default_image_warning_names_the_flat_keys():
    fc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pin"},
          "data": {"verifyJob": "true"}}
    ((severity, path, message),) = _image_warnings(fc)
    assert (severity, path) == ("warning", "data.verifyImage")
    assert message.startswith("data.verifyJob is on with the default data.verifyImage "
                              "ghcr.io/krm-fn/krm-fn:0.1.0, which")
    assert message.endswith("and set data.verifyImage to it")
