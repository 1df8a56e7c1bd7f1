"""`krm-fn verify --node` (krm_fn/verify/node.py, node_checks.py) on fixture trees laid out
like a node's /var/lib/kubelet and /sys (built here, one per finding, on the machine of
tests/verify_fixtures/build.py: 2 NUMA nodes, 16 cores, CPU c and c+16 siblings), and the
in-pod thread check (krm_fn/verify/threads.py) on tests/verify_fixtures."""
from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from krm_fn.cli import cli
from krm_fn.verify import node_checks

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
_spec = importlib.util.spec_from_file_location("verify_fixture_build", FIXTURES / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

POD_A, POD_B = "6f1c2d3e-0000-4000-8000-00000000000a", "6f1c2d3e-0000-4000-8000-00000000000b"
PLAN = ["--reserved-cpus", "0,16", "--topology-policy", "single-numa-node",
        "--full-pcpus-only", "--memory-manager-policy", "Static"]


def node_tree(tmp_path: Path, entries=None, policy="static", reserved="0,16",
              memory_affinity=(0,), default="0-1,4-17,20-31", memory_policy="Static") -> Path:
    """A node root: the machine's /sys, the two checkpoints and the kubelet config."""
    entries = {POD_A: {"vllm": "2-3,18-19"}} if entries is None else entries
    files = {k: v for k, v in build.machine().items()}
    files["var/lib/kubelet/cpu_manager_state"] = json.dumps(
        {"policyName": policy, "defaultCpuSet": default, "entries": entries,
         "checksum": 1234})
    files["var/lib/kubelet/memory_manager_state"] = json.dumps(
        {"policyName": memory_policy, "machineState": {}, "checksum": 1, "entries": {
            uid: {c: [{"numaAffinity": list(memory_affinity), "type": "memory",
                       "size": 12884901888}] for c in cs} for uid, cs in entries.items()}})
    files["var/lib/kubelet/config.yaml"] = (
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"cpuManagerPolicy: {policy}\nreservedSystemCPUs: \"{reserved}\"\n")
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return tmp_path


def audit(root: Path, *args: str):
    r = CliRunner().invoke(cli, ["verify", "--node", "--root", str(root), "--json", *args],
                           catch_exceptions=False)
    doc = json.loads(r.stdout)
    return r.exit_code, {c["check"]: c for c in doc["checks"]}, doc


def bad(rows: dict) -> dict:
    return {k: (v["found"], v["detail"]) for k, v in rows.items() if v["ok"] is False}


def test_good_node_passes_every_check(tmp_path):
    code, rows, doc = audit(node_tree(tmp_path), *PLAN)
    assert code == 0, rows
    assert list(rows) == ["cpu-manager-policy", "memory-manager-policy", "reserved-cpus",
                          "exclusive-on-reserved", "shared-cores", "pool-siblings",
                          "numa-span"]
    assert all(r["ok"] is True for r in rows.values())
    assert doc["unreadable"] == {}


def test_exclusive_sets_of_two_pods_on_one_core(tmp_path):
    root = node_tree(tmp_path, {POD_A: {"vllm": "2-3"}, POD_B: {"tgi": "18-19"}})
    code, rows, _ = audit(root, *PLAN)
    assert code == 1
    found, detail = bad(rows)["shared-cores"]
    assert found == "2 core(s)"
    assert detail.startswith(f"exclusive CPUs of different pods on one physical core: core "
                             f"2,18: pods {POD_A}, {POD_B}; core 3,19: pods {POD_A}, {POD_B}. ")
    assert "full-pcpus-only" in detail


def test_exclusive_set_on_reserved_cpus(tmp_path):
    code, rows, _ = audit(node_tree(tmp_path, {POD_A: {"vllm": "0-1,16-17"}}), *PLAN)
    assert code == 1
    assert bad(rows)["exclusive-on-reserved"] == (
        "1 container(s)", f"exclusive CPUs on reserved CPUs: pod {POD_A} container vllm: "
        f"0,16. The state predates the current reservedSystemCPUs: drain the node, remove "
        f"the state file and restart the kubelet")


def test_container_spanning_numa_nodes(tmp_path):
    root = node_tree(tmp_path, {POD_A: {"vllm": "7-8,23-24"}}, memory_affinity=(0, 1))
    code, rows, _ = audit(root, *PLAN)
    found, detail = bad(rows)["numa-span"]
    assert code == 1 and found == "2 container(s)"
    assert detail.startswith(f"containers spanning NUMA nodes under single-numa-node: pod "
                             f"{POD_A} container vllm: nodes 0, 1; pod {POD_A} container vllm "
                             f"(memory): nodes 0, 1. ")
    # not a finding when the policy does not forbid it
    _, rows, _ = audit(root, "--topology-policy", "best-effort")
    assert "numa-span" not in rows


def test_reserved_set_differs_from_the_plan(tmp_path):
    code, rows, _ = audit(node_tree(tmp_path, reserved="0-1"), *PLAN)
    assert code == 1
    found, detail = bad(rows)["reserved-cpus"]
    assert found == "0-1"
    assert detail.startswith("reservedSystemCPUs in /var/lib/kubelet/config.yaml is '0-1', "
                             "the plan reserves 0,16: ")


def test_policy_differs_from_the_plan(tmp_path):
    code, rows, _ = audit(node_tree(tmp_path, entries={}, policy="none"), *PLAN)
    assert code == 1
    found, detail = bad(rows)["cpu-manager-policy"]
    assert found == "none"
    assert detail.startswith("/var/lib/kubelet/cpu_manager_state was written by the 'none' "
                             "policy, the plan sets 'static': ")


def test_sibling_in_the_shared_pool_with_full_pcpus_only(tmp_path):
    root = node_tree(tmp_path, {POD_A: {"vllm": "2-3"}}, default="0-1,4-31")
    code, rows, _ = audit(root, *PLAN)
    assert code == 1 and bad(rows)["pool-siblings"][0] == "1 container(s)"


def test_newer_checkpoint_format_with_original(tmp_path):
    root = node_tree(tmp_path, {POD_A: {"vllm": {"original": "2-3", "resized": "2-3"}},
                                POD_B: {"tgi": {"original": "18-19", "resized": "18-19"}}})
    assert bad(audit(root, *PLAN)[1])["shared-cores"][0] == "2 core(s)"


def test_link_out_of_the_root_is_not_followed(tmp_path):
    root = node_tree(tmp_path / "node")
    state = root / "var/lib/kubelet/cpu_manager_state"
    outside = tmp_path / "elsewhere.json"
    outside.write_text(state.read_text())
    state.unlink()
    state.symlink_to(outside)
    code, rows, doc = audit(root, *PLAN)
    assert code == 1
    assert doc["unreadable"]["/var/lib/kubelet/cpu_manager_state"] == (
        "a symbolic link out of the root")
    assert rows["cpu-manager-policy"]["found"] == "unreadable"


def test_fifo_and_oversized_files_do_not_hang_or_exhaust(tmp_path):
    root = node_tree(tmp_path)
    state = root / "var/lib/kubelet/cpu_manager_state"
    state.unlink()
    os.mkfifo(state)
    big = root / "var/lib/kubelet/memory_manager_state"
    big.write_text("[" + "0," * (1 << 20) + "0]")
    t = time.monotonic()
    code, rows, doc = audit(root, *PLAN)
    assert time.monotonic() - t < 10 and code == 1
    assert doc["unreadable"]["/var/lib/kubelet/cpu_manager_state"] == "not a regular file"
    assert doc["unreadable"]["/var/lib/kubelet/memory_manager_state"].startswith("not JSON")


def test_bad_reserved_option_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["verify", "--node", "--root", str(tmp_path),
                                 "--reserved-cpus", "x"])
    assert r.exit_code == 2
    assert r.output.startswith("krm-fn: --reserved-cpus 'x': ")


def test_exclusive_reads_both_formats():
    assert node_checks.exclusive({"entries": {"u": {"a": "1-2", "b": {"original": "3"},
                                                    "c": "bad", "d": 7}}}) == [
        ("u", "a", {1, 2}), ("u", "b", {3})]


# --- in-pod thread check -----------------------------------------------------------------

def pod_rows(case: str) -> dict:
    r = CliRunner().invoke(cli, ["verify", "--root", str(FIXTURES / case), "--json", "--cpus",
                                 "4"], catch_exceptions=False)
    return {c["check"]: c for c in json.loads(r.stdout)["checks"]}, r.exit_code


def test_thread_outside_the_pinned_set():
    rows, code = pod_rows("bad-thread-affinity")
    assert code == 1
    row = rows["thread-affinity"]
    assert (row["expected"], row["found"], row["ok"]) == ("2-3,18-19", "1 of 2 threads outside",
                                                          False)
    assert row["detail"].startswith("threads allowed outside the pinned CPUs 2-3,18-19: tid 2 "
                                    "on '0-31'. ")


def test_more_runnable_threads_than_pinned_cpus():
    rows, code = pod_rows("bad-runnable-threads")
    assert code == 1
    row = rows["runnable-threads"]
    assert (row["expected"], row["found"], row["ok"]) == ("<= 4", "6", False)
    assert row["detail"].startswith("6 threads of PID 1 were runnable at once on 4 pinned "
                                    "CPUs: ")


def test_no_serving_process_is_a_skip(tmp_path):
    rows, _ = pod_rows("good")
    assert rows["thread-affinity"]["ok"] is True
    r = CliRunner().invoke(cli, ["verify", "--root", str(FIXTURES / "good"), "--json",
                                 "--pid", "77"])
    row = {c["check"]: c for c in json.loads(r.stdout)["checks"]}["thread-affinity"]
    assert (row["ok"], row["detail"]) == (None, "cannot read /proc/77/task: No such file or "
                                                "directory")


def test_pid_task_links_out_of_the_root_are_not_followed(tmp_path):
    # a --root tree whose /proc/PID/task, or a thread's status, links to the real /proc:
    # verify reads nothing outside the tree
    import shutil
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "good", root, symlinks=True)
    (root / "proc" / "88").mkdir(parents=True)
    os.symlink("/proc/self/task", root / "proc" / "88" / "task")
    tasks = root / "proc" / "89" / "task" / "1"
    tasks.mkdir(parents=True)
    os.symlink("/proc/self/status", tasks / "status")
    for pid, detail in (("88", "cannot read /proc/88/task: a symbolic link out of --root "
                               "(not followed)"),
                        ("89", "/proc/89/task lists no thread")):
        r = CliRunner().invoke(cli, ["verify", "--root", str(root), "--json", "--pid", pid])
        row = {c["check"]: c for c in json.loads(r.stdout)["checks"]}["thread-affinity"]
        assert (row["ok"], row["detail"]) == (None, detail)


# --- the Job form ----------------------------------------------------------------------------

def test_node_audit_job_runs_verify_node_with_the_plan(tmp_path):
    from krm_fn.pipeline import transform
    cfg = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
           "metadata": {"name": "t"}, "spec": {"output": {"nodeAuditJob": True}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "example.com/m:1", "resources": {
            "requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}]}}
    out = transform([pod], cfg)
    [job] = [o for o in out.emitted if o["metadata"]["name"] == "krm-fn-node-audit-inference"]
    c = job["spec"]["template"]["spec"]["containers"][0]
    args = c["args"]
    assert args[:4] == ["verify", "--node", "--root", "/host"]
    assert "--reserved-cpus" in args and "--cpu-manager-policy" in args
    assert all(m["readOnly"] for m in c["volumeMounts"])
    assert {v["hostPath"]["type"] for v in job["spec"]["template"]["spec"]["volumes"]} <= {
        "File", "Directory"}
    # the args parse, and against a good node tree with the plan's reserved set they pass
    i = args.index("--reserved-cpus")
    root = node_tree(tmp_path, reserved=args[i + 1], memory_policy="None")
    r = CliRunner().invoke(cli, [*args[:2], *args[4:], "--root", str(root)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    # memoryManagerPolicy None: its checkpoint is not mounted, so not checked
    assert "--memory-manager-policy" not in args
    assert r.output.endswith("verify: PASS (5 ok, 0 skipped)\n")
    # root (the kubelet writes its checkpoints 0600 root), every capability dropped
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert c["securityContext"] == {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True, "runAsNonRoot": False,
                                    "capabilities": {"drop": ["ALL"]}}


def _audit_render(output, items=()):
    from krm_fn.pipeline import transform
    cfg = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
           "metadata": {"name": "t"}, "spec": {
               "nodePools": [{"name": "inference", "kubelet": {"memoryManagerPolicy": "Static"}}],
               "output": {"verifyImage": "registry.example/krm-fn:1", **output}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "s"},
           "spec": {"containers": [{"name": "c", "image": "example.com/m:1", "resources": {
               "requests": {"cpu": "4", "memory": "8Gi"},
               "limits": {"cpu": "4", "memory": "8Gi"}}}]}}
    return transform([pod, *items], cfg)


def test_node_audit_daemonset_runs_the_audit_as_an_init_container_on_every_node():
    out = _audit_render({"nodeAuditDaemonSet": True})
    [ds] = [o for o in out.emitted if o["kind"] == "DaemonSet"]
    assert ds["metadata"]["name"] == "krm-fn-node-audit-inference"
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"] == ds["spec"]["template"]["metadata"]["labels"]
    [audit] = pod["initContainers"]
    assert audit["args"][-2:] == ["--memory-manager-policy", "Static"]
    assert [m["mountPath"] for m in audit["volumeMounts"]] == [
        "/host/var/lib/kubelet/cpu_manager_state", "/host/var/lib/kubelet/memory_manager_state",
        "/host/sys/devices/system"]
    assert [c["name"] for c in pod["containers"]] == ["pause"]
    assert "restartPolicy" not in pod                  # a DaemonSet's pods restart: Always


@pytest.mark.parametrize("level, severity", [("restricted", "error"), ("baseline", "error"),
                                             ("privileged", None)])
def test_a_namespace_whose_pod_security_refuses_hostpath_is_reported(level, severity):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "krm-fn-verify", "labels": {"pod-security.kubernetes.io/enforce": level,
                                            "pod-security.kubernetes.io/warn": level}}}
    out = _audit_render({"nodeAuditJob": True, "namespace": "krm-fn-verify"}, [ns])
    found = [(r.severity, r.message.split(":")[0]) for r in out.results
             if r.path == "spec.output.namespace"]
    if severity is None:
        assert found == []
    else:
        assert found == [
            ("error", "Namespace krm-fn-verify has pod-security.kubernetes.io/enforce"),
            ("warning", "Namespace krm-fn-verify has pod-security.kubernetes.io/warn")]


# A malformed or hostile checkpoint or kubelet config is a finding, never an internal error.
DEEP_JSON = "[" * 100000 + "]" * 100000
DEEP_OBJECT = '{"policyName": "Static", "entries": ' + '{"a": ' * 50000 + "1" + "}" * 50001


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_deeply_nested_files_are_unreadable_findings(tmp_path):
    root = node_tree(tmp_path)
    _write(root, "var/lib/kubelet/cpu_manager_state", DEEP_JSON)
    _write(root, "var/lib/kubelet/memory_manager_state", DEEP_OBJECT)
    _write(root, "var/lib/kubelet/config.yaml", "a: " + "[" * 100000)
    code, rows, doc = audit(root, *PLAN)
    assert code == 1
    assert doc["unreadable"] == {
        "/var/lib/kubelet/config.yaml": "not a kubelet config: nested too deeply to read",
        "/var/lib/kubelet/cpu_manager_state": "not a checkpoint: nested too deeply to read",
        "/var/lib/kubelet/memory_manager_state": "not a checkpoint: nested too deeply to read"}
    assert rows["cpu-manager-policy"]["found"] == "unreadable"
    assert rows["reserved-cpus"]["found"] == "unreadable"


@pytest.mark.parametrize("value", [None, 1, "x", [], [1, "a"], {"a": 1}, True, -1.5])
def test_checkpoint_values_of_every_wrong_type_are_findings(tmp_path, value):
    # each place the audit reads, given each JSON type it does not expect
    cpu = {"policyName": "static", "defaultCpuSet": "0-1,4-17,20-31",
           "entries": {POD_A: {"vllm": "2-3,18-19"}}}
    mem = {"policyName": "Static", "entries": {POD_A: {"vllm": [{"numaAffinity": [0]}]}}}
    places = [(cpu, ("policyName",)), (cpu, ("defaultCpuSet",)), (cpu, ("entries",)),
              (cpu, ("entries", POD_A)), (cpu, ("entries", POD_A, "vllm")),
              (mem, ("policyName",)), (mem, ("entries",)), (mem, ("entries", POD_A)),
              (mem, ("entries", POD_A, "vllm")), (mem, ("entries", POD_A, "vllm", 0)),
              (mem, ("entries", POD_A, "vllm", 0, "numaAffinity"))]
    for n, (doc, path) in enumerate(places):
        bent = json.loads(json.dumps(doc))
        at = bent
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value
        root = node_tree(tmp_path / str(n))
        name = "cpu_manager_state" if doc is cpu else "memory_manager_state"
        _write(root, f"var/lib/kubelet/{name}", json.dumps(bent))
        code, rows, _ = audit(root, *PLAN)
        assert code in (0, 1), (path, value)
        assert "cpu-manager-policy" in rows


def test_a_cpu_given_to_two_containers_is_an_overlap_finding(tmp_path):
    root = node_tree(tmp_path, {POD_A: {"vllm": "2-3,18-19"}, POD_B: {"tgi": "3-4,19-20"}})
    code, rows, _ = audit(root, *PLAN)
    assert code == 1
    assert list(rows)[3] == "exclusive-overlap"
    assert bad(rows)["exclusive-overlap"] == ("overlapping", (
        f"the checkpoint gives one CPU to more than one container: CPU 3: pod {POD_A} "
        f"container vllm and pod {POD_B} container tgi; CPU 19: pod {POD_A} container vllm and "
        f"pod {POD_B} container tgi. The kubelet never assigns a CPU twice: the file is "
        f"corrupt or was edited; drain the node, remove the state file and restart the "
        f"kubelet"))
    # each CPU is counted once, for the first container that holds it
    assert node_checks.exclusive(json.loads(
        (root / "var/lib/kubelet/cpu_manager_state").read_text())) == [
        (POD_A, "vllm", {2, 3, 18, 19}), (POD_B, "tgi", {4, 20})]


def test_the_audit_and_verify_pods_tolerate_the_pools_taints():
    # a pool whose kubelet registers with a taint: the pods must land there to check it
    from krm_fn.pipeline import transform
    cfg = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
           "metadata": {"name": "t"}, "spec": {
               "nodePools": [{"name": "inference", "kubelet": {"extra": {"registerWithTaints": [
                   {"key": "dedicated", "value": "inference", "effect": "NoSchedule"},
                   {"key": "gpu-free", "effect": "NoExecute"}]}}}],
               "output": {"verifyImage": "registry.example/krm-fn:1", "verifyJob": True,
                          "nodeAuditJob": True, "nodeAuditDaemonSet": True}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "s"},
           "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{
               "name": "c", "image": "example.com/m:1", "resources": {
                   "requests": {"cpu": "4", "memory": "8Gi"},
                   "limits": {"cpu": "4", "memory": "8Gi"}}}]}}
    out = transform([pod], cfg)
    emitted = {o["kind"] + "/" + o["metadata"]["name"]: o for o in out.emitted}
    for name in ("Job/krm-fn-verify-inference", "Job/krm-fn-node-audit-inference",
                 "DaemonSet/krm-fn-node-audit-inference"):
        assert emitted[name]["spec"]["template"]["spec"]["tolerations"] == [
            {"key": "dedicated", "operator": "Equal", "value": "inference",
             "effect": "NoSchedule"},
            {"key": "gpu-free", "operator": "Exists", "effect": "NoExecute"}], name
