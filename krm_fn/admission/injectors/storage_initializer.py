"""KServe storage initializer: the init container `storage-initializer` that downloads the
model.

**When it fires** (kserve/kserve pkg/webhook/admission/pod/storage_initializer_injector.go):
a KServe pod (InferenceService component or ServingRuntime) whose model container has a
`storageUri`, or any container an env var `STORAGE_URI`, or whose component has
`storageUri` / `storageUris` (transformer, explainer). KServe skips it when the pod
already has an init container named `storage-initializer`. Not modelled: `oci://` URIs
served by a modelcar sidecar.

**What it adds.** The init container `storage-initializer`.

**Resources.** ConfigMap `inferenceservice-config` (KServe's namespace, `kserve` by
default), key `storageInitializer` (JSON `cpuRequest`, `cpuLimit`, `memoryRequest`,
`memoryLimit`; default 100m/1 cpu and 100Mi/1Gi memory: config/configmap/
inferenceservice.yaml), with `spec.container.resources` of the ClusterStorageContainer
that serves the URI (`spec.supportedUriFormats` prefix or regex) merged on top. When the
input holds no ClusterStorageContainer serving the URI, KServe's own `default` one is
assumed (its install creates it, with the same 100m/1 cpu and 100Mi/1Gi: gs://, s3://,
hdfs://, webhdfs://, Azure blob and file, http(s)://, hf://). The
defaults make the pod Burstable; no pod annotation sizes it. When these objects are in
the input krm-fn makes them request == limit (krm_fn/objects.py).
"""
from __future__ import annotations

import json
import re

from krm_fn.admission import model
from krm_fn.admission.injectors import base

ID = "storage_initializer"
TITLE = "KServe storage-initializer"
NAME = "storage-initializer"
CONFIG = "inferenceservice-config"
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


def _storage_container(ctx: base.InjectionContext, uris: list) -> dict | None:
    """The ClusterStorageContainer of the input that serves one of `uris`, else KServe's
    `default` one when it serves them, else None."""
    return (_serving(ctx.storage_containers, uris)
            or _serving([DEFAULT_STORAGE_CONTAINER], uris))


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


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `storage-initializer` init container: ConfigMap (or defaults), with the
    matching ClusterStorageContainer's resources on top."""
    req, lim = config_resources(kserve_config(ctx, CONFIG_KEY), DEFAULTS)
    sc = _storage_container(ctx, storage_uris(meta))
    res = base.dig(sc, ("spec", "container", "resources")) if sc else None
    if isinstance(res, dict):
        for part, d in (("requests", req), ("limits", lim)):
            if isinstance(res.get(part), dict):
                d.update(res[part])
    return (base.container(NAME, model.INIT, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so storage-initializer gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    return (f"set cpuRequest == cpuLimit and memoryRequest == memoryLimit under key "
            f"{CONFIG_KEY} of ConfigMap kserve/{CONFIG}, and equal requests and limits in "
            f"spec.container.resources of the ClusterStorageContainer that serves this URI "
            f"(merged on top); or add those objects to the input and krm-fn fixes them")
