"""The rollout steps judged by the kubelet's own resource managers, at every minor the
harness is built for (issue #33 part 4; docs/node-plans.md "Rollout").

krm-fn compares a node's current KubeletConfiguration (the baseline) with the plan's and says
which checkpoints the node must lose before the new configuration starts
(krm_fn.node.baseline.state_changes -> rollout_steps): none (a plain restart, no drain), or
a drain and the deletion of /var/lib/kubelet/cpu_manager_state and/or memory_manager_state.
The kubelet's CPU and Memory Managers read those checkpoints at start and refuse to start on
one written under settings they cannot accept (pkg/kubelet/cm/cpumanager/state/
state_checkpoint.go: "configured policy ... differs from state checkpoint policy";
policy_static.go validateState; pkg/kubelet/cm/memorymanager/policy_static.go
validateState: "the expected machine state is different from the real one").

For every ordered pair (old, new) of the configurations below, on one machine:

1. the old configuration starts in the harness, once with a Guaranteed pod pinned (the node
   as it runs) and once with no pod (the node drained), and leaves its checkpoints;
2. the steps krm-fn gives for old -> new are applied: the checkpoints of the running node
   when they say no drain, else those of the drained node less the files they delete;
3. the new configuration must start with what is left.

And the other way: where the kubelet starts with the old checkpoints untouched, a step
krm-fn asks for is more than the kubelet needs. It may only be when the reserved CPUs
changed under the static policy without strict-cpu-reservation (COARSER_ON_PURPOSE): the
kubelet refuses reserved CPUs a pod holds, and which CPUs the node's pods hold is not in
any configuration, so krm-fn drains and deletes the checkpoint whenever they grow or move
(drained, the file holds every CPU in its default set: deleting it loses nothing, and
DaemonSet pods a drain leaves may hold some).
"""
from __future__ import annotations

import itertools

import pytest

from krm_fn.node import baseline

MI = 1024 ** 2
GI = 1024 ** 3


def _machine() -> dict:
    """A cadvisor MachineInfo: 2 sockets = 2 NUMA nodes, 2 cores of 2 threads each; CPUs
    0,4 / 1,5 on NUMA node 0 and 2,6 / 3,7 on NUMA node 1; 8 GiB per NUMA node."""
    topology = []
    for n in (0, 1):
        topology.append({
            "node_id": n, "memory": 8 * GI, "distances": [10 if m == n else 20 for m in (0, 1)],
            "hugepages": [{"page_size": 2048, "num_pages": 0},
                          {"page_size": 1048576, "num_pages": 0}],
            "cores": [{"core_id": c, "thread_ids": [c, c + 4], "socket_id": n}
                      for c in (2 * n, 2 * n + 1)]})
    return {"num_cores": 8, "num_physical_cores": 4, "num_sockets": 2,
            "memory_capacity": 16 * GI,
            "hugepages": [{"page_size": 2048, "num_pages": 0},
                          {"page_size": 1048576, "num_pages": 0}],
            "topology": topology}


COMMON = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
          "kubeReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"}}
STATIC = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,4"}
# 1Gi kubeReserved + 100Mi evictionHard, as the Memory Manager requires
MEMORY = {"memoryManagerPolicy": "Static",
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]}

CONFIGS = {
    "none": {"kubeReserved": {"cpu": "1", "memory": "1Gi"}},
    "none-reserved": {"reservedSystemCPUs": "0,4"},
    "none-memory": {"kubeReserved": {"cpu": "1", "memory": "1Gi"}, **MEMORY},
    "static": STATIC,
    "static-reserved-2-cores": {**STATIC, "reservedSystemCPUs": "0-1,4-5"},
    "static-kubeReserved-cpu": {"cpuManagerPolicy": "static",
                                "kubeReserved": {"cpu": "2", "memory": "1Gi"}},
    "static-kubeReserved-3-cpus": {"cpuManagerPolicy": "static",
                                   "kubeReserved": {"cpu": "2500m", "memory": "1Gi"}},
    "static-kubeReserved-systemReserved": {"cpuManagerPolicy": "static",
                                           "kubeReserved": {"cpu": "1500m", "memory": "1Gi"},
                                           "systemReserved": {"cpu": "500m"}},
    "static-full-pcpus": {**STATIC, "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}},
    "static-strict": {**STATIC, "cpuManagerPolicyOptions": {"strict-cpu-reservation": "true"}},
    "static-strict-T": {**STATIC, "cpuManagerPolicyOptions": {"strict-cpu-reservation": "T"}},
    "static-strict-false": {**STATIC,
                            "cpuManagerPolicyOptions": {"strict-cpu-reservation": "false"}},
    "static-memory": {**STATIC, **MEMORY},
    "static-memory-bytes": {**STATIC, **MEMORY, "reservedMemory": [
        {"numaNode": 0, "limits": {"memory": str(1124 * MI)}}]},
    "static-memory-split": {**STATIC, **MEMORY, "reservedMemory": [
        {"numaNode": 0, "limits": {"memory": "600Mi"}},
        {"numaNode": 1, "limits": {"memory": "524Mi"}}]},
}



def config(name: str) -> dict:
    """The KubeletConfiguration document `name` of CONFIGS."""
    return {**COMMON, **CONFIGS[name]}


def _reserved(name: str) -> tuple:
    """How CONFIGS[name] names its reserved CPUs: ("set", cpus) or ("count", kubeReserved
    cpu, systemReserved cpu)."""
    c = config(name)
    if c.get("reservedSystemCPUs"):
        return "set", c["reservedSystemCPUs"]
    return "count", c["kubeReserved"].get("cpu"), c.get("systemReserved", {}).get("cpu")


def _strict(name: str) -> bool:
    return config(name).get("cpuManagerPolicyOptions", {}).get("strict-cpu-reservation") in (
        "true", "T")


# old -> new pairs where krm-fn asks for more than the kubelet needs, on purpose (module
# docstring): the reserved CPUs changed under the static policy without strict reservation;
# whether the pods hold the new ones decides, and krm-fn cannot know which CPUs they hold
COARSER_ON_PURPOSE = {
    (a, b) for a, b in itertools.permutations(CONFIGS, 2)
    if config(a).get("cpuManagerPolicy") == config(b).get("cpuManagerPolicy") == "static"
    and not _strict(a) and not _strict(b) and _reserved(a) != _reserved(b)}

POD = {"metadata": {"name": "pinned", "namespace": "default", "uid": "pinned"},
       "spec": {"containers": [{"name": "c", "resources": {
           "requests": {"cpu": "2", "memory": "1Gi"},
           "limits": {"cpu": "2", "memory": "1Gi"}}}]}}


def start(harness, name: str, checkpoints: dict | None = None, pods=()) -> dict:
    """The harness's admit output for CONFIGS[name] on the machine, started over
    `checkpoints` ({file name: content})."""
    return harness.call("admit", {"machineInfo": _machine(), "kubeletConfig": config(name),
                                  "pods": list(pods), "checkpoints": checkpoints or {}})


def steps_for(old: str, new: str) -> tuple[bool, set[str]]:
    """(drain?, base names of the files deleted) in krm-fn's steps for old -> new."""
    steps = baseline.rollout_steps(baseline.state_changes(config(old), config(new)))
    deleted = {s.removeprefix("Delete ").rpartition("/")[2] for s in steps
               if s.startswith("Delete ")}
    return any(s.startswith("Drain the node") for s in steps), deleted


@pytest.fixture(scope="module")
def nodes(harnesses):
    """{(minor, name): (checkpoints with the pod running, checkpoints drained)}."""
    out = {}
    for minor, h in harnesses.items():
        for name in CONFIGS:
            running, drained = start(h, name, pods=[POD]), start(h, name)
            assert not running.get("startError"), (minor, name, running["startError"])
            assert running["pods"][0]["admitted"], (minor, name, running["pods"])
            out[minor, name] = running["checkpoints"], drained["checkpoints"]
    return out


PAIRS = list(itertools.permutations(CONFIGS, 2)) + [(n, n) for n in CONFIGS]


@pytest.mark.parametrize("old, new", PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_rollout_steps_let_the_new_kubelet_start(harnesses, nodes, old, new):
    drain, deleted = steps_for(old, new)
    for minor, h in harnesses.items():
        running, drained = nodes[minor, old]
        left = {k: v for k, v in (drained if drain else running).items() if k not in deleted}
        got = start(h, new, left)
        assert not got.get("startError"), (minor, drain, deleted, got["startError"])


@pytest.mark.parametrize("old, new", PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_rollout_steps_ask_no_more_than_the_kubelet_needs(harnesses, nodes, old, new):
    drain, deleted = steps_for(old, new)
    for minor, h in harnesses.items():
        running, drained = nodes[minor, old]
        as_running = not start(h, new, running).get("startError")
        as_drained = not start(h, new, drained).get("startError")
        if as_running:
            assert (drain, deleted) == (False, set()) or (old, new) in COARSER_ON_PURPOSE, \
                (minor, drain, deleted)
        if drain and as_drained:
            assert (old, new) in COARSER_ON_PURPOSE, (minor, "drained it starts", deleted)
