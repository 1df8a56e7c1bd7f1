"""Memory Manager Static (pkg/kubelet/cm/memorymanager/policy_static.go)."""
from __future__ import annotations

from krm_fn.admission.capacity import fit_one
from krm_fn.admission.kubelet import judge
from krm_fn.admission.memorymanager import MM_DOCS, MemState, pod_requested, reserved_memory
from krm_fn.admission.model import ERROR, INIT, WARNING
from tests.admission.kit import GI, MI, ctr, node, pod

NUMA_MEM = {0: {"memory": 96 * GI, "hugepages-1Gi": 8 * GI},
            1: {"memory": 96 * GI, "hugepages-1Gi": 8 * GI}}
RESERVED = [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]


def _node(policy="single-numa-node", **kw):
    return node(topologyManagerPolicy=policy, memoryManagerPolicy="Static",
                numa_memory=NUMA_MEM, reservedMemory=RESERVED, reserved={0, 32}, **kw)


def test_reserved_memory_and_preallocated_hugepages_are_subtracted_per_numa_node():
    n = _node()
    assert reserved_memory(n) == {0: {"memory": 1124 * MI}}
    assert MemState(n).alloc == {0: {"memory": 88 * GI - 1124 * MI, "hugepages-1Gi": 8 * GI},
                                 1: {"memory": 88 * GI, "hugepages-1Gi": 8 * GI}}


def test_memory_goes_to_the_numa_node_that_holds_it_and_the_cpus_follow():
    # 87Gi does not fit NUMA 0 after its 1124Mi reservation (and 8Gi of hugepages): both
    # land on NUMA 1.
    assert judge(pod(ctr("server", 4, 87)), _node())[1:3] == ((("server", 4),), (1,))


def test_memory_larger_than_one_numa_node_is_refused_by_restricted_admitted_by_best_effort():
    # the memory hint's preferred mask is both NUMA nodes, the CPU hint's one NUMA node: a
    # merged hint is preferred only when every provider's mask is the same
    # (topologymanager/policy.go mergePermutation), so none is, and restricted refuses it as
    # single-numa-node does (the kubelet harness agrees: tests/test_kubelet_differential.py)
    for policy in ("single-numa-node", "restricted"):
        _, exclusive, _, findings = judge(pod(ctr("server", 4, 100)), _node(policy))
        assert exclusive == ()
        assert [(f.severity, f.rule) for f in findings] == [(ERROR, "topology")]
        assert "TopologyAffinityError" in findings[0].message
    assert judge(pod(ctr("server", 4, 100)), _node("best-effort"))[1:3] == (
        (("server", 4),), (0, 1))


def test_per_numa_memory_limits_replicas_under_static():
    # 2 x 30Gi per NUMA node (NUMA 0 has 88Gi - 1124Mi, NUMA 1 88Gi after the huge pages);
    # the 5th has no memory hint (treated as "don't care" by the Topology Manager), so the
    # Memory Manager's Allocate fails it, though allocatable memory (176Gi) has room for 5.
    assert fit_one(pod(ctr("server", 4, 30)), _node()) == (
        4, "UnexpectedAdmissionError: Allocate failed due to [memorymanager] failed to find "
           "NUMA nodes to extend the current topology hint, which is unexpected")


def test_allocatable_memory_stops_replicas_before_the_memory_manager():
    # 6 x 28Gi fit allocatable memory (192Gi - 16Gi of huge pages); the scheduler places no
    # 7th (OutOfmemory), so the Memory Manager never sees it.
    assert fit_one(pod(ctr("server", 4, 28)), _node()) == (
        6, "allocatable memory 176Gi: 28Gi each (OutOfmemory)")


def test_hugepages_are_counted_per_numa_node():
    p = pod(ctr("server", 2, 1, **{"hugepages-1Gi": 6 * GI}))
    assert fit_one(p, _node())[0] == 2


def test_a_numa_node_used_alone_cannot_join_a_two_numa_group_later():
    st = MemState(_node())
    assert st.allocate({"memory": 10 * GI}, frozenset({0}), True, {}) == (frozenset({0}), "")
    assert st.hints({"memory": 150 * GI}, {}) == {}


def test_pod_peak_memory_counts_init_containers_against_app_containers():
    p = pod(ctr("prep", 1, 20, role=INIT), ctr("server", 4, 8), ctr("log", 1, 2))
    assert pod_requested(p) == {"memory": 20 * GI}


def test_memory_is_not_modelled_without_per_numa_memory():
    n = node(memoryManagerPolicy="Static", topologyManagerPolicy="restricted", reserved={0, 32})
    findings = judge(pod(ctr("server", 4, 8)), n)[3]
    assert [(f.severity, f.rule) for f in findings][0] == (WARNING, "memorymanager")
    assert findings[0].message == (
        "memoryManagerPolicy Static on pool 'pinned': memory admission per NUMA node is not "
        "modelled, because the pool's memory per NUMA node is not declared: krm-fn counts "
        "it as ample, so the Memory Manager's hints (the fewest NUMA nodes that hold a "
        "container's memory) still decide admission, but a NUMA node running out of memory "
        "is not checked; declare it in the pool's topology: memory (one node's capacity, "
        "split evenly over its NUMA nodes), numaMemory (per NUMA node id, e.g. "
        "{\"0\": 96Gi, \"1\": 64Gi}), or fromNode / fromNodeResourceTopology "
        f"({MM_DOCS})")


def test_a_burstable_pod_gets_no_numa_memory():
    p = pod(ctr("server", 4, 200, limit_mem_gi=300, designated=False))
    assert judge(p, _node())[1:3] == ((), ())


def test_memory_that_only_fits_before_hugepages_are_taken_out_is_refused_naming_memory():
    # 90Gi fits the 96Gi of a NUMA node, not the 88Gi left once its 8Gi of 1Gi pages are
    # pre-allocated (getDefaultMachineState: "remove memory allocated by hugepages").
    _, exclusive, _, findings = judge(pod(ctr("server", 4, 90)), _node())
    assert exclusive == ()
    assert [(f.severity, f.rule) for f in findings] == [(ERROR, "topology")]
    assert findings[0].message == (
        "the Topology Manager (single-numa-node, scope container) refuses the pod with "
        "TopologyAffinityError on an empty node of pool 'pinned': no single NUMA node can "
        "hold what container 'server' needs (4 exclusive CPUs; CPUs free on an empty node: "
        "NUMA 0: 30, NUMA 1: 32; requested memory 90Gi, allocatable per NUMA node under "
        "memoryManagerPolicy Static (reservedMemory and pre-allocated hugepages taken out): "
        "NUMA 0: memory 86.9Gi; NUMA 1: memory 88Gi); request less memory per NUMA node, "
        "describe the nodes' memory per NUMA node (topology.numaMemory) if it differs, or "
        "fewer CPUs per container, or topologyManagerPolicy restricted or best-effort "
        "(kubernetes/kubernetes pkg/kubelet/cm/topologymanager policy_single_numa_node.go; "
        "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/)")
