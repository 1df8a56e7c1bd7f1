"""Shared test helpers: run the real CLI in a subprocess, split ResourceList output."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = Path(__file__).resolve().parent / "testdata"
UPDATE = os.environ.get("KRM_FN_UPDATE_GOLDEN") == "1"


def run_cli(args: list[str], stdin: str | bytes = b"", cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m krm_fn ARGS` with `stdin`; returns the CompletedProcess (text)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "krm_fn", *args], input=data, capture_output=True,
                       cwd=cwd, env=env, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(),
                                       p.stderr.decode())


def without_results(text: str) -> str:
    """ResourceList text up to its top-level `results:` key (krm-fn writes it last)."""
    m = re.search(r"\n *results:\r?\n", text)
    return text if m is None else text[: m.start() + 1]


def load(text: str) -> dict:
    return yaml.safe_load(text)


def item(out: dict, kind: str, name: str) -> dict:
    for it in out["items"]:
        if it["kind"] == kind and it["metadata"]["name"] == name:
            return it
    raise AssertionError(f"no {kind} {name} in output")


def results(out: dict, severity: str | None = None) -> list[dict]:
    return [r for r in out.get("results") or [] if severity is None or r["severity"] == severity]


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def check_golden(path: Path, actual: str) -> None:
    """Compare `actual` with the golden file at `path` (KRM_FN_UPDATE_GOLDEN=1 rewrites it)."""
    if UPDATE:
        path.write_text(actual)
        return
    assert path.exists(), f"missing golden file {path}; run with KRM_FN_UPDATE_GOLDEN=1"
    expected = path.read_text()
    assert actual == expected, f"output differs from {path}"
