"""The data of the admission model: what a pod is after admission, what a node of a pool is.

Units everywhere: cpu in nanocores as `int` (quantity.parse_cpu(...).nanos; krm_fn.quantity.NANO
per core), memory and hugepages in bytes as `int`. Resource names are the Kubernetes ones (`cpu`,
`memory`, `hugepages-2Mi`, `hugepages-1Gi`, ...).
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn.results import ERROR, INFO, WARNING, Ref  # noqa: F401 (re-exported)

APP, INIT, SIDECAR = "app", "init", "sidecar"
HUGEPAGES = "hugepages-"    # the prefix of the huge page resources (hugepages-2Mi, ...)
DEPENDS = "depends"   # severity-like marker: the outcome depends on what else runs there


class Container(namedtuple("Container", "name role requests limits source designated")):
    """One container as the kubelet will see it.

    `name`; `role`: APP (spec.containers), INIT (a regular init container) or SIDECAR (an
    init container with restartPolicy Always, KEP-753); `requests` / `limits`: {resource
    name: amount} after API defaulting (a limit without a request gives request = limit:
    pkg/apis/core/v1/defaults.go), cpu in nanocores (int), everything else in bytes
    (int); `source`: "manifest" or the ID of the injector that adds it; `designated`:
    krm-fn pins it (a pinned container of the config or annotations).
    """

    __slots__ = ()

    def __new__(cls, name: str, role: str = APP, requests: dict | None = None,
                limits: dict | None = None, source: str = "manifest", designated: bool = False):
        return super().__new__(cls, name, role, {} if requests is None else requests,
                               {} if limits is None else limits, source, designated)


class Injection(namedtuple("Injection", "injector title why containers guaranteed fix",
                           defaults=((), True, ""))):
    """One admission-time injector that fires for a pod.

    `injector`: its ID (krm_fn/admission/injectors/<ID>.py); `title`: human name
    ("Istio istio-proxy"); `why`: what triggers it ("namespace label
    istio-injection=enabled"); `containers`: the Containers it adds, with the resources
    they will get as far as known; `guaranteed`: every added container will have requests
    == limits for cpu and memory; `fix`: when not guaranteed, exactly what to change where
    (annotation, ConfigMap key, custom resource field), else "".
    """

    __slots__ = ()


class AdmittedPod(namedtuple("AdmittedPod", "ref path containers pod_requests pod_limits "
                             "injections node_selector affinity tolerations namespace findings "
                             "overhead active_deadline priority_class host_ports labels "
                             "anti")):
    """A pod as the kubelet will see it after admission.

    `ref`, `path`: the workload and the pod spec's field path, for results;
    `containers`: init containers (INIT and SIDECAR, in spec order) then app containers,
    the injected ones where the injector puts them; `pod_requests` / `pod_limits`: the
    pod-level `spec.resources` (KEP-2837), None when not set; `injections`: the
    injectors that fire; `node_selector`: the pod's nodeSelector after krm-fn's edits;
    `affinity`: the pod's `affinity` (plain data) or None; `tolerations`: list (plain);
    `namespace`: the pod's namespace ("" unknown); `findings`: problems found while
    building the model (Finding), e.g. an injector whose resources cannot be known;
    `overhead`: {resource: amount} the RuntimeClass admission controller sets as
    `spec.overhead` (the RuntimeClass's `overhead.podFixed`, KEP-688), {} when none;
    `active_deadline`: the pod's `spec.activeDeadlineSeconds` as written (plain data, None
    when not set; the ResourceQuota scopes Terminating / NotTerminating read it);
    `priority_class`: the pod's priorityClassName after the Priority admission plugin as
    far as the input tells: the spec's, else the name of the input's globalDefault
    PriorityClass (the lowest value among several), else "" (the ResourceQuota scope
    PriorityClass reads it); `host_ports`: the (protocol, hostIP, port) the scheduler's
    NodePorts filter and the kubelet's admission reserve on the node, from the app
    containers and the sidecars (pkg/scheduler/util/utils.go GetHostPorts), () for none;
    `labels`: the pod's labels (plain, {} for none); `anti`: its required pod anti-affinity
    terms krm-fn judges (podaffinity.terms), () for none.
    """

    __slots__ = ()

    def __new__(cls, ref: Ref, path: str, containers: tuple = (),
                pod_requests: dict | None = None, pod_limits: dict | None = None,
                injections: tuple = (), node_selector: dict | None = None,
                affinity: dict | None = None, tolerations: tuple = (), namespace: str = "",
                findings: tuple = (), overhead: dict | None = None,
                active_deadline: object = None, priority_class: str = "",
                host_ports: tuple = (), labels: dict | None = None, anti: tuple = ()):
        return super().__new__(
            cls, ref, path, containers, pod_requests, pod_limits, injections,
            {} if node_selector is None else node_selector, affinity, tolerations, namespace,
            findings, {} if overhead is None else overhead, active_deadline, priority_class,
            host_ports, {} if labels is None else labels, anti)


def same_namespace(obj: dict, namespace: str) -> bool:
    """An object `obj` (plain: an autoscaler, a LimitRange, a ResourceQuota) may sit in
    the workload's `namespace`: the same metadata.namespace, or either one unset. An object
    without a namespace lands where the tool that applies it puts it (`kubectl apply -n`,
    Argo CD's destination namespace, Flux's targetNamespace), which is where an
    Application's workloads go too, so krm-fn counts it (failing closed) rather than
    assuming another namespace."""
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    mine = str(md.get("namespace") or "")
    return not mine or not namespace or mine == namespace


class NodeModel(namedtuple("NodeModel", "pool labels kubelet version cpus reserved_cpus "
                           "numa_memory allocatable daemons from_node taints")):
    """One node of a pool, as its kubelet runs.

    `pool`: pool name; `labels`: the labels every node of the pool carries: the pool's
    nodeSelector, then `kubernetes.io/os: linux` (the kubelet sets it from runtime.GOOS,
    and krm-fn's kubelet configs are Linux ones) and the `kubernetes.io/os` /
    `kubernetes.io/arch` of the pool's `topology.fromNode` Node, where the nodeSelector
    does not name them (scheduling.known_labels); `kubelet`: the
    merged KubeletConfiguration (the emitted one on top of `spec.output.baseline`, plain
    data, kubelet field names); `version`: (major, minor); `cpus`: every logical CPU
    (topology.Cpu: cpu, core, socket, numa); `reserved_cpus`: reservedSystemCPUs ids;
    `numa_memory`: {NUMA node id: {resource: bytes}} capacity per NUMA node (`memory`,
    `hugepages-<size>`), {} when the config does not describe memory; `allocatable`:
    node allocatable {resource: amount} where it is known otherwise than from this model
    (capacity.allocatable derives the rest: capacity minus kube/system reserved and the
    hard eviction threshold); with a `fromNode` Node, its status.allocatable of every
    resource other than cpu, memory, hugepages and pods (ephemeral-storage in bytes,
    extended resources such as nvidia.com/gpu as counts), else usually {}; `daemons`:
    AdmittedPods of the DaemonSets of the input that run on every node of the pool (as
    krm-fn writes them), placed before anything else; `from_node`: the name of the Node
    (topology.fromNode) whose status.allocatable `allocatable` holds, "" when the pool is
    not described by a Node (then ephemeral-storage and extended resources are unknown,
    not 0); `taints`: the taints of the pool's nodes (taints.Taint, in the nodes' order:
    the merged config's `registerWithTaints`, then the fromNode Node's own;
    taints.pool_taints).
    """

    __slots__ = ()

    def __new__(cls, pool: str, labels: dict, kubelet: dict, version: tuple, cpus: tuple,
                reserved_cpus: frozenset = frozenset(), numa_memory: dict | None = None,
                allocatable: dict | None = None, daemons: tuple = (), from_node: str = "",
                taints: tuple = ()):
        return super().__new__(
            cls, pool, labels, kubelet, version, cpus, reserved_cpus,
            {} if numa_memory is None else numa_memory,
            {} if allocatable is None else allocatable, daemons, from_node, taints)

    @property
    def numa_nodes(self) -> list[int]:
        """Sorted NUMA node ids."""
        return sorted({c.numa for c in self.cpus})

    @property
    def threads_per_core(self) -> int:
        """SMT siblings per physical core (the largest count of CPUs sharing a core)."""
        per: dict = {}
        for c in self.cpus:
            per[c.core] = per.get(c.core, 0) + 1
        return max(per.values()) if per else 1


_PER_NODE: dict = {}        # id(node) -> (node, {key: value derived from that node})
_PER_NODE_MAX = 64


def node_memo(node: NodeModel) -> dict:
    """The dict of values derived from `node` (and pods placed on it) that its users keep
    (feature gates, the CPU Manager's topology tables, per-pod admission plans): the same
    dict for the same NodeModel object, a new one for another. A render builds each
    node's model once and asks the same questions of it for every pod and replica. An
    entry counts only while it was made for this very node (an id can be reused once a
    node is gone); all are dropped when _PER_NODE_MAX nodes are held."""
    hit = _PER_NODE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    if len(_PER_NODE) >= _PER_NODE_MAX:
        _PER_NODE.clear()
    memo: dict = {}
    _PER_NODE[id(node)] = (node, memo)
    return memo


class Finding(namedtuple("Finding", "severity message rule path", defaults=(None,))):
    """One conclusion of the model. `severity`: ERROR (can never succeed: the pod is not
    Guaranteed, is refused by a webhook, never schedules or is never admitted), WARNING,
    INFO or DEPENDS (the outcome depends on what else runs on the node at that moment);
    `message`: what happens, why, and the fix (where to change what), citing the kubelet
    source or KEP; `rule`: the model part that found it (`qos`, `cpumanager`, `topology`,
    `memorymanager`, `scheduling`, `webhook`, `podlevel`, `injection`, `capacity`,
    `validation`, `vpa`, `hpa`, `resourcequota`, `limitrange`, `podsecurity`); `path`: field path
    in the workload or None."""

    __slots__ = ()


class PodVerdict(namedtuple("PodVerdict", "qos exclusive numa injected fit findings numa_of "
                            "fit_limit unless", defaults=((), (), (), None, (), (), "", ""))):
    """The verdict on one pod on one node of its pool.

    `qos`: "Guaranteed", "Burstable" or "BestEffort" after admission; `exclusive`:
    ((container name, cpus), ...) of the containers that get exclusive CPUs, in allocation
    order; `numa`: NUMA node ids the pod's exclusive CPUs (and memory under Static) come
    from on an empty node, () when none; `injected`: names of the injected containers;
    `fit`: replicas of this pod that fit on one empty node (None: not computed);
    `findings`: Finding tuple; `numa_of`: ((container name, NUMA ids), ...) of the
    containers in `exclusive`; `fit_limit`: what stops one more replica, in short
    (capacity.Packer.limit, e.g. `allocatable cpu 28: 4 + 50m each`; "" when unknown);
    `unless`: what an injecting webhook krm-fn does not model may do to a Guaranteed pod
    (unmodelled.unless, e.g. ` unless Kuma sidecar injector injects ... without equal
    requests and limits`; "" when none fires).
    """

    __slots__ = ()

    @property
    def pinned(self) -> bool:
        """Some container gets exclusive CPUs and no finding is an error."""
        return bool(self.exclusive) and not any(f.severity == ERROR for f in self.findings)
