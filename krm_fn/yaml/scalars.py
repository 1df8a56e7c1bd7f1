"""How a value is written into an item in place: a scalar node's replacement text (kept in
the block style it had where it can be), and the JSON spelling of edits into an item written
as JSON (krm_fn.yaml.spans uses both)."""
from __future__ import annotations

import yaml

from krm_fn.yaml import emit


def is_json(text: str, node) -> bool:
    """Whether the item `node` is written as JSON (a `{` flow mapping whose keys are all
    double-quoted): its edits are then written as JSON too, so the file stays JSON."""
    return (isinstance(node, yaml.MappingNode) and node.flow_style is True
            and text.startswith("{", node.start_mark.index)
            and all(isinstance(k, yaml.ScalarNode) and k.style == '"' for k, _ in node.value))


def json_text(value) -> str:
    """`value` (plain data) as JSON text, on one line."""
    import json
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def scalar_text(text: str, cur, value) -> str:
    """Replacement text for the scalar node `cur`. A literal block (`|`, `|-`) given a new
    multi-line string stays a literal block with the same header, indentation and trailing
    lines (so a JSON value in a ConfigMap keeps its layout); a folded block (`>`) stays
    folded with its line breaks when krm_fn.yaml.folded can map them onto the new value; any
    other block scalar becomes a one-line scalar followed by the line break the block's
    span included."""
    span = text[cur.start_mark.index:cur.end_mark.index]
    if cur.style not in ("|", ">"):
        return emit.scalar(value)
    header, _, rest = span.partition("\n")
    old = cur.value
    trail_old = len(old) - len(old.rstrip("\n"))
    if (cur.style == "|" and isinstance(value, str) and "\n" in value.rstrip("\n")
            and len(value) - len(value.rstrip("\n")) == trail_old
            and not value.startswith((" ", "\n")) and "\r" not in span + value
            and not any(ch.isdigit() for ch in header)
            and all(ch.isprintable() or ch == "\t" for ch in value.replace("\n", ""))):
        raw_lines = rest.split("\n")
        count = len(old.rstrip("\n").split("\n"))
        indent = min((len(ln) - len(ln.lstrip(" ")) for ln in raw_lines[:count] if ln.strip()),
                     default=2)
        body = "".join((" " * indent + ln if ln else "") + "\n"
                       for ln in value.rstrip("\n").split("\n"))
        return header + "\n" + body + "\n".join(raw_lines[count:])
    if cur.style == ">" and isinstance(value, str):
        from krm_fn.yaml.folded import refold
        kept = refold(span, old, value)
        if kept is not None:
            return kept
    tail = span[len(span.rstrip("\r\n")):]
    return emit.scalar(value) + (tail[:2] if tail.startswith("\r\n") else tail[:1])
