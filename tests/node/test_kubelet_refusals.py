"""What the kubelet harness found krm-fn letting through or wording in its own way (issue #30
part 2), one named case per kind of fault, with the kubelet's exact message that krm-fn now
quotes (krm_fn/node/kubelet_says.py, kubelet_validation.py). The messages are the ones the
kubelet's own code prints at v1.35.4, v1.36.3 and v1.37.2: tests/test_kubelet_config_harness.py
checks them against it; these tests pin them without Go."""
from __future__ import annotations

import pytest

from krm_fn.node import kubelet_check, kubelet_says
from krm_fn.results import ERROR

V = (1, 36)
VALIDATION = "(kubernetes/kubernetes pkg/kubelet/apis/config/validation/validation.go)"
DEFAULTING = "(kubernetes/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go)"


def said(config: dict, version=V) -> list[str]:
    """The kubelet's words krm-fn's errors for `config` quote."""
    return [q for f in kubelet_check.check(config, version) if f.severity == ERROR
            for q in kubelet_says.quotes_in(f.message)]


# --- decoding: a value of the wrong type stops the kubelet with decoding's message -------

@pytest.mark.parametrize("config,message", [
    ({"maxPods": "lots"}, "failed to decode: json: cannot unmarshal string into Go struct "
                          "field KubeletConfiguration.maxPods of type int32"),
    ({"maxPods": 3000000000}, "failed to decode: json: cannot unmarshal number 3000000000 "
                              "into Go struct field KubeletConfiguration.maxPods of type int32"),
    ({"authentication": {"webhook": {"enabled": "yes"}}},
     "failed to decode: json: cannot unmarshal string into Go struct field "
     "KubeletWebhookAuthentication.authentication.webhook.enabled of type bool"),
    ({"kubeReserved": {"memory": 5}}, "failed to decode: json: cannot unmarshal number into "
                                      "Go struct field KubeletConfiguration.kubeReserved of "
                                      "type string"),
    ({"syncFrequency": "1d"}, 'failed to decode: time: unknown unit "d" in duration "1d"'),
    # a null metav1.Duration that is not a pointer is read as "" (krm-fn let it through)
    ({"cpuManagerReconcilePeriod": None}, 'failed to decode: time: invalid duration ""'),
    # other scripts' digits are no Go duration (krm-fn's expression took them: \d)
    ({"syncFrequency": "١s"}, 'failed to decode: time: invalid duration "\\xd9\\xa1s"'),
    ({"logging": 7}, "failed to decode: json: cannot unmarshal number into Go struct field "
                     "KubeletConfiguration.logging of type v1.LoggingConfiguration"),
])
def test_type_errors_quote_decoding(config, message):
    assert said(config) == [f': "{message}" (kubernetes/kubernetes '
                            f'pkg/kubelet/kubeletconfig/util/codec/codec.go)']


def test_the_greek_mu_and_a_signed_zero_are_go_durations():
    assert kubelet_check.check({"syncFrequency": "1μs", "cpuManagerReconcilePeriod": "-0"},
                               V) == []


# --- feature gates: defaulting panics on what SetFromMap refuses --------------------------

PANIC = "failed to merge global and in-flight KubeletConfiguration while setting defaults, error: "


@pytest.mark.parametrize("gates,error", [
    ({"NoSuchGate": True}, "unrecognized feature gate: NoSuchGate"),
    ({"KubeletPSI": False}, "cannot set feature gate KubeletPSI to false, feature is locked "
                            "to true"),
    # a dependency left off: krm-fn knew nothing of gate dependencies
    ({"ClusterTrustBundleProjection": True}, "ClusterTrustBundleProjection is enabled, but "
                                             "depends on features that are disabled: "
                                             "[ClusterTrustBundle]"),
])
def test_gates_quote_defaultings_panic(gates, error):
    assert f': "{PANIC}{error}" {DEFAULTING}' in said({"featureGates": gates})


def test_all_beta_off_turns_the_beta_option_gate_off():
    """AllBeta: false switches every beta gate off, CPUManagerPolicyBetaOptions included (krm-fn
    read only the explicit gate)."""
    got = said({"featureGates": {"AllBeta": False}, "cpuManagerPolicy": "static",
                "cpuManagerPolicyOptions": {"distribute-cpus-across-numa": "true"}}, (1, 35))
    assert ': "new static policy error: CPU Manager Policy Beta-level Options not enabled, ' \
           'but option \\"distribute-cpus-across-numa\\" provided"'.replace('\\"', '"') in \
           " ".join(got)


# --- validation: ValidateKubeletConfiguration, which krm-fn did not run -----------------

@pytest.mark.parametrize("config,message", [
    ({"imageGCHighThresholdPercent": 80},
     "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be "
     "less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80"),
    ({"eventBurst": -1}, "invalid configuration: eventBurst (--event-burst) -1 must not be a "
                         "negative number"),
    ({"hairpinMode": "bogus"}, 'invalid configuration: option "bogus" specified for hairpinMode '
                               '(--hairpin-mode). Valid options are "none", "hairpin-veth" or '
                               '"promiscuous-bridge"'),
    ({"shutdownGracePeriod": "500ms"}, "invalid configuration: shutdownGracePeriod {500ms} must "
                                       "be either zero or otherwise >= 1 sec"),
    ({"maxParallelImagePulls": 0}, "invalid configuration: maxParallelImagePulls 0 must be a "
                                   "positive number"),
    ({"enforceNodeAllocatable": ["pods", "pods"]},
     'invalid configuration: duplicated enforcements "pods" in enforceNodeAllocatable '
     '(--enforce-node-allocatable)'),
    ({"containerLogMonitorInterval": "1s"}, "invalid configuration: containerLogMonitorInterval "
                                            "must be a positive time duration greater than or "
                                            "equal to 3s"),
    ({"podLogsDir": "var/log/pods"}, 'invalid configuration: pod logs path "var/log/pods" must '
                                     'be absolute path'),
    ({"registerWithTaints": [{"key": "", "effect": "NoSchedule"}]},
     "invalid taint: {  NoSchedule <nil>}"),
    ({"reservedSystemCPUs": "3-1"}, 'invalid configuration: unable to parse reservedSystemCPUs '
                                    '(--reserved-cpus) 3-1, error: invalid range "3-1" (3 > 1)'),
])
def test_validation_quotes_the_kubelet(config, message):
    assert f': "{message}" {VALIDATION}' in said(config)


def test_validation_reads_the_kubelets_defaults():
    """A zero value of a field that is no pointer is defaulted before validation (port 0 ->
    10250), a pointer's is not (containerLogMaxFiles 0 is refused)."""
    assert said({"port": 0}) == []
    assert said({"containerLogMaxFiles": 0}) == [
        f': "invalid configuration: containerLogMaxFiles must be greater than 1" {VALIDATION}']


def test_show_hidden_metrics_names_the_previous_minor():
    assert said({"showHiddenMetricsForVersion": "x"}, (1, 37)) == [
        ': "invalid showHiddenMetricsForVersion: showHiddenMetricsForVersion: Invalid value: '
        '"x": must be omitted or have the value \'1.36\'; only the previous minor version is '
        'allowed" (k8s.io/component-base/metrics/api/v1/config.go)']
    assert said({"showHiddenMetricsForVersion": "x"}, (1, 35)) == [
        ': "--show-hidden-metrics-for-version must be omitted or have the value \'1.34\'. Only '
        'the previous minor version is allowed" (k8s.io/component-base/metrics/options.go)']


# --- start-up: what run() and NewMainKubelet refuse --------------------------------------

@pytest.mark.parametrize("config,message,source", [
    ({"qosReserved": {"memory": "x"}},
     '--qos-reserved value failed to parse: failed to parse percentage "x" for "memory" '
     "resource: percentage expected, got 'x'", "cmd/kubelet/app/server.go"),
    ({"configMapAndSecretChangeDetectionStrategy": "Bogus"},
     "unknown configmap and secret manager mode: Bogus", "pkg/kubelet/kubelet.go"),
    ({"containerLogMaxSize": "lots"},
     'failed to initialize container log manager: failed to parse container log max size '
     '"lots": quantities must match the regular expression '
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", "pkg/kubelet/kubelet.go"),
    ({"syncFrequency": "-1s"}, "invalid sync frequency -1000000000", "pkg/kubelet/kubelet.go"),
    ({"evictionHard": {"nodefs.available": "0"}},
     "eviction threshold nodefs.available must be positive: 0", "pkg/kubelet/eviction/helpers.go"),
    ({"evictionSoft": {"memory.available": "1Gi"}},
     "grace period must be specified for the soft eviction threshold memory.available",
     "pkg/kubelet/eviction/helpers.go"),
])
def test_start_up_refusals_quote_the_kubelet(config, message, source):
    assert f': "{message}" (kubernetes/kubernetes {source})' in said(config)


# the resource managers cm.NewContainerManager builds from the file: krm-fn's plan always
# writes the static CPU Manager policy and computes reservedMemory, so kubelet_check let
# every other value through (the CPU Manager differential found the first one)
@pytest.mark.parametrize("config,message,source", [
    ({"cpuManagerPolicyOptions": {"full-pcpus-only": "true", "b": "x"}},
     "new none policy error: None policy: received unsupported options=map[b:x "
     "full-pcpus-only:true]", "pkg/kubelet/cm/cpumanager/policy_none.go"),
    ({"cpuManagerPolicy": "Static"}, 'unknown policy: "Static"',
     "pkg/kubelet/cm/cpumanager/cpu_manager.go"),
    ({"cpuManagerPolicy": "static"},
     "[cpumanager] unable to determine reserved CPU resources for static policy",
     "pkg/kubelet/cm/cpumanager/cpu_manager.go"),
    ({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"},
      "cpuManagerPolicyOptions": {"bogus": "true"}},
     'new static policy error: unknown CPU Manager Policy option: "bogus"',
     "pkg/kubelet/cm/cpumanager/policy_options.go"),
    ({"memoryManagerPolicy": "bogus"}, 'unknown policy: "bogus"',
     "pkg/kubelet/cm/memorymanager/memory_manager.go"),
    ({"memoryManagerPolicy": "BestEffort"},
     'policy "BestEffort" is not available for platform "linux"',
     "pkg/kubelet/cm/memorymanager/memory_manager.go"),
    # no evictionHard in the file: loadConfigFile's default (memory.available 100Mi)
    ({"memoryManagerPolicy": "Static"}, 'the total amount "0" of type "memory" is not equal '
     'to the value "100Mi" determined by Node Allocatable feature',
     "pkg/kubelet/cm/memorymanager/memory_manager.go"),
    ({"memoryManagerPolicy": "Static", "reservedMemory": [
        {"numaNode": 0, "limits": {"memory": "100Mi", "hugepages-2Mi": "4Mi"}}]},
     'the total amount "4Mi" of type "hugepages-2Mi" is not equal to the value "0" '
     'determined by Node Allocatable feature', "pkg/kubelet/cm/memorymanager/memory_manager.go"),
    ({"systemReserved": {"hugepages-2Mi": "4Mi"}},
     '--system-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource',
     "cmd/kubelet/app/server.go"),
    ({"kubeReserved": {"memory": "-1Gi"}}, '--kube-reserved value failed to parse: resource '
     'quantity for "memory" cannot be negative: -1Gi', "cmd/kubelet/app/server.go"),
    # parseResourceList rounds cpu to whole millicores: 0.1m is no reservation
    ({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "0.0001"}},
     "[cpumanager] unable to determine reserved CPU resources for static policy",
     "pkg/kubelet/cm/cpumanager/cpu_manager.go"),
])
def test_resource_manager_refusals_quote_the_kubelet(config, message, source):
    assert f': "{message}" (kubernetes/kubernetes {source})' in said(config)


def test_a_static_cpu_reservation_above_the_node_quotes_new_static_policy():
    """Found by the CPU Manager differential: 1500m reserved on a one-CPU node. The static
    policy takes ceil(1.5) = 2 CPUs by topology, finds none, and refuses before the Node
    Allocatable check."""
    found = [f.message for f in kubelet_check.check(
        {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1500m"}}, V, node_cpus=1)]
    assert any(': "new static policy error: [cpumanager] unable to reserve the required '
               'amount of CPUs (size of  did not equal 2)" (kubernetes/kubernetes '
               'pkg/kubelet/cm/cpumanager/policy_static.go)' in m for m in found)


def test_a_static_cpu_reservation_by_reserved_cpus_is_one():
    """run() writes reservedSystemCPUs' count as systemReserved's cpu: no refusal."""
    assert said({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "0"},
                 "reservedSystemCPUs": "0"}) == []


def test_node_allocatable_prints_quantities_as_the_kubelet_does():
    """The kubelet prints resource.Quantity values as structs in this one message."""
    config = {"kubeReserved": {"memory": "3Gi"}, "systemReserved": {"memory": "500Mi"},
              "evictionHard": {"memory.available": "100Mi"}}
    [f] = kubelet_check.check(config, V, node_memory=2 ** 31)
    assert kubelet_says.quotes_in(f.message) == [
        ': "invalid Node Allocatable configuration. Resource "memory" has a reservation of '
        '{{3850371072 0} {<nil>}  BinarySI} but capacity of {{2147483648 0} {<nil>}  BinarySI}. '
        'Expected capacity >= reservation." (kubernetes/kubernetes '
        'pkg/kubelet/cm/node_container_manager_linux.go)']


def test_unknown_fields_inside_other_packages_types_are_found():
    """Strict decoding knows logging's, tracing's and a taint's fields (the generated data did
    not go into them): the kubelet ignores the others, krm-fn says so."""
    found = [(f.field, f.unknown) for f in kubelet_check.check(
        {"tracing": {"endpont": "x"}, "registerWithTaints": [{"key": "a", "efect": "x"}]}, V)]
    assert found == [("tracing.endpont", True), ("registerWithTaints[0].efect", True)]


# --- the plan's own checks quote the kubelet too ----------------------------------------

def render_errors(kubelet: dict, topology: dict | None = None, version: str = "1.36") -> str:
    """The error messages of a node-only render of one pool with `kubelet` settings."""
    from krm_fn import pipeline
    pool = {"name": "p", "emit": "always", "nodeSelector": {"pool": "p"},
            "topology": topology or {"sockets": 1, "numaNodesPerSocket": 1,
                                     "coresPerSocket": 4, "threadsPerCore": 2,
                                     "memory": "16Gi"},
            "kubelet": kubelet}
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "t"}, "spec": {"kubernetesVersion": version,
                                              "nodePools": [pool]}}
    return "\n".join(r.message for r in pipeline.transform([], fc).results
                     if r.severity == ERROR)


def test_reserved_cpus_outside_the_node_quote_get_reserved_cpus():
    assert ': "reserved-cpus: 0,40 is not a subset of online-cpus: 0-7" (kubernetes/kubernetes ' \
           'cmd/kubelet/app/server.go)' in render_errors({"reservedSystemCPUs": "0,40"})


def test_reserved_cpus_it_cannot_parse_quote_validation():
    assert ': "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) ' \
           'a-b, error: strconv.Atoi: parsing \\"a\\": invalid syntax"'.replace('\\"', '"') in \
           render_errors({"reservedSystemCPUs": "a-b"})


def test_reserved_memory_that_does_not_add_up_quotes_the_memory_manager():
    errors = render_errors({"memoryManagerPolicy": "Static", "reservedMemory": [
        {"numaNode": 0, "limits": {"memory": "1Gi"}}]})
    assert ': "the total amount "1Gi" of type "memory" is not equal to the value "1100Mi" ' \
           'determined by Node Allocatable feature" (kubernetes/kubernetes ' \
           'pkg/kubelet/cm/memorymanager/memory_manager.go)' in errors


TWO_NUMA = {"sockets": 2, "numaNodesPerSocket": 1, "coresPerSocket": 4, "threadsPerCore": 2,
            "memory": "32Gi"}


def test_reserved_memory_sums_off_quantitys_int64_path_are_quoted_too():
    """1.5Gi is parsed onto resource.Quantity's inf.Dec path (a fraction of a binary
    suffix); String() still prints its exact value, so the quote is exact (krm-fn left it
    out: seed 9 of the generated test)."""
    errors = render_errors({"kubeReserved": {"memory": "1.5Gi"}, "memoryManagerPolicy":
                            "Static", "reservedMemory": [
                                {"numaNode": 0, "limits": {"memory": "1100Mi"}}]},
                           version="1.37")
    assert ': "the total amount "1100Mi" of type "memory" is not equal to the value "2136Mi" ' \
           'determined by Node Allocatable feature"' in errors
    errors = render_errors({"kubeReserved": {"memory": "1.5Gi"}, "evictionHard": {
        "memory.available": "0.5Gi"}, "memoryManagerPolicy": "Static", "reservedMemory": [
            {"numaNode": 0, "limits": {"memory": "0.25Gi"}},
            {"numaNode": 1, "limits": {"memory": "1.5Gi"}}]}, TWO_NUMA)
    assert ': "the total amount "1792Mi" of type "memory" is not equal to the value "2548Mi" ' \
           'determined by Node Allocatable feature"' in errors


def test_reserved_memory_on_a_numa_node_the_node_lacks_quotes_the_memory_manager():
    errors = render_errors({"memoryManagerPolicy": "Static", "reservedMemory": [
        {"numaNode": 3, "limits": {"memory": "1100Mi"}}]})
    assert ': "the reserved memory configuration references a NUMA node 3 that does not ' \
           'exist on this machine"' in errors


def test_cpu_manager_options_quote_new_static_policy():
    errors = render_errors({"cpuManagerPolicyOptions": {"bogus-option": "true"}})
    assert ': "new static policy error: unknown CPU Manager Policy option: "bogus-option"" ' \
           '(kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_options.go)' in errors


def test_topology_manager_options_quote_new_policy_options():
    errors = render_errors({"topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "3"}})
    assert ': "the minimum value of "max-allowable-numa-nodes" should not be less than 8" ' \
           '(kubernetes/kubernetes pkg/kubelet/cm/topologymanager/policy_options.go)' in errors
    # with policy none the kubelet does not read the options: no quote, krm-fn still refuses
    errors = render_errors({"topologyManagerPolicy": "none",
                            "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "3"}})
    assert errors and "the minimum value" not in errors
