"""The Change record (krm_fn/changes.py) and what is derived from it: the YAML layer's ops,
the KRM results, validate mode's per-field errors and the --report "after" column."""
from krm_fn import changes, pipeline
from krm_fn.changes import Change
from krm_fn.pod import Edits
from krm_fn.results import INFO, WARNING, Ref, Result

REF = Ref("v1", "Pod", "p", "ml")
FC = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "metadata": {"name": "t"},
      "spec": {"nodePools": [{"name": "small",
                              "topology": {"sockets": 1, "coresPerSocket": 8,
                                           "threadsPerCore": 1}}]}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
       "spec": {"containers": [{"name": "s", "image": "s:1",
                                "resources": {"requests": {"cpu": "1500m",
                                                           "memory": "1Gi"}}}]}}


def test_edits_set_records_old_and_new_and_the_rule():
    root = {"spec": {"containers": [{"name": "s", "env": []}]}}
    edits = Edits(root, index=3, ref=REF)
    edits.rule = "threads"
    entry = {"name": "OMP_NUM_THREADS", "value": "2"}
    c1 = edits.set(("spec", "containers", 0, "env", 0), entry)
    c2 = edits.set(("spec", "containers", 0, "env", 0, "value"), "4", "why", WARNING)
    assert root["spec"]["containers"][0]["env"] == [{"name": "OMP_NUM_THREADS", "value": "4"}]
    assert (c1.index, c1.ref, c1.old, c1.rule, c1.message) == (3, REF, None, "threads", None)
    assert (c2.old, c2.new, c2.severity, c2.message) == ("2", "4", WARNING, "why")
    assert edits.changes == [c1, c2]
    assert changes.ops(edits.changes) == [(c1.path, entry), (c2.path, "4")]


def test_results_derive_from_changes_and_keep_plain_results():
    c = Change(0, REF, ("spec", "containers", 0, "resources", "limits", "cpu"), "1500m", "2",
               "resources", INFO, "cpu limit set")
    silent = Change(0, REF, ("spec", "x"), None, "y", "threads")
    warn = Result("advice", WARNING, REF)
    out = changes.results([c, silent, warn], {"path": "a.yaml"})
    assert [r.message for r in out] == ["cpu limit set", "advice"]
    r = out[0]
    assert (r.path, r.current, r.proposed, r.file) == (
        "spec.containers[0].resources.limits.cpu", "1500m", "2", {"path": "a.yaml"})
    assert out[1].file == {"path": "a.yaml"}


def test_net_is_per_field_from_the_input_to_the_last_write():
    item = {"spec": {"a": "1", "b": "2"}}
    cs = [Change(0, REF, ("spec", "a"), "1", "5"), Change(0, REF, ("spec", "b"), "2", "3"),
          Change(0, REF, ("spec", "a"), "5", "6"), Change(0, REF, ("spec", "b"), "3", "2")]
    assert [(p, old, new) for p, old, new, _ in changes.net(item, cs)] == [
        (("spec", "a"), "1", "6")]


def test_transform_output_changes_and_ops_agree():
    out = pipeline.transform([POD], FC, keep_tuned=True)
    assert not out.has_errors
    cs = out.changes[0]
    assert all(c.index == 0 and c.ref == REF and c.rule for c in cs)
    assert out.ops == {0: changes.ops(cs)}
    tuned = out.tuned[0]
    assert tuned["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "2"
    assert POD["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1500m",
                                                                      "memory": "1Gi"}}
    # without keep_tuned nothing is kept
    assert pipeline.transform([POD], FC).tuned is None


def test_validate_errors_come_from_the_changes():
    fc = {**FC, "spec": {**FC["spec"], "mode": "validate"}}
    out = pipeline.transform([POD], fc)
    assert out.mode == "validate" and not out.changes and not out.emitted
    errors = {r.path: r for r in out.results if r.severity == "error" and r.path}
    r = errors["spec.containers[0].resources.requests.cpu"]
    assert (r.current, r.proposed) == ("1500m", "2")
    assert r.message.startswith('not pinned: would change from "1500m" to "2"')


def test_results_carry_the_rule_as_tags():
    c = Change(0, REF, ("spec", "a"), None, "1", "resources", INFO, "set")
    assert changes.result(c).as_dict()["tags"] == {"rule": "resources"}
    assert "tags" not in changes.result(Change(0, REF, ("spec", "a"), None, "1", None, INFO,
                                                "set")).as_dict()
    out = pipeline.transform([POD], FC)
    by_rule = {r.path: dict(r.tags).get("rule") for r in out.results if r.path}
    assert by_rule["spec.containers[0].resources.limits.cpu"] == "resources"
    assert by_rule["spec.nodeSelector['krm-fn.dev/cpu-pinning']"] == "placement"
    # results that no rule made (the pool summary, the emitted kubelet config) have none
    assert all(not r.tags for r in out.results if r.ref is None or r.ref.kind != "Pod")


def test_results_a_rule_appends_directly_are_tagged():
    from krm_fn.pod import Findings
    edits = Edits({}, ref=REF)
    found = Findings(edits)
    found.append(Result("before any rule", INFO, REF))
    edits.rule = "threads"
    found.append(Result("from threads", INFO, REF))
    assert [r.tags for r in found] == [(), (("rule", "threads"),)]


def test_validate_errors_carry_the_rule_of_the_change():
    fc = {**FC, "spec": {**FC["spec"], "mode": "validate"}}
    out = pipeline.transform([POD], fc)
    r = next(r for r in out.results if r.path == "spec.containers[0].resources.requests.cpu")
    assert r.as_dict()["tags"] == {"rule": "resources"}


CPU = ("spec", "containers", 0, "resources", "limits", "cpu")


def test_a_lower_cpu_is_a_warning_a_higher_one_stays_info():
    def sev(path, old, new, severity=INFO):
        return changes.results([Change(0, REF, path, old, new, "resources", severity,
                                       "m")])[0].severity
    assert sev(CPU, "1500m", "1") == WARNING
    assert sev(CPU[:-2] + ("requests", "cpu"), "2", "1900m") == WARNING
    assert sev(CPU, "1500m", "2") == INFO
    assert sev(CPU, "2", "2000m") == INFO           # the same amount
    assert sev(CPU, None, "1") == INFO               # set where there was none
    assert sev(CPU, "x", "1") == INFO                # an old value that does not parse
    assert sev(CPU[:-1] + ("memory",), "2Gi", "1Gi") == INFO
    assert sev(("spec", "cpu"), "2", "1") == INFO    # not a container's resources
    assert sev(CPU, "2", "1", "error") == "error"    # a severity above info stays


def test_every_info_about_a_shared_object_is_a_warning():
    storage = Ref("serving.kserve.io/v1alpha1", "ClusterStorageContainer", "default")
    isvc_config = Ref("v1", "ConfigMap", "inferenceservice-config", "kserve")
    knative = Ref("v1", "ConfigMap", "config-deployment", "knative-serving")
    other_cm = Ref("v1", "ConfigMap", "config-deployment", "default")
    assert [changes.shared(r) for r in (storage, isvc_config, knative, other_cm, REF, None)] \
        == [True, True, True, False, False, False]
    out = changes.results([Change(None, knative, ("data", "queue-sidecar-cpu-request"), "25m",
                                  "250m", None, INFO, "raised"),
                           Result("noted", INFO, isvc_config, "data.agent"),
                           Result("noted", INFO, other_cm)])
    assert [r.severity for r in out] == [WARNING, WARNING, INFO]


def test_an_item_left_unchanged_reports_no_lowered_cpu():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "s", "image": "s:1",
                                    "resources": {"limits": {"cpu": "1500m"}}}]}}
    fc = {**FC, "spec": {**FC["spec"], "workloads": {"cpuRounding": "down"}}}
    out = pipeline.transform([pod], fc)
    # the write limits.cpu 1500m -> 1 (a warning had it been made) is not reported; the
    # rule's own warning about the rounding stays
    assert [(r.severity, r.path, r.message[:40]) for r in out.results
            if not r.message.startswith("verdict")] == [
        ("warning", "spec.containers[0].resources.limits.cpu",
         "container 's': cpu 1500m rounded down to"),
        ("error", "spec.containers[0].resources.limits.memory",
         "container 's' is pinned but sets no memo"),
        ("error", None, "left unchanged because of the errors abo")]


def test_a_result_about_an_object_with_no_kind_and_no_name_has_no_resource_ref():
    """Hostile test: `functionConfig: {}` gave `resourceRef: {apiVersion: "", kind: "",
    name: ""}` (which identifies nothing) and `error:   kind:` on stderr."""
    from krm_fn.results import ERROR, Ref, Result
    r = Result("m", ERROR, Ref("", "", ""), "kind")
    assert r.as_dict() == {"message": "m", "severity": "error", "field": {"path": "kind"}}
    assert r.line() == "error: kind: m"
    named = Result("m", ERROR, Ref("v1", "List", ""), "items")
    assert named.as_dict()["resourceRef"] == {"apiVersion": "v1", "kind": "List", "name": ""}
    assert named.line() == "error: List items: m"
