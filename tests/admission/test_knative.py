"""admission/knative.py: Knative Serving's feature flags (knative/serving
pkg/apis/config/features.go) and what its webhook refuses in a pod spec
(pkg/apis/serving/fieldmask.go PodSpecMask, k8s_validation.go)."""
from krm_fn.admission import knative
from krm_fn.admission.model import APP, ERROR, INIT, AdmittedPod, Container
from krm_fn.results import Ref

FIELDMASK = "knative/serving pkg/apis/serving/fieldmask.go (PodSpecMask)"


def config(data, namespace="knative-serving", labels=None):
    meta = {"name": "config-features", "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def refused(p, feats, spec=None):
    """knative.refused, checking that every finding is a webhook error citing the mask."""
    out = knative.refused(p, feats, spec)
    assert all(f.severity == ERROR and f.rule == "webhook" and FIELDMASK in f.message
               for f in out), out
    return out


def pod(**kw):
    return AdmittedPod(Ref("serving.knative.dev/v1", "Service", "s"), "spec.template.spec",
                       **kw)


def test_defaults_refuse_node_selector_affinity_tolerations_and_init_containers():
    f = knative.features([])
    for key in (knative.NODE_SELECTOR, knative.AFFINITY, knative.TOLERATIONS,
                knative.INIT_CONTAINERS, knative.SECURITY_CONTEXT):
        assert f[key] == knative.DISABLED and not f.allows(key), key
    assert f.source == "the defaults of knative-v1.23" and not f.in_input


def test_empty_dir_is_enabled_by_default_from_knative_1_8():
    assert knative.defaults((1, 8))[knative.EMPTY_DIR] == knative.ENABLED
    assert knative.defaults((1, 7))[knative.EMPTY_DIR] == knative.DISABLED


def test_config_features_values_are_case_insensitive_and_unknown_values_keep_the_default():
    f = knative.features([config({knative.NODE_SELECTOR: "Enabled",
                                  knative.AFFINITY: "allowed",
                                  knative.TOLERATIONS: "yes"})])
    assert f[knative.NODE_SELECTOR] == knative.ENABLED
    assert f[knative.AFFINITY] == knative.ALLOWED and f.allows(knative.AFFINITY)
    assert f[knative.TOLERATIONS] == knative.DISABLED
    assert f.in_input and f.source == "ConfigMap knative-serving/config-features in the input"


def test_the_release_label_gives_the_version_and_its_defaults():
    f = knative.features([config({}, labels={"app.kubernetes.io/version": "1.7.1"})])
    assert f.version == (1, 7) and f[knative.EMPTY_DIR] == knative.DISABLED


def test_a_flag_newer_than_the_release_is_refused_even_when_enabled():
    key = "kubernetes.podspec-topologyspreadconstraints"   # from knative-v1.4.0
    f = knative.features([config({key: "enabled"},
                                 labels={"app.kubernetes.io/version": "1.3.0"})])
    assert f[key] == knative.ENABLED and not f.allows(key)


def test_knative_eventings_config_features_is_not_read():
    f = knative.features([config({knative.NODE_SELECTOR: "enabled"},
                                 namespace="knative-eventing")])
    assert not f.in_input and f[knative.NODE_SELECTOR] == knative.DISABLED


def test_knative_operator_spec_config_features_is_read():
    ks = {"apiVersion": "operator.knative.dev/v1beta1", "kind": "KnativeServing",
          "metadata": {"name": "knative-serving", "namespace": "knative-serving"},
          "spec": {"config": {"features": {knative.NODE_SELECTOR: "enabled"}}}}
    f = knative.features([ks])
    assert f.allows(knative.NODE_SELECTOR)
    assert f.source == "KnativeServing knative-serving/knative-serving in the input"


def test_refused_node_selector_names_the_flag_and_the_configmap():
    f, = refused(pod(node_selector={"a": "b"}), knative.features([]))
    assert (f.severity, f.rule, f.path) == (ERROR, "webhook", "spec.template.spec.nodeSelector")
    assert ('set kubernetes.podspec-nodeselector: "enabled" in ConfigMap '
            'knative-serving/config-features') in f.message
    assert FIELDMASK in f.message


def test_refused_affinity_and_tolerations_unless_allowed():
    p = pod(affinity={"nodeAffinity": {}}, tolerations=({"key": "k"},))
    assert [f.path for f in refused(p, knative.features([]))] == [
        "spec.template.spec.affinity", "spec.template.spec.tolerations"]
    allowed = knative.features([config({knative.AFFINITY: "allowed",
                                        knative.TOLERATIONS: "enabled"})])
    assert refused(p, allowed) == ()


def test_init_containers_need_enabled_not_allowed():
    p = pod(containers=(Container("init", INIT), Container("app", APP)))
    f, = refused(p, knative.features([config({knative.INIT_CONTAINERS: "allowed"})]))
    assert f.path == "spec.template.spec.initContainers"
    assert "pod spec support for init-containers is off" in f.message
    assert refused(p, knative.features([config({knative.INIT_CONTAINERS:
                                                         "enabled"})])) == ()


def test_injected_init_containers_are_not_refused():
    p = pod(containers=(Container("istio-init", INIT, source="istio"),))
    assert refused(p, knative.features([])) == ()


def test_pod_level_resources_are_refused_by_every_release():
    f, = refused(pod(pod_requests={"cpu": 2}), knative.features([]))
    assert f.path == "spec.template.spec.resources"
    assert "no feature flag allows them" in f.message


def test_empty_dir_volume_refused_before_knative_1_8():
    spec = {"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]}
    old = knative.features([config({}, labels={"app.kubernetes.io/version": "1.7.0"})])
    f, = refused(pod(), old, spec)
    assert f.path == "spec.template.spec.volumes[0].emptyDir"
    assert "kubernetes.podspec-volumes-emptydir" in f.message
    assert refused(pod(), knative.features([]), spec) == ()


def test_secure_pod_defaults_lets_security_context_through_from_knative_1_9():
    on = {knative.SECURE_POD_DEFAULTS: "AllowRootBounded"}
    assert knative.features([config(on)]).allows(knative.SECURITY_CONTEXT)
    old = knative.features([config(on, labels={"app.kubernetes.io/version": "1.8.0"})])
    assert not old.allows(knative.SECURITY_CONTEXT)
    spec = {"securityContext": {"runAsNonRoot": True}}
    f, = refused(pod(), knative.features([]), spec)
    assert f.path == "spec.template.spec.securityContext"
    assert 'set kubernetes.podspec-securitycontext: "enabled"' in f.message
