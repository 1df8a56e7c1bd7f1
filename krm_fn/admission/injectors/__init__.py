"""Admission-time injectors: one module per injector, the one definition both the rules
(krm_fn/rules/injector_annotations.py, platform_containers.py) and the verdict read.

Each module has `ID`, `TITLE`, a docstring that is its user documentation (when it fires,
in every way; what it adds with default resources; what controls them),
`trigger(meta) -> (True | False | None, why)` (False: explicit opt-out; None: nothing
visible decides), `containers(meta, ctx) -> tuple[model.Container]` with the resources
they will get, and `fix(meta, ctx, containers) -> str`: what to change where when they do
not get request == limit ("" when they do). Injectors sized by pod annotations that
`spec.workloads.injection.<KEY>` writes also have `KEY`, `FLAT` (its flat ConfigMap key
prefix), `CPU` and `MEMORY` ((request, limit) annotation names) and `NOTE` (what the
annotations cannot fix, or None); those the pod's Namespace can turn on have
`NAMESPACE_TRIGGER` (what on the Namespace does).

`INJECTORS` lists them in the order the rules and the verdict apply them.
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import (base, dapr, gcsfuse, istio, kserve_agent, kuberay,
                                        linkerd, otel_collector, otel_instrumentation,
                                        queue_proxy, storage_initializer, vault)
from krm_fn.admission.injectors.base import InjectionContext, Meta, meta_of

INJECTORS = (istio, linkerd, queue_proxy, vault, dapr, storage_initializer, kserve_agent,
             otel_instrumentation, otel_collector, gcsfuse, kuberay)
# the injectors spec.workloads.injection configures, in the injector-annotations rule's order
ANNOTATED = tuple(m for m in INJECTORS if hasattr(m, "KEY"))

__all__ = ["INJECTORS", "ANNOTATED", "InjectionContext", "Meta", "meta_of", "injections",
           "for_pod", "by_id", "unseen_namespace"]


def by_id(injector_id: str):
    """The injector module whose ID is `injector_id`; KeyError when none."""
    for m in INJECTORS:
        if m.ID == injector_id:
            return m
    raise KeyError(injector_id)


def _mode(module, ctx: InjectionContext) -> str:
    """`spec.workloads.injection.<KEY>.mode` ("auto" when not configured)."""
    conf = getattr(ctx.injection, getattr(module, "KEY", ""), None) if ctx.injection else None
    return str(getattr(conf, "mode", None) or "auto")


def _configured(module, ctx: InjectionContext) -> bool:
    """`spec.workloads.injection.<KEY>` sets cpu or memory (the user runs that injector)."""
    conf = getattr(ctx.injection, getattr(module, "KEY", ""), None) if ctx.injection else None
    return conf is not None and (getattr(conf, "cpu", None) is not None
                                 or getattr(conf, "memory", None) is not None)


def injections(meta: Meta, ctx: InjectionContext) -> tuple:
    """The injectors that fire for a pod with metadata `meta`, in INJECTORS order, as
    model.Injection (containers with their resources, whether all are request == limit,
    the fix otherwise). An injector with `mode: never` in the config is left out; one
    with `mode: always` and nothing visible is assumed to fire (namespace-level injection
    the input does not show); an explicit opt-out always wins."""
    out = []
    for m in INJECTORS:
        mode = _mode(m, ctx)
        if mode == "never":
            continue
        on, why = m.trigger(meta)
        if on is None and mode == "always":
            on, why = True, f"spec.workloads.injection.{m.KEY}.mode is always"
        if not on:
            continue
        added = m.containers(meta, ctx)
        if not added:
            continue        # fires, but adds nothing for this pod (e.g. a mounted pvc://)
        out.append(model.Injection(m.ID, m.TITLE, why, added, base.guaranteed(added),
                                   m.fix(meta, ctx, added)))
    return tuple(out)


def for_pod(pod, ctx: InjectionContext) -> tuple:
    """`injections` for a krm_fn.pod.PodView as tuned (its pod template annotations as
    krm-fn wrote them), with the Namespace objects of `ctx`."""
    return injections(meta_of(pod, ctx=ctx), ctx)


def unseen_namespace(meta: Meta, ctx: InjectionContext, flat: bool = False) -> str | None:
    """The info message when the pod's Namespace is not in the input while an injector
    configured in `spec.workloads.injection` (cpu or memory set) with `mode: auto` could be
    turned on by it and nothing on the pod decides (its trigger says None), else None;
    `flat`: name the flat ConfigMap keys (`istioMode`) instead of the typed fields."""
    if meta.ns_labels is not None or meta.ns_annotations is not None:
        return None
    unseen = [m for m in ANNOTATED if hasattr(m, "NAMESPACE_TRIGGER") and _configured(m, ctx)
              and _mode(m, ctx) == "auto" and m.trigger(meta) == (None, None)]
    if not unseen:
        return None
    ns = meta.namespace or "default"
    what = "; ".join(f"{m.TITLE} (Namespace {m.NAMESPACE_TRIGGER})" for m in unseen)
    modes = " or ".join((f"{m.FLAT}Mode" if flat else f"spec.workloads.injection.{m.KEY}.mode")
                        + ": always" for m in unseen)
    return (f"Namespace {ns} is not in the input, so injection turned on for the whole "
            f"namespace cannot be seen: {what}; this verdict counts no such sidecar. If the "
            f"namespace has it, set {modes} (krm-fn then sizes the sidecar and counts it), "
            f"or add the Namespace to the input (marked config.kubernetes.io/local-config: "
            f"\"true\" if this render must not apply it) so krm-fn reads it")
