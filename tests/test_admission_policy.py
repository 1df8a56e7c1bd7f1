"""spec.output.admissionPolicy (krm_fn/guard): the config, the label krm-fn adds to each
tuned pod template, and the ValidatingAdmissionPolicy and binding it emits, offline. The
real API server runs them in tests/test_admission_policy_apiserver.py."""
from __future__ import annotations

import pytest

from krm_fn import config
from krm_fn.config.records import ADMISSION_POLICY_MIN_VERSION
from krm_fn.config.values import ConfigError
from krm_fn.guard import policy, targets
from krm_fn.pipeline import transform
from krm_fn.results import ERROR, Ref


def _config(**guard) -> dict:
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "pin"},
            "spec": {"kubernetesVersion": "1.35",
                     "output": {"admissionPolicy": {"enabled": True, **guard}}}}


def _deployment(name: str = "llm", cpu: str = "4", annotations: dict | None = None,
                template_labels: dict | None = None) -> dict:
    md = {"name": name, "namespace": "serving"}
    if annotations:
        md["annotations"] = annotations
    tmd = {"labels": template_labels if template_labels is not None else {"app": name}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md,
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": tmd,
                "spec": {"containers": [{
                    "name": "server", "image": "example.com/server:1",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"},
                                  "limits": {"cpu": cpu, "memory": "1Gi"}}}]}}}}


def _emitted(out, kind: str) -> dict:
    (obj,) = [o for o in out.emitted if o["kind"] == kind]
    return obj


def _variables(vap: dict) -> dict:
    return {v["name"]: v["expression"] for v in vap["spec"]["variables"]}


# --- config -----------------------------------------------------------------------------

def test_the_option_is_off_by_default_and_warns_and_audits_when_on():
    conf = config.load(None).output.admissionPolicy
    assert (conf.enabled, conf.name, conf.validationActions, conf.namespaces,
            conf.namespaceLabels) == (False, "krm-fn-guard", ["Warn", "Audit"], [], {})


@pytest.mark.parametrize("guard,path,says", [
    ({"validationActions": ["Deny", "Warn"]}, "spec.output.admissionPolicy.validationActions",
     "must not hold both Deny and Warn"),
    ({"validationActions": []}, "spec.output.admissionPolicy.validationActions",
     "must list at least one action"),
    ({"validationActions": ["Block"]}, "spec.output.admissionPolicy.validationActions[0]",
     "must be one of Deny, Warn, Audit"),
    ({"name": "Guard!"}, "spec.output.admissionPolicy.name", "DNS subdomain"),
    ({"namespaces": ["Serving"]}, "spec.output.admissionPolicy.namespaces[0]",
     "namespace name"),
    ({"namespaces": ["serving"], "namespaceLabels": {"team": "ml"}},
     "spec.output.admissionPolicy.namespaceLabels", "not both"),
])
def test_bad_settings_are_config_errors_naming_the_field(guard, path, says):
    with pytest.raises(ConfigError) as e:
        config.load(_config(**guard))
    assert path in str(e.value) and says in str(e.value)


def test_a_version_without_validating_admission_policy_v1_is_refused():
    conf = config.load(_config()).output.admissionPolicy
    assert ADMISSION_POLICY_MIN_VERSION == (1, 30)
    conf.check("spec.output.admissionPolicy", (1, 30))
    with pytest.raises(ConfigError) as e:
        conf.check("spec.output.admissionPolicy", (1, 29))
    assert str(e.value).endswith(
        "spec.output.admissionPolicy.enabled: needs kubernetesVersion 1.30 or later: "
        "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is served from 1.30 (GA), "
        "found 1.29")


# --- the label --------------------------------------------------------------------------

def test_the_label_value_is_the_name_and_a_hash_of_the_pod_template():
    ref = Ref("apps/v1", "Deployment", "llm", "serving")
    assert targets.label_value(ref, 0) == "llm-9345377516"
    assert targets.label_value(ref, 1) != targets.label_value(ref, 0)
    assert targets.label_value(ref._replace(namespace="other"), 0) != "llm-9345377516"
    long = targets.label_value(ref._replace(name="a" * 60 + ".b"), 0)
    assert len(long) == 63 and long.startswith("a" * 52 + "-")


def test_a_render_that_changes_what_is_checked_changes_the_label():
    ref = Ref("apps/v1", "Deployment", "llm", "serving")
    t = targets.Target("", "", "inference", {"server": "4"}, {"server": {"OMP_NUM_THREADS": "4"}},
                       {"krm-fn.dev/cpu-pinning": "true"}, 2)
    assert targets.label_value(ref, 0, t) == targets.label_value(ref, 0, t._replace(pool="x"))
    changed = [t._replace(cpus={"server": "8"}), t._replace(env={}), t._replace(smt=1),
               t._replace(node_selector={"pool": "a"})]
    assert len({targets.label_value(ref, 0, x) for x in [t, *changed]}) == 5


def test_tuned_pod_templates_get_the_label_once():
    out = transform([_deployment()], _config(), keep_tuned=True)
    (change,) = [c for c in out.changes[0] if c.rule == targets.RULE]
    assert change.path == ("spec", "template", "metadata", "labels", targets.LABEL)
    assert change.new == "llm-8bdc0605ad"
    again = transform([out.tuned[0]], _config())
    assert again.changes == {}
    assert _emitted(again, "ValidatingAdmissionPolicy") == \
        _emitted(out, "ValidatingAdmissionPolicy")


def test_a_workload_that_opts_out_is_neither_labelled_nor_checked():
    out = transform([_deployment(annotations={targets.OPT_OUT: "skip"}), _deployment("b")],
                    _config())
    assert [c for c in out.changes[0] if c.rule == targets.RULE] == []
    assert any(r.message == "not checked by the admission policy krm-fn-guard: it opts out "
                            "(krm-fn.dev/admission-policy: skip)" for r in out.results)
    vap = _emitted(out, "ValidatingAdmissionPolicy")
    assert vap["spec"]["matchConstraints"]["objectSelector"] == {"matchExpressions": [
        {"key": "krm-fn.dev/guard", "operator": "In",
         "values": ["b-32e619db37"]}]}


def test_nothing_is_emitted_without_a_pod_template_to_check():
    out = transform([_deployment(annotations={targets.OPT_OUT: "skip"})], _config())
    assert [o["kind"] for o in out.emitted] == ["ConfigMap"]
    assert any(r.message.startswith("spec.output.admissionPolicy: no tuned pod template")
               for r in out.results)


def test_the_option_off_changes_nothing_of_the_render():
    off = transform([_deployment()], None)
    assert not any(c.rule == targets.RULE for c in off.changes[0])
    assert [o["kind"] for o in off.emitted] == ["ConfigMap"]


def test_an_item_left_unchanged_is_not_in_the_policy():
    bad = _deployment("bad")
    del bad["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
    del bad["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"]
    out = transform([bad, _deployment()], _config())
    assert any(r.severity == ERROR for r in out.results)
    assert 0 not in out.changes
    vap = _emitted(out, "ValidatingAdmissionPolicy")
    assert vap["spec"]["matchConstraints"]["objectSelector"]["matchExpressions"][0][
        "values"] == ["llm-8bdc0605ad"]


# --- the policy and the binding ---------------------------------------------------------

def test_the_policy_holds_what_the_render_left():
    out = transform([_deployment()], _config(validationActions=["Deny"]))
    vap = _emitted(out, "ValidatingAdmissionPolicy")
    assert vap["metadata"] == {"name": "krm-fn-guard", "labels": {
        "app.kubernetes.io/managed-by": "krm-fn", "krm-fn.dev/node-pool": "inference"}}
    assert vap["spec"]["failurePolicy"] == "Fail"
    assert vap["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
         "resources": ["pods"]}]
    v = _variables(vap)
    assert list(v) == ["guard", "workload", "cpus", "smt", "unequal", "fractional",
                       "threadEnv", "threadsChanged", "nodeSelector", "selectorMissing",
                       "podLevel", "podResources"]
    assert v["guard"] == "object.metadata.labels['krm-fn.dev/guard']"
    assert v["workload"] == ("{'llm-8bdc0605ad': 'Deployment serving/llm (node pool "
                             "inference)'}[variables.guard]")
    assert v["cpus"] == "{'llm-8bdc0605ad': {'server': '4'}}[variables.guard]"
    assert v["smt"] == "{'llm-8bdc0605ad': 2}[variables.guard]"
    env = ", ".join(f"'{n}': '4'" for n in config.DEFAULT_THREAD_ENV)
    assert v["threadEnv"] == ("{'llm-8bdc0605ad': {'server': {" + env + "}}}"
                              "[?variables.guard].orValue({})")
    assert v["nodeSelector"] == ("{'llm-8bdc0605ad': {'krm-fn.dev/cpu-pinning': 'true'}}"
                                 "[?variables.guard].orValue({})")
    assert v["podLevel"] == "{'llm-8bdc0605ad': 1}[?variables.guard].orValue(0)"
    assert [x["expression"] for x in vap["spec"]["validations"]] == [
        "size(variables.unequal) == 0", "size(variables.fractional) == 0",
        "size(variables.threadsChanged) == 0", "size(variables.selectorMissing) == 0",
        "size(variables.podResources) == 0"]
    vapb = _emitted(out, "ValidatingAdmissionPolicyBinding")
    assert vapb["spec"] == {"policyName": "krm-fn-guard", "validationActions": ["Deny"]}


def test_the_binding_takes_namespaces_or_namespace_labels():
    ns = _emitted(transform([_deployment()], _config(namespaces=["serving", "batch"])),
                  "ValidatingAdmissionPolicyBinding")
    assert ns["spec"]["matchResources"] == {"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In",
         "values": ["serving", "batch"]}]}}
    labels = _emitted(transform([_deployment()], _config(namespaceLabels={"team": "ml"})),
                      "ValidatingAdmissionPolicyBinding")
    assert labels["spec"]["matchResources"] == {"namespaceSelector": {
        "matchLabels": {"team": "ml"}}}
    assert labels["spec"]["validationActions"] == ["Warn", "Audit"]


def test_without_smt_the_multiple_is_one():
    cfg = _config()
    cfg["spec"]["nodePools"] = [{"name": "p", "topology": {"threadsPerCore": 1}}]
    v = _variables(_emitted(transform([_deployment(cpu="3")], cfg),
                            "ValidatingAdmissionPolicy"))
    assert v["smt"] == "{'llm-3ed692d710': 1}[variables.guard]"
    assert v["cpus"] == "{'llm-3ed692d710': {'server': '3'}}[variables.guard]"


@pytest.mark.parametrize("text,literal", [
    ("plain", "'plain'"), ("it's", "'it\\'s'"), ("a\\b", "'a\\\\b'"), ("x\ny", "'x\\u000ay'"),
])
def test_cel_strings_are_escaped(text, literal):
    assert policy.cel_str(text) == literal


def test_cel_values_are_homogeneous_literals():
    assert policy.cel_value({"a": {"b": "1"}, "c": {"d": "2"}}) == \
        "{'a': {'b': '1'}, 'c': {'d': '2'}}"
    assert policy.cel_value({"a": 2}) == "{'a': 2}"
    with pytest.raises(TypeError):
        policy.cel_value({"a": True})


def test_thread_variables_are_the_last_literal_value_of_each_name():
    found = targets._thread_env([
        {"name": "OMP_NUM_THREADS", "value": "8"}, {"name": "OMP_NUM_THREADS", "value": "4"},
        {"name": "GOMAXPROCS", "value": "4"},
        {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "OTHER", "value": "1"}], frozenset({"OMP_NUM_THREADS", "GOMAXPROCS"}))
    assert found == {"OMP_NUM_THREADS": "4"}


def test_the_policy_left_in_a_kpt_package_after_removal_is_stale():
    on = transform([_deployment()], _config())
    kept = [_emitted(on, "ValidatingAdmissionPolicy"),
            _emitted(on, "ValidatingAdmissionPolicyBinding")]
    off = transform([_deployment(), *kept], None)
    stale = [r for r in off.results if r.message.startswith("stale node plan")]
    assert [(r.severity, r.ref.kind) for r in stale] == [
        (ERROR, "ValidatingAdmissionPolicy"), (ERROR, "ValidatingAdmissionPolicyBinding")]
    again = transform([_deployment(), *kept], _config())
    assert not [r for r in again.results if r.message.startswith("stale node plan")]
    assert not again.emitted[1:] and len(again.regenerated) == 2


def test_kpt_gets_a_file_for_each_object():
    out = transform([_deployment()], _config(), set_path=True)
    assert [o["metadata"]["annotations"]["internal.config.kubernetes.io/path"]
            for o in out.emitted[1:]] == ["admission-policy/krm-fn-guard-policy.yaml",
                                          "admission-policy/krm-fn-guard-binding.yaml"]


def test_a_policy_too_long_for_the_cel_parser_is_an_error_not_emitted(monkeypatch):
    monkeypatch.setattr(policy, "MAX_EXPRESSION", 300)
    out = transform([_deployment()], _config())
    assert [o["kind"] for o in out.emitted] == ["ConfigMap"]
    (err,) = [r for r in out.results if r.severity == ERROR]
    assert err.message.startswith(
        "spec.output.admissionPolicy: the admission policy's unequal, fractional, threadEnv, "
        "threadsChanged, podResources would be longer than the 300 characters the API server's CEL parser takes (1 pod "
        "templates)")


def test_the_default_limit_leaves_room_for_a_few_hundred_pod_templates():
    t = targets.Target("x" * 52 + "-0123456789", "Deployment serving/" + "x" * 63,
                       "inference", {"server": "64"},
                       {"server": {n: "64" for n in config.DEFAULT_THREAD_ENV}},
                       {"krm-fn.dev/cpu-pinning": "true"}, 2)
    many = [t._replace(value=f"{i:052d}-0123456789") for i in range(200)]
    assert policy.too_long(policy.policy("g", many, {}, {})) == []


def test_pod_templates_sharing_their_labels_are_not_checked():
    """A KServe predictor and its workerSpec take their pods' labels from the same
    `spec.predictor.labels`: one label cannot tell their pods apart."""
    from tests.helpers import TESTDATA, config_section, run_fn
    import yaml
    case = TESTDATA / "kserve-isvc-components"
    cfg = yaml.safe_load((case / "config.yaml").read_text())
    cfg["data"]["admissionPolicy"] = "true"           # a ConfigMap config: its flat key
    text = (case / "input.yaml").read_text() + config_section(yaml.safe_dump(cfg))
    out = yaml.safe_load(run_fn([], text).stdout)
    mine = [r for r in out["results"] if (r.get("tags") or {}).get("rule") == targets.RULE]
    assert [r["field"]["path"] for r in mine if "field" in r] == [
        "spec.transformer.labels['krm-fn.dev/guard']",
        "spec.explainer.labels['krm-fn.dev/guard']",
        "spec.canary[0].predictor.labels['krm-fn.dev/guard']"]     # no workerSpec: its own
    assert sum(r["message"].startswith(
        "not checked by the admission policy krm-fn-guard: its pods take their labels from "
        "the same place as another pod template of the workload (spec.predictor)")
        for r in mine) == 2


def test_a_predictor_without_a_worker_spec_is_checked():
    """The place a workerSpec would take its pods' labels from is the predictor's too, but a
    predictor without a workerSpec shares it with nothing: the InferenceService is labelled
    and in the policy (the README's example; it was left out, with an info saying its
    labels were shared)."""
    import yaml
    from tests.helpers import ROOT
    kpt = ROOT / "overlays" / "kpt"
    cfg = yaml.safe_load((kpt / "pin.yaml").read_text())
    cfg["spec"]["output"] = {"admissionPolicy": {"enabled": True}}
    (isvc,) = [d for d in yaml.safe_load_all((kpt / "inferenceservice.yaml").read_text())
               if d and d.get("kind") == "InferenceService"]
    assert "workerSpec" not in isvc["spec"]["predictor"]
    storage = yaml.safe_load((kpt / "storage-container.yaml").read_text())
    out = transform([isvc, storage], cfg, keep_tuned=True)
    labels = out.tuned[0]["spec"]["predictor"]["labels"]
    assert labels[targets.LABEL].startswith("qwen-chat-")
    vap = _emitted(out, "ValidatingAdmissionPolicy")
    assert vap["spec"]["matchConstraints"]["objectSelector"]["matchExpressions"] == [
        {"key": targets.LABEL, "operator": "In", "values": [labels[targets.LABEL]]}]
    assert not [r for r in out.results if "not checked" in r.message]


def test_pod_level_resources_are_checked_as_the_pools_kubelet_treats_them():
    """Pod-level spec.resources added to a pod the render left without them: the static
    CPU Manager skips the pod (1) unless PodLevelResourceManagers is on, then they must be
    Guaranteed (2); a template that sets them itself (the verdict judged it) is not
    checked for them, and no target to check leaves the variables out."""
    def pod_level(cfg, *items) -> str | None:
        vap = _emitted(transform(list(items), cfg), "ValidatingAdmissionPolicy")
        return _variables(vap).get("podLevel")
    assert pod_level(_config(), _deployment()) == \
        "{'llm-8bdc0605ad': 1}[?variables.guard].orValue(0)"
    gated = _config()
    gated["spec"]["kubernetesVersion"] = "1.37"
    gated["spec"]["output"]["baseline"] = {"featureGates": {"PodLevelResourceManagers": True}}
    assert pod_level(gated, _deployment()).endswith(": 2}[?variables.guard].orValue(0)")
    own = _deployment()
    own["spec"]["template"]["spec"]["resources"] = {"limits": {"cpu": "4", "memory": "1Gi"}}
    lowered = _config()
    lowered["spec"]["verdict"] = {"onFailure": "warning"}
    assert pod_level(lowered, own) is None
    both = pod_level(lowered, own, _deployment("b"))
    assert both.startswith("{'b-") and both.endswith(": 1}[?variables.guard].orValue(0)")


def test_a_pod_placed_through_node_affinity_is_checked_for_it_not_for_a_selector():
    """Knative allowing affinity but not nodeSelector (golden case knative-affinity-flag):
    krm-fn reaches the pool through every required node affinity term, so the policy
    checks those terms; a nodeSelector the rendered pods never carry would refuse them."""
    from tests.helpers import TESTDATA, case_input, run_fn
    import yaml
    text = case_input("knative-affinity-flag").replace(
        "  spec:\n    workloads:", "  spec:\n    output: {admissionPolicy: {enabled: true}}\n"
                                   "    workloads:", 1)
    assert "admissionPolicy" in text and (TESTDATA / "knative-affinity-flag").is_dir()
    out = yaml.safe_load(run_fn([], text).stdout)
    (vap,) = [o for o in out["items"] if o["kind"] == "ValidatingAdmissionPolicy"]
    v = _variables(vap)
    assert "nodeSelector" not in v and "selectorMissing" not in v
    assert v["nodeAffinity"].endswith("{'krm-fn.dev/cpu-pinning': 'true'}}"
                                      "[?variables.guard].orValue({})")
    assert v["nodeAffinity"].count("{'krm-fn.dev/cpu-pinning': 'true'}") == 2
    assert "size(variables.affinityMissing) == 0" in [
        x["expression"] for x in vap["spec"]["validations"]]


def test_the_placement_is_read_from_the_rendered_pod_spec():
    pool = {"pool": "a", "zone": "z"}
    terms = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                     "values": ["z"]}]}] * 2}}}}
    assert targets.placement({"nodeSelector": {"pool": "a"}, **terms}, pool) == \
        ({"pool": "a"}, {"zone": "z"})
    assert targets.placement({"nodeSelector": {"pool": "b"}}, pool) == ({}, {})


def test_kpt_file_names_fit_a_file_system_for_the_longest_policy_name():
    """An object name may have 253 characters; a file name at most 255 bytes (NAME_MAX of
    Linux file systems), so `<name>-binding.yaml` would not be written by kpt."""
    name = ("a" * 62 + ".") * 4 + "b"
    assert len(name) == 253
    out = transform([_deployment()], _config(name=name), set_path=True)
    paths = [o["metadata"]["annotations"]["internal.config.kubernetes.io/path"]
             for o in out.emitted[1:]]
    assert [o["metadata"]["name"] for o in out.emitted[1:]] == [name, name]
    assert len(set(paths)) == 2 and all(p.startswith("admission-policy/") for p in paths)
    assert all(len(part.encode()) <= 255 for p in paths for part in p.split("/")), paths
    assert paths == [o["metadata"]["annotations"]["internal.config.kubernetes.io/path"]
                     for o in transform([_deployment()], _config(name=name),
                                        set_path=True).emitted[1:]]
