"""krm-fn's fit of extended resources and ephemeral-storage (admission/capacity.py Packer)
against the real kube-scheduler (tests/controlplane): for each case a Node with the given
status.allocatable, then pods pinned to it by nodeSelector, created one by one until the
scheduler leaves one Pending (tests/controlplane/placement.py OneNode); the count bound and
the first resource the scheduler names ("Insufficient nvidia.com/gpu") must be krm-fn's count and the resource its limit names
(pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest)."""
from __future__ import annotations

import pytest

from krm_fn.admission import capacity
from krm_fn.admission.build import requests_limits
from krm_fn.admission.model import Container
from tests.admission.kit import node as model_node, pod as model_pod
from tests.controlplane import placement

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


def _resources(extra: dict) -> dict:
    return {"cpu": "100m", "memory": "100Mi", **extra}


def krm_fn_fit(alloc_extra: dict, pod_extra: dict) -> tuple[int, str]:
    """(pods krm-fn's Packer places on the Node, the resource of the limit it hits)."""
    alloc = {"cpu": 8, "memory": 16 * 2**30}
    for k, v in alloc_extra.items():
        alloc.update(requests_limits({"limits": {k: v}})[1])
    node = model_node(allocatable=alloc, cpuManagerPolicy="none")._replace(from_node="n")
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


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_scheduler_places_what_krm_fn_counts(controlplane, name):
    alloc, want, count, resource = CASES[name]
    one = placement.OneNode(controlplane, f"res-{name}", {**BASE, **alloc},
                            {"kubernetes.io/os": "linux"})
    try:
        bound, refused = 0, None
        for i in range(count + 1):
            r = _resources(want)
            got = one.place({"containers": [{"name": "c", "image": "example/app:1",
                                             "resources": {"requests": r, "limits": r}}]},
                            f"res-{name}-{i}")
            assert not str(got).startswith("invalid: "), got
            if got is not True:
                refused = got
                break
            bound += 1
        assert refused is not None, f"all {count + 1} bound"
        assert (bound, placement.first_short(refused)) == (count, resource), refused
        assert krm_fn_fit(alloc, want) == (bound, resource)
    finally:
        one.close()
