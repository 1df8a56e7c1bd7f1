"""Rewriting the text of a folded block scalar (`>`) for a new value, keeping it folded.

A folded scalar's lines are joined with single spaces when read (YAML 1.2 spec, 8.1.3
"Folded Style": a line break between two non-empty lines at the block's indentation folds
to a space). KServe's `inferenceservice-config` and similar ConfigMaps hold JSON written
that way; when krm-fn changes a value inside the JSON, the new text keeps the block's
header, indentation and line breaks: each break of the old text is mapped onto the new
value through the unchanged parts around it, so a line keeps its words and only the changed
characters differ. Shapes outside the simple case (blank or more-indented lines, tabs,
trailing spaces, an indentation indicator, a change across a line break) return None and the
caller writes the value another way.
"""
from __future__ import annotations


def refold(span: str, old: str, new: str) -> str | None:
    """The text of the folded block scalar `span` (its header line and content lines, as
    in the input) rewritten to read as `new`; `old` is what it reads as now. None when the
    block is not a simple one (module docstring) or the change cannot keep its lines."""
    header, sep, rest = span.partition("\n")
    if not sep or any(ch.isdigit() for ch in header) or "\r" in span or "\t" in span:
        return None
    raw = rest.split("\n")
    n = len(raw)
    while n and not raw[n - 1].strip():
        n -= 1
    lines, trailing = raw[:n], raw[n:]
    if not lines:
        return None
    indent = len(lines[0]) - len(lines[0].lstrip(" "))
    body_lines = [ln[indent:] for ln in lines]
    if any(not b or b[0] == " " or b != b.rstrip(" ") or len(ln) - len(b) != indent
           for ln, b in zip(lines, body_lines)):
        return None
    body = " ".join(body_lines)
    end_old = old[len(body):]
    if not old.startswith(body) or old.rstrip("\n") != body or not new.endswith(end_old) \
            or new[:len(new) - len(end_old)].endswith("\n"):
        return None
    target = new[:len(new) - len(end_old)]
    if "\n" in target:
        return None
    # the join points (the space after each old line but the last), mapped into `target`
    joins, pos = [], 0
    for b in body_lines[:-1]:
        pos += len(b)
        joins.append(pos)
        pos += 1
    mapped = _map_positions(body, target, joins)
    if mapped is None:
        return None
    out, start = [], 0
    for j in mapped:
        out.append(target[start:j])
        start = j + 1
    out.append(target[start:])
    if any(not ln or ln[0] == " " or ln != ln.rstrip(" ") for ln in out):
        return None
    pad = " " * indent
    return header + "\n" + "\n".join(pad + ln for ln in out) + (
        "\n" + "\n".join(trailing) if trailing else "")


def _map_positions(old: str, new: str, positions: list) -> list | None:
    """Each position of `old` that holds a space inside an unchanged run of the old->new
    diff, as its position in `new`; None when one lies in a changed part."""
    import difflib          # only for a folded scalar whose text changes
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    out = []
    for p in positions:
        for tag, i1, i2, j1, _ in ops:
            if i1 <= p < i2:
                if tag != "equal" or new[j1 + p - i1] != " ":
                    return None
                out.append(j1 + p - i1)
                break
        else:
            return None
    return out
