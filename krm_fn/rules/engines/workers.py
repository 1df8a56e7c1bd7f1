"""Multi-worker servers (gunicorn, uvicorn, TorchServe, any `--workers N`): where a worker
process count is read from (`SOURCES`, used by the facts to divide the thread count by it)
and the check that warns, from Kubernetes 1.28 on cgroup v2, that one OOM kills every
worker of the container (`memory.oom.group`), so the memory limit must cover every worker.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import (Token, count_text, env_path, env_value, flag, own_command,
                                  shell_script, shell_value, text, tokens, words)
from krm_fn.rules.engines import programs, ranks
from krm_fn.rules.engines.base import Engine, WorkerSource, Workers
from krm_fn.rules.engines.recognition import Pattern, Recognition

# a server's worker flags and env count only when it is the program in program position
# (engines/programs.py): `echo gunicorn -w 4`, `pgrep -f uvicorn` run no server. The regexes
# find it glued after `;`, `&`, `|` or `(` too (`cd /app;gunicorn`), as the shell reads them.
# gunicorn's worker flags, also read in GUNICORN_CMD_ARGS (gunicorn 23.0.0 app/base.py
# load_config: the config file, then GUNICORN_CMD_ARGS, then the command line)
GUNICORN_FLAGS = ("--workers", "-w")
SOURCES: tuple[WorkerSource, ...] = (
    WorkerSource("gunicorn", Pattern(r"(^|[\s/;&|(])gunicorn(\s|$)", ("gunicorn",)),
                 GUNICORN_FLAGS, ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")),
    # uvicorn's CLI reads every option from UVICORN_<NAME> too (click auto_envvar_prefix);
    # WEB_CONCURRENCY only when --workers is unset (uvicorn/config.py)
    WorkerSource("uvicorn", Pattern(r"(^|[\s/;&|(])uvicorn(\s|$)", ("uvicorn",)), ("--workers",),
                 ("UVICORN_WORKERS", "WEB_CONCURRENCY")),
    WorkerSource("hypercorn", Pattern(r"(^|[\s/;&|(])hypercorn(\s|$)", ("hypercorn",)),
                 ("--workers", "-w")),
    # `fastapi run` (fastapi-cli 0.0.16 src/fastapi_cli/cli.py): --workers, passed to
    # uvicorn.run, whose Config reads WEB_CONCURRENCY when it is None
    WorkerSource("fastapi", Pattern(r"(^|[\s/;&|(])fastapi\s+run(\s|$)", ("fastapi",)),
                 ("--workers",), ("WEB_CONCURRENCY",)),
    # the uvicorn-gunicorn images run gunicorn -c gunicorn_conf.py, which reads
    # WEB_CONCURRENCY (python_web.py); GUNICORN_CMD_ARGS comes after the config file
    WorkerSource("gunicorn", None, (), ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY"),
                 engine="uvicorn-gunicorn images"),
    WorkerSource("TorchServe", None, (), ("TS_DEFAULT_WORKERS_PER_MODEL",),
                 engine="TorchServe"),
    WorkerSource("", None, ("--workers",)),
)
# the words whose presence in the command line makes _read find the words in program
# position (programs.spans, not paid by every container): the servers', torchrun's, vLLM's
NAMED = frozenset((*(w for s in SOURCES if s.command is not None for w in s.command.within),
                   *ranks.TORCHRUN.within, ranks.VLLM_PROGRAM))
# the engines whose rank counts are read from their own command (cmdline.own_command)
RANKED = frozenset((ranks.VLLM, ranks.TGI))


def _resolved(c: ContainerView, toks: list[Token]) -> list[Token]:
    """`toks` with each word of a shell script that is one reference to a variable of known
    value (shell_value: `$TP` with env TP=2, or the script's own TP=2) replaced by that
    value, as the shell hands it to the program; `toks` itself when the command line is no
    shell script."""
    if not shell_script(toks):
        return toks
    out = []
    for t in toks:
        value = shell_value(c, True, t.text) if t.text.startswith("$") else None
        out.append(t if value is None or "$" in value else Token(value, t.path))
    return out


def _read(c: ContainerView, engines: tuple):
    """Every worker count the container writes, its rank processes first (ranks.py), then
    in SOURCES order, as (server, what, field path, the text found, the count or None when
    it is not a whole number)."""
    toks = _resolved(c, tokens(c))     # `-tp $TP` in a script reads TP's known value
    line = text(toks)
    names = {e.name for e in engines}
    spans = programs.spans(toks) if any(w in line for w in NAMED) or \
        not names.isdisjoint(RANKED) else ()
    yield from ranks.read(c, toks, line, names, spans)
    if "Intel Xeon launcher (ipexrun)" in names:
        yield from ranks.launcher_instances(toks)
    for src in SOURCES:
        if src.engine is not None:
            if src.engine not in names:
                continue
        elif src.command is not None and not src.command.search(line, spans):
            continue
        if src.flags:
            found = flag(own_command(toks, (src.server,), spans) if src.command is not None
                         else toks, src.flags)
            if found is not None:
                yield (src.server, f"{src.server} {numbers.brief(found[2])}".strip(), found[1].path,
                       found[0],
                       count_text(found[0]))
        for var in src.env:
            value = env_value(c, var)
            if value is None:
                continue
            if var == "GUNICORN_CMD_ARGS":
                found = flag([Token(w, ()) for w in words(value)], GUNICORN_FLAGS)
                if found is None:
                    continue
                raw = found[0]
            else:
                raw = value
            yield (src.server, f"{src.server} {var}={numbers.brief(value)}", env_path(c, var), raw,
                   count_text(raw))


def find(c: ContainerView, engines: tuple) -> Workers | None:
    """The worker process count of the container when a SOURCES entry gives one (the
    first that does, `scan`), else None. `engines`: the Engines recognised in it."""
    return scan(c, engines)[0]


def unreadable(c: ContainerView, engines: tuple) -> tuple[str, tuple, str] | None:
    """(what, field path, text) of the first worker count of SOURCES that is not a whole
    number, when no source gives one; else None."""
    return scan(c, engines)[1]


def scan(c: ContainerView, engines: tuple) -> tuple:
    """(find(c, engines), unreadable(c, engines) when find gives None, else None), in one
    pass over the container's worker counts: the first whole count wins, but a server's
    count that is not a whole number (`--workers $(W)` with W unknown at render time)
    hides that server's lower-precedence sources (gunicorn's command line overrides
    GUNICORN_CMD_ARGS and WEB_CONCURRENCY, whatever it holds)."""
    bad = None
    hidden: set = set()
    for server, what, path, raw, n in _read(c, engines):
        if server in hidden:
            continue
        if n is not None:
            return Workers(n, server, what, path), None
        hidden.add(server)
        if bad is None:
            bad = (what, path, raw)
    return None, bad


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Error when rank processes (ranks.py) outnumber the CPUs left to their pools (each
    runs at least one thread: oversubscription is certain; web workers only share the
    thread count, floor at least 1); warn that one worker's OOM kills all of them
    (cgroup v2, Kubernetes 1.28 and later: every supported version)."""
    cnt = f.count
    w = cnt.workers
    if w is None:
        bad = f.unread_workers
        if bad is not None and bad[2] is None:      # a count the node decides
            pod.warn(bad[1], f"container {c.name!r}: {bad[0]} counts its instances from the "
                             f"node's cores, not the container's {cnt.cpus} CPUs, so their "
                             f"number is not known from the manifest and the thread vars are "
                             f"not divided by it ({cnt.count} per instance, each keeps it): "
                             f"write --ninstances N (with --ncores-per-instance), N × threads "
                             f"within the pinned CPUs (torch/backends/xeon/run_cpu.py launch)")
        elif bad is not None and bad[2] == ranks.REPEATED:
            pod.error(bad[1], f"container {c.name!r}: {bad[0]}: text-generation-launcher (clap "
                              f"4) refuses an option it sets once given again and stops at "
                              f"start-up; give {ranks.NUM_SHARD[0]} once")
        elif bad is not None and bad[2] == ranks.FROM_FILE:
            pod.warn(bad[1], f"container {c.name!r}: {bad[0]}: vLLM reads its options from "
                             f"that file too (FlexibleArgumentParser; the command line wins), "
                             f"so its tensor, pipeline and data-parallel sizes, the rank "
                             f"processes that share the pinned CPUs, are not known from the "
                             f"manifest and the thread vars are not divided by them "
                             f"({cnt.count} per rank, each keeps it): write the sizes on the "
                             f"command line (--tensor-parallel-size, --pipeline-parallel-size, "
                             f"--data-parallel-size)")
        elif bad is not None:
            pod.warn(bad[1], f"container {c.name!r}: the worker count {bad[0]} is not a whole "
                             f"number (ASCII digits): left alone, and the thread vars are not "
                             f"divided by it ({cnt.count} per worker); set a whole number of "
                             f"workers")
        return
    if w.count <= 1:
        return
    free = cnt.cpus - cnt.kept
    if w.server in ranks.SERVERS and w.count > free:
        kept = f" ({cnt.cpus} minus {cnt.kept} kept)" if cnt.kept else ""
        pod.error(w.path, f"container {c.name!r} runs {w.count} processes ({w.what}), each with "
                          f"its own thread pool, on {max(free, 0)} CPUs{kept}: at least 1 "
                          f"thread each oversubscribes the CPUs for certain; give it at least "
                          f"{w.count + cnt.kept} CPUs or run fewer processes")
    if ctx.pool is not None and ctx.pool.single_process_oom_kill:
        return                      # an OOM kills only the offending worker
    from krm_fn.node import fields
    oom = fields.BY_NAME["singleProcessOOMKill"]
    where = (f"spec.nodePools[].kubelet.{oom.name}: true for node pool {ctx.pool.name!r}"
             if ctx.pool is not None else f"spec.nodePools[].kubelet.{oom.name}: true")
    mem = c.get("resources", "limits", "memory")
    mem = "not set" if mem is None else mem
    pod.warn(w.path, f"container {c.name!r} runs {w.count} worker processes ({w.what}): since "
                     f"Kubernetes 1.28 on cgroup v2 the kubelet sets memory.oom.group, so one "
                     f"worker going over the memory limit kills the whole container, all "
                     f"{w.count} workers; make resources.limits.memory ({mem}) cover all "
                     f"{w.count} workers at their peak, or set {where}; thread vars are "
                     f"{cnt.count} per worker")


# Not recognised like an Engine (any container with a worker count): its row documents
# SOURCES and `check`, which the engines rule runs on every container with thread env.
ROW = Engine(
    Recognition("multi-worker servers", "workers"),
    check=check,
    recognised="rank processes first: torchrun `--nproc-per-node`/`--nproc_per_node` "
               "(`PET_NPROC_PER_NODE`), vLLM "
               "tp × pp × local dp, TGI `--num-shard`/`NUM_SHARD`; then gunicorn "
               "`--workers`/`-w` (`-w4` too), uvicorn `--workers` and `UVICORN_WORKERS`, "
               "their `WEB_CONCURRENCY` (gunicorn also `GUNICORN_CMD_ARGS`); hypercorn "
               "`--workers`/`-w`; `fastapi run` `--workers`, else `WEB_CONCURRENCY`; the "
               "Intel Xeon launcher's instances (`--ninstances`, one with `--rank`, `--core-list` "
               "÷ `--ncores-per-instance`; a count taken from the node's cores is warned and "
               "not divided); any "
               "`--workers N` arg; `$(VAR)` in command and args expanded from the "
               "container's env as the kubelet does (a count that stays unreadable, e.g. "
               "from a ConfigMap, hides that server's lower-precedence sources); a server "
               "or torchrun only as the program a command runs, after any wrapper (`echo "
               "gunicorn -w 4` and `pgrep -f torchrun` run none), and its flags only in its "
               "own command (`curl -w` is not gunicorn's `-w`); in a shell script a `$VAR` "
               "word as the value the env or the script gives it (`-tp $TP` with `TP=2`)",
    sets="thread vars = N ÷ workers (floor, at least 1): 4 CPUs, `--workers 4` → `\"1\"`; "
         "more rank processes than CPUs is an **error** (each runs at least one thread)",
    warns="from Kubernetes 1.28 on cgroup v2 one OOM kills the whole container "
          "(`memory.oom.group`): the memory limit must cover every worker, or set "
          "`spec.nodePools[].kubelet.singleProcessOOMKill: true` (then no warning)",
    sources=(("gunicorn workers", "https://docs.gunicorn.org/en/stable/settings.html#workers"),
             ("uvicorn settings (UVICORN_ environment variables)",
              "https://www.uvicorn.org/settings/"),
             ("fastapi-cli 0.0.16 cli.py (run --workers)",
              "https://github.com/fastapi/fastapi-cli/blob/0.0.16/src/fastapi_cli/cli.py"),
             ("hypercorn __main__.py (-w/--workers)",
              "https://github.com/pgjones/hypercorn/blob/main/src/hypercorn/__main__.py"),
             ("torch.distributed.run (--nproc-per-node)",
              "https://github.com/pytorch/pytorch/blob/main/torch/distributed/run.py"),
             ("kubernetes/kubernetes#117793 (memory.oom.group)",
              "https://github.com/kubernetes/kubernetes/pull/117793"),
             ("kubernetes/kubernetes#126096 (singleProcessOOMKill)",
              "https://github.com/kubernetes/kubernetes/pull/126096")),
)
