"""A node pool whose nodeSelector the config leaves out gets the default
krm-fn.dev/cpu-pinning=true, a label no node carries until someone puts it there: one
warning per such pool that receives a workload, naming the field (krm_fn/pipeline/load.py)."""
from krm_fn import config, pipeline

DEP = {"apiVersion": "apps/v1", "kind": "Deployment",
       "metadata": {"name": "m", "namespace": "ns"},
       "spec": {"template": {"spec": {"containers": [
           {"name": "m", "image": "m:1",
            "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}]}}}}


def _dep() -> dict:
    import copy
    return copy.deepcopy(DEP)


def warnings_about_selector(fc) -> list:
    out = pipeline.transform([_dep()], fc)
    return [(r.severity, r.ref.name if r.ref else None, r.path, r.message)
            for r in out.results if r.path and r.path.endswith("nodeSelector")
            and r.severity == "warning"]


def typed(spec: dict) -> dict:
    return {"apiVersion": config.API_VERSION, "kind": config.KIND,
            "metadata": {"name": "pin"}, "spec": spec}


def test_pool_without_node_selector_is_warned_naming_the_field_and_the_default():
    fc = typed({"nodePools": [{"name": "cpu", "topology": {"sockets": 1}}]})
    assert warnings_about_selector(fc) == [(
        "warning", "pin", "spec.nodePools[0].nodeSelector",
        "node pool 'cpu': spec.nodePools[0].nodeSelector is not set, so the default "
        "krm-fn.dev/cpu-pinning=true is added to every workload placed in this pool; their "
        "pods stay Pending unless the nodes carry that label (kubectl label node NODE "
        "krm-fn.dev/cpu-pinning=true): set spec.nodePools[0].nodeSelector to the labels of "
        "the nodes that get this kubelet config "
        "(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/"
        "#nodeselector)")]


def test_config_without_node_pools_is_warned_about_the_default_pool():
    (w,) = warnings_about_selector(typed({"kubernetesVersion": "1.35"}))
    assert w[2] == "spec.nodePools[0].nodeSelector"
    assert w[3].startswith("node pool 'inference': spec.nodePools[0].nodeSelector is not set")


def test_flat_config_without_node_selector_key_names_the_flat_key():
    fc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pin"},
          "data": {"kinds": "Deployment", "threadsPerCore": "2", "coresPerSocket": "16",
                   "sockets": "1"}}
    (w,) = warnings_about_selector(fc)
    assert w[2] == "data.nodeSelector"
    assert w[3].startswith("node pool 'inference': data.nodeSelector is not set, so the "
                           "default krm-fn.dev/cpu-pinning=true is added")
    assert "set data.nodeSelector to the labels" in w[3]
    fc["data"]["nodeSelector"] = "node.kubernetes.io/instance-type=m7i.8xlarge"
    assert warnings_about_selector(fc) == []


def test_explicit_node_selector_even_the_default_label_is_not_warned():
    fc = typed({"nodePools": [{"name": "a", "nodeSelector": {"krm-fn.dev/cpu-pinning": "true"}},
                              {"name": "b", "nodeSelector": {"x": "y"}}]})
    assert warnings_about_selector(fc) == []


def test_only_pools_that_receive_a_workload_are_warned():
    fc = typed({"nodePools": [{"name": "a", "nodeSelector": {"x": "y"}}, {"name": "b"}]})
    assert warnings_about_selector(fc) == []


def test_no_function_config_keeps_the_single_defaults_warning():
    out = pipeline.transform([_dep()], None)
    assert [r.message.split(" (")[0] for r in out.results
            if r.severity == "warning" and "nodeSelector" in r.message] == [
        "no function config: defaults used"]
