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
