"""The uvicorn-gunicorn images (`tiangolo/uvicorn-gunicorn`, `-fastapi`, `-starlette`):
their gunicorn_conf.py starts `max(2, WORKERS_PER_CORE x multiprocessing.cpu_count())`
workers unless `WEB_CONCURRENCY` is set. `multiprocessing.cpu_count()` is the node's CPU
count (it sees neither the cgroup nor the affinity mask), except that from Python 3.13
`PYTHON_CPU_COUNT` overrides it (https://docs.python.org/3/using/cmdline.html#envvar-
PYTHON_CPU_COUNT); the image's Python version is its tag (`python3.11`), and the warning
says whether `PYTHON_CPU_COUNT` can bound the count for it. gunicorn, uvicorn
and hypercorn themselves start one worker unless told (their worker flags are worker
sources, workers.py).
"""
from __future__ import annotations

import re

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import env_value
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_PYTHON = re.compile(r":python([0-9]{1,2})\.([0-9]{1,3})(?![0-9])")
_CONF = "https://github.com/tiangolo/uvicorn-gunicorn-docker/blob/" \
        "3db56dd6f929f827b3c84d360ed87fb2b3b9a569/docker-images/gunicorn_conf.py"


def python_version(c: ContainerView) -> tuple | None:
    """(3, 11) from an image tag `python3.11...`, else None."""
    m = _PYTHON.search(str(c.data.get("image") or "")[:512])
    return (int(m.group(1)), int(m.group(2))) if m else None


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Without a worker count: warn that the image derives it from the CPU count, and
    whether PYTHON_CPU_COUNT can bound it for the image's Python."""
    cnt = f.count
    if cnt.workers is not None or f.unread_workers is not None:
        return
    per = env_value(c, "WORKERS_PER_CORE")
    factor = numbers.decimal(per) if per is not None else (1, False)
    py = python_version(c)
    sets_count = "PYTHON_CPU_COUNT" in ctx.cfg.workloads.threads.env or \
        env_value(c, "PYTHON_CPU_COUNT") is not None
    if py is not None and py < (3, 13):
        why = (f"and Python {py[0]}.{py[1]} ignores PYTHON_CPU_COUNT (read from 3.13 on), so "
               f"cpu_count() is the node's CPU count, not the {cnt.cpus} pinned CPUs")
    elif py is not None and sets_count and factor is not None and not factor[1]:
        workers = max(2, factor[0] * cnt.cpus)
        why = (f"so with PYTHON_CPU_COUNT={cnt.cpus} (Python {py[0]}.{py[1]}) it starts "
               f"{workers} workers, each with {cnt.count} threads")
    else:
        why = ("and unless the image's Python is 3.13 or later and PYTHON_CPU_COUNT is set, "
               "cpu_count() is the node's CPU count, not the pinned CPUs (the tag names no "
               "Python version)" if py is None else
               "and PYTHON_CPU_COUNT is not set, so cpu_count() is the node's CPU count")
    pod.warn(c.path + ("env",),
             f"container {c.name!r}: the image's gunicorn_conf.py starts max(2, "
             f"WORKERS_PER_CORE x multiprocessing.cpu_count()) workers when WEB_CONCURRENCY "
             f"is unset, {why}; set env WEB_CONCURRENCY (krm-fn then divides the thread vars "
             f"by it), e.g. 1 worker with {cnt.count} threads")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    recognised="image `tiangolo/uvicorn-gunicorn*` (its gunicorn_conf.py); its Python "
               "version from the tag (`python3.11`)",
    sets="the thread vars, divided by `--workers`/`-w` in `GUNICORN_CMD_ARGS` (which gunicorn "
         "reads after the image's config file), else by `WEB_CONCURRENCY` when set",
    warns="no `WEB_CONCURRENCY`: workers = max(2, `WORKERS_PER_CORE` × `cpu_count()`), the "
          "node's CPUs on Python < 3.13 (which ignores `PYTHON_CPU_COUNT`)",
    sources=(("uvicorn-gunicorn-docker gunicorn_conf.py", _CONF),
             ("Python: PYTHON_CPU_COUNT (3.13)",
              "https://docs.python.org/3/using/cmdline.html#envvar-PYTHON_CPU_COUNT")),
)
