"""The node audit's checks (pure): what the kubelet's checkpoints say against the node plan.

| check | mismatch when |
|---|---|
| `cpu-manager-policy` | `policyName` of cpu_manager_state differs from the plan's cpuManagerPolicy |
| `memory-manager-policy` | `policyName` of memory_manager_state differs from the plan's memoryManagerPolicy (when given) |
| `reserved-cpus` | the kubelet config's reservedSystemCPUs differs from the plan's |
| `exclusive-overlap` | (only when it fails) the checkpoint gives one CPU to two containers |
| `exclusive-on-reserved` | an exclusive cpuset holds a reserved CPU |
| `shared-cores` | exclusive CPUs of different pods are SMT siblings of one physical core |
| `pool-siblings` | (full-pcpus-only) an exclusive CPU's sibling is in the shared pool |
| `numa-span` | (single-numa-node) a container's exclusive CPUs or its memory span NUMA nodes |

Sources: https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/
(static policy, full-pcpus-only), https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/
(single-numa-node), https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from krm_fn.node.topology import format_cpuset, parse_cpuset, parse_cpuset_ranges
from krm_fn.verify.checks import Row
from krm_fn.verify.node import CPU_STATE, MEMORY_STATE

MAX_LISTED = 6


@dataclass(frozen=True)
class NodeExpected:
    """The plan: `cpu_manager_policy` ("static"), `memory_manager_policy` (None: not
    checked), `reserved` (cpuset text or None), `topology_policy`, `full_pcpus_only`
    (None: not checked), `kubelet_config` (node path read)."""

    cpu_manager_policy: str = "static"
    memory_manager_policy: str | None = None
    reserved: str | None = None
    topology_policy: str | None = None
    full_pcpus_only: bool | None = None
    kubelet_config: str = "/var/lib/kubelet/config.yaml"

    def as_dict(self) -> dict:
        return asdict(self)


def _cpus(text) -> set | None:
    try:
        return set(parse_cpuset(str(text)))
    except ValueError:
        return None


def _ranges(value) -> list | None:
    """The ranges of a checkpoint's cpuset value (a string, or an object with `original`,
    the newer checkpoint format), None when it is not one."""
    if isinstance(value, dict):
        value = value.get("original")
    if not isinstance(value, str):
        return None
    try:
        return parse_cpuset_ranges(value)
    except ValueError:
        return None


def assignments(state: dict) -> tuple[list[tuple[str, str, set]], list]:
    """([(pod UID, container, CPUs)] of the checkpoint's entries, [(CPU, (uid, container),
    (uid, container))] where two entries claim the same CPU). Unparsable values are left
    out. The cpusets are read as ranges and swept in order, so a CPU claimed again is not
    counted twice: the sets returned are disjoint and hold at most MAX_CPUS CPUs together,
    whatever the checkpoint lists (work bounded by its size, not by the CPUs it names)."""
    entries = state.get("entries") if isinstance(state.get("entries"), dict) else {}
    spans, owners = [], []
    for uid, containers in sorted(entries.items())[:100000]:
        if not isinstance(containers, dict):
            continue
        for name, value in sorted(containers.items()):
            for lo, hi in _ranges(value) or ():
                spans.append((lo, hi, len(owners)))
            owners.append((str(uid), str(name)))
    spans.sort()
    cpus: list = [set() for _ in owners]
    overlaps: list = []
    covered, holder = -1, None          # last CPU assigned so far, and whose it is
    for lo, hi, k in spans:
        if lo <= covered and len(overlaps) < MAX_LISTED:
            overlaps.append((lo, owners[holder], owners[k]))
        start = max(lo, covered + 1)
        if start <= hi:
            cpus[k].update(range(start, hi + 1))
            covered, holder = hi, k
    return [(u, c, s) for (u, c), s in zip(owners, cpus) if s], overlaps


def exclusive(state: dict) -> list[tuple[str, str, set]]:
    """[(pod UID, container, CPUs)] of the checkpoint's entries (assignments)."""
    return assignments(state)[0]


def _overlap(overlaps: list) -> Row:
    ok = not overlaps
    return Row("exclusive-overlap", "none", "none" if ok else "overlapping", ok, "" if ok else (
        "the checkpoint gives one CPU to more than one container: " + "; ".join(
            f"CPU {cpu}: pod {a[0]} container {a[1]} and pod {b[0]} container {b[1]}"
            for cpu, a, b in overlaps) +
        ". The kubelet never assigns a CPU twice: the file is corrupt or was edited; drain "
        "the node, remove the state file and restart the kubelet"))


def _policy(st, exp: NodeExpected) -> list[Row]:
    rows = []
    cpu = st.cpu_state
    if cpu is None:
        rows.append(Row("cpu-manager-policy", exp.cpu_manager_policy, "unreadable", False,
                        f"cannot read {CPU_STATE}: {st.unreadable.get(CPU_STATE)}; run on the "
                        f"node with --root / (or the host's root mounted read-only)"))
    else:
        found = str(cpu.get("policyName", ""))
        ok = found == exp.cpu_manager_policy
        rows.append(Row("cpu-manager-policy", exp.cpu_manager_policy, found, ok, "" if ok else (
            f"{CPU_STATE} was written by the {found!r} policy, the plan sets "
            f"{exp.cpu_manager_policy!r}: the kubelet runs another configuration. Changing "
            f"cpuManagerPolicy needs the node drained, the state file removed and the kubelet "
            f"restarted (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#changing-the-cpu-manager-policy)")))
    if exp.memory_manager_policy is not None:
        mem = st.memory_state
        found = "unreadable" if mem is None else str(mem.get("policyName", ""))
        ok = found.lower() == exp.memory_manager_policy.lower()
        rows.append(Row("memory-manager-policy", exp.memory_manager_policy, found, ok,
                        "" if ok else (f"cannot read {MEMORY_STATE}: "
                                       f"{st.unreadable.get(MEMORY_STATE)}" if mem is None else
                                       f"{MEMORY_STATE} was written by the {found!r} policy, "
                                       f"the plan sets {exp.memory_manager_policy!r} "
                                       f"(https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/)")))
    return rows


def _reserved(st, exp: NodeExpected) -> tuple[list[Row], set | None]:
    """The reserved-cpus row and the reserved set to check exclusive sets against."""
    have = None if st.kubelet is None else st.kubelet.get("reservedSystemCPUs")
    have_set = _cpus(have) if have is not None else None
    want_set = _cpus(exp.reserved) if exp.reserved is not None else None
    if exp.reserved is None:
        return [], have_set
    if st.kubelet is None:
        return [Row("reserved-cpus", exp.reserved, "unreadable", None,
                    f"cannot read {exp.kubelet_config}: "
                    f"{st.unreadable.get(exp.kubelet_config)}; pass --kubelet-config")], want_set
    found = "" if have is None else format_cpuset(have_set or [])
    ok = have_set == want_set
    return [Row("reserved-cpus", format_cpuset(want_set or []), found or "unset", ok, "" if ok else (
        f"reservedSystemCPUs in {exp.kubelet_config} is {have!r}, the plan reserves "
        f"{exp.reserved}: system daemons and the kubelet run on other CPUs than planned, "
        f"and exclusive sets may land on the planned ones. Roll out the planned kubelet "
        f"config (the CPU Manager state must be reset for the change)"))], want_set or have_set


def _on_reserved(ex, reserved: set | None) -> Row:
    if reserved is None:
        return Row("exclusive-on-reserved", "", "", None, "no reserved set known: pass "
                   "--reserved-cpus (the plan's reservedSystemCPUs)")
    hits = [(u, c, cpus & reserved) for u, c, cpus in ex if cpus & reserved]
    ok = not hits
    return Row("exclusive-on-reserved", f"none on {format_cpuset(reserved)}",
               "none" if ok else f"{len(hits)} container(s)", ok, "" if ok else (
                   "exclusive CPUs on reserved CPUs: " + "; ".join(
                       f"pod {u} container {c}: {format_cpuset(s)}"
                       for u, c, s in hits[:MAX_LISTED]) +
                   ". The state predates the current reservedSystemCPUs: drain the node, "
                   "remove the state file and restart the kubelet"))


def _cores(st) -> dict:
    """CPU -> frozenset of its core's CPUs."""
    out = {}
    for cpu, text in st.siblings.items():
        s = _cpus(text)
        out[cpu] = frozenset(s) if s else frozenset({cpu})
    return out


def _shared_cores(ex, cores: dict) -> Row:
    owners: dict = {}
    for uid, name, cpus in ex:
        for cpu in cpus:
            owners.setdefault(cores.get(cpu, frozenset({cpu})), set()).add(uid)
    shared = sorted((sorted(core), sorted(pods)) for core, pods in owners.items()
                    if len(pods) > 1)
    ok = not shared
    return Row("shared-cores", "none", "none" if ok else f"{len(shared)} core(s)", ok,
               "" if ok else (
                   "exclusive CPUs of different pods on one physical core: " + "; ".join(
                       f"core {format_cpuset(c)}: pods {', '.join(p)}"
                       for c, p in shared[:MAX_LISTED]) +
                   ". SMT siblings share L1/L2 and execution units, so one pod's load is the "
                   "other's jitter. Set cpuManagerPolicyOptions full-pcpus-only: \"true\" and "
                   "ask for whole cores (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#full-pcpus-only)"))


def _pool_siblings(st, ex, cores: dict, exp: NodeExpected) -> Row | None:
    if not exp.full_pcpus_only:
        return None
    pool = _cpus((st.cpu_state or {}).get("defaultCpuSet", "")) or set()
    hits = sorted({(u, c) for u, c, cpus in ex for cpu in cpus
                   if (cores.get(cpu, frozenset()) - {cpu}) & pool})
    ok = not hits
    return Row("pool-siblings", "none", "none" if ok else f"{len(hits)} container(s)", ok,
               "" if ok else ("exclusive CPUs whose SMT sibling is in the shared pool: " +
                              "; ".join(f"pod {u} container {c}" for u, c in hits[:MAX_LISTED]) +
                              ". full-pcpus-only should prevent this: the assignment predates "
                              "the option; drain, reset the state and restart the kubelet"))


def _numa_span(st, ex, exp: NodeExpected) -> Row | None:
    if exp.topology_policy != "single-numa-node":
        return None
    node_of = {}
    for node, text in st.numa.items():
        for cpu in _cpus(text) or ():
            node_of[cpu] = node
    spans = [(u, c, sorted({node_of.get(cpu, -1) for cpu in cpus}))
             for u, c, cpus in ex if len({node_of.get(cpu, -1) for cpu in cpus}) > 1]
    mem = st.memory_state or {}
    entries = mem.get("entries") if isinstance(mem.get("entries"), dict) else {}
    for uid, containers in sorted(entries.items()):
        if not isinstance(containers, dict):
            continue
        for name, blocks in sorted(containers.items()):
            blocks = blocks if isinstance(blocks, list) else []
            nodes = sorted({n for b in blocks if isinstance(b, dict)
                            for n in (b.get("numaAffinity") if isinstance(
                                b.get("numaAffinity"), list) else [])
                            if isinstance(n, int) and not isinstance(n, bool)})
            if len(nodes) > 1:
                spans.append((uid, f"{name} (memory)", nodes))
    ok = not spans
    return Row("numa-span", "1 NUMA node each", "ok" if ok else f"{len(spans)} container(s)",
               ok, "" if ok else (
                   "containers spanning NUMA nodes under single-numa-node: " + "; ".join(
                       f"pod {u} container {c}: nodes {', '.join(map(str, n))}"
                       for u, c, n in spans[:MAX_LISTED]) +
                   ". Their memory is remote for part of their CPUs. The assignment predates "
                   "the policy: drain, reset the state and restart the kubelet "
                   "(https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/)"))


def run(st, exp: NodeExpected) -> list[Row]:
    """Every check of the table for NodeState `st` against `exp`. Never raises."""
    rows = _policy(st, exp)
    reserved_rows, reserved = _reserved(st, exp)
    rows += reserved_rows
    if st.cpu_state is None:
        return rows
    ex, overlaps = assignments(st.cpu_state)
    cores = _cores(st)
    if overlaps:
        rows.append(_overlap(overlaps))
    rows.append(_on_reserved(ex, reserved))
    rows.append(_shared_cores(ex, cores))
    rows += [r for r in (_pool_siblings(st, ex, cores, exp), _numa_span(st, ex, exp)) if r]
    return rows
