"""krm-fn's reading of a web server's worker count (krm_fn/rules/engines/workers.py SOURCES,
krm_fn/rules/cmdline.flag) against the server's own configuration code, run in a
subprocess on the same argv and env, from the sdists pinned in tests/engines/fetch.py:

- gunicorn 23.0.0: gunicorn/config.py (the argparse parser, GUNICORN_CMD_ARGS,
  WEB_CONCURRENCY as the default of `workers`) in gunicorn/app/base.py
  Application.load_config's order (the environment's arguments, then the command line's
  over them), without loading the app;
- uvicorn 0.38.0: its click command (uvicorn/main.py, `auto_envvar_prefix="UVICORN"`:
  every option also from UVICORN_<NAME>) parses the arguments, its Config
  (uvicorn/config.py: WEB_CONCURRENCY when --workers is unset) gives the count."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from tests.engines import fetch

_GUNICORN = """
import json, sys
from gunicorn.config import Config
cfg = Config()
parser = cfg.parser()
args = parser.parse_args(sys.argv[1:])
env_args = parser.parse_args(cfg.get_cmd_args_from_env())
for parsed in (env_args, args):
    for k, v in vars(parsed).items():
        if v is not None and k != "args":
            cfg.set(k.lower(), v)
print(json.dumps(cfg.workers))
"""
_UVICORN = """
import importlib, json, sys
command = importlib.import_module("uvicorn.main").main
from uvicorn.config import Config
ctx = command.make_context("uvicorn", sys.argv[1:])
print(json.dumps(Config(ctx.params["app"], workers=ctx.params["workers"]).workers))
"""
# server: (version, its reading of argv and env, the prefixes of the env variables it
# reads, kept out of the run's environment)
SERVERS = {"gunicorn": ("23.0.0", _GUNICORN, ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")),
           "uvicorn": ("0.38.0", _UVICORN, ("UVICORN_", "WEB_CONCURRENCY"))}

# (server, argv after the server's command, env): every way of writing the count, and
# which one wins
CASES = [
    ("gunicorn", ["-w", "4", "app:app"], {}),
    ("gunicorn", ["-w4", "app:app"], {}),
    ("gunicorn", ["-w=4", "app:app"], {}),
    ("gunicorn", ["--workers", "4", "app:app"], {}),
    ("gunicorn", ["--workers=4", "app:app"], {}),
    ("gunicorn", ["-w", "2", "--workers", "5", "app:app"], {}),
    ("gunicorn", ["--workers=5", "-w3", "app:app"], {}),
    ("gunicorn", ["app:app"], {"WEB_CONCURRENCY": "3"}),
    ("gunicorn", ["app:app"], {"GUNICORN_CMD_ARGS": "-w4"}),
    ("gunicorn", ["app:app"], {"GUNICORN_CMD_ARGS": "--workers 6 --bind :80"}),
    ("gunicorn", ["-w2", "app:app"], {"GUNICORN_CMD_ARGS": "--workers=6"}),
    ("gunicorn", ["app:app"], {"GUNICORN_CMD_ARGS": "-w 5", "WEB_CONCURRENCY": "3"}),
    ("gunicorn", ["-w", "7", "app:app"], {"WEB_CONCURRENCY": "3"}),
    ("gunicorn", ["-k", "uvicorn.workers.UvicornWorker", "-w3", "app:app"], {}),
    # `--` ends the options; each entry is one argument ("--workers 4" is a positional,
    # "-w 4" is -w with the value " 4")
    ("gunicorn", ["--", "app:app", "-w", "3"], {}),
    ("gunicorn", ["-w", "2", "--", "app:app", "--workers", "3"], {}),
    ("gunicorn", ["--workers 4", "app:app"], {}),
    ("gunicorn", ["-w 4", "app:app"], {}),
    ("uvicorn", ["--workers", "4", "app:app"], {}),
    ("uvicorn", ["--workers=4", "app:app"], {}),
    ("uvicorn", ["app:app", "--workers", "2", "--workers", "5"], {}),
    ("uvicorn", ["app:app"], {"UVICORN_WORKERS": "4"}),
    ("uvicorn", ["app:app"], {"WEB_CONCURRENCY": "3"}),
    ("uvicorn", ["app:app"], {"UVICORN_WORKERS": "4", "WEB_CONCURRENCY": "1"}),
    ("uvicorn", ["app:app", "--workers", "2"], {"UVICORN_WORKERS": "4",
                                                "WEB_CONCURRENCY": "3"}),
    ("uvicorn", ["app:app"], {}),
]


def _server(server: str, argv: list, env: dict) -> int:
    version, read, reads = SERVERS[server]
    root = fetch.require_dir(server, version, server)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(reads)}
    run_env.update(env, PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-c", read, *argv], env=run_env,
                       capture_output=True, text=True, timeout=60, check=True)
    return json.loads(p.stdout)


def _krm_fn(server: str, argv: list, env: dict) -> int:
    c = ContainerView("web", "app", ("spec", "containers", 0), {
        "name": "web", "image": "python:3.11", "command": [server, *argv],
        "env": [{"name": k, "value": v} for k, v in env.items()]})
    found = engines.workers(c)
    return 1 if found is None else found.count


@pytest.mark.parametrize("server, argv, env", CASES, ids=[
    " ".join([s, *a, *(f"{k}={v}" for k, v in e.items())]) for s, a, e in CASES])
def test_the_worker_count_is_the_servers(server, argv, env):
    assert _krm_fn(server, argv, env) == _server(server, argv, env)
