"""Convert golden cases from the old layout (input.yaml: the whole ResourceList with its
functionConfig; expected.yaml: the whole stdout) to the kyaml-style layout of
tests/testdata/README.md (config.yaml, input.yaml, expected.yaml, results.yaml), checking
that the new files compose back to the old texts byte for byte.

    python -m tests.tools.split_case [CASE_DIR...]     (default: every case under tests/testdata)

A case already in the new layout (it has config.yaml or results.yaml) is left alone. A case
whose functionConfig is not the last top-level key of input.yaml keeps it there (a raw
ResourceList; tests/testdata/README.md). Useful when merging a branch that added or
regenerated cases in the old layout: split them, then run tests/test_golden.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tests.helpers import (CONFIG, EXPECTED, INPUT, RESULTS, TESTDATA, case_input, case_output,
                           split_output)


def split_input(text: str) -> tuple[str, str | None]:
    """(input.yaml text, config.yaml text or None) of an old-layout input ResourceList."""
    i = text.rfind("\nfunctionConfig:\n")
    if i < 0:
        return text, None
    tail = text[i + len("\nfunctionConfig:\n"):].splitlines(True)
    if not all(line == "\n" or line.startswith("  ") for line in tail):
        return text, None                   # not a plain last entry: keep the raw envelope
    return text[:i + 1], "".join(line if line == "\n" else line[2:] for line in tail)


def convert(d: Path) -> str:
    """Convert case directory `d` in place; returns what was done (one line)."""
    if (d / CONFIG).exists() or (d / RESULTS).exists():
        return f"{d.name}: already converted"
    old_in, old_out = (d / INPUT).read_text("utf-8"), (d / EXPECTED).read_text("utf-8")
    items, config = split_input(old_in)
    body, res = split_output(old_out, config)
    (d / INPUT).write_text(items, encoding="utf-8")
    if config is not None:
        (d / CONFIG).write_text(config, encoding="utf-8")
    (d / EXPECTED).write_text(body, encoding="utf-8")
    if res is not None:
        (d / RESULTS).write_text(res, encoding="utf-8")
    assert case_input(d) == old_in, f"{d}: input does not compose back"
    assert case_output(d) == old_out, f"{d}: output does not compose back"
    return f"{d.name}: {'config + ' if config is not None else ''}input, expected" + (
        ", results" if res is not None else "")


def main(argv: list[str]) -> None:
    dirs = [Path(a) for a in argv] or sorted(p for p in TESTDATA.iterdir()
                                             if (p / INPUT).exists())
    for d in dirs:
        print(convert(d))


if __name__ == "__main__":
    main(sys.argv[1:])
