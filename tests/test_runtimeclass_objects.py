"""A RuntimeClass of the input the API server refuses to create (krm_fn/admission/
runtimeclass.py `errors`: pkg/apis/node/validation/validation.go ValidateRuntimeClass) does
not exist, and the RuntimeClass admission controller refuses every pod that names one that
does not exist ("pod rejected: RuntimeClass "kata" not found"): the pod's verdict is an
error, not `Guaranteed after admission` with the class's overhead counted.

Found by sending the render's objects to the real API server: a RuntimeClass without a
`handler`, with `handler: Kata_1`, or with a toleration `operator: Exists` and a value made
krm-fn count its overhead and exit 0. The errors are compared with the real API server's
(which ones, by field) on a table and on generated RuntimeClasses (seed KRM_FN_DIFF_SEED,
default 5501)."""
from __future__ import annotations

import itertools
import os
import random

import pytest

from krm_fn.admission import runtimeclass
from tests.test_verdict import config, deployment, errors, render, verdicts

SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "5501"))
_names = itertools.count()
FIXED = {"podFixed": {"cpu": "250m", "memory": "120Mi"}}


def _rc(name="kata", **fields) -> dict:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, **fields}


LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
         "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
         "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
# name: (the RuntimeClass's fields, the API server's errors)
TABLE = {
    "no-handler": (dict(overhead=FIXED), ["handler: Required value"]),
    "handler-not-a-label": (dict(handler="Kata_1", overhead=FIXED),
                            [f'handler: Invalid value: "Kata_1": {LABEL}']),
    "exists-with-a-value": (
        dict(handler="kata", scheduling={"tolerations": [
            {"key": "k", "operator": "Exists", "value": "v"}]}),
        ["scheduling.tolerations[0].operator: Invalid value: \"v\": value must be empty "
         "when `operator` is 'Exists'"]),
    "negative-overhead": (dict(handler="kata", overhead={"podFixed": {"cpu": "-1"}}),
                          ['overhead.limits[cpu]: Invalid value: "-1": must be greater than '
                           'or equal to 0']),
    "hugepages-alone": (dict(handler="kata", overhead={"podFixed": {"hugepages-2Mi": "2Mi"}}),
                        ["overhead: Forbidden: HugePages require cpu or memory"]),
    "seconds-without-noexecute": (
        dict(handler="kata", scheduling={"tolerations": [
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule",
             "tolerationSeconds": 5}]}),
        ["scheduling.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be "
         "'NoExecute' when `tolerationSeconds` is set"]),
    "valid": (dict(handler="kata", overhead=FIXED, scheduling={
        "nodeSelector": {"pool": "p"}, "tolerations": [{"key": "k", "operator": "Exists"}]}),
        []),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_errors(name):
    fields, want = TABLE[name]
    assert runtimeclass.errors(_rc(**fields)) == want


def _generated(rng: random.Random) -> dict:
    fields: dict = {}
    handler = rng.choice((None, "", "kata", "runc", "Kata", "kata_1", "-kata", "a" * 64))
    if handler is not None:
        fields["handler"] = handler
    if rng.random() < 0.6:
        fields["overhead"] = {"podFixed": {r: rng.choice(amounts) for r, amounts in rng.sample(
            [("cpu", ("250m", "-1", "0")), ("memory", ("120Mi", "-1Mi")),
             ("hugepages-2Mi", ("2Mi", "3Mi")), ("example.com/foo", ("1",)),
             ("storage", ("1Gi",))], rng.randint(1, 2))}}
    if rng.random() < 0.6:
        sched: dict = {}
        if rng.random() < 0.5:
            sched["nodeSelector"] = {rng.choice(("pool", "bad key!", "example.com/p")):
                                     rng.choice(("p", "-bad", ""))}
        if rng.random() < 0.7:
            sched["tolerations"] = [
                {k: v for k, v in (("key", rng.choice(("k", "", "bad key!"))),
                                   ("operator", rng.choice(("Exists", "Equal", "exists"))),
                                   ("value", rng.choice(("", "v"))),
                                   ("effect", rng.choice(("", "NoSchedule", "NoExecute"))))
                 if v} for _ in range(rng.randint(1, 2))]
        fields["scheduling"] = sched
    return fields


def _cases() -> list:
    rng = random.Random(SEED)
    return ([pytest.param(f, id=name) for name, (f, _) in sorted(TABLE.items())]
            + [pytest.param(_generated(rng), id=f"generated-{i}") for i in range(60)])


@pytest.mark.parametrize("fields", _cases())
def test_the_api_server_refuses_exactly_those(controlplane, fields):
    rc = _rc(f"rc-{next(_names)}", **fields)
    status, got = controlplane.request(
        "POST", "/apis/node.k8s.io/v1/runtimeclasses?dryRun=All", rc)
    assert status in (201, 422), got
    said = [] if status == 201 else [c["field"] for c in got["details"]["causes"]]
    mine = [e.split(": ", 1)[0] for e in runtimeclass.errors(rc)]
    # the fields named, each as often (a resource name's first error only: one per name)
    assert sorted(set(mine)) == sorted(set(said)), (SEED, fields, got)
    for e in runtimeclass.errors(rc):
        assert e in [f"{c['field']}: {c['message']}" for c in got["details"]["causes"]] or \
            e.split(": ", 2)[1] == "Duplicate value", (e, got)


def _pod(**spec) -> dict:
    return deployment(spec={"runtimeClassName": "kata", "containers": [
        {"name": "server", "image": "srv:1", "resources": {
            "requests": {"cpu": "4", "memory": "8Gi"},
            "limits": {"cpu": "4", "memory": "8Gi"}}}], **spec})


def test_a_pod_naming_a_refused_runtimeclass_is_refused():
    code, results, _ = render(config(), _rc(handler="kata", overhead=FIXED), _pod())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 + 250m each)"]
    code, results, _ = render(config(), _rc(overhead=FIXED), _pod())
    assert code == 1
    assert errors(results) == [
        "the API server refuses RuntimeClass kata (RuntimeClass.node.k8s.io \"kata\" is "
        "invalid: handler: Required value): it is never created, so the RuntimeClass "
        "admission controller refuses the pod (pod rejected: RuntimeClass \"kata\" not "
        "found) unless the cluster holds one of that name already; fix the RuntimeClass "
        "(kubernetes/kubernetes pkg/apis/node/validation/validation.go "
        "ValidateRuntimeClass; https://kubernetes.io/docs/concepts/containers/"
        "runtime-class/)",
        "left unchanged because of the errors above"]
