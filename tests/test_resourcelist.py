"""I/O layer: parsing, span splicing, indentation guessing, error messages."""
import pytest

from krm_fn import resourcelist
from krm_fn.resourcelist import InputError
from krm_fn.yaml.spans import guess_indent


@pytest.mark.parametrize("body,expected", [
    ("a:\n  b: 1\n  c:\n  - x\n", (2, 0)),
    ("a:\n    b: 1\n    c:\n      - x\n", (4, 2)),
    ("spec:\n  containers:\n    - name: x\n      env:\n        - name: A\n", (2, 2)),
    ("- name: x\n  image: y\n", (2, 0)),
    ("k: |\n    text: here\nm:\n   n: 1\n", (3, 0)),
])
def test_guess_indent(body, expected):
    assert guess_indent(body) == expected


def _edit(item_text: str, ops) -> str:
    """Render a one-item multi-doc input after `ops`."""
    doc = resourcelist.parse(item_text, require_resource_list=False)
    return resourcelist.render(doc, {0: ops}, [], [])


def test_span_edits_keep_indentation_comments_and_quotes():
    text = ("kind: Pod   # pod\nspec:\n    containers:\n      - name: 'a'\n"
            "        # comment\n        image: \"x\"\n")
    out = _edit(text, [(("spec", "containers", 0, "env"), [{"name": "A", "value": "4"}])])
    assert out == ("kind: Pod   # pod\nspec:\n    containers:\n      - name: 'a'\n"
                   "        # comment\n        image: \"x\"\n        env:\n"
                   "          - name: A\n            value: \"4\"\n")


def test_span_edits_leave_untouched_scalars_alone():
    text = ("kind: Pod\nspec:\n  note: \"caf\\u00e9\"\n  when: 2001-12-14t21:59:43.10-05:00\n"
            "  long: a\n    b\n  t: 'a\tb'\n  n: ~\n  u: 12_3\n  l: [a, # why\n    b]\n"
            "  x: 1\n")
    out = _edit(text, [(("spec", "x"), "2")])
    assert out == text.replace("  x: 1\n", '  x: "2"\n')


def test_span_edits_keep_crlf():
    text = "kind: Pod\r\nspec:\r\n  a: 1\r\n"
    out = _edit(text, [(("spec", "b"), "2")])
    assert out == 'kind: Pod\r\nspec:\r\n  a: 1\r\n  b: "2"\r\n'


def test_comment_after_an_item_stays_after_it():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- kind: Pod\n  spec:\n    a: 1\n# about the next item\n- kind: Other\n")
    doc = resourcelist.parse(text, True)
    out = resourcelist.render(doc, {0: [(("spec", "b"), "x")]}, [], [])
    assert out == text.replace("    a: 1\n", "    a: 1\n    b: x\n")


@pytest.mark.parametrize("text,message", [
    ("a: [", "input is not valid YAML at line 2, column 1"),
    ("a: 1\n", "input is not a ResourceList"),
    ("kind: ResourceList\napiVersion: config.kubernetes.io/v1\n",
     "ResourceList has no items field"),
    ("kind: ResourceList\napiVersion: v1\nitems: []\n", "ResourceList apiVersion 'v1' is not"),
    ("kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems: {}\n",
     "ResourceList items must be a list"),
    ("kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems:\n- {a: 1, a: 2}\n",
     "items[0]: duplicate key 'a'"),
    ("", "no input"),
])
def test_bad_input_messages(text, message):
    with pytest.raises(InputError) as e:
        resourcelist.parse(text, require_resource_list=True)
    assert message in str(e.value)


@pytest.mark.parametrize("version", ["config.kubernetes.io/v1", "config.kubernetes.io/v1beta1",
                                     "config.kubernetes.io/v1alpha1"])
def test_accepts_resource_list_versions(version):
    doc = resourcelist.parse(f"apiVersion: {version}\nkind: ResourceList\nitems: []\n", True)
    assert doc.items == [] and doc.api_version == version


def test_empty_items_get_block_sequence_when_objects_are_emitted():
    doc = resourcelist.parse("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                             "items: []\n", True)
    out = resourcelist.render(doc, {}, [{"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "x"}}], [])
    assert out == ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
                   "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: x\n")


_LITERAL = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
            "data": {"steps": "1. one\n2. two\n"}}


@pytest.mark.parametrize("value", ["[] # c", "[]   # c", "# c", "null # c", "~ # c",
                                   "[ ] # c"])
def test_a_comment_after_empty_items_stays_on_the_key_line(value):
    # it ran on into the emitted entries' last line, there the text of a block scalar (the
    # kubelet ConfigMap's steps), silently; `items: [] # c` was rewritten whole by ruamel,
    # which moved the comment before the `[]` and refused its own output (exit 1)
    for nl in ("\n", "\r\n"):
        text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                f"items: {value}\nresults: {value}\n").replace("\n", nl)
        doc = resourcelist.parse(text, True)
        out = resourcelist.render(doc, {}, [_LITERAL], [{"message": "m", "severity": "info"}])
        assert out == ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                       "items: # c\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n"
                       "    name: x\n  data:\n    steps: |\n      1. one\n      2. two\n"
                       "results: # c\n- message: m\n  severity: info\n").replace("\n", nl)


def test_a_comment_after_empty_items_without_emitted_objects_is_kept():
    doc = resourcelist.parse("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                             "items: [] # c\n", True)
    out = resourcelist.render(doc, {}, [], [{"message": "m", "severity": "info"}])
    assert out == ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [] # c\n"
                   "results:\n- message: m\n  severity: info\n")


def test_scalars_are_strings_for_items_and_typed_for_function_config():
    doc = resourcelist.parse(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: on, y: 0644, z: ~}}\n"
        "functionConfig: {a: 1, b: true, c: '1', d: null, e: 1.5}\n", True)
    assert doc.items[0]["data"] == {"x": "on", "y": "0644", "z": None}
    assert doc.function_config == {"a": 1, "b": True, "c": "1", "d": None, "e": 1.5}


def test_alias_expansion_is_bounded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bomb}\n  data:\n"
            + "".join(f"    {ln}\n" for ln in lines))
    with pytest.raises(InputError, match="expands too far through aliases"):
        resourcelist.parse(text, True)


def test_alias_across_items_is_refused():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- {kind: A, metadata: {labels: &l {app: x}}}\n- {kind: B, spec: {selector: *l}}\n")
    with pytest.raises(InputError, match="aliases cannot cross them"):
        resourcelist.parse(text, True)


def test_items_using_aliases_are_listed():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- {kind: A, a: &e [1], b: *e}\n- {kind: B}\n")
    assert resourcelist.parse(text, True).aliased == {0}


@pytest.mark.parametrize("null", ["", " ~", " null"])
def test_insert_under_a_null_value(null):
    text = f"kind: Pod\nspec:\n  resources:{null}\n  x: 1\n"
    out = _edit(text, [(("spec", "resources", "limits", "cpu"), "2")])
    assert out == 'kind: Pod\nspec:\n  resources:\n    limits:\n      cpu: "2"\n  x: 1\n'
