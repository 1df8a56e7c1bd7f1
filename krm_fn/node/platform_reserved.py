"""What a managed platform reserves on a node itself, and whether the plan judges the same.

GKE and AKS size kubeReserved and the hard eviction threshold themselves from the machine's
CPUs and memory, and their node configuration cannot set kubeReserved, systemReserved,
reservedSystemCPUs or evictionHard. Their kubelets therefore run the platform's reservation
whatever the plan says, and a verdict computed with krm-fn's reservation (2 whole cores as
reservedSystemCPUs, 500Mi + 500Mi of memory) judges CPUs and memory the node does not have,
or leaves out ones it has. `judge` turns every difference into an error that names the
config to write so the plan is the platform's reservation; the format then leaves those
fields out silently (the platform sets exactly them).

Sources:

- GKE: https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes (kube-reserved
  CPU 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above 4 cores; memory
  255 MiB below 1 GiB, else 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6%
  of the next 112, 2% above 128 GiB; an eviction threshold of 100 MiB; 400m more CPU when the
  pool allows more than 110 pods per node).
- AKS: https://learn.microsoft.com/azure/aks/node-resource-reservations (kube-reserved CPU
  60m for 1 core, 100m for 2, 140m for 4, 180m for 8, 260m for 16, 420m for 32, 740m for 64:
  the brackets 6% of the first core, 4% of the second, 2% of the next 2, 1% above, as
  Azure/karpenter-provider-azure pkg/providers/instancetype/instancetype.go
  reservedCPUTaxVCPU computes them; from Kubernetes 1.29 memory the lesser of 20 MiB per pod
  + 50 MiB and 25% of the node's memory with memory.available 100Mi, before 1.29 the GKE
  memory brackets with memory.available 750Mi).

Coarser on purpose: the platforms size memory from the machine type, krm-fn from the pool's
`topology.memory` (the kubelet's capacity, a little less); AKS's "MB" is read as MiB; the
results are whole millicores (rounded down) and whole MiB (rounded down).
"""
from __future__ import annotations

from krm_fn.node import fields
from dataclasses import dataclass
from krm_fn.results import ERROR

GIB = 1024 ** 3
MIB = 1024 ** 2

GKE_SOURCE = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes"
AKS_SOURCE = "https://learn.microsoft.com/azure/aks/node-resource-reservations"

# (upper bound in cores, fraction) brackets of kube-reserved CPU
GKE_CPU = ((1, 0.06), (2, 0.01), (4, 0.005), (None, 0.0025))
AKS_CPU = ((1, 0.06), (2, 0.04), (4, 0.02), (None, 0.01))
# (upper bound in GiB, fraction) brackets of kube-reserved memory (GKE; AKS before 1.29)
MEMORY_BRACKETS = ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06), (None, 0.02))
GKE_SMALL_MACHINE = 255 * MIB          # below 1 GiB of memory
GKE_MANY_PODS_CPU = 400                # millicores more with maxPods > 110
AKS_PER_POD, AKS_BASE = 20 * MIB, 50 * MIB
# a node pool's maxPods on AKS: 10-250, by default 30 (Azure CNI with standard networking),
# 250 (Azure CNI Overlay) or 110 (other configurations, kubenet); set per node pool, not in
# its kubelet config
AKS_MIN_PODS = 10
AKS_MAX_PODS = "https://learn.microsoft.com/azure/aks/node-auto-provisioning-aksnodeclass"


@dataclass(frozen=True)
class Reservation:
    """What a platform's kubelet runs: `kube` kubeReserved {"cpu": millicores, "memory":
    bytes (absent when the node's memory is unknown)}, `system` systemReserved (same
    shape), `eviction_memory` evictionHard[memory.available] as text (e.g. "100Mi"),
    `platform` its name, `source` the page the numbers come from."""

    platform: str
    kube: dict
    system: dict
    eviction_memory: str
    source: str
    pods_unknown: bool = False      # the memory depends on a maxPods the plan does not give


def brackets(amount: float, table: tuple) -> float:
    """Sum over `table` ((upper bound or None, fraction), ...) of the fraction of the part
    of `amount` in each bracket, the first starting at 0."""
    out, lower = 0.0, 0.0
    for upper, fraction in table:
        top = amount if upper is None else min(amount, upper)
        if top > lower:
            out += (top - lower) * fraction
        if upper is None or amount <= upper:
            break
        lower = upper
    return out


def _millis(cores: float) -> int:
    return int(cores * 1000 + 1e-9)


def gke(cpus: int, memory: int | None, max_pods: int = 110) -> Reservation:
    """GKE's reservation for a node of `cpus` logical CPUs and `memory` bytes (None:
    unknown) allowing `max_pods` pods (GKE_SOURCE)."""
    cpu = _millis(brackets(cpus, GKE_CPU)) + (GKE_MANY_PODS_CPU if max_pods > 110 else 0)
    kube: dict = {"cpu": cpu}
    if memory is not None:
        kube["memory"] = GKE_SMALL_MACHINE if memory < GIB else \
            int(brackets(memory / GIB, MEMORY_BRACKETS) * 1024) * MIB
    return Reservation("GKE", kube, {}, "100Mi", GKE_SOURCE)


def aks(cpus: int, memory: int | None, max_pods: int | None = 110,
        version: tuple = (1, 29)) -> Reservation:
    """AKS's reservation for a node of `cpus` logical CPUs and `memory` bytes (None:
    unknown) allowing `max_pods` pods (None: not known), on Kubernetes `version`
    (AKS_SOURCE). From 1.29 the memory depends on the node pool's max pods, whose default
    depends on the network plugin (AKS_MAX_PODS): with `max_pods` None and a node whose
    25 % of memory is more than the fewest pods AKS allows would reserve, the memory is
    left out and `pods_unknown` set."""
    kube: dict = {"cpu": _millis(brackets(cpus, AKS_CPU))}
    new = tuple(version) >= (1, 29)
    unknown = False
    if memory is not None and not new:
        kube["memory"] = int(brackets(memory / GIB, MEMORY_BRACKETS) * 1024) * MIB
    elif memory is not None:
        cap = memory // 4
        if max_pods is None and cap > AKS_PER_POD * AKS_MIN_PODS + AKS_BASE:
            unknown = True
        else:
            kube["memory"] = min(AKS_PER_POD * (max_pods or AKS_MIN_PODS) + AKS_BASE, cap)
    return Reservation("AKS", kube, {}, "100Mi" if new else "750Mi", AKS_SOURCE, unknown)


def memory_text(n: int) -> str:
    """Bytes as the kubelet quantity krm-fn writes: whole Mi when exact, else bytes."""
    return f"{n // MIB}Mi" if n % MIB == 0 else str(n)


# the fields `judge` speaks for: a format leaves them out without its own warning
JUDGED = fields.PLATFORM_SIZED


def _cpu_millis(config: dict) -> int | None:
    from krm_fn.node.kubelet_start import reserved_millis
    return reserved_millis(config)


def _memory_bytes(config: dict) -> int | None:
    """kubeReserved.memory + systemReserved.memory of `config` in bytes (0 when neither is
    set), None when one is not a quantity."""
    from krm_fn import quantity
    total = 0
    for name in fields.RESERVATIONS:
        m = config.get(name)
        text = m.get("memory") if isinstance(m, dict) else None
        if text is None:
            continue
        try:
            total += quantity.parse_memory(str(text)).whole
        except (quantity.QuantityError, ValueError):
            return None
    return total


def _same_quantity(a: object, b: str) -> bool:
    from krm_fn import quantity
    try:
        return quantity.parse_memory(str(a)).nanos == quantity.parse_memory(b).nanos
    except (quantity.QuantityError, ValueError):
        return False


def judge(merged: dict, res: Reservation, rep, cpus: int) -> tuple[str, ...]:
    """Errors (through `rep`, a krm_fn.node.formats._common.Report) for each part of the
    reservation the kubelet runs with the plan's configuration `merged` that differs from
    the platform's `res` on a node of `cpus` logical CPUs: reservedSystemCPUs (the platform
    cannot set it), the CPU of kubeReserved + systemReserved in millicores, their memory in
    bytes (when `res` knows the node's memory) and evictionHard[memory.available]. Returns
    the fields of JUDGED the caller must not warn about again (all of them, except a
    kubeReserved or systemReserved that reserves memory when the node's memory is unknown:
    the caller's warning says the platform replaces it)."""
    p, src = res.platform, res.source
    kube_cpu = res.kube.get("cpu", 0) + res.system.get("cpu", 0)
    held = -(-kube_cpu // 1000)
    fix_cpu = f"kubelet.kubeReserved.cpu: {kube_cpu}m"
    cpus_text = merged.get("reservedSystemCPUs")
    if isinstance(cpus_text, str) and cpus_text.strip():
        rep.add(ERROR, "reservedSystemCPUs", f"reservedSystemCPUs {cpus_text} cannot be set "
                f"on {p}: its kubelet reserves CPU as kubeReserved.cpu {kube_cpu}m on a "
                f"{cpus}-CPU node ({src}), so the static CPU Manager holds back {held} CPU"
                f"{'s' if held != 1 else ''} of its own choosing (the lowest cores) and "
                f"leaves every other CPU to pods, and krm-fn judged exclusive CPUs and NUMA "
                f"admission with these CPUs reserved instead; set reserved.cores: 0 (no "
                f"kubelet.reservedSystemCPUs) and {fix_cpu} so krm-fn judges what {p} runs",
                current=cpus_text, proposed=f"{kube_cpu}m",
                path=f"spec.nodePools[{rep.index}].reserved.cores")
    else:
        millis = _cpu_millis(merged)
        if millis is not None and millis != kube_cpu:
            rep.add(ERROR, "kubeReserved.cpu", f"kubeReserved.cpu + systemReserved.cpu is "
                    f"{millis}m, but {p}'s kubelet reserves {kube_cpu}m on a {cpus}-CPU node "
                    f"({src}) and its node configuration cannot change that: krm-fn would "
                    f"judge CPU allocatable and the CPUs the static policy holds back for a "
                    f"reservation the node does not have; set {fix_cpu} and no "
                    f"kubelet.systemReserved.cpu", current=f"{millis}m",
                    proposed=f"{kube_cpu}m")
    handled = list(JUDGED)
    if res.pods_unknown:
        rep.add(ERROR, "maxPods", f"{p}'s kubelet reserves memory by the node pool's maximum "
                f"pods (20 MiB per pod + 50 MiB, at most 25 % of the node's memory; {src}), "
                f"which its kubelet config cannot set and krm-fn is not told: by default 30 "
                f"with Azure CNI, 250 with Azure CNI Overlay, 110 with kubenet "
                f"({AKS_MAX_PODS}), so the allocatable memory krm-fn would judge "
                f"may not be the node's; set kubelet.extra.maxPods to the node pool's maxPods "
                f"(`az aks nodepool show --query maxPods`)")
    elif "memory" in res.kube:
        want = res.kube["memory"] + res.system.get("memory", 0)
        have = _memory_bytes(merged)
        if have is not None and have != want:
            rep.add(ERROR, "kubeReserved.memory", f"kubeReserved.memory + "
                    f"systemReserved.memory is {memory_text(have)}, but {p}'s kubelet "
                    f"reserves {memory_text(want)} on this pool's nodes ({src}) and its node "
                    f"configuration cannot change that: krm-fn would judge allocatable memory "
                    f"(and the Memory Manager's reservedMemory) the node does not have; set "
                    f"kubelet.kubeReserved.memory: {memory_text(want)} and "
                    f"kubelet.systemReserved: {{}}", current=memory_text(have),
                    proposed=memory_text(want))
    else:           # the node's memory is unknown: the memory reservations are warned of
        handled = [f for f in handled if f not in fields.RESERVATIONS
                   or "memory" not in (merged.get(f) if isinstance(merged.get(f), dict)
                                       else {})]
    eviction = merged.get("evictionHard")
    have = eviction.get("memory.available") if isinstance(eviction, dict) else None
    if have is None or not _same_quantity(have, res.eviction_memory):
        rep.add(ERROR, "evictionHard.memory.available", f"evictionHard[memory.available] "
                f"is {have if have is not None else 'unset'}, but {p}'s kubelet evicts at "
                f"{res.eviction_memory} ({src}) and its node configuration cannot change that: "
                f"krm-fn would judge allocatable memory with another threshold; set "
                f"kubelet.evictionHard.memory.available: {res.eviction_memory}",
                current=have, proposed=res.eviction_memory)
    return tuple(handled)


def for_format(fmt: str, plan, ctx) -> Reservation | None:
    """The reservation the platform of output format `fmt` ("gke", "aks") makes on the
    nodes of `plan`'s pool (ctx: the format's RenderContext: the pool's topology.memory and
    the nodes' Kubernetes version); None for a format whose platform takes the plan's."""
    sizer = SIZERS.get(fmt)
    if sizer is None:
        return None
    pool = getattr(ctx, "pool", None)
    memory = getattr(getattr(pool, "topology", None), "memory", None)
    merged = plan.merged or {}
    max_pods = merged.get("maxPods")
    if not isinstance(max_pods, int) or isinstance(max_pods, bool):
        max_pods = None     # GKE: 110 when not given; AKS: depends on its network plugin
    from krm_fn.node import upstream
    return sizer(plan.topology.total_cpus, None if memory is None else memory.whole,
                 max_pods, getattr(ctx, "version", None) or upstream.FIRST)


SIZERS = {"gke": lambda cpus, memory, pods, version: gke(cpus, memory, pods or 110),
          "aks": aks}


# OpenShift: the Machine Config Operator moves these systemReserved entries of a KubeletConfig
# out of the kubelet's config into /etc/node-sizing-enabled.env (NODE_SIZING_ENABLED=false),
# filling the ones not given with its defaults; the kubelet then runs them (the
# --system-reserved flag of its unit up to 4.22, a drop-in from 4.23). Without any of them
# the node keeps its own sizing (auto-sized on workers from 4.21, else 1Gi / 500m / 1Gi).
# openshift/machine-config-operator pkg/controller/kubelet-config/helpers.go
# generateKubeletIgnFiles, createNewKubeletDynamicSystemReservedIgnition.
MCO_SOURCE = ("https://github.com/openshift/machine-config-operator/blob/main/pkg/controller/"
              "kubelet-config/helpers.go")
MCO_SYSTEM_RESERVED = {"memory": "1Gi", "cpu": "500m", "ephemeral-storage": "1Gi"}
MCO_ENV = {"memory": "SYSTEM_RESERVED_MEMORY", "cpu": "SYSTEM_RESERVED_CPU",
           "ephemeral-storage": "SYSTEM_RESERVED_ES"}
# The Node Tuning Operator's KubeletConfig sets these when the profile's (annotation's)
# configuration does not (kubeletconfig.go: defaultKubeReservedMemory,
# defaultSystemReservedMemory, defaultHardEvictionThreshold).
NTO_DEFAULTS = (("kubeReserved", "memory", "500Mi"), ("systemReserved", "memory", "500Mi"),
                ("evictionHard", "memory.available", "100Mi"))


def nto_defaults(carried: dict, merged: dict, rep, name: str, source: str) -> None:
    """Errors for what the NTO adds to the profile's KubeletConfig `carried` (plain data, its
    kubeletconfig.experimental annotation) that the plan's `merged` configuration lacks:
    the kubelet would run an entry krm-fn did not judge with. `name` is the
    PerformanceProfile's name, `source` the NTO file."""
    for field, key, value in NTO_DEFAULTS:
        given = carried.get(field)
        if isinstance(given, dict) and key in given:
            continue
        have = merged.get(field)
        have = have.get(key) if isinstance(have, dict) else None
        if have is not None and _same_quantity(have, value):
            continue
        rep.add(ERROR, f"{field}.{key}", f"{field}.{key} is "
                f"{'unset' if have is None else have} in the plan, but PerformanceProfile "
                f"{name}'s KubeletConfig sets {value} where the profile does not ({source}): "
                f"the kubelet would run {value}, and krm-fn judged allocatable memory "
                f"without it; set kubelet.{field}.{key}: {have if have is not None else value}"
                f" so the profile carries it", current=have, proposed=have or value)


def mco_system_reserved(carried: dict, merged: dict, rep, where: str) -> None:
    """Errors where the systemReserved the kubelet runs under the Machine Config Operator
    differs from the plan's `merged` configuration: `carried` is the KubeletConfiguration a
    KubeletConfig (`where`, e.g. "OpenShift KubeletConfig krm-fn-inference") hands the MCO.
    Its systemReserved cpu / memory / ephemeral-storage go to /etc/node-sizing-enabled.env
    with MCO_SYSTEM_RESERVED for the ones not given; with none of them the node keeps its
    own sizing, which only a baseline (spec.output.baseline, the node's configz) shows."""
    given = carried.get("systemReserved")
    given = given if isinstance(given, dict) else {}
    routed = [k for k in MCO_SYSTEM_RESERVED if k in given]
    cpus = merged.get("reservedSystemCPUs")
    pinned = isinstance(cpus, str) and bool(cpus.strip())
    if not routed:
        have = merged.get("systemReserved")
        if isinstance(have, dict) and "memory" in have:
            return          # the baseline's: the node's own sizing, as its configz shows it
        rep.add(ERROR, "systemReserved.memory", f"{where} sets no systemReserved cpu, memory "
                f"or ephemeral-storage, so the Machine Config Operator leaves the node's own "
                f"sizing in place ({MCO_SOURCE}: SYSTEM_RESERVED_* in /etc/node-sizing.env, "
                f"auto-sized from the node's memory and CPUs on workers from OpenShift 4.21, "
                f"else memory 1Gi and cpu 500m), which krm-fn cannot know; set "
                f"kubelet.systemReserved.memory (the MCO then writes it with "
                f"NODE_SIZING_ENABLED=false), or give spec.output.baseline from a node's "
                f"configz so krm-fn judges what the node runs")
        return
    for key in ("memory", "cpu"):
        if key in given or (key == "cpu" and pinned):
            continue
        default = MCO_SYSTEM_RESERVED[key]
        rep.add(ERROR, f"systemReserved.{key}", f"{where} sets systemReserved "
                f"{', '.join(routed)} but not {key}: the Machine Config Operator writes "
                f"{MCO_ENV[key]}={default} for it ({MCO_SOURCE}, "
                f"createNewKubeletDynamicSystemReservedIgnition) and the kubelet reserves "
                f"{default} that krm-fn did not judge with; set kubelet.systemReserved.{key} "
                f"(e.g. {default})", proposed=default)


# the reserved cgroup field the MCO clears itself: generateKubeletIgnFiles sets
# systemReservedCgroup "" when the KubeletConfig's is empty ("Empty strings are ignored by
# mergo") and whenever reservedSystemCPUs is set (MCO_SOURCE)
MCO_CLEARS = "systemReservedCgroup"


def mco_cleared(carried: dict, rep, where: str) -> None:
    """An ERROR per reserved cgroup field (fields.RESERVED_CGROUP_FIELDS) other than
    MCO_CLEARS that `carried`, the KubeletConfiguration a KubeletConfig (`where`) hands the
    Machine Config Operator, clears with "" next to reservedSystemCPUs: the MCO merges it
    onto the node's kubelet.conf with mergo's WithOverride, which never applies an empty
    value (generateKubeletIgnFiles, MCO_SOURCE), so the node's cgroup stays, and the kubelet
    refuses reservedSystemCPUs next to it and does not start. krm-fn writes "" only to clear
    a baseline's value."""
    cpus = carried.get("reservedSystemCPUs")
    if not (isinstance(cpus, str) and cpus.strip()):
        return
    for key in fields.RESERVED_CGROUP_FIELDS:
        if key != MCO_CLEARS and carried.get(key) == "":
            rep.add(ERROR, key, f"{where} sets {key} \"\" to clear the node's, but the "
                    f"Machine Config Operator merges a KubeletConfig onto the node's "
                    f"kubelet.conf with mergo's WithOverride, which never applies an empty "
                    f"value ({MCO_SOURCE} generateKubeletIgnFiles): the node's {key} stays, "
                    f"and the kubelet refuses reservedSystemCPUs next to it (\"can't use "
                    f"reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup "
                    f"(--system-reserved-cgroup) or kubeReservedCgroup "
                    f"(--kube-reserved-cgroup)\") and does not start; clear {key} in the "
                    f"node's kubelet.conf another way first, or keep the CPUs unreserved",
                    current="", path="spec.output.baseline")
