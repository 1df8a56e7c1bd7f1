"""A mesh's traffic-redirect init container under Pod Security admission
(krm_fn/admission/injectors pod_security): istio-init and linkerd-init add NET_ADMIN and
NET_RAW, which the levels baseline and restricted refuse, so in a Namespace of the input
that enforces one of them the API server refuses the injected pod unless the mesh runs
with its CNI plugin (which krm-fn cannot see: a warning). Checked against the real API
server's PodSecurity admission with the init container as Istio's injection template
writes it (tests/controlplane)."""
from __future__ import annotations

import copy

import pytest

from tests.test_verdict import NS_DEP, _ns_config, render

ISTIO_DOC = "https://istio.io/latest/docs/setup/additional-setup/pod-security-admission/"
PSS = "https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline"


def _namespace(labels: dict, annotations: dict | None = None) -> dict:
    meta = {"name": "serving", "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _warnings(results: list) -> list:
    return [m for s, m in results if s == "warning" and "enforces Pod Security" in m]


_SIZED = {"istio": {"cpu": "500m", "memory": "256Mi"}, "linkerd": {"cpu": "100m",
                                                                   "memory": "64Mi"}}


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_istio_init_in_a_namespace_enforcing_baseline_or_restricted_is_warned(level):
    ns = _namespace({"istio-injection": "enabled", "pod-security.kubernetes.io/enforce": level})
    _, results, _ = render(_ns_config(_SIZED), ns, copy.deepcopy(NS_DEP))
    assert _warnings(results) == [
        f"Namespace serving enforces Pod Security {level} (pod-security.kubernetes.io/"
        f"enforce: {level}), which refuses the capabilities NET_ADMIN and NET_RAW that Istio "
        f"istio-proxy's init container istio-init adds: the API server refuses the pod "
        f"unless the mesh runs with its CNI plugin, without istio-init ({ISTIO_DOC}; {PSS})"]


def test_linkerd_init_is_warned_too():
    ns = _namespace({"pod-security.kubernetes.io/enforce": "baseline"},
                    {"linkerd.io/inject": "enabled"})
    _, results, _ = render(_ns_config(_SIZED), ns, copy.deepcopy(NS_DEP))
    assert _warnings(results) == [
        "Namespace serving enforces Pod Security baseline (pod-security.kubernetes.io/"
        "enforce: baseline), which refuses the capabilities NET_ADMIN and NET_RAW that "
        "Linkerd linkerd-proxy's init container linkerd-init adds: the API server refuses "
        "the pod unless the mesh runs with the Linkerd CNI plugin, without linkerd-init "
        f"(https://linkerd.io/2/features/cni/; {PSS})"]


@pytest.mark.parametrize("labels", [
    {"istio-injection": "enabled", "pod-security.kubernetes.io/enforce": "privileged"},
    {"istio-injection": "enabled", "pod-security.kubernetes.io/warn": "baseline",
     "pod-security.kubernetes.io/audit": "restricted"},
    {"istio-injection": "enabled"},
    # no injection: nothing adds the capabilities
    {"pod-security.kubernetes.io/enforce": "restricted"},
])
def test_no_warning_where_the_api_server_admits_the_pod(labels):
    _, results, _ = render(_ns_config(_SIZED), _namespace(labels), copy.deepcopy(NS_DEP))
    assert _warnings(results) == []


def test_interception_mode_none_adds_no_istio_init():
    dep = copy.deepcopy(NS_DEP)
    dep["spec"]["template"]["metadata"] = {
        "annotations": {"sidecar.istio.io/interceptionMode": "NONE"}}
    ns = _namespace({"istio-injection": "enabled",
                     "pod-security.kubernetes.io/enforce": "baseline"})
    _, results, _ = render(_ns_config(_SIZED), ns, dep)
    assert _warnings(results) == []


# Istio's injection template (manifests/charts/istio-control/istio-discovery/files/
# injection-template.yaml): istio-init's securityContext without privileged proxies
_ISTIO_INIT = {"name": "istio-init", "image": "docker.io/istio/proxyv2:1.27.0",
               "args": ["istio-iptables"],
               "securityContext": {"allowPrivilegeEscalation": False, "privileged": False,
                                   "capabilities": {"add": ["NET_ADMIN", "NET_RAW"],
                                                    "drop": ["ALL"]},
                                   "readOnlyRootFilesystem": False, "runAsGroup": 0,
                                   "runAsNonRoot": False, "runAsUser": 0}}


def test_the_api_server_refuses_istio_init_where_krm_fn_warns(controlplane, tmp_path):
    from tests.test_apiserver import _dump
    for level, refused in (("baseline", True), ("restricted", True), ("privileged", False)):
        ns = f"psa-{level}"
        path = tmp_path / f"{ns}.yaml"
        path.write_text(_dump([{"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "labels": {"pod-security.kubernetes.io/enforce": level}}}]))
        controlplane.kubectl("apply", "--server-side", "--field-manager=krm-fn-test", "-f",
                             str(path), check=True)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "srv", "namespace": ns},
               "spec": {"initContainers": [copy.deepcopy(_ISTIO_INIT)],
                        "securityContext": {"runAsNonRoot": True,
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "server", "image": "s:1",
                                        "securityContext": {
                                            "allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]},
                                            "runAsUser": 1000}}]}}
        path = tmp_path / f"{ns}-pod.yaml"
        path.write_text(_dump([pod]))
        p = controlplane.kubectl("apply", "--server-side", "--dry-run=server",
                                 "--field-manager=krm-fn-test", "-f", str(path))
        assert (p.returncode != 0) == refused, (level, p.stderr)
        if refused:
            assert 'violates PodSecurity "' + level in p.stderr, p.stderr
            assert '"NET_ADMIN", "NET_RAW"' in p.stderr, p.stderr
        # and krm-fn warns exactly where the API server refuses
        labels = {"istio-injection": "enabled", "pod-security.kubernetes.io/enforce": level}
        _, results, _ = render(_ns_config(_SIZED), _namespace(labels),
                               copy.deepcopy(NS_DEP))
        assert bool(_warnings(results)) == refused, (level, results)
