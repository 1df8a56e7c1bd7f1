"""The placement rule (krm_fn/rules/placement.py) on its own: Knative pods get only what
Knative's feature flags let through; a required node affinity is checked against the pool.
The whole-render cases are tests/testdata/knative-placement, knative-affinity-flag and
node-affinity-excludes-pool."""
import copy

from krm_fn import changes, config
from krm_fn.pipeline import transform
from krm_fn.admission import knative
from krm_fn.pod import Edits, build_views
from krm_fn.results import Ref
from krm_fn.rules import PoolInfo, RuleContext, placement
from krm_fn.workloads import locations

POOL = PoolInfo("inference", {"krm-fn.dev/cpu-pinning": "true"}, 2, True, 60)
PINNED = {"key": "krm-fn.dev/cpu-pinning", "operator": "In", "values": ["true"]}


def service(spec_extra=None) -> dict:
    spec = {"containers": [{"image": "m:1"}], **(spec_extra or {})}
    return {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
            "metadata": {"name": "s"}, "spec": {"template": {"spec": spec}}}


def run(obj: dict, feats=None):
    """Apply only the placement rule; returns (object, results as dicts)."""
    cfg = config.load(None)
    edits = Edits(copy.deepcopy(obj))
    res: list = []
    ref = Ref(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
    for where in locations(obj):
        pod = build_views(edits.root, where, ref, edits, res)
        placement.apply(pod, RuleContext(cfg, POOL, frozenset(), knative_features=feats))
    return edits.root, [r.as_dict() for r in changes.results(res)]


def test_knative_pod_without_flags_gets_nothing_and_an_error_naming_the_flag():
    obj, res = run(service())
    assert obj == service()
    assert [(r["severity"], r["field"]["path"]) for r in res] == [
        ("error", "spec.template.spec.nodeSelector")]
    assert 'set kubernetes.podspec-nodeselector: "enabled" in ConfigMap ' \
           'knative-serving/config-features' in res[0]["message"]


def test_knative_pod_whose_affinity_already_requires_the_pool_needs_nothing():
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [PINNED]}]}}}
    feats = knative.features([{"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "config-features",
                                            "namespace": "knative-serving"},
                               "data": {knative.AFFINITY: "enabled"}}])
    obj, res = run(service({"affinity": aff}), feats)
    assert obj == service({"affinity": aff}) and res == []


def test_knative_pod_with_node_selector_flag_gets_the_node_selector():
    feats = knative.features([{"apiVersion": "operator.knative.dev/v1beta1",
                               "kind": "KnativeServing", "metadata": {"name": "ks"},
                               "spec": {"config": {"features": {
                                   knative.NODE_SELECTOR: "allowed"}}}}])
    obj, res = run(service(), feats)
    assert obj["spec"]["template"]["spec"]["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    assert res[0]["message"].endswith("(Knative allows nodeSelector: "
                                      "kubernetes.podspec-nodeselector is allowed in "
                                      "KnativeServing ks in the input)")


def test_deployment_whose_required_affinity_excludes_the_pool_is_an_error_of_the_verdict():
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [dict(PINNED, operator="NotIn")]}]}}}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"template": {"spec": {"affinity": aff,
                                          "containers": [{"name": "c", "image": "i"}]}}}}
    _, res = run(obj)                       # the rule alone: nothing to refuse
    assert [r for r in res if r["severity"] == "error"] == []
    res_ = {"limits": {"cpu": "2", "memory": "1Gi"}}
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = res_
    out = transform([copy.deepcopy(obj)], None)
    errors = [r for r in out.results if r.severity == "error"]
    assert [r.path for r in errors] == [
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        None]
    assert errors[0].message.startswith("the pod never schedules on node pool 'inference'")
    assert errors[1].message == "left unchanged because of the errors above"


def test_serverless_inferenceservice_error_names_both_raw_mode_spellings():
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "m", "namespace": "serving"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"},
                                             "resources": {"limits": {"cpu": "2",
                                                                      "memory": "1Gi"}}}}}}
    out = transform([isvc], None)
    (err,) = [r for r in out.results if r.path == "spec.predictor.nodeSelector"]
    assert err.severity == "error"
    assert err.message.endswith(
        "then krm-fn adds the nodeSelector; or, if this InferenceService is not Serverless, "
        "say so with annotation serving.kserve.io/deploymentMode: RawDeployment (KServe "
        "before 0.16) or Standard (0.16 and later) (knative/serving "
        "pkg/apis/config/features.go, pkg/apis/serving/fieldmask.go PodSpecMask; "
        "kserve/kserve pkg/constants/constants.go)")
