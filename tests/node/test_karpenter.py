"""Karpenter NodePools and EC2NodeClasses (krm_fn/node/karpenter.py): which NodePools
provision a pool's nodes, what its EC2NodeClass's spec.kubelet gets, and the errors where
krm-fn cannot make Karpenter agree. The whole render is the golden case
tests/testdata/karpenter-eks (applied to the real API server with Karpenter's CRDs by
tests/test_apiserver.py)."""
import copy

import pytest

from krm_fn import config
from krm_fn.node import karpenter
from krm_fn.node import plan as node_plan
from krm_fn.pipeline import transform
from krm_fn.results import ERROR, INFO, WARNING, Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin")
EVICTION = {"memory.available": "100Mi", "nodefs.available": "10%",
            "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}


def nodepool(name="inference", labels=None, requirements=(), nodeclass="inference"):
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {
                "metadata": {"labels": labels or {}},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                          "name": nodeclass},
                         "requirements": list(requirements)}}}}


def nodeclass(name="inference", kubelet=None, annotations=None):
    obj = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
           "metadata": {"name": name}, "spec": {"role": "KarpenterNodeRole-demo"}}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if kubelet is not None:
        obj["spec"]["kubelet"] = kubelet
    return obj


def req(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


SEL = {"krm-fn.dev/cpu-pinning": "true"}


@pytest.mark.parametrize("np, ok", [
    (nodepool(labels=SEL), True),
    (nodepool(labels={"krm-fn.dev/cpu-pinning": "false"}), False),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "In", "true", "x")]), True),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "In", "x")]), False),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "NotIn", "x")]), True),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "NotIn", "true")]), False),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "Exists")]), True),
    (nodepool(requirements=[req("krm-fn.dev/cpu-pinning", "DoesNotExist")]), False),
    (nodepool(), False),            # a label the NodePool never puts on its nodes
])
def test_provisions_by_labels_and_requirements(np, ok):
    assert karpenter.provisions(np, SEL) is ok


@pytest.mark.parametrize("requirements, ok", [
    ([], True),                     # Karpenter labels nodes with their instance type
    ([req("node.kubernetes.io/instance-type", "In", "m7i.8xlarge")], True),
    ([req("node.kubernetes.io/instance-type", "In", "m7i.large")], False),
    ([req("karpenter.k8s.aws/instance-cpu", "Gt", "16")], True),
])
def test_provisions_well_known_labels(requirements, ok):
    sel = {"node.kubernetes.io/instance-type": "m7i.8xlarge"}
    assert karpenter.provisions(nodepool(requirements=requirements), sel) is ok
    assert karpenter.provisions(nodepool(requirements=[req("karpenter.k8s.aws/instance-cpu",
                                                           "Gt", "16")]),
                                {"karpenter.k8s.aws/instance-cpu": "32"}) is True
    assert karpenter.provisions(nodepool(requirements=[req("karpenter.k8s.aws/instance-cpu",
                                                           "Gt", "32")]),
                                {"karpenter.k8s.aws/instance-cpu": "32"}) is False


def plan_of(pool=None, kubelet=None):
    spec = {"nodePools": [{"name": "inference", "nodeSelector": SEL, **(pool or {}),
                           "kubelet": kubelet or {}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin"}, "spec": spec})
    p, results = node_plan.build(cfg.nodePools[0], (1, 35), REF)
    assert [r for r in results if r.severity == ERROR] == []
    return p


def test_wanted_with_reserved_system_cpus():
    # the kubelet deletes kubeReserved.cpu and sets systemReserved.cpu to the count
    assert karpenter.wanted(plan_of()) == {
        "kubeReserved": {"cpu": "0", "memory": "500Mi"},
        "systemReserved": {"cpu": "4", "memory": "500Mi"},
        "evictionHard": EVICTION}


def test_wanted_without_reserved_system_cpus_and_with_max_pods():
    p = plan_of({"reserved": {"cores": 0}}, {
        "kubeReserved": {"cpu": "250m", "ephemeral-storage": "2Gi"}, "systemReserved": {},
        "extra": {"maxPods": 40}})
    assert karpenter.wanted(p) == {
        "kubeReserved": {"cpu": "250m", "memory": "0", "ephemeral-storage": "2Gi"},
        "systemReserved": {"cpu": "0", "memory": "0"},
        "evictionHard": EVICTION, "maxPods": 40}


def mirror(items, frozen=()):
    return karpenter.mirror(items, [("inference", SEL, plan_of())], set(frozen))


def test_mirror_edits_what_differs_and_warns_what_it_replaces():
    items = [nodepool(labels=SEL), nodeclass(kubelet={
        "kubeReserved": {"cpu": "0", "memory": "500Mi"}, "systemReserved": {"memory": "1Gi"}})]
    changes, results = mirror(items)
    assert [(c.path, c.old, c.new) for c in changes[1]] == [
        (("spec", "kubelet", "systemReserved", "cpu"), None, "4"),
        (("spec", "kubelet", "systemReserved", "memory"), "1Gi", "500Mi"),
        *((("spec", "kubelet", "evictionHard", s), None, v) for s, v in EVICTION.items())]
    assert [(r.severity, r.path) for r in results] == [
        (WARNING, "spec.kubelet.systemReserved.memory"), (INFO, "spec.kubelet")]
    assert results[0].message == (
        "node pool 'inference' (NodePool inference): spec.kubelet.systemReserved.memory 1Gi "
        "is replaced by the plan's 500Mi, so Karpenter plans nodes with the reservation the "
        "kubelet runs and krm-fn judged; to keep 1Gi, set kubelet.systemReserved.memory: 1Gi")


def test_mirror_of_an_agreeing_nodeclass_changes_nothing():
    kubelet = copy.deepcopy(karpenter.wanted(plan_of()))
    changes, results = mirror([nodepool(labels=SEL), nodeclass(kubelet=kubelet)])
    assert (changes, results) == ({}, [])


@pytest.mark.parametrize("items, frozen, why", [
    ([nodepool(labels=SEL)], (), "is not in the input"),
    ([nodepool(labels=SEL), nodeclass(annotations={
        "config.kubernetes.io/local-config": "true"})], (1,), "cannot be edited"),
])
def test_mirror_errors_when_it_cannot_edit_the_nodeclass(items, frozen, why):
    changes, results = mirror(items, frozen)
    [r] = results
    assert changes == {}
    assert (r.severity, r.ref.kind, r.path) == (
        ERROR, "NodePool", "spec.template.spec.nodeClassRef.name")
    assert why in r.message
    assert ('set the EC2NodeClass\'s spec.kubelet to {"kubeReserved":{"cpu":"0",'
            '"memory":"500Mi"},"systemReserved":{"cpu":"4","memory":"500Mi"}') in r.message


def test_one_nodeclass_for_two_pools_that_want_different_values_is_an_error():
    other = plan_of({"reserved": {"cores": 4}})
    changes, results = karpenter.mirror(
        [nodepool(labels=SEL), nodeclass()],
        [("inference", SEL, plan_of()), ("big", SEL, other)], set())
    errors = [r for r in results if r.severity == ERROR]
    assert [(r.path, r.current, r.proposed) for r in errors] == [
        ("spec.kubelet.systemReserved.cpu", "4", "8")]
    assert "give each pool its own EC2NodeClass" in errors[0].message


def test_render_edits_the_nodeclass_and_keeps_other_items():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "llm", "namespace": "serving"},
                  "spec": {"template": {"spec": {"containers": [{
                      "name": "vllm", "image": "vllm/vllm-openai-cpu:v0.10.0",
                      "resources": {"requests": {"cpu": "8", "memory": "16Gi"},
                                    "limits": {"cpu": "8", "memory": "16Gi"}}}]}}}}
    items = [deployment, nodepool(labels=SEL), nodeclass(), nodeclass("general")]
    out = transform(items, {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                            "metadata": {"name": "pin"}, "spec": {"nodePools": [
                                {"name": "inference", "nodeSelector": SEL}]}},
                    keep_tuned=True)
    assert sorted(out.changes) == [0, 2]
    assert out.tuned[2]["spec"]["kubelet"] == karpenter.wanted(out.pools[0][1])
    # validate mode: the edit is an error, nothing is written
    v = transform(items, None, mode="validate")
    assert v.changes == {}
    assert [r.path for r in v.results if r.severity == ERROR and r.ref and
            r.ref.kind == "EC2NodeClass"
            ][:2] == ["spec.kubelet.kubeReserved.cpu", "spec.kubelet.kubeReserved.memory"]


# hostile cases (a non-mapping on the edit path crashed the YAML writer; a pool selected by
# karpenter.sh/nodepool was never matched; a broad selector edited every NodeClass)

@pytest.mark.parametrize("nc, path, what", [
    ({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
      "metadata": {"name": "inference"}, "spec": ["a"]}, "spec", "a list"),
    (nodeclass(kubelet=[{"maxPods": 5}]), "spec.kubelet", "a list"),
    (nodeclass(kubelet="oops"), "spec.kubelet", "the str 'oops'"),
    (nodeclass(kubelet={"kubeReserved": ["cpu"]}), "spec.kubelet.kubeReserved", "a list"),
])
def test_a_nodeclass_of_another_shape_is_an_error_and_left_unchanged(nc, path, what):
    changes, results = mirror([nodepool(labels=SEL), nc])
    [r] = results
    assert changes == {}
    assert (r.severity, r.path) == (ERROR, path)
    assert r.message == (f"EC2NodeClass inference: {path} is {what}, not a mapping as "
                         f"Karpenter's API has it, so krm-fn cannot write node pool "
                         f"'inference''s reservation there; fix the object")


def test_the_nodepool_label_selects_the_nodepool_of_that_name():
    sel = {"karpenter.sh/nodepool": "inference"}
    assert karpenter.provisions(nodepool("inference"), sel)
    assert not karpenter.provisions(nodepool("general"), sel)


@pytest.mark.parametrize("selector", [{}, {"kubernetes.io/os": "linux"},
                                      {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}])
def test_a_selector_every_nodepool_matches_edits_nothing(selector):
    changes, results = karpenter.mirror([nodepool(labels=SEL), nodeclass()],
                                        [("inference", selector, plan_of())], set())
    [r] = results
    assert changes == {} and r.severity == WARNING
    assert "singles out no Karpenter NodePool" in r.message
    assert "karpenter.sh/nodepool: <NodePool name>" in r.message


def test_a_pool_no_nodepool_provisions_is_a_warning():
    changes, [r] = karpenter.mirror([nodepool(labels={"other": "x"}), nodeclass()],
                                    [("inference", SEL, plan_of())], set())
    assert changes == {} and r.severity == WARNING
    assert r.message.startswith("node pool 'inference': no karpenter.sh/v1 NodePool of the "
                                "input can provision nodes with its nodeSelector")


def test_conflicting_pools_leave_the_nodeclass_unchanged():
    other = plan_of({"reserved": {"cores": 4}})
    changes, results = karpenter.mirror(
        [nodepool(labels=SEL), nodeclass()],
        [("inference", SEL, plan_of()), ("big", SEL, other)], set())
    assert changes == {}
    assert any(r.severity == ERROR for r in results)


def test_two_nodepools_one_nodeclass_report_once():
    items = [nodepool("a", labels=SEL), nodepool("b", labels=SEL), nodeclass()]
    changes, results = mirror(items)
    assert len(results) == 1 and len(changes[2]) == 9


def test_nameless_objects_and_refs_match_nothing():
    nameless = nodeclass()
    del nameless["metadata"]["name"]
    np = nodepool(labels=SEL)
    del np["spec"]["template"]["spec"]["nodeClassRef"]["name"]
    changes, [r] = mirror([np, nameless])
    assert changes == {} and r.severity == ERROR
    assert "nodeClassRef has no name" in r.message
    changes, [r] = mirror([nodepool(labels=SEL), nameless])
    assert "EC2NodeClass inference, which is not in the input" in r.message


def test_replacing_a_cpu_reservation_under_reserved_system_cpus_says_it_cannot_be_kept():
    changes, results = mirror([nodepool(labels=SEL), nodeclass(kubelet={
        "kubeReserved": {"cpu": "300m"}})])
    [r] = [r for r in results if r.severity == WARNING]
    assert r.path == "spec.kubelet.kubeReserved.cpu"
    assert r.message.endswith(
        "it cannot be kept while the plan reserves CPUs as reservedSystemCPUs (the kubelet "
        "deletes kubeReserved.cpu and sets systemReserved.cpu to their count): "
        "reserved.cores sizes them, or reserved.cores: 0 with kubelet.kubeReserved.cpu: 300m")
