"""Ephemeral-storage and extended resources in the fit (admission/capacity.py): the order of
the scheduler's fitsRequest, what is known with and without a `fromNode` Node, the Packer's
counts and limits (exact values)."""
from __future__ import annotations

import pytest

from krm_fn.admission import capacity
from krm_fn.admission.model import Container
from tests.admission.kit import GI, cores, node, pod

ALLOC = {"cpu": cores(8), "memory": 16 * GI, "hugepages-2Mi": 0,
         "ephemeral-storage": 100 * GI, "nvidia.com/gpu": 4}


def test_fit_order_is_memory_ephemeral_storage_then_the_rest_by_name():
    req = {"cpu": 1, "nvidia.com/gpu": 1, "example.com/foo": 1, "hugepages-1Gi": GI,
           "ephemeral-storage": GI, "memory": GI}
    assert capacity.fit_order(req) == ["memory", "ephemeral-storage", "example.com/foo",
                                       "hugepages-1Gi", "nvidia.com/gpu"]


@pytest.mark.parametrize("res,described,have", [
    ("nvidia.com/gpu", False, 4),             # listed: known either way
    ("example.com/foo", True, 0),             # a Node that does not list it: 0
    ("example.com/foo", False, None),         # no Node: unknown
    ("ephemeral-storage", False, 100 * GI),
    ("hugepages-1Gi", False, 0),              # undeclared huge pages: 0
    ("memory", True, 16 * GI),
])
def test_known(res, described, have):
    assert capacity.known(res, ALLOC, described) == have


@pytest.mark.parametrize("req,used,described,short", [
    ({"memory": GI, "ephemeral-storage": 60 * GI}, {"ephemeral-storage": 50 * GI}, True,
     "ephemeral-storage"),
    ({"memory": 20 * GI, "ephemeral-storage": 200 * GI}, {}, True, "memory"),
    ({"memory": GI, "nvidia.com/gpu": 2}, {"nvidia.com/gpu": 3}, False, "nvidia.com/gpu"),
    ({"memory": GI, "example.com/foo": 1}, {}, True, "example.com/foo"),
    ({"memory": GI, "example.com/foo": 1}, {}, False, None),
    ({"memory": GI, "example.com/foo": 0}, {}, True, None),      # zero is skipped
])
def test_short_of(req, used, described, short):
    assert capacity.short_of(req, ALLOC, used, described) == short


def test_too_large_and_unknown():
    req = {"cpu": cores(9), "memory": GI, "ephemeral-storage": 200 * GI,
           "example.com/foo": 2, "nvidia.com/gpu": 1}
    assert capacity.too_large(req, ALLOC, True) == [
        ("cpu", cores(9), cores(8)), ("ephemeral-storage", 200 * GI, 100 * GI),
        ("example.com/foo", 2, 0)]
    assert capacity.too_large(req, ALLOC, False) == [
        ("cpu", cores(9), cores(8)), ("ephemeral-storage", 200 * GI, 100 * GI)]
    assert capacity.unknown(req, ALLOC, False) == [("example.com/foo", 2)]
    assert capacity.unknown(req, ALLOC, True) == []


@pytest.mark.parametrize("res,value,text", [
    ("memory", 24 * GI, "24Gi"), ("cpu", cores("500m"), "500m"),
    ("ephemeral-storage", 460 * GI, "460Gi"), ("hugepages-2Mi", 2**21, "2Mi"),
    ("nvidia.com/gpu", 4, "4")])
def test_amount_text(res, value, text):
    assert capacity.amount_text(res, value) == text


def _gpu_pod(gpus: int, storage_gi: int = 0):
    req = {"cpu": cores("100m"), "memory": GI // 10, "nvidia.com/gpu": gpus}
    if storage_gi:
        req["ephemeral-storage"] = storage_gi * GI
    return pod(Container("c", requests=req, limits=dict(req)))


@pytest.mark.parametrize("gpus,storage,from_node,count,limit", [
    (1, 0, "n1", 4, "allocatable nvidia.com/gpu 4: 1 each"),
    (3, 0, "n1", 1, "allocatable nvidia.com/gpu 4: 3 each"),
    (1, 30, "n1", 3, "allocatable ephemeral-storage 100Gi: 30Gi each"),
    (1, 0, "", 4, "allocatable nvidia.com/gpu 4: 1 each"),     # listed in allocatable
])
def test_packer_counts_extended_resources_and_ephemeral_storage(gpus, storage, from_node,
                                                                count, limit):
    n = node(allocatable={"cpu": 8, "memory": 16 * GI,
                                         "ephemeral-storage": 100 * GI,
                                         "nvidia.com/gpu": 4}, cpuManagerPolicy="none")._replace(from_node=from_node)
    got = capacity.fit_detail(_gpu_pod(gpus, storage), n)
    assert got[0] == count and got[2] == limit


def test_without_a_node_an_unlisted_extended_resource_does_not_limit():
    n = node(allocatable={"cpu": 8, "memory": 16 * GI}, cpuManagerPolicy="none", maxPods=20)
    p = pod(Container("c", requests={"cpu": cores("100m"), "memory": GI // 10,
                                     "example.com/foo": 1}))
    assert capacity.fit_detail(p, n) == (20, "maxPods 20", "maxPods 20")


def test_a_daemon_pod_takes_its_share_of_the_gpus():
    n = node(allocatable={"cpu": 8, "memory": 16 * GI, "nvidia.com/gpu": 4},
                            cpuManagerPolicy="none")._replace(from_node="n1")
    n = n._replace(daemons=(_gpu_pod(1),))
    assert capacity.fit_detail(_gpu_pod(1), n)[0] == 3
