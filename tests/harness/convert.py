"""krm-fn's admission model, written as the inputs of the kubelet harness.

`machine(node)` is the cadvisor MachineInfo of a NodeModel's CPUs and memory, laid out as
cadvisor reads sysfs (one entry per NUMA node, its cores grouped by socket and core id, each
core's threads the CPUs of that core on that NUMA node); every NUMA node at distance 20 from the others (krm-fn's model
has no NUMA distances and treats them as equal; COARSER in differential.py);
`kubelet_config(node)` the merged
KubeletConfiguration; `pod(p, name)` a v1 Pod of an AdmittedPod. Quantities are written
exactly: CPU in millicores (the model's CPU is in nanocores; a finer amount is a test bug
and raises ValueError), memory and hugepages in bytes.
"""
from __future__ import annotations

from krm_fn.admission.memorymanager import AMPLE
from krm_fn.admission.model import APP, INIT, SIDECAR, AdmittedPod, NodeModel
from krm_fn.quantity import MILLI

# Memory of each NUMA node when the model does not describe it: what krm-fn's Memory
# Manager model then assumes, enough that memory never limits what is admitted.
UNDESCRIBED_MEMORY = AMPLE


def quantity(resource: str, amount) -> str:
    """`amount` of `resource` as a Kubernetes quantity string: cpu in millicores (in
    nanocores when finer than 1m, as the kubelet reads it), others as an integer count of
    bytes (or units)."""
    if resource == "cpu":
        milli, finer = divmod(amount, MILLI)        # the model's cpu is in nanocores
        return f"{amount}n" if finer else f"{milli}m"
    return str(int(amount))


def resources(m: dict | None) -> dict:
    return {r: quantity(r, v) for r, v in (m or {}).items()}


def numa_memory(node: NodeModel) -> dict:
    """{NUMA id: {"memory": bytes, "hugepages-<size>": bytes}} of `node`: its described
    memory, else UNDESCRIBED_MEMORY on each NUMA node."""
    ids = node.numa_nodes
    if node.numa_memory:
        return {n: dict(node.numa_memory.get(n, {})) for n in ids}
    return {n: {"memory": UNDESCRIBED_MEMORY} for n in ids}


def _page_kib(resource: str) -> int:
    size = resource[len("hugepages-"):]
    unit = {"Ki": 1, "Mi": 1024, "Gi": 1024**2}[size[-2:]]
    return int(size[:-2]) * unit


# Huge page sizes (KiB) Linux on x86-64 offers on every NUMA node: sysfs lists each under
# /sys/devices/system/node/node<N>/hugepages/ even with no page pre-allocated, and cadvisor
# reports them all.
PAGE_SIZES_KIB = (2048, 1048576)


def machine(node: NodeModel) -> dict:
    """The cadvisor MachineInfo (JSON field names) of `node`."""
    mem = numa_memory(node)
    topology, total, pages_total = [], 0, {}
    for n in node.numa_nodes:
        cores: dict = {}
        for c in sorted(node.cpus):
            if c.numa == n:
                cores.setdefault((c.socket, c.core), []).append(c.cpu)
        counts = dict.fromkeys(PAGE_SIZES_KIB, 0)
        for res, amount in mem[n].items():
            if res.startswith("hugepages-"):
                kib = _page_kib(res)
                counts[kib] = int(amount) // (kib * 1024)
        hugepages = [{"page_size": kib, "num_pages": c} for kib, c in sorted(counts.items())]
        for kib, c in counts.items():
            pages_total[kib] = pages_total.get(kib, 0) + c
        memory = int(mem[n].get("memory", 0))
        total += memory
        distances = [10 if m == n else 20 for m in range(max(node.numa_nodes) + 1)]
        topology.append({"node_id": n, "memory": memory, "hugepages": hugepages,
                         "distances": distances,
                         "cores": [{"core_id": core, "thread_ids": threads, "socket_id": sock}
                                   for (sock, core), threads in sorted(cores.items())]})
    return {"num_cores": len(node.cpus),
            "num_physical_cores": len({(c.socket, c.core) for c in node.cpus}),
            "num_sockets": len({c.socket for c in node.cpus}),
            "memory_capacity": total,
            "hugepages": [{"page_size": k, "num_pages": v} for k, v in sorted(pages_total.items())],
            "topology": topology}


def kubelet_config(node: NodeModel) -> dict:
    """The KubeletConfiguration `node` runs, as a v1beta1 document."""
    return {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            **(node.kubelet or {})}


def container(c) -> dict:
    out = {"name": c.name, "image": "registry.example/x:1"}
    res = {k: v for k, v in (("requests", resources(c.requests)),
                             ("limits", resources(c.limits))) if v}
    if res:
        out["resources"] = res
    if c.role == SIDECAR:
        out["restartPolicy"] = "Always"
    return out


def pod(p: AdmittedPod, name: str) -> dict:
    """The v1 Pod the kubelet receives for `p` (containers in the model's order: init and
    sidecar containers, then app containers; the host ports on the first app container)."""
    spec: dict = {
        "initContainers": [container(c) for c in p.containers if c.role in (INIT, SIDECAR)],
        "containers": [container(c) for c in p.containers if c.role == APP]}
    if not spec["initContainers"]:
        del spec["initContainers"]
    if p.host_ports and spec["containers"]:
        spec["containers"][0]["ports"] = [
            {"containerPort": port, "hostPort": port, "protocol": proto,
             **({"hostIP": ip} if ip else {})} for proto, ip, port in p.host_ports]
    if p.anti:
        spec["affinity"] = {"podAntiAffinity": p.affinity["podAntiAffinity"]}
    if p.pod_requests is not None or p.pod_limits is not None:
        spec["resources"] = {k: v for k, v in (("requests", resources(p.pod_requests)),
                                               ("limits", resources(p.pod_limits))) if v}
    if p.overhead:
        spec["overhead"] = resources(p.overhead)
    meta = {"name": name, "namespace": "default", "uid": name}
    if p.labels:
        meta["labels"] = dict(p.labels)
    return {"metadata": meta, "spec": spec}


def admit_input(node: NodeModel, pods: list, repeat: int = 0) -> dict:
    """The `harness admit` input: `node`'s DaemonSet pods, then `pods`, then up to `repeat`
    copies of the last."""
    listed = [pod(d, f"daemon-{i}") for i, d in enumerate(node.daemons)]
    listed += [pod(p, f"pod-{i}") for i, p in enumerate(pods)]
    return {"machineInfo": machine(node), "kubeletConfig": kubelet_config(node),
            "nodeLabels": dict(node.labels), "pods": listed, "repeat": repeat}
