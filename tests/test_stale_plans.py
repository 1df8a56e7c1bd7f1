"""Stale node plans (issue #33 part 6): an item krm-fn emitted on an earlier render (labels
app.kubernetes.io/managed-by: krm-fn, krm-fn.dev/node-pool) that this render does not emit
again is reported, per spec.output.stalePlans (error by default, or warning), and kept
byte for byte: a renamed pool must not leave its old kubelet configuration behind."""
import json

import yaml

from tests.helpers import results, run_fn


def old_plan(pool: str, name: str | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name or f"kubelet-config-{pool}", "namespace": "kube-system",
                         "labels": {"app.kubernetes.io/managed-by": "krm-fn",
                                    "krm-fn.dev/node-pool": pool}},
            "data": {"kubelet-config.yaml": "cpuManagerPolicy: static\n"}}


def render(items: list, stale: str | None = None, emit: str = "always",
           formats=("configmap",)):
    output = {"formats": list(formats), **({"stalePlans": stale} if stale else {})}
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "pin"},
                              "spec": {"nodePools": [{"name": "inference", "emit": emit,
                                                      "nodeSelector": {"pool": "inference"}}],
                                       "output": output}}}
    p = run_fn([], json.dumps(doc))
    return p, yaml.safe_load(p.stdout) or {}


RENAMED = ("stale node plan: krm-fn emitted this object on an earlier render, but node pool "
           "'cpu-old' is no longer in spec.nodePools (renamed or removed), so its kubelet "
           "configuration would stay applied to nodes no pool describes; ")


def _stale(out, severity):
    return [(r["resourceRef"]["name"], r["message"]) for r in results(out, severity)
            if r["message"].startswith("stale node plan")]


def test_a_renamed_pools_plan_fails_the_render_and_is_kept():
    p, out = render([old_plan("cpu-old")])
    assert p.returncode == 1
    assert _stale(out, "error") == [("kubelet-config-cpu-old", RENAMED + (
        "delete it from the input (kpt: its file), or set spec.output.stalePlans: warning "
        "to keep it"))]
    assert out["items"][0] == old_plan("cpu-old")          # left as it was


def test_stale_plans_warning_keeps_it_and_renders():
    p, out = render([old_plan("cpu-old")], stale="warning")
    assert p.returncode == 0, p.stderr
    assert _stale(out, "warning") == [("kubelet-config-cpu-old", RENAMED + (
        "it is kept; delete it from the input (kpt: its file)"))]
    assert out["items"][0] == old_plan("cpu-old")
    assert [i["metadata"]["name"] for i in out["items"]] == [
        "kubelet-config-cpu-old", "kubelet-config-inference"]


def test_an_output_the_pool_no_longer_has_is_stale():
    p, out = render([old_plan("inference", "kubelet-config-inference-talos")])
    assert p.returncode == 1
    assert _stale(out, "error") == [("kubelet-config-inference-talos", (
        "stale node plan: krm-fn emitted this object on an earlier render, but node pool "
        "'inference' no longer has this output (spec.output.formats, namespace, verifyJob, "
        "nodeAuditJob, nodeAuditDaemonSet, monitoring or admissionPolicy changed); delete it "
        "from the input "
        "(kpt: its file), or "
        "set spec.output.stalePlans: warning to keep it"))]


def test_the_plan_emitted_again_is_not_stale():
    p, out = render([old_plan("inference")])
    assert p.returncode == 0, p.stderr
    assert _stale(out, "error") == _stale(out, "warning") == []
    assert len(out["items"]) == 1                       # rewritten in place


def test_a_pool_without_workloads_this_render_keeps_its_plan_silently():
    # emit: placed and no workload in this render: nothing says the plan is stale
    p, out = render([old_plan("inference", "kubelet-config-inference-talos")],
                    emit="placed")
    assert _stale(out, "error") == _stale(out, "warning") == []


def test_items_without_both_labels_are_not_krm_fns():
    half = old_plan("cpu-old")
    del half["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    other = old_plan("cpu-old", "kubelet-config-other")
    other["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "helm"
    p, out = render([half, other])
    assert p.returncode == 0, p.stderr
    assert _stale(out, "error") == []
