"""How many pods fit on one empty node of a pool, alone and as a mix.

Counted by simulation, pod after pod, not by dividing totals: each replica must pass

- the scheduler's and the kubelet's resource fit: the pod's effective requests
  (k8s.io/component-helpers/resource PodRequests: pod-level `spec.resources` when set and
  `PodLevelResources` is on, else max(largest init container plus the sidecars started before
  it, app containers plus sidecars), KEP-753), plus the RuntimeClass's pod overhead
  (KEP-688), summed over the pods within node allocatable
  `cpu` and `memory` (capacity minus kube/system reserved and the hard eviction threshold,
  https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/;
  kubernetes/kubernetes pkg/kubelet/lifecycle/predicate.go, OutOfcpu / OutOfmemory), then
  ephemeral-storage and every other requested resource (huge pages, extended resources such
  as nvidia.com/gpu) within node allocatable, in the order of the scheduler's
  NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest: the
  pod count, cpu, memory, ephemeral-storage, then the scalar resources; Go visits those in
  map order, krm-fn by name). Ephemeral-storage and extended resources are known only
  when a `fromNode` Node gives its status.allocatable (`NodeModel.from_node`); a resource
  that Node does not list has 0 allocatable, as for the scheduler; without a Node they do
  not limit the count (kubelet.py says so in a DEPENDS finding);
- `maxPods` (default 110, pkg/kubelet/apis/config/v1beta1/defaults.go);
- admission by the Topology, CPU and Memory Managers on the node as the earlier replicas left
  it (krm_fn.admission.topology.admit): exclusive CPUs per NUMA node under the policy and
  scope, and per-NUMA memory under Memory Manager `Static`.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.admission.cpumanager import exclusive_requests, peak, reservation
from krm_fn.admission.model import HUGEPAGES, INIT, AdmittedPod, NodeModel, node_memo
from krm_fn.admission.qos import api_gate, gate, pod_qos
from krm_fn.admission.topology import BEYOND, AdmitPlan, NodeState, admit
from krm_fn.quantity import NANO

MAX_PODS_DEFAULT = 110


def pod_requests(pod: AdmittedPod, node: NodeModel) -> dict:
    """The pod's effective requests as the scheduler and the kubelet count them
    (k8s.io/component-helpers/resource PodRequests): {"cpu": nanocores (int), "memory":
    int bytes, every other requested resource (hugepages-<size>, ephemeral-storage, extended
    resources): int}. Each resource is aggregated over the containers (max(largest init
    container plus the sidecars started before it, app containers plus sidecars), KEP-753);
    with `PodLevelResources` on and pod-level requests set, the pod-level amount replaces it
    for cpu, memory and hugepages (applyPodLevelResources); the RuntimeClass's pod overhead
    is added (KEP-688, https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/).
    The cpu total is rounded up to 1m, as the scheduler and the kubelet read it
    (pkg/scheduler/framework/types.go Resource.Add: MilliValue())."""
    names = {"cpu", "memory"}
    for c in pod.containers:
        names.update(c.requests)
    out = {r: peak([(c.role, c.requests.get(r, 0)) for c in pod.containers]) for r in names}
    if gate(node, "PodLevelResources") and pod.pod_requests:
        for r, v in pod.pod_requests.items():
            if r in ("cpu", "memory") or r.startswith(HUGEPAGES):
                out[r] = v
    for r, v in (pod.overhead or {}).items():
        out[r] = out.get(r, 0) + v
    out["memory"] = int(out["memory"])
    out["cpu"] = quantity.milli_ceil(out["cpu"])    # Resource.Add: MilliCPU += MilliValue()
    return out


def allocatable(node: NodeModel) -> dict:
    """Node allocatable {"cpu": nanocores, "memory": bytes or None (unknown), "hugepages-<size>":
    bytes}, as the kubelet reports it (pkg/kubelet/nodestatus/setters.go MachineInfo:
    capacity minus the reservation, pre-allocated huge pages taken off memory):
    `node.allocatable` where it gives a value; else cpu = logical CPUs minus the
    reservation (cpumanager.reservation); memory = the NUMA nodes' memory minus
    kubeReserved, systemReserved and the hard eviction threshold (build.allocatable_memory)
    minus the huge pages, None when the pool does not describe memory; huge pages = all
    those pre-allocated on the NUMA nodes (no reservation applies to them:
    cmd/kubelet/app/server.go parseResourceList), 0 for a page size the pool does not
    declare (the kernel pre-allocates none unless configured); ephemeral-storage (bytes)
    and extended resources (counts) as a `fromNode` Node's status.allocatable gives them
    (`node.allocatable`, pipeline/load.py). Memoised per node."""
    memo = node_memo(node)
    out = memo.get("allocatable")
    if out is not None:
        return out
    out = {}
    memory = 0
    for per_numa in (node.numa_memory or {}).values():
        for k, v in per_numa.items():
            if k.startswith(HUGEPAGES):
                out[k] = out.get(k, 0) + v
            elif k == "memory":
                memory += v
    out["cpu"] = len(node.cpus) * NANO - reservation(node)
    out["memory"] = None
    if memory:
        from krm_fn.admission.build import allocatable_memory
        pages = sum(v for k, v in out.items() if k.startswith(HUGEPAGES))
        out["memory"] = max(0, allocatable_memory(memory, node.kubelet or {}) - pages)
    out.update({k: v for k, v in (node.allocatable or {}).items() if v is not None})
    memo["allocatable"] = out
    return out


FIRST = ("memory", "ephemeral-storage")   # checked in this order after cpu (fitsRequest)


def fit_order(req: dict) -> list:
    """The resources of `req` (pod_requests) the fit checks after cpu, in
    fitsRequest's order: memory, ephemeral-storage, then every other (scalar) resource,
    huge pages and extended resources, by name."""
    return [*FIRST, *sorted(r for r in req if r != "cpu" and r not in FIRST)]


def known(res: str, alloc: dict, described: bool):
    """Node allocatable of `res` in `alloc` (allocatable), or None when krm-fn does not
    know it: memory when the pool does not describe memory; ephemeral-storage and extended
    resources when the pool is not `described` by a Node (NodeModel.from_node). Huge
    pages the pool does not declare, and anything a describing Node does not list, are 0
    (the scheduler's NodeInfo allocatable has none of them)."""
    have = alloc.get(res)
    if have is not None or res == "memory":
        return have
    return 0 if described or res.startswith(HUGEPAGES) else None


def short_of(req: dict, alloc: dict, used: dict | None = None,
             described: bool = False) -> str | None:
    """The first resource after cpu (which callers check exactly first), in fit_order, of
    which `req` (pod_requests) asks a non-zero amount that is more than `alloc`
    (allocatable) minus `used` holds; None when everything fits. `described`: the pool is
    described by a Node (known)."""
    used = used or {}
    for res in fit_order(req):
        want = req.get(res, 0)
        if not want:
            continue
        have = known(res, alloc, described)
        if have is not None and want + used.get(res, 0) > have:
            return res
    return None


def too_large(req: dict, alloc: dict, described: bool = False) -> list:
    """[(resource, requested, allocatable)] of every resource of which one pod alone asks
    more than a node has (cpu first, then fit_order)."""
    out = [("cpu", req["cpu"], alloc["cpu"])] if req["cpu"] > alloc["cpu"] else []
    for res in fit_order(req):
        if short_of({res: req.get(res, 0)}, alloc, None, described) == res:
            out.append((res, req[res], known(res, alloc, described)))
    return out


def unknown(req: dict, alloc: dict, described: bool = False) -> list:
    """[(resource, requested)] of the resources `req` asks a non-zero amount of whose node
    allocatable krm-fn does not know (known is None), memory left out (the pool's
    memory description is its own finding), in fit_order."""
    return [(r, req[r]) for r in fit_order(req)
            if r != "memory" and req.get(r, 0) and known(r, alloc, described) is None]


def amount_text(res: str, value) -> str:
    """`value` of `res` for a message: memory in Gi (4 significant digits), cpu
    (nanocores) in cores, huge pages and ephemeral-storage as a binary quantity, an extended
    resource as the count it is."""
    if res == "memory":
        return _gib(value)
    if res == "cpu":
        return quantity.format_cpu(value)
    if res.startswith(HUGEPAGES) or res == "ephemeral-storage":
        return quantity.format_bytes(value)
    return str(value)


def each_cpu(pod: AdmittedPod, node: NodeModel, req: int, qos: str) -> str:
    """The cpu one replica takes from allocatable, `req` (nanocores), for a message: `4 + 50m`
    when the regular and sidecar containers (and the pod overhead) make it up and part of
    it is exclusive (4 exclusive CPUs; 50m in the shared pool or overhead), else `req`
    alone (`4050m`, `4`). `req` is rounded up to 1m (pod_requests), so is the sum."""
    apps = quantity.milli_ceil(sum(c.requests.get("cpu", 0) for c in pod.containers
                                   if c.role != INIT) + (pod.overhead or {}).get("cpu", 0))
    pinned = {n for n, _ in exclusive_requests(pod, node, qos)}
    excl = sum(c.requests.get("cpu", 0) for c in pod.containers
               if c.role != INIT and c.name in pinned)
    if 0 < excl < req and apps == req:
        return f"{quantity.format_cpu(excl)} + {quantity.format_cpu(req - excl)}"
    return quantity.format_cpu(req)


def pod_plan(pod: AdmittedPod, node: NodeModel) -> tuple:
    """(the pod's requests (pod_requests), its QoS class (qos.pod_qos with the node's
    PodLevelResources gate), topology.AdmitPlan): what admitting one more replica of `pod`
    on `node` needs that no replica changes; made once per pod and node
    (model.node_memo)."""
    memo = node_memo(node)
    key = ("plan", id(pod))
    got = memo.get(key)
    if got is None or got[0] is not pod:
        qos = pod_qos(pod, api_gate(node, "PodLevelResources"),
                      api_gate(node, "PodLevelResourcesFixKubeletQOSClass"))
        got = memo[key] = (pod, pod_requests(pod, node), qos, AdmitPlan(pod, node, qos))
    return got[1:]


ALL_IPS = "0.0.0.0"      # a host port without hostIP binds every address (DefaultBindAllHostIP)


def pod_capacity(node: NodeModel) -> tuple[int, str]:
    """(the pods a node of the pool takes, that limit in words): maxPods (default 110), and
    with `podsPerCore` above 0 at most that many per logical CPU: the kubelet's pod capacity
    is min(NumCores * podsPerCore, maxPods) (pkg/kubelet/nodestatus/setters.go
    MachineInfo; cadvisor's NumCores counts logical CPUs)."""
    kubelet = node.kubelet or {}
    max_pods = int(kubelet.get("maxPods", MAX_PODS_DEFAULT))
    per_core = kubelet.get("podsPerCore")
    per_core = per_core if isinstance(per_core, int) and not isinstance(per_core, bool) else 0
    if per_core > 0 and len(node.cpus) * per_core < max_pods:
        n = len(node.cpus) * per_core
        return n, f"pods {n} (podsPerCore {per_core} × {len(node.cpus)} CPUs)"
    return max_pods, f"maxPods {max_pods}"


class Packer:
    """One node of the pool with only its DaemonSet pods (`node.daemons`), filled pod after
    pod. `count` pods placed besides them; `why` the limit the last refused pod hit (""
    while nothing was refused), e.g. `allocatable cpu 28: 4 + 50m each (OutOfcpu)`;
    `limit` the same without the kubelet's reason (`allocatable cpu 28: 4 + 50m each`,
    `maxPods 110`, `TopologyAffinityError`); `last` the topology.Admission of the last pod
    the resource managers admitted or refused (None when the last refusal came before
    them)."""

    def __init__(self, node: NodeModel):
        self.node = node
        self.state = NodeState(node)
        self.alloc = allocatable(node)
        self.cpu = 0            # cpu placed so far, exactly (nanocores)
        self.memory = 0
        self.used: dict = {}      # every other resource placed so far (bytes, counts)
        self.described = bool(node.from_node)
        self.max_pods, self.pods_limit = pod_capacity(node)
        self.count = self.total = 0
        self.why = self.limit = ""
        self.last = None
        self.daemon_cpu = 0       # what the DaemonSet pods took (nanocores), once placed
        self.ports: dict = {}     # host IP -> {(protocol, port)} reserved on the node
        self.placed: dict = {}    # id -> each AdmittedPod placed (pod anti-affinity)
        self.anti = False         # some pod placed has pod anti-affinity terms
        self.unknown = None     # (why, limit) when a DaemonSet pod's admission is not modelled
        for daemon in node.daemons:         # on every node before anything else
            if not self.place(daemon) and self.limit == BEYOND:
                self.unknown = (self.why, self.limit)
                break
        self.count, self.why, self.limit = 0, "", ""
        self.daemon_cpu = self.cpu

    def place(self, pod: AdmittedPod) -> bool:
        """Place one replica of `pod`; False (and `why`, `limit` set) when it does not fit,
        or when krm-fn does not model the admission of a DaemonSet pod placed before
        (`unknown`: then nothing more is counted)."""
        self.last = None
        if self.unknown is not None:
            self.why, self.limit = self.unknown
            return False
        if pod.host_ports:
            taken = self._port_taken(pod.host_ports)
            if taken is not None:
                self.limit = f"host port {taken}"
                self.why = f"{self.limit} (NodePorts: node(s) didn't have free ports for " \
                           f"the requested pod ports)"
                return False
        if self.total >= self.max_pods:
            self.why = self.limit = self.pods_limit
            return False
        req, qos, plan = pod_plan(pod, self.node)
        cpu = self.cpu + req["cpu"]
        if cpu > self.alloc["cpu"]:
            taken = (f", {quantity.format_cpu(self.daemon_cpu)} of it taken by DaemonSet "
                     f"pods" if self.daemon_cpu else "")
            self.limit = (f"allocatable cpu {quantity.format_cpu_rounded(self.alloc['cpu'])}"
                          f"{taken}: {each_cpu(pod, self.node, req['cpu'], qos)} each")
            self.why = f"{self.limit} (OutOfcpu)"
            return False
        short = short_of(req, self.alloc, {**self.used, "memory": self.memory},
                         self.described)
        if short is not None:
            have = known(short, self.alloc, self.described)
            self.limit = (f"allocatable {short} {amount_text(short, have)}: "
                          f"{amount_text(short, req[short])} each")
            self.why = f"{self.limit} (OutOf{short})"
            return False
        if pod.anti or self.anti:
            from krm_fn.admission import podaffinity
            why = podaffinity.refused(pod, list(self.placed.values()))
            if why is not None:
                self.limit = "pod anti-affinity"
                self.why = f"{self.limit} (InterPodAffinity: {why})"
                return False
        trial = self.state.copy()
        outcome = self.last = admit(pod, self.node, trial, qos, plan)
        if not outcome.admitted:
            self.why = f"{outcome.reason}: {outcome.message}"
            self.limit = outcome.reason
            return False
        self.state = trial
        self.cpu = cpu
        self.memory += req["memory"]
        for res, amount in req.items():
            if res != "cpu" and res != "memory":
                self.used[res] = self.used.get(res, 0) + amount
        for proto, ip, port in pod.host_ports:
            self.ports.setdefault(ip or ALL_IPS, set()).add((proto or "TCP", port))
        self.placed[id(pod)] = pod
        self.anti = self.anti or bool(pod.anti)
        self.count += 1
        self.total += 1
        return True

    def _port_taken(self, ports: tuple) -> str | None:
        """`TCP/8080` for the first of `ports` ((protocol, hostIP, port)) that a pod placed
        before holds, else None: 0.0.0.0 ("" too) conflicts with every IP, another IP with
        itself and 0.0.0.0 (k8s.io/kube-scheduler framework/types.go
        HostPortInfo.CheckConflict)."""
        for proto, ip, port in ports:
            pp, ip = (proto or "TCP", port), ip or ALL_IPS
            held = self.ports.values() if ip == ALL_IPS else (
                self.ports.get(ALL_IPS, ()), self.ports.get(ip, ()))
            if any(pp in h for h in held):
                return f"{pp[0]}/{port}" if ip == ALL_IPS else f"{pp[0]}/{ip}:{port}"
        return None


def _gib(v: int) -> str:
    return f"{v / 2**30:.4g}Gi"


def fit_detail(pod: AdmittedPod, node: NodeModel) -> tuple[int, str, str]:
    """(replicas of `pod` that fit on one empty node of the pool, the limit that stops the
    next one, that limit in short: Packer.why and Packer.limit) — e.g. (6, "allocatable
    cpu 28: 4 + 50m each (OutOfcpu)", "allocatable cpu 28: 4 + 50m each")."""
    packer = Packer(node)
    while packer.place(pod):
        pass
    return packer.count, packer.why, packer.limit


def fit_one(pod: AdmittedPod, node: NodeModel) -> tuple[int, str]:
    """(replicas of `pod` that fit on one empty node of the pool, the limit that stops the
    next one) — e.g. (10, "TopologyAffinityError: ...") (fit_detail without the short
    form)."""
    return fit_detail(pod, node)[:2]


def fit(pods: list[AdmittedPod], node: NodeModel) -> list[int]:
    """Replicas of each pod that fit on one empty node, each pod alone."""
    return [fit_one(p, node)[0] for p in pods]


def fit_mix(pods: list, node: NodeModel) -> list[int]:
    """How many of each fit on ONE empty node when packed in order: `pods` is a list of
    AdmittedPod or (AdmittedPod, wanted) with wanted an int or None (as many as fit). Each
    pod in turn gets up to `wanted` replicas on what the earlier ones left; returns the
    count placed per entry."""
    packer = Packer(node)
    out = []
    for entry in pods:
        pod, wanted = entry if type(entry) is tuple else (entry, None)
        placed = 0
        while (wanted is None or placed < wanted) and packer.place(pod):
            placed += 1
        out.append(placed)
    return out
