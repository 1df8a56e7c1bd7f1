"""What the kubelet simulation keeps per node and per pod (model.node_memo): made once, for
that very NodeModel or pod object, never shared with another."""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.capacity import pod_plan
from krm_fn.admission.cpumanager import CpuState
from krm_fn.admission.model import node_memo
from krm_fn.admission.qos import gate
from tests.admission.kit import cores, ctr, node, pod


def test_node_memo_is_the_same_dict_for_the_same_node_and_another_for_an_equal_one():
    a, b = node(), node()
    assert a == b
    assert node_memo(a) is node_memo(a)
    assert node_memo(a) is not node_memo(b)


def test_node_memo_holds_at_most_its_limit_of_nodes():
    nodes = [node() for _ in range(model._PER_NODE_MAX + 5)]
    for n in nodes:
        node_memo(n)["x"] = 1
    assert len(model._PER_NODE) <= model._PER_NODE_MAX
    assert "x" not in node_memo(nodes[0])          # dropped, made again empty
    assert node_memo(nodes[-1]) == {"x": 1}


def test_a_gate_is_read_once_per_node_from_its_own_kubelet_config():
    on = node(version=(1, 35))
    off = node(version=(1, 35), featureGates={"PodLevelResources": False})
    assert (gate(on, "PodLevelResources"), gate(off, "PodLevelResources")) == (True, False)
    assert node_memo(on)[("gate", "PodLevelResources")] is True


def test_cpu_state_copies_share_the_node_tables_but_not_the_free_cpus():
    n = node(reserved={0, 32})
    a = CpuState(n)
    b = a.copy()
    b.allocate(4, None, set())
    assert len(a.free) == 62 and len(b.free) == 58
    assert a.numa_cpus is b.numa_cpus is CpuState(n).numa_cpus
    assert CpuState(node(reserved={0, 32})).numa_cpus is not a.numa_cpus


def test_a_pod_plan_is_made_once_per_pod_object_and_node():
    n, p, q = node(), pod(ctr("server", 4, 1)), pod(ctr("server", 4, 1))
    assert pod_plan(p, n)[2] is pod_plan(p, n)[2]
    assert pod_plan(q, n)[2] is not pod_plan(p, n)[2]
    req, qos, plan = pod_plan(p, n)
    assert (req["cpu"], qos, plan.ncpu, plan.pol, plan.scp) == (cores(4), "Guaranteed",
                                                                {"server": 4}, "none",
                                                                "container")
