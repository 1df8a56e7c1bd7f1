"""krm-fn's reading of uvicorn's worker count (krm_fn/rules/engines/workers.py SOURCES)
against uvicorn 0.38.0's own code, run in a subprocess on the same argv and env: its click
command (uvicorn/main.py, `auto_envvar_prefix="UVICORN"`: every option also from
UVICORN_<NAME>) parses the arguments, and its Config (uvicorn/config.py: WEB_CONCURRENCY
when --workers is unset) gives the count."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from tests.engines import fetch

VERSION = "0.38.0"
_READ = """
import importlib, json, sys
command = importlib.import_module("uvicorn.main").main
from uvicorn.config import Config
ctx = command.make_context("uvicorn", sys.argv[1:])
print(json.dumps(Config(ctx.params["app"], workers=ctx.params["workers"]).workers))
"""

CASES = [
    (["--workers", "4", "app:app"], {}),
    (["--workers=4", "app:app"], {}),
    (["app:app", "--workers", "2", "--workers", "5"], {}),
    (["app:app"], {"UVICORN_WORKERS": "4"}),
    (["app:app"], {"WEB_CONCURRENCY": "3"}),
    (["app:app"], {"UVICORN_WORKERS": "4", "WEB_CONCURRENCY": "1"}),
    (["app:app", "--workers", "2"], {"UVICORN_WORKERS": "4", "WEB_CONCURRENCY": "3"}),
    (["app:app"], {}),
]


def _uvicorn(argv: list, env: dict) -> int:
    try:
        root = fetch.package_dir("uvicorn", VERSION, "uvicorn")
    except fetch.Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e}, and CI=true: the engine sources must be downloadable")
        pytest.skip(str(e))
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith("UVICORN_") and k != "WEB_CONCURRENCY"}
    run_env.update(env, PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-c", _READ, *argv], env=run_env,
                       capture_output=True, text=True, timeout=60, check=True)
    return json.loads(p.stdout)


def _krm_fn(argv: list, env: dict) -> int:
    c = ContainerView("web", "app", ("spec", "containers", 0), {
        "name": "web", "image": "python:3.11", "command": ["uvicorn", *argv],
        "env": [{"name": k, "value": v} for k, v in env.items()]})
    found = engines.workers(c)
    return 1 if found is None else found.count


@pytest.mark.parametrize("argv, env", CASES, ids=[" ".join(a) + " " + " ".join(
    f"{k}={v}" for k, v in e.items()) for a, e in CASES])
def test_the_worker_count_is_uvicorns(argv, env):
    assert _krm_fn(argv, env) == _uvicorn(argv, env)
