"""krm_fn/admission/hpa.py and the namespace total at maxReplicas (pipeline/quota.py): a
HorizontalPodAutoscaler that targets the workload, judged at the most pods it asks for."""
from __future__ import annotations

from krm_fn.admission import hpa
from krm_fn.admission.model import APP, AdmittedPod, Container
from tests.test_verdict import config, deployment, errors, render
from tests.admission.kit import cores

GI = 1 << 30
POD = AdmittedPod(None, "spec.template.spec", namespace="ai", containers=(
    Container("server", APP, {"cpu": cores(4), "memory": 8 * GI},
              {"cpu": cores(4), "memory": 8 * GI}, designated=True),))
HPA_SRC = ("https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/; "
           "kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go")
RQ_SRC = ("https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
          "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go")


def _hpa(max_replicas=10, min_replicas=None, name="srv", kind="Deployment", ns="ai",
         api="autoscaling/v2") -> dict:
    spec: dict = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name},
                  "maxReplicas": max_replicas}
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    return {"apiVersion": api, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "srv-hpa", **({"namespace": ns} if ns else {})},
            "spec": spec}


def _quota(hard: dict, name="team", scopes=None) -> dict:
    spec: dict = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": "ai"}, "spec": spec}


def test_targets_and_bounds():
    assert hpa.targets(_hpa(), "Deployment", "srv", "ai")
    assert not hpa.targets(_hpa(), "Deployment", "srv", "other")
    # no namespace on either side: the tool that applies it decides, so it counts
    assert hpa.targets(_hpa(ns=None), "Deployment", "srv", "ai")
    assert hpa.targets(_hpa(), "Deployment", "srv", "")
    assert not hpa.targets(_hpa(kind="StatefulSet"), "Deployment", "srv", "ai")
    assert not hpa.targets(_hpa(name="x"), "Deployment", "srv", "ai")
    assert hpa.bounds(_hpa(10)) == (1, 10)              # minReplicas defaults to 1
    assert hpa.bounds(_hpa("0x0A", 3)) == (3, 10)       # read as the API server reads it
    assert hpa.bounds(_hpa("010")) == (1, None)          # octal: 8 or 10, not used
    assert hpa.bounds({"spec": {}}) == (1, None)


def test_max_replicas_above_a_quota_is_an_error_naming_the_largest_that_fits():
    got = hpa.findings(POD, [_hpa(10, 2)], [_quota({"requests.cpu": "20"})])
    assert [(f.severity, f.rule, f.message) for f in got] == [(
        "error", "hpa",
        "ResourceQuota team of namespace ai: HorizontalPodAutoscaler srv-hpa scales this "
        "workload up to maxReplicas 10, which need requests.cpu=40, above its hard "
        "requests.cpu=20: the API server refuses the pods after the first 5 (\"exceeded "
        "quota: team\"; the controller reports FailedCreate) and the HPA scales into "
        "refusals, before counting the other pods of the namespace; set maxReplicas to at "
        f"most 5, or raise the quota ({RQ_SRC}; {HPA_SRC})")]


def test_max_replicas_within_the_quota_one_pod_above_it_or_not_counted_say_nothing_here():
    assert hpa.findings(POD, [_hpa(5)], [_quota({"requests.cpu": "20"})]) == []
    # one pod above the quota: resourcequota.refused's error already
    assert hpa.findings(POD, [_hpa(5)], [_quota({"requests.cpu": "2"})]) == []
    # a quota whose scope does not count the pod (not BestEffort)
    assert hpa.findings(POD, [_hpa(50)], [_quota({"pods": "1"}, scopes=["BestEffort"])]) == []
    # a container that does not state a resource the quota limits: refused's error
    no_memory = AdmittedPod(None, "spec.template.spec", namespace="ai", containers=(
        Container("server", APP, {"cpu": cores(4)}, {"cpu": cores(4)}),))
    limited = _quota({"requests.cpu": "8", "requests.memory": "1000Gi"})
    assert hpa.findings(no_memory, [_hpa(50)], [limited]) == []
    assert len(hpa.findings(POD, [_hpa(50)], [limited])) == 1


def test_the_nodes_max_replicas_need_at_the_fit_per_node():
    got = hpa.findings(POD, [_hpa(15, 3)], [], fit=7, pool="p")
    assert [(f.severity, f.rule, f.message) for f in got] == [(
        "info", "hpa",
        "HorizontalPodAutoscaler srv-hpa scales this workload between 3 and 15 replicas: at "
        "7 per node, 15 replicas need 3 nodes of pool 'p' with nothing else on them; krm-fn "
        "does not know how many the pool has, and the replicas beyond stay Pending "
        f"({HPA_SRC})")]
    assert [f.message.split(": at ")[1][:30] for f in
            hpa.findings(POD, [_hpa(7)], [], fit=7, pool="p")] == ["7 per node, 7 replicas need 1 "]
    assert hpa.findings(POD, [_hpa(7)], [], fit=0, pool="p") == []


def test_an_unreadable_max_replicas_is_said():
    got = hpa.findings(POD, [_hpa("010")], [_quota({"requests.cpu": "4"})], fit=7, pool="p")
    assert [(f.severity, f.message) for f in got] == [(
        "info", "HorizontalPodAutoscaler srv-hpa: spec.maxReplicas '010' is no whole number "
                "of at least 1, so krm-fn does not judge the replicas it scales to (the API "
                f"server refuses such an HPA) ({HPA_SRC})")]


def test_an_hpa_in_the_render_fails_the_workload_it_scales_into_refusals():
    quota = _quota({"requests.cpu": "20"})
    code, results, items = render(config(), quota, _hpa(10, 2, api="autoscaling/v1"),
                                  deployment())
    assert code == 1
    assert errors(results) == [
        "ResourceQuota team of namespace ai: HorizontalPodAutoscaler srv-hpa scales this "
        "workload up to maxReplicas 10, which need requests.cpu=40, above its hard "
        "requests.cpu=20: the API server refuses the pods after the first 5 (\"exceeded "
        "quota: team\"; the controller reports FailedCreate) and the HPA scales into "
        "refusals, before counting the other pods of the namespace; set maxReplicas to at "
        f"most 5, or raise the quota ({RQ_SRC}; {HPA_SRC})",
        "left unchanged because of the errors above"]
    assert items[2] == deployment()
    # an HPA of another workload or namespace changes nothing
    for other in (_hpa(10, name="x"), _hpa(10, ns="elsewhere")):
        assert render(config(), quota, other, deployment())[0] == 0


def test_the_namespace_total_at_max_replicas():
    # srv alone fits 20 CPUs at its maxReplicas 5, but not beside the other Deployment
    quota = _quota({"requests.cpu": "20"})
    code, results, _ = render(config(), quota, _hpa(5), deployment(), deployment("other"))
    assert code == 1
    assert errors(results) == [
        "ResourceQuota team of namespace ai: the render's pods in the namespace need "
        "requests.cpu=24 together (Deployment srv 5 × requests.cpu=4, Deployment other 1 × "
        "requests.cpu=4), above its hard requests.cpu=20: created in render order with "
        "Deployment srv at HorizontalPodAutoscaler srv-hpa's maxReplicas 5, the API server "
        "admits 0 of the 1 pod of Deployment other and refuses the rest (\"exceeded quota: "
        "team\"; its controller reports FailedCreate); the controllers of the workloads "
        "create their pods side by side, so which workload loses pods is a race, and other "
        "pods of the namespace, which krm-fn does not see, count too; raise its hard "
        "requests.cpu by 4 (to 24), or lower the replicas or the resources "
        f"({RQ_SRC}, pkg/quota/v1/evaluator/core/pods.go)",
        "left unchanged because of the errors above"]
    # at maxReplicas 4 they fit together
    assert render(config(), quota, _hpa(4), deployment(), deployment("other"))[0] == 0
