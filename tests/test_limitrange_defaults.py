"""The LimitRanger's defaults (krm_fn/admission/limitrange.py `defaults`, `with_defaults`)
against the real API server: for each case a fresh namespace gets the LimitRanges, then a
Pod whose containers set some amounts or none; the resources the API server stores (after
its LimitRanger mutating admission, and its own defaulting of the LimitRange and the pod)
must be krm-fn's. Refusals (a default limit below the container's request) are compared
too: krm-fn's API validation of the pod (request above limit) is not here, so such a case
only has to be refused by the API server where the table says so."""
from __future__ import annotations

import itertools

import pytest

from krm_fn.admission import limitrange
from krm_fn.admission.build import requests_limits, resource_map
from krm_fn.admission.model import Container
from krm_fn.quantity import NANO

_names = itertools.count()


def _lr(name: str, **item) -> dict:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name},
            "spec": {"limits": [{"type": "Container", **item}]}}


# name: (LimitRanges, the container's resources as written)
CASES = {
    "default-and-request": ([_lr("a", default={"cpu": "2", "memory": "2Gi"},
                                 defaultRequest={"cpu": "500m", "memory": "1Gi"})], {}),
    "max-is-the-default-limit": ([_lr("a", max={"cpu": "4", "memory": "8Gi"})], {}),
    "default-is-the-request": ([_lr("a", default={"cpu": "1"})], {}),
    "min-is-the-request": ([_lr("a", min={"cpu": "250m"}, max={"cpu": "2"},
                                defaultRequest={"memory": "64Mi"})], {}),
    "only-what-is-missing": ([_lr("a", default={"cpu": "2", "memory": "2Gi"})],
                             {"limits": {"cpu": "1"}}),
    "requests-only-get-limits": ([_lr("a", default={"memory": "4Gi"},
                                      defaultRequest={"memory": "1Gi"})],
                                 {"requests": {"cpu": "1", "memory": "2Gi"}}),
    # two defaults for cpu: the LimitRanger's order is a Go map's, so either (undetermined)
    "two-limitranges-disagree": ([_lr("a", default={"cpu": "1"}),
                                  _lr("b", default={"cpu": "3", "memory": "1Gi"})], {}),
    "ephemeral-storage": ([_lr("a", default={"ephemeral-storage": "2Gi"})],
                          {"limits": {"cpu": "1", "memory": "1Gi"}}),
}


def _krm_fn(lrs: list, resources: dict) -> tuple[dict, dict]:
    req, lim = requests_limits(resources)
    [c] = limitrange.with_defaults([Container("app", requests=req, limits=lim)],
                                   limitrange.defaults(lrs))
    return c.requests, c.limits


def test_defaults_follow_the_limitrange_defaulting():
    four = 4 * NANO     # cpu in nanocores, the model's unit
    assert limitrange.defaults([_lr("a", max={"cpu": "4"}, min={"memory": "1Gi"})]) == (
        ({"cpu": four, "memory": 2**30}, {"cpu": four}),)
    assert limitrange.defaults([_lr("a", max={"cpu": "4"})]) == (({"cpu": four}, {"cpu": four}),)
    assert limitrange.defaults([{"spec": {"limits": [{"type": "Pod", "max": {
        "cpu": "4"}}]}}]) == ()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_api_server_stores_what_krm_fn_models(controlplane, name):
    lrs, resources = CASES[name]
    ns = f"lr-defaults-{next(_names)}"
    controlplane.pod_namespace(ns)
    for lr in lrs:
        status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/limitranges", lr)
        assert status == 201, got
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "app", "image": "example/app:1",
                                    **({"resources": resources} if resources else {})}]}}
    # the LimitRanger reads LimitRanges through an informer: retry until it has them
    def stored():
        status, got = controlplane.request(
            "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
        assert status == 201, got
        res = got["spec"]["containers"][0].get("resources") or {}
        return (res,) if "kubernetes.io/limit-ranger" in (
            got["metadata"].get("annotations") or {}) else None
    from tests.controlplane.cluster import wait
    [res] = wait("the LimitRanger's defaults", stored)
    want = (resource_map(res.get("requests")), resource_map(res.get("limits")))
    req, lim = requests_limits(resources)
    if limitrange.undetermined([Container("app", requests=req, limits=lim)], lrs):
        # krm-fn says the outcome is not fixed: the API server's is one of the orders'
        assert want in (_krm_fn(lrs, resources), _krm_fn(lrs[::-1], resources)), res
    else:
        assert _krm_fn(lrs, resources) == want, res
    controlplane.request("DELETE", f"/api/v1/namespaces/{ns}")


def test_a_limitrange_default_counts_in_the_namespace_total():
    # an untuned Deployment without resources gets the LimitRange's defaults at admission:
    # without them a cpu quota refuses its pods ("must specify requests.cpu"); with them
    # each counts 1 cpu, and the namespace total (4 + 2 × 1) is above the quota's 5
    from tests.test_verdict import config, render

    def dep(name, res, replicas=1):
        c = {"name": "app", "image": "example/app:1", **({"resources": res} if res else {})}
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"containers": [c]}}}}
    lr = {**_lr("defaults", default={"cpu": "1", "memory": "1Gi"}),
          "metadata": {"name": "defaults", "namespace": "ml"}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "q", "namespace": "ml"},
             "spec": {"hard": {"requests.cpu": "5"}}}
    pinned = dep("srv", {"requests": {"cpu": "4", "memory": "4Gi"},
                         "limits": {"cpu": "4", "memory": "4Gi"}})
    cfg = config(selector={"names": ["srv"]})
    _, without, _ = render(cfg, quota, pinned, dep("web", None, 2))
    assert [m[:102] for s, m in without if s == "warning"] == [
        "ResourceQuota q of namespace ml: every pod is refused (\"failed quota: q: must specify "
        "requests.cpu for"]
    _, with_lr, _ = render(cfg, lr, quota, pinned, dep("web", None, 2))
    assert [m[:183] for s, m in with_lr if s == "warning"] == [
        "ResourceQuota q of namespace ml: the render's pods in the namespace need "
        "requests.cpu=6 together (Deployment srv 1 × requests.cpu=4, Deployment web 2 × "
        "requests.cpu=1), above its hard"]


def test_two_limitranges_with_different_defaults_are_an_error():
    """The LimitRanger lists a namespace's LimitRanges from its informer's index, a Go map
    (client-go thread_safe_store.go ByIndex), so which default a container gets when two
    disagree is not fixed: found in the real API server (the case above gave the second
    LimitRange's cpu once)."""
    lrs, _ = CASES["two-limitranges-disagree"]
    req, f = limitrange.undetermined([Container("app")], lrs, "spec")
    assert (f.severity, f.rule, f.path) == ("error", "limitrange", "spec")
    assert req.message.startswith("container 'app' sets no cpu request, and ")
    assert f.message.startswith(
        "container 'app' sets no cpu limit, and the LimitRanges of its namespace default it "
        "to 1 (LimitRange a) or 3 (LimitRange b): the LimitRanger takes them in an order that "
        "is not fixed (a Go map's), so the pod gets either; set the cpu limit on the "
        "container, or keep one default per resource")
    # set on the container, or the same default in both: nothing to say
    assert limitrange.undetermined([Container("app", requests={"cpu": 2},
                                              limits={"cpu": 2})], lrs) == ()
    same = [_lr("a", default={"cpu": "1"}), _lr("b", default={"cpu": "1"})]
    assert limitrange.undetermined([Container("app")], same) == ()
