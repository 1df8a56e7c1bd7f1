"""The pool's taints against the pod's tolerations, and the pod's OS (krm_fn/admission/taints.py,
scheduling.known_labels / os_refusals; issue #31 part 4): unit tables of the matching as
k8s.io/api toleration.go ToleratesTaint and component-helpers FindMatchingUntoleratedTaint
decide it, the tolerations admission adds, where the pool's taints come from, and the exact
findings of whole renders. tests/test_taints_differential.py checks the matching against
the real kube-scheduler."""
from __future__ import annotations

import pytest

from krm_fn.admission import scheduling, taints
from krm_fn.admission.taints import Taint
from tests.test_verdict import GUARANTEED_4, POOL, config, deployment, errors, render, verdicts

NS, NE, PNS = "NoSchedule", "NoExecute", "PreferNoSchedule"
T = Taint("dedicated", "inference", NS)


@pytest.mark.parametrize("toleration, taint, expected", [
    ({"key": "dedicated", "operator": "Equal", "value": "inference", "effect": NS}, T, True),
    ({"key": "dedicated", "value": "inference", "effect": NS}, T, True),       # "" is Equal
    ({"key": "dedicated", "operator": "Equal", "value": "other", "effect": NS}, T, False),
    ({"key": "dedicated", "operator": "Equal", "effect": NS}, T, False),       # value ""
    ({"key": "dedicated", "operator": "Exists", "effect": NS}, T, True),
    ({"key": "dedicated", "operator": "Exists"}, T, True),                     # any effect
    ({"key": "dedicated", "operator": "Exists", "effect": NE}, T, False),
    ({"key": "other", "operator": "Exists"}, T, False),
    ({"operator": "Exists"}, T, True),                                          # everything
    ({"operator": "Exists", "effect": NE}, T, False),
    ({"operator": "Exists", "effect": NE}, Taint("a", "", NE), True),
    ({"key": "a", "operator": "Equal", "value": ""}, Taint("a", "", NE), True),
    ({"key": "a", "operator": "Gt", "value": "1"}, Taint("a", "2", NS), False),  # gate off
    ({"key": "a", "operator": "Lt", "value": "3"}, Taint("a", "2", NS), False),
    ({"key": "a", "operator": "In", "value": "2"}, Taint("a", "2", NS), False),
    ("not a mapping", T, False),
])
def test_a_toleration_tolerates_a_taint_as_toleration_go_decides(toleration, taint, expected):
    assert taints.tolerates(toleration, taint) is expected


def test_only_noschedule_and_noexecute_taints_keep_a_pod_off_the_first_named_first():
    node = (Taint("soft", "", PNS), Taint("b", "1", NE), Taint("a", "", NS))
    assert taints.untolerated(node, []) == [node[1], node[2]]
    assert taints.untolerated(node, [{"key": "b", "operator": "Exists"}]) == [node[2]]
    assert taints.untolerated(node, [{"operator": "Exists"}]) == []
    assert taints.untolerated((Taint("soft", "", PNS),), []) == []


def test_default_toleration_seconds_adds_not_ready_and_unreachable_unless_tolerated():
    added = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
              "effect": "NoExecute", "tolerationSeconds": 300},
             {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
              "effect": "NoExecute", "tolerationSeconds": 300}]
    assert list(taints.admitted([])) == added
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists"}
    assert list(taints.admitted([own])) == [own, added[1]]
    everything = {"operator": "Exists"}
    assert list(taints.admitted([everything])) == [everything]
    # another effect does not count
    ns = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": NS}
    assert list(taints.admitted([ns])) == [ns] + added


def test_a_daemonset_pod_gets_the_controllers_tolerations():
    keys = [(t["key"], t["effect"]) for t in taints.admitted([], daemonset=True)]
    assert keys == [("node.kubernetes.io/not-ready", NE), ("node.kubernetes.io/unreachable", NE),
                    ("node.kubernetes.io/disk-pressure", NS),
                    ("node.kubernetes.io/memory-pressure", NS),
                    ("node.kubernetes.io/pid-pressure", NS),
                    ("node.kubernetes.io/unschedulable", NS)]
    with_host = taints.admitted([], daemonset=True, host_network=True)
    assert with_host[-1] == {"key": "node.kubernetes.io/network-unavailable",
                             "operator": "Exists", "effect": NS}
    # one equal in key, effect, operator and value is replaced in place (infinite now)
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": NE,
           "tolerationSeconds": 5}
    assert taints.admitted([own], daemonset=True)[0] == {
        "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": NE}


def test_the_pools_taints_registered_then_the_nodes_own_each_once_transient_ones_left_out():
    merged = {"registerWithTaints": [{"key": "a", "value": "1", "effect": NS}]}
    node = {"metadata": {"name": "n1"}, "spec": {"taints": [
        {"key": "a", "value": "2", "effect": NS},                  # same key and effect
        {"key": "node.kubernetes.io/unschedulable", "effect": NS},
        {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
         "effect": NS},
        {"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": NS},
        {"key": "gpu", "effect": NE}]}}
    assert taints.pool_taints(merged, merged, node) == (
        Taint("a", "1", NS, "registerWithTaints of the pool's kubelet.extra"),
        Taint("gpu", "", NE, "spec.taints of Node 'n1' (topology.fromNode)"))
    assert taints.pool_taints(merged, {}, None) == (
        Taint("a", "1", NS, "registerWithTaints of spec.output.baseline"),)
    assert taints.pool_taints({}, {}, None) == ()


def test_a_noexecute_taint_tolerated_for_seconds_evicts_the_pod():
    node = (Taint("a", "", NE), Taint("b", "", NE))
    tols = [{"key": "a", "operator": "Exists", "tolerationSeconds": 60},
            {"key": "b", "operator": "Exists", "tolerationSeconds": 30},
            {"operator": "Exists"}]
    assert taints.evicted_after(node, tols) == (30, node[1])
    assert taints.evicted_after(node, [{"operator": "Exists"}] + tols) is None
    assert taints.evicted_after(node, [{"key": "a", "operator": "Exists"}]) is None


def test_known_labels_the_os_always_the_fromnode_arch_the_selector_first():
    assert scheduling.known_labels({"pool": "p"}) == {"pool": "p", "kubernetes.io/os": "linux"}
    node = {"metadata": {"labels": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux",
                                    "kubernetes.io/hostname": "n1"}}}
    assert scheduling.known_labels({"pool": "p"}, node) == {
        "pool": "p", "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"}
    assert scheduling.known_labels({"kubernetes.io/arch": "amd64"}, node) == {
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}


# --- whole renders ---------------------------------------------------------------------------

TAINTED = {**POOL, "kubelet": {"extra": {"registerWithTaints": [
    {"key": "dedicated", "value": "inference", "effect": NS},
    {"key": "soft", "effect": PNS},
    {"key": "gpu", "effect": NE}]}}}
SOURCE = ("(https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/, "
          "k8s.io/component-helpers scheduling/corev1/helpers.go FindMatchingUntoleratedTaint)")


def _spec(**more) -> dict:
    return {"containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}],
            **more}


def test_a_pod_that_does_not_tolerate_the_pools_registered_taints_fails_closed():
    code, results, items = render(config(pool=TAINTED), deployment())
    assert code == 1
    assert errors(results) == [
        "the pod never schedules on node pool 'p': its nodes have the taint(s) "
        "dedicated=inference:NoSchedule (registerWithTaints of the pool's kubelet.extra); "
        "gpu:NoExecute (registerWithTaints of the pool's kubelet.extra), which the pod does "
        "not tolerate, so the scheduler's TaintToleration filter leaves it Pending "
        "(\"node(s) had untolerated taint(s)\"); add to the pod spec's tolerations: "
        "[{key: dedicated, operator: Equal, value: \"inference\", effect: NoSchedule}, "
        "{key: gpu, operator: Exists, effect: NoExecute}], or place the workload in another "
        f"pool {SOURCE}",
        "left unchanged because of the errors above"]
    assert items[0] == deployment()


def test_a_pod_with_the_tolerations_runs_pinned():
    tols = [{"key": "dedicated", "operator": "Equal", "value": "inference",
             "effect": NS}, {"key": "gpu", "operator": "Exists"}]
    code, results, _ = render(config(pool=TAINTED), deployment(spec=_spec(tolerations=tols)))
    assert code == 0, results
    assert errors(results) == []
    assert verdicts(results) == ["verdict: Guaranteed after admission; exclusive CPUs server 4 "
                                 "on NUMA 0; 7 per node (allocatable cpu 30: 4 each)"]


def test_a_noexecute_toleration_with_seconds_fails_closed():
    tols = [{"operator": "Exists", "effect": NS},
            {"key": "gpu", "operator": "Exists", "effect": NE, "tolerationSeconds": 600}]
    code, results, _ = render(config(pool=TAINTED), deployment(spec=_spec(tolerations=tols)))
    assert code == 1
    assert errors(results)[0] == (
        "the pod is evicted from node pool 'p' 600 s after it starts: its toleration of the "
        "NoExecute taint gpu:NoExecute (registerWithTaints of the pool's kubelet.extra) has "
        "tolerationSeconds 600, and the taint eviction controller evicts a pod once that has "
        "passed; remove tolerationSeconds from that toleration "
        "(https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/"
        "#taint-based-evictions)")


def test_the_baselines_registered_taints_and_the_fromnode_nodes_count():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {
        "pool": "p", "kubernetes.io/arch": "arm64"}},
        "spec": {"taints": [{"key": "team", "value": "ml", "effect": NE},
                            {"key": "node.kubernetes.io/not-ready", "effect": NS}]},
        "status": {"capacity": {"cpu": "32", "memory": "64Gi"}}}
    pool = {**POOL, "topology": {**POOL["topology"], "fromNode": node}}
    baseline = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                "registerWithTaints": [{"key": "base", "effect": NS}]}
    cfg = config(pool=pool, output={"baseline": baseline})
    code, results, _ = render(cfg, deployment(spec=_spec(nodeSelector={
        "kubernetes.io/arch": "amd64"})))
    assert code == 1
    assert errors(results)[:2] == [
        "the pod never schedules on node pool 'p' (node labels pool=p, kubernetes.io/os=linux,"
        " kubernetes.io/arch=arm64): nodeSelector kubernetes.io/arch=amd64 (the pool's nodes "
        "have kubernetes.io/arch=arm64); change or remove the nodeSelector entry or required "
        "node affinity term so the pool's labels match, or place the workload in the pool it "
        "selects with the krm-fn.dev/node-pool annotation (k8s.io/component-helpers/scheduling/"
        "corev1/nodeaffinity/nodeaffinity.go, "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/)",
        "the pod never schedules on node pool 'p': its nodes have the taint(s) base:NoSchedule "
        "(registerWithTaints of spec.output.baseline); team=ml:NoExecute (spec.taints of Node "
        "'n1' (topology.fromNode)), which the pod does not tolerate, so the scheduler's "
        "TaintToleration filter leaves it Pending (\"node(s) had untolerated taint(s)\"); add "
        "to the pod spec's tolerations: [{key: base, operator: Exists, effect: NoSchedule}, "
        "{key: team, operator: Equal, value: \"ml\", effect: NoExecute}], or place the "
        f"workload in another pool {SOURCE}"]


def test_a_knative_pod_is_told_to_turn_tolerations_on():
    ksvc = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
            "metadata": {"name": "k", "namespace": "ai"},
            "spec": {"template": {"spec": _spec()}}}
    pool = {**TAINTED, "kubelet": {"extra": {"registerWithTaints": [
        {"key": "dedicated", "effect": NS}]}}}
    code, results, _ = render(config(pool=pool), ksvc)
    assert code == 1
    taint = [m for m in errors(results) if "TaintToleration" in m]
    assert taint == [
        "the pod never schedules on node pool 'p': its nodes have the taint(s) "
        "dedicated:NoSchedule (registerWithTaints of the pool's kubelet.extra), which the pod "
        "does not tolerate, so the scheduler's TaintToleration filter leaves it Pending "
        "(\"node(s) had untolerated taint(s)\"); add to the pod spec's tolerations: "
        "[{key: dedicated, operator: Exists, effect: NoSchedule}]; Knative refuses "
        "tolerations unless they are turned on: set kubernetes.podspec-tolerations: "
        "\"enabled\" in ConfigMap knative-serving/config-features (not in the input, so "
        "krm-fn assumes the defaults of knative-v1.23; add the ConfigMap to the input, marked "
        "config.kubernetes.io/local-config: \"true\" if this render must not apply it, so "
        f"krm-fn reads it), or place the workload in another pool {SOURCE}"]


def test_a_runtimeclass_toleration_counts():
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"},
          "handler": "runc", "scheduling": {"tolerations": [
              {"key": "dedicated", "operator": "Exists"}, {"key": "gpu", "operator": "Exists"}]}}
    code, results, _ = render(config(pool=TAINTED),
                              deployment(spec=_spec(runtimeClassName="rc")), rc)
    assert code == 0, results


def test_a_daemonset_that_does_not_tolerate_the_pools_taint_takes_no_capacity():
    def ds(name, tolerations=None):
        spec = {"containers": [{"name": "agent", "image": "a:1", "resources": {
            "requests": {"cpu": "3", "memory": "1Gi"}}}]}
        if tolerations:
            spec["tolerations"] = tolerations
        return {"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": "kube-system"},
                "spec": {"template": {"spec": {**spec, "nodeSelector": {
                    "kubernetes.io/os": "linux"}}}}}
    tols = [{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": NS},
            {"key": "gpu", "operator": "Exists"}]
    work = deployment(spec=_spec(tolerations=tols))
    cfg = config(pool=TAINTED, selector={"kinds": ["Deployment"]})
    pool_line = [m for _, m in render(cfg, work, ds("off"), ds("on", [{"operator": "Exists"}]))[1]
                 if m.startswith("node pool 'p': 30")]
    assert pool_line == [
        "node pool 'p': 30 exclusive CPUs per node (NUMA 0: 14, NUMA 1: 16), 62.93Gi "
        "allocatable memory, less the pods of DaemonSet on on every node; Deployment srv needs "
        "4 exclusive CPUs (6 per node, limited by allocatable cpu 30, 3 of it taken by "
        "DaemonSet pods: 4 each (OutOfcpu))"]


def test_a_windows_daemonset_takes_no_capacity():
    # hostile review: a DaemonSet of spec.os.name windows (no selector) took 8 CPUs of
    # every node, though the Linux kubelet refuses its pod (PodOSNotSupported)
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "win", "namespace": "kube-system"},
          "spec": {"template": {"spec": {"os": {"name": "windows"}, "containers": [
              {"name": "agent", "image": "a:1", "resources": {
                  "requests": {"cpu": "8", "memory": "1Gi"}}}]}}}}
    cfg = config(selector={"kinds": ["Deployment"]})
    alone = [m for _, m in render(cfg, deployment(spec=_spec()))[1] if "per node" in m]
    both = [m for _, m in render(cfg, deployment(spec=_spec()), ds)[1] if "per node" in m]
    assert alone == both and alone


@pytest.mark.parametrize("spec, labels, expected", [
    ({"os": {"name": "linux"}}, None, []),
    ({"os": {"name": "windows"}}, None, [
        "spec.os.name is windows, but the pool's nodes run a Linux kubelet, which refuses the "
        "pod (PodOSNotSupported: \"Failed to admit pod as the OS field doesn't match node "
        "OS\"); set spec.os.name to linux or remove it (pkg/kubelet/lifecycle/predicate.go, "
        "https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-os)"]),
    ({"os": {"name": "plan9"}}, None, [
        "spec.os.name is plan9, but the pool's nodes run a Linux kubelet, which refuses the "
        "pod (PodOSNotSupported: \"Failed to admit pod as the OS field doesn't match node "
        "OS\"); the API server refuses it first (spec.os.name: Unsupported value 'plan9': "
        "supported values: \"linux\", \"windows\"); set spec.os.name to linux or remove it "
        "(pkg/kubelet/lifecycle/predicate.go, "
        "https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-os)"]),
    ({}, {"kubernetes.io/os": "linux"}, []),
    ({}, {"kubernetes.io/os": "windows"}, [
        "the pod's label kubernetes.io/os=windows does not match the pool's nodes "
        "(kubernetes.io/os=linux): their kubelet refuses the pod "
        "(PodOSSelectorNodeLabelDoesNotMatch: \"Failed to admit pod as the `kubernetes.io/os` "
        "label doesn't match node label\"); set the label to linux or remove it "
        "(pkg/kubelet/lifecycle/predicate.go, "
        "https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-os)"]),
])
def test_the_pods_os_against_the_linux_kubelet(spec, labels, expected):
    assert [f.message for f in scheduling.os_refusals(spec, labels, "spec")] == expected


def test_a_nodeselector_for_windows_never_schedules_on_a_pool_that_does_not_list_the_os():
    code, results, _ = render(config(), deployment(spec=_spec(nodeSelector={
        "kubernetes.io/os": "windows"})))
    assert code == 1
    assert errors(results)[0].startswith(
        "the pod never schedules on node pool 'p' (node labels pool=p, kubernetes.io/os=linux):"
        " nodeSelector kubernetes.io/os=windows (the pool's nodes have kubernetes.io/os=linux)")
    code, results, _ = render(config(), deployment(spec=_spec(nodeSelector={
        "kubernetes.io/os": "linux"})))
    assert code == 0 and errors(results) == []


def test_the_beta_os_label_is_known_as_the_kubelet_sets_it():
    # hostile review: beta.kubernetes.io/os: windows was "a label the pool does not list"
    # (an info) while the kubelet registers every node with beta.kubernetes.io/os=linux too
    # (pkg/kubelet/kubelet_node_status.go initialNode) and the scheduler never binds it
    code, results, _ = render(config(), deployment(spec=_spec(nodeSelector={
        "beta.kubernetes.io/os": "windows"})))
    assert code == 1
    assert errors(results)[0].startswith(
        "the pod never schedules on node pool 'p' (node labels pool=p, kubernetes.io/os=linux):"
        " nodeSelector beta.kubernetes.io/os=windows (the pool's nodes have "
        "beta.kubernetes.io/os=linux)")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "beta.kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}
    code, results, _ = render(config(), deployment(spec=_spec(
        nodeSelector={"beta.kubernetes.io/os": "linux"}, affinity=affinity)))
    assert code == 0 and errors(results) == []
    assert not [m for _, m in results if "does not list" in m]
    assert scheduling.with_twins({"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"}) \
        == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64"}


def test_a_windows_pod_on_the_pool_fails_at_its_path():
    code, results, _ = render(config(), deployment(spec=_spec(os={"name": "windows"}),
                                                   labels={"kubernetes.io/os": "windows"}))
    assert code == 1
    [os_field, label] = [f for f in scheduling.os_refusals(
        {"os": {"name": "windows"}}, {"kubernetes.io/os": "windows"}, "spec.template.spec")]
    assert (os_field.path, label.path) == ("spec.template.spec.os.name",
                                           "spec.template.metadata.labels")
    assert len(errors(results)) == 3


def test_a_pod_that_names_its_node_is_judged_on_noexecute_taints_only():
    # hostile review: a pod with spec.nodeName bypasses the scheduler; the kubelet admits it
    # despite a NoSchedule taint (pkg/kubelet/lifecycle/predicate.go generalFilter checks
    # NoExecute taints only), so "never schedules" was a false error
    pool = {**POOL, "kubelet": {"extra": {"registerWithTaints": [
        {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "direct"},
           "spec": {**_spec(), "nodeName": "node-1"}}
    code, results, _ = render(config(pool=pool), pod)
    assert (code, errors(results)) == (0, [])
    pool["kubelet"]["extra"]["registerWithTaints"][0]["effect"] = "NoExecute"
    code, results, _ = render(config(pool=pool), pod)
    assert code == 1
    assert errors(results)[0].startswith(
        "the pod is never admitted on node pool 'p': it names its node (spec.nodeName), "
        "whose kubelet refuses a pod that does not tolerate its NoExecute taint(s) "
        "dedicated=inference:NoExecute (registerWithTaints of the pool's kubelet.extra) "
        "(TaintToleration: \"node(s) had untolerated taint(s)\"); add to the pod spec's "
        "tolerations: [{key: dedicated, operator: Equal, value: \"inference\", effect: "
        "NoExecute}]")
