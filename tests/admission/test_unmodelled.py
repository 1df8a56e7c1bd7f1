"""The injecting webhooks krm-fn does not model (krm_fn/admission/unmodelled.py): when
each fires, the warning it gets and what the verdict's QoS statement says."""
from __future__ import annotations

import pytest

from krm_fn.admission import unmodelled, verdict
from krm_fn.admission.injectors.base import Meta
from krm_fn.admission.model import WARNING, PodVerdict
from krm_fn.admission.injectors import WHEN


def _names(m: Meta) -> list:
    return [w.name for w, _ in unmodelled.fired(m)]


@pytest.mark.parametrize("m, want", [
    (Meta(), []),
    (Meta(ns_labels={"kuma.io/sidecar-injection": "enabled"}), ["Kuma sidecar injector"]),
    (Meta(labels={"kuma.io/sidecar-injection": "disabled"},
          ns_labels={"kuma.io/sidecar-injection": "enabled"}), []),
    (Meta(annotations={"kuma.io/sidecar-injection": "enabled"}), ["Kuma sidecar injector"]),
    (Meta(annotations={"consul.hashicorp.com/connect-inject": "false"}), []),
    (Meta(annotations={"consul.hashicorp.com/connect-inject": "true"}),
     ["Consul connect injector"]),
    (Meta(ns_labels={"appmesh.k8s.aws/sidecarInjectorWebhook": "enabled"},
          annotations={"appmesh.k8s.aws/sidecarInjectorWebhook": "disabled"}), []),
    (Meta(ns_labels={"appmesh.k8s.aws/sidecarInjectorWebhook": "enabled"}),
     ["AWS App Mesh sidecar injector"]),
    (Meta(ns_annotations={"openservicemesh.io/sidecar-injection": "enabled"}),
     ["Open Service Mesh sidecar injector"]),
    # a namespace label is not the namespace annotation OSM reads
    (Meta(ns_labels={"openservicemesh.io/sidecar-injection": "enabled"}), []),
    (Meta(annotations={"admission.datadoghq.com/python-lib.version": "v2.9.0"}),
     ["Datadog admission controller (APM library injection)"]),
    (Meta(annotations={"admission.datadoghq.com/python-lib.version": "v2.9.0"},
          labels={"admission.datadoghq.com/enabled": "false"}), []),
    (Meta(labels={"admission.datadoghq.com/enabled": "true"}), []),
    (Meta(annotations={"azure.workload.identity/inject-proxy-sidecar": "true"}),
     ["Azure Workload Identity proxy"]),
    (Meta(annotations={"vault.security.banzaicloud.io/vault-agent": "true"}),
     ["Bank-Vaults secrets webhook (Vault Agent)"]),
    (Meta(annotations={"openbao.openbao.org/agent-inject": "true"}),
     ["OpenBao agent injector"]),
    (Meta(annotations={"operator.1password.io/inject": "server"}),
     ["1Password secrets injector"]),
    # hostile review: the spellings the webhooks themselves accept (Kuma's GetEnabled:
    # enabled, true, yes; consul-k8s's strconv.ParseBool: 1, t, T, true, True, TRUE)
    (Meta(ns_labels={"kuma.io/sidecar-injection": "true"}), ["Kuma sidecar injector"]),
    (Meta(annotations={"kuma.io/sidecar-injection": "yes"}), ["Kuma sidecar injector"]),
    (Meta(labels={"kuma.io/sidecar-injection": "no"},
          ns_labels={"kuma.io/sidecar-injection": "enabled"}), []),
    (Meta(annotations={"consul.hashicorp.com/connect-inject": "1"}),
     ["Consul connect injector"]),
    (Meta(annotations={"consul.hashicorp.com/connect-inject": "T"}),
     ["Consul connect injector"]),
    (Meta(annotations={"consul.hashicorp.com/connect-inject": "0"}), []),
    (Meta(annotations={"org.infisical.com/inject": "false"}), []),
    (Meta(annotations={"org.infisical.com/inject": "true",
                       "consul.hashicorp.com/connect-inject": "true"}),
     ["Consul connect injector", "Infisical agent injector"]),
])
def test_which_webhooks_fire(m, want):
    assert _names(m) == want


def test_no_row_names_an_injector_krm_fn_models():
    modelled = {k for w in WHEN.values()
                for k in w.annotations + w.labels + w.ns_labels + w.ns_annotations}
    keys = {t.key for w in unmodelled.WEBHOOKS for t in w.on + w.off}
    assert not {k for k in keys if any(k.startswith(m) for m in modelled)}
    assert all(w.source.startswith("https://") for w in unmodelled.WEBHOOKS)


def test_the_warning_names_the_webhook_its_trigger_containers_and_source():
    m = Meta(ns_labels={"kuma.io/sidecar-injection": "enabled"})
    (w, why), = unmodelled.fired(m)
    f = unmodelled.finding(w, why, "spec.template.spec")
    assert (f.severity, f.rule, f.path) == (WARNING, "injection", "spec.template.spec")
    assert f.message == (
        "Kuma sidecar injector (namespace label kuma.io/sidecar-injection=enabled) injects "
        "kuma-sidecar and kuma-init (kuma-init only without the Kuma CNI) at pod creation; "
        "krm-fn does not model this webhook, so the verdict counts none of them: the pod "
        "stays Guaranteed only if every container it adds gets cpu and memory requests "
        "equal to its limits; size them in the webhook's configuration "
        "(https://kuma.io/docs/2.9.x/production/dp-config/dpp-on-kubernetes/)")


def test_the_qos_statement_of_a_guaranteed_pod_says_what_may_change_it():
    fired = unmodelled.fired(Meta(annotations={"consul.hashicorp.com/connect-inject": "true"}))
    text = unmodelled.unless(fired)
    assert text == (" unless Consul connect injector injects the Consul dataplane sidecar "
                    "and its init container without equal requests and limits")
    v = PodVerdict("Guaranteed", (("server", 4),), (0,), unless=text)
    assert verdict.line(v) == (
        "Guaranteed unless Consul connect injector injects the Consul dataplane sidecar and "
        "its init container without equal requests and limits; exclusive CPUs server 4 on "
        "NUMA 0")
    assert verdict.line(PodVerdict("Guaranteed", (("server", 4),), (0,))) == (
        "Guaranteed after admission; exclusive CPUs server 4 on NUMA 0")
    assert unmodelled.unless(()) == ""


def test_judge_warns_for_each_fired_webhook_and_states_unless_only_when_guaranteed():
    from tests.admission.kit import ctr, node, pod
    fired = unmodelled.fired(Meta(annotations={"org.infisical.com/inject": "true"}))
    v = verdict.judge(pod(ctr("server", 4)), node(), unmodelled=fired)
    assert v.unless == (" unless Infisical agent injector injects the Infisical Agent "
                        "sidecar or init container without equal requests and limits")
    assert [(f.severity, f.rule) for f in v.findings if f.rule == "injection"] == [
        (WARNING, "injection")]
    burstable = verdict.judge(pod(ctr("server", 4, limit_cpu=8)), node(), unmodelled=fired)
    assert burstable.qos == "Burstable" and burstable.unless == ""
    assert verdict.line(burstable).startswith("Burstable after admission; ")


def test_the_docs_table_is_the_registry():
    from pathlib import Path
    docs = (Path(__file__).parents[2] / "docs" / "verdict.md").read_text()
    assert unmodelled.table() in docs


def test_the_pipeline_asks_the_table_only_for_a_pod_with_metadata():
    from krm_fn.pipeline.verdict import _unmodelled
    assert _unmodelled(Meta()) == ()
    assert _unmodelled(Meta(ns_annotations={})) == ()
    got = _unmodelled(Meta(ns_annotations={"openservicemesh.io/sidecar-injection": "enabled"}))
    assert [(w.name, why) for w, why in got] == [
        ("Open Service Mesh sidecar injector",
         "namespace annotation openservicemesh.io/sidecar-injection=enabled")]
