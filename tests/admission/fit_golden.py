"""Golden data for the kubelet simulation (capacity, verdict, topology, cpumanager,
memorymanager): a fixed-seed set of node models and pods, and every output the per-pod
verdict reads from them, so that a change made for speed can be checked to change no outcome.

    python -m tests.admission.fit_golden      # rewrites both fixtures below

tests/admission/fit_golden.jsonl holds `cases()`, tests/admission/fit_golden_split.jsonl
`split_cases()` (lscpu-like tables whose cores span NUMA nodes, and 8 NUMA nodes). Both
were written by the code before the speed work of issue #11 part 10 (the second by that
code too, from a copy of it, after the first was committed), and rewritten when the
supported versions became 1.35-1.37: each node that drew 1.34, 1.33, 1.31, 1.29 or 1.28 now
has a supported version (VERSIONS), and every case that changed gives the recorded outcome
when the PodLevelResources / PodLevelResourceManagers gates answer as on its old version and
the version in messages is the new one, except for the native-sidecar findings of the 1.28
nodes (SidecarContainers off there; every supported version has native sidecars).

`cases()` builds the node models (1/2/4/8 NUMA nodes, 1/2/4 sockets, SMT on and off,
split and adjacent sibling numbering, hand-made lscpu-like tables with mixed core sizes and
sparse ids; reservedSystemCPUs on various cores; Topology Manager policies and scopes; CPU
Manager options; Memory Manager Static with per-NUMA memory, reservedMemory and hugepages;
maxPods, allocatable, feature gates, versions, DaemonSet pods) and three pods per node (init
containers, native sidecars, several app containers, fractional and integer CPUs, burstable
ones, pod-level resources, pod overhead). `outputs(case)` records per pod fit_detail,
verdict.judge (kubelet.judge_detail's findings and fit_alone) and line; per node fit_mix, _together, pool_summary,
exclusive_per_numa; and a sequence of 10 topology.admit calls on one node state (each
Admission's fields, the free CPUs and the free per-NUMA memory after it) with the CPU
Manager's raw hints at the end. Exceptions are recorded as outcomes too.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from krm_fn.admission import capacity, model, verdict
from krm_fn.admission.model import APP, INIT, SIDECAR, AdmittedPod, Container, NodeModel
from krm_fn.admission.qos import gate, pod_qos
from krm_fn.admission.topology import NodeState, admit
from krm_fn.node.topology import Cpu, Topology, format_cpuset
from krm_fn.quantity import NANO
from krm_fn.results import Ref

FIXTURE = Path(__file__).with_name("fit_golden.jsonl")
# The supported versions the nodes draw from: seven entries, as when the fixtures were
# first written (then 1.34, 1.34, 1.33, 1.31, 1.36, 1.29, 1.28), so the random draws and
# every other property of each case stay the same.
VERSIONS = [(1, 35), (1, 35), (1, 37), (1, 36), (1, 36), (1, 35), (1, 37)]
SEED = 20261201
CASES = 400
SPLIT_FIXTURE = Path(__file__).with_name("fit_golden_split.jsonl")
SPLIT_SEED = 753
SPLIT_CASES = 120
GI, MI = 2**30, 2**20

SHAPES = [  # sockets, NUMA per socket, cores per socket, threads, sibling numbering
    (1, 1, 4, 2, "split"), (1, 1, 8, 1, "split"), (1, 2, 8, 2, "adjacent"),
    (2, 1, 8, 2, "split"), (2, 1, 8, 1, "split"), (2, 2, 8, 2, "split"),
    (1, 4, 8, 1, "adjacent"), (2, 1, 16, 2, "split"), (4, 1, 4, 2, "adjacent"),
    (2, 2, 4, 2, "adjacent"), (2, 4, 4, 1, "split"), (1, 1, 2, 4, "split"),
]


def _tables() -> list[tuple]:
    """lscpu-like CPU tables the counted shapes do not produce."""
    hybrid = [Cpu(c, c // 2, 0, 0) for c in range(8)] + [Cpu(8 + i, 4 + i, 0, 0)
                                                          for i in range(4)]
    hybrid += [Cpu(12 + c, 8 + c // 2, 0, 1) for c in range(8)]
    sparse = [Cpu(cpu, cpu % 8, cpu % 8 // 4, cpu % 8 // 4) for cpu in
              (0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)]
    gap = [Cpu(c, c // 2, 0, 0 if c < 8 else 2) for c in range(16)]
    return [tuple(sorted(hybrid)), tuple(sorted(sparse)), tuple(sorted(gap))]


def _cpus(rng: random.Random) -> tuple:
    if rng.random() < 0.12:
        return rng.choice(_tables())
    s, n, c, t, sib = rng.choice(SHAPES)
    return tuple(Topology(s, n, c, t, sib).cpus())


def _reserved(rng: random.Random, cpus: tuple) -> frozenset:
    ids = [c.cpu for c in cpus]
    kind = rng.randrange(6)
    if kind == 0:
        return frozenset()
    if kind == 1:
        return frozenset({ids[0]})
    if kind == 2:                                   # the whole first core of each NUMA node
        first = {}
        for c in cpus:
            first.setdefault(c.numa, c.core)
        return frozenset(c.cpu for c in cpus if c.core in first.values())
    if kind == 3:
        return frozenset(rng.sample(ids, min(len(ids) - 1, rng.randint(1, 4))))
    if kind == 4:                                   # a CPU of the last NUMA node
        last = max(c.numa for c in cpus)
        return frozenset({max(c.cpu for c in cpus if c.numa == last)})
    return frozenset({ids[0], 999})                 # an id the node does not have


def _kubelet(rng: random.Random, numas: list) -> tuple[dict, dict]:
    kub: dict = {"cpuManagerPolicy": "static" if rng.random() < 0.9 else "none"}
    pol = rng.choice([None, "none", "best-effort", "restricted", "single-numa-node",
                      "restricted", "single-numa-node"])
    if pol:
        kub["topologyManagerPolicy"] = pol
    scp = rng.choice([None, "container", "pod", "pod"])
    if scp:
        kub["topologyManagerScope"] = scp
    if rng.random() < 0.1:
        kub["topologyManagerPolicyOptions"] = {"max-allowable-numa-nodes": rng.choice(
            ["2", "8", "x"])}
    opts = {}
    for name in ("full-pcpus-only", "distribute-cpus-across-numa", "align-by-socket"):
        if rng.random() < 0.3:
            opts[name] = rng.choice(["true", "false", True, "1"])
    if opts:
        kub["cpuManagerPolicyOptions"] = opts
    if rng.random() < 0.2:
        kub["maxPods"] = rng.choice([3, 7, 20])
    if rng.random() < 0.25:
        kub["featureGates"] = {"PodLevelResources": rng.choice([True, False])}
    numa_memory: dict = {}
    if rng.random() < 0.35:
        kub["memoryManagerPolicy"] = "Static"
        if rng.random() < 0.8:
            for n in numas:
                cap = {"memory": rng.choice([8, 16, 32]) * GI}
                if rng.random() < 0.4:
                    cap["hugepages-1Gi"] = rng.choice([2, 4]) * GI
                numa_memory[n] = cap
            if rng.random() < 0.5:
                kub["reservedMemory"] = [{"numaNode": numas[0],
                                          "limits": {"memory": rng.choice(["1Gi", "512Mi"])}}]
    return kub, numa_memory


# cpu in nanocores (the model's unit): 1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 1/2, 1/4, 1/10, 3/2, 5/2
# and 0 cores
CPU_CHOICES = [n * NANO for n in (1, 1, 2, 2, 3, 4, 4, 6, 8, 12)] + [
    NANO // 2, NANO // 4, NANO // 10, 3 * NANO // 2, 5 * NANO // 2, 0]
MEM_CHOICES = [GI // 4, GI, GI, 2 * GI, 4 * GI, 8 * GI]


def _container(rng: random.Random, name: str, role: str) -> Container:
    cpu = rng.choice(CPU_CHOICES)
    mem = rng.choice(MEM_CHOICES)
    req: dict = {"memory": mem}
    if cpu or rng.random() < 0.5:
        req["cpu"] = cpu
    if rng.random() < 0.1:
        req["hugepages-1Gi"] = GI
    lim = dict(req)
    kind = rng.random()
    if kind < 0.1:
        lim["cpu"] = cpu + NANO                     # burstable
    elif kind < 0.14:
        req, lim = {}, {}                           # best effort
    return Container(name, role, req, lim, rng.choice(["manifest", "manifest", "istio"]),
                     rng.random() < 0.6)


def _pod(rng: random.Random, name: str) -> AdmittedPod:
    containers = []
    for i in range(rng.choice([0, 0, 0, 1, 1, 2])):
        containers.append(_container(rng, f"i{i}", rng.choice([INIT, SIDECAR])))
    for i in range(rng.choice([1, 1, 1, 2, 3])):
        containers.append(_container(rng, f"c{i}", APP))
    pod_req = pod_lim = None
    if rng.random() < 0.12:
        pod_req = {"cpu": rng.choice([2, 4, 8]) * NANO, "memory": 4 * GI}
        pod_lim = dict(pod_req) if rng.random() < 0.8 else None
    overhead = ({"cpu": NANO // 4, "memory": 128 * MI} if rng.random() < 0.15 else {})
    return AdmittedPod(Ref("apps/v1", "Deployment", name, "ns"), f"{name}.spec",
                       tuple(containers), pod_req, pod_lim, overhead=overhead)


def _node(rng: random.Random, index: int, cpus: tuple | None = None) -> NodeModel:
    cpus = cpus or _cpus(rng)
    numas = sorted({c.numa for c in cpus})
    kub, numa_memory = _kubelet(rng, numas)
    alloc: dict = {}
    roll = rng.random()
    if roll < 0.3:
        alloc = {"cpu": len(cpus) * NANO - rng.choice([0, NANO, NANO // 2]),
                 "memory": rng.choice([16, 64, 190]) * GI}
    elif roll < 0.45:
        alloc = {"memory": rng.choice([8, 64]) * GI}
    daemons = tuple(_pod(rng, f"ds{i}") for i in range(rng.choice([0, 0, 0, 1, 2])))
    version = rng.choice(VERSIONS)
    return NodeModel(f"pool{index}", {}, kub, version, cpus, _reserved(rng, cpus),
                     numa_memory, alloc, daemons)


def cases() -> list[tuple[NodeModel, list[AdmittedPod]]]:
    """(node, [3 pods]) per case, from SEED."""
    rng = random.Random(SEED)
    return [(_node(rng, i), [_pod(rng, f"w{i}-{k}") for k in range(3)]) for i in range(CASES)]


def _split_tables() -> list[tuple]:
    """lscpu-like tables where threads of one core sit on different NUMA nodes."""
    every = [Cpu(c, c // 2, 0, c % 2) for c in range(16)]
    one = [Cpu(c, c // 2, 0, 0 if c < 7 else 1) for c in range(16)]
    wide = [Cpu(c, c // 4, c // 16, (c // 3) % 4) for c in range(32)]
    return [tuple(every), tuple(one), tuple(wide)]


def split_cases() -> list[tuple[NodeModel, list[AdmittedPod]]]:
    """(node, [3 pods]) per case on the split-core tables and 8 NUMA nodes, from
    SPLIT_SEED."""
    rng = random.Random(SPLIT_SEED)
    tables = _split_tables() + [tuple(Topology(2, 4, 8, 2).cpus())]
    return [(_node(rng, i, tables[i % len(tables)]), [_pod(rng, f"s{i}-{k}") for k in range(3)])
            for i in range(SPLIT_CASES)]


def _plain(value):
    """JSON-safe form: sets sorted, tuples as lists, records and dicts with string keys as
    objects, other dicts as sorted [key, value] pairs."""
    if hasattr(value, "_fields"):                   # Finding, PodVerdict (namedtuples)
        return {name: _plain(getattr(value, name)) for name in value._fields}
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, dict):                     # {NUMA id: ...}: ordered pairs
        return [[_plain(k), _plain(v)] for k, v in sorted(value.items(), key=lambda kv:
                                                         str(kv[0]))]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _safe(compute):
    try:
        return _plain(compute())
    except Exception as exc:                        # an outcome to keep, too
        return {"raised": type(exc).__name__, "message": str(exc)}


def _admission(a) -> dict:
    return {"admitted": a.admitted, "reason": a.reason, "message": a.message,
            "container": a.container, "exclusive": a.exclusive, "numa": a.numa,
            "hints": a.hints, "numa_of": a.numa_of}


def _sequence(node: NodeModel, pods: list) -> list:
    """10 admissions on one node state, the pods in turn; refused ones leave it as it was."""
    pod_level = gate(node, "PodLevelResources")
    st, out = NodeState(node), []
    for step in range(10):
        p = pods[step % len(pods)]
        trial = st.copy()
        a = admit(p, node, trial, pod_qos(p, pod_level))
        out.append({**_admission(a), "free": format_cpuset(trial.cpu.free),
                    "mem": trial.mem.free if trial.mem is not None else None})
        if a.admitted:
            st = trial
    taken = sorted(set(st.cpu.info) - st.cpu.free - st.cpu.reserved)
    out.append({"hints": [[n, k, st.cpu.hints(n, set(taken[:k]))]
                          for n in (1, 5, 9) for k in (0, 2)]})
    return out


def outputs(node: NodeModel, pods: list) -> dict:
    """Every recorded output of one case (JSON-safe)."""
    model._PER_NODE.clear()
    out: dict = {"pool": node.pool, "pods": []}
    judged = []
    for p in pods:
        v = _safe(lambda p=p: verdict.judge(p, node))
        one = {"fit_detail": _safe(lambda p=p: capacity.fit_detail(p, node)),
               "judge": v}
        if isinstance(v, list):
            pv = verdict.judge(p, node)
            one["line"] = verdict.line(pv)
            judged.append((p, pv))
        out["pods"].append(one)
    out["fit_mix"] = _safe(lambda: capacity.fit_mix([(pods[0], 2), pods[1], pods[2]], node))
    out["fit_mix_rev"] = _safe(lambda: capacity.fit_mix([pods[2], (pods[1], 1), pods[0]],
                                                        node))
    out["together"] = _safe(lambda: verdict._together(pods, node))
    out["pool_summary"] = _safe(lambda: verdict.pool_summary(node, judged))
    out["pool_summary_one"] = _safe(lambda: verdict.pool_summary(node, judged[:1]))
    out["exclusive_per_numa"] = _safe(lambda: verdict.exclusive_per_numa(node))
    out["admit"] = _safe(lambda: _sequence(node, pods))
    return out


def lines(split: bool = False) -> list[str]:
    """One JSON line per case (of split_cases() when `split`)."""
    return [json.dumps(outputs(n, ps), separators=(",", ":"))
            for n, ps in (split_cases() if split else cases())]


if __name__ == "__main__":
    FIXTURE.write_text("\n".join(lines()) + "\n")
    SPLIT_FIXTURE.write_text("\n".join(lines(split=True)) + "\n")
