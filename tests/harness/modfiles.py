#!/usr/bin/env python3
"""Write the Go module file of the kubelet harness for one Kubernetes release.

The harness (this directory) builds against `k8s.io/kubernetes` at one exact release per
minor, each with its own module file: `go.mod` for the newest minor, `go.<minor>.mod` for
the others (built with `go build -modfile=go.<minor>.mod`, which reads `go.<minor>.sum`).
`k8s.io/kubernetes` refers to its staging modules (`k8s.io/api`, `k8s.io/apimachinery`, ...)
as `v0.0.0` with `replace` lines into `./staging`; an out-of-tree consumer replaces each with
the published `v0.<minor>.<patch>` of the same release, which is what this writes, from the
release's own go.mod as the Go module proxy serves it.

Usage (needs Go and the module proxy; then commit the .mod and .sum files):
    tests/harness/modfiles.py 1.37.2 --main     # go.mod + go.sum
    tests/harness/modfiles.py 1.35.4            # go.1.35.mod + go.1.35.sum
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULE = "krm-fn.dev/tests/harness"


def release_gomod(version: str) -> str:
    """The go.mod text of k8s.io/kubernetes@v<version> (downloaded through the proxy)."""
    out = subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@v{version}"],
                         check=True, capture_output=True, text=True, cwd="/").stdout
    return Path(json.loads(out)["GoMod"]).read_text()


def modfile(version: str, module: str = MODULE) -> str:
    """The module file of `module` (default: the harness) for Kubernetes `version`
    ("1.37.2"); tests/controlplane uses it too."""
    _, minor, patch = version.split(".")
    text = release_gomod(version)
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/src/", text, re.M)
    gover = re.search(r"^go (\S+)", text, re.M).group(1)
    lines = [f"module {module}", "", f"go {gover}", "",
             f"require k8s.io/kubernetes v{version}", "", "replace ("]
    lines += [f"\t{m} => {m} v0.{minor}.{patch}" for m in staging]
    lines += [")", ""]
    return "\n".join(lines)


def tag(minor: str) -> str:
    """The build tag that selects the compat_<minor>.go files of `minor` ("1.37")."""
    return "k8s_" + minor.replace(".", "_")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version", help="a k8s.io/kubernetes release, e.g. 1.37.2")
    ap.add_argument("--main", action="store_true", help="write go.mod (the newest minor)")
    a = ap.parse_args()
    minor = ".".join(a.version.split(".")[:2])
    name = "go.mod" if a.main else f"go.{minor}.mod"
    (HERE / name).write_text(modfile(a.version))
    (HERE / name.replace(".mod", ".sum")).write_text("")
    # `go mod tidy` would add the imports of every minor's compat file (it ignores build
    # tags) and raise shared dependencies past the release's own; a build with -mod=mod
    # adds only what this minor's files import.
    subprocess.run(["go", "build", "-mod=mod", f"-modfile={name}", f"-tags={tag(minor)}",
                    "-o", "/dev/null", "."], check=True, cwd=HERE)
    print(f"wrote {name}")


if __name__ == "__main__":
    main()
