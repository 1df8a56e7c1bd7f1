"""Admission-time injectors: one module per injector, the one definition both the rules
(krm_fn/rules/injector_annotations.py, platform_containers.py) and the verdict read.

Each module has `ID` (its module name), `TITLE`, a docstring that is its user documentation
(when it fires, in every way; what it adds with default resources; what controls them),
`trigger(meta) -> (True | False | None, why)` (False: explicit opt-out; None: nothing
visible decides), `containers(meta, ctx) -> tuple[model.Container]` with the resources
they will get, and `fix(meta, ctx, containers) -> str`: what to change where when they do
not get request == limit ("" when they do). Injectors sized by pod annotations that
`spec.workloads.injection.<KEY>` writes also have `KEY`, `FLAT` (its flat ConfigMap key
prefix), `CPU` and `MEMORY` ((request, limit) annotation names) and `NOTE` (what the
annotations cannot fix, or None); those the pod's Namespace can turn on have
`NAMESPACE_TRIGGER` (what on the Namespace does).

`NAMES` lists them in the order the rules and the verdict apply them; `INJECTORS` (the
modules, in that order) and `ANNOTATED` (those with a KEY) import them all. `WHEN` says, as
data, what a pod must carry for each injector's trigger to return True: the modules take
their trigger keys from it, and a render imports an injector's module only for a pod that
carries one of them (`candidates`), or when the config sets some injector's mode to
`always` (start-up: most renders have no injected pod; docs/performance.md).
tests/admission/test_injectors.py checks that no trigger fires without its WHEN.
"""
from __future__ import annotations

from krm_fn.lazy import submodule
from collections import namedtuple

from krm_fn.admission import model
from krm_fn.admission.injectors import base
from krm_fn.admission.injectors.base import InjectionContext, Meta, meta_of


class When(namedtuple("When", "annotations labels ns_labels ns_annotations platforms "
                      "ray_group", defaults=((), (), (), (), (), False))):
    """What can make one injector's trigger return True: a key of the pod's `annotations`
    or `labels`, or of its Namespace's `ns_labels` or `ns_annotations`, that starts with
    one of these strings (a key, or a key prefix ending in `-`); a pod on one of
    `platforms` (PodSpecAt.platform); with `ray_group`, a KubeRay group's pod."""

    __slots__ = ()


NAMES = ("istio", "linkerd", "queue_proxy", "vault", "dapr", "storage_initializer",
         "kserve_agent", "otel_instrumentation", "otel_collector", "gcsfuse", "kuberay")
_ISTIO, _REV, _LINKERD = "sidecar.istio.io/inject", "istio.io/rev", "linkerd.io/inject"
_OTEL_LANG, _OTEL_COLLECTOR = ("instrumentation.opentelemetry.io/inject-",
                               "sidecar.opentelemetry.io/inject")
WHEN = {
    "istio": When(annotations=(_ISTIO,), labels=(_ISTIO, _REV),
                  ns_labels=("istio-injection", _REV)),
    "linkerd": When(annotations=(_LINKERD,), ns_annotations=(_LINKERD,)),
    "queue_proxy": When(platforms=("knative", "kserve")),
    "vault": When(annotations=("vault.hashicorp.com/agent-inject",)),
    "dapr": When(annotations=("dapr.io/enabled",)),
    "storage_initializer": When(platforms=("kserve",)),
    "kserve_agent": When(platforms=("kserve",)),
    "otel_instrumentation": When(annotations=(_OTEL_LANG,), ns_annotations=(_OTEL_LANG,)),
    "otel_collector": When(annotations=(_OTEL_COLLECTOR,), ns_annotations=(_OTEL_COLLECTOR,)),
    "gcsfuse": When(annotations=("gke-gcsfuse/volumes",)),
    "kuberay": When(ray_group=True),
}

__all__ = ["INJECTORS", "ANNOTATED", "NAMES", "WHEN", "When", "InjectionContext", "Meta",
           "meta_of", "injections", "for_pod", "by_id", "candidates", "module", "may_fire",
           "may_any", "unseen_namespace"]


def module(name: str):
    """The injector module `name` (one of NAMES), imported on first use."""
    return submodule(__name__, name)


def __getattr__(name: str):
    """INJECTORS and ANNOTATED, made (importing every injector) on first use."""
    if name == "INJECTORS":
        value = tuple(module(n) for n in NAMES)
    elif name == "ANNOTATED":
        value = tuple(m for m in __getattr__("INJECTORS") if hasattr(m, "KEY"))
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _carries(keys: dict | None, wanted: tuple) -> bool:
    return bool(keys) and bool(wanted) and any(
        isinstance(k, str) and k.startswith(wanted) for k in keys)


def may_fire(name: str, meta: Meta) -> bool:
    """False when WHEN[name] shows the injector's trigger cannot return True for `meta`."""
    return _may(WHEN[name], meta)


def _union(whens) -> When:
    """One When that may fire wherever one of `whens` may (each field the union)."""
    whens = tuple(whens)
    return When(*(tuple(sorted({x for w in whens for x in getattr(w, f)}))
                  for f in ("annotations", "labels", "ns_labels", "ns_annotations",
                            "platforms")), any(w.ray_group for w in whens))


# WHEN of every injector at once: a pod that carries none of it needs no per-injector check
_ANY = _union(WHEN.values())


def may_any(meta: Meta) -> bool:
    """False when no injector's WHEN lets its trigger return True for `meta` (one check
    instead of one per injector: most pods carry nothing an injector reads)."""
    return _may(_ANY, meta)


def _may(w: When, meta: Meta) -> bool:
    return (meta.platform in w.platforms or (w.ray_group and meta.ray_group is not None)
            or _carries(meta.annotations, w.annotations) or _carries(meta.labels, w.labels)
            or _carries(meta.ns_labels, w.ns_labels)
            or _carries(meta.ns_annotations, w.ns_annotations))


def any_always(injection) -> bool:
    """True when `injection` (the config's spec.workloads.injection record, or None) sets
    some injector's mode to `always` (it then fires with nothing visible)."""
    if injection is None:
        return False
    for conf in vars(injection).values():
        if getattr(conf, "mode", None) == "always":
            return True
    return False


def candidates(meta: Meta, injection):
    """The injector modules, in NAMES order, whose trigger may fire for `meta` or that
    `injection` (see any_always) may make fire; imports only those."""
    everything = any_always(injection)
    if not everything and not may_any(meta):
        return
    for name in NAMES:
        if everything or may_fire(name, meta):
            yield module(name)


def by_id(injector_id: str):
    """The injector module whose ID is `injector_id`; KeyError when none."""
    if injector_id not in WHEN:
        raise KeyError(injector_id)
    return module(injector_id)


def _mode(module, ctx: InjectionContext) -> str:
    """`spec.workloads.injection.<KEY>.mode` ("auto" when not configured)."""
    conf = getattr(ctx.injection, getattr(module, "KEY", ""), None) if ctx.injection else None
    return str(getattr(conf, "mode", None) or "auto")


def _configured(module, ctx: InjectionContext) -> bool:
    """`spec.workloads.injection.<KEY>` sets cpu or memory (the user runs that injector)."""
    conf = getattr(ctx.injection, getattr(module, "KEY", ""), None) if ctx.injection else None
    return _sizes(conf)


def _sizes(conf) -> bool:
    """One `spec.workloads.injection.<KEY>` record (or None) sets cpu or memory."""
    return conf is not None and (getattr(conf, "cpu", None) is not None
                                 or getattr(conf, "memory", None) is not None)


def injections(meta: Meta, ctx: InjectionContext) -> tuple:
    """The injectors that fire for a pod with metadata `meta`, in INJECTORS order, as
    model.Injection (containers with their resources, whether all are request == limit,
    the fix otherwise). An injector with `mode: never` in the config is left out; one
    with `mode: always` and nothing visible is assumed to fire (namespace-level injection
    the input does not show); an explicit opt-out always wins."""
    out = []
    for m in candidates(meta, ctx.injection):
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


def pod_security(meta: Meta, injections: tuple) -> list[str]:
    """A warning per injection of `injections` (model.Injection) whose init container adds
    capabilities (the module's REDIRECT: istio-init, linkerd-init) when the pod's Namespace,
    in the input, enforces the Pod Security level baseline or restricted: that level
    refuses added capabilities beyond its short list, so the API server refuses the pod
    unless the mesh runs with its CNI plugin instead of that init container, which krm-fn
    cannot see (https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline)."""
    from krm_fn.admission import podsecurity
    enforce = [level for mode, level in podsecurity.strict_modes(meta.ns_labels)
               if mode == "enforce"]
    out = []
    for inj in injections if enforce else ():
        redirect = getattr(module(inj.injector), "REDIRECT", None)
        if redirect is None or not any(c.name == redirect[0] for c in inj.containers):
            continue
        name, caps, cni, doc = redirect
        out.append(f"Namespace {meta.namespace or 'default'} enforces Pod Security "
                   f"{enforce[0]} ({podsecurity.LABEL}enforce: {enforce[0]}), which refuses "
                   f"the capabilities {' and '.join(caps)} that {inj.title}'s init "
                   f"container {name} adds: the API server refuses the pod unless the "
                   f"mesh runs with {cni}, without {name} ({doc}; "
                   f"https://kubernetes.io/docs/concepts/security/pod-security-standards/"
                   f"#baseline)")
    return out


def unseen_namespace(meta: Meta, ctx: InjectionContext, flat: bool = False) -> str | None:
    """The info message when the pod's Namespace is not in the input while an injector
    configured in `spec.workloads.injection` (cpu or memory set) with `mode: auto` could be
    turned on by it and nothing on the pod decides (its trigger says None), else None;
    `flat`: name the flat ConfigMap keys (`istioMode`) instead of the typed fields."""
    if meta.ns_labels is not None or meta.ns_annotations is not None:
        return None
    if ctx.injection is None or not any(map(_sizes, vars(ctx.injection).values())):
        return None                     # no injector configured: import none of them
    unseen = [m for m in __getattr__("ANNOTATED")
              if hasattr(m, "NAMESPACE_TRIGGER") and _configured(m, ctx)
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
