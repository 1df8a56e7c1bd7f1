"""krm-fn's fit of extended resources and ephemeral-storage (admission/capacity.py Packer)
against the real kube-scheduler (tests/controlplane): for each case a Node with the given
status.allocatable, then pods pinned to it by nodeSelector, created one by one until the
scheduler leaves one Pending; the count bound and the resource the scheduler names
("Insufficient nvidia.com/gpu") must be krm-fn's count and the resource its limit names
(pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest)."""
from __future__ import annotations

import time

import pytest

from krm_fn import record
from krm_fn.admission import capacity
from krm_fn.admission.build import requests_limits
from krm_fn.admission.model import Container
from tests.admission.kit import node as model_node, pod as model_pod

BASE = {"cpu": "8", "memory": "16Gi", "pods": "110"}

# name: (the Node's extra status.allocatable, one pod's requests = limits beyond
# cpu 100m / memory 100Mi, pods bound, the resource named when the next one is refused)
CASES = {
    "gpu-one-each": ({"nvidia.com/gpu": "4"}, {"nvidia.com/gpu": "1"}, 4,
                     "nvidia.com/gpu"),
    "gpu-two-of-three": ({"nvidia.com/gpu": "3"}, {"nvidia.com/gpu": "2"}, 1,
                         "nvidia.com/gpu"),
    "unlisted-extended": ({"nvidia.com/gpu": "2"}, {"example.com/foo": "1"}, 0,
                          "example.com/foo"),
    "ephemeral": ({"ephemeral-storage": "100Gi"}, {"ephemeral-storage": "30Gi"}, 3,
                  "ephemeral-storage"),
    "ephemeral-before-gpu": ({"ephemeral-storage": "50Gi", "nvidia.com/gpu": "8"},
                             {"ephemeral-storage": "20Gi", "nvidia.com/gpu": "1"}, 2,
                             "ephemeral-storage"),
    "cpu-before-gpu": ({"nvidia.com/gpu": "8"}, {"cpu": "3", "nvidia.com/gpu": "1"}, 2,
                       "cpu"),
}


def _wait(what: str, probe, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _resources(extra: dict) -> dict:
    return {"cpu": "100m", "memory": "100Mi", **extra}


def krm_fn_fit(alloc_extra: dict, pod_extra: dict) -> tuple[int, str]:
    """(pods krm-fn's Packer places on the Node, the resource of the limit it hits)."""
    alloc = {"cpu": 8, "memory": 16 * 2**30}
    for k, v in alloc_extra.items():
        alloc.update(requests_limits({"limits": {k: v}})[1])
    node = record.replace(model_node(allocatable=alloc, cpuManagerPolicy="none"),
                          from_node="n")
    req, lim = requests_limits({"requests": _resources(pod_extra),
                                "limits": _resources(pod_extra)})
    packer = capacity.Packer(node)
    pod = model_pod(Container("c", requests=req, limits=lim))
    while packer.place(pod):
        pass
    assert packer.why.endswith(")"), packer.why
    return packer.count, packer.why[packer.why.rindex("(OutOf") + 6:-1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_krm_fn_table(name):
    alloc, want, count, resource = CASES[name]
    assert krm_fn_fit(alloc, want) == (count, resource)


def _scheduled(cp, path: str):
    """"bound" once the pod has a node, its PodScheduled=False condition once the scheduler
    found none, else None."""
    pod = cp.request("GET", path)[1]
    if pod["spec"].get("nodeName"):
        return "bound"
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_scheduler_places_what_krm_fn_counts(controlplane, name):
    alloc, want, count, resource = CASES[name]
    ns = "sched-resources"
    controlplane.ensure_namespace(ns)
    _wait("the default ServiceAccount", lambda: controlplane.request(
        "GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200)
    node_name = f"res-{name}"
    res = {**BASE, **alloc}
    controlplane.create_node({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name, "labels": {
            "kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux"}},
        "status": {"capacity": res, "allocatable": res,
                   "conditions": [{"type": "Ready", "status": "True"}]}})
    base = f"/api/v1/namespaces/{ns}/pods"
    made = []
    try:
        bound, refused = 0, None
        for i in range(count + 1):
            pod_name = f"{node_name}-{i}"
            r = _resources(want)
            status, body = controlplane.request("POST", base, {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name},
                "spec": {"nodeSelector": {"kubernetes.io/hostname": node_name},
                         "containers": [{"name": "c", "image": "example/app:1",
                                         "resources": {"requests": r, "limits": r}}]}})
            assert status == 201, body
            made.append(pod_name)
            got = _wait(f"pod {pod_name} bound or unschedulable",
                        lambda: _scheduled(controlplane, f"{base}/{pod_name}"))
            if got != "bound":
                refused = got
                break
            bound += 1
        assert refused is not None and refused["reason"] == "Unschedulable", refused
        assert (bound, f"Insufficient {resource}" in refused["message"]) == (count, True), \
            refused["message"]
        assert krm_fn_fit(alloc, want) == (bound, resource)
    finally:
        for pod_name in made:
            controlplane.request("DELETE", f"{base}/{pod_name}?gracePeriodSeconds=0")
        _wait("the pods are gone", lambda: all(controlplane.request(
            "GET", f"{base}/{p}")[0] == 404 for p in made))
        controlplane.request("DELETE", f"/api/v1/nodes/{node_name}")
        _wait("the node is gone", lambda: controlplane.request(
            "GET", f"/api/v1/nodes/{node_name}")[0] == 404)
