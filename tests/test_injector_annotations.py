"""The injector-annotations rule (krm_fn/rules/injector_annotations.py) on its own: injector annotations with
request == limit. The public cases (C07 Istio, C08 Linkerd, C09 Knative) are in
test_cases.py; this file covers Vault, Dapr, the ConfigMap keys, mirroring and the
warnings."""
import copy

from krm_fn import config
from krm_fn import changes
from krm_fn.pod import Edits, build_views
from krm_fn.results import Ref
from krm_fn.rules import RuleContext, injector_annotations as sidecars
from krm_fn.workloads import PodSpecAt, locations
from tests.helpers import item, load, results, run_cli, without_results

VAULT = "vault.hashicorp.com/"
DAPR = "dapr.io/"
QUEUE = "queue.sidecar.serving.knative.dev/"


def deployment(annotations=None, labels=None) -> dict:
    md = {}
    if annotations is not None:
        md["annotations"] = dict(annotations)
    if labels is not None:
        md["labels"] = dict(labels)
    tmpl = {"spec": {"containers": [{"name": "server", "image": "srv:1"}]}}
    if md:
        tmpl["metadata"] = md
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer"},
            "spec": {"template": tmpl}}


def run(obj: dict, injection: dict | None = None, at: PodSpecAt | None = None):
    """Apply only the sidecars rule; returns (changed object, results as dicts, ops)."""
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "pin"}, "spec": {"workloads": {"injection": injection or {}}}}
    cfg = config.load(fc)
    edits = Edits(copy.deepcopy(obj))
    res: list = []
    ref = Ref(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
    for where in ([at] if at else locations(obj)):
        pod = build_views(edits.root, where, ref, edits, res)
        if pod is None:
            continue
        sidecars.apply(pod, RuleContext(cfg, None, frozenset()))
    return (edits.root, [r.as_dict() for r in changes.results(res)],
            changes.ops(edits.changes))


def ann_of(obj: dict) -> dict:
    return obj["spec"]["template"].get("metadata", {}).get("annotations") or {}


def test_vault_agent_annotations():
    obj, res, _ = run(deployment({VAULT + "agent-inject": "true"}),
                      {"vault": {"cpu": "0.25", "memory": "64Mi"}})
    assert ann_of(obj) == {VAULT + "agent-inject": "true",
                           VAULT + "agent-requests-cpu": "250m",
                           VAULT + "agent-limits-cpu": "250m",
                           VAULT + "agent-requests-mem": "64Mi",
                           VAULT + "agent-limits-mem": "64Mi"}
    assert [r["severity"] for r in res] == ["info"] * 4
    assert res[0]["message"] == (
        "Vault agent (annotation vault.hashicorp.com/agent-inject=true): annotation "
        "vault.hashicorp.com/agent-requests-cpu set to 250m from "
        "spec.workloads.injection.vault.cpu: the injected container needs request == limit "
        "for the pod to stay Guaranteed")
    assert res[0]["field"]["path"] == \
        "spec.template.metadata.annotations['vault.hashicorp.com/agent-requests-cpu']"


def test_vault_explicit_false_and_no_opt_in_add_nothing():
    for obj in (deployment({VAULT + "agent-inject": "false"}), deployment()):
        out, res, ops = run(obj, {"vault": {"cpu": "250m", "memory": "64Mi"}})
        assert ops == [] and res == []
        assert out == obj


def test_dapr_sidecar_annotations_created_on_a_pod():
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "annotations": {DAPR + "enabled": "true"}},
           "spec": {"containers": [{"name": "server", "image": "srv:1"}]}}
    obj, res, _ = run(pod, {"dapr": {"cpu": "1", "memory": "1Gi"}})
    assert obj["metadata"]["annotations"] == {DAPR + "enabled": "true",
                                              DAPR + "sidecar-cpu-request": "1",
                                              DAPR + "sidecar-cpu-limit": "1",
                                              DAPR + "sidecar-memory-request": "1Gi",
                                              DAPR + "sidecar-memory-limit": "1Gi"}
    assert res[-1]["field"]["path"] == "metadata.annotations['dapr.io/sidecar-memory-limit']"


def test_dapr_configured_by_configmap_keys_through_the_cli():
    text = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: infer}
  spec:
    template:
      metadata:
        annotations:
          dapr.io/enabled: "true"
      spec:
        containers:
        - {name: server, image: srv:1, resources: {requests: {cpu: "2", memory: 2Gi}, limits: {cpu: "2", memory: 2Gi}}}
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: pin}
  data: {daprCpu: "300m", daprMemory: 100M}
"""
    p = run_cli([], text)
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    ann = item(out, "Deployment", "infer")["spec"]["template"]["metadata"]["annotations"]
    assert ann == {DAPR + "enabled": "true",
                   DAPR + "sidecar-cpu-request": "300m", DAPR + "sidecar-cpu-limit": "300m",
                   DAPR + "sidecar-memory-request": "100M", DAPR + "sidecar-memory-limit": "100M"}
    assert "dapr.io/sidecar-cpu-request: \"300m\"" in p.stdout
    # running again changes nothing
    again = run_cli([], without_results(p.stdout))
    assert not [r for r in results(load(again.stdout), "info") if "Dapr" in r["message"]]


def test_not_configured_is_a_warning_naming_annotations_and_config():
    obj, res, ops = run(deployment(labels={"sidecar.istio.io/inject": "true"}))
    assert ops == []
    assert [r["severity"] for r in res] == ["warning", "warning"]
    assert res[0]["message"] == (
        "Istio istio-proxy (label sidecar.istio.io/inject=true) keeps the pod Burstable unless "
        "its request equals its limit: set annotations sidecar.istio.io/proxyCPU, "
        "sidecar.istio.io/proxyCPULimit, sidecar.istio.io/proxyMemory, "
        "sidecar.istio.io/proxyMemoryLimit (equal request and limit) on the pod template, or "
        "set spec.workloads.injection.istio.cpu (ConfigMap key istioCpu) and "
        "spec.workloads.injection.istio.memory (ConfigMap key istioMemory); krm-fn never "
        "invents sidecar resources")
    assert res[0]["field"]["path"] == "spec.template.metadata.annotations"
    assert res[1]["message"].startswith("Istio: older injection templates size istio-init")


def test_not_configured_pair_the_user_half_set_is_mirrored_without_warning():
    obj, res, _ = run(deployment({"sidecar.istio.io/inject": "true",
                                  "sidecar.istio.io/proxyCPULimit": "2"}),
                      {"istio": {"memory": "128Mi"}})
    assert ann_of(obj) == {"sidecar.istio.io/inject": "true",
                           "sidecar.istio.io/proxyCPULimit": "2",
                           "sidecar.istio.io/proxyCPU": "2",
                           "sidecar.istio.io/proxyMemory": "128Mi",
                           "sidecar.istio.io/proxyMemoryLimit": "128Mi"}
    assert [r["severity"] for r in res] == ["info", "info", "info", "warning"]
    assert res[0]["message"].endswith(
        "annotation sidecar.istio.io/proxyCPU set to 2, equal to "
        "sidecar.istio.io/proxyCPULimit: the injected container needs request == limit for "
        "the pod to stay Guaranteed")

    # memory neither set nor configured: warning names only the memory pair
    obj, res, _ = run(deployment({"linkerd.io/inject": "enabled",
                                  "config.linkerd.io/proxy-cpu-request": "100m"}))
    assert ann_of(obj)["config.linkerd.io/proxy-cpu-limit"] == "100m"
    warn = [r["message"] for r in res if r["severity"] == "warning"]
    assert "set annotations config.linkerd.io/proxy-memory-request, " \
           "config.linkerd.io/proxy-memory-limit (equal request and limit)" in warn[0]
    assert "linkerd.cpu" not in warn[0] and "(ConfigMap key linkerdMemory)" in warn[0]


def test_unequal_user_pair_is_raised_to_the_larger_and_equal_pairs_are_kept():
    obj, res, ops = run(deployment({"sidecar.istio.io/inject": "true",
                                    "sidecar.istio.io/proxyCPU": "100m",
                                    "sidecar.istio.io/proxyCPULimit": "2",
                                    "sidecar.istio.io/proxyMemory": "1Gi",
                                    "sidecar.istio.io/proxyMemoryLimit": "1024Mi"}),
                        {"istio": {"cpu": "500m", "memory": "256Mi"}})
    assert ops == [(("spec", "template", "metadata", "annotations",
                     "sidecar.istio.io/proxyCPU"), "2")]
    assert res[0]["message"] == (
        "Istio istio-proxy (annotation sidecar.istio.io/inject=true): annotation "
        "sidecar.istio.io/proxyCPU 100m -> 2, equal to sidecar.istio.io/proxyCPULimit: the "
        "injected container needs request == limit for the pod to stay Guaranteed")
    assert res[0]["field"]["currentValue"] == "100m"


def test_second_run_changes_nothing():
    first, _, _ = run(deployment({DAPR + "enabled": "true"}),
                      {"dapr": {"cpu": "250m", "memory": "64Mi"}})
    _, res, ops = run(first, {"dapr": {"cpu": "250m", "memory": "64Mi"}})
    assert ops == [] and res == []


def test_always_mode_without_config_warns_and_never_mode_is_silent():
    _, res, ops = run(deployment(), {"dapr": {"mode": "always"}})
    assert ops == []
    assert res[0]["message"].startswith(
        "Dapr daprd (spec.workloads.injection.dapr.mode is always) keeps the pod Burstable")
    _, res, ops = run(deployment({DAPR + "enabled": "true"}), {"dapr": {"mode": "never"}})
    assert ops == [] and res == []


def test_invalid_user_quantity_is_an_error():
    _, res, _ = run(deployment({VAULT + "agent-inject": "true",
                                VAULT + "agent-limits-cpu": "lots"}),
                    {"vault": {"cpu": "250m", "memory": "64Mi"}})
    errors = [r for r in res if r["severity"] == "error"]
    assert len(errors) == 1
    assert errors[0]["field"]["path"] == \
        "spec.template.metadata.annotations['vault.hashicorp.com/agent-limits-cpu']"
    assert errors[0]["message"].startswith(
        "Vault agent: annotation vault.hashicorp.com/agent-limits-cpu: ")


def test_annotations_that_are_not_a_mapping_are_an_error():
    obj = deployment({DAPR + "enabled": "true"})
    obj["spec"]["template"]["metadata"]["labels"] = {"x": "y"}
    obj["spec"]["template"]["metadata"]["annotations"] = ["dapr.io/enabled"]
    _, res, ops = run(obj, {"dapr": {"mode": "always", "cpu": "1", "memory": "1Gi"}})
    assert ops == []
    assert [(r["severity"], r["field"]["path"]) for r in res] == [
        ("error", "spec.template.metadata.annotations")]


def isvc(annotations=None, predictor_annotations=None) -> dict:
    md = {"name": "m"}
    if annotations is not None:
        md["annotations"] = dict(annotations)
    pred = {"model": {"modelFormat": {"name": "sklearn"}}}
    if predictor_annotations is not None:
        pred["annotations"] = dict(predictor_annotations)
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": md, "spec": {"predictor": pred}}


def test_kserve_reads_the_isvc_annotations_and_writes_the_predictor_annotations():
    obj, res, _ = run(isvc({"serving.kserve.io/deploymentMode": "Knative",
                            "sidecar.istio.io/inject": "true",
                            QUEUE + "cpu-resource-limit": "200m"}),
                      {"istio": {"cpu": "500m", "memory": "256Mi"},
                       "knativeQueueProxy": {"cpu": "100m", "memory": "128Mi"}})
    assert obj["metadata"]["annotations"] == {"serving.kserve.io/deploymentMode": "Knative",
                                              "sidecar.istio.io/inject": "true",
                                              QUEUE + "cpu-resource-limit": "200m"}
    assert obj["spec"]["predictor"]["annotations"] == {
        "sidecar.istio.io/proxyCPU": "500m", "sidecar.istio.io/proxyCPULimit": "500m",
        "sidecar.istio.io/proxyMemory": "256Mi", "sidecar.istio.io/proxyMemoryLimit": "256Mi",
        QUEUE + "cpu-resource-request": "200m",
        QUEUE + "memory-resource-request": "128Mi", QUEUE + "memory-resource-limit": "128Mi"}
    assert any(r["message"].startswith(
        "Knative queue-proxy (KServe annotation serving.kserve.io/deploymentMode=Knative): "
        "annotation queue.sidecar.serving.knative.dev/cpu-resource-request set to 200m, "
        "equal to queue.sidecar.serving.knative.dev/cpu-resource-limit (your value is kept "
        "over spec.workloads.injection.knativeQueueProxy.cpu 100m)") for r in res)


def test_kserve_without_deployment_mode_is_assumed_serverless_and_modelmesh_is_not():
    obj, res, _ = run(isvc(), {"knativeQueueProxy": {"cpu": "100m", "memory": "128Mi"}})
    assert obj["spec"]["predictor"]["annotations"][QUEUE + "cpu-resource-limit"] == "100m"
    assert res[0]["message"].startswith(
        "Knative queue-proxy (KServe: no serving.kserve.io/deploymentMode annotation, so "
        "Serverless is assumed)")
    for mode in ("ModelMesh", "RawDeployment", "Standard"):
        obj, res, ops = run(isvc({"serving.kserve.io/deploymentMode": mode}),
                            {"knativeQueueProxy": {"cpu": "100m", "memory": "128Mi",
                                                   "mode": "always"}})
        assert ops == [] and res == []


def test_knative_platform_always_gets_queue_proxy_annotations():
    svc = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
           "metadata": {"name": "predictor"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "m:1"}]}}}}
    at = PodSpecAt(spec=("spec", "template", "spec"), meta=("spec", "template", "metadata"),
                   platform="knative")
    obj, res, _ = run(svc, {"knativeQueueProxy": {"cpu": "0.1", "memory": "128Mi"}}, at)
    assert ann_of(obj) == {QUEUE + "cpu-resource-request": "100m",
                           QUEUE + "cpu-resource-limit": "100m",
                           QUEUE + "memory-resource-request": "128Mi",
                           QUEUE + "memory-resource-limit": "128Mi"}
    assert res[0]["message"].startswith(
        "Knative queue-proxy (every Knative revision runs a queue-proxy): annotation")
    assert res[-1]["message"].startswith("Knative: the queue.sidecar.serving.knative.dev")
    _, res, ops = run(svc, {"knativeQueueProxy": {"cpu": "0.1", "memory": "128Mi",
                                                  "mode": "never"}}, at)
    assert ops == [] and res == []


def test_pod_specs_sharing_annotations_warn_once():
    obj = isvc({"serving.kserve.io/deploymentMode": "Serverless"})
    obj["spec"]["predictor"]["workerSpec"] = {"containers": [{"name": "w", "image": "w:1"}]}
    _, res, ops = run(obj)
    assert [r["message"].split(":")[0] for r in res] == [
        "Knative queue-proxy (KServe annotation serving.kserve.io/deploymentMode=Serverless) "
        "keeps the pod Burstable unless its request equals its limit", "Knative"]
    assert ops == []


def test_serving_runtime_gets_mesh_annotations_but_no_queue_proxy_guess():
    rt = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
          "metadata": {"name": "rt"},
          "spec": {"labels": {"sidecar.istio.io/inject": "true"},
                   "containers": [{"name": "kserve-container", "image": "rt:1"}]}}
    obj, res, _ = run(rt, {"istio": {"cpu": "500m", "memory": "256Mi"},
                           "knativeQueueProxy": {"cpu": "100m", "memory": "128Mi"}})
    assert obj["spec"]["annotations"] == {
        "sidecar.istio.io/proxyCPU": "500m", "sidecar.istio.io/proxyCPULimit": "500m",
        "sidecar.istio.io/proxyMemory": "256Mi", "sidecar.istio.io/proxyMemoryLimit": "256Mi"}
    assert not [r for r in res if "queue" in r["message"]]


def test_kserve_canary_predictor_under_a_list_gets_its_own_annotations():
    obj = isvc({"serving.kserve.io/deploymentMode": "Serverless"})
    obj["spec"]["canary"] = [{"predictor": {
        "annotations": {QUEUE + "memory-resource-limit": "256Mi"},
        "containers": [{"name": "kserve-container", "image": "m:2"}]}}]
    obj, res, _ = run(obj, {"knativeQueueProxy": {"cpu": "100m", "memory": "128Mi"}})
    assert not [r for r in res if r["severity"] == "error"], res
    assert obj["spec"]["predictor"]["annotations"][QUEUE + "memory-resource-limit"] == "128Mi"
    assert obj["spec"]["canary"][0]["predictor"]["annotations"] == {
        QUEUE + "memory-resource-limit": "256Mi", QUEUE + "cpu-resource-request": "100m",
        QUEUE + "cpu-resource-limit": "100m", QUEUE + "memory-resource-request": "256Mi"}
    assert "spec.canary[0].predictor.annotations['queue.sidecar.serving.knative.dev/" \
           "cpu-resource-request']" in [(r.get("field") or {}).get("path") for r in res]
