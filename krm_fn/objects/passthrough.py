"""Kinds whose pods krm-fn cannot make Guaranteed from the manifest, passed through with
a finding that says what to change and where (checked through krm_fn.objects, which
imports this module only for them):

- NVIDIA NIM Operator `NIMService` (`apps.nvidia.com`): `spec.resources` is the NIM
  container's; `spec.initContainers` and `spec.sidecarContainers` have no resources field;
- production-stack `VLLMRuntime` (`production-stack.vllm.ai`):
  `spec.deploymentConfig.resources` is plain strings;
- the legacy KFServing `serving.kubeflow.org` InferenceService;
- Argo Rollouts `Rollout` with `spec.workloadRef`: the pods come from the referenced
  Deployment: a warning names it, and says when it is in the input but not selected;
- KServe `LLMInferenceService` without `spec.template`, Seldon `Server` without
  `spec.podSpec`: nothing in the manifest sizes the model server;
- a KServe `InferenceService` whose predictor has other than exactly one implementation:
  KServe's webhook refuses it (an error; the pod specs are tuned by the rules otherwise).

Each handler is `f(obj, ref, ctx) -> [Result]` (ctx: krm_fn.objects.ObjectContext).
"""
from __future__ import annotations

import math

from krm_fn import quantity
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.workloads import KSERVE_FRAMEWORKS, get_path


def _suggest(res: dict, ctx) -> tuple[str | None, str | None, bool]:
    """(cpu, memory) a ResourceRequirements should hold for a pinned container (None when
    it cannot be derived) and whether it already does."""
    vals = {}
    for r, parse in (("cpu", quantity.parse_cpu), ("memory", quantity.parse_memory)):
        got = []
        for part in ("requests", "limits"):
            raw = get_path(res, (part, r))
            if raw is None:
                continue
            try:
                got.append(parse(raw))
            except quantity.QuantityError:
                return None, None, False
        vals[r] = got
    ok = all(len(v) == 2 and v[0].nanos == v[1].nanos for v in vals.values())
    cpu = mem = None
    if vals["cpu"]:
        n = max(q.whole for q in vals["cpu"])
        t = ctx.pools[0].threads_per_core if ctx.pools and ctx.pools[0].full_pcpus_only else 1
        n = math.ceil(n / t) * t
        cpu = str(n)
        ok = ok and vals["cpu"][0].nanos == n * quantity.NANO
    if vals["memory"]:
        mem = max(vals["memory"], key=lambda q: q.nanos).text
    return cpu, mem, ok


def nim(obj: dict, ref: Ref, ctx) -> list:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    out: list[Result] = []
    for key in ("initContainers", "sidecarContainers"):
        lst = spec.get(key)
        if not isinstance(lst, list) or not lst:
            continue
        names = ", ".join(repr(c.get("name")) for c in lst if isinstance(c, dict))
        out.append(Result(
            f"NIMService spec.{key} ({names}): the NIM Operator's NIMContainerSpec has no "
            f"resources field, so these containers run without limits and the pod can never "
            f"be Guaranteed — no container gets exclusive CPUs; remove spec.{key} (run that "
            f"work in another pod) to pin the NIM container", WARNING, ref, f"spec.{key}"))
    res = spec.get("resources") if isinstance(spec.get("resources"), dict) else {}
    cpu, mem, ok = _suggest(res, ctx)
    if not ok:
        want = (f"requests and limits both cpu: \"{cpu or 'N'}\"" + ("" if cpu else
                " (a whole number of CPUs)") + f" and memory: {mem or '<the memory it needs>'}")
        out.append(Result(
            f"NIMService spec.resources is the NIM container's: krm-fn does not rewrite "
            f"NIMService (the NIM Operator renders the pod), so set {want} there; requests "
            f"== limits with whole CPUs is what the static CPU Manager pins", WARNING, ref,
            "spec.resources"))
    out.append(Result(
        "NIMService is passed through unchanged: set spec.nodeSelector to the node pool's "
        "labels and the thread variables (OMP_NUM_THREADS and the others of "
        "spec.workloads.threads.env) in spec.env to the pinned CPU count yourself",
        INFO, ref, "spec"))
    return out


def vllm_runtime(obj: dict, ref: Ref, ctx) -> list:
    cpu = get_path(obj, ("spec", "deploymentConfig", "resources", "cpu"))
    found = f" (found {cpu!r})" if cpu is not None else ""
    return [Result(
        f"VLLMRuntime (production-stack) is passed through unchanged: "
        f"spec.deploymentConfig.resources holds plain cpu, memory and gpu strings that the "
        f"operator turns into the vLLM container's resources, so krm-fn cannot make the pod "
        f"Guaranteed; set cpu to a whole number of CPUs{found} and memory, give "
        f"spec.sidecarConfig.resources equal values too, then check that the rendered pod's "
        f"status.qosClass is Guaranteed (or render the Deployment and run krm-fn on it)",
        WARNING, ref, "spec.deploymentConfig.resources")]


def legacy_kfserving(obj: dict, ref: Ref, ctx) -> list:
    return [Result(
        f"{obj.get('apiVersion')} InferenceService is the legacy KFServing API, which "
        f"krm-fn does not tune (and current KServe does not serve): move it to "
        f"serving.kserve.io/v1beta1 InferenceService and run krm-fn again", WARNING, ref,
        "apiVersion")]


def rollout(obj: dict, ref: Ref, ctx) -> list:
    wref = get_path(obj, ("spec", "workloadRef"))
    if wref is None:
        if get_path(obj, ("spec", "template")) is None:
            return [Result("Rollout has neither spec.template nor spec.workloadRef: there is "
                           "no pod spec to tune", WARNING, ref, "spec")]
        return []
    if not isinstance(wref, dict) or not wref.get("name"):
        return [Result("spec.workloadRef must name the Deployment whose pod template the "
                       "Rollout uses", ERROR, ref, "spec.workloadRef")]
    meta = get_path(obj, ("spec", "template", "metadata"))
    if isinstance(meta, dict) and (meta.get("labels") or meta.get("annotations")):
        return [Result("spec.template has labels or annotations beside spec.workloadRef: Argo "
                       "Rollouts refuses the Rollout (\"template must be empty for workload "
                       "reference rollout\", rollout/templateref.go; RolloutSpec.EmptyTemplate "
                       "counts labels and annotations) and runs no pods; remove spec.template "
                       "and tune the referenced Deployment", ERROR, ref, "spec.template")]
    kind = str(wref.get("kind") or "Deployment")
    name = str(wref["name"])
    ns = ref.namespace or "default"
    target = None
    for it in ctx.items:
        if (isinstance(it, dict) and it.get("kind") == kind
                and get_path(it, ("metadata", "name")) == name
                and (get_path(it, ("metadata", "namespace")) or "default") == ns):
            target = it
            break
    head = (f"spec.workloadRef: the Rollout's pods use the pod template of {kind} {name}, so "
            f"that is where krm-fn must tune them")
    if target is None:
        return [Result(f"{head}; it is not in this input: run krm-fn where {kind} {name} is "
                       f"rendered, with spec.selector selecting it", WARNING, ref,
                       "spec.workloadRef")]
    if not ctx.selected(target):
        return [Result(f"{head}; it is in this input but not selected (spec.selector, or a "
                       f"krm-fn.dev/skip annotation): select {kind} {name} instead of (or "
                       f"besides) the Rollout", WARNING, ref, "spec.workloadRef")]
    return [Result(f"{head}; it is tuned in this render", INFO, ref, "spec.workloadRef")]


def inference_service(obj: dict, ref: Ref, ctx) -> list:
    """KServe's validating webhook refuses an InferenceService whose predictor has other
    than exactly one implementation (pkg/apis/serving/v1beta1 component.go
    validateExactlyOneImplementation; predictor.go GetImplementations: each framework key
    and `model` that is set, and each container named kserve-container, else the first
    container): an error, since no pod is ever made."""
    pred = get_path(obj, ("spec", "predictor"))
    if not isinstance(pred, dict):
        return []
    found = [k for k in KSERVE_FRAMEWORKS if pred.get(k) is not None]
    containers = pred.get("containers") if isinstance(pred.get("containers"), list) else []
    found += ["containers (kserve-container)" for c in containers
              if isinstance(c, dict) and c.get("name") == "kserve-container"]
    if len(found) == 1 or (not found and containers):
        return []
    keys = ", ".join(KSERVE_FRAMEWORKS) + " or containers"
    what = ("none of them" if not found else
            "more than one: " + ", ".join(found))
    return [Result(f"spec.predictor sets {what}: KServe's webhook refuses an "
                   f"InferenceService whose predictor has other than exactly one of {keys} "
                   f"(\"exactly one of [...] must be specified in PredictorSpec\", "
                   f"pkg/apis/serving/v1beta1/component.go validateExactlyOneImplementation), "
                   f"so no pod is made; keep exactly one", ERROR, ref, "spec.predictor")]


def llmisvc(obj: dict, ref: Ref, ctx) -> list:
    if get_path(obj, ("spec", "template")) is not None:
        return []
    return [Result(
        "spec.template is not set: the model server container 'main' comes from the "
        "LLMInferenceServiceConfig templates, which set no resources, so the pod is not "
        "Guaranteed and nothing is pinned; add spec.template.containers with an entry named "
        "main carrying resources (requests == limits, a whole number of CPUs): the "
        "controller merges it by name", WARNING, ref, "spec.template")]


def seldon_server(obj: dict, ref: Ref, ctx) -> list:
    if get_path(obj, ("spec", "podSpec")) is not None:
        return []
    return [Result(
        "spec.podSpec is not set: the pod is the ServerConfig's, whose default containers "
        "rclone, agent and mlserver (or triton) set a cpu request and no cpu limit, so it is "
        "Burstable and nothing is pinned; add spec.podSpec.containers with an entry per "
        "container name carrying resources (requests == limits; whole CPUs for the model "
        "server): Seldon merges them by name", WARNING, ref, "spec.podSpec")]
