"""krm-fn's reading of llama-cpp-python's server thread settings
(krm_fn/rules/engines/llama_cpp_python.py read_args) against the server's own code at
v0.3.36 (the sdist pinned in tests/engines/fetch.py): llama_cpp/server/settings.py and
cli.py, run in a subprocess with pydantic-settings, on the same argv and N_THREADS /
N_THREADS_BATCH env: whether the server stops at start-up, and the threads it runs.

The driver repeats __main__.py's ten lines that build the parser and the settings (the
module itself imports uvicorn and the FastAPI app), and sets the batch threads as the Llama
constructor does (`n_threads_batch or cpu_count()`). `llama_cpp` (the ctypes binding of the
C library, which the settings read a few constants and defaults from) is a stub module:
coarser on purpose, none of those settings is a thread count. multiprocessing.cpu_count is
fixed at 96, so "every CPU of the node" is told apart from any count written."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from krm_fn.rules.cmdline import Token
from krm_fn.rules.engines import llama_cpp_python as lcp
from tests.engines import fetch

PACKAGE, VERSION = "llama-cpp-python", "0.3.36"
HOST = 96
DRIVER = f"""
import argparse, json, multiprocessing, os, sys, types
multiprocessing.cpu_count = lambda: {HOST}
stub = types.ModuleType("llama_cpp")
stub.__path__ = [os.path.join(sys.argv[1], "llama_cpp")]
stub.__getattr__ = lambda name: (lambda *a: False) if name.islower() else 0
sys.modules["llama_cpp"] = stub
from llama_cpp.server.settings import Settings, ModelSettings
from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
parser = argparse.ArgumentParser()
add_args_from_model(parser, Settings)
parser.add_argument("--config_file", type=str)
try:
    args = parser.parse_args(sys.argv[2:])
except SystemExit:
    print(json.dumps("refused")); sys.exit()
try:
    m = parse_model_from_args(ModelSettings, args)
except Exception:
    print(json.dumps("refused")); sys.exit()
print(json.dumps([m.n_threads, m.n_threads_batch or multiprocessing.cpu_count()]))
"""

OPTIONS = ("--n_threads", "--n_threads_batch", "--n_thread", "--n_threads_b", "--n_t",
           "--n-threads", "--n-threads-batch")
VALUES = ("4", "16", "0", "-1", "-2", "+3", " 7 ", "1_0", "4.0", "x", "", "--n_ctx")


def _generated(n: int, seed: int = 41) -> list:
    """(argv after --model m, N_THREADS or None, N_THREADS_BATCH or None)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        argv: list[str] = []
        for _ in range(rng.randint(0, 3)):
            opt, value = rng.choice(OPTIONS), rng.choice(VALUES)
            if rng.random() < 0.3:
                argv.append(f"{opt}={value}")
            else:
                argv += [opt, value]
        if rng.random() < 0.1:
            argv.append(rng.choice(OPTIONS))
        env = (rng.choice((None, "6", "12")), rng.choice((None, "6", "12")))
        out.append((argv, *env))
    return out


NAMED = [([], None, None), ([], "6", "6"), (["--n_threads", "4"], "6", None),
         (["--n_threads=4"], None, None), (["--n_thread", "4"], None, None),
         (["--n_threads_b", "3"], None, None), (["--n_threads", "-1"], None, None),
         (["--n_threads", "0"], None, None), (["--n_threads_batch", "0"], None, None),
         (["--n_threads", "1_0"], None, None), (["--n-threads", "4"], None, None),
         (["--n_threads"], None, None), (["--n_threads", "5", "--n_threads", "3"], None, None),
         (["--n_threads", "--n_ctx", "4"], None, None), (["--n_threads", "4.0"], None, None)]


def _krm_fn(argv: list, threads_env: str | None, batch_env: str | None):
    """What krm-fn says the server runs with `argv` and the env vars: "refused", or
    [threads, batch threads] (the batch threads following the default cpu_count())."""
    toks = [Token(w, ("args", i)) for i, w in enumerate(argv)]
    read = lcp.read_args(toks)
    if any(a.refused for a in read):
        return "refused"

    def last(option, env, default):
        got = [a.value for a in read if a.option == option]
        value = got[-1] if got else (int(env) if env is not None else default)
        return HOST if value == -1 else value
    threads = last(lcp.OPTIONS[0], threads_env, HOST // 2)
    batch = last(lcp.OPTIONS[1], batch_env, HOST)
    return [threads, batch or HOST]


@pytest.fixture(scope="module")
def server_code():
    return fetch.require_dir(PACKAGE, VERSION, "llama_cpp")


def _server(root, argv: list, threads_env, batch_env):
    env = {k: v for k, v in os.environ.items()
           if k.upper() not in ("N_THREADS", "N_THREADS_BATCH", "CONFIG_FILE", "MODEL")}
    for name, value in (("N_THREADS", threads_env), ("N_THREADS_BATCH", batch_env)):
        if value is not None:
            env[name] = value
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(root), "--model", "m", *argv],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_thread_settings_as_the_server_reads_them(server_code):
    cases = NAMED + _generated(int(os.environ.get("KRM_FN_DIFF_EXAMPLES", "60")))
    wrong = [(c, _krm_fn(*c), got) for c in cases
             if _krm_fn(*c) != (got := _server(server_code, *c))]
    assert not wrong, wrong[:5]
    outcomes = {json.dumps(_krm_fn(*c)) for c in cases}
    assert '"refused"' in outcomes and len(outcomes) > 6, outcomes
