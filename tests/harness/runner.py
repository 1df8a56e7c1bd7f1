"""Build and run the kubelet harness (this directory) for each Kubernetes minor it covers.

The minors are the module files: `go.mod` (the newest) and `go.<minor>.mod`, each requiring
`k8s.io/kubernetes` at one exact release. `binary(minor)` builds `harness` for that minor
(tests/gobuild.py: once per content of the sources and module files, into
`$KRM_FN_HARNESS_CACHE`, about 80 MB each). `Harness(minor)` keeps one `harness serve`
process and sends it requests. `python -m tests.harness.runner` builds them all.

Without Go the tests that need a harness are skipped, except under `CI=true`, where that is
a failure (`require_go`).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests import gobuild

HERE = Path(__file__).resolve().parent
CACHE = gobuild.CACHE


def modfile(minor: str) -> Path:
    """The module file of `minor` ("1.37"): go.<minor>.mod, or go.mod for the newest."""
    own = HERE / f"go.{minor}.mod"
    return own if own.exists() else HERE / "go.mod"


def _release(path: Path) -> str:
    return gobuild.required(path, "k8s.io/kubernetes")


def releases() -> dict[str, str]:
    """{minor: k8s.io/kubernetes release} for every minor the harness is built for, oldest
    first, e.g. {"1.35": "v1.35.4", ..., "1.37": "v1.37.2"}."""
    out = {}
    for path in [HERE / "go.mod", *HERE.glob("go.*.mod")]:
        rel = _release(path)
        out[".".join(rel.lstrip("v").split(".")[:2])] = rel
    return dict(sorted(out.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))


go = gobuild.go
BuildError = gobuild.BuildError


def require_go() -> str:
    """The `go` command; without it pytest skips the caller, or fails it under CI=true."""
    return gobuild.require_go("to build the kubelet harness (tests/harness)")


def program(minor: str) -> gobuild.GoProgram:
    """The harness of `minor` as tests/gobuild.py builds it."""
    return gobuild.GoProgram(f"harness-{minor}", HERE, modfile(minor).name,
                             tags=(f"k8s_{minor.replace('.', '_')}",),
                             what=f"the kubelet harness for Kubernetes {minor} "
                                  f"({releases().get(minor)})")


def binary(minor: str) -> Path:
    """The harness for `minor`, built when its sources or module files changed.

    Raises BuildError with Go's output when the build fails."""
    return gobuild.build(program(minor))


def main() -> None:
    """`python -m tests.harness.runner`: build the harness of every minor, saying so."""
    for minor in releases():
        print(binary(minor))


if __name__ == "__main__":
    main()


class HarnessError(RuntimeError):
    """The harness could not read a request (a bug in the test that built it)."""


class Harness:
    """One `harness serve` process of `minor`; `call(command, input)` returns the output.

    The process is restarted after `RESTART` requests: each kubelet it builds keeps a
    sleeping reconcile loop of its CPU Manager."""

    RESTART = 1000

    def __init__(self, minor: str):
        self.minor, self.exe = minor, binary(minor)
        self.proc: subprocess.Popen | None = None
        self.count = 0

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.count >= self.RESTART:
            self.close()
            self.proc = subprocess.Popen([str(self.exe), "serve"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, bufsize=1)
            self.count = 0
        return self.proc

    def call(self, command: str, data: dict) -> dict:
        """The harness's output for `command` ("admit", ...) on `data`.

        Raises HarnessError when the harness refuses the request."""
        proc = self._start()
        proc.stdin.write(json.dumps({"command": command, "input": data}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        self.count += 1
        if not line:
            raise HarnessError(f"harness {self.minor} ended (exit {proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise HarnessError(reply["error"])
        return reply["output"]

    def close(self) -> None:
        """Stop the process."""
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc.stdout.close()
            self.proc = None
