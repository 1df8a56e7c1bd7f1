import copy

import pytest

from krm_fn import config
from krm_fn.node import plan as node_plan
from krm_fn.node.topology import Topology
from krm_fn.results import ERROR, WARNING, Ref, Result

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")

# pkg/kubelet/eviction/defaults_linux.go of every supported release
EVICTION_DEFAULTS = {"memory.available": "100Mi", "nodefs.available": "10%",
                     "nodefs.inodesFree": "5%", "imagefs.available": "15%",
                     "imagefs.inodesFree": "5%"}

DEFAULT_KUBELET = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "cpuManagerPolicy": "static",
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "cpuManagerReconcilePeriod": "5s",
    "topologyManagerPolicy": "best-effort",
    "topologyManagerScope": "pod",
    "memoryManagerPolicy": "None",
    "reservedSystemCPUs": "0-1,32-33",
    "kubeReserved": {"memory": "500Mi"},
    "systemReserved": {"memory": "500Mi"},
    "evictionHard": EVICTION_DEFAULTS,
    "podPidsLimit": 4096,
    "failCgroupV1": True,
}


def pool(**kubelet):
    p = copy.deepcopy(config.load(None).nodePools[0])
    for k, v in kubelet.items():
        setattr(p.kubelet, k, v)
    return p


def build(p=None, version=(1, 35), index=0):
    return node_plan.build(p or pool(), version, REF, index=index)


def test_defaults_full_plan():
    plan, results = build()
    assert results == []
    assert plan.kubelet == DEFAULT_KUBELET
    assert list(plan.kubelet) == list(DEFAULT_KUBELET)   # key order
    assert list(plan.kubelet["evictionHard"]) == list(EVICTION_DEFAULTS)
    assert plan.pool == "inference"
    assert plan.node_selector == {"krm-fn.dev/cpu-pinning": "true"}
    assert plan.topology == Topology(2, 1, 16, 2, "split")
    assert plan.reserved_cpus == [0, 1, 32, 33]
    assert plan.exclusive_cpus == 60
    assert plan.rollout == [
        "Check the node runs cgroup v2 (`stat -fc %T /sys/fs/cgroup` prints cgroup2fs): "
        "failCgroupV1 is true, so the kubelet refuses to start on cgroup v1",
        "Cordon the node: kubectl cordon <node>",
        "Drain the node: kubectl drain <node> --ignore-daemonsets --delete-emptydir-data",
        "Stop the kubelet",
        "Delete /var/lib/kubelet/cpu_manager_state",
        "Delete /var/lib/kubelet/memory_manager_state when memoryManagerPolicy changes",
        "Put kubelet-config.yaml in place as a *.conf file in the kubelet's --config-dir "
        "drop-in directory (read after --config, files in alphanumeric order; maps merge per "
        "key, lists replace), or as a kubeadm kubeletconfiguration patch",
        "Start the kubelet",
        "Uncordon the node: kubectl uncordon <node>",
        node_plan.RESERVED_CPUS_STEP.format(cpus="0-1,32-33") + node_plan.RESERVED_CPUS_SHARED,
    ]


def test_static_memory_manager_reserved_memory_1636Mi():
    plan, results = build(pool(memoryManagerPolicy="Static", kubeReserved={"memory": "1Gi"},
                               systemReserved={"memory": "512Mi"}, evictionHard={}))
    assert results == []
    assert plan.kubelet["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1636Mi"}}]
    keys = list(plan.kubelet)
    assert keys[keys.index("memoryManagerPolicy") + 1] == "reservedMemory"
    assert keys[keys.index("reservedMemory") + 1] == "reservedSystemCPUs"


def test_static_memory_manager_defaults_1100Mi():
    plan, results = build(pool(memoryManagerPolicy="Static"))
    assert results == []
    assert plan.kubelet["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1100Mi"}}]


def test_static_memory_manager_percentage_is_error():
    plan, results = build(pool(memoryManagerPolicy="Static",
                               evictionHard={"memory.available": "5%"}), index=2)
    assert "reservedMemory" not in plan.kubelet
    assert len(results) == 1
    r = results[0]
    assert (r.severity, r.path, r.current, r.ref) == (
        ERROR, "spec.nodePools[2].kubelet.evictionHard.memory.available", "5%", REF)
    assert "percentage '5%'" in r.message


def test_memory_manager_none_has_no_reserved_memory():
    plan, _ = build()
    assert "reservedMemory" not in plan.kubelet


def test_cpu_dropped_from_reservations_with_warning():
    plan, results = build(pool(kubeReserved={"cpu": "500m", "memory": "1Gi"},
                               systemReserved={"cpu": "1"}))
    assert plan.kubelet["kubeReserved"] == {"memory": "1Gi"}
    assert "systemReserved" not in plan.kubelet           # empty after dropping cpu
    assert [(r.severity, r.path, r.current) for r in results] == [
        (WARNING, "spec.nodePools[0].kubelet.kubeReserved.cpu", "500m"),
        (WARNING, "spec.nodePools[0].kubelet.systemReserved.cpu", "1"),
        (WARNING, "spec.nodePools[0].kubelet.reservedSystemCPUs", None),
    ]
    assert all("reservedSystemCPUs replaces it" in r.message for r in results[:2])
    # 500m + 1 = 1500m CPUs asked, the 2 default reserved cores hold 4 CPUs (C04)
    assert results[2].message.startswith("kubeReserved.cpu 500m + systemReserved.cpu 1 = "
                                         "1500m CPUs, but reservedSystemCPUs '0-1,32-33' "
                                         "holds 4")
    assert all(r.ref == REF for r in results)


def test_alpha_option_adds_gate_first():
    plan, results = build(pool(cpuManagerPolicyOptions={"full-pcpus-only": "true",
                                                        "align-by-socket": "true"}))
    assert results == []
    assert plan.kubelet["featureGates"] == {"CPUManagerPolicyAlphaOptions": True}
    assert list(plan.kubelet)[:4] == ["apiVersion", "kind", "featureGates", "cpuManagerPolicy"]


def test_forbidden_pair_is_error():
    plan, results = build(pool(cpuManagerPolicyOptions={
        "full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}))
    assert plan.kubelet["featureGates"] == {"CPUManagerPolicyAlphaOptions": True}
    assert results == [Result(
        "CPU Manager policy options 'full-pcpus-only' and 'distribute-cpus-across-cores' "
        "cannot both be \"true\": the kubelet refuses to start: \"new static policy error: "
        "static policy options full-pcpus-only and distribute-cpus-across-cores can not be "
        "used at the same time\" (kubernetes/kubernetes pkg/kubelet/cm/cpumanager/"
        "policy_options.go); remove one of them",
        ERROR, REF, "spec.nodePools[0].kubelet.cpuManagerPolicyOptions")]


def test_empty_options_omitted():
    plan, results = build(pool(cpuManagerPolicyOptions={}))
    assert results == []
    assert "cpuManagerPolicyOptions" not in plan.kubelet
    assert "featureGates" not in plan.kubelet


@pytest.mark.parametrize("version", [(1, 35), (1, 36), (1, 37)])
def test_every_supported_version_gets_the_same_plan_without_warnings(version):
    """failCgroupV1 and singleProcessOOMKill exist, and DisableCPUQuotaWithExclusiveCPUs is
    on by default, in every supported version: nothing is dropped and no version note."""
    plan, results = build(pool(singleProcessOOMKill=True), version=version)
    assert results == []
    assert plan.kubelet == {**DEFAULT_KUBELET, "singleProcessOOMKill": True}


@pytest.mark.parametrize("version", [(1, 34), (1, 38)])
def test_a_version_without_data_is_refused(version):
    """No nearest version: the config refuses kubernetesVersion outside the supported
    minors, so the plan is never built for one."""
    with pytest.raises(ValueError, match=f"Kubernetes 1.{version[1]}"):
        build(version=version)


def test_eviction_hard_merged_over_defaults():
    plan, _ = build(pool(evictionHard={"nodefs.available": "20%", "pid.available": "10%"}))
    assert plan.kubelet["evictionHard"] == {
        "memory.available": "100Mi", "nodefs.available": "20%", "nodefs.inodesFree": "5%",
        "imagefs.available": "15%", "imagefs.inodesFree": "5%", "pid.available": "10%"}
    assert list(plan.kubelet["evictionHard"])[-1] == "pid.available"


def test_explicit_reserved_system_cpus():
    plan, results = build(pool(reservedSystemCPUs="0-3,32-35"))
    assert results == []
    assert plan.kubelet["reservedSystemCPUs"] == "0-3,32-35"
    assert plan.reserved_cpus == [0, 1, 2, 3, 32, 33, 34, 35]
    assert plan.exclusive_cpus == 56


@pytest.mark.parametrize("text,fragment", [
    ("3-1", "reversed range"),
    ("0-1,64", "CPUs 64 do not exist"),
    ("", "empty"),
    ("0-63", "covers every CPU"),
    ("3-1", "the kubelet refuses a reservedSystemCPUs it cannot parse"),
    # strconv.Atoi reads it (k8s.io/utils/cpuset Parse), the node has no such CPU
    ("0-1,99999999999", "is out of range (CPU ids go up to 16383; Linux supports at most "
                        "8192 CPUs); no node has such a CPU: the kubelet fails to start"),
    ("0-1," + "9" * 20, "the kubelet refuses a reservedSystemCPUs it cannot parse"),
])
def test_bad_reserved_system_cpus(text, fragment):
    plan, results = build(pool(reservedSystemCPUs=text))
    assert [(r.severity, r.path, r.current) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.reservedSystemCPUs", text)]
    assert fragment in results[0].message
    assert plan.reserved_cpus == []


def test_reserved_system_cpus_listing_a_cpu_twice_is_what_the_kubelet_reads():
    """k8s.io/utils/cpuset Parse adds each element to a set: "0-1,32-33,1" is {0,1,32,33}
    to the kubelet, which starts with it; a warning, and the plan reserves that set."""
    plan, results = build(pool(reservedSystemCPUs="0-1,32-33,1"))
    assert plan.kubelet["reservedSystemCPUs"] == "0-1,32-33,1"
    assert plan.reserved_cpus == [0, 1, 32, 33]
    assert [(r.severity, r.current, r.message) for r in results] == [
        (WARNING, "0-1,32-33,1", "cpuset '0-1,32-33,1': CPU 1 listed twice; the kubelet "
         "reads it as '0-1,32-33' (k8s.io/utils/cpuset Parse keeps each CPU once): write "
         "that, or the CPU meant")]


def test_reserved_system_cpus_partial_core_warning():
    plan, results = build(pool(reservedSystemCPUs="0-1"))
    assert plan.kubelet["reservedSystemCPUs"] == "0-1"
    assert [(r.severity, r.current, r.proposed) for r in results] == [
        (WARNING, "0-1", "0-1,32-33")]


def test_reserved_cores_too_many_is_error():
    p = pool()
    p.reserved.cores = 32
    plan, results = build(p)
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, "spec.nodePools[0].reserved.cores")]
    assert "reservedSystemCPUs" not in plan.kubelet


def test_reserved_spread():
    p = pool()
    p.reserved.cores = 4
    p.reserved.spreadAcrossNuma = True
    plan, _ = build(p)
    assert plan.kubelet["reservedSystemCPUs"] == "0-1,16-17,32-33,48-49"


def test_extra_adds_other_fields_last():
    plan, results = build(pool(extra={"containerLogMaxFiles": 3, "maxPods": 50}))
    assert list(plan.kubelet)[-2:] == ["containerLogMaxFiles", "maxPods"]
    assert plan.kubelet["maxPods"] == 50
    assert results == []


@pytest.mark.parametrize("key,typed", [("podPidsLimit", "podPidsLimit"),
                                       ("reservedSystemCPUs", "reservedSystemCPUs"),
                                       ("kubeReserved", "kubeReserved"),
                                       ("cpuManagerPolicy", None), ("reservedMemory", None)])
def test_extra_cannot_bypass_managed_fields(key, typed):
    plan, results = build(pool(extra={key: "x"}))
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, f"spec.nodePools[0].kubelet.extra.{key}")]
    assert results[0].message.startswith(f"{key} is managed by krm-fn")
    if typed:
        assert results[0].message.endswith(f"set kubelet.{typed} instead")


def test_extra_feature_gates_merge_and_cannot_flip_ours():
    plan, results = build(pool(extra={"featureGates": {"EventedPLEG": True}}))
    assert plan.kubelet["featureGates"] == {"EventedPLEG": True} and results == []
    plan, results = build(pool(cpuManagerPolicyOptions={"align-by-socket": "true"},
                               extra={"featureGates": {"CPUManagerPolicyAlphaOptions": False}}))
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.extra.featureGates.CPUManagerPolicyAlphaOptions")]


def test_extra_reserved_cgroup_is_error():
    _, results = build(pool(extra={"systemReservedCgroup": "/system"}))
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.extra.systemReservedCgroup")]


def test_extra_values_become_plain():
    class S(str):
        pass

    class D(dict):
        pass

    plan, _ = build(pool(extra={"allowedUnsafeSysctls": [S("net.core.somaxconn")],
                                "x": D(a=S("b"))}))
    assert type(plan.kubelet["allowedUnsafeSysctls"][0]) is str
    assert type(plan.kubelet["x"]) is dict and type(plan.kubelet["x"]["a"]) is str


def test_version_must_be_tuple():
    with pytest.raises(TypeError, match="tuple"):
        node_plan.build(pool(), "1.35", REF)


def test_huge_reserved_cpuset_is_an_error_not_a_hang():
    plan, results = build(pool(reservedSystemCPUs="0-99999999999"))
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.reservedSystemCPUs")]
    assert "CPU id 99999999999 is out of range" in results[0].message
    assert plan.reserved_cpus == []


def numa_pool(policy="best-effort", options=None, **extra):
    p = pool(topologyManagerPolicy=policy, extra=extra)
    if options is not None:
        p.kubelet.topologyManagerPolicyOptions = options
    p.topology.sockets, p.topology.numaNodesPerSocket = 4, 4   # 16 NUMA nodes
    return p


def test_more_than_8_numa_nodes_gets_max_allowable_numa_nodes_added():
    plan, results = build(numa_pool())
    assert plan.kubelet["topologyManagerPolicyOptions"] == {"max-allowable-numa-nodes": "16"}
    assert [(r.severity, r.path, r.proposed) for r in results] == [
        (WARNING, "spec.nodePools[0].kubelet.topologyManagerPolicyOptions", "16")]
    assert results[0].message == (
        "the pool's nodes have 16 NUMA nodes: without the topology manager option "
        "max-allowable-numa-nodes the kubelet refuses to start with topologyManagerPolicy "
        "'best-effort' on more than 8 NUMA nodes, so max-allowable-numa-nodes: \"16\" is "
        "added; pod admission takes longer as NUMA nodes grow (KEP-4622)")
    assert "featureGates" not in plan.kubelet       # GA in every supported version: no gate


def test_max_allowable_numa_nodes_too_low_is_an_error():
    _, results = build(numa_pool(options={"max-allowable-numa-nodes": "12"}))
    assert [(r.severity, r.path) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.topologyManagerPolicy")]
    assert results[0].message == (
        "topologyManagerPolicy 'best-effort' on nodes with 16 NUMA nodes needs the topology "
        "manager option max-allowable-numa-nodes >= 16 (it is '12'): without it the kubelet "
        "refuses to start on machines with more than 8 NUMA nodes; set "
        "kubelet.topologyManagerPolicyOptions.max-allowable-numa-nodes to \"16\" or "
        "topologyManagerPolicy to none")
    for ok in (numa_pool("none"), numa_pool(options={"max-allowable-numa-nodes": "16"})):
        plan, results = build(ok)
        assert results == []


def test_topology_manager_policy_options_by_version(monkeypatch):
    plan, results = build(pool(topologyManagerPolicyOptions={
        "prefer-closest-numa-nodes": "true"}))
    assert results == []
    assert plan.kubelet["topologyManagerPolicyOptions"] == {"prefer-closest-numa-nodes": "true"}
    keys = list(plan.kubelet)
    assert keys[keys.index("topologyManagerPolicy") + 1] == "topologyManagerPolicyOptions"
    assert "featureGates" not in plan.kubelet       # GA in every supported version
    # both options are GA in every supported version; an option new in the newest minor,
    # alpha there: an error before it, the alpha group gate written from it
    from krm_fn.node import options
    monkeypatch.setitem(options.TOPOLOGY_OPTIONS, "new-option", ("KEP-0", (1, 37), None, None))
    _, results = build(pool(topologyManagerPolicyOptions={"new-option": "true"}),
                       version=(1, 36))
    assert [(r.severity, r.path, r.message) for r in results if r.severity == ERROR] == [
        (ERROR, "spec.nodePools[0].kubelet.topologyManagerPolicyOptions",
         "Topology Manager policy option 'new-option' does not exist in "
         "Kubernetes 1.36 (added in 1.37, KEP-0); the kubelet refuses to start with it")]
    plan, results = build(pool(topologyManagerPolicyOptions={"new-option": "true"}),
                          version=(1, 37))
    assert [r for r in results if "topologyManager" in r.path] == []
    assert plan.kubelet["featureGates"] == {"TopologyManagerPolicyAlphaOptions": True}


TM = "(kubernetes/kubernetes pkg/kubelet/cm/topologymanager/policy_options.go)"


def test_topology_manager_policy_option_values():
    _, results = build(pool(topologyManagerPolicyOptions={
        "prefer-closest-numa-nodes": "yes", "max-allowable-numa-nodes": "4",
        "numa-allocation-strategy": "x"}))
    assert [(r.severity, r.message) for r in results] == [
        (ERROR, "topologyManagerPolicyOptions.prefer-closest-numa-nodes must be \"true\" or "
                "\"false\", found 'yes'; the kubelet refuses to start: \"bad value for option "
                "\"prefer-closest-numa-nodes\": strconv.ParseBool: parsing \"yes\": invalid "
                f"syntax\" {TM}"),
        (ERROR, "topologyManagerPolicyOptions.max-allowable-numa-nodes must be a whole number "
                "from 8 to 99999, found '4'; the kubelet refuses values below 8: \"the minimum "
                "value of \"max-allowable-numa-nodes\" should not be less than 8\" "
                f"{TM}"),
        (ERROR, "unknown Topology Manager policy option 'numa-allocation-strategy' (known: "
                "prefer-closest-numa-nodes, max-allowable-numa-nodes); the kubelet refuses to "
                "start: \"unknown Topology Manager Policy option: "
                f"\"numa-allocation-strategy\"\" {TM}"),
    ]
    plan, results = build(pool(topologyManagerPolicy="single-numa-node",
                               topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true"}))
    assert [(r.severity, r.message) for r in results] == [
        (WARNING, "topologyManagerPolicyOptions.prefer-closest-numa-nodes has no effect with "
                  "topologyManagerPolicy 'single-numa-node': it only changes how best-effort "
                  "and restricted choose among NUMA nodes")]


def test_topology_options_in_extra_are_refused():
    _, results = build(pool(extra={"topologyManagerPolicyOptions": {
        "prefer-closest-numa-nodes": "true"}}))
    assert [(r.severity, r.path, r.message) for r in results] == [
        (ERROR, "spec.nodePools[0].kubelet.extra.topologyManagerPolicyOptions",
         "topologyManagerPolicyOptions is managed by krm-fn and cannot be set in kubelet.extra; "
         "set kubelet.topologyManagerPolicyOptions instead")]


def test_flat_config_numa_option_too_low_names_the_data_key():
    from krm_fn import pipeline
    out = pipeline.transform([], {"apiVersion": "v1", "kind": "ConfigMap", "data": {
        "sockets": "4", "numaNodesPerSocket": "4",
        "topologyManagerPolicyOptions": "max-allowable-numa-nodes=9"}})
    assert "data.topologyManagerPolicy" in [r.path for r in out.results if r.severity == ERROR]


def test_zero_reserved_cores_reserves_through_kube_and_system_reserved():
    # reserved.cores 0: no reservedSystemCPUs; the cpu of kubeReserved/systemReserved is kept
    # and the static policy holds back its ceiling (policy_static.go NewStaticPolicy)
    p = pool(kubeReserved={"cpu": "150m", "memory": "1Gi"}, systemReserved={"cpu": "900m"})
    p.reserved.cores = 0
    plan, results = build(p)
    assert results == []
    assert "reservedSystemCPUs" not in plan.kubelet
    assert plan.kubelet["kubeReserved"] == {"cpu": "150m", "memory": "1Gi"}
    assert plan.kubelet["systemReserved"] == {"cpu": "900m"}
    assert (plan.reserved_cpus, plan.exclusive_cpus) == ([], 62)     # ceil(1.05) = 2


def test_zero_reserved_cores_without_a_cpu_reservation_is_refused_by_the_kubelet():
    p = pool()
    p.reserved.cores = 0
    plan, results = build(p)
    [r] = results
    assert (r.severity, r.path) == (ERROR, "spec.nodePools[0].kubelet.cpuManagerPolicy")
    assert "unable to determine reserved CPU resources for static policy" in r.message
