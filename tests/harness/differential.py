"""krm-fn's kubelet model against the kubelet's own code: the same node and pods through
both, reduced to what krm-fn claims.

`model(node, pods, repeat)` and `kubelet(harness, node, pods, repeat)` return the same shape:

    {"pods": [outcome, ...],   # the node's DaemonSet pods, then `pods`, in order
     "copies": n,              # copies of the last pod admitted after them (`repeat` > 0)
     "stoppedBy": outcome}     # the first copy refused (None when none was, or no repeat)

with each outcome {"admitted": bool, "reason": the kubelet's reason ("" when admitted;
TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError, OutOfcpu,
OutOfmemory, OutOfpods, ...), "exclusive": {container: exclusive CPU count} (containers
without exclusive CPUs left out), "numa": {container: [NUMA ids of its exclusive CPUs]},
"podNuma": [NUMA ids of the pod's exclusive CPUs and of its memory under the Memory
Manager's Static policy], "message": the kubelet's message for a refusal by the resource
managers, else ""}.

Where krm-fn is coarser on purpose, the comparison leaves a part out, by name (COARSER).
"""
from __future__ import annotations

from krm_fn.admission import capacity
from tests.harness import convert

COARSER = {
    "cpu-ids": "krm-fn states how many exclusive CPUs a container gets and on which NUMA "
               "nodes, not which CPU ids: only the count and the NUMA nodes are compared",
    "messages": "the kubelet's message is compared for the resource managers' refusals "
                "(TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError); for "
                "the resource fit (OutOfcpu, ...) only the reason, as krm-fn words those "
                "for the render",
    "memory-numa": "the NUMA nodes of the memory are compared for the pod as a whole "
                   "(krm-fn reports the NUMA nodes of a pod's exclusive CPUs and memory "
                   "together, not each container's memory nodes)",
    "numa-distances": "krm-fn has no NUMA distances (prefer-closest-numa-nodes picks among "
                      "equally wide hints as if all were equally far): the harness machines "
                      "give every pair of NUMA nodes distance 20",
    "undescribed-memory": "a pool without topology.memory/numaMemory: krm-fn's allocatable "
                          "memory is unknown and its Memory Manager model has AMPLE (1 PiB) "
                          "per NUMA node; the harness node gets the same, so memory never "
                          "limits either side",
    "devices-and-disk": "the harness kubelet has no device plugin and a root filesystem of "
                        "its own, and the kubelet admits a pod whose extended resources its "
                        "node does not list (predicate.go removeMissingExtendedResources): "
                        "a golden pod's extended-resource and ephemeral-storage requests "
                        "(and its DaemonSet pods') are taken out on both sides, and its "
                        "replicas per node are not compared; the real kube-scheduler judges "
                        "those (tests/test_scheduler_resources.py)",
    "pod-level-managers": ("with PodLevelResourceManagers on and topologyManagerScope pod, "
                           "the kubelet gives a pod with pod-level resources one block of "
                           "exclusive CPUs (its pod-level cpu) and shares it out among its "
                           "containers; krm-fn's packer judges such a pod container by "
                           "container and the verdict warns, or errors where the kubelet "
                           "refuses the pod or pins none of its containers "
                           "(tests/test_kubelet_differential.py "
                           "test_pod_level_resource_managers_against_the_kubelet); the "
                           "generated cases leave the gate off"),
}


def _device(res: str) -> bool:
    return res == "ephemeral-storage" or ("/" in res and "kubernetes.io/" not in res)


def _without(p):
    """AdmittedPod `p` without extended-resource and ephemeral-storage amounts (itself
    when it has none)."""
    def strip(m):
        return {k: v for k, v in m.items() if not _device(k)} if m else m
    if not any(_device(k) for c in p.containers for k in (*c.requests, *c.limits)):
        return p
    return p._replace(containers=tuple(
        c._replace(requests=strip(c.requests), limits=strip(c.limits))
        for c in p.containers))


def without_devices(node, pods: list) -> tuple:
    """(node, pods, taken) with every extended-resource and ephemeral-storage amount of
    `pods` and of the node's DaemonSet pods taken out, and of the node's allocatable
    (COARSER devices-and-disk); `taken`: something was."""
    daemons = tuple(_without(d) for d in node.daemons)
    out = [_without(p) for p in pods]
    alloc = {k: v for k, v in node.allocatable.items() if not _device(k)}
    taken = (any(a is not b for a, b in zip(daemons, node.daemons))
             or any(a is not b for a, b in zip(out, pods)) or alloc != node.allocatable)
    if taken:
        node = node._replace(daemons=daemons, allocatable=alloc, from_node="")
    return node, out, taken


# Disagreements the harness found that are not fixed yet, by name: a generated case that
# matches one and differs is counted and reported (a warning naming it), not failed; any
# other difference fails. Each entry: name -> (what differs and where the fix stands,
# predicate on the case (node, pods)). Listed in docs/verdict.md; an entry goes when its
# fix lands (with a named regression in tests/test_kubelet_differential.py).
OPEN: dict = {}


def open_kind(node, pods) -> str | None:
    """The OPEN entry a differing case falls under, or None."""
    for name, (_, matches) in OPEN.items():
        if matches(node, pods):
            return name
    return None


def _reason(packer: capacity.Packer) -> str:
    if packer.last is not None and not packer.last.admitted:
        return packer.last.reason
    why = packer.why
    if why.startswith(("maxPods", "pods ")):       # maxPods, or podsPerCore x CPUs
        return "OutOfpods"
    if why.endswith(")") and "(OutOf" in why:
        return why[why.rindex("(OutOf") + 1:-1]
    return why or "?"


def _model_outcome(packer: capacity.Packer, ok: bool) -> dict:
    if not ok:
        last = packer.last
        message = last.message if last is not None and not last.admitted else ""
        return REFUSED | {"reason": _reason(packer), "message": message}
    adm = packer.last
    exclusive = dict(adm.exclusive) if adm is not None else {}
    numa = {k: list(v) for k, v in (adm.numa_of if adm is not None else {}).items()}
    return {"admitted": True, "reason": "", "exclusive": exclusive, "numa": numa,
            "podNuma": list(adm.numa) if adm is not None else [], "message": ""}


REFUSED = {"admitted": False, "reason": "", "exclusive": {}, "numa": {}, "podNuma": [],
           "message": ""}
MANAGERS = ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError")


def model(node, pods: list, repeat: int = 0) -> dict:
    """What krm-fn's model (capacity.Packer, topology.admit) makes of `pods` arriving on an
    empty node of `node`'s pool after its DaemonSet pods."""
    # Packer places the DaemonSet pods itself and forgets them; place them here instead,
    # one by one, to compare each.
    daemons = node.daemons
    packer = capacity.Packer(node._replace(daemons=()))
    out: dict = {"pods": [], "copies": 0, "stoppedBy": None}
    for p in list(daemons) + list(pods):
        out["pods"].append(_model_outcome(packer, packer.place(p)))
    if repeat and pods:
        for _ in range(repeat):
            ok = packer.place(pods[-1])
            if not ok:
                out["stoppedBy"] = _model_outcome(packer, False)
                break
            out["copies"] += 1
    return out


def _kubelet_outcome(r: dict) -> dict:
    if not r["admitted"]:
        message = r.get("message", "") if r["reason"] in MANAGERS else ""
        return REFUSED | {"reason": r["reason"], "message": message}
    containers = r.get("containers") or []
    exclusive = {c["name"]: len(c["cpus"]) for c in containers if c["cpus"]}
    numa = {c["name"]: c["cpuNuma"] for c in containers if c["cpus"]}
    pod_numa = sorted({n for c in containers for n in c["cpuNuma"] + c["memoryNuma"]})
    return {"admitted": True, "reason": "", "exclusive": exclusive, "numa": numa,
            "podNuma": pod_numa, "message": ""}


def kubelet(harness, node, pods: list, repeat: int = 0) -> dict:
    """What the kubelet (harness: runner.Harness of node.version's minor) makes of the same;
    {"startError": message} when the kubelet does not start with the node's config."""
    got = harness.call("admit", convert.admit_input(node, pods, repeat))
    if got.get("startError"):
        return {"startError": got["startError"]}
    stopped = got.get("stoppedBy")
    return {"pods": [_kubelet_outcome(r) for r in got["pods"]], "copies": got["copies"],
            "stoppedBy": _kubelet_outcome(stopped) if stopped else None}
