"""CPU topology of a node pool, reserved-core selection and Linux cpuset list strings.

Numbering (the OpenShift Performance Profile Creator's reserved selection,
openshift/cluster-node-tuning-operator
pkg/performanceprofile/profilecreator/profilecreator.go; Linux x86 enumeration):

- Physical cores are numbered 0..C-1, C = sockets * cores_per_socket, socket-major: cores
  0..cores_per_socket-1 are on socket 0, and so on.
- Each socket holds `numa_per_socket` NUMA nodes of `cores_per_socket // numa_per_socket`
  consecutive cores; NUMA node id = socket * numa_per_socket + core_in_socket // cores_per_numa.
- Logical CPU of SMT thread t (0..T-1) on core c:
  `split` (Linux x86 default, CPU i and i+C are siblings): c + t*C;
  `adjacent` (siblings 2i and 2i+1 when T == 2): c*T + t.

Cpuset strings are the Linux cpuset "list format" (`0-2,5,32-33`), which is what the
kubelet's `reservedSystemCPUs` field takes (parsed by k8s.io/utils/cpuset;
https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Iterable

from krm_fn.matching import digits

SIBLING_MODES = ("split", "adjacent")

# Largest number of logical CPUs krm-fn accepts on a node: CPU ids are 0..MAX_CPUS-1. Linux
# CONFIG_NR_CPUS goes up to 8192; twice that leaves headroom and keeps a cpuset such as
# "0-99999999999" from being expanded into billions of ids.
MAX_CPUS = 16384


Cpu = namedtuple("Cpu", "cpu core socket numa")
Cpu.__doc__ = """One logical CPU: `Cpu(cpu, core, socket, numa)`, its logical CPU id, physical
core id, socket id and NUMA node id (all ints)."""


class Topology(namedtuple("Topology", "sockets numa_per_socket cores_per_socket "
                          "threads_per_core siblings table", defaults=("split", ()))):
    """CPU topology of every node in a pool.

    Fields: `sockets`, `numa_per_socket`, `cores_per_socket` (physical cores per socket),
    `threads_per_core` (SMT siblings per core, 1 = SMT off), `siblings` ("split" or
    "adjacent", see the module docstring). All counts are >= 1 and `cores_per_socket` is a
    multiple of `numa_per_socket`; violations raise ValueError.
    """
    # no __slots__: the instance __dict__ holds the cached_property `_by_core`

    def __new__(cls, *args, **kwargs) -> "Topology":
        """Raises ValueError for counts below 1, NUMA nodes that do not divide the cores,
        an unknown `siblings` or more than MAX_CPUS logical CPUs."""
        self = super().__new__(cls, *args, **kwargs)
        self._check()
        return self

    def _check(self) -> None:
        if self.table:
            return
        for name in ("sockets", "numa_per_socket", "cores_per_socket", "threads_per_core"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"topology {name} must be a whole number >= 1, found {v!r}")
        if self.cores_per_socket % self.numa_per_socket:
            raise ValueError(f"{self.cores_per_socket} cores per socket do not divide evenly "
                             f"into {self.numa_per_socket} NUMA nodes per socket")
        if self.siblings not in SIBLING_MODES:
            raise ValueError(f"topology siblings must be one of {', '.join(SIBLING_MODES)}, "
                             f"found {self.siblings!r}")
        if self.total_cpus > MAX_CPUS:
            raise ValueError(f"topology has {self.total_cpus} logical CPUs per node; krm-fn "
                             f"supports at most {MAX_CPUS} (Linux supports at most 8192)")

    @classmethod
    def from_config(cls, ns) -> "Topology":
        """Build from a config `topology` namespace (`sockets`, `numaNodesPerSocket`,
        `coresPerSocket`, `threadsPerCore`, `siblings`, `lscpu`; krm_fn.config
        POOL_FIELDS). With `lscpu` the table decides and the counts are ignored.
        Raises ValueError for a malformed lscpu paste (message names the line)."""
        if getattr(ns, "lscpu", None):
            return from_lscpu(ns.lscpu)
        return cls(sockets=ns.sockets, numa_per_socket=ns.numaNodesPerSocket,
                   cores_per_socket=ns.coresPerSocket, threads_per_core=ns.threadsPerCore,
                   siblings=ns.siblings)

    @property
    def total_cores(self) -> int:
        """Physical cores per node (sockets * cores_per_socket)."""
        if self.table:
            return len(self._by_core["core"])
        return self.sockets * self.cores_per_socket

    @property
    def total_cpus(self) -> int:
        """Logical CPUs per node (total_cores * threads_per_core): the node's cpu capacity."""
        if self.table:
            return len(self.table)
        return self.total_cores * self.threads_per_core

    @property
    def numa_nodes(self) -> int:
        """NUMA nodes per node (sockets * numa_per_socket)."""
        if self.table:
            return len(self._by_core["numa"])
        return self.sockets * self.numa_per_socket

    @property
    def cores_per_numa(self) -> int:
        """Physical cores in each NUMA node."""
        return self.cores_per_socket // self.numa_per_socket

    @functools.cached_property
    def _by_core(self) -> dict:
        """core id -> its Cpu rows and NUMA node id -> its core ids (sorted), from one pass
        over the table: every per-core question is then a dictionary look-up, not a scan
        (a 16k-CPU lscpu table asked per core took seconds)."""
        cores: dict[int, list] = {}
        numas: dict[int, set] = {}
        for c in self.table:
            cores.setdefault(c.core, []).append(c)
            numas.setdefault(c.numa, set()).add(c.core)
        return {"core": cores, "numa": {n: sorted(v) for n, v in numas.items()}}

    def _table_core(self, core: int) -> list[Cpu]:
        rows = self._by_core["core"].get(core) if isinstance(core, int) else None
        if not rows:
            raise ValueError(f"core {core!r} does not exist")
        return rows

    def _check_core(self, core: int) -> None:
        if isinstance(core, bool) or not isinstance(core, int) or not 0 <= core < self.total_cores:
            raise ValueError(f"core {core!r} does not exist (cores 0-{self.total_cores - 1})")

    def socket_of(self, core: int) -> int:
        """Socket id of physical core `core`. Raises ValueError for a core that does not exist."""
        if self.table:
            return self._table_core(core)[0].socket
        self._check_core(core)
        return core // self.cores_per_socket

    def numa_of(self, core: int) -> int:
        """NUMA node id of physical core `core`.
        Raises ValueError for a core that does not exist."""
        if self.table:
            return self._table_core(core)[0].numa
        self._check_core(core)
        socket, in_socket = divmod(core, self.cores_per_socket)
        return socket * self.numa_per_socket + in_socket // self.cores_per_numa

    def siblings_of(self, core: int) -> list[int]:
        """Logical CPU ids of physical core `core` (all its SMT threads), sorted.
        Raises ValueError for a core that does not exist."""
        if self.table:
            return sorted(c.cpu for c in self._table_core(core))
        self._check_core(core)
        c, t = self.total_cores, self.threads_per_core
        if self.siblings == "split":
            return [core + i * c for i in range(t)]
        return [core * t + i for i in range(t)]

    def cpus(self) -> list[Cpu]:
        """Every logical CPU of a node as `Cpu(cpu, core, socket, numa)`, sorted by cpu id."""
        if self.table:
            return sorted(self.table)
        # socket_of and numa_of of each core, and its siblings_of, in cpu id order:
        # `split` numbers CPU core + i*C (thread-major), `adjacent` core*T + i (core-major)
        n, t, per_socket = self.total_cores, self.threads_per_core, self.cores_per_socket
        per_numa, numas = self.cores_per_numa, self.numa_per_socket
        cores = [(core, core // per_socket,
                  core // per_socket * numas + core % per_socket // per_numa)
                 for core in range(n)]
        if self.siblings == "split":
            return [Cpu(i * n + core, core, socket, numa)
                    for i in range(t) for core, socket, numa in cores]
        return [Cpu(core * t + i, core, socket, numa)
                for core, socket, numa in cores for i in range(t)]

    def cores_of_numa(self, numa: int) -> list[int]:
        """Physical core ids of NUMA node `numa`, ascending.
        Raises ValueError for a NUMA node that does not exist."""
        if self.table:
            cores = list(self._by_core["numa"].get(numa, ()))
            if not cores:
                raise ValueError(f"NUMA node {numa!r} does not exist")
            return cores
        n = self.numa_nodes
        if isinstance(numa, bool) or not isinstance(numa, int) or not 0 <= numa < n:
            raise ValueError(f"NUMA node {numa!r} does not exist (NUMA nodes 0-{n - 1})")
        first = numa * self.cores_per_numa  # NUMA nodes hold consecutive core ids
        return list(range(first, first + self.cores_per_numa))


def reserve_cores(topology: Topology, cores: int, spread: bool) -> list[int]:
    """CPUs reserved for system daemons (`reservedSystemCPUs`), as sorted logical CPU ids.

    Whole physical cores with all their SMT siblings (with `full-pcpus-only` the siblings of
    reserved CPUs count as used,
    https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/). Without `spread`:
    the lowest core ids, NUMA node 0 first, then NUMA 1, ... With `spread`: `cores // N` cores
    from each of the N NUMA nodes, the remainder one each to the lowest NUMA ids, the lowest
    core ids of each node (the OpenShift Performance Profile Creator's rule,
    openshift/cluster-node-tuning-operator
    pkg/performanceprofile/profilecreator/profilecreator.go).

    Raises ValueError when `cores` < 1 (the static policy needs a non-zero reservation,
    https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/)
    or when `cores` >= the node's physical cores (nothing would be left for
    pods).
    """
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ValueError(f"reserved cores must be a whole number >= 1 (the static CPU Manager "
                         f"needs a non-zero reservation), found {cores!r}")
    if cores >= topology.total_cores:
        raise ValueError(f"cannot reserve {cores} cores: the node has {topology.total_cores} "
                         f"physical cores and at least one must be left for pods")
    numas = sorted({c.numa for c in topology.cpus()})
    if spread:
        n = len(numas)
        chosen: list[int] = []
        for i, numa in enumerate(numas):
            share = cores // n + (1 if i < cores % n else 0)
            available = topology.cores_of_numa(numa)
            if share > len(available):
                raise ValueError(f"cannot spread {cores} reserved cores over {n} NUMA nodes: "
                                 f"NUMA node {numa} has {len(available)} cores")
            chosen += available[:share]
    else:
        chosen = [core for numa in numas for core in topology.cores_of_numa(numa)][:cores]
    return sorted(cpu for core in chosen for cpu in topology.siblings_of(core))


def format_cpuset(cpus: Iterable[int]) -> str:
    """Linux cpuset list string of `cpus`: [0, 1, 2, 5, 32, 33] -> "0-2,5,32-33"; [] -> "".

    Input order does not matter. Raises ValueError on a negative or non-integer id or a
    duplicate.
    """
    ids = list(cpus)
    for c in ids:
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise ValueError(f"CPU id must be a whole number >= 0, found {c!r}")
    if len(set(ids)) != len(ids):
        dups = sorted({c for c in ids if ids.count(c) > 1})
        raise ValueError(f"duplicate CPU ids {dups}")
    ids.sort()
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def _short(text: str, limit: int = 60) -> str:
    r = repr(text)
    return r if len(r) <= limit else r[:limit - 4] + "...'"


def _cpu_id(digits: str, text: str) -> int:
    """A CPU id from a string of decimal digits, bounded before int() (which would refuse
    more than 4300 digits, and a huge range would be expanded id by id)."""
    stripped = digits.lstrip("0")
    if len(stripped) > len(str(MAX_CPUS)) or int(stripped or "0") >= MAX_CPUS:
        raise ValueError(f"cpuset {_short(text)}: CPU id {_short(digits, 30)[1:-1]} is out of "
                         f"range (CPU ids go up to {MAX_CPUS - 1}; Linux supports at most "
                         f"8192 CPUs)")
    return int(stripped or "0")


def parse_cpuset(text: str, repeats: bool = False) -> list[int]:
    """Parse a Linux cpuset list string into sorted CPU ids: "0-2,5" -> [0, 1, 2, 5]; "" -> [].

    Grammar (k8s.io/utils/cpuset Parse): comma-separated elements, each `N` or `N-M` with
    N <= M, decimal digits only. Stricter than the kubelet: whitespace, empty elements,
    reversed ranges, CPUs listed twice (unless `repeats`: Parse adds each element to a
    set, so "0-1,1" is {0, 1} to the kubelet) and CPU ids >= MAX_CPUS raise ValueError
    naming the offending element (ids are bounded before any range is expanded).
    """
    if not isinstance(text, str):
        raise ValueError(f"cpuset must be a string such as \"0-1,32-33\", found {text!r}")
    if text == "":
        return []
    seen: set[int] = set()
    for elem in text.split(","):
        if "-" in elem:
            lo_s, _, hi_s = elem.partition("-")
            if not (digits(lo_s) and digits(hi_s)):
                raise ValueError(f"cpuset {_short(text)}: bad range {_short(elem)} "
                                 f"(expected N-M)")
            lo, hi = _cpu_id(lo_s, text), _cpu_id(hi_s, text)
            if lo > hi:
                raise ValueError(f"cpuset {_short(text)}: reversed range {_short(elem)}")
            ids = range(lo, hi + 1)
        else:
            if not digits(elem):
                raise ValueError(f"cpuset {_short(text)}: bad element {_short(elem)} (expected "
                                 f"a CPU id or a range N-M)")
            n = _cpu_id(elem, text)
            ids = range(n, n + 1)
        dup = None if repeats else seen.intersection(ids)
        if dup:
            raise ValueError(f"cpuset {_short(text)}: CPU {min(dup)} listed twice")
        seen.update(ids)
    return sorted(seen)


def parse_cpuset_ranges(text: str) -> list[tuple[int, int]]:
    """`text` (a cpuset list, parse_cpuset's grammar and errors) as sorted, merged inclusive
    ranges [(first, last), ...], without expanding them: the work is bounded by the length
    of `text`, not by the CPUs it names. Raises ValueError as parse_cpuset does."""
    if not isinstance(text, str):
        raise ValueError(f"cpuset must be a string such as \"0-1,32-33\", found {text!r}")
    if text == "":
        return []
    ranges = []
    for elem in text.split(","):
        lo_s, dash, hi_s = elem.partition("-")
        if dash and not (digits(lo_s) and digits(hi_s)):
            raise ValueError(f"cpuset {_short(text)}: bad range {_short(elem)} "
                             f"(expected N-M)")
        if not dash and not digits(elem):
            raise ValueError(f"cpuset {_short(text)}: bad element {_short(elem)} (expected "
                             f"a CPU id or a range N-M)")
        lo = _cpu_id(lo_s, text)
        hi = _cpu_id(hi_s, text) if dash else lo
        if lo > hi:
            raise ValueError(f"cpuset {_short(text)}: reversed range {_short(elem)}")
        ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1]:
            raise ValueError(f"cpuset {_short(text)}: CPU {lo} listed twice")
        if merged and lo == merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


LSCPU_HEADER = "CPU,CORE,SOCKET,NODE"


@functools.lru_cache(maxsize=16)
def from_lscpu(text: str) -> Topology:
    """A Topology from `lscpu -p=CPU,CORE,SOCKET,NODE` output (the exact numbering of a real
    node). Lines starting with `#` are comments; each other line is `cpu,core,socket,node`
    with whole numbers (an empty NODE, on machines without NUMA, means node 0). Strict:
    raises ValueError naming the line for a wrong field count, a non-number, a repeated CPU,
    a core listed on two sockets or NUMA nodes, or no CPU at all. Linear in the lines, and
    cached per text (the config loader and the plan read the same paste; a Topology is
    immutable)."""
    rows: list[Cpu] = []
    seen: set[int] = set()
    where: dict[int, tuple[int, int]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            raise ValueError(f"lscpu line {n}: expected 4 fields {LSCPU_HEADER}, found "
                             f"{len(parts)} in {_short(line)} (run `lscpu -p=CPU,CORE,SOCKET,NODE`)")
        if parts[3] == "":
            parts[3] = "0"
        if not all(digits(p) and len(p) <= 6 for p in parts):
            raise ValueError(f"lscpu line {n}: fields must be whole numbers, found {_short(line)}")
        cpu, core, socket, numa = (int(p) for p in parts)
        if cpu >= MAX_CPUS:
            raise ValueError(f"lscpu line {n}: CPU {cpu} is out of range (CPU ids go up to "
                             f"{MAX_CPUS - 1})")
        if cpu in seen:
            raise ValueError(f"lscpu line {n}: CPU {cpu} is listed twice")
        seen.add(cpu)
        if where.setdefault(core, (socket, numa)) != (socket, numa):
            raise ValueError(f"lscpu line {n}: core {core} is listed on socket/NUMA node "
                             f"{where[core]} and {(socket, numa)}")
        rows.append(Cpu(cpu, core, socket, numa))
    if not rows:
        raise ValueError(f"lscpu output has no CPU lines (expected {LSCPU_HEADER} rows)")
    per_core: dict[int, int] = {}
    for r in rows:
        per_core[r.core] = per_core.get(r.core, 0) + 1
    threads = max(per_core.values())
    sockets = len({r.socket for r in rows})
    numa = len({r.numa for r in rows})
    return Topology(sockets=sockets, numa_per_socket=max(1, numa // sockets),
                    cores_per_socket=max(1, len(where) // sockets), threads_per_core=threads,
                    siblings="split", table=tuple(sorted(rows)))
