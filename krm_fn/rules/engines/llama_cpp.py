"""llama.cpp `llama-server`: `LLAMA_ARG_THREADS` and `LLAMA_ARG_THREADS_BATCH` = the thread
count, unless `--threads`/`-t` (`--threads-batch`/`-tb`) is in args, which wins over the
env var; an arg above the count is warned about.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, flag, tokens
from krm_fn.rules.engines.base import Engine, EnvSpec
from krm_fn.rules.envvars import downward_ok, downward_refused, set_env


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set each EnvSpec of ENGINE to the count unless its flag (or the flag it follows)
    is in command/args; warn about a flag above the count."""
    cnt, cfg = f.count, ctx.cfg
    toks = tokens(c)
    want = str(cnt.count)
    for spec in ENGINE.env:
        found = flag(toks, spec.flags)
        if found is not None:
            n = count_text(found[0])
            if n is None:
                pod.warn(found[1].path, f"container {c.name!r}: {ENGINE.name} "
                                        f"{numbers.brief(found[2])} is not a whole number "
                                        f"(ASCII digits) and is left alone; it wins over "
                                        f"{spec.name}: set it to {want}")
            elif n > cnt.count:
                pod.warn(found[1].path, f"container {c.name!r}: {ENGINE.name} {found[2]} "
                                        f"asks for more threads than {cnt.why} and wins over "
                                        f"{spec.name}; set it to {want}")
            continue
        if spec.follows and flag(toks, spec.follows) is not None:
            continue
        set_env(pod, c, spec.name, want, f"{ENGINE.name}: {cnt.why}", cfg,
                downward=downward_ok(cnt, cfg) and downward_refused(pod, ctx) is None)


ENGINE = Engine(
    "llama.cpp",
    images=(r"(^|/)llama\.cpp:server",),
    commands=(r"(^|[\s/])llama-server(\s|$)",),
    env=(EnvSpec("LLAMA_ARG_THREADS", flags=("--threads", "-t")),
         EnvSpec("LLAMA_ARG_THREADS_BATCH", flags=("--threads-batch", "-tb"),
                 follows=("--threads", "-t"))),
    check=check,
    per_core="physical",
    per_core_source="https://github.com/ggml-org/llama.cpp/blob/master/common/common.cpp",
    recognised="`llama-server` in command/args; image `ghcr.io/ggml-org/llama.cpp:server*`",
    sets="`LLAMA_ARG_THREADS`, `LLAMA_ARG_THREADS_BATCH` = N, unless `--threads`/`-t` "
         "(`--threads-batch`/`-tb`, which defaults to `-t`) is in args: an arg wins over the "
         "env var",
    warns="`-t`/`-tb` above N",
    sources=(("llama-server README",
              "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"),),
)
