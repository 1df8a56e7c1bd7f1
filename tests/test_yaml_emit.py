"""The YAML writer: fast renderer reads back exactly like the reference (PyYAML) one."""
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn.yaml import emit

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.text(max_size=30),
                    st.sampled_from(["4", "500m", "on", "yes", "0644", "1e3", "~", "", "1:20",
                                     "a: b", "- x", "#c", "line1\nline2\n", "  lead\n",
                                     "x\n\n", "caf\u00e9", "tab\tx", "null", "N"]))
keys = st.one_of(st.text(min_size=1, max_size=12),
                 st.sampled_from(["on", "n", "a.b/c", "123", "key with space", "-x"]))
data = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.dictionaries(keys, data, min_size=1, max_size=5),
                 st.lists(data, min_size=1, max_size=5)))
def test_fast_renderer_reads_back_like_pyyaml(obj):
    fast = emit.to_yaml(obj)
    assert yaml.safe_load(fast) == yaml.safe_load(emit.to_yaml_pyyaml(obj)) == obj


@pytest.mark.parametrize("value,text", [
    ({"a": "4"}, 'a: "4"\n'),
    ({"a": "static"}, "a: static\n"),
    ({"a": "line1\nline2\n"}, "a: |\n  line1\n  line2\n"),
    ({"on": "yes"}, '"on": "yes"\n'),
    ([{"name": "A", "value": "4"}], '- name: A\n  value: "4"\n'),
])
def test_style(value, text):
    assert emit.to_yaml(value) == text


# results-like mappings: repeated all-string sub-mappings (resourceRef, tags) beside others
str_maps = st.dictionaries(st.sampled_from(["kind", "name", "on", "a.b/c", "rule"]),
                           st.sampled_from(["Deployment", "x", "4", "yes", "l1\nl2\n", ""]),
                           min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.dictionaries(keys, st.one_of(data, str_maps), min_size=1,
                                          max_size=5), data), min_size=1, max_size=6))
def test_block_maps_is_block(items):
    items = items + items      # the same sub-mappings again: the memo is used
    assert emit.block_maps(items) == emit.block(items, 0)


def test_block_maps_renders_a_repeated_sub_mapping_once_per_content():
    ref = {"kind": "Deployment", "name": "a"}
    items = [{"message": "m", "resourceRef": dict(ref)}, {"message": "p", "resourceRef": ref},
             {"message": "o", "resourceRef": {"kind": "Deployment", "name": True}}]
    assert emit.block_maps(items) == [
        "- message: m", "  resourceRef:", "    kind: Deployment", "    name: a",
        "- message: p", "  resourceRef:", "    kind: Deployment", "    name: a",
        "- message: o", "  resourceRef:", "    kind: Deployment", "    name: true"]


def test_block_maps_keeps_equal_values_of_other_types_apart():
    # 1, 1.0 and True are equal (and hash alike); only all-string sub-mappings are kept
    items = [{"m": "x", "ref": {"k": v}} for v in ("1", 1, 1.0, True, "1", True)]
    assert emit.block_maps(items) == emit.block(items, 0)
    assert [ln for ln in emit.block_maps(items) if ln.startswith("    k:")] == [
        '    k: "1"', "    k: 1", "    k: 1.0", "    k: true", '    k: "1"', "    k: true"]
