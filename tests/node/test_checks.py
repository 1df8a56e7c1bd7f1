"""Admission checks of pods against a pool's kubelet plan (kubelet.md §10)."""
import copy

from krm_fn import config
from krm_fn.node import plan as node_plan
from krm_fn.node.checks import PodCpus, check_pod, pool_fit, summary
from krm_fn.results import Ref

REF = Ref("apps/v1", "Deployment", "srv", "ml")


def plan(**kubelet):
    p = copy.deepcopy(config.load(None).nodePools[0])   # 2 sockets x 16 cores x 2 threads
    for k, v in kubelet.items():
        setattr(p.kubelet, k, v)
    built, results = node_plan.build(p, (1, 34), Ref("v1", "ConfigMap", "cfg"))
    assert [r for r in results if r.severity == "error"] == []
    return built


def test_requirement_counts_sidecars_and_the_largest_init():
    # kubelet.md §10.5: max(max_i(sidecars before init i + init i), sum app + sum sidecars)
    pod = PodCpus(REF, "spec", app=(("a", 8),), init=(("side", 4, True), ("big", 14, False)))
    assert pod.requirement == 18
    assert PodCpus(REF, "spec", app=(("a", 8),), init=(("side", 4, True),)).requirement == 12


def test_pool_fit_counts_whole_cores_under_full_pcpus_only():
    fit = pool_fit(plan())
    assert (fit.total, fit.per_numa) == (60, {0: 28, 1: 32})
    # without full-pcpus-only only the reserved CPUs themselves are used
    fit = pool_fit(plan(cpuManagerPolicyOptions={}, reservedSystemCPUs="0"))
    assert (fit.total, fit.per_numa) == (63, {0: 31, 1: 32})


def test_pod_larger_than_the_node_is_an_error():
    (r,) = check_pod(plan(), PodCpus(REF, "spec.template.spec", app=(("a", 62),)))
    assert r.severity == "error" and r.path == "spec.template.spec"
    assert r.message == ("pod needs 62 exclusive CPUs but a node of pool 'inference' has 60 "
                         "outside reservedSystemCPUs: the kubelet would reject it")


def test_single_numa_node_pod_scope():
    p = plan(topologyManagerPolicy="single-numa-node")
    assert check_pod(p, PodCpus(REF, "s", app=(("a", 32),))) == []
    (r,) = check_pod(p, PodCpus(REF, "s", app=(("a", 32),), init=(("side", 2, True),)))
    assert r.message.startswith("pod needs 34 exclusive CPUs but the largest NUMA node of pool "
                                "'inference' has 32 free: topologyManagerPolicy "
                                "single-numa-node with scope pod")


def test_restricted_container_scope_checks_each_container():
    p = plan(topologyManagerPolicy="restricted", topologyManagerScope="container")
    assert check_pod(p, PodCpus(REF, "s", app=(("a", 30), ("b", 30)))) == []
    (r,) = check_pod(p, PodCpus(REF, "s", app=(("a", 34),)))
    assert "container 'a' needs 34" in r.message


def test_best_effort_never_rejects_for_numa():
    assert check_pod(plan(), PodCpus(REF, "s", app=(("a", 40),))) == []


def test_summary():
    r = summary(plan(), [PodCpus(REF, "s", app=(("a", 4),))], None)
    assert r.message == ("node pool 'inference': 60 exclusive CPUs per node (NUMA 0: 28, "
                         "NUMA 1: 32); Deployment srv needs 4 (15 per node)")
