"""Format the rows of `krm-fn verify`: a text table for people, JSON for machines. Pure."""
from __future__ import annotations

import json

HEADER = ("CHECK", "EXPECTED", "FOUND", "RESULT")
MAX_CELL = 48


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def failed(rows) -> bool:
    """True when any row is a mismatch."""
    return any(r.ok is False for r in rows)


def summary(rows) -> str:
    """`verify: PASS (9 ok, 3 skipped)` or `verify: FAIL (2 mismatches, 8 ok, 1 skipped)`."""
    bad = sum(r.ok is False for r in rows)
    good = sum(r.ok is True for r in rows)
    skipped = sum(r.ok is None for r in rows)
    parts = ([f"{bad} mismatch" + ("es" if bad != 1 else "")] if bad else []) + \
        [f"{good} ok", f"{skipped} skipped"]
    return f"verify: {'FAIL' if bad else 'PASS'} ({', '.join(parts)})"


def table(rows) -> str:
    """The rows as an aligned table (columns CHECK, EXPECTED, FOUND, RESULT; cells longer
    than MAX_CELL characters are cut with "..."), then one `CHECK: detail` line per mismatch
    and per skipped check with a reason, then the summary line. Newline-terminated."""
    cells = [HEADER] + [(r.check, _cell(r.expected) or "-", _cell(r.found) or "-", r.result)
                        for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3] for c in cells]
    notes = [f"{r.check}: {r.detail}" for r in rows if r.ok is False and r.detail]
    notes += [f"{r.check} (skipped): {r.detail}" for r in rows if r.ok is None and r.detail]
    if notes:
        lines.append("")
        lines += notes
    lines += ["", summary(rows)]
    return "\n".join(lines) + "\n"


def as_json(rows, expected, root: str, extra: dict | None = None) -> str:
    """`{"ok": bool, "root": root, "expected": Expected.as_dict(), ...extra, "checks":
    [{check, expected, found, ok, detail, result}, ...]}` as indented JSON, newline-terminated."""
    doc = {"ok": not failed(rows), "root": root, "expected": expected.as_dict()}
    doc.update(extra or {})
    doc["checks"] = [r.as_dict() for r in rows]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
