"""Standalone `kustomize` for the end-to-end tests (tests/e2e), built from
`sigs.k8s.io/kustomize/kustomize/v5` at the exact release this directory's go.mod pins (a
`tool` directive; go.sum committed beside it) by tests/gobuild.py, which caches the binary.

v5.8.2 is the newest release the Go module proxy serves that builds with Go 1.26: v5.8.3
needs `sigs.k8s.io/kustomize/api` v0.21.3 and Go 1.27 (`go 1.27.0`). To move to another
release: `go get -tool sigs.k8s.io/kustomize/kustomize/v5@vX.Y.Z && go mod tidy` here, and
update docs/gitops.md.
"""
from __future__ import annotations

from pathlib import Path

from tests import gobuild

HERE = Path(__file__).resolve().parent
PACKAGE = "sigs.k8s.io/kustomize/kustomize/v5"


def release() -> str:
    """The kustomize release go.mod requires ("v5.8.2")."""
    return gobuild.required(HERE / "go.mod", PACKAGE)


def program() -> gobuild.GoProgram:
    return gobuild.GoProgram("kustomize", HERE, package=PACKAGE,
                             what=f"standalone kustomize {release()} (tests/kustomize)")


def binary() -> Path:
    """The built `kustomize`. Without Go: a skip, a failure under CI=true
    (gobuild.require_go); a failed build raises gobuild.BuildError (never a skip)."""
    gobuild.require_go("to build standalone kustomize (tests/kustomize)")
    return gobuild.build(program())
