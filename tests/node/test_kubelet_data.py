"""Issue #13 parts 1-3: upstream kubelet facts as generated data, the check of every emitted
KubeletConfiguration against them, and evictionHard written with the version's defaults."""
import json

import jsonpatch
import pytest
import yaml

from krm_fn import config
from krm_fn.node import fields, kubelet_check, upstream
from krm_fn.node import plan as node_plan
from krm_fn.node.formats import FORMATS, RenderContext, render_with_results
from krm_fn.results import ERROR, WARNING, Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")
VERSIONS = list(upstream.VERSIONS)
P = "spec.nodePools[0].kubelet."


def build(kubelet=None, version=(1, 35), baseline=None, **pool):
    spec = {"nodePools": [{"name": "inference", **pool, "kubelet": kubelet or {}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    return node_plan.build(cfg.nodePools[0], version, REF, baseline=baseline)


def errors(results):
    return [(r.path, r.message) for r in results if r.severity == ERROR]


# --- part 1: the generated data spot-checked against known upstream facts ----------------

def test_the_supported_versions_are_the_three_upstream_maintains():
    """The data modules present are the supported minors: three consecutive ones, as
    upstream maintains the three most recent minor releases (https://kubernetes.io/releases/;
    docs/kubelet-data.md: adding a minor drops the oldest)."""
    assert VERSIONS == [(1, 35), (1, 36), (1, 37)]
    assert (upstream.FIRST, upstream.LAST) == (VERSIONS[0], VERSIONS[-1])
    assert VERSIONS == [(1, m) for m in range(VERSIONS[0][1], VERSIONS[0][1] + 3)]


def test_every_supported_version_has_data():
    for v in VERSIONS:
        data = upstream.load(v)
        assert data.version == v
        assert "cpuManagerPolicy" in data.fields and "CPUManagerPolicyAlphaOptions" in data.gates


@pytest.mark.parametrize("version,release", [((1, 35), "v1.35.4"), ((1, 36), "v1.36.3"),
                                             ((1, 37), "v1.37.2")])
def test_each_minor_is_generated_from_one_release_of_the_go_modules(version, release):
    """Every file is generated with --module from one release (docs/kubelet-data.md): the
    k8s.io/kubernetes module and the staging modules of the same patch release, all gates
    from that release's own source."""
    data = upstream.load(version)
    staging = "v0." + release[3:]
    assert data.source == (f"kubernetes {release}: Go modules k8s.io/kubernetes {release} and "
                           f"k8s.io/apiextensions-apiserver, k8s.io/apiserver, "
                           f"k8s.io/client-go, k8s.io/component-base, "
                           f"k8s.io/controller-manager, k8s.io/kubelet {staging}")
    assert data.gates_exact is True


def test_data_a_removed_gate():
    # MemoryManager was removed in 1.36 and SidecarContainers in 1.37 (kube_features.go);
    # removals are found from one supported minor to the next.
    assert upstream.load((1, 35)).gates["MemoryManager"]["locked"] is True
    assert upstream.load((1, 35)).removed_gates == {}
    assert upstream.load((1, 36)).removed_gates["MemoryManager"] == "1.36"
    assert upstream.load((1, 36)).gates["SidecarContainers"] == {
        "stage": "GA", "default": True, "locked": True}
    assert upstream.load((1, 37)).removed_gates["SidecarContainers"] == "1.37"
    assert upstream.load((1, 37)).removed_gates["MemoryManager"] == "1.36"


def test_data_a_gate_locked_to_its_default():
    # KubeletPSI: beta (on) in 1.35, GA and locked from 1.36.
    assert upstream.load((1, 35)).gates["KubeletPSI"] == {
        "stage": "BETA", "default": True, "locked": False}
    assert upstream.load((1, 36)).gates["KubeletPSI"] == {
        "stage": "GA", "default": True, "locked": True}
    # DisableCPUQuotaWithExclusiveCPUs: deprecated in 1.36, locked to true in 1.37.
    assert upstream.load((1, 36)).gates["DisableCPUQuotaWithExclusiveCPUs"]["locked"] is False
    assert upstream.load((1, 37)).gates["DisableCPUQuotaWithExclusiveCPUs"] == {
        "stage": "DEPRECATED", "default": True, "locked": True}


def test_data_gate_stage_and_default_per_version():
    assert upstream.load((1, 35)).gates["DisableCPUQuotaWithExclusiveCPUs"] == {
        "stage": "BETA", "default": True, "locked": False}
    assert upstream.load((1, 35)).gates["CustomCPUCFSQuotaPeriod"]["stage"] == "ALPHA"
    assert upstream.load((1, 36)).gates["CustomCPUCFSQuotaPeriod"] == {
        "stage": "GA", "default": True, "locked": False}
    assert upstream.load((1, 35)).gates["CPUManagerPolicyBetaOptions"]["default"] is True
    # MemoryQoS: alpha (off) through 1.36, beta and on by default in 1.37
    assert upstream.load((1, 36)).gate_text("MemoryQoS") == \
        "alpha, off by default in Kubernetes 1.36"
    assert upstream.load((1, 37)).gate_text("MemoryQoS") == \
        "beta, on by default in Kubernetes 1.37"
    # component-base and client-go gates the kubelet registers
    assert upstream.load((1, 35)).gates["LoggingBetaOptions"]["stage"] == "BETA"
    assert upstream.load((1, 35)).gates["WatchListClient"]["stage"] == "BETA"
    # the featuregate package's own gates (component-base/featuregate/feature_gate.go)
    assert (upstream.load((1, 37)).gates["AllAlpha"], upstream.load((1, 37)).gates["AllBeta"]) \
        == ({"stage": "ALPHA", "default": False, "locked": False},
            {"stage": "BETA", "default": False, "locked": False})


def test_data_gates_new_and_changed_in_1_36_and_1_37():
    # new in 1.36: ReloadKubeletClientCAFile {1.36, Default: true, Beta}
    assert "ReloadKubeletClientCAFile" not in upstream.load((1, 35)).gates
    assert upstream.load((1, 36)).gates["ReloadKubeletClientCAFile"] == {
        "stage": "BETA", "default": True, "locked": False}
    # PodLevelResourceManagers: new in 1.36 (alpha), beta and still off in 1.37
    assert "PodLevelResourceManagers" not in upstream.load((1, 35)).gates
    assert upstream.load((1, 36)).gate_text("PodLevelResourceManagers") == \
        "alpha, off by default in Kubernetes 1.36"
    assert upstream.load((1, 37)).gate_text("PodLevelResourceManagers") == \
        "beta, off by default in Kubernetes 1.37"
    # the policy-option gates are the same in every supported version
    for v in VERSIONS:
        data = upstream.load(v)
        assert (data.gates["CPUManagerPolicyBetaOptions"],
                data.gates["CPUManagerPolicyAlphaOptions"]) == (
            {"stage": "BETA", "default": True, "locked": False},
            {"stage": "ALPHA", "default": False, "locked": False})


def test_a_gate_removed_in_1_36_is_an_error_on_1_36_only():
    gates = {"featureGates": {"MemoryManager": True, "SomeGateNewIn136": True}}
    assert [(f.severity, f.field, f.message) for f in kubelet_check.check(gates, (1, 36))] == [
        (ERROR, "featureGates.MemoryManager",
         "feature gate MemoryManager was removed in Kubernetes 1.36: the kubelet of 1.36 "
         "refuses to start: \"failed to merge global and in-flight KubeletConfiguration while "
         "setting defaults, error: unrecognized feature gate: MemoryManager\" "
         "(kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go); remove it "
         "(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/)"),
        (ERROR, "featureGates.SomeGateNewIn136",
         "feature gate SomeGateNewIn136 is not a feature gate of the Kubernetes 1.36 kubelet: "
         "the kubelet of 1.36 refuses to start: \"failed to merge global and in-flight "
         "KubeletConfiguration while setting defaults, error: unrecognized feature gate: "
         "SomeGateNewIn136\" (kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/"
         "defaults.go); remove it "
         "(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/)")]
    assert kubelet_check.check({"featureGates": {"MemoryManager": True}}, (1, 35)) == []


def test_sidecar_containers_removed_in_1_37_is_an_error_there_only():
    found = kubelet_check.check({"featureGates": {"SidecarContainers": True}}, (1, 37))
    assert [(f.severity, f.message) for f in found] == [
        (ERROR, "feature gate SidecarContainers was removed in Kubernetes 1.37: the kubelet "
                "of 1.37 refuses to start: \"failed to merge global and in-flight "
                "KubeletConfiguration while setting defaults, error: unrecognized feature "
                "gate: SidecarContainers\" (kubernetes/kubernetes "
                "pkg/kubelet/apis/config/v1beta1/defaults.go); remove it "
                "(https://kubernetes.io/docs/reference/command-line-tools-reference/"
                "feature-gates/)")]
    assert kubelet_check.check({"featureGates": {"SidecarContainers": True}}, (1, 36)) == []


def test_data_field_types():
    data = upstream.load((1, 35))
    assert data.fields["maxPods"] == {"go": "int32", "type": "int32"}
    assert data.fields["podPidsLimit"] == {"go": "*int64", "type": "int64"}
    assert data.fields["featureGates"]["type"] == "bool-map"
    assert data.fields["cpuManagerReconcilePeriod"]["type"] == "duration"
    assert data.fields["reservedMemory"]["items"]["fields"]["limits"]["type"] == "quantity-map"
    assert data.fields["memorySwap"]["fields"]["swapBehavior"]["type"] == "string"


def test_data_field_added_in_a_version():
    # types.go: memoryReservationPolicy and tlsCurvePreferences from 1.36, defaultPodSysctls
    # from 1.37; fields of the oldest supported minor have no `since`
    assert not upstream.has_field("defaultPodSysctls", (1, 36))
    assert upstream.has_field("defaultPodSysctls", (1, 37))
    assert upstream.field_since("defaultPodSysctls", (1, 35)) == (1, 37)
    assert upstream.field_since("memoryReservationPolicy", (1, 35)) == (1, 36)
    assert upstream.field_since("failCgroupV1", (1, 37)) == (1, 35)
    assert upstream.field_since("noSuchField", (1, 35)) is None


def test_data_loads_only_the_target_version():
    upstream.load.cache_clear()
    upstream.load((1, 36))
    assert upstream.load.cache_info().currsize == 1


@pytest.mark.parametrize("version", [(1, 34), (1, 38), (1, 29)])
def test_a_version_without_data_is_refused_not_taken_from_the_nearest(version):
    """Nothing is clamped: the config refuses an unsupported kubernetesVersion, and the
    data of one minor is never used for another."""
    with pytest.raises(ValueError, match=f"no kubelet data for Kubernetes 1.{version[1]} "
                                         r"\(krm-fn supports 1.35, 1.36, 1.37\)"):
        upstream.load(version)


# --- part 3: evictionHard keeps the kubelet's defaults ------------------------------------

FIVE = ["memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
        "imagefs.inodesFree"]


@pytest.mark.parametrize("version", VERSIONS)
def test_eviction_hard_defaults_per_version(version):
    # pkg/kubelet/eviction/defaults_linux.go of each supported release: five signals
    plan, results = build({"evictionHard": {"memory.available": "300Mi"}}, version)
    assert errors(results) == []
    assert list(plan.kubelet["evictionHard"]) == FIVE
    assert plan.kubelet["evictionHard"]["memory.available"] == "300Mi"
    assert plan.kubelet["evictionHard"]["nodefs.inodesFree"] == "5%"
    assert upstream.eviction_hard_default(version) == {
        **dict.fromkeys(FIVE), **plan.kubelet["evictionHard"], "memory.available": "100Mi"}


def test_eviction_hard_default_comes_from_the_data():
    for v in VERSIONS:
        assert fields.BY_NAME["evictionHard"].default_for(v) == {
            "memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
            "imagefs.available": "15%", "imagefs.inodesFree": "5%"}


# --- part 2: everything emitted is checked ------------------------------------------------

def test_unknown_gate_is_an_error_with_did_you_mean():
    _, results = build({"extra": {"featureGates": {"KubeletTracng": True}}})
    assert errors(results) == [(P + "extra.featureGates.KubeletTracng",
                                "feature gate KubeletTracng is not a feature gate of the "
                                "Kubernetes 1.35 kubelet; did you mean KubeletTracing?: the "
                                "kubelet of 1.35 refuses to start: \"failed to merge global "
                                "and in-flight KubeletConfiguration while setting defaults, "
                                "error: unrecognized feature gate: KubeletTracng\" "
                                "(kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/"
                                "defaults.go); remove it (https://kubernetes.io/docs/reference/"
                                "command-line-tools-reference/feature-gates/)")]


def test_removed_gate_is_an_error_naming_the_release():
    _, results = build({"extra": {"featureGates": {"MemoryManager": True}}}, (1, 37))
    assert errors(results) == [(P + "extra.featureGates.MemoryManager",
                                "feature gate MemoryManager was removed in Kubernetes 1.36: "
                                "the kubelet of 1.37 refuses to start: \"failed to merge "
                                "global and in-flight KubeletConfiguration while setting "
                                "defaults, error: unrecognized feature gate: MemoryManager\" "
                                "(kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/"
                                "defaults.go); remove it (https://kubernetes.io/docs/reference/"
                                "command-line-tools-reference/feature-gates/)")]
    _, results = build({"extra": {"featureGates": {"MemoryManager": True}}}, (1, 35))
    assert errors(results) == []


def test_gate_with_a_string_value_is_an_error():
    _, results = build({"extra": {"featureGates": {"EventedPLEG": "true"}}})
    assert errors(results) == [(P + "extra.featureGates.EventedPLEG",
                                "feature gate EventedPLEG must be true or false, found 'true': "
                                "the kubelet of Kubernetes 1.35 cannot decode featureGates and "
                                "refuses to start: \"failed to decode: json: cannot unmarshal "
                                "string into Go struct field KubeletConfiguration.featureGates "
                                "of type bool\" (kubernetes/kubernetes pkg/kubelet/"
                                "kubeletconfig/util/codec/codec.go); write EventedPLEG: true "
                                "or EventedPLEG: "
                                "false")]


def test_locked_gate_set_against_its_default_is_an_error():
    _, results = build({"extra": {"featureGates": {"KubeletPSI": False}}}, (1, 36))
    assert errors(results) == [(P + "extra.featureGates.KubeletPSI",
                                "feature gate KubeletPSI is GA and locked to true in "
                                "Kubernetes 1.36: the kubelet refuses to start with "
                                "KubeletPSI: false: \"failed to merge global and in-flight "
                                "KubeletConfiguration while setting defaults, error: cannot "
                                "set feature gate KubeletPSI to false, feature is locked to "
                                "true\" (kubernetes/kubernetes pkg/kubelet/apis/config/"
                                "v1beta1/defaults.go); remove it")]
    _, results = build({"extra": {"featureGates": {"KubeletPSI": False}}}, (1, 35))
    assert errors(results) == []


def test_beta_option_with_its_gate_off_is_an_error():
    _, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-numa": "true"},
                        "extra": {"featureGates": {"CPUManagerPolicyBetaOptions": False}}},
                       (1, 35))
    assert errors(results) == [(P + "extra.featureGates.CPUManagerPolicyBetaOptions",
                                "cpuManagerPolicyOptions distribute-cpus-across-numa is beta "
                                "in Kubernetes 1.35 and needs the CPUManagerPolicyBetaOptions "
                                "feature gate, which is off: the kubelet refuses to start: "
                                "\"new static policy error: CPU Manager Policy Beta-level "
                                "Options not enabled, but option \"distribute-cpus-across-"
                                "numa\" provided\" (kubernetes/kubernetes pkg/kubelet/cm/"
                                "cpumanager/policy_options.go); "
                                "set featureGates.CPUManagerPolicyBetaOptions: true or remove "
                                "the option")]


def test_beta_option_gate_off_in_the_baseline_points_at_the_baseline():
    base = {"featureGates": {"CPUManagerPolicyBetaOptions": False}}
    _, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-numa": "true"}},
                       (1, 35), baseline=base)
    assert [p for p, _ in errors(results)] == [
        "spec.output.baseline.featureGates.CPUManagerPolicyBetaOptions"]


def test_soft_eviction_without_grace_period_is_an_error():
    _, results = build({"extra": {"evictionSoft": {"memory.available": "1Gi"}}})
    assert errors(results) == [(P + "extra.evictionSoft.memory.available",
                                "evictionSoft sets memory.available without "
                                "evictionSoftGracePeriod.memory.available: the kubelet of "
                                "Kubernetes 1.35 refuses to start: \"grace period must be "
                                "specified for the soft eviction threshold memory.available\" "
                                "(kubernetes/kubernetes pkg/kubelet/eviction/helpers.go); add "
                                "evictionSoftGracePeriod.memory.available, e.g. \"1m30s\"")]


def test_grace_period_without_soft_threshold_is_a_warning():
    _, results = build({"extra": {"evictionSoftGracePeriod": {"memory.available": "1m"}}})
    assert [(r.severity, r.path, r.message) for r in results] == [
        (WARNING, P + "extra.evictionSoftGracePeriod.memory.available",
         "evictionSoftGracePeriod sets memory.available without an evictionSoft threshold for "
         "it: the kubelet of Kubernetes 1.35 ignores the grace period; add "
         "evictionSoft.memory.available or remove it")]


def test_wrong_type_in_extra_is_an_error():
    _, results = build({"extra": {"maxPods": "lots"}})
    assert errors(results) == [(P + "extra.maxPods",
                                "maxPods must be a whole number (int32), found 'lots': the "
                                "kubelet of Kubernetes 1.35 cannot decode it and refuses to "
                                "start: \"failed to decode: json: cannot unmarshal string "
                                "into Go struct field KubeletConfiguration.maxPods of type "
                                "int32\" (kubernetes/kubernetes pkg/kubelet/kubeletconfig/"
                                "util/codec/codec.go)")]


def test_misspelled_field_in_extra_is_an_error_with_did_you_mean():
    _, results = build({"extra": {"maxPod": 200}})
    assert errors(results) == [(P + "extra.maxPod",
                                "maxPod is not a KubeletConfiguration field in Kubernetes "
                                "1.35; did you mean maxPods? (the kubelet ignores unknown "
                                "fields, so the setting has no effect; https://kubernetes.io/"
                                "docs/reference/config-api/kubelet-config.v1beta1/)")]


def test_field_added_later_is_an_error_naming_the_release():
    _, results = build({"extra": {"defaultPodSysctls": {}}}, (1, 36))
    assert errors(results) == [(P + "extra.defaultPodSysctls",
                                "defaultPodSysctls does not exist in Kubernetes "
                                "1.36: the field was added in 1.37; remove it or raise "
                                "kubernetesVersion")]
    _, results = build({"extra": {"defaultPodSysctls": {}}}, (1, 37))
    assert errors(results) == []


def test_wrong_type_in_the_baseline_is_an_error_at_the_baseline():
    _, results = build({}, (1, 35), baseline={"maxPods": "lots"})
    assert [p for p, _ in errors(results)] == ["spec.output.baseline.maxPods"]


def test_unknown_field_only_in_the_baseline_is_a_warning():
    _, results = build({}, (1, 36), baseline={"defaultPodSysctls": {}})
    assert errors(results) == []
    assert [(r.severity, r.path) for r in results if "defaultPodSysctls" in r.path] == [
        (WARNING, "spec.output.baseline.defaultPodSysctls")]


def test_reservations_exceeding_the_node_memory_are_an_error():
    _, results = build({"kubeReserved": {"memory": "40Gi"}, "systemReserved": {"memory": "30Gi"}},
                       topology={"sockets": 1, "coresPerSocket": 16, "threadsPerCore": 2,
                                 "memory": "64Gi"})
    assert errors(results) == [(P + "kubeReserved.memory",
                                "kubeReserved.memory + systemReserved.memory + "
                                "evictionHard[memory.available] is 75266785280 bytes, more "
                                "than the node's memory (68719476736 bytes): the kubelet of "
                                "Kubernetes 1.35 refuses to start: \"invalid Node Allocatable "
                                "configuration. Resource \"memory\" has a reservation of "
                                "{{75266785280 0} {<nil>}  BinarySI} but capacity of "
                                "{{68719476736 0} {<nil>}  BinarySI}. Expected capacity >= "
                                "reservation.\" (kubernetes/kubernetes pkg/kubelet/cm/"
                                "node_container_manager_linux.go); lower the reservations")]


def test_check_is_silent_on_the_default_plan_of_every_version():
    for v in VERSIONS:
        _, results = build({}, v)
        assert errors(results) == [], v


# --- each format's output checked against the generated types -----------------------------

def _kubelet_configs(value):
    """Every mapping with cpuManagerPolicy in `value` (dicts, lists, YAML/JSON strings)."""
    if isinstance(value, dict):
        if "cpuManagerPolicy" in value:
            yield value
        for v in value.values():
            yield from _kubelet_configs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _kubelet_configs(v)
    elif isinstance(value, str) and "cpuManagerPolicy" in value:
        try:
            docs = list(yaml.safe_load_all(value))
        except yaml.YAMLError:
            return
        for d in docs:
            yield from _kubelet_configs(d)


BASELINE = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "cpuManagerPolicy": "none", "maxPods": 110, "clusterDNS": ["10.96.0.10"]}
RICH = {"memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
        "extra": {"evictionSoft": {"memory.available": "1Gi"},
                  "evictionSoftGracePeriod": {"memory.available": "1m30s"},
                  # with the default low threshold (80) the kubelet refuses 80: "must be
                  # less than imageGCHighThresholdPercent" (found by tests/harness)
                  "imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 70,
                  "containerLogMaxSize": "50Mi",
                  "featureGates": {"EventedPLEG": False}}}
# Formats that carry KubeletConfiguration fields under their upstream names (gke and aks
# rename them: their own schemas, tests/node/test_formats.py).
OPEN = ["configmap", "kubelet-config", "kubeadm", "openshift", "eks", "talos", "json6902",
        "performance-profile"]


def _experimental(objs):
    """performance-profile: the KubeletConfiguration fields of the kubeletconfig.experimental
    annotation (the NTO writes the CPU fields itself from the profile)."""
    [profile] = objs
    return [json.loads(profile["metadata"]["annotations"]["kubeletconfig.experimental"])]


@pytest.mark.parametrize("fmt", OPEN)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kubelet", [{}, RICH], ids=["defaults", "rich"])
def test_each_format_output_matches_the_generated_types(fmt, version, kubelet):
    assert set(OPEN) <= set(FORMATS)
    plan, results = build(kubelet, version)
    assert errors(results) == []
    baseline = {"kubeletconfig": BASELINE} if fmt == "json6902" else None
    objs, _ = render_with_results(fmt, plan, RenderContext("kube-system", False, baseline),
                                  REF, 0)
    if fmt == "json6902":
        ops = [json.loads(t) for t in _patches(objs)]
        # the patch applies to the document it was computed from: the configz object,
        # whose wrapper it moves the fields out of
        configs = [jsonpatch.apply_patch(baseline, op) for op in ops]
    elif fmt == "performance-profile":
        # the annotation's fragment with what the Node Tuning Operator sets from the
        # profile's spec (cpuManagerPolicy static, reservedSystemCPUs, the topology policy):
        # the fragment alone would run the none CPU Manager policy with its options
        from tests.harness import kubeletconfigs
        configs = [c for o in objs for _, c in kubeletconfigs.payloads(o)]
    else:
        configs = list(_kubelet_configs(objs))
    assert configs, fmt
    for c in configs:
        if fmt == "kubelet-config":    # the KRM object's metadata, not a kubelet setting
            c = {k: v for k, v in c.items() if k != "metadata"}
        if fmt == "openshift":     # the MCO refuses featureGates; they are left out
            assert "featureGates" not in c
        found = kubelet_check.check(c, version)
        assert found == [], (fmt, version, found)
        assert c["evictionHard"] == {**upstream.eviction_hard_default(version),
                                     **c["evictionHard"]}


def _patches(objs):
    """The JSON patch texts (lists of ops) in the rendered json6902 objects."""
    out = []

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and v.lstrip().startswith("[") and '"op"' in v:
            out.append(v)
    walk(objs)
    return out


def test_the_type_check_fails_on_an_unknown_field_and_a_wrong_type():
    found = kubelet_check.check({"cpuManagerPolicy": "static", "maxPods": "lots",
                                 "cpuManagerPolicyy": "static"}, (1, 35))
    assert [(f.severity, f.field) for f in found] == [(ERROR, "maxPods"),
                                                      (ERROR, "cpuManagerPolicyy")]


def test_unknown_eviction_signal_is_an_error_with_did_you_mean():
    found = kubelet_check.check({"evictionHard": {"memory.availble": "1Gi"}}, (1, 35))
    assert found == [kubelet_check.Finding(
        ERROR, "evictionHard.memory.availble",
        "evictionHard: memory.availble is not an eviction signal; did you mean "
        "memory.available?: the kubelet of Kubernetes 1.35 refuses to start: \"unsupported "
        "eviction signal memory.availble\" (kubernetes/kubernetes pkg/kubelet/eviction/"
        "helpers.go) (https://kubernetes.io/docs/concepts/scheduling-eviction/"
        "node-pressure-eviction/)")]


def test_cpu_reservations_exceeding_the_node_are_an_error_unless_reserved_cpus_set():
    config = {"kubeReserved": {"cpu": "40"}, "systemReserved": {"cpu": "30"}}
    assert [f.field for f in kubelet_check.check(config, (1, 35), node_cpus=64)] == [
        "kubeReserved.cpu"]
    assert kubelet_check.check({**config, "reservedSystemCPUs": "0-1"}, (1, 35),
                               node_cpus=64) == []


def test_nested_field_types_are_checked():
    found = kubelet_check.check({"authentication": {"webhook": {"cacheTTL": "2 minutes"},
                                                    "anonymus": {"enabled": False}}}, (1, 35))
    assert [(f.severity, f.field, f.unknown) for f in found] == [
        (ERROR, "authentication.webhook.cacheTTL", False),
        (ERROR, "authentication.anonymus", True)]
    assert "did you mean anonymous?" in found[1].message


CONFIGZ = json.loads((__import__("pathlib").Path(__file__).parent / "fixtures"
                      / "configz-1.34.json").read_text())


def test_a_full_configz_baseline_passes_on_the_next_version():
    """Every field a 1.34 kubelet reports in configz (the fixture: a node about to be
    upgraded) has the generated type of 1.35 (named string types such as
    KubeletAuthorizationMode included): no field of it was removed."""
    assert kubelet_check.check(CONFIGZ["kubeletconfig"], (1, 35)) == []
    plan, results = build({}, (1, 35), baseline=CONFIGZ)
    assert errors(results) == []
    assert plan.merged["authorization"]["mode"] == "Webhook"


def test_a_newer_configz_baseline_on_an_older_target_warns_per_unknown_field():
    """A baseline from a newer kubelet: its fields the target version lacks are warnings
    (the node's own kubelet wrote them)."""
    newer = {"kubeletconfig": {**CONFIGZ["kubeletconfig"], "defaultPodSysctls": {},
                               "tlsCurvePreferences": []}}
    _, results = build({}, (1, 35), baseline=newer)
    assert errors(results) == []
    assert sorted((r.path, r.message.split(": ", 1)[1]) for r in results
                  if r.severity == WARNING and "the field was added in" in r.message) == [
        ("spec.output.baseline.kubeletconfig.defaultPodSysctls",
         "the field was added in 1.37; remove it or raise kubernetesVersion"),
        ("spec.output.baseline.kubeletconfig.tlsCurvePreferences",
         "the field was added in 1.36; remove it or raise kubernetesVersion")]


def test_option_maturity_table_agrees_with_the_generated_policy_options():
    """krm_fn.node.options (one column per supported minor) against policy_options.go of
    every supported release (each generated module has its policyOptions)."""
    from krm_fn.node import options
    assert all(len(row) == len(VERSIONS) for _, row in options.CPU_OPTIONS.values())
    for v in VERSIONS:
        generated = upstream.load(v).policy_options
        assert generated["cpuManagerPolicyOptions"] == {
            name: options.maturity(name, v) for name in options.CPU_OPTIONS
            if options.maturity(name, v) is not None}, v
        assert generated["topologyManagerPolicyOptions"] == {
            name: options.topology_maturity(name, v) for name in options.TOPOLOGY_OPTIONS
            if options.topology_maturity(name, v) is not None}, v


def test_unknown_gate_is_an_error_on_every_supported_version():
    for v in VERSIONS:
        found = kubelet_check.check({"featureGates": {"SomeFutureGate": True}}, v)
        assert [(f.severity, f.field) for f in found] == [
            (ERROR, "featureGates.SomeFutureGate")], v


def test_each_gate_finding_points_at_where_the_gate_came_from():
    _, results = build({"extra": {"featureGates": {"EventedPLEG": "yes"}}}, (1, 35),
                       baseline={"featureGates": {"DynamicKubeletConfig": True}})
    assert sorted(p for p, _ in errors(results)) == [
        P + "extra.featureGates.EventedPLEG",
        "spec.output.baseline.featureGates.DynamicKubeletConfig"]
