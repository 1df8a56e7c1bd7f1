"""Rewriting a whole ResourceList with ruamel.yaml's round-trip loader: the fallback for a
list krm-fn cannot edit in place (flow style or JSON, flow-style results), written back in
block style and checked to read back item by item (`check`): every changed item as its
change (safety.intended), every other one as it was.

Imported only when a render needs it (ruamel.yaml takes a large share of a small run's
start-up).
"""
from __future__ import annotations

import io

from krm_fn.yaml.load import Builder, InputError, documents
from krm_fn.yaml.safety import intended


def rewrite(text: str, items: list, ops: dict, emitted: list, results: list, replace: dict,
            where, key_order: dict) -> str:
    """The ResourceList `text` (its plain `items`) rewritten whole with `ops` ({item index:
    [(path, value)]}) applied, `replace` ({index: new object}) put in place, `emitted`
    appended to the items and `results` to its results; `where(i)` names item i in
    messages; `key_order` as krm_fn.yaml.ruamel.apply_ops takes it. Raises InputError (one
    line) when ruamel cannot read or write it (fields krm-fn never reads, such as `x: !!int
    zz`, are constructed there) or the rewrite does not read back (`check`)."""
    from krm_fn.yaml import ruamel
    try:
        out = _dump(text, ops, emitted, results, replace, key_order)
    except (ruamel.YAMLError, ValueError, TypeError) as e:
        raise InputError(f"cannot rewrite this ResourceList (written in flow style or with "
                         f"flow-style results, so it is rewritten whole): "
                         f"{ruamel.first_line(e)}; write it in block style") from None
    check(items, ops, out, replace, where)
    return out


def check(items: list, ops: dict, out: str, replace: dict, where) -> None:
    """Raise InputError unless the whole-list rewrite `out` reads back with every changed
    item equal to its change (safety.intended) and every other input item (but those
    `replace` rewrites) equal to what it was: ruamel.yaml types plain scalars and writes
    them back its own way (a timestamp cut to microseconds, `9.99e999` as `.inf`), which
    Go's YAML readers read otherwise."""
    bad = "the rewritten text does not read back as the change"
    try:
        (root,) = documents(out)
        got = {k.value: v for k, v in root.value}["items"].value
        for i, was in enumerate(items):
            if i in replace:
                continue
            want = intended(was, ops[i]) if i in ops else was
            if Builder(typed=False).build(got[i], "item") != want:
                if i not in ops:
                    bad = (f"{where(i)}, which krm-fn does not change, would not read back "
                           f"as it was (ruamel.yaml writes some plain scalars its own way: "
                           f"timestamps, large or odd numbers)")
                raise ValueError(bad)
    except (InputError, ValueError, KeyError, IndexError, AttributeError):
        raise InputError(f"cannot rewrite this ResourceList safely: {bad}; write it in "
                         f"plain block style") from None


def _dump(text: str, ops: dict, emitted: list, results: list, replace: dict,
          key_order: dict) -> str:
    from krm_fn.yaml import ruamel
    y = ruamel.round_trip()
    data = y.load(text)
    data.fa.set_block_style()
    if data.get("items") is None:
        data["items"] = []
    items = data["items"]
    items.fa.set_block_style()
    for i, item_ops in ops.items():
        ruamel.apply_ops(items[i], item_ops, key_order)
    for i, obj in replace.items():
        items[i] = ruamel.styled(obj)
    for obj in emitted:
        items.append(ruamel.styled(obj))
    if results:
        existing = data.get("results") or []
        data["results"] = ruamel.styled(list(existing) + list(results))
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()
