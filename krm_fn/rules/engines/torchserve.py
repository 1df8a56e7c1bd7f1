"""TorchServe: each worker is a Python process with its own torch thread pool, so the
thread vars are divided by `TS_DEFAULT_WORKERS_PER_MODEL` (a worker source, see
workers.py); without it a warning, since TorchServe starts one worker per CPU by default.
Each worker's torch pool defaults to one thread per physical core (ATen
`intraop_default_num_threads`: `OMP_NUM_THREADS`, `MKL_NUM_THREADS`, else c10
`TaskThreadPoolBase::defaultNumThreads`, the physical cores), so `threads.perCore:
engine-default` counts physical cores before dividing by the workers.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_TORCH = "https://github.com/pytorch/pytorch/blob/"


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn that TS_DEFAULT_WORKERS_PER_MODEL needs enable_envvars_config, or that no
    worker count is known."""
    cnt = f.count
    w = cnt.workers
    if w is not None and w.server == "TorchServe":
        pod.warn(w.path, f"container {c.name!r}: thread vars divided by the {w.count} "
                         f"TorchServe workers per model of TS_DEFAULT_WORKERS_PER_MODEL, which "
                         f"TorchServe reads only with enable_envvars_config=true in "
                         f"config.properties: make sure it is set there, or set "
                         f"default_workers_per_model={w.count} in config.properties")
        return
    if w is not None or f.unread_workers is not None:
        return      # a count that is not a number: the multi-worker check says so
    pod.warn(c.path + ("env",),
             f"container {c.name!r} runs TorchServe: each worker is a Python process with "
             f"its own torch thread pool, and TorchServe starts default_workers_per_model "
             f"workers per model (default: one per CPU the JVM sees, {cnt.cpus} here), so "
             f"{cnt.cpus} workers x {cnt.count} threads oversubscribe the {cnt.cpus} CPUs; "
             f"set env TS_DEFAULT_WORKERS_PER_MODEL (read with enable_envvars_config=true "
             f"in config.properties) and krm-fn divides the thread vars by it, e.g. 1 "
             f"worker with {cnt.count} threads")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    per_core="physical",
    per_core_source=_TORCH + "4f6f90c7c6d4c8dffbaacd764f75a782b976d19e/c10/core/thread_pool.cpp",
    recognised="`torchserve` in command/args or image; KServe `pytorch`",
    sets="thread vars = N ÷ `TS_DEFAULT_WORKERS_PER_MODEL`",
    warns="no worker count: each worker is a Python process with its own pool (default one "
          "worker per CPU); `TS_*` env is read only with `enable_envvars_config=true`",
    sources=(("TorchServe configuration (default_workers_per_model, enable_envvars_config)",
              "https://github.com/pytorch/serve/blob/v0.12.0/docs/configuration.md"),
             ("ATen ParallelCommon.cpp (intraop_default_num_threads)",
              _TORCH + "ab331383f8f956b817ae12866b4b1fb5d84d0564/aten/src/ATen/"
                       "ParallelCommon.cpp")),
)
