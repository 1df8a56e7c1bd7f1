"""The KubeletConfiguration fields krm-fn writes or checks: one `Field` entry each, in `FIELDS`.

Each entry holds what the rest of `krm_fn.node` needs to know about a field: its Go type and
the shape krm-fn reads it as, the kubelet's default, the Kubernetes version and feature gates
it needs, whether changing it needs the CPU or Memory Manager checkpoint deleted, the typed
`spec.nodePools[].kubelet` field that sets it, and each output format's name for it (or why
the platform cannot set it). The plan (`node.plan`), the baseline merge and state-change
detection (`node.baseline`) and every format (`node.formats`) read this table; no other
module lists kubelet field names.

Sources (cited per entry in `Field.source` when more specific):

- fields, types, defaults: kubelet config API reference,
  https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/ (generated from
  kubernetes/kubernetes staging/src/k8s.io/kubelet/config/v1beta1/types.go; defaults in
  pkg/kubelet/apis/config/v1beta1/defaults.go);
- feature gates: https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/
  (kubernetes/kubernetes pkg/features/kube_features.go);
- checkpoint reset: https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/
  ("Changing the CPU Manager Policy") and
  https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/;
- platforms: GKE https://cloud.google.com/kubernetes-engine/docs/how-to/node-system-config,
  AKS https://learn.microsoft.com/en-us/azure/aks/custom-node-configuration, OpenShift Machine
  Config Operator (openshift/machine-config-operator
  pkg/controller/kubelet-config/helpers.go validateUserKubeletConfig), Talos
  https://www.talos.dev/latest/reference/configuration/v1alpha1/config/ (machine.kubelet
  .extraConfig), EKS nodeadm https://awslabs.github.io/amazon-eks-ami/nodeadm/.
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn.node import upstream

Version = tuple[int, int]

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"
# The document header: not settings; never warned about, never set through kubelet.extra.
HEADER = ("apiVersion", "kind")

CPU_STATE = "/var/lib/kubelet/cpu_manager_state"
MEMORY_STATE = "/var/lib/kubelet/memory_manager_state"

REFERENCE = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/"
CPU_MANAGER_DOC = "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"
TOPOLOGY_DOC = "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/"
MEMORY_MANAGER_DOC = "https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/"
RESERVE_DOC = "https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/"
EVICTION_DOC = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
CGROUPS_DOC = "https://kubernetes.io/docs/concepts/architecture/cgroups/"

# Output formats by how they treat fields: OPEN formats carry every field under its own name
# unless the table says the platform refuses it (Off); CLOSED formats carry only the fields
# the table names for them (On) and warn about every other one.
OPEN, CLOSED = "open", "closed"
FORMAT_KIND: dict[str, str] = {
    "configmap": OPEN, "kubelet-config": OPEN, "kubeadm": OPEN, "json6902": OPEN,
    "eks": OPEN, "openshift": OPEN, "talos": OPEN, "gke": CLOSED, "aks": CLOSED,
    # the PerformanceProfile carries the rest in its kubeletconfig.experimental annotation,
    # through the MCO like `openshift` (node/formats/performance_profile.py)
    "performance-profile": OPEN,
}


class On(namedtuple("On", "name convert omit_default owner platform_default bounds",
                    defaults=("", False, "", None, None))):
    """A platform sets the field. `name`: its name there (dots: nested maps below the
    platform's root, e.g. GKE `topologyManager.policy`); `convert`: the name of a value
    conversion the format module implements ("" = the value as is); `omit_default`: a value
    equal to the kubelet default is left out silently (the platform's own default);
    `owner`: another component that owns the field on this platform ("" = none);
    `platform_default`: what the platform writes when the field is not given (None = nothing
    krm-fn must account for); `bounds`: (kind, low, high), both ends in, of the values the
    platform's API takes: kind "int", "size" (bytes, written in Ki, Mi or Gi) or
    "duration" (nanoseconds); None: no range (the format module leaves a value outside out,
    with a warning)."""

    __slots__ = ()


class Off(namedtuple("Off", "reason unless_empty", defaults=("",))):
    """A platform cannot set the field: `reason` says why, or what to do instead.
    `unless_empty`: a key of the field's map value; the field passes when that key is unset
    (e.g. OpenShift refuses `memorySwap` only for `memorySwap.swapBehavior`)."""

    __slots__ = ()


class Field:
    """One KubeletConfiguration field.

    `name`: JSON name; `type`: Go type in types.go; `shape`: how krm-fn reads a value (one of
    SHAPES); `default`: the kubelet's default on every supported version (None: nil, the
    field is unset); `upstream_default`: the default differs per version and comes from the
    generated upstream data (krm_fn.node.upstream; `default` is then None); which versions
    have the field comes from the generated data too (krm_fn.node.upstream.field_since);
    `gates`: feature gates the field needs; `state`: CPU_STATE / MEMORY_STATE when a change
    of the field needs that checkpoint deleted (else None); `managed`: krm-fn writes the field
    itself, so `kubelet.extra` may not set it; `typed`: the `spec.nodePools[].kubelet` field
    that sets it (None: derived from the pool's other settings); `reported_at`: the typed
    field results about it point at when not `typed`; `omit_at_default`: a platform that
    cannot set it leaves it out silently at the default (the manager is off anyway);
    `excludes`: fields the kubelet refuses next to this one; `enforced_by`:
    enforceNodeAllocatable entries that need this (cgroup) field set; `consequence`: what
    happens when a platform cannot set it; `platforms`: format name -> On / Off;
    `source`: upstream reference; `baseline`: krm-fn reads the field from the node's current
    configuration (`spec.output.baseline`), so a baseline check must verify its shape;
    `judged`: the verdict (krm_fn.admission) reads the field, so a platform that cannot set
    it runs another value than the one the pods were judged with (an error in that format,
    krm_fn.node.formats._common.Report.unsupported).
    """

    __slots__ = ("name", "type", "shape", "default", "upstream_default", "gates", "state",
                 "managed", "typed", "reported_at", "omit_at_default", "excludes",
                 "enforced_by", "consequence", "platforms", "source", "baseline", "judged")

    def __init__(self, name: str, type: str, shape: str, default: object = None,
                 upstream_default: bool = False, gates: tuple = (), state: str | None = None,
                 managed: bool = False, typed: str | None = None,
                 reported_at: str | None = None, omit_at_default: bool = False,
                 excludes: tuple = (), enforced_by: tuple = (), consequence: str = "",
                 platforms: dict | None = None, source: str = REFERENCE,
                 baseline: bool = False, judged: bool = False):
        self.name, self.type, self.shape, self.default = name, type, shape, default
        self.upstream_default, self.gates, self.state = upstream_default, gates, state
        self.managed, self.typed, self.reported_at = managed, typed, reported_at
        self.omit_at_default, self.excludes = omit_at_default, excludes
        self.enforced_by, self.consequence = enforced_by, consequence
        self.platforms = {} if platforms is None else platforms
        self.source, self.baseline, self.judged = source, baseline, judged

    def __repr__(self) -> str:
        return f"Field({self.name!r})"

    def default_for(self, version: Version) -> object:
        """The kubelet default on Kubernetes `version` (major, minor)."""
        if self.upstream_default:
            return upstream.eviction_hard_default(version)
        return self.default


# How krm-fn reads a value of each shape (what a baseline check of that field verifies):
SHAPES = {
    "text": "a string (a scalar written as text)",
    "cpuset": "a cpuset string such as 0-1,32-33",
    "duration": "a Go duration string such as 10s",
    "int": "a whole number",
    "bool": "true or false",
    "factor": "a number in (0, 1]",
    "quantity-map": "a map of resource name to quantity (hugepages-<size> allowed)",
    "eviction-map": "a map of eviction signal to quantity or percentage",
    "string-map": "a map of string to string",
    "bool-map": "a map of name to true/false",
    "string-list": "a list of strings",
    "memory-reservations": "a list of {numaNode, limits}",
    "object": "a structure krm-fn passes through unread",
}

# Python type a value of each scalar shape is written as.
_SCALAR = {"text": str, "duration": str, "cpuset": str, "int": int, "bool": bool}


def coerce(name: str, value: object) -> object:
    """`value` (a typed pool setting) as field `name` is written: str for text, duration and
    cpuset fields, int for int, bool for bool. Raises KeyError for a field not in the table
    or not of a scalar shape."""
    return _SCALAR[BY_NAME[name].shape](value)


_NTO = "Node Tuning Operator PerformanceProfile"
_TALOS = "Talos manages it itself and does not let machine.kubelet.extraConfig override it"
_MCO_SWAP = "configure swap through the MCO's own swap support instead"
_MCO_NET = "the MCO sets it from the cluster network configuration"


def _f(name: str, type_: str, shape: str, default: object = None, **kw) -> Field:
    return Field(name, type_, shape, default, **kw)


def _b(name: str, type_: str, shape: str, default: object = None, **kw) -> Field:
    """A field the plan also reads from the baseline (spec.output.baseline)."""
    return Field(name, type_, shape, default, baseline=True, **kw)


FIELDS: tuple[Field, ...] = (
    _b("featureGates", "map[string]bool", "bool-map", managed=False,
       source="https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/",
       consequence="the gates keep their defaults (the kubelet refuses alpha CPU Manager "
                   "options without CPUManagerPolicyAlphaOptions)",
       platforms={"openshift": Off("set them cluster-wide in the FeatureGate CR `cluster` "
                                   "(spec.featureSet: CustomNoUpgrade with spec.customNoUpgrade"
                                   ".enabled; CustomNoUpgrade cannot be undone and blocks minor "
                                   "upgrades)")}),
    _b("cpuManagerPolicy", "string", "text", "none", state=CPU_STATE, managed=True,
       judged=True,
       source=CPU_MANAGER_DOC,
       platforms={"gke": On("cpuManagerPolicy"), "aks": On("cpuManagerPolicy"),
                  "openshift": On("cpuManagerPolicy", owner=_NTO),
                  "performance-profile": On("spec.cpu", owner=_NTO, platform_default="static")}),
    _b("cpuManagerPolicyOptions", "map[string]string", "string-map", managed=True,
       judged=True,
       typed="cpuManagerPolicyOptions", source=CPU_MANAGER_DOC,
       consequence="the static CPU Manager runs without these options (without "
                   "full-pcpus-only a pinned container can get half a physical core and "
                   "share its L1/L2 with another pod)",
       platforms={"openshift": On("cpuManagerPolicyOptions", owner=_NTO)}),
    _f("cpuManagerReconcilePeriod", "metav1.Duration", "duration", "10s", managed=True,
       typed="cpuManagerReconcilePeriod", source=CPU_MANAGER_DOC,
       consequence="the kubelet default (10s) applies",
       platforms={"openshift": On("cpuManagerReconcilePeriod", owner=_NTO),
                  "performance-profile": On("spec.cpu", owner=_NTO, platform_default="5s")}),
    _b("topologyManagerPolicy", "string", "text", "none", managed=True,
       judged=True,
       typed="topologyManagerPolicy", omit_at_default=True, source=TOPOLOGY_DOC,
       consequence="the kubelet default `none` applies: no NUMA alignment",
       platforms={"gke": On("topologyManager.policy"), "aks": On("topologyManagerPolicy"),
                  "openshift": On("topologyManagerPolicy", owner=_NTO),
                  "performance-profile": On("spec.numa.topologyPolicy")}),
    _b("topologyManagerPolicyOptions", "map[string]string", "string-map", managed=True,
       judged=True,
       typed="topologyManagerPolicyOptions", source=TOPOLOGY_DOC,
       consequence="the Topology Manager runs without these options (on nodes with more "
                   "than 8 NUMA nodes a policy other than none then stops the kubelet)"),
    _b("topologyManagerScope", "string", "text", "container", managed=True,
       judged=True,
       typed="topologyManagerScope", omit_at_default=True, source=TOPOLOGY_DOC,
       consequence="the kubelet default scope `container` applies: the containers of a pod "
                   "can be aligned to different NUMA nodes",
       platforms={"gke": On("topologyManager.scope")}),
    _b("reservedSystemCPUs", "string", "cpuset", "", state=CPU_STATE, managed=True,
       typed="reservedSystemCPUs", source=RESERVE_DOC,
       consequence="the static policy then reserves ceil(kubeReserved.cpu + "
                   "systemReserved.cpu) CPUs of the platform's own reservation, chosen by the "
                   "kubelet, and system daemons are not kept off the pinned cores",
       platforms={"openshift": On("reservedSystemCPUs", owner=_NTO),
                  "performance-profile": On("spec.cpu.reserved")}),
    _b("memoryManagerPolicy", "string", "text", "None", state=MEMORY_STATE, managed=True,
       judged=True,
       typed="memoryManagerPolicy", omit_at_default=True, source=MEMORY_MANAGER_DOC,
       consequence="the kubelet default `None` applies: memory is not NUMA-aligned",
       platforms={"gke": On("memoryManager.policy", omit_default=True),
                  "openshift": On("memoryManagerPolicy", owner=_NTO)}),
    _b("reservedMemory", "[]MemoryReservation", "memory-reservations", state=MEMORY_STATE,
       managed=True, typed="reservedMemory", reported_at="memoryManagerPolicy",
       source=MEMORY_MANAGER_DOC,
       consequence="the platform must size the Memory Manager's reservation itself",
       platforms={"openshift": On("reservedMemory", owner=_NTO)}),
    _b("kubeReserved", "map[string]string", "quantity-map", managed=True, typed="kubeReserved",
       source=RESERVE_DOC, consequence="the platform's own kubeReserved applies",
       platforms={"eks": On("kubeReserved",
                            platform_default={"memory": "11 * maxPods + 255 Mi"})}),
    _b("systemReserved", "map[string]string", "quantity-map", managed=True,
       typed="systemReserved", source=RESERVE_DOC,
       consequence="the platform's own systemReserved applies",
       platforms={"talos": On("systemReserved", platform_default=(
           "{cpu: 50m, memory: 384Mi (workers) / 512Mi (control planes), pid: 100, "
           "ephemeral-storage: 256Mi}"))}),
    # default: pkg/kubelet/eviction/defaults_linux.go of the version (imagefs.inodesFree
    # since 1.30, kubernetes/kubernetes#121834), from the generated data; setting the map
    # replaces the whole default set unless mergeDefaultEvictionSettings (1.33+) is true.
    _b("evictionHard", "map[string]string", "eviction-map", None, upstream_default=True,
       managed=True, typed="evictionHard", source=EVICTION_DOC,
       consequence="the platform's own hard eviction thresholds apply"),
    _f("podPidsLimit", "*int64", "int", -1, managed=True, typed="podPidsLimit",
       source="https://kubernetes.io/docs/concepts/policy/pid-limiting/",
       consequence="pods get the platform's default pids limit",
       # GKE: podPidsLimit >= 1024 and < 4194304 (google.container.v1 NodeKubeletConfig)
       platforms={"gke": On("podPidsLimit", bounds=("int", 1024, 4194303)),
                  "aks": On("podMaxPids")}),
    _f("failCgroupV1", "*bool", "bool", True,
       managed=True, typed="failCgroupV1", source=CGROUPS_DOC,
       consequence="the kubelet does not refuse cgroup v1: make sure the nodes run cgroup v2",
       platforms={"gke": On("linuxConfig.cgroupMode", convert="cgroup-mode")}),
    _f("singleProcessOOMKill", "*bool", "bool", False, managed=True,
       typed="singleProcessOOMKill", source=CGROUPS_DOC,
       platforms={"gke": On("singleProcessOomKill")}),
    _f("cgroupDriver", "string", "text", "cgroupfs", managed=True, typed="cgroupDriver",
       source="https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/"
              "configure-cgroup-driver/",
       platforms={"openshift": Off("the MCO sets the cgroup driver itself")}),
    _b("systemReservedCgroup", "string", "text", "", excludes=("reservedSystemCPUs",),
       enforced_by=("system-reserved", "system-reserved-compressible"), source=RESERVE_DOC,
       platforms={"eks": On("systemReservedCgroup", platform_default="/system")}),
    _b("kubeReservedCgroup", "string", "text", "", excludes=("reservedSystemCPUs",),
       enforced_by=("kube-reserved", "kube-reserved-compressible"), source=RESERVE_DOC,
       platforms={"eks": On("kubeReservedCgroup", platform_default="/runtime")}),
    _b("enforceNodeAllocatable", "[]string", "string-list", ["pods"], source=RESERVE_DOC),
    _b("cpuCFSQuota", "*bool", "bool", True,
       platforms={"gke": On("cpuCFSQuota"), "aks": On("cpuCfsQuota")}),
    _f("cpuCFSQuotaPeriod", "*metav1.Duration", "duration", "100ms",
       gates=("CustomCPUCFSQuotaPeriod",),
       platforms={"gke": On("cpuCFSQuotaPeriod", bounds=("duration", 10**6, 10**9)),
                  "aks": On("cpuCfsQuotaPeriod")}),
    _b("memoryThrottlingFactor", "*float64", "factor", 0.9, gates=("MemoryQoS",),
       source="https://kep.k8s.io/2570"),
    _f("containerLogMaxSize", "string", "text", "10Mi",
       platforms={"gke": On("containerLogMaxSize", bounds=("size", 10 * 2**20, 500 * 2**20)),
                  "aks": On("containerLogMaxSizeMB", convert="mib")}),
    _f("containerLogMaxFiles", "*int32", "int", 5,
       platforms={"gke": On("containerLogMaxFiles", bounds=("int", 2, 10)),
                  "aks": On("containerLogMaxFiles", convert="at-least-2")}),
    _f("allowedUnsafeSysctls", "[]string", "string-list",
       platforms={"gke": On("allowedUnsafeSysctls"), "aks": On("allowedUnsafeSysctls")}),
    _f("maxParallelImagePulls", "*int32", "int",
       platforms={"gke": On("maxParallelImagePulls", bounds=("int", 2, 5))}),
    _f("imageGCHighThresholdPercent", "*int32", "int", 85,
       platforms={"gke": On("imageGcHighThresholdPercent", bounds=("int", 10, 85)),
                  "aks": On("imageGcHighThreshold")}),
    _f("imageGCLowThresholdPercent", "*int32", "int", 80,
       platforms={"gke": On("imageGcLowThresholdPercent", bounds=("int", 10, 85)),
                  "aks": On("imageGcLowThreshold")}),
    _f("imageMinimumGCAge", "metav1.Duration", "duration", "2m",
       platforms={"gke": On("imageMinimumGcAge", bounds=("duration", 1, 120 * 10**9))}),
    _f("imageMaximumGCAge", "metav1.Duration", "duration", "0s",
       platforms={"gke": On("imageMaximumGcAge")}),
    _f("evictionSoft", "map[string]string", "eviction-map", source=EVICTION_DOC,
       platforms={"gke": On("evictionSoft", convert="signals")}),
    _f("evictionSoftGracePeriod", "map[string]string", "string-map", source=EVICTION_DOC,
       platforms={"gke": On("evictionSoftGracePeriod", convert="signals")}),
    _f("evictionMinimumReclaim", "map[string]string", "eviction-map", source=EVICTION_DOC,
       platforms={"gke": On("evictionMinimumReclaim", convert="signals")}),
    _f("evictionMaxPodGracePeriod", "int32", "int", 0, source=EVICTION_DOC,
       platforms={"gke": On("evictionMaxPodGracePeriodSeconds", bounds=("int", 0, 300))}),
    _f("failSwapOn", "*bool", "bool", True,
       platforms={"aks": On("failSwapOn"), "openshift": Off(_MCO_SWAP)}),
    _f("memorySwap", "MemorySwapConfiguration", "object", gates=("NodeSwap",),
       platforms={"openshift": Off(_MCO_SWAP, unless_empty="swapBehavior")}),
    _f("clusterDNS", "[]string", "string-list", platforms={"openshift": Off(_MCO_NET)}),
    _f("clusterDomain", "string", "text", "", platforms={"openshift": Off(_MCO_NET)}),
    _f("staticPodPath", "string", "text", "",
       platforms={"openshift": Off("the MCO owns the static pod path"), "talos": Off(_TALOS)}),
    _f("authentication", "KubeletAuthentication", "object", platforms={"talos": Off(_TALOS)}),
    _f("authorization", "KubeletAuthorization", "object", platforms={"talos": Off(_TALOS)}),
    _f("cgroupRoot", "string", "text", "", platforms={"talos": Off(_TALOS)}),
    _f("kubeletCgroups", "string", "text", "", platforms={"talos": Off(_TALOS)}),
    _f("port", "int32", "int", 10250, platforms={"talos": Off(_TALOS)}),
    _f("protectKernelDefaults", "bool", "bool", False, platforms={"talos": Off(_TALOS)}),
    _f("resolvConf", "*string", "text", "/etc/resolv.conf", platforms={"talos": Off(_TALOS)}),
    _f("rotateCertificates", "bool", "bool", False, platforms={"talos": Off(_TALOS)}),
    _f("systemCgroups", "string", "text", "", platforms={"talos": Off(_TALOS)}),
    _f("seccompDefault", "*bool", "bool", False, platforms={"talos": Off(_TALOS)}),
)

BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}


def get(name: str) -> Field | None:
    """The entry of top-level field `name` (a dotted name is looked up by its first part),
    or None for a field krm-fn neither writes nor checks."""
    return BY_NAME.get(name.partition(".")[0])


def on_platform(name: str, fmt: str) -> On | Off | None:
    """How output format `fmt` treats field `name`: On (the platform's name), Off (why it
    cannot), or None when the table says nothing (an OPEN format then takes the field as is,
    a CLOSED one cannot take it)."""
    f = get(name)
    return None if f is None else f.platforms.get(fmt)


def platform_names(fmt: str) -> dict[str, On]:
    """field name -> On for every field format `fmt` names."""
    return {f.name: p for f in FIELDS for p in [f.platforms.get(fmt)] if isinstance(p, On)}


def refused_by(fmt: str) -> dict[str, Off]:
    """field name -> Off for every field format `fmt` cannot take."""
    return {f.name: p for f in FIELDS for p in [f.platforms.get(fmt)] if isinstance(p, Off)}


def owned_on(fmt: str) -> tuple[str, ...]:
    """Fields another component owns on format `fmt`'s platform (On.owner set), in table
    order."""
    return tuple(n for n, p in platform_names(fmt).items() if p.owner)


def platform_default(fmt: str, name: str) -> object:
    """What format `fmt`'s platform writes for field `name` when it is not given (None:
    nothing krm-fn must account for)."""
    p = on_platform(name, fmt)
    return p.platform_default if isinstance(p, On) else None


# The typed pool fields that set a managed field: name -> typed field or None (derived).
MANAGED: dict[str, str | None] = {**{h: None for h in HEADER},
                                  **{f.name: f.typed for f in FIELDS if f.managed}}
# Fields the plan computes from the pool's settings (the CPU Manager's reservation, the
# Memory Manager's reservedMemory): the upstream file whose refusal is about the computed
# value, and the result paths of those settings. Where the plan's own checks refused one, it
# wrote no value, and what that manager would say of the missing value (no CPU reservation
# for the static policy, a reservedMemory that does not add up) is no news
# (krm_fn.node.plan._check_emitted).
COMPUTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "cpuManagerPolicy": ("pkg/kubelet/cm/cpumanager/cpu_manager.go",
                         ("kubelet.reservedSystemCPUs", "reserved.")),
    "reservedMemory": ("pkg/kubelet/cm/memorymanager/memory_manager.go",
                       ("kubelet.reservedMemory", "kubelet.memoryManagerPolicy", "reserved."))}
# KubeletConfiguration fields whose change needs a checkpoint deleted, CPU state first.
STATE_FIELDS: tuple[Field, ...] = tuple(
    sorted((f for f in FIELDS if f.state), key=lambda f: (f.state != CPU_STATE,)))
# kubeReserved and systemReserved: the quantity maps node allocatable subtracts.
RESERVATIONS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.shape == "quantity-map")
# The fields that set a node's reservation, which GKE and AKS size themselves
# (krm_fn.node.platform_reserved).
PLATFORM_SIZED: tuple[str, ...] = ("reservedSystemCPUs", *RESERVATIONS, "evictionHard")
# Fields the kubelet refuses next to reservedSystemCPUs.
RESERVED_CGROUP_FIELDS: tuple[str, ...] = tuple(
    f.name for f in FIELDS if "reservedSystemCPUs" in f.excludes)
# enforceNodeAllocatable entry -> the cgroup field it needs.
ENFORCEMENT: dict[str, str] = {e: f.name for f in FIELDS for e in f.enforced_by}
# Values krm-fn leaves out silently on platforms that cannot set them (a policy at its
# default: the manager is off anyway).
OMIT_AT_DEFAULT: dict[str, object] = {f.name: f.default for f in FIELDS if f.omit_at_default}


def result_field(name: str) -> str | None:
    """The typed `spec.nodePools[].kubelet` field results about `name` point at: the field
    that sets it (or, for reservedMemory, the policy it follows from); None for a field set
    through `kubelet.extra` or derived from the pool's other settings."""
    f = get(name)
    if f is None or not f.managed:
        return None
    return f.reported_at or f.typed


def baseline_shapes() -> dict[str, str]:
    """field name -> shape (a key of SHAPES) of every field krm-fn reads from the baseline
    (`spec.output.baseline`): what a baseline check must verify before the plan reads it."""
    return {f.name: f.shape for f in FIELDS if f.baseline}


def gate_on_by_default(gate: str, version: Version) -> bool:
    """True when feature gate `gate` is on by default on Kubernetes `version` (major,
    minor), from the generated upstream data (pkg/features/kube_features.go of that
    version; krm_fn.node.upstream). A gate the version does not know is off."""
    return upstream.load(version).gate_default(gate) is True
