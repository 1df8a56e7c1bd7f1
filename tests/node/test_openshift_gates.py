"""OpenShift strips featureGates (issue #33 part 2): the Machine Config Operator refuses a
KubeletConfig that sets them, so a gate a CPU or Topology Manager option needs must be on
for the whole cluster (FeatureGate `cluster`, CustomNoUpgrade) or the kubelet refuses the
option and does not start. A gate that is off by default and not enabled by a FeatureGate
in the input fails the render; one the FeatureGate enables, or that is on by default,
is removed with a warning."""
import json

import pytest
import yaml

from tests.helpers import results, run_fn

GATE = "CPUManagerPolicyAlphaOptions"


def render(fmt: str, options: dict, extra: dict | None = None, items=()):
    pool = {"name": "inference", "emit": "always",
            "nodeSelector": {"node-role.kubernetes.io/inference": ""},
            "kubelet": {"cpuManagerPolicyOptions": options, **({"extra": extra} if extra else {})}}
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": list(items),
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "pin"},
                              "spec": {"kubernetesVersion": "1.35", "nodePools": [pool],
                                       "output": {"formats": [fmt]}}}}
    p = run_fn([], json.dumps(doc))
    return p, yaml.safe_load(p.stdout) or {}


def feature_gate(feature_set: str = "CustomNoUpgrade", enabled=(GATE,), disabled=()) -> dict:
    return {"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
            "metadata": {"name": "cluster"},
            "spec": {"featureSet": feature_set,
                     "customNoUpgrade": {"enabled": list(enabled), "disabled": list(disabled)}}}


ALPHA = {"full-pcpus-only": "true", "align-by-socket": "true"}
WHERE = {"openshift": "OpenShift KubeletConfig krm-fn-inference",
         "performance-profile": "PerformanceProfile inference"}


@pytest.mark.parametrize("fmt", list(WHERE))
def test_an_alpha_option_whose_gate_openshift_strips_fails_the_render(fmt):
    p, out = render(fmt, ALPHA)
    assert p.returncode == 1
    [err] = [r for r in results(out, "error")]
    assert err["field"]["path"] == "spec.nodePools[0].kubelet.extra.featureGates"
    assert err["message"] == (
        f"featureGates {{\"{GATE}\":true}} cannot be carried by {WHERE[fmt]}: the Machine "
        f"Config Operator refuses a KubeletConfig that sets featureGates, and {GATE} is "
        f"alpha, off by default in Kubernetes 1.35: the kubelet would run without it, "
        f"refuse the CPU or Topology Manager options that need it and not start. Enable "
        f"{GATE} for the whole cluster in the FeatureGate `cluster` (config.openshift.io/v1: "
        f"spec.featureSet: CustomNoUpgrade, spec.customNoUpgrade.enabled: [{GATE}]; "
        f"CustomNoUpgrade cannot be undone and blocks minor upgrades) and put that "
        f"FeatureGate in the input so krm-fn sees it, or leave out the options that need it")


@pytest.mark.parametrize("fmt", list(WHERE))
def test_the_cluster_feature_gate_in_the_input_lets_it_through(fmt):
    p, out = render(fmt, ALPHA, items=[feature_gate()])
    assert p.returncode == 0, p.stderr
    assert not results(out, "error")
    [warn] = [r for r in results(out, "warning") if r["field"]["path"].endswith("featureGates")]
    assert "is removed from" in warn["message"]


@pytest.mark.parametrize("gate", [
    feature_gate("TechPreviewNoUpgrade"),           # its gates are OpenShift's own list
    feature_gate(enabled=(GATE,), disabled=(GATE,)),
    feature_gate(enabled=("SomethingElse",)),
    {**feature_gate(), "metadata": {"name": "other"}},
    {**feature_gate(), "apiVersion": "config.openshift.io/v2"},
])
def test_a_feature_gate_that_does_not_enable_it_is_not_enough(gate):
    p, out = render("openshift", ALPHA, items=[gate])
    assert p.returncode == 1
    assert [r["field"]["path"] for r in results(out, "error")] == [
        "spec.nodePools[0].kubelet.extra.featureGates"]


def test_a_gate_on_by_default_is_only_removed():
    # InPlacePodVerticalScaling is GA in 1.35: removing it changes nothing
    p, out = render("openshift", {"full-pcpus-only": "true"},
                    extra={"featureGates": {"InPlacePodVerticalScaling": True}})
    assert p.returncode == 0, p.stderr
    [warn] = [r for r in results(out, "warning") if r["field"]["path"].endswith("featureGates")]
    assert warn["message"].startswith('featureGates {"InPlacePodVerticalScaling":true} is '
                                      'removed from OpenShift KubeletConfig krm-fn-inference')


def test_other_formats_keep_the_gate():
    p, out = render("configmap", ALPHA)
    assert p.returncode == 0, p.stderr
    assert f"{GATE}: true" in out["items"][0]["data"]["kubelet-config.yaml"]
