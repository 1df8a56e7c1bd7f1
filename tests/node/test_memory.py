"""reservedMemory for memoryManagerPolicy Static (kubelet.md §5): computed, spread across
NUMA nodes, and explicit lists checked with the arithmetic."""

import pytest

from krm_fn.node import memory
from krm_fn.results import ERROR, WARNING
from tests.node.test_plan import build, pool

MM = "(kubernetes/kubernetes pkg/kubelet/cm/memorymanager/memory_manager.go)"

MI = 2 ** 20
P = "spec.nodePools[0].kubelet."
WORKED = dict(memoryManagerPolicy="Static", kubeReserved={"memory": "1Gi"},
              systemReserved={"memory": "512Mi"})   # + evictionHard default 100Mi = 1636Mi


def static_pool(**kw):
    return pool(**{**WORKED, **kw})


def test_worked_example_spread_across_two_numa_nodes():
    p = static_pool()
    p.reserved.spreadMemoryAcrossNuma = True
    plan, results = build(p)
    assert results == []
    assert plan.kubelet["reservedMemory"] == [
        {"numaNode": 0, "limits": {"memory": "818Mi"}},
        {"numaNode": 1, "limits": {"memory": "818Mi"}}]


def test_spread_remainder_goes_to_the_lowest_numa_nodes_in_whole_mi():
    totals = {"memory": 1637 * MI}
    assert memory.split(totals, [0, 1], True) == [
        {"numaNode": 0, "limits": {"memory": "819Mi"}},
        {"numaNode": 1, "limits": {"memory": "818Mi"}}]
    assert memory.split(totals, [0, 1, 2, 3], False) == [
        {"numaNode": 0, "limits": {"memory": "1637Mi"}}]
    # hugepages split in whole pages; a total that is not whole Mi splits in bytes
    assert memory.split({"memory": 3, "hugepages-1Gi": 3 * 2 ** 30},
                        [0, 1], True) == [
        {"numaNode": 0, "limits": {"memory": "2", "hugepages-1Gi": "2Gi"}},
        {"numaNode": 1, "limits": {"memory": "1", "hugepages-1Gi": "1Gi"}}]


def test_explicit_split_that_sums_is_emitted_as_given():
    given = [{"numaNode": 0, "limits": {"memory": "836Mi"}},
             {"numaNode": 1, "limits": {"memory": "800Mi"}}]
    plan, results = build(static_pool(reservedMemory=given))
    assert results == []
    assert plan.kubelet["reservedMemory"] == given


def test_explicit_flag_form_docs_example_5220Mi():
    # memory-manager.md: 4Gi + 1Gi + 100Mi = 5220Mi as --reserved-memory 0:memory=3Gi;1:memory=2148Mi
    plan, results = build(static_pool(kubeReserved={"memory": "4Gi"},
                                      systemReserved={"memory": "1Gi"},
                                      reservedMemory="0:memory=3Gi;1:memory=2148Mi"))
    assert results == []
    assert plan.kubelet["reservedMemory"] == [
        {"numaNode": 0, "limits": {"memory": "3Gi"}},
        {"numaNode": 1, "limits": {"memory": "2148Mi"}}]


def test_explicit_list_that_forgot_eviction_is_an_error_with_the_arithmetic():
    plan, results = build(static_pool(reservedMemory=[
        {"numaNode": 0, "limits": {"memory": "1536Mi"}}]))
    # the plan holds what was asked (nothing is emitted with an error)
    assert plan.kubelet["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1536Mi"}}]
    assert [(r.severity, r.path, r.message) for r in results] == [
        (ERROR, P + "reservedMemory",
         "reservedMemory memory sums to 1536Mi (numaNode 0: 1536Mi), but kubeReserved.memory "
         "1Gi + systemReserved.memory 512Mi + evictionHard[memory.available] 100Mi = 1636Mi "
         "(100Mi short): the kubelet refuses to start: \"the total amount \"1536Mi\" of type "
         "\"memory\" is not equal to the value \"1636Mi\" determined by Node Allocatable "
         f"feature\" {MM}")]


def test_explicit_list_too_much_unknown_and_repeated_numa_nodes():
    _, results = build(static_pool(reservedMemory=[
        {"numaNode": 0, "limits": {"memory": "1Gi"}},
        {"numaNode": 2, "limits": {"memory": "1Gi"}},
        {"numaNode": 0, "limits": {"hugepages-2Mi": "4Mi"}}]))
    assert [(r.path, r.message) for r in results] == [
        (P + "reservedMemory[1].numaNode", "NUMA node 2 does not exist on this pool's nodes "
                                           "(NUMA nodes 0, 1); the kubelet refuses to start: "
                                           "\"the reserved memory configuration references a "
                                           "NUMA node 2 that does not exist on this machine\" "
                                           f"{MM}"),
        (P + "reservedMemory[2].numaNode", "NUMA node 0 is listed twice; give each NUMA node "
                                           "one entry"),
        (P + "reservedMemory", "reservedMemory memory sums to 2Gi (numaNode 0: 1Gi, numaNode 2: "
                               "1Gi), but kubeReserved.memory 1Gi + systemReserved.memory 512Mi "
                               "+ evictionHard[memory.available] 100Mi = 1636Mi (412Mi too "
                               "much): the kubelet refuses to start: \"the total amount "
                               "\"2Gi\" of type \"memory\" is not equal to the value "
                               f"\"1636Mi\" determined by Node Allocatable feature\" {MM}"),
        (P + "reservedMemory", "reservedMemory hugepages-2Mi sums to 4Mi (numaNode 0: 4Mi), but "
                               "0 (no kubeReserved or systemReserved hugepages-2Mi) (4Mi too "
                               "much): the kubelet refuses to start: \"the total amount "
                               "\"4Mi\" of type \"hugepages-2Mi\" is not equal to the value "
                               f"\"0\" determined by Node Allocatable feature\" {MM}"),
    ]


@pytest.mark.parametrize("given, path, message", [
    ("0:memory", P + "reservedMemory[0]",
     "expected type=quantity such as memory=1Gi, found 'memory'"),
    ("x:memory=1Gi", P + "reservedMemory[0]",
     "expected NUMA:type=quantity[,...] such as 0:memory=1Gi, found 'x:memory=1Gi'"),
    ([], P + "reservedMemory", "expected a non-empty list of {numaNode, limits} entries (or "
                               "kubelet flag text such as 0:memory=1Gi)"),
    ([{"numaNode": -1, "limits": {"memory": "1Gi"}}], P + "reservedMemory[0].numaNode",
     "expected a NUMA node id (a whole number >= 0), found -1"),
    ([{"numaNode": 0, "limits": {"cpu": "1"}}], P + "reservedMemory[0].limits",
     "'cpu' is not a type the Memory Manager reserves (memory or hugepages-<size>)"),
    ([{"numaNode": 0, "limits": {"memory": "1.5.0"}}], P + "reservedMemory[0].limits.memory",
     "not a memory quantity: '1.5.0' is not a quantity (expected a number and an optional "
     "suffix such as 500m, 4, 1Gi, 1e3)"),
    ("0:memory=1100Mi,memory=5Gi", P + "reservedMemory[0].limits.memory",
     "'memory' is given twice for NUMA node 0"),
    ([{"numaNode": 0, "limits": {"hugepages-": "2Mi"}}], P + "reservedMemory[0].limits",
     "'hugepages-' is not a type the Memory Manager reserves (memory or hugepages-<size>)"),
    ([{"numaNode": 0, "limits": {"memory": "1Mi"}}] * 1025, P + "reservedMemory",
     "has 1025 entries; at most 1024 (one per NUMA node) are accepted"),
])
def test_malformed_explicit_reserved_memory(given, path, message):
    plan, results = build(static_pool(reservedMemory=given))
    # the plan holds what was asked when it is a list (nothing is emitted with an error)
    assert plan.kubelet.get("reservedMemory") == (given if isinstance(given, list) else None)
    # (the kubelet's validation of such a list is reported at memoryManagerPolicy, where
    # reservedMemory's results point: tests/node/test_kubelet_refusals.py)
    assert [(r.severity, r.path, r.message) for r in results
            if r.path != P + "memoryManagerPolicy"] == [(ERROR, path, message)]


def test_an_entry_with_another_field_is_an_error_and_the_field_unknown():
    plan, results = build(static_pool(reservedMemory=[
        {"numaNode": 0, "limits": {"memory": "1Gi"}, "extra": 1}]))
    assert [(r.severity, r.path, r.message) for r in results] == [
        (ERROR, P + "reservedMemory[0]", "each entry is a mapping with exactly numaNode and "
                                         "limits"),
        (ERROR, P + "reservedMemory[0].extra", "reservedMemory[0].extra is not a field of "
         "MemoryReservation in Kubernetes 1.35; the kubelet ignores it")]


def test_reserved_memory_without_static_policy_is_left_out_with_a_warning():
    plan, results = build(pool(reservedMemory="0:memory=1Gi"))
    assert "reservedMemory" not in plan.kubelet
    assert [(r.severity, r.path) for r in results] == [(WARNING, P + "reservedMemory")]


def test_flat_config_key_takes_the_flag_form():
    from krm_fn import pipeline
    out = pipeline.transform([], {"apiVersion": "v1", "kind": "ConfigMap", "data": {
        "memoryManagerPolicy": "Static", "reservedMemory": "0:memory=1000Mi"}})
    errors = [(r.path, r.message) for r in out.results if r.severity == ERROR]
    assert errors[0][0] == "data.reservedMemory"
    assert errors[0][1].startswith("reservedMemory memory sums to 1000Mi (numaNode 0: 1000Mi), "
                                   "but kubeReserved.memory 500Mi + systemReserved.memory 500Mi "
                                   "+ evictionHard[memory.available] 100Mi = 1100Mi (100Mi short)")
