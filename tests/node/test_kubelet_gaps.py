"""Issue #13 audit: the cases the first pass left without a named test (alpha options and
their gate, a gate the pool's options need set against them, topology option gates, the
eviction defaults that only evictionHard has, a field by version)."""

from krm_fn.node import kubelet_check, upstream
from krm_fn.results import ERROR, WARNING

from tests.node.test_kubelet_data import P, build, errors


def test_alpha_option_without_its_gate_is_an_error():
    # distribute-cpus-across-cores is alpha in every supported version
    # (pkg/kubelet/cm/cpumanager/policy_options.go alphaOptions)
    config = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
              "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}}
    assert [(f.severity, f.field, f.message) for f in kubelet_check.check(config, (1, 35))] == [
        (ERROR, "featureGates.CPUManagerPolicyAlphaOptions",
         "cpuManagerPolicyOptions distribute-cpus-across-cores is alpha in Kubernetes 1.35 "
         "and needs the CPUManagerPolicyAlphaOptions feature gate, which is off: the kubelet "
         "refuses to start: \"new static policy error: CPU Manager Policy Alpha-level "
         "Options not enabled, but option \"distribute-cpus-across-cores\" provided\" "
         "(kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_options.go); set "
         "featureGates.CPUManagerPolicyAlphaOptions: true or remove the option")]
    config["featureGates"] = {"CPUManagerPolicyAlphaOptions": True}
    assert kubelet_check.check(config, (1, 35)) == []


def test_alpha_gate_set_false_against_the_pools_alpha_option_is_an_error():
    _, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"},
                        "extra": {"featureGates": {"CPUManagerPolicyAlphaOptions": False}}},
                       (1, 35))
    assert errors(results) == [(
        P + "extra.featureGates.CPUManagerPolicyAlphaOptions",
        "feature gate CPUManagerPolicyAlphaOptions must be true: the pool's "
        "cpuManagerPolicyOptions / topologyManagerPolicyOptions include an option it "
        "guards, and the kubelet refuses to start with it false; remove "
        "extra.featureGates.CPUManagerPolicyAlphaOptions or the option; the kubelet says: "
        "\"new static policy error: CPU Manager Policy Alpha-level Options not enabled, but "
        "option \"distribute-cpus-across-cores\" provided\" (kubernetes/kubernetes "
        "pkg/kubelet/cm/cpumanager/policy_options.go)")]


def test_alpha_option_gets_its_gate_in_the_emitted_config():
    plan, results = build({"cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}},
                          (1, 35))
    assert errors(results) == []
    assert plan.merged["featureGates"] == {"CPUManagerPolicyAlphaOptions": True}
    assert kubelet_check.check(plan.merged, (1, 35)) == []


def test_topology_beta_option_with_its_gate_off_is_an_error(monkeypatch):
    """Both Topology Manager options are GA in every supported version (KEP-3545,
    KEP-4622; topologymanager/policy_options.go), so the beta group gate matters for none of
    them; a beta option needs it."""
    config = {"topologyManagerPolicy": "best-effort",
              "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
              "featureGates": {"TopologyManagerPolicyBetaOptions": False}}
    assert kubelet_check.check(config, (1, 35)) == []
    from krm_fn.node import options
    monkeypatch.setitem(options.TOPOLOGY_OPTIONS, "new-option", ("KEP-0", None, (1, 36), None))
    config["topologyManagerPolicyOptions"] = {"new-option": "true"}
    assert [f.field for f in kubelet_check.check(config, (1, 36))] == [
        "featureGates.TopologyManagerPolicyBetaOptions"]


def test_a_field_new_in_1_37_exists_from_1_37():
    # staging/src/k8s.io/kubelet/config/v1beta1/types.go: defaultPodSysctls added in 1.37
    assert [v for v in upstream.VERSIONS if upstream.has_field("defaultPodSysctls", v)] == [
        (1, 37)]
    found = kubelet_check.check({"defaultPodSysctls": {}}, (1, 36))
    assert [(f.severity, f.message) for f in found] == [(
        ERROR, "defaultPodSysctls does not exist in Kubernetes 1.36: the field was "
               "added in 1.37; remove it or raise kubernetesVersion")]


def test_emitted_eviction_hard_is_the_full_default_set_of_each_version():
    for v in upstream.VERSIONS:
        plan, results = build({"evictionHard": {"memory.available": "1Gi"}}, v)
        assert errors(results) == []
        expected = dict(upstream.eviction_hard_default(v), **{"memory.available": "1Gi"})
        assert plan.merged["evictionHard"] == expected, v
        assert "imagefs.inodesFree" in expected, v


def test_unknown_gate_on_a_version_whose_gates_are_not_exact(monkeypatch):
    """A version whose pkg/features gates were not generated from its own release
    (`gatesExact: false`, generator --inexact-gates; no committed file is such: each is
    generated from one release's Go modules): an unknown gate without a close match may be
    new there, so it is a warning; a misspelling (did you mean) and a removed gate stay
    errors."""
    load = upstream.load
    exact = load((1, 36))
    inexact = exact._replace(gates_exact=False)
    monkeypatch.setattr(upstream, "load", lambda v: inexact if tuple(v) == (1, 36) else load(v))
    gates = {"SomeGateNewIn136": True, "CPUManagerPolicyBetaOption": True, "MemoryManager": True}
    found = {f.field: f for f in kubelet_check.check({"featureGates": gates}, (1, 36))}
    new = found["featureGates.SomeGateNewIn136"]
    assert (new.severity, new.message) == (WARNING, (
        "feature gate SomeGateNewIn136 is not a feature gate of the Kubernetes 1.36 kubelet as "
        "far as krm-fn knows: its 1.36 gate list was not generated from the 1.36 source ("
        + exact.source + "), so a gate new in 1.36 is missing from it; if "
        "this is not one, the kubelet refuses to start (unrecognized feature gate) "
        "(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/)"))
    assert found["featureGates.CPUManagerPolicyBetaOption"].severity == ERROR
    assert found["featureGates.MemoryManager"].severity == ERROR
    [old] = kubelet_check.check({"featureGates": {"SomeGateNewIn136": True}}, (1, 35))
    assert old.severity == ERROR


def test_data_facts_checked_against_the_release_sources():
    """Facts re-read from the release sources (docs/kubelet-data.md, "The committed data")."""
    # DisableCPUQuotaWithExclusiveCPUs: beta (on) in 1.35, deprecated in 1.36, locked to
    # true in 1.37 ("remove in 1.38"; pkg/features/kube_features.go)
    assert [upstream.load(v).gates["DisableCPUQuotaWithExclusiveCPUs"]
            for v in upstream.VERSIONS] == [
        {"stage": "BETA", "default": True, "locked": False},
        {"stage": "DEPRECATED", "default": True, "locked": False},
        {"stage": "DEPRECATED", "default": True, "locked": True}]
    # field types (staging/src/k8s.io/kubelet/config/v1beta1/types.go, every minor)
    for v in upstream.VERSIONS:
        data = upstream.load(v)
        assert data.fields["maxPods"]["type"] == "int32"
        assert data.fields["evictionSoftGracePeriod"] == {"go": "map[string]string",
                                                          "type": "string-map"}
    assert upstream.load((1, 37)).fields["defaultPodSysctls"] == {
        "go": "map[string]string", "type": "string-map"}


def test_feature_gates_that_are_not_a_mapping_are_an_error_naming_the_version():
    assert [(f.severity, f.field, f.message)
            for f in kubelet_check.check({"featureGates": ["EventedPLEG"]}, (1, 35))] == [
        (ERROR, "featureGates", "featureGates must be a mapping of gate name to true/false, "
         "found ['EventedPLEG']: the kubelet of Kubernetes 1.35 cannot decode it and refuses "
         "to start: \"failed to decode: json: cannot unmarshal array into Go struct field "
         "KubeletConfiguration.featureGates of type map[string]bool\" (kubernetes/kubernetes "
         "pkg/kubelet/kubeletconfig/util/codec/codec.go)")]


def test_a_percentage_hard_eviction_counts_against_the_node_memory():
    # GetNodeAllocatableReservation adds the hard eviction threshold, a percentage of
    # capacity (pkg/kubelet/cm/node_container_manager_linux.go, evictionapi)
    gi = 2 ** 30
    config = {"kubeReserved": {"memory": "30Gi"}, "systemReserved": {"memory": "30Gi"},
              "evictionHard": {"memory.available": "10%"}}
    [f] = kubelet_check.check(config, (1, 35), node_memory=64 * gi)
    assert (f.severity, f.field, f.message) == (
        ERROR, "kubeReserved.memory",
        f"kubeReserved.memory + systemReserved.memory + evictionHard[memory.available] is "
        f"{60 * gi + int(6.4 * gi)} bytes, more than the node's memory ({64 * gi} bytes): the "
        f"kubelet of Kubernetes 1.35 refuses to start: \"invalid Node Allocatable "
        f"configuration. Resource \"memory\" has a reservation of {{{{71296457216 0}} "
        f"{{<nil>}}  BinarySI}} but capacity of {{{{68719476736 0}} {{<nil>}}  BinarySI}}. "
        f"Expected capacity >= reservation.\" (kubernetes/kubernetes pkg/kubelet/cm/"
        f"node_container_manager_linux.go); lower the reservations")
    # the kubelet's sum takes 10% as a float32 (eviction parsePercentage): 6.4Gi + 103 bytes
    config["evictionHard"]["memory.available"] = "5%"
    assert kubelet_check.check(config, (1, 35), node_memory=64 * gi) == []


def test_eviction_thresholds_the_kubelet_cannot_parse_are_errors():
    config = {"evictionHard": {"memory.available": "lots", "nodefs.available": "150%",
                               "imagefs.available": "0", "nodefs.inodesFree": "0%",
                               "pid.available": "1k"},
              "evictionSoft": {"memory.available": "1Gi"},
              "evictionSoftGracePeriod": {"memory.available": "ninety seconds"}}
    doc = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
    helpers = "(kubernetes/kubernetes pkg/kubelet/eviction/helpers.go)"
    fix = f"write a quantity such as 500Mi or a percentage such as 10% ({doc})"
    assert [(f.severity, f.field, f.message)
            for f in kubelet_check.check(config, (1, 35))] == [
        (ERROR, "evictionHard.memory.available", "evictionHard.memory.available is 'lots', "
         "not a quantity: the kubelet of Kubernetes 1.35 refuses to start: \"quantities must "
         "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\" "
         f"{helpers}; {fix}"),
        (ERROR, "evictionHard.nodefs.available", "evictionHard.nodefs.available is '150%', a "
         "percentage must be between 0% and 100%: the kubelet of Kubernetes 1.35 refuses to "
         "start: \"eviction percentage threshold nodefs.available must be <= 100%: 150%\" "
         f"{helpers}; {fix}"),
        (ERROR, "evictionHard.imagefs.available", "evictionHard.imagefs.available is '0', "
         "eviction threshold must be positive: the kubelet of Kubernetes 1.35 refuses to "
         "start: \"eviction threshold imagefs.available must be positive: 0\" "
         f"{helpers}; {fix}"),
        (ERROR, "evictionSoftGracePeriod.memory.available", "evictionSoftGracePeriod."
         "memory.available is 'ninety seconds', not a positive Go duration: the kubelet of "
         "Kubernetes 1.35 refuses to start: \"time: invalid duration \"ninety seconds\"\" "
         f"{helpers}; write e.g. \"1m30s\"")]
