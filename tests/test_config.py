"""Function config: strict typed form, ConfigMap flat keys, defaults, errors naming fields."""
import pytest

from krm_fn import config
from krm_fn.config import ConfigError
from tests.helpers import ROOT


def typed(spec):
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "x"}, "spec": spec}


def test_defaults_match_design():
    cfg = config.load(None)
    assert cfg.kubernetesVersion == (1, 34)
    assert cfg.workloads.cpuRounding == "up"
    assert cfg.workloads.sidecarResources.cpu.text == "100m"
    assert cfg.workloads.sidecarResources.memory.text == "128Mi"
    assert cfg.workloads.threads.reservedCpus == 0
    assert cfg.workloads.threads.existing == "keep-lower"
    assert cfg.workloads.shm.sizeLimitPercent == 25
    (pool,) = cfg.nodePools
    assert pool.name == "inference"
    assert pool.nodeSelector == {"krm-fn.dev/cpu-pinning": "true"}
    assert (pool.topology.sockets, pool.topology.numaNodesPerSocket, pool.topology.coresPerSocket,
            pool.topology.threadsPerCore, pool.topology.siblings) == (2, 1, 16, 2, "split")
    assert pool.reserved.cores == 2 and pool.reserved.spreadAcrossNuma is False
    k = pool.kubelet
    assert k.cpuManagerPolicyOptions == {"full-pcpus-only": "true"}
    assert (k.cpuManagerReconcilePeriod, k.topologyManagerPolicy, k.topologyManagerScope,
            k.memoryManagerPolicy) == ("30s", "best-effort", "pod", "None")
    assert (k.podPidsLimit, k.failCgroupV1) == (4096, True)
    assert cfg.output.formats == ["configmap"] and cfg.output.namespace == "kube-system"


def test_empty_kpt_function_input_configmap_means_defaults():
    cfg = config.load({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "function-input"}})
    assert cfg.nodePools[0].name == "inference"


def test_flat_keys_configure_the_first_pool():
    cfg = config.load({"kind": "ConfigMap", "data": {
        "threadsPerCore": "1", "cpuManagerPolicyOptions": "", "kinds": "Deployment, Pod",
        "matchLabels": "tier=inference", "spreadReservedAcrossNuma": "true",
        "defaultMemory": "2Gi", "formats": "configmap,kubelet-config", "nodePool": "cpu"}})
    pool = cfg.nodePools[0]
    assert pool.name == "cpu" and pool.topology.threadsPerCore == 1
    assert pool.kubelet.cpuManagerPolicyOptions == {}
    assert pool.reserved.spreadAcrossNuma is True
    assert cfg.selector.kinds == ["Deployment", "Pod"]
    assert cfg.selector.matchLabels == {"tier": "inference"}
    assert cfg.workloads.defaultMemory.value == 2 * 2 ** 30
    assert cfg.output.formats == ["configmap", "kubelet-config"]


@pytest.mark.parametrize("obj,path,message", [
    (typed({"foo": 1, "bar": 2}), "spec", "unknown fields 'foo', 'bar'"),
    (typed({"workloads": {"threads": {"envs": []}}}), "spec.workloads.threads",
     "unknown field 'envs'"),
    (typed({"nodePools": [{"name": "a", "topology": {"sockets": "x"}}]}),
     "spec.nodePools[0].topology.sockets", "expected a whole number, found 'x'"),
    (typed({"nodePools": [{"name": "a", "topology": {"sockets": 0}}]}),
     "spec.nodePools[0].topology.sockets", "must be at least 1, found 0"),
    (typed({"kubernetesVersion": 1.3}), "spec.kubernetesVersion", "must be a quoted string"),
    (typed({"kubernetesVersion": "2.0"}), "spec.kubernetesVersion", "expected a Kubernetes minor"),
    (typed({"workloads": {"cpuRounding": "nearest"}}), "spec.workloads.cpuRounding",
     "must be one of up, down, keep, error; found 'nearest'"),
    (typed({"workloads": {"defaultCpus": "abc"}}), "spec.workloads.defaultCpus",
     "'abc' is not a quantity"),
    (typed({"workloads": {"defaultCpus": "0"}}), "spec.workloads.defaultCpus",
     "must be greater than zero"),
    (typed({"nodePools": [{"name": "a"}, {"name": "a"}]}), "spec.nodePools[1].name",
     "duplicate pool name 'a'"),
    (typed({"nodePools": [{"name": "Bad_Name"}]}), "spec.nodePools[0].name", "DNS label"),
    (typed({"nodePools": [{"name": "a", "kubelet": {"cpuManagerPolicyOptions":
                                                    {"full-pcpus-only": "yes"}}}]}),
     "spec.nodePools[0].kubelet.cpuManagerPolicyOptions.full-pcpus-only", 'must be "true"'),
    (typed({"output": {"formats": ["helm"]}}), "spec.output.formats[0]", "must be one of"),
    (typed({"kubelet": {"cpuManagerReconcilePeriod": "soon"}}), "spec", "unknown field"),
    ({"kind": "ConfigMap", "data": {"nope": "1"}}, "data.nope", "unknown key 'nope'"),
    ({"kind": "ConfigMap", "data": {"matchLabels": "tier"}}, "data.matchLabels",
     "expected key=value pairs"),
    ({"apiVersion": "krm-fn.dev/v1", "kind": "InferenceTuning"}, "apiVersion",
     "expected krm-fn.dev/v1alpha1"),
    ({"apiVersion": "v1", "kind": "Secret"}, "kind", "must be a krm-fn.dev/v1alpha1 "
                                                     "InferenceTuning or a v1 ConfigMap"),
    ({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "spec": {}, "data": {}},
     "", "unknown field 'data'"),
])
def test_errors_name_the_field(obj, path, message):
    with pytest.raises(ConfigError) as e:
        config.load(obj)
    assert e.value.path == path
    assert message in e.value.message


def test_readme_documents_every_flat_key():
    readme = (ROOT / "README.md").read_text()
    assert config.flat_key_table() in readme


@pytest.mark.parametrize("obj,path,message", [
    ({"kind": "ConfigMap", "data": {"initContainerCpu": "1"}}, "data.initContainerCpu",
     "must be a fractional CPU"),
    ({"kind": "ConfigMap", "data": {"nodeSelector": "bad key!=x"}}, "data.nodeSelector.bad key!",
     "'bad key!' is not a valid label key"),
    ({"kind": "ConfigMap", "data": {"matchLabels": "tier=not ok"}}, "data.matchLabels.tier",
     "'not ok' is not a valid label value"),
    ({"kind": "ConfigMap", "data": {"namespace": "Bad NS"}}, "data.namespace",
     "must be a DNS label"),
    ({"kind": "ConfigMap", "data": {"extra": "maxPods=30"}}, "data.extra",
     "expected a JSON object"),
])
def test_values_that_would_make_invalid_objects(obj, path, message):
    with pytest.raises(ConfigError) as e:
        config.load(obj)
    assert (e.value.path, message in e.value.message) == (path, True), e.value


def test_flat_extra_is_json_with_types():
    cfg = config.load({"kind": "ConfigMap", "data": {"extra": '{"maxPods": 30, "x": true}'}})
    assert cfg.nodePools[0].kubelet.extra == {"maxPods": 30, "x": True}
