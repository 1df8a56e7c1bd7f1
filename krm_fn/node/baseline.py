"""The plan merged onto the node's current KubeletConfiguration (`spec.output.baseline`),
and the merged result checked the way the kubelet will check it at start-up.

The baseline is what the kubelet reports (`kubectl get --raw
/api/v1/nodes/<node>/proxy/configz`, whose `{"kubeletconfig": {...}}` wrapper is unwrapped)
or its config file. The kubelet runs with the baseline and the emitted drop-in merged the
way `--config-dir` merges (a JSON merge patch, RFC 7386: maps merge per key, lists and
scalars replace;
https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/),
so every check below is made on
that merged result:

- `systemReservedCgroup` / `kubeReservedCgroup` next to `reservedSystemCPUs` is a kubelet
  validation error (https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/;
  fields.RESERVED_CGROUP_FIELDS): the plan sets them to "" and drops the
  `enforceNodeAllocatable` entries that need them, with a warning each.
- CPU Manager and Topology Manager options merge per key: the merged set is checked again
  (forbidden pairs, alpha gates; krm_fn.node.options).
- `featureGates.MemoryQoS: true` (KEP-2570, https://kep.k8s.io/2570) and
  `cpuCFSQuota: false` (CPU limits off node-wide) are warned about; krm-fn never writes
  either.
- A change of a field marked with a checkpoint in krm_fn.node.fields (`Field.state`)
  against the checkpoint the node wrote makes the kubelet crash-loop until that state file
  is deleted (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/,
  "Changing the CPU Manager Policy"): each change is a `StateChange`, reported with the
  steps.
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn import quantity
from krm_fn.node import fields
from krm_fn.node import options as cpu_options
from krm_fn.node import upstream
from krm_fn.node.topology import parse_cpuset
from krm_fn.results import ERROR, WARNING

BASELINE_PATH = "spec.output.baseline"
CONFIGZ_WRAPPER = "kubeletconfig"
CPU_STATE = fields.CPU_STATE
MEMORY_STATE = fields.MEMORY_STATE
# enforceNodeAllocatable entries that need a reserved cgroup (kubelet validation).
ENFORCEMENT = fields.ENFORCEMENT
RESERVED_CGROUP_FIELDS = fields.RESERVED_CGROUP_FIELDS


def unwrap(baseline: object) -> tuple[dict, str]:
    """`(config, path)`: the KubeletConfiguration inside a configz answer
    `{"kubeletconfig": {...}}` with path `spec.output.baseline.kubeletconfig`, or the
    baseline itself with path `spec.output.baseline`. A baseline that is not a mapping
    gives `({}, BASELINE_PATH)`."""
    if isinstance(baseline, dict) and list(baseline) == [CONFIGZ_WRAPPER] \
            and isinstance(baseline[CONFIGZ_WRAPPER], dict):
        return baseline[CONFIGZ_WRAPPER], f"{BASELINE_PATH}.{CONFIGZ_WRAPPER}"
    return (baseline if isinstance(baseline, dict) else {}), BASELINE_PATH


def merge(target: object, patch: object) -> object:
    """RFC 7386 JSON merge patch of `patch` over `target` (a new value; inputs untouched):
    how the kubelet merges a `--config-dir` drop-in over its config
    (https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/)."""
    import copy
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def string_map(value: object) -> dict[str, str]:
    """A baseline map (kubeReserved, evictionHard, ...) as str -> str; {} when absent or not
    a mapping."""
    if not isinstance(value, dict):
        return {}
    return {str(k): ("true" if v is True else "false" if v is False else str(v))
            for k, v in value.items() if v is not None}


class StateChange(namedtuple("StateChange", "field old new state")):
    """One setting the node's resource-manager checkpoint depends on, changed by the plan:
    `field` (KubeletConfiguration field), `old`/`new` as text ("(unset)" when absent),
    `state` the checkpoint file that must be deleted (CPU_STATE or MEMORY_STATE)."""

    __slots__ = ()

    def text(self) -> str:
        """`cpuManagerPolicy none -> static` (each value shortened to CLIP characters: the
        note goes on every emitted object)."""
        return f"{self.field} {_clip(self.old)} -> {_clip(self.new)}"


CLIP = 80


def _clip(text: str) -> str:
    return text if len(text) <= CLIP else text[:CLIP - 3] + "..."


def _cpuset(value: object) -> tuple[int, ...] | None:
    try:
        return tuple(parse_cpuset(str(value or ""), repeats=True))
    except ValueError:
        return None


def _memory_list(value: object) -> object:
    """reservedMemory normalised for comparison: {(numaNode, type): bytes}."""
    if not isinstance(value, list):
        return value
    out: dict = {}
    for e in value:
        if not isinstance(e, dict) or not isinstance(e.get("limits"), dict):
            return value
        for kind, text in e["limits"].items():
            try:
                out[(e.get("numaNode"), kind)] = quantity.parse_memory(str(text)).whole
            except quantity.QuantityError:
                return value
    return out


def _shown(v: object) -> str:
    return "(unset)" if v in (None, "") else str(v)


def _memory_text(v: object) -> str:
    if not isinstance(v, list) or not v:
        return "(unset)"
    return ";".join(f"{e.get('numaNode')}:" + ",".join(f"{k}={q}" for k, q in
                                                       (e.get("limits") or {}).items())
                    for e in v if isinstance(e, dict))


def _change(f: fields.Field, base: dict, kubelet: dict) -> StateChange | None:
    """The StateChange of field `f` between `base` and `kubelet`, compared by its shape:
    policies as text with the kubelet default for an absent value, cpusets as CPU sets,
    memory reservations per NUMA node and type in bytes."""
    old_raw, new_raw = base.get(f.name), kubelet.get(f.name)
    if f.shape == "cpuset":
        old_set, new_set = _cpuset(old_raw), _cpuset(new_raw)
        if old_set is None or new_set is None:
            changed = str(old_raw or "") != str(new_raw or "")
        else:
            changed = old_set != new_set
        return StateChange(f.name, _shown(old_raw), _shown(new_raw), f.state) if changed \
            else None
    if f.shape == "memory-reservations":
        if _memory_list(old_raw) == _memory_list(new_raw):
            return None
        return StateChange(f.name, _memory_text(old_raw), _memory_text(new_raw), f.state)
    old, new = str(old_raw or f.default), str(new_raw or f.default)
    return StateChange(f.name, old, new, f.state) if old != new else None


STRICT = "strict-cpu-reservation"
RESERVED_COUNT = "ceil(kubeReserved.cpu + systemReserved.cpu)"


def _option(config: dict) -> object:
    """cpuManagerPolicyOptions strict-cpu-reservation as written (None when absent)."""
    opts = config.get("cpuManagerPolicyOptions")
    return opts.get(STRICT) if isinstance(opts, dict) else None


def _strict(config: dict) -> bool | None:
    """cpuManagerPolicyOptions strict-cpu-reservation as the kubelet reads it (Go's
    strconv.ParseBool; absent is false), None when it does not read it."""
    value = _option(config)
    return {None: False, "1": True, "t": True, "T": True, "TRUE": True, "true": True,
            "True": True, "0": False, "f": False, "F": False, "FALSE": False, "false": False,
            "False": False}.get(value if value is None else str(value))


def _reserved_count(config: dict) -> int | None:
    """ceil(kubeReserved.cpu + systemReserved.cpu) in CPUs: how many CPUs the static policy
    reserves when reservedSystemCPUs is unset (policy_static.go NewStaticPolicy;
    krm_fn.node.kubelet_start.reserved_millis; None when a value is unreadable)."""
    from krm_fn.node import kubelet_start
    millis = kubelet_start.reserved_millis(config)
    return None if millis is None else -(-millis // 1000)


def _static_changes(base: dict, new: dict) -> list[StateChange]:
    """What the static policy's checkpoint depends on besides its name, between two
    configurations running the static policy (policy_static.go validateState): its
    reserved CPUs must all be in the checkpoint's default set, or with
    strict-cpu-reservation none of them, and the default set plus the assigned CPUs must be
    every CPU but (strict) the reserved ones. So a change of strict-cpu-reservation, and a
    change of the reserved CPUs (reservedSystemCPUs, or their count from kubeReserved +
    systemReserved when neither sets it) need the checkpoint deleted; without strict
    reservation, fewer reserved CPUs named by reservedSystemCPUs (a subset) do not: the old
    ones were never given to a pod. Reserved CPUs that grow or move are a change even when
    the node's pods do not hold them today: krm-fn cannot know which CPUs they hold."""
    out: list[StateChange] = []
    strict = _strict(new)
    if _strict(base) != strict:
        out.append(StateChange(f"cpuManagerPolicyOptions.{STRICT}", _shown(_option(base)),
                               _shown(_option(new)), CPU_STATE))
    field = next(f for f in fields.STATE_FIELDS if f.state == CPU_STATE and f.shape == "cpuset")
    old_set, new_set = _cpuset(base.get(field.name)), _cpuset(new.get(field.name))
    if old_set and new_set and strict is False and set(new_set) <= set(old_set):
        return out
    change = _change(field, base, new)
    if change is not None:
        out.append(change)
    elif not base.get(field.name) and not new.get(field.name):
        old_n, new_n = _reserved_count(base), _reserved_count(new)
        if old_n != new_n:
            out.append(StateChange(RESERVED_COUNT, _shown(old_n), _shown(new_n), CPU_STATE))
    return out


def state_changes(base: dict, new: dict) -> list[StateChange]:
    """The changes between the node's configuration `base` and the one the kubelet will run,
    `new` (both KubeletConfiguration dicts: the baseline and the plan merged onto it), that
    make the kubelet refuse the checkpoint it wrote under `base`; CPU_STATE's first.

    Each manager's checkpoint records its policy name, and the kubelet refuses one written
    under another policy (pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
    pkg/kubelet/cm/memorymanager/state/state_checkpoint.go: "configured policy %q differs
    from state checkpoint policy %q"): a change of cpuManagerPolicy or memoryManagerPolicy.
    Under the same policy only the static ones check more (policy_static.go validateState
    of each): the CPU Manager's reserved CPUs and strict-cpu-reservation (`_static_changes`),
    the Memory Manager's machine state, built from reservedMemory ("the expected machine
    state is different from the real one"). Under `none`/`None` nothing else is read.
    Fields and checkpoints: krm_fn.node.fields.STATE_FIELDS. The kubelet's own managers
    judge these rules at every minor the tests build them for
    (tests/test_rollout_kubelet.py); documented at
    https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/ ("Changing
    the CPU Manager Policy") and
    https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/."""
    out: list[StateChange] = []
    for state in (CPU_STATE, MEMORY_STATE):
        policy = next(f for f in fields.STATE_FIELDS if f.state == state and f.shape == "text")
        changed = _change(policy, base, new)
        if changed is not None:             # the file goes: every change of it is named
            out += [c for f in fields.STATE_FIELDS if f.state == state
                    for c in [_change(f, base, new)] if c]
        elif str(new.get(policy.name) or policy.default) == str(policy.default):
            continue                        # none / None: nothing else is checked
        elif state == CPU_STATE:
            out += _static_changes(base, new)
        else:
            out += [c for f in fields.STATE_FIELDS if f.state == state and f is not policy
                    for c in [_change(f, base, new)] if c]
    return out


# The kubelet's --config-dir drop-in directory (KEP-3983, https://kep.k8s.io/3983;
# https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#kubelet-conf-d):
# the first minor of each stage. Alpha needs the environment variable on the kubelet
# process (any value), or the kubelet refuses to start when --config-dir is set.
DROP_IN = (((1, 28), "alpha"), ((1, 30), "beta"), ((1, 35), "GA"))
DROP_IN_ENV = "KUBELET_CONFIG_DROPIN_DIR_ALPHA"
DROP_IN_DOC = "https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#kubelet-conf-d"


def put_step(version: tuple[int, int]) -> str:
    """The step that puts the plan's KubeletConfiguration on a node running kubelet
    `version` ((1, minor)): as a drop-in where that kubelet reads --config-dir (DROP_IN),
    with the alpha environment variable it needs on 1.28-1.29; else merged into --config."""
    stage = next((st for since, st in reversed(DROP_IN) if version >= since), None)
    patch = "or as a kubeadm kubeletconfiguration patch"
    if stage is None:
        return (f"Put kubelet-config.yaml in place: merge its fields into the file the kubelet's "
                f"--config names (kubelet {version[0]}.{version[1]} has no --config-dir, which "
                f"came in 1.28: {DROP_IN_DOC}), {patch}")
    where = ("Put kubelet-config.yaml in place as a *.conf file in the kubelet's --config-dir "
             "drop-in directory (read after --config, files in alphanumeric order; maps merge "
             f"per key, lists replace), {patch}")
    if stage == "alpha":
        return (f"{where}. Kubelet {version[0]}.{version[1]} reads --config-dir only with the "
                f"environment variable {DROP_IN_ENV} set on the kubelet process (any value, "
                f"e.g. in a systemd drop-in: Environment={DROP_IN_ENV}=on); without it the "
                f"kubelet refuses to start ({DROP_IN_DOC})")
    return where


def rollout_steps(changes: list[StateChange] | None,
                  version: tuple[int, int] = upstream.FIRST) -> list[str]:
    """Imperative steps to apply the plan on one node running kubelet `version`. `changes`
    None (no baseline): the full procedure, deleting both state files. Otherwise only the
    state files the changes need; with no changes, a plain kubelet restart."""
    put = put_step(version)
    if changes is None:
        return ["Cordon the node: kubectl cordon <node>",
                "Drain the node: kubectl drain <node> --ignore-daemonsets "
                "--delete-emptydir-data",
                "Stop the kubelet",
                f"Delete {CPU_STATE}",
                f"Delete {MEMORY_STATE} when memoryManagerPolicy changes",
                put, "Start the kubelet", "Uncordon the node: kubectl uncordon <node>"]
    if not changes:
        return [put, "Restart the kubelet (the CPU and Memory Manager settings are unchanged: "
                     "no drain, the state files stay)"]
    states = [s for s in (CPU_STATE, MEMORY_STATE) if any(c.state == s for c in changes)]
    return (["Cordon the node: kubectl cordon <node>",
             "Drain the node: kubectl drain <node> --ignore-daemonsets --delete-emptydir-data",
             "Stop the kubelet"]
            + [f"Delete {s}" for s in states]
            + [put, "Start the kubelet", "Uncordon the node: kubectl uncordon <node>"])


def rollout_note(changes: list[StateChange]) -> str:
    """One line for the `krm-fn.dev/rollout-note` annotation of the emitted objects."""
    states = [s for s in (CPU_STATE, MEMORY_STATE) if any(c.state == s for c in changes)]
    return ("drain the node and delete " + " and ".join(states) + " while the kubelet is "
            "stopped (" + "; ".join(c.text() for c in changes) + ")")


def reconcile(kubelet: dict, base: dict, where: str, version: tuple[int, int]
              ) -> tuple[list[tuple[str, str, str, object, object]], list[StateChange]]:
    """Check the plan's `kubelet` merged onto the baseline `base` (unwrapped, found at field
    path `where`) and adjust `kubelet` in place where the merge alone would stop the kubelet:
    reserved cgroups set to "" and enforceNodeAllocatable trimmed next to
    reservedSystemCPUs; alpha option gates the baseline's own options need.

    Returns `(findings, changes)`: findings are `(severity, path, message, current,
    proposed)` with absolute field paths below `where`; changes are the StateChanges
    (see `state_changes`). Never raises for bad baseline data."""
    found: list[tuple[str, str, str, object, object]] = []

    def add(sev: str, key: str, msg: str, current: object = None, proposed: object = None):
        found.append((sev, f"{where}.{key}", msg, current, proposed))

    merged = merge(base, {k: v for k, v in kubelet.items() if k not in fields.HEADER})
    _reserved_cgroups(kubelet, base, merged, add)
    _merged_options(kubelet, base, merged, version, add)
    _baseline_switches(base, version, add)

    changes = state_changes(base, merged)
    if changes:
        steps = rollout_steps(changes, version)
        first = changes[0].field
        add(WARNING, first, "the node's resource-manager checkpoint was written under other "
            "settings (" + "; ".join(c.text() for c in changes) + "): the kubelet refuses to "
            "start with the new config until the state is reset. krm-fn does not reconfigure "
            "nodes; on each node of the pool: " + "; ".join(
                f"{i}. {s}" for i, s in enumerate(steps, 1)),
            current=base.get(first), proposed=kubelet.get(first))
    return found, changes


def _reserved_cgroups(kubelet: dict, base: dict, merged: dict, add) -> None:
    """Next to reservedSystemCPUs: set the baseline's reserved cgroups to "" and drop the
    enforceNodeAllocatable entries that need them (a warning each, through `add`)."""
    if merged.get("reservedSystemCPUs"):
        for key in RESERVED_CGROUP_FIELDS:
            if base.get(key) and key not in kubelet:
                add(WARNING, key, f"the baseline sets {key} {base[key]}, which the kubelet "
                    f"refuses next to reservedSystemCPUs; the plan sets {key} to \"\"",
                    current=base[key], proposed="")
                kubelet[key] = ""
                merged[key] = ""
        enforce = merged.get("enforceNodeAllocatable")
        if isinstance(enforce, list) and "enforceNodeAllocatable" not in kubelet \
                and all(isinstance(e, str) for e in enforce):   # the plan's own is checked
            dropped = [e for e in enforce if e in ENFORCEMENT and not merged.get(ENFORCEMENT[e])]
            if dropped:
                gone = set(dropped)
                kept = [e for e in enforce if e not in gone] or ["pods"]
                add(WARNING, "enforceNodeAllocatable", f"the baseline's "
                    f"enforceNodeAllocatable {enforce} enforces {', '.join(dropped)}, which "
                    f"needs a reserved cgroup that cannot be set next to reservedSystemCPUs; "
                    f"the plan sets enforceNodeAllocatable to {kept}",
                    current=enforce, proposed=kept)
                kubelet["enforceNodeAllocatable"] = kept


def _merged_options(kubelet: dict, base: dict, merged: dict, version, add) -> None:
    """Options merge per key: check the merged CPU and Topology Manager option sets again
    (krm_fn.node.options), report only the problems the plan's own options do not have, and
    enable the alpha gates the merged options need."""
    plan_cpu = string_map(kubelet.get("cpuManagerPolicyOptions"))
    cpu_opts = {**string_map(base.get("cpuManagerPolicyOptions")), **plan_cpu}
    policy = str(merged.get("topologyManagerPolicy") or "none")
    gates, problems = cpu_options.check_cpu_options(cpu_opts, version, policy)
    _, own = cpu_options.check_cpu_options(plan_cpu, version, policy)
    for msg in problems:
        if msg not in own:
            add(ERROR, "cpuManagerPolicyOptions", f"with the baseline's options merged in: "
                f"{msg}")
    plan_topo = string_map(kubelet.get("topologyManagerPolicyOptions"))
    topo_opts = {**string_map(base.get("topologyManagerPolicyOptions")), **plan_topo}
    tgates, tproblems, _ = cpu_options.check_topology_options(topo_opts, version, policy)
    _, town, _ = cpu_options.check_topology_options(plan_topo, version, policy)
    for msg in tproblems:
        if msg not in town:
            add(ERROR, "topologyManagerPolicyOptions", f"with the baseline's options merged "
                f"in: {msg}")
    merged_gates = merged.get("featureGates") if isinstance(merged.get("featureGates"),
                                                              dict) else {}
    for gate in {**gates, **tgates}:
        if merged_gates.get(gate) is not True:
            kubelet.setdefault("featureGates", {})[gate] = True
            add(WARNING, "featureGates", f"the baseline's options need the {gate} feature "
                f"gate, which it does not enable; the plan sets {gate}: true",
                proposed="true")


def _baseline_switches(base: dict, version, add) -> None:
    """Warnings for baseline settings krm-fn never writes: MemoryQoS on, cpuCFSQuota off
    (gate stages and defaults of `version`)."""
    data = upstream.load(version)
    base_gates = base.get("featureGates") if isinstance(base.get("featureGates"), dict) else {}
    if base_gates.get("MemoryQoS") is True:
        factor = base.get("memoryThrottlingFactor")
        add(WARNING, "featureGates.MemoryQoS", "the baseline enables the MemoryQoS feature "
            f"gate ({data.gate_text('MemoryQoS')}, KEP-2570): on cgroup v2 it sets memory.high on containers whose "
            "memory request is below the limit and throttles them early (memory.high at "
            f"memoryThrottlingFactor{f' {factor}' if factor is not None else ''} of the way "
            "from request to limit; kubernetes/enhancements#3818), and it can livelock on "
            "kernels before 5.9; the pinned pods are Guaranteed (request == limit: no "
            "memory.high), other pods on the pool are not. krm-fn never enables it",
            current="true")
    if base.get("cpuCFSQuota") is False:
        add(WARNING, "cpuCFSQuota", "the baseline sets cpuCFSQuota: false, which turns off "
            "CPU limits for every pod on the node (cpuCFSQuota, " + fields.REFERENCE
            + "); pinned containers stay on "
            "their exclusive cpusets, but Burstable pods are no longer capped. krm-fn never "
            "writes it; the kubelet drops the quota of exclusive-CPU containers by itself "
            "(DisableCPUQuotaWithExclusiveCPUs, "
            f"{data.gate_text('DisableCPUQuotaWithExclusiveCPUs')})", current="false")
