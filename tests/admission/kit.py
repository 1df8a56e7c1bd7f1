"""Builders for the admission tests: pods and nodes as the model sees them."""
from __future__ import annotations

from krm_fn.admission.model import APP, AdmittedPod, Container, NodeModel
from krm_fn.node.topology import Topology
from krm_fn.quantity import parse_cpu
from krm_fn.results import Ref

GI = 2**30
MI = 2**20


def cores(cpu) -> int:
    """`cpu` cores (a number, or a quantity such as "500m") in nanocores, the model's cpu
    unit."""
    return parse_cpu(str(cpu)).nanos


def box(cpu, mem_gi=1, limit_cpu=None, limit_mem_gi=None, **extra) -> tuple[dict, dict]:
    """(requests, limits) with cpu in cores (a number, or a quantity such as "500m") and
    memory in GiB; limits = requests unless given."""
    req = {"cpu": cores(cpu), "memory": int(mem_gi * GI), **extra}
    lim = {"cpu": cores(limit_cpu if limit_cpu is not None else cpu),
           "memory": int((limit_mem_gi if limit_mem_gi is not None else mem_gi) * GI), **extra}
    return req, lim


def ctr(name, cpu, mem_gi=1, role=APP, designated=True, source="manifest", **kw) -> Container:
    """A Guaranteed container (requests == limits) unless limit_cpu/limit_mem_gi differ."""
    req, lim = box(cpu, mem_gi, **kw)
    return Container(name, role, req, lim, source, designated)


def pod(*containers, pod_requests=None, pod_limits=None, name="w") -> AdmittedPod:
    return AdmittedPod(Ref("apps/v1", "Deployment", name, "ns"), "spec.template.spec",
                       tuple(containers), pod_requests, pod_limits)


def node(sockets=2, numa_per_socket=1, cores=16, threads=2, reserved=(), version=(1, 35),
         numa_memory=None, allocatable=None, pool="pinned", **kubelet) -> NodeModel:
    """A node of `sockets` x `cores` cores x `threads` threads; kubelet fields as keywords
    (cpuManagerPolicy defaults to static); `allocatable` cpu in cores (as `cores` reads it)."""
    kubelet.setdefault("cpuManagerPolicy", "static")
    topo = Topology(sockets, numa_per_socket, cores, threads)
    return NodeModel(pool, {}, kubelet, version, tuple(topo.cpus()), frozenset(reserved),
                     numa_memory or {},
                     {r: parse_cpu(str(v)).nanos if r == "cpu" else v
                      for r, v in (allocatable or {}).items()})


def reserve_cores(topo_node: NodeModel, per_numa: int) -> frozenset:
    """CPU ids of the lowest `per_numa` physical cores of every NUMA node (all siblings)."""
    out = set()
    for n in topo_node.numa_nodes:
        cores = sorted({c.core for c in topo_node.cpus if c.numa == n})[:per_numa]
        out |= {c.cpu for c in topo_node.cpus if c.core in cores}
    return frozenset(out)
