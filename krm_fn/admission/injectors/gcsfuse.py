"""GKE Cloud Storage FUSE CSI driver: the `gke-gcsfuse-sidecar` container.

**When it fires** (GoogleCloudPlatform/gcs-fuse-csi-driver pkg/webhook/mutatingwebhook.go):
the pod annotation `gke-gcsfuse/volumes` is `true` or `True`; `false` / `False` opts out.
There is no Namespace-level trigger.

**What it adds** (pkg/webhook/injection.go, sidecar_spec.go): `gke-gcsfuse-sidecar`, an
init container with `restartPolicy: Always` on clusters with native sidecars (1.29 and
newer: every supported version) unless `gke-gcsfuse/enable-native-sidecar: "false"`, else
an app container. Not
modelled: the metadata-prefetch sidecar of volumes that enable it.

**Resources** (pkg/webhook/config.go `prepareConfig`, `populateResource`): the
annotations `gke-gcsfuse/cpu-request`, `cpu-limit`, `memory-request`, `memory-limit`
(also `ephemeral-storage-*`). Per resource: neither set gives the defaults; only the
limit set gives request = limit (a limit of `0`, meaning unlimited, keeps the default
request); only the request set gives limit = request; `0` means no limit. Defaults
(https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-sidecar,
deploy/base/webhook/deployment.yaml): requests cpu 250m, memory 256Mi, ephemeral-storage
5Gi, no limits, which makes the pod Burstable: set `gke-gcsfuse/cpu-limit` and
`gke-gcsfuse/memory-limit` (non-zero), or request == limit for each
(`spec.workloads.injection.gcsfuse` writes the four).
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base

ID = "gcsfuse"
TITLE = "GKE Cloud Storage FUSE sidecar"
KEY, FLAT = "gcsfuse", "gcsfuse"
NAME = "gke-gcsfuse-sidecar"
VOLUMES = WHEN[ID].annotations[0]  # what can trigger it: WHEN in __init__.py
NATIVE = "gke-gcsfuse/enable-native-sidecar"
CPU = ("gke-gcsfuse/cpu-request", "gke-gcsfuse/cpu-limit")
MEMORY = ("gke-gcsfuse/memory-request", "gke-gcsfuse/memory-limit")
NOTE = None
DEFAULTS = {"cpu": ("250m", "0"), "memory": ("256Mi", "0")}


def trigger(meta: base.Meta):
    """(True, why) on `true`/`True`, (False, why) on `false`/`False` (another value is
    refused by the webhook: also False), (None, None) without the annotation."""
    value = meta.annotations.get(VOLUMES)
    if value is None:
        return None, None
    return str(value) in ("true", "True"), f"annotation {VOLUMES}={value}"


def _zero(text: str, res: str) -> bool:
    v = base.amount(res, text)
    return v is not None and v == 0


def resources(meta: base.Meta) -> tuple[dict, dict]:
    """(requests, limits) {resource: text} by `populateResource`; a zero limit is left out
    (unlimited)."""
    req, lim = {}, {}
    for res, names in (("cpu", CPU), ("memory", MEMORY)):
        r = base.first((meta.annotations, names[0]))
        li = base.first((meta.annotations, names[1]))
        d_req, d_lim = DEFAULTS[res]
        if r is None and li is None:
            r, li = d_req, d_lim
        if li is not None and _zero(str(li), res) and r is None:
            r = d_req
        r = li if r is None else r
        li = r if li is None else li
        if not _zero(str(r), res):
            req[res] = str(r)
        if not _zero(str(li), res):
            lim[res] = str(li)
    return req, lim


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `gke-gcsfuse-sidecar` container (SIDECAR: every supported version has native
    sidecars; APP with `gke-gcsfuse/enable-native-sidecar: "false"`)."""
    req, lim = resources(meta)
    native = str(meta.annotations.get(NATIVE, "true")).lower() != "false"
    return (base.container(NAME, model.SIDECAR if native else model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so the sidecar gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {CPU[1]} and {MEMORY[1]} to non-zero values "
            f"(the requests follow them), or {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.gcsfuse cpu and memory, which krm-fn writes "
            f"there)")
