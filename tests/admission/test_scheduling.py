"""admission/scheduling.py: nodeSelector and required node affinity against the pool's
labels, as the scheduler's NodeAffinity filter evaluates them
(k8s.io/component-helpers/scheduling/corev1/nodeaffinity)."""
from krm_fn.admission.model import DEPENDS, ERROR, AdmittedPod, NodeModel
from krm_fn.admission.scheduling import check, matches, requires, spread
from krm_fn.results import Ref

POOL = {"krm-fn.dev/cpu-pinning": "true", "cpus": "8"}
REQ = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
SOURCE = "k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go"


def expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} if isinstance(t, tuple) else t
                              for t in terms]}}}


def one(findings):
    """The only finding, which cites the scheduler's source."""
    assert len(findings) == 1, findings
    assert SOURCE in findings[0].message and findings[0].rule == "scheduling"
    return findings[0]


def test_node_selector_equal_to_the_pools_labels_matches_every_node():
    assert check({"krm-fn.dev/cpu-pinning": "true"}, None, POOL, "p", "spec") == ()


def test_node_selector_with_another_value_for_a_pool_label_never_schedules():
    f = one(check({"krm-fn.dev/cpu-pinning": "false"}, None, POOL, "p", "spec"))
    assert (f.severity, f.rule, f.path) == (ERROR, "scheduling", "spec.nodeSelector")
    assert "never schedules on node pool 'p'" in f.message
    assert ("nodeSelector krm-fn.dev/cpu-pinning=false (the pool's nodes have "
            "krm-fn.dev/cpu-pinning=true)") in f.message
    assert "krm-fn.dev/node-pool annotation" in f.message and SOURCE in f.message


def test_node_selector_on_a_label_the_pool_does_not_list_depends():
    f = one(check({"zone": "a"}, None, POOL, "p", "spec"))
    assert (f.severity, f.path) == (DEPENDS, "spec.nodeSelector")
    assert "nodeSelector zone=a: a label the pool does not list" in f.message


def test_terms_are_ored_one_matching_term_is_enough():
    aff = affinity((expr("krm-fn.dev/cpu-pinning", "In", "false"),),
                   (expr("krm-fn.dev/cpu-pinning", "In", "true"),))
    assert check({}, aff, POOL, "p") == ()


def test_expressions_of_a_term_are_anded():
    aff = affinity((expr("krm-fn.dev/cpu-pinning", "In", "true"), expr("cpus", "In", "4")),)
    f = one(check({}, aff, POOL, "p", "spec"))
    assert (f.severity, f.path) == (ERROR, f"spec.{REQ}")
    assert "term 0: cpus In [4] (the pool's nodes have cpus=8)" in f.message


def test_not_in_with_the_pools_value_never_schedules():
    f = one(check({}, affinity((expr("krm-fn.dev/cpu-pinning", "NotIn", "true"),)), POOL, "p"))
    assert f.severity == ERROR
    assert "term 0: krm-fn.dev/cpu-pinning NotIn [true]" in f.message


def test_not_in_on_an_unknown_label_depends():
    f = one(check({}, affinity((expr("gpu", "NotIn", "a100"),)), POOL, "p"))
    assert f.severity == DEPENDS
    assert "term 0: gpu NotIn [a100] on label gpu, which the pool does not list" in f.message


def test_exists_on_a_pool_label_matches_and_does_not_exist_never_does():
    assert check({}, affinity((expr("cpus", "Exists"),)), POOL, "p") == ()
    f = one(check({}, affinity((expr("cpus", "DoesNotExist"),)), POOL, "p"))
    assert f.severity == ERROR and "term 0: cpus DoesNotExist" in f.message


def test_gt_and_lt_compare_the_label_as_an_integer():
    assert check({}, affinity((expr("cpus", "Gt", "4"),)), POOL, "p") == ()
    assert check({}, affinity((expr("cpus", "Lt", "9"),)), POOL, "p") == ()
    assert one(check({}, affinity((expr("cpus", "Lt", "8"),)), POOL, "p")).severity == ERROR


def test_gt_on_a_label_that_is_not_an_integer_never_matches():
    f = one(check({}, affinity((expr("krm-fn.dev/cpu-pinning", "Gt", "0"),)), POOL, "p"))
    assert f.severity == ERROR
    assert "krm-fn.dev/cpu-pinning Gt [0] (the pool's nodes have krm-fn.dev/cpu-pinning=true)" \
        in f.message


def test_an_empty_term_matches_no_node():
    f = one(check({}, affinity({}), POOL, "p"))
    assert f.severity == ERROR and "term 0: an empty term matches no node" in f.message


def test_an_invalid_expression_is_refused_by_the_api_server():
    f = one(check({}, affinity((expr("cpus", "In"),)), POOL, "p"))
    assert f.severity == ERROR
    assert "operator In needs at least one value (the API server refuses the pod)" in f.message


def test_match_fields_on_the_node_name_depends():
    aff = affinity({"matchFields": [expr("metadata.name", "In", "node-1")]})
    f = one(check({}, aff, POOL, "p"))
    assert f.severity == DEPENDS
    assert "matchFields metadata.name In node-1: which node that is cannot be told" in f.message


def test_node_selector_and_affinity_are_anded():
    aff = affinity((expr("cpus", "Exists"),))
    assert one(check({"cpus": "4"}, aff, POOL, "p")).severity == ERROR


def test_matches_reads_the_admitted_pod_and_the_node_model():
    pod = AdmittedPod(Ref("apps/v1", "Deployment", "d"), "spec.template.spec",
                      node_selector={"krm-fn.dev/cpu-pinning": "true"},
                      affinity=affinity((expr("cpus", "Lt", "8"),)))
    node = NodeModel("inference", POOL, {}, (1, 35), ())
    f = one(matches(pod, node))
    assert (f.severity, f.path) == (ERROR, f"spec.template.spec.{REQ}")
    assert "never schedules on node pool 'inference'" in f.message


def test_requires_holds_only_when_every_term_requires_the_labels():
    want = {"krm-fn.dev/cpu-pinning": "true"}
    assert requires(affinity((expr("krm-fn.dev/cpu-pinning", "In", "true"),)), want)
    assert not requires(affinity((expr("krm-fn.dev/cpu-pinning", "In", "true"),),
                                 (expr("zone", "In", "a"),)), want)
    assert not requires(None, want)


def test_labels_the_kubelet_registers_exist_on_every_node_whatever_their_value():
    # pkg/kubelet/kubelet_node_status.go initialNode: every Node is registered with
    # kubernetes.io/hostname, kubernetes.io/arch and the beta twins, values unknown here
    for key in ("kubernetes.io/hostname", "kubernetes.io/arch", "beta.kubernetes.io/arch"):
        assert check({}, affinity((expr(key, "Exists"),)), POOL, "p") == ()
        f = one(check({}, affinity((expr(key, "DoesNotExist"),)), POOL, "p"))
        assert f.severity == ERROR and "never schedules on node pool 'p'" in f.message
        assert (f"term 0: {key} DoesNotExist (the kubelet registers every node with label "
                f"{key})") in f.message


def test_values_of_the_labels_the_kubelet_registers_stay_unknown():
    for e in (expr("kubernetes.io/hostname", "In", "node-1"),
              expr("kubernetes.io/arch", "NotIn", "arm64")):
        assert one(check({}, affinity((e,)), POOL, "p")).severity == DEPENDS
    assert one(check({"kubernetes.io/hostname": "node-1"}, None, POOL, "p")).severity == DEPENDS


def _spread(key, when="DoNotSchedule"):
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "a"}}}


def test_a_hard_spread_over_a_label_the_pool_does_not_list_depends():
    # podtopologyspread filtering.go: a node without the constraint's topologyKey is
    # refused ("missing required label")
    node = NodeModel("inference", POOL, {}, (1, 35), ())
    spec = {"topologySpreadConstraints": [_spread("topology.kubernetes.io/zone")]}
    f = one_spread(spread(spec, node, "spec"))
    assert (f.severity, f.path) == (DEPENDS, "spec.topologySpreadConstraints[0].topologyKey")
    assert "only on the nodes that carry label topology.kubernetes.io/zone" in f.message
    assert "(missing required label)" in f.message


def test_soft_spreads_and_spreads_over_known_labels_say_nothing():
    node = NodeModel("inference", POOL, {}, (1, 35), ())
    spec = {"topologySpreadConstraints": [
        _spread("topology.kubernetes.io/zone", "ScheduleAnyway"), _spread("cpus"),
        _spread("kubernetes.io/hostname"), _spread("kubernetes.io/arch")]}
    assert spread(spec, node, "spec") == ()


def one_spread(findings):
    assert len(findings) == 1, findings
    assert "podtopologyspread/filtering.go" in findings[0].message
    return findings[0]
