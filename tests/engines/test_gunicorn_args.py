"""krm-fn's reading of gunicorn's worker count (krm_fn/rules/engines/workers.py SOURCES,
krm_fn/rules/cmdline.flag) against gunicorn's own configuration code at 23.0.0
(gunicorn/config.py: the argparse parser, GUNICORN_CMD_ARGS, WEB_CONCURRENCY as the default
of `workers`; gunicorn/app/base.py Application.load_config: the environment's arguments,
then the command line's over them), run in a subprocess on the same argv and env."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from tests.engines import fetch

VERSION = "23.0.0"
# gunicorn's own reading: Application.load_config's order, without loading the app
_READ = """
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

# (argv after `gunicorn`, env): every way of writing the count, and which one wins
CASES = [
    (["-w", "4", "app:app"], {}),
    (["-w4", "app:app"], {}),
    (["-w=4", "app:app"], {}),
    (["--workers", "4", "app:app"], {}),
    (["--workers=4", "app:app"], {}),
    (["-w", "2", "--workers", "5", "app:app"], {}),
    (["--workers=5", "-w3", "app:app"], {}),
    (["app:app"], {"WEB_CONCURRENCY": "3"}),
    (["app:app"], {"GUNICORN_CMD_ARGS": "-w4"}),
    (["app:app"], {"GUNICORN_CMD_ARGS": "--workers 6 --bind :80"}),
    (["-w2", "app:app"], {"GUNICORN_CMD_ARGS": "--workers=6"}),
    (["app:app"], {"GUNICORN_CMD_ARGS": "-w 5", "WEB_CONCURRENCY": "3"}),
    (["-w", "7", "app:app"], {"WEB_CONCURRENCY": "3"}),
    (["-k", "uvicorn.workers.UvicornWorker", "-w3", "app:app"], {}),
]


def _gunicorn(argv: list, env: dict) -> int:
    try:
        root = fetch.package_dir("gunicorn", VERSION, "gunicorn")
    except fetch.Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e}, and CI=true: the engine sources must be downloadable")
        pytest.skip(str(e))
    run_env = {k: v for k, v in os.environ.items()
               if k not in ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")}
    run_env.update(env, PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-c", _READ, *argv], env=run_env,
                       capture_output=True, text=True, timeout=60, check=True)
    return json.loads(p.stdout)


def _krm_fn(argv: list, env: dict) -> int:
    c = ContainerView("web", "app", ("spec", "containers", 0), {
        "name": "web", "image": "python:3.11", "command": ["gunicorn", *argv],
        "env": [{"name": k, "value": v} for k, v in env.items()]})
    found = engines.workers(c)
    return 1 if found is None else found.count


@pytest.mark.parametrize("argv, env", CASES, ids=[" ".join(a) + " " + " ".join(
    f"{k}={v}" for k, v in e.items()) for a, e in CASES])
def test_the_worker_count_is_gunicorns(argv, env):
    assert _krm_fn(argv, env) == _gunicorn(argv, env)
