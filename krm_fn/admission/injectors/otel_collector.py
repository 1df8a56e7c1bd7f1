"""OpenTelemetry Operator sidecar collector: the `otc-container` of an
OpenTelemetryCollector in `mode: sidecar`.

**When it fires** (open-telemetry/opentelemetry-operator pkg/sidecar/annotation.go): the
annotation `sidecar.opentelemetry.io/inject` on the pod or its Namespace, `true` (the one
sidecar-mode collector of the pod's namespace) or a collector name (`name` or
`namespace/name`); `false` on the pod opts out. The pod's value wins, except that a
pod's `true` takes the Namespace's collector name.

**What it adds.** The app container `otc-container` (an init container with
`restartPolicy: Always` when the operator's native-sidecar feature is on).

**Resources.** `spec.resources` of the OpenTelemetryCollector
(internal/manifests/collector/container.go), when it is in the input; the operator sets
none by default, which makes the pod Burstable: set `spec.resources` with requests ==
limits in the collector.
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base
from krm_fn.admission.injectors.otel_instrumentation import effective
from krm_fn.workloads import get_path

ID = "otel_collector"
TITLE = "OpenTelemetry collector sidecar"
INJECT = WHEN[ID].annotations[0]  # what can trigger it: WHEN in __init__.py
NAME = "otc-container"


def _value(meta: base.Meta) -> tuple[str, str]:
    pod = meta.annotations.get(INJECT)
    ns = (meta.ns_annotations or {}).get(INJECT)
    value = effective(pod, ns)
    where = (f"annotation {INJECT}={pod}" if value == ("" if pod is None else str(pod))
             else f"namespace {meta.namespace} annotation {INJECT}={ns}")
    return value, where


def trigger(meta: base.Meta):
    """(True, why) when a collector sidecar is injected, (False, why) on `false`, (None,
    None) when nothing is visible."""
    value, why = _value(meta)
    if value == "":
        return None, None
    return value.lower() != "false", why


def collector(meta: base.Meta, ctx: base.InjectionContext) -> dict | None:
    """The OpenTelemetryCollector the annotation names, when it is in the input."""
    value, _ = _value(meta)
    if value.lower() == "true":
        found = [o for (space, _), o in ctx.collectors.items() if space == meta.namespace
                 and str(get_path(o, ("spec", "mode")) or "") == "sidecar"]
        return found[0] if len(found) == 1 else None
    space, _, name = value.rpartition("/")
    return ctx.collectors.get((space or meta.namespace, name))


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `otc-container` app container, sized by the collector's spec.resources (none
    when the collector is not in the input or sets none)."""
    col = collector(meta, ctx)
    res = get_path(col, ("spec", "resources")) if col else None
    res = res if isinstance(res, dict) else {}
    req = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    lim = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    return (base.container(NAME, model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so otc-container gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    value, _ = _value(meta)
    where = ("in this input" if collector(meta, ctx) is not None
             else f"{value!r}" if value.lower() != "true"
             else f"(mode: sidecar) of namespace {meta.namespace}")
    return (f"set spec.resources (requests == limits for cpu and memory) in the "
            f"OpenTelemetryCollector {where}; no pod annotation sizes otc-container")
