"""A PriorityClass of the input the API server refuses to create (krm_fn/admission/
priority.py `class_errors`: pkg/apis/scheduling/validation/validation.go
ValidatePriorityClass) does not exist, and the Priority admission plugin refuses a pod that
names a class that does not exist ("no PriorityClass with name krmfn-top was found"): the
pod's verdict is an error, and a refused globalDefault class is no default.

Found by sending the render's objects to the real API server: a PriorityClass of value
2000000000 (above the largest a user may define) named by the pod left the verdict at
`Guaranteed after admission` and exit 0. Each case is sent to the real API server: the
class's errors must be krm-fn's, and the pod naming it must be refused in the plugin's
words."""
from __future__ import annotations

import itertools

import pytest

from krm_fn.admission import priority
from tests.test_verdict import config, deployment, errors, render, verdicts

_names = itertools.count()


def _pc(name: str, value=1000, **fields) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **fields}


# name: (PriorityClass, the API server's errors)
TABLE = {
    "above-the-user-maximum": (
        _pc("krmfn-top", 2000000000),
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]),
    "the-user-maximum": (_pc("krmfn-max", 1000000000), []),
    "preemption-policy-lower-case": (
        _pc("krmfn-never", preemptionPolicy="never"),
        ['preemptionPolicy: Unsupported value: "never": supported values: '
         '"PreemptLowerPriority", "Never"']),
    "system-prefix": (
        _pc("system-krmfn", 1000),
        ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
         "for system use only. error: system-krmfn is not a known system priority class"]),
    "a-system-class-as-it-is": (_pc("system-node-critical", 2000001000), []),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_class_errors(name):
    pc, want = TABLE[name]
    assert priority.class_errors(pc["metadata"]["name"], pc) == want


@pytest.mark.parametrize("name", sorted(TABLE))
def test_the_api_server_refuses_exactly_those(controlplane, name):
    pc, want = TABLE[name]
    status, got = controlplane.request(
        "POST", "/apis/scheduling.k8s.io/v1/priorityclasses?dryRun=All", pc)
    if pc["metadata"]["name"] in priority.SYSTEM:
        assert status == 409, got          # the cluster holds it already, as krm-fn reads
        return
    said = [] if status == 201 else [f"{c['field']}: {c['message']}"
                                     for c in got["details"]["causes"]]
    assert said == want, got


def test_a_pod_naming_a_missing_class_is_refused_by_the_plugin(controlplane):
    ns = controlplane.pod_namespace("prio-missing")
    status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"priorityClassName": "krmfn-top",
                 "containers": [{"name": "a", "image": "a:1"}]}})
    assert (status, got["message"]) == (
        403, 'pods "p" is forbidden: no PriorityClass with name krmfn-top was found')


def test_a_pod_naming_a_refused_class_is_refused():
    dep = deployment(spec={"priorityClassName": "krmfn-top", "containers": [
        {"name": "server", "image": "srv:1", "resources": {
            "requests": {"cpu": "4", "memory": "8Gi"},
            "limits": {"cpu": "4", "memory": "8Gi"}}}]})
    code, results, _ = render(config(), _pc("krmfn-top", 1000000000), dep)
    assert code == 0
    code, results, _ = render(config(), _pc("krmfn-top", 2000000000), dep)
    assert code == 1
    assert errors(results) == [
        "the API server refuses PriorityClass krmfn-top (PriorityClass.scheduling.k8s.io "
        "\"krmfn-top\" is invalid: value: Forbidden: maximum allowed value of a user defined "
        "priority is 1000000000): it is never created, so the Priority admission plugin "
        "refuses the pod (no PriorityClass with name krmfn-top was found) unless the "
        "cluster holds one of that name already; fix the PriorityClass "
        "(kubernetes/kubernetes pkg/apis/scheduling/validation/validation.go "
        "ValidatePriorityClass; https://github.com/kubernetes/kubernetes/blob/master/plugin/"
        "pkg/admission/priority/admission.go)",
        "left unchanged because of the errors above"]
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each); will not run pinned (see the errors)"]


def test_a_refused_global_default_class_is_no_default():
    good = _pc("krmfn-default", 100, globalDefault=True)
    bad = _pc("krmfn-bad-default", 2000000000, globalDefault=True)
    assert priority.default_class({"krmfn-default": good})[0] == "krmfn-default"
    assert priority.default_class({"krmfn-bad-default": bad}) is None
