"""Topology Manager admission (pkg/kubelet/cm/topologymanager)."""
from __future__ import annotations

from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn.admission import topology
from krm_fn.admission.kubelet import judge
from krm_fn.admission.model import DEPENDS, ERROR
from krm_fn.admission.topology import NodeState, admit, merge
from tests.admission.kit import ctr, node, pod, reserve_cores

F = frozenset
CORE0 = {0, 32}                  # one reserved core on NUMA 0 of a 2x16x2 node: 30 + 32 free


def _tight(policy, **kw):
    """2 NUMA nodes of 32 CPUs, 2 cores reserved on each: 28 free per NUMA node."""
    return node(topologyManagerPolicy=policy, reserved=reserve_cores(node(), 2), **kw)


def test_restricted_admits_a_pod_spanning_two_numa_nodes_when_the_preferred_hint_spans_two():
    qos, exclusive, numa, findings = judge(pod(ctr("server", 40, 8)),
                                           node(topologyManagerPolicy="restricted",
                                                reserved=CORE0))
    assert (qos, exclusive, numa) == ("Guaranteed", (("server", 40),), (0, 1))
    assert [(f.severity, f.rule) for f in findings] == [(DEPENDS, "topology")]
    assert "'server' 40 CPUs within 2 NUMA nodes" in findings[0].message


def test_single_numa_node_refuses_the_same_pod_with_topology_affinity_error():
    _, exclusive, numa, findings = judge(pod(ctr("server", 40, 8)),
                                         node(topologyManagerPolicy="single-numa-node",
                                              reserved=CORE0))
    assert (exclusive, numa) == ((), ())
    assert [(f.severity, f.rule) for f in findings] == [(ERROR, "topology")]
    assert findings[0].message == (
        "the Topology Manager (single-numa-node, scope container) refuses the pod with "
        "TopologyAffinityError on an empty node of pool 'pinned': no single NUMA node can hold "
        "what container 'server' needs (40 exclusive CPUs; CPUs free on an empty node: "
        "NUMA 0: 30, NUMA 1: 32); "
        "request fewer CPUs per container, or topologyManagerPolicy restricted or best-effort "
        "(kubernetes/kubernetes pkg/kubelet/cm/topologymanager policy_single_numa_node.go; "
        "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/)")


def test_restricted_refuses_when_reserved_cpus_leave_no_numa_node_big_enough():
    # 30 CPUs fit one NUMA node of the machine (32), so only one-NUMA hints are preferred,
    # but 28 are free on each: the only hint spans two and is not preferred.
    _, exclusive, _, findings = judge(pod(ctr("server", 30, 8)), _tight("restricted"))
    assert exclusive == ()
    assert ("no preferred NUMA set can hold what container 'server' needs (30 exclusive CPUs; "
            "CPUs free on an empty node: NUMA 0: 28, NUMA 1: 28); reservedSystemCPUs leaves at "
            "most 28 CPUs free on a NUMA node of 32: request at most 28, reserve fewer CPUs on "
            "one NUMA node, or topologyManagerPolicy best-effort" in findings[0].message)


def test_best_effort_always_admits_even_across_numa_nodes():
    _, exclusive, numa, findings = judge(pod(ctr("server", 30, 8)), _tight("best-effort"))
    assert (exclusive, numa, findings) == ((("server", 30),), (0, 1), ())


def _three():
    return pod(ctr("a", 20, 1), ctr("b", 20, 1), ctr("c", 12, 1))


def test_scope_container_refuses_when_a_later_container_no_longer_fits_one_numa_node():
    _, exclusive, _, findings = judge(_three(), _tight("single-numa-node"))
    assert exclusive == ()
    assert ("what container 'c' needs (12 exclusive CPUs; CPUs free on an empty node: "
            "NUMA 0: 28, NUMA 1: 28)" in findings[0].message)
    assert "TopologyAffinityError" in judge(_three(), _tight("restricted"))[3][0].message
    assert judge(_three(), _tight("best-effort"))[1:3] == (
        (("a", 20), ("b", 20), ("c", 12)), (0, 1))


def test_scope_pod_restricted_admits_the_pod_total_across_two_numa_nodes():
    kw = dict(topologyManagerScope="pod")
    _, exclusive, numa, findings = judge(pod(ctr("a", 20, 1), ctr("b", 20, 1)),
                                         _tight("restricted", **kw))
    assert (exclusive, numa) == ((("a", 20), ("b", 20)), (0, 1))
    assert "the pod 40 CPUs within 2 NUMA nodes" in findings[0].message
    refused = judge(pod(ctr("a", 20, 1), ctr("b", 20, 1)), _tight("single-numa-node", **kw))
    assert refused[1] == ()
    assert "what the pod needs" in refused[3][0].message


def test_scope_pod_keeps_all_containers_on_one_numa_node_when_the_total_fits():
    p = pod(ctr("a", 10, 1), ctr("b", 10, 1))
    assert judge(p, _tight("single-numa-node", topologyManagerScope="pod"))[1:3] == (
        (("a", 10), ("b", 10)), (0,))


def test_merge_takes_the_narrowest_preferred_hint_all_providers_agree_on():
    cpu = {"cpu": [(F({0}), True), (F({1}), True), (F({0, 1}), False)]}
    mem = {"memory": [(F({1}), True), (F({0, 1}), False)]}
    assert merge([cpu, mem], [0, 1], "restricted") == (F({1}), True, True)
    assert merge([cpu, None], [0, 1], "restricted") == (F({0}), True, True)


def test_merge_an_empty_hint_list_cannot_be_satisfied_except_under_best_effort():
    assert merge([{"cpu": []}], [0, 1], "restricted") == (F({0, 1}), False, False)
    assert merge([{"cpu": []}], [0, 1], "best-effort") == (F({0, 1}), False, True)
    assert merge([None, {}], [0, 1], "single-numa-node") == (None, True, True)


def test_merge_non_preferred_hints_go_back_to_the_widest_narrowest_count():
    cpu = {"cpu": [(F({0, 1}), False), (F({0, 1, 2}), False)]}
    assert merge([cpu], [0, 1, 2, 3], "best-effort") == (F({0, 1}), False, True)


def _merge_every_permutation(providers, numas, pol):
    """policy.go as written: HintMerger.compare over every permutation, in product order
    (what topology.merge did before it folded the distinct merged hints); mergePermutation
    marks a permutation preferred only when every hint is and every mask given is the
    first one given."""
    default = F(numas)
    lists = topology.filter_hints(providers)
    if pol == topology.SINGLE:
        lists = [[h for h in hs if h[1] and (h[0] is None or len(h[0]) == 1)] for hs in lists]
    narrow = [min(len(h[0]) for h in hs if h[0] is not None)
              for hs in lists if any(h[0] is not None for h in hs)]
    best_np, best = max(narrow, default=0), None
    for perm in product(*lists):
        mask, pref, first = default, True, None
        for m, p in perm:
            if m is not None:
                first = m if first is None else first
                pref = pref and m == first
            mask, pref = mask & (default if m is None else m), pref and p
        best = topology._compare(best, (mask, pref), best_np)
    best = best or (default, False)
    if pol == topology.SINGLE and best[0] == default:
        best = (None, best[1])
    return best[0], best[1], pol == topology.BEST_EFFORT or best[1]


_MASKS = st.frozensets(st.integers(0, 3), max_size=4)
_HINTS = st.one_of(st.none(), st.lists(st.tuples(st.one_of(st.none(), _MASKS), st.booleans()),
                                       max_size=6))
_PROVIDER = st.one_of(st.none(), st.dictionaries(st.sampled_from(["cpu", "memory",
                                                                  "hugepages-1Gi"]),
                                                 _HINTS, max_size=3))


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.lists(_PROVIDER, max_size=3), st.integers(1, 4),
       st.sampled_from(["best-effort", "restricted", "single-numa-node"]))
def test_merge_of_the_distinct_merged_hints_is_the_merge_of_every_permutation(providers,
                                                                               count, pol):
    numas = list(range(count))
    providers = [p if p is None else {r: h if h is None else
                                      [(m if m is None else F(n for n in m if n < count), pr)
                                       for m, pr in h] for r, h in p.items()}
                 for p in providers]
    assert merge(providers, numas, pol) == _merge_every_permutation(providers, numas, pol)


def test_more_numa_nodes_than_max_allowable_stops_the_kubelet():
    many = dict(sockets=2, numa_per_socket=8, cores=16, threads=1, reserved={0},
                topologyManagerPolicy="restricted")
    findings = judge(pod(ctr("server", 1, 1)), node(**many))[3]
    assert [f.rule for f in findings if f.severity == ERROR] == ["topology"]
    assert "unsupported on machines with more than 8 NUMA Nodes" in findings[0].message
    ok = node(topologyManagerPolicyOptions={"max-allowable-numa-nodes": "16"}, **many)
    assert [f for f in judge(pod(ctr("server", 1, 1)), ok)[3] if f.severity == ERROR] == []



def test_scope_container_second_container_no_longer_fits_one_numa_node_on_a_busy_node():
    # Empty node: 'a' and 'b' both land on NUMA 0. After two replicas, 'a' of the third still
    # gets 4 CPUs of NUMA 1, then 'b' (20) finds no NUMA node with 20 free: refused.
    n = _tight("single-numa-node")
    p = pod(ctr("a", 4, 1), ctr("b", 20, 1))
    st = NodeState(n)
    assert admit(p, n, st, "Guaranteed").numa == (0,)
    assert admit(p, n, st, "Guaranteed").numa == (0, 1)
    third = admit(p, n, st, "Guaranteed")
    assert (third.admitted, third.reason, third.container, third.exclusive) == (
        False, "TopologyAffinityError", "b", (("a", 4),))
    assert judge(p, n)[3][0].severity == DEPENDS
