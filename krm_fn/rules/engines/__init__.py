"""The serving-engine registry: one module per engine, each holding its `Engine` data (what
it reads, its documentation row and upstream sources) and its check; how each engine is
recognised is data apart, in recognition.py (`TABLE`, in the order the engines are matched
and checked), which each module's ENGINE takes its entry from. `ALWAYS` names the checks
run on every container that gets thread env (worker count, Go, glibc), each with the
`spec.workloads.threads` option without which it does nothing.

`detect` and `workers` feed the per-container facts (krm_fn/rules/facts.py); the engines
rule (krm_fn/rules/serving_engines.py) runs the checks; `table()` is the README's engine
table. `detect` reads recognition.TABLE and imports an engine's module only when a
container matches it; `ENGINES` (every Engine, in TABLE order) imports them all, for the
docs table and verify's thread env names (start-up: docs/performance.md). A new engine is one module
here plus its entry in recognition.TABLE (and tests).
"""
from __future__ import annotations

import functools

from krm_fn.lazy import submodule
from krm_fn.pod import ContainerView
from krm_fn.rules.cmdline import (MAX_COMMAND_TEXT, Token, env_names, text,  # noqa: F401
                                  tokens)
from krm_fn.rules.engines import programs as _programs, recognition, workers as _workers
from krm_fn.rules.engines.base import Engine, Workers, version_text

# Run in this order after the recognised engines' checks: the multi-worker check only when
# threads.engines is on, Go and glibc always, each when its spec.workloads.threads option
# is set (the check returns at once otherwise, so its module is not imported).
WORKERS = _workers.ROW
ALWAYS = (("go", "goMemLimitPercent"), ("glibc", "mallocArenaMax"))
WORKER_SOURCES = _workers.SOURCES

# An image reference longer than this is no real reference (OCI: a 255-character name plus
# tag or digest); it is not matched against the engine image patterns.
MAX_IMAGE_TEXT = 512


def _framework_key(c: ContainerView) -> str | None:
    """The KServe framework key (`pytorch`, `onnx`, ...) when the container is one."""
    return c.path[-1] if c.path and isinstance(c.path[-1], str) else None


def module(name: str):
    """The engine module `name` (a recognition.TABLE `module`, or a name of ALWAYS),
    imported on first use."""
    return submodule(__name__, name)


def __getattr__(name: str):
    """ENGINES (every Engine, in recognition.TABLE order), made (importing every engine
    module) on first use."""
    if name != "ENGINES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: tuple[Engine, ...] = tuple(module(r.module).ENGINE for r in recognition.TABLE)
    globals()[name] = value
    return value


def thread_env_names(extra: tuple | list = ()) -> tuple[str, ...]:
    """The thread-count env vars, in order: the threads rule's default
    `spec.workloads.threads.env` (krm_fn.config.threadvars.DEFAULT_THREAD_ENV), then every
    variable an engine of ENGINES sets to the thread count, then `extra`; no duplicates.
    Read by `krm-fn verify` and the admission policy (krm_fn/guard); imports every engine
    module."""
    from krm_fn.config.threadvars import DEFAULT_THREAD_ENV
    names = list(DEFAULT_THREAD_ENV)
    names += [spec.name for engine in __getattr__("ENGINES") for spec in engine.env]
    names += list(extra)
    return tuple(dict.fromkeys(names))


def always(threads) -> tuple:
    """The checks of ALWAYS that can do something under `threads` (the config's
    spec.workloads.threads record), in ALWAYS order; imports only their modules."""
    return tuple(module(name).check for name, option in ALWAYS
                 if getattr(threads, option) is not None)


def detect(c: ContainerView) -> list[Engine]:
    """The engines recognised in container `c`, in recognition.TABLE order (see
    recognition.Recognition); imports the modules of those only."""
    return [module(name).ENGINE for name in _detect(*_inputs(c))]


def serving_names(c: ContainerView) -> tuple[str, ...]:
    """The names (recognition.Recognition.name, such as "vLLM CPU") of the model-serving
    engines recognised in container `c`, in recognition.TABLE order: those of `detect`
    whose Recognition has `serving` set (not a general-purpose runtime such as the JVM).
    Imports no engine module."""
    found = _detect(*_inputs(c))
    return tuple(r.name for r in (recognition.BY_MODULE[m] for m in found) if r.serving)


def _inputs(c: ContainerView) -> tuple:
    """What recognition reads of container `c`: (lowercased image, "" when longer than
    MAX_IMAGE_TEXT; command line; the spans of its words in program position,
    programs.spans; KServe framework key or None; env var names; whether it asks for an
    accelerator, recognition.accelerator)."""
    image = str(c.data.get("image") or "").lower()
    image = image if len(image) <= MAX_IMAGE_TEXT else ""
    toks = tokens(c)
    line = text(toks)
    programs = (_programs.spans(toks) if any(w in line for w in recognition.COMMAND_LITERALS)
                else ())            # (Pattern.search reads them only after such a literal)
    return (image, line, programs, _framework_key(c), env_names(c),
            recognition.accelerator(c.data.get("resources")))


@functools.lru_cache(maxsize=4096)
def _detect(image: str, line: str, programs: tuple, key: str | None, names: frozenset,
            accelerated: bool = False) -> tuple[str, ...]:
    """The modules of the engines recognised (recognition.TABLE), `not_with` applied."""
    found = [r for r in recognition.TABLE
             if r.matches(image, line, programs, key, names, accelerated)]
    return tuple(r.module for r in found if not any(o.name in r.not_with for o in found))


def workers(c: ContainerView, engines: tuple | list | None = None) -> Workers | None:
    """The worker process count of container `c` (engines/workers.py SOURCES), given the
    engines recognised in it (detected when None)."""
    return _workers.find(c, tuple(detect(c) if engines is None else engines))


def unread_workers(c: ContainerView, engines: tuple) -> tuple | None:
    """(what, field path, text) of a worker count of container `c` that is not a whole
    number (engines/workers.py), given the engines recognised in it; else None."""
    return _workers.unreadable(c, engines)


def workers_read(c: ContainerView, engines: tuple) -> tuple:
    """(workers(c, engines), unread_workers(c, engines) when that gives None, else None),
    reading the container's worker sources once."""
    return _workers.scan(c, engines)


def table() -> str:
    """The README's engine table (Markdown, ending with a newline): one row per engine of
    ENGINES, then the multi-worker row, from each Engine's documentation fields."""
    engines = __getattr__("ENGINES")
    lines = ["| engine | recognised by | set | only warned | by release | upstream |",
             "|---|---|---|---|---|---|"]
    for e in (*engines, WORKERS):
        sources = ", ".join(f"[{title}]({url})" for title, url in e.sources)
        releases = "; ".join(f"[{r.label or version_text(r.since)}]({r.source}): {r.note}"
                             for r in e.releases) or "—"
        lines.append(f"| {e.name} | {e.recognised} | {e.sets} | {e.warns} | {releases} | "
                     f"{sources} |")
    return "\n".join(lines) + "\n"
