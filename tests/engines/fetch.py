"""Serving engines' own source files, for tests that run the engine's code at the releases
krm-fn claims: the sdist of `package==version` from PyPI (its simple index, JSON form,
https://peps.python.org/pep-0691/), checked against the sha256 pinned here, kept under
~/.cache/krm-fn/engines, and the files asked for read from it. Without network the test
is skipped, or fails under CI=true (as tests/gobuild.py does for Go).

`python -m tests.engines.fetch` downloads every pinned sdist.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tarfile
import urllib.request
from pathlib import Path

CACHE = Path(os.environ.get("KRM_FN_ENGINE_CACHE",
                            Path.home() / ".cache" / "krm-fn" / "engines"))
INDEX = "https://pypi.org/simple/{package}/"
# (package, version): the sdist's sha256, as PyPI's simple index lists it
PINNED = {
    ("vllm", "0.5.4"): "90cb96d93c45924cc7d797c0eaef5b7a9779fbba03c3fa1b0ebb134986afd0e0",
    ("vllm", "0.9.1"): "c5ad11603f49a1fad05c88debabb8b839780403ce1b51751ec4da4e8a838082c",
    ("vllm", "0.10.0"): "a44e9013db26082a82c3931ed8772ac884d6d60566d36ecdb0e8dc01c65b241a",
    ("vllm", "0.10.2"): "57608f44cf61f5d80fb182c98e06e524cb2925bb528258a7b247c8e43a52d13e",
    ("vllm", "0.11.0"): "f435a64c24e9c4178d657a76f8edd8548ddc444012f7d06a9f79ac3a6392bfae",
    ("vllm", "0.11.1"): "672af6f0a56117b9e84b8caacbfe437afba9f366cef8e524dcc5f3f03edd954e",
    ("vllm", "0.20.0"): "a6d50152936ee292455af3ffbe359f7a284ac43bf3b68caccf29f368e196cc72",
    ("vllm", "0.21.0"): "05ff89c3e926b88b77d7878e317a659ffba678afc21c1d48952037aa5457f058",
    ("vllm", "0.31.0"): "dde46f1efbe846e5bd0c5c4ec6ec71842c42254c7ff3d9bebb2a57028715d380",
    ("vllm", "0.34.0"): "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113",
    # gunicorn's own argument and GUNICORN_CMD_ARGS parsing: tests/engines/test_worker_args.py
    ("gunicorn", "23.0.0"): "f014447a0101dc57e294f6c18ca6b40227a4c90e9bdb586042628030cba004ec",
    # uvicorn's click command and Config: tests/engines/test_worker_args.py
    ("uvicorn", "0.38.0"): "fd97093bdd120a2609fc0d3afe931d4d4ad688b6e75f0f929fde1bc36fe0e91d",
    # llama.cpp as llama-cpp-python vendors it (vendor/llama.cpp): tests/engines/llama.py
    ("llama-cpp-python", "0.3.36"):
        "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
}


class Unavailable(RuntimeError):
    """The sdist could not be had (no network, not on the index, a wrong hash)."""


def stem(package: str, version: str) -> str:
    """The sdist's file name without `.tar.gz`, also its top directory: the project name
    normalised with `_` (https://peps.python.org/pep-0625/), `llama_cpp_python-0.3.36`."""
    return f"{package.replace('-', '_')}-{version}"


def sdist(package: str, version: str) -> Path:
    """The sdist of package==version in CACHE, downloaded when absent; raises
    Unavailable."""
    want = PINNED[(package, version)]
    name = f"{stem(package, version)}.tar.gz"
    path = CACHE / name
    if path.is_file() and _sha256(path) == want:
        return path
    req = urllib.request.Request(INDEX.format(package=package),
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            files = json.load(r)["files"]
        entry = next((f for f in files if f["filename"] == name), None)
        if entry is None:
            raise Unavailable(f"{name} is not on {INDEX.format(package=package)}")
        if entry["hashes"].get("sha256") != want:
            raise Unavailable(f"{name}: the index lists sha256 {entry['hashes'].get('sha256')}, "
                              f"pinned {want}")
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        with urllib.request.urlopen(entry["url"], timeout=300) as r, open(tmp, "wb") as out:
            while chunk := r.read(1 << 20):
                out.write(chunk)
    except OSError as e:
        raise Unavailable(f"{name}: {e}") from e
    got = _sha256(tmp)
    if got != want:
        tmp.unlink()
        raise Unavailable(f"{name}: downloaded sha256 {got} does not match")
    tmp.replace(path)
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def source(package: str, version: str, path: str) -> str:
    """The text of `path` (inside the package, such as "vllm/envs.py") in the sdist of
    package==version (kept beside it once read); raises Unavailable, or KeyError when the
    sdist has no such file."""
    kept = CACHE / f"{package}-{version}" / path
    if kept.is_file():
        return kept.read_text()
    with tarfile.open(sdist(package, version)) as tar:
        member = tar.getmember(f"{stem(package, version)}/{path}")
        text = tar.extractfile(member).read().decode()
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(text)
    return text


def package_dir(package: str, version: str, top: str) -> Path:
    """The directory holding the sdist's top-level package `top` (e.g. "gunicorn"),
    extracted beside the sdist once, to put on sys.path of a subprocess; raises
    Unavailable."""
    root = CACHE / f"{package}-{version}-tree"
    if not (root / top / "__init__.py").is_file():
        prefix = f"{stem(package, version)}/{top}/"
        with tarfile.open(sdist(package, version)) as tar:
            members = [m for m in tar.getmembers()
                       if m.name.startswith(prefix) and m.isfile()]
            for m in members:
                m.name = m.name[len(stem(package, version)) + 1:]
            tar.extractall(root, members=members)
    return root


def require(package: str, version: str, path: str) -> str:
    """source(...), or skip the calling test without it (fail under CI=true)."""
    return _or_skip(source, package, version, path)


def require_dir(package: str, version: str, top: str) -> Path:
    """package_dir(...), or skip the calling test without it (fail under CI=true)."""
    return _or_skip(package_dir, package, version, top)


def _or_skip(get, *args):
    import pytest
    try:
        return get(*args)
    except Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e}, and CI=true: the engine sources must be downloadable")
        pytest.skip(str(e))


if __name__ == "__main__":
    for package, version in PINNED:
        print(sdist(package, version))
