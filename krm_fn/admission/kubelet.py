"""The kubelet's verdict on one pod on an empty node of its pool: the integrator's entry point.

    judge(pod, node) -> (qos, exclusive, numa, findings)
    fit(pods, node) -> [replicas of each pod alone on one empty node]
    fit_mix(pods, node) -> [replicas of each placed in order on one empty node]

Built from qos.py (QoS class), cpumanager.py (exclusive CPUs, SMTAlignmentError),
topology.py (Topology Manager admission, TopologyAffinityError), memorymanager.py (Memory
Manager Static) and capacity.py (replicas per node). Every Finding's `rule` is one of
qos, cpumanager, topology, memorymanager, capacity, validation (an extended resource or huge
pages whose request is not its limit: the API server refuses the pod); its message names
the kubelet's error, the fix and the upstream source.
"""
from __future__ import annotations

from math import gcd

from krm_fn import quantity
from krm_fn.admission import cpumanager, memorymanager, topology, wide
from krm_fn.admission.capacity import (Packer, allocatable, amount_text, fit, fit_mix,
                                       fit_one, pod_plan, pod_requests, too_large, unknown)
from krm_fn.admission.podresources import overcommit_allowed
from krm_fn.admission.model import (DEPENDS, ERROR, HUGEPAGES, WARNING, AdmittedPod, Finding,
                                    NodeModel, node_memo)
from krm_fn.admission.qos import (GUARANTEED, QOS_SOURCE, api_gate, from_pod_level, gate,
                                  not_guaranteed, pod_level_set)
from krm_fn.quantity import NANO

__all__ = ["judge", "judge_detail", "fit", "fit_mix", "fit_one"]


def _names(items) -> str:
    return ", ".join(repr(n) for n in items)


def _qos_findings(pod: AdmittedPod, node: NodeModel, qos: str, pod_level: bool) -> list:
    designated = [c.name for c in pod.containers if c.designated]
    if qos == GUARANTEED or not designated:
        return []
    if not from_pod_level(pod, pod_level,
                          api_gate(node, "PodLevelResourcesFixKubeletQOSClass")):
        why = (f"not Guaranteed: {_names(not_guaranteed(pod))}; set cpu and memory requests "
               f"equal to limits in every container, init, sidecar and injected ones included")
    elif pod_level_set(pod):
        why = ("the pod-level spec.resources decides the class: set its cpu and memory "
               "requests equal to its limits")
    else:
        why = (f"an empty pod-level spec.resources decides the class on Kubernetes "
               f"{node.version[0]}.{node.version[1]} (ComputePodQOS takes it whenever it is "
               f"present; from 1.37 the PodLevelResourcesFixKubeletQOSClass gate ignores it: "
               f"kubernetes/kubernetes#135082): remove spec.resources")
    return [Finding(ERROR, f"pod is {qos} after admission, so no container gets exclusive "
                    f"CPUs, not even {_names(designated)} (the static CPU Manager pins only "
                    f"Guaranteed pods); "
                    f"{why} ({QOS_SOURCE}; {cpumanager.STATIC_SRC} guaranteedCPUs)",
                    "qos", pod.path)]


def _cpu_findings(pod: AdmittedPod, node: NodeModel, qos: str, exclusive: tuple) -> list:
    out = []
    designated = [c for c in pod.containers if c.designated]
    if designated and not cpumanager.is_static(node):
        out.append(Finding(ERROR, f"cpuManagerPolicy is "
                           f"{(node.kubelet or {}).get('cpuManagerPolicy', 'none')} on pool "
                           f"{node.pool!r}: the kubelet gives no container exclusive CPUs, not "
                           f"even {_names(c.name for c in designated)}; set "
                           f"cpuManagerPolicy: static with a CPU reservation "
                           f"({cpumanager.DOCS})", "cpumanager", pod.path))
        return out
    if designated and qos == GUARANTEED and cpumanager.skips_pod_level(pod, node):
        ver = f"Kubernetes {node.version[0]}.{node.version[1]}"
        why = (f"with PodLevelResources on ({ver}) the static CPU and Memory Managers skip it "
               f"(\"pod is using pod-level resources which are not supported by the static "
               f"CPU manager policy\")" if gate(node, "PodLevelResources") else
               f"the pool's kubelet runs with PodLevelResources off, and on {ver} its static "
               f"CPU and Memory Managers skip such a pod unless PodLevelResources and "
               f"PodLevelResourceManagers are both on (\"pod is using pod-level resources "
               f"but the PodLevelResourceManagers feature gate is not enabled\"); the API "
               f"server, whose own PodLevelResources gate is on by default, keeps "
               f"spec.resources")
        out.append(Finding(ERROR, f"pod sets pod-level spec.resources: {why}, so no container "
                           f"is pinned, not even "
                           f"{_names(c.name for c in designated)}; remove spec.resources from "
                           f"the pod spec "
                           f"({cpumanager.STATIC_SRC}; KEP-2837)", "cpumanager", pod.path))
        return out
    if qos != GUARANTEED or not cpumanager.is_static(node):
        return out
    for c in designated:
        if not cpumanager.guaranteed_cpus(c, qos):
            from krm_fn.rules.choice import another     # only for this finding
            out.append(Finding(ERROR, f"container {c.name!r} is to be pinned but its cpu "
                               f"request {quantity.format_cpu(c.requests.get('cpu', 0))} "
                               f"is not a whole number: "
                               f"it runs in the shared pool; request a whole number of CPUs "
                               f"({cpumanager.STATIC_SRC} guaranteedCPUs), {another()}",
                               "cpumanager", pod.path))
    got = dict(exclusive)
    for c in pod.containers:
        if not c.designated and got.get(c.name):
            added = "" if c.source == "manifest" else f" (added by {c.source})"
            out.append(Finding(WARNING, f"container {c.name!r}{added} is not one krm-fn pins "
                               f"but gets {got[c.name]} exclusive CPUs: the static CPU Manager "
                               f"pins every container of a Guaranteed pod whose cpu request is "
                               f"a whole number; to keep it in the shared pool give it a "
                               f"non-integer cpu with requests == limits (e.g. "
                               f"{got[c.name] * 1000 - 100}m instead of {got[c.name]}) "
                               f"({cpumanager.DOCS}; {cpumanager.STATIC_SRC} guaranteedCPUs)",
                               "cpumanager", pod.path))
    return out


def _free_text(node: NodeModel) -> str:
    free = cpumanager.CpuState(node).free_per_numa()
    return ", ".join(f"NUMA {n}: {v}" for n, v in sorted(free.items()))


def _affinity_refusal(pod, node, adm, where: str, pol: str, scp: str) -> Finding:
    state = cpumanager.CpuState(node)
    need = adm.hints[-1][1] if adm.hints else 0
    most = max(state.free_per_numa().values(), default=0)
    size = max((len(v) for v in state.numa_cpus.values()), default=0)
    fix = ("request fewer CPUs per " + ("container" if scp == "container" else "pod")
           + (", use topologyManagerScope container" if scp == "pod" else "")
           + (", or topologyManagerPolicy restricted or best-effort" if pol == topology.SINGLE
              else ", or topologyManagerPolicy best-effort"))
    if most < need <= size:
        fix = (f"reservedSystemCPUs leaves at most {most} CPUs free on a NUMA node of "
               f"{size}: request at most {most}, reserve fewer CPUs on one NUMA node, or "
               + fix.split(", ", 1)[-1].removeprefix("or "))
    what = f"{need} exclusive CPUs; " if need else ""
    mem = _memory_text(pod, node, adm.container)
    if mem:
        fix = ("request less memory per NUMA node, describe the nodes' memory per NUMA node "
               "(topology.numaMemory) if it differs, or " + fix.removeprefix("request "))
    return Finding(ERROR, f"the Topology Manager ({pol}, scope {scp}) refuses the pod with "
                   f"TopologyAffinityError on an empty node of pool {node.pool!r}: no "
                   f"{'single NUMA node' if pol == topology.SINGLE else 'preferred NUMA set'}"
                   f" can hold what {where} needs ({what}CPUs free on an empty node: "
                   f"{_free_text(node)}{mem}); {fix} "
                   f"({topology.TM_SRC} policy_{pol.replace('-', '_')}.go; "
                   f"{topology.TM_DOCS})", "topology", pod.path)


def _memory_text(pod: AdmittedPod, node: NodeModel, container: str) -> str:
    """Under Memory Manager Static with per-NUMA memory modelled: `; memory requested
    20Gi, allocatable per NUMA node (reservedMemory and hugepages taken out): NUMA 0:
    15Gi, NUMA 1: 16Gi` for the pod (or `container`), else ""."""
    if not (memorymanager.is_static(node) and node.numa_memory):
        return ""
    if container:
        req = next((memorymanager.requested(c) for c in pod.containers
                    if c.name == container), {})
    else:
        req = memorymanager.pod_requested(pod)
    if not req:
        return ""
    alloc = memorymanager.MemState(node).alloc
    asked = ", ".join(f"{r} {_gib(v)}" for r, v in sorted(req.items()))
    per = "; ".join(f"NUMA {n}: " + ", ".join(f"{r} {_gib(alloc[n].get(r, 0))}"
                                             for r in sorted(req))
                    for n in sorted(alloc))
    return (f"; requested {asked}, allocatable per NUMA node under memoryManagerPolicy "
            f"Static (reservedMemory and pre-allocated hugepages taken out): {per}")


def _gib(n: int) -> str:
    return f"{n / 2**30:.4g}Gi"


def _refusal(pod: AdmittedPod, node: NodeModel, adm) -> Finding:
    where = f"container {adm.container!r}" if adm.container else "the pod"
    pol, scp = topology.policy(node), topology.scope(node)
    if adm.reason == topology.TAE:
        return _affinity_refusal(pod, node, adm, where, pol, scp)
    if adm.reason == topology.BEYOND:
        return Finding(DEPENDS, f"{where} on an empty node of pool {node.pool!r}: "
                       f"{adm.message}, so it does not count the pod as admitted; fewer "
                       f"NUMA nodes per node make the outcome certain (and where best-effort "
                       f"picks among non-preferred hints, so do topologyManagerPolicy "
                       f"restricted or single-numa-node, which admit only on a preferred "
                       f"NUMA set) ({topology.TM_SRC} policy.go)",
                       "topology", pod.path)
    if adm.reason == topology.SMT:
        c = next((c for c in pod.containers if c.name == adm.container), None)
        fix = (f"request a multiple of {node.threads_per_core} CPUs that whole free cores "
               f"can hold")
        if c is not None and not c.designated:
            cpu = quantity.kubelet_cpus(c.requests.get("cpu", 0))
            added = "" if c.source == "manifest" else f", added by {c.source}"
            fix = (f"{where} is not one krm-fn pins{added}: give it a fractional cpu with "
                   f"requests == limits (e.g. {cpu * 1000 - 100}m instead of "
                   f"{cpu}) so it runs in the shared pool, or {fix}")
        return Finding(ERROR, f"{where} fails with SMTAlignmentError on pool {node.pool!r} "
                       f"(full-pcpus-only): {adm.message}; {fix} "
                       f"({cpumanager.STATIC_SRC} Allocate; {cpumanager.DOCS})",
                       "cpumanager", pod.path)
    rule = "memorymanager" if "memorymanager" in adm.message else "cpumanager"
    src = memorymanager.MM_SRC if rule == "memorymanager" else cpumanager.STATIC_SRC
    return Finding(ERROR, f"{where} fails with UnexpectedAdmissionError on an empty node of "
                   f"pool {node.pool!r}: {adm.message}; request less or use larger nodes "
                   f"({src} Allocate)", rule, pod.path)


def _depends(pod: AdmittedPod, node: NodeModel, adm) -> list:
    pol = topology.policy(node)
    if pol not in (topology.RESTRICTED, topology.SINGLE) or not adm.exclusive:
        return []
    steps = [(w, n, m) for w, n, m in adm.hints if n and m]
    if not steps:
        return []
    what = "; ".join(f"{'the pod' if w == 'pod' else repr(w)} {n} CPUs within "
                     f"{len(m)} NUMA node{'s' if len(m) > 1 else ''}" for w, n, m in steps)
    return [Finding(DEPENDS, f"admitted on NUMA {', '.join(map(str, adm.numa))} of an empty "
                    f"node of pool {node.pool!r}; on a node where other pods already hold "
                    f"exclusive CPUs it is admitted only if, at that moment, {what} are free, "
                    f"else the kubelet fails it with TopologyAffinityError (the scheduler does "
                    f"not see NUMA nodes). The fit per node counts this; topologyManagerPolicy "
                    f"best-effort would admit it with CPUs across NUMA nodes instead "
                    f"({topology.TM_SRC}; {topology.TM_DOCS})", "topology", pod.path)]


# Hint permutations per admission from which the render calls the kubelet's merge too slow
# to admit a pod: 2^32 (~4.3e9 merges, minutes per container at tens of nanoseconds each)
MERGE_LIMIT = 2**32


def _merge_cost(pod: AdmittedPod, node: NodeModel, qos: str) -> list:
    """A finding when the Topology Manager has to merge the CPU and the Memory Managers'
    hints on more NUMA nodes than its default bound (8): each lists up to 2^N - 1 NUMA
    combinations and the merge visits every pair (policy.go iterateAllProviderTopologyHints),
    (2^N - 1)^2 per pod (scope pod) or container it admits; an ERROR from MERGE_LIMIT
    on, a WARNING below."""
    numas = len(node.numa_nodes)
    if (topology.policy(node) == topology.NONE or numas <= wide.KUBELET_BOUND or qos != GUARANTEED
            or not memorymanager.is_static(node)
            or not cpumanager.exclusive_requests(pod, node, qos)):
        return []
    pairs = (2**numas - 1) ** 2
    level = ERROR if pairs >= MERGE_LIMIT else WARNING
    return [Finding(level, f"pool {node.pool!r} has {numas} NUMA nodes with a Topology "
                    f"Manager policy and memoryManagerPolicy Static: for each "
                    f"{'pod' if topology.scope(node) == 'pod' else 'container'} it "
                    f"admits, the kubelet merges every pair of a CPU Manager and a Memory "
                    f"Manager hint, up to (2^{numas} - 1)^2 = {pairs:.3g} pairs"
                    + (" (the kubelet would take minutes to hours to admit one pod)"
                       if level == ERROR else "")
                    + f"; the default bound of {wide.KUBELET_BOUND} NUMA nodes exists for "
                    "this (KEP-4622, "
                    "https://github.com/kubernetes/enhancements/issues/4622); use fewer NUMA "
                    "nodes per node (the BIOS NPS or sub-NUMA clustering setting), "
                    "memoryManagerPolicy None, or topologyManagerPolicy none "
                    f"({topology.TM_SRC} policy.go)", "topology", pod.path)]


def _node_findings(pod: AdmittedPod, node: NodeModel, qos: str) -> list:
    out = _merge_cost(pod, node, qos)
    pol, limit, numas = topology.policy(node), topology.max_numa(node), len(node.numa_nodes)
    if pol != topology.NONE and numas > limit:
        out.append(Finding(ERROR, f"pool {node.pool!r} has {numas} NUMA nodes: with "
                           f"topologyManagerPolicy {pol} the kubelet does not start "
                           f"(\"unsupported on machines with more than {limit} NUMA Nodes\"); "
                           f"set topologyManagerPolicyOptions max-allowable-numa-nodes: "
                           f"\"{numas}\" ({topology.TM_SRC} topology_manager.go)",
                           "topology", pod.path))
    if pod_level_set(pod) and gate(node, "PodLevelResourceManagers"):
        from krm_fn.admission import podscope
        out += podscope.findings(pod, node, qos)
    if memorymanager.is_static(node) and not node.numa_memory and qos == GUARANTEED:
        out.append(Finding(WARNING, f"memoryManagerPolicy Static on pool {node.pool!r}: "
                           f"memory admission per NUMA node is not modelled, because the "
                           f"pool's memory per NUMA node is not declared: krm-fn counts it "
                           f"as ample, so the Memory Manager's hints (the fewest NUMA nodes "
                           f"that hold a container's memory) still decide admission, but a "
                           f"NUMA node running out of memory is not checked; declare it in "
                           f"the pool's topology: memory (one node's capacity, split evenly "
                           f"over its NUMA nodes), numaMemory (per NUMA node id, e.g. "
                           f"{{\"0\": 96Gi, \"1\": 64Gi}}), or fromNode / "
                           f"fromNodeResourceTopology ({memorymanager.MM_DOCS})",
                           "memorymanager", pod.path))
    out += _resource_findings(pod, node)
    return out


FIT_SRC = ("kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go "
           "fitsRequest")
DOCS = "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"


def _resource_findings(pod: AdmittedPod, node: NodeModel) -> list:
    """An ERROR per resource of which the pod alone asks more than a node of the pool has
    allocatable (the scheduler never binds it: NodeResourcesFit, Insufficient <resource>),
    naming the Node that says so for ephemeral-storage and extended resources; one DEPENDS
    finding naming the ephemeral-storage and extended resources the pod asks for when no
    `fromNode` Node says how much a node has (they do not limit the count then)."""
    out = _overcommit_findings(pod)
    req, alloc, node_name = pod_requests(pod, node), allocatable(node), node.from_node
    for res, want, have in too_large(req, alloc, bool(node_name)):
        where = f"a node of pool {node.pool!r} has {_amount(res, have)} allocatable"
        source = "https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/"
        if res.startswith(HUGEPAGES) and not have:
            where += (" (the pool declares no such huge pages: spec.nodePools[].topology."
                      "hugepages; the kernel pre-allocates none unless configured)")
        elif res not in ("cpu", "memory") and not res.startswith(HUGEPAGES):
            listed = f"has {amount_text(res, have)}" if res in alloc else "lists none"
            where = (f"Node {node_name!r} (topology.fromNode of pool {node.pool!r}) {listed} "
                     f"in status.allocatable")
            anchor = "local-ephemeral-storage" if res == "ephemeral-storage" else (
                "extended-resources")
            source = f"{FIT_SRC}; {DOCS}#{anchor}"
        out.append(Finding(ERROR, f"the pod requests {_amount(res, want)} {res} but {where}: "
                           f"it never schedules (Insufficient {res}); lower the requests or "
                           f"use larger nodes ({source})", "capacity", pod.path))
    missing = unknown(req, alloc, bool(node_name))
    if missing:
        asked = ", ".join(f"{amount_text(r, v)} {r}" for r, v in missing)
        it = "them" if len(missing) > 1 else "it"
        anchors = ", ".join(f"{DOCS}#{a}" for a in (
            ["extended-resources"] * any(r != "ephemeral-storage" for r, _ in missing)
            + ["local-ephemeral-storage"] * any(r == "ephemeral-storage" for r, _ in missing)))
        out.append(Finding(DEPENDS, f"the pod requests {asked}: node pool {node.pool!r} is "
                           f"not described by a Node (topology.fromNode), so krm-fn does not "
                           f"know how much of {it} a node has and does not count {it} in the "
                           f"replicas per node; the scheduler binds the pod only to a node "
                           f"whose status.allocatable has enough ("
                           + ", ".join(f"Insufficient {r}" for r, _ in missing)
                           + f"); give topology.fromNode (kubectl get node NAME -o yaml) to "
                           f"count {it} ({FIT_SRC}; {anchors})", "capacity", pod.path))
    return out


VALIDATION_SRC = ("kubernetes/kubernetes pkg/apis/core/validation/validation.go "
                  "validateResourceRequirements")


def _overcommit_findings(pod: AdmittedPod) -> list:
    """An ERROR per container resource that may not be overcommitted (an extended
    resource, huge pages: helper.IsOvercommitAllowed is false) whose request has no limit
    or differs from it: the API server refuses the pod ("Limit must be set for non
    overcommitable resources", "must be equal to <resource> limit of <limit>"). A limit
    without a request was already defaulted to request = limit."""
    out = []
    for c in pod.containers:
        for res, want in c.requests.items():
            if overcommit_allowed(res):
                continue
            limit = c.limits.get(res)
            if limit == want:
                continue
            said = ("Limit must be set for non overcommitable resources" if limit is None
                    else f"must be equal to {res} limit of {_amount(res, limit)}")
            out.append(Finding(ERROR, f"container {c.name!r} requests {_amount(res, want)} "
                               f"{res} " + ("without a limit" if limit is None else
                                            f"but its limit is {_amount(res, limit)}")
                               + f": the API server refuses the pod (\"{said}\"): an "
                               f"extended resource or huge pages are never overcommitted, "
                               f"so requests must equal limits; set limits.{res} to "
                               f"{_amount(res, want)} ({VALIDATION_SRC}; "
                               f"{DOCS}#extended-resources)", "validation", pod.path))
    return out


def _amount(res: str, value) -> str:
    """`value` of `res` as the messages write it: cpu (nanocores) in cores as the reduced
    ratio "4" or "7/2", an extended resource as its count, bytes canonically."""
    if res == "cpu":
        common = gcd(value, NANO)
        n, d = value // common, NANO // common
        return str(n) if d == 1 else f"{n}/{d}"
    if not (res == "memory" or res == "ephemeral-storage" or res.startswith(HUGEPAGES)):
        return str(value)
    return quantity.format_bytes(value)


def judge(pod: AdmittedPod, node: NodeModel) -> tuple:
    """`judge_detail` without the per-container NUMA nodes: (qos, exclusive, numa,
    findings)."""
    return judge_detail(pod, node)[:4]


def _with_daemons(node: NodeModel) -> topology.NodeState:
    """The resource managers' state of a node of the pool once its DaemonSet pods are
    admitted (capacity.Packer), copied for one admission; the empty state without
    DaemonSet pods or when one's admission is not modelled."""
    if not node.daemons:
        return topology.NodeState(node)
    memo = node_memo(node)
    packer = memo.get("daemons-state")
    if packer is None:
        packer = memo["daemons-state"] = Packer(node)
    return packer.state.copy() if packer.unknown is None else topology.NodeState(node)


def _scheduler_refuses(pod: AdmittedPod, node: NodeModel) -> bool:
    """Whether one pod `pod` is refused before the kubelet's resource managers on a node
    of the pool holding its DaemonSet pods (a resource fit, host ports, maxPods)."""
    packer = Packer(node)
    return not packer.place(pod) and packer.last is None


def judge_detail(pod: AdmittedPod, node: NodeModel) -> tuple:
    """The kubelet's verdict on `pod` on a node of `node`'s pool that holds only its
    DaemonSet pods (`node.daemons`, placed first as on every node: their exclusive CPUs
    are not free; an empty node when a DaemonSet pod's admission is not modelled).

    Returns (qos, exclusive, numa, findings, numa_of): qos "Guaranteed" | "Burstable" |
    "BestEffort"; exclusive ((container name, cpus), ...) in allocation order, () when
    refused; numa sorted NUMA ids of the exclusive CPUs and Static memory, () when none;
    findings a tuple of Finding (rules qos, cpumanager, topology, memorymanager, capacity);
    numa_of {container name: NUMA ids of its exclusive CPUs}. Pure; raises
    krm_fn.quantity.QuantityError for a malformed reservedMemory quantity.
    """
    pod_level = api_gate(node, "PodLevelResources")
    _, qos, plan = pod_plan(pod, node)
    adm = topology.admit(pod, node, _with_daemons(node), qos, plan)
    if not adm.admitted and node.daemons and _scheduler_refuses(pod, node):
        # the scheduler keeps it off a node beside the DaemonSet pods (the fit's "no room"
        # says why): the kubelet's own verdict is the one of an empty node
        adm = topology.admit(pod, node, topology.NodeState(node), qos, plan)
    exclusive = adm.exclusive if adm.admitted else ()
    numa = adm.numa if adm.admitted else ()
    findings = _node_findings(pod, node, qos) + _qos_findings(pod, node, qos, pod_level)
    findings += _cpu_findings(pod, node, qos, exclusive)
    findings += [_refusal(pod, node, adm)] if not adm.admitted else _depends(pod, node, adm)
    return qos, exclusive, numa, tuple(findings), (adm.numa_of if adm.admitted else {})
