"""The kubelet's CPU assignment: which CPUs the static CPU Manager takes for a request.

A port of kubernetes/kubernetes pkg/kubelet/cm/cpumanager/cpu_assignment.go (the
cpuAccumulator, takeByTopologyNUMAPacked, takeByTopologyNUMADistributed) over the CPU
topology the kubelet discovers (cpumanager/topology/topology.go), at v1.35.4, v1.36.3 and
v1.37.2: the releases differ only in takeByTopologyNUMADistributed, where 1.37 adds
`align-by-socket` (a combination of NUMA nodes within one socket first; no NUMA node asked
for more whole CPU groups than it has). Every step keeps the upstream order, so that the
same free CPUs give the same CPUs: the kubelet harness (tests/harness) checks it against
the kubelet's code.
"""
from __future__ import annotations

from math import sqrt, trunc


class AssignmentError(Exception):
    """takeByTopology's error, with the kubelet's message."""


def _not_enough(n: int, avail) -> AssignmentError:
    return AssignmentError(f"not enough cpus available to satisfy request: requested={n}, "
                           f"available={len(avail)}")


def _quiet(take, avail, n: int) -> set:
    """`take(avail, n)`, or no CPU on an error (the kubelet's `cpus, _ :=`)."""
    try:
        return take(avail, n)
    except AssignmentError:
        return set()


class _Slice:
    """A Go slice of ints: `length` items of the backing array `array`, which later appends
    to another slice of the same array may overwrite (read it with tuple())."""

    __slots__ = ("array", "length")

    def __init__(self, array: list, length: int):
        self.array, self.length = array, length

    def __iter__(self):
        return iter(self.array[:self.length])

    def __len__(self) -> int:
        return self.length


def _iterate_combinations(items: list, k: int):
    """cpuAccumulator.iterateCombinations: the `k`-subsets of `items` in lexicographic order
    of positions, each as the Go slice the kubelet hands its callback. It builds them with
    `append(accum, n[i])` from an empty slice, and append writes in place while the
    backing array has room (capacities 1, 2, 4, 8, ...: growslice), so the subsets of one
    prefix share an array: for k = 4 the 4th item of every subset with the same first 3 is
    the same slot, and a subset kept for later (bestCombo, bestRemainder) holds what the
    last of them wrote there. Yields _Slice views of those arrays."""
    if k < 1:
        return

    def helper(k: int, start: int, array: list, length: int, cap: int):
        if k == 0:
            yield _Slice(array, length)
            return
        for i in range(start, len(items) - k + 1):
            if length < cap:
                array[length] = items[i]
                grown, room = array, cap
            else:
                room = max(1, cap * 2)
                grown = array[:length] + [items[i]] + [None] * (room - length - 1)
            yield from helper(k - 1, i + 1, grown, length + 1, room)

    yield from helper(k, 0, [], 0, 0)


def _go_round(x: float) -> float:
    """Go math.Round: half away from zero."""
    t = trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return float(t)


def _std_dev(values: list) -> float:
    """cpu_assignment.go standardDeviation: of the mean rounded to 3 decimals, itself rounded
    to 3 decimals (float64, as Go computes it)."""
    count = len(values)
    m = _go_round(sum(float(x) for x in values) / count * 1000) / 1000
    total = 0.0
    for x in values:
        total += (x - m) * (x - m)
    return _go_round(sqrt(total / count) * 1000) / 1000


class CPUTopology:
    """The kubelet's CPUTopology of a node and the static policy's options that decide which
    CPUs it takes (cpumanager/topology/topology.go Discover; policy_static.go takeByTopology).

    As cadvisor reports a machine, a core is the threads of one physical core on one NUMA
    node, and its id is its lowest CPU id (topology.go getUniqueCoreID); CPUsPerCore,
    CPUsPerSocket and CPUsPerUncore divide the node's CPU count by the count of cores,
    sockets and uncore caches. krm-fn's topology does not describe L3 caches, so each socket
    is one uncore cache, as the kubelet takes it when cadvisor reports none
    (topology.go getUncoreCacheID).

    `cpus`: the node's Cpu rows (krm_fn.node.topology.Cpu); `version`: (major, minor);
    `options`: {cpuManagerPolicyOptions name: bool}."""

    def __init__(self, cpus, version: tuple, options: dict):
        groups: dict = {}
        for c in sorted(cpus):
            groups.setdefault((c.numa, c.socket, c.core), []).append(c.cpu)
        self.core_of, self.core_numa, self.core_socket = {}, {}, {}
        self.core_cpus, self.core_list = {}, {}
        numa_cpus: dict = {}
        socket_cpus: dict = {}
        for (numa, socket, _), threads in groups.items():
            core = min(threads)
            self.core_numa[core], self.core_socket[core] = numa, socket
            self.core_cpus[core] = frozenset(threads)
            self.core_list[core] = sorted(threads)
            for c in threads:
                self.core_of[c] = core
            numa_cpus.setdefault(numa, set()).update(threads)
            socket_cpus.setdefault(socket, set()).update(threads)
        self.numa_cpus = {n: frozenset(v) for n, v in numa_cpus.items()}
        self.socket_cpus = {s: frozenset(v) for s, v in socket_cpus.items()}
        self.socket_list = {s: sorted(v) for s, v in socket_cpus.items()}
        self.num_cpus = len(self.core_of)
        self.per_core = self.num_cpus // max(1, len(groups))
        self.per_socket = self.num_cpus // max(1, len(socket_cpus))
        self.per_uncore = self.per_socket                   # one uncore cache per socket
        self.num_numa = len(numa_cpus)
        # numaFirst when sockets >= NUMA nodes, else socketsFirst (newCPUAccumulator)
        self.sockets_first = len(socket_cpus) < len(numa_cpus)
        self.spread = options.get("distribute-cpus-across-cores", False)
        self.distribute = options.get("distribute-cpus-across-numa", False)
        self.group = self.per_core if options.get("full-pcpus-only") else 1
        self.uncore = options.get("prefer-align-cpus-by-uncorecache", False)
        self.align_socket = options.get("align-by-socket", False)
        self.v137 = tuple(version) >= (1, 37)

    def same_socket(self, numas) -> bool:
        """CPUDetails.AreNUMANodesInSameSocket."""
        if any(n not in self.numa_cpus for n in numas):
            return False
        cs, co = self.core_socket, self.core_of
        return len({cs[co[c]] for n in numas for c in self.numa_cpus[n]}) <= 1

    def take_by_topology(self, avail, n: int):
        """policy_static.go takeByTopology: `n` CPUs of `avail`, by
        takeByTopologyNUMADistributed under `distribute-cpus-across-numa` (CPU groups of the
        threads per core under `full-pcpus-only`, else 1), else takeByTopologyNUMAPacked;
        CPUSortingStrategySpread under `distribute-cpus-across-cores`. Raises
        AssignmentError."""
        if self.distribute:
            return self.distributed(avail, n, self.group)
        return self.packed(avail, n, self.uncore)

    def packed(self, avail, n: int, uncore: bool):
        """cpu_assignment.go takeByTopologyNUMAPacked: whole NUMA nodes and sockets (the
        larger first: takeFullFirstLevel, takeFullSecondLevel), whole uncore caches or the
        fewest of them (takeUncoreCache, with `prefer-align-cpus-by-uncorecache`), whole
        cores (takeFullCores, not with the spread strategy), then single CPUs
        (takeRemainingCPUs). Raises AssignmentError."""
        acc = Accumulator(self, avail, n)
        if acc.need < 1:
            return acc.result
        if acc.need > len(acc.avail):
            raise _not_enough(n, avail)
        levels = [acc.take_full_numa_nodes, acc.take_full_sockets]
        if self.sockets_first:
            levels.reverse()
        if uncore:
            levels.append(acc.take_uncore_cache)
        if not self.spread:
            levels.append(acc.take_full_cores)
        for step in levels:
            step()
            if acc.need < 1:
                return acc.result
        acc.take_remaining_cpus()
        if acc.need < 1:
            return acc.result
        raise AssignmentError("failed to allocate cpus")

    def distributed(self, avail, n: int, group: int):
        """cpu_assignment.go takeByTopologyNUMADistributed (KEP-2902): the fewest NUMA nodes
        (rangeNUMANodesNeededToSatisfy) over which `n` CPUs spread evenly in groups of
        `group` (_best_combination), each part then taken packed from its NUMA node
        (_take_distribution), the NUMA nodes being those the kept Go slices hold at the end
        (_iterate_combinations). Packed when `n` is not a multiple of `group` or no combination
        balances. Raises AssignmentError."""
        if n % group:
            return self.packed(avail, n, False)
        acc = Accumulator(self, avail, n)
        if acc.need < 1:
            return acc.result
        if acc.need > len(acc.avail):
            raise _not_enough(n, avail)
        numas = acc.numa_nodes()
        low, high = acc.numa_range(group)
        for k in range(low, high + 1):
            best = self._best_combination(numas, acc.counts()[1], k, n, group)
            if best is not None:
                return self._take_distribution(acc, best[1], best[0], n, group)
        return self.packed(avail, n, False)

    def _best_combination(self, numas: list, have: dict, k: int, n: int, group: int):
        """(remainder NUMA nodes, combination) of the `k` NUMA nodes of `numas` (in
        iterateCombinations order) that take `n` CPUs as an even share of whole groups each
        plus remainder groups and leave the lowest standardDeviation of available CPUs per
        NUMA node (the first on a tie; a balance of 0 ends the search); None when none can.
        From 1.37, with `align-by-socket`, a combination within one socket beats any other
        and a share never exceeds what a NUMA node has in whole groups. `have`: {NUMA node:
        available CPUs}."""
        align = self.align_socket and self.v137
        best, best_balance, best_one = None, float("inf"), False
        for view in _iterate_combinations(numas, k):
            if best_balance == 0 and (not align or best_one):
                break
            combo = tuple(view)
            if sum(have[x] for x in set(combo)) < n:
                continue
            if sum(have[x] // group for x in combo) * group < n:
                continue
            share = n // len(combo) // group * group
            if align:
                share = min([share] + [have[x] // group * group for x in combo])
            if any(have[x] < share for x in combo):
                continue
            after = {x: have[x] for x in numas}
            for x in combo:
                after[x] -= share
            left = n - share * len(combo)
            if left == 0:
                local, local_rest = _std_dev(list(after.values())), None
            else:
                local, local_rest = _remainder(after, [x for x in combo if after[x] >= group],
                                               left, group)
            one = align and self.same_socket(combo)
            better = local < best_balance
            if align and one != best_one:
                better = one
            if better:
                best, best_balance, best_one = (local_rest, view), local, one
        return None if best is None else (best[0], tuple(best[1]))

    def _take_distribution(self, acc: "Accumulator", combo: tuple, rest_numas, n: int,
                           group: int):
        """The even share from each NUMA node of `combo`, then one group at a time from
        those of `rest_numas` in turn until `n`, each taken packed (a part that cannot be
        taken is none). Raises AssignmentError on the kubelet's accounting errors, and where
        the kubelet would loop forever."""
        share = n // len(combo) // group * group
        if self.v137:
            share = min([share] + [len(acc.avail & self.numa_cpus[x]) // group * group
                                   for x in combo])
        packed = self._packed_plain
        for x in combo:
            acc.take(_quiet(packed, acc.avail & self.numa_cpus[x], share))
        left = n - share * len(combo)
        while left > 0:
            before = left
            for x in rest_numas or ():
                if left == 0:
                    break
                part = acc.avail & self.numa_cpus[x]
                if len(part) < group:
                    continue
                acc.take(_quiet(packed, part, group))
                left -= group
            if left == before:
                raise AssignmentError("no NUMA node left for the remainder (the kubelet "
                                      "loops forever here)")
        if acc.need > 0:
            raise AssignmentError(f"accounting error, not enough CPUs allocated, remaining: "
                                  f"{acc.need}")
        if acc.need < 0:
            raise AssignmentError(f"accounting error, too many CPUs allocated, remaining: "
                                  f"{acc.need}")
        return acc.result

    def _packed_plain(self, avail, n: int):
        """takeByTopologyNUMAPacked without uncore-cache alignment (as
        takeByTopologyNUMADistributed calls it)."""
        return self.packed(avail, n, False)


def _remainder(after: dict, spare: list, left: int, group: int) -> tuple:
    """(balance, subset) of the subset of `spare` (the largest subsets first, each size in
    iterateCombinations order) that takes `left` CPUs, a group from each in turn, leaving
    the lowest standardDeviation of `after` {NUMA node: available CPUs after the shares},
    the subset as its Go slice holds it at the end; (inf, None) when none can."""
    local, local_rest = float("inf"), None
    for size in range(len(spare), 0, -1):
        for view in _iterate_combinations(spare, size):
            subset = tuple(view)
            rest, trial = left, dict(after)
            if sum(trial[x] for x in subset) < rest:
                continue
            while rest > 0:
                before = rest
                for x in subset:
                    if rest == 0:
                        break
                    if trial[x] < group:
                        continue
                    trial[x] -= group
                    rest -= group
                if rest == before:                  # the kubelet loops forever here
                    break
            balance = _std_dev(list(trial.values()))
            if balance < local:
                local, local_rest = balance, view
    return local, None if local_rest is None else tuple(local_rest)


def _ranked(ids, have: dict) -> list:
    """cpuAccumulator.sort: the fewest available CPUs (`have`) first, then by id."""
    return sorted(ids, key=lambda i: (have[i], i))


def _nested(order: list, cores: dict, of_core, have: dict) -> list:
    """For each element of `order` in turn, the ids (`of_core[core]`, or the cores
    themselves when None) of its cores with an available CPU (`cores`), ranked by `have`;
    concatenated, an id that two elements hold coming twice, as upstream lists it."""
    out: list = []
    for outer in order:
        ids = cores[outer] if of_core is None else {of_core[k] for k in cores[outer]}
        out += _ranked(ids, have)
    return out


class Accumulator:
    """cpu_assignment.go cpuAccumulator: `avail` (its `details`: the CPUs still free to
    take), `need` (numCPUsNeeded), `result`. The sort orders put the element with the
    fewest available CPUs first, ties by id (cpuAccumulator.sort); NUMA nodes before sockets
    when a socket holds several NUMA nodes (socketsFirst), else sockets within NUMA nodes
    (numaFirst)."""

    __slots__ = ("t", "avail", "need", "result", "_counts")

    def __init__(self, topo: CPUTopology, avail, need: int):
        self.t, self.avail, self.need, self.result = topo, set(avail), need, set()
        self._counts = None

    def take(self, cpus) -> None:
        """cpuAccumulator.take."""
        self.result |= cpus
        self.avail -= cpus
        self.need -= len(cpus)
        self._counts = None

    def counts(self) -> tuple:
        """({core: available CPUs}, {NUMA node: available CPUs}, {socket: available CPUs},
        {NUMA node: [cores with an available CPU]}, {socket: [those cores]})."""
        got = self._counts
        if got is None:
            core_of, cn, cs = self.t.core_of, self.t.core_numa, self.t.core_socket
            per_core: dict = {}
            for c in self.avail:
                k = core_of[c]
                per_core[k] = per_core.get(k, 0) + 1
            per_numa: dict = {}
            per_socket: dict = {}
            numa_cores: dict = {}
            socket_cores: dict = {}
            for k, v in per_core.items():
                n, s = cn[k], cs[k]
                per_numa[n] = per_numa.get(n, 0) + v
                per_socket[s] = per_socket.get(s, 0) + v
                numa_cores.setdefault(n, []).append(k)
                socket_cores.setdefault(s, []).append(k)
            got = self._counts = (per_core, per_numa, per_socket, numa_cores, socket_cores)
        return got

    def numa_nodes(self) -> list:
        """sortAvailableNUMANodes."""
        _, per_numa, _, _, socket_cores = self.counts()
        if not self.t.sockets_first:
            return _ranked(per_numa, per_numa)
        return _nested(self.sockets(), socket_cores, self.t.core_numa, per_numa)

    def sockets(self) -> list:
        """sortAvailableSockets."""
        _, _, per_socket, numa_cores, _ = self.counts()
        if self.t.sockets_first:
            return _ranked(per_socket, per_socket)
        return _nested(self.numa_nodes(), numa_cores, self.t.core_socket, per_socket)

    def cores(self) -> list:
        """sortAvailableCores: the cores of each NUMA node (socketsFirst) or socket
        (numaFirst) in that order, each group by available CPUs, then core id."""
        per_core, _, _, numa_cores, socket_cores = self.counts()
        if self.t.sockets_first:
            return _nested(self.numa_nodes(), numa_cores, None, per_core)
        return _nested(self.sockets(), socket_cores, None, per_core)

    def uncore_caches(self) -> list:
        """sortAvailableUncoreCaches: per NUMA node in order, its uncore caches (sockets)."""
        _, _, per_socket, numa_cores, _ = self.counts()
        return _nested(self.numa_nodes(), numa_cores, self.t.core_socket, per_socket)

    def _take_whole(self, ids: list, have: dict, whole: dict, size: int = 0) -> None:
        """Each free element of `ids` (in order) while at least its CPUs are needed: free
        when `have` (its available CPUs) is `size`, or all of its CPUs when `size` is 0;
        taken as all its CPUs `whole` (freeNUMANodes/freeSockets/freeCores/freeUncoreCache
        with takeFullNUMANodes/takeFullSockets/takeFullCores/takeFullUncore)."""
        for i in [i for i in ids if have[i] == (size or len(whole[i]))]:
            if self.need >= len(whole[i]):
                self.take(whole[i])

    def take_full_numa_nodes(self) -> None:
        """takeFullNUMANodes."""
        self._take_whole(self.numa_nodes(), self.counts()[1], self.t.numa_cpus)

    def take_full_sockets(self) -> None:
        """takeFullSockets (a socket is free with CPUsPerSocket available)."""
        self._take_whole(self.sockets(), self.counts()[2], self.t.socket_cpus,
                         self.t.per_socket)

    def take_full_cores(self) -> None:
        """takeFullCores (a core is free with CPUsPerCore available)."""
        self._take_whole(self.cores(), self.counts()[0], self.t.core_cpus, self.t.per_core)

    def take_full_uncore(self) -> None:
        """takeFullUncore (an uncore cache is a socket)."""
        self._take_whole(self.uncore_caches(), self.counts()[2], self.t.socket_cpus)

    def take_partial_uncore(self, uncore: int) -> None:
        """takePartialUncore: the lowest-numbered cores of the uncore cache with an available
        CPU, as many as the CPUs needed fill (an odd need with SMT drops the highest CPU),
        taken only when they give exactly the CPUs needed."""
        t, need = self.t, self.need
        per = t.per_core
        wanted = (need + per - 1) // per
        cores = sorted(k for k in self.counts()[0] if t.core_socket[k] == uncore)[:wanted]
        avail = self.avail
        free = sorted(c for k in cores for c in t.core_list[k] if c in avail)
        if need % 2 and per > 1 and len(free) > need:
            free = free[:-1]
        if need == len(free):
            self.take(set(free))

    def take_uncore_cache(self) -> None:
        """takeUncoreCache."""
        for uncore in self.uncore_caches():
            if self.need >= self.t.per_uncore:
                self.take_full_uncore()
            if self.need < 1:
                return
            self.take_partial_uncore(uncore)
            if self.need < 1:
                return

    def take_remaining_cpus(self) -> None:
        """takeRemainingCPUs: one CPU at a time in sortAvailableCPUsPacked order (the CPUs of
        each core of sortAvailableCores by id), or sortAvailableCPUsSpread (the CPUs of each
        socket of sortAvailableSockets by id)."""
        avail, t = self.avail, self.t
        order = []
        if t.spread:
            for s in self.sockets():
                order += [c for c in t.socket_list[s] if c in avail]
        else:
            for k in self.cores():
                order += [c for c in t.core_list[k] if c in avail]
        result = self.result
        for c in order:
            result.add(c)
            avail.discard(c)
            self.need -= 1
            if self.need < 1:
                break
        self._counts = None

    def numa_range(self, group: int) -> tuple:
        """rangeNUMANodesNeededToSatisfy."""
        t = self.t
        groups = (t.num_cpus - 1) // group + 1
        per_numa = (groups - 1) // t.num_numa + 1
        needed = (self.need - 1) // group + 1
        return (needed - 1) // per_numa + 1, min(needed, len(self.counts()[1]))
