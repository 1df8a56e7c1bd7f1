"""Build the Go programs the tests run as judges (tests/harness: the kubelet's managers and
configuration; tests/controlplane: etcd, kube-apiserver and kube-scheduler; tests/kustomize:
standalone kustomize), each from its own module file pinned to exact releases with its
`go.sum` committed.

`build(spec)` builds one program once per content of its sources, module file and Go
version into `$KRM_FN_HARNESS_CACHE` (default `~/.cache/krm-fn/harness`), outside the
checkout, and removes that program's builds once they are a day old and a newer one is made
(Go's own module and build caches, `go env GOMODCACHE GOCACHE`, hold a few GB more and make
a rebuild after a change quick). The first build on a machine downloads the modules through
the Go module proxy and takes minutes; a line on standard error says so.

Without Go the tests that need one of these programs are skipped, except under `CI=true`,
where that is a failure (`require_go`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("KRM_FN_HARNESS_CACHE",
                            Path.home() / ".cache" / "krm-fn" / "harness"))


@dataclass(frozen=True)
class GoProgram:
    """One Go program of the tests: `name` (the cached binary's prefix, e.g.
    "harness-1.37"), `src` (its module directory), `modfile` (file name in `src`; its
    .sum beside it), `package` (what `go build` builds, "." or an import path), `tags`
    (build tags), `what` (said on standard error while it builds)."""

    name: str
    src: Path
    modfile: str = "go.mod"
    package: str = "."
    tags: tuple = ()
    what: str = ""
    ldflags: str = field(default="")


def required(gomod: Path, module: str) -> str:
    """The version of `module` that module file `gomod` requires ("v1.37.2"), from a
    `require module v...` line or a line of a `require (...)` block. Raises ValueError
    when it requires none."""
    m = re.search(rf"^(?:require )?\s*{re.escape(module)} (v\S+)", gomod.read_text(), re.M)
    if m is None:
        raise ValueError(f"{gomod} requires no {module}")
    return m.group(1)


def go() -> str | None:
    """The `go` command, or None."""
    return shutil.which("go")


def require_go(why: str) -> str:
    """The `go` command; without it pytest skips the caller, or fails it under CI=true.
    `why`: what Go is needed for ("to build the kubelet harness (tests/harness)")."""
    import pytest
    found = go()
    if found is None:
        msg = f"Go is needed {why}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + ", and CI=true: install Go 1.26 or later")
        pytest.skip(msg)
    return found


class BuildError(RuntimeError):
    """`go build` failed; the message holds the command and Go's output."""


def _key(spec: GoProgram) -> str:
    h = hashlib.sha256()
    mod = spec.src / spec.modfile
    for path in sorted(spec.src.glob("*.go")) + [mod, mod.with_suffix(".sum")]:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"{spec.package}\0{spec.tags}\0{spec.ldflags}\0".encode())
    h.update(subprocess.run([go() or "go", "version"], capture_output=True,
                            text=True).stdout.encode())
    return h.hexdigest()[:16]


def build(spec: GoProgram) -> Path:
    """The binary of `spec`, built when its sources or module file changed.

    Raises BuildError with Go's output when the build fails."""
    exe = CACHE / f"{spec.name}-{_key(spec)}"
    if exe.exists():
        return exe
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
    cmd = [go() or "go", "build", f"-modfile={spec.modfile}"]
    if spec.tags:
        cmd.append("-tags=" + ",".join(spec.tags))
    if spec.ldflags:
        cmd.append("-ldflags=" + spec.ldflags)
    cmd += ["-o", str(tmp), spec.package]
    print(f"building {spec.what or spec.name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=spec.src, capture_output=True, text=True)
    if proc.returncode:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"{' '.join(cmd)} (in {spec.src}) failed with exit code "
                         f"{proc.returncode}:\n{proc.stdout}{proc.stderr}")
    tmp.replace(exe)
    print(f"built {spec.name} in {time.monotonic() - started:.0f} s", file=sys.stderr,
          flush=True)
    stale = time.time() - 24 * 3600      # another checkout's test run may be using a newer one
    for old in CACHE.glob(f"{spec.name}-*"):
        if old != exe and not old.name.endswith(".tmp") and old.stat().st_mtime < stale:
            old.unlink(missing_ok=True)
    return exe


def run_json(spec: GoProgram, payload: object, timeout: int = 120) -> object:
    """Build `spec` (Go required as `require_go` says, for `spec.what`), run it with
    `payload` as JSON on its standard input and return its standard output decoded from
    JSON: the small judges of one kubelet function each (tests/controlplane/expand,
    tests/controlplane/sysctl). Raises CalledProcessError when it fails."""
    require_go(f"to build {spec.what or spec.name}")
    p = subprocess.run([str(build(spec))], input=json.dumps(payload), capture_output=True,
                       text=True, timeout=timeout, check=True)
    return json.loads(p.stdout)
