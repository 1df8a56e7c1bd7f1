"""The kubelet's CPU Manager, static policy: who gets exclusive CPUs, how many, which ones.

Source: kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static.go (guaranteedCPUs,
podGuaranteedCPUs, Allocate, allocateCPUs, updateCPUsToReuse, generateCPUTopologyHints,
isHintSocketAligned, getAlignedCPUs), cpu_assignment.go (takeByTopologyNUMAPacked) and
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/.

Rules modelled:
- a container gets exclusive CPUs iff the pod is Guaranteed and its cpu request is a whole
  number; fractional containers of a Guaranteed pod run in the shared pool;
- with pod-level `spec.resources` and the `PodLevelResources` gate on (on by default in
  every supported version), the static policy skips the pod (no hints, no exclusive CPUs:
  "pod is using pod-level resources which are not supported by the static CPU manager
  policy"); from 1.36 the `PodLevelResourceManagers` gate (alpha in 1.36, beta and off by
  default in 1.37) lifts that (AllocatePod: one CPU set for the pod, partitioned among its
  containers), which this model does not simulate;
- the CPUs free for exclusive use are all CPUs minus `reservedSystemCPUs` (with or without
  `strict-cpu-reservation`, which only takes the reserved CPUs out of the shared pool);
- `full-pcpus-only`: a request that is not a multiple of the threads per core, or larger
  than the free CPUs outside the cores of the reserved CPUs, fails with SMTAlignmentError;
- CPUs of a finished regular init container are reused by later containers of the pod;
  restartable init containers (sidecars) keep theirs (kubernetes/kubernetes#119447);
- allocation takes the hinted NUMA nodes first, whole NUMA nodes, then whole cores, then
  threads, packing onto the NUMA node with the fewest free CPUs (takeByTopologyNUMAPacked).
  `distribute-cpus-across-numa` and uncore-cache alignment change which CPUs are taken but
  not admission; they are modelled as packed.
"""
from __future__ import annotations

from itertools import combinations

from krm_fn import quantity, record
from krm_fn.rational import Fraction

from krm_fn.admission.model import APP, INIT, AdmittedPod, Container, NodeModel, node_memo
from krm_fn.admission.qos import GUARANTEED, gate, pod_level_set

STATIC_SRC = "kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static.go"
DOCS = "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}     # Go strconv.ParseBool


def option(node: NodeModel, name: str) -> bool:
    """A boolean `cpuManagerPolicyOptions` entry of the merged KubeletConfiguration (values
    go through Go strconv.ParseBool: policy_options.go)."""
    opts = (node.kubelet or {}).get("cpuManagerPolicyOptions") or {}
    value = opts.get(name)
    return value is True or str(value) in _TRUE


def is_static(node: NodeModel) -> bool:
    """`cpuManagerPolicy: static` (default `none`; case-sensitive)."""
    return (node.kubelet or {}).get("cpuManagerPolicy", "none") == "static"


def skips_pod_level(pod: AdmittedPod, node: NodeModel) -> bool:
    """The static CPU and Memory Manager skip this pod because it sets pod-level resources
    (policy_static.go Allocate/GetTopologyHints: `PodLevelResources` on, not
    `PodLevelResourceManagers`)."""
    return (gate(node, "PodLevelResources") and pod_level_set(pod)
            and not gate(node, "PodLevelResourceManagers"))


def guaranteed_cpus(container: Container, qos: str) -> int:
    """Exclusive CPUs `container` asks for (policy_static.go guaranteedCPUs): its cpu
    request when the pod is Guaranteed and the request is a whole number, else 0."""
    if qos != GUARANTEED:
        return 0
    cpu = container.requests.get("cpu")
    if cpu is None or cpu <= 0 or getattr(cpu, "denominator", 1) != 1:
        return 0
    return int(cpu)


def peak(values: list[tuple[str, int]]) -> int:
    """The pod's peak of a per-container amount, [(role, amount)] in spec order
    (podGuaranteedCPUs; KEP-753 resources calculation):
    max(max_i(sidecars started before init i + init i), sum(app) + sum(sidecars))."""
    sidecars = init_peak = apps = 0
    for role, amount in values:
        if role == INIT:
            init_peak = max(init_peak, sidecars + amount)
        elif role == APP:
            apps += amount
        else:
            sidecars += amount
    return max(init_peak, apps + sidecars)


def pod_guaranteed_cpus(pod: AdmittedPod, qos: str) -> int:
    """Exclusive CPUs the pod holds at its peak (policy_static.go podGuaranteedCPUs)."""
    return peak([(c.role, guaranteed_cpus(c, qos)) for c in pod.containers])


def exclusive_requests(pod: AdmittedPod, node: NodeModel, qos: str) -> tuple:
    """((container name, cpus), ...) the static policy will try to allocate, in allocation
    order (init containers and sidecars in spec order, then app containers); () when the
    policy is not static or the pod is skipped for pod-level resources."""
    if not is_static(node) or skips_pod_level(pod, node):
        return ()
    return tuple((c.name, n) for c in pod.containers if (n := guaranteed_cpus(c, qos)))


def reservation(node: NodeModel) -> Fraction:
    """The CPU cores the kubelet holds back from pods: the count of `node.reserved_cpus`
    (reservedSystemCPUs, which replaces the cpu of kubeReserved and systemReserved:
    cmd/kubelet/app/server.go run), else kubeReserved cpu + systemReserved cpu, each rounded
    to millicores (server.go parseResourceList). An unparsable amount counts as 0 (the
    kubelet does not start; krm_fn.node.kubelet_check says so)."""
    if node.reserved_cpus:
        return Fraction(len(node.reserved_cpus))
    milli = 0
    for key in ("kubeReserved", "systemReserved"):
        value = ((node.kubelet or {}).get(key) or {}).get("cpu")
        if value is not None:
            try:
                micro = Fraction(quantity.parse_cpu(value).value) * 1000000
            except quantity.QuantityError:
                continue
            micro = -(-micro.numerator // micro.denominator)     # ScaledValue rounds up
            milli += (micro + 500) // 1000                        # SetMilli((µ + 500) / 1000)
    return Fraction(milli, 1000)


def _reserved(node: NodeModel) -> frozenset:
    """The CPUs the static policy reserves: reservedSystemCPUs, else the ceiling of
    `reservation` taken by topology from all CPUs (policy_static.go NewStaticPolicy:
    takeByTopology(allCPUs, numReservedCPUs))."""
    if node.reserved_cpus or not is_static(node):
        return frozenset(node.reserved_cpus)
    n = -(-reservation(node).numerator // reservation(node).denominator)
    if not n:
        return frozenset()
    bare = {k: v for k, v in (node.kubelet or {}).items()
            if k not in ("kubeReserved", "systemReserved")}
    taken = CpuState(record.replace(node, kubelet=bare)).allocate(n, None, set())
    return frozenset(taken or ())


def _machine(node: NodeModel) -> dict:
    """The part of a node's CpuState that allocation never changes (topology, reserved CPUs,
    policy options, NUMA combinations), built once per NodeModel (model.node_memo): a
    render builds a CpuState of the same node for every Packer and every message."""
    memo = node_memo(node)
    if "cpu" in memo:
        return memo["cpu"]
    info = {c.cpu: c for c in node.cpus}
    reserved = _reserved(node) & frozenset(info)
    cores = {info[c].core for c in reserved}
    numas = sorted({c.numa for c in node.cpus})
    numa_cpus = {n: frozenset(c.cpu for c in node.cpus if c.numa == n) for n in numas}
    core_size: dict = {}
    for c in node.cpus:
        core_size[c.core] = core_size.get(c.core, 0) + 1
    numa_socket = {c.numa: c.socket for c in node.cpus}
    core_cpus: dict = {}
    core_numas: dict = {}
    for c in node.cpus:
        core_cpus.setdefault(c.core, set()).add(c.cpu)
        core_numas.setdefault(c.core, set()).add(c.numa)
    split = any(len(v) > 1 for v in core_numas.values())     # a core spans NUMA nodes
    numa_cores: dict = {n: [] for n in numas}                # used when no core does
    for core in sorted(core_cpus):
        numa_cores[min(core_numas[core])].append((core, frozenset(core_cpus[core])))
    static = {
        "info": info, "reserved": reserved, "free0": frozenset(info) - reserved,
        "reserved_phys": frozenset(c for c, i in info.items() if i.core in cores),
        "threads": node.threads_per_core, "full_pcpus": option(node, "full-pcpus-only"),
        "align_socket": option(node, "align-by-socket"), "numas": numas,
        "numa_cpus": numa_cpus, "numa_socket": numa_socket, "core_size": core_size,
        "numa_of": {c.cpu: c.numa for c in node.cpus},
        "core_of": {c.cpu: c.core for c in node.cpus},
        # socketsFirst: a socket holds several NUMA nodes (cpu_assignment.go)
        "nested": len(set(numa_socket.values())) < len(numas),
        "numa_cores": numa_cores, "split": split,
        "cache": {},        # what hints and allocate derive from the above, on first use
    }
    memo["cpu"] = static
    return static


class CpuState:
    """The static policy's view of one node: which CPUs are free for exclusive use.

    Built from `node.cpus` and `node.reserved_cpus`; `free` = all CPUs minus reserved minus
    allocated (a set, the only part allocation changes); `reserved_phys` = every CPU of a
    core that holds a reserved CPU (counted as unavailable by `full-pcpus-only`,
    policy_static.go GetAvailablePhysicalCPUs). The other attributes (`info` {cpu id: Cpu},
    `reserved`, `numas`, `numa_cpus` {NUMA id: frozenset of CPU ids}, `numa_socket`,
    `core_size`, `threads`, the options) are the node's, shared by every copy.
    """

    def __init__(self, node: NodeModel):
        self.__dict__.update(_machine(node))
        self.free = set(self.free0)

    def copy(self) -> "CpuState":
        """An independent copy (allocation state only changes `free`)."""
        new = object.__new__(CpuState)
        new.__dict__.update(self.__dict__)
        new.free = set(self.free)
        return new

    def cpus_in(self, mask) -> frozenset:
        """Every CPU (reserved included) of the NUMA nodes in `mask`."""
        out = self.cache.get(("cpus", mask))
        if out is None:
            out = self.cache[("cpus", mask)] = frozenset().union(
                *(self.numa_cpus.get(n, ()) for n in mask))
        return out

    def available_physical(self) -> int:
        """Free CPUs outside the cores of reserved CPUs (GetAvailablePhysicalCPUs)."""
        return len(self.free - self.reserved_phys)

    def free_per_numa(self) -> dict:
        """{NUMA id: free CPUs}."""
        free, numa_cpus = self.free, self.numa_cpus
        return {n: len(free & numa_cpus[n]) for n in self.numas}

    def smt_error(self, n: int) -> str:
        """The SMTAlignmentError message for a request of `n` CPUs, or "" when
        `full-pcpus-only` is off or satisfied (policy_static.go Allocate; cpumanager
        errors.go SMTAlignmentError.Error)."""
        if not self.full_pcpus:
            return ""
        if n % self.threads:
            return (f"SMT Alignment Error: requested {n} cpus not multiple cpus per core = "
                    f"{self.threads}")
        avail = self.available_physical()
        if n > avail:
            return (f"SMT Alignment Error: not enough free physical CPUs: available physical "
                    f"CPUs = {avail}, requested CPUs = {n}, CPUs per core = {self.threads}")
        return ""

    def _numa_order(self, by_numa: dict) -> list:
        """NUMA ids of `by_numa` {NUMA id: available CPUs}, fewest available first (with
        several NUMA nodes per socket: the socket with the fewest first, then the NUMA
        node), ties by id (cpu_assignment.go sortAvailableNUMANodes, socketsFirst)."""
        if not self.nested:
            return sorted(by_numa, key=lambda k: (len(by_numa[k]), k))
        sock, per_sock = self.numa_socket, {}
        for k, v in by_numa.items():
            per_sock[sock[k]] = per_sock.get(sock[k], 0) + len(v)
        return sorted(by_numa, key=lambda k: (per_sock[sock[k]], len(by_numa[k]), k))

    def _take(self, avail: set, n: int) -> set | None:
        """`n` CPUs out of `avail` the way takeByTopologyNUMAPacked does: whole NUMA nodes
        when n covers one, then whole cores, then single threads, NUMA nodes with the
        fewest available CPUs first (with several NUMA nodes per socket: the socket with the
        fewest first, cpu_assignment.go sortAvailableNUMANodes); cores in that NUMA order
        (a core counts on the NUMA node of its lowest available CPU), then fewest available
        threads, then core id; threads by CPU id. None when `avail` is too small."""
        if n > len(avail):
            return None
        out: set = set()
        if not n:
            return out
        numa_cpus = self.numa_cpus
        by_numa = {k: part for k in self.numas if (part := avail & numa_cpus[k])}
        order = self._numa_order(by_numa)
        for k in order:
            part = by_numa[k]
            if len(part) == len(numa_cpus[k]) and n - len(out) >= len(part):
                out |= part
        if len(out) == n:
            return out
        size, later = self.core_size, []
        for group in self._core_groups(avail - out, order):
            for have, core, cpus in group:
                if have == size[core] and n - len(out) >= have:
                    out |= cpus
                    if len(out) == n:
                        return out
            later.append(group)
        for group in later:
            for _, _, cpus in group:
                for c in sorted(cpus - out):
                    out.add(c)
                    if len(out) == n:
                        return out
        return out

    def _core_groups(self, rest: set, order: list):
        """The cores of the CPUs `rest`, one list per NUMA node of `order` in turn, each
        [(available threads, core id, frozenset of its CPUs in `rest`)] sorted; a core
        counts on the NUMA node of its lowest CPU in `rest` (the node of all its CPUs
        unless a core spans NUMA nodes). Lazy: _take stops when it has enough."""
        if not self.split:
            for k in order:
                part = rest & self.numa_cpus[k]
                if part:
                    yield sorted((len(p), core, p) for core, cpus in self.numa_cores[k]
                                 if (p := part & cpus))
            return
        cores: dict = {}
        for c in rest:
            cores.setdefault(self.core_of[c], set()).add(c)
        rank = {k: i for i, k in enumerate(order)}
        groups: list = [[] for _ in order]
        for core, cpus in cores.items():
            groups[rank[self.numa_of[min(cpus)]]].append((len(cpus), core, frozenset(cpus)))
        for group in groups:
            yield sorted(group)

    def allocate(self, n: int, mask, reusable: set) -> set | None:
        """Take `n` CPUs for one container (policy_static.go allocateCPUs): those of the
        NUMA nodes in `mask` first (None = no affinity), from free plus `reusable` (CPUs of
        the pod's finished init containers). Removes them from `free`; None when there are
        not enough ("not enough cpus available to satisfy request")."""
        allocatable = self.free | reusable
        result: set = set()
        if mask is not None:
            aligned = allocatable & self.cpus_in(mask)
            result = self._take(aligned, min(n, len(aligned))) or set()
        if n > len(result):
            rest = self._take(allocatable - result, n - len(result))
            if rest is None:
                return None
            result |= rest
        self.free -= result
        return result

    def _combos(self) -> list:
        """[(NUMA id frozenset, CPUs of those NUMA nodes)] of every combination of NUMA
        nodes, fewest first, in itertools.combinations order (the bitmask iteration of
        generateCPUTopologyHints); made on the first hints of the node."""
        out = self.cache.get("combos")
        if out is None:
            numas, numa_cpus = self.numas, self.numa_cpus
            out = self.cache["combos"] = [
                (frozenset(combo), sum(len(numa_cpus[n]) for n in combo))
                for size in range(1, len(numas) + 1) for combo in combinations(numas, size)]
        return out

    def _min_size(self, request: int) -> int:
        """The fewest NUMA nodes whose CPUs (free or not) hold `request`, else all."""
        out = self.cache.get(("min", request))
        if out is None:
            out = self.cache[("min", request)] = min(
                (len(m) for m, total in self._combos() if total >= request),
                default=len(self.numas))
        return out

    def hints(self, request: int, reusable: set) -> list:
        """The CPU Manager's topology hints [(NUMA id frozenset, preferred)] for `request`
        CPUs (policy_static.go generateCPUTopologyHints): every NUMA combination whose free
        plus reusable CPUs cover the request and that holds every reusable CPU; preferred =
        as few NUMA nodes as the request needs on the machine (counted over ALL its CPUs,
        free or not), or with `align-by-socket` spanning as few sockets as that needs."""
        free = self.free_per_numa()
        numa_of = self.numa_of
        home = {numa_of[c] for c in reusable}
        min_size = self._min_size(request)
        need = request - len(reusable)
        out = [m for m, _ in self._combos()
               if home <= m and sum(free[n] for n in m) >= need]
        return [(m, len(m) == min_size or (self.align_socket and self._socket_aligned(
            m, min_size))) for m in out]

    def _socket_aligned(self, mask, min_size: int) -> bool:
        sockets = {i.socket for i in self.info.values()}
        per = len(self.numas) // max(1, len(sockets))
        if per == 0:
            return False
        need = -(-min_size // per)
        spans = self.cache.get(("sockets", mask))
        if spans is None:
            spans = self.cache[("sockets", mask)] = len({i.socket for i in self.info.values()
                                                   if i.numa in mask})
        return spans == need
