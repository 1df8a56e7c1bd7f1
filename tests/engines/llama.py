"""llama.cpp's own argument parser, built to run in the tests: `build()` compiles
llama.cpp's common library (common/arg.cpp `common_params_parse`, what llama-server parses
its argv and `LLAMA_ARG_*` env vars with) from the llama.cpp that the llama-cpp-python sdist
on PyPI vendors (pinned in tests/engines/fetch.py), and links tests/engines/llama_args/
main.cpp against it. The program parses its argv as llama-server does and prints
`threads T batch B hw H` (what the parser set, and std::thread::hardware_concurrency()) or
`refused`.

Built with cmake and ninja (Debian packages cmake, ninja-build, g++; .ci/run installs them)
at -O0, CPU backend only, once per sdist and driver source into `$KRM_FN_HARNESS_CACHE`
(~2.5 min on 2 cores). Without the tools or the sdist the caller is skipped, or fails under
CI=true.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from tests.engines import fetch
from tests.gobuild import CACHE

PACKAGE, VERSION = "llama-cpp-python", "0.3.36"
DRIVER = Path(__file__).parent / "llama_args" / "main.cpp"
TOOLS = ("cmake", "ninja", "g++")
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_C_FLAGS=-O0", "-DCMAKE_CXX_FLAGS=-O0",
               "-DGGML_NATIVE=OFF", "-DGGML_OPENMP=OFF", "-DLLAMA_CURL=OFF",
               "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
               "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON")   # the libraries find each other moved


class BuildError(RuntimeError):
    """cmake, ninja or g++ failed; the message holds the command and its output."""


def _run(cmd: list, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        raise BuildError(f"{' '.join(map(str, cmd))} failed with exit code "
                         f"{proc.returncode}:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}")


def build() -> Path:
    """The parser program, built when absent. Raises fetch.Unavailable without the sdist,
    BuildError when a build step fails."""
    h = hashlib.sha256(DRIVER.read_bytes())
    h.update(f"{fetch.PINNED[(PACKAGE, VERSION)]}\0{CMAKE_FLAGS}".encode())
    home = CACHE / f"llama-args-{h.hexdigest()[:16]}"
    exe = home / "llama-args"
    if exe.exists():
        return exe
    sdist = fetch.sdist(PACKAGE, VERSION)
    print(f"building llama.cpp's common library from {sdist.name} (a few minutes)",
          file=sys.stderr, flush=True)
    started = time.monotonic()
    tmp = home.with_name(f"{home.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    top = f"{fetch.stem(PACKAGE, VERSION)}/vendor/llama.cpp/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(top)
                   and (m.isfile() or m.isdir())]
        for m in members:
            m.name = "src/" + m.name[len(top):]
        tar.extractall(tmp, members=members, filter="data")
    src = tmp / "src"
    _run(["cmake", "-S", src, "-B", tmp / "build", "-G", "Ninja", *CMAKE_FLAGS])
    _run(["ninja", "-C", tmp / "build", "llama-common"])
    lib = home / "lib"                            # where the libraries are once moved
    _run(["g++", "-std=c++17", "-O0", DRIVER, f"-I{src}/common", f"-I{src}/include",
          f"-I{src}/ggml/include", f"-I{src}/vendor", f"-L{tmp}/build/bin", "-lllama-common",
          "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{lib}", "-o", tmp / "llama-args"])
    (tmp / "build" / "bin").replace(tmp / "lib")  # keep only the program and its libraries
    shutil.rmtree(src)
    shutil.rmtree(tmp / "build")
    if home.exists():
        shutil.rmtree(home)
    tmp.replace(home)
    print(f"built llama-args in {time.monotonic() - started:.0f} s", file=sys.stderr,
          flush=True)
    return exe


def require() -> Path:
    """build(), or skip the calling test without its tools or sdist (fail under
    CI=true)."""
    import pytest
    missing = [t for t in TOOLS if shutil.which(t) is None]
    why = (f"{', '.join(missing)} not found" if missing else None)
    if why is None:
        try:
            return build()
        except fetch.Unavailable as e:
            why = str(e)
    if os.environ.get("CI") == "true":
        pytest.fail(f"llama.cpp's parser cannot be built ({why}), and CI=true")
    pytest.skip(why)
