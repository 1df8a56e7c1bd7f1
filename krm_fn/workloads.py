"""Registry of workload kinds: where each kind keeps its pod specs (data, not code).

Source: each project's API types (core kinds: the Kubernetes API reference,
https://kubernetes.io/docs/reference/kubernetes-api/; KServe: kserve/kserve
pkg/apis/serving/v1beta1 predictor.go, component.go, podspec.go, v1alpha1
servingruntime_types.go, v1alpha2 llm_inference_service_types.go; Knative: knative/serving
pkg/apis/serving/v1; kubernetes-sigs/lws v0.10.0 api/; kubernetes-sigs/jobset api/;
argoproj/argo-rollouts pkg/apis/rollouts/v1alpha1; ray-project/kuberay ray-operator/apis/ray/v1;
SeldonIO/seldon-core v2 operator/apis/mlops/v1alpha1).

A `PodSpecAt` names, relative to the object root:
  - `spec`: the PodSpec-shaped mapping (containers[], initContainers[], volumes[],
    nodeSelector, resources) — for KServe the predictor itself is an inline PodSpec;
  - `meta`: the mapping whose `annotations` the pod gets (pod template metadata), or None
    for kinds whose pods take no annotations from the manifest (Seldon Server);
  - `container_keys`: keys of `spec` that each hold ONE container (KServe framework keys).
Adding a kind is one line in `KINDS`.
"""
from __future__ import annotations

from collections import namedtuple


class MergedContainer(namedtuple("MergedContainer", "name sidecar app when uri schemes "
                                 "unless_false memory source",
                                 defaults=(False, False, (), (), (), (), None, ""))):
    """A container that a controller merges into the pod BY NAME from its own template
    (strategic merge on `name`), so it never appears in the manifest unless the user
    writes an entry with that name — which is the only way to size it.

    `app`: the model server itself (in containers[]): never added, since krm-fn cannot know
    its resources; its absence is warned about. `sidecar`: a restartable init container
    (`restartPolicy: Always`), else a regular init container; `when`: an object path that
    must be set (e.g. spec.prefill); `uri` + `schemes`: an object path whose value must
    start with one of the schemes;
    `unless_false`: an object path whose value `false` turns the container off;
    `memory`: the memory to give it (the controller's default limit; None: the config's
    sidecarResources.memory); `source`: where the controller takes it from (for messages).
    """

    __slots__ = ()


class PodSpecAt(namedtuple("PodSpecAt", "spec meta container_keys model_container platform "
                           "optional unnamed_container ray_params merged needs_containers "
                           "unless job_restart",
                           defaults=((), None, None, False, None, None, (), False, None,
                                     None))):
    """Where one pod spec lives in an object. Paths are tuples of mapping keys; `"*"`
    stands for every entry of a list (`spec.workerGroupSpecs[*].template.spec`).

    `optional`: the object may lack this pod spec (else a missing one is an error; with a
    `"*"`, each entry of the list must hold it unless `optional`: an empty or absent list
    has no entries);
    `model_container`: name of the container to pin when the config names none (a tuple:
    the first of these names the pod has);
    `platform`: who adds containers at admission (`kserve`, `knative`, `seldon`), for the
    injected-container rules;
    `unnamed_container`: containers may omit `name` (Knative): the platform names the only
    container this, and the i-th of several this + `-i`;
    `ray_params`: path of the KubeRay `rayStartParams` map of this pod's group;
    `merged`: containers the controller merges in by name (MergedContainer);
    `needs_containers`: the pod spec is the whole pod's (a PodTemplateSpec or PodSpec no
    controller merges over another), so one without containers is refused by the API
    server (pkg/apis/core/validation/validation.go validateContainers: "Required value");
    `unless`: an object path that, when set, makes the controller ignore this pod spec
    (an Argo Rollout's spec.template under spec.workloadRef);
    `job_restart`: the pod template is a Job's (its Job spec two keys up), whose
    `restartPolicy` the API server allows only as OnFailure or Never (pkg/apis/batch/
    validation/validation.go validateJobSpec): "" when unset is refused, else the policy
    the controller's webhook sets when unset (JobSet: OnFailure, kubernetes-sigs/jobset
    pkg/webhooks/jobset_webhook.go Default); None: not a Job's.
    """

    __slots__ = ()


def model_names(at: PodSpecAt) -> tuple:
    """The model container name(s) of `at`, as a tuple (empty when none)."""
    m = at.model_container
    if m is None:
        return ()
    return (m,) if isinstance(m, str) else tuple(m)


def _t(*path: str, **kw) -> PodSpecAt:
    """A PodTemplateSpec at `path`: spec at path+spec, metadata at path+metadata; the whole
    pod's, so it needs containers."""
    return PodSpecAt(spec=tuple(path) + ("spec",), meta=tuple(path) + ("metadata",),
                     needs_containers=True, **kw)


# KServe v1beta1 predictor framework keys: each is one inline corev1.Container
# (predictor.go PredictorSpec; exactly one is set). The container is named
# `kserve-container` by the controller.
KSERVE_FRAMEWORKS = ("sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx",
                     "huggingface", "pmml", "lightgbm", "paddle", "model")


def _kserve(path: tuple, keys: tuple = (), optional: bool = True,
            meta: tuple | None = None) -> PodSpecAt:
    """A KServe component: an inline PodSpec whose own `annotations` reach the pod."""
    return PodSpecAt(spec=path, meta=path if meta is None else meta, container_keys=keys,
                     model_container="kserve-container", platform="kserve",
                     optional=optional)


def _runtime() -> tuple:
    """ServingRuntime / ClusterServingRuntime: `spec` holds the containers (no
    initContainers) and `annotations`; `spec.workerSpec` the multi-node workers."""
    return (PodSpecAt(("spec",), ("spec",), model_container="kserve-container",
                      platform="kserve"),
            PodSpecAt(("spec", "workerSpec"), ("spec",), platform="kserve", optional=True))


# LLMInferenceService: the user spec is strategic-merge-patched onto LLMInferenceServiceConfig
# templates, containers by name (pkg/controller/v1alpha2/llmisvc/config_merge.go).
_LLM_ROUTING_SIDECAR = MergedContainer(
    "llm-d-routing-sidecar", sidecar=True, when=("spec", "prefill"),
    source="LLMInferenceServiceConfig kserve-config-llm-decode-template (decode pod of a "
           "prefill/decode deployment), where it has no resources")
_LLM_STORAGE_INITIALIZER = MergedContainer(
    "storage-initializer", uri=("spec", "model", "uri"), schemes=("hf://", "s3://"),
    unless_false=("spec", "storageInitializer", "enabled"), memory="1Gi",
    source="the storage initializer config (ConfigMap kserve/inferenceservice-config and "
           "the ClusterStorageContainer), default requests 100m cpu/100Mi memory, limits "
           "1 cpu/1Gi")


_LLM_MAIN = MergedContainer(
    "main", app=True, source="the LLMInferenceServiceConfig templates (the model server, with "
                             "no resources)")


def _llm(path: tuple, meta: tuple | None, merged: tuple = ()) -> PodSpecAt:
    return PodSpecAt(spec=path, meta=meta, model_container="main", optional=True,
                     merged=merged)


def _ray(*group: str, star: bool = False) -> PodSpecAt:
    """A KubeRay group (head or worker): template at group.template, rayStartParams beside it;
    the Ray container is containers[0] (RayContainerIndex)."""
    base = tuple(group) + (("*",) if star else ())
    # every worker group needs its template (the RayCluster CRD's workerGroupSpecs items:
    # required groupName, maxReplicas, minReplicas, template; a null one is pruned first)
    return _t(*base, "template", ray_params=base + ("rayStartParams",))


def _ray_cluster(*prefix: str, optional: bool = False) -> tuple:
    head = _ray(*prefix, "headGroupSpec")
    if optional:
        head = head._replace(optional=True)
    return (head, _ray(*prefix, "workerGroupSpecs", star=True))


KINDS: dict[tuple[str, str], tuple[PodSpecAt, ...]] = {
    ("", "Pod"): (PodSpecAt(spec=("spec",), meta=("metadata",), needs_containers=True),),
    ("", "PodTemplate"): (_t("template"),),
    ("", "ReplicationController"): (_t("spec", "template"),),
    ("apps", "Deployment"): (_t("spec", "template"),),
    ("apps", "StatefulSet"): (_t("spec", "template"),),
    ("apps", "DaemonSet"): (_t("spec", "template"),),
    ("apps", "ReplicaSet"): (_t("spec", "template"),),
    ("batch", "Job"): (_t("spec", "template", job_restart=""),),
    ("batch", "CronJob"): (_t("spec", "jobTemplate", "spec", "template", job_restart=""),),
    # KServe v1beta1: predictor (+ workers), transformer, explainer, every canary predictor.
    ("serving.kserve.io", "InferenceService"): (
        _kserve(("spec", "predictor"), KSERVE_FRAMEWORKS, optional=False),
        _kserve(("spec", "predictor", "workerSpec"), meta=("spec", "predictor")),
        _kserve(("spec", "transformer")),
        _kserve(("spec", "explainer"), ("art",)),
        _kserve(("spec", "canary", "*", "predictor"), KSERVE_FRAMEWORKS),
        _kserve(("spec", "canary", "*", "predictor", "workerSpec"),
                meta=("spec", "canary", "*", "predictor")),
    ),
    ("serving.kserve.io", "ServingRuntime"): _runtime(),
    ("serving.kserve.io", "ClusterServingRuntime"): _runtime(),
    # LLMInferenceService v1alpha1/v1alpha2: six optional PodSpecs (not templates: their
    # annotations are the WorkloadSpec's / SchedulerSpec's; TokenizerSpec has none).
    ("serving.kserve.io", "LLMInferenceService"): (
        _llm(("spec", "template"), ("spec",),
             (_LLM_MAIN, _LLM_ROUTING_SIDECAR, _LLM_STORAGE_INITIALIZER)),
        _llm(("spec", "worker"), ("spec",), (_LLM_MAIN,)),
        _llm(("spec", "prefill", "template"), ("spec", "prefill"),
             (_LLM_MAIN, _LLM_STORAGE_INITIALIZER)),
        _llm(("spec", "prefill", "worker"), ("spec", "prefill"), (_LLM_MAIN,)),
        _llm(("spec", "router", "scheduler", "template"), ("spec", "router", "scheduler")),
        _llm(("spec", "router", "scheduler", "tokenizer", "template"), None),
    ),
    # Knative Serving v1: a queue-proxy is injected into every revision.
    ("serving.knative.dev", "Service"): (
        _t("spec", "template", platform="knative", unnamed_container="user-container"),),
    ("serving.knative.dev", "Configuration"): (
        _t("spec", "template", platform="knative", unnamed_container="user-container"),),
    ("serving.knative.dev", "Revision"): (
        PodSpecAt(("spec",), ("metadata",), platform="knative",
                  unnamed_container="user-container", needs_containers=True),),
    # LeaderWorkerSet: no leaderTemplate -> the leader uses workerTemplate.
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        _t("spec", "leaderWorkerTemplate", "leaderTemplate", optional=True),
        _t("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
    ("jobset.x-k8s.io", "JobSet"): (
        _t("spec", "replicatedJobs", "*", "template", "spec", "template",
           job_restart="OnFailure"),),
    # Argo Rollouts: spec.template, or spec.workloadRef naming a Deployment (krm_fn/objects/).
    ("argoproj.io", "Rollout"): (_t("spec", "template", optional=True,
                                    unless=("spec", "workloadRef")),),
    # KubeRay: head and every worker group.
    ("ray.io", "RayCluster"): _ray_cluster("spec"),
    ("ray.io", "RayService"): _ray_cluster("spec", "rayClusterConfig"),
    ("ray.io", "RayJob"): _ray_cluster("spec", "rayClusterSpec", optional=True) + (
        _t("spec", "submitterPodTemplate", optional=True),),
    # Seldon Core v2: spec.podSpec merged over the ServerConfig, no pod annotations field.
    ("mlops.seldon.io", "Server"): (
        PodSpecAt(("spec", "podSpec"), None, model_container=("mlserver", "triton"),
                  platform="seldon", optional=True),),
    ("mlops.seldon.io", "ServerConfig"): (
        PodSpecAt(("spec", "podSpec"), None, model_container=("mlserver", "triton")),),
}


# The versions at which the API server (core groups) or each project's CRDs serve the
# kinds of KINDS, by group (a mapping by kind where a group's kinds differ): an object at
# another version is refused ("no matches for kind"). Core: the Kubernetes API reference
# (apps/v1beta1 and v1beta2 were removed in 1.16, batch/v1beta1 CronJob in 1.25:
# https://kubernetes.io/docs/reference/using-api/deprecation-guide/); the CRDs: each
# project's config/crd (KServe, Knative Serving, LWS, JobSet, Argo Rollouts, KubeRay with
# its older v1alpha1, Seldon Core v2).
SERVED: dict = {
    "": ("v1",), "apps": ("v1",), "batch": ("v1",),
    "serving.kserve.io": {"InferenceService": ("v1beta1",),
                          "ServingRuntime": ("v1alpha1",),
                          "ClusterServingRuntime": ("v1alpha1",),
                          "LLMInferenceService": ("v1alpha1", "v1alpha2")},
    "serving.knative.dev": ("v1",), "leaderworkerset.x-k8s.io": ("v1",),
    "jobset.x-k8s.io": ("v1alpha2",), "argoproj.io": ("v1alpha1",),
    "ray.io": ("v1", "v1alpha1"), "mlops.seldon.io": ("v1alpha1",),
}


def served_versions(obj: dict) -> tuple:
    """The versions at which the kind of `obj` (one of KINDS) is served (SERVED); () for a
    kind SERVED does not list."""
    group = group_of(obj.get("apiVersion"))
    got = SERVED.get(group, ())
    return got.get(obj.get("kind"), ()) if isinstance(got, dict) else got


def version_of(api_version: object) -> str:
    """`apps/v1` -> `v1`; `v1` -> `v1`."""
    s = api_version if isinstance(api_version, str) else ""
    return s.rsplit("/", 1)[-1]


def parse_path(text: str) -> tuple:
    """`spec.workers[*].template` -> ("spec", "workers", "*", "template"). Raises
    ValueError for an empty segment."""
    out: list = []
    for part in text.split("."):
        name, _, rest = part.partition("[")
        if not name:
            raise ValueError(f"empty segment in path {text!r}")
        out.append(name)
        while rest:
            idx, _, rest = rest.partition("]")
            if idx != "*":
                raise ValueError(f"only [*] is allowed in path {text!r}")
            out.append("*")
            rest = rest[1:] if rest.startswith("[") else rest
            if rest:
                raise ValueError(f"unexpected {rest!r} in path {text!r}")
    return tuple(out)


def expand(obj: dict, at: PodSpecAt) -> list[PodSpecAt]:
    """Concrete locations of `at` in `obj`: each `"*"` replaced by every index of the list
    found there (a missing or non-list value there gives no location). A pattern without
    `"*"` is its own only location (`at` itself: an equal copy would cost a record build
    per pod spec, and a PodSpecAt is a value)."""
    if "*" not in at.spec and (at.meta is None or "*" not in at.meta) and (
            at.ray_params is None or "*" not in at.ray_params):
        return [at]
    results: list[tuple[tuple, tuple]] = [((), ())]
    for key in at.spec:
        nxt = []
        for prefix, indices in results:
            if key != "*":
                nxt.append((prefix + (key,), indices))
                continue
            lst = get_path(obj, prefix)
            if isinstance(lst, list):
                nxt.extend((prefix + (i,), indices + (i,)) for i in range(len(lst)))
        results = nxt
    out = []
    for spec, indices in results:
        out.append(at._replace(
            spec=spec, meta=_fill(at.meta, indices), ray_params=_fill(at.ray_params, indices),
            optional=at.optional))
    return out


def _fill(path: tuple | None, indices: tuple) -> tuple | None:
    """`path` with its `"*"` entries replaced by `indices`, in order."""
    if path is None:
        return None
    it = iter(indices)
    return tuple(next(it, 0) if k == "*" else k for k in path)


def group_of(api_version: object) -> str:
    """`apps/v1` -> `apps`; `v1` -> `` (the core group)."""
    s = api_version if isinstance(api_version, str) else ""
    return s.rsplit("/", 1)[0] if "/" in s else ""


def registered(obj: dict, extra: dict | None = None) -> tuple[PodSpecAt, ...]:
    """Pod spec patterns registered for the object's (group, kind) in KINDS or `extra`
    (the config's extraKinds); () for other kinds."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return ()
    key = (group_of(obj.get("apiVersion")), kind)
    return (extra or {}).get(key) or KINDS.get(key, ())


def locations(obj: dict, extra: dict | None = None) -> list[PodSpecAt]:
    """Concrete pod spec locations of `obj` (patterns expanded, those whose `unless` path
    is set left out); [] for other kinds."""
    return [c for at in registered(obj, extra)
            if at.unless is None or get_path(obj, at.unless) is None
            for c in expand(obj, at)]


def get_path(obj: object, path: tuple) -> object:
    """Follow mapping keys and list indices (int keys, as `expand` puts in place of `"*"`);
    None when any step is missing or of another shape."""
    cur = obj
    for key in path:
        if key.__class__ is str:            # the usual step: a mapping key
            if isinstance(cur, dict):
                cur = cur.get(key)
                continue
            return None
        if isinstance(key, int) and not isinstance(key, bool):
            if not isinstance(cur, list) or not 0 <= key < len(cur):
                return None
            cur = cur[key]
        elif isinstance(cur, dict):
            cur = cur.get(key)
        else:
            return None
    return cur
