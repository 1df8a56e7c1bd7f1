"""Required node affinity on the labels the kubelet registers every Node with
(pkg/kubelet/kubelet_node_status.go initialNode: kubernetes.io/hostname, kubernetes.io/os,
kubernetes.io/arch and the beta.kubernetes.io/ twins), judged by the real kube-scheduler
(tests/controlplane): the scheduler binds the pod exactly when krm-fn's
admission/scheduling.evaluate says every node of the pool matches, and leaves it Pending
exactly when krm-fn says none does. The Node carries what a kubelet registers
(placement.OneNode adds kubernetes.io/hostname) and the pool's own label.

The same Node judges topologySpreadConstraints (scheduling.spread): a DoNotSchedule
constraint on a label the pool does not list (DEPENDS) leaves the pod Pending on a node
without that label ("missing required label") and lets it bind on one with it; one krm-fn
says nothing about binds."""
from __future__ import annotations

import itertools
import time

import pytest

from krm_fn.admission import scheduling
from tests.controlplane import placement

POOL = {"krm-fn.dev/cpu-pinning": "true"}
KUBELET = {"kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux",
           "kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64"}
CASES = [(key, op) for key in scheduling.REGISTERED for op in ("Exists", "DoesNotExist")]
_ids = itertools.count()


def _affinity(key: str, op: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": op}]}]}}}


@pytest.mark.parametrize("key,op", CASES, ids=[f"{k}-{o}" for k, o in CASES])
def test_registered_label_affinity_matches_the_scheduler(controlplane, key, op):
    ok, why = scheduling.evaluate(POOL, _affinity(key, op), scheduling.known_labels(POOL))
    assert ok is not None, why          # decided: the label is on every node
    name = f"registered-{next(_ids)}-{int(time.time() * 1000) % 100000}"
    one = placement.OneNode(controlplane, name, {"cpu": "8", "memory": "16Gi", "pods": "110"},
                            {**KUBELET, **POOL})
    try:
        got = one.place({"nodeSelector": dict(POOL), "affinity": _affinity(key, op),
                         "containers": [{"name": "c", "image": "example/app:1"}]}, name)
    finally:
        one.close()
    assert not str(got).startswith("invalid: "), got
    assert (got is True) == ok, (key, op, got, why)


SPREADS = [(key, when) for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname",
                                   "krm-fn.dev/cpu-pinning", "kubernetes.io/arch")
           for when in ("DoNotSchedule", "ScheduleAnyway")]


def _placed(cp, spec: dict, extra_labels: dict):
    name = f"spread-{next(_ids)}-{int(time.time() * 1000) % 100000}"
    one = placement.OneNode(cp, name, {"cpu": "8", "memory": "16Gi", "pods": "110"},
                            {**KUBELET, **POOL, **extra_labels})
    try:
        return one.place(spec, name, {"app": "a"})
    finally:
        one.close()


@pytest.mark.parametrize("key,when", SPREADS, ids=[f"{k}-{w}" for k, w in SPREADS])
def test_topology_spread_matches_the_scheduler(controlplane, key, when):
    from krm_fn.admission.model import NodeModel
    spec = {"nodeSelector": dict(POOL), "containers": [{"name": "c", "image": "example/app:1"}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": key,
                                           "whenUnsatisfiable": when,
                                           "labelSelector": {"matchLabels": {"app": "a"}}}]}
    said = scheduling.spread(spec, NodeModel("p", scheduling.known_labels(POOL), {}, (1, 37),
                                             ()))
    got = _placed(controlplane, spec, {})
    assert not str(got).startswith("invalid: "), got
    if said:
        assert got is not True and scheduling.SPREAD_MISSING in got, got
        assert _placed(controlplane, spec, {key: "a"}) is True
    else:
        assert got is True, got
