"""Istio sidecar injection: `istio-proxy`, and `istio-init` (or `istio-validation` with
Istio CNI).

**When it fires.** Istio's MutatingWebhookConfiguration (istio/istio
manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml) calls the
injector when

- the Namespace has label `istio-injection=enabled`, and the pod's label
  `sidecar.istio.io/inject` is not `false`;
- the Namespace has label `istio.io/rev=<revision>` (and no `istio-injection` label), or
  the pod has label `istio.io/rev=<revision>` (and the Namespace neither), and the pod's
  `sidecar.istio.io/inject` label is not `false`;
- the pod has label `sidecar.istio.io/inject=true` and the Namespace has neither label
  (the annotation alone does not call the webhook there: no sidecar).

A Namespace labelled `istio-injection=disabled` matches none of these: no sidecar. The
injector then decides from the pod (pkg/kube/inject/inject.go `injectRequired`): the label
`sidecar.istio.io/inject` wins over the annotation of the same name; `false` opts out;
pods with `hostNetwork: true` are never injected. Only `true` and `false`, exactly, decide:
any other value ("True", "no", "off") falls back to the injection policy, which injects in a
namespace the webhook is called for ("Invalid value ... Falling back to default injection
policy", from Istio 1.27; earlier releases read y/yes/true/on case-blind and anything else as
an opt-out), and the webhook's object selector matches the label only when it is `true`.
A Namespace with label `istio.io/dataplane-mode=ambient` and no sidecar trigger runs in
ambient mode: ztunnel on the node, no container in the pod. When the Namespace is not in
the input, only the pod's own label or annotation is visible.

**What it adds.** `istio-proxy` (an app container, or an init container with
`restartPolicy: Always` when native sidecars are on: annotation
`sidecar.istio.io/nativeSidecar`, else ENABLE_NATIVE_SIDECARS, `auto` since 1.27, which
turns them on when every node's kubelet is 1.33 or newer, as every supported one is) and
the init container `istio-init` (`istio-validation` with Istio CNI; none with the annotation
`sidecar.istio.io/interceptionMode: NONE`). Both get the same resources (the
`resources` template of files/injection-template.yaml, used by both since Istio 1.8).

**Resources.** When any of the annotations `sidecar.istio.io/proxyCPU`,
`proxyCPULimit`, `proxyMemory`, `proxyMemoryLimit` is set, exactly those are used (the
others stay unset); else the Helm value `global.proxy.resources`, default requests cpu
100m, memory 128Mi and limits cpu 2000m, memory 1024Mi (istio-discovery values.yaml).
The defaults make the pod Burstable: set all four annotations with request == limit
(`spec.workloads.injection.istio` writes them).
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base

ID = "istio"
TITLE = "Istio istio-proxy"
KEY, FLAT = "istio", "istio"
# what on the Namespace turns injection on (for the info when the Namespace is not in the
# input: krm_fn/admission/injectors/__init__.py unseen_namespace)
NAMESPACE_TRIGGER = ("label istio-injection=enabled or istio.io/rev; istio/istio "
                     "manifests/charts/istio-control/istio-discovery/templates/"
                     "mutatingwebhook.yaml")
CPU = ("sidecar.istio.io/proxyCPU", "sidecar.istio.io/proxyCPULimit")
MEMORY = ("sidecar.istio.io/proxyMemory", "sidecar.istio.io/proxyMemoryLimit")
NOTE = ("Istio: older injection templates size istio-init from the cluster-wide "
        "global.proxy_init.resources, not from these annotations, unless Istio CNI is "
        "used; on such a release set equal requests and limits there, or istio-init "
        "keeps the pod Burstable")
DEFAULTS = {"requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "2000m", "memory": "1024Mi"}}

INJECT = WHEN[ID].annotations[0]  # what can trigger it: WHEN in __init__.py
NS_LABEL, REV = WHEN[ID].ns_labels
AMBIENT = "istio.io/dataplane-mode"
NATIVE = "sidecar.istio.io/nativeSidecar"
INTERCEPTION = "sidecar.istio.io/interceptionMode"
# the init container that sets up the traffic redirection, the capabilities it adds, the
# plugin that replaces it, and where that is documented (the injection template's
# istio-init securityContext: capabilities add NET_ADMIN, NET_RAW)
REDIRECT = ("istio-init", ("NET_ADMIN", "NET_RAW"), "its CNI plugin",
            "https://istio.io/latest/docs/setup/additional-setup/pod-security-admission/")


def _pod_choice(meta: base.Meta):
    """(True|False|None, why) from the pod's label (preferred) or annotation: `true` or
    `false` exactly; None for any other value (module docstring)."""
    if meta.labels.get(INJECT) is not None:
        where, value = "label", str(meta.labels[INJECT])
    elif meta.annotations.get(INJECT) is not None:
        where, value = "annotation", str(meta.annotations[INJECT])
    else:
        return None, None
    if value not in ("true", "false"):
        return None, None       # the default policy decides (inject.go injectRequired)
    return value == "true", f"{where} {INJECT}={value}"


def trigger(meta: base.Meta):
    """(True, why) when Istio injects a sidecar, (False, why) on an explicit opt-out
    (pod `sidecar.istio.io/inject` false, Namespace `istio-injection=disabled`, hostNetwork,
    ambient mode), (None, None) when nothing visible decides (module docstring)."""
    on, why = _pod_choice(meta)
    if on is False:
        return on, why
    if meta.host_network:
        return False, "hostNetwork: true (Istio never injects such pods)"
    nsl = meta.ns_labels
    ns = f"namespace {meta.namespace}"
    if nsl is not None:
        if str(nsl.get(NS_LABEL, "")) == "enabled":
            return True, f"{ns} label {NS_LABEL}=enabled"
        if NS_LABEL in nsl:
            return False, f"{ns} label {NS_LABEL}={nsl[NS_LABEL]}"
        if nsl.get(REV):
            return True, f"{ns} label {REV}={nsl[REV]}"
    if meta.labels.get(REV) and (nsl is None or REV not in nsl):
        return True, f"label {REV}={meta.labels[REV]}"
    if on and nsl is not None and meta.labels.get(INJECT) is None:
        return False, (f"{why}, but {ns} has no {NS_LABEL} or {REV} label and the pod no "
                       f"{INJECT} label, so Istio's webhook is not called")
    if on:
        return on, why
    for where, labels in (("label", meta.labels), (f"{ns} label", nsl or {})):
        if str(labels.get(AMBIENT, "")) == "ambient":
            return False, f"{where} {AMBIENT}=ambient (ambient mode: no sidecar)"
    return None, None


def _native(meta: base.Meta) -> bool:
    """The annotation when set, else on: ENABLE_NATIVE_SIDECARS `auto` turns native
    sidecars on where every kubelet is 1.33 or newer, as every supported version is."""
    value = meta.annotations.get(NATIVE)
    return value is None or str(value) != "false"


def resources(meta: base.Meta) -> tuple[dict, dict]:
    """(requests, limits) as {resource: text}: the four annotations when any is set, else
    the Helm default global.proxy.resources."""
    ann = meta.annotations
    if any(ann.get(n) not in (None, "") for n in CPU + MEMORY):
        req = {"cpu": ann.get(CPU[0]), "memory": ann.get(MEMORY[0])}
        lim = {"cpu": ann.get(CPU[1]), "memory": ann.get(MEMORY[1])}
        return req, lim
    return dict(DEFAULTS["requests"]), dict(DEFAULTS["limits"])


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """istio-init (init; not with interceptionMode NONE) and istio-proxy (SIDECAR when
    native sidecars are on, else APP), both sized by `resources`."""
    req, lim = resources(meta)
    proxy_role = model.SIDECAR if _native(meta) else model.APP
    proxy = base.container("istio-proxy", proxy_role, ID, req, lim)
    if str(meta.annotations.get(INTERCEPTION, "")) == "NONE":
        return (proxy,)
    return (base.container("istio-init", model.INIT, ID, req, lim), proxy)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so both containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with "
            f"{CPU[0]} == {CPU[1]} and {MEMORY[0]} == {MEMORY[1]} (or "
            f"spec.workloads.injection.istio cpu and memory, which krm-fn writes there); "
            f"istio-init and istio-proxy both take them")
