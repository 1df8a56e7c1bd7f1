"""The inputs of the verdict, built from what the pipeline has: an AdmittedPod from a tuned
PodView, a NodeModel from a node pool's NodePlan.

Sources: API defaulting of container requests from limits (kubernetes/kubernetes
pkg/apis/core/v1/defaults.go, SetDefaults_Pod), node allocatable (capacity minus
kubeReserved, systemReserved and the hard eviction threshold:
https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/; memory also
minus the pre-allocated hugepages, pkg/kubelet/nodestatus/setters.go).
"""
from __future__ import annotations

import functools

from krm_fn import quantity
from krm_fn.admission import priority
from krm_fn.admission.model import (APP, DEPENDS, ERROR, HUGEPAGES, WARNING, AdmittedPod,
                                    Container, Finding, NodeModel)
from krm_fn.pod import path_str

MEMORY_SIGNAL = "memory.available"


def amount(name: str, value) -> int | None:
    """A resource amount: cpu in nanocores (int), anything else in bytes (int, rounded
    up as the API server rounds sub-byte quantities); None when `value` is not a
    quantity (the resources rule reports it). Cached on the name, the value and its type
    (equal strings, ints or bools write the same quantity; a float's text is its repr,
    which tells 0.0 from -0.0, so floats are not cached): a render's pods repeat a few
    values."""
    if value.__class__ is float:
        return _parse_amount(name, value)
    try:
        return _amount(name, value.__class__, value)
    except TypeError:                   # unhashable: not a quantity
        return _parse_amount(name, value)


@functools.lru_cache(maxsize=4096)
def _amount(name: str, kind: type, value) -> int | None:
    return _parse_amount(name, value)


def _parse_amount(name: str, value) -> int | None:
    try:
        if name == "cpu":
            return quantity.parse_cpu(value).nanos
        return quantity.parse_memory(value).whole
    except (quantity.QuantityError, TypeError):
        return None


def resource_map(m) -> dict:
    """{resource name: amount} of a requests/limits mapping; entries that are not
    quantities are left out."""
    out = {}
    if isinstance(m, dict):
        for k, v in m.items():
            a = amount(str(k), v)
            if a is not None:
                out[str(k)] = a
    return out


def requests_limits(resources) -> tuple[dict, dict]:
    """(requests, limits) of a `resources` mapping after API defaulting: a resource with a
    limit and no request gets request = limit (SetDefaults_Pod)."""
    res = resources if isinstance(resources, dict) else {}
    limits = resource_map(res.get("limits"))
    requests = resource_map(res.get("requests"))
    for k, v in limits.items():
        requests.setdefault(k, v)
    return requests, limits


def container(view, designated: bool) -> Container:
    """The Container of a PodView container (krm_fn.pod.ContainerView) as tuned."""
    requests, limits = requests_limits(view.data.get("resources"))
    return Container(view.name, view.role, requests, limits, "manifest", designated)


def runtime_class(pod_spec: dict, runtime_classes: dict) -> tuple[dict, dict]:
    """(overhead {resource: amount}, scheduling nodeSelector {label: value}) of the
    RuntimeClass that `pod_spec` names (`runtimeClassName`) when it is among
    `runtime_classes` ({name: RuntimeClass object}), else ({}, {}). The RuntimeClass
    admission controller copies `overhead.podFixed` into the pod's `spec.overhead` and
    merges `scheduling.nodeSelector` into its nodeSelector
    (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/,
    https://kubernetes.io/docs/concepts/containers/runtime-class/#scheduling)."""
    name = pod_spec.get("runtimeClassName") if isinstance(pod_spec, dict) else None
    rc = runtime_classes.get(str(name)) if name else None
    if not isinstance(rc, dict):
        return {}, {}
    fixed = (rc.get("overhead") or {}).get("podFixed") if isinstance(
        rc.get("overhead"), dict) else None
    sel = (rc.get("scheduling") or {}).get("nodeSelector") if isinstance(
        rc.get("scheduling"), dict) else None
    return (resource_map(fixed),
            {str(k): str(v) for k, v in sel.items()} if isinstance(sel, dict) else {})


_RC_SRC = ("plugin/pkg/admission/runtimeclass/admission.go setOverhead, validateOverhead; "
           "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/")


def _cluster_runtime_class(pod_spec: dict, runtime_classes: dict, at: str) -> tuple:
    """(DEPENDS Finding,) when the pod spec at `at` names a RuntimeClass that is not among
    `runtime_classes` (the input's), else (): the RuntimeClass admission controller
    refuses the pod unless the cluster has it ("pod rejected: RuntimeClass %q not found"),
    and copies its overhead.podFixed into the pod (counted by the scheduler and quotas)
    and its scheduling.nodeSelector and tolerations into the pod's, which krm-fn does not
    know (plugin/pkg/admission/runtimeclass/admission.go `prepareObjects`, `setOverhead`,
    `setScheduling`)."""
    name = pod_spec.get("runtimeClassName")
    if not name or isinstance(runtime_classes.get(str(name)), dict):
        return ()
    return (Finding(DEPENDS, f"RuntimeClass {name} is not in the input: the API server "
                             f"refuses the pod unless the cluster has it (pod rejected: "
                             f"RuntimeClass \"{name}\" not found), and krm-fn does not count "
                             f"its overhead.podFixed (added to the pod's requests for the "
                             f"scheduler and quotas) nor its scheduling.nodeSelector and "
                             f"tolerations (merged into the pod's); add it to the input to have "
                             f"them judged (https://kubernetes.io/docs/concepts/containers/"
                             f"runtime-class/; {_RC_SRC})", "validation",
                    f"{at}.runtimeClassName"),)


def own_overhead(pod_spec: dict, runtime_classes: dict, at: str) -> tuple:
    """(Finding or None, the overhead {resource: amount} the admitted pod has when the pod
    spec sets `spec.overhead` itself and the RuntimeClass it names is not in
    `runtime_classes`, else None). The RuntimeClass admission controller sets the overhead
    from the RuntimeClass and refuses a pod that sets one of its own: without a
    runtimeClassName, or naming a RuntimeClass without `overhead` ("pod rejected: Pod
    Overhead set without corresponding RuntimeClass defined Overhead"), or one whose
    `overhead.podFixed` is another (amounts compared as quantities; "pod rejected: Pod's
    Overhead doesn't match RuntimeClass's defined Overhead"). Before that, the Finding of
    a RuntimeClass of the input the pod names that the API server refuses to create
    (runtimeclass.refusal: the pod is refused as naming none). `at`: the pod spec's path."""
    name = pod_spec.get("runtimeClassName")
    if name and isinstance(runtime_classes.get(str(name)), dict):
        from krm_fn.admission import runtimeclass
        refused = runtimeclass.refusal(pod_spec, runtime_classes, at)
        if refused is not None:
            return refused, None
    own = pod_spec.get("overhead")
    if own is None:
        return None, None
    fix = (f"remove spec.overhead: the RuntimeClass admission controller sets it from the "
           f"pod's RuntimeClass ({_RC_SRC})")
    if not name:
        return Finding(ERROR, f"spec.overhead is set without a runtimeClassName: the API server "
                              f"refuses the pod (pod rejected: Pod Overhead set without "
                              f"corresponding RuntimeClass defined Overhead); {fix}",
                       "validation", f"{at}.overhead"), None
    rc = runtime_classes.get(str(name))
    if not isinstance(rc, dict):
        return Finding(WARNING, f"spec.overhead is set: the API server refuses the pod unless "
                                f"RuntimeClass {name} defines exactly this overhead, and "
                                f"{name} is not in the input, so that is not checked; {fix}",
                       "validation", f"{at}.overhead"), resource_map(own)
    if rc.get("overhead") is None:
        return Finding(ERROR, f"spec.overhead is set but RuntimeClass {name} defines no "
                              f"overhead: the API server refuses the pod (pod rejected: Pod "
                              f"Overhead set without corresponding RuntimeClass defined "
                              f"Overhead); {fix}", "validation", f"{at}.overhead"), None
    fixed = rc["overhead"].get("podFixed") if isinstance(rc["overhead"], dict) else None
    if own and resource_map(own) != resource_map(fixed):
        return Finding(ERROR, f"spec.overhead is not the overhead.podFixed of RuntimeClass "
                              f"{name}: the API server refuses the pod (pod rejected: Pod's "
                              f"Overhead doesn't match RuntimeClass's defined Overhead); {fix}",
                       "validation", f"{at}.overhead"), None
    return None, None


def admitted_pod(pod, pinned: frozenset, injections: tuple = (), namespace: str = "",
                 findings: tuple = (), runtime_classes: dict | None = None,
                 priority_classes: dict | None = None,
                 limit_ranges: tuple = ()) -> AdmittedPod:
    """The AdmittedPod of a tuned PodView `pod`: its init containers (in spec order) then
    its app containers, with the injectors' containers (`injections`, model.Injection)
    added where each injector puts them (init/sidecar containers before the pod's own,
    app containers after); `pinned`: names of the containers krm-fn pins; pod-level
    `spec.resources` when set; `runtime_classes` ({name: RuntimeClass}): the overhead and
    node selector of the pod's RuntimeClass (`runtime_class`); `priority_classes` ({name:
    PriorityClass}): the globalDefault one names a pod without priorityClassName
    (`priority_class_name`); `limit_ranges`: the LimitRanges of the pod's namespace, whose
    defaults every container gets where it sets no amount (limitrange.defaults), the
    injected ones too: the LimitRanger runs again after the webhooks
    (`_limit_range_defaults`)."""
    own = [container(c, c.name in pinned) for c in pod.containers]
    if limit_ranges:
        from krm_fn.admission import limitrange
        findings = tuple(findings) + limitrange.undetermined(own, limit_ranges,
                                                             path_str(pod.at.spec))
        own = limitrange.with_defaults(own, limitrange.defaults(limit_ranges))
        if any(inj.containers for inj in injections):
            injections, more = _limit_range_defaults(injections, limit_ranges,
                                                     path_str(pod.at.spec))
            findings = tuple(findings) + more
    init = [c for c in own if c.role != APP]
    app = [c for c in own if c.role == APP]
    for inj in injections:
        init = [c for c in inj.containers if c.role != APP] + init
        app += [c for c in inj.containers if c.role == APP]
    pod_res = pod.spec.get("resources")
    pod_requests = pod_limits = None
    if isinstance(pod_res, dict):      # `{}` too: before 1.37 it decides the QoS class
        pod_requests, pod_limits = requests_limits(pod_res)
    sel = pod.spec.get("nodeSelector")
    aff = pod.spec.get("affinity")
    tol = pod.spec.get("tolerations")
    overhead, rc_sel = runtime_class(pod.spec, runtime_classes or {})
    refused, unchecked = own_overhead(pod.spec, runtime_classes or {}, path_str(pod.at.spec))
    if refused is not None:
        findings = tuple(findings) + (refused,)
    if unchecked is not None:
        overhead = unchecked        # admitted only when its RuntimeClass defines the same
    elif refused is None:
        findings = tuple(findings) + _cluster_runtime_class(pod.spec, runtime_classes or {},
                                                            path_str(pod.at.spec))
    selector = {str(k): str(v) for k, v in sel.items()} if isinstance(sel, dict) else {}
    clash = [k for k, v in rc_sel.items() if k in selector and selector[k] != v]
    if clash:
        findings = tuple(findings) + (Finding(
            ERROR, f"RuntimeClass {pod.spec.get('runtimeClassName')} requires nodeSelector "
                   + ", ".join(f"{k}={rc_sel[k]}" for k in clash) + " but the pod sets "
                   + ", ".join(f"{k}={selector[k]}" for k in clash) + ": the RuntimeClass "
                   "admission controller refuses the pod (conflict); use a RuntimeClass "
                   "whose scheduling.nodeSelector matches the node pool, or another pool "
                   "(https://kubernetes.io/docs/concepts/containers/runtime-class/#scheduling)",
            "scheduling", path_str(pod.at.spec) + ".nodeSelector"),)
    from krm_fn.admission import scheduling
    labels = pod.meta.get("labels") if isinstance(pod.meta, dict) else None
    findings = tuple(findings) + scheduling.os_refusals(pod.spec, labels, path_str(pod.at.spec))
    findings += priority.refusals(pod.spec, priority_classes or {}, path_str(pod.at.spec))
    findings += priority.cluster_class(pod.spec, priority_classes or {}, path_str(pod.at.spec))
    tol = (tol if isinstance(tol, list) else []) + _runtime_class_tolerations(
        pod.spec, runtime_classes or {})
    return AdmittedPod(pod.ref, path_str(pod.at.spec), tuple(init + app), pod_requests,
                       pod_limits, tuple(injections), {**rc_sel, **selector},
                       aff if isinstance(aff, dict) else None, tuple(tol), namespace,
                       findings, overhead, pod.spec.get("activeDeadlineSeconds"),
                       priority_class_name(pod.spec, priority_classes or {}),
                       pod_host_ports([(c.path[-2], c.data) for c in pod.containers
                                       if len(c.path) > 1], pod.spec),
                       {**(labels if isinstance(labels, dict) else {}),
                        **controller_labels(pod.ref.kind, pod.ref.name)},
                       _anti(aff, namespace or ""))


# what a value the controller sets and the manifest cannot know reads as: no label value
# can hold it (a label value has no spaces), so only Exists and NotIn selectors match it
UNKNOWN = "(set by the controller)"


def controller_labels(kind: str, name: str) -> dict:
    """The labels the pod gets besides its template's, as its controller or the API server
    writes them (what a pod anti-affinity term may select): a Job's `job-name` and
    `batch.kubernetes.io/job-name` (its name; pkg/registry/batch/job/strategy.go
    generateSelector) and controller-uid; a Deployment's `pod-template-hash`; a
    StatefulSet's pod name, pod index and revision hash; a DaemonSet's revision hash and
    template generation; an Argo Rollout's `rollouts-pod-template-hash`. A value the
    manifest cannot know is UNKNOWN."""
    if kind == "Job":
        return {"job-name": name, "batch.kubernetes.io/job-name": name,
                "controller-uid": UNKNOWN, "batch.kubernetes.io/controller-uid": UNKNOWN}
    return dict.fromkeys(_CONTROLLER_KEYS.get(kind, ()), UNKNOWN)


_CONTROLLER_KEYS = {
    "Deployment": ("pod-template-hash",),
    "CronJob": ("job-name", "batch.kubernetes.io/job-name", "controller-uid",
                "batch.kubernetes.io/controller-uid"),
    "StatefulSet": ("statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                    "controller-revision-hash"),
    "DaemonSet": ("controller-revision-hash", "pod-template-generation"),
    "Rollout": ("rollouts-pod-template-hash",),
}


def _anti(affinity, namespace: str) -> tuple:
    """podaffinity.terms of a pod spec's affinity, the module imported only when the pod has
    pod anti-affinity."""
    if not (isinstance(affinity, dict) and affinity.get("podAntiAffinity")):
        return ()
    from krm_fn.admission import podaffinity
    return podaffinity.terms(affinity, namespace)


def pod_host_ports(containers: list, spec: dict) -> tuple:
    """AdmittedPod.host_ports of the pod spec `spec` (plain data) given its containers as
    (list key, plain container): the host ports of the app containers and of the init
    containers with restartPolicy Always (pkg/scheduler/util/utils.go GetHostPorts; under
    hostNetwork a container port is its host port: krm_fn.pod.host_ports)."""
    from krm_fn.admission.taints import host_net
    from krm_fn.pod import host_ports
    net = host_net(spec)
    return tuple((proto, ip, port) for key, c in containers
                 if key == "containers" or (key == "initContainers" and isinstance(c, dict)
                                            and c.get("restartPolicy") == "Always")
                 for proto, ip, port, _ in host_ports(c, net))


def _limit_range_defaults(injections: tuple, limit_ranges: tuple, where: str) -> tuple:
    """(the injections with the LimitRanges' defaults in their containers, the limitrange
    findings about them): a webhook that changes the pod makes the API server run the
    in-tree mutating plugins again, the LimitRanger among them (k8s.io/apiserver
    pkg/admission/reinvocation.go; plugin/webhook/mutating/dispatcher.go
    SetShouldReinvoke), so the injected containers get the defaults too, where they set
    no amount. An injection they make Guaranteed is one."""
    from krm_fn.admission import limitrange
    from krm_fn.admission.injectors.base import guaranteed
    defaults = limitrange.defaults(limit_ranges)
    out, findings = [], ()
    for inj in injections:
        findings += limitrange.undetermined(inj.containers, limit_ranges, where)
        containers = tuple(limitrange.with_defaults(inj.containers, defaults))
        if containers != tuple(inj.containers):
            ok = inj.guaranteed or guaranteed(containers)
            inj = inj._replace(containers=containers, guaranteed=ok,
                               fix=inj.fix if not ok else "")
        out.append(inj)
    return tuple(out), findings


def priority_class_name(pod_spec: dict, priority_classes: dict) -> str:
    """The pod's priorityClassName after the Priority admission plugin
    (plugin/pkg/admission/priority/admission.go admitPod, getDefaultPriorityClass): the
    spec's when set, else the name of the PriorityClass of `priority_classes` ({name:
    PriorityClass, plain data}) with `globalDefault: true` (the lowest `value` among
    several, as the plugin picks), else "" (no globalDefault PriorityClass in the input)."""
    name = pod_spec.get("priorityClassName") if isinstance(pod_spec, dict) else None
    if name:
        return str(name)
    found = priority.default_class(priority_classes)
    return found[0] if found else ""


def _runtime_class_tolerations(pod_spec: dict, runtime_classes: dict) -> list:
    """The `scheduling.tolerations` of the pod's RuntimeClass in `runtime_classes`, which
    the RuntimeClass admission controller merges into the pod's tolerations
    (https://kubernetes.io/docs/concepts/containers/runtime-class/#scheduling); [] when
    none."""
    name = pod_spec.get("runtimeClassName") if isinstance(pod_spec, dict) else None
    rc = runtime_classes.get(str(name)) if name else None
    sched = rc.get("scheduling") if isinstance(rc, dict) else None
    tols = sched.get("tolerations") if isinstance(sched, dict) else None
    return [t for t in tols if isinstance(t, dict)] if isinstance(tols, list) else []


def numa_memory(topo_cfg, numa_ids: list[int]) -> dict:
    """{NUMA id: {resource: bytes}} from the pool's topology config (memory split evenly,
    the remainder on the lowest NUMA nodes, whole bytes; `numaMemory` entries override;
    hugepages split evenly); {} when the config gives no memory."""
    if topo_cfg.memory is None and not topo_cfg.numaMemory:
        return {}
    n = len(numa_ids)
    out: dict = {i: {} for i in numa_ids}
    if topo_cfg.memory is not None:
        total = topo_cfg.memory.whole
        share, rest = divmod(total, n)
        for k, i in enumerate(numa_ids):
            out[i]["memory"] = share + (1 if k < rest else 0)
    for key, text in topo_cfg.numaMemory.items():
        if int(key) in out:
            out[int(key)]["memory"] = amount("memory", text)
    for page, text in topo_cfg.hugepages.items():
        name = HUGEPAGES + page
        each = amount("memory", text) // n
        for i in numa_ids:
            out[i][name] = each
    return out


def allocatable_memory(capacity: int, kubelet: dict) -> int:
    """Node allocatable memory in bytes: capacity minus kubeReserved and systemReserved
    memory and the hard eviction threshold memory.available (a quantity or a percentage
    of capacity, go_quantity.percent_of: the kubelet reads it as a float32), never below
    0."""
    used = 0
    for name in ("kubeReserved", "systemReserved"):
        m = kubelet.get(name)
        if isinstance(m, dict) and m.get("memory") is not None:
            used += amount("memory", m["memory"]) or 0
    hard = kubelet.get("evictionHard")
    signal = hard.get(MEMORY_SIGNAL) if isinstance(hard, dict) else None
    if isinstance(signal, str) and signal.endswith("%"):
        from krm_fn.node import go_quantity
        try:        # float32, as the kubelet's eviction parser (hostile test: exact was
            used += go_quantity.percent_of(capacity, signal)    # 102 bytes short at 10%)
        except (ValueError, OverflowError):
            pass
    elif signal is not None:
        used += amount("memory", signal) or 0
    return max(0, capacity - used)


def node_model(plan, pool_cfg, version: tuple, node: dict | None = None) -> NodeModel:
    """The NodeModel of one node of a pool: `plan` its krm_fn.node.plan.NodePlan (the
    merged KubeletConfiguration, topology, reserved CPUs), `pool_cfg` the config's node
    pool (memory of its topology), `version` (major, minor), `node` the pool's
    `topology.fromNode` Node (plain) or None: its labels and taints count
    (scheduling.known_labels, taints.pool_taints)."""
    from krm_fn.admission import scheduling, taints
    cpus = tuple(plan.topology.cpus())
    numa_ids = sorted({c.numa for c in cpus})
    per_numa = numa_memory(pool_cfg.topology, numa_ids)
    return NodeModel(plan.pool, scheduling.known_labels(dict(plan.node_selector), node),
                     plan.merged, tuple(version), cpus, frozenset(plan.reserved_cpus),
                     per_numa, taints=taints.pool_taints(plan.merged, plan.kubelet, node))


def daemon_pods(items: list, labels: dict, node_taints: tuple = (),
                unsure: list | None = None) -> tuple:
    """AdmittedPods of the DaemonSets (apps/v1) among `items` (plain objects) whose pods run
    on every node with `labels` and `node_taints` (taints.Taint): their nodeSelector and
    required node affinity match them (krm_fn.admission.scheduling.evaluate is True) and
    their tolerations, with the DaemonSet controller's, tolerate every NoSchedule and
    NoExecute taint (the controller's nodeShouldRunDaemonPod; taints.untolerated), and the
    pool's Linux kubelet admits them (scheduling.os_refusals: a `spec.os.name: windows` pod
    is refused, PodOSNotSupported, and takes nothing). Containers as written, API
    defaulting applied (a limit without a request gives request = limit); none is
    designated. `unsure`, when given, gets (DaemonSet name, [reasons]) for each DaemonSet
    that may run there or not (evaluate is None: labels the pool does not list), which is
    not counted."""
    from krm_fn.admission import scheduling, taints
    from krm_fn.admission.model import INIT, SIDECAR
    from krm_fn.results import Ref
    out = []
    for obj in items:
        if not (isinstance(obj, dict) and obj.get("kind") == "DaemonSet"
                and str(obj.get("apiVersion") or "").startswith("apps/")):
            continue
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") \
            if isinstance(obj.get("spec"), dict) else None
        if not isinstance(spec, dict):
            continue
        sel = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
        runs, why = scheduling.evaluate({str(k): str(v) for k, v in sel.items()},
                                        spec.get("affinity"), labels)
        if runs is False:
            continue
        tols = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
        if node_taints and taints.untolerated(node_taints, taints.admitted(
                tols, daemonset=True, host_network=taints.host_net(spec))):
            continue
        meta = (obj["spec"].get("template") or {}).get("metadata")
        if scheduling.os_refusals(spec, (meta or {}).get("labels") if isinstance(
                meta, dict) else {}):
            continue        # the Linux kubelet refuses the pod: it takes nothing there
        md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if runs is None:
            if unsure is not None:
                unsure.append((str(md.get("name") or ""), why))
            continue
        conts, raw = [], []
        for key, role in (("initContainers", INIT), ("containers", APP)):
            for c in spec.get(key) or []:
                if not isinstance(c, dict):
                    continue
                raw.append((key, c))
                r = SIDECAR if role == INIT and c.get("restartPolicy") == "Always" else role
                req, lim = requests_limits(c.get("resources"))
                conts.append(Container(str(c.get("name") or ""), r, req, lim, "daemonset"))
        ns = str(md.get("namespace") or "")
        own = meta.get("labels") if isinstance(meta, dict) else None
        out.append(AdmittedPod(Ref(str(obj.get("apiVersion")), "DaemonSet",
                                   str(md.get("name") or ""), ns),
                               "spec.template.spec", tuple(conts), namespace=ns,
                               host_ports=pod_host_ports(raw, spec),
                               labels={**(own if isinstance(own, dict) else {}),
                                       **controller_labels("DaemonSet", "")},
                               anti=_anti(spec.get("affinity"), ns)))
    return tuple(out)
