"""The integrator's entry point (krm_fn/admission/kubelet.py)."""
from __future__ import annotations


from krm_fn.admission.kubelet import judge
from krm_fn.admission.model import DEPENDS, ERROR, INIT, SIDECAR, WARNING
from tests.admission.kit import GI, cores, ctr, node, pod, reserve_cores

RULES = {"qos", "cpumanager", "topology", "memorymanager", "capacity"}


def test_a_burstable_pod_with_designated_containers_is_a_qos_error_naming_the_culprits():
    p = pod(ctr("istio-proxy", "100m", 1, role=SIDECAR, limit_cpu=2,
                designated=False, source="istio"), ctr("server", 4, 8))
    qos, exclusive, numa, findings = judge(p, node(reserved={0, 32}))
    assert (qos, exclusive, numa) == ("Burstable", (), ())
    assert [(f.severity, f.rule) for f in findings] == [(ERROR, "qos")]
    assert findings[0].message.startswith(
        "pod is Burstable after admission, so no container gets exclusive CPUs, not even "
        "'server' (the static CPU Manager pins only Guaranteed pods); not Guaranteed: 'istio-proxy'; set cpu and memory "
        "requests equal to limits in every container")
    assert "pkg/apis/core/v1/helper/qos/qos.go" in findings[0].message


def test_pod_level_resources_that_are_not_guaranteed_name_spec_resources_as_the_fix():
    p = pod(ctr("server", 4, 8), pod_requests={"cpu": cores(4), "memory": 8 * GI},
            pod_limits={"cpu": cores(8), "memory": 8 * GI})
    findings = judge(p, node(version=(1, 35)))[3]
    assert "the pod-level spec.resources decides the class" in findings[0].message


def test_pod_level_resource_managers_on_is_judged_by_the_kubelets_scope():
    # topologyManagerPolicy none (or container scope): the kubelet allocates container by
    # container, as modelled; pod scope: one block for the pod, which the model does not
    # split as the kubelet does (a warning; tests/test_kubelet_differential.py
    # test_pod_level_resource_managers_against_the_kubelet)
    res = {"cpu": cores(4), "memory": 8 * GI}
    p = pod(ctr("server", 4, 8), pod_requests=res, pod_limits=res)
    n = node(version=(1, 36), featureGates={"PodLevelResourceManagers": True})
    qos, exclusive, _, findings = judge(p, n)
    assert (qos, exclusive, findings) == ("Guaranteed", (("server", 4),), ())
    n = node(version=(1, 36), featureGates={"PodLevelResourceManagers": True},
             topologyManagerPolicy="restricted", topologyManagerScope="pod")
    qos, exclusive, _, findings = judge(p, n)
    assert (qos, exclusive) == ("Guaranteed", (("server", 4),))
    assert [(f.severity, f.rule) for f in findings if f.rule == "cpumanager"] == [
        (WARNING, "cpumanager")]


def test_every_finding_uses_a_kubelet_rule_and_cites_an_upstream_source():
    n = node(topologyManagerPolicy="single-numa-node", reserved=reserve_cores(node(), 2),
             cpuManagerPolicyOptions={"full-pcpus-only": "true"})
    pods = [pod(ctr("a", 3, 1)), pod(ctr("a", 20, 1), ctr("b", 20, 1)),
            pod(ctr("a", 4, 1), ctr("b", 2, 1, designated=False)),
            pod(ctr("prep", 2, 1, role=INIT), ctr("a", 4, 1))]
    seen = set()
    for p in pods:
        for f in judge(p, n)[3]:
            seen.add(f.severity)
            assert f.rule in RULES
            assert "kubernetes/kubernetes" in f.message or "kubernetes.io" in f.message
    assert seen == {ERROR, WARNING, DEPENDS}
