"""The round-trip fallback: YAML that the span editor cannot edit in place is re-read with
ruamel.yaml's round-trip loader, changed and written back, keeping the comments, key
order, quoting and flow style of every untouched node.

Imported only when needed (ruamel.yaml takes a large share of a small run's start-up).
Changes are (path, value) pairs as in krm_fn.yaml.spans; new values get the scalar style
of krm_fn.yaml.emit (plain when safe, else double-quoted; multi-line strings as literal
blocks).
"""
from __future__ import annotations

import io

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from krm_fn.yaml import emit
from krm_fn.yaml.load import InputError
from krm_fn.yaml.spans import guess_indent

__all__ = ["YAMLError", "apply_ops", "first_line", "rewrite_item", "round_trip", "styled"]


def round_trip() -> YAML:
    """A round-trip YAML instance that keeps quotes and never folds long lines."""
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    return y


def styled(value):
    """Plain value -> ruamel node value with emit's scalar style."""
    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = styled(v)
        return m
    if isinstance(value, list):
        s = CommentedSeq()
        s.extend(styled(v) for v in value)
        return s
    if isinstance(value, str):
        if "\n" in value:
            return LiteralScalarString(value)
        return value if emit.is_plain_safe(value) else DoubleQuotedScalarString(value)
    return value


def apply_ops(data, ops, insert_before: dict) -> None:
    """Set each (path, value) of `ops` in the round-trip `data`, creating the mappings
    and lists on the way; a flow collection on the way to a new collection turns block
    style. `insert_before` as in spans.item_edits. Raises KeyError, IndexError or
    TypeError when a path does not fit the data."""
    for path, value in ops:
        cur = data
        chain = [data]
        created = False
        for i, key in enumerate(path[:-1]):
            nxt = cur[key] if isinstance(cur, list) else cur.get(key)
            if not isinstance(nxt, (dict, list)):
                nxt = CommentedSeq() if isinstance(path[i + 1], int) else CommentedMap()
                _put(cur, key, nxt, insert_before)
                created = True
            cur = nxt
            chain.append(cur)
        if created or isinstance(value, (dict, list)):
            for node in chain:
                fa = getattr(node, "fa", None)
                if fa is not None and fa.flow_style():
                    fa.set_block_style()
        _put(cur, path[-1], styled(value), insert_before)


def _put(container, key, value, insert_before: dict) -> None:
    if isinstance(container, list):
        if key == len(container):
            container.append(value)
        else:
            container[key] = value
        return
    before = insert_before.get(key)
    if key not in container and before is not None and before in container:
        container.insert(list(container).index(before), key, value)
    else:
        container[key] = value


def first_line(e: Exception) -> str:
    """The first line of an exception's message (ruamel's run over several), or its type."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def rewrite_item(text: str, column: int, ops, nl: str, where: str,
                 insert_before: dict) -> str:
    """The text of one item (`text`, whose first line starts at `column` and whose other
    lines are indented by at least that much) with `ops` applied, re-read and written
    by ruamel at the indentation it uses, line breaks `nl`. Raises InputError naming
    `where` when ruamel cannot read or write it."""
    try:
        return _rewrite(text, column, ops, nl, insert_before)
    except (YAMLError, ValueError, TypeError, KeyError, IndexError) as e:
        why = first_line(e) if isinstance(e, YAMLError) else "a shape it cannot rewrite"
        raise InputError(f"{where}: cannot edit it in place and ruamel.yaml cannot rewrite "
                         f"it ({why}); write it in plain block style") from None


def _rewrite(text: str, column: int, ops, nl: str, insert_before: dict) -> str:
    lines = text.split("\n")
    pad = " " * column
    body = "\n".join([lines[0]] + [ln[column:] if ln.startswith(pad) else ln.lstrip(" ")
                                   for ln in lines[1:]])
    unit, offset = guess_indent(body)
    y = round_trip()
    y.indent(mapping=unit, sequence=max(unit, offset + 2), offset=offset)
    data = y.load(body)
    apply_ops(data, ops, insert_before)
    buf = io.StringIO()
    y.dump(data, buf)
    out = buf.getvalue().rstrip("\n").split("\n")
    new = "\n".join([out[0]] + [pad + ln if ln else ln for ln in out[1:]]) + "\n"
    return new.replace("\n", nl) if nl != "\n" else new
