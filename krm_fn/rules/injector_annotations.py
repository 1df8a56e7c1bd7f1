"""injector-annotations: request == limit for sidecars injected at admission, through the
injector's own pod-template annotations.

Injected containers never appear in the manifest, yet one with requests != limits makes the
whole pod Burstable and no container gets exclusive CPUs. Each injector reads its container
resources from annotations on the pod template (sources below); when a workload gets one
of these sidecars, krm-fn writes all four (cpu request and limit, memory request and limit)
with equal values from `spec.workloads.injection.<injector>` (fractional CPU is fine: the
sidecar runs in the shared pool).

| injector | injected when | annotations (cpu req, cpu lim, mem req, mem lim) |
|---|---|---|
| `istio` | label (preferred) or annotation `sidecar.istio.io/inject` is `true`/`yes`/`y`/`on`; label `istio.io/rev`; the Namespace in the input labelled `istio-injection=enabled` or `istio.io/rev` | `sidecar.istio.io/proxyCPU`, `proxyCPULimit`, `proxyMemory`, `proxyMemoryLimit` |
| `linkerd` | annotation `linkerd.io/inject: enabled` (or `ingress`) on the pod, or on the Namespace in the input | `config.linkerd.io/proxy-cpu-request`, `proxy-cpu-limit`, `proxy-memory-request`, `proxy-memory-limit` |
| `knativeQueueProxy` | every Knative Service/Configuration/Revision; a KServe InferenceService whose `serving.kserve.io/deploymentMode` is not `RawDeployment`, `Standard` or `ModelMesh` (absent: Serverless is assumed; a raw deployment ignores the annotations) | `queue.sidecar.serving.knative.dev/cpu-resource-request`, `cpu-resource-limit`, `memory-resource-request`, `memory-resource-limit` |
| `vault` | annotation `vault.hashicorp.com/agent-inject: "true"` | `vault.hashicorp.com/agent-requests-cpu`, `agent-limits-cpu`, `agent-requests-mem`, `agent-limits-mem` |
| `dapr` | annotation `dapr.io/enabled: "true"` | `dapr.io/sidecar-cpu-request`, `sidecar-cpu-limit`, `sidecar-memory-request`, `sidecar-memory-limit` |

Each injector's triggers, containers and defaults are defined once, in
krm_fn/admission/injectors/<injector>.py (`krm-fn explain` shows them); the Namespace
triggers count when that Namespace object is in the input (a workload's
`metadata.namespace` names it). Sources: istio/api `annotation/annotations.yaml` and the injection template
`manifests/charts/istio-control/istio-discovery/files/injection-template.yaml`, istio
`pkg/kube/inject` (label over annotation; `y|yes|true|on`, any other value opts out);
linkerd2 `pkg/k8s/labels.go`, `pkg/inject/inject.go`; knative/serving
`pkg/apis/serving/register.go`, `pkg/reconciler/revision/resources/queue.go` (per-revision
annotations since knative-v1.11.0, #14038); kserve `pkg/constants/constants.go`
(deploymentMode values) and `components/predictor.go` (ISVC `metadata.annotations` and
`spec.predictor.annotations` both reach the pod, the component's win); hashicorp/vault-k8s
`agent-inject/agent/annotations.go` (strconv.ParseBool); dapr `pkg/injector/annotations`
(`y|yes|true|t|on|1`).

Behaviour, per injector and per pod template:

- `mode: auto` (default): only when the workload, or its Namespace in the input, visibly
  opts in (table above). `always`: also without a visible opt-in (namespace-level
  injection whose Namespace is not in the input). `never`: nothing. An explicit opt-out
  (`sidecar.istio.io/inject: "false"`, a Namespace labelled `istio-injection=disabled`,
  `hostNetwork: true` or ambient mode for Istio, `linkerd.io/inject: disabled`,
  `vault.hashicorp.com/agent-inject: "false"`, `dapr.io/enabled: "false"`, a KServe
  `RawDeployment`/`Standard`/`ModelMesh` deploymentMode) wins over `always`: the pod gets
  no such sidecar.
- The annotations go on the pod template (`spec.template.metadata.annotations`, a Pod's
  `metadata.annotations`, KServe `spec.predictor.annotations`), created when missing.
  Values are quoted strings: cpu in canonical form (`"500m"`, `"1"`), memory as written in
  the config. For an InferenceService the opt-in may also be on its own `metadata`
  (KServe copies it to the pods). A ServingRuntime's opt-in is its `spec.annotations` /
  `spec.labels`; it serves either deployment mode, so it gets queue-proxy annotations only
  with `mode: always`. Kinds whose pods take no annotations from the manifest (Seldon
  Server/ServerConfig) are skipped.
- An annotation you set is kept, even when it differs from the config; its partner is set
  to the same value (request == limit) — Istio, for one, takes resources only from the
  annotations present, so `proxyCPU` alone gives a proxy without a cpu limit. When you set
  both to different values, the smaller one is raised to the larger. Values already equal
  are left as written.
- cpu or memory not configured and neither annotation of the pair set: a warning naming the
  annotations and the config field; krm-fn never invents sidecar resources.
- Warnings for what annotations cannot fix: older Istio sizes istio-init from the
  cluster-wide `global.proxy_init.resources` unless Istio CNI is used; Linkerd before
  linkerd/linkerd2#12741 sizes linkerd-init from the Helm value `proxyInit.resources`;
  Knative before knative-v1.11.0 ignores the queue-proxy annotations (ConfigMap
  `knative-serving/config-deployment` decides).
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.admission import injectors as registry
from krm_fn.admission.injectors import base as injbase
from krm_fn.pod import PodView, path_str
from krm_fn.workloads import get_path

ID = "injector-annotations"
OPTIONS = ("workloads.injection",)

_GUARANTEED = "the injected container needs request == limit for the pod to stay Guaranteed"

# The injectors sized by pod-template annotations are the modules of
# krm_fn/admission/injectors with a KEY (attribute of spec.workloads.injection; FLAT: prefix
# of its ConfigMap keys; TITLE; CPU and MEMORY: (request, limit) annotation names; NOTE:
# warning about what the annotations cannot fix; trigger(meta)): registry.ANNOTATED. `apply`
# imports only those that may fire for the pod (registry.candidates).


def _field(inj, res: str) -> str:
    return f"spec.workloads.injection.{inj.KEY}.{res}"


def _flat(inj, res: str) -> str:
    return inj.FLAT + res.capitalize()


def _text(res: str, q: quantity.Quantity) -> str:
    return quantity.format_cpu(q.nanos) if res == "cpu" else q.text


def _unquoted(raw: object) -> str:
    """Why an unquoted annotation value is refused (krm-fn reads every scalar of the input
    as a string; kubectl and the API server's YAML reader do not: metadata.annotations is
    map[string]string, "cannot unmarshal number into Go struct field
    ObjectMeta.metadata.annotations of type string")."""
    seen = numbers.api_json(str(raw))
    two = numbers.octal_reading(str(raw))
    what = (f"the number {seen}" if seen is not None else "no string")
    fix = (f"write \"{two[0]}\" or \"{two[1]}\" ({raw} is {two[0]} as a YAML 1.1 octal "
           f"number, {two[1]} as a quantity)" if two is not None else f"write \"{raw}\"")
    return (f": {raw} is written unquoted, which kubectl and the API server read as {what}, "
            f"and the API server refuses the object (metadata.annotations holds strings); "
            f"{fix}")


def _pair(pod: PodView, inj, why: str, res: str, conf, ann: dict) -> bool:
    """Make the request/limit annotation pair of `res` equal. Returns False when the pair is
    missing and not configured (the caller warns)."""
    base = pod.at.meta + ("annotations",)
    names = inj.CPU if res == "cpu" else inj.MEMORY
    parse = quantity.parse_cpu if res == "cpu" else quantity.parse_memory
    have: dict[str, tuple[str, quantity.Quantity]] = {}
    for name in names:
        raw = ann.get(name)
        if raw is None or raw == "":
            continue
        if not isinstance(raw, str) or (numbers.yaml11_typed(raw)
                                        and pod.edits.unquoted(base + (name,))):
            pod.error(base + (name,), f"{inj.TITLE}: annotation {name} must be a string"
                      + _unquoted(raw))
            return True
        try:
            have[name] = (raw, parse(raw))
        except quantity.QuantityError as e:
            pod.error(base + (name,), f"{inj.TITLE}: annotation {name}: {e}")
            return True
    head = f"{inj.TITLE} ({why}): annotation"
    if len(have) == 2:
        (big, (raw, qbig)), (small, (old, qsmall)) = sorted(
            have.items(), key=lambda kv: kv[1][1].nanos, reverse=True)
        if qbig.nanos == qsmall.nanos:
            return True
        pod.set(base + (small,), raw, f"{head} {small} {old} -> {raw}, equal to {big}: "
                f"{_GUARANTEED}", old)
        return True
    if len(have) == 1:
        (name, (raw, q)), = have.items()
        partner = names[1] if name == names[0] else names[0]
        kept = ""
        if conf is not None and conf.nanos != q.nanos:
            kept = f" (your value is kept over {_field(inj, res)} {_text(res, conf)})"
        pod.set(base + (partner,), raw, f"{head} {partner} set to {raw}, equal to {name}"
                f"{kept}: {_GUARANTEED}")
        return True
    if conf is None:
        return False
    text = _text(res, conf)
    for name in names:
        pod.set(base + (name,), text, f"{head} {name} set to {text} from {_field(inj, res)}: "
                f"{_GUARANTEED}")
    return True


def _warn_once(pod: PodView, path: tuple, message: str) -> None:
    """Warn unless the same warning is already there: pod specs of one object may share
    their annotations (a KServe predictor and its workerSpec)."""
    if not any(r.message == message and r.path == path_str(path) for r in pod.results):
        pod.warn(path, message)


def _apply_one(pod: PodView, ctx, inj) -> None:
    conf = getattr(ctx.cfg.workloads.injection, inj.KEY)
    if conf.mode == "never" or pod.at.meta is None:
        return
    meta = injbase.meta_of(pod, ctx.namespaces, getattr(ctx, "ictx", None))
    ann = meta.annotations
    on, why = inj.trigger(meta)
    if on is False:
        return
    if on is None:
        if conf.mode != "always":
            return
        why = f"{_field(inj, 'mode')} is always"
    base = pod.at.meta + ("annotations",)
    for i in range(len(base)):
        v = get_path(pod.edits.root, base[:i + 1])
        if v is None:
            break
        want = list if i + 1 < len(base) and isinstance(base[i + 1], int) else dict
        if not isinstance(v, want):
            pod.error(base[:i + 1], f"{inj.TITLE} ({why}): must be a "
                                    f"{'list' if want is list else 'mapping'}, to carry the "
                                    f"sidecar resource annotations")
            return
    missing = [res for res in ("cpu", "memory")
               if not _pair(pod, inj, why, res, getattr(conf, res), ann)]
    if missing:
        names = [n for res in missing for n in (inj.CPU if res == "cpu" else inj.MEMORY)]
        fields = " and ".join(f"{_field(inj, res)} (ConfigMap key {_flat(inj, res)})"
                              for res in missing)
        _warn_once(pod, base, f"{inj.TITLE} ({why}) keeps the pod Burstable unless its "
                              f"request equals its limit: set annotations {', '.join(names)} "
                              f"(equal request and limit) on the pod template, or set "
                              f"{fields}; krm-fn never invents sidecar resources")
    if inj.NOTE:
        _warn_once(pod, base, inj.NOTE)


def apply(pod: PodView, ctx) -> None:
    """Write equal request/limit annotations for every injector that applies to the pod
    (in registry.ANNOTATED order; an injector whose trigger cannot fire, registry.WHEN,
    does nothing in _apply_one, so it is not imported). The metadata is read again for
    each injector: one may write annotations another reads."""
    if pod.at.meta is None:
        return
    ictx = getattr(ctx, "ictx", None)
    everything = registry.any_always(ctx.cfg.workloads.injection)
    if not everything and not registry.may_any(injbase.meta_of(pod, ctx.namespaces, ictx)):
        return          # no injector can fire, so none writes what another would read
    for name in registry.NAMES:
        if everything or registry.may_fire(name, injbase.meta_of(pod, ctx.namespaces, ictx)):
            inj = registry.module(name)
            if hasattr(inj, "KEY"):
                _apply_one(pod, ctx, inj)
