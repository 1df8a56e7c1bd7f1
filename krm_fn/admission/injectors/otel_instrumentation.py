"""OpenTelemetry Operator auto-instrumentation: the init container (a sidecar for Go) that
puts a language agent into the pod.

**When it fires** (open-telemetry/opentelemetry-operator internal/instrumentation/
annotation.go `annotationValue`, podmutator.go): the annotation
`instrumentation.opentelemetry.io/inject-<language>` (`java`, `nodejs`, `python`,
`dotnet`, `go`, `apache-httpd`, `nginx`) on the pod or on its Namespace. The value is `true` (the one
Instrumentation in the pod's namespace), an Instrumentation name (`name` in the pod's
namespace, or `namespace/name`) or `false`. The pod's value wins, except that a pod's
`true` takes the Namespace's Instrumentation name; `false` on the pod opts out. When the
Namespace is not in the input, only the pod's annotation is visible.

**What it adds.** Per language: the init container
`opentelemetry-auto-instrumentation-<language>` (java, nodejs, python, dotnet); for Go
the app container `opentelemetry-auto-instrumentation` (eBPF, privileged); for Apache
HTTPD and NGINX the init containers `otel-agent-source-container-clone` and
`otel-agent-attach-apache` / `otel-agent-attach-nginx` (apachehttpd.go, nginx.go).
`inject-sdk` adds no container.

**Resources.** `spec.<field>.resources` of the Instrumentation (`java`, `nodejs`,
`python`, `dotnet`, `go`, `apacheHttpd`, `nginx`), when it is in the input; the
operator's webhook defaults them when the Instrumentation is created
(internal/webhook/instrumentation_webhook.go): limits cpu 500m, memory 256Mi; requests
cpu 50m and memory 64Mi (java, python, go) or 128Mi (nodejs, dotnet); requests cpu 1m
and memory 128Mi (apacheHttpd, nginx). The defaults make the pod Burstable: set
`spec.<field>.resources` with requests == limits in the Instrumentation; no pod
annotation sizes it.
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base
from krm_fn.workloads import get_path

ID = "otel_instrumentation"
TITLE = "OpenTelemetry auto-instrumentation"
PREFIX = WHEN[ID].annotations[0]  # see WHEN in __init__.py
LANGUAGES = ("java", "nodejs", "python", "dotnet", "go", "apache-httpd", "nginx")
_LIMITS = {"cpu": "500m", "memory": "256Mi"}
_WEB = ({"cpu": "1m", "memory": "128Mi"}, _LIMITS)
DEFAULTS = {lang: ({"cpu": "50m", "memory": "128Mi" if lang in ("nodejs", "dotnet")
                    else "64Mi"}, _LIMITS) for lang in LANGUAGES[:5]}
DEFAULTS.update({"apache-httpd": _WEB, "nginx": _WEB})
# annotation suffix -> (Instrumentation spec field, ((container name, role), ...))
_AGENT = "opentelemetry-auto-instrumentation"
_CLONE = "otel-agent-source-container-clone"
CONTAINERS = {
    **{lang: (lang, ((f"{_AGENT}-{lang}", model.INIT),))
       for lang in ("java", "nodejs", "python", "dotnet")},
    "go": ("go", ((_AGENT, model.APP),)),
    "apache-httpd": ("apacheHttpd", ((_CLONE, model.INIT),
                                     ("otel-agent-attach-apache", model.INIT))),
    "nginx": ("nginx", ((_CLONE, model.INIT), ("otel-agent-attach-nginx", model.INIT))),
}


def effective(pod_value: object, ns_value: object) -> str:
    """The operator's choice between the pod's and the Namespace's annotation value
    (annotation.go `annotationValue`): "" when neither is set."""
    pod = "" if pod_value is None else str(pod_value)
    ns = "" if ns_value is None else str(ns_value)
    if ns == "" or (pod != "" and pod.lower() != "true") or (
            pod.lower() == "true" and ns.lower() == "false"):
        return pod
    return ns


def _value(meta: base.Meta, key: str) -> tuple[str, str]:
    """(effective value, where it came from)."""
    pod = meta.annotations.get(key)
    ns = (meta.ns_annotations or {}).get(key)
    value = effective(pod, ns)
    where = (f"annotation {key}={pod}" if value == ("" if pod is None else str(pod))
             else f"namespace {meta.namespace} annotation {key}={ns}")
    return value, where


def languages(meta: base.Meta) -> list[tuple[str, str, str]]:
    """[(language, effective value, why)] of the languages injected into the pod."""
    out = []
    for lang in LANGUAGES:
        value, why = _value(meta, PREFIX + lang)
        if value and value.lower() != "false":
            out.append((lang, value, why))
    return out


def trigger(meta: base.Meta):
    """(True, why) when some language is injected, (False, why) when an annotation opts
    out and none is injected, (None, None) when none is visible."""
    langs = languages(meta)
    if langs:
        return True, "; ".join(why for _, _, why in langs)
    for lang in LANGUAGES:
        value, why = _value(meta, PREFIX + lang)
        if value.lower() == "false":
            return False, why
    return None, None


def instrumentation(meta: base.Meta, ctx: base.InjectionContext, value: str) -> dict | None:
    """The Instrumentation the annotation value names, when it is in the input."""
    if value.lower() == "true":
        found = [o for (space, _), o in ctx.instrumentations.items()
                 if space == meta.namespace]
        return found[0] if len(found) == 1 else None
    space, _, name = value.rpartition("/")
    return ctx.instrumentations.get((space or meta.namespace, name))


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """One container per injected language, from its Instrumentation's resources or the
    operator defaults."""
    out = []
    for lang, value, _ in languages(meta):
        inst = instrumentation(meta, ctx, value)
        fld, names = CONTAINERS[lang]
        res = get_path(inst, ("spec", fld, "resources")) if inst else None
        req, lim = DEFAULTS[lang]
        if isinstance(res, dict):
            req = res.get("requests") if isinstance(res.get("requests"), dict) else req
            lim = res.get("limits") if isinstance(res.get("limits"), dict) else lim
        out.extend(base.container(name, role, ID, req, lim) for name, role in names)
    return tuple(out)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so the added containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    parts = []
    for lang, value, _ in languages(meta):
        where = "in this input" if instrumentation(meta, ctx, value) else (
            f"{value!r}" if value.lower() != "true" else f"of namespace {meta.namespace}")
        parts.append(f"spec.{CONTAINERS[lang][0]}.resources (requests == limits for cpu "
                     f"and memory) in the Instrumentation {where}")
    return "set " + " and ".join(parts) + "; no pod annotation sizes these containers"
