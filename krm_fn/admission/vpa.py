"""VerticalPodAutoscaler: its admission controller rewrites container resources when a pod
is created, so the pod the kubelet sees is not the one krm-fn wrote.

Source: kubernetes/autoscaler at tag vertical-pod-autoscaler/v1.7.1, under
vertical-pod-autoscaler/pkg:

- apis/autoscaling.k8s.io/v1/types.go: `updatePolicy.updateMode` Off | Initial | Recreate |
  InPlaceOrRecreate | InPlace | Auto (deprecated), default Recreate (utils/vpa/api.go
  GetUpdateMode); `resourcePolicy.containerPolicies[]`: `containerName` (`*`: every
  container without its own entry, api.go GetContainerResourcePolicy: the first entry of
  that name, else the `*` one), `mode` Auto | Off, `minAllowed` / `maxAllowed`,
  `controlledResources` (default cpu and memory; an empty list controls none),
  `controlledValues` RequestsAndLimits (default) | RequestsOnly;
- admission-controller/resource/pod/patch/resource_updates.go CalculatePatches: every mode
  but Off patches each pod at creation; recommendation/recommendation_provider.go
  GetContainersResources: only `spec.containers` (never `initContainers`, so no native
  sidecar), and only a container with a recommendation (recommender/model/
  aggregate_container_state.go NeedsRecommendation: none for a container whose mode is
  Off; recommender/logic/recommender.go FilterControlledResources: only its
  controlledResources);
- utils/vpa/capping.go: the recommendation clamped to minAllowed, then maxAllowed (a zero
  amount is no bound), then, under RequestsOnly, capped to the container's limit
  (capRecommendationToContainerLimit); the request becomes it;
- utils/vpa/limit_and_request_scaling.go getProportionalResourceLimit: under
  RequestsAndLimits a limit equal to its request becomes the new request, another limit
  scales with it; no recommendation of a resource leaves its limit alone.

So for each app container the VPA acts on, per resource it controls: under RequestsOnly
the request becomes a recommendation at most the limit, so request == limit holds only
when `minAllowed` is at least the limit, else the pod is Burstable (QoS is per pod); under
RequestsAndLimits request == limit holds, but a pinned container's cpu becomes the
recommendation, a whole number (the one krm-fn wrote) only when `minAllowed.cpu ==
maxAllowed.cpu ==` it. A LimitRange's capping (capping.go applyContainerLimitRange) is
not modelled.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.admission.model import APP, ERROR, AdmittedPod, Finding

TAG = "vertical-pod-autoscaler/v1.7.1"
SOURCE = (f"https://github.com/kubernetes/autoscaler/tree/{TAG}/vertical-pod-autoscaler/pkg/"
          f"utils/vpa capping.go, limit_and_request_scaling.go")
DEFAULT_MODE = "Recreate"
_DEFAULT_RESOURCES = ("cpu", "memory")


def targets(vpa: dict, kind: str, name: str, namespace: str) -> bool:
    """`vpa` (plain object) targets the workload `kind`/`name` in `namespace` (its
    namespace as model.same_namespace reads it: either one unset counts)."""
    from krm_fn.admission.model import same_namespace
    ref = (vpa.get("spec") or {}).get("targetRef") if isinstance(vpa.get("spec"), dict) else None
    if not isinstance(ref, dict):
        return False
    return (str(ref.get("kind")) == kind and str(ref.get("name")) == name
            and same_namespace(vpa, namespace))


def kserve_deployments(isvc: dict, path: str) -> tuple:
    """Names of the Deployments KServe's controller makes (raw deployment mode) for the pod
    spec of InferenceService `isvc` (plain object) at `path` ("spec.predictor",
    "spec.predictor.workerSpec", "spec.transformer", "spec.explainer",
    "spec.canary[0].predictor"), which a VPA targets by name: kserve pkg/constants
    constants.go v0.20.0 PredictorServiceName (`<isvc>[-<predictor name>]-predictor`),
    PredictorWorkerServiceName, TransformerServiceName, ExplainerServiceName."""
    name = str((isvc.get("metadata") or {}).get("name") or "")
    spec = isvc.get("spec") if isinstance(isvc.get("spec"), dict) else {}

    def predictor(p) -> str:
        own = p.get("name") if isinstance(p, dict) else None
        return f"{name}-{own}-predictor" if own else f"{name}-predictor"

    if path.startswith("spec.predictor.workerSpec"):
        return (f"{name}-predictor-worker",)
    if path.startswith("spec.predictor"):
        return (predictor(spec.get("predictor")),)
    for component in ("transformer", "explainer"):
        if path.startswith(f"spec.{component}"):
            return (f"{name}-{component}",)
    if path.startswith("spec.canary["):
        i = path[len("spec.canary["):].split("]", 1)[0]
        canary = spec.get("canary")
        if i.isdigit() and isinstance(canary, list) and int(i) < len(canary) \
                and isinstance(canary[int(i)], dict) and ".workerSpec" not in path:
            return (predictor(canary[int(i)].get("predictor")),)
    return ()


def update_mode(spec: dict) -> str:
    """`spec.updatePolicy.updateMode` of a VPA spec (plain data), DEFAULT_MODE when unset
    (api.go GetUpdateMode)."""
    policy = spec.get("updatePolicy")
    mode = policy.get("updateMode") if isinstance(policy, dict) else None
    return str(mode) if mode else DEFAULT_MODE


def policy_for(spec: dict, container: str) -> tuple:
    """(the containerPolicies entry that applies to `container`, {} when none; its
    containerName): the first entry named `container`, else the first `*` one (api.go
    GetContainerResourcePolicy)."""
    rp = spec.get("resourcePolicy")
    policies = rp.get("containerPolicies") if isinstance(rp, dict) else None
    default = None
    for p in policies if isinstance(policies, list) else ():
        if not isinstance(p, dict):
            continue
        if str(p.get("containerName")) == container:
            return p, container
        if p.get("containerName") == "*" and default is None:
            default = p
    return (default, "*") if default is not None else ({}, None)


def _bound(policy: dict, key: str, res: str):
    """`policy[key][res]` (minAllowed / maxAllowed) in model units, None when unset, zero
    (capping.go maybeCapToMin / maybeCapToMax ignore a zero bound) or unreadable."""
    bounds = policy.get(key)
    text = bounds.get(res) if isinstance(bounds, dict) else None
    if text is None:
        return None
    try:
        q = (quantity.parse_cpu if res == "cpu" else quantity.parse_memory)(str(text))
    except (quantity.QuantityError, TypeError, ValueError):
        return None
    return (q.nanos if res == "cpu" else q.whole) or None


def effect(policy: dict, container) -> tuple:
    """What the VPA does to `container` (model.Container, an app container) under
    `policy` (policy_for): (resources whose request == limit it breaks, under RequestsOnly;
    whether it moves a pinned container's cpu off the whole number it has). Only resources
    whose request == limit now are judged (any other already keeps the pod from being
    Guaranteed, which the QoS part says)."""
    if str(policy.get("mode") or "Auto") == "Off":
        return (), False
    controlled = policy.get("controlledResources")
    controlled = ([str(r) for r in controlled] if isinstance(controlled, list)
                  else list(_DEFAULT_RESOURCES))
    only = str(policy.get("controlledValues") or "RequestsAndLimits") == "RequestsOnly"
    broken, moved = [], False
    for res in _DEFAULT_RESOURCES:
        if res not in controlled:
            continue
        req, lim = container.requests.get(res), container.limits.get(res)
        if req is None or req != lim:
            continue
        low, high = _bound(policy, "minAllowed", res), _bound(policy, "maxAllowed", res)
        if only:
            if low is None or low < lim:
                broken.append(res)
        elif res == "cpu" and _exclusive(container) and not (low == high == req):
            moved = True
    return tuple(broken), moved


def _exclusive(container) -> bool:
    """Whether `container` is one whose cpu stays a whole number of exclusive CPUs unless a
    VPA moves it: one krm-fn pins, or any app container whose cpu request == limit is a
    whole number, which the static CPU Manager pins too (policy_static.go
    guaranteedCPUs)."""
    if container.designated:
        return True
    cpu = container.requests.get("cpu")
    return cpu is not None and cpu > 0 and quantity.kubelet_cpus(cpu) > 0


def _fix(c, broken: tuple, moved: bool) -> str:
    """The containerPolicies entry that keeps `c` as krm-fn wrote it."""
    if _exclusive(c) and ("cpu" in broken or moved):
        whole = ("" if "memory" in broken else f", or minAllowed.cpu and maxAllowed.cpu "
                 f"both {quantity.format_cpu(c.requests['cpu'])}")
        return (f"spec.resourcePolicy.containerPolicies entry {{containerName: {c.name}, "
                f"mode: \"Off\"}}, or {{containerName: {c.name}, controlledResources: "
                f"[memory], controlledValues: RequestsAndLimits}}{whole}")
    return (f"spec.resourcePolicy.containerPolicies entry {{containerName: {c.name}, "
            f"controlledValues: RequestsAndLimits}} (or mode: \"Off\")")


def _acting(vpas: list):
    """(VPA name, update mode, spec) of each VPA of `vpas` whose update mode is not Off."""
    for vpa in vpas:
        spec = vpa.get("spec") if isinstance(vpa.get("spec"), dict) else {}
        md = vpa.get("metadata") if isinstance(vpa.get("metadata"), dict) else {}
        mode = update_mode(spec)
        if mode != "Off":
            yield md.get("name"), mode, spec


def after(pod: AdmittedPod, vpas: list, qos: str, exclusive: tuple) -> tuple:
    """(QoS class, exclusive CPUs) of `pod` once the VPAs of `vpas` patched it at creation,
    from the kubelet's (`qos`, `exclusive`: ((container name, cpus), ...)) on the pod as
    written: a Guaranteed pod with a container whose request == limit a VPA breaks is
    Burstable, with no exclusive CPUs; a pinned container whose cpu a VPA moves gets
    none."""
    broken, moved = False, set()
    for _, _, spec in _acting(vpas):
        for c in pod.containers:
            if c.role == APP:
                b, m = effect(policy_for(spec, c.name)[0], c)
                broken = broken or bool(b)
                if m:
                    moved.add(c.name)
    if broken:
        return ("Burstable" if qos == "Guaranteed" else qos), ()
    return qos, tuple(e for e in exclusive if e[0] not in moved)


def refused(pod: AdmittedPod, vpas: list) -> tuple:
    """ERROR Findings (rule `vpa`) for each VPA of `vpas`
    (plain objects targeting the pod's workload) whose update mode is not Off and which
    will, when a pod is created, make an app container's request differ from its limit
    (RequestsOnly: the pod is Burstable) or a pinned container's cpu another amount than
    the whole number krm-fn wrote (RequestsAndLimits); one per VPA and container."""
    out = []
    for name, mode, spec in _acting(vpas):
        for c in pod.containers:
            if c.role != APP:
                continue
            policy, entry = policy_for(spec, c.name)
            broken, moved = effect(policy, c)
            if broken or moved:
                out.append(Finding(ERROR, _message(name, mode, c, policy, entry,
                                                   broken, moved), "vpa",
                                   pod.path))
    return tuple(out)


def _message(name, mode: str, c, policy: dict, entry, broken: tuple, moved: bool) -> str:
    """The error of one VPA on one container (refused)."""
    by = (f"its containerPolicies entry {entry!r}" if entry else
          "no containerPolicies entry, so the defaults")
    what = []
    if broken:
        low = ", ".join(f"{r} {quantity.format_amount(r, c.limits[r])}" for r in broken)
        what.append(f"sets container {c.name!r}'s {' and '.join(broken)} request to its "
                    f"recommendation and keeps the limit (controlledValues RequestsOnly; "
                    f"{by}): a recommendation below the limit ({low}) makes request != "
                    f"limit, so the pod is Burstable, not Guaranteed, and no container of "
                    f"it gets exclusive CPUs")
    if moved:
        bounds = "" if not (policy.get("minAllowed") or policy.get("maxAllowed")) else (
            " within its minAllowed / maxAllowed")
        whose = (f"pinned container {c.name!r}'s cpu request and limit" if c.designated
                 else f"the cpu request and limit of container {c.name!r} (not one krm-fn "
                      f"pins, but its whole cpu gets exclusive CPUs from the kubelet)")
        wrote = "krm-fn wrote" if c.designated else "it has"
        what.append(f"sets {whose} to its "
                    f"recommendation{bounds} (controlledValues RequestsAndLimits; {by}) "
                    f"instead of the {quantity.format_amount('cpu', c.requests['cpu'])} {wrote}: a "
                    f"value that is almost never a whole number, so the static CPU Manager "
                    f"gives it no exclusive CPUs")
    return (f"VerticalPodAutoscaler {name} (updateMode {mode}) "
            + "; it also ".join(what)
            + f"; keep it as written: {_fix(c, broken, moved)}, or updateMode: \"Off\" "
              f"({SOURCE})")
