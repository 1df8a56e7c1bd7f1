"""The LimitRanger runs again after a mutating admission step changes a pod, so the
containers an injector adds get a LimitRange's defaults too (k8s.io/apiserver
pkg/admission/reinvocation.go: the whole mutating chain, in-tree plugins included, runs a
second time when a webhook or a MutatingAdmissionPolicy changed the object;
plugin/webhook/mutating/dispatcher.go and plugin/policy/mutating/dispatcher.go
SetShouldReinvoke). krm-fn's model (krm_fn/admission/build.py _limit_range_defaults)
against the real API server of the tests (tests/controlplane): a MutatingAdmissionPolicy
stands in for the injecting webhook, adding a sidecar without resources to the pod."""
from __future__ import annotations

from krm_fn.admission import build, limitrange
from krm_fn.admission.model import APP, Container, Injection
from tests.controlplane import cluster
from tests.test_admission_policy_apiserver import (INJECT, _apply_config, _create, _delete,
                                                   _mutation, _try_pod)

NS = "lr-reinvoke"
LIMIT_RANGE = {"apiVersion": "v1", "kind": "LimitRange",
               "metadata": {"name": "floor", "namespace": NS},
               "spec": {"limits": [{"type": "Container", "min": {"memory": "64Mi"},
                                    "default": {"cpu": "500m"}}]}}
MESH = _apply_config(
    "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'mesh-proxy', "
    "image: 'example.com/proxy:1'}]}}")


def test_an_injected_container_gets_the_limit_range_defaults(controlplane):
    cp = controlplane
    cp.pod_namespace(NS)
    status, body, _ = cp.request_warned("POST", f"/api/v1/namespaces/{NS}/limitranges",
                                        LIMIT_RANGE)
    assert status in (201, 409), body
    made = _mutation("lr-mesh", MESH)
    try:
        for obj in made:
            _create(cp, obj)
        got = _admitted(cp)
    finally:        # the control plane is the session's: leave no policy behind
        for obj in reversed(made):
            _delete(cp, obj)
    assert got["mesh-proxy"] == {"requests": {"cpu": "500m", "memory": "64Mi"},
                                 "limits": {"cpu": "500m"}}, got
    # krm-fn's model of the same: the injected container with the defaults, as the API
    # server's amounts
    mesh = Container("mesh-proxy", APP, {}, {}, "mesh")
    (inj,), found = build._limit_range_defaults(
        (Injection("mesh", "mesh proxy", "label", (mesh,), False, "fix"),),
        (LIMIT_RANGE,), "spec")
    assert found == ()
    want = build.requests_limits(got["mesh-proxy"])
    assert (inj.containers[0].requests, inj.containers[0].limits) == want
    assert not inj.guaranteed and limitrange.defaults([LIMIT_RANGE])


def _admitted(cp) -> dict:
    """{container name: resources} of a pod the policy mutates, as admission returns it
    (dryRun=All), once the policy is in force."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": "srv-", "labels": {INJECT: "lr-mesh"}},
           "spec": {"containers": [{"name": "server", "image": "srv:1", "resources": {
               "requests": {"cpu": "4", "memory": "8Gi"},
               "limits": {"cpu": "4", "memory": "8Gi"}}}]}}

    def containers():
        status, body, _ = _try_pod(cp, NS, pod)
        assert status == 201, body
        return {c["name"]: c.get("resources", {}) for c in body["spec"]["containers"]}
    cluster.wait("the mesh-proxy mutation", lambda: "mesh-proxy" in containers())
    return containers()
