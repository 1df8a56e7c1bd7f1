"""Workloads the cluster never runs as written, found by hostile testing: each is an error
(the render fails) instead of a pinned verdict, and the item is left unchanged.

- a registered kind at an apiVersion the API server or the project's CRD does not serve
  (`apps/v1beta1` Deployment: "no matches for kind"; workloads.SERVED);
- a pod template without containers (validation.go validateContainers: "Required value");
- a KubeRay worker group or a JobSet replicated job without its template (their CRDs
  require it in every entry; a null one is pruned and then "Required value"), checked
  against the real API server with the vendored CRDs; an error in any pod spec of an item
  leaves the whole item unchanged, so every pod's verdict says it will not run pinned;
- a KServe predictor with other than exactly one implementation (KServe's webhook:
  component.go validateExactlyOneImplementation, predictor.go GetImplementations);
- an Argo Rollout with spec.workloadRef: its spec.template is not the pods' (Argo replaces
  it with the Deployment's), and labels or annotations there make Argo refuse the Rollout
  (rollout/templateref.go, RolloutSpec.EmptyTemplate);
- an item left unchanged for its YAML aliases: its verdict says it will not run pinned.
"""
from __future__ import annotations

import pytest
import yaml

from tests.test_verdict import GUARANTEED_4, config, deployment, render, verdicts

_C = [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]


def _errors(results: list) -> list:
    return [m for s, m in results if s == "error"]


@pytest.mark.parametrize("api_version, kind, want", [
    ("apps/v1beta1", "Deployment", "apps/v1"),
    ("apps/v1beta2", "StatefulSet", "apps/v1"),
    ("batch/v1beta1", "CronJob", "batch/v1"),
    ("v2", "Pod", "v1"),
    ("argoproj.io/v1", "Rollout", "argoproj.io/v1alpha1"),
    ("serving.kserve.io/v1alpha1", "InferenceService", "serving.kserve.io/v1beta1"),
])
def test_a_kind_at_a_version_nobody_serves_is_an_error_and_left_unchanged(api_version, kind,
                                                                          want):
    obj = deployment()
    obj["apiVersion"], obj["kind"] = api_version, kind
    code, results, items = render(config(), obj)
    assert code == 1
    assert _errors(results) == [
        f"apiVersion {api_version} is not one the API server serves {kind} at (only {want}), "
        f"so kubectl and the API server refuse it (\"no matches for kind\"); left unchanged: "
        f"write apiVersion: {want} (https://kubernetes.io/docs/reference/using-api/"
        f"deprecation-guide/)"]
    assert items == [obj] and verdicts(results) == []


def test_served_versions_of_a_group_whose_kinds_differ_are_accepted():
    obj = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
           "metadata": {"name": "m", "namespace": "ai"},
           "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"},
                                            "resources": GUARANTEED_4}}}}
    code, results, _ = render(config(), obj)
    assert not [m for m in _errors(results) if "apiVersion" in m], results


@pytest.mark.parametrize("containers", [[], None, "absent"])
def test_a_pod_template_without_containers_is_refused(containers):
    obj = deployment(spec={"hostIPC": False} if containers == "absent"
                     else {"containers": containers})
    code, results, items = render(config(), obj)
    assert code == 1
    assert _errors(results) == [
        "Required value: a pod needs at least one container in containers, so the API server "
        "refuses it (pkg/apis/core/validation/validation.go validateContainers)",
        "left unchanged because of the errors above"]
    assert items == [obj]


def test_an_lws_leader_template_without_containers_is_refused():
    obj = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l", "namespace": "ai"},
           "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {}},
                                             "workerTemplate": {"spec": {"containers": _C}}}}}
    code, results, _ = render(config(), obj)
    assert code == 1 and any("Required value: a pod needs at least one container" in m
                             for m in _errors(results))


_FRAMEWORKS = "sklearn, xgboost, tensorflow, pytorch, triton, onnx, huggingface, pmml, " \
              "lightgbm, paddle, model or containers"


@pytest.mark.parametrize("predictor, what", [
    ({"model": {"modelFormat": {"name": "sklearn"}, "resources": GUARANTEED_4},
      "containers": [{"name": "kserve-container", "image": "s:1", "resources": GUARANTEED_4}]},
     "more than one: model, containers (kserve-container)"),
    ({"sklearn": {"resources": GUARANTEED_4}, "xgboost": {"resources": GUARANTEED_4}},
     "more than one: sklearn, xgboost"),
    ({"minReplicas": 1}, "none of them"),
])
def test_a_kserve_predictor_without_exactly_one_implementation_is_refused(predictor, what):
    obj = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
           "metadata": {"name": "m", "namespace": "ai",
                        "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"}},
           "spec": {"predictor": predictor}}
    code, results, items = render(config(), obj)
    assert code == 1
    assert f"spec.predictor sets {what}: KServe's webhook refuses an InferenceService whose " \
           f"predictor has other than exactly one of {_FRAMEWORKS} (\"exactly one of [...] " \
           f"must be specified in PredictorSpec\", pkg/apis/serving/v1beta1/component.go " \
           f"validateExactlyOneImplementation), so no pod is made; keep exactly one" \
           in _errors(results)
    assert items == [obj]
    assert all(v.endswith("will not run pinned (see the errors)") for v in verdicts(results))


def _rollout(template: dict) -> dict:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "r", "namespace": "ai"},
            "spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "srv"}, "template": template}}


def test_a_rollouts_template_beside_workload_ref_is_not_tuned():
    ro = _rollout({"spec": {"containers": _C}})
    code, results, items = render(config(), ro, deployment())
    assert items[0] == ro                       # the Rollout as written
    assert len(verdicts(results)) == 1          # the Deployment's pod only
    assert "will not run pinned" not in verdicts(results)[0]


def test_labels_on_a_rollouts_template_beside_workload_ref_are_refused():
    ro = _rollout({"metadata": {"labels": {"app": "srv"}}, "spec": {"containers": _C}})
    code, results, items = render(config(), ro, deployment())
    assert code == 1 and items[0] == ro
    assert _errors(results)[0].startswith(
        "spec.template has labels or annotations beside spec.workloadRef: Argo Rollouts "
        "refuses the Rollout (\"template must be empty for workload reference rollout\"")


def test_an_item_left_unchanged_for_its_aliases_says_it_will_not_run_pinned():
    text = yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                           "items": [], "functionConfig": config()}, sort_keys=False)
    item = """- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: srv, namespace: ai}
  spec:
    template:
      spec:
        containers:
        - name: s
          image: s:1
          resources:
            requests: &r {cpu: "3", memory: 1Gi}
            limits: *r
"""
    from tests.helpers import run_fn
    p = run_fn([], text.replace("items: []\n", "items:\n" + item))
    out = yaml.safe_load(p.stdout)
    lines = [r["message"] for r in out["results"] if r["message"].startswith("verdict:")]
    assert p.returncode == 1 and lines and all(
        v.endswith("will not run pinned (see the errors)") for v in lines), lines


_HEAD = {"rayStartParams": {}, "template": {"spec": {"containers": [
    {"name": "ray-head", "image": "rayproject/ray:2.9.0", "resources": GUARANTEED_4}]}}}


def _ray_cluster(worker: dict) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ai"},
            "spec": {"headGroupSpec": _HEAD, "workerGroupSpecs": [
                {"groupName": "w", "minReplicas": 1, "maxReplicas": 2, "rayStartParams": {},
                 **worker}]}}


def _jobset(job: dict) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ai"},
            "spec": {"replicatedJobs": [
                {"name": "ok", "template": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": _C}}}}},
                {"name": "bad", **job}]}}


_MISSING = [
    (_ray_cluster({"template": None}), "spec.workerGroupSpecs[0].template",
     "missing: a RayCluster keeps its pod spec at spec.workerGroupSpecs[0].template.spec"),
    (_ray_cluster({}), "spec.workerGroupSpecs[0].template",
     "missing: a RayCluster keeps its pod spec at spec.workerGroupSpecs[0].template.spec"),
    (_jobset({"template": None}), "spec.replicatedJobs[1].template",
     "missing: a JobSet keeps its pod spec at "
     "spec.replicatedJobs[1].template.spec.template.spec"),
    (_jobset({"template": {"spec": {}}}), "spec.replicatedJobs[1].template.spec.template",
     "missing: a JobSet keeps its pod spec at "
     "spec.replicatedJobs[1].template.spec.template.spec"),
]


@pytest.mark.parametrize("obj, field, message", _MISSING)
def test_a_list_entry_without_its_pod_template_is_refused(obj, field, message):
    """Every entry of workerGroupSpecs / replicatedJobs needs its template (the CRDs'
    `required`); the item's other pods are judged but will not run pinned."""
    code, results, items = render(config(), obj)
    assert code == 1
    assert _errors(results) == [message, "left unchanged because of the errors above"]
    assert items == [obj]
    assert all(line.endswith("will not run pinned (see the errors)")
               for line in verdicts(results)) and verdicts(results)


@pytest.mark.parametrize("obj, field, message", _MISSING)
def test_the_api_server_refuses_a_list_entry_without_its_template(controlplane, obj, field,
                                                                  message):
    """The real API server with the vendored CRDs refuses each case above ("Required
    value" at the field krm-fn names); the same object with the template is accepted."""
    assert (field, "FieldValueRequired") in _refused(controlplane, obj)
    fixed = _ray_cluster({"template": _HEAD["template"]}) if obj["kind"] == "RayCluster" \
        else _jobset({"template": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": _C}}}}})
    assert _refused(controlplane, fixed) == []


def _refused(cp, obj: dict) -> list:
    """[(field, reason)] of the real API server's refusal of the RayCluster or JobSet `obj`
    (dry run, in a namespace of its own); [] when it accepts it."""
    group, version = obj["apiVersion"].split("/")
    plural = {"RayCluster": "rayclusters", "JobSet": "jobsets"}[obj["kind"]]
    ns = cp.pod_namespace("shapes")
    path = f"/apis/{group}/{version}/namespaces/{ns}/{plural}?dryRun=All"
    code, body = cp.request("POST", path, {**obj, "metadata": {"name": "x"}})
    if code == 201:
        return []
    assert code == 422, body
    return [(c.get("field"), c.get("reason")) for c in body["details"]["causes"]]


def _quoted(obj: dict, path: tuple) -> dict:
    import copy
    obj = copy.deepcopy(obj)
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = str(cur.get(path[-1], 1))
    return obj


_JOB = {"template": {"spec": {"parallelism": 1, "template": {"spec": {
    "restartPolicy": "Never", "containers": _C}}}}, "replicas": 2}
_RAY = {"template": _HEAD["template"], "replicas": 2, "minReplicas": 1, "maxReplicas": 4}
_COUNTS = [
    (_quoted(_jobset(_JOB), ("spec", "replicatedJobs", 1, "replicas")),
     "spec.replicatedJobs[1].replicas"),
    (_quoted(_jobset(_JOB), ("spec", "replicatedJobs", 1, "template", "spec", "parallelism")),
     "spec.replicatedJobs[1].template.spec.parallelism"),
    (_quoted(_ray_cluster(_RAY), ("spec", "workerGroupSpecs", 0, "replicas")),
     "spec.workerGroupSpecs[0].replicas"),
    (_quoted(_ray_cluster(_RAY), ("spec", "workerGroupSpecs", 0, "maxReplicas")),
     "spec.workerGroupSpecs[0].maxReplicas"),
]


@pytest.mark.parametrize("obj, field", _COUNTS)
def test_a_quoted_count_on_the_way_to_a_pod_spec_is_refused(obj, field):
    """Hostile testing: only spec.replicas/parallelism/completions were type-checked; a
    count inside a JobSet replicated job or a KubeRay worker group is int32 as well."""
    code, results, items = render(config(), obj)
    assert code == 1
    errors = _errors(results)
    value = {"replicas": "2", "parallelism": "1", "maxReplicas": "4"}[field.rsplit(".", 1)[1]]
    assert errors[0].startswith(f"\"{value}\" is quoted, which "
                                f"makes it a string to kubectl and the API server, but "
                                f"{field} is an integer (int32)"), errors
    assert errors[-1] == "left unchanged because of the errors above"


@pytest.mark.parametrize("obj, field", _COUNTS)
def test_the_api_server_refuses_a_quoted_count(controlplane, obj, field):
    assert (field, "FieldValueTypeInvalid") in _refused(controlplane, obj)
