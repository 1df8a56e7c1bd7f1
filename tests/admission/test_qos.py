"""QoS class after admission (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS)."""
from __future__ import annotations


from krm_fn.admission.model import INIT, SIDECAR, Container
from krm_fn.admission.qos import gate, not_guaranteed, pod_qos
from tests.admission.kit import GI, cores, ctr, node, pod


def test_guaranteed_when_every_container_init_and_sidecar_included_has_requests_equal_limits():
    p = pod(ctr("prep", 1, 1, role=INIT), ctr("proxy", "500m", 1, role=SIDECAR),
            ctr("server", 4, 8))
    assert pod_qos(p) == "Guaranteed"


def test_one_init_container_with_a_lower_cpu_request_makes_the_pod_burstable():
    p = pod(ctr("prep", 1, 1, role=INIT, limit_cpu=2), ctr("server", 4, 8))
    assert pod_qos(p) == "Burstable"
    assert not_guaranteed(p) == ["prep"]


def test_a_container_without_memory_makes_the_pod_burstable():
    bare = Container("server", requests={"cpu": cores(4)}, limits={"cpu": cores(4)})
    assert pod_qos(pod(bare)) == "Burstable"


def test_nothing_set_is_besteffort():
    assert pod_qos(pod(Container("a"), Container("b"))) == "BestEffort"


def test_only_extended_resources_is_besteffort_and_makes_a_guaranteed_pod_burstable():
    gpu = Container("gpu", requests={"nvidia.com/gpu": 1}, limits={"nvidia.com/gpu": 1})
    assert pod_qos(pod(gpu)) == "BestEffort"
    assert pod_qos(pod(ctr("server", 4, 8), gpu)) == "Burstable"


def test_pod_level_resources_decide_the_class_when_the_gate_is_on():
    p = pod(Container("server"), Container("proxy"),
            pod_requests={"cpu": cores(4), "memory": 8 * GI},
            pod_limits={"cpu": cores(4), "memory": 8 * GI})
    assert pod_qos(p, pod_level=True) == "Guaranteed"
    assert pod_qos(p, pod_level=False) == "BestEffort"
    lower = pod(ctr("server", 4, 8), pod_requests={"cpu": cores(2), "memory": 8 * GI},
                pod_limits={"cpu": cores(4), "memory": 8 * GI})
    assert pod_qos(lower) == "Burstable"


def test_pod_level_resources_gate_is_on_by_default_and_follows_feature_gates():
    for version in ((1, 35), (1, 36), (1, 37)):
        assert gate(node(version=version), "PodLevelResources") is True
    assert gate(node(version=(1, 35), featureGates={"PodLevelResources": False}),
                "PodLevelResources") is False
    # PodLevelResourceManagers: unknown to 1.35 (off even when set), alpha in 1.36, beta in
    # 1.37, off by default in both
    assert gate(node(version=(1, 35), featureGates={"PodLevelResourceManagers": True}),
                "PodLevelResourceManagers") is False
    assert gate(node(version=(1, 36)), "PodLevelResourceManagers") is False
    assert gate(node(version=(1, 37)), "PodLevelResourceManagers") is False
    assert gate(node(version=(1, 37), featureGates={"PodLevelResourceManagers": True}),
                "PodLevelResourceManagers") is True
