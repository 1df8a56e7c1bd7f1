"""Random items in many YAML layouts, random changes to them, and both read-back checks.

`case(seed)` builds one ResourceList text holding one item written with a random mix of
the layouts the region read-back (krm_fn/yaml/regions.py) has to get right or refuse:
block and flow collections (flow ones also over several lines, continued at any column),
sequences under their key's column or indented, plain / quoted / multi-line quoted scalars,
literal and folded block scalars with every chomping indicator and explicit indentation,
comment lines at any column (deeper, shallower, at 0), blank lines with and without
spaces, trailing comments, now and then an anchor and alias, a tag, a tab or a CR LF.
It then picks random changes (replace a scalar, add a key, append an entry, give a null
a collection) and plans them with the span editor. `check(seed)` returns (read_back's
answer, as_intended's answer) for that case, or None when the span editor refused it.
"""
from __future__ import annotations

import random

import yaml

from krm_fn.yaml import regions, safety
from krm_fn.yaml.load import Builder, Loader
from krm_fn.yaml.spans import Unsupported, content_end, item_edits, line_end, splice_in

WORDS = ["a", "b", "cpu", "memory", "name", "x y", "true", "1", "-x", "#c", "k: v", "",
         "q'z", 'd"q', "null", "~", "- a", "[1]", "{a}", "é", "multi\nline", "tail\n\n",
         " lead", "trail ", "%p", "!t", "&a", "*a", "? k", "...", "---"]


def _scalar(r: random.Random, value: str, col: int) -> list[str]:
    """Lines of a scalar value (the first continues its key's line)."""
    kind = r.random()
    if "\n" in value or kind < 0.15:
        ind = " " * (col + r.choice([1, 2, 3]))
        head = r.choice(["|", "|-", "|+", ">", ">-", ">+", "|2", "|1-", ">2+", "|+1"])
        if head[-1].isdigit():
            ind = " " * (col + int(head[-1]))
        elif any(c.isdigit() for c in head):
            ind = " " * (col + int([c for c in head if c.isdigit()][0]))
        body = [ind + ln if ln else r.choice(["", " " * r.randint(0, col + 3)])
                for ln in (value or "v").split("\n")]
        return [" " + head] + body
    if kind < 0.35:
        return [" '" + value.replace("'", "''") + "'"]
    if kind < 0.5:
        if " " in value and r.random() < 0.5:
            a, _, b = value.partition(" ")
            return [' "' + a, " " * r.randint(0, col + 4) + b + '"']
        return [' "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"']
    try:
        safe = bool(value) and value.strip() == value and yaml.safe_load(value) == value
    except yaml.YAMLError:
        safe = False
    if safe and not any(ch in value for ch in "#:{}[],&*!|>'\"%@`"):
        return [" " + value]
    return [' "' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"']


def _flow(r: random.Random, value, col: int) -> list[str]:
    """A flow collection, on one line or continued over several at random columns."""
    def one(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{_fk(k)}: {one(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v) + "]"
        if v is None:
            return "null"
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    text = one(value)
    if r.random() < 0.3 and ", " in text:
        cut = text.index(", ")
        return [" " + text[:cut + 1], " " * r.randint(0, col + 4) + text[cut + 2:]]
    return [" " + text]


def _fk(k: str) -> str:
    return '"' + k.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _key(r: random.Random, k: str) -> str:
    if k and k.replace("-", "").isalnum() and not k[0].isdigit() and k not in ("true", "null"):
        return k
    return _fk(k)


def _noise(r: random.Random, col: int) -> list[str]:
    """Comment and blank lines at random columns, sometimes none."""
    out = []
    while r.random() < 0.25:
        c = r.choice([0, max(0, col - 2), col, col + 2, col + 6])
        out.append(r.choice([" " * c + "# note", "", " " * r.randint(1, col + 3)]))
    return out


def _block(r: random.Random, value, col: int) -> list[str]:
    """Block lines of a mapping or list at column `col`."""
    out: list[str] = []
    pad = " " * col
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_noise(r, col))
            head = pad + _key(r, k) + ":"
            out.extend(_value(r, head, v, col))
        return out
    for v in value:
        out.extend(_noise(r, col))
        if isinstance(v, dict) and v and r.random() < 0.8:
            inner = _block(r, v, col + 2)
            out.append(pad + "- " + inner[0][col + 2:])
            out.extend(inner[1:])
        else:
            out.extend(_value(r, pad + "-", v, col))
    return out


def _value(r: random.Random, head: str, v, col: int) -> list[str]:
    if isinstance(v, (dict, list)) and v and r.random() < 0.75:
        if isinstance(v, list):
            sub = col + r.choice([0, 2, 4])
        else:
            sub = col + r.choice([2, 4])
        lines = _block(r, v, sub)
        tail = r.choice(["", "", " # c"])
        return [head + tail] + lines
    if isinstance(v, (dict, list)):
        first, *rest = _flow(r, v, col)
        return [head + first] + rest
    if v is None:
        return [head + r.choice(["", " null", " ~"])]
    first, *rest = _scalar(r, v, col)
    tail = r.choice(["", "", " # t"]) if not rest else ""
    return [head + first + tail] + rest


def _data(r: random.Random, depth: int = 0):
    roll = r.random()
    if depth > 3 or roll < 0.45:
        return None if r.random() < 0.08 else r.choice(WORDS)
    if roll < 0.75:
        return {r.choice(["env", "name", "value", "limits", "requests", "spec", "k1", "k2",
                          "x y", "-k", "é"]) + ("" if r.random() < 0.7 else str(i)): _data(r, depth + 1)
                for i in range(r.randint(1, 4))}
    return [_data(r, depth + 1) for _ in range(r.randint(1, 3))]


def case(seed: int):
    """(full text, item node, original data, ops) for `seed`, or None."""
    r = random.Random(seed)
    data = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": _data(r, 0) if r.random() < 0.2 else {
                "a": _data(r, 1), "b": _data(r, 1), "c": [_data(r, 2), _data(r, 2)]}}
    lines = _block(r, data, 0)
    if r.random() < 0.05:
        lines[r.randrange(len(lines))] += "\t"
    body = "\n".join(("- " if i == 0 else "  ") + ln if ln.strip(" ") or i == 0 else ln
                     for i, ln in enumerate(lines))
    if r.random() < 0.05:
        body = body.replace("value", "&an value", 1)
    text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + body + "\n"
    if r.random() < 0.5:
        text += r.choice(["", "\n", "\n\n", "  # after\n", "results: []\n", "- kind: X\n"])
    if r.random() < 0.03:
        text = text.replace("\n", "\r\n")
    try:
        root = yaml.compose(text, Loader=Loader)
        items = [v for k, v in root.value if k.value == "items"][0]
        node = items.value[0]
        original = Builder(typed=False).build(node, "items[0]", text)
    except Exception:
        return None
    ops = _ops(r, original)
    return text, node, original, ops


def _ops(r: random.Random, original) -> list:
    paths: list = []

    def walk(v, p):
        paths.append((p, v))
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, p + (k,))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, p + (i,))
    walk(original, ())
    ops = []
    for _ in range(r.randint(1, 5)):
        p, v = r.choice(paths[1:])
        roll = r.random()
        if isinstance(v, dict) and roll < 0.5:
            ops.append((p + (r.choice(["limits", "new", "cpu", "z z"]),),
                        r.choice(["4", "x", {"cpu": "4"}, ["a", "b"], {"n": {"m": "1"}}])))
        elif isinstance(v, list) and roll < 0.5:
            ops.append((p + (len(v),), r.choice(["e", {"name": "N", "value": "2"}, ["x"]])))
        elif v is None and roll < 0.7:
            ops.append((p + (r.choice(["k", 0]),), "v"))
        elif not isinstance(v, (dict, list)):
            ops.append((p, r.choice(["4", "50m", "true", "", "a: b", "multi\nline\n",
                                     "x y", None])))
    return ops


def check(seed: int):
    """(read_back's answer, as_intended's answer) for case(seed); None when the case is
    not one the span editor plans."""
    got = case(seed)
    if got is None:
        return None
    text, node, original, ops = got
    if not ops:
        return None
    nl = "\r\n" if "\r\n" in text else "\n"
    try:
        mine = item_edits(text, node, ops, nl, {"requests": "limits"})
    except (Unsupported, AssertionError):
        return None
    start, end = node.start_mark.index, line_end(text, content_end(node))
    if any(e[0] < start or e[1] > end for e in mine):
        return None
    try:
        new = splice_in(text, start, end, mine)
    except AssertionError:
        return None
    memo: dict = {} if regions.no_directives(text) else {"off": True}
    try:
        full = safety.as_intended(new, node.start_mark.column, original, ops)
    except (IndexError, KeyError, TypeError):
        full = None
    fast = regions.read_back(text, node, start, end, mine, new, original, ops, memo)
    return fast, full
