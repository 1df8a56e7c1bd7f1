"""The node plan: per node pool, the KubeletConfiguration the pool's kubelets need.

`build(pool, version, ref)` turns one `spec.nodePools[i]` config entry into a `NodePlan`
(pure data, no YAML) plus the results explaining what was changed, dropped or refused.
Field facts (defaults, versions, which fields krm-fn manages) come from krm_fn.node.fields;
sources are cited there and in each message.
"""
from __future__ import annotations

import re

from krm_fn.admission.wide import KUBELET_BOUND
from krm_fn.node import baseline as baseline_mod
from krm_fn.node import fields, kubelet_check, kubelet_says
from krm_fn.node import options as cpu_options
from krm_fn.node import reserved as reserved_mod
from krm_fn.node import upstream
from krm_fn.node.topology import Topology
from krm_fn.results import ERROR, WARNING, Ref, Result, value_text

KUBELET_API_VERSION = fields.API_VERSION
KUBELET_KIND = fields.KIND

# Without the topology manager option `max-allowable-numa-nodes`, any topologyManagerPolicy
# other than `none` stops the kubelet on machines with more NUMA nodes than this
# (https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/, KEP-4622).
TOPOLOGY_MAX_NUMA_DEFAULT = KUBELET_BOUND
MAX_ALLOWABLE_NUMA_OPTION = "max-allowable-numa-nodes"
CPU_QUOTA_GATE = "DisableCPUQuotaWithExclusiveCPUs"
MEMORY_QOS_GATE = "MemoryQoS"

DEFAULT_RESERVED = reserved_mod.DEFAULT_RESERVED
# Fields that make `reservedSystemCPUs` a kubelet validation error.
RESERVED_CGROUP_FIELDS = fields.RESERVED_CGROUP_FIELDS
# KubeletConfiguration fields krm-fn writes itself: kubelet.extra may not set them (the
# checks in build would be bypassed). Value: the typed pool field to use instead, or None.
MANAGED: dict[str, str | None] = fields.MANAGED

ROLLOUT_STEPS: tuple[str, ...] = tuple(baseline_mod.rollout_steps(None))


class NodePlan:
    """Desired kubelet state of one node pool.

    `pool`: pool name; `node_selector`: the pool's node labels (str -> str); `topology`:
    the nodes' CPU topology; `reserved_cpus`: sorted logical CPU ids of `reservedSystemCPUs`
    (empty when the configured set is invalid); `exclusive_cpus`: logical CPUs not reserved
    (capacity left for pods' exclusive CPUs: capacity − count(reservedSystemCPUs), or
    without them − the ceiling of kubeReserved.cpu + systemReserved.cpu, reserve-compute-resources); `kubelet`: the
    KubeletConfiguration as a plain,
    insertion-ordered dict (str/int/bool/list/dict only); `rollout`: imperative steps to
    apply it on a node; `state_changes`: krm_fn.node.baseline.StateChange list, the
    checkpoint-relevant settings that differ from `spec.output.baseline` (empty without a
    baseline or without such a change); `merged`: the KubeletConfiguration the kubelet will
    run, `kubelet` merged onto the baseline the way `--config-dir` drop-ins merge (JSON
    merge patch; without a baseline, `kubelet` itself), without apiVersion/kind.
    """

    __slots__ = ("pool", "node_selector", "topology", "reserved_cpus", "exclusive_cpus",
                 "kubelet", "rollout", "state_changes", "merged")

    def __init__(self, pool: str, node_selector: dict, topology: Topology,
                 reserved_cpus: list[int], exclusive_cpus: int, kubelet: dict,
                 rollout: list[str] | None = None, state_changes: list | None = None,
                 merged: dict | None = None) -> None:
        self.pool = pool
        self.node_selector = node_selector
        self.topology = topology
        self.reserved_cpus = reserved_cpus
        self.exclusive_cpus = exclusive_cpus
        self.kubelet = kubelet
        self.rollout = list(ROLLOUT_STEPS) if rollout is None else rollout
        self.state_changes = [] if state_changes is None else state_changes
        self.merged = {} if merged is None else merged


class _Unplain(ValueError):
    pass


def _plain(v: object) -> object:
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


def build(pool, version: tuple[int, int], ref: Ref, index: int = 0, baseline: object = None
          ) -> tuple[NodePlan, list[Result]]:
    """Build the NodePlan of one node pool.

    `pool`: a `spec.nodePools[i]` namespace from krm_fn.config.load (see POOL_FIELDS);
    `version`: target Kubernetes (major, minor); `ref`: the functionConfig's Ref, used as
    the resourceRef of every result; `index`: i, for result paths such as
    `spec.nodePools[0].kubelet.kubeReserved.cpu`; `baseline`: `spec.output.baseline` (the
    nodes' current KubeletConfiguration, plain data, or None): unset kubeReserved /
    systemReserved / evictionHard values come from it, reservedMemory is computed from the
    merged values, and the merged result is checked (krm_fn.node.baseline.reconcile).
    `plan.merged` is checked against the facts of `version` (krm_fn.node.kubelet_check);
    evictionHard starts from the version's full default set (krm_fn.node.upstream).

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

    def res(sev: str, path: str, msg: str, current: object = None, proposed: object = None,
            absolute: bool = False):
        results.append(Result(msg, sev, ref, path if absolute else f"{p}.{path}",
                              None if current is None else str(current),
                              None if proposed is None else str(proposed)))

    topo = Topology.from_config(pool.topology)
    base, base_path = baseline_mod.unwrap(baseline)
    kubelet: dict[str, object] = {"apiVersion": KUBELET_API_VERSION, "kind": KUBELET_KIND}
    opts = _managers(kubelet, k, version, res)
    reserved_maps = reserved_mod.reservation_maps(k, base, res, pool)
    evictions = fields.BY_NAME["evictionHard"]
    eviction = dict(evictions.default_for(version))     # setting it replaces the defaults
    eviction.update(baseline_mod.string_map(base.get(evictions.name)))
    eviction.update({str(a): str(b) for a, b in (k.evictionHard or {}).items()})

    # reservedMemory (Static only): per type, the sum over NUMA nodes equals kube + system
    # (+ eviction for memory), on the values the kubelet will run with (baseline merged).
    if k.memoryManagerPolicy == "Static":
        reserved_mod.reserved_memory(kubelet, k, pool, topo, base, base_path, reserved_maps,
                                     eviction, res, version)
    elif k.reservedMemory is not None:
        res(WARNING, "kubelet.reservedMemory", "reservedMemory is only used with "
            "memoryManagerPolicy Static; it is left out")
    reserved = reserved_mod.reserved_cpus(kubelet, k, pool, topo, res, version)
    reserved_mod.check_dropped_cpu(k, reserved, opts, kubelet, res)
    for name in reserved_mod.RESERVATIONS:
        if reserved_maps[name]:
            kubelet[name] = reserved_maps[name]
    kubelet[evictions.name] = eviction
    _node_fields(kubelet, k)
    _extra(kubelet, k, version, res)
    _check_numa_limit(kubelet, topo, res)
    _check_reserved_cgroups(kubelet, res)

    changes = None
    if baseline is not None:
        findings, changes = baseline_mod.reconcile(kubelet, base, base_path, tuple(version))
        for sev, path, msg, current, proposed in findings:
            res(sev, path, msg, None if current is None else value_text(current),
                None if proposed is None else value_text(proposed), absolute=True)
    merged = _merged(kubelet, base if baseline is not None else None)
    _check_emitted(merged, kubelet, k, base, base_path, version, pool, topo, res, results)
    plan = NodePlan(pool=str(pool.name),
                    node_selector={str(a): str(b) for a, b in (pool.nodeSelector or {}).items()},
                    topology=topo, reserved_cpus=reserved,
                    exclusive_cpus=topo.total_cpus - _held_back(reserved, merged),
                    kubelet=kubelet, rollout=_rollout(kubelet, version, changes),
                    state_changes=list(changes or []),
                    merged=merged)
    return plan, results


def _held_back(reserved: list[int], merged: dict) -> int:
    """Logical CPUs the static CPU Manager holds back from exclusive allocation: the
    reservedSystemCPUs, else the ceiling of kubeReserved.cpu + systemReserved.cpu of the
    `merged` configuration (cpumanager policy_static.go NewStaticPolicy takes that many by
    topology); 0 for another policy or a reservation krm-fn cannot read (an error says
    why)."""
    if reserved or merged.get("cpuManagerPolicy") != "static":
        return len(reserved)
    from krm_fn.node.kubelet_start import reserved_millis
    millis = reserved_millis(merged) or 0
    return -(-millis // 1000)


def _merged(kubelet: dict, base: dict | None) -> dict:
    """The configuration the kubelet runs: `kubelet` (without apiVersion/kind) merged onto
    the unwrapped baseline `base` (krm_fn.node.baseline.merge), or `kubelet` alone."""
    own = {k: v for k, v in kubelet.items() if k not in fields.HEADER}
    return baseline_mod.merge(base, own) if base is not None else own


def _check_emitted(merged: dict, kubelet: dict, k, base: dict, base_path: str, version,
                   pool, topo: Topology, res, results: list[Result]) -> None:
    """Check the KubeletConfiguration the kubelet will run (`merged`) against the upstream
    facts of `version` (krm_fn.node.kubelet_check). Each finding points at where its value
    came from (`_origin`); a field only the baseline has that the version does not know is
    a warning (the node wrote it). A finding an error of the plan's own checks already says
    (its text, or every quote of the kubelet's words in it) is left out; one at a path that
    already holds an error of the plan is left out too, but the kubelet's words it quotes
    (kubelet_says) are added to that error; so is one on a field the plan computes from a
    setting its checks refused (fields.COMPUTED)."""
    memory = getattr(pool.topology, "memory", None)
    node_memory = memory.whole if memory is not None else None
    errors = {r.path: i for i, r in enumerate(results) if r.severity == ERROR}
    refused = tuple(r.path.partition("].")[2] for r in results if r.severity == ERROR)
    for f in kubelet_check.check(merged, version, node_memory, topo.total_cpus):
        said = [r.message for r in results if r.severity == ERROR]
        quotes = kubelet_says.quotes_in(f.message)
        if any(f.message in m for m in said) or quotes and all(
                any(q in m for m in said) for q in quotes):
            continue            # the plan's own checks said it (e.g. the CPU options)
        computed = fields.COMPUTED.get(f.field)
        if computed and any(path.startswith(computed[1]) for path in refused) and \
                computed[0] in f.message:
            continue            # the plan refused what it computes the field from
        path, in_base = _origin(f.field, kubelet, k.extra or {}, base)
        sev = WARNING if in_base and f.unknown and f.field.partition(".")[0] not in kubelet \
            else f.severity
        before = len(results)
        res(sev, f"{base_path}.{f.field}" if in_base else path, f.message, absolute=in_base)
        at = errors.get(results[before].path)
        if at is not None:
            del results[before]
            kept = results[at]
            for quote in kubelet_says.quotes_in(f.message):
                if quote not in kept.message:
                    kept = kept._replace(message=f"{kept.message}; the kubelet says{quote}")
            results[at] = kept


def _origin(name: str, kubelet: dict, extra: dict, base: dict) -> tuple[str, bool]:
    """(path below the pool, False) for a field `name` (dotted) set by `kubelet.extra` or
    the plan (its typed field), or ("", True) when the value comes from the baseline. A
    feature gate is traced gate by gate."""
    top, _, rest = name.partition(".")
    if top == "featureGates":
        def gates(d):
            g = d.get("featureGates")
            return g if isinstance(g, dict) else {}
        gate = rest
        if gate in gates(extra):
            return f"kubelet.extra.{name}", False
        if gate in gates(base) and gate not in gates(kubelet):
            return "", True
        return f"kubelet.{name}", False
    if top in {str(a) for a in extra}:
        return f"kubelet.extra.{name}", False
    if top in kubelet:
        typed = fields.result_field(top)
        if typed:
            return f"kubelet.{typed}" + (f".{rest}" if rest and typed == top else ""), False
        return f"kubelet.{name}", False
    if top in base:
        return "", True
    return f"kubelet.{name}", False


def _typed(kubelet: dict, k, name: str) -> None:
    """kubelet[name] = the typed pool setting of the same name, written as the field's shape
    (krm_fn.node.fields.coerce)."""
    kubelet[name] = fields.coerce(name, getattr(k, fields.BY_NAME[name].typed))


def _managers(kubelet: dict, k, version, res) -> dict[str, str]:
    """Write the CPU, Topology and Memory Manager fields in their order (cpuManagerPolicy,
    options, reconcile period, topology policy, options, scope, memory policy), with the
    alpha option gates first in featureGates; options checked for `version`
    (krm_fn.node.options). Returns the CPU Manager policy options (str -> str)."""
    opts = {str(a): str(b) for a, b in (k.cpuManagerPolicyOptions or {}).items()}
    gates, problems = cpu_options.check_cpu_options(opts, version, k.topologyManagerPolicy)
    for msg in problems:
        res(ERROR, "kubelet.cpuManagerPolicyOptions", msg)
    if gates:
        kubelet["featureGates"] = dict(gates)
    kubelet["cpuManagerPolicy"] = "static"
    if opts:
        kubelet["cpuManagerPolicyOptions"] = opts
    _typed(kubelet, k, "cpuManagerReconcilePeriod")
    _typed(kubelet, k, "topologyManagerPolicy")
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
    _typed(kubelet, k, "topologyManagerScope")
    _typed(kubelet, k, "memoryManagerPolicy")
    return opts


def _node_fields(kubelet: dict, k) -> None:
    """podPidsLimit, failCgroupV1, singleProcessOOMKill (when set) and cgroupDriver (when
    set): every supported version has these fields."""
    _typed(kubelet, k, "podPidsLimit")
    _typed(kubelet, k, "failCgroupV1")
    if k.singleProcessOOMKill is not None:
        _typed(kubelet, k, "singleProcessOOMKill")
    if k.cgroupDriver is not None:
        _typed(kubelet, k, "cgroupDriver")


def _extra(kubelet: dict, k, version, res) -> None:
    """kubelet.extra: other KubeletConfiguration fields, added last in the user's order;
    managed fields refused, cpuCFSQuota: false and MemoryQoS: true left out, featureGates
    merged with the gates the options need (gate stages and defaults of `version`)."""
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
                f"every pod on the node (cpuCFSQuota, {fields.REFERENCE}); pinned containers "
                "need no such setting (the kubelet drops their quota itself: "
                f"{CPU_QUOTA_GATE}, {upstream.load(version).gate_text(CPU_QUOTA_GATE)})",
                current="false")
            continue
        if key == "featureGates":
            _extra_gates(kubelet, value, path, version, res)
            continue
        kubelet[key] = value


def _gate_text(on) -> str:
    """A gate value as YAML writes it (true / false), anything else as given."""
    return str(on).lower() if isinstance(on, bool) else repr(on)


def _extra_gates(kubelet: dict, value, path: str, version, res) -> None:
    """kubelet.extra.featureGates merged over the gates the plan already sets."""
    if not isinstance(value, dict):
        res(ERROR, path, "featureGates must be a mapping of gate name to true/false")
        return
    gates = dict(kubelet.get("featureGates") or {})
    for gate, on in list(value.items()):
        if gate == MEMORY_QOS_GATE and on is True:
            data = upstream.load(version)
            still = ("; leaving it out does not turn it off: set MemoryQoS: false for that"
                     if data.gate_default(gate) else "")
            res(WARNING, f"{path}.{gate}", "MemoryQoS: true is left out: krm-fn never "
                f"enables MemoryQoS ({data.gate_text(gate)}, KEP-2570): it sets memory.high "
                "on containers whose memory request is below the limit and throttles "
                "them early (kubernetes/enhancements#3818), and can livelock on "
                "kernels before 5.9; the pinned pods are Guaranteed anyway "
                f"(request == limit: no memory.high){still}", current="true")
            continue
        if gate in gates and gates[gate] != on:
            res(ERROR, f"{path}.{gate}", f"feature gate {gate} must be "
                f"{_gate_text(gates[gate])}: the pool's cpuManagerPolicyOptions / "
                f"topologyManagerPolicyOptions include an option it guards, and the "
                f"kubelet refuses to start with it {_gate_text(on)}; remove "
                f"extra.featureGates.{gate} or the option", current=_gate_text(on))
        gates[gate] = on
    if gates:
        kubelet["featureGates"] = gates


def _check_reserved_cgroups(kubelet: dict, res) -> None:
    """Errors for what the kubelet refuses next to reservedSystemCPUs: a reserved cgroup
    (fields.RESERVED_CGROUP_FIELDS), and enforceNodeAllocatable entries that need one
    (fields.ENFORCEMENT); enforceNodeAllocatable must be a list of strings."""
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
            need = [e for e in enforce if e in fields.ENFORCEMENT]
            if need:
                res(ERROR, path, f"enforceNodeAllocatable {', '.join(need)} needs "
                    f"systemReservedCgroup/kubeReservedCgroup, which the kubelet refuses next "
                    f"to reservedSystemCPUs; enforce [pods] only")


def _check_numa_limit(kubelet: dict, topo: Topology, res) -> None:
    """A topologyManagerPolicy other than `none` on a node with more than 8
    NUMA nodes needs topologyManagerPolicyOptions max-allowable-numa-nodes >= the node's
    NUMA node count, else the kubelet fails with `unsupported on machines with more than 8
    NUMA Nodes` (https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/).
    Unset: added (with a warning; every supported version has the option, KEP-4622); set
    too low: an error."""
    policy = kubelet.get("topologyManagerPolicy")
    if policy == "none" or topo.numa_nodes <= TOPOLOGY_MAX_NUMA_DEFAULT:
        return
    opts = kubelet.get("topologyManagerPolicyOptions")
    raw = opts.get(MAX_ALLOWABLE_NUMA_OPTION) if isinstance(opts, dict) else None
    text = None if raw is None else str(raw)
    if text is not None and re.fullmatch(r"[0-9]{1,5}", text) and int(text) >= topo.numa_nodes:
        return
    if text is None:
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
    res(ERROR, "kubelet.topologyManagerPolicy",
        f"topologyManagerPolicy {policy!r} on nodes with {topo.numa_nodes} NUMA nodes needs "
        f"the topology manager option {MAX_ALLOWABLE_NUMA_OPTION} >= {topo.numa_nodes} "
        f"(it is {text!r}): without it the kubelet refuses to start on machines with more "
        f"than {TOPOLOGY_MAX_NUMA_DEFAULT} NUMA nodes; set "
        f"kubelet.topologyManagerPolicyOptions.{MAX_ALLOWABLE_NUMA_OPTION} to "
        f"\"{topo.numa_nodes}\" or topologyManagerPolicy to none", current=policy)


def _rollout(kubelet: dict, version, changes=None) -> list[str]:
    """The rollout steps for a node running kubelet `version`
    (krm_fn.node.baseline.rollout_steps: the full procedure without a baseline, else only
    what the StateChanges need), with a first check when the config refuses cgroup v1
    (failCgroupV1 true on a cgroup v1 host stops the kubelet;
    https://kubernetes.io/docs/concepts/architecture/cgroups/), and, with
    reservedSystemCPUs, what it leaves to the node (RESERVED_CPUS_STEP)."""
    steps = baseline_mod.rollout_steps(changes, version)
    if kubelet.get("failCgroupV1") is True:
        steps.insert(0, "Check the node runs cgroup v2 (`stat -fc %T /sys/fs/cgroup` prints "
                        "cgroup2fs): failCgroupV1 is true, so the kubelet refuses to start on "
                        "cgroup v1")
    cpus = kubelet.get("reservedSystemCPUs")
    if cpus:
        strict = baseline_mod._strict(kubelet)
        steps.append(RESERVED_CPUS_STEP.format(cpus=cpus) + (
            "" if strict else RESERVED_CPUS_SHARED))
    return steps


# reservedSystemCPUs only takes CPUs out of what the CPU Manager hands out: "To move the
# system daemon, kubernetes daemons and interrupts/timers to the explicit cpuset defined by
# this option, other mechanism outside Kubernetes should be used"
# (https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/#explicitly-reserved-cpu-list)
RESERVED_CPUS_STEP = (
    "Keep the node's own processes on the reserved CPUs {cpus}: reservedSystemCPUs keeps "
    "pinned containers off them, but the kubelet, the container runtime, other system "
    "services and interrupts still run on any CPU until a mechanism outside Kubernetes "
    "moves them: CPUAffinity={cpus} in /etc/systemd/system.conf (every service systemd "
    "starts inherits it; reboot to apply) or the tuned profile cpu-partitioning, which "
    "moves interrupts too "
    "(https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/"
    "#explicitly-reserved-cpu-list)")
RESERVED_CPUS_SHARED = (
    "; Burstable and BestEffort pods also run on them unless cpuManagerPolicyOptions "
    "strict-cpu-reservation is \"true\" "
    "(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"
    "#strict-cpu-reservation)")
