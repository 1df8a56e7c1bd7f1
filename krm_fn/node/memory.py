"""Memory Manager `reservedMemory` (only with `memoryManagerPolicy: Static`).

The rule
(https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/;
kubelet pkg/kubelet/cm/memorymanager/memory_manager.go,
validateReservedMemory): for every resource type present on either side,

    Σ over NUMA nodes reservedMemory[].limits[type]
        == kubeReserved[type] + systemReserved[type] (+ evictionHard["memory.available"]
           when type == memory)

else the Memory Manager cannot be created and the kubelet exits. Types are `memory` and
`hugepages-<size>`. Amounts are exact byte counts (int) here; the kubelet resolves a
percentage eviction threshold against capacity, which krm-fn cannot know, so percentages
are refused.

Pure functions: `required` (what the sums must be), `split` (the emitted list: all on NUMA
node 0, or spread evenly), `parse` (a typed list or the kubelet's `--reserved-memory` flag
text) and `check` (an explicit list against the sums, with the arithmetic in the message).
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.matching import LazyPattern

MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
MEBI = 2 ** 20
# kubelet --reserved-memory syntax: "0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=2Gi"
_FLAG_ENTRY = LazyPattern(r"\s*([0-9]{1,4})\s*:(.*)")


class ReservedMemoryError(ValueError):
    """A reservedMemory problem: `path` is the field below `kubelet` it concerns
    (e.g. `reservedMemory[1].limits.memory`, `evictionHard.memory.available`)."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


MAX_ENTRIES = 1024     # reservedMemory entries (one per NUMA node; Linux has at most 1024)


def is_type(name: str) -> bool:
    """True for the resource types the Memory Manager reserves: memory, hugepages-<size>
    where <size> is a memory quantity such as 2Mi or 1Gi."""
    if name == MEMORY:
        return True
    if not name.startswith(HUGEPAGES_PREFIX) or len(name) > 32:
        return False
    try:
        return quantity.parse_memory(name[len(HUGEPAGES_PREFIX):]).whole > 0
    except quantity.QuantityError:
        return False


def _amount(text: str, path: str) -> int:
    if text.strip().endswith("%"):
        raise ReservedMemoryError(path, f"memoryManagerPolicy Static needs reservedMemory = "
                                 f"kubeReserved.memory + systemReserved.memory + evictionHard"
                                 f"[memory.available], and krm-fn cannot resolve the "
                                 f"percentage {text!r} without the node's capacity; write an "
                                 f"absolute quantity such as 100Mi")
    try:
        return quantity.parse_memory(text).whole
    except quantity.QuantityError as e:
        raise ReservedMemoryError(path, f"not a memory quantity: {e}") from None


def required(kube: dict, system: dict, eviction: dict
             ) -> tuple[dict[str, int], dict[str, list[tuple[str, str]]]]:
    """The sums reservedMemory must have, per type.

    `kube`/`systemReserved` and `eviction` (evictionHard) map names to quantity strings
    (the merged values the kubelet will run with). Returns `(totals, terms)`: `totals` maps
    each type to its byte count, in the order memory, then hugepages sizes as they appear;
    `terms[type]` lists the `(label, text)` pairs summed, for messages. Raises ReservedMemoryError
    for a percentage or an unparsable quantity, naming the field."""
    totals: dict[str, int] = {MEMORY: 0}
    terms: dict[str, list[tuple[str, str]]] = {MEMORY: []}
    for name, m in (("kubeReserved", kube), ("systemReserved", system)):
        for key, text in m.items():
            if not is_type(key):
                continue
            totals[key] = totals.get(key, 0) + _amount(str(text), f"{name}.{key}")
            terms.setdefault(key, []).append((f"{name}.{key}", str(text)))
    text = eviction.get("memory.available")
    if text is not None:
        totals[MEMORY] += _amount(str(text), "evictionHard.memory.available")
        terms[MEMORY].append(("evictionHard[memory.available]", str(text)))
    return totals, terms


def _page(kind: str) -> int:
    """Unit (bytes) a share of `kind` is split in: 1Mi for memory, the page size for
    hugepages."""
    if kind == MEMORY:
        return MEBI
    try:
        return quantity.parse_memory(kind[len(HUGEPAGES_PREFIX):]).whole or 1
    except quantity.QuantityError:
        return 1


def split(totals: dict[str, int], numa_nodes: list[int], spread: bool) -> list[dict]:
    """The `reservedMemory` list: every type on the first NUMA node, or, with `spread`,
    each type divided evenly over `numa_nodes` in whole units (1Mi for memory, the page
    size for hugepages), the remainder one unit at a time from the lowest node. Types whose
    total is 0 are left out. Shape: `[{"numaNode": int, "limits": {type: "1636Mi"}}]`."""
    nodes = numa_nodes if spread else numa_nodes[:1]
    shares: dict[int, dict[str, int]] = {n: {} for n in nodes}
    for kind, total in totals.items():
        if total == 0:
            continue
        unit = _page(kind)
        if total % unit:
            unit = 1
        units = total // unit
        base, rest = divmod(units, len(nodes))
        for i, n in enumerate(nodes):
            amount = (base + (1 if i < rest else 0)) * unit
            if amount:
                shares[n][kind] = amount
    return [{"numaNode": n, "limits": {k: quantity.format_bytes(v) for k, v in s.items()}}
            for n, s in shares.items() if s]


def parse(value: object) -> list[dict]:
    """An explicit reservedMemory: a list of `{numaNode: int, limits: {type: quantity}}`, or
    the kubelet flag text `0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=2Gi` (the ConfigMap form).
    Returns the list with int numaNode and str quantities. Raises ReservedMemoryError naming the
    entry (`reservedMemory[i]...`)."""
    if isinstance(value, str):
        entries = []
        parts = [p for p in value.split(";") if p.strip()]
        if len(parts) > MAX_ENTRIES:
            raise ReservedMemoryError("reservedMemory", f"has {len(parts)} entries; at most "
                                      f"{MAX_ENTRIES} (one per NUMA node) are accepted")
        for i, part in enumerate(parts):
            m = _FLAG_ENTRY.fullmatch(part)
            if not m:
                raise ReservedMemoryError(f"reservedMemory[{i}]", f"expected NUMA:type=quantity[,...] "
                                   f"such as 0:memory=1Gi, found {part.strip()[:60]!r}")
            limits = {}
            for pair in m.group(2).split(","):
                kind, eq, amount = pair.partition("=")
                if not eq or not kind.strip() or not amount.strip():
                    raise ReservedMemoryError(f"reservedMemory[{i}]", f"expected type=quantity such "
                                       f"as memory=1Gi, found {pair.strip()[:60]!r}")
                if kind.strip() in limits:
                    raise ReservedMemoryError(f"reservedMemory[{i}].limits.{kind.strip()}",
                                              f"{kind.strip()!r} is given twice for NUMA node "
                                              f"{m.group(1)}")
                limits[kind.strip()] = amount.strip()
            entries.append({"numaNode": int(m.group(1)), "limits": limits})
        value = entries
    if isinstance(value, list) and len(value) > MAX_ENTRIES:
        raise ReservedMemoryError("reservedMemory", f"has {len(value)} entries; at most "
                                  f"{MAX_ENTRIES} (one per NUMA node) are accepted")
    if not isinstance(value, list) or not value:
        raise ReservedMemoryError("reservedMemory", "expected a non-empty list of {numaNode, "
                           "limits} entries (or kubelet flag text such as 0:memory=1Gi)")
    out = []
    for i, entry in enumerate(value):
        where = f"reservedMemory[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"numaNode", "limits"}:
            raise ReservedMemoryError(where, "each entry is a mapping with exactly numaNode and "
                               "limits")
        node = entry.get("numaNode")
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            raise ReservedMemoryError(f"{where}.numaNode", f"expected a NUMA node id (a whole number "
                               f">= 0), found {node!r}")
        limits = entry.get("limits")
        if not isinstance(limits, dict) or not limits:
            raise ReservedMemoryError(f"{where}.limits", "expected a mapping of type to quantity, "
                               "e.g. {memory: 1Gi}")
        clean = {}
        for kind, amount in limits.items():
            if not isinstance(kind, str) or not is_type(kind):
                raise ReservedMemoryError(f"{where}.limits", f"{kind!r} is not a type the Memory "
                                   f"Manager reserves (memory or hugepages-<size>)")
            if isinstance(amount, bool) or not isinstance(amount, (str, int)):
                raise ReservedMemoryError(f"{where}.limits.{kind}", f"expected a quantity, found "
                                   f"{amount!r}")
            _amount(str(amount), f"{where}.limits.{kind}")
            clean[kind] = str(amount)
        out.append({"numaNode": node, "limits": clean})
    return out


def check(entries: list[dict], totals: dict[str, int],
          terms: dict[str, list[tuple[str, str]]], numa_nodes: list[int],
          version=(1, 0), reservation=None) -> list[ReservedMemoryError]:
    """Problems of an explicit reservedMemory (from `parse`) against `required`'s result on
    nodes with NUMA node ids `numa_nodes`: an unknown or repeated NUMA node, and each type
    whose sum differs, with the arithmetic (e.g. 1536Mi listed,
    1024Mi + 512Mi + 100Mi = 1636Mi required). From 1.35 (`version`) each quotes the
    kubelet (memory_manager.go getTotalMemoryTypeReserved, validateReservedMemory), given
    `reservation`: (systemReserved, kubeReserved, the hard-eviction memory as
    go_quantity.go_quantity's (value, Format) or None) as the kubelet will run them."""
    from krm_fn.node import kubelet_says as ks
    problems: list[ReservedMemoryError] = []
    seen: set[int] = set()
    sums: dict[str, int] = {}
    parts: dict[str, list[str]] = {}
    for i, e in enumerate(entries):
        n = e["numaNode"]
        if n not in numa_nodes:
            said = ks.says(version, f"the reserved memory configuration references a NUMA "
                           f"node {n} that does not exist on this machine", ks.MEMORY_MANAGER)
            problems.append(ReservedMemoryError(f"reservedMemory[{i}].numaNode", f"NUMA node {n} "
                            f"does not exist on this pool's nodes (NUMA nodes "
                            f"{', '.join(map(str, numa_nodes))}); the kubelet refuses to "
                            f"start{said}"))
        if n in seen:
            problems.append(ReservedMemoryError(f"reservedMemory[{i}].numaNode", f"NUMA node {n} is "
                            f"listed twice; give each NUMA node one entry"))
        seen.add(n)
        for kind, text in e["limits"].items():
            sums[kind] = sums.get(kind, 0) + quantity.parse_memory(text).whole
            parts.setdefault(kind, []).append(f"numaNode {n}: {text}")
    for kind in list(totals) + [k for k in sums if k not in totals]:
        want, have = totals.get(kind, 0), sums.get(kind, 0)
        if want == have:
            continue
        listed = (f"{quantity.format_bytes(have)} ({', '.join(parts[kind])})"
                  if kind in parts else "nothing")
        expr = " + ".join(f"{label} {text}" for label, text in terms.get(kind, []))
        need = (f"{expr} = {quantity.format_bytes(want)}" if expr
                else f"0 (no kubeReserved or systemReserved {kind})")
        diff = want - have
        gap = (f"{quantity.format_bytes(diff)} short" if diff > 0
               else f"{quantity.format_bytes(-diff)} too much")
        said = _kubelet_says_sum(entries, kind, version, reservation)
        problems.append(ReservedMemoryError("reservedMemory", f"reservedMemory {kind} sums to "
                        f"{listed}, but {need} ({gap}): the kubelet refuses to start"
                        + (said or f" (the total amount of type {kind!r} is not equal to the "
                                    f"value determined by Node Allocatable)")))
    return problems


def _kubelet_says_sum(entries: list[dict], kind: str, version, reservation) -> str:
    """The quote of validateReservedMemory for type `kind` (kubelet_sum), "" when it cannot
    be given."""
    from krm_fn.node import kubelet_says as ks
    if reservation is None or not ks.quoted(version):
        return ""
    message = kubelet_sum(entries, kind, reservation)
    return ks.says(version, message, ks.MEMORY_MANAGER) if message else ""


def kubelet_sum(entries: list[dict], kind: str, reservation) -> str | None:
    """validateReservedMemory's message for type `kind` (memory_manager.go), both sides
    summed as the kubelet sums resource.Quantity values (getTotalMemoryTypeReserved: each
    entry plus the total so far; GetNodeAllocatableReservation: systemReserved,
    kubeReserved, the hard eviction threshold), on either of Quantity's paths (String()
    prints the exact value); None when the two sides are equal or cannot be modelled (a
    quantity the kubelet cannot parse). `reservation`: (systemReserved, kubeReserved, the
    hard eviction memory as go_quantity.go_quantity's (value, Format) or None)."""
    from krm_fn.node import go_quantity as gq
    from krm_fn.node import kubelet_says as ks
    listed = None
    for e in entries:
        text = e["limits"].get(kind)
        if text is None:
            continue
        q = gq.go_quantity(str(text))
        if isinstance(q, str):
            return None
        listed = q if listed is None else gq.add_exact(q, listed)
    system, kube, evict = reservation
    reserved = gq.ZERO
    for m in (system, kube):
        text = m.get(kind)
        q = gq.go_quantity(str(text)) if text is not None else None
        if isinstance(q, str):
            return None
        reserved = gq.add_exact(reserved, q)
    if kind == MEMORY:
        reserved = gq.add_exact(reserved, evict)
    have = gq.add_exact(gq.ZERO, listed)
    node = gq.add_exact(gq.ZERO, reserved if reserved[0] else None)
    if have[0] == node[0]:
        return None
    return (f"the total amount {ks.go_quote(gq.go_quantity_string(*have))} of type "
            f"{ks.go_quote(kind)} is not equal to the value "
            f"{ks.go_quote(gq.go_quantity_string(*node))} determined by Node Allocatable "
            f"feature")
