"""Knative Serving queue-proxy: the `queue-proxy` container of every Knative revision.

**When it fires.** Every pod of a Knative Service, Configuration or Revision: the revision
reconciler adds it (knative/serving pkg/reconciler/revision/resources/deploy.go); there is
no opt-out. A KServe InferenceService runs on Knative unless its own annotation
`serving.kserve.io/deploymentMode` is `RawDeployment`, `Standard` or `ModelMesh` (kserve
pkg/constants/constants.go); without the annotation, or with a value KServe does not know,
the cluster default decides: `defaultDeploymentMode` of key `deploy` of ConfigMap
`inferenceservice-config` when it is in the input, else Serverless, the default of KServe's
install (kserve pkg/controller/v1beta1/inferenceservice/utils/utils.go GetDeploymentMode).
A ServingRuntime serves either mode, so nothing is visible for it.

**What it adds.** One app container `queue-proxy`.

**Resources** (pkg/reconciler/revision/resources/queue.go `createQueueResources`), per
resource, the first that is set of:

1. the revision's annotations (the pod template's `metadata.annotations`)
   `queue.sidecar.serving.knative.dev/cpu-resource-request`, `cpu-resource-limit`,
   `memory-resource-request`, `memory-resource-limit`: honoured since knative-v1.11.0
   (when the release label of Knative's config-deployment or config-features in the input
   names an older release, krm-fn ignores them);
2. the revision's annotation `queue.sidecar.serving.knative.dev/resource-percentage`
   (deprecated): each of the four from the user container's own request or limit (one it
   sets, not zero) times the percentage, clamped to cpu requests 25m to 100m, cpu limits
   40m to 500m, memory requests 50Mi to 200Mi, memory limits 200Mi to 500Mi
   (`computeResourceRequirements`, resourceboundary.go): request and limit differ unless
   they land on the same value, so the pod is mostly Burstable (a percentage of NaN or Inf
   is the maximum of each: strconv.ParseFloat takes them); a hexadecimal float or anything
   else ParseFloat refuses is not read;
3. ConfigMap `knative-serving/config-deployment` keys `queue-sidecar-cpu-request`,
   `queue-sidecar-cpu-limit`, `queue-sidecar-memory-request`,
   `queue-sidecar-memory-limit` (pkg/deployment/config.go);
4. defaults: cpu request 25m always; with `queueproxy.resource-defaults: enabled` in
   ConfigMap `knative-serving/config-features` also cpu limit 1000m, memory request
   400Mi and memory limit 800Mi; otherwise no limits (pkg/deployment/config.go).

The defaults make the pod Burstable: set the four annotations with request == limit
(`spec.workloads.injection.knativeQueueProxy` writes them), or, for Knative before 1.11,
the four ConfigMap keys.
"""
from __future__ import annotations

from krm_fn.admission import knative, model, serving_mode
from krm_fn.admission.injectors import base
from krm_fn.objects import KNATIVE_CONFIG as CONFIG_DEPLOYMENT
from krm_fn.objects.knative_config import KEYS
from krm_fn.workloads import get_path

ID = "queue_proxy"
TITLE = "Knative queue-proxy"
KEY, FLAT = "knativeQueueProxy", "queueProxy"
_P = "queue.sidecar.serving.knative.dev/"
CPU = (_P + "cpu-resource-request", _P + "cpu-resource-limit")
MEMORY = (_P + "memory-resource-request", _P + "memory-resource-limit")
NOTE = ("Knative: the queue.sidecar.serving.knative.dev resource annotations are "
        "honoured from knative-v1.11.0; older Knative sizes queue-proxy only from "
        "ConfigMap knative-serving/config-deployment (queue-sidecar-* keys): set equal "
        "requests and limits there, or queue-proxy keeps the pod Burstable")
CONFIG_FEATURES, NAMESPACE = knative.CONFIG_NAME, knative.NAMESPACE
# (resource, requests or limits) -> the ConfigMap key (objects/knative_config.py's KEYS)
CM_KEYS = {(res, part): keys[i] for res, keys in KEYS.items()
           for i, part in enumerate(("requests", "limits"))}
DEFAULT_CPU_REQUEST = "25m"
FEATURE_DEFAULTS = {("cpu", "limits"): "1000m", ("memory", "requests"): "400Mi",
                    ("memory", "limits"): "800Mi"}
PERCENTAGE = _P + "resource-percentage"
# resourceboundary.go: (resource, part) -> (min, max) in milli-units (millicores, millibytes)
BOUNDS = {("cpu", "requests"): (25, 100), ("cpu", "limits"): (40, 500),
          ("memory", "requests"): (50 * 2**20 * 1000, 200 * 2**20 * 1000),
          ("memory", "limits"): (200 * 2**20 * 1000, 500 * 2**20 * 1000)}
def trigger(meta: base.Meta):
    """(True, why) for Knative pods and KServe InferenceServices in Serverless mode,
    (False, why) for a KServe deploymentMode without Knative, else (None, None)
    (krm_fn.admission.serving_mode.serverless_mode)."""
    return serving_mode.serverless_mode(meta.platform, meta.kind, meta.owner_annotations,
                                        meta.kserve_default_mode)


def _data(ctx: base.InjectionContext, name: str) -> dict | None:
    cm = ctx.configmap(name, NAMESPACE)
    data = cm.get("data") if isinstance(cm, dict) else None
    return data if isinstance(data, dict) else ({} if cm is not None else None)


ANNOTATIONS_SINCE = (1, 11)


def knative_version(ctx: base.InjectionContext) -> tuple | None:
    """(1, minor) of the Knative release from the release label of its ConfigMap
    config-deployment or config-features in the input, else None (unknown)."""
    for name in (CONFIG_DEPLOYMENT, CONFIG_FEATURES):
        cm = ctx.configmap(name, NAMESPACE)
        labels = get_path(cm, ("metadata", "labels")) if cm else None
        version = knative.release(labels)
        if version is not None:
            return version
    return None


def resources(meta: base.Meta, ctx: base.InjectionContext) -> tuple[dict, dict]:
    """(requests, limits) as {resource: text}, by the precedence of the module docstring;
    the annotations are ignored when the input shows a Knative release before
    knative-v1.11.0."""
    version = knative_version(ctx)
    honoured = meta.annotations if version is None or version >= ANNOTATIONS_SINCE else {}
    cm = _data(ctx, CONFIG_DEPLOYMENT)
    feats = _data(ctx, CONFIG_FEATURES) or {}
    on = str(feats.get("queueproxy.resource-defaults", "")).lower() == "enabled"
    out: dict = {"requests": {}, "limits": {}}
    for (res, part), key in CM_KEYS.items():
        names = CPU if res == "cpu" else MEMORY
        ann = names[0] if part == "requests" else names[1]
        default = DEFAULT_CPU_REQUEST if (res, part) == ("cpu", "requests") else (
            FEATURE_DEFAULTS.get((res, part)) if on else None)
        value = base.first((cm, key)) or default
        scaled = _scaled(meta, res, part)
        value = base.first((honoured, ann)) or (scaled if scaled is not None else value)
        if value is not None:
            out[part][res] = value
    return out["requests"], out["limits"]


def _scaled(meta: base.Meta, res: str, part: str) -> str | None:
    """The resource-percentage layer (module docstring, step 2) for `res` of `part`, as
    text; None when the annotation is not a decimal number or the user container sets no
    such amount (revision GetContainer: the container with ports, else the first)."""
    pct = _percentage(meta.annotations.get(PERCENTAGE))
    if pct is None:
        return None
    conts = meta.spec.get("containers") if isinstance(meta.spec, dict) else None
    conts = [c for c in conts if isinstance(c, dict)] if isinstance(conts, list) else []
    user = next((c for c in conts if c.get("ports")), conts[0] if conts else None)
    have = (user or {}).get("resources")
    have = have.get(part) if isinstance(have, dict) else None
    got = base.amount(res, have.get(res)) if isinstance(have, dict) else None
    if not got:
        return None
    milli = -(-got // 10**6) if res == "cpu" else got * 1000     # MilliValue
    low, high = BOUNDS[(res, part)]
    value = float(milli) * (pct / 100)        # Go: float64(milli) * fraction
    # int64(value), MaxInt64 where it is not below MaxInt64 (NaN too), MinInt64 for -Inf
    whole = 2**63 - 1 if not value < 2**63 - 1 else (-2**63 if value == float("-inf")
                                                     else int(value))
    scaled = min(max(whole, low), high)
    if res == "cpu":
        return f"{scaled}m"
    # bytes for the model: requests rounded down, limits up, so that a fraction of a byte
    # between them (the real quantities differ, e.g. 209715199980m against 200Mi) stays a
    # difference (requests never pass 200Mi, limits never fall below it)
    return str(scaled // 1000 if part == "requests" else -(-scaled // 1000))


def _percentage(text) -> float | None:
    """strconv.ParseFloat(text, 64) for the forms it takes that krm-fn reads: a decimal
    number (go-yaml's float syntax), and NaN and Inf in any case, signed; None otherwise
    (a hexadecimal float is not read: COARSER)."""
    from krm_fn import numbers
    if not isinstance(text, str) or len(text) > 40:
        return None
    if numbers.go_style_float(text):
        return numbers.go_float(text)   # None out of float64's range: ParseFloat's ErrRange
    word = text.lower().lstrip("+-")
    if word in ("nan", "inf", "infinity"):
        return float(("-" if text.startswith("-") else "") + word)
    return None


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `queue-proxy` app container."""
    req, lim = resources(meta, ctx)
    return (base.container("queue-proxy", model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so queue-proxy gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    where = ("ConfigMap knative-serving/config-deployment in this input"
             if _data(ctx, CONFIG_DEPLOYMENT) is not None
             else "ConfigMap knative-serving/config-deployment")
    version = knative_version(ctx)
    if version is not None and version < ANNOTATIONS_SINCE:
        return (f"Knative knative-v{version[0]}.{version[1]} (the release label in this "
                f"input) does not read the queue.sidecar.serving.knative.dev resource "
                f"annotations: set the keys {', '.join(CM_KEYS.values())} with request == "
                f"limit in {where} (with spec.workloads.injection.knativeQueueProxy cpu "
                f"and memory krm-fn writes them when the ConfigMap is in the input)")
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.knativeQueueProxy cpu and memory, which "
            f"krm-fn writes there; Knative 1.11 or newer), or the keys "
            f"{', '.join(CM_KEYS.values())} with request == limit in {where}")
