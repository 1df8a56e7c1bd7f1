"""The verdict on one pod: what the kubelet of its pool will make of it, in one PodVerdict.

`judge(pod, node, features)` puts together the parts of the model, each citing its own
upstream source: the injected containers that cannot be made Guaranteed (injectors/), the
QoS class, exclusive CPUs, Topology and Memory Manager admission (kubelet.py and the
modules it calls), pod-level resources against every container (podlevel below),
nodeSelector / required node affinity against the pool's labels (scheduling.py), the
pool's taints against the pod's tolerations (taints.py), and what a platform's admission
webhook refuses (knative.py). `line(verdict)` is the one-line summary
each pod gets as a result.
"""
from __future__ import annotations


from krm_fn import quantity
from krm_fn.admission import capacity, containerresources, kubelet, scheduling
from krm_fn.admission.qos import api_gate
from krm_fn.admission.cpumanager import CpuState, peak
from krm_fn.admission.topology import BEYOND
from krm_fn.admission.model import (ERROR, WARNING, AdmittedPod, Finding, NodeModel,
                                    PodVerdict, node_memo)


POD_LEVEL_SOURCE = ("KEP-2837, https://kep.k8s.io/2837: pod-level requests must cover the "
                    "aggregate of the container requests")


def _injection_findings(pod: AdmittedPod) -> list:
    """An ERROR per injector whose containers will not have requests == limits: the pod is
    Burstable, no container gets exclusive CPUs; the message names the fix."""
    out = []
    for inj in pod.injections:
        if not inj.guaranteed:
            names = ", ".join(c.name for c in inj.containers)
            out.append(Finding(ERROR, f"{inj.title} ({inj.why}) adds {names} without requests "
                                      f"== limits for cpu and memory, so the pod will be "
                                      f"Burstable and no container gets exclusive CPUs: "
                                      f"{inj.fix}", "injection"))
    return out


def effective_requests(pod: AdmittedPod, resource: str):
    """The pod's effective request of `resource` (cpu in cores, memory in bytes) from its
    containers, as the kubelet and the scheduler compute it
    (k8s.io/component-helpers/resource AggregateContainerRequests): max(sum of app
    containers + sum of sidecars, max over regular init containers of (the init container
    + the sidecars started before it))."""
    return peak([(c.role, c.requests.get(resource, 0)) for c in pod.containers])


def _podlevel_findings(pod: AdmittedPod, node: NodeModel, spec: dict | None) -> list:
    """What the API server refuses in the pod-level resources of `spec` (podresources.py),
    then pod-level cpu or memory requests (as the API server defaults them, given `spec`)
    below the aggregate of the container requests, injected containers included
    (validation runs after the mutating webhooks that inject the containers). Without the
    PodLevelResources gate of the API server (qos.api_gate) it drops the field and
    validates nothing."""
    out: list = []
    if pod.pod_requests is None or not api_gate(node, "PodLevelResources"):
        return out
    from krm_fn.admission import podresources
    found, after = podresources.check(spec, pod, node.version)
    out += found
    for r in ("cpu", "memory"):
        have = (pod.pod_requests if after is None else after).get(r)
        need = effective_requests(pod, r)
        if have is not None and need > have:
            injected = [c.name for c in pod.containers if c.source != "manifest"]
            extra = (f" (injected containers {', '.join(injected)} included)" if injected
                     else "")
            have_, need_ = (quantity.format_amount(r, v) for v in (have, need))
            out.append(Finding(ERROR, f"pod-level requests.{r} {have_} is below the "
                                      f"{need_} the containers request{extra}: the API "
                                      f"server refuses the pod; raise "
                                      f"spec.resources.requests.{r} and limits.{r} to at "
                                      f"least {need_} ({POD_LEVEL_SOURCE})",
                               "podlevel", f"{pod.path}.resources.requests.{r}"))
    return out


def judge(pod: AdmittedPod, node: NodeModel, features: dict | None = None,
          spec: dict | None = None, limit_ranges: list = (), vpas: list = (),
          quotas: list = (), replicas: int = 1, unmodelled: tuple = (),
          hpas: list = (), security: tuple = ()) -> PodVerdict:
    """The PodVerdict of `pod` on one empty node `node` of its pool; `features`: the
    Knative feature flags (knative.features) when the pod is a Knative pod, else None;
    `spec`: the plain pod spec as tuned (what Knative's webhook checks beyond the model);
    `limit_ranges`: the LimitRanges of the pod's namespace in the input; `vpas`: the
    VerticalPodAutoscalers of the input that target the pod's workload (the QoS class and
    exclusive CPUs are the pod's once they patched it: vpa.after); `quotas`: the
    ResourceQuotas of the pod's namespace in the input; `replicas`: the workload's replicas
    of this pod; `unmodelled`: ((Webhook, why), ...) of the injecting webhooks krm-fn does
    not model that fire for the pod (unmodelled.fired): a WARNING each, and a Guaranteed
    verdict says what they may change; `hpas`: the HorizontalPodAutoscalers of the input
    that scale it (hpa.py: maxReplicas against the quotas and the fit per node);
    `security`: the Pod Security admission refusals of the pod (podsecurity.findings).
    """
    findings = list(pod.findings) + _injection_findings(pod) + _podlevel_findings(pod, node, spec)
    findings += security
    findings += _api_findings(pod, list(limit_ranges), list(vpas), list(quotas), replicas)
    findings += containerresources.resource_refusals(spec, pod.path)
    if isinstance(spec, dict) and isinstance(spec.get("securityContext"), dict) and \
            spec["securityContext"].get("sysctls"):
        from krm_fn.admission import sysctls
        findings += sysctls.refusals(spec, node, pod.path)
    unless = ""
    if unmodelled:
        from krm_fn.admission import unmodelled as webhooks
        findings += [webhooks.finding(w, why, pod.path) for w, why in unmodelled]
        unless = webhooks.unless(unmodelled)
    shape, named = _signatures(pod)
    qos, exclusive, numa, found, numa_of = _kubelet(pod, node, named)
    if vpas:
        from krm_fn.admission import vpa
        qos, exclusive = vpa.after(pod, list(vpas), qos, tuple(exclusive))
        numa = numa if exclusive else ()
    findings += found
    findings += scheduling.matches(pod, node)
    findings += scheduling.spread(spec, node, pod.path)
    if node.taints:
        findings += _taint_findings(pod, node, features, spec)
    if features is not None:
        from krm_fn.admission import knative
        findings += knative.refused(pod, features, spec)
    fit, why, limit = fit_alone(pod, node, shape, named)
    if fit == 0 and limit != BEYOND and not any(f.severity == ERROR for f in findings):
        findings.append(_no_room(pod, node, why))
    if hpas:
        from krm_fn.admission import hpa
        findings += hpa.findings(pod, list(hpas), list(quotas), fit, node.pool)
    injected = tuple(c.name for c in pod.containers if c.source != "manifest")
    return PodVerdict(qos, tuple(exclusive), tuple(numa), injected, fit, tuple(findings),
                      tuple(sorted(numa_of.items())), limit,
                      unless if qos == "Guaranteed" else "")


def _no_room(pod: AdmittedPod, node: NodeModel, why: str) -> Finding:
    """The ERROR for a pod of which not one fits on an empty node of its pool beside the
    pool's DaemonSet pods: the scheduler's filters (NodePorts, NodeResourcesFit) find no
    node, so every replica stays Pending."""
    daemons = (" beside the pods of DaemonSet " + ", ".join(d.ref.name for d in node.daemons)
               + " on every node") if node.daemons else ""
    return Finding(ERROR, f"no node of pool '{node.pool}' has room for one pod of "
                          f"{pod.ref.kind} {pod.ref.name}{daemons}: {why}; the scheduler "
                          f"leaves every replica Pending: free what it names on the pool's "
                          f"nodes or ask for less (https://kubernetes.io/docs/concepts/"
                          f"scheduling-eviction/kube-scheduler/#kube-scheduler-implementation)",
                   "scheduling", pod.path)


def _taint_findings(pod: AdmittedPod, node: NodeModel, features, spec) -> tuple:
    """taints.check of the pod against its pool's taints (the module imported only for a
    pool with taints); for a Knative revision's pod whose webhook refuses tolerations
    (`features`, knative.Features), where to turn them on."""
    from krm_fn.admission import taints
    knative_fix = None
    if features is not None:
        from krm_fn.admission import knative
        if not features.allows(knative.TOLERATIONS):
            knative_fix = knative.fix(knative.TOLERATIONS, features)
    return taints.check(pod, node, spec, knative_fix)


def _api_findings(pod: AdmittedPod, limit_ranges: list, vpas: list, quotas: list,
                  replicas: int) -> list:
    """What the API server's admission makes of the pod: the findings of the LimitRanges
    (limitrange.py), VerticalPodAutoscalers (vpa.py) and ResourceQuotas (resourcequota.py)
    given, in that order; each module is imported only when the input holds one of its
    objects (none finds anything without)."""
    out: list = []
    if limit_ranges:
        from krm_fn.admission import limitrange
        out += limitrange.refused(pod, limit_ranges)
    if vpas:
        from krm_fn.admission import vpa
        out += vpa.refused(pod, vpas)
    if quotas:
        from krm_fn.admission import resourcequota
        out += resourcequota.refused(pod, quotas, replicas)
    return out


def line(v: PodVerdict, failed: bool = False, severity: str = ERROR) -> str:
    """The one-line summary of a verdict, e.g. `Guaranteed after admission; exclusive CPUs
    server 4 on NUMA 0; injected istio-init, istio-proxy; 7 per node` (`Guaranteed unless
    <webhook> injects <containers> without equal requests and limits; ...` when a webhook
    krm-fn does not model fires: PodVerdict.unless); `failed`: an error
    outside the verdict (a rule's) keeps the pod from running pinned too; `severity`: what
    the verdict's ERROR findings are given as (WARNING under `spec.verdict.onFailure:
    warning` or the krm-fn.dev/verdict annotation), named in the line's pointer."""
    parts = [f"{v.qos}{v.unless}" if v.unless else f"{v.qos} after admission"]
    if v.exclusive:
        parts.append("exclusive CPUs " + _exclusive_text(v))
    else:
        parts.append("no exclusive CPUs")
    if v.injected:
        parts.append("injected " + ", ".join(v.injected))
    if v.fit is not None:
        parts.append(fit_text(v))
    if failed or any(f.severity == ERROR for f in v.findings):
        parts.append("will not run pinned (see the "
                     f"{'warnings' if severity == WARNING and not failed else 'errors'})")
    return "; ".join(parts)


def fit_text(v: PodVerdict) -> str:
    """`6 per node (allocatable cpu 28: 4 + 50m each)`: replicas per empty node and what
    stops the next one (`6 per node` when nothing is known to)."""
    return f"{v.fit} per node ({v.fit_limit})" if v.fit_limit else f"{v.fit} per node"


def _exclusive_text(v: PodVerdict) -> str:
    """`server 4 on NUMA 0` (`a 10, b 10 on NUMA 0` when all share the NUMA nodes; `a 10 on
    NUMA 0, b 10 on NUMA 1` when the containers got CPUs on different ones)."""
    of = dict(v.numa_of)

    def where(ids) -> str:
        return " on NUMA " + "+".join(str(n) for n in ids) if ids else ""
    if len({of.get(n, ()) for n, _ in v.exclusive}) > 1:
        return ", ".join(f"{n} {c}{where(of.get(n, ()))}" for n, c in v.exclusive)
    return ", ".join(f"{n} {c}" for n, c in v.exclusive) + where(v.numa)


def _kubelet(pod: AdmittedPod, node: NodeModel, named: tuple | None = None) -> tuple:
    """kubelet.judge_detail(pod, node), memoised per named pod shape, pod spec path and node
    (what its findings depend on) in the values kept for this very `node`
    (model.node_memo): the inputs of a render hold many pods alike. `named`:
    _signature(pod, named=True) when the caller has it."""
    memo = node_memo(node)
    key = ("kubelet", named or _signature(pod, named=True), pod.path)
    value = memo.get(key)
    if value is None:
        value = memo[key] = kubelet.judge_detail(pod, node)
    return value


def _signature(pod: AdmittedPod, named: bool = False) -> tuple:
    """What the fit of a pod depends on besides the node: its containers' roles and
    resources, pod-level resources, pod overhead, host ports, designation, its anti-affinity
    terms with what they may select of itself; with `named`, also the containers' names and
    sources (what messages name)."""
    return _signatures(pod)[named]


def _signatures(pod: AdmittedPod) -> tuple:
    """(_signature(pod), _signature(pod, named=True)), built in one pass."""
    def res(m):
        return tuple(sorted(m.items())) if m else ()
    rows = [(c.role, res(c.requests), res(c.limits), c.designated) for c in pod.containers]
    rest = (res(pod.pod_requests), res(pod.pod_limits), res(pod.overhead), pod.host_ports)
    if pod.anti:        # its terms may select its own labels: they shape the fit
        rest += (pod.anti,) + _selected_as(pod)
    named = tuple([r + (c.name, c.source) for r, c in zip(rows, pod.containers)])
    return (tuple(rows),) + rest, (named,) + rest


def _selected_as(pod: AdmittedPod) -> tuple:
    """What a pod anti-affinity term selects a pod by (podaffinity.selects): its namespace
    and labels, hashable."""
    return pod.namespace, tuple(sorted(pod.labels.items()))


def fit_alone(pod: AdmittedPod, node: NodeModel, shape: tuple | None = None,
              named: tuple | None = None) -> tuple[int, str, str]:
    """(replicas of `pod` that fit on one empty node, what stops the next one, the same in
    short) (capacity.fit_detail), memoised per pod shape and node: the inputs of a render
    hold many pods of the same shape; and per pod (model.node_memo), for pool_summary.
    `shape`, `named`: _signatures(pod) when the caller has them. The count simulated is
    also kept under the named signature of the pod it was simulated with (_together)."""
    memo = node_memo(node)
    hit = memo.get(("fit", id(pod)))
    if hit is not None and hit[0] is pod:
        return hit[1]
    if shape is None or named is None:
        shape, named = _signatures(pod)
    if not pod.anti and any(d.anti for d in node.daemons):
        # a DaemonSet pod's anti-affinity terms may select this pod's labels
        extra = _selected_as(pod)
        shape, named = shape + extra, named + extra
    key = ("fit shape", shape)
    value = memo.get(key)
    if value is None:
        value = memo[key] = capacity.fit_detail(pod, node)
        memo[("fit count", named)] = value[0]
    memo[("fit", id(pod))] = (pod, value, named)
    return value


def exclusive_per_numa(node: NodeModel) -> dict:
    """{NUMA id: CPUs a pod can get exclusively on an empty node}: outside
    reservedSystemCPUs and, under `full-pcpus-only`, outside the cores that hold a
    reserved CPU (policy_static.go GetAvailablePhysicalCPUs)."""
    state = CpuState(node)
    free = state.free - state.reserved_phys if state.full_pcpus else state.free
    out = {n: 0 for n in state.numas}
    for c in free:
        out[state.info[c].numa] += 1
    return out


def _together(pods: list, node: NodeModel) -> int:
    """How many sets of one replica of each of `pods` fit on one empty node."""
    alike = _fit_of_one_shape(pods, node)
    if alike is not None:
        return alike // len(pods)
    packer = capacity.Packer(node)
    sets = 0
    while all(packer.place(p) for p in pods):
        sets += 1
    return sets


def _fit_of_one_shape(pods: list, node: NodeModel) -> int | None:
    """The replicas that fit of pods[0] alone, when fit_alone simulated a pod of its named
    signature (_signatures) and every pod placed before the first refusal has that
    signature too, else None. The Packer admits a replica by the pod's containers (roles,
    names, requests, limits), pod-level resources and overhead alone, all in that
    signature, so placing `pods` in turn until one is refused is the same sequence as
    placing pods[0] again and again (fit_detail): its first `fit` replicas fit and the
    next is refused. That sequence holds only pods[:fit + 1]; floor(fit / len(pods))
    sets fit."""
    memo = node_memo(node)
    first = None
    for i, p in enumerate(pods):
        hit = memo.get(("fit", id(p)))
        if hit is None or hit[0] is not p:
            return None
        if first is None:
            first = hit[2]
            fit = memo.get(("fit count", first))
            if fit is None:
                return None
        elif hit[2] is not first and hit[2] != first:
            return None
        if i >= fit:
            break
    return fit if first is not None else None


def pool_summary(node: NodeModel, judged: list) -> str:
    """One line per pool: exclusive CPUs per node and per NUMA node, allocatable memory
    when modelled, each pod's exclusive CPUs and replicas per node (and what stops the
    next one), and how many sets of all of them fit together. `judged`: (AdmittedPod,
    PodVerdict) of the pods placed in the pool."""
    per_numa = exclusive_per_numa(node)
    numa = ", ".join(f"NUMA {n}: {c}" for n, c in sorted(per_numa.items()))
    head = f"node pool {node.pool!r}: {sum(per_numa.values())} exclusive CPUs per node ({numa})"
    mem = capacity.allocatable(node)["memory"]
    if mem is not None:
        head += f", {mem / 2**30:.4g}Gi allocatable memory"
    if node.daemons:
        head += (", less the pods of DaemonSet "
                 + ", ".join(d.ref.name for d in node.daemons) + " on every node")
    parts, rest = [], []
    for p, v in judged:
        need = sum(c for _, c in v.exclusive)
        what = f"needs {need} exclusive CPUs" if need else "gets no exclusive CPUs"
        if any(d is p for d in node.daemons):     # a tuned DaemonSet's pod: one per node
            parts.append(f"{p.ref.kind} {p.ref.name} {what} (one on every node)")
            continue
        rest.append(p)
        count, why, _ = fit_alone(p, node)
        stop = f", limited by {why}" if why else ""
        parts.append(f"{p.ref.kind} {p.ref.name} {what} ({count} per node{stop})")
    if not parts:
        return head + "; no pinned pod"
    text = head + "; " + "; ".join(parts)
    if len(rest) > 1:
        text += f"; all {len(rest)} together: {_together(rest, node)} per node"
    return text
