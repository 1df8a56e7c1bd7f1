"""The plan merged onto spec.output.baseline and the merged result checked
(krm_fn.node.baseline; kubelet.md §3-§9, §14; cases.md C05, C15)."""
import copy

from krm_fn import config
from krm_fn.node import baseline as bl
from krm_fn.node import plan as node_plan
from krm_fn.node import upstream
from krm_fn.results import ERROR, WARNING
from tests.node.test_plan import REF, pool

B = "spec.output.baseline."
CURRENT = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1,32-33"}


def build(p=None, baseline=None, version=(1, 35)):
    return node_plan.build(p or pool(), version, REF, 0, baseline)


def test_unwrap_and_merge():
    assert bl.unwrap({"kubeletconfig": {"a": 1}}) == ({"a": 1}, B + "kubeletconfig")
    assert bl.unwrap({"a": 1}) == ({"a": 1}, B[:-1])
    assert bl.unwrap(None) == ({}, B[:-1])
    assert bl.merge({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}) \
        == {"a": {"c": 2, "d": 3}, "l": [2]}


def test_unset_reservations_come_from_the_baseline():
    base = {**CURRENT, "kubeReserved": {"memory": "1Gi", "ephemeral-storage": "1Gi"},
            "systemReserved": {"memory": "256Mi"},
            "evictionHard": {"memory.available": "300Mi", "pid.available": "5%"}}
    p = pool(memoryManagerPolicy="Static")
    plan, results = build(p, base)
    assert "kubeReserved" not in plan.kubelet and "systemReserved" not in plan.kubelet
    assert plan.kubelet["evictionHard"] == {
        "memory.available": "300Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
        "imagefs.available": "15%", "imagefs.inodesFree": "5%", "pid.available": "5%"}
    # 1Gi + 256Mi + 300Mi, all from the node
    assert plan.kubelet["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1580Mi"}}]
    # a value set in the config wins over the baseline's, per key
    p.kubelet.kubeReserved = {"memory": "2Gi"}
    plan, _ = build(p, base)
    assert plan.kubelet["kubeReserved"] == {"memory": "2Gi"}
    assert plan.kubelet["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "2604Mi"}}]


def test_a_reservation_that_replaces_the_nodes_own_is_warned():
    base = {**CURRENT, "kubeReserved": {"memory": "1Gi", "ephemeral-storage": "1Gi"},
            "systemReserved": {"memory": "512Mi"}}
    p = pool(kubeReserved={"memory": "500Mi", "ephemeral-storage": "1024Mi"},
             systemReserved={"memory": "0.5Gi"})        # the same 512Mi: not warned
    plan, results = build(p, base)
    warned = [r for r in results if r.path.startswith("spec.nodePools[0].kubelet.kube")]
    assert [(r.severity, r.path, r.current, r.proposed, r.message) for r in warned] == [
        (WARNING, "spec.nodePools[0].kubelet.kubeReserved.memory", "1Gi", "500Mi",
         "kubeReserved.memory 500Mi replaces the node's own 1Gi (spec.output.baseline): the "
         "platform sized that reservation for its daemons (a smaller one leaves them less "
         "before the kubelet evicts pods); keep 1Gi unless you mean to change it")]
    assert not [r for r in results if "systemReserved" in r.path]
    # unset in the config: the baseline's own, nothing replaced
    plan, results = build(pool(), base)
    assert not [r for r in results if "replaces the node's own" in r.message]


def test_baseline_hugepages_reservation_must_be_in_reserved_memory():
    base = {**CURRENT, "systemReserved": {"memory": "500Mi", "hugepages-2Mi": "64Mi"}}
    p = pool(memoryManagerPolicy="Static", systemReserved={"memory": "500Mi"})
    p.reserved.spreadMemoryAcrossNuma = True
    plan, results = build(p, base)
    assert results[0].severity == WARNING     # reservedMemory changes: state reset
    assert plan.kubelet["reservedMemory"] == [
        {"numaNode": 0, "limits": {"memory": "550Mi", "hugepages-2Mi": "32Mi"}},
        {"numaNode": 1, "limits": {"memory": "550Mi", "hugepages-2Mi": "32Mi"}}]


def test_reserved_cgroups_of_the_baseline_are_cleared():
    base = {**CURRENT, "systemReservedCgroup": "/system.slice",
            "enforceNodeAllocatable": ["pods", "system-reserved"]}
    plan, results = build(baseline=base)
    assert plan.kubelet["systemReservedCgroup"] == ""
    assert plan.kubelet["enforceNodeAllocatable"] == ["pods"]
    assert "kubeReservedCgroup" not in plan.kubelet
    assert [(r.severity, r.path, r.current, r.proposed) for r in results] == [
        (WARNING, B + "systemReservedCgroup", "/system.slice", ""),
        (WARNING, B + "enforceNodeAllocatable", '["pods","system-reserved"]', '["pods"]')]
    assert results[0].message == ("the baseline sets systemReservedCgroup /system.slice, "
                                  "which the kubelet refuses next to reservedSystemCPUs; the "
                                  "plan sets systemReservedCgroup to \"\"")


def test_merged_cpu_options_are_checked_again():
    base = {**CURRENT, "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"},
            "featureGates": {"CPUManagerPolicyAlphaOptions": True}}
    _, results = build(baseline=base)
    assert [(r.severity, r.path, r.message) for r in results] == [
        (ERROR, B + "cpuManagerPolicyOptions",
         "with the baseline's options merged in: CPU Manager policy options 'full-pcpus-only' "
         "and 'distribute-cpus-across-cores' cannot both be \"true\": the kubelet refuses to "
         "start: \"new static policy error: static policy options full-pcpus-only and "
         "distribute-cpus-across-cores can not be used at the same time\" "
         "(kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_options.go); remove one of "
         "them")]


def test_baseline_alpha_option_gets_its_gate():
    base = {**CURRENT, "cpuManagerPolicyOptions": {"align-by-socket": "true"}}
    plan, results = build(baseline=base)
    assert plan.kubelet["featureGates"] == {"CPUManagerPolicyAlphaOptions": True}
    assert [(r.severity, r.path) for r in results] == [(WARNING, B + "featureGates")]


def test_state_changes_compare_cpusets_and_memory_in_bytes():
    kubelet = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1,32-33",
               "memoryManagerPolicy": "Static",
               "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1100Mi"}}]}
    same = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "32,33,0,1",
            "memoryManagerPolicy": "Static",
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1153433600"}}]}
    assert bl.state_changes(same, kubelet) == []
    assert [c.text() for c in bl.state_changes({}, kubelet)] == [
        "cpuManagerPolicy none -> static", "reservedSystemCPUs (unset) -> 0-1,32-33",
        "memoryManagerPolicy None -> Static", "reservedMemory (unset) -> 0:memory=1100Mi"]
    changed = copy.deepcopy(same)
    changed["reservedMemory"][0]["limits"]["memory"] = "1000Mi"
    assert [(c.field, c.state) for c in bl.state_changes(changed, kubelet)] == [
        ("reservedMemory", bl.MEMORY_STATE)]


def test_state_changes_follow_what_each_policy_checks():
    """Judged by the kubelet's own managers in tests/test_rollout_kubelet.py; the texts."""
    static = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1,32-33"}
    texts = lambda old, new: [c.text() for c in bl.state_changes(old, new)]  # noqa: E731
    # policy none reads nothing else
    assert texts({"reservedSystemCPUs": "0"}, {"reservedSystemCPUs": "0-3"}) == []
    assert texts({"reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]}, {}) == []
    # fewer reserved CPUs without strict reservation: they were never given to a pod
    assert texts(static, {**static, "reservedSystemCPUs": "0,32"}) == []
    assert texts({**static, "reservedSystemCPUs": "0,32"}, static) == [
        "reservedSystemCPUs 0,32 -> 0-1,32-33"]
    strict = {**static, "cpuManagerPolicyOptions": {"strict-cpu-reservation": "true"}}
    assert texts(static, strict) == ["cpuManagerPolicyOptions.strict-cpu-reservation "
                                     "(unset) -> true"]
    assert texts(strict, {**strict, "reservedSystemCPUs": "0,32"}) == [
        "reservedSystemCPUs 0-1,32-33 -> 0,32"]
    assert texts(strict, {**strict, "cpuManagerPolicyOptions": {
        "strict-cpu-reservation": "T", "full-pcpus-only": "true"}}) == []
    # the count the static policy reserves when reservedSystemCPUs is unset
    counted = {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1500m"}}
    assert texts(counted, {**counted, "systemReserved": {"cpu": "500m"}}) == []
    assert texts(counted, {**counted, "systemReserved": {"cpu": "600m"}}) == [
        "ceil(kubeReserved.cpu + systemReserved.cpu) 2 -> 3"]


def test_rollout_steps_follow_the_changes():
    assert bl.rollout_steps(None) == list(node_plan.ROLLOUT_STEPS)
    cpu = [bl.StateChange("cpuManagerPolicy", "none", "static", bl.CPU_STATE)]
    assert bl.rollout_steps(cpu)[3:5] == ["Delete /var/lib/kubelet/cpu_manager_state",
                                          bl.rollout_steps(None)[5]]
    assert len(bl.rollout_steps([])) == 2


def test_cpu_cfs_quota_false_in_extra_is_left_out():
    plan, results = build(pool(extra={"cpuCFSQuota": False, "maxPods": 50}))
    assert "cpuCFSQuota" not in plan.kubelet and plan.kubelet["maxPods"] == 50
    assert [(r.severity, r.path) for r in results] == [
        (WARNING, "spec.nodePools[0].kubelet.extra.cpuCFSQuota")]
    plan, results = build(pool(extra={"cpuCFSQuota": True}))
    assert plan.kubelet["cpuCFSQuota"] is True and results == []


def test_memory_qos_in_extra_is_left_out_other_gates_kept():
    plan, results = build(pool(extra={"featureGates": {"MemoryQoS": True}}))
    assert "featureGates" not in plan.kubelet
    plan, results = build(pool(extra={"featureGates": {"MemoryQoS": True, "Foo": True}}))
    assert plan.kubelet["featureGates"] == {"Foo": True}


def test_memory_qos_and_cfs_quota_messages_follow_the_version():
    """MemoryQoS is alpha and off through 1.36, beta and on by default in 1.37 (kubernetes
    v1.37.2 pkg/features/kube_features.go): the warnings give the version's stage and
    default, and on 1.37 say that leaving MemoryQoS: true out does not turn it off."""
    extra = {"featureGates": {"MemoryQoS": True}, "cpuCFSQuota": False}
    base = {"featureGates": {"MemoryQoS": True}, "cpuCFSQuota": False}
    for version, stage, still in (
            ((1, 35), "alpha, off by default in Kubernetes 1.35", False),
            ((1, 37), "beta, on by default in Kubernetes 1.37", True)):
        _, results = build(pool(extra=extra), base, version)
        msg = {r.path: r.message for r in results}
        mine = msg["spec.nodePools[0].kubelet.extra.featureGates.MemoryQoS"]
        assert f"krm-fn never enables MemoryQoS ({stage}, KEP-2570)" in mine
        assert mine.endswith("; leaving it out does not turn it off: set MemoryQoS: false "
                             "for that") is still
        assert f"enables the MemoryQoS feature gate ({stage}, KEP-2570)" in \
            msg[B + "featureGates.MemoryQoS"]
        quota = "DisableCPUQuotaWithExclusiveCPUs, " + ("beta" if version == (1, 35) else
                                                        "deprecated")
        assert f"{quota}, on by default in Kubernetes 1.{version[1]})" in \
            msg["spec.nodePools[0].kubelet.extra.cpuCFSQuota"]
        assert f"{quota}, on by default in Kubernetes 1.{version[1]})" in msg[B + "cpuCFSQuota"]


def test_no_baseline_no_state_changes():
    plan, results = build()
    assert plan.state_changes == [] and results == []
    assert plan.rollout == ["Check the node runs cgroup v2 (`stat -fc %T /sys/fs/cgroup` "
                            "prints cgroup2fs): failCgroupV1 is true, so the kubelet refuses "
                            "to start on cgroup v1"] + list(node_plan.ROLLOUT_STEPS) + [
        "Keep the node's own processes on the reserved CPUs 0-1,32-33: reservedSystemCPUs "
        "keeps pinned containers off them, but the kubelet, the container runtime, other "
        "system services and interrupts still run on any CPU until a mechanism outside "
        "Kubernetes moves them: CPUAffinity=0-1,32-33 in /etc/systemd/system.conf (every "
        "service systemd starts inherits it; reboot to apply) or the tuned profile "
        "cpu-partitioning, which moves interrupts too (https://kubernetes.io/docs/tasks/"
        "administer-cluster/reserve-compute-resources/#explicitly-reserved-cpu-list); "
        "Burstable and BestEffort pods also run on them unless cpuManagerPolicyOptions "
        "strict-cpu-reservation is \"true\" (https://kubernetes.io/docs/tasks/"
        "administer-cluster/cpu-management-policies/#strict-cpu-reservation)"]


def test_engine_builds_the_plan_against_the_baseline():
    from krm_fn import pipeline
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "pin"},
          "spec": {"output": {"baseline": {"kubeletconfig": {
              "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1,32-33",
              "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}}}}}}
    out = pipeline.transform([], fc)
    assert [r.path for r in out.results if r.severity == ERROR] == [
        B + "kubeletconfig.cpuManagerPolicyOptions", None]
    assert config.load(fc).output.baseline["kubeletconfig"]["cpuManagerPolicy"] == "static"


def test_put_step_follows_the_kubelet_release():
    """--config-dir: none before 1.28, alpha with KUBELET_CONFIG_DROPIN_DIR_ALPHA on
    1.28-1.29, beta 1.30, GA 1.35 (KEP-3983; kubelet-config-file/#kubelet-conf-d)."""
    dropin = ("Put kubelet-config.yaml in place as a *.conf file in the kubelet's --config-dir "
              "drop-in directory (read after --config, files in alphanumeric order; maps merge "
              "per key, lists replace), or as a kubeadm kubeletconfiguration patch")
    assert bl.put_step((1, 27)) == (
        "Put kubelet-config.yaml in place: merge its fields into the file the kubelet's "
        "--config names (kubelet 1.27 has no --config-dir, which came in 1.28: "
        "https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/"
        "#kubelet-conf-d), or as a kubeadm kubeletconfiguration patch")
    for minor in (28, 29):
        assert bl.put_step((1, minor)) == (
            f"{dropin}. Kubelet 1.{minor} reads --config-dir only with the environment "
            f"variable KUBELET_CONFIG_DROPIN_DIR_ALPHA set on the kubelet process (any value, "
            f"e.g. in a systemd drop-in: Environment=KUBELET_CONFIG_DROPIN_DIR_ALPHA=on); "
            f"without it the kubelet refuses to start (https://kubernetes.io/docs/tasks/"
            f"administer-cluster/kubelet-config-file/#kubelet-conf-d)")
    for minor in range(30, 38):
        assert bl.put_step((1, minor)) == dropin
    for version in upstream.VERSIONS:      # every supported release: the steps carry it
        assert bl.put_step(version) in bl.rollout_steps(None, version)
        assert bl.put_step(version) in bl.rollout_steps([], version)
