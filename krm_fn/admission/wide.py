"""Topology Manager admission on a node with more NUMA nodes than the kubelet's built-in
bound, without enumerating every NUMA combination.

The kubelet refuses to start a Topology Manager policy on more than 8 NUMA nodes unless
`topologyManagerPolicyOptions` raises `max-allowable-numa-nodes` (KEP-4622, GA in 1.35).
With it raised, the CPU and Memory Managers still list a hint per NUMA combination
(generateCPUTopologyHints, calculateHints: 2^N - 1 masks) and the Topology Manager merges
every permutation of one hint per provider (policy.go iterateAllProviderTopologyHints): on
20 NUMA nodes about 10^6 hints per provider and 10^12 permutations. krm-fn reaches the
same merged hint without that enumeration, from what HintMerger.compare does with them:

- a preferred merged hint beats every other, and a merged hint is preferred only when
  every provider's hint is preferred and has the same mask, so the preferred merged hints
  are the masks preferred by every provider (those of the fewest NUMA nodes that can hold
  the request: C(N, k) masks for a request needing k NUMA nodes), and the best is the
  narrowest (fewest NUMA nodes, then the lowest bitmask);
- `restricted` and `single-numa-node` admit only a preferred merged hint, so when there is
  none the pod is refused whatever the other hints are (the merged mask is then left None:
  nothing reads it);
- `best-effort` with no preferred merged hint admits the best non-preferred one: with one
  provider that has masks it is that provider's narrowest hint (the lowest bitmask of the
  fewest NUMA nodes), found by trying sizes in turn; with two, the permutations' ANDs
  decide and krm-fn does not model it (`BEYOND`): the caller stops there and says so.

Each question looks at no more than LIMIT combinations: a request that needs k of N NUMA
nodes has C(N, k) candidate masks (C(24, 12) = 2.7 million), and past LIMIT the admission
is not modelled either (`Beyond`, reported as BEYOND).

Up to FULL NUMA nodes every hint is enumerated as the kubelet does (cpumanager.CpuState.hints,
memorymanager.MemState.hints, topology.merge); tests/admission/test_wide_numa.py runs both
on the same states and compares.
"""
from __future__ import annotations

from itertools import combinations
from math import comb

# the kubelet's default max-allowable-numa-nodes: with more NUMA nodes and no option, any
# topologyManagerPolicy but none stops the kubelet (topology_manager.go, KEP-4622); the one
# definition (node/plan.py, topology.max_numa read it)
KUBELET_BOUND = 8
FULL = KUBELET_BOUND    # NUMA nodes up to which every hint is enumerated
BEYOND = "BeyondModel"
LIMIT = 2**14       # NUMA combinations one question may look at


class Beyond(Exception):
    """The wide path would have to look at more than LIMIT NUMA combinations (a request
    that needs many of many NUMA nodes: C(24, 12) = 2.7 million): krm-fn does not model
    that admission. The message says how many."""


def _combinations(items: list, k: int):
    """itertools.combinations(items, k), or Beyond when there are more than LIMIT."""
    count = comb(len(items), k)
    if count > LIMIT:
        raise Beyond(f"the {count} combinations of {k} of {len(items)} NUMA nodes that "
                     f"could hold the request are more than krm-fn looks at ({LIMIT})")
    return combinations(items, k)


def is_wide(numas: list) -> bool:
    """More NUMA nodes than FULL: the hints are not enumerated."""
    return len(numas) > FULL


def _fewest(sizes: list, need: int) -> int:
    """The fewest of `sizes` (one per NUMA node) whose sum reaches `need`; len(sizes) when
    none do."""
    total = 0
    for i, v in enumerate(sorted(sizes, reverse=True)):
        total += v
        if total >= need:
            return i + 1
    return len(sizes)


def cpu_min_size(cpu, request: int) -> int:
    """CpuState._min_size without the combinations: the fewest NUMA nodes whose CPUs (free or
    not) hold `request`, else all."""
    return _fewest([len(cpu.numa_cpus[n]) for n in cpu.numas], request)


def cpu_preferred(cpu, request: int, reusable: set) -> list:
    """The preferred CPU hints (masks, frozensets) for `request` CPUs: CpuState.hints'
    preferred ones, from the combinations of the fewest NUMA nodes (and, with
    `align-by-socket`, every mask within as few sockets as those need)."""
    free = cpu.free_per_numa()
    home = {cpu.numa_of[c] for c in reusable}
    need = request - len(reusable)
    size = cpu_min_size(cpu, request)
    masks = [frozenset(c) for c in _combinations(cpu.numas, size)]
    if cpu.align_socket:
        masks += [m for m in _socket_masks(cpu, size) if len(m) != size]
    return [m for m in masks if home <= m and sum(free[n] for n in m) >= need]


def _socket_masks(cpu, size: int) -> list:
    """Every mask of NUMA nodes that spans exactly as many sockets as `size` NUMA nodes need
    (isHintSocketAligned)."""
    per = cpu.numa_per_socket
    if per == 0:
        return []
    need = -(-size // per)
    by_socket: dict = {}
    for n in cpu.numas:
        sock = cpu.info[next(iter(cpu.numa_cpus[n]))].socket if cpu.numa_cpus[n] else None
        by_socket.setdefault(sock, []).append(n)
    out = []
    for socks in _combinations(sorted(by_socket, key=str), need):
        nodes = [n for s in socks for n in by_socket[s]]
        if 2 ** len(nodes) > LIMIT:
            raise Beyond(f"the {2 ** len(nodes) - 1} masks of NUMA nodes within {need} "
                         f"socket(s) are more than krm-fn looks at ({LIMIT})")
        for k in range(1, len(nodes) + 1):
            for c in combinations(nodes, k):
                m = frozenset(c)
                if len({s for s in socks if m & set(by_socket[s])}) == need:
                    out.append(m)
    return out


def cpu_narrowest(cpu, request: int, reusable: set):
    """The CPU hint of the fewest NUMA nodes with the lowest bitmask, or None when no
    combination holds the request: the best of CpuState.hints alone."""
    free = cpu.free_per_numa()
    home = {cpu.numa_of[c] for c in reusable}
    need = request - len(reusable)
    for size in range(1, len(cpu.numas) + 1):
        found = [frozenset(c) for c in _combinations(cpu.numas, size)
                 if home <= set(c) and sum(free[n] for n in c) >= need]
        if found:
            return min(found, key=_value)
    return None


def _value(mask) -> int:
    return sum(1 << n for n in mask)


def _mem_fits(mem, combo: tuple, req: dict, reusable: dict) -> bool:
    """`combo` (NUMA ids) is a Memory Manager hint for `req` (MemState.hints): its
    allocatable holds the request, a single node is in no group, a combination of several
    holds no node used otherwise than with exactly that group, and its free memory (plus
    what the pod's init containers leave on exactly that mask) covers the request."""
    cells, count = mem.cells, mem.count
    if len(combo) == 1:
        if len(cells[combo[0]]) > 1:
            return False
    else:
        group = set(combo)
        if any(count[n] and set(cells[n]) != group for n in combo):
            return False
    reuse = reusable.get(frozenset(combo), {}) if reusable else {}
    alloc, free = mem.alloc, mem.free
    for r, v in req.items():
        if sum(alloc[n].get(r, 0) for n in combo) < v:
            return False
        if sum(free[n].get(r, 0) for n in combo) + reuse.get(r, 0) < v:
            return False
    return True


def mem_least(mem, req: dict) -> int:
    """The fewest NUMA nodes whose allocatable holds `req`, else all (MemState._holding's
    preferred size): sizes tried in turn, a size skipped when even its largest nodes per
    resource fall short; memoised per node (model.node_memo)."""
    key = ("least", tuple(sorted(req.items())))
    got = mem._cache.get(key)          # allocatable never changes: once per request
    if got is None:
        got = mem._cache[key] = _least(mem, req)
    return got


def _least(mem, req: dict) -> int:
    numas = mem.numas
    for size in range(1, len(numas) + 1):
        if any(_fewest([mem.alloc[n].get(r, 0) for n in numas], v) > size
               for r, v in req.items()):
            continue
        if any(all(sum(mem.alloc[n].get(r, 0) for n in c) >= v for r, v in req.items())
               for c in _combinations(numas, size)):
            return size
    return len(numas)


def mem_preferred(mem, req: dict, reusable: dict) -> list:
    """The preferred Memory Manager hints (frozensets) for `req`: the combinations of
    mem_least NUMA nodes that are hints."""
    size = mem_least(mem, req)
    return [frozenset(c) for c in _combinations(mem.numas, size)
            if _mem_fits(mem, c, req, reusable)]


def mem_any(mem, req: dict, reusable: dict) -> bool:
    """Whether the Memory Manager has any hint for `req`. A hint avoids every used node or
    is a used node's very group or single node, so one exists exactly when one of these
    does: all the unused nodes together (free memory only grows with more nodes), a group
    in use, a node used alone, or a mask the pod's init containers left memory on."""
    unused = tuple(n for n in mem.numas if not mem.count[n])
    candidates = {unused} if unused else set()
    for n in mem.numas:
        if mem.count[n]:
            candidates.add(tuple(sorted(mem.cells[n])))
    for mask in (reusable or {}):
        candidates.add(tuple(sorted(mask)))
    return any(_mem_fits(mem, c, req, reusable) for c in candidates)


def mem_best(mem, req: dict, reusable: dict, within=frozenset()):
    """MemState._best over the hints that hold `within`: (mask, preferred) of the fewest
    NUMA nodes with the lowest bitmask (a hint of mem_least nodes is preferred, and no
    hint has fewer), or None. Sizes are tried in turn from len(within)."""
    least = mem_least(mem, req)
    rest = [n for n in mem.numas if n not in within]
    for size in range(max(1, len(within)), len(mem.numas) + 1):
        found = [tuple(sorted((*within, *c)))
                 for c in _combinations(rest, size - len(within))]
        found = [c for c in found if _mem_fits(mem, c, req, reusable)]
        if found:
            return frozenset(min(found, key=_value)), size == least
    return None


def merge(st, pol: str, ncpu: int, reuse_cpu: set, mreq: dict, reuse_mem: dict,
          use_mem: bool):
    """topology.merge of the CPU and Memory Managers' hints on a wide node (is_wide), as
    (mask or None, preferred, admit), or BEYOND where krm-fn does not model the merge
    (best-effort, no preferred merged hint, both providers with hints). `pol` is
    best-effort, restricted or single-numa-node."""
    from krm_fn.admission.topology import BEST_EFFORT, SINGLE
    default = frozenset(st.cpu.numas)
    preferred, masked, no_hint = [], [], False
    if ncpu:
        if len(st.cpu.free) + len(reuse_cpu) >= ncpu:
            preferred.append(cpu_preferred(st.cpu, ncpu, reuse_cpu))
            masked.append("cpu")
        else:
            no_hint = True          # filterProvidersHints: [(None, False)]
    if use_mem and st.mem is not None and mreq and mem_any(st.mem, mreq, reuse_mem):
        preferred.append(mem_preferred(st.mem, mreq, reuse_mem))
        masked.append("mem")
    if not no_hint:
        sets = [set(p) for p in preferred]
        if pol == SINGLE:
            sets = [{m for m in s if len(m) == 1} for s in sets]
        both = set.intersection(*sets) if sets else {default}
        if both:
            best = min(both, key=lambda m: (len(m), _value(m)))
            return (None if pol == SINGLE and best == default else best), True, True
    if pol != BEST_EFFORT:
        return None, False, False       # refused: which non-preferred hint wins is moot
    if not masked:
        return default, False, True
    if len(masked) > 1:
        return BEYOND
    if masked[0] == "cpu":
        return cpu_narrowest(st.cpu, ncpu, reuse_cpu), False, True
    return mem_best(st.mem, mreq, reuse_mem)[0], False, True
