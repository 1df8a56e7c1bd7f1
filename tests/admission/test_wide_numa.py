"""Nodes with more NUMA nodes than the kubelet's default bound (krm_fn/admission/wide.py):
the preferred-first merge gives the outcomes of the full enumeration on every recorded
case, and a 20-NUMA pool renders in bounded time with the kubelet's own cost named."""
from __future__ import annotations

import json

from krm_fn.admission import capacity, wide
from krm_fn.admission.kubelet import judge
from krm_fn.admission.model import DEPENDS, ERROR, WARNING
from tests.admission import fit_golden
from tests.admission.kit import GI, ctr, node, pod
from tests.admission.test_fit_golden import _first_difference

# The recorded cases whose outcomes differ on the wide path, all for the one reason the
# wide path is coarser on purpose: best-effort with no preferred merged hint and both the
# CPU and the Memory Manager giving hints, which it does not model (wide.BEYOND).
BEYOND_CASES = {"plain": 8, "split": 1}


def _lines_on_the_wide_path(monkeypatch, split: bool) -> list:
    monkeypatch.setattr(wide, "FULL", 0)        # every node is "wide"
    return fit_golden.lines(split=split)


def _refusals_unmasked(line: str) -> str:
    """`line` with the merged mask of every TopologyAffinityError step set to None: the
    wide path does not compute the losing non-preferred hint of a refusal (nothing reads
    it: the refusal's message names the CPUs it needed)."""
    case = json.loads(line)
    for step in case["admit"] if isinstance(case["admit"], list) else []:
        if isinstance(step, dict) and step.get("reason") == "TopologyAffinityError":
            step["hints"][-1][2] = None
    return json.dumps(case, separators=(",", ":"))


def _compare(got: list, fixture) -> int:
    want = fixture.read_text().splitlines()
    assert len(got) == len(want)
    beyond = 0
    for line_want, line_got in zip(want, got):
        line_want, line_got = _refusals_unmasked(line_want), _refusals_unmasked(line_got)
        if wide.BEYOND in line_got:
            beyond += 1
            continue
        if line_got != line_want:
            w, g = json.loads(line_want), json.loads(line_got)
            raise AssertionError(f"pool {w['pool']}: {_first_difference(w, g)}")
    return beyond


def test_the_wide_merge_gives_every_recorded_outcome(monkeypatch):
    got = _lines_on_the_wide_path(monkeypatch, split=False)
    assert _compare(got, fit_golden.FIXTURE) == BEYOND_CASES["plain"]


def test_the_wide_merge_gives_every_recorded_outcome_with_cores_across_numa_nodes(
        monkeypatch):
    got = _lines_on_the_wide_path(monkeypatch, split=True)
    assert _compare(got, fit_golden.SPLIT_FIXTURE) == BEYOND_CASES["split"]


def _wide_node(numa_per_socket=10, policy="restricted", static=True, **kw):
    """2 sockets x `numa_per_socket` NUMA nodes of 4 cores x 2 threads (8 CPUs each), 64Gi
    per NUMA node, max-allowable-numa-nodes raised to the count."""
    numas = 2 * numa_per_socket
    mem = {n: {"memory": 64 * GI} for n in range(numas)} if static else None
    extra = {"memoryManagerPolicy": "Static"} if static else {}
    return node(sockets=2, numa_per_socket=numa_per_socket, cores=4 * numa_per_socket,
                threads=2, numa_memory=mem, topologyManagerPolicy=policy,
                topologyManagerPolicyOptions={"max-allowable-numa-nodes": str(numas)},
                **extra, **kw)


def test_twenty_numa_nodes_fill_one_pod_per_numa_node_under_restricted():
    n = _wide_node()
    count, why = capacity.fit_one(pod(ctr("server", 6, 8)), n)
    assert (count, why) == (20, "TopologyAffinityError: Resources cannot be allocated with "
                                "Topology locality")


def test_twenty_numa_nodes_under_best_effort_without_static_memory_fill_every_cpu():
    n = _wide_node(policy="best-effort", static=False)
    count, why = capacity.fit_one(pod(ctr("server", 6, 8)), n)
    assert count == 26       # 160 CPUs / 6; the last ones across NUMA nodes
    assert why.startswith("allocatable cpu 160")


def test_the_kubelets_merge_cost_on_twenty_numa_nodes_is_an_error():
    _, _, _, findings = judge(pod(ctr("server", 6, 8)), _wide_node())
    cost = [f for f in findings if "pairs" in f.message]
    assert [(f.severity, f.rule) for f in cost] == [(ERROR, "topology")]
    assert ("up to (2^20 - 1)^2 = 1.1e+12 pairs (the kubelet would take minutes to hours to "
            "admit one pod)") in cost[0].message


def test_ten_numa_nodes_warn_of_the_merge_cost():
    _, _, _, findings = judge(pod(ctr("server", 6, 8)), _wide_node(numa_per_socket=5))
    cost = [f for f in findings if "pairs" in f.message]
    assert [(f.severity, f.rule) for f in cost] == [(WARNING, "topology")]
    assert "up to (2^10 - 1)^2 = 1.05e+06 pairs;" in cost[0].message


def test_best_effort_with_both_managers_and_no_preferred_set_is_named_not_modelled():
    # 4 CPUs fit one NUMA node (CPU hints prefer 1 node), 100Gi needs 2 (memory hints
    # prefer 2): no mask is preferred by both, and best-effort picks among the pairs
    _, exclusive, _, findings = judge(pod(ctr("server", 4, 100)),
                                      _wide_node(policy="best-effort"))
    assert exclusive == ()
    beyond = [f for f in findings if f.severity == DEPENDS]
    assert len(beyond) == 1
    assert beyond[0].message.startswith(
        "container 'server' on an empty node of pool 'pinned': with topologyManagerPolicy best-effort "
        "on 20 NUMA nodes and no preferred NUMA set, the Topology Manager picks among about "
        "2^20 x 2^20 merged CPU and memory hints; krm-fn does not model that choice, so it "
        "does not count the pod as admitted; fewer NUMA nodes per node make the outcome "
        "certain")


def test_a_request_for_half_of_24_numa_nodes_is_bounded_and_named():
    # from a hostile round: 48 CPUs on NUMA nodes of 4 CPUs need 12 of 24 NUMA nodes, and
    # the preferred masks numbered C(24, 12) = 2.7 million (> 30 s, 2.3 GB)
    n = node(sockets=2, numa_per_socket=12, cores=24, threads=2,
             topologyManagerPolicy="restricted",
             topologyManagerPolicyOptions={"max-allowable-numa-nodes": "24"})
    big = pod(ctr("s", 48, 8))
    count, why = capacity.fit_one(big, n)
    assert (count, why) == (0, "BeyondModel: the 2704156 combinations of 12 of 24 NUMA "
                               "nodes that could hold the request are more than krm-fn "
                               "looks at (16384)")
    _, exclusive, _, findings = judge(big, n)
    assert exclusive == () and [f.severity for f in findings
                                if f.rule == "topology"] == [DEPENDS]


def test_a_daemonset_pod_beyond_the_model_stops_the_count():
    # from a hostile round: the DaemonSet pod's admission was refused as BeyondModel and
    # then left out, so the workload got the CPUs and memory the kubelet gives the daemon
    n = _wide_node(policy="best-effort", numa_per_socket=5)
    daemon = pod(ctr("agent", 4, 100), name="agent")
    alone = capacity.fit_one(pod(ctr("server", 6, 8)), n)
    assert alone[0] == 10
    count, why = capacity.fit_one(pod(ctr("server", 6, 8)), n._replace(daemons=(daemon,)))
    assert count == 0 and why.startswith("BeyondModel: with topologyManagerPolicy "
                                         "best-effort on 10 NUMA nodes")
