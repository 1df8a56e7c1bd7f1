"""The kubelet's CPU Manager, static policy: who gets exclusive CPUs, how many, which ones.

Source: kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static.go (NewStaticPolicy,
guaranteedCPUs, podGuaranteedCPUs, Allocate, allocateCPUs, takeByTopology,
updateCPUsToReuse, generateCPUTopologyHints, isHintSocketAligned, getAlignedCPUs),
cpu_assignment.go (krm_fn/admission/cpu_assignment.py, a port) and
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/.

Rules modelled:
- a container gets exclusive CPUs iff the pod is Guaranteed and its cpu request is a whole
  number; fractional containers of a Guaranteed pod run in the shared pool;
- with pod-level `spec.resources` and the `PodLevelResources` gate on (on by default in
  every supported version), the static policy skips the pod (no hints, no exclusive CPUs:
  "pod is using pod-level resources which are not supported by the static CPU manager
  policy"); from 1.36 the `PodLevelResourceManagers` gate (alpha in 1.36, beta and off by
  default in 1.37) lifts that (AllocatePod: one CPU set for the pod, partitioned among its
  containers), which this model does not simulate, and the pod is skipped also when the
  kubelet's `PodLevelResources` is off (`skips_pod_level`);
- the reserved CPUs are `reservedSystemCPUs`, else ceil(kubeReserved + systemReserved cpu)
  CPUs taken by takeByTopology from all CPUs, with the policy's options (NewStaticPolicy);
  the CPUs free for exclusive use are all CPUs minus those (with or without
  `strict-cpu-reservation`, which only takes the reserved CPUs out of the shared pool);
- `full-pcpus-only`: a request that is not a multiple of the CPUs per core (the node's
  CPUs over its cores, a core being one physical core's threads on one NUMA node, as
  cadvisor reports it), or larger than the free CPUs outside the cores of the reserved
  CPUs, fails with SMTAlignmentError;
- CPUs of a finished regular init container are reused by later containers of the pod;
  restartable init containers (sidecars) keep theirs (kubernetes/kubernetes#119447);
- allocation (allocateCPUs) takes the CPUs of the hinted NUMA nodes first (with
  `align-by-socket`, of their sockets: getAlignedCPUs), then the rest, each by
  takeByTopology exactly as the kubelet does (cpu_assignment.py): packed
  (takeByTopologyNUMAPacked: whole sockets and NUMA nodes, whole cores, then CPUs, the
  fullest first) or, with `distribute-cpus-across-numa`, spread evenly over the fewest
  NUMA nodes in groups of the CPUs per core under `full-pcpus-only`, else of 1
  (takeByTopologyNUMADistributed, with 1.37's `align-by-socket` rule);
  `distribute-cpus-across-cores` takes single CPUs socket by socket in CPU id order
  instead of whole cores (CPUSortingStrategySpread); `prefer-align-cpus-by-uncorecache`
  takes whole uncore caches, or the fewest cores of one, before cores (takeUncoreCache),
  each socket being one uncore cache: krm-fn's topology does not describe L3 caches, and
  that is what the kubelet does when cadvisor reports none (getUncoreCacheID). The
  options change which CPUs, and so which NUMA nodes, a container gets, and through them
  what later pods are given or refused.
"""
from __future__ import annotations

from itertools import combinations

from krm_fn import quantity
from krm_fn.quantity import MILLI, NANO, ceil_div, kubelet_cpus

from krm_fn.admission import wide
from krm_fn.admission.cpu_assignment import AssignmentError, CPUTopology
from krm_fn.admission.model import APP, INIT, AdmittedPod, Container, NodeModel, node_memo
from krm_fn.admission.qos import GUARANTEED, gate, known, pod_level_set

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
    (skips_pod_level_resources)."""
    return pod_level_set(pod) and skips_pod_level_resources(node)


def skips_pod_level_resources(node: NodeModel) -> bool:
    """Whether the static CPU and Memory Manager of `node`'s kubelet skip every pod that
    sets pod-level resources (policy_static.go Allocate/GetTopologyHints): before the
    release that has `PodLevelResourceManagers` (v1.35.4: `PodLevelResources &&
    IsPodLevelResourcesSet`), when the kubelet's `PodLevelResources` is on; from it
    (v1.36.3, v1.37.2: `!PodLevelResourceManagers || !PodLevelResources`), unless both are
    on, so also when the kubelet runs with `PodLevelResources` off while the API server
    keeps the pod's spec.resources (qos.api_gate). The one definition the verdict and the
    podlevel rule (rules.PoolInfo.skips_pod_level) read."""
    if not known(node, "PodLevelResourceManagers"):
        return gate(node, "PodLevelResources")
    return not (gate(node, "PodLevelResources") and gate(node, "PodLevelResourceManagers"))


def guaranteed_cpus(container: Container, qos: str) -> int:
    """Exclusive CPUs `container` asks for (policy_static.go guaranteedCPUs): its cpu
    request rounded up (Value()) when the pod is Guaranteed and the request is a whole number
    at milli scale (isIntegralCPUAmount: `3999999999n` is 4), else 0."""
    if qos != GUARANTEED:
        return 0
    cpu = container.requests.get("cpu")
    if cpu is None or cpu <= 0:
        return 0
    return kubelet_cpus(cpu)


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


def aggregate(containers, part: str) -> dict:
    """{resource: peak} of `part` ("requests" or "limits") of model Containers, for every
    resource one of them sets (k8s.io/component-helpers/resource
    AggregateContainerRequests, AggregateContainerLimits)."""
    names = {r for c in containers for r in getattr(c, part)}
    return {r: peak([(c.role, getattr(c, part).get(r, 0)) for c in containers])
            for r in names}


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


def reservation(node: NodeModel) -> int:
    """The CPU (nanocores) the kubelet holds back from pods: the count of `node.reserved_cpus`
    (reservedSystemCPUs, which replaces the cpu of kubeReserved and systemReserved:
    cmd/kubelet/app/server.go run), else kubeReserved cpu + systemReserved cpu, each rounded
    to millicores (server.go parseResourceList). An unparsable amount counts as 0 (the
    kubelet does not start; krm_fn.node.kubelet_check says so)."""
    if node.reserved_cpus:
        return len(node.reserved_cpus) * NANO
    milli = 0
    for key in ("kubeReserved", "systemReserved"):
        value = ((node.kubelet or {}).get(key) or {}).get("cpu")
        if value is not None:
            try:
                nanos = quantity.parse_cpu(value).nanos
            except quantity.QuantityError:
                continue
            micro = ceil_div(nanos, 1000)                         # ScaledValue rounds up
            milli += (micro + 500) // 1000                        # SetMilli((µ + 500) / 1000)
    return milli * MILLI


def _reserved(node: NodeModel, topo: CPUTopology) -> frozenset:
    """The CPUs the static policy reserves: reservedSystemCPUs, else the ceiling of
    `reservation` taken by topology from all CPUs with the policy's options
    (policy_static.go NewStaticPolicy: takeByTopology(allCPUs, numReservedCPUs))."""
    if node.reserved_cpus or not is_static(node):
        return frozenset(node.reserved_cpus)
    n = ceil_div(reservation(node), NANO)
    if not n:
        return frozenset()
    try:
        return frozenset(topo.take_by_topology(frozenset(topo.core_of), n))
    except AssignmentError:         # the kubelet does not start ("unable to reserve")
        return frozenset()


def _machine(node: NodeModel) -> dict:
    """The part of a node's CpuState that allocation never changes (topology, reserved CPUs,
    policy options), built once per NodeModel (model.node_memo): a render builds a CpuState
    of the same node for every Packer and every message."""
    memo = node_memo(node)
    if "cpu" in memo:
        return memo["cpu"]
    topo = CPUTopology(node.cpus, node.version, {name: option(node, name) for name in (
        "full-pcpus-only", "distribute-cpus-across-numa", "distribute-cpus-across-cores",
        "prefer-align-cpus-by-uncorecache", "align-by-socket")})
    info = {c.cpu: c for c in node.cpus}
    reserved = _reserved(node, topo) & frozenset(info)
    numas = sorted(topo.numa_cpus)
    phys: set = set()
    for c in reserved:
        phys |= topo.core_cpus[topo.core_of[c]]
    sockets = {c.socket for c in node.cpus}
    static = {
        "info": info, "reserved": reserved, "free0": frozenset(info) - reserved,
        "reserved_phys": frozenset(phys), "topo": topo,
        "threads": topo.per_core, "full_pcpus": option(node, "full-pcpus-only"),
        "align_socket": option(node, "align-by-socket"), "numas": numas,
        "numa_cpus": topo.numa_cpus,
        "numa_of": {c.cpu: c.numa for c in node.cpus},
        # isHintSocketAligned: NumNUMANodes / NumSockets
        "numa_per_socket": len(numas) // max(1, len(sockets)),
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
    `reserved`, `numas`, `numa_cpus` {NUMA id: frozenset of CPU ids}, `topo` (the kubelet's
    CPUTopology and the options that choose CPUs), `threads` (cpuGroupSize: CPUs per
    core), the options) are the node's, shared by every copy.
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

    def _aligned(self, mask) -> frozenset:
        """Every CPU the allocation takes first for a NUMA affinity `mask`
        (policy_static.go getAlignedCPUs): those of its NUMA nodes, or with
        `align-by-socket` those of every socket that holds one of them."""
        if not self.align_socket:
            return self.cpus_in(mask)
        out = self.cache.get(("socket cpus", mask))
        if out is None:
            topo = self.topo
            sockets = {self.info[c].socket for c in self.cpus_in(mask)}
            out = self.cache[("socket cpus", mask)] = frozenset().union(
                *(topo.socket_cpus[s] for s in sockets))
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

    def allocate(self, n: int, mask, reusable: set) -> tuple:
        """Take `n` CPUs for one container (policy_static.go allocateCPUs): the aligned CPUs
        of the NUMA affinity `mask` first (getAlignedCPUs; None = no affinity), then the
        rest, each by takeByTopology, from free plus `reusable` (CPUs of the pod's finished
        init containers). (CPUs, "") after removing them from `free`, or (None, the
        kubelet's error: "not enough cpus available to satisfy request: ...")."""
        allocatable = self.free | reusable
        result: set = set()
        take = self.topo.take_by_topology
        try:
            if mask is not None:
                aligned = allocatable & self._aligned(mask)
                result = set(take(aligned, min(n, len(aligned))))
            result |= take(allocatable - result, n - len(result))
        except AssignmentError as e:
            return None, str(e)
        self.free -= result
        return result, ""

    def _combos(self) -> list:
        """[(NUMA id frozenset, CPUs of those NUMA nodes, bitmask)] of every combination of
        NUMA nodes, fewest first, in itertools.combinations order (the bitmask iteration of
        generateCPUTopologyHints); bit i of the bitmask is NUMA node numas[i]. Made on the
        first hints of the node."""
        out = self.cache.get("combos")
        if out is None:
            numas, numa_cpus = self.numas, self.numa_cpus
            bit = {n: 1 << i for i, n in enumerate(numas)}
            out = self.cache["combos"] = [
                (frozenset(combo), sum(len(numa_cpus[n]) for n in combo),
                 sum(bit[n] for n in combo))
                for size in range(1, len(numas) + 1) for combo in combinations(numas, size)]
        return out

    def _min_size(self, request: int) -> int:
        """The fewest NUMA nodes whose CPUs (free or not) hold `request`, else all."""
        out = self.cache.get(("min", request))
        if out is None and wide.is_wide(self.numas):
            out = self.cache[("min", request)] = wide.cpu_min_size(self, request)
        if out is None:
            out = self.cache[("min", request)] = min(
                (len(m) for m, total, _ in self._combos() if total >= request),
                default=len(self.numas))
        return out

    def hints(self, request: int, reusable: set) -> list:
        """The CPU Manager's topology hints [(NUMA id frozenset, preferred)] for `request`
        CPUs (policy_static.go generateCPUTopologyHints): every NUMA combination whose free
        plus reusable CPUs cover the request and that holds every reusable CPU; preferred =
        as few NUMA nodes as the request needs on the machine (counted over ALL its CPUs,
        free or not), or with `align-by-socket` spanning as few sockets as that needs
        (isHintSocketAligned). The free CPUs of every combination come from one table of
        subset sums over the NUMA nodes' free counts (2^NUMA additions), and the hints
        are memoised per node on (free counts, request, reusable NUMA nodes): the same
        node state asks the same question again for every pod shape placed on it."""
        free, numa_of, numas = self.free, self.numa_of, self.numas
        counts = tuple([len(free & self.numa_cpus[n]) for n in numas])
        home = 0
        if reusable:
            index = {n: i for i, n in enumerate(numas)}
            for c in reusable:
                home |= 1 << index[numa_of[c]]
        key = ("hints", counts, request, home, len(reusable))
        out = self.cache.get(key)
        if out is not None:
            return out
        sums = [0]
        for v in counts:
            sums += [s + v for s in sums]
        need = request - len(reusable)
        out = [pair for pair, bits in self._pairs(request)
               if bits & home == home and sums[bits] >= need]
        self.cache[key] = out
        return out

    def _pairs(self, request: int) -> list:
        """[((NUMA id frozenset, preferred), bitmask)] of every combination (_combos) for a
        request of `request` CPUs: the hints' tuples, made once per request and node."""
        out = self.cache.get(("pairs", request))
        if out is None:
            min_size = self._min_size(request)
            out = self.cache[("pairs", request)] = [
                ((m, len(m) == min_size or (self.align_socket and self._socket_aligned(
                    m, min_size))), bits) for m, _, bits in self._combos()]
        return out

    def _socket_aligned(self, mask, min_size: int) -> bool:
        per = self.numa_per_socket
        if per == 0:
            return False
        need = -(-min_size // per)
        spans = self.cache.get(("sockets", mask))
        if spans is None:
            spans = self.cache[("sockets", mask)] = len({i.socket for i in self.info.values()
                                                   if i.numa in mask})
        return spans == need
