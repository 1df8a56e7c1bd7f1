"""The verdict's inputs: AdmittedPod from a tuned pod spec, NodeModel from a node plan."""

from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn import config
from krm_fn.admission import build, capacity
from krm_fn.admission.model import APP, INIT, SIDECAR, Container, Injection
from krm_fn.node import plan as plan_mod
from krm_fn.pod import Edits, build_views
from krm_fn.results import Ref
from krm_fn.workloads import locations
from tests.admission.kit import cores

GI = 2 ** 30
MI = 2 ** 20


def _plan(topology, kubelet=None, baseline=None):
    spec = {"nodePools": [{"name": "p", "topology": topology, "kubelet": kubelet or {}}]}
    if baseline is not None:
        spec["output"] = {"baseline": baseline}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "t"}, "spec": spec})
    plan, _ = plan_mod.build(cfg.nodePools[0], cfg.kubernetesVersion, None, 0,
                             cfg.output.baseline)
    return build.node_model(plan, cfg.nodePools[0], cfg.kubernetesVersion)


def test_limits_without_requests_default_the_requests():
    req, lim = build.requests_limits({"limits": {"cpu": "2", "memory": "1Gi"},
                                      "requests": {"memory": "512Mi"}})
    assert req == {"cpu": cores(2), "memory": 512 * MI}
    assert lim == {"cpu": cores(2), "memory": GI}


def test_node_memory_is_split_over_numa_nodes_and_overridden_per_node():
    node = _plan({"sockets": 2, "coresPerSocket": 4, "memory": "192Gi",
                  "numaMemory": {"1": "64Gi"}, "hugepages": {"1Gi": "8Gi"}})
    assert node.numa_memory == {0: {"memory": 96 * GI, "hugepages-1Gi": 4 * GI},
                                1: {"memory": 64 * GI, "hugepages-1Gi": 4 * GI}}


def test_allocatable_memory_is_capacity_minus_reservations_eviction_and_hugepages():
    # defaults: kubeReserved 500Mi, systemReserved 500Mi, evictionHard memory.available 100Mi
    node = _plan({"sockets": 1, "coresPerSocket": 8, "memory": "192Gi",
                  "hugepages": {"2Mi": "2Gi"}})
    assert capacity.allocatable(node)["memory"] == 192 * GI - 1100 * MI - 2 * GI
    assert capacity.allocatable(node)["hugepages-2Mi"] == 2 * GI
    assert capacity.allocatable(node)["cpu"] == cores(16 - 4)    # 2 reserved cores x 2 threads


def test_percentage_eviction_threshold_is_of_capacity():
    # as the kubelet reads it: float32(10) / 100 = 0.100000001490116..., and
    # int64(float64(capacity) * that) (eviction parsePercentage, GetThresholdQuantity):
    # 160 bytes more than an exact tenth of 100Gi (hostile test: the exact tenth admitted a
    # pod the kubelet refuses with OutOfmemory)
    assert build.allocatable_memory(100 * GI, {"evictionHard": {"memory.available": "10%"}}) \
        == 90 * GI - 160


def test_node_without_memory_models_none():
    node = _plan({"sockets": 1, "coresPerSocket": 8})
    assert node.numa_memory == {} and "memory" not in node.allocatable


def test_node_runs_the_baseline_merged_with_the_plan():
    node = _plan({"sockets": 1, "coresPerSocket": 8}, {"cpuManagerPolicyOptions": {}},
                 {"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}, "maxPods": 50})
    assert node.kubelet["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}
    assert node.kubelet["maxPods"] == 50 and node.kubelet["cpuManagerPolicy"] == "static"


def test_admitted_pod_puts_init_containers_first_and_injected_ones_where_they_go():
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "nodeSelector": {"a": "b"},
        "initContainers": [{"name": "warm", "resources": {"limits": {"cpu": "1"}}},
                           {"name": "log", "restartPolicy": "Always"}],
        "containers": [{"name": "server", "resources": {"limits": {"cpu": "4",
                                                                   "memory": "8Gi"}}}]}}
    at = next(iter(locations(obj)))
    pod = build_views(obj, at, Ref("v1", "Pod", "p"), Edits(obj), [])
    proxy = Container("istio-proxy", APP, {"cpu": cores("100m")}, {}, "istio")
    init = Container("istio-init", INIT, {}, {}, "istio")
    inj = Injection("istio", "Istio", "label", (init, proxy), False, "fix")
    admitted = build.admitted_pod(pod, frozenset({"server"}), (inj,), "ns")
    assert [(c.name, c.role, c.source, c.designated) for c in admitted.containers] == [
        ("istio-init", INIT, "istio", False), ("warm", INIT, "manifest", False),
        ("log", SIDECAR, "manifest", False), ("server", APP, "manifest", True),
        ("istio-proxy", APP, "istio", False)]
    assert admitted.node_selector == {"a": "b"} and admitted.namespace == "ns"
    assert admitted.path == "spec" and admitted.pod_requests is None


_QUANTITY_LIKE = st.one_of(
    st.sampled_from(["1", "4", "3500m", "0.5", "16Gi", "64Mi", "1e3", "-1", "0", "1.5Gi",
                     "100m", "", " 1", "1Ki", "0.0001m", "x"]),
    st.integers(-3, 5000), st.booleans(), st.none(),
    st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0), st.just(0.0),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                         max_size=1))


@settings(max_examples=500, deadline=None)
@given(values=st.lists(st.tuples(st.sampled_from(["cpu", "memory", "hugepages-2Mi"]),
                                 _QUANTITY_LIKE), max_size=12))
def test_a_cached_amount_is_the_amount_parsed_afresh(values):
    """build.amount keeps what it parsed per name, value and type: in any order of values
    (equal values of other types among them: 1, True, 1.0, "1"), each is what parsing it
    alone gives."""
    for name, value in values:
        assert build.amount(name, value) == build._parse_amount(name, value)
        assert type(build.amount(name, value)) is type(build._parse_amount(name, value))
