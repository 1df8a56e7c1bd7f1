"""ResourceQuota scopes and scope selectors (krm_fn/admission/quotascope.py): which quotas of
its namespace count a pod, as pods.go podMatchesScopeFunc decides; through the function, in
one pod's check (resourcequota.refused) and in the namespace total (quotatotal);
tests/test_quota_differential.py checks the same against the real API server."""
from __future__ import annotations

import pytest

from krm_fn.admission import quotascope
from krm_fn.admission.build import priority_class_name
from tests.admission.kit import ctr, pod
from tests.test_verdict import config, deployment, render

SCOPE_SRC = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-scopes; "
             "kubernetes/kubernetes pkg/quota/v1/evaluator/core/pods.go (podMatchesScopeFunc))")
RQ_SRC = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
          "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go")
NO_DEFAULT = ("a pod without priorityClassName: the pod names none and the input holds no "
              "PriorityClass with globalDefault: true (the Priority admission plugin gives "
              "the pod the name of the cluster's globalDefault PriorityClass where there is "
              "one)")


def _quota(name="q", hard=None, scopes=None, sel=None) -> dict:
    spec: dict = {"hard": hard or {"pods": "10"}}
    if scopes is not None:
        spec["scopes"] = scopes
    if sel is not None:
        spec["scopeSelector"] = {"matchExpressions": sel}
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": "ai"}, "spec": spec}


def _pc(op, *values) -> list:
    e = {"scopeName": "PriorityClass", "operator": op}
    if values:
        e["values"] = list(values)
    return [e]


CROSS = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}}
SAME = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "k", "namespaces": []}]}}

MATCHES = [
    # (scopes, scopeSelector, pod fields, expected)
    (["Terminating"], None, {"active_deadline": "60"}, (True, "")),
    (["Terminating"], None, {}, (False, "scope Terminating does not match: the pod sets no "
                                        "activeDeadlineSeconds")),
    (["NotTerminating"], None, {"active_deadline": "0"}, (
        False, "scope NotTerminating does not match: the pod sets activeDeadlineSeconds")),
    (["NotTerminating"], None, {"active_deadline": "1.5"}, (
        None, "scope NotTerminating: activeDeadlineSeconds 1.5 is not a whole number")),
    (["NotBestEffort", "NotTerminating"], None, {}, (True, "")),
    (["BestEffort"], None, {}, (False, "scope BestEffort does not match: the pod is "
                                       "Guaranteed")),
    (["BestEffort"], None, {"containers": (ctr("a", 0)._replace(requests={},
                                                          limits={}),)}, (True, "")),
    (None, _pc("In", "high", "mid"), {"priority_class": "high"}, (True, "")),
    (None, _pc("In", "high"), {"priority_class": "low"}, (
        False, "scopeSelector PriorityClass In (high) does not match: priorityClassName low")),
    (None, _pc("In", "high"), {}, (
        False, "scopeSelector PriorityClass In (high) does not match " + NO_DEFAULT)),
    (None, _pc("NotIn", "high"), {"priority_class": "low"}, (True, "")),
    (None, _pc("NotIn", "high"), {}, (
        True, "scopeSelector PriorityClass NotIn (high) matches " + NO_DEFAULT)),
    (None, _pc("Exists"), {"priority_class": "low"}, (True, "")),
    (None, _pc("DoesNotExist"), {"priority_class": "low"}, (
        False, "scopeSelector PriorityClass DoesNotExist does not match: priorityClassName "
               "low")),
    (None, _pc("DoesNotExist"), {}, (
        True, "scopeSelector PriorityClass DoesNotExist matches " + NO_DEFAULT)),
    # every selector must match: scopes and the scopeSelector together
    (["NotTerminating"], _pc("In", "high"), {"priority_class": "high",
                                             "active_deadline": "5"}, (
        False, "scope NotTerminating does not match: the pod sets activeDeadlineSeconds")),
    (["CrossNamespacePodAffinity"], None, {"affinity": CROSS}, (True, "")),
    (["CrossNamespacePodAffinity"], None, {"affinity": SAME}, (
        False, "scope CrossNamespacePodAffinity does not match: no pod affinity term names "
               "namespaces or a namespaceSelector")),
    (None, [{"scopeName": "VolumeAttributesClass", "operator": "Exists"}], {}, (
        False, "scopeSelector VolumeAttributesClass Exists does not match: it counts "
               "PersistentVolumeClaims, not pods")),
]


@pytest.mark.parametrize("scopes,sel,fields,expected", MATCHES)
def test_a_pod_matches_a_quotas_scopes_as_pods_go_says(scopes, sel, fields, expected):
    p = pod(ctr("app", 2))._replace(**fields)
    assert quotascope.matches(_quota(scopes=scopes, sel=sel), p) == expected


PROBLEMS = [
    (None, None, None, None),
    (["NotBestEffort"], None, {"requests.cpu": "4"}, None),
    (["BestEffort"], None, {"requests.cpu": "4", "pods": "2"},
     "scope BestEffort does not apply to requests.cpu: the API server allows only pods "
     "with it"),
    (["Daily"], None, None, "scope Daily: Daily is no scope the API server knows"),
    (["Terminating", "NotTerminating"], None, None,
     "its scope names both Terminating and NotTerminating"),
    # across scopes and scopeSelector it is valid and matches no pod
    (["Terminating"], [{"scopeName": "NotTerminating", "operator": "Exists"}], None, None),
    (None, [{"scopeName": "BestEffort", "operator": "DoesNotExist"}], None,
     "scopeSelector BestEffort DoesNotExist: the API server allows only Exists with "
     "BestEffort"),
    (None, _pc("In"), None, "scopeSelector PriorityClass In: In needs at least one value"),
    (None, _pc("Exists", "a"), None, "scopeSelector PriorityClass Exists (a): Exists takes "
                                      "no values"),
    (None, _pc("Gt", "1"), None, "scopeSelector PriorityClass Gt (1): Gt is no scope "
                                  "selector operator"),
    (None, _pc("In", "x" * 64), None, f"scopeSelector PriorityClass In ({'x' * 64}): "
     f"{'x' * 64} is no label value, so the API server cannot match the selector"),
]


@pytest.mark.parametrize("scopes,sel,hard,expected", PROBLEMS)
def test_what_the_api_server_refuses_or_cannot_match_is_a_problem(scopes, sel, hard,
                                                                  expected):
    assert quotascope.problem(_quota(hard=hard, scopes=scopes, sel=sel)) == expected


def _class(value, default) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": value,
            "globalDefault": default}


def test_the_priority_plugin_names_the_lowest_global_default_class():
    classes = {"high": _class("1000", "true"), "std": _class("100", "true"),
               "low": _class("10", "false")}
    assert priority_class_name({}, classes) == "std"
    assert priority_class_name({"priorityClassName": "low"}, classes) == "low"
    assert priority_class_name({}, {"low": classes["low"]}) == ""


# --- through the function -----------------------------------------------------------------

def _dep(name: str, cpu: str, priority: str | None = None, **spec) -> dict:
    box = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}
    pod_spec = {"containers": [{"name": "server", "image": "s:1", "resources": box}], **spec}
    if priority:
        pod_spec["priorityClassName"] = priority
    return deployment(name, spec=pod_spec)


def _quota_results(results: list) -> list:
    return [(s, m) for s, m in results if "ResourceQuota" in m]


HIGH = _quota("high", {"requests.cpu": "7"}, sel=_pc("In", "high"))


def test_a_priority_class_quota_counts_the_high_priority_workloads_only():
    code, results, _ = render(config(), HIGH, _dep("a", "3500m", "high"),
                              _dep("b", "3500m", "high"), _dep("c", "4", "low"))
    assert code == 1
    fits = (f"ResourceQuota high of namespace ai: 1 replica use requests.cpu=4 of its hard "
            f"requests.cpu=7; the other pods of the namespace count against it too, and "
            f"krm-fn does not see them {RQ_SRC})")
    assert _quota_results(results) == [
        ("info", fits),
        # b is left unchanged (below), so a's pod runs beside b's as the input writes it
        ("error", "ResourceQuota high of namespace ai: the render's pods in the namespace "
                  "need requests.cpu=7500m together (Deployment b 1 × requests.cpu=3500m, "
                  "Deployment a 1 × requests.cpu=4), above its hard requests.cpu=7: with "
                  "Deployment b left unchanged (the pods the input writes, which run already) "
                  "and the others' pods created after them, the API server admits 0 of the 1 "
                  "pod of Deployment a and refuses the rest (\"exceeded quota: high\"; its "
                  "controller reports FailedCreate); the controllers of the workloads create "
                  "their pods side by side, so which workload loses pods is a race, and other "
                  "pods of the namespace, which krm-fn does not see, count too; the input's "
                  "own amounts fit (requests.cpu=7): krm-fn raised Deployment a's cpu from "
                  "3500m to 4 per pod (requests.cpu), and that is what breaks it; raise its "
                  "hard requests.cpu by 500m (to 7500m), or lower the replicas or the "
                  "resources (krm-fn.dev/cpus: N on a workload pins N whole CPUs per pod) "
                  + RQ_SRC + ", pkg/quota/v1/evaluator/core/pods.go)"),
        ("info", fits),
        ("error", "ResourceQuota high of namespace ai: the render's pods in the namespace "
                  "need requests.cpu=8 together (Deployment a 1 × requests.cpu=4, Deployment "
                  "b 1 × requests.cpu=4), above its hard requests.cpu=7: created in render "
                  "order, the API server admits 0 of the 1 pod of Deployment b and refuses "
                  "the rest (\"exceeded quota: high\"; its controller reports FailedCreate); "
                  "the controllers of the workloads create their pods side by side, so which "
                  "workload loses pods is a race, and other pods of the namespace, which "
                  "krm-fn does not see, count too; the input's own amounts fit "
                  "(requests.cpu=7): krm-fn raised Deployment a's cpu from 3500m to 4 per pod "
                  "(requests.cpu), Deployment b's cpu from 3500m to 4 per pod (requests.cpu), "
                  "and that is what breaks it; raise its hard requests.cpu by 1 (to 8), or "
                  "lower the replicas or the resources (krm-fn.dev/cpus: N on a workload pins "
                  "N whole CPUs per pod) " + RQ_SRC + ", pkg/quota/v1/evaluator/core/pods.go)"),
        ("info", "ResourceQuota high of namespace ai does not count this pod: scopeSelector "
                 "PriorityClass In (high) does not match: priorityClassName low " + SCOPE_SRC)]


def test_the_input_global_default_class_names_a_pod_without_one():
    std = {**_class("100", "true"), "metadata": {"name": "high"}}
    code, results, _ = render(config(), std, HIGH, _dep("a", "4"), _dep("b", "4"))
    assert code == 1
    assert [s for s, m in _quota_results(results)] == ["info", "error", "info", "error"]
    # a's rollout: its old pod and its new one, 4 each, under 7
    assert "the next new pod makes requests.cpu=8" in _quota_results(results)[1][1]
    assert "need requests.cpu=8 together" in _quota_results(results)[3][1]


def test_a_pod_whose_scope_krm_fn_cannot_tell_is_said_and_not_counted():
    skipped = _dep("b", "4", activeDeadlineSeconds="soon")
    skipped["metadata"]["annotations"] = {"krm-fn.dev/skip": "true"}
    quota = _quota("run", {"requests.cpu": "6"}, scopes=["NotTerminating"])
    code, results, _ = render(config(), quota, _dep("a", "4", activeDeadlineSeconds="soon"),
                              skipped)
    why = ("scope NotTerminating: activeDeadlineSeconds soon is not a whole number")
    assert _quota_results(results) == [
        ("info", f"ResourceQuota run of namespace ai: krm-fn cannot tell whether it counts "
                 f"this pod ({why}), so it does not check the pod against it; the API server "
                 f"does {SCOPE_SRC}"),
        ("info", f"Deployment b is not counted in the total of namespace ai against "
                 f"ResourceQuota run: krm-fn cannot tell whether it counts its pods ({why}); "
                 f"the API server does {SCOPE_SRC}")]


def test_a_quota_the_api_server_refuses_is_said_once():
    # refused by the API server's validation (validateResourceQuotaScopes): an error on
    # the quota (pipeline/refused.py), which counts no pod
    quota = _quota("be", {"requests.cpu": "1"}, scopes=["BestEffort"])
    code, results, _ = render(config(), quota, _dep("a", "4"), _dep("b", "4"))
    assert code == 1
    assert _quota_results(results) == [(
        "error", 'the API server refuses ResourceQuota be of namespace ai (ResourceQuota "be" '
                 'is invalid: spec.scopes: Invalid value: ["BestEffort"]: unsupported scope '
                 'applied to resource): it is never created, so it counts no pod of the '
                 'render; fix the ResourceQuota (kubernetes/kubernetes pkg/apis/core/'
                 'validation/validation.go ValidateResourceQuota)')]


def test_a_terminating_quota_counts_only_the_pods_with_a_deadline():
    quota = _quota("t", {"pods": "3"}, scopes=["Terminating"])
    code, results, _ = render(config(), quota, _dep("a", "4", activeDeadlineSeconds=600),
                              _dep("b", "4", activeDeadlineSeconds=600), _dep("c", "4"))
    assert code == 0
    assert [s for s, _ in _quota_results(results)] == ["info", "info", "info"]
    assert _quota_results(results)[2][1] == (
        "ResourceQuota t of namespace ai does not count this pod: scope Terminating does not "
        "match: the pod sets no activeDeadlineSeconds " + SCOPE_SRC)


def test_a_quota_that_counts_the_pod_needs_every_container_to_state_what_it_limits():
    from krm_fn.admission import resourcequota as rq
    from krm_fn.admission.model import INIT
    bare = ctr("setup", 1, role=INIT)._replace(requests={}, limits={})
    p = pod(bare, ctr("app", 2)._replace(limits={}))
    assert rq.unstated(p, _quota(hard={"requests.cpu": "4", "limits.memory": "1Gi",
                                       "pods": "3"})) == (
        "limits.memory for: app,setup; requests.cpu for: setup")
    assert rq.unstated(p, _quota(hard={"pods": "3"})) is None
    # pod-level resources take the place of the containers' (PodLevelResources)
    level = p._replace(pod_requests={"cpu": 2})
    assert rq.unstated(level, _quota(hard={"requests.cpu": "4"})) is None


def test_a_best_effort_workload_is_refused_by_a_cpu_quota_that_counts_it():
    bare = deployment("e", spec={"containers": [{"name": "app", "image": "a:1"}]},
                      meta={"annotations": {"krm-fn.dev/skip": "true"}})
    code, results, _ = render(config(), _quota("cpu", {"requests.cpu": "8"}), bare,
                              _dep("a", "4"))
    assert code == 0
    assert _quota_results(results)[-1] == (
        "warning", "ResourceQuota cpu of namespace ai: every pod is refused (\"failed quota: "
                   "cpu: must specify requests.cpu for: app\"): a quota that counts the pod "
                   "and limits cpu or memory needs every container to state them; set the "
                   "requests and limits, or pod-level resources " + RQ_SRC
                   + ", pkg/quota/v1/evaluator/core/pods.go Constraints)")
    # a quota scoped to NotBestEffort does not count it
    scoped = _quota("cpu", {"requests.cpu": "8"}, scopes=["NotBestEffort"])
    code, results, _ = render(config(), scoped, bare, _dep("a", "4"))
    assert [s for s, _ in _quota_results(results)] == ["info"]
