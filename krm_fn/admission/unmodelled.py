"""Injecting webhooks krm-fn knows of but does not model: the one table of them.

The injectors krm-fn models (krm_fn/admission/injectors/) size the containers they add and
count them in the verdict. The webhooks in `WEBHOOKS` add containers too, at pod creation,
with resources krm-fn cannot know; a pod that carries one of their triggers gets a WARNING
naming the webhook and what it adds, and the verdict's QoS statement reads
`Guaranteed unless <webhook> injects <containers> without equal requests and limits`
instead of a plain `Guaranteed`.

Each row: `name`, `on` (the triggers that turn injection on: any one), `off` (triggers on
the pod that turn it off whatever `on` says), `containers` (what it adds, as its
documentation names it), `source` (that documentation). A trigger is where the key is read
(`annotation` / `label` of the pod template, `namespace label` / `namespace annotation`
of its Namespace when that is in the input), the key (a `*` in it stands for any text,
e.g. a language name) and the values that count (() = any value).
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn.admission.model import WARNING, Finding

ANNOTATION, LABEL = "annotation", "label"
NS_LABEL, NS_ANNOTATION = "namespace label", "namespace annotation"
# what Go's strconv.ParseBool reads as true / false (these webhooks parse their annotation
# with it, or accept at least these spellings: warning on more is the fail-closed side)
_TRUE = ("1", "t", "T", "true", "True", "TRUE")
_FALSE = ("0", "f", "F", "false", "False", "FALSE")
# Kuma's metadata.GetEnabled (pkg/plugins/runtime/k8s/metadata/annotations.go): enabled,
# true or yes; disabled, false or no
_KUMA_ON, _KUMA_OFF = ("enabled", "true", "yes"), ("disabled", "false", "no")


class Trigger(namedtuple("Trigger", "where key values", defaults=((),))):
    """`where` (ANNOTATION, LABEL, NS_LABEL, NS_ANNOTATION), `key` (`*` matches any text),
    `values` (the values that count; () = any)."""

    __slots__ = ()


class Webhook(namedtuple("Webhook", "name on off containers source")):
    """One webhook krm-fn does not model: see the module docstring."""

    __slots__ = ()


def _t(where: str, key: str, *values: str) -> Trigger:
    return Trigger(where, key, tuple(values))


WEBHOOKS = (
    Webhook("AWS App Mesh sidecar injector",
            (_t(NS_LABEL, "appmesh.k8s.aws/sidecarInjectorWebhook", "enabled"),
             _t(ANNOTATION, "appmesh.k8s.aws/sidecarInjectorWebhook", "enabled")),
            (_t(ANNOTATION, "appmesh.k8s.aws/sidecarInjectorWebhook", "disabled"),),
            "the Envoy sidecar and its init container",
            "https://aws.github.io/aws-app-mesh-controller-for-k8s/reference/injector/"),
    Webhook("Kuma sidecar injector",
            (_t(NS_LABEL, "kuma.io/sidecar-injection", *_KUMA_ON),
             _t(LABEL, "kuma.io/sidecar-injection", *_KUMA_ON),
             _t(ANNOTATION, "kuma.io/sidecar-injection", *_KUMA_ON)),
            (_t(LABEL, "kuma.io/sidecar-injection", *_KUMA_OFF),
             _t(ANNOTATION, "kuma.io/sidecar-injection", *_KUMA_OFF)),
            "kuma-sidecar and kuma-init (kuma-init only without the Kuma CNI)",
            "https://kuma.io/docs/2.9.x/production/dp-config/dpp-on-kubernetes/"),
    Webhook("Consul connect injector",
            (_t(ANNOTATION, "consul.hashicorp.com/connect-inject", *_TRUE),),
            (_t(ANNOTATION, "consul.hashicorp.com/connect-inject", *_FALSE),),
            "the Consul dataplane sidecar and its init container",
            "https://developer.hashicorp.com/consul/docs/k8s/annotations-and-labels"),
    Webhook("Open Service Mesh sidecar injector",
            (_t(NS_ANNOTATION, "openservicemesh.io/sidecar-injection", "enabled"),
             _t(ANNOTATION, "openservicemesh.io/sidecar-injection", "enabled")),
            (_t(ANNOTATION, "openservicemesh.io/sidecar-injection", "disabled"),),
            "the Envoy sidecar and its init container",
            "https://release-v1-1.docs.openservicemesh.io/docs/guides/app_onboarding/"
            "sidecar_injection/"),
    Webhook("Datadog admission controller (APM library injection)",
            (_t(ANNOTATION, "admission.datadoghq.com/*-lib.version"),),
            (_t(LABEL, "admission.datadoghq.com/enabled", "false"),),
            "an init container per APM library",
            "https://docs.datadoghq.com/containers/cluster_agent/admission_controller/"),
    Webhook("Azure Workload Identity proxy",
            (_t(ANNOTATION, "azure.workload.identity/inject-proxy-sidecar", *_TRUE),),
            (), "the proxy sidecar and its init container",
            "https://azure.github.io/azure-workload-identity/docs/topics/"
            "service-account-labels-and-annotations.html"),
    Webhook("Bank-Vaults secrets webhook (Vault Agent)",
            (_t(ANNOTATION, "vault.security.banzaicloud.io/vault-agent", *_TRUE),),
            (), "the Vault Agent sidecar",
            "https://bank-vaults.dev/docs/mutating-webhook/vault-agent-templating/"),
    Webhook("OpenBao agent injector",
            (_t(ANNOTATION, "openbao.openbao.org/agent-inject", *_TRUE),),
            (), "the OpenBao Agent init container and sidecar",
            "https://openbao.org/docs/platform/k8s/injector/annotations/"),
    Webhook("1Password secrets injector",
            (_t(ANNOTATION, "operator.1password.io/inject"),),
            (), "an init container that copies the 1Password CLI",
            "https://developer.1password.com/docs/k8s/injector/"),
    Webhook("Infisical agent injector",
            (_t(ANNOTATION, "org.infisical.com/inject", *_TRUE),),
            (), "the Infisical Agent sidecar or init container",
            "https://infisical.com/docs/integrations/platforms/kubernetes-injector"),
)


def _key_matches(pattern: str, key: str) -> bool:
    """`key` equals `pattern`, a `*` in it standing for any text (one `*` at most)."""
    if "*" not in pattern:
        return key == pattern
    head, _, tail = pattern.partition("*")
    return len(key) >= len(head) + len(tail) and key.startswith(head) and key.endswith(tail)


def _source(meta, where: str) -> dict | None:
    return {ANNOTATION: meta.annotations, LABEL: meta.labels, NS_LABEL: meta.ns_labels,
            NS_ANNOTATION: meta.ns_annotations}[where]


def _match(t: Trigger, meta) -> str | None:
    """`<where> <key>=<value>` when `t` holds for `meta`, else None."""
    found = _source(meta, t.where)
    if not found:
        return None
    for key, value in found.items():
        if _key_matches(t.key, str(key)) and (not t.values or str(value) in t.values):
            return f"{t.where} {key}={value}"
    return None


def fired(meta) -> tuple:
    """((Webhook, why), ...) of the WEBHOOKS whose triggers hold for `meta` (an
    injectors.Meta: the pod template's annotations and labels, its Namespace's when in the
    input), in table order; `why` names the trigger found (`label
    kuma.io/sidecar-injection=enabled`)."""
    out = []
    for w in WEBHOOKS:
        why = next((m for t in w.on if (m := _match(t, meta)) is not None), None)
        if why is not None and not any(_match(t, meta) for t in w.off):
            out.append((w, why))
    return tuple(out)


def finding(webhook: Webhook, why: str, path: str | None = None) -> Finding:
    """The WARNING for one fired webhook: what it adds, that krm-fn does not count it, and
    where to read how to size it."""
    return Finding(WARNING, f"{webhook.name} ({why}) injects {webhook.containers} at pod "
                            f"creation; krm-fn does not model this webhook, so the verdict "
                            f"counts none of them: the pod stays Guaranteed only if every "
                            f"container it adds gets cpu and memory requests equal to its "
                            f"limits; size them in the webhook's configuration "
                            f"({webhook.source})", "injection", path)


def unless(fired_webhooks: tuple) -> str:
    """` unless <name> injects <containers> without equal requests and limits` for
    `fired` webhooks (several joined by ` or `), "" for none."""
    if not fired_webhooks:
        return ""
    return (" unless " + " or ".join(f"{w.name} injects {w.containers}"
                                     for w, _ in fired_webhooks)
            + " without equal requests and limits")


def _trigger_text(t: Trigger) -> str:
    values = " or ".join(f"`{v}`" for v in t.values) if t.values else "any value"
    return f"{t.where} `{t.key}` = {values}"


def table() -> str:
    """WEBHOOKS as the Markdown table of docs/verdict.md ("Webhooks krm-fn does not
    model"; tests/admission/test_unmodelled.py checks the two are equal)."""
    rows = ["| webhook | fires on | not when | adds | source |", "|---|---|---|---|---|"]
    for w in WEBHOOKS:
        on = "; ".join(map(_trigger_text, w.on))
        off = "; ".join(map(_trigger_text, w.off)) or "-"
        rows.append(f"| {w.name} | {on} | {off} | {w.containers} | <{w.source}> |")
    return "\n".join(rows)
