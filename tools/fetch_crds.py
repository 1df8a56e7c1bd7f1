"""Re-download the vendored CRDs of tests/controlplane/crds/ from the Go module proxy and
check them (or rewrite them) against tests/controlplane/crds/sources.json.

usage: python tools/fetch_crds.py [--update] [--only FILE...]

Run by hand; it needs the network and is not part of CI (tests/test_crds.py checks the
vendored files offline). Each entry of sources.json names a released module version
(`module`, `version`) whose zip the Go module proxy serves with the project's whole
repository tree at that tag (nested modules excepted), the `path` of the CRD file inside
it, the vendored `file` (relative to tests/controlplane/crds/) and its `sha256`.

Without --update: download, compare byte for byte with the vendored file and with the
recorded sha256; exit 1 on any difference. With --update: write the released file over the
vendored one and its sha256 into sources.json (to add a CRD or move to a new version,
edit the entry's module/version/path, then run with --update and review the diff).

The proxy is the first URL of $GOPROXY, else of `go env GOPROXY` (Go's default proxy); a
zip already in the local Go module cache ($GOMODCACHE/cache/download, `go env GOMODCACHE`) is used
instead of downloading it again (the cache holds what the proxy served, checked by go).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRDS = ROOT / "tests" / "controlplane" / "crds"
SOURCES = CRDS / "sources.json"


def escape(path: str) -> str:
    """Module path or version as the proxy protocol spells it (capitals -> '!' + lower)."""
    return "".join("!" + c.lower() if c.isupper() else c for c in path)


def go_env(name: str) -> str:
    """$NAME, else `go env NAME` ("" without go)."""
    value = os.environ.get(name)
    if value:
        return value
    try:
        return subprocess.run(["go", "env", name], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def proxy() -> str:
    for entry in go_env("GOPROXY").replace("|", ",").split(","):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    sys.exit("fetch_crds: no proxy URL in $GOPROXY or `go env GOPROXY`")


def modcache() -> Path | None:
    cache = go_env("GOMODCACHE")
    return Path(cache) if cache else None


_zips: dict = {}


def module_zip(module: str, version: str) -> zipfile.ZipFile:
    key = (module, version)
    if key not in _zips:
        rel = f"{escape(module)}/@v/{escape(version)}.zip"
        cache = modcache()
        cached = cache / "cache" / "download" / rel if cache else None
        if cached is not None and cached.is_file():
            data = cached.read_bytes()
        else:
            url = f"{proxy()}/{rel}"
            print(f"downloading {url}", file=sys.stderr)
            with urllib.request.urlopen(url, timeout=600) as r:
                data = r.read()
        _zips[key] = zipfile.ZipFile(io.BytesIO(data))
    return _zips[key]


def released(entry: dict) -> bytes:
    """The CRD file as released: `path` inside the module zip of `module@version`."""
    z = module_zip(entry["module"], entry["version"])
    return z.read(f"{entry['module']}@{entry['version']}/{entry['path']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true",
                    help="write the released files and their sha256 into the tree")
    ap.add_argument("--only", nargs="+", metavar="FILE",
                    help="only these entries (their `file`)")
    args = ap.parse_args(argv)
    sources = json.loads(SOURCES.read_text())
    bad = 0
    for entry in sources["files"]:
        if args.only and entry["file"] not in args.only:
            continue
        data = released(entry)
        digest = hashlib.sha256(data).hexdigest()
        target = CRDS / entry["file"]
        where = f"{entry['module']}@{entry['version']} {entry['path']}"
        if args.update:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if entry.get("sha256") != digest:
                print(f"{entry['file']}: sha256 {digest} ({where})")
            entry["sha256"] = digest
            continue
        problems = []
        if digest != entry.get("sha256"):
            problems.append(f"released sha256 {digest} != recorded {entry.get('sha256')}")
        if not target.is_file() or target.read_bytes() != data:
            problems.append("vendored file differs from the released one")
        for p in problems:
            print(f"{entry['file']}: {p} ({where})", file=sys.stderr)
        bad += bool(problems)
        if not problems:
            print(f"{entry['file']}: ok ({where})")
    if args.update:
        SOURCES.write_text(json.dumps(sources, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
