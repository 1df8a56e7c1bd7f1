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
VERSIONS = [(1, minor) for minor in range(29, 37)]
P = "spec.nodePools[0].kubelet."


def build(kubelet=None, version=(1, 34), baseline=None, **pool):
    spec = {"nodePools": [{"name": "inference", **pool, "kubelet": kubelet or {}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    return node_plan.build(cfg.nodePools[0], version, REF, baseline=baseline)


def errors(results):
    return [(r.path, r.message) for r in results if r.severity == ERROR]


# --- part 1: the generated data spot-checked against known upstream facts ----------------

def test_every_supported_version_has_data():
    for v in VERSIONS:
        data = upstream.load(v)
        assert data.version == v
        assert "cpuManagerPolicy" in data.fields and "CPUManagerPolicyAlphaOptions" in data.gates


def test_data_a_removed_gate():
    # ExperimentalHostUserNamespaceDefaulting was removed in 1.30 (kube_features.go).
    assert "ExperimentalHostUserNamespaceDefaulting" in upstream.load((1, 29)).gates
    assert upstream.load((1, 30)).removed_gates["ExperimentalHostUserNamespaceDefaulting"] \
        == "1.30"
    assert upstream.load((1, 36)).removed_gates["ExperimentalHostUserNamespaceDefaulting"] \
        == "1.30"


def test_data_a_gate_locked_to_its_default():
    # MemoryManager: beta (on) through 1.31, GA and locked from 1.32.
    assert upstream.load((1, 31)).gates["MemoryManager"] == {
        "stage": "BETA", "default": True, "locked": False}
    assert upstream.load((1, 32)).gates["MemoryManager"] == {
        "stage": "GA", "default": True, "locked": True}
    # CPUManagerPolicyOptions: GA and locked from 1.33.
    assert upstream.load((1, 32)).gates["CPUManagerPolicyOptions"]["locked"] is False
    assert upstream.load((1, 33)).gates["CPUManagerPolicyOptions"] == {
        "stage": "GA", "default": True, "locked": True}


def test_data_gate_stage_and_default_per_version():
    assert upstream.load((1, 32)).gate_default("DisableCPUQuotaWithExclusiveCPUs") is None
    assert upstream.load((1, 33)).gates["DisableCPUQuotaWithExclusiveCPUs"] == {
        "stage": "BETA", "default": True, "locked": False}
    assert upstream.load((1, 34)).gates["CustomCPUCFSQuotaPeriod"]["stage"] == "ALPHA"
    assert upstream.load((1, 34)).gates["CPUManagerPolicyBetaOptions"]["default"] is True
    # component-base and client-go gates the kubelet registers
    assert upstream.load((1, 30)).gates["LoggingBetaOptions"]["stage"] == "BETA"
    assert upstream.load((1, 30)).gates["WatchListClient"]["stage"] == "BETA"


def test_data_1_36_gates_are_from_the_1_36_source():
    # kubernetes v1.36.2 pkg/features/kube_features.go (docs/kubelet-data.md, "The committed
    # data and where it came from"): exact, so an unknown gate is an error as on 1.35
    data = upstream.load((1, 36))
    assert data.gates_exact is True and "pkg/features of kubernetes v1.36.2" in data.source
    # new in 1.36: ReloadKubeletClientCAFile {1.36, Default: true, Beta}
    assert "ReloadKubeletClientCAFile" not in upstream.load((1, 35)).gates
    assert data.gates["ReloadKubeletClientCAFile"] == {
        "stage": "BETA", "default": True, "locked": False}
    # removed in 1.36: MemoryManager (GA and locked since 1.32)
    assert upstream.load((1, 35)).gates["MemoryManager"]["locked"] is True
    assert "MemoryManager" not in data.gates and data.removed_gates["MemoryManager"] == "1.36"
    # changed in 1.36: CustomCPUCFSQuotaPeriod alpha (off) -> GA (on), KubeletPSI locked
    assert data.gates["CustomCPUCFSQuotaPeriod"] == {
        "stage": "GA", "default": True, "locked": False}
    assert data.gates["KubeletPSI"] == {"stage": "GA", "default": True, "locked": True}
    # the policy-option gates keep their 1.35 state
    assert (data.gates["CPUManagerPolicyBetaOptions"], data.gates["CPUManagerPolicyAlphaOptions"]) \
        == ({"stage": "BETA", "default": True, "locked": False},
            {"stage": "ALPHA", "default": False, "locked": False})


def test_a_gate_removed_in_1_36_is_an_error_on_1_36_only():
    gates = {"featureGates": {"MemoryManager": True, "SomeGateNewIn136": True}}
    assert [(f.severity, f.field, f.message) for f in kubelet_check.check(gates, (1, 36))] == [
        (ERROR, "featureGates.MemoryManager",
         "feature gate MemoryManager was removed in Kubernetes 1.36: the kubelet of 1.36 "
         "refuses to start (unrecognized feature gate); remove it "
         "(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/)"),
        (ERROR, "featureGates.SomeGateNewIn136",
         "feature gate SomeGateNewIn136 is not a feature gate of the Kubernetes 1.36 kubelet: "
         "the kubelet of 1.36 refuses to start (unrecognized feature gate); remove it "
         "(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/)")]
    assert kubelet_check.check({"featureGates": {"MemoryManager": True}}, (1, 35)) == []


def test_data_field_types():
    data = upstream.load((1, 34))
    assert data.fields["maxPods"] == {"go": "int32", "type": "int32"}
    assert data.fields["podPidsLimit"] == {"go": "*int64", "type": "int64"}
    assert data.fields["featureGates"]["type"] == "bool-map"
    assert data.fields["cpuManagerReconcilePeriod"]["type"] == "duration"
    assert data.fields["reservedMemory"]["items"]["fields"]["limits"]["type"] == "quantity-map"
    assert data.fields["memorySwap"]["fields"]["swapBehavior"]["type"] == "string"


def test_data_field_added_in_a_version():
    assert not upstream.has_field("mergeDefaultEvictionSettings", (1, 32))
    assert upstream.has_field("mergeDefaultEvictionSettings", (1, 33))
    assert upstream.field_since("singleProcessOOMKill", (1, 29)) == (1, 32)
    assert upstream.field_since("failCgroupV1", (1, 36)) == (1, 31)
    assert fields.BY_NAME["failCgroupV1"].since == (1, 31)
    assert fields.BY_NAME["cpuManagerPolicy"].since is None


def test_data_loads_only_the_target_version():
    upstream.load.cache_clear()
    upstream.load((1, 33))
    assert upstream.load.cache_info().currsize == 1


def test_versions_outside_the_data_use_the_nearest():
    assert upstream.load((1, 27)).version == (1, 29)
    assert upstream.load((1, 40)).version == (1, 36)


# --- part 3: evictionHard keeps the kubelet's defaults ------------------------------------

@pytest.mark.parametrize("version,keys", [
    ((1, 29), ["memory.available", "nodefs.available", "nodefs.inodesFree",
               "imagefs.available"]),
    ((1, 30), ["memory.available", "nodefs.available", "nodefs.inodesFree",
               "imagefs.available", "imagefs.inodesFree"]),
    ((1, 36), ["memory.available", "nodefs.available", "nodefs.inodesFree",
               "imagefs.available", "imagefs.inodesFree"]),
])
def test_eviction_hard_defaults_per_version(version, keys):
    plan, results = build({"evictionHard": {"memory.available": "300Mi"}}, version)
    assert errors(results) == []
    assert list(plan.kubelet["evictionHard"]) == keys
    assert plan.kubelet["evictionHard"]["memory.available"] == "300Mi"
    assert plan.kubelet["evictionHard"]["nodefs.inodesFree"] == "5%"
    assert upstream.eviction_hard_default(version) == {
        **dict.fromkeys(keys), **plan.kubelet["evictionHard"], "memory.available": "100Mi"}


def test_eviction_hard_default_comes_from_the_data():
    assert fields.BY_NAME["evictionHard"].default_for((1, 29)) == {
        "memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
        "imagefs.available": "15%"}
    assert fields.BY_NAME["evictionHard"].default_for((1, 35))["imagefs.inodesFree"] == "5%"


# --- part 2: everything emitted is checked ------------------------------------------------

def test_unknown_gate_is_an_error_with_did_you_mean():
    _, results = build({"extra": {"featureGates": {"KubeletTracng": True}}})
    assert errors(results) == [(P + "extra.featureGates.KubeletTracng",
                                "feature gate KubeletTracng is not a feature gate of the "
                                "Kubernetes 1.34 kubelet; did you mean KubeletTracing?: the "
                                "kubelet of 1.34 refuses to start (unrecognized feature "
                                "gate); remove it (https://kubernetes.io/docs/reference/"
                                "command-line-tools-reference/feature-gates/)")]


def test_removed_gate_is_an_error_naming_the_release():
    _, results = build({"extra": {"featureGates": {"CSIMigrationRBD": True}}}, (1, 33))
    assert errors(results) == [(P + "extra.featureGates.CSIMigrationRBD",
                                "feature gate CSIMigrationRBD was removed in Kubernetes 1.31: "
                                "the kubelet of 1.33 refuses to start (unrecognized feature "
                                "gate); remove it (https://kubernetes.io/docs/reference/"
                                "command-line-tools-reference/feature-gates/)")]
    _, results = build({"extra": {"featureGates": {"CSIMigrationRBD": True}}}, (1, 30))
    assert errors(results) == []


def test_gate_with_a_string_value_is_an_error():
    _, results = build({"extra": {"featureGates": {"EventedPLEG": "true"}}})
    assert errors(results) == [(P + "extra.featureGates.EventedPLEG",
                                "feature gate EventedPLEG must be true or false, found 'true': "
                                "the kubelet of Kubernetes 1.34 cannot decode featureGates and "
                                "refuses to start; write EventedPLEG: true or EventedPLEG: "
                                "false")]


def test_locked_gate_set_against_its_default_is_an_error():
    _, results = build({"extra": {"featureGates": {"MemoryManager": False}}}, (1, 32))
    assert errors(results) == [(P + "extra.featureGates.MemoryManager",
                                "feature gate MemoryManager is GA and locked to true in "
                                "Kubernetes 1.32: the kubelet refuses to start with "
                                "MemoryManager: false; remove it")]
    _, results = build({"extra": {"featureGates": {"MemoryManager": False}}}, (1, 31))
    assert errors(results) == []


def test_beta_option_with_its_gate_off_is_an_error():
    _, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-numa": "true"},
                        "extra": {"featureGates": {"CPUManagerPolicyBetaOptions": False}}},
                       (1, 34))
    assert errors(results) == [(P + "extra.featureGates.CPUManagerPolicyBetaOptions",
                                "cpuManagerPolicyOptions distribute-cpus-across-numa is beta "
                                "in Kubernetes 1.34 and needs the CPUManagerPolicyBetaOptions "
                                "feature gate, which is off: the kubelet refuses to start; "
                                "set featureGates.CPUManagerPolicyBetaOptions: true or remove "
                                "the option")]


def test_beta_option_gate_off_in_the_baseline_points_at_the_baseline():
    base = {"featureGates": {"CPUManagerPolicyBetaOptions": False}}
    _, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-numa": "true"}},
                       (1, 34), baseline=base)
    assert [p for p, _ in errors(results)] == [
        "spec.output.baseline.featureGates.CPUManagerPolicyBetaOptions"]


def test_soft_eviction_without_grace_period_is_an_error():
    _, results = build({"extra": {"evictionSoft": {"memory.available": "1Gi"}}})
    assert errors(results) == [(P + "extra.evictionSoft.memory.available",
                                "evictionSoft sets memory.available without "
                                "evictionSoftGracePeriod.memory.available: the kubelet of "
                                "Kubernetes 1.34 refuses to start (grace period must be "
                                "specified for the soft eviction threshold); add "
                                "evictionSoftGracePeriod.memory.available, e.g. \"1m30s\"")]


def test_grace_period_without_soft_threshold_is_a_warning():
    _, results = build({"extra": {"evictionSoftGracePeriod": {"memory.available": "1m"}}})
    assert [(r.severity, r.path, r.message) for r in results] == [
        (WARNING, P + "extra.evictionSoftGracePeriod.memory.available",
         "evictionSoftGracePeriod sets memory.available without an evictionSoft threshold for "
         "it: the kubelet of Kubernetes 1.34 ignores the grace period; add "
         "evictionSoft.memory.available or remove it")]


def test_wrong_type_in_extra_is_an_error():
    _, results = build({"extra": {"maxPods": "lots"}})
    assert errors(results) == [(P + "extra.maxPods",
                                "maxPods must be a whole number (int32), found 'lots': the "
                                "kubelet of Kubernetes 1.34 cannot decode it and refuses to "
                                "start")]


def test_misspelled_field_in_extra_is_an_error_with_did_you_mean():
    _, results = build({"extra": {"maxPod": 200}})
    assert errors(results) == [(P + "extra.maxPod",
                                "maxPod is not a KubeletConfiguration field in Kubernetes "
                                "1.34; did you mean maxPods? (the kubelet ignores unknown "
                                "fields, so the setting has no effect; https://kubernetes.io/"
                                "docs/reference/config-api/kubelet-config.v1beta1/)")]


def test_field_added_later_is_an_error_naming_the_release():
    _, results = build({"extra": {"mergeDefaultEvictionSettings": True}}, (1, 32))
    assert errors(results) == [(P + "extra.mergeDefaultEvictionSettings",
                                "mergeDefaultEvictionSettings does not exist in Kubernetes "
                                "1.32: the field was added in 1.33; remove it or raise "
                                "kubernetesVersion")]


def test_wrong_type_in_the_baseline_is_an_error_at_the_baseline():
    _, results = build({}, (1, 34), baseline={"maxPods": "lots"})
    assert [p for p, _ in errors(results)] == ["spec.output.baseline.maxPods"]


def test_unknown_field_only_in_the_baseline_is_a_warning():
    _, results = build({}, (1, 32), baseline={"mergeDefaultEvictionSettings": False})
    assert errors(results) == []
    assert [(r.severity, r.path) for r in results if "mergeDefault" in r.path] == [
        (WARNING, "spec.output.baseline.mergeDefaultEvictionSettings")]


def test_reservations_exceeding_the_node_memory_are_an_error():
    _, results = build({"kubeReserved": {"memory": "40Gi"}, "systemReserved": {"memory": "30Gi"}},
                       topology={"sockets": 1, "coresPerSocket": 16, "threadsPerCore": 2,
                                 "memory": "64Gi"})
    assert errors(results) == [(P + "kubeReserved.memory",
                                "kubeReserved.memory + systemReserved.memory + "
                                "evictionHard[memory.available] is 75266785280 bytes, more "
                                "than the node's memory (68719476736 bytes): the kubelet of "
                                "Kubernetes 1.34 refuses to start (Expected capacity >= "
                                "reservation); lower the reservations")]


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
                  "imageGCHighThresholdPercent": 80, "containerLogMaxSize": "50Mi",
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
@pytest.mark.parametrize("version", [(1, 29), (1, 31), (1, 32), (1, 33), (1, 35), (1, 36)])
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
        configs = _experimental(objs)
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
                                 "cpuManagerPolicyy": "static"}, (1, 34))
    assert [(f.severity, f.field) for f in found] == [(ERROR, "maxPods"),
                                                      (ERROR, "cpuManagerPolicyy")]


def test_unknown_eviction_signal_is_an_error_with_did_you_mean():
    found = kubelet_check.check({"evictionHard": {"memory.availble": "1Gi"}}, (1, 33))
    assert found == [kubelet_check.Finding(
        ERROR, "evictionHard.memory.availble",
        "evictionHard: memory.availble is not an eviction signal; did you mean "
        "memory.available?: the kubelet of Kubernetes 1.33 refuses to start (unsupported "
        "eviction signal; https://kubernetes.io/docs/concepts/scheduling-eviction/"
        "node-pressure-eviction/)")]


def test_cpu_reservations_exceeding_the_node_are_an_error_unless_reserved_cpus_set():
    config = {"kubeReserved": {"cpu": "40"}, "systemReserved": {"cpu": "30"}}
    assert [f.field for f in kubelet_check.check(config, (1, 34), node_cpus=64)] == [
        "kubeReserved.cpu"]
    assert kubelet_check.check({**config, "reservedSystemCPUs": "0-1"}, (1, 34),
                               node_cpus=64) == []


def test_nested_field_types_are_checked():
    found = kubelet_check.check({"authentication": {"webhook": {"cacheTTL": "2 minutes"},
                                                    "anonymus": {"enabled": False}}}, (1, 34))
    assert [(f.severity, f.field, f.unknown) for f in found] == [
        (ERROR, "authentication.webhook.cacheTTL", False),
        (ERROR, "authentication.anonymus", True)]
    assert "did you mean anonymous?" in found[1].message


CONFIGZ = json.loads((__import__("pathlib").Path(__file__).parent / "fixtures"
                      / "configz-1.34.json").read_text())


def test_a_full_configz_baseline_passes_on_its_version():
    """Every field a 1.34 kubelet reports in configz has the generated type (named string
    types such as KubeletAuthorizationMode included)."""
    assert kubelet_check.check(CONFIGZ["kubeletconfig"], (1, 34)) == []
    plan, results = build({}, (1, 34), baseline=CONFIGZ)
    assert errors(results) == []
    assert plan.merged["authorization"]["mode"] == "Webhook"


def test_a_newer_configz_baseline_on_an_older_target_warns_per_unknown_field():
    _, results = build({}, (1, 32), baseline=CONFIGZ)
    assert errors(results) == []
    assert sorted(r.path for r in results if r.severity == WARNING
                  and "the field was added in 1.33" in r.message) == [
        "spec.output.baseline.kubeletconfig.imagePullCredentialsVerificationPolicy",
        "spec.output.baseline.kubeletconfig.mergeDefaultEvictionSettings"]


def test_option_maturity_table_agrees_with_the_generated_policy_options():
    """krm_fn.node.options (hand-kept for every version) against policy_options.go of the
    versions whose source the data was generated with."""
    from krm_fn.node import options
    checked = 0
    for v in VERSIONS:
        generated = upstream.load(v).policy_options
        for name in options.CPU_OPTIONS:
            if "cpuManagerPolicyOptions" in generated and v >= (1, 31):
                assert generated["cpuManagerPolicyOptions"].get(name) == \
                    options.maturity(name, v), (v, name)
                checked += 1
        for name in options.TOPOLOGY_OPTIONS:
            if "topologyManagerPolicyOptions" in generated:
                assert generated["topologyManagerPolicyOptions"].get(name) == \
                    options.topology_maturity(name, v), (v, name)
                checked += 1
        if "cpuManagerPolicyOptions" in generated:
            assert set(generated["cpuManagerPolicyOptions"]) == {
                n for n, added in options.ADDED.items() if added <= v}, v
    assert checked >= 14


def test_unknown_gate_outside_the_generated_versions_is_a_warning():
    found = kubelet_check.check({"featureGates": {"SomeFutureGate": True}}, (1, 38))
    assert [(f.severity, f.field) for f in found] == [(WARNING, "featureGates.SomeFutureGate")]
    assert found[0].message.endswith("(krm-fn's data covers Kubernetes 1.29-1.36; checked "
                                     "as 1.36)")
    # inside the range an unknown gate is an error (1.36 too: test_a_gate_removed_in_1_36_...)
    found = kubelet_check.check({"featureGates": {"SomeFutureGate": True}}, (1, 35))
    assert [(f.severity, f.field) for f in found] == [(ERROR, "featureGates.SomeFutureGate")]


def test_each_gate_finding_points_at_where_the_gate_came_from():
    _, results = build({"extra": {"featureGates": {"EventedPLEG": "yes"}}}, (1, 34),
                       baseline={"featureGates": {"DynamicKubeletConfig": True}})
    assert sorted(p for p, _ in errors(results)) == [
        P + "extra.featureGates.EventedPLEG",
        "spec.output.baseline.featureGates.DynamicKubeletConfig"]
