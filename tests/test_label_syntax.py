"""Labels, annotations and nodeSelector entries the API server refuses (krm_fn/apivalidation.py
`map_errors`: ValidateLabels, ValidateAnnotations): the workload is never created, so its
verdict is an error, not `Guaranteed after admission` with exit 0.

Found by sending rendered workloads to the real API server: a pod template label `app: a b`,
an annotation key `Bad Key` and a nodeSelector key `bad key` each made the API server refuse
the Deployment while krm-fn said it would run pinned. Each case is rendered by krm-fn and
the workload as it is sent to the real API server (tests/controlplane, dry run); generated
keys and values too (seed KRM_FN_DIFF_SEED, default 6607)."""
from __future__ import annotations

import os
import random

import pytest

from tests.test_verdict import config, deployment, errors, render

SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "6607"))
VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
         "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
         "or 'my_value',  or '12345', regex used for validation is "
         "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
NAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
TAIL = ("(kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/"
        "validation.go ValidateLabels, staging/src/k8s.io/apimachinery/pkg/api/validation/"
        "objectmeta.go ValidateAnnotations; https://kubernetes.io/docs/concepts/overview/"
        "working-with-objects/labels/#syntax-and-character-set)")
GUARANTEED = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}


def _dep(where: str, key: str, value: str) -> dict:
    spec = {"containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED}]}
    if where == "nodeSelector":
        return deployment(spec={"nodeSelector": {key: value}, **spec})
    if where == "labels":
        return deployment(spec=spec, labels={"app": "srv", key: value})
    return deployment(spec=spec, annotations={key: value})


# name: (map, key, value, krm-fn's errors)
CASES = {
    "label-value-with-a-space": ("labels", "team", "a b", [
        f'spec.template.labels: Invalid value: "a b": {VALUE}: the API server '
        f"refuses the workload; write a value it accepts {TAIL}"]),
    "annotation-key-with-a-space": ("annotations", "Bad Key", "x", [
        f'spec.template.annotations: Invalid value: "Bad Key": {NAME}: the API '
        f"server refuses the workload; write a key it accepts {TAIL}"]),
    "node-selector-key-with-a-space": ("nodeSelector", "bad key", "x", [
        f'spec.template.spec.nodeSelector: Invalid value: "bad key": {NAME}: the API server '
        f"refuses the workload; write a key it accepts {TAIL}"]),
    # upper case is a label key, and an annotation key is checked lower-cased
    "upper-case-keys": ("annotations", "Example.COM/Key", "x", []),
    "empty-label-value": ("labels", "example.com/team", "", []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_map_errors(name):
    where, key, value, want = CASES[name]
    code, results, _ = render(config(), _dep(where, key, value))
    assert errors(results)[:-1] == want
    assert code == (1 if want else 0)


_CHARS = "aZ09-_./ "


def _generated(rng: random.Random) -> tuple:
    def text(n):
        return "".join(rng.choice(_CHARS) for _ in range(n))
    where = rng.choice(("labels", "annotations", "nodeSelector"))
    key = rng.choice((text(rng.randint(1, 6)), "example.com/" + text(rng.randint(1, 4)),
                      "a" * rng.choice((63, 64)), text(3) + "/" + text(3)))
    value = rng.choice((text(rng.randint(0, 5)), "v" * rng.choice((63, 64)), "ok"))
    return where, key, value


def _cases() -> list:
    rng = random.Random(SEED)
    return ([pytest.param(*CASES[n][:3], id=n) for n in sorted(CASES)]
            + [pytest.param(*_generated(rng), id=f"generated-{i}") for i in range(50)])


@pytest.mark.parametrize("where,key,value", _cases())
def test_the_api_server_refuses_exactly_those(controlplane, where, key, value):
    code, results, out = render(config(), _dep(where, key, value))
    mine = [m.split(": the API server refuses", 1)[0] for m in errors(results)[:-1]]
    ns = controlplane.pod_namespace("label-syntax")
    workload = _dep(where, key, value)        # as written: krm-fn left it unchanged
    workload["metadata"]["namespace"] = ns
    workload["spec"]["selector"] = {"matchLabels": {"app": "srv"}}
    workload["spec"]["template"]["metadata"].setdefault("labels", {})["app"] = "srv"
    status, got = controlplane.request(
        "POST", f"/apis/apps/v1/namespaces/{ns}/deployments?dryRun=All", workload)
    assert status in (201, 422), got
    said = [] if status == 201 else [f"{c['field']}: {c['message']}"
                                     for c in got["details"]["causes"]]
    assert sorted(mine) == sorted(said), (where, key, value, got)
