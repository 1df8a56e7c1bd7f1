"""A LimitRange the API server refuses to create (krm_fn/admission/limitrange.py
`object_errors`: pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem, then
pkg/apis/core/validation/validation.go ValidateLimitRange) applies to no pod: its defaults
must not make an injected container Guaranteed, and its min / max must not refuse a pod.

Found by sending rendered pods to the real API server: a LimitRange whose `type: Container`
item defaulted Linkerd's proxy to requests == limits, and whose `type: Pod` item also set a
`default` (forbidden there), made krm-fn say `Guaranteed after admission` (exit 0) while the
API server refused the LimitRange and the pod ran Burstable with its proxy unsized; a
`maxLimitRequestRatio` below 1 made krm-fn refuse the pod for breaking a LimitRange that is
never created. The errors are compared with the real API server's, field by field, on a
table and on generated LimitRanges (seed KRM_FN_DIFF_SEED, default 4409)."""
from __future__ import annotations

import itertools
import os
import random

import pytest

from krm_fn.admission import limitrange
from tests.test_verdict import config, deployment, errors, render, verdicts

SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "4409"))
_names = itertools.count()


def _lr(*items, name="lr", namespace="ai") -> dict:
    md = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": md,
            "spec": {"limits": list(items)}}


def _c(**kw) -> dict:
    return {"type": "Container", **kw}


# name: (spec.limits, the API server's errors in krm-fn's order)
TABLE = {
    "pod-default-forbidden": (
        [_c(default={"cpu": "100m", "memory": "128Mi"}),
         {"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"memory": "1Gi"}}],
        ["spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
         "spec.limits[1].defaultRequest: Forbidden: may not be specified when `type` is "
         "'Pod'"]),
    "ratio-below-one": (
        [_c(maxLimitRequestRatio={"cpu": "0.5"})],
        ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is '
         'less than 1']),
    # max is the default limit, and the default limit the default request
    "min-above-max": (
        [_c(min={"cpu": "2"}, max={"cpu": "1"})],
        ['spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max '
         'value 1',
         'spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater '
         'than default request value 1',
         'spec.limits[0].default[cpu]: Invalid value: "2": min value 2 is greater than '
         'default value 1']),
    "default-above-max": (
        [_c(default={"cpu": "2"}, max={"cpu": "1"})],
        ['spec.limits[0].defaultRequest[cpu]: Invalid value: "2": default request value 2 '
         'is greater than max value 1',
         'spec.limits[0].default[cpu]: Invalid value: "1": default value 2 is greater than '
         'max value 1']),
    "request-above-default": (
        [_c(default={"memory": "1Gi"}, defaultRequest={"memory": "2Gi"})],
        ['spec.limits[0].defaultRequest[memory]: Invalid value: "2Gi": default request '
         'value 2Gi is greater than default limit value 1Gi']),
    "two-container-items": (
        [_c(min={"memory": "1Gi"}), _c(max={"memory": "4Gi"})],
        ['spec.limits[1].type: Duplicate value: "Container"']),
    "type-lower-case": (
        [{"type": "container", "min": {"memory": "1Gi"}}],
        ['spec.limits[0].type: Invalid value: "container": must be a standard limit type '
         'or fully qualified']),
    "resource-names": (
        [_c(min={"storage": "1Gi", "foo": "1", "example.com/x": "1",
                 "requests.example.com/y": "1", "kubernetes.io/z": "1"})],
        ['spec.limits[0].min[storage]: Invalid value: "storage": must be a standard '
         'resource for containers',
         'spec.limits[0].min[foo]: Invalid value: "foo": must be a standard resource type '
         'or fully qualified',
         'spec.limits[0].min[foo]: Invalid value: "foo": must be a standard resource for '
         'containers',
         'spec.limits[0].min[requests.example.com/y]: Invalid value: '
         '"requests.example.com/y": doesn\'t follow extended resource name standard',
         # min is the default request (SetDefaults_LimitRangeItem), validated as one
         'spec.limits[0].defaultRequest[storage]: Invalid value: "storage": must be a '
         'standard resource for containers',
         'spec.limits[0].defaultRequest[foo]: Invalid value: "foo": must be a standard '
         'resource type or fully qualified',
         'spec.limits[0].defaultRequest[foo]: Invalid value: "foo": must be a standard '
         'resource for containers',
         'spec.limits[0].defaultRequest[requests.example.com/y]: Invalid value: '
         '"requests.example.com/y": doesn\'t follow extended resource name standard']),
    "hugepages-default-not-request": (
        [_c(max={"hugepages-2Mi": "4Mi"}, defaultRequest={"hugepages-2Mi": "2Mi"})],
        ['spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: "2Mi": default '
         'value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi']),
    "ratio-above-max-over-min": (
        [{"type": "Pod", "min": {"cpu": "1"}, "max": {"cpu": "4"},
          "maxLimitRequestRatio": {"cpu": "5"}}],
        ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "5": ratio 5 is '
         'greater than max/min = 4.000000']),
    "pvc-without-storage": (
        [{"type": "PersistentVolumeClaim", "min": {"cpu": "1"}}],
        ["spec.limits[0].limits: Required value: either minimum or maximum storage value "
         "is required, but neither was provided"]),
    # accepted as they are: negative amounts, a min of 0 under a ratio, a qualified type
    "negative-amounts": ([_c(min={"cpu": "-1"}, max={"memory": "-1Gi"})], []),
    "zero-min-and-ratio": ([_c(min={"cpu": "0"}, max={"cpu": "2"},
                               maxLimitRequestRatio={"cpu": "3"})], []),
    "qualified-type": ([{"type": "example.com/Thing", "min": {"cpu": "1"}}], []),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_object_errors(name):
    items, want = TABLE[name]
    assert limitrange.object_errors(_lr(*items)) == want


_VALUES = {"cpu": ("0", "250m", "500m", "1", "2", "4"),
           "memory": ("0", "64Mi", "1Gi", "2Gi", "4Gi"),
           "hugepages-2Mi": ("2Mi", "4Mi"), "example.com/foo": ("1", "2"),
           "storage": ("1Gi",)}
_RATIOS = ("500m", "1", "1500m", "2", "4", "10")


def _generated(rng: random.Random) -> list:
    items = []
    for _ in range(rng.choice((1, 1, 2))):
        item: dict = {"type": rng.choice(("Container", "Container", "Pod",
                                          "PersistentVolumeClaim"))}
        for key in rng.sample(("min", "max", "default", "defaultRequest",
                               "maxLimitRequestRatio"), rng.randint(1, 3)):
            names = rng.sample(sorted(_VALUES), rng.randint(1, 2))
            item[key] = {r: rng.choice(_RATIOS if key == "maxLimitRequestRatio"
                                       else _VALUES[r]) for r in names}
        items.append(item)
    return items


def _cases() -> list:
    rng = random.Random(SEED)
    return ([pytest.param(items, id=name) for name, (items, _) in sorted(TABLE.items())]
            + [pytest.param(_generated(rng), id=f"generated-{i}") for i in range(60)])


@pytest.mark.parametrize("items", _cases())
def test_the_api_server_refuses_exactly_those(controlplane, items):
    ns = "lr-objects"
    controlplane.ensure_namespace(ns)
    lr = _lr(*items, name=f"lr-{next(_names)}", namespace="")
    status, got = controlplane.request(
        "POST", f"/api/v1/namespaces/{ns}/limitranges?dryRun=All", lr)
    said = [] if status == 201 else sorted(
        f"{c['field']}: {c['message']}" for c in got["details"]["causes"])
    assert status in (201, 422), got
    assert sorted(limitrange.object_errors(lr)) == said, (SEED, items, got)


LINKERD = deployment(annotations={"linkerd.io/inject": "enabled"})
SIZES_PROXY = _c(default={"cpu": "100m", "memory": "128Mi"})


def test_a_refused_limitrange_does_not_size_an_injected_proxy():
    # valid, its defaults make linkerd-init and linkerd-proxy Guaranteed
    code, results, _ = render(config(), _lr(SIZES_PROXY), LINKERD)
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "linkerd-init, linkerd-proxy; 7 per node (allocatable cpu 30: 4 + 100m each)"]
    # a Pod item with a default: the API server never creates the LimitRange
    code, results, _ = render(config(), _lr(SIZES_PROXY, {"type": "Pod",
                                                          "default": {"cpu": "1"}}), LINKERD)
    assert code == 1
    assert verdicts(results) == [
        "verdict: Burstable after admission; no exclusive CPUs; injected linkerd-init, "
        "linkerd-proxy; 7 per node (allocatable cpu 30: 4 each); will not run pinned (see "
        "the errors)"]
    assert errors(results)[1] == (
        "the API server refuses LimitRange lr of namespace ai (LimitRange \"lr\" is invalid: "
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'): it "
        "is never created, so its defaults and limits do not apply to the pod; fix the "
        "LimitRange (kubernetes/kubernetes pkg/apis/core/validation/validation.go "
        "ValidateLimitRange, https://kubernetes.io/docs/concepts/policy/limit-range/)")


def test_a_refused_limitrange_refuses_no_container():
    # min 8 above max 2 cpu: the LimitRange is refused, not the pod's 4 cpu
    code, results, _ = render(config(), _lr(_c(min={"cpu": "8"}, max={"cpu": "2"})),
                              deployment())
    assert code == 1
    assert errors(results) == [
        "the API server refuses LimitRange lr of namespace ai (LimitRange \"lr\" is invalid: "
        "[spec.limits[0].min[cpu]: Invalid value: \"8\": min value 8 is greater than max "
        "value 2, spec.limits[0].defaultRequest[cpu]: Invalid value: \"2\": min value 8 is "
        "greater than default request value 2, spec.limits[0].default[cpu]: Invalid value: "
        "\"8\": min value 8 is greater than default value 2]): it is never created, so its "
        "defaults and limits do not apply to the pod; fix the LimitRange "
        "(kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateLimitRange, "
        "https://kubernetes.io/docs/concepts/policy/limit-range/)",
        "left unchanged because of the errors above"]
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each); will not run pinned (see the errors)"]
