"""The documents of a multi-document YAML stream as text: what deleting one of them
removes (`krm-fn run --drop-local-config`), so every other document comes out byte for
byte, the `---` line a stream of JSON documents starts with (`json_first`), and where each
item stands (`Span`, `item_span`)."""
from __future__ import annotations

import yaml

from krm_fn.yaml.spans import content_end, line_end


def drop_edits(text: str, spans, drop) -> list:
    """Text edits (start, end, "") of `text` that delete the documents `drop` (indices into
    `spans`, each document's node span with .start and .end offsets): item i's text from
    its own `---` line (the start of the text for the first item) to the next document's
    `---` line (the end of the text for the last), so what follows an item up to the next
    marker (its trailing comments, a `...` end marker) goes with it, and what follows the
    item before it stays with that one: a kept document comes out byte for byte."""
    n = len(spans)
    out = []
    for i in sorted(drop):
        start = 0 if i == 0 else _marker(text, spans[i - 1].end, spans[i].start, last=True)
        if start is None:
            start = spans[i - 1].end
        elif i:                 # its own directives (%TAG, %YAML) go with it
            start = _directive(text, spans[i - 1].end, start, start)
        end = len(text) if i == n - 1 else _marker(text, spans[i].end, spans[i + 1].start,
                                                   last=False)
        if end is not None and i < n - 1:   # the next document's directives stay with it
            end = _directive(text, spans[i].end, end, end)
        out.append((start, spans[i].end if end is None else end, ""))
    return out


def _directive(text: str, lo: int, hi: int, none: int) -> int:
    """The offset of the first line in text[lo:hi] that is a directive (`%` at column 0:
    between two documents' nodes there are only comments, blank lines, directives and
    markers), else `none`."""
    pos = text.find("%", lo, hi)
    while pos != -1:
        if pos == 0 or text[pos - 1] == "\n":
            return pos
        pos = text.find("%", pos + 1, hi)
    return none


def _marker(text: str, lo: int, hi: int, last: bool) -> int | None:
    """The offset of the last (`last`) or first line in text[lo:hi] that is a `---`
    document-start marker (at column 0, then a space, a tab, a line break or the end);
    None when there is none. Between two documents' nodes there are only comments, blank
    lines, directives and markers, so no scalar's line is taken for one."""
    found = None
    pos = text.find("---", lo, hi)
    while pos != -1:
        after = text[pos + 3:pos + 4]
        if (pos == 0 or text[pos - 1] == "\n") and after in ("", " ", "\t", "\r", "\n"):
            if not last:
                return pos
            found = pos
        pos = text.find("---", pos + 3, hi)
    return found


def json_first(text: str, documents: int, nl: str) -> str:
    """`text` with a `---` line put first when it holds several documents and starts with a
    JSON object: kubectl reads a stream that starts with `{` as consecutive JSON objects
    only (k8s.io/apimachinery yaml.NewYAMLOrJSONDecoder), which refuses the `---` between
    documents, while kustomize, kpt and krm-fn read one YAML stream; a stream that starts
    with `---` is YAML to every one of them, and each JSON document is YAML too."""
    if documents > 1 and text.lstrip(" \t\r\n").startswith("{"):
        return "---" + nl + text
    return text


def final_block_edit(text: str, root) -> tuple | None:
    """The text edit (start, end, header) that makes the block scalar `text` ends with safe
    to append after, or None: when `text` has no final line break and the last scalar of
    the document `root` (a libyaml node composed from `text`) is a block scalar that keeps
    its final line break (clip `|`, `>` or keep `+`), a line break written after it would
    become part of its value (`echo hi` would read `echo hi\\n`); its header gets the strip
    indicator `-` instead, which reads the same value with the line break after it."""
    if not text or text.endswith(("\n", "\r")):
        return None
    node = root
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.value:
        node = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
    if not isinstance(node, yaml.ScalarNode) or node.style not in ("|", ">") or \
            node.end_mark.index < len(text.rstrip(" \t")):
        return None
    i = node.start_mark.index
    if text[i:i + 1] not in ("|", ">"):
        return None             # a tag or an anchor before the indicator
    j = i + 1
    while j < len(text) and text[j] in "+-0123456789":
        j += 1
    head = text[i + 1:j]
    if "-" in head:
        return None
    return (i, j, text[i] + head.replace("+", "") + "-")


def end_safely(text: str) -> str:
    """`text` (one input file of a stream) with final_block_edit applied to its last
    document, so that the documents joined after it do not change it; `text` itself when
    it ends with a line break or does not parse (the parser then reports it)."""
    if not text or text.endswith(("\n", "\r")):
        return text
    from krm_fn.yaml.load import Loader
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=Loader) if n is not None]
    except yaml.YAMLError:
        return text
    edit = final_block_edit(text, nodes[-1]) if nodes else None
    return text if edit is None else text[:edit[0]] + edit[2] + text[edit[1]:]


def keep_final_block(text: str, root, edits: list) -> None:
    """Append to `edits` the final_block_edit of `text` (whose document is `root`), unless
    an edit already covers that header: something is about to be written after the end."""
    fix = final_block_edit(text, root)
    if fix is not None and not any(e[0] < fix[1] and fix[0] < e[1] for e in edits):
        edits.append(fix)


def line_break(text: str) -> str:
    """The line break most lines of `text` end with: "\\r\\n" when more than half do, else
    "\\n" (lines krm-fn inserts take the style of the item or stream they go into, not
    that of a stray line elsewhere)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and 2 * crlf > text.count("\n") else "\n"


def append_documents(text: str, objects: list, nl: str, as_json: bool) -> str:
    """`text` (a multi-document stream) with `objects` (plain data) appended, each a
    document after a `---` line ending with `nl`; `as_json`: the stream is JSON documents,
    so they are JSON too (JSON in, JSON out). A block scalar that ends `text` without a
    final line break keeps its value (end_safely)."""
    if text and not text.endswith("\n"):
        text = end_safely(text) + nl
    if as_json:
        import json
        return text + "".join(("---\n" + json.dumps(o, indent=2, ensure_ascii=False) + "\n")
                              .replace("\n", nl) for o in objects)
    from krm_fn.yaml import emit
    return text + "".join(("---\n" + emit.to_yaml(o)).replace("\n", nl) for o in objects)


class Span:
    """Where one item stands in the input text: [start, end) character offsets and the
    column its first line starts at (its indentation)."""

    __slots__ = ("start", "end", "column")

    def __init__(self, start: int, end: int, column: int) -> None:
        self.start = start
        self.end = end
        self.column = column


def item_span(text: str, node) -> Span:
    """The Span of the item whose node is `node` in `text`; a block mapping whose
    properties (`--- !!map`, `- &a`) stand on a line before its first entry starts at that
    entry, the properties outside it."""
    start = node.start_mark
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.value and \
            node.flow_style is not True:
        first = node.value[0][0] if isinstance(node, yaml.MappingNode) else node.value[0]
        if first.start_mark.line > start.line and isinstance(node, yaml.MappingNode):
            start = first.start_mark
    return Span(start.index, line_end(text, content_end(node)), start.column)
