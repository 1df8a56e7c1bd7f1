"""The pool topology from the cluster's own objects: a Node (`kubectl get node NAME -o yaml`)
and a NodeResourceTopology (`kubectl get noderesourcetopology NAME -o yaml`), named by
`spec.nodePools[].topology.fromNode` / `fromNodeResourceTopology`, each either the object
itself or the name of an item of that kind in the input.

They fill the same topology fields a user would write (sockets, coresPerSocket,
threadsPerCore, memory, numaMemory, hugepages), so everything downstream reads one
representation:

- NodeResourceTopology (`topology.node.k8s.io/v1alpha2`,
  github.com/k8stopologyawareschedwg/noderesourcetopology-api
  pkg/apis/topology/v1alpha2/types.go): each zone of type `Node` named `node-<id>`
  (helper/numanode/numanode.go) is one NUMA node; its `cpu` resource capacity is its logical
  CPUs, `memory` its memory, `hugepages-<size>` its hugepages. All NUMA nodes must have the
  same CPU count (else use `topology.lscpu`). NUMA nodes = sockets x numaNodesPerSocket
  (numaNodesPerSocket as configured, default 1); the NRT names no sockets.
- Node (`v1`): `status.capacity.cpu` is the logical CPU count, `status.capacity.memory` the
  memory (bytes, as the kubelet reports it) and `status.capacity.hugepages-<size>` the
  pre-allocated hugepages. A Node holds no SMT or NUMA layout: sockets and
  numaNodesPerSocket are the topology's (defaults 2 and 1), and threadsPerCore is 1 when the
  Node Feature Discovery label `feature.node.kubernetes.io/cpu-hardware_multithreading` is
  "false", the configured value (2 when it is 1) when "true", else the configured value
  (https://kubernetes-sigs.github.io/node-feature-discovery/stable/usage/features.html).

With both, the NRT gives the CPU layout and per-NUMA memory and the Node its SMT label (and
must agree on the CPU count). An `lscpu` paste still decides the CPU numbering; memory,
numaMemory and hugepages are filled only when the config leaves them unset.
"""
from __future__ import annotations

from typing import Any

from krm_fn import quantity
from krm_fn.node.formats._common import LOCAL_CONFIG_ANNOTATION

NODE = ("v1", "Node")
NRT = ("topology.node.k8s.io/v1alpha2", "NodeResourceTopology")
SMT_LABEL = "feature.node.kubernetes.io/cpu-hardware_multithreading"
HUGEPAGES_PREFIX = "hugepages-"
NUMA_ZONE_TYPE = "Node"
NUMA_ZONE_PREFIX = "node-"
LOCAL_CONFIG = LOCAL_CONFIG_ANNOTATION


class SourceError(ValueError):
    """A Node / NodeResourceTopology that cannot give a topology: `path` names the config
    field, `message` what is wrong."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


def _get(obj: Any, *keys: str) -> Any:
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def resolve(value: Any, kind: tuple, items: list, path: str) -> dict:
    """The object `value` stands for: the mapping itself (its kind checked when given), or
    the one input item of `kind` ((apiVersion, kind)) whose metadata.name is `value`, which
    must be marked config.kubernetes.io/local-config (else the output carries it to the
    cluster). Raises SourceError."""
    api, k = kind
    if isinstance(value, dict):
        if value.get("kind") not in (None, k):
            raise SourceError(path, f"expected a {k} object, found kind {value.get('kind')!r}")
        return value
    if not isinstance(value, str) or not value:
        raise SourceError(path, f"expected a {k} object or the name of a {k} in the input")
    found = [o for o in items if isinstance(o, dict) and o.get("kind") == k
             and str(o.get("apiVersion", "")).split("/")[0] == api.split("/")[0]
             and _get(o, "metadata", "name") == value]
    if len(found) != 1:
        raise SourceError(path, f"{'no' if not found else len(found)} {k} named {value!r} "
                          f"in the input (add `kubectl get {k.lower()} {value} -o yaml`, "
                          f"marked {LOCAL_CONFIG}: \"true\", or give the "
                          f"object itself)")
    # kustomize drops a local-config item (pipeline.select.is_local_config); any other
    # item reaches the cluster
    from krm_fn.pipeline.select import is_local_config
    if not is_local_config(found[0]):
        raise SourceError(path, f"the {k} {value!r} in the input is not marked {LOCAL_CONFIG}: "
                          f"\"true\": it is written back to the output, and kubectl apply or "
                          f"a GitOps sync would apply it to the cluster; add the annotation "
                          f"(kustomize, kpt and krm-fn run --drop-local-config then leave it "
                          f"out of their output)")
    return found[0]


def _memory(text: Any, path: str) -> int:
    try:
        q = quantity.parse_memory(text)
    except ValueError as e:
        raise SourceError(path, f"{text!r} is not a memory quantity: {e}") from None
    return q.whole


def _count(text: Any, path: str) -> int:
    try:
        q = quantity.parse_milli_cpu(text)
    except ValueError as e:
        raise SourceError(path, f"{text!r} is not a CPU count: {e}") from None
    if not q.is_integer or q.nanos < quantity.NANO:
        raise SourceError(path, f"{text!r} is not a whole number of CPUs")
    return q.nanos // quantity.NANO


def _hugepages(resources: dict, path: str) -> dict[str, int]:
    """{page size text: bytes} of the non-zero `hugepages-<size>` entries of `resources`."""
    out = {}
    for key, value in resources.items():
        if str(key).startswith(HUGEPAGES_PREFIX):
            size = str(key)[len(HUGEPAGES_PREFIX):]
            _memory(size, path)
            total = _memory(value, f"{path}.{key}")
            if total:
                out[size] = total
    return out


def node_facts(node: dict, path: str) -> dict:
    """{"name", "cpus" (logical CPUs), "memory" (bytes), "hugepages" ({size: bytes}), "smt"
    (True / False / None: the NFD label)} of a Node object. Raises SourceError."""
    cap = _get(node, "status", "capacity")
    if not isinstance(cap, dict) or "cpu" not in cap or "memory" not in cap:
        raise SourceError(path, "the Node has no status.capacity cpu and memory (give "
                                "`kubectl get node NAME -o yaml` output)")
    smt = str(_get(node, "metadata", "labels", SMT_LABEL) or "").lower()
    return {"name": _get(node, "metadata", "name") or "?",
            "cpus": _count(cap["cpu"], f"{path}.status.capacity.cpu"),
            "memory": _memory(cap["memory"], f"{path}.status.capacity.memory"),
            "hugepages": _hugepages(cap, f"{path}.status.capacity"),
            "smt": {"true": True, "false": False}.get(smt)}


# status.allocatable entries the pool's own model decides: cpu and memory are recomputed
# from capacity under the kubelet config krm-fn emits, huge pages from topology.hugepages
# (filled from the Node's capacity), pods from maxPods
OWN_ALLOCATABLE = ("cpu", "memory", "pods")


def allocatable(topo, items: list, path: str) -> tuple[str, dict] | None:
    """(the Node's name, {resource: amount}) of the `fromNode` Node of the config Topology
    `topo` (at `path`): its status.allocatable of every resource but cpu, memory, pods and
    huge pages, as the scheduler's NodeResourcesFit reads it (ephemeral-storage in bytes,
    an extended resource such as nvidia.com/gpu as a count, each rounded up to a whole
    number as the API server does); None without `fromNode`. Raises SourceError for an
    amount that is not a quantity."""
    if topo.fromNode is None:
        return None
    p = f"{path}.fromNode"
    node = resolve(topo.fromNode, NODE, items, p)
    alloc = _get(node, "status", "allocatable")
    out = {}
    for key, value in (alloc.items() if isinstance(alloc, dict) else ()):
        name = str(key)
        if name in OWN_ALLOCATABLE or name.startswith(HUGEPAGES_PREFIX):
            continue
        try:
            q = quantity.parse_memory(value).whole
        except (ValueError, TypeError) as e:
            raise SourceError(f"{p}.status.allocatable.{name}",
                              f"{value!r} is not a quantity: {e}") from None
        out[name] = q
    return str(_get(node, "metadata", "name") or "?"), out


def nrt_zones(nrt: dict, path: str) -> list[dict]:
    """The NUMA zones of a NodeResourceTopology, by NUMA id: [{"id", "cpus", "memory" (bytes
    or None), "hugepages" ({size: bytes})}]. Raises SourceError."""
    zones = []
    for i, z in enumerate(nrt.get("zones") or []):
        if not isinstance(z, dict) or z.get("type") != NUMA_ZONE_TYPE:
            continue
        zpath = f"{path}.zones[{i}]"
        name = str(z.get("name", ""))
        if not (name.startswith(NUMA_ZONE_PREFIX) and name[len(NUMA_ZONE_PREFIX):].isdigit()):
            raise SourceError(zpath, f"zone name {name!r} is not node-<NUMA id>")
        res = {str(r.get("name")): r.get("capacity") for r in z.get("resources") or []
               if isinstance(r, dict)}
        if "cpu" not in res:
            raise SourceError(zpath, f"zone {name} has no cpu resource")
        zones.append({"id": int(name[len(NUMA_ZONE_PREFIX):]),
                      "cpus": _count(res["cpu"], f"{zpath}.resources.cpu"),
                      "memory": (_memory(res["memory"], f"{zpath}.resources.memory")
                                 if "memory" in res else None),
                      "hugepages": _hugepages(res, f"{zpath}.resources")})
    if not zones:
        raise SourceError(path, "no zone of type Node (NUMA node) in the NodeResourceTopology")
    zones.sort(key=lambda z: z["id"])
    if [z["id"] for z in zones] != list(range(len(zones))):
        raise SourceError(path, f"NUMA zones {[z['id'] for z in zones]} are not numbered "
                                f"0..{len(zones) - 1}")
    return zones


def _bytes_text(n: int) -> str:
    return quantity.format_bytes(n)


def _threads(topo, node: dict | None) -> int:
    """threadsPerCore: from the Node's NFD SMT label when it has one, else configured."""
    smt = node["smt"] if node else None
    if smt is False:
        return 1
    if smt is True and topo.threadsPerCore == 1:
        return 2
    return topo.threadsPerCore


def _cpus_from_nrt(topo, zones: list, node: dict | None, path: str) -> str:
    per = {z["cpus"] for z in zones}
    if len(per) != 1:
        raise SourceError(path, f"NUMA nodes have different CPU counts {sorted(per)}: give "
                                f"topology.lscpu for this node")
    cpus, numa, threads = per.pop(), len(zones), _threads(topo, node)
    if node and node["cpus"] != cpus * numa:
        raise SourceError(path, f"the NodeResourceTopology has {cpus * numa} CPUs, the Node "
                                f"{node['cpus']}: they describe different nodes")
    if cpus % threads or numa % topo.numaNodesPerSocket:
        raise SourceError(path, f"{numa} NUMA nodes of {cpus} CPUs do not split into "
                                f"numaNodesPerSocket {topo.numaNodesPerSocket} and "
                                f"threadsPerCore {threads}")
    topo.sockets = numa // topo.numaNodesPerSocket
    topo.coresPerSocket = cpus // threads * topo.numaNodesPerSocket
    topo.threadsPerCore = threads
    return (f"{numa} NUMA node(s) of {cpus} CPUs from the NodeResourceTopology, read as "
            f"{topo.sockets} socket(s) x {topo.coresPerSocket} cores x {threads} threads")


def _cpus_from_node(topo, node: dict, path: str) -> str:
    threads = _threads(topo, node)
    per_socket, rest = divmod(node["cpus"], topo.sockets * threads)
    if rest or per_socket % topo.numaNodesPerSocket:
        raise SourceError(path, f"{node['cpus']} CPUs do not split into sockets "
                                f"{topo.sockets} x numaNodesPerSocket "
                                f"{topo.numaNodesPerSocket} x threadsPerCore {threads}: set "
                                f"those next to fromNode (a Node gives no SMT or NUMA layout)")
    topo.coresPerSocket, topo.threadsPerCore = per_socket, threads
    smt = {True: "its SMT label", False: "its SMT label", None: "assumed, no SMT label"}
    return (f"{node['cpus']} CPUs from Node {node['name']!r}, read as {topo.sockets} "
            f"socket(s) x {per_socket} cores x {threads} threads (threads: "
            f"{smt[node['smt']]}; sockets and NUMA nodes per socket: assumed from the "
            f"topology, a Node has no NUMA layout)")


def _memory_fill(topo, zones: list | None, node: dict | None) -> None:
    """memory, numaMemory and hugepages, where the config leaves them unset."""
    if zones and all(z["memory"] is not None for z in zones):
        if topo.memory is None:
            topo.memory = quantity.parse_memory(_bytes_text(sum(z["memory"] for z in zones)))
        if not topo.numaMemory:
            topo.numaMemory = {str(z["id"]): _bytes_text(z["memory"]) for z in zones}
    if node and topo.memory is None:
        topo.memory = quantity.parse_memory(_bytes_text(node["memory"]))
    if not topo.hugepages:
        pages: dict[str, int] = {}
        for source in ([z["hugepages"] for z in zones] if zones else
                       [node["hugepages"]] if node else []):
            for size, total in source.items():
                pages[size] = pages.get(size, 0) + total
        topo.hugepages = {size: _bytes_text(total) for size, total in pages.items()}


def fill(topo, items: list, path: str) -> list[str]:
    """Fill the config Topology record `topo` (at field path `path`) from its `fromNode` /
    `fromNodeResourceTopology` (objects, or names of input `items`), in place. Returns what
    was read and assumed, one sentence each (empty when neither is set). Raises
    SourceError naming the field."""
    node_v, nrt_v = topo.fromNode, topo.fromNodeResourceTopology
    if node_v is None and nrt_v is None:
        return []
    node = zones = None
    if node_v is not None:
        p = f"{path}.fromNode"
        node = node_facts(resolve(node_v, NODE, items, p), p)
    notes = []
    if nrt_v is not None:
        p = f"{path}.fromNodeResourceTopology"
        zones = nrt_zones(resolve(nrt_v, NRT, items, p), p)
        if not topo.lscpu:
            notes.append(_cpus_from_nrt(topo, zones, node, p))
    elif not topo.lscpu:
        notes.append(_cpus_from_node(topo, node, f"{path}.fromNode"))
    _memory_fill(topo, zones, node)
    return notes


def missing_labels(topo, items: list, selector: dict, path: str) -> str | None:
    """When `topo.fromNode` names a Node that lacks a label of the pool's `selector`
    (nodeSelector, label -> value): one sentence naming the labels and the fix, else None.
    The scheduler places the pool's pods only on nodes with every label
    (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector),
    so such a Node is not one of the pool's nodes yet. Raises SourceError like fill."""
    if topo.fromNode is None or not selector:
        return None
    p = f"{path}.fromNode"
    node = resolve(topo.fromNode, NODE, items, p)
    labels = _get(node, "metadata", "labels")
    labels = labels if isinstance(labels, dict) else {}
    missing = {k: v for k, v in selector.items()
               if k not in labels or str(labels[k]) != str(v)}
    if not missing:
        return None
    name = _get(node, "metadata", "name") or "?"
    want = ", ".join(f"{k}={v}" for k, v in missing.items())
    have = ", ".join(f"{k}={labels[k]}" for k in missing if k in labels) or "none of them"
    return (f"Node {name!r} does not carry the pool's nodeSelector label(s) {want} (it has "
            f"{have}): the pool's pods are scheduled only on nodes with every label, so "
            f"this Node is not one of the pool's nodes yet; label the pool's nodes "
            f"(kubectl label node {name} {' '.join(f'{k}={v}' for k, v in missing.items())})"
            f" or give a Node of the pool")
