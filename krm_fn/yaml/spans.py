"""The span editor: a pure planner of text edits that apply changes to YAML text in place.

`item_edits(text, node, ops, nl)` takes the text, the libyaml node of one item in it
(composed by krm_fn.yaml.load.Loader, so marks are character offsets into `text`) and
`ops`, a list of (path, value) changes: `path` a tuple of mapping keys (str) and sequence
indices (int), `value` plain data to set there. It returns text edits `(start, end,
replacement)` or `(start, end, replacement, rank)`, offsets into `text`; only the changed
scalars and the inserted lines are touched, so comments, key order, quoting and flow style
of everything else stay byte for byte. New collections are written by krm_fn.yaml.emit in
the indentation the item already uses (guess_indent). `splice(text, edits)` applies them.
Shapes the planner cannot express (a collection replaced, a sequence index past the end,
an empty block collection, a tagged null, ...) raise Unsupported; the caller then rewrites
the item another way (krm_fn.yaml.ruamel).

The helpers that find positions in the text (line_end, content_end, dash_column, ...) are
public for callers that insert text of their own at the same places.
"""
from __future__ import annotations

import re

import yaml

from krm_fn.yaml import emit
from krm_fn.yaml.load import Loader, is_null
from krm_fn.yaml.scalars import is_json, json_text, scalar_text


class Unsupported(Exception):
    """An edit the span editor cannot express; the message names the shape."""


def content_end(node) -> int:
    """Offset just past the last character of `node`'s own content: for block collections
    the end of their last value, not the start of whatever token follows (libyaml's end
    mark for a block collection lies after any comments that follow it)."""
    floor = 0
    while True:
        if isinstance(node, yaml.MappingNode) and node.value and node.flow_style is not True:
            # the key's end also counts: an alias value (`b: *x`) is the anchor's node and
            # carries the anchor's (earlier) position
            floor = max(floor, node.value[-1][0].end_mark.index)
            node = node.value[-1][1]
        elif isinstance(node, yaml.SequenceNode) and node.value and node.flow_style is not True:
            node = node.value[-1]
        else:
            return max(floor, node.end_mark.index)


def line_end(text: str, pos: int) -> int:
    """Offset just past the line end at or after `pos` (len(text) at the end)."""
    if pos > 0 and text[pos - 1] == "\n":
        return pos
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


_KEY_OPENS_BLOCK = re.compile(r"^( *)(- +)?[^#\s][^#]*:\s*(#.*)?$")


def guess_indent(body: str) -> tuple[int, int]:
    """(mapping indent, block sequence dash offset) the text uses, from the first key that
    opens a nested mapping and the first that opens a nested sequence. Defaults (2, 0)."""
    mapping, offset = None, None
    a = None
    for b in body.split("\n"):
        stripped = b.strip()
        if not stripped or stripped.startswith("#"):
            continue
        # only a line ending in `:` (or holding a comment) can open a block
        if a is not None and (a.rstrip().endswith(":") or "#" in a):
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


def child(node, key):
    """(key node or None, value node) of `node` at `key`, or None when absent."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return k, v
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return None, node.value[key]
    return None


def _nest(rest: tuple, value):
    """`value` wrapped in the collections that the path `rest` leads through."""
    for key in reversed(rest):
        value = [value] if isinstance(key, int) else {key: value}
    return value


def _merge(into, new) -> None:
    """Deep-merge plain `new` into `into` (dicts by key, lists append)."""
    if isinstance(into, dict):
        for k, v in new.items():
            if k in into and isinstance(into[k], (dict, list)) and isinstance(v, type(into[k])):
                _merge(into[k], v)
            else:
                into[k] = v
    else:
        into.extend(new)


def dash_column(text: str, item) -> int:
    """Column of the `-` that introduces a block sequence entry (the entry's content may
    start on a later line, after comments: `- # note` / `  kind: Pod`)."""
    i = item.start_mark.index
    start = line_start(text, i)
    before = text[start:i]
    while True:
        head = before.rstrip(" ")
        code = head.split(" #", 1)[0].rstrip(" ") if not head.lstrip().startswith("#") else ""
        if code.endswith("-") and (len(code) == 1 or code[-2] == " "):
            return len(code) - 1
        if code.strip():
            raise Unsupported("sequence entry not introduced by a dash")
        if start == 0:
            raise Unsupported("sequence entry without a dash")
        end = start - 1
        start = line_start(text, end)
        before = text[start:end].rstrip("\r")


def after_own_comments(text: str, pos: int, column: int) -> int:
    """Move `pos` (a line start) past following blank lines and comment lines indented
    deeper than `column`: they belong to the entry above (e.g. a commented-out key)."""
    end = pos
    while end < len(text):
        nl = text.find("\n", end)
        line = text[end:len(text) if nl < 0 else nl].rstrip("\r")
        stripped = line.lstrip(" ")
        if stripped and not (stripped.startswith("#") and len(line) - len(stripped) > column):
            break
        end = len(text) if nl < 0 else nl + 1
        if stripped:
            pos = end
    return pos


def break_before(text: str, pos: int, nl: str) -> str:
    """"" when the text before `pos` ends with a line break, else `nl` (to start a line
    there). Looks at one character: slicing the text up to `pos` copied up to the whole
    input for every insertion."""
    return "" if pos and text[pos - 1] == "\n" else nl


def line_start(text: str, pos: int) -> int:
    """Offset of the start of the line holding `pos`."""
    return text.rfind("\n", 0, pos) + 1


def _flow_close(text: str, node) -> int:
    """Offset of the closing bracket of a flow collection. Raises Unsupported when the
    node does not end in one."""
    close = node.end_mark.index - 1
    if text[close] not in "}]":
        raise Unsupported("flow collection end not found")
    return close


def item_edits(text: str, node, ops, nl: str, insert_before: dict | None = None) -> list:
    """Text edits that apply `ops` to the item whose node is `node` (see the module
    docstring for the shapes). `nl` is the line break of inserted lines ("\n" or "\r\n").
    `insert_before` maps a new key to an existing sibling it is written before (e.g.
    {"requests": "limits"}); other new keys go after the mapping's last entry. Ops on one
    path: a later scalar value replaces an earlier one, new collections at one place are
    deep-merged. Raises Unsupported for shapes it cannot edit in place."""
    as_json = is_json(text, node)
    replaces: dict[int, tuple[int, int, str]] = {}
    inserts: dict[int, list] = {}      # id(container node) -> [node, {key: value} | [items]]
    keys: dict[int, dict] = {}         # id(mapping node) -> {key: value node}, as child
    # id(insertion node) -> its depth under `node`: insertions at the same offset go
    # deepest first (a new env entry, inside the container's last value, before a new key
    # of the container)
    depth: dict[int, int] = {}
    prev_path: tuple = ()
    prev_nodes = [node]                # prev_nodes[j]: the node at prev_path[:j]
    for path, value in ops:
        # the ops of one container share most of their path: walk on from the common prefix
        i, most = 0, min(len(path), len(prev_nodes) - 1)
        while i < most and path[i] == prev_path[i]:
            i += 1
        nodes = prev_nodes[:i + 1]
        cur = nodes[i]
        while i < len(path):
            key = path[i]
            if isinstance(cur, yaml.MappingNode) and isinstance(key, str):
                index = keys.get(id(cur))
                if index is None:
                    index = keys[id(cur)] = {}
                    for k, v in cur.value:
                        if isinstance(k, yaml.ScalarNode):
                            index.setdefault(k.value, v)
                nxt = index.get(key)
            elif isinstance(cur, yaml.SequenceNode) and isinstance(key, int) and \
                    key < len(cur.value):
                nxt = cur.value[key]
            else:
                nxt = None
            if nxt is None:
                break
            cur, i = nxt, i + 1
            nodes.append(cur)
        prev_path, prev_nodes = path, nodes
        depth.setdefault(id(cur), i)
        if i == len(path):
            if not isinstance(cur, yaml.ScalarNode) or isinstance(value, (dict, list)):
                raise Unsupported("replace a collection")
            replaces[cur.start_mark.index] = (cur.start_mark.index, cur.end_mark.index,
                                              json_text(value) if as_json else
                                              scalar_text(text, cur, value))
        else:
            _record_insert(inserts, cur, path[i], _nest(path[i + 1:], value))
    edits = list(replaces.values())
    if inserts:
        unit, seq_offset = guess_indent(text[node.start_mark.index:content_end(node)])
        style = (unit, seq_offset, nl, insert_before or {}, as_json)
        edits = _insert_all(text, _Parents(node), inserts, depth, edits, style)
    return edits


def _record_insert(inserts: dict, cur, key, new) -> None:
    """Queue `new` (plain data) for insertion at `key` of the node `cur`: a mapping (new
    key), a block or flow sequence (key == its length plus the entries queued), or a null
    scalar (which becomes the collection). Raises Unsupported otherwise."""
    if isinstance(cur, yaml.SequenceNode):
        if not isinstance(key, int) or key != len(cur.value) + len(
                inserts.get(id(cur), [None, []])[1]):
            raise Unsupported("sequence index")
        inserts.setdefault(id(cur), [cur, []])[1].append(new)
        return
    if isinstance(cur, yaml.MappingNode) and isinstance(key, str):
        entry = inserts.setdefault(id(cur), [cur, {}])[1]
    elif isinstance(cur, yaml.ScalarNode) and is_null(cur):
        entry = inserts.setdefault(id(cur), [cur, [] if isinstance(key, int) else {}])[1]
        if isinstance(entry, list):
            entry.append(new)
            return
    else:
        raise Unsupported("insert into a scalar")
    if key in entry and isinstance(entry[key], (dict, list)) and type(new) is type(entry[key]):
        _merge(entry[key], new)
    else:
        entry[key] = new


def _insert_all(text, parents, inserts: dict, depth: dict, edits: list, style) -> list:
    """`edits` plus the edits of the queued insertions; a one-line flow mapping that gets
    a new collection is rewritten in block style, with the edits inside it."""
    converted = []
    as_json = style[4]
    for cur, content in inserts.values():
        where = _block_context(parents, cur) if _to_block(cur, content) and not as_json \
            else None
        if where is not None:
            converted.append((cur, content, where))
        else:
            edits.extend(_insert_edits(text, parents, cur, content, style, -depth[id(cur)]))
    for cur, content, where in converted:
        edits = _flow_to_block(text, cur, content, where, edits, style)
    return edits


class _Parents:
    """Where each node of one item stands: id(node) -> (parent node, key node or None,
    depth), from one walk of the item made on the first question (the editor asks several
    per item; a walk per question was a fifth of the rendering time)."""

    def __init__(self, root):
        self.root = root
        self._at: dict | None = None

    def locate(self, target):
        """(parent node, key node or None, depth) of `target`; (None, None, 0) for the root
        itself or a node not found."""
        if self._at is None:
            at: dict = {}
            stack = [(self.root, 0)]
            while stack:
                n, d = stack.pop()
                if isinstance(n, yaml.MappingNode):
                    for k, v in n.value:
                        at.setdefault(id(v), (n, k, d + 1))
                        stack.append((v, d + 1))
                elif isinstance(n, yaml.SequenceNode):
                    for v in n.value:
                        at.setdefault(id(v), (n, None, d + 1))
                        stack.append((v, d + 1))
            self._at = at
        return self._at.get(id(target), (None, None, 0))


def _key_and_parent(parents: _Parents, target):
    """(key node, mapping node) whose value is `target`; (None, None) otherwise."""
    parent, key, _ = parents.locate(target)
    return (key, parent) if isinstance(parent, yaml.MappingNode) else (None, None)


def _block_context(parents: _Parents, target):
    """("entry", None) when `target` is an entry of a block sequence, ("value", key node)
    when it is the value of a block mapping, None otherwise (inside a flow collection)."""
    parent, key, _ = parents.locate(target)
    if parent is None or parent.flow_style is True:
        return None
    return ("value", key) if isinstance(parent, yaml.MappingNode) else ("entry", None)


def _to_block(cur, content) -> bool:
    """True when `cur` is a one-line flow mapping that receives a new collection: it is
    then rewritten in block style, so the result stays readable."""
    return (isinstance(cur, yaml.MappingNode) and cur.flow_style is True and cur.value
            and cur.start_mark.line == cur.end_mark.line
            and any(isinstance(v, (dict, list)) for v in content.values()))


def _flow_to_block(text, cur, content, where, edits, style) -> list:
    """`edits` with those inside the flow mapping `cur` replaced by one edit that rewrites
    it as block lines: its keys with their (edited) value text kept verbatim, then the new
    keys of `content` in block style. `where` is _block_context's answer for `cur`."""
    unit, seq_offset, nl, *_ = style
    start, end = cur.start_mark.index, cur.end_mark.index
    # an insertion right after the closing bracket (a new key after the mapping holding
    # it, at the end of a text without a final line break) is not inside it
    inner = [e for e in edits if start <= e[0] < end and e[1] <= end]
    rest = [e for e in edits if not (start <= e[0] < end and e[1] <= end)]
    flow_text = splice_in(text, start, end, inner)
    parsed = yaml.compose(flow_text, Loader=Loader)
    mode, key_node = where
    if mode == "entry":
        col = cur.start_mark.column
    else:
        col = key_node.start_mark.column + unit
    lines = [f"{flow_text[k.start_mark.index:k.end_mark.index]}: "
             f"{flow_text[v.start_mark.index:v.end_mark.index]}" for k, v in parsed.value]
    lines += [ln[col:] for ln in emit.block(content, col, unit, seq_offset)]
    pad = " " * col
    # a comment after the flow mapping, on its line, stays on that line (the key's, or the
    # entry's first)
    stop = line_end(text, end)
    tail = text[end:stop].rstrip("\r\n")
    comment = tail if tail.strip().startswith("#") else ""
    end += len(comment)
    if mode == "entry":
        new = lines[0] + comment + "".join(nl + pad + ln for ln in lines[1:])
        rest.append((start, end, new))
    else:
        colon = text.rfind(":", key_node.end_mark.index, start)
        rest.append((colon + 1, end, comment + "".join(nl + pad + ln for ln in lines)))
    return rest


def _insert_edits(text, parents: _Parents, cur, content, style, rank=0) -> list:
    """The edits that insert `content` (a dict of new keys or a list of new entries) into
    the node `cur`; `rank` orders insertions at one offset (smaller first)."""
    if isinstance(cur, yaml.ScalarNode):
        return _replace_null(text, parents, cur, content, style, rank)
    if cur.flow_style is True:
        close = _flow_close(text, cur)
        j = close - 1
        while j > cur.start_mark.index and text[j] in " \t\r\n":
            j -= 1
        empty = not cur.value
        if style[4]:          # a JSON document: JSON keys and values
            parts = ([f"{json_text(str(k))}: {json_text(v)}" for k, v in content.items()]
                     if isinstance(content, dict) else [json_text(v) for v in content])
        else:
            parts = ([f"{emit.key(k)}: {emit.flow(v)}" for k, v in content.items()]
                     if isinstance(content, dict) else [emit.flow(v) for v in content])
        return [(j + 1, j + 1, ("" if empty else ", ") + ", ".join(parts))]
    if isinstance(cur, yaml.MappingNode):
        return _add_keys(text, cur, content, style, rank)
    # block sequence: new entries after the last one, at its dash column
    unit, seq_offset, nl, *_ = style
    if not cur.value:
        raise Unsupported("empty block sequence")
    first = cur.value[0]
    dash = dash_column(text, first)
    offset = first.start_mark.column - dash
    lines = []
    for item in content:
        body = (emit.block(item, dash + offset, unit, seq_offset) if isinstance(item, (dict, list))
                and item else [" " * (dash + offset) + emit.flow(item)])
        lines.append(" " * dash + "-" + " " * (offset - 1) + body[0][dash + offset:])
        lines.extend(body[1:])
    pos = line_end(text, content_end(cur))
    prefix = break_before(text, pos, nl)
    return [(pos, pos, prefix + nl.join(lines) + nl, rank)]


def _replace_null(text, parents: _Parents, cur, content, style, rank) -> list:
    """`key:` with a null value: the new collection goes below the key line (in a flow
    mapping it replaces the null, in flow style). A null written with a tag, an anchor or
    quotes/block style (`!!null |`) raises Unsupported."""
    unit, seq_offset, nl, *_ = style
    if cur.style or (cur.end_mark.index > cur.start_mark.index
                     and text[cur.start_mark.index] in "!&"):
        raise Unsupported("null with a tag, an anchor or a style")
    key_node, parent = _key_and_parent(parents, cur)
    if key_node is None:
        raise Unsupported("null outside a mapping")
    if parent.flow_style is True:
        start, end = cur.start_mark.index, cur.end_mark.index
        new = json_text(content) if style[4] else emit.flow(content)
        if start == end:      # `{a: }`: the empty null sits right after the colon
            return [(start, end, " " + new, rank)]
        return [(start, end, new, rank)]
    col = key_node.start_mark.column + (unit if isinstance(content, dict) else seq_offset)
    lines = emit.block(content, col, unit, seq_offset)
    pos = line_end(text, cur.end_mark.index)
    start = cur.start_mark.index
    while start > 0 and text[start - 1] == " " and cur.end_mark.index > start:
        start -= 1
    out = [(start, cur.end_mark.index, "")]
    prefix = break_before(text, pos, nl)
    out.append((pos, pos, prefix + nl.join(lines) + nl, rank))
    return out


def _add_keys(text, cur, content: dict, style, rank) -> list:
    """New keys of the block mapping `cur`: a key with an `insert_before` sibling present
    goes on the line before it, the others after the mapping's last entry."""
    unit, seq_offset, nl, insert_before, _ = style
    if not cur.value:
        raise Unsupported("empty block mapping")
    col = cur.value[0][0].start_mark.column
    out = []
    rest = dict(content)
    for k in list(rest):
        before = insert_before.get(k)
        found = child(cur, before) if before else None
        if found is not None:
            pos = line_start(text, found[0].start_mark.index)
            lines = emit.block({k: rest.pop(k)}, col, unit, seq_offset)
            out.append((pos, pos, nl.join(lines) + nl, rank))
    if rest:
        pos = line_end(text, content_end(cur))
        prefix = break_before(text, pos, nl)
        lines = emit.block(rest, col, unit, seq_offset)
        out.append((pos, pos, prefix + nl.join(lines) + nl, rank))
    return out


def splice_in(text: str, start: int, end: int, edits) -> str:
    """text[start:end] with `edits` (offsets into the whole `text`) applied."""
    return splice(text[start:end], [(e[0] - start, e[1] - start) + tuple(e[2:])
                                    for e in edits])


def splice(text: str, edits) -> str:
    """`text` with the edits (start, end, replacement[, rank]) applied; edits must not
    overlap (AssertionError otherwise)."""
    out, pos = [], 0
    # At one offset: deeper insertions (larger column, smaller 4th element) come first.
    for start, end, new, *_ in sorted(edits, key=lambda e: (e[0], e[1], e[3] if len(e) > 3
                                                              else 0)):
        if start < pos:
            raise AssertionError("overlapping text edits")
        if start == end == pos and start and text[start - 1] != "\n" and out and \
                out[-1].endswith("\n") and new[:1] in ("\n", "\r"):
            # a second insertion where the text has no line break (its end): the one
            # before it ended the line already, so its own break_before would leave an
            # empty line
            new = new[2:] if new.startswith("\r\n") else new[1:]
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)

