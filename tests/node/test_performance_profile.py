"""Format performance-profile: an OpenShift Node Tuning Operator PerformanceProfile from the
plan (the golden case is tests/testdata/performance-profile/)."""
import json

import pytest

from krm_fn import config
from krm_fn.node import plan as node_plan
from krm_fn.node.formats import RenderContext, performance_profile, render_with_results
from krm_fn.results import ERROR, WARNING, Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")
TYPED = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning"}


def _render(pool: dict, version=(1, 35)):
    cfg = config.load({**TYPED, "spec": {"nodePools": [pool]}})
    plan, _ = node_plan.build(cfg.nodePools[0], version, REF)
    ctx = RenderContext("kube-system", pool=cfg.nodePools[0])
    return render_with_results("performance-profile", plan, ctx, REF, 0)


def test_performance_profile_from_the_default_pool():
    [obj], results = _render({"name": "inference"})
    assert (obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) == (
        "performance.openshift.io/v2", "PerformanceProfile", "inference")
    assert "namespace" not in obj["metadata"]
    assert obj["spec"] == {
        "cpu": {"reserved": "0-1,32-33", "isolated": "2-31,34-63"},
        "machineConfigLabel": {"machineconfiguration.openshift.io/role": "inference"},
        "machineConfigPoolSelector": {
            "pools.operator.machineconfiguration.openshift.io/inference": ""},
        "nodeSelector": {"krm-fn.dev/cpu-pinning": "true"},
        "numa": {"topologyPolicy": "best-effort"},
    }
    snippet = json.loads(obj["metadata"]["annotations"]["kubeletconfig.experimental"])
    assert snippet == {"cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
                       "topologyManagerScope": "pod", "memoryManagerPolicy": "None",
                       "kubeReserved": {"memory": "500Mi"}, "systemReserved": {"memory": "500Mi"},
                       "evictionHard": snippet["evictionHard"], "podPidsLimit": 4096,
                       "failCgroupV1": True}
    assert snippet["evictionHard"]["memory.available"] == "100Mi"
    assert results == []        # krm-fn's default period is the NTO's own 5s


def test_performance_profile_warns_of_a_period_the_nto_overrides():
    [obj], results = _render({"name": "inference",
                              "kubelet": {"cpuManagerReconcilePeriod": "30s"}})
    [r] = results
    assert (r.severity, r.path, r.current) == (
        WARNING, "spec.nodePools[0].kubelet.cpuManagerReconcilePeriod", "30s")
    assert r.message == ("cpuManagerReconcilePeriod 30s is not carried by PerformanceProfile "
                         "inference: the Node Tuning Operator sets 5s in the profile's "
                         "KubeletConfig")


def test_performance_profile_name_hugepages_and_static_memory_override():
    [obj], results = _render({
        "name": "inference", "nodeSelector": {"node-role.kubernetes.io/inference": ""},
        "topology": {"hugepages": {"1Gi": "8Gi", "2Mi": "512Mi"}},
        "kubelet": {"topologyManagerPolicy": "restricted", "cpuManagerReconcilePeriod": "5s"},
        "performanceProfile": {"name": "cpu-inference"}})
    assert obj["metadata"]["name"] == "cpu-inference"
    assert obj["spec"]["hugepages"] == {"defaultHugepagesSize": "2M", "pages": [
        {"size": "2M", "count": 256}, {"size": "1G", "count": 8}]}
    assert obj["spec"]["numa"] == {"topologyPolicy": "restricted"}
    [r] = results
    assert (r.severity, r.path, r.current, r.proposed) == (
        ERROR, "spec.nodePools[0].kubelet.memoryManagerPolicy", "None", "Static")
    assert r.message == (
        "memoryManagerPolicy None would be overridden by PerformanceProfile cpu-inference: "
        "with topologyPolicy restricted the Node Tuning Operator sets Static (reservedMemory "
        "on NUMA node 0 when none is given; https://github.com/openshift/"
        "cluster-node-tuning-operator/blob/master/pkg/performanceprofile/controller/"
        "performanceprofile/components/kubeletconfig/kubeletconfig.go), whose kubelet "
        "admits a Guaranteed pod only where its memory fits the NUMA nodes it is aligned to, "
        "and krm-fn judged admission with None: set kubelet.memoryManagerPolicy: Static, and "
        "krm-fn computes reservedMemory and judges memory admission as that kubelet will")


@pytest.mark.parametrize("policy", ["restricted", "single-numa-node"])
def test_performance_profile_with_static_memory_as_the_nto_sets_it(policy):
    [obj], results = _render({
        "name": "inference", "nodeSelector": {"node-role.kubernetes.io/inference": ""},
        "kubelet": {"topologyManagerPolicy": policy, "memoryManagerPolicy": "Static"}})
    assert results == []
    snippet = json.loads(obj["metadata"]["annotations"]["kubeletconfig.experimental"])
    assert snippet["memoryManagerPolicy"] == "Static" and snippet["reservedMemory"]


def test_performance_profile_refuses_more_than_one_node_selector_label():
    objs, [r] = _render({"name": "inference", "nodeSelector": {"a": "1", "b": "2"}})
    assert objs == []
    assert (r.severity, r.path) == (ERROR, "spec.nodePools[0].nodeSelector")
    assert r.message.startswith("format performance-profile needs exactly one nodeSelector "
                                "label (the PerformanceProfile API refuses 2)")


def test_performance_profile_drops_what_the_mco_refuses():
    [obj], results = _render({"name": "inference", "kubelet": {
        "cpuManagerReconcilePeriod": "5s", "cgroupDriver": "systemd"}})
    snippet = json.loads(obj["metadata"]["annotations"]["kubeletconfig.experimental"])
    assert "cgroupDriver" not in snippet
    [r] = results
    assert (r.severity, r.path, r.current) == (
        WARNING, "spec.nodePools[0].kubelet.cgroupDriver", "systemd")
    assert r.message.startswith("cgroupDriver systemd is removed from PerformanceProfile "
                                "inference: its KubeletConfig goes through the Machine Config "
                                "Operator, which refuses cgroupDriver; ")


@pytest.mark.parametrize("size, spelled", [("1Gi", "1G"), ("2Mi", "2M"), ("64Ki", "64k"),
                                           ("16Gi", "16G"), ("512Mi", "512M")])
def test_page_size_spelling(size, spelled):
    assert performance_profile.page_size(size) == spelled


def test_runtime_class_name():
    cfg = config.load({**TYPED, "spec": {"nodePools": [
        {"name": "a"}, {"name": "b", "nodeSelector": {"pool": "b"},
                        "performanceProfile": {"name": "perf"}}]}})
    assert [performance_profile.runtime_class(performance_profile.profile_name(p))
            for p in cfg.nodePools] == ["performance-a", "performance-perf"]


def test_performance_profile_names_come_from_the_field_table():
    from krm_fn.node import fields
    assert performance_profile.SPEC_FIELDS == {"reservedSystemCPUs": "spec.cpu.reserved",
                                               "topologyManagerPolicy": "spec.numa.topologyPolicy"}
    assert performance_profile.NTO_SETS == {"cpuManagerPolicy": "static",
                                            "cpuManagerReconcilePeriod": "5s"}
    assert performance_profile.REJECTED == fields.refused_by("openshift")
    assert fields.FORMAT_KIND["performance-profile"] == fields.OPEN


@pytest.mark.parametrize("version", [(1, 35), (1, 36), (1, 37)])
def test_every_plan_field_is_carried_or_warned(version):
    cfg = config.load({**TYPED, "spec": {"nodePools": [{"name": "inference", "kubelet": {
        "memoryManagerPolicy": "Static", "cgroupDriver": "systemd",
        "extra": {"maxPods": 250}}}]}})
    plan, _ = node_plan.build(cfg.nodePools[0], version, REF)
    [obj], results = render_with_results("performance-profile", plan,
                                         RenderContext("kube-system", pool=cfg.nodePools[0]),
                                         REF, 0)
    snippet = json.loads(obj["metadata"]["annotations"]["kubeletconfig.experimental"])
    warned = {r.path.rsplit(".", 1)[-1] for r in results}
    body = {k for k in plan.kubelet if k not in ("apiVersion", "kind")}
    carried = (set(snippet) | set(performance_profile.SPEC_FIELDS)
               | set(performance_profile.NTO_SETS) | warned)
    assert body <= carried
    assert "cgroupDriver" in warned and "cgroupDriver" not in snippet
    assert snippet["maxPods"] == 250 and snippet["memoryManagerPolicy"] == "Static"


@pytest.mark.parametrize("options, want", [
    ({}, {"full-pcpus-only": "false"}),
    ({"full-pcpus-only": "true"}, {"full-pcpus-only": "true"}),
])
def test_single_numa_node_keeps_the_plans_full_pcpus_only(options, want):
    # the NTO sets full-pcpus-only "true" for single-numa-node unless the annotation names
    # the option (kubeletconfig.go New): a plan without it writes "false", which the NTO
    # keeps, so the kubelet is the one krm-fn judged (an odd cpu count is admitted)
    [obj], _ = _render({
        "name": "inference", "nodeSelector": {"node-role.kubernetes.io/inference": ""},
        "kubelet": {"topologyManagerPolicy": "single-numa-node", "memoryManagerPolicy": "Static",
                    "cpuManagerPolicyOptions": options}})
    snippet = json.loads(obj["metadata"]["annotations"]["kubeletconfig.experimental"])
    assert snippet["cpuManagerPolicyOptions"] == want
