"""ResourceQuotas, HorizontalPodAutoscalers and Namespaces of the input the API server
refuses to create (krm_fn/admission/apiobjects.py: ValidateResourceQuota,
ValidateHorizontalPodAutoscaler, ValidateNamespace's labels and annotations) are an error
on the object, and count, scale or label no pod.

Found by sending rendered objects to the real API server: a quota `pods: 1500m` (not an
integer) made krm-fn refuse a pod for exceeding it; a negative quota or an HPA with
`minReplicas: 0` got exit 0 or judged the workload at the HPA's bounds; a Namespace whose
64-character label value the API server refuses made krm-fn inject Istio by its
`istio-injection` label. The errors are compared with the real API server's."""
from __future__ import annotations

import itertools

import pytest

from krm_fn.admission import apiobjects
from tests.test_verdict import config, deployment, errors, render, verdicts

_names = itertools.count()
LONG = "a" * 64


def _quota(hard, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "ai"}, "spec": {"hard": hard, **spec}}


def _hpa(low=None, high=10, ref=None, version="autoscaling/v2") -> dict:
    spec = {"scaleTargetRef": ref or {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "srv"}}
    spec.update({k: v for k, v in (("minReplicas", low), ("maxReplicas", high))
                 if v is not None})
    return {"apiVersion": version, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "ai"}, "spec": spec}


def _ns(labels=None, annotations=None) -> dict:
    md = {"name": "ai", **({"labels": labels} if labels else {}),
          **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}


SEL = [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]
QUOTAS = {
    "negative": _quota({"requests.cpu": "-1", "limits.memory": "-1Gi"}),
    "pods-fraction": _quota({"pods": "1500m", "requests.cpu": "4"}),
    "extended-fraction": _quota({"count/pods": "500m", "nvidia.com/gpu": "0.5",
                                 "requests.nvidia.com/gpu": "0.5"}),
    "names": _quota({"foo": "1", "storage": "1Gi", "Bad_Name/x": "1"}),
    "scopes": _quota({"cpu": "4", "services": "2"}, scopes=["BestEffort", "NotBestEffort"]),
    "unknown-scope": _quota({"cpu": "4"}, scopes=["Everything"]),
    "selector-values": _quota({"cpu": "4"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In"},
        {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
        {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]},
        {"scopeName": "PriorityClass", "operator": "Like", "values": ["x"]}]}),
    "selector-resource": _quota({"pods": "4", "cpu": "2"}, scopeSelector={
        "matchExpressions": [{"scopeName": "BestEffort", "operator": "Exists"},
                             {"scopeName": "NotBestEffort", "operator": "Exists"}]}),
    "name-upper": {**_quota({"pods": "4"}), "metadata": {"name": "Team_Q"}},
    "accepted-dotted-name": {**_quota({"pods": "4"}), "metadata": {"name": "team.q"}},
    "accepted": _quota({"pods": "4", "requests.cpu": "1500m",
                        "requests.example.com/x": "1500m"}, scopeSelector={
        "matchExpressions": SEL}),
    "hugepages-scoped": _quota({"hugepages-2Mi": "1Gi"}, scopeSelector={
        "matchExpressions": SEL}),
    "accepted-hugepages": _quota({"hugepages-2Mi": "1Gi", "requests.hugepages-1Gi": "2Gi"}),
    "accepted-zero": _quota({"pods": "0", "cpu": "0"}),
}
HPAS = {
    "min-zero": _hpa(0),
    "max-below-min": _hpa(5, 2),
    "no-max": _hpa(2, None),
    "max-negative": _hpa(None, -1),
    "ref-bad": _hpa(ref={"apiVersion": "a/b/c", "kind": "..", "name": "a/b%"}),
    "ref-empty": _hpa(ref={"apiVersion": "apps/v1"}),
    "v1-min-zero": _hpa(0, 3, version="autoscaling/v1"),
    "min-negative": _hpa(-1, 3),
    "name-upper": {**_hpa(1, 3), "metadata": {"name": "H"}},
    "accepted": _hpa(1, 1),
    "accepted-zero": {**_hpa(0, 3), "spec": {**_hpa(0, 3)["spec"], "metrics": [
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {
            "type": "Value", "value": "10"}}}]}},
    "accepted-core-group": _hpa(ref={"apiVersion": "v1", "kind": "ReplicationController",
                                     "name": "srv"}),
    "core-group": _hpa(ref={"apiVersion": "v1", "kind": "Deployment", "name": "srv"}),
}
NAMESPACES = {
    "long-value": _ns({"istio-injection": "enabled", "team": LONG}),
    "bad-key": _ns({"a b": "x", "example.com/": "y"}),
    "bad-value": _ns({"x": "-y"}),
    "name-dotted": {**_ns(), "metadata": {"name": "a.b"}},
    "name-upper": {**_ns(), "metadata": {"name": "AI"}},
    "name-long": {**_ns(), "metadata": {"name": "n" * 64}},
    "annotation-key": _ns(annotations={"Example.COM/Foo": "ok", "a b": "x"}),
    "accepted": _ns({"istio-injection": "enabled", "x": "", "x.y/Z": "a" * 63}),
}
TABLE = {**{f"quota-{k}": v for k, v in QUOTAS.items()},
         **{f"hpa-{k}": v for k, v in HPAS.items()},
         **{f"namespace-{k}": v for k, v in NAMESPACES.items()}}


def _path(obj: dict) -> str:
    if obj["kind"] == "Namespace":
        return "/api/v1/namespaces"
    if obj["kind"] == "ResourceQuota":
        return "/api/v1/namespaces/refused/resourcequotas"
    return f"/apis/{obj['apiVersion']}/namespaces/refused/horizontalpodautoscalers"


def _same(ours: str, theirs: str) -> bool:
    """An error of ours is the API server's: the same text, or where ours shows a value as
    `...` (a Go struct the API server prints), the same field, type and detail."""
    if ": ...: " not in ours:
        return ours == theirs
    head, _, detail = ours.partition(": ...: ")
    return theirs.startswith(head + ": ") and theirs.endswith(": " + detail)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_the_api_server_refuses_exactly_those(controlplane, name):
    controlplane.ensure_namespace("refused")
    written = TABLE[name]["metadata"]["name"]
    keep = written not in ("q", "h", "ai")      # a name the case is about
    obj = {**TABLE[name], "metadata": {**TABLE[name]["metadata"],
                                       "name": written if keep else f"o{next(_names)}"}}
    obj["metadata"].pop("namespace", None)
    status, got = controlplane.request("POST", _path(obj) + "?dryRun=All", obj)
    assert status in (201, 422), got
    theirs = [] if status == 201 else sorted(
        f"{c['field']}: {c['message']}" for c in got["details"]["causes"])
    ours = apiobjects.errors(obj)
    assert len(ours) == len(theirs), (ours, theirs)
    left = list(theirs)
    for e in ours:
        match = next((t for t in left if _same(e, t)), None)
        assert match is not None, (e, theirs)
        left.remove(match)
    assert bool(ours) == ("accepted" not in name)


def test_a_refused_quota_refuses_no_pod():
    code, results, _ = render(config(), _quota({"pods": "1500m", "requests.cpu": "1"}),
                              deployment())
    assert code == 1
    assert errors(results) == [
        'the API server refuses ResourceQuota q of namespace ai (ResourceQuota "q" is '
        'invalid: spec.hard[pods]: Invalid value: "1500m": must be an integer): it is never '
        'created, so it counts no pod of the render; fix the ResourceQuota (kubernetes/'
        'kubernetes pkg/apis/core/validation/validation.go ValidateResourceQuota)']
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each)"]


def test_a_negative_quota_is_an_error():
    code, results, _ = render(config(), _quota({"requests.cpu": "-1"}), deployment())
    assert code == 1
    assert errors(results)[0].startswith(
        'the API server refuses ResourceQuota q of namespace ai (ResourceQuota "q" is '
        'invalid: spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or '
        'equal to 0)')


@pytest.mark.parametrize("low,high", [(0, 10), (5, 2)])
def test_a_refused_hpa_scales_nothing(low, high):
    code, results, _ = render(config(), _hpa(low, high),
                              _quota({"requests.cpu": "10"}), deployment())
    assert code == 1
    said = errors(results)
    assert len(said) == 1, said
    assert said[0].startswith('the API server refuses HorizontalPodAutoscaler h of '
                              'namespace ai (HorizontalPodAutoscaler "h" is invalid: '
                              'spec.')
    assert "it scales no workload of the render" in said[0]


def test_a_refused_namespace_labels_no_pod():
    code, results, _ = render(config(), _ns({"istio-injection": "enabled", "team": LONG}),
                              deployment())
    assert code == 1
    assert errors(results) == [
        f'the API server refuses Namespace ai (Namespace "ai" is invalid: metadata.labels: '
        f'Invalid value: "{LONG}": must be no more than 63 bytes): it is never created, so '
        f'its labels and annotations apply to no pod of the render; fix the Namespace '
        f'(kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateNamespace)']
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each)"]


EXTERNAL = [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {
    "type": "Value", "value": "10"}}}]


@pytest.mark.parametrize("version,refused", [("1.35", True), ("1.36", True), ("1.37", False)])
def test_an_hpa_to_zero_is_refused_before_1_37(version, refused):
    # HPAScaleToZero is beta and on by default from 1.37 (pkg/features/kube_features.go);
    # before, minReplicas 0 is refused whatever the metrics
    hpa = _hpa(0, 3)
    hpa["spec"]["metrics"] = EXTERNAL
    code, results, _ = render(config(version=version), hpa, deployment())
    said = [m for m in errors(results) if "HorizontalPodAutoscaler" in m]
    assert bool(said) == refused and code == int(refused)
    if refused:
        assert ('spec.minReplicas: Invalid value: 0: must be greater than or equal to 1'
                in said[0])
    assert apiobjects.errors(hpa, 36) and not apiobjects.errors(hpa)
