"""Pods placed by the real kube-scheduler on one Node of the test control plane
(tests/controlplane/cluster.py), one at a time: the tests that compare krm-fn's placement
with the scheduler's (tests/test_scheduler_differential.py, tests/test_placement_
differential.py) share this.

`OneNode(cp, name, allocatable, labels, taints)` creates a Ready Node with that allocatable
(status.capacity = status.allocatable: the scheduler reads only allocatable), those
taints and its own (below), and a namespace of the same name; `place(spec, name)` creates a Pod with `spec`, confined to that
node by a nodeSelector on its `krm-fn.dev/case` label, and waits until the scheduler binds
it (True) or marks it Unschedulable (its message); `close()` deletes the pods and the Node
and waits until they are gone, so that no case sees another's objects.

Races avoided by construction:

- a pod another test left Pending would be bound to a new Node it fits (the scheduler
  retries unschedulable pods when a Node is added), taking its capacity: seen as a first
  pod refused "Too many pods", and as one replica fewer than krm-fn's count after the
  API-server tests. So the Node carries the taint `krm-fn.dev/case=<name>:NoSchedule`,
  which only the pods placed here tolerate (callers comparing a Node's taints or a pod's
  tolerations leave `taint` and `toleration` out);
- a Node is created with the `node.kubernetes.io/not-ready` taint (TaintNodesByCondition
  admission) that create_node removes; a pod the scheduler tries before it sees the update
  is Unschedulable for that taint and is tried again when the update arrives, so a
  decision that names it is not taken as the answer;
- the scheduler learns of the Node through its informer: before the first pod, a probe
  pod that nothing can bind (it asks for a resource no node has) waits until the
  scheduler's message counts the node (`0/N nodes are available` naming this node's
  reason), so the first real pod is judged against the node as created.
"""
from __future__ import annotations

import re

from tests.controlplane.cluster import wait

CASE_LABEL = "krm-fn.dev/case"
PROBE_RESOURCE = "krm-fn.dev/never"     # an extended resource no Node offers


# The order the scheduler's NodeResourcesFit checks in (noderesources fit.go fitsRequest:
# the pod count, cpu, memory, ephemeral-storage, then the other resources); its
# Unschedulable message lists every insufficient resource sorted by text, so the first in
# this order is the one a check in that order stops at.
FIT_ORDER = ("pods", "cpu", "memory", "ephemeral-storage")


def first_short(message: str) -> str | None:
    """The first resource NodeResourcesFit finds short in an Unschedulable `message`, in
    FIT_ORDER then by name ("pods" for "Too many pods"); None when the message names no
    resource (a taint, node affinity, ...)."""
    short = {r.rstrip(",.") for r in re.findall(r"Insufficient (\S+)", message)}
    if "Too many pods" in message:
        short.add("pods")
    if "didn't have free ports for the requested pod ports" in message:
        return "ports"      # NodePorts filters before NodeResourcesFit and stops there
    if not short and "anti-affinity rules" in message:
        return "antiaffinity"   # InterPodAffinity filters after NodeResourcesFit
    if not short:
        return None
    return min(short, key=lambda r: (FIT_ORDER.index(r) if r in FIT_ORDER
                                     else len(FIT_ORDER), r))


class OneNode:
    """One Node and its namespace on the control plane `cp`, filled pod after pod.

    `allocatable`: {resource: quantity text}; `labels`: the node's labels besides
    kubernetes.io/hostname and CASE_LABEL; `taints`: spec.taints (list of plain dicts)."""

    def __init__(self, cp, name: str, allocatable: dict, labels: dict | None = None,
                 taints: list | None = None):
        self.cp, self.name, self.ns = cp, name, name
        self.created: list = []
        self.stored: dict = {}
        self.taint = {"key": CASE_LABEL, "value": name, "effect": "NoSchedule"}
        self.toleration = {"key": CASE_LABEL, "operator": "Equal", "value": name,
                           "effect": "NoSchedule"}
        res = dict(allocatable)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {**(labels or {}), "kubernetes.io/hostname": name,
                                     CASE_LABEL: name}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True"}]}}
        node["spec"] = {"taints": list(taints or []) + [self.taint]}
        cp.create_node(node)
        cp.pod_namespace(self.ns)
        self._seen()

    def _seen(self) -> None:
        """Wait until the scheduler knows this node as created (see the module doc)."""
        name = "probe-node-known"
        spec = {"containers": [{"name": "c", "image": "registry.example/x:1",
                                "resources": {"limits": {PROBE_RESOURCE: "1"}}}],
                "tolerations": [{"operator": "Exists"}]}
        status, got = self._create(spec, name)
        assert status == 201, got

        def known():
            msg = self._unschedulable(name)
            return bool(msg) and f"Insufficient {PROBE_RESOURCE}" in msg and \
                "not-ready" not in msg
        wait(f"the scheduler sees node {self.name}", known)
        self._delete(name)
        self.created.remove(name)
        wait(f"probe pod {name} deleted", lambda: self._gone(name))

    def _create(self, spec: dict, name: str, labels: dict | None = None) -> tuple:
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": self.ns,
                             **({"labels": labels} if labels else {})},
                "spec": {**spec, "nodeSelector": {**(spec.get("nodeSelector") or {}),
                                                  CASE_LABEL: self.name},
                         "tolerations": list(spec.get("tolerations") or [])
                         + [self.toleration],
                         "terminationGracePeriodSeconds": 0}}
        status, got = self.cp.request("POST", f"/api/v1/namespaces/{self.ns}/pods", body)
        if status == 201:
            self.created.append(name)
        return status, got

    def _get(self, name: str) -> dict:
        return self.cp.request("GET", f"/api/v1/namespaces/{self.ns}/pods/{name}")[1]

    def _unschedulable(self, name: str) -> str | None:
        for c in (self._get(name).get("status") or {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                return c["message"]
        return None

    def _delete(self, name: str) -> None:
        self.cp.request("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{name}"
                                  f"?gracePeriodSeconds=0")

    def _gone(self, name: str) -> bool:
        return self.cp.request("GET", f"/api/v1/namespaces/{self.ns}/pods/{name}")[0] == 404

    def place(self, spec: dict, name: str, labels: dict | None = None):
        """Create a Pod `name` with pod spec `spec` (and `labels`) on this node; True when
        the scheduler binds it, else the scheduler's Unschedulable message; "invalid:
        <message>" when the API server refuses the pod. `stored` is then the Pod as the API
        server stored it (after its admission plugins)."""
        status, got = self._create(spec, name, labels)
        if status != 201:
            return f"invalid: {got.get('message') if isinstance(got, dict) else got}"
        self.stored = got

        def decided():
            p = self._get(name)
            if p["spec"].get("nodeName"):
                return True
            msg = self._unschedulable(name)
            if msg and "node.kubernetes.io/not-ready" not in msg:
                return msg
            return None
        return wait(f"the scheduler decides on pod {name}", decided)

    def close(self) -> None:
        """Delete the pods and the Node; wait until they are gone."""
        for name in self.created:
            self._delete(name)
        for name in self.created:
            wait(f"pod {name} deleted", lambda name=name: self._gone(name))
        self.created = []
        self.cp.request("DELETE", f"/api/v1/nodes/{self.name}")
        wait(f"node {self.name} deleted",
             lambda: self.cp.request("GET", f"/api/v1/nodes/{self.name}")[0] == 404)
