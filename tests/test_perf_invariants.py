"""The speed-ups behind P1/P2 (docs/performance.md) change nothing observable: the cyclic
garbage collector is paused only while a run works (and restored, also after exit 1), and
cached quantities behave exactly like fresh ones, and the fast item builder builds exactly
what the full builder builds (and leaves every refusal to it, for the message)."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn import quantity, resourcelist
from krm_fn.yaml import load
from krm_fn.cli import cli

_RL = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: a, labels: {tier: inference}}
  spec:
    template:
      spec:
        containers:
        - name: c
          resources: {requests: {cpu: "2", memory: 1Gi}}
functionConfig:
  apiVersion: krm-fn.dev/v1alpha1
  kind: InferenceTuning
  metadata: {name: t}
  spec: {selector: {matchLabels: {tier: inference}}}
"""


@pytest.mark.parametrize("text, code", [(_RL, 0), ("kind: ResourceList\n", 1)])
def test_gc_state_restored_after_a_run(text, code):
    assert gc.isenabled()
    r = CliRunner().invoke(cli, [], input=text)
    assert r.exit_code == code, r.output
    assert gc.isenabled()
    gc.disable()
    try:
        CliRunner().invoke(cli, [], input=text)
        assert not gc.isenabled()       # a caller's own choice is left alone
    finally:
        gc.enable()


def test_quantity_cache_is_transparent():
    N = quantity.NANO        # values in nano-units
    for _ in range(2):
        assert quantity.parse("500m") == quantity.parse("500m")
        assert quantity.parse(4).nanos == quantity.parse("4").nanos == 4 * N
        assert quantity.parse(1.5).text == "1.5"
        with pytest.raises(quantity.QuantityError):
            quantity.parse("12x")
        with pytest.raises(quantity.QuantityError):
            quantity.parse(True)
        assert quantity.parse_cpu("1500m").nanos == quantity.parse_cpu(1.5).nanos
        assert quantity.parse_memory("1Gi").whole == 2 ** 30
        with pytest.raises(quantity.QuantityError, match="finer than 1m"):
            quantity.parse_milli_cpu("0.0001")
        with pytest.raises(quantity.QuantityError, match="not a whole number of bytes"):
            quantity.parse_memory("500m")
        with pytest.raises(quantity.QuantityError, match="is not a quantity"):
            quantity.parse_cpu(None)
        assert quantity.format_cpu(3 * N // 2) == "1500m"
        assert quantity.format_cpu(2 * N) == "2"
        assert quantity.format_binary_si(2 ** 30 * N) == quantity.format_bytes(2 ** 30) == "1Gi"
        assert quantity.format_decimal_si(1000 * N) == "1k"
        assert quantity.format_cpu(N // 10000) == "100u"


# --- the fast item builder (load._build_plain) builds what the full builder builds ---


_ROOT = Path(__file__).resolve().parent.parent
_YAML_FILES = sorted(
    [p for d in ("tests", "overlays", "bases") for p in (_ROOT / d).rglob("*.yaml")] +
    sorted((_ROOT.parent / "shared" / "corpus" / "public").glob("*/*.yaml")))


def _tagged(n) -> bool:
    """Some scalar under `n` has an explicit tag other than !!str."""
    if isinstance(n, yaml.ScalarNode):
        return n.tag != "tag:yaml.org,2002:str"
    kids = n.value if isinstance(n, yaml.SequenceNode) else [c for kv in n.value for c in kv]
    return any(_tagged(c) for c in kids)


def _both(text: str):
    """(fast, slow) plain data of every document of `text`, or of its largest parts
    without anchors or aliases (the parts the fast path builds); None when libyaml
    refuses the text."""
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=load.Loader) if n]
    except yaml.YAMLError:
        return None
    out, seen = [], set()

    def visit(n):
        if id(n) in seen:
            return
        seen.add(id(n))
        if not load._alias_free(text, n):     # the full builder builds these
            kids = n.value if isinstance(n, yaml.SequenceNode) else \
                [c for kv in n.value for c in kv] if isinstance(n, yaml.MappingNode) else []
            for c in kids:
                visit(c)
            return
        try:
            slow = load.Builder(typed=False).build(n, "x")
        except resourcelist.InputError as e:
            slow = ("refused", str(e))
        builder = load.Builder(typed=False)
        count = [0]
        try:
            fast = load._build_plain(n, 0, count)
        except load._Refused:
            # the fast path leaves a scalar with an explicit tag other than !!str to the
            # full builder, which judges it (Builder.tag_check)
            fast = slow if isinstance(slow, tuple) or _tagged(n) else \
                "fast refused what slow accepts"
        else:
            builder.build(n, "x")
            assert count[0] == builder.expanded     # the same nodes count to the budget
        out.append((fast, slow))

    for n in nodes:
        visit(n)
    return out


def test_fast_builder_matches_on_every_yaml_file_in_the_repo_and_corpus():
    assert len(_YAML_FILES) > 200
    checked = 0
    for path in _YAML_FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        for fast, slow in _both(text) or []:
            assert fast == slow, path
            assert repr(fast) == repr(slow), path        # same key order, same types
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",                       # duplicate key
    "<<: {a: 1}\n",                       # merge key
    "? [a]\n: 1\n",                       # non-scalar key
    "? {a: 1}\n: 1\n",
    "~: 1\nnull: 2\n",                    # two keys that both read as ""
    "[" * 150 + "]" * 150 + "\n",       # too deep
])
def test_fast_builder_leaves_refusals_to_the_full_builder(text):
    node = yaml.compose(text, Loader=load.Loader)
    with pytest.raises(load._Refused):
        load._build_plain(node, 0, [0])


def test_refused_items_get_the_full_builders_message():
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: 1, x: 2}\n"
    with pytest.raises(resourcelist.InputError, match=r"document 1\.data: duplicate key 'x'"):
        resourcelist.parse(doc, require_resource_list=False)


_scalars = st.sampled_from(["", "~", "null", "Null", "NULL", "on", "yes", "0644", "0x1F",
                            "1e003", "1:20", "true", "-", "a b", "'q'", "\"d\"", "#", "x: y",
                            "- z", "3.5", ".inf", "é", "\t", "line\nbreak"])
_keys = st.one_of(_scalars, st.text(max_size=5))
_values = st.recursive(st.one_of(st.none(), _scalars, st.text(max_size=8)),
                       lambda inner: st.one_of(st.lists(inner, max_size=4),
                                               st.dictionaries(_keys, inner, max_size=4)),
                       max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from([None, False, True]), st.sampled_from([None, "'", '"']),
       st.sampled_from([None, "!!str", "!!null", "!custom"]))
def test_fast_builder_matches_on_generated_yaml(value, flow, style, tag):
    text = yaml.dump({"item": value}, default_flow_style=flow, default_style=style,
                     allow_unicode=True)
    if tag:        # an explicit tag on every plain "null"-ish scalar spelling
        text = text.replace(": null", f": {tag} null").replace(": ''", f": {tag} ''")
    for fast, slow in _both(text) or []:
        assert repr(fast) == repr(slow)


def test_path_str_cache_is_transparent():
    from krm_fn.pod import path_str
    for _ in range(2):
        assert path_str(("spec", "containers", 0, "env")) == "spec.containers[0].env"
        assert path_str(["spec", "nodeSelector", "krm-fn.dev/cpu-pinning"]) == \
            "spec.nodeSelector['krm-fn.dev/cpu-pinning']"
        assert path_str(()) == ""


# --- the node budget (docs/threat-model.md): fast-path items count, the bound is a bound ---

def _events(text: str) -> int:
    return sum(1 for ev in yaml.parse(text, Loader=load.Loader)
               if isinstance(ev, (yaml.ScalarEvent, yaml.MappingStartEvent,
                                  yaml.SequenceStartEvent, yaml.AliasEvent)))


@pytest.mark.parametrize("text", [
    "[" * 99 + "]" * 99,                         # one line, no commas: 99 nodes
    "{a: " * 50 + "b" + "}" * 50,                # nested flow mappings: 101 nodes
    "[a: b, c: d, e: f]",                        # implicit single-pair mappings
    "{a, b, c}", "? a\n? b\n: c\n", "a:\nb:\n- - - x\n",
    "--- a\n--- b\n...\n--- c\n", "x", "a: &x [1, 2]\nb: *x\n", "",
])
def test_node_bound_is_an_upper_bound(text):
    assert _events(text) <= load._node_bound(text)


@settings(max_examples=200, deadline=None)
@given(_values, st.sampled_from([None, False, True]))
def test_node_bound_holds_on_generated_yaml(value, flow):
    text = yaml.dump({"item": value}, default_flow_style=flow, width=10 ** 6)
    assert _events(text) <= load._node_bound(text)


def test_a_single_line_of_deep_flow_nodes_counts_before_composing(monkeypatch):
    monkeypatch.setattr(load, "MAX_NODES", 1000)
    line = "[" * 90 + "]" * 90                   # 90 nodes, no comma, no line break
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n" + "".join(
        f"  k{i}: {line}\n" for i in range(12))

    def compose_all(*a, **k):
        raise AssertionError("the node graph was built")
    monkeypatch.setattr(yaml, "compose_all", compose_all)
    with pytest.raises(resourcelist.InputError, match=r"input is too large \(more than 1000 "
                                                      r"nodes\)"):
        resourcelist.parse(text, require_resource_list=False)


def test_fast_path_items_count_towards_the_alias_budget(monkeypatch):
    monkeypatch.setattr(load, "MAX_NODES", 5000)
    plain = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  l:\n" + \
        "".join("  - x\n" for _ in range(3000))
    bomb = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n"
            "  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            "  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "  d: [*c, *c]\n")
    resourcelist.parse(plain, require_resource_list=False)        # each alone is within
    resourcelist.parse(bomb, require_resource_list=False)
    with pytest.raises(resourcelist.InputError, match="expands too far through aliases"):
        resourcelist.parse(plain + "---\n" + bomb, require_resource_list=False)


def test_token_memo_lives_with_the_container_view_and_follows_edits():
    from krm_fn.pod import ContainerView
    from krm_fn.rules import engines
    c = ContainerView("c", "app", ("spec", "containers", 0),
                      {"command": ["vllm", "serve"], "args": ["--threads", "8"]})
    assert [t.text for t in engines.tokens(c)] == ["vllm", "serve", "--threads", "8"]
    c.data["args"][1] = "4"                            # an entry edited in place
    assert [t.text for t in engines.tokens(c)] == ["vllm", "serve", "--threads", "4"]
    c.data["args"].append("--x")
    assert engines.tokens(c)[-1] == engines.Token("--x", ("spec", "containers", 0, "args", 2))


def test_no_tokens_outlive_a_run():
    """A container's tokens are not kept in a module-level cache (hostile input: 200
    containers with 20,000-word args took 907 MB instead of 131 MB when they were)."""
    from krm_fn import pipeline
    from krm_fn.rules import engines
    words = " ".join(f"w{i}" for i in range(2000))
    items = [{"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": f"d{n}", "labels": {"tier": "inference"}},
              "spec": {"template": {"spec": {"containers": [{
                  "name": "c", "args": [f"{words} u{n}"],
                  "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}}}}
             for n in range(20)]
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "t"}, "spec": {"selector": {"matchLabels": {"tier": "inference"}}}}
    out = pipeline.transform(items, fc)
    assert out.ops and not out.has_errors
    del out
    gc.collect()
    assert not any(isinstance(o, engines.Token) for o in gc.get_objects())
