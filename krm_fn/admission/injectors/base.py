"""What every injector module reads and builds: the pod's metadata as the injector sees it
(`Meta`), the input objects that control injectors (`InjectionContext`), and helpers to
turn request/limit strings into `model.Container`s.

Units as in krm_fn/admission/model.py: cpu in nanocores (int), memory in bytes (int).
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn import quantity
from krm_fn.admission import apiobjects, model
from krm_fn.numbers import yaml11_bool
from krm_fn.workloads import get_path

CPU, MEMORY = "cpu", "memory"


class Meta(namedtuple("Meta", "annotations labels owner_annotations ns_labels ns_annotations "
                      "platform kind namespace host_network spec container_keys "
                      "kserve_default_mode ray_group ray_cluster ray_cluster_path")):
    """The pod's metadata as an admission webhook sees it.

    `annotations` / `labels`: the pod template's, as the pod will get them (for a KServe
    InferenceService component, the InferenceService's own metadata merged under the
    component's: kserve pkg/controller/v1beta1/inferenceservice/components/predictor.go);
    `owner_annotations`: the InferenceService's own `metadata.annotations` ({} for other
    kinds), where KServe reads `serving.kserve.io/deploymentMode`;
    `ns_labels` / `ns_annotations`: those of the pod's Namespace object when it is in the
    input, else None (unknown: namespace-level injection is invisible);
    `platform`: PodSpecAt.platform (`kserve`, `knative`, `seldon` or None); `kind`: the
    workload's kind; `namespace`: the workload's namespace ("" when unset);
    `host_network`: the pod spec sets hostNetwork: true; `spec`: the pod spec as plain
    data ({} unknown; for KServe the component spec); `container_keys`: keys of `spec`
    holding one container each (PodSpecAt.container_keys, e.g. KServe `model`);
    `kserve_default_mode`: KServe's defaultDeploymentMode when its ConfigMap
    inferenceservice-config is in the input, else None; `ray_group`: "head" or "worker"
    for a KubeRay group's pod, else None; `ray_cluster`: that group's Ray cluster spec
    (plain data, {} otherwise) and `ray_cluster_path` its field path (`spec`,
    `spec.rayClusterConfig`, ...).
    """

    __slots__ = ()

    def __new__(cls, annotations: dict | None = None, labels: dict | None = None,
                owner_annotations: dict | None = None, ns_labels: dict | None = None,
                ns_annotations: dict | None = None, platform: str | None = None,
                kind: str = "", namespace: str = "", host_network: bool = False,
                spec: dict | None = None, container_keys: tuple = (),
                kserve_default_mode: str | None = None, ray_group: str | None = None,
                ray_cluster: dict | None = None, ray_cluster_path: str = ""):
        return super().__new__(
            cls, {} if annotations is None else annotations, {} if labels is None else labels,
            {} if owner_annotations is None else owner_annotations, ns_labels,
            ns_annotations, platform, kind, namespace, host_network,
            {} if spec is None else spec, container_keys, kserve_default_mode, ray_group,
            {} if ray_cluster is None else ray_cluster, ray_cluster_path)


def _of_namespace(by_namespace: dict, namespace: str | None) -> tuple:
    """The objects of `by_namespace` ({namespace or "": [plain objects]}) that
    model.same_namespace counts for a pod of `namespace`: its namespace's, those without a
    namespace, and every one for a pod without a namespace."""
    return tuple(o for objs in by_namespace.values() for o in objs
                 if model.same_namespace(o, namespace or ""))


class InjectionContext(namedtuple(
        "InjectionContext", "namespaces configmaps storage_containers instrumentations "
        "collectors injection runtime_classes limit_ranges vpas quotas untuned "
        "priority_classes hpas")):
    """The input objects that size injected containers, and the function config.

    `namespaces`: {name: Namespace object}; `configmaps`: {(namespace, name): ConfigMap};
    `storage_containers`: KServe ClusterStorageContainer objects (tuple);
    `instrumentations`: {(namespace, name): OpenTelemetry Instrumentation};
    `collectors`: {(namespace, name): OpenTelemetryCollector}; `injection`: the config's
    `spec.workloads.injection` record (None: not given); `runtime_classes`: {name: RuntimeClass (node.k8s.io)}, whose pod
    overhead and node selector the pods that name them get; `limit_ranges`: {namespace:
    [LimitRange]}, which the API server validates every pod of that namespace against;
    `vpas`: VerticalPodAutoscaler objects (autoscaling.k8s.io), which rewrite resources at
    admission; `hpas`: HorizontalPodAutoscaler objects (autoscaling, v1 and v2), which set
    their target's replicas; `quotas`: {namespace: [ResourceQuota]}, whose spec.hard the API server
    checks every pod of that namespace against; `priority_classes`: {name: PriorityClass
    (scheduling.k8s.io)}, whose globalDefault one the Priority admission plugin names in a
    pod without priorityClassName; `untuned(obj) -> list[str]`: what keeps a
    plain object from being tuned in this render, as fixes (pipeline.select.untuned_because;
    [] when it is tuned; None: not known, every object counts as selected).
    All objects are plain data as read from the input. (No `__slots__`: an instance keeps
    what it found once in its `__dict__`, kserve_default_mode.)
    """

    def __new__(cls, namespaces: dict | None = None, configmaps: dict | None = None,
                storage_containers: tuple = (), instrumentations: dict | None = None,
                collectors: dict | None = None, injection: object | None = None,
                runtime_classes: dict | None = None, limit_ranges: dict | None = None,
                vpas: tuple = (), quotas: dict | None = None, untuned: object = None,
                priority_classes: dict | None = None, hpas: tuple = ()):
        def d(x):
            return {} if x is None else x
        return super().__new__(
            cls, d(namespaces), d(configmaps), storage_containers, d(instrumentations),
            d(collectors), injection, d(runtime_classes), d(limit_ranges), vpas, d(quotas),
            untuned, d(priority_classes), hpas)

    @classmethod
    def from_items(cls, items: list, injection=None, minor: int | None = None):
        """Collect the objects above from the input `items` (plain dicts; others ignored),
        without the Namespaces, ResourceQuotas and HorizontalPodAutoscalers the API server
        refuses to create (admission/apiobjects.py; `minor`: the cluster's minor
        release, None for the newest)."""
        ns, cms, scs, insts, cols, rcs, lrs, vpas, rqs = {}, {}, [], {}, {}, {}, {}, [], {}
        pcs: dict = {}
        hpas: list = []
        for it in items:
            if not isinstance(it, dict):
                continue
            kind, md = it.get("kind"), it.get("metadata")
            md = md if isinstance(md, dict) else {}
            name, space = str(md.get("name") or ""), str(md.get("namespace") or "")
            group = str(it.get("apiVersion") or "").rpartition("/")[0]
            if kind in apiobjects.KINDS and apiobjects.errors(it, minor):
                continue        # never created: pipeline/refused.py says so
            if kind == "Namespace" and group == "":
                ns[name] = it
            elif kind == "ConfigMap" and group == "":
                cms[(space, name)] = it
            elif kind == "ClusterStorageContainer" and group == "serving.kserve.io":
                scs.append(it)
            elif kind == "Instrumentation" and group == "opentelemetry.io":
                insts[(space, name)] = it
            elif kind == "OpenTelemetryCollector" and group == "opentelemetry.io":
                cols[(space, name)] = it
            elif kind == "RuntimeClass" and group == "node.k8s.io":
                rcs[name] = it
            elif kind == "LimitRange" and group == "":
                lrs.setdefault(space, []).append(it)
            elif kind == "VerticalPodAutoscaler" and group == "autoscaling.k8s.io":
                vpas.append(it)
            elif kind == "ResourceQuota" and group == "":
                rqs.setdefault(space, []).append(it)
            elif kind == "PriorityClass" and group == "scheduling.k8s.io":
                pcs[name] = it
            elif kind == "HorizontalPodAutoscaler" and group == "autoscaling":
                hpas.append(it)
        return cls(ns, cms, tuple(scs), insts, cols, injection, rcs, lrs, tuple(vpas), rqs,
                   priority_classes=pcs, hpas=tuple(hpas))

    @classmethod
    def for_config(cls, items: list, cfg) -> "InjectionContext":
        """`from_items` with the loaded config's `spec.workloads.injection` and
        `spec.kubernetesVersion`."""
        return cls.from_items(items, cfg.workloads.injection, cfg.kubernetesVersion[1])

    def limit_ranges_for(self, namespace: str | None) -> tuple:
        """The input's LimitRanges that may sit in the namespace of a pod of `namespace`
        ("" or None: the pod's workload names none): those model.same_namespace counts, so a
        LimitRange without a namespace for a pod of any namespace, and any LimitRange for a
        pod without one. An object without a namespace lands where the tool that applies the
        render puts it (`kubectl apply`: the context's namespace, `default` unless set; Argo
        CD's destination namespace, Flux's targetNamespace), so krm-fn fails closed rather
        than assume another namespace (https://kubernetes.io/docs/concepts/policy/limit-range/:
        the LimitRanger admission applies the LimitRanges of the pod's namespace)."""
        return _of_namespace(self.limit_ranges, namespace)

    def quotas_for(self, namespace: str | None) -> tuple:
        """The input's ResourceQuotas that may sit in the namespace of a pod of `namespace`,
        as `limit_ranges_for` reads them (the ResourceQuota admission counts the pod against
        the quotas of its namespace:
        https://kubernetes.io/docs/concepts/policy/resource-quotas/)."""
        return _of_namespace(self.quotas, namespace)

    def configmap(self, name: str, namespace: str | None = None) -> dict | None:
        """The ConfigMap `name` (in `namespace`, or in any namespace when None)."""
        for (space, n), cm in self.configmaps.items():
            if n == name and (namespace is None or space == namespace):
                return cm
        return None

    def kserve_default_mode(self) -> str | None:
        """KServe's `defaultDeploymentMode` (ConfigMap inferenceservice-config, key
        `deploy`) when that ConfigMap is in the input and says, else None. Found once per
        context (every pod's Meta asks; the ConfigMaps do not change during a render)."""
        memo = self.__dict__.get("_kserve_default_mode", self)
        if memo is self:
            from krm_fn.admission.serving_mode import kserve_default_mode
            memo = kserve_default_mode(self.configmaps)
            self.__dict__["_kserve_default_mode"] = memo
        return memo

    def namespace_meta(self, name: str) -> tuple[dict | None, dict | None]:
        """(labels, annotations) of Namespace `name` when it is in the input, else
        (None, None)."""
        return namespace_meta(self.namespaces, name)


def namespace_meta(namespaces: dict, name: str) -> tuple[dict | None, dict | None]:
    """(labels, annotations) of Namespace `name` when it is in `namespaces` ({name:
    Namespace object}), else (None, None)."""
    obj = namespaces.get(name) if name else None
    if obj is None:
        return None, None
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    lab, ann = md.get("labels"), md.get("annotations")
    return (lab if isinstance(lab, dict) else {}), (ann if isinstance(ann, dict) else {})


def is_isvc(pod) -> bool:
    """A KServe InferenceService component (predictor, transformer, explainer, canary):
    its pods get the InferenceService's own metadata too. A ServingRuntime's own metadata
    does not reach pods. `pod`: a krm_fn.pod.PodView."""
    return pod.at.platform == "kserve" and pod.ref.kind == "InferenceService"


def root_meta(pod, key: str) -> dict:
    """The workload's own `metadata.<key>` ({} when missing). `pod`: a PodView."""
    v = get_path(pod.edits.root, ("metadata", key))
    return v if isinstance(v, dict) else {}


def pod_meta(pod, key: str) -> dict:
    """The pod template's labels or annotations (`key`) as the pod will get them: for
    KServe the InferenceService's own metadata merged under the component's. `pod`: a
    PodView."""
    if pod.at.meta is None:
        return {}
    v = get_path(pod.edits.root, pod.at.meta + (key,))
    own = v if isinstance(v, dict) else {}
    if is_isvc(pod):
        return {**root_meta(pod, key), **own}
    return own


def meta_of(pod, namespaces: dict | None = None, ctx: "InjectionContext | None" = None
            ) -> Meta:
    """The Meta of a PodView; `namespaces`: {name: Namespace object} of the input
    (InjectionContext.namespaces), whose labels and annotations fill ns_labels and
    ns_annotations for the workload's namespace; `ctx`: the InjectionContext, for what
    cluster ConfigMaps of the input say (KServe's default deployment mode).

    A Meta depends only on the item's plain data, `namespaces` and `ctx`, and every write
    to the data is a Change (krm_fn.pod.Edits.set), so one is built once per pod and
    again only after a write to the item (the injector-annotations rule asks once per
    injector, the verdict once more)."""
    if ctx is not None and namespaces is None:
        namespaces = ctx.namespaces
    memo = getattr(pod, "memo", None)
    if memo is None:
        return _meta_of(pod, namespaces, ctx)
    writes = len(pod.edits.changes)
    last = memo.get("meta_of")
    if last is not None and last[0] == writes and last[1] is namespaces and last[2] is ctx:
        return last[3]
    meta = _meta_of(pod, namespaces, ctx)
    memo["meta_of"] = (writes, namespaces, ctx, meta)
    return meta


def _meta_of(pod, namespaces: dict | None, ctx: "InjectionContext | None") -> Meta:
    """meta_of, built afresh."""
    ns_labels, ns_ann = namespace_meta(namespaces or {}, pod.ref.namespace)
    spec = pod.spec if isinstance(pod.spec, dict) else {}
    group, cluster, cluster_path = ray_group(pod)
    return Meta(pod_meta(pod, "annotations"), pod_meta(pod, "labels"),
                root_meta(pod, "annotations") if is_isvc(pod) else {}, ns_labels, ns_ann,
                pod.at.platform, pod.ref.kind, pod.ref.namespace,
                yaml11_bool(spec.get("hostNetwork")) is True, spec,
                tuple(pod.at.container_keys),
                ctx.kserve_default_mode() if ctx is not None else None,
                group, cluster, cluster_path)


def ray_group(pod) -> tuple[str | None, dict, str]:
    """("head" | "worker", the Ray cluster spec, its field path) of a KubeRay group's
    PodView (PodSpecAt.ray_params), else (None, {}, "")."""
    params = pod.at.ray_params
    if not params:
        return None, {}, ""
    for i, key in enumerate(params):
        if key in ("headGroupSpec", "workerGroupSpecs"):
            cluster = get_path(pod.edits.root, tuple(params[:i]))
            path = ".".join(str(p) for p in params[:i])
            return ("head" if key == "headGroupSpec" else "worker",
                    cluster if isinstance(cluster, dict) else {}, path)
    return None, {}, ""


def amount(res: str, text: object) -> object | None:
    """`text` parsed as `res` (nanocores for cpu, bytes otherwise; ints); None when
    empty, missing or not a quantity."""
    if text is None or text == "":
        return None
    try:
        if res == CPU:
            return quantity.parse_cpu(text).nanos
        return quantity.parse_memory(text).whole
    except quantity.QuantityError:
        return None


def container(name: str, role: str, source: str, requests: dict, limits: dict
              ) -> model.Container:
    """A model.Container from {resource: text} requests and limits (empty and unparsable
    values dropped), with the API's defaulting: a limit without a request gives request =
    limit (kubernetes pkg/apis/core/v1/defaults.go, SetDefaults_Pod)."""
    req = {r: a for r, t in requests.items() if (a := amount(r, t)) is not None}
    lim = {r: a for r, t in limits.items() if (a := amount(r, t)) is not None}
    for r, a in lim.items():
        req.setdefault(r, a)
    return model.Container(name, role, req, lim, source)


def guaranteed(containers) -> bool:
    """Every container has cpu and memory limits, each equal to its request (the QoS rule
    for Guaranteed: kubernetes pkg/apis/core/v1/helper/qos/qos.go)."""
    return all(r in c.limits and c.requests.get(r) == c.limits[r]
               for c in containers for r in (CPU, MEMORY))


def show(c: model.Container) -> str:
    """`name requests cpu 100m, memory 128Mi; limits cpu 2, memory 1Gi` (`none` when empty)."""
    def part(d: dict) -> str:
        out = []
        for r in (CPU, MEMORY):
            if r in d:
                fmt = quantity.format_cpu if r == CPU else quantity.format_bytes
                out.append(f"{r} {fmt(d[r])}")
        return ", ".join(out) or "none"
    return f"{c.name} requests {part(c.requests)}; limits {part(c.limits)}"


def first(*sources: tuple) -> object:
    """The first value that is set among (mapping, key) pairs; None when none is (a None
    mapping is skipped)."""
    for mapping, key in sources:
        if mapping is not None and mapping.get(key) not in (None, ""):
            return mapping[key]
    return None
