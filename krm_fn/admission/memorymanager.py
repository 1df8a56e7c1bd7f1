"""The kubelet's Memory Manager, `Static` policy: per-NUMA memory and hugepages.

Source: kubernetes/kubernetes pkg/kubelet/cm/memorymanager/policy_static.go
(GetTopologyHints, calculateHints, isHintPreferred, Allocate, getDefaultHint,
extendTopologyManagerHint, getRequestedResources, pod reusable memory of init containers)
and https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/.

Rules modelled: only Guaranteed pods are handled (others get no hints and no NUMA
pinning); a pod with pod-level resources is skipped like by the CPU Manager; per NUMA node
allocatable = capacity (`node.numa_memory`) minus `reservedMemory` of that NUMA node, and
for `memory` also minus the hugepages pre-allocated there (getDefaultMachineState); the
resources are `memory` and `hugepages-<size>`; a hint is a NUMA combination whose
allocatable covers the request (that decides the preferred size) and whose free memory
covers it; a NUMA node used alone cannot join a group later, and a node of a group can only
be used with exactly that group again.
"""
from __future__ import annotations

from itertools import combinations

from krm_fn.admission import wide
from krm_fn.admission.model import APP, AdmittedPod, Container, NodeModel, node_memo
from krm_fn.admission.cpumanager import peak

MM_SRC = "kubernetes/kubernetes pkg/kubelet/cm/memorymanager/policy_static.go"
MM_DOCS = "https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/"


def is_static(node: NodeModel) -> bool:
    """`memoryManagerPolicy: Static` (capitalised; default `None`)."""
    return (node.kubelet or {}).get("memoryManagerPolicy", "None") == "Static"


def _bytes(value) -> int:
    if isinstance(value, int):
        return value
    from krm_fn.quantity import parse_memory
    return parse_memory(value).whole


def reserved_memory(node: NodeModel) -> dict:
    """{NUMA id: {resource: bytes}} from `reservedMemory` of the merged
    KubeletConfiguration ([{numaNode, limits: {resource: quantity}}]). Raises
    krm_fn.quantity.QuantityError for a malformed quantity."""
    out: dict = {}
    for entry in (node.kubelet or {}).get("reservedMemory") or []:
        limits = out.setdefault(int(entry.get("numaNode", 0)), {})
        for res, q in (entry.get("limits") or {}).items():
            limits[res] = limits.get(res, 0) + _bytes(q)
    return out


def requested(container: Container) -> dict:
    """{resource: bytes} of `memory` and `hugepages-*` the container requests
    (getRequestedResources)."""
    return {r: int(v) for r, v in container.requests.items()
            if (r == "memory" or r.startswith("hugepages-")) and v}


def pod_requested(pod: AdmittedPod) -> dict:
    """{resource: bytes} the pod holds at its peak (getPodRequestedResources: the larger
    of the largest init container and the sum of app containers plus sidecars), for the
    resources the app containers request only: a resource only init containers or
    sidecars ask for is not in the pod's request (its loop runs over the app
    containers' resources), so the pod's hints leave it out."""
    names = {r for c in pod.containers if c.role == APP for r in requested(c)}
    return {r: peak([(c.role, requested(c).get(r, 0)) for c in pod.containers])
            for r in sorted(names)}


def _allocatable(capacity: dict, reserved: dict) -> dict:
    """{resource: bytes} allocatable on one NUMA node (getDefaultMachineState): each
    resource's capacity minus its reservedMemory; `memory` also minus the hugepages
    pre-allocated on that NUMA node ("remove memory allocated by hugepages")."""
    out = {r: max(0, int(v) - reserved.get(r, 0)) for r, v in capacity.items()}
    pages = sum(int(v) for r, v in capacity.items() if r.startswith("hugepages-"))
    if "memory" in out:
        out["memory"] = max(0, out["memory"] - pages)
    return out


# Memory per NUMA node of a pool that does not describe its memory: the Memory Manager's
# hints still count under `Static` (its preferred hints are the fewest NUMA nodes that
# hold the request, which changes what restricted and single-numa-node admit), but memory
# itself is then never what runs out.
AMPLE = 2**50


class MemState:
    """Per-NUMA memory state of one node under `Static` (AMPLE memory on each NUMA node
    when the pool does not describe it): `alloc` and `free` {NUMA id: {resource: bytes}}, `cells` {NUMA id: tuple of the group it is allocated
    with}, `count` {NUMA id: allocations}. `numas` and `alloc` are the node's, made once
    per NodeModel (model.node_memo) and shared by every copy."""

    def __init__(self, node: NodeModel):
        memo = node_memo(node)
        if "mem" not in memo:
            reserved = reserved_memory(node)
            per_numa = node.numa_memory or {n: {"memory": AMPLE} for n in node.numa_nodes}
            numas = sorted(int(n) for n in per_numa)
            memo["mem"] = (numas, {n: _allocatable(per_numa[n], reserved.get(n, {}))
                                   for n in numas}, {})
        self.numas, self.alloc, self._cache = memo["mem"]
        self.free = {n: dict(v) for n, v in self.alloc.items()}
        self.cells = {n: (n,) for n in self.numas}
        self.count = {n: 0 for n in self.numas}

    def copy(self) -> "MemState":
        """An independent copy."""
        new = object.__new__(MemState)
        new.numas, new.alloc, new._cache = self.numas, self.alloc, self._cache
        new.free = {n: dict(v) for n, v in self.free.items()}
        new.cells, new.count = dict(self.cells), dict(self.count)
        return new

    def _combos(self) -> list:
        """[(NUMA ids, frozenset, bitmask)] of every NUMA combination, fewest first, in
        itertools.combinations order (bit i of the bitmask is NUMA node numas[i]); made on
        the node's first hints (model.node_memo)."""
        out = self._cache.get("combos")
        if out is None:
            numas, bit = self.numas, self._bits()
            out = self._cache["combos"] = [(combo, frozenset(combo), sum(bit[n] for n in combo))
                                           for size in range(1, len(numas) + 1)
                                           for combo in combinations(numas, size)]
        return out

    def _bits(self) -> dict:
        """{NUMA id: its bit in a NUMA combination's bitmask} (bit i for numas[i]), once per
        node."""
        bit = self._cache.get("bits")
        if bit is None:
            bit = self._cache["bits"] = {n: 1 << i for i, n in enumerate(self.numas)}
        return bit

    def _holding(self, req: dict) -> tuple:
        """(the fewest NUMA nodes whose allocatable holds `req`, else all; the combinations
        (NUMA ids, frozenset, bitmask, (frozenset, preferred: as few NUMA nodes as
        that)) whose allocatable holds it, fewest first):
        allocatable does not change, so once per request and node."""
        key = ("holding", tuple(sorted(req.items())))
        out = self._cache.get(key)
        if out is None:
            holds = [row for row in self._combos()
                     if all(self._total(self.alloc, row[1], r) >= v for r, v in req.items())]
            least = min((len(row[0]) for row in holds), default=len(self.numas))
            holds = [(combo, mask, bits, (mask, len(combo) == least))
                     for combo, mask, bits in holds]
            out = self._cache[key] = (least, holds)
        return out

    def _total(self, table, mask, res) -> int:
        return sum(table[n].get(res, 0) for n in mask)

    def _sums(self, res: str) -> list:
        """Free bytes of `res` of every NUMA combination, indexed by its bitmask: one table
        of subset sums (2^NUMA additions)."""
        sums = [0]
        free = self.free
        for n in self.numas:
            v = free[n].get(res, 0)
            sums += [s + v for s in sums]
        return sums

    def hints(self, req: dict, reusable: dict) -> dict:
        """{resource: [(NUMA frozenset, preferred)]} (calculateHints); {} when no NUMA
        combination can hold `req` (the Topology Manager then treats memory as "don't
        care" and Allocate fails). `reusable`: {mask: {resource: bytes}} of the pod's init
        containers. A NUMA node already used serves only its own group
        (isAffinityViolatingNUMAAllocations): a single node of a group is no hint, and a
        combination of several nodes that holds a used node is one only when it is that
        node's very group."""
        if not req:
            return {}
        cells, count, bit = self.cells, self.count, self._bits()
        used = grouped = 0
        cell_bits = {}
        for n in self.numas:
            if count[n]:
                used |= bit[n]
                cell_bits[n] = sum(bit[m] for m in cells[n])
            if len(cells[n]) > 1:
                grouped |= bit[n]
        # the groups every used node of which is allocated with exactly that group
        groups = {g for g in cell_bits.values()
                  if all(b == g for n, b in cell_bits.items() if g & bit[n])}
        rows = self._allowed(req, used, grouped, frozenset(groups))
        for r, v in req.items():
            sums = self._sums(r)
            if reusable:
                rows = [row for row in rows
                        if sums[row[2]] + reusable.get(row[1], {}).get(r, 0) >= v]
            else:
                rows = [row for row in rows if sums[row[2]] >= v]
        if not rows:
            return {}
        found = [row[3] for row in rows]
        return {r: found for r in req}

    def _allowed(self, req: dict, used: int, grouped: int, groups: frozenset) -> list:
        """The rows of _holding(req) that the NUMA nodes' use leaves open: a single node
        not in a group (`grouped` bitmask), a combination of several nodes that holds no
        used node (`used` bitmask) or is one of `groups`; memoised per node on the
        request and the three, which change only when a NUMA node is first used."""
        key = ("allowed", tuple(sorted(req.items())), used, grouped, groups)
        rows = self._cache.get(key)
        if rows is None:
            rows = self._cache[key] = [
                row for row in self._holding(req)[1]
                if (not row[2] & grouped if len(row[0]) == 1
                    else not row[2] & used or row[2] in groups)]
        return rows

    def _best(self, hints: list, within=None):
        """findBestHint: preferred first, then fewest NUMA nodes, then lowest bitmask."""
        pool = [h for h in hints if within is None or within <= h[0]]
        if not pool:
            return None
        return min(pool, key=lambda h: (not h[1], len(h[0]), sum(1 << n for n in h[0])))

    def _violates(self, mask) -> bool:
        """isAffinityViolatingNUMAAllocations: a mask of several NUMA nodes that holds one
        already used alone, or with another group (a NUMA node serves either single- or
        cross-NUMA allocations, https://kubernetes.io/blog/2021/08/11/kubernetes-1-22-feature-memory-manager-moves-to-beta/#single-vs-cross-numa-node-allocation)."""
        if len(mask) == 1:
            return False
        return any(self.count[n] and (len(self.cells[n]) == 1 or set(self.cells[n]) != mask)
                   for n in mask)

    def allocate(self, req: dict, mask, preferred: bool, reusable: dict):
        """Reserve `req` on the NUMA nodes of `mask` (the Topology Manager's hint; None =
        no affinity). Returns (NUMA frozenset used, "") or (None, error message) the way
        Allocate fails: "[memorymanager] failed to find the default preferred hint" /
        "... to extend the current topology hint" / "[memorymanager] preferred hint violates
        NUMA node allocation"."""
        if not req:
            return frozenset(), ""
        hints = None            # calculateHints, only when the choice needs them
        if wide.is_wide(self.numas):
            def best(within=None):
                return wide.mem_best(self, req, reusable, within or frozenset())
        else:
            def best(within=None):
                nonlocal hints
                if hints is None:
                    per_resource = self.hints(req, reusable)
                    hints = per_resource.get("memory") or next(iter(per_resource.values()),
                                                                [])
                return self._best(hints, within)
        chosen = (mask, preferred) if mask is not None else best()
        if chosen is None:
            return None, ("[memorymanager] failed to get the default NUMA affinity, no NUMA "
                          "nodes with enough memory is available")
        if mask is None and preferred and not chosen[1]:
            return None, "[memorymanager] failed to find the default preferred hint"
        # isAffinitySatisfyRequest counts free memory only, not the pod's reusable memory
        # of its init containers (calculateHints, and so the extension, count both)
        if any(self._total(self.free, chosen[0], r) < v for r, v in req.items()):
            ext = best(chosen[0])
            if ext is None:
                return None, ("[memorymanager] failed to find NUMA nodes to extend the "
                              "current topology hint")
            if chosen[1] and not ext[1]:
                return None, "[memorymanager] failed to find the extended preferred hint"
            chosen = ext
        if self._violates(chosen[0]):
            return None, "[memorymanager] preferred hint violates NUMA node allocation"
        nodes = sorted(chosen[0])
        reuse = reusable.get(chosen[0], {})
        for r, v in req.items():
            need = max(0, v - reuse.get(r, 0))
            for n in nodes:
                got = min(need, self.free[n].get(r, 0))
                self.free[n][r] = self.free[n].get(r, 0) - got
                need -= got
        for n in nodes:
            self.count[n] += 1
            self.cells[n] = tuple(nodes)
        return frozenset(nodes), ""


def note_reuse(reusable: dict, mask, req: dict, init: bool) -> None:
    """Update the pod's reusable memory {mask: {resource: bytes}} after a container got
    `req` on `mask`: a regular init container's memory becomes reusable by later
    containers on the same NUMA nodes; a later container consumes it."""
    slot = reusable.setdefault(frozenset(mask), {})
    for r, v in req.items():
        slot[r] = max(slot.get(r, 0), v) if init else max(0, slot.get(r, 0) - v)
