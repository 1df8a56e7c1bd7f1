"""`kind: List` and other `<Kind>List`s (krm_fn/pipeline/lists.py): their items are tuned and
judged as objects of their own, as kustomize (api/resource/factory.go
inlineAnyEmbeddedLists) and kubectl read them, and the edits go inside the List document.
The whole render is the golden case tests/testdata/kubectl-list (applied to the real API
server by tests/test_apiserver.py)."""
from __future__ import annotations

from krm_fn.pipeline import lists, transform
from tests.helpers import run_cli

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "s"},
       "spec": {"containers": [{"name": "c", "image": "example.com/m:1", "resources": {
           "requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}]}}


def test_expand_in_place_nested_and_empty():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    items = [cm, {"kind": "List", "items": [POD, {"kind": "List", "items": [cm]}]},
             {"kind": "PodList", "items": None}, {"kind": "Tolist", "spec": {}}]
    flat, origin, results = lists.expand(items)
    assert flat == [cm, POD, cm, items[3]]
    assert origin == [(0, ()), (1, ("items", 0)), (1, ("items", 1, "items", 0)), (3, ())]
    assert results == []


def test_without_a_list_nothing_is_copied():
    items = [POD]
    flat, origin, results = lists.expand(items)
    assert flat is items and origin is None and results == []


def test_items_that_are_not_objects_are_an_error_and_the_list_is_kept():
    for bad, what in (({"a": 1}, "not a list"), ([POD, "x"], "a list holding a non-object")):
        items = [{"apiVersion": "v1", "kind": "List", "metadata": {"name": "l"}, "items": bad}]
        flat, origin, [r] = lists.expand(items)
        assert flat == items and origin == [(0, ())]
        assert (r.severity, r.path) == ("error", "items")
        assert r.message == (f"List items is {what}: kustomize refuses such a file (expected "
                             f"array in List/items) and kubectl cannot apply it; krm-fn leaves "
                             f"it unchanged")


def test_changes_go_inside_the_list():
    items = [{"apiVersion": "v1", "kind": "List", "items": [POD]}]
    out = transform(items, None)
    assert out.flat == [POD] and out.origin == [(0, ("items", 0))]
    [(i, ops)] = out.ops.items()
    assert i == 0 and all(path[:2] == ("items", 0) for path, _ in ops)
    assert (("items", 0, "spec", "nodeSelector", "krm-fn.dev/cpu-pinning"), "true") in ops


def test_a_duplicate_inside_a_list_is_named_where_it_is(tmp_path):
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: s}\n"
            "spec: {containers: [{name: c, image: example.com/m:1}]}\n---\n"
            "apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: s}\n"
            "  spec: {containers: [{name: c, image: example.com/m:1}]}\n")
    (tmp_path / "in.yaml").write_text(text)
    p = run_cli(["run", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 1
    assert ("krm-fn: error: Pod s/p items[1].items[0]: duplicate item: item 0 and item 1, "
            "List entry items[0] are both Pod s/p; both are left unchanged") in p.stderr


def test_validate_mode_names_the_fields_of_list_items():
    items = [{"apiVersion": "v1", "kind": "List", "items": [POD]}]
    out = transform(items, None, mode="validate")
    assert out.changes == {} and out.has_errors
    assert any(r.severity == "error" and r.ref and r.ref.kind == "Pod" and
               r.path == "spec.nodeSelector['krm-fn.dev/cpu-pinning']" for r in out.results)


def test_report_reads_the_items_of_a_list(tmp_path):
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: s}\n"
            "  spec:\n    containers:\n    - name: c\n      image: example.com/m:1\n"
            "      resources:\n        requests: {cpu: \"4\", memory: 8Gi}\n"
            "        limits: {cpu: \"4\", memory: 8Gi}\n")
    (tmp_path / "in.yaml").write_text(text)
    p = run_cli(["run", "--report", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Pod s/p" in p.stderr and "could not be built" not in p.stderr
    assert p.stdout.startswith("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n")


def test_results_about_an_item_of_a_list_name_the_lists_file():
    # kpt and kustomize read the List from one file: its path and index annotations are
    # where the item is; an item's own annotations win
    ann = {"internal.config.kubernetes.io/path": "list.yaml",
           "internal.config.kubernetes.io/index": "2"}
    own = {**POD, "metadata": {**POD["metadata"], "name": "q", "annotations": {
        "internal.config.kubernetes.io/path": "q.yaml"}}}
    items = [{"apiVersion": "v1", "kind": "List", "metadata": {"annotations": ann},
              "items": [POD, own]}]
    out = transform(items, None)
    files = {(r.ref.name, r.file["path"] if r.file else None, (r.file or {}).get("index"))
             for r in out.results if r.ref is not None and r.ref.kind == "Pod"}
    assert files == {("p", "list.yaml", 2), ("q", "q.yaml", None)}
