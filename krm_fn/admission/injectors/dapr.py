"""Dapr sidecar injection: the `daprd` container.

**When it fires.** The pod annotation `dapr.io/enabled` is true (dapr/dapr
pkg/injector/annotations/annotations.go `KeyEnabled`; krm-fn reads `y`, `yes`, `true`,
`t`, `on`, `1` in any case as true, as `utils.IsTruthy` does; any other value opts out).
There is no Namespace-level trigger.

**What it adds.** The app container `daprd` (pkg/injector/consts/consts.go).

**Resources** (pkg/injector/patcher/sidecar.go, sidecar_container.go): the annotations
`dapr.io/sidecar-cpu-request`, `sidecar-cpu-limit`, `sidecar-memory-request`,
`sidecar-memory-limit`; each one not set is left out: no default requests or limits,
which makes the pod Burstable.
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base

ID = "dapr"
TITLE = "Dapr daprd"
KEY, FLAT = "dapr", "dapr"
CPU = ("dapr.io/sidecar-cpu-request", "dapr.io/sidecar-cpu-limit")
MEMORY = ("dapr.io/sidecar-memory-request", "dapr.io/sidecar-memory-limit")
NOTE = None
ENABLED = WHEN[ID].annotations[0]  # what can trigger it: WHEN in __init__.py


def trigger(meta: base.Meta):
    """(True, why) when the annotation is truthy, (False, why) for any other value, (None,
    None) without it."""
    value = meta.annotations.get(ENABLED)
    if value is None:
        return None, None
    on = str(value).strip().lower() in ("y", "yes", "true", "t", "on", "1")
    return on, f"annotation {ENABLED}={value}"


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `daprd` app container, sized by the four annotations (unset: none)."""
    ann = meta.annotations
    req = {"cpu": ann.get(CPU[0]), "memory": ann.get(MEMORY[0])}
    lim = {"cpu": ann.get(CPU[1]), "memory": ann.get(MEMORY[1])}
    return (base.container("daprd", model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so daprd gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.dapr cpu and memory, which krm-fn writes "
            f"there)")
