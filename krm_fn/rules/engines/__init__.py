"""The serving-engine registry: one module per engine, each holding its `Engine` data (how
it is recognised, what it reads, its documentation row and upstream sources) and its
check. `ENGINES` lists them in the order they are matched and checked; `ALWAYS` holds the
checks run on every container that gets thread env (worker count, Go, glibc).

`detect` and `workers` feed the per-container facts (krm_fn/rules/facts.py); the engines
rule (krm_fn/rules/serving_engines.py) runs the checks; `table()` is the README's engine
table. A new engine is one module here plus its entry in ENGINES (and tests).
"""
from __future__ import annotations

import functools
import re

from krm_fn.pod import ContainerView
from krm_fn.rules.cmdline import (MAX_COMMAND_TEXT, Token, env_names, text,  # noqa: F401
                                  tokens)
from krm_fn.rules.engines import (glibc, go, jvm, llama_cpp, ollama, onnxruntime,
                                  openvino, python_web, ray, tgi, torchserve, triton, vllm,
                                  workers as _workers, xeon_launcher)
from krm_fn.rules.engines.base import Engine, Workers, version_text

ENGINES: tuple[Engine, ...] = (vllm.ENGINE, llama_cpp.ENGINE, ollama.ENGINE, tgi.ENGINE,
                               torchserve.ENGINE,
                               triton.ENGINE, onnxruntime.ENGINE, openvino.ENGINE, ray.ENGINE,
                               jvm.ENGINE, python_web.ENGINE, xeon_launcher.ENGINE)
# Run in this order after the recognised engines' checks: the multi-worker check only when
# threads.engines is on, Go and glibc always.
WORKERS = _workers.ROW
ALWAYS = (go.check, glibc.check)
WORKER_SOURCES = _workers.SOURCES

# An image reference longer than this is no real reference (OCI: a 255-character name plus
# tag or digest); it is not matched against the engine image patterns.
MAX_IMAGE_TEXT = 512


def _framework_key(c: ContainerView) -> str | None:
    """The KServe framework key (`pytorch`, `onnx`, ...) when the container is one."""
    return c.path[-1] if c.path and isinstance(c.path[-1], str) else None


def detect(c: ContainerView) -> list[Engine]:
    """The engines recognised in container `c`, in ENGINES order."""
    image = str(c.data.get("image") or "").lower()
    image = image if len(image) <= MAX_IMAGE_TEXT else ""
    return list(_detect(image, text(tokens(c)), _framework_key(c), env_names(c)))


@functools.lru_cache(maxsize=4096)
def _detect(image: str, line: str, key: str | None, names: frozenset) -> tuple[Engine, ...]:
    found: list[Engine] = []
    for e in ENGINES:
        hit = any(re.search(p, image) for p in e.images) or (key is not None and key in
                                                                e.kserve)
        if not hit and any(re.search(p, line) for p in e.commands):
            hit = not e.needs or any(re.search(p, line) for p in e.needs)
        if not hit and names & set(e.env_names):
            hit = True
        if hit:
            found.append(e)
    return tuple(e for e in found if not any(o.name in e.not_with for o in found))


def workers(c: ContainerView, engines: tuple | list | None = None) -> Workers | None:
    """The worker process count of container `c` (engines/workers.py SOURCES), given the
    engines recognised in it (detected when None)."""
    return _workers.find(c, tuple(detect(c) if engines is None else engines))


def unread_workers(c: ContainerView, engines: tuple) -> tuple | None:
    """(what, field path, text) of a worker count of container `c` that is not a whole
    number (engines/workers.py), given the engines recognised in it; else None."""
    return _workers.unreadable(c, engines)


def table() -> str:
    """The README's engine table (Markdown, ending with a newline): one row per engine of
    ENGINES, then the multi-worker row, from each Engine's documentation fields."""
    lines = ["| engine | recognised by | set | only warned | by release | upstream |",
             "|---|---|---|---|---|---|"]
    for e in (*ENGINES, WORKERS):
        sources = ", ".join(f"[{title}]({url})" for title, url in e.sources)
        releases = "; ".join(f"[{r.label or version_text(r.since)}]({r.source}): {r.note}"
                             for r in e.releases) or "—"
        lines.append(f"| {e.name} | {e.recognised} | {e.sets} | {e.warns} | {releases} | "
                     f"{sources} |")
    return "\n".join(lines) + "\n"
