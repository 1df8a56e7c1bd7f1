"""The documents of a multi-document YAML stream as text: what deleting one of them
removes (`krm-fn run --drop-local-config`), so every other document comes out byte for
byte, and the `---` line a stream of JSON documents starts with (`json_first`)."""
from __future__ import annotations


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
        end = len(text) if i == n - 1 else _marker(text, spans[i].end, spans[i + 1].start,
                                                   last=False)
        out.append((start, spans[i].end if end is None else end, ""))
    return out


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
