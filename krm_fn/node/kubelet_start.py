"""What the kubelet refuses at start-up in its configuration file, in its own words:
cmd/kubelet/app/server.go run() (eviction thresholds, qosReserved), NewMainKubelet
(pkg/kubelet/kubelet.go: the sync frequency, the configmap and secret strategy, the
container log size, every eviction threshold), the Node Allocatable check
(pkg/kubelet/cm/node_container_manager_linux.go). Messages verbatim, for the releases
krm_fn.node.kubelet_says quotes; checked against the kubelet's code by the harness
(tests/test_kubelet_config_harness.py).
"""
from __future__ import annotations

from krm_fn.node import go_quantity as gq
from krm_fn.quantity import NANO, ceil_div
from krm_fn.node import kubelet_says, upstream
from krm_fn.node.kubelet_says import atoi, go_quote, parse_duration

# the eviction signals of a Linux kubelet: signalToResource's (helpers.go init;
# pkg/kubelet/eviction/api/types.go; containerfs.* since 1.29, KEP-4191)
EVICTION_SIGNALS = ("memory.available", "allocatableMemory.available", "nodefs.available",
                    "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree",
                    "containerfs.available", "containerfs.inodesFree", "pid.available")

def threshold_maps() -> tuple[str, ...]:
    """The maps of thresholds (krm_fn.node.fields), in ParseThresholdConfig's order: hard,
    then soft (alphabetical)."""
    from krm_fn.node import fields
    return tuple(sorted(f.name for f in fields.FIELDS
                        if f.name.startswith("eviction") and f.type.startswith("map[")
                        and not f.name.endswith(("GracePeriod", "MinimumReclaim"))))


def eviction_errors(config: dict) -> list[tuple[str, str]]:
    """[(field, message)] of every problem eviction.ParseThresholdConfig finds in the
    eviction maps (the kubelet stops at the first, in Go's map order; each message is what
    it says when that one is first): thresholds, grace periods, minimum reclaims, a soft
    threshold without its grace period."""
    out: list[tuple[str, str]] = []

    def m(name: str) -> dict:
        value = config.get(name)
        return value if isinstance(value, dict) else {}

    soft_ok = True
    for name in threshold_maps():
        for signal, value in m(name).items():
            field, value = f"{name}.{signal}", str(value)
            if signal not in EVICTION_SIGNALS:
                out.append((field, f"unsupported eviction signal {signal}"))
            elif value not in ("0%", "100%"):
                percent, amount, error = _amount(value)
                if error:
                    out.append((field, error))
                elif percent and amount < 0:
                    out.append((field, f"eviction percentage threshold {signal} must be >= "
                                       f"0%: {value}"))
                elif percent and amount > 1:
                    out.append((field, f"eviction percentage threshold {signal} must be <= "
                                       f"100%: {value}"))
                elif not percent and amount[0] <= 0:
                    out.append((field, f"eviction threshold {signal} must be positive: "
                                       f"{gq.go_quantity_string(*amount)}"))
            if name == "evictionSoft" and out and out[-1][0] == field:
                soft_ok = False
    grace = m("evictionSoftGracePeriod")
    for signal, value in grace.items():
        field = f"evictionSoftGracePeriod.{signal}"
        if signal not in EVICTION_SIGNALS:
            out.append((field, f"unsupported eviction signal {signal}"))
            continue
        ns, error = parse_duration(str(value))
        if error:
            out.append((field, error))
        elif ns < 0:
            out.append((field, f"invalid eviction grace period specified: {value}, must be a "
                               f"positive value"))
    for signal, value in m("evictionMinimumReclaim").items():
        field, value = f"evictionMinimumReclaim.{signal}", str(value)
        if signal not in EVICTION_SIGNALS:
            out.append((field, f"unsupported eviction signal {signal}"))
            continue
        percent, amount, error = _amount(value)
        if error:
            out.append((field, error))
        elif percent and amount <= 0:
            out.append((field, f"eviction percentage minimum reclaim {signal} must be "
                               f"positive: {value}"))
        elif not percent and amount[0] < 0:
            out.append((field, f"negative eviction minimum reclaim specified for {signal}"))
    if soft_ok and not out:
        for signal, value in m("evictionSoft").items():
            if str(value) in ("0%", "100%"):
                continue        # no threshold: no grace period needed
            if signal not in grace:
                out.append((f"evictionSoft.{signal}", f"grace period must be specified for "
                                                      f"the soft eviction threshold {signal}"))
    return out


def _amount(value: str) -> tuple[bool, object, str | None]:
    """An eviction value as eviction's parsers read it: (True, the percentage as a float32
    fraction, None) for "N%" (strconv.ParseFloat(..., 32), then / 100), (False,
    go_quantity's (value, Format), None) for a quantity, or (percent, None, the parse
    error)."""
    if value.endswith("%"):
        p, error = gq.parse_float32(value.rstrip("%"))
        return True, None if error else gq.float32(p / 100), error
    q = gq.go_quantity(value)
    return (False, None, q) if isinstance(q, str) else (False, q, None)


def qos_reserved_errors(reserved: dict) -> list[tuple[str, str]]:
    """[(key, message)] of what cm.ParseQOSReserved refuses in qosReserved
    (pkg/kubelet/cm/container_manager.go: only memory, as a whole percentage from 0 to
    100), as cmd/kubelet/app/server.go wraps it."""
    out = []
    for key, value in reserved.items():
        value = str(value)
        if key != "memory":
            why = f"cannot reserve {go_quote(str(key))} resource"
        else:
            number, error = atoi(value.rstrip("%"))
            problem = (f"percentage expected, got '{value}'" if not value.endswith("%") else
                       f"invalid number in percentage '{value}'" if error else
                       "percentage must be between 0 and 100" if not 0 <= number <= 100
                       else None)
            if problem is None:
                continue
            why = f"failed to parse percentage {go_quote(value)} for \"memory\" resource: {problem}"
        out.append((str(key), f"--qos-reserved value failed to parse: {why}"))
    return out


MAIN_KUBELET = "pkg/kubelet/kubelet.go"
CHANGE_DETECTION = ("Watch", "Cache", "Get")


def main_kubelet(config: dict, version, enabled: dict, defaults: dict
                 ) -> list[tuple[str, str, str]]:
    """What NewMainKubelet (kubernetes/kubernetes pkg/kubelet/kubelet.go) refuses in the
    file alone once the managers are built, in its order, on a node with an API server: a
    sync frequency that is not positive, a configmap and secret change detection strategy it
    does not know, a container log size it cannot parse (logs.NewContainerLogManager), an
    allowedUnsafeSysctls entry that is not a sysctl pattern or not known to be namespaced
    (sysctl_problem). (Its eviction thresholds: eviction_errors.)"""
    from krm_fn.node.kubelet_validation import _Config
    c = _Config(config, version, enabled, defaults)
    out = []
    sync = c.dur("syncFrequency")
    if sync <= 0:
        out.append(("syncFrequency", f"invalid sync frequency {sync}", MAIN_KUBELET))
    mode = c.str("configMapAndSecretChangeDetectionStrategy")
    if mode not in CHANGE_DETECTION:
        out.append(("configMapAndSecretChangeDetectionStrategy", f"unknown configmap and "
                    f"secret manager mode: {mode}", MAIN_KUBELET))
    size = c.str("containerLogMaxSize")
    parsed = gq.go_quantity(size)
    if isinstance(parsed, str):
        out.append(("containerLogMaxSize", f"failed to initialize container log manager: "
                    f"failed to parse container log max size {go_quote(size)}: {parsed}",
                    MAIN_KUBELET))
    sysctls = config.get("allowedUnsafeSysctls")
    for pattern in sysctls if isinstance(sysctls, list) else ():
        problem = sysctl_problem(str(pattern), version)
        if problem:
            out.append(("allowedUnsafeSysctls", problem, MAIN_KUBELET))
            break           # NewAllowlist returns at the first
    return out


# The sysctls the kubelet knows to be namespaced (k8s.io/component-helpers
# node/util/sysctl/namespace.go nameToNamespace, prefixToNamespace): by name, and by prefix
# (followed by a dot); kernel.domainname (UTS) and user.* (User) since 1.37.
_NAMESPACED = {(1, 35): ({"kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni",
                          "kernel.shm_rmid_forced", "kernel.shm", "kernel.msgmax",
                          "kernel.msgmnb", "kernel.msgmni", "kernel.msg"},
                         ("net", "fs.mqueue"))}
_NAMESPACED[(1, 37)] = (_NAMESPACED[(1, 35)][0] | {"kernel.domainname"},
                        _NAMESPACED[(1, 35)][1] + ("user",))
# policyvalidation.IsValidSysctlPattern (pkg/apis/policy/validation/validation.go):
# SysctlContainSlashPatternFmt, at most apivalidation.SysctlMaxLength (253) characters
SYSCTL_PATTERN = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"


def sysctl_problem(pattern: str, version) -> str | None:
    """What sysctl.NewAllowlist (pkg/kubelet/sysctl/allowlist.go), called by NewMainKubelet
    with the safe sysctls and allowedUnsafeSysctls, says of one `pattern` (a sysctl name, or
    a prefix ending in `*`) at Kubernetes `version` ((1, minor)); None when it takes it. A
    refusal stops the kubelet at start-up."""
    import re
    if len(pattern) > 253 or not re.fullmatch(SYSCTL_PATTERN, pattern):
        return (f"sysctl {go_quote(pattern)} must have at most 253 characters and match "
                f"regex {SYSCTL_PATTERN}")
    name = pattern
    first = re.search(r"[./]", name)
    if first and first.group() == "/":      # utilsysctl.NormalizeName: swap . and /
        name = name.translate(str.maketrans("./", "/."))
    name = name.split("*", 1)[0]
    names, prefixes = _NAMESPACED[(1, 37) if tuple(version) >= (1, 37) else (1, 35)]
    if name in names or any(name.startswith(p + ".") for p in prefixes):
        return None
    return f"the sysctls {go_quote(name)} are not known to be namespaced"


def resource_managers(config: dict, version, enabled: dict, defaults: dict,
                      node_memory: int | None, node_cpus: int | None = None
                      ) -> list[tuple[str, str, str]]:
    """What cm.NewContainerManager refuses when it builds the CPU and Memory Managers from
    the file alone (pkg/kubelet/cm/container_manager_linux.go): cpumanager.NewManager (the
    policy's name, options with policy none, static without a CPU reservation, static's
    options: krm_fn.node.options), memorymanager.NewManager (the policy's name, Static's
    reservedMemory against the reservations, type by type). What needs the machine (its
    CPUs and NUMA nodes) is the plan's (reserved.py, memory.py). `node_memory` (bytes)
    resolves a percentage hard eviction threshold; without it, a Static Memory Manager's
    memory sum is not judged."""
    from krm_fn.node.kubelet_validation import _Config
    c = _Config(config, version, enabled, defaults)
    out: list[tuple[str, str, str]] = []
    policy = c.str("cpuManagerPolicy")
    raw = config.get("cpuManagerPolicyOptions")
    opts = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    if policy == "none" and opts:
        shown = " ".join(f"{k}:{opts[k]}" for k in sorted(opts))
        out.append(("cpuManagerPolicyOptions", f"new none policy error: None policy: "
                    f"received unsupported options=map[{shown}]", kubelet_says.CPU_POLICY_NONE))
    elif policy == "static":
        millis = reserved_millis(config)
        needed = -(-millis // 1000) if millis else 0    # math.Ceil of the reservation
        if millis == 0:     # GetNodeAllocatableReservation keeps no zero sum
            out.append(("cpuManagerPolicy", "[cpumanager] unable to determine reserved CPU "
                        "resources for static policy", kubelet_says.CPU_MANAGER))
        elif node_cpus is not None and needed > node_cpus:
            # takeByTopology cannot take them: it returns no CPUs
            field = next((f"{n}.cpu" for n in sorted(_reservation_maps())
                          if isinstance(config.get(n), dict) and "cpu" in config[n]), "")
            out.append((field, f"new static policy error: [cpumanager] unable to reserve the "
                        f"required amount of CPUs (size of  did not equal {needed})",
                        kubelet_says.CPU_POLICY_STATIC))
    elif policy not in ("none", "static"):
        out.append(("cpuManagerPolicy", f'unknown policy: "{policy}"', kubelet_says.CPU_MANAGER))
    memory_policy = c.str("memoryManagerPolicy")
    if memory_policy == "Static":
        out.extend(("reservedMemory", message, kubelet_says.MEMORY_MANAGER)
                   for message in _reserved_memory(config, version, node_memory))
    elif memory_policy == "BestEffort":
        out.append(("memoryManagerPolicy", 'policy "BestEffort" is not available for '
                    'platform "linux"', kubelet_says.MEMORY_MANAGER))
    elif memory_policy != "None":
        out.append(("memoryManagerPolicy", f"unknown policy: {go_quote(memory_policy)}",
                    kubelet_says.MEMORY_MANAGER))
    return out


def _reservation_maps() -> list[str]:
    """The reservation maps in GetNodeAllocatableReservation's order: systemReserved, then
    kubeReserved (krm_fn.node.fields)."""
    from krm_fn.node import fields
    return sorted((f.name for f in fields.FIELDS if f.shape == "quantity-map"), reverse=True)


def reserved_millis(config: dict) -> int | None:
    """The CPU of the kubelet's Node Allocatable reservation in millicores when
    reservedSystemCPUs is not set: systemReserved.cpu + kubeReserved.cpu, each rounded to
    whole millicores as parseResourceList rounds it; None with reservedSystemCPUs (run()
    then writes their count as systemReserved's cpu) or where krm-fn cannot tell (a
    quantity the kubelet refuses anyway)."""
    cpus = config.get("reservedSystemCPUs")
    if isinstance(cpus, str) and cpus.strip():
        return None
    total = 0
    for name in _reservation_maps():
        m = config.get(name)
        text = m.get("cpu") if isinstance(m, dict) else None
        q = gq.go_quantity(str(text)) if text is not None else None
        if isinstance(q, str):
            return None
        if q:
            micro = ceil_div(q[0], 1000)    # nanos to ScaledValue(Micro): the ceiling
            total += int((micro + 500) / 1000)          # Go's division truncates
    return total


# what parseResourceList (cmd/kubelet/app/server.go) reserves
RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")


def reservation_errors(config: dict) -> list[tuple[str, str, str]]:
    """What run() refuses in kubeReserved and systemReserved (parseResourceList, each map as
    its flag: --kube-reserved, --system-reserved): a resource it does not reserve, a
    quantity it cannot parse, a negative one. With reservedSystemCPUs, run() first drops
    kubeReserved's cpu and writes systemReserved's. [(field, message, source)]"""
    out = []
    cpus = config.get("reservedSystemCPUs")
    replaced = isinstance(cpus, str) and bool(cpus.strip()) and \
        kubelet_says.cpuset_error(cpus) is None
    for name in sorted(_reservation_maps()):            # kubeReserved, then systemReserved
        m = config.get(name)
        if not isinstance(m, dict):
            continue
        flag = "--kube-reserved" if name.startswith("kube") else "--system-reserved"
        for key, value in m.items():
            key, value = str(key), str(value)
            if replaced and key == "cpu":
                continue
            if key not in RESERVABLE:
                why = f"cannot reserve {go_quote(key)} resource"
            else:
                q = gq.go_quantity(value)
                if isinstance(q, str):
                    why = (f"failed to parse quantity {go_quote(value)} for {go_quote(key)} "
                           f"resource: {q}")
                elif q[0] < 0:
                    why = f"resource quantity for {go_quote(key)} cannot be negative: {value}"
                else:
                    continue
            out.append((f"{name}.{key}", f"{flag} value failed to parse: {why}",
                        kubelet_says.SERVER))
    return out


def _reserved_memory(config: dict, version, node_memory: int | None) -> list[str]:
    """validateReservedMemory's messages (memory_manager.go) for each type whose sums
    differ: reservedMemory's entries against the Node Allocatable reservation (the memory
    of systemReserved and kubeReserved and the hard eviction threshold; loadConfigFile's
    evictionHard default when the file has none)."""
    from krm_fn.node import memory
    raw = config.get("reservedMemory")
    try:
        entries = memory.parse(raw) if raw not in (None, []) else []
    except memory.ReservedMemoryError:
        return []                    # a shape the kubelet's decoding or validation refuses
    maps = [config.get(n) if isinstance(config.get(n), dict) else {}
            for n in _reservation_maps()]
    hard = config.get("evictionHard")
    if not isinstance(hard, dict):
        hard = upstream.eviction_hard_default(version)
    elif config.get("mergeDefaultEvictionSettings") is True:
        hard = {**upstream.eviction_hard_default(version), **hard}
    text = hard.get("memory.available")
    evict = None
    if isinstance(text, str) and text.endswith("%"):
        if node_memory is None:
            return []
        if text not in ("0%", "100%"):
            evict = (gq.percent_of(node_memory, text) * NANO, "BinarySI")
    elif text is not None:
        evict = gq.go_quantity(str(text))
        if isinstance(evict, str):
            return []
    kinds = {k for e in entries for k in e["limits"]}
    if evict and evict[0] or any(memory.MEMORY in m for m in maps):
        kinds.add(memory.MEMORY)       # the reservation holds no hugepages (run() refuses)
    found = (memory.kubelet_sum(entries, kind, (maps[0], maps[1], evict))
             for kind in sorted(kinds))
    return [message for message in found if message]


def node_allocatable(config: dict, node_memory: int) -> str | None:
    """The kubelet's Node Allocatable message for memory
    (containerManagerImpl.validateNodeAllocatable), when the reservation exceeds
    `node_memory`: the reservation summed as GetNodeAllocatableReservation sums it
    (systemReserved, kubeReserved, then the hard eviction threshold, as resource.Quantity
    values) and the capacity, each printed as a Quantity struct (%v of a value whose String
    has a pointer receiver); None where the sum leaves resource.Quantity's int64 path (the
    kubelet then prints a pointer)."""
    total = gq.GoQuantity(0, 0, "DecimalSI")
    for name in _reservation_maps():
        m = config.get(name) if isinstance(config.get(name), dict) else {}
        text = m.get("memory")
        part = gq.parse_quantity(str(text)) if text is not None else None
        if text is not None and part is None:
            return None
        total = gq.add(total, part)
        if total is None:
            return None
    hard = config.get("evictionHard") if isinstance(config.get("evictionHard"), dict) else {}
    evict = hard.get("memory.available")
    if isinstance(evict, str) and evict not in ("0%", "100%"):
        part = (gq.GoQuantity(gq.percent_of(node_memory, evict), 0, "BinarySI")
                if evict.endswith("%") else gq.parse_quantity(evict))
        total = gq.add(total, part) if part is not None else None
        if total is None:
            return None
    capacity = gq.GoQuantity(node_memory, 0, "BinarySI")
    return (f"invalid Node Allocatable configuration. Resource \"memory\" has a reservation of "
            f"{total.dump()} but capacity of {capacity.dump()}. Expected capacity >= "
            f"reservation.")


def qos_findings(config: dict, version) -> list[tuple[str, str]]:
    """qosReserved entries the kubelet cannot parse (cm.ParseQOSReserved: memory only, a
    whole percentage from 0% to 100%): it refuses to start. [(field, message)]."""
    reserved = config.get("qosReserved")
    if not isinstance(reserved, dict):
        return []
    return [(f"qosReserved.{key}", f"qosReserved.{key} must be memory: a whole "
                    f"percentage from 0% to 100%, found {reserved[key]!r}: the kubelet "
                    f"of Kubernetes {upstream.version_str(version)} refuses to start"
                    f"{kubelet_says.says(version, message, kubelet_says.SERVER)}")
            for key, message in qos_reserved_errors(reserved)]
