"""Exclusive CPUs under the static CPU Manager (pkg/kubelet/cm/cpumanager/policy_static.go)."""
from __future__ import annotations


from krm_fn.admission.capacity import fit_one
from krm_fn.admission.cpumanager import CpuState, pod_guaranteed_cpus
from krm_fn.admission.kubelet import judge
from krm_fn.admission.model import ERROR, INIT, SIDECAR, WARNING
from krm_fn.admission.topology import NodeState, admit
from tests.admission.kit import GI, cores, ctr, node, pod, reserve_cores

SMT_NODE = dict(reserved={0, 32})          # core 0 (cpus 0 and 32) of a 2x16x2 node


def _msgs(findings, severity=None):
    return [f.message for f in findings if severity is None or f.severity == severity]


def test_whole_cpu_containers_of_a_guaranteed_pod_are_exclusive_fractional_ones_shared():
    p = pod(ctr("server", 4, 8), ctr("proxy", "500m", 1, designated=False))
    qos, exclusive, numa, findings = judge(p, node(**SMT_NODE))
    assert (qos, exclusive, numa, findings) == ("Guaranteed", (("server", 4),), (0,), ())


def test_pod_peak_is_sidecars_before_the_largest_init_or_apps_plus_sidecars():
    p = pod(ctr("mesh", 2, 1, role=SIDECAR), ctr("prep", 6, 1, role=INIT),
            ctr("server", 4, 8))
    assert pod_guaranteed_cpus(p, "Guaranteed") == 8
    q = pod(ctr("prep", 2, 1, role=INIT), ctr("mesh", 2, 1, role=SIDECAR), ctr("server", 4, 8))
    assert pod_guaranteed_cpus(q, "Guaranteed") == 6


def test_cpus_of_a_finished_init_container_are_reused_by_the_app_container():
    n = node(**SMT_NODE)
    p = pod(ctr("prep", 8, 1, role=INIT), ctr("server", 8, 1))
    st = NodeState(n)
    adm = admit(p, n, st, "Guaranteed")
    assert adm.exclusive == (("prep", 8), ("server", 8))
    assert len(st.cpu.free) == 62 - 8
    assert fit_one(p, n)[0] == 7


def test_cpus_of_a_sidecar_are_not_reused():
    n = node(**SMT_NODE)
    p = pod(ctr("agent", 8, 1, role=SIDECAR), ctr("server", 8, 1))
    st = NodeState(n)
    assert admit(p, n, st, "Guaranteed").exclusive == (("agent", 8), ("server", 8))
    assert len(st.cpu.free) == 62 - 16


def test_cpu_manager_policy_none_is_an_error_for_a_pod_with_designated_containers():
    qos, exclusive, numa, findings = judge(pod(ctr("server", 4, 8)),
                                           node(cpuManagerPolicy="none"))
    assert (qos, exclusive, numa) == ("Guaranteed", (), ())
    assert [(f.severity, f.rule) for f in findings] == [(ERROR, "cpumanager")]
    assert "cpuManagerPolicy is none on pool 'pinned'" in findings[0].message
    assert "cpu-management-policies" in findings[0].message


def test_undesignated_container_with_a_whole_cpu_count_is_pinned_too_with_a_way_out():
    p = pod(ctr("server", 4, 8), ctr("istio-proxy", 2, 1, designated=False, source="istio"))
    _, exclusive, _, findings = judge(p, node(**SMT_NODE))
    assert exclusive == (("server", 4), ("istio-proxy", 2))
    assert [f.severity for f in findings] == [WARNING]
    assert ("container 'istio-proxy' (added by istio) is not one krm-fn pins but gets 2 exclusive CPUs"
            in findings[0].message)
    assert "1900m instead of 2" in findings[0].message
    assert "policy_static.go guaranteedCPUs" in findings[0].message


def test_designated_container_with_a_fractional_cpu_stays_shared_and_is_an_error():
    _, exclusive, _, findings = judge(pod(ctr("server", "1500m", 8)), node())
    assert exclusive == ()
    assert _msgs(findings, ERROR) == [
        "container 'server' is to be pinned but its cpu request 1500m is not a whole number: it "
        "runs in the shared pool; request a whole number of CPUs (kubernetes/kubernetes "
        "pkg/kubelet/cm/cpumanager/policy_static.go guaranteedCPUs), or pin another "
        "container instead: annotate the workload or its pod template with "
        "krm-fn.dev/pinned-containers: \"NAME\" (or list it in "
        "spec.workloads.pinnedContainers)"]


def test_pod_level_resources_disable_exclusive_cpus_unless_their_gate_is_off():
    """PodLevelResources is on by default in every supported version (KEP-2837)."""
    res = {"cpu": cores(4), "memory": 8 * GI}
    p = pod(ctr("server", 4, 8), pod_requests=res, pod_limits=res)
    for version in ((1, 35), (1, 36), (1, 37)):
        qos, exclusive, _, findings = judge(p, node(version=version))
        assert (qos, exclusive) == ("Guaranteed", ())
        assert "pod is using pod-level resources which are not supported" in findings[0].message
    off = node(version=(1, 35), featureGates={"PodLevelResources": False})
    assert judge(p, off)[1] == (("server", 4),)


def test_from_1_36_the_kubelet_skips_pod_level_pods_also_with_its_gate_off():
    # policy_static.go of v1.36.3 and v1.37.2 Allocate / GetTopologyHints skip a pod with
    # pod-level resources when `!PodLevelResourceManagers || !PodLevelResources`; the API
    # server (its gate on by default) keeps spec.resources. v1.35.4 skips only with it on.
    res = {"cpu": cores(4), "memory": 8 * GI}
    p = pod(ctr("server", 4, 8), pod_requests=res, pod_limits=res)
    for version in ((1, 36), (1, 37)):
        off = node(version=version, featureGates={"PodLevelResources": False})
        qos, exclusive, _, findings = judge(p, off)
        assert (qos, exclusive) == ("Guaranteed", ())
        assert ("the pool's kubelet runs with PodLevelResources off, and on Kubernetes "
                f"1.{version[1]} its static CPU and Memory Managers skip such a pod") in \
            findings[0].message


def test_the_qos_class_is_the_api_servers_whatever_the_kubelets_gate():
    # the API server sets status.qosClass (pkg/registry/core/pod/strategy.go
    # PrepareForCreate) from the pod-level resources, with its own PodLevelResources gate
    # (on by default); the kubelet's GetPodQOS reads it: a kubelet running with the gate off
    # does not make a pod whose pod-level requests differ from its limits Guaranteed
    p = pod(ctr("server", 4, 8), pod_requests={"cpu": cores(4), "memory": 8 * GI},
            pod_limits={"cpu": cores(4), "memory": 16 * GI})
    qos, exclusive, _, _ = judge(p, node(version=(1, 35), featureGates={
        "PodLevelResources": False}))
    assert (qos, exclusive) == ("Burstable", ())


def test_full_pcpus_only_with_an_odd_cpu_count_is_smt_alignment_error():
    n = node(cpuManagerPolicyOptions={"full-pcpus-only": "true"}, **SMT_NODE)
    _, exclusive, numa, findings = judge(pod(ctr("server", 3, 8)), n)
    assert (exclusive, numa) == ((), ())
    assert [(f.severity, f.rule) for f in findings] == [(ERROR, "cpumanager")]
    assert ("container 'server' fails with SMTAlignmentError on pool 'pinned' (full-pcpus-only)"
            ": SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
            in findings[0].message)


def test_full_pcpus_only_counts_the_siblings_of_reserved_cpus_as_unavailable():
    n = node(sockets=1, cores=4, threads=2, reserved={0},
             cpuManagerPolicyOptions={"full-pcpus-only": "true"})
    assert CpuState(n).smt_error(8) == (
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 6, "
        "requested CPUs = 8, CPUs per core = 2")
    assert CpuState(n).smt_error(6) == ""


def test_cpu_hints_prefer_the_fewest_numa_nodes_counted_over_all_cpus_not_free_ones():
    n = node()
    st = CpuState(node(reserved=reserve_cores(n, 2)))       # 28 of 32 free per NUMA
    assert st.hints(30, set()) == [(frozenset({0, 1}), False)]
    assert st.hints(28, set()) == [(frozenset({0}), True), (frozenset({1}), True),
                                   (frozenset({0, 1}), False)]


def test_align_by_socket_prefers_two_numa_nodes_of_the_same_socket():
    n = node(sockets=1, numa_per_socket=2, cores=32)
    st = CpuState(node(sockets=1, numa_per_socket=2, cores=32, reserved=reserve_cores(n, 2),
                       cpuManagerPolicyOptions={"align-by-socket": "true"}))
    assert st.hints(30, set()) == [(frozenset({0, 1}), True)]


def test_allocation_takes_whole_free_numa_nodes_first_then_packs_the_fullest():
    n = node(**SMT_NODE)                        # NUMA 0: 30 free, NUMA 1: 32 free (whole)
    st = NodeState(n)
    assert admit(pod(ctr("big", 40, 1)), n, st, "Guaranteed").numa == (0, 1)
    assert st.cpu.free_per_numa() == {0: 22, 1: 0}
    st2 = NodeState(n)
    assert admit(pod(ctr("a", 20, 1)), n, st2, "Guaranteed").numa == (0,)
    assert admit(pod(ctr("b", 4, 1)), n, st2, "Guaranteed").numa == (0,)
