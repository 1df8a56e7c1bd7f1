"""The Priority admission plugin (krm_fn/admission/priority.py): a pod template that writes
`priority` or `preemptionPolicy` other than what its PriorityClass gives is refused, every
pod of the workload fails to be created. Each case is judged by krm-fn and sent to the real
API server (tests/controlplane, the plugin on), which must refuse it in the same words.
(Hostile test: such a Deployment got "Guaranteed after admission" and exit 0.)
"""
from __future__ import annotations

import json

import pytest

from tests.helpers import load, results, run_fn

CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "krmfn-high"}, "value": 1000}
RES = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}

# name: (pod spec fields, [(severity, field, message start)])
CASES = {
    "priority-other-than-the-class": (
        {"priorityClassName": "krmfn-high", "priority": 5},
        [("error", "priority", "the integer value of priority (5) must not be provided in pod "
          "spec; priority admission controller computed 1000 from the given PriorityClass "
          "name")]),
    "preemption-policy-other-than-the-class": (
        {"priorityClassName": "krmfn-high", "preemptionPolicy": "Never"},
        [("error", "preemptionPolicy", "the string value of PreemptionPolicy (Never) must not "
          "be provided in pod spec; priority admission controller computed "
          "PreemptLowerPriority from the given PriorityClass name")]),
    "the-class-own-values": (
        {"priorityClassName": "krmfn-high", "priority": 1000,
         "preemptionPolicy": "PreemptLowerPriority"}, []),
}


def _deployment(fields: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llm", "namespace": "prio"},
            "spec": {"selector": {"matchLabels": {"app": "llm"}}, "template": {
                "metadata": {"labels": {"app": "llm"}},
                "spec": {**fields, "containers": [
                    {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.8.5",
                     "resources": RES}]}}}}


def _render(obj: dict) -> tuple:
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
           "items": [CLASS, obj],
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "t"}, "spec": {}}}
    p = run_fn([], json.dumps(doc))
    return p.returncode, load(p.stdout)


@pytest.mark.parametrize("name", list(CASES))
def test_priority_fields_against_the_api_server(controlplane, name):
    fields, want = CASES[name]
    code, out = _render(_deployment(fields))
    found = [(r["severity"], r["field"]["path"].rsplit(".", 1)[-1], r["message"])
             for r in results(out) if r["message"].startswith("the ")]
    assert [(s, f, m.split(": the Priority")[0]) for s, f, m in found] == want
    assert code == (1 if want else 0)
    # the real plugin: the class created, the pod sent with dryRun
    status, _ = controlplane.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                                     CLASS)
    assert status in (201, 409)
    controlplane.ensure_namespace("prio")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "prio"},
           "spec": _deployment(fields)["spec"]["template"]["spec"]}
    status, body = controlplane.request("POST", "/api/v1/namespaces/prio/pods?dryRun=All", pod)
    if want:
        assert status == 403, body
        assert all(m in body["message"] for _, _, m in want), body["message"]
    else:
        assert status == 201, body


def test_no_class_and_no_global_default_in_the_input_is_a_warning():
    """The plugin computes 0 and PreemptLowerPriority unless the cluster has a
    globalDefault class, which the input does not show: a warning, the item tuned."""
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
           "items": [_deployment({"priority": 7})],
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "t"}, "spec": {}}}
    p = run_fn([], json.dumps(doc))
    assert p.returncode == 0
    [w] = [r for r in results(load(p.stdout), "warning") if "priority" in r["message"]]
    assert w["message"].startswith(
        "the integer value of priority (7) must not be provided in pod spec; priority "
        "admission controller computed 0 from the given PriorityClass name: the Priority "
        "admission plugin refuses every pod of the workload, which computes it from no "
        "PriorityClass (none is named, and the input holds no globalDefault one) unless the "
        "cluster has a globalDefault class of value 7")


@pytest.mark.parametrize("name,said", [
    ("krmfn-nowhere", True),                 # the cluster lacks it: refused
    ("system-cluster-critical", False),      # every API server has these two
    ("system-node-critical", False),
])
def test_a_class_the_input_lacks_is_said_to_decide_admission(controlplane, name, said):
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
           "items": [_deployment({"priorityClassName": name})],
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "t"}, "spec": {}}}
    p = run_fn([], json.dumps(doc))
    assert p.returncode == 0
    notes = [(r["severity"], r["field"]["path"], r["message"]) for r in results(load(p.stdout))
             if r["message"].startswith("PriorityClass ")]
    assert notes == ([(
        "info", "spec.template.spec.priorityClassName",
        f"PriorityClass {name} is not in the input: the API server refuses the pod unless the "
        f"cluster has it (no PriorityClass with name {name} was found), and krm-fn does not "
        f"know its value (which pods preempt which, the quotas whose scopeSelector names it);"
        f" add it to the input to have it judged (https://github.com/kubernetes/kubernetes/"
        f"blob/master/plugin/pkg/admission/priority/admission.go)")] if said else [])
    # the real plugin on a control plane without the class (system ones exist)
    controlplane.ensure_namespace("prio")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "prio"},
           "spec": _deployment({"priorityClassName": name})["spec"]["template"]["spec"]}
    status, body = controlplane.request("POST", "/api/v1/namespaces/prio/pods?dryRun=All", pod)
    if said:
        assert status == 403, body
        assert f"no PriorityClass with name {name} was found" in body["message"]
    else:
        assert status == 201, body
