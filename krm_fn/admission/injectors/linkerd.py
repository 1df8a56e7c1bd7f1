"""Linkerd proxy injection: `linkerd-proxy` and the init container `linkerd-init`.

**When it fires** (linkerd/linkerd2 pkg/inject/report.go `disabledByAnnotation`): the
annotation `linkerd.io/inject` with value `enabled` or `ingress`, on the pod or on its
Namespace. A pod's `linkerd.io/inject: disabled` opts out even in an enabled Namespace; a
pod's `enabled` wins over a Namespace's `disabled`. Any other value, on the pod or on the
Namespace, disables injection (pkg/inject/report.go `disabledByAnnotation`,
`isInjectAnnotationValid`). Nothing else (no labels). Pods with
`hostNetwork: true` are never injected (`Report.Injectable`: "hostNetwork is enabled").
When the Namespace is not in the input, only the pod's annotation is visible.

**What it adds.** `linkerd-proxy` (an app container; an init container with
`restartPolicy: Always` with `config.alpha.linkerd.io/proxy-enable-native-sidecar: "true"`,
or `config.beta.linkerd.io/...` / `config.linkerd.io/...` in newer releases, or the Helm
value `proxy.nativeSidecar`, the default from linkerd/linkerd2#15267 (2026); krm-fn
counts it as an app container unless annotated, which gives the same QoS class and the
same pod requests) and the init container `linkerd-init` (absent with the
linkerd-cni plugin, which adds `linkerd-network-validator` instead).

**Resources.** Per value, the pod's annotation `config.linkerd.io/proxy-cpu-request`,
`proxy-cpu-limit`, `proxy-memory-request`, `proxy-memory-limit`, else the Namespace's
annotation of the same name (pkg/inject/inject.go: `ProxyAnnotations` may be set on the
pod or the Namespace), else the Helm value `proxy.resources`, empty by default
(charts/linkerd-control-plane/values.yaml): no requests and no limits, which makes the
pod Burstable. Since edge-24.6.4 (linkerd/linkerd2#12741) `linkerd-init` gets the
proxy's resources too; before, it had the Helm value `proxyInit.resources` (100m cpu,
20Mi memory, request == limit).
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base

ID = "linkerd"
TITLE = "Linkerd linkerd-proxy"
KEY, FLAT = "linkerd", "linkerd"
# what on the Namespace turns injection on (injectors/__init__.py unseen_namespace)
NAMESPACE_TRIGGER = ("annotation linkerd.io/inject: enabled; linkerd/linkerd2 "
                     "pkg/inject/report.go")
CPU = ("config.linkerd.io/proxy-cpu-request", "config.linkerd.io/proxy-cpu-limit")
MEMORY = ("config.linkerd.io/proxy-memory-request", "config.linkerd.io/proxy-memory-limit")
NOTE = ("Linkerd: releases before linkerd/linkerd2#12741 (merged 2024-06) size "
        "linkerd-init from the install-time Helm value proxyInit.resources, not from "
        "these annotations; on such a release set equal requests and limits there, or "
        "linkerd-init keeps the pod Burstable")
INJECT = WHEN[ID].annotations[0]  # what can trigger it: WHEN in __init__.py
ON = ("enabled", "ingress")
VALID = ON + ("disabled",)
NATIVE = tuple(f"config.{v}linkerd.io/proxy-enable-native-sidecar"
               for v in ("", "beta.", "alpha."))
# the init container that rewrites the pod's iptables, the capabilities it adds (the proxy
# injector's proxy-init securityContext), the plugin that replaces it, and its documentation
REDIRECT = ("linkerd-init", ("NET_ADMIN", "NET_RAW"), "the Linkerd CNI plugin",
            "https://linkerd.io/2/features/cni/")


def trigger(meta: base.Meta):
    """(True, why) when Linkerd injects, (False, why) on an explicit opt-out, (None,
    None) when nothing visible decides (module docstring)."""
    value = meta.annotations.get(INJECT)
    pod = None if value is None or str(value) == "" else str(value)
    if meta.host_network and (pod in ON or str((meta.ns_annotations or {}).get(INJECT))
                              in ON):
        return False, "hostNetwork: true (Linkerd never injects such pods)"
    ns = (meta.ns_annotations or {}).get(INJECT)
    ns = None if ns is None or str(ns) == "" else str(ns)
    for where, bad in ((f"namespace {meta.namespace} annotation", ns), ("annotation", pod)):
        if bad is not None and bad not in VALID:
            return False, (f"{where} {INJECT}={bad}, which is not enabled, disabled or "
                           f"ingress: Linkerd injects nothing")
    if pod is not None and (pod not in ON or ns is None or ns not in ON):
        return pod in ON, f"annotation {INJECT}={value}"
    if ns is not None:
        if ns in ON:
            return True, f"namespace {meta.namespace} annotation {INJECT}={ns}"
        return False, f"namespace {meta.namespace} annotation {INJECT}={ns}"
    return None, None


def resources(meta: base.Meta) -> tuple[dict, dict]:
    """(requests, limits) as {resource: text}: pod annotation, else Namespace annotation,
    else nothing (the Helm default is empty)."""
    req, lim = {}, {}
    for res, names in (("cpu", CPU), ("memory", MEMORY)):
        for part, name in zip((req, lim), names):
            value = base.first((meta.annotations, name), (meta.ns_annotations, name))
            if value is not None:
                part[res] = value
    return req, lim


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """linkerd-init (init) and linkerd-proxy (SIDECAR when native, else APP)."""
    req, lim = resources(meta)
    native = any(str(meta.annotations.get(n, "")).lower() == "true" for n in NATIVE)
    return (base.container("linkerd-init", model.INIT, ID, req, lim),
            base.container("linkerd-proxy", model.SIDECAR if native else model.APP, ID,
                           req, lim))


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so both containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.linkerd cpu and memory, which krm-fn "
            f"writes there), or the same annotations on the Namespace")
