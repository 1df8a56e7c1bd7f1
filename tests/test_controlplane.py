"""The control plane of the tests runs as a cluster would (tests/controlplane/cluster.py;
issue #31 part 1): the pinned releases, on 127.0.0.1 only, the scheduler binding pods to
nodes by their resources, the API server's quota admission with the quota controller.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.controlplane import cluster


def test_the_components_are_the_pinned_releases(controlplane):
    status, version = controlplane.request("GET", "/version")
    assert status == 200
    assert version["gitVersion"] == cluster.release()
    out = json.loads(subprocess.run([str(controlplane.exe), "version"], check=True,
                                    capture_output=True, text=True).stdout)
    gomod = (cluster.HERE / "go.mod").read_text()
    assert out["kubernetes"] == cluster.release()
    assert f"\tgo.etcd.io/etcd/server/v3 {out['etcd']}\n" in gomod


def _listening(pid: int) -> set:
    """(address, port) of the TCP sockets process `pid` listens on (/proc/net/tcp{,6})."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:         # 0A: LISTEN
                addr, port = f[1].split(":")
                out.add((addr, int(port, 16)))
    return out


def test_nothing_listens_beyond_the_loopback_address(controlplane):
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}   # 127.0.0.1 (v4, v4-in-v6)
    seen = {}
    for name, proc, _ in controlplane.procs:
        seen[name] = _listening(proc.pid)
    assert all(seen.values()), seen            # every component serves something
    assert {(name, addr) for name, socks in seen.items() for addr, _ in socks
            if addr not in loopback} == set()


def _node(name: str, cpu: str, memory: str) -> dict:
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, cpu: str) -> dict:
    res = {"cpu": cpu, "memory": "1Gi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "example/app:1",
                                     "resources": {"requests": res, "limits": res}}]}}


@pytest.fixture
def namespace(controlplane, request):
    name = "t-" + request.node.name.replace("_", "-")[:50].lower().strip("-")
    return controlplane.pod_namespace(name)


def test_the_scheduler_binds_what_fits_and_leaves_the_rest_pending(controlplane, namespace):
    node = controlplane.create_node(_node("cp-node-a", "4", "8Gi"))
    assert node["spec"].get("taints") in (None, [])
    base = f"/api/v1/namespaces/{namespace}/pods"
    assert controlplane.request("POST", base, _pod("fits", "3"))[0] == 201
    bound = cluster.wait("the pod that fits is bound", lambda: controlplane.request(
        "GET", f"{base}/fits")[1]["spec"].get("nodeName"))
    assert bound == "cp-node-a"
    assert controlplane.request("POST", base, _pod("too-big", "2"))[0] == 201

    def unschedulable():
        conds = controlplane.request("GET", f"{base}/too-big")[1]["status"].get("conditions")
        return next((c for c in conds or [] if c["type"] == "PodScheduled"
                     and c["status"] == "False"), None)
    cond = cluster.wait("the pod that does not fit is marked unschedulable", unschedulable)
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"], cond
    controlplane.request("DELETE", "/api/v1/nodes/cp-node-a")


def test_quota_admission_counts_requests(controlplane, namespace):
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cpu"},
             "spec": {"hard": {"requests.cpu": "4", "limits.cpu": "4"}}}
    base = f"/api/v1/namespaces/{namespace}"
    assert controlplane.request("POST", f"{base}/resourcequotas", quota)[0] == 201
    cluster.wait("the quota controller fills in the status", lambda: controlplane.request(
        "GET", f"{base}/resourcequotas/cpu")[1].get("status", {}).get("hard"))
    assert controlplane.request("POST", f"{base}/pods", _pod("three", "3"))[0] == 201
    status, body = controlplane.request("POST", f"{base}/pods", _pod("two", "2"))
    assert status == 403
    assert body["message"] == (
        'pods "two" is forbidden: exceeded quota: cpu, requested: limits.cpu=2,'
        'requests.cpu=2, used: limits.cpu=3,requests.cpu=3, limited: limits.cpu=4,'
        'requests.cpu=4')
