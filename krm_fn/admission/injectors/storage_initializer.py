"""KServe storage initializer: the init container `storage-initializer` that downloads the
model.

**When it fires** (kserve/kserve pkg/webhook/admission/pod/storage_initializer_injector.go):
a KServe pod (InferenceService component or ServingRuntime) whose model container has a
`storageUri`, or any container an env var `STORAGE_URI`, or whose component has
`storageUri` / `storageUris` (transformer, explainer). KServe skips it when the pod
already has an init container named `storage-initializer`, and for a `pvc://` URI when
`enableDirectPvcVolumeMount` (key storageInitializer of inferenceservice-config; true by
default) is on: the claim is mounted into the model container instead. Not modelled:
`oci://` URIs served by a modelcar sidecar (`enableModelcar`, off by default).

**What it adds.** The init container `storage-initializer`.

**Resources.** ConfigMap `inferenceservice-config` (KServe's namespace, `kserve` by
default), key `storageInitializer` (JSON `cpuRequest`, `cpuLimit`, `memoryRequest`,
`memoryLimit`; default 100m/1 cpu and 100Mi/1Gi memory: config/configmap/
inferenceservice.yaml), with `spec.container.resources` of the ClusterStorageContainer
that serves the URI (`spec.supportedUriFormats` prefix or regex; not `spec.disabled`, and
`spec.workloadType` initContainer) merged on top. KServe's own `default` one is assumed to
be in the cluster unless the input holds one of that name (its install creates it, with the
same 100m/1 cpu and 100Mi/1Gi: gs://, s3://, hdfs://, webhdfs://, Azure blob and file,
http(s)://, hf://: config/storagecontainers/default.yaml). When several serve the URI,
KServe takes the first match of a list read from its informer cache, in no fixed order
(`GetStorageContainerSpec`), so krm-fn counts the one that is not request == limit. The
defaults make the pod Burstable; no pod annotation sizes it. When these objects are in
the input and selected by `spec.selector`, krm-fn makes them request == limit
(krm_fn/objects/); the fix then names what the input or the selector lacks
(`let_krm_fn`).
"""
from __future__ import annotations

import json
import re

from krm_fn.admission import model
from krm_fn.admission.serving_mode import KSERVE_CONFIG as CONFIG
from krm_fn.admission.injectors import base
from krm_fn.numbers import yaml11_bool
from krm_fn.workloads import get_path

ID = "storage_initializer"
TITLE = "KServe storage-initializer"
NAME = "storage-initializer"
CONFIG_KEY = "storageInitializer"
DEFAULTS = {"cpuRequest": "100m", "cpuLimit": "1", "memoryRequest": "100Mi",
            "memoryLimit": "1Gi"}


def kserve_config(ctx: base.InjectionContext, key: str) -> dict | None:
    """The parsed JSON object of `key` in ConfigMap inferenceservice-config when that
    ConfigMap is in the input ({} when the key is missing or not a JSON object), else
    None."""
    cm = ctx.configmap(CONFIG)
    if cm is None:
        return None
    data = cm.get("data") if isinstance(cm.get("data"), dict) else {}
    try:
        conf = json.loads(data.get(key) or "{}")
    except (TypeError, ValueError):
        return {}
    return conf if isinstance(conf, dict) else {}


def config_resources(conf: dict | None, defaults: dict) -> tuple[dict, dict]:
    """(requests, limits) {resource: text} of a KServe JSON config object (None: not in
    the input, the defaults apply)."""
    src = defaults if conf is None else conf
    return ({"cpu": src.get("cpuRequest"), "memory": src.get("memoryRequest")},
            {"cpu": src.get("cpuLimit"), "memory": src.get("memoryLimit")})


def storage_uris(meta: base.Meta) -> list[str]:
    """The storage URIs the pod spec names (model container storageUri, STORAGE_URI env,
    component storageUri/storageUris); [] when none."""
    spec = meta.spec or {}
    found: list[str] = []
    conts = [c for k in ("containers", "initContainers") for c in spec.get(k) or []]
    for key in meta.container_keys:
        c = spec.get(key)
        if isinstance(c, dict):
            conts.append(c)
            if c.get("storageUri"):
                found.append(str(c["storageUri"]))
    for c in conts:
        for e in (c.get("env") or []) if isinstance(c, dict) else []:
            if isinstance(e, dict) and e.get("name") == "STORAGE_URI":
                found.append(str(e.get("value") or ""))
    if spec.get("storageUri"):
        found.append(str(spec["storageUri"]))
    for u in spec.get("storageUris") or []:
        found.append(str(u.get("uri") if isinstance(u, dict) else u))
    return found


def _has_own(meta: base.Meta) -> bool:
    inits = (meta.spec or {}).get("initContainers") or []
    return any(isinstance(c, dict) and c.get("name") == NAME for c in inits)


def trigger(meta: base.Meta):
    """(True, why) for a KServe pod with a storage URI, (False, why) when it carries its
    own storage-initializer, (None, None) otherwise."""
    if meta.platform != "kserve" or not storage_uris(meta):
        return None, None
    if _has_own(meta):
        return False, f"the pod has its own init container {NAME}"
    return True, "the pod has a storageUri"


# The ClusterStorageContainer `default` that KServe's install creates
# (charts/kserve-resources/templates/clusterstoragecontainer.yaml, config/
# storagecontainers/default.yaml): assumed to be in the cluster when the input holds no
# ClusterStorageContainer serving the URI.
DEFAULT_STORAGE_CONTAINER = {"metadata": {"name": "default"}, "spec": {
    "container": {"name": NAME, "resources": {
        "requests": {"cpu": "100m", "memory": "100Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"}}},
    "supportedUriFormats": [{"prefix": "gs://"}, {"prefix": "s3://"}, {"prefix": "hdfs://"},
                            {"prefix": "webhdfs://"},
                            {"regex": "https://(.+?).blob.core.windows.net/(.+)"},
                            {"regex": "https://(.+?).file.core.windows.net/(.+)"},
                            {"regex": "https?://(.+)/(.+)"}, {"regex": "hf://"}]}}


def candidates(ctx: base.InjectionContext, uris: list) -> list:
    """Every ClusterStorageContainer that serves one of `uris` and is not disabled
    (`spec.disabled`, `spec.workloadType` other than initContainer): those of the input,
    then KServe's `default` unless the input holds one of that name."""
    own = [sc for sc in ctx.storage_containers if _usable(sc)]
    names = {str(get_path(sc, ("metadata", "name")) or "") for sc in ctx.storage_containers}
    pool = own + ([] if "default" in names else [DEFAULT_STORAGE_CONTAINER])
    return [sc for sc in pool if _serving([sc], uris)]


def _serving(candidates: list, uris: list) -> dict | None:
    for sc in candidates:
        spec = sc.get("spec") if isinstance(sc.get("spec"), dict) else {}
        for f in spec.get("supportedUriFormats") or []:
            if not isinstance(f, dict):
                continue
            for u in uris:
                if (f.get("prefix") and u.startswith(str(f["prefix"]))) or (
                        f.get("regex") and re.match(str(f["regex"]), u)):
                    return sc
    return None


def _usable(sc: dict) -> bool:
    spec = sc.get("spec") if isinstance(sc.get("spec"), dict) else {}
    if yaml11_bool(spec.get("disabled")) is True:
        return False
    return str(spec.get("workloadType") or "initContainer") == "initContainer"


def _equal(res: dict) -> bool:
    req = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    lim = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    return all(base.amount(r, req.get(r)) is not None
               and base.amount(r, req.get(r)) == base.amount(r, lim.get(r))
               for r in (base.CPU, base.MEMORY))


def _merged(req: dict, lim: dict, sc: dict | None) -> tuple[dict, dict]:
    """The ConfigMap's (requests, limits) with `sc`'s spec.container.resources on top."""
    req, lim = dict(req), dict(lim)
    res = get_path(sc, ("spec", "container", "resources")) if sc else None
    if isinstance(res, dict):
        for part, d in (("requests", req), ("limits", lim)):
            if isinstance(res.get(part), dict):
                d.update(res[part])
    return req, lim


PVC = "pvc://"


def direct_pvc(ctx: base.InjectionContext) -> bool:
    """`enableDirectPvcVolumeMount` of key storageInitializer of inferenceservice-config
    when it is in the input, else true (the default of KServe's install,
    config/configmap/inferenceservice.yaml)."""
    conf = kserve_config(ctx, CONFIG_KEY)
    value = (conf or {}).get("enableDirectPvcVolumeMount", True)
    return yaml11_bool(value) is not False


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `storage-initializer` init container: ConfigMap (or defaults), with the
    resources of the ClusterStorageContainer serving the URI on top; when several serve it
    (KServe takes the first of an unordered list), the first of them that leaves the
    container without request == limit. () for a `pvc://` URI with
    `enableDirectPvcVolumeMount` on: KServe mounts the claim instead."""
    uris = storage_uris(meta)
    if uris and all(u.startswith(PVC) for u in uris) and direct_pvc(ctx):
        return ()
    req, lim = config_resources(kserve_config(ctx, CONFIG_KEY), DEFAULTS)
    found = candidates(ctx, storage_uris(meta)) or [None]
    options = [base.container(NAME, model.INIT, ID, *_merged(req, lim, sc)) for sc in found]
    worst = next((c for c in options if not base.guaranteed((c,))), options[0])
    return (worst,)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so storage-initializer gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    found = candidates(ctx, storage_uris(meta))
    if len(found) > 1:
        names = ", ".join(str(get_path(sc, ("metadata", "name"))) for sc in found)
        return (f"the ClusterStorageContainers {names} all serve this URI and KServe uses "
                f"whichever it lists first (no fixed order), so give every one of them "
                f"requests == limits in spec.container.resources, or set spec.disabled: true "
                f"on the ones that should not serve it"
                + let_krm_fn(ctx, [_storage_container(sc) for sc in found]))
    cm = ctx.configmap(CONFIG)
    cm_obj = (cm, True) if cm is not None else (
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": CONFIG, "namespace": "kserve"}}, False)
    return (f"set cpuRequest == cpuLimit and memoryRequest == memoryLimit under key "
            f"{CONFIG_KEY} of ConfigMap kserve/{CONFIG}, and equal requests and limits in "
            f"spec.container.resources of the ClusterStorageContainer that serves this URI "
            f"(merged on top)" + let_krm_fn(ctx, [cm_obj, _storage_container(found[0])
                                                     if found else _storage_container(None)]))


def _storage_container(sc: dict | None) -> tuple[dict, bool]:
    """(the ClusterStorageContainer as an object, whether it is in the input): KServe's
    `default` (assumed in the cluster) when `sc` is that or None."""
    if sc is None or sc is DEFAULT_STORAGE_CONTAINER:
        return ({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
                 "metadata": {"name": "default"}}, False)
    return sc, True


def let_krm_fn(ctx: base.InjectionContext, objs: list) -> str:
    """`; or let krm-fn make them request == limit: ...`: for each (object, in the input)
    of `objs` that this render does not fix, what to do so it does (put it in the input,
    and what spec.selector must add: InjectionContext.untuned); "" when it fixes all. Only
    objects of the input that spec.selector selects are changed (krm_fn/objects/)."""
    parts = []
    for obj, present in objs:
        why = list(ctx.untuned(obj)) if ctx.untuned is not None else []
        if present and not why:
            continue
        md = obj.get("metadata") or {}
        name = f"{md['namespace']}/{md['name']}" if md.get("namespace") else md.get("name")
        put = ("put it in the input (KServe's install creates it)"
               if obj.get("kind") == "ClusterStorageContainer" else "put it in the input")
        steps = ([] if present else [put]) + why
        parts.append(f"{obj.get('kind')} {name}: " + ", ".join(steps))
    if not parts:
        return ""
    return (f"; or let krm-fn make {'them' if len(parts) > 1 else 'it'} request == limit (it "
            f"changes only the objects of the input that spec.selector selects): "
            + "; ".join(parts))
