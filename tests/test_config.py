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
    # the oldest supported minor: what it accepts, every supported kubelet accepts
    assert cfg.kubernetesVersion == (1, 35)
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
            k.memoryManagerPolicy) == ("5s", "best-effort", "pod", "None")
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
    assert cfg.workloads.defaultMemory.whole == 2 * 2 ** 30
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
    # a spec or data that is no mapping is no "all defaults" (hostile test: read as defaults)
    *[({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "spec": v}, "spec",
       f"expected a mapping, found {t}")
      for v, t in (([], "a list"), (False, "a boolean"), (0, "a number"), ("", "a string"))],
    *[({"apiVersion": "v1", "kind": "ConfigMap", "data": v}, "data",
       f"expected a mapping, found {t}") for v, t in (([], "a list"), ("", "a string"))],
])
def test_errors_name_the_field(obj, path, message):
    with pytest.raises(ConfigError) as e:
        config.load(obj)
    assert e.value.path == path
    assert message in e.value.message


def test_docs_document_every_flat_key():
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert config.flat_key_table() in page


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


# --- hostile values: every fault is an error naming the field (typed `spec.` and flat
# `data.<key>` paths), never a crash, a hang or an invalid emitted object ------------------

def cm(data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": data}


def pool_spec(**fields):
    return typed({"nodePools": [{"name": "a", **fields}]})


def nested(depth):
    v = 1
    for _ in range(depth):
        v = {"a": v}
    return v


def load_error(obj):
    with pytest.raises(ConfigError) as e:
        config.load(obj)
    return e.value


@pytest.mark.parametrize("obj,path,message", [
    # 2. kubelet.extra: JSON (flat) and plain data (typed)
    (cm({"extra": "[" * 100000}), "data.extra", "nested more than 32 levels deep"),
    (cm({"extra": '{"a":' * 40 + "1" + "}" * 40}), "data.extra" + ".a" * 32,
     "nested more than 32 levels deep"),
    (cm({"extra": '{"maxPods": NaN}'}), "data.extra", "NaN is not a JSON number"),
    (cm({"extra": '{"maxPods": -Infinity}'}), "data.extra", "-Infinity is not a JSON number"),
    (cm({"extra": '{"maxPods": 1e400}'}), "data.extra.maxPods", "not a finite number"),
    (cm({"extra": '{"maxPods": 10, "maxPods": 20}'}), "data.extra", "duplicate key 'maxPods'"),
    (cm({"extra": '{"featureGates": {"A": true, "A": false}}'}), "data.extra",
     "duplicate key 'A'"),
    (cm({"extra": '{"maxPods": ' + "1" * 5000 + "}"}), "data.extra", "expected a JSON object"),
    (pool_spec(kubelet={"extra": {"x": nested(40)}}),
     "spec.nodePools[0].kubelet.extra.x" + ".a" * 31, "nested more than 32 levels deep"),
    (pool_spec(kubelet={"extra": {"evictionPressureTransitionPeriod": float("nan")}}),
     "spec.nodePools[0].kubelet.extra.evictionPressureTransitionPeriod", "not a finite number"),
    (pool_spec(kubelet={"extra": {"maxPods": float("inf")}}),
     "spec.nodePools[0].kubelet.extra.maxPods", "not a finite number"),
    (pool_spec(kubelet={"extra": {"maxPods": 2 ** 64}}),
     "spec.nodePools[0].kubelet.extra.maxPods", "does not fit in a 64-bit integer"),
    (pool_spec(kubelet={"extra": {"x": [{1: "a"}]}}),
     "spec.nodePools[0].kubelet.extra.x[0]", "keys must be strings"),
    (pool_spec(kubelet={"extra": {"x": {"when": __import__("datetime").date(2024, 1, 1)}}}),
     "spec.nodePools[0].kubelet.extra.x.when", "is not plain data"),
    (pool_spec(kubelet={"extra": {"max pods": 1}}), "spec.nodePools[0].kubelet.extra",
     "'max pods' is not a KubeletConfiguration field name"),
    # 3. numeric bounds, also for numbers written as huge strings
    (typed({"workloads": {"shm": {"sizeLimitPercent": 101}}}),
     "spec.workloads.shm.sizeLimitPercent", "must be at most 100, found 101"),
    (typed({"workloads": {"threads": {"reservedCpus": 1025}}}),
     "spec.workloads.threads.reservedCpus", "must be at most 1024, found 1025"),
    (pool_spec(kubelet={"podPidsLimit": 4194305}), "spec.nodePools[0].kubelet.podPidsLimit",
     "must be at most 4194304, found 4194305"),
    (pool_spec(topology={"sockets": 65}), "spec.nodePools[0].topology.sockets",
     "must be at most 64, found 65"),
    (pool_spec(topology={"numaNodesPerSocket": 65}),
     "spec.nodePools[0].topology.numaNodesPerSocket", "must be at most 64, found 65"),
    (pool_spec(topology={"coresPerSocket": 1025}), "spec.nodePools[0].topology.coresPerSocket",
     "must be at most 1024, found 1025"),
    (pool_spec(topology={"threadsPerCore": 9}), "spec.nodePools[0].topology.threadsPerCore",
     "must be at most 8, found 9"),
    (pool_spec(reserved={"cores": 1025}), "spec.nodePools[0].reserved.cores",
     "must be at most 1024, found 1025"),
    (pool_spec(topology={"sockets": 10 ** 5000}), "spec.nodePools[0].topology.sockets",
     "must be at most 64, found a number of about"),
    (cm({"reservedCores": "9" * 5000}), "data.reservedCores",
     "must be at most 1024, found a 5000-digit number"),
    (cm({"threadsReservedCpus": "-" + "9" * 5000}), "data.threadsReservedCpus",
     "must be at least 0, found a 5000-digit number"),
    (cm({"podPidsLimit": "99999999999"}), "data.podPidsLimit", "must be at most 4194304"),
    (pool_spec(topology={"sockets": 64, "coresPerSocket": 1024, "threadsPerCore": 1}),
     "spec.nodePools[0].topology", "65536 logical CPUs per node; at most 16384"),
    (pool_spec(topology={"sockets": 64, "numaNodesPerSocket": 64, "coresPerSocket": 64,
                         "threadsPerCore": 1}),
     "spec.nodePools[0].topology.numaNodesPerSocket", "4096 NUMA nodes per node"),
    # 4. lists that must not be empty, and no duplicates in any list
    (typed({"nodePools": []}), "spec.nodePools", "must list at least one node pool"),
    (typed({"output": {"formats": []}}), "spec.output.formats", "must list at least one format"),
    (cm({"formats": ""}), "data.formats", "must list at least one format"),
    (cm({"formats": "configmap,configmap"}), "data.formats[1]", "'configmap' is listed twice"),
    (typed({"selector": {"kinds": ["Deployment", "Deployment"]}}), "spec.selector.kinds[1]",
     "listed twice"),
    # 5. thread env var names
    (typed({"workloads": {"threads": {"env": ["", "A B"]}}}), "spec.workloads.threads.env[0]",
     "must be an environment variable name"),
    (typed({"workloads": {"threads": {"env": ["OK", "A B"]}}}), "spec.workloads.threads.env[1]",
     "must be an environment variable name"),
    (typed({"workloads": {"threads": {"env": ["1X"]}}}), "spec.workloads.threads.env[0]",
     "found '1X'"),
    (typed({"workloads": {"threads": {"env": ["OMP_NUM_THREADS", "OMP_NUM_THREADS"]}}}),
     "spec.workloads.threads.env[1]", "'OMP_NUM_THREADS' is listed twice"),
    (cm({"threadsEnv": "OMP_NUM_THREADS,A-B"}), "data.threadsEnv[1]",
     "must be an environment variable name"),
    # 6. quantity-valued maps
    (pool_spec(kubelet={"evictionHard": {"memory.available": "abc"}}),
     "spec.nodePools[0].kubelet.evictionHard.memory.available", "'abc' is not a quantity"),
    (cm({"evictionHard": "memory.available=abc"}), "data.evictionHard.memory.available",
     "'abc' is not a quantity"),
    (pool_spec(kubelet={"evictionHard": {"memory.free": "1Gi"}}),
     "spec.nodePools[0].kubelet.evictionHard.memory.free", "unknown eviction signal"),
    (pool_spec(kubelet={"evictionHard": {"nodefs.available": "101%"}}),
     "spec.nodePools[0].kubelet.evictionHard.nodefs.available", "from 0% to 100%"),
    (pool_spec(kubelet={"evictionHard": {"nodefs.available": "-5%"}}),
     "spec.nodePools[0].kubelet.evictionHard.nodefs.available", "found '-5%'"),
    (pool_spec(kubelet={"evictionHard": {"nodefs.inodesFree": "1500m"}}),
     "spec.nodePools[0].kubelet.evictionHard.nodefs.inodesFree", "not a whole number"),
    (pool_spec(kubelet={"kubeReserved": {"memory": "xyz"}}),
     "spec.nodePools[0].kubelet.kubeReserved.memory", "'xyz' is not a quantity"),
    (cm({"kubeReserved": "memory=xyz"}), "data.kubeReserved.memory", "'xyz' is not a quantity"),
    (pool_spec(kubelet={"systemReserved": {"memory": "500m"}}),
     "spec.nodePools[0].kubelet.systemReserved.memory", "not a whole number of bytes"),
    (pool_spec(kubelet={"systemReserved": {"cpu": "0.0001"}}),
     "spec.nodePools[0].kubelet.systemReserved.cpu", "finer than 1m"),
    (pool_spec(kubelet={"kubeReserved": {"ephemeral-storage": "-1Gi"}}),
     "spec.nodePools[0].kubelet.kubeReserved.ephemeral-storage", "negative"),
    (pool_spec(kubelet={"kubeReserved": {"pid": "0"}}),
     "spec.nodePools[0].kubelet.kubeReserved.pid", "whole number of process IDs"),
    (pool_spec(kubelet={"kubeReserved": {"pid": "1k"}}),
     "spec.nodePools[0].kubelet.kubeReserved.pid", "whole number of process IDs"),
    (pool_spec(kubelet={"kubeReserved": {"nvidia.com/gpu": "1"}}),
     "spec.nodePools[0].kubelet.kubeReserved.nvidia.com/gpu", "unknown resource"),
    # 7. other values that would make an invalid object or crash
    (pool_spec(kubelet={"cpuManagerReconcilePeriod": "99999999999h"}),
     "spec.nodePools[0].kubelet.cpuManagerReconcilePeriod", "longer than the longest Go duration"),
    (cm({"cpuManagerReconcilePeriod": "0s"}), "data.cpuManagerReconcilePeriod",
     "must be greater than zero"),
    (cm({"cpuManagerReconcilePeriod": "30s\n"}), "data.cpuManagerReconcilePeriod",
     "must not contain control characters"),
    (cm({"cpuManagerReconcilePeriod": "1" * 100 + "s"}), "data.cpuManagerReconcilePeriod",
     "expected a duration"),
    (typed({"kubernetesVersion": "1.35\n"}), "spec.kubernetesVersion",
     "expected a Kubernetes minor version"),
    (typed({"output": {"namespace": "kube-system\n"}}), "spec.output.namespace",
     "must not contain control characters"),
    (cm({"nodePool": "x" * 100000}), "data.nodePool", "at most 4096 are accepted"),
    (typed({"workloads": {"defaultMemory": "1Gi\n"}}), "spec.workloads.defaultMemory",
     "must not contain control characters"),
    (typed({"workloads": {"defaultCpus": "9" * 100}}), "spec.workloads.defaultCpus",
     "longer than 64 characters"),
    (typed({"workloads": {"defaultCpus": 10 ** 5000}}), "spec.workloads.defaultCpus",
     "number too large"),
    (pool_spec(nodeSelector={"pool": "a\u2028b"}), "spec.nodePools[0].nodeSelector.pool",
     "must not contain control characters"),
    (pool_spec(nodeSelector={None: "x"}), "spec.nodePools[0].nodeSelector",
     "keys must be strings"),
    (pool_spec(nodeSelector={1: "a", "1": "b"}), "spec.nodePools[0].nodeSelector.1",
     "given twice"),
    (cm({"matchLabels": "tier=a,tier=b"}), "data.matchLabels.tier", "given twice"),
    (cm({"matchLabels": "=a"}), "data.matchLabels", "empty key"),
    (typed({"workloads": {"pinnedContainers": ["Model_1"]}}),
     "spec.workloads.pinnedContainers[0]", "must be a container name"),
    (typed({"selector": {"kinds": ["apps/v1 Deployment"]}}), "spec.selector.kinds[0]",
     "must be a kind name"),
    (typed({"selector": {"names": ["My Model"]}}), "spec.selector.names[0]",
     "must be an object name"),
    (cm({"namespaces": "prod,Bad_NS"}), "data.namespaces[1]", "must be a namespace name"),
    (typed({"output": {"verifyImage": "a:::::"}}), "spec.output.verifyImage",
     "must be a container image reference"),
    (typed({"output": {"verifyImage": "x@@@"}}), "spec.output.verifyImage",
     "must be a container image reference"),
    (cm({"verifyImage": "A-"}), "data.verifyImage", "must be a container image reference"),
])
def test_hostile_values_are_errors_naming_the_field(obj, path, message):
    err = load_error(obj)
    assert (err.path, message in err.message) == (path, True), err


def test_bounds_and_validated_maps_accept_valid_values():
    cfg = config.load(typed({
        "workloads": {"shm": {"sizeLimitPercent": "100"}, "threads": {
            "reservedCpus": 1024, "env": ["OMP_NUM_THREADS", "_X1"], "custom": ["_X1"]}},
        "selector": {"kinds": ["InferenceService"], "names": ["llm.v2"],
                     "namespaces": ["", "prod"]},
        "nodePools": [{"name": "a", "topology": {
            "sockets": 2, "numaNodesPerSocket": 2, "coresPerSocket": 1024, "threadsPerCore": 8},
            "reserved": {"cores": 1024},
            "kubelet": {
                "podPidsLimit": "4194304", "cpuManagerReconcilePeriod": "2562047h47m16.854775807s",
                "kubeReserved": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "10G",
                                 "pid": "1000"},
                "systemReserved": {"memory": "0"},
                "evictionHard": {"memory.available": "5%", "nodefs.available": "100%",
                                 "nodefs.inodesFree": "2.5%", "imagefs.inodesFree": "1M",
                                 "pid.available": "100", "containerfs.available": "1Gi",
                                 "allocatableMemory.available": "200Mi"},
                "extra": {"maxPods": 110, "x": nested(31), "y": 1.5, "z": None}}}]}))
    (p,) = cfg.nodePools
    assert p.topology.coresPerSocket == 1024 and p.kubelet.podPidsLimit == 4194304
    assert cfg.workloads.shm.sizeLimitPercent == 100
    flat = config.load(cm({"extra": '{"maxPods": 110, "featureGates": {"A": true}}',
                           "evictionHard": "memory.available=200Mi,nodefs.available=10%",
                           "threadsEnv": "OMP_NUM_THREADS, GOMAXPROCS"}))
    assert flat.nodePools[0].kubelet.extra == {"maxPods": 110, "featureGates": {"A": True}}
    assert flat.workloads.threads.env == ["OMP_NUM_THREADS", "GOMAXPROCS"]


def test_empty_thread_env_list_still_means_none():
    assert config.load(typed({"workloads": {"threads": {"env": []}}})).workloads.threads.env == []
    assert config.load(cm({"threadsEnv": ""})).workloads.threads.env == []


WINDOW = ("krm-fn supports Kubernetes 1.35, 1.36 and 1.37, as upstream maintains the three "
          "most recent minor releases (https://kubernetes.io/releases/)")


@pytest.mark.parametrize("version", ["1.34", "1.22", "1.21", "v1.34.9", "1.0"])
def test_versions_older_than_the_supported_minors_are_refused(version):
    with pytest.raises(ConfigError) as e:
        config.load(typed({"kubernetesVersion": version}))
    assert e.value.path == "spec.kubernetesVersion"
    assert e.value.message == f"Kubernetes {version} is not supported: {WINDOW}"


@pytest.mark.parametrize("version", ["1.38", "v1.38.0", "1.99"])
def test_versions_newer_than_the_data_are_refused_as_not_yet_supported(version):
    minor = version.lstrip("v").split(".")[1]
    with pytest.raises(ConfigError) as e:
        config.load(typed({"kubernetesVersion": version}))
    assert e.value.path == "spec.kubernetesVersion"
    assert e.value.message == (f"Kubernetes {version} is not supported yet: krm-fn has no "
                               f"kubelet data for 1.{minor} yet; {WINDOW}")


def test_an_unsupported_version_in_the_configmap_names_its_key():
    with pytest.raises(ConfigError) as e:
        config.load(cm({"kubernetesVersion": "1.34"}))
    assert e.value.path == "data.kubernetesVersion"
    assert e.value.message == f"Kubernetes 1.34 is not supported: {WINDOW}"


@pytest.mark.parametrize("version,want", [("1.35", (1, 35)), ("v1.36.3", (1, 36)),
                                          ("1.37.2", (1, 37))])
def test_every_supported_minor_loads(version, want):
    assert config.load(typed({"kubernetesVersion": version})).kubernetesVersion == want


def test_extra_kinds_become_registry_entries():
    cfg = config.load(typed({"extraKinds": [{"group": "example.com", "kind": "InferenceJob",
                                             "podSpecs": ["spec.workers[*].template.spec"]}]}))
    (at,) = config.extra_registry(cfg)[("example.com", "InferenceJob")]
    assert at.spec == ("spec", "workers", "*", "template", "spec")
    assert at.meta == ("spec", "workers", "*", "template", "metadata")


@pytest.mark.parametrize("kind,path,message", [
    ({"kind": "job"}, "spec.extraKinds[0].kind", "must be a Kind name"),
    ({"kind": "Job", "podSpecs": []}, "spec.extraKinds[0].podSpecs", "at least one"),
    ({"kind": "Job", "podSpecs": ["spec..x"]}, "spec.extraKinds[0].podSpecs[0]", "empty segment"),
    ({"kind": "Job", "podSpecs": ["spec.x[0]"]}, "spec.extraKinds[0].podSpecs[0]", "only [*]"),
])
def test_extra_kinds_are_validated(kind, path, message):
    with pytest.raises(ConfigError) as e:
        config.load(typed({"extraKinds": [kind]}))
    assert e.value.path == path and message in e.value.message


def test_extra_kind_is_tuned(tmp_path):
    from tests.helpers import load, run_cli
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- apiVersion: example.com/v1\n  kind: InferenceJob\n  metadata: {name: j}\n"
            "  spec:\n    workers:\n    - template:\n        spec:\n          containers:\n"
            "          - {name: w, image: w:1, resources: {limits: {cpu: '2', memory: 1Gi}}}\n"
            "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
            "  metadata: {name: x}\n  spec:\n    extraKinds:\n    - group: example.com\n"
            "      kind: InferenceJob\n      podSpecs: ['spec.workers[*].template.spec']\n")
    p = run_cli([], text)
    assert p.returncode == 0, p.stderr
    w = load(p.stdout)["items"][0]["spec"]["workers"][0]["template"]["spec"]
    assert w["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert w["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}


def test_every_shape_error_is_reported_in_one_pass():
    from krm_fn import pipeline
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "pin"},
          "spec": {"kubernetesVersion": 1.3, "workloads": {"cpuRouding": "up"},
                   "nodePools": [{"name": "a", "topology": {"threadsPerCor": 2}},
                                 {"name": "b", "kubelet": {"topologyManagerPolicy": "single"}}],
                   "output": {"formats": "configmap"}}}
    with pytest.raises(ConfigError) as e:
        config.load(fc)
    assert [(x.path, x.message) for x in e.value.errors] == [
        ("spec.kubernetesVersion", "must be a quoted string such as \"1.35\", found the number "
                                   "1.3 (YAML reads an unquoted version as a number, so 1.30 and "
                                   "1.3 are the same number): write the version in quotes"),
        ("spec.workloads", "unknown field 'cpuRouding' (did you mean 'cpuRounding'?) (known: "
                           "cpuRounding, pinnedContainers, defaultCpus, defaultMemory, "
                           "sidecarResources, initContainerCpu, threads, injection, shm)"),
        ("spec.nodePools[0].topology", "unknown field 'threadsPerCor' (did you mean "
                                       "'threadsPerCore'?) (known: sockets, numaNodesPerSocket, "
                                       "coresPerSocket, threadsPerCore, siblings, lscpu, memory, numaMemory, "
                                       "hugepages, fromNode, fromNodeResourceTopology)"),
        ("spec.nodePools[1].kubelet.topologyManagerPolicy",
         "must be one of none, best-effort, restricted, single-numa-node; found 'single'"),
        ("spec.output.formats", "expected a list, found a string (write [configmap])"),
    ]
    out = pipeline.transform([], fc)
    assert [r.path for r in out.results] == [x.path for x in e.value.errors]
    # the flat form names each data key
    with pytest.raises(ConfigError) as e:
        config.load({"kind": "ConfigMap", "data": {"threadsPerCore": "x", "podPidsLimit": "0"}})
    assert [x.path for x in e.value.errors] == ["data.threadsPerCore", "data.podPidsLimit"]


@pytest.mark.parametrize("image", [
    "ghcr.io/krm-fn/krm-fn:0.1.0", "busybox", "localhost:5000/team/krm-fn:v1",
    "registry.example.com/krm-fn@sha256:" + "a" * 64, "a/b_c__d-e:1.0-rc"])
def test_verify_image_accepts_references(image):
    assert config.load(typed({"output": {"verifyImage": image}})).output.verifyImage == image


def test_loaded_config_is_typed_records():
    """load() returns the record classes of krm_fn.config.records, each documented, with
    one attribute per field of the definition, in definition order."""
    from krm_fn.config import records
    cfg = config.load(None)
    assert isinstance(cfg, records.Spec) and isinstance(cfg.nodePools[0], records.NodePool)

    def walk(obj):
        assert type(obj).__doc__, type(obj).__name__
        assert list(vars(obj)) == [f.name for f in type(obj).FIELDS]
        for v in vars(obj).values():
            for x in (v if isinstance(v, list) else [v]):
                if isinstance(x, config.Record):
                    walk(x)
    walk(cfg)
    assert cfg == config.load(None) and cfg != config.load({"kind": "ConfigMap",
                                                            "data": {"sockets": "1"}})


@pytest.mark.parametrize("topology,path,message", [
    ({"numaMemory": {"2": "96Gi"}}, "spec.nodePools[0].topology.numaMemory.2",
     "must be a NUMA node id from 0 to 1, found '2'"),
    ({"numaMemory": {"0": "lots"}}, "spec.nodePools[0].topology.numaMemory.0",
     "'lots' is not a quantity"),
    ({"hugepages": {"1Gi": "3Gi"}}, "spec.nodePools[0].topology.hugepages.1Gi",
     "'3Gi' is not a whole number of 1Gi pages on each of the 2 NUMA nodes"),
])
def test_node_memory_must_fit_the_topology(topology, path, message):
    err = load_error(pool_spec(topology=topology))
    assert err.path == path and message in err.message, (err.path, err.message)


def test_node_memory_loads_as_quantities():
    pool = config.load(pool_spec(topology={"memory": "192Gi", "numaMemory": {"1": "64Gi"},
                                           "hugepages": {"1Gi": "32Gi"}})).nodePools[0]
    assert pool.topology.memory.whole == 192 * 2**30
    assert pool.topology.numaMemory == {"1": "64Gi"}
    assert pool.topology.hugepages == {"1Gi": "32Gi"}


# -- threads.env holds thread-count variables only (issue #14) ------------------------------


@pytest.mark.parametrize("obj, path, message", [
    (typed({"workloads": {"threads": {"env": ["OMP_NUM_THREADS", "GOMEMLIMIT"]}}}),
     "spec.workloads.threads.env[1]",
     "GOMEMLIMIT is not a thread-count variable: it holds a memory limit in bytes (set "
     "spec.workloads.threads.goMemLimitPercent), and krm-fn would write a thread count into "
     "it; remove it"),
    (typed({"workloads": {"threads": {"env": ["PATH"], "custom": ["PATH"]}}}),
     "spec.workloads.threads.custom[0]",
     "PATH is not a thread-count variable: it holds a search path, and krm-fn would write a "
     "thread count into it; remove it"),
    (cm({"threadsEnv": "OMP_NUM_THREADS,LD_PRELOAD"}), "data.threadsEnv[1]",
     "LD_PRELOAD is not a thread-count variable: it holds libraries to preload, and krm-fn "
     "would write a thread count into it; remove it"),
    (typed({"workloads": {"threads": {"env": ["APP_THREADS"]}}}),
     "spec.workloads.threads.env[0]",
     "APP_THREADS is not a thread-count variable krm-fn knows (OMP_NUM_THREADS, "
     "MKL_NUM_THREADS, OPENBLAS_NUM_THREADS, NUMEXPR_NUM_THREADS, NUMEXPR_MAX_THREADS, "
     "VECLIB_MAXIMUM_THREADS, BLIS_NUM_THREADS, TORCH_NUM_THREADS, TF_NUM_INTRAOP_THREADS, "
     "RAYON_NUM_THREADS, GOMAXPROCS, PYTHON_CPU_COUNT, TF_NUM_INTEROP_THREADS, "
     "OMP_THREAD_LIMIT, GOTO_NUM_THREADS, NUMBA_NUM_THREADS, POLARS_MAX_THREADS, "
     "TOKIO_WORKER_THREADS, ORT_INTRA_OP_NUM_THREADS, ORT_INTER_OP_NUM_THREADS); if your "
     "runtime reads it as a thread count, list it in "
     "spec.workloads.threads.custom too"),
    (typed({"workloads": {"threads": {"custom": ["1X"]}}}), "spec.workloads.threads.custom[0]",
     "must be an environment variable name"),
])
def test_threads_env_refuses_what_is_no_thread_count(obj, path, message):
    err = load_error(obj)
    assert err.path == path
    assert message in err.message


def test_threads_custom_admits_an_in_house_thread_count():
    cfg = config.load(cm({"threadsEnv": "OMP_NUM_THREADS,APP_THREADS",
                          "threadsCustom": "APP_THREADS"}))
    assert cfg.workloads.threads.env == ["OMP_NUM_THREADS", "APP_THREADS"]
    assert cfg.workloads.threads.custom == ["APP_THREADS"]


@pytest.mark.parametrize("number,message", [
    (1.3, "must be a quoted string such as \"1.35\", found the number 1.3 (YAML reads an "
          "unquoted version as a number, so 1.30 and 1.3 are the same number): write the "
          "version in quotes"),
    (1.34, "must be a quoted string such as \"1.35\", found the number 1.34 (YAML reads an "
           "unquoted version as a number): write the version in quotes"),
    (1, "must be a quoted string such as \"1.35\", found the number 1 (YAML reads an "
        "unquoted version as a number): write the version in quotes"),
])
def test_unquoted_kubernetes_version_hint_reads_for_any_number(number, message):
    with pytest.raises(ConfigError) as e:
        config.load(typed({"kubernetesVersion": number}))
    assert (e.value.path, e.value.message) == ("spec.kubernetesVersion", message)


def test_a_zero_percent_eviction_threshold_switches_the_signal_off_as_the_kubelet_does():
    # pkg/kubelet/eviction/helpers.go parseThresholdStatement ignores exactly "0%" and "100%"
    from krm_fn import config
    config.load(pool_spec(kubelet={"evictionHard": {"imagefs.available": "0%",
                                                    "imagefs.inodesFree": "0%"}}))


@pytest.mark.parametrize("written, read", [("!!str 1.35", "1.35"), ("&v !!str 1.35", "1.35"),
                                           ("1.35", 1.35), ('"1.35"', "1.35"),
                                           ("!!str 010", "010")])
def test_an_explicit_str_tag_keeps_a_number_like_value_a_string(written, read):
    """Hostile test: `kubernetesVersion: !!str 1.35` was read as the number 1.35 and the
    config refused; the tag makes it the string "1.35" to every YAML reader."""
    from krm_fn import resourcelist
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
            "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
            f"  metadata: {{name: x}}\n  spec:\n    kubernetesVersion: {written}\n")
    got = resourcelist.parse(text, True).function_config["spec"]["kubernetesVersion"]
    assert got == read and type(got) is type(read)


@pytest.mark.parametrize("spec, path", [
    ({"selector": {"matchLabels": {"release": 1.10}}}, "spec.selector.matchLabels.release"),
    ({"nodePools": [{"name": "p", "nodeSelector": {"os": 8.10}}]},
     "spec.nodePools[0].nodeSelector.os"),
    ({"nodePools": [{"name": "p", "nodeSelector": {"size": 1e3}}]},
     "spec.nodePools[0].nodeSelector.size"),
])
def test_an_unquoted_decimal_label_value_is_refused_not_rewritten(spec, path):
    """Hostile test: `release: 1.10` selected workloads labelled "1.1", and a node pool's
    `VERSION_ID: 8.10` was written into every nodeSelector as "8.1" (`1e3` as "1000.0"),
    exit 0: YAML keeps a number's value, not its text."""
    with pytest.raises(ConfigError) as e:
        config.load(typed(spec))
    assert e.value.path == path
    assert e.value.message.startswith("an unquoted number, which YAML reads as the number ")
    assert e.value.message.endswith("(8.10 and 8.1 are the same number): quote the value")


def test_an_unquoted_integer_label_value_is_its_text():
    cfg = config.load(typed({"nodePools": [{"name": "p", "nodeSelector": {"gen": 4}}]}))
    assert cfg.nodePools[0].nodeSelector == {"gen": "4"}


@pytest.mark.parametrize("api_version, found", [(None, "none"), ("v1", "'v1'"),
                                                (1.0, "1.0")])
def test_a_wrong_api_version_is_named_without_python_words(api_version, found):
    """Hostile test: a typed config without apiVersion said "found None"."""
    obj = typed({})
    if api_version is None:
        del obj["apiVersion"]
    else:
        obj["apiVersion"] = api_version
    with pytest.raises(ConfigError) as e:
        config.load(obj)
    assert (e.value.path, e.value.message) == (
        "apiVersion", f"expected krm-fn.dev/v1alpha1, found {found}")


@pytest.mark.parametrize("written", ["07", "0x0A", "0o10", "+5", "-0"])
def test_an_unquoted_integer_written_otherwise_is_refused_as_a_label_value(written):
    """Hostile test: `example.com/rack: 07` was written into every nodeSelector as "7"
    (exit 0): YAML keeps the number, not its text."""
    from krm_fn import resourcelist
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
            "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
            "  metadata: {name: x}\n  spec:\n    nodePools:\n"
            f"    - {{name: a, nodeSelector: {{rack: {written}}}}}\n")
    doc = resourcelist.parse(text, True)
    with pytest.raises(ConfigError) as e:
        config.load(doc.function_config)
    assert e.value.path == "spec.nodePools[0].nodeSelector.rack"
    assert e.value.message.startswith(f"an unquoted number written {written!r}, which YAML "
                                      f"reads as the number ")


@pytest.mark.parametrize("spec, path, text", [
    ({"workloads": {"defaultCpus": "1e-12"}}, "spec.workloads.defaultCpus", "1e-12"),
    ({"workloads": {"sidecarResources": {"cpu": "1500.5m", "memory": "128Mi"}}},
     "spec.workloads.sidecarResources.cpu", "1500.5m"),
    ({"nodePools": [{"name": "a", "kubelet": {"kubeReserved": {"cpu": "0.0000000001"}}}]},
     "spec.nodePools[0].kubelet.kubeReserved.cpu", "0.0000000001"),
])
def test_config_cpu_finer_than_1m_is_an_error_naming_the_field(spec, path, text):
    # krm-fn's own cpu amounts are whole millicores (docs/configuration.md); a pod's cpu
    # finer than 1m is read as the API server stores it instead (tests/test_fine_cpu.py)
    assert str(load_error(typed(spec))) == (
        f"{path}: '{text}' is finer than 1m, the smallest CPU unit; Kubernetes would round "
        f"it up")
