"""The kubelet's CPU Manager, static policy: who gets exclusive CPUs, how many, which ones.

Source: kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static.go (guaranteedCPUs,
podGuaranteedCPUs, Allocate, allocateCPUs, updateCPUsToReuse, generateCPUTopologyHints,
isHintSocketAligned, getAlignedCPUs), cpu_assignment.go (takeByTopologyNUMAPacked) and
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/.

Rules modelled:
- a container gets exclusive CPUs iff the pod is Guaranteed and its cpu request is a whole
  number; fractional containers of a Guaranteed pod run in the shared pool;
- with pod-level `spec.resources` and the `PodLevelResources` gate on (alpha 1.32-1.33, on by
  default from 1.34), the static policy skips the pod (no hints, no exclusive CPUs: "pod is
  using pod-level resources which are not supported by the static CPU manager policy");
  from 1.36 the alpha `PodLevelResourceManagers` gate lifts that (AllocatePod: one CPU set
  for the pod, partitioned among its containers), which this model does not simulate;
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

from krm_fn.admission.model import APP, INIT, AdmittedPod, Container, NodeModel
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


class CpuState:
    """The static policy's view of one node: which CPUs are free for exclusive use.

    Built from `node.cpus` and `node.reserved_cpus`; `free` = all CPUs minus reserved minus
    allocated; `reserved_phys` = every CPU of a core that holds a reserved CPU (counted as
    unavailable by `full-pcpus-only`, policy_static.go GetAvailablePhysicalCPUs).
    """

    def __init__(self, node: NodeModel):
        self.info = {c.cpu: c for c in node.cpus}
        self.reserved = set(node.reserved_cpus) & set(self.info)
        self.free = set(self.info) - self.reserved
        cores = {self.info[c].core for c in self.reserved}
        self.reserved_phys = {c for c, i in self.info.items() if i.core in cores}
        self.threads = node.threads_per_core
        self.full_pcpus = option(node, "full-pcpus-only")
        self.align_socket = option(node, "align-by-socket")
        self.numas = sorted({c.numa for c in node.cpus})
        self.numa_cpus = {n: frozenset(c.cpu for c in node.cpus if c.numa == n)
                          for n in self.numas}
        self.numa_socket = {c.numa: c.socket for c in node.cpus}
        self.core_size: dict = {}
        for c in node.cpus:
            self.core_size[c.core] = self.core_size.get(c.core, 0) + 1

    def copy(self) -> "CpuState":
        """An independent copy (allocation state only changes `free`)."""
        new = object.__new__(CpuState)
        new.__dict__.update(self.__dict__)
        new.free = set(self.free)
        return new

    def cpus_in(self, mask) -> set:
        """Every CPU (reserved included) of the NUMA nodes in `mask`."""
        return set().union(*(self.numa_cpus.get(n, ()) for n in mask))

    def available_physical(self) -> int:
        """Free CPUs outside the cores of reserved CPUs (GetAvailablePhysicalCPUs)."""
        return len(self.free - self.reserved_phys)

    def free_per_numa(self) -> dict:
        """{NUMA id: free CPUs}."""
        out = {n: 0 for n in self.numas}
        for c in self.free:
            out[self.info[c].numa] += 1
        return out

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

    def _take(self, avail: set, n: int) -> set | None:
        """`n` CPUs out of `avail` the way takeByTopologyNUMAPacked does: whole NUMA nodes
        when n covers one, then whole cores, then single threads, NUMA nodes with the
        fewest available CPUs first (with several NUMA nodes per socket: the socket with the
        fewest first, cpu_assignment.go sortAvailableNUMANodes). None when `avail` is too
        small."""
        if n > len(avail):
            return None
        by_numa: dict = {}
        for c in avail:
            by_numa.setdefault(self.info[c].numa, set()).add(c)
        sock = self.numa_socket
        per_sock: dict = {}
        for k, v in by_numa.items():
            per_sock[sock[k]] = per_sock.get(sock[k], 0) + len(v)
        nested = len(set(self.numa_socket.values())) < len(self.numas)

        def numa_key(k):        # socketsFirst when a socket holds several NUMA nodes
            return (per_sock[sock[k]] if nested else 0, len(by_numa[k]), k)
        order = sorted(by_numa, key=numa_key)
        out: set = set()
        for k in order:
            whole = len(self.numa_cpus[k])
            if len(by_numa[k]) == whole and n - len(out) >= whole:
                out |= by_numa[k]
        cores: dict = {}
        for c in avail - out:
            cores.setdefault(self.info[c].core, set()).add(c)
        rank = {k: i for i, k in enumerate(order)}
        size = self.core_size

        def key(core):
            return (rank[self.info[min(cores[core])].numa], len(cores[core]), core)
        for core in sorted(cores, key=key):
            if len(cores[core]) == size[core] and n - len(out) >= size[core]:
                out |= cores[core]
        for core in sorted(cores, key=key):
            for c in sorted(cores[core] - out):
                if len(out) < n:
                    out.add(c)
        return out

    def allocate(self, n: int, mask, reusable: set) -> set | None:
        """Take `n` CPUs for one container (policy_static.go allocateCPUs): those of the
        NUMA nodes in `mask` first (None = no affinity), from free plus `reusable` (CPUs of
        the pod's finished init containers). Removes them from `free`; None when there are
        not enough ("not enough cpus available to satisfy request")."""
        allocatable = self.free | reusable
        result: set = set()
        if mask is not None:
            aligned = {c for c in allocatable if self.info[c].numa in mask}
            result = self._take(aligned, min(n, len(aligned))) or set()
        if n > len(result):
            rest = self._take(allocatable - result, n - len(result))
            if rest is None:
                return None
            result |= rest
        self.free -= result
        return result

    def hints(self, request: int, reusable: set) -> list:
        """The CPU Manager's topology hints [(NUMA id frozenset, preferred)] for `request`
        CPUs (policy_static.go generateCPUTopologyHints): every NUMA combination whose free
        plus reusable CPUs cover the request and that holds every reusable CPU; preferred =
        as few NUMA nodes as the request needs on the machine (counted over ALL its CPUs,
        free or not), or with `align-by-socket` spanning as few sockets as that needs."""
        from itertools import combinations
        total = {n: len(v) for n, v in self.numa_cpus.items()}
        free = self.free_per_numa()
        home = {self.info[c].numa for c in reusable}
        min_size = len(self.numas)
        out = []
        for size in range(1, len(self.numas) + 1):
            for combo in combinations(self.numas, size):
                if sum(total[n] for n in combo) >= request:
                    min_size = min(min_size, size)
                if not home <= set(combo):
                    continue
                if len(reusable) + sum(free[n] for n in combo) >= request:
                    out.append(frozenset(combo))
        return [(m, len(m) == min_size or (self.align_socket and self._socket_aligned(
            m, min_size))) for m in out]

    def _socket_aligned(self, mask, min_size: int) -> bool:
        sockets = {i.socket for i in self.info.values()}
        per = len(self.numas) // max(1, len(sockets))
        if per == 0:
            return False
        need = -(-min_size // per)
        return len({i.socket for i in self.info.values() if i.numa in mask}) == need
