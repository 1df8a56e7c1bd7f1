"""sidecars: request == limit for sidecars injected at admission, through the injector's own
pod-template annotations.

Injected containers never appear in the manifest, yet one with requests != limits makes the
whole pod Burstable and no container gets exclusive CPUs. Each injector reads its container
resources from annotations on the pod template (sources below); when a workload gets one
of these sidecars, krm-fn writes all four (cpu request and limit, memory request and limit)
with equal values from `spec.workloads.injection.<injector>` (fractional CPU is fine: the
sidecar runs in the shared pool).

| injector | injected when | annotations (cpu req, cpu lim, mem req, mem lim) |
|---|---|---|
| `istio` | label (preferred) or annotation `sidecar.istio.io/inject` is `true`/`yes`/`y`/`on` | `sidecar.istio.io/proxyCPU`, `proxyCPULimit`, `proxyMemory`, `proxyMemoryLimit` |
| `linkerd` | annotation `linkerd.io/inject: enabled` (or `ingress`) | `config.linkerd.io/proxy-cpu-request`, `proxy-cpu-limit`, `proxy-memory-request`, `proxy-memory-limit` |
| `knativeQueueProxy` | every Knative Service/Configuration/Revision; a KServe InferenceService whose `serving.kserve.io/deploymentMode` is not `RawDeployment`, `Standard` or `ModelMesh` (absent: Serverless is assumed; a raw deployment ignores the annotations) | `queue.sidecar.serving.knative.dev/cpu-resource-request`, `cpu-resource-limit`, `memory-resource-request`, `memory-resource-limit` |
| `vault` | annotation `vault.hashicorp.com/agent-inject: "true"` | `vault.hashicorp.com/agent-requests-cpu`, `agent-limits-cpu`, `agent-requests-mem`, `agent-limits-mem` |
| `dapr` | annotation `dapr.io/enabled: "true"` | `dapr.io/sidecar-cpu-request`, `sidecar-cpu-limit`, `sidecar-memory-request`, `sidecar-memory-limit` |

Sources: istio/api `annotation/annotations.yaml` and the injection template
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

- `mode: auto` (default): only when the workload visibly opts in (table above). `always`:
  also without a visible opt-in (namespace-level injection, invisible to a function).
  `never`: nothing. An explicit opt-out (`sidecar.istio.io/inject: "false"`,
  `linkerd.io/inject: disabled`, `vault.hashicorp.com/agent-inject: "false"`,
  `dapr.io/enabled: "false"`, a KServe `RawDeployment`/`Standard`/`ModelMesh`
  deploymentMode) wins over `always`: the pod gets no such sidecar.
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

from dataclasses import dataclass
from typing import Callable

from krm_fn import quantity
from krm_fn.pod import PodView, path_str

ID = "sidecars"
OPTIONS = ("workloads.injection",)

KSERVE_MODE = "serving.kserve.io/deploymentMode"
# KServe deploymentMode values without a Knative revision (constants.go: RawDeployment is
# the deprecated spelling of Standard; ModelMesh pods come from the ModelMesh controller).
_KSERVE_NOT_KNATIVE = ("RawDeployment", "Standard", "ModelMesh")
_GUARANTEED = "the injected container needs request == limit for the pod to stay Guaranteed"


@dataclass(frozen=True)
class Injector:
    """One admission-time injector. `key`: attribute of spec.workloads.injection and prefix
    of its ConfigMap keys (`flat`); `trigger(pod, annotations, labels)` returns (True, why),
    (False, why) for an explicit opt-out, or (None, None) when nothing is visible; `note`:
    warning about what the annotations cannot fix."""

    key: str
    flat: str
    title: str
    cpu: tuple[str, str]
    memory: tuple[str, str]
    trigger: Callable
    note: str | None = None


def _istio(pod: PodView, ann: dict, labels: dict):
    key = "sidecar.istio.io/inject"
    if labels.get(key) is not None:
        where, value = "label", str(labels[key])
    elif ann.get(key) is not None:
        where, value = "annotation", str(ann[key])
    else:
        return None, None
    if value == "":
        return None, None
    return value.lower() in ("y", "yes", "true", "on"), f"{where} {key}={value}"


def _linkerd(pod: PodView, ann: dict, labels: dict):
    key = "linkerd.io/inject"
    value = ann.get(key)
    if value is None or str(value) == "":
        return None, None
    return str(value) in ("enabled", "ingress"), f"annotation {key}={value}"


def _vault(pod: PodView, ann: dict, labels: dict):
    key = "vault.hashicorp.com/agent-inject"
    value = ann.get(key)
    if value is None:
        return None, None
    return str(value) in ("1", "t", "T", "true", "TRUE", "True"), f"annotation {key}={value}"


def _dapr(pod: PodView, ann: dict, labels: dict):
    key = "dapr.io/enabled"
    value = ann.get(key)
    if value is None:
        return None, None
    on = str(value).strip().lower() in ("y", "yes", "true", "t", "on", "1")
    return on, f"annotation {key}={value}"


def _queue_proxy(pod: PodView, ann: dict, labels: dict):
    if pod.at.platform == "knative":
        return True, "every Knative revision runs a queue-proxy"
    if _is_isvc(pod):
        mode = _root_meta(pod, "annotations").get(KSERVE_MODE)
        if mode is not None and str(mode) in _KSERVE_NOT_KNATIVE:
            return False, f"annotation {KSERVE_MODE}={mode}"
        if mode is None:
            return True, f"KServe: no {KSERVE_MODE} annotation, so Serverless is assumed"
        return True, f"KServe annotation {KSERVE_MODE}={mode}"
    return None, None


INJECTORS = (
    Injector("istio", "istio", "Istio istio-proxy",
             ("sidecar.istio.io/proxyCPU", "sidecar.istio.io/proxyCPULimit"),
             ("sidecar.istio.io/proxyMemory", "sidecar.istio.io/proxyMemoryLimit"), _istio,
             "Istio: older injection templates size istio-init from the cluster-wide "
             "global.proxy_init.resources, not from these annotations, unless Istio CNI is "
             "used; on such a release set equal requests and limits there, or istio-init "
             "keeps the pod Burstable"),
    Injector("linkerd", "linkerd", "Linkerd linkerd-proxy",
             ("config.linkerd.io/proxy-cpu-request", "config.linkerd.io/proxy-cpu-limit"),
             ("config.linkerd.io/proxy-memory-request", "config.linkerd.io/proxy-memory-limit"),
             _linkerd,
             "Linkerd: releases before linkerd/linkerd2#12741 (merged 2024-06) size "
             "linkerd-init from the install-time Helm value proxyInit.resources, not from "
             "these annotations; on such a release set equal requests and limits there, or "
             "linkerd-init keeps the pod Burstable"),
    Injector("knativeQueueProxy", "queueProxy", "Knative queue-proxy",
             ("queue.sidecar.serving.knative.dev/cpu-resource-request",
              "queue.sidecar.serving.knative.dev/cpu-resource-limit"),
             ("queue.sidecar.serving.knative.dev/memory-resource-request",
              "queue.sidecar.serving.knative.dev/memory-resource-limit"), _queue_proxy,
             "Knative: the queue.sidecar.serving.knative.dev resource annotations are "
             "honoured from knative-v1.11.0; older Knative sizes queue-proxy only from "
             "ConfigMap knative-serving/config-deployment (queue-sidecar-* keys): set equal "
             "requests and limits there, or queue-proxy keeps the pod Burstable"),
    Injector("vault", "vault", "Vault agent",
             ("vault.hashicorp.com/agent-requests-cpu", "vault.hashicorp.com/agent-limits-cpu"),
             ("vault.hashicorp.com/agent-requests-mem", "vault.hashicorp.com/agent-limits-mem"),
             _vault),
    Injector("dapr", "dapr", "Dapr daprd",
             ("dapr.io/sidecar-cpu-request", "dapr.io/sidecar-cpu-limit"),
             ("dapr.io/sidecar-memory-request", "dapr.io/sidecar-memory-limit"), _dapr),
)


def _is_isvc(pod: PodView) -> bool:
    """A KServe InferenceService component (predictor, transformer, explainer, canary):
    its pods get the ISVC's own metadata too. A ServingRuntime's own metadata does not reach
    pods, and the runtime serves either deployment mode."""
    return pod.at.platform == "kserve" and pod.ref.kind == "InferenceService"


def _get(obj: object, path: tuple) -> object:
    """Follow mapping keys and list indices (a KServe canary[i] predictor); None when a step
    is missing or of the wrong shape."""
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, list) or not 0 <= key < len(obj):
                return None
            obj = obj[key]
        elif isinstance(obj, dict):
            obj = obj.get(key)
        else:
            return None
    return obj


def _root_meta(pod: PodView, key: str) -> dict:
    v = _get(pod.edits.root, ("metadata", key))
    return v if isinstance(v, dict) else {}


def _meta(pod: PodView, key: str) -> dict:
    """The pod template's labels or annotations as the pod will get them: for KServe the
    InferenceService's own metadata merged under the component's."""
    v = _get(pod.edits.root, pod.at.meta + (key,))
    own = v if isinstance(v, dict) else {}
    if _is_isvc(pod):
        return {**_root_meta(pod, key), **own}
    return own


def _field(inj: Injector, res: str) -> str:
    return f"spec.workloads.injection.{inj.key}.{res}"


def _flat(inj: Injector, res: str) -> str:
    return inj.flat + res.capitalize()


def _text(res: str, q: quantity.Quantity) -> str:
    return quantity.format_cpu(q.value) if res == "cpu" else q.text


def _pair(pod: PodView, inj: Injector, why: str, res: str, conf, ann: dict) -> bool:
    """Make the request/limit annotation pair of `res` equal. Returns False when the pair is
    missing and not configured (the caller warns)."""
    base = pod.at.meta + ("annotations",)
    names = inj.cpu if res == "cpu" else inj.memory
    parse = quantity.parse_cpu if res == "cpu" else quantity.parse_memory
    have: dict[str, tuple[str, quantity.Quantity]] = {}
    for name in names:
        raw = ann.get(name)
        if raw is None or raw == "":
            continue
        if not isinstance(raw, str):
            pod.error(base + (name,), f"{inj.title}: annotation {name} must be a string")
            return True
        try:
            have[name] = (raw, parse(raw))
        except quantity.QuantityError as e:
            pod.error(base + (name,), f"{inj.title}: annotation {name}: {e}")
            return True
    head = f"{inj.title} ({why}): annotation"
    if len(have) == 2:
        (big, (raw, qbig)), (small, (old, qsmall)) = sorted(
            have.items(), key=lambda kv: kv[1][1].value, reverse=True)
        if qbig.value == qsmall.value:
            return True
        pod.set(base + (small,), raw, f"{head} {small} {old} -> {raw}, equal to {big}: "
                f"{_GUARANTEED}", old)
        return True
    if len(have) == 1:
        (name, (raw, q)), = have.items()
        partner = names[1] if name == names[0] else names[0]
        kept = ""
        if conf is not None and conf.value != q.value:
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


def _apply_one(pod: PodView, ctx, inj: Injector) -> None:
    conf = getattr(ctx.cfg.workloads.injection, inj.key)
    if conf.mode == "never" or pod.at.meta is None:
        return
    ann, labels = _meta(pod, "annotations"), _meta(pod, "labels")
    on, why = inj.trigger(pod, ann, labels)
    if on is False:
        return
    if on is None:
        if conf.mode != "always":
            return
        why = f"{_field(inj, 'mode')} is always"
    base = pod.at.meta + ("annotations",)
    for i in range(len(base)):
        v = _get(pod.edits.root, base[:i + 1])
        if v is None:
            break
        want = list if i + 1 < len(base) and isinstance(base[i + 1], int) else dict
        if not isinstance(v, want):
            pod.error(base[:i + 1], f"{inj.title} ({why}): must be a "
                                    f"{'list' if want is list else 'mapping'}, to carry the "
                                    f"sidecar resource annotations")
            return
    missing = [res for res in ("cpu", "memory")
               if not _pair(pod, inj, why, res, getattr(conf, res), ann)]
    if missing:
        names = [n for res in missing for n in (inj.cpu if res == "cpu" else inj.memory)]
        fields = " and ".join(f"{_field(inj, res)} (ConfigMap key {_flat(inj, res)})"
                              for res in missing)
        _warn_once(pod, base, f"{inj.title} ({why}) keeps the pod Burstable unless its "
                              f"request equals its limit: set annotations {', '.join(names)} "
                              f"(equal request and limit) on the pod template, or set "
                              f"{fields}; krm-fn never invents sidecar resources")
    if inj.note:
        _warn_once(pod, base, inj.note)


def apply(pod: PodView, ctx) -> None:
    """Write equal request/limit annotations for every injector that applies to the pod."""
    for inj in INJECTORS:
        _apply_one(pod, ctx, inj)
