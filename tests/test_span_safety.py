"""The span editor never writes text that does not parse or means something else (issue #16,
fault 1): generated items written with explicit keys (`? k` / `: v`), complex keys,
comments between a key and its value, and every block and flow style, edited through
resourcelist.render as the pipeline does. Property: the input is refused with a one-line
InputError, or the output parses and every edited item equals its data with the changes set
(safety.intended), and the other items are unchanged."""
from __future__ import annotations

import os

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from krm_fn import resourcelist
from krm_fn.yaml import safety
from krm_fn.yaml.load import InputError, Loader
from krm_fn.yaml.spans import Unsupported, item_edits, splice
from tests.helpers import ROOT, run_cli

EXAMPLES = int(os.environ.get("KRM_FN_PROPERTY_EXAMPLES", "0")) or 150
STYLES = ["block", "flow", "explicit", "comment-after-colon", "comment-line", "flow-multiline",
          "explicit-flow"]


def _scalar(v: str) -> str:
    return '"' + v + '"' if v[:1].isdigit() else v


def _flow(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _write(value, col: int, nxt) -> str:
    """The YAML text that follows `key:` or `-` for plain `value` (dict/list/str): inline
    (starting with a space) or block lines (starting with a line break) at column `col`;
    `nxt()` picks each collection's style from STYLES."""
    if isinstance(value, str):
        return " " + _scalar(value)
    style = nxt()
    pad = " " * col
    if style.startswith("flow") or not value:
        if style == "flow-multiline" and isinstance(value, dict):
            return " {" + (",\n" + pad).join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
        return " " + _flow(value)
    if isinstance(value, list):
        out = []
        for v in value:
            body = _write(v, col + 2, nxt)
            lead = "\n" + " " * (col + 2)
            out.append("\n" + pad + "- " + (body[len(lead):] if body.startswith(lead)
                                             else body.lstrip(" ")))
        return "".join(out)
    out = []
    for k, v in value.items():
        body = _write(v, col + 2, nxt)
        if style in ("explicit", "explicit-flow"):
            body = " " + _flow(v) if style == "explicit-flow" else body
            out.append(f"\n{pad}? {k}\n{pad}:{body}")
        elif style == "comment-after-colon":
            out.append(f"\n{pad}{k}:{body} # why" if body.startswith(" ")
                       else f"\n{pad}{k}: # why{body}")
        elif style == "comment-line":
            inline = f"\n{pad}  {body.strip()}" if body.startswith(" ") else body
            out.append(f"\n{pad}{k}:\n{pad}  # about {k}{inline}")
        else:
            out.append(f"\n{pad}{k}:{body}")
    return "".join(out)


def _pod(resources, env, selector):
    spec = {"containers": [dict({"name": "c", "image": "vllm/vllm-openai:v0.9"},
                                **({"resources": resources} if resources is not None else {}),
                                **({"env": env} if env is not None else {}))]}
    if selector is not None:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


OPS = [(("spec", "containers", 0, "resources", "requests", "cpu"), "2"),
       (("spec", "containers", 0, "resources", "limits", "cpu"), "2"),
       (("spec", "containers", 0, "resources", "limits", "memory"), "1Gi"),
       (("spec", "nodeSelector", "krm-fn.dev/cpu-pinning"), "true")]

_QTY = st.sampled_from(["1", "1500m", "2", "1Gi"])
_RES = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "limits": st.fixed_dictionaries({}, optional={"cpu": _QTY, "memory": _QTY}),
    "requests": st.fixed_dictionaries({}, optional={"cpu": _QTY}),
}).filter(lambda d: all(d.values())))
_ENV = st.one_of(st.none(), st.lists(st.fixed_dictionaries({"name": st.sampled_from(
    ["A", "B"]), "value": st.sampled_from(["x", "1"])}), min_size=1, max_size=2))
_SEL = st.one_of(st.none(), st.just({"zone": "a"}))


def _ops(pod):
    ops = list(OPS)
    env = pod["spec"]["containers"][0].get("env")
    ops.append((("spec", "containers", 0, "env", len(env or [])),
                {"name": "OMP_NUM_THREADS", "value": "2"}))
    return ops


def _check(text: str, ops) -> None:
    try:
        doc = resourcelist.parse(text, True)
        out = resourcelist.render(doc, {0: ops}, [], [])
    except InputError as e:
        assert "\n" not in str(e)
        return
    data = yaml.safe_load(out)
    assert data["items"][0] == yaml.safe_load(yaml.safe_dump(safety.intended(doc.items[0], ops)))
    assert data["items"][1] == {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "z"}}


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(resources=_RES, env=_ENV, selector=_SEL, data=st.data())
def test_edited_items_always_read_back_as_the_change(resources, env, selector, data):
    pod = _pod(resources, env, selector)
    styles = data.draw(st.lists(st.sampled_from(STYLES), min_size=12, max_size=12))
    it = iter(styles * 20)
    body = _write(pod, 2, lambda: next(it))
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- "
            + body.lstrip("\n").lstrip(" ") + "\n- {apiVersion: v1, kind: ConfigMap, "
            "metadata: {name: z}}\n")
    assert yaml.safe_load(text)["items"][0] == pod, text        # the generator is right
    _check(text, _ops(pod))


@given(key=st.sampled_from(["[a, b]", "{a: 1}", "? [x]\n  "]))
@settings(max_examples=10, deadline=None)
def test_complex_keys_are_refused_with_one_line(key):
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n"
            "  kind: Pod\n  metadata: {name: p}\n  spec:\n    " + key + ": 1\n    containers:\n"
            "    - {name: c, image: x}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: z}}\n")
    _check(text, [(("spec", "nodeSelector"), {"a": "b"})])


def test_explicit_keys_go_to_the_full_rewrite():
    text = (ROOT / "tests" / "hostile" / "r75-explicit-key-limits.yaml").read_text()
    doc = resourcelist.parse(text, True)
    try:
        safety.check_editable(text, doc.nodes[0])
    except Unsupported as e:
        assert str(e) == "explicit key"
    else:
        raise AssertionError("explicit key not refused")


def test_explicit_key_limits_output_parses_with_requests_beside_limits():
    p = run_cli([], (ROOT / "tests" / "hostile" / "r75-explicit-key-limits.yaml").read_text())
    assert p.returncode == 0, p.stderr
    res = yaml.safe_load(p.stdout)["items"][0]["spec"]["containers"][0]["resources"]
    assert res == {"requests": {"cpu": "2", "memory": "1Gi"},
                   "limits": {"cpu": "2", "memory": "1Gi"}}


@settings(max_examples=EXAMPLES, deadline=None)
@given(words=st.lists(st.sampled_from(['"a":', '"1",', '"cpu":', '"500m",', "{", "}", "x"]),
                      min_size=2, max_size=12),
       breaks=st.lists(st.booleans(), min_size=12, max_size=12),
       at=st.integers(0, 11), new=st.sampled_from(['"2",', '"1Gi",', "y"]),
       chomp=st.sampled_from(["", "-", "+"]))
def test_refolded_blocks_read_as_the_new_value(words, breaks, at, new, chomp):
    from krm_fn.yaml.folded import refold
    lines, cur = [], []
    for w, b in zip(words, breaks):
        cur.append(w)
        if b:
            lines.append(" ".join(cur))
            cur = []
    if cur:
        lines.append(" ".join(cur))
    span = ">" + chomp + "\n" + "".join("  " + ln + "\n" for ln in lines)
    old = yaml.safe_load("k: " + span)["k"]
    changed = list(words)
    changed[at % len(words)] = new
    value = " ".join(changed) + old[len(" ".join(words)):]
    text = refold(span, old, value)
    if text is not None:
        assert yaml.safe_load("k: " + text)["k"] == value
        assert text.count("\n") == span.count("\n")


def test_a_new_key_given_a_list_after_a_mapping_takes_the_list():
    # the later op wins, as in safety.intended; merging a list into a mapping used to
    # raise AttributeError inside the span editor
    text = "a:\n  b: 1\n"
    node = yaml.compose(text, Loader=Loader)
    ops = [(("a", "new"), {"cpu": "4"}), (("a", "new"), ["x", "y"])]
    new = splice(text, item_edits(text, node, ops, "\n"))
    assert new == 'a:\n  b: 1\n  new:\n  - x\n  - "y"\n'
    assert safety.as_intended(new, 0, {"a": {"b": "1"}}, ops)


def _intended_before(original, ops):
    """safety.intended as it was before siblings reused their holder (the reference)."""
    root: list = [original]
    prev: tuple = ()
    chain: list = [root]
    for path, value in ops:
        if not path:
            root[0] = safety._untyped(value)
            prev, chain = (), [root]
            continue
        j, most = 0, min(len(path), len(prev)) - 1
        while j < most and path[j] == prev[j]:
            j += 1
        del chain[j + 1:]
        for d in range(j, len(path)):
            chain.append(safety._step(chain[d], path[d - 1] if d else 0, path[d]))
        holder, last = chain[-1], path[-1]
        if isinstance(holder, list) and last == len(holder):
            holder.append(None)
        holder[last] = safety._untyped(value)
        prev = path
    return root[0]


_KEYS = st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 3))
_PLAIN = st.recursive(st.one_of(st.none(), st.sampled_from(["x", "y"])),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.sampled_from(["a", "b", "c"]),
                                                              inner, max_size=3)),
                      max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(_PLAIN, st.lists(st.tuples(st.lists(_KEYS, max_size=4).map(tuple),
                                  st.one_of(st.sampled_from(["v", "4", True, 3]), _PLAIN)),
                        max_size=6))
def test_intended_is_the_op_by_op_result(original, ops):
    import copy
    before = copy.deepcopy(original)
    try:
        want = _intended_before(copy.deepcopy(original), ops)
    except (IndexError, KeyError, TypeError) as e:
        want = type(e)
    try:
        got = safety.intended(original, ops)
    except (IndexError, KeyError, TypeError) as e:
        got = type(e)
    assert got == want
    assert original == before          # the original is never changed


def _guess_indent_before(body):
    """spans.guess_indent before the `:`/`#` precheck (the reference)."""
    from krm_fn.yaml.spans import _KEY_OPENS_BLOCK
    mapping, offset, a = None, None, None
    for b in body.split("\n"):
        stripped = b.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if a is not None:
            m = _KEY_OPENS_BLOCK.match(a.rstrip("\r"))
            if m and not a.rstrip().endswith(("|", ">", "|-", ">-", "|+", ">+")):
                base = len(m.group(1)) + (len(m.group(2)) if m.group(2) else 0)
                ind = len(b) - len(b.lstrip(" "))
                if b.lstrip(" ").startswith("- ") and offset is None:
                    offset = max(0, ind - base)
                elif not b.lstrip(" ").startswith("- ") and mapping is None and ind > base:
                    mapping = ind - base
                if mapping is not None and offset is not None:
                    break
        a = b
    return mapping or 2, offset or 0


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=" :#-ab|>\r\t", max_size=12), max_size=12))
def test_guess_indent_is_the_pattern_scan(lines):
    from krm_fn.yaml.spans import guess_indent
    body = "\n".join(lines)
    assert guess_indent(body) == _guess_indent_before(body)
