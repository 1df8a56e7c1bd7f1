"""The node plan: per node pool, the KubeletConfiguration the pool's kubelets need.

`build(pool, version, ref)` turns one `spec.nodePools[i]` config entry into a `NodePlan`
(pure data, no YAML) plus the results explaining what was changed, dropped or refused.
Every rule cites kubelet.md (/work/shared/reference/kubelet.md) by section.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from krm_fn import quantity
from krm_fn.node import baseline as baseline_mod
from krm_fn.node import memory as memory_mod
from krm_fn.node import options as cpu_options
from krm_fn.node.topology import Topology, format_cpuset, parse_cpuset, reserve_cores
from krm_fn.results import ERROR, WARNING, Ref, Result, value_text

KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
KUBELET_KIND = "KubeletConfiguration"

# The kubelet's evictionHard defaults; setting any signal zeroes the unspecified ones
# (kubelet.md §1, types.go), so krm-fn always writes all four under the user's values.
EVICTION_HARD_DEFAULTS: dict[str, str] = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}

# failCgroupV1 exists from 1.31 (kubelet.md §1); an older kubelet rejects the field.
FAIL_CGROUP_V1_SINCE = (1, 31)
CPU_QUOTA_FIX_SINCE = (1, 33)
SINGLE_PROCESS_OOM_KILL_SINCE = (1, 32)   # kubelet.md §1, §9   # DisableCPUQuotaWithExclusiveCPUs beta (on) from 1.33

# Without the topology manager option `max-allowable-numa-nodes`, any topologyManagerPolicy
# other than `none` stops the kubelet on machines with more NUMA nodes than this
# (kubelet.md §4).
TOPOLOGY_MAX_NUMA_DEFAULT = 8
MAX_ALLOWABLE_NUMA_OPTION = "max-allowable-numa-nodes"

# kubeReserved / systemReserved when neither the config nor the baseline sets them.
DEFAULT_RESERVED = {"memory": "500Mi"}

# Fields that make `reservedSystemCPUs` a kubelet validation error (kubelet.md §1, §6).
RESERVED_CGROUP_FIELDS = baseline_mod.RESERVED_CGROUP_FIELDS

# Changing the CPU/memory manager policy or the reserved set on a node whose checkpoint was
# written under other settings makes the kubelet crash-loop (kubelet.md §3 last bullet,
# cases.md C05). Node-by-node procedure, as short imperative steps.
# KubeletConfiguration fields krm-fn writes itself: kubelet.extra may not set them (the
# checks above would be bypassed). Value: the typed pool field to use instead, or None.
MANAGED: dict[str, str | None] = {
    "apiVersion": None, "kind": None, "cpuManagerPolicy": None,
    "reservedMemory": "reservedMemory",
    "cpuManagerPolicyOptions": "cpuManagerPolicyOptions",
    "topologyManagerPolicyOptions": "topologyManagerPolicyOptions",
    "cpuManagerReconcilePeriod": "cpuManagerReconcilePeriod",
    "topologyManagerPolicy": "topologyManagerPolicy",
    "topologyManagerScope": "topologyManagerScope",
    "memoryManagerPolicy": "memoryManagerPolicy",
    "reservedSystemCPUs": "reservedSystemCPUs",
    "kubeReserved": "kubeReserved", "systemReserved": "systemReserved",
    "evictionHard": "evictionHard", "podPidsLimit": "podPidsLimit",
    "failCgroupV1": "failCgroupV1",
    "singleProcessOOMKill": "singleProcessOOMKill", "cgroupDriver": "cgroupDriver",
}

ROLLOUT_STEPS: tuple[str, ...] = tuple(baseline_mod.rollout_steps(None))


@dataclass
class NodePlan:
    """Desired kubelet state of one node pool.

    `pool`: pool name; `node_selector`: the pool's node labels (str -> str); `topology`:
    the nodes' CPU topology; `reserved_cpus`: sorted logical CPU ids of `reservedSystemCPUs`
    (empty when the configured set is invalid); `exclusive_cpus`: logical CPUs not reserved
    (capacity left for pods' exclusive CPUs; kubelet.md §6 allocatable = capacity −
    count(reservedSystemCPUs)); `kubelet`: the KubeletConfiguration as a plain,
    insertion-ordered dict (str/int/bool/list/dict only); `rollout`: imperative steps to
    apply it on a node; `state_changes`: krm_fn.node.baseline.StateChange list, the
    checkpoint-relevant settings that differ from `spec.output.baseline` (empty without a
    baseline or without such a change).
    """

    pool: str
    node_selector: dict
    topology: Topology
    reserved_cpus: list[int]
    exclusive_cpus: int
    kubelet: dict
    rollout: list[str] = field(default_factory=lambda: list(ROLLOUT_STEPS))
    state_changes: list = field(default_factory=list)


class _Unplain(ValueError):
    pass


def _plain(v: Any) -> Any:
    """Deep copy of YAML-read data as plain dict/list/str/int/float/bool/None (ruamel's
    CommentedMap, ScalarString, ScalarBoolean, ... become their plain counterparts)."""
    if v is None:
        return None
    if isinstance(v, bool) or type(v).__name__ == "ScalarBoolean":
        return bool(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    raise _Unplain(f"unsupported value of type {type(v).__name__}: {v!r}")


def build(pool, version: tuple[int, int], ref: Ref, index: int = 0, baseline: Any = None
          ) -> tuple[NodePlan, list[Result]]:
    """Build the NodePlan of one node pool.

    `pool`: a `spec.nodePools[i]` namespace from krm_fn.config.load (see POOL_FIELDS);
    `version`: target Kubernetes (major, minor); `ref`: the functionConfig's Ref, used as
    the resourceRef of every result; `index`: i, for result paths such as
    `spec.nodePools[0].kubelet.kubeReserved.cpu`; `baseline`: `spec.output.baseline` (the
    nodes' current KubeletConfiguration, plain data, or None): unset kubeReserved /
    systemReserved / evictionHard values come from it, reservedMemory is computed from the
    merged values, and the merged result is checked (krm_fn.node.baseline.reconcile).

    Returns `(plan, results)`. Problems the kubelet would refuse at start-up are error
    results (the plan is still returned, holding what was asked); dropped or overridden
    values are warnings. Raises ValueError only for a topology that krm_fn.config already
    rejects (counts < 1, cores not divisible by NUMA nodes), and TypeError when `version`
    is not a (major, minor) tuple of ints.
    """
    if not (isinstance(version, tuple) and len(version) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in version)):
        raise TypeError(f"version must be a (major, minor) tuple of ints, found {version!r}")
    p = f"spec.nodePools[{index}]"
    k = pool.kubelet
    results: list[Result] = []

    def res(sev: str, path: str, msg: str, current: Any = None, proposed: Any = None,
            absolute: bool = False):
        results.append(Result(msg, sev, ref, path if absolute else f"{p}.{path}",
                              None if current is None else str(current),
                              None if proposed is None else str(proposed)))

    topo = Topology.from_config(pool.topology)
    base, base_path = baseline_mod.unwrap(baseline)
    kubelet: dict[str, Any] = {"apiVersion": KUBELET_API_VERSION, "kind": KUBELET_KIND}

    # cpuManagerPolicyOptions: availability per version, forbidden pairs, alpha gate (§3, §2).
    opts = {str(a): str(b) for a, b in (k.cpuManagerPolicyOptions or {}).items()}
    checked = cpu_options.clamp_version(version)
    if opts and checked != tuple(version):
        res(WARNING, "kubelet.cpuManagerPolicyOptions",
            f"krm-fn's option data covers Kubernetes {cpu_options.version_str(cpu_options.VERSIONS[0])}"
            f"-{cpu_options.version_str(cpu_options.VERSIONS[-1])}; options for {cpu_options.version_str(version)} "
            f"are checked as for {cpu_options.version_str(checked)}: confirm their maturity in the kubelet "
            f"release notes")
    gates, problems = cpu_options.check_cpu_options(opts, checked, k.topologyManagerPolicy)
    for name in opts:
        added = cpu_options.ADDED.get(name)
        if added and tuple(version) < added and cpu_options.maturity(name, checked) is not None:
            problems.append(f"CPU Manager policy option {name!r} does not exist in Kubernetes "
                            f"{cpu_options.version_str(version)} (added in {cpu_options.version_str(added)}); the kubelet refuses "
                            f"to start with it")
    for msg in problems:
        res(ERROR, "kubelet.cpuManagerPolicyOptions", msg)
    if gates:
        kubelet["featureGates"] = dict(gates)
    kubelet["cpuManagerPolicy"] = "static"
    if opts:
        kubelet["cpuManagerPolicyOptions"] = opts
    kubelet["cpuManagerReconcilePeriod"] = str(k.cpuManagerReconcilePeriod)
    kubelet["topologyManagerPolicy"] = str(k.topologyManagerPolicy)
    # topologyManagerPolicyOptions: availability per version, values (§4).
    topts = {str(a): str(b) for a, b in (k.topologyManagerPolicyOptions or {}).items()}
    tgates, tproblems, tnotes = cpu_options.check_topology_options(
        topts, version, str(k.topologyManagerPolicy))
    for msg in tproblems:
        res(ERROR, "kubelet.topologyManagerPolicyOptions", msg)
    for msg in tnotes:
        res(WARNING, "kubelet.topologyManagerPolicyOptions", msg)
    if tgates:
        kubelet.setdefault("featureGates", {}).update(tgates)
    if topts:
        kubelet["topologyManagerPolicyOptions"] = topts
    kubelet["topologyManagerScope"] = str(k.topologyManagerScope)
    kubelet["memoryManagerPolicy"] = str(k.memoryManagerPolicy)

    # kubeReserved / systemReserved: cpu is replaced by reservedSystemCPUs (§6).
    reserved_maps: dict[str, dict[str, str]] = {}
    for name in ("kubeReserved", "systemReserved"):
        given = getattr(k, name)
        if given is None:   # unset: the baseline's own map, else krm-fn's default
            given = {} if isinstance(base.get(name), dict) else DEFAULT_RESERVED
        m = {str(a): str(b) for a, b in given.items()}
        if "cpu" in m:
            res(WARNING, f"kubelet.{name}.cpu",
                f"{name}.cpu {m['cpu']!r} dropped: reservedSystemCPUs replaces it (with "
                f"reservedSystemCPUs set the kubelet deletes kubeReserved.cpu and sets "
                f"systemReserved.cpu to the number of reserved CPUs); size the CPU "
                f"reservation with reserved.cores or kubelet.reservedSystemCPUs instead",
                current=m["cpu"])
            del m["cpu"]
        reserved_maps[name] = m

    eviction = dict(EVICTION_HARD_DEFAULTS)
    eviction.update(baseline_mod.string_map(base.get("evictionHard")))
    eviction.update({str(a): str(b) for a, b in (k.evictionHard or {}).items()})

    # reservedMemory (Static only): per type, Σ over NUMA nodes == kube + system (+ eviction
    # for memory), on the values the kubelet will run with (baseline merged) (§5).
    if k.memoryManagerPolicy == "Static":
        _reserved_memory(kubelet, k, pool, topo, base, base_path, reserved_maps, eviction, res)
    elif k.reservedMemory is not None:
        res(WARNING, "kubelet.reservedMemory", "reservedMemory is only used with "
            "memoryManagerPolicy Static; it is left out")

    # reservedSystemCPUs: explicit cpuset, or whole cores chosen from the topology (§6, §13).
    reserved: list[int] = []
    if k.reservedSystemCPUs is not None:
        text = str(k.reservedSystemCPUs)
        kubelet["reservedSystemCPUs"] = text
        path = "kubelet.reservedSystemCPUs"
        try:
            cpus = parse_cpuset(text)
        except ValueError as e:
            res(ERROR, path, f"{e}; the kubelet refuses a reservedSystemCPUs it cannot parse",
                current=text)
        else:
            ids = {c.cpu for c in topo.cpus()}
            outside = [c for c in cpus if c not in ids]
            if not cpus:
                res(ERROR, path, "reservedSystemCPUs is empty; the static CPU Manager needs a "
                    "non-zero reservation (set a cpuset such as 0-1 or remove the field to "
                    "use reserved.cores)", current=text)
            elif outside:
                res(ERROR, path, f"CPUs {format_cpuset(outside)} do not exist on this pool's "
                    f"nodes (CPUs {format_cpuset(ids)}); the kubelet fails to start",
                    current=text)
            elif len(cpus) >= topo.total_cpus:
                res(ERROR, path, f"reservedSystemCPUs {text!r} covers every CPU of the node; "
                    f"nothing is left for pods", current=text)
            else:
                reserved = cpus
                chosen = set(cpus)
                touched = sorted({c.core for c in topo.cpus() if c.cpu in chosen})
                partial = [core for core in touched
                           if not set(topo.siblings_of(core)) <= chosen]
                if partial:
                    whole = sorted(c for core in touched for c in topo.siblings_of(core))
                    res(WARNING, path, f"reservedSystemCPUs {text!r} splits physical cores "
                        f"{', '.join(map(str, partial))} from their SMT siblings; pods cannot "
                        f"get those cores whole (full-pcpus-only counts the siblings as used); "
                        f"reserve whole cores, e.g. {format_cpuset(whole)!r}",
                        current=text, proposed=format_cpuset(whole))
    else:
        try:
            reserved = reserve_cores(topo, pool.reserved.cores,
                                     bool(pool.reserved.spreadAcrossNuma))
        except ValueError as e:
            res(ERROR, "reserved.cores", str(e), current=pool.reserved.cores)
        else:
            kubelet["reservedSystemCPUs"] = format_cpuset(reserved)

    dropped = {n: str(v["cpu"]) for n in ("kubeReserved", "systemReserved")
               for v in [getattr(k, n) or {}] if "cpu" in v}
    if dropped and reserved:
        asked = sum((quantity.parse_cpu(v).value for v in dropped.values()), Fraction(0))
        if asked != len(reserved):
            terms = " + ".join(f"{n}.cpu {v}" for n, v in dropped.items())
            strict = opts.get("strict-cpu-reservation") == "true"
            res(WARNING, "kubelet.reservedSystemCPUs",
                f"{terms} = {quantity.format_cpu(asked)} CPUs, but reservedSystemCPUs "
                f"{kubelet.get('reservedSystemCPUs')!r} holds {len(reserved)}: the kubelet "
                f"reserves exactly the listed CPUs (allocatable cpu = capacity - "
                f"{len(reserved)})"
                + ("" if strict else "; without the strict-cpu-reservation option, Burstable "
                   "and BestEffort pods still run on them"))
    for name in ("kubeReserved", "systemReserved"):
        if reserved_maps[name]:
            kubelet[name] = reserved_maps[name]
    kubelet["evictionHard"] = eviction
    kubelet["podPidsLimit"] = int(k.podPidsLimit)
    if tuple(version) >= FAIL_CGROUP_V1_SINCE:
        kubelet["failCgroupV1"] = bool(k.failCgroupV1)
    else:
        res(WARNING, "kubelet.failCgroupV1", f"failCgroupV1 dropped: the field exists from "
            f"Kubernetes 1.31 and kubernetesVersion is {cpu_options.version_str(version)}; "
            f"make sure the pool's nodes run cgroup v2",
            current=str(bool(k.failCgroupV1)).lower())
    if k.singleProcessOOMKill is not None:
        if tuple(version) < SINGLE_PROCESS_OOM_KILL_SINCE:
            res(ERROR, "kubelet.singleProcessOOMKill", f"singleProcessOOMKill exists from "
                f"Kubernetes 1.32; kubernetesVersion is {cpu_options.version_str(version)}")
        else:
            kubelet["singleProcessOOMKill"] = bool(k.singleProcessOOMKill)
    if k.cgroupDriver is not None:
        kubelet["cgroupDriver"] = str(k.cgroupDriver)
    if tuple(version) < CPU_QUOTA_FIX_SINCE:
        # kubelet.md §7, cases.md C06: DisableCPUQuotaWithExclusiveCPUs (beta, on) from 1.33
        results.append(Result(f"on Kubernetes {cpu_options.version_str(version)} "
            f"pinned containers keep a CFS quota equal to their CPU limit "
            f"(kubernetes/kubernetes#70585, fixed in 1.33 by DisableCPUQuotaWithExclusiveCPUs): "
            f"a container running more threads than its pinned CPUs is throttled, so keep the "
            f"thread env vars at the pinned count; never set cpuCFSQuota: false, which drops "
            f"CPU limits node-wide", WARNING, ref, "spec.kubernetesVersion"))

    # extra: other KubeletConfiguration fields, added last; featureGates are merged.
    for key, value in (k.extra or {}).items():
        key = str(key)
        path = f"kubelet.extra.{key}"
        try:
            value = _plain(value)
        except _Unplain as e:
            res(ERROR, path, f"{e}; write plain YAML values")
            continue
        if key in MANAGED:
            typed = MANAGED[key]
            res(ERROR, path, f"{key} is managed by krm-fn and cannot be set in kubelet.extra"
                + (f"; set kubelet.{typed} instead" if typed else
                   " (it follows from the pool's other settings)"))
            continue
        if key == "cpuCFSQuota" and value is False:
            res(WARNING, path, "cpuCFSQuota: false is left out: it turns off CPU limits for "
                "every pod on the node (kubelet.md §9); pinned containers need no such "
                "setting (on 1.33+ the kubelet drops their quota itself, "
                "DisableCPUQuotaWithExclusiveCPUs)", current="false")
            continue
        if key == "featureGates":
            if not isinstance(value, dict):
                res(ERROR, path, "featureGates must be a mapping of gate name to true/false")
                continue
            gates = dict(kubelet.get("featureGates") or {})
            for gate, on in list(value.items()):
                if gate == "MemoryQoS" and on is True:
                    res(WARNING, f"{path}.{gate}", "MemoryQoS: true is left out: krm-fn never "
                        "enables MemoryQoS (alpha, KEP-2570): it sets memory.high on "
                        "containers whose memory request is below the limit and throttles "
                        "them early (kubernetes/enhancements#3818), and can livelock on "
                        "kernels before 5.9; the pinned pods are Guaranteed anyway "
                        "(request == limit: no memory.high)", current="true")
                    continue
                if gate in gates and gates[gate] != on:
                    res(ERROR, f"{path}.{gate}", f"feature gate {gate} is {gates[gate]} because "
                        f"of the pool's policy options; extra.featureGates cannot set "
                        f"it to {on}")
                gates[gate] = on
            if gates:
                kubelet["featureGates"] = gates
            continue
        kubelet[key] = value
    _check_numa_limit(kubelet, topo, version, res)
    if kubelet.get("reservedSystemCPUs"):
        for key in RESERVED_CGROUP_FIELDS:
            if kubelet.get(key):
                res(ERROR, f"kubelet.extra.{key}", f"{key} cannot be set together with "
                    f"reservedSystemCPUs: the kubelet rejects the configuration; remove "
                    f"{key} (or set it to \"\")", current=kubelet[key])
    enforce = kubelet.get("enforceNodeAllocatable")
    if enforce is not None:
        path = "kubelet.extra.enforceNodeAllocatable"
        if not isinstance(enforce, list) or not all(isinstance(e, str) for e in enforce):
            res(ERROR, path, "enforceNodeAllocatable must be a list of strings such as "
                "[pods]")
        elif kubelet.get("reservedSystemCPUs"):
            need = [e for e in enforce if e in baseline_mod.ENFORCEMENT]
            if need:
                res(ERROR, path, f"enforceNodeAllocatable {', '.join(need)} needs "
                    f"systemReservedCgroup/kubeReservedCgroup, which the kubelet refuses next "
                    f"to reservedSystemCPUs; enforce [pods] only")

    changes = None
    if baseline is not None:
        findings, changes = baseline_mod.reconcile(kubelet, base, base_path, tuple(version))
        for sev, path, msg, current, proposed in findings:
            res(sev, path, msg, None if current is None else value_text(current),
                None if proposed is None else value_text(proposed), absolute=True)
    plan = NodePlan(pool=str(pool.name),
                    node_selector={str(a): str(b) for a, b in (pool.nodeSelector or {}).items()},
                    topology=topo, reserved_cpus=reserved,
                    exclusive_cpus=topo.total_cpus - len(reserved),
                    kubelet=kubelet, rollout=_rollout(kubelet, changes),
                    state_changes=list(changes or []))
    return plan, results


def _reserved_memory(kubelet: dict, k, pool, topo: Topology, base: dict, base_path: str,
                     reserved_maps: dict, eviction: dict, res) -> None:
    """Set kubelet["reservedMemory"] for memoryManagerPolicy Static (kubelet.md §5): the
    explicit `kubelet.reservedMemory` when it sums right, else computed and placed on NUMA
    node 0 (or spread with reserved.spreadMemoryAcrossNuma). Errors name the field."""
    merged = {n: {**baseline_mod.string_map(base.get(n)), **reserved_maps[n]}
              for n in ("kubeReserved", "systemReserved")}
    path_of = {"kubeReserved": "kubelet.kubeReserved", "systemReserved": "kubelet.systemReserved",
               "evictionHard": "kubelet.evictionHard"}
    try:
        totals, terms = memory_mod.required(merged["kubeReserved"], merged["systemReserved"],
                                            eviction)
    except memory_mod.ReservedMemoryError as e:
        top, _, rest = e.path.partition(".")
        mine = reserved_maps.get(top) if top != "evictionHard" else (k.evictionHard or {})
        theirs = baseline_mod.string_map(base.get(top))
        current = (merged.get(top) or eviction).get(rest)
        if rest not in mine and rest in theirs:   # the value comes from the baseline
            res(ERROR, f"{base_path}.{top}.{rest}", e.message, current=current, absolute=True)
        else:
            res(ERROR, f"{path_of[top]}.{rest}", e.message, current=current)
        return
    numas = sorted({c.numa for c in topo.cpus()})
    if k.reservedMemory is not None:
        try:
            entries = memory_mod.parse(k.reservedMemory)
        except memory_mod.ReservedMemoryError as e:
            res(ERROR, f"kubelet.{e.path}", e.message)
            return
        problems = memory_mod.check(entries, totals, terms, numas)
        for e in problems:
            res(ERROR, f"kubelet.{e.path}", e.message)
        if not problems:
            kubelet["reservedMemory"] = entries
        return
    if not any(totals.values()):
        res(ERROR, "kubelet.memoryManagerPolicy", "memoryManagerPolicy Static needs a "
            "non-zero reservedMemory, but kubeReserved.memory + systemReserved.memory + "
            "evictionHard[memory.available] is 0; reserve some memory")
        return
    kubelet["reservedMemory"] = memory_mod.split(totals, numas,
                                                 bool(pool.reserved.spreadMemoryAcrossNuma))


def _check_numa_limit(kubelet: dict, topo: Topology, version, res) -> None:
    """kubelet.md §4: a topologyManagerPolicy other than `none` on a node with more than 8
    NUMA nodes needs topologyManagerPolicyOptions max-allowable-numa-nodes >= the node's
    NUMA node count, else the kubelet fails with `unsupported on machines with more than 8
    NUMA Nodes`. Unset: added (with a warning) where the option exists (1.31+, KEP-4622);
    set too low, or before 1.31: an error."""
    policy = kubelet.get("topologyManagerPolicy")
    if policy == "none" or topo.numa_nodes <= TOPOLOGY_MAX_NUMA_DEFAULT:
        return
    opts = kubelet.get("topologyManagerPolicyOptions")
    raw = opts.get(MAX_ALLOWABLE_NUMA_OPTION) if isinstance(opts, dict) else None
    text = None if raw is None else str(raw)
    if text is not None and re.fullmatch(r"[0-9]{1,5}", text) and int(text) >= topo.numa_nodes:
        return
    exists = cpu_options.topology_maturity(MAX_ALLOWABLE_NUMA_OPTION, version) is not None
    if text is None and exists:
        kubelet.setdefault("topologyManagerPolicyOptions", {})[MAX_ALLOWABLE_NUMA_OPTION] = \
            str(topo.numa_nodes)
        res(WARNING, "kubelet.topologyManagerPolicyOptions",
            f"the pool's nodes have {topo.numa_nodes} NUMA nodes: without the topology manager "
            f"option {MAX_ALLOWABLE_NUMA_OPTION} the kubelet refuses to start with "
            f"topologyManagerPolicy {policy!r} on more than {TOPOLOGY_MAX_NUMA_DEFAULT} NUMA "
            f"nodes, so {MAX_ALLOWABLE_NUMA_OPTION}: \"{topo.numa_nodes}\" is added; pod "
            f"admission takes longer as NUMA nodes grow (KEP-4622)",
            proposed=str(topo.numa_nodes))
        return
    have = "it is not set" if text is None else f"it is {text!r}"
    fix = (f"set kubelet.topologyManagerPolicyOptions.{MAX_ALLOWABLE_NUMA_OPTION} to "
           f"\"{topo.numa_nodes}\" or topologyManagerPolicy to none" if exists else
           f"the option exists from Kubernetes 1.31, so set topologyManagerPolicy to none")
    res(ERROR, "kubelet.topologyManagerPolicy",
        f"topologyManagerPolicy {policy!r} on nodes with {topo.numa_nodes} NUMA nodes needs "
        f"the topology manager option {MAX_ALLOWABLE_NUMA_OPTION} >= {topo.numa_nodes} "
        f"({have}): without it the kubelet refuses to start on machines with more than "
        f"{TOPOLOGY_MAX_NUMA_DEFAULT} NUMA nodes; {fix}", current=policy)


def _rollout(kubelet: dict, changes=None) -> list[str]:
    """The rollout steps (krm_fn.node.baseline.rollout_steps: the full procedure without a
    baseline, else only what the StateChanges need), with a first check when the config
    refuses cgroup v1 (kubelet.md §9: failCgroupV1 true on a cgroup v1 host stops the
    kubelet)."""
    steps = baseline_mod.rollout_steps(changes)
    if kubelet.get("failCgroupV1") is True:
        steps.insert(0, "Check the node runs cgroup v2 (`stat -fc %T /sys/fs/cgroup` prints "
                        "cgroup2fs): failCgroupV1 is true, so the kubelet refuses to start on "
                        "cgroup v1")
    return steps
