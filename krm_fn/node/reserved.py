"""Reservations of a node pool's plan: kubeReserved / systemReserved, reservedSystemCPUs and
the Memory Manager's reservedMemory, with the checks the kubelet makes at start-up.

Sources: https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/
(with reservedSystemCPUs set the kubelet deletes kubeReserved.cpu and sets systemReserved.cpu
to the number of reserved CPUs: allocatable cpu = capacity - count(reservedSystemCPUs);
kubernetes/kubernetes cmd/kubelet/app/server.go),
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/ (the static
policy needs a non-zero reservation) and
https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/ (reservedMemory).

Every function reports through `res(severity, path, message, current=None, proposed=None,
absolute=False)`, paths below `spec.nodePools[i]` unless `absolute`.
"""
from __future__ import annotations


from krm_fn import quantity
from krm_fn.node import baseline as baseline_mod
from krm_fn.node import fields, kubelet_says
from krm_fn.node.topology import Topology, format_cpuset, parse_cpuset, reserve_cores
from krm_fn.results import ERROR, WARNING

# kubeReserved / systemReserved when neither the config nor the baseline sets them.
DEFAULT_RESERVED = {"memory": "500Mi"}
# kubeReserved and systemReserved: the quantity maps node allocatable subtracts.
RESERVATIONS = tuple(f.name for f in fields.FIELDS if f.shape == "quantity-map")


def uses_reserved_cpus(k, pool) -> bool:
    """Whether the plan writes reservedSystemCPUs: the pool sets kubelet.reservedSystemCPUs,
    or reserved.cores is not 0."""
    return k.reservedSystemCPUs is not None or pool.reserved.cores != 0


def reservation_maps(k, base: dict, res, pool=None) -> dict[str, dict[str, str]]:
    """kubeReserved and systemReserved of the pool's kubelet settings `k` (str -> str), the
    cpu entries dropped with a warning when the plan writes reservedSystemCPUs (it replaces
    them; `pool` None counts as writing it); unset: {} when the baseline `base` has its own
    map, else DEFAULT_RESERVED."""
    reserved_maps: dict[str, dict[str, str]] = {}
    drop_cpu = pool is None or uses_reserved_cpus(k, pool)
    for name in RESERVATIONS:
        given = getattr(k, name)
        if given is None:   # unset: the baseline's own map, else krm-fn's default
            given = {} if isinstance(base.get(name), dict) else DEFAULT_RESERVED
        m = {str(a): str(b) for a, b in given.items()}
        if "cpu" in m and drop_cpu:
            res(WARNING, f"kubelet.{name}.cpu",
                f"{name}.cpu {m['cpu']!r} dropped: reservedSystemCPUs replaces it (with "
                f"reservedSystemCPUs set the kubelet deletes kubeReserved.cpu and sets "
                f"systemReserved.cpu to the number of reserved CPUs); size the CPU "
                f"reservation with reserved.cores or kubelet.reservedSystemCPUs instead",
                current=m["cpu"])
            del m["cpu"]
        if getattr(k, name) is not None:
            _replaced(name, m, base.get(name), res)
        reserved_maps[name] = m
    return reserved_maps


def _replaced(name: str, mine: dict, theirs: object, res) -> None:
    """A warning per entry of the config's map `name` that replaces a different value of the
    node's own (`theirs`, the baseline's map: the drop-in merges per key,
    https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#kubelet-conf-d)."""
    if not isinstance(theirs, dict):
        return
    for key, value in mine.items():
        old = theirs.get(key)
        if old is None or _same(key, value, old):
            continue
        res(WARNING, f"kubelet.{name}.{key}",
            f"{name}.{key} {value} replaces the node's own {old} "
            f"(spec.output.baseline): the platform sized that reservation for its daemons "
            f"(a smaller one leaves them less before the kubelet evicts pods); keep "
            f"{old} unless you mean to change it", current=str(old), proposed=value)


def _same(key: str, a: object, b: object) -> bool:
    """Whether two reservation quantities are equal (as quantities; as text when either is
    not one)."""
    from krm_fn import quantity
    try:
        return quantity.parse(str(a)).nanos == quantity.parse(str(b)).nanos
    except quantity.QuantityError:
        return str(a) == str(b)


def _repeats(text: str, cpus: list, path: str, res) -> None:
    """A warning when the cpuset `text` (read as `cpus`) names a CPU twice: the kubelet
    takes it (k8s.io/utils/cpuset Parse adds each element to a set), likely a typo."""
    try:
        parse_cpuset(text)
    except ValueError as e:
        res(WARNING, path, f"{e}; the kubelet reads it as {format_cpuset(cpus)!r} "
            f"(k8s.io/utils/cpuset Parse keeps each CPU once): write that, or the CPU meant",
            current=text)


def reserved_cpus(kubelet: dict, k, pool, topo: Topology, res, version=(1, 0)) -> list[int]:
    """Set kubelet["reservedSystemCPUs"]: the explicit cpuset `k.reservedSystemCPUs`
    (checked against `topo`), or whole cores chosen from the topology
    (`pool.reserved.cores`, spread across NUMA nodes on request; none when it is 0). Returns the sorted reserved
    CPU ids, [] when the set is invalid (an error result names it). From 1.35 (`version`)
    a set outside the node quotes the kubelet (cmd/kubelet/app/server.go getReservedCPUs);
    one it cannot parse is quoted by krm_fn.node.kubelet_check (validation)."""
    reserved: list[int] = []
    if k.reservedSystemCPUs is not None:
        text = str(k.reservedSystemCPUs)
        kubelet["reservedSystemCPUs"] = text
        path = "kubelet.reservedSystemCPUs"
        try:
            cpus = parse_cpuset(text, repeats=True)
        except ValueError as e:
            res(ERROR, path, f"{e}; " + ("the kubelet refuses a reservedSystemCPUs it cannot "
                                         "parse" if kubelet_says.cpuset_error(text) else
                                         "no node has such a CPU: the kubelet fails to start"),
                current=text)
        else:
            _repeats(text, cpus, path, res)
            ids = {c.cpu for c in topo.cpus()}
            outside = [c for c in cpus if c not in ids]
            if not cpus:
                res(ERROR, path, "reservedSystemCPUs is empty; the static CPU Manager needs a "
                    "non-zero reservation (set a cpuset such as 0-1 or remove the field to "
                    "use reserved.cores)", current=text)
            elif outside:
                said = kubelet_says.says(
                    version, f"reserved-cpus: {text} is not a subset of online-cpus: "
                    f"{format_cpuset(ids)}", kubelet_says.SERVER) \
                    if kubelet_says.cpuset_error(text) is None else ""
                res(ERROR, path, f"CPUs {format_cpuset(outside)} do not exist on this pool's "
                    f"nodes (CPUs {format_cpuset(ids)}); the kubelet fails to start{said}",
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
    elif pool.reserved.cores:
        try:
            reserved = reserve_cores(topo, pool.reserved.cores,
                                     bool(pool.reserved.spreadAcrossNuma))
        except ValueError as e:
            res(ERROR, "reserved.cores", str(e), current=pool.reserved.cores)
        else:
            kubelet["reservedSystemCPUs"] = format_cpuset(reserved)

    return reserved


def check_dropped_cpu(k, reserved: list[int], opts: dict, kubelet: dict, res) -> None:
    """Warn when the kubeReserved.cpu + systemReserved.cpu the config asked for (and that were
    dropped) differ from the number of CPUs in reservedSystemCPUs."""
    dropped = {n: str(v["cpu"]) for n in RESERVATIONS
               for v in [getattr(k, n) or {}] if "cpu" in v}
    if dropped and reserved:
        asked = sum(quantity.parse_milli_cpu(v).nanos for v in dropped.values())    # nanocores
        if asked != len(reserved) * quantity.NANO:
            terms = " + ".join(f"{n}.cpu {v}" for n, v in dropped.items())
            strict = opts.get("strict-cpu-reservation") == "true"
            res(WARNING, "kubelet.reservedSystemCPUs",
                f"{terms} = {quantity.format_cpu(asked)} CPUs, but reservedSystemCPUs "
                f"{kubelet.get('reservedSystemCPUs')!r} holds {len(reserved)}: the kubelet "
                f"reserves exactly the listed CPUs (allocatable cpu = capacity - "
                f"{len(reserved)})"
                + ("" if strict else "; without the strict-cpu-reservation option, Burstable "
                   "and BestEffort pods still run on them"))


def reserved_memory(kubelet: dict, k, pool, topo: Topology, base: dict, base_path: str,
                     reserved_maps: dict, eviction: dict, res, version=(1, 0)) -> None:
    """Set kubelet["reservedMemory"] for memoryManagerPolicy Static
    (https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/): the
    explicit `kubelet.reservedMemory` (kept as given also when it is wrong: the plan holds
    what was asked), else computed and placed on NUMA node 0 (or spread with
    reserved.spreadMemoryAcrossNuma). Errors name the field; from 1.35 (`version`) those
    of the Memory Manager quote the kubelet (memory.check)."""
    from krm_fn.node import memory as memory_mod    # only a Static pool needs it (start-up)
    merged = {n: {**baseline_mod.string_map(base.get(n)), **reserved_maps[n]}
              for n in RESERVATIONS}
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
            res(ERROR, f"kubelet.{top}.{rest}", e.message, current=current)
        return
    numas = sorted({c.numa for c in topo.cpus()})
    if k.reservedMemory is not None:
        try:
            entries = memory_mod.parse(k.reservedMemory)
        except memory_mod.ReservedMemoryError as e:
            res(ERROR, f"kubelet.{e.path}", e.message)
            if isinstance(k.reservedMemory, list):
                from krm_fn.node.plan import _plain, _Unplain
                try:
                    kubelet["reservedMemory"] = _plain(k.reservedMemory)
                except _Unplain:
                    pass
            return
        eviction_terms = _eviction_quantity(eviction, topo)
        for e in memory_mod.check(entries, totals, terms, numas, version,
                                  (merged["systemReserved"], merged["kubeReserved"],
                                   eviction_terms)):
            res(ERROR, f"kubelet.{e.path}", e.message)
        kubelet["reservedMemory"] = entries
        return
    if not any(totals.values()):
        res(ERROR, "kubelet.memoryManagerPolicy", "memoryManagerPolicy Static needs a "
            "non-zero reservedMemory, but kubeReserved.memory + systemReserved.memory + "
            "evictionHard[memory.available] is 0; reserve some memory")
        return
    kubelet["reservedMemory"] = memory_mod.split(totals, numas,
                                                 bool(pool.reserved.spreadMemoryAcrossNuma))


def _eviction_quantity(eviction: dict, topo: Topology):
    """evictionHard[memory.available] as the kubelet's hard-eviction reservation holds it
    (go_quantity.go_quantity's (value, Format)), None when it has none or krm-fn cannot
    model it (a percentage needs the node's memory, which the plan's topology may not give;
    a quantity the kubelet cannot parse)."""
    text = eviction.get("memory.available")
    if text is None or str(text).endswith("%"):
        return None
    from krm_fn.node import go_quantity
    q = go_quantity.go_quantity(str(text))
    return None if isinstance(q, str) else q
