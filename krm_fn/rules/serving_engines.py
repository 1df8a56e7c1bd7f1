"""engines: what each serving engine really reads, set from the pinned CPU count.

The generic thread variables (threads rule) do not bound every runtime: vLLM's CPU backend
binds its own OpenMP threads, llama.cpp and Triton's ONNX Runtime backend take flags, ONNX
Runtime reads no env var at all, TorchServe and gunicorn/uvicorn run one pool per worker
process, Ray sets the count per worker, a JVM sizes its pools from `availableProcessors()`.
With `threads.engines` on (the default) each container that gets thread env (whole CPUs,
or pinned and kept fractional) is matched against the engine registry — data, one module
per engine in krm_fn/rules/engines/: engine -> image / command+args patterns -> what is
set, with the upstream documentation each follows — and gets what its engine reads. N is
the container's thread count (threads rule: CPUs minus `threads.reservedCpus`, divided by
the worker count).

`krm-fn explain rule engines` prints here one section per engine: its module's docstring
(krm_fn/rules/engines/<engine>.py, beside the data it describes), in the order engines are
matched, then the multi-worker check, then the checks run without engine recognition on
every container that gets thread env (`GOMEMLIMIT`, `MALLOC_ARENA_MAX`).

Existing values follow `threads.existing` (a lower one kept, a higher one replaced with a
warning); `valueFrom` and non-numbers are left alone with a warning. Every change is an
info result with its field path.
"""
from __future__ import annotations

from krm_fn.pod import PodView
from krm_fn.rules import engines
from krm_fn.rules.cmdline import env_ok

ID = "engines"
OPTIONS = ("workloads.threads.engines", "workloads.threads.perCore", "workloads.threads.bind",
           "workloads.threads.goMemLimitPercent",
           "workloads.threads.mallocArenaMax", "workloads.threads.existing",
           "workloads.threads.source")


def explain() -> str:
    """What `krm-fn explain rule engines` prints: this module's docstring with, in place of
    its paragraph about this, one section per engine (engines.ENGINES, then the
    multi-worker check), each its name, how it is recognised (Engine.recognised) and its
    module's docstring, then the checks of engines.ALWAYS with their option: each engine is
    described once, in its module."""
    import inspect
    import textwrap
    head, _, rest = inspect.cleandoc(__doc__).partition(_HERE)
    tail = rest.split("\n\n", 1)[1]

    def section(name: str, how: str, module) -> list:
        body = inspect.cleandoc(module.__doc__ or "").split("\n")
        head = textwrap.wrap(f"- **{name}** ({how}):", 92, subsequent_indent="  ",
                             break_on_hyphens=False, break_long_words=False)
        return [*head, *(f"  {ln}" if ln else "" for ln in body)]

    lines = [head.rstrip("\n"), "", "Engines, in the order they are matched:", ""]
    for e in (*engines.ENGINES, engines.WORKERS):
        lines += section(e.name, f"recognised by {e.recognised}", inspect.getmodule(e.check))
    lines += ["", "Without engine recognition, on every container that gets thread env:", ""]
    for name, option in engines.ALWAYS:
        lines += section(name, f"`threads.{option}`", engines.module(name))
    return "\n".join(lines) + "\n\n" + tail


_HERE = "`krm-fn explain rule engines` prints here"


def apply(pod: PodView, ctx) -> None:
    """Set what each recognised engine reads; see the module docstring. Engines and
    thread counts come from `ctx.facts` (krm_fn/rules/facts.py)."""
    on = ctx.cfg.workloads.threads.engines
    seen: dict = {}
    always = engines.always(ctx.cfg.workloads.threads)
    for c in pod.containers:
        f = ctx.facts[c.path]
        if f.count is None or not env_ok(c):
            continue  # a malformed env was reported by the threads rule
        if on:
            for engine in f.engines:
                if engine.check is not None:
                    engine.check(pod, c, f, ctx, seen)
            engines.WORKERS.check(pod, c, f, ctx, seen)
        for check in always:
            check(pod, c, f, ctx, seen)
