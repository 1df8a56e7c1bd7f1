"""Node-only renders (spec.nodePools[].emit): a platform repository renders its pools' kubelet
config from the same InferenceTuning the application repositories use, without workloads."""
from krm_fn import config
from krm_fn.pipeline import transform
from krm_fn.results import ERROR, INFO, WARNING

TYPED = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
         "metadata": {"name": "pin-inference"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "model", "namespace": "serving",
                           "annotations": {"krm-fn.dev/node-pool": "gpu"}},
              "spec": {"template": {"spec": {"containers": [{
                  "name": "model", "image": "model:1",
                  "resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                                "limits": {"cpu": "4", "memory": "8Gi"}}}]}}}}


def _fc(*pools, **spec):
    return {**TYPED, "spec": {"nodePools": list(pools), **spec}}


def _names(out):
    return [(o["kind"], o["metadata"]["name"]) for o in out.emitted]


def test_emit_defaults_to_placed():
    assert config.load(None).nodePools[0].emit == "placed"
    flat = config.load({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                        "data": {"nodePoolEmit": "always"}})
    assert flat.nodePools[0].emit == "always"


def test_node_only_render_emits_an_always_pool_without_workloads():
    out = transform([], _fc({"name": "cpu", "emit": "always"},
                           {"name": "gpu", "nodeSelector": {"pool": "gpu"}}))
    assert _names(out) == [("ConfigMap", "kubelet-config-cpu")]
    assert [(r.severity, r.message) for r in out.results] == [
        (INFO, "no workload was selected: nothing tuned; the node config of node pool(s) "
               "'cpu' is emitted (spec.nodePools[].emit: always)"),
        (WARNING, "node pool 'cpu': spec.nodePools[0].nodeSelector is not set, so the "
                  "default krm-fn.dev/cpu-pinning=true is added to every workload placed in "
                  "this pool; their pods stay Pending unless the nodes carry that label "
                  "(kubectl label node NODE krm-fn.dev/cpu-pinning=true): set "
                  "spec.nodePools[0].nodeSelector to the labels of the nodes that get this "
                  "kubelet config (https://kubernetes.io/docs/concepts/scheduling-eviction/"
                  "assign-pod-node/#nodeselector)"),
        (INFO, "node pool 'cpu': 60 exclusive CPUs per node (NUMA 0: 28, NUMA 1: 32); "
               "no pinned pod"),
        (INFO, "node pool 'cpu': emitted configmap (0 workload(s) placed)"),
    ]
    assert [(p.name, count) for p, _, _, count in out.pools] == [("cpu", 0)]


def test_node_only_render_keeps_the_warning_without_an_always_pool():
    out = transform([], _fc({"name": "cpu"}))
    assert out.emitted == []
    assert [(r.severity, r.message) for r in out.results] == [
        (WARNING, "the input holds no items (was it piped from a command that failed?): "
                  "nothing tuned and no kubelet config emitted")]
    out = transform([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}],
                    _fc({"name": "cpu"}))
    assert [(r.severity, r.message) for r in out.results] == [
        (WARNING, "no workload was selected: nothing tuned and no kubelet config emitted "
                  "(check spec.selector)")]


def test_always_pool_and_placed_pool_are_both_emitted_in_pool_order():
    out = transform([DEPLOYMENT], _fc({"name": "cpu", "emit": "always"},
                                      {"name": "gpu", "nodeSelector": {"pool": "gpu"}}))
    assert not any(r.severity == ERROR for r in out.results)
    assert _names(out) == [("ConfigMap", "kubelet-config-cpu"),
                           ("ConfigMap", "kubelet-config-gpu")]
    assert [(p.name, count) for p, _, _, count in out.pools] == [("cpu", 0), ("gpu", 1)]
    assert not any("no workload was selected" in r.message for r in out.results)


def test_emit_rejects_an_unknown_value():
    out = transform([], _fc({"name": "cpu", "emit": "sometimes"}))
    [r] = out.results
    assert (r.severity, r.path) == (ERROR, "spec.nodePools[0].emit")
    assert "sometimes" in r.message and "always" in r.message
