"""Sizes krm-fn chooses itself stay within the LimitRanges of the pod's namespace
(krm_fn/rules/facts.py `bounded`, krm_fn/admission/limitrange.py `container_bounds`).

Found by hand: a sidecar without resources in a namespace whose LimitRange sets a `min` per
container. As written, the LimitRanger gives it the `min` as its request and the pod is
admitted (Burstable); krm-fn wrote `spec.workloads.sidecarResources` (100m, 128Mi), which
is below the `min`, so the API server would refuse the pod, and the render failed closed
(exit 1) on a workload it could have made Guaranteed. A size krm-fn picks (a sidecar's or
a pinned container's default) is now raised to the largest `min` and lowered to the
smallest `max` of the namespace's LimitRanges; an amount the manifest writes is never
moved (the verdict reports the refusal). The rendered pods are sent to the real API server
with the LimitRange in place."""
from __future__ import annotations

import itertools

from krm_fn.admission import limitrange
from tests.controlplane.cluster import wait
from tests.test_verdict import GUARANTEED_4, config, deployment, errors, render

_names = itertools.count()


def _lr(name="floor", namespace="ai", **item) -> dict:
    md = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": md,
            "spec": {"limits": [{"type": "Container", **item}]}}


def _spec(agent_resources=None, server=GUARANTEED_4) -> dict:
    agent = {"name": "agent", "image": "agent:1",
             **({"resources": agent_resources} if agent_resources else {})}
    return {"containers": [{"name": "server", "image": "srv:1", "resources": server}, agent]}


def _agent(items: list) -> dict:
    dep = next(i for i in items if i["kind"] == "Deployment")
    return dep["spec"]["template"]["spec"]["containers"][1]


def _shown(bounds: dict) -> dict:
    return {k: (q.text, name) for k, (q, name) in bounds.items()}


def test_container_bounds_take_the_largest_min_and_the_smallest_max():
    lrs = [_lr("a", min={"cpu": "200m", "memory": "64Mi"}, max={"cpu": "4"}),
           _lr("b", min={"cpu": "300m"}, max={"cpu": "2", "memory": "1Gi"}),
           # refused by the API server (min above max): never created, so it bounds nothing
           _lr("bad", min={"cpu": "8"}, max={"cpu": "6"}),
           {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "pods"},
            "spec": {"limits": [{"type": "Pod", "min": {"cpu": "3"}}]}}]
    assert _shown(limitrange.container_bounds(lrs)) == {
        ("cpu", "min"): ("300m", "b"), ("memory", "min"): ("64Mi", "a"),
        ("cpu", "max"): ("2", "b"), ("memory", "max"): ("1Gi", "b")}
    assert limitrange.container_bounds(()) == {}
    # as the API server stores and shows them (SetDefaults_ResourceList, Quantity.String())
    assert _shown(limitrange.container_bounds([_lr(min={"cpu": "0.3", "memory": "1.5Gi"})])) \
        == {("cpu", "min"): ("300m", "floor"), ("memory", "min"): ("1536Mi", "floor")}


def test_a_sidecar_without_resources_gets_the_limitrange_min():
    code, results, items = render(config(), _lr(min={"cpu": "300m", "memory": "200Mi"}),
                                  deployment(spec=_spec()))
    assert code == 0, errors(results)
    assert _agent(items)["resources"] == {"requests": {"cpu": "300m", "memory": "200Mi"},
                                          "limits": {"cpu": "300m", "memory": "200Mi"}}
    assert ("warning", "container 'agent' sets no cpu; using 300m from the minimum cpu per "
            "container of LimitRange floor (spec.workloads.sidecarResources.cpu is 100m: the "
            "API server refuses less)") in results
    assert ("warning", "container 'agent' sets no memory; using 200Mi from the minimum memory "
            "per container of LimitRange floor (spec.workloads.sidecarResources.memory is "
            "128Mi: the API server refuses less)") in results
    assert any(m.startswith("verdict: Guaranteed after admission") for _, m in results)


def test_a_sidecar_without_resources_gets_at_most_the_limitrange_max():
    small = {"requests": {"cpu": "4", "memory": "64Mi"},
             "limits": {"cpu": "4", "memory": "64Mi"}}
    code, results, items = render(config(), _lr(max={"memory": "100Mi"}),
                                  deployment(spec=_spec(server=small)))
    assert code == 0, errors(results)
    assert _agent(items)["resources"]["limits"] == {"cpu": "100m", "memory": "100Mi"}
    assert ("warning", "container 'agent' sets no memory; using 100Mi from the maximum memory "
            "per container of LimitRange floor (spec.workloads.sidecarResources.memory is "
            "128Mi: the API server refuses more)") in results


def test_what_the_manifest_writes_is_not_moved_and_fails_closed():
    written = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    code, results, items = render(config(), _lr(min={"cpu": "300m"}),
                                  deployment(spec=_spec(written)))
    assert code == 1
    assert errors(results)[0].startswith(
        "LimitRange floor of namespace ai refuses container 'agent': \"minimum cpu usage per "
        "Container is 300m, but request is 100m\"")
    assert _agent(items)["resources"] == written         # left unchanged


def test_limitranges_of_another_namespace_do_not_move_the_sizes():
    code, results, items = render(config(), _lr(namespace="elsewhere", min={"cpu": "300m"}),
                                  deployment(spec=_spec()))
    assert code == 0, errors(results)
    assert _agent(items)["resources"]["limits"] == {"cpu": "100m", "memory": "128Mi"}


def test_a_pinned_default_is_raised_to_the_min_then_to_whole_cpus():
    spec = {"containers": [{"name": "server", "image": "vllm/vllm-openai-cpu:v0.9.0",
                            "resources": {"limits": {"memory": "8Gi"}}}]}
    code, results, items = render(config(workloads={"defaultCpus": "1"}),
                                  _lr(min={"cpu": "1500m"}), deployment(spec=spec))
    assert code == 0, errors(results)
    res = items[1]["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["limits"]["cpu"] == res["requests"]["cpu"] == "2"


def test_the_api_server_admits_the_rendered_pod_as_guaranteed(controlplane):
    lr = _lr(min={"cpu": "300m", "memory": "200Mi"}, max={"memory": "16Gi"})
    code, results, items = render(config(), lr, deployment(spec=_spec()))
    assert code == 0, errors(results)
    ns = controlplane.pod_namespace(f"lr-sizes-{next(_names)}")
    body = {**lr, "metadata": {"name": "floor"}}
    status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/limitranges", body)
    assert status == 201, got
    template = next(i for i in items if i["kind"] == "Deployment")["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": template["spec"]}
    # the LimitRanger reads LimitRanges through an informer: the refusal of the old sizes
    # shows that it has this one
    old = {**pod, "spec": {**pod["spec"], "containers": [
        pod["spec"]["containers"][0],
        {**pod["spec"]["containers"][1], "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "100m", "memory": "128Mi"}}}]}}
    wait("the LimitRanger to see LimitRange floor", lambda: controlplane.request(
        "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", old)[0] == 403)
    status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
    assert status == 201, got
    assert got["status"]["qosClass"] == "Guaranteed"
