"""Replicas per node, by simulation (krm_fn/admission/capacity.py)."""
from __future__ import annotations


from krm_fn.admission.capacity import fit_detail, fit_one, pod_requests
from krm_fn.admission.kubelet import fit, fit_mix, judge
from krm_fn.admission.model import ERROR, INIT, SIDECAR, Container
from tests.admission.kit import GI, MI, cores, ctr, node, pod, reserve_cores

RES = reserve_cores(node(), 2)          # 28 of 32 CPUs free per NUMA node, 56 allocatable


def test_ten_not_eleven_pods_of_five_cpus_fit_when_each_must_stay_on_one_numa_node():
    p = pod(ctr("server", 5, 1))
    for policy in ("restricted", "single-numa-node"):
        assert fit_one(p, node(topologyManagerPolicy=policy, reserved=RES)) == (
            10, "TopologyAffinityError: Resources cannot be allocated with Topology locality")
    assert fit_one(p, node(topologyManagerPolicy="best-effort", reserved=RES)) == (
        11, "allocatable cpu 56: 5 each (OutOfcpu)")


def test_fourteen_pods_of_24gi_do_not_fit_a_192gi_node_seven_do():
    n = node(allocatable={"cpu": 62, "memory": 192 * GI - GI - 100 * MI}, reserved={0, 32})
    assert fit_one(pod(ctr("server", 1, 24)), n) == (
        7, "allocatable memory 190.9Gi: 24Gi each (OutOfmemory)")


def test_fit_counts_each_pod_alone():
    n = node(reserved={0, 32})
    assert fit([pod(ctr("a", 8, 1)), pod(ctr("b", 31, 1))], n) == [7, 2]


def test_fit_mix_packs_in_order_on_one_node():
    n = node(allocatable={"cpu": 62, "memory": 100 * GI}, reserved={0, 32})
    assert fit_mix([(pod(ctr("a", 4, 8)), 3), pod(ctr("b", 2, 2))], n) == [3, 25]
    assert fit_mix([pod(ctr("a", 4, 20)), pod(ctr("b", 2, 2))], n) == [5, 0]


def test_max_pods_caps_pods_without_requests():
    assert fit_one(pod(Container("idle")), node(maxPods=40)) == (40, "maxPods 40")


def test_effective_requests_take_the_larger_of_init_peak_and_apps_plus_sidecars():
    p = pod(ctr("mesh", 1, 1, role=SIDECAR), ctr("prep", 6, 4, role=INIT), ctr("server", 4, 8))
    assert pod_requests(p, node()) == {"cpu": cores(7), "memory": 9 * GI}
    pl = pod(ctr("server", 4, 8), pod_requests={"cpu": cores(6), "memory": 10 * GI})
    assert pod_requests(pl, node(version=(1, 35))) == {"cpu": cores(6), "memory": 10 * GI}


def test_a_pod_larger_than_node_allocatable_never_schedules():
    findings = judge(pod(ctr("server", 8, 300)), node(allocatable={"memory": 190 * GI}))[3]
    errors = [f for f in findings if f.severity == ERROR]
    assert [f.rule for f in errors] == ["capacity"]
    assert "never schedules (Insufficient memory)" in errors[0].message


def test_the_cpu_limit_names_the_exclusive_and_the_shared_part_of_each_replica():
    # 4 exclusive CPUs + a 50m sidecar in the shared pool on 28 allocatable CPUs: 6 fit,
    # not 7 (28 / 4), because each replica takes 4050m of allocatable cpu
    n = node(allocatable={"cpu": 28, "memory": 100 * GI}, reserved={0, 32})
    p = pod(ctr("vllm", 4, 12), ctr("metrics", "50m", 1))
    assert fit_detail(p, n) == (6, "allocatable cpu 28: 4 + 50m each (OutOfcpu)",
                                "allocatable cpu 28: 4 + 50m each")
    assert fit_detail(pod(ctr("vllm", 4, 12)), n) == (
        7, "allocatable cpu 28: 4 each (OutOfcpu)", "allocatable cpu 28: 4 each")
    assert fit_detail(pod(Container("idle")), node(maxPods=40)) == (40, "maxPods 40",
                                                                     "maxPods 40")
    assert fit_detail(pod(ctr("server", 5, 1)),
                      node(topologyManagerPolicy="single-numa-node", reserved=RES))[2] == (
        "TopologyAffinityError")
