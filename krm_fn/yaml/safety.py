"""Guards around the span editor: what it may edit, and proof that an edit did what it meant.

`check_editable(text, node)` refuses (raises spans.Unsupported) the constructs whose layout
the span editor does not model: explicit keys (`? limits` / `: {...}`), complex (mapping or
sequence) keys, and a key whose `:` is not on the key's own line. The caller then rewrites the
item with ruamel.yaml (krm_fn.yaml.ruamel).

`as_intended(new_text, column, original, ops)` is the check every edited item passes before
it is written: the new text of one item (its first line starting at `column`) must parse,
as one node, to `original` (the item's plain data, as load.Builder(typed=False) built it)
with `ops` applied. An edit that fails it is never written: the caller tries the full
rewrite, and refuses the input when that fails too. So no input can make krm-fn print YAML
that does not parse, or that means something other than the change it reports, with exit 0.
"""
from __future__ import annotations

import yaml

from krm_fn.yaml.load import Builder, InputError, Loader
from krm_fn.yaml.spans import Unsupported


def check_editable(text: str, node) -> None:
    """Raise Unsupported when the item `node` (composed from `text`) holds a mapping entry
    the span editor cannot place text around: a non-scalar key, an explicit key (`?`),
    or a key whose `:` indicator is on a later line (both need the `?` indicator; a
    non-scalar key without one is refused when the input is read). One walk over the
    item's nodes, only when its text holds a `?`."""
    if text.find("?", node.start_mark.index, node.end_mark.index) < 0:
        return
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
            continue
        if not isinstance(n, yaml.MappingNode):
            continue
        for k, v in n.value:
            if not isinstance(k, yaml.ScalarNode):
                raise Unsupported("complex key")
            if _explicit(text, k.start_mark.index):
                raise Unsupported("explicit key")
            if "\n" in text[k.end_mark.index:_colon(text, k, v)]:
                raise Unsupported("key and ':' on different lines")
            stack.append(v)


def _explicit(text: str, start: int) -> bool:
    """True when the key starting at `start` is introduced by the `?` indicator."""
    j = start - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j >= 0 and text[j] == "?" and (j == 0 or text[j - 1] in " \t\r\n{[,")


def _colon(text: str, k, v) -> int:
    """Offset of the `:` indicator after key `k` (its value `v`'s start at the latest)."""
    end = max(v.start_mark.index, k.end_mark.index)
    pos = text.find(":", k.end_mark.index, end + 1)
    return end if pos < 0 else pos


def _untyped(value):
    """Plain `value` as Builder(typed=False) reads the text emit writes for it: every
    scalar a string (numbers and booleans as written), null None."""
    if isinstance(value, dict):
        return {str(k): _untyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untyped(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def intended(original, ops):
    """`original` (plain data, not modified) with each (path, value) of `ops` set, creating
    mappings and lists on the way (an index equal to a list's length appends). Only the
    collections on the ops' paths are copied; the ops of one container share most of their
    path, so each walk starts from the prefix it shares with the previous one (and a
    sibling of the previous op's leaf reuses its holder)."""
    root: list = [original]
    prev: tuple = ()
    chain: list = [root]      # chain[d + 1]: the (copied) container at prev[:d]
    for path, value in ops:
        if not path:
            root[0] = _untyped(value)
            prev, chain = (), [root]
            continue
        n = len(path)
        if n == len(prev) and path[:-1] == prev[:-1] and \
                path[-1].__class__ is prev[-1].__class__:
            pass        # a sibling of the last op: its holder is already a fresh copy
        else:
            j, most = 0, min(n, len(prev)) - 1
            while j < most and path[j] == prev[j]:
                j += 1
            del chain[j + 1:]
            for d in range(j, n):
                chain.append(_step(chain[d], path[d - 1] if d else 0, path[d]))
        holder, last = chain[-1], path[-1]
        if isinstance(holder, list) and last == len(holder):
            holder.append(None)
        holder[last] = _untyped(value)
        prev = path
    return root[0]


def _step(parent, key, nxt):
    """parent[key] as a fresh container of the kind `nxt` indexes (list for an int, dict
    for a str), copied from the existing one when it has that kind, else new."""
    if isinstance(parent, list) and key == len(parent):
        parent.append(None)
    old = parent[key] if isinstance(parent, list) or key in parent else None
    if isinstance(nxt, int):
        new = list(old) if isinstance(old, list) else []
    else:
        new = dict(old) if isinstance(old, dict) else {}
    parent[key] = new
    return new


def as_intended(new_text: str, column: int, original, ops, prefix: str = "") -> bool:
    """True when `new_text` (one item; lines after the first indented by at least
    `column`) parses as one YAML node whose plain data equals intended(original, ops).
    `prefix`: the directives of the item's document and its `---` (surroundings), so a
    tag in the item means what it means there."""
    lines = new_text.split("\n")
    pad = " " * column
    body = prefix + "\n".join([lines[0]] + [ln[column:] if ln.startswith(pad)
                                            else ln.lstrip(" ") for ln in lines[1:]])
    try:
        nodes = list(yaml.compose_all(body, Loader=Loader))
        if len(nodes) != 1 or nodes[0] is None:
            return False
        built = Builder(typed=False).build(nodes[0], "item", body)
    except (yaml.YAMLError, InputError, RecursionError):
        return False
    return built == intended(original, ops)


def surroundings(text: str, start: int, end: int, column: int,
                 directives: bool) -> tuple[str, str]:
    """(prefix, tail) of the item text[start:end] (its first line at `column`) for
    as_intended. `prefix`: the `%` directive lines of its document with a `---` line; ""
    when it has none, and always when `directives` is False (the caller found no `%` line
    in the text once, regions.no_directives, rather than per item). `tail`: the blank and
    comment lines after the item up to the next content line when one of those comment
    lines stands deeper than `column` ("" otherwise): a block scalar written as the item's
    last value would take such a line in, so the read-back has to see it as the document
    does."""
    return (_directives(text, start) if directives else ""), _tail(text, end, column)


def _directives(text: str, start: int) -> str:
    """The `%` lines right above the `---` line that starts the document holding offset
    `start` (comment and blank lines between skipped), with that `---`; "" for none.
    Reads the lines upward from there, not the whole text before it."""
    doc = text.rfind("\n---", 0, start)
    found = []
    stop = doc if doc >= 0 else 0
    while stop > 0:
        begin = text.rfind("\n", 0, stop) + 1
        ln = text[begin:stop]
        if ln.startswith("%"):
            found.append(ln)
        elif ln.strip() and not ln.lstrip().startswith("#"):
            break
        stop = begin - 1
    return "\n".join(reversed(found)) + "\n---\n" if found else ""


def _tail(text: str, end: int, column: int) -> str:
    """surroundings' tail of an item that ends at offset `end`."""
    pos, deep, tail_end = end, False, end
    while pos < len(text):
        nl = text.find("\n", pos)
        stop = len(text) if nl < 0 else nl + 1
        line = text[pos:stop].rstrip("\r\n")
        rest = line.lstrip(" ")
        if rest and not rest.startswith("#"):
            break
        deep = deep or (rest.startswith("#") and len(line) - len(rest) > column)
        pos = tail_end = stop
    return text[end:tail_end] if deep else ""
