"""vLLM's CPU backend, by release (from vLLM's own source at each tag): from 0.5.4
`VLLM_CPU_OMP_THREADS_BIND` is `all` (the default: no binding, `OMP_NUM_THREADS` decides)
or a CPU list; from 0.9.1 its default is `auto` (one OpenMP thread per physical core of a
NUMA node, filtered by the affinity mask) and `VLLM_CPU_NUM_OF_RESERVED_CPU` appears (read
with `auto` only); from 0.11.1 `nobind` replaces `all`, which is then read as a CPU list
and fails. krm-fn writes the no-binding value the image's release accepts, so that
`OMP_NUM_THREADS` decides the thread count whether or not the kubelet pins the container;
an image without a version tag gets nothing (only the default is accepted by every
release) and a warning naming the better value. A no-binding spelling the release does not
accept (`nobind` before 0.11.1, `all` from 0.11.1, `auto` before 0.9.1: read as a CPU list,
the worker fails to start) is replaced, with a warning; `auto` or a CPU list already set is
left alone with a warning (a fixed list cannot match the cpuset the kubelet picks);
`VLLM_CPU_NUM_OF_RESERVED_CPU` only works with `auto` and from 0.9.1 (a warning otherwise).
vLLM 0.20.0 to 0.20.2 have no working no-binding value: `nobind` stops them at start (the
OMPProcessManager's log loop indexes its empty CPU lists, v0.20.0
vllm/utils/ompmultiprocessing.py; fixed in 0.21.0) and anything else is read as CPU lists,
so `auto` is left with a warning for one rank, an error for more, and `nobind` set by hand
is an error.
`VLLM_CPU_KVCACHE_SPACE` (GiB) larger than the memory limit is an error; leaving less than
1Gi for weights, Python and `/dev/shm` a warning.

Ranks. With tensor, pipeline or data parallelism every rank is a worker process of its
own with its own OpenMP pool (`--tensor-parallel-size`/`-tp` × `--pipeline-parallel-size`/
`-pp` × the local data-parallel ranks, engines/ranks.py), and each inherits the pod's
`OMP_NUM_THREADS`, so the thread vars are the pinned cores divided among them (floor; more
ranks than cores is an error). From 0.9.1 to 0.11.0 any value but `auto` is split on `|`
and rank i reads entry i (v0.9.1 vllm/v1/worker/cpu_worker.py `omp_cpuids.split("|")
[self.rank]`): the no-binding value is written once per rank (`all|all` for `-tp 2`; a
single `all` stops rank 1 with an IndexError, and is replaced). Before 0.9.1 `all` is
tested whole, and from 0.11.1 `nobind` is (v0.11.1 cpu_worker.py; from 0.20.0
vllm/utils/ompmultiprocessing.py `skip_setup = vllm_mask == "nobind"`): one value serves
every rank. krm-fn writes the no-binding value rather than leaving `auto` even with
`threads.bind` when there is more than one rank: `auto` puts rank i on the i-th NUMA node
of the container's CPUs and stops when they span fewer nodes than ranks ("Not enough
allowed NUMA nodes"), which the kubelet does not promise.
The cores vLLM's own `auto` binding keeps for its other processes (the engine core's
scheduler, which polls) are kept out of the division too, as that release keeps them by
default (x86): none before 0.10.0; from 0.10.0 1 of every rank's CPUs when tp × pp > 1
(v0.10.0 cpu_worker.py), from 0.10.2 also with more than one local data-parallel rank; from
0.20.0 1 per engine, i.e. per data-parallel rank, even with one rank
(ompmultiprocessing.py `reserve_cpu_num = 1`; Arm keeps one per rank); from 0.31.0 1 per
rank. The larger of that and `threads.reservedCpus` is taken off.
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, WARNING, Result
from krm_fn.rules.cmdline import env_entry, image_version, own_command, tokens
from krm_fn.rules.engines import programs, ranks, recognition
from krm_fn.rules.engines.base import Engine, Release, release_for, version_text
from krm_fn.rules.envvars import add_env

GIB = 2 ** 30
BIND = "VLLM_CPU_OMP_THREADS_BIND"
RESERVED = "VLLM_CPU_NUM_OF_RESERVED_CPU"
_SRC = "https://github.com/vllm-project/vllm/blob/"
# off: the value that leaves OMP_NUM_THREADS in charge; default: what an unset variable
# means; auto: `auto` is accepted; reserved: VLLM_CPU_NUM_OF_RESERVED_CPU is read;
# per_rank: `off` is read per rank (split on `|`, one entry per rank); keep: the cores its
# automatic binding keeps for vLLM's other processes by default ("none"; "world": 1 per
# rank when tp × pp > 1; "multi": 1 per rank when more than one local process; "one": 1
# per data-parallel engine; "rank": 1 per rank)
RELEASES = (
    Release((0, 5, 4), {"off": "all", "default": "all", "auto": False, "reserved": False,
                        "per_rank": False, "keep": "none"},
            _SRC + "v0.5.4/vllm/worker/cpu_worker.py",
            f"{BIND} appears: `all` (default: no binding) or a CPU list per rank"),
    Release((0, 9, 1), {"off": "all", "default": "auto", "auto": True, "reserved": True,
                        "per_rank": True, "keep": "none"},
            _SRC + "v0.9.1/vllm/envs.py",
            f"default `auto` (one thread per physical core of a NUMA node); {RESERVED} "
            f"appears (read with `auto` only); anything but `auto` is split on `|`, one "
            f"entry per rank (`all` with 2 ranks: rank 1 stops with IndexError)"),
    Release((0, 10, 0), {"off": "all", "default": "auto", "auto": True, "reserved": True,
                         "per_rank": True, "keep": "world"},
            _SRC + "v0.10.0/vllm/v1/worker/cpu_worker.py",
            "`auto` keeps 1 core of each rank for vLLM's other processes when tp × pp > 1"),
    Release((0, 10, 2), {"off": "all", "default": "auto", "auto": True, "reserved": True,
                         "per_rank": True, "keep": "multi"},
            _SRC + "v0.10.2/vllm/v1/worker/cpu_worker.py",
            "... or with more than one local data-parallel rank"),
    Release((0, 11, 1), {"off": "nobind", "default": "auto", "auto": True, "reserved": True,
                         "per_rank": False, "keep": "multi"},
            _SRC + "v0.11.1/vllm/v1/worker/cpu_worker.py",
            "`nobind` replaces `all` (`all` is then read as a CPU list and fails); `nobind` "
            "is read whole, for every rank"),
    Release((0, 20, 0), {"off": None, "default": "auto", "auto": True, "reserved": True,
                         "per_rank": False, "keep": "one"},
            _SRC + "v0.20.0/vllm/utils/ompmultiprocessing.py",
            "binding moves to `OMPProcessManager`, which keeps 1 core per engine "
            "(data-parallel rank) for its scheduler process (x86; 1 per rank on Arm); "
            "`nobind` stops every start (its log loop indexes the empty CPU lists: "
            "IndexError), so no value turns binding off"),
    Release((0, 21, 0), {"off": "nobind", "default": "auto", "auto": True, "reserved": True,
                         "per_rank": False, "keep": "one"},
            _SRC + "v0.21.0/vllm/utils/ompmultiprocessing.py", "`nobind` works again"),
    Release((0, 31, 0), {"off": "nobind", "default": "auto", "auto": True, "reserved": True,
                         "per_rank": False, "keep": "rank"},
            _SRC + "v0.31.0/vllm/utils/ompmultiprocessing.py",
            "keeps 1 core per local rank on x86 too"),
)
_OFF = {r.facts["off"] for r in RELEASES if r.facts["off"]}


def processes(f) -> int:
    """The rank processes of the container (its Count's workers when they are ranks,
    engines/ranks.py: vLLM's own sizes, or torchrun's processes each running one rank),
    1 when none are written."""
    w = f.count.workers if f.count is not None else None
    return w.count if w is not None and w.server in ranks.SERVERS and w.count > 1 else 1


def off_value(rel: Release, n: int) -> str:
    """The no-binding value of release `rel` for `n` rank processes: one `|`-separated
    entry per rank where the release splits the variable per rank, else the value."""
    off = rel.facts["off"]
    return "|".join([off] * n) if off and rel.facts["per_rank"] and n > 1 else off


def reserve(c: ContainerView, n: int) -> tuple | None:
    """(cores, why) vLLM's automatic binding keeps for its other processes (the engine
    cores' schedulers) by default at the image's release, for `n` local rank processes
    (tp × pp × local dp); None for none or an unknown release. The x86 defaults: v0.10.0
    vllm/v1/worker/cpu_worker.py `reserve_cpu_num = 1 if world_size > 1`, taken off the CPU
    list of every rank; v0.10.2 `... or data_parallel_size_local > 1`; v0.20.0
    vllm/utils/ompmultiprocessing.py `reserve_cpu_num = 1` per engine (data-parallel rank),
    split over its ranks; v0.31.0 `local_world_size` per engine."""
    rel = release_for(RELEASES, version(c))
    if rel is None:
        return None
    world, dpl = ranks.vllm_sizes(own_words(c))
    keep = rel.facts["keep"]
    cores = {"none": 0, "world": n if world > 1 else 0, "multi": n if n > 1 else 0,
             "one": dpl, "rank": n}[keep]
    if not cores:
        return None
    return cores, (f"vLLM {version_text(version(c))} for its other processes (what its own "
                   f"binding keeps: {rel.source})")


def version(c: ContainerView) -> tuple | None:
    """The vLLM version of container `c`: its image tag when the image is a vLLM one
    (its name mentions vllm), else None (unknown)."""
    image = str(c.data.get("image") or "")
    return image_version(c) if "vllm" in image.rsplit(":", 1)[0].lower() else None


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Write the no-binding value of the image's release unless the variable is set;
    check a value already set against that release; then the reserved CPUs and the KV
    cache."""
    v = version(c)
    rel = release_for(RELEASES, v)
    _device(pod, c, v)
    bind = env_entry(c, BIND)
    if v is not None and rel is None:
        effective = None
        if bind is not None:
            pod.warn(c.path + ("env", bind[0]),
                     f"container {c.name!r}: vLLM {version_text(v)} does not read {BIND} (it "
                     f"appeared in {version_text(RELEASES[0].since)}): OMP_NUM_THREADS="
                     f"{f.count.count} decides the thread count; remove it")
    elif bind is None:
        effective = _unset(pod, c, f.count, v, rel, ctx.cfg.workloads.threads.bind,
                           processes(f))
    else:
        effective = _existing(pod, c, f.count, bind, v, rel, processes(f))
    reserved = env_entry(c, RESERVED)
    if reserved is not None:
        if rel is not None and not rel.facts["reserved"] or v is not None and rel is None:
            pod.warn(c.path + ("env", reserved[0]),
                     f"container {c.name!r}: vLLM {version_text(v)} does not read {RESERVED} "
                     f"(it appeared in 0.9.1); remove it, and set spec.workloads.threads."
                     f"reservedCpus to leave pinned CPUs to vLLM's own threads")
        elif effective is not None and set(effective.split("|")) <= _OFF:
            pod.warn(c.path + ("env", reserved[0]),
                     f"container {c.name!r}: {RESERVED} is only used with {BIND}=auto and is "
                     f"ignored with {effective}; remove it, and set spec.workloads.threads."
                     f"reservedCpus to leave pinned CPUs to vLLM's own threads")
    _kvcache(pod, c)


def own_words(c: ContainerView) -> list:
    """The words of vLLM's own command in the container's command line: from `vllm` in
    program position (engines/programs.py) to the end of its command, as
    cmdline.own_command gives them (not `echo -tp 8` before it)."""
    toks = tokens(c)
    return own_command(toks, (ranks.VLLM_PROGRAM,), programs.spans(toks))


NO_DEVICE = (0, 10, 0)      # the first release without `--device` (engine/arg_utils.py)


def _device(pod: PodView, c: ContainerView, v: tuple | None) -> None:
    """`--device` in command/args: vLLM 0.10.0 and later have no such option (its argument
    parser stops the server: unrecognized, or from 0.31.0 an ambiguous prefix of
    --device-ids), an error; a warning when the image names no version."""
    for t in own_words(c):
        if t.text != "--device" and not t.text.startswith("--device="):
            continue
        src = f"{_SRC}v0.10.0/vllm/engine/arg_utils.py"
        if v is not None and v >= NO_DEVICE:
            pod.error(t.path, f"container {c.name!r}: vLLM {version_text(v)} has no --device "
                              f"option (removed in 0.10.0; the platform is the build's), so "
                              f"its argument parser stops the server at start-up: remove "
                              f"{numbers.brief(t.text)} ({src})")
        elif v is None:
            pod.warn(t.path, f"container {c.name!r}: vLLM 0.10.0 and later have no --device "
                             f"option and stop at start-up on {numbers.brief(t.text)}; the "
                             f"image names no version: remove it unless the release is older "
                             f"({src})")
        return


def _unset(pod: PodView, c: ContainerView, cnt, v, rel, bind: bool = False,
           n: int = 1) -> str | None:
    """VLLM_CPU_OMP_THREADS_BIND absent: write the release's no-binding value (one entry
    per rank where the release splits it, `n` rank processes) when its default binds;
    warn when the release is unknown. Returns the value in effect (None: unknown)."""
    if rel is None:
        pod.warn(c.path + ("env",),
                 f"container {c.name!r}: the image {c.data.get('image')!r} names no vLLM "
                 f"version, so {BIND} is left unset: no value but the default is accepted by "
                 f"every release (the default is `all`, no binding, before 0.9.1 and `auto` "
                 f"from 0.9.1, one OpenMP thread per physical core of a NUMA node, right only "
                 f"when the kubelet really pins the container); better: {BIND}=nobind for "
                 f"vLLM 0.11.1 to 0.19 and from 0.21.0, or all for 0.9.1 to 0.11.0, so that "
                 f"OMP_NUM_THREADS={cnt.count} decides the count — or use a versioned image "
                 f"tag")
        return None
    off = off_value(rel, n)
    if rel.facts["default"] == rel.facts["off"]:
        return off                  # the default already leaves OMP_NUM_THREADS in charge
    if off is None:
        return _no_off(pod, c, cnt, v, rel, n, c.path + ("env",))
    if bind and n > 1:
        pod.results.append(Result(
            f"container {c.name!r}: spec.workloads.threads.bind not applied to vLLM's "
            f"{n} rank processes: its auto binding puts each rank on a NUMA node of its own "
            f"and stops when the container's CPUs span fewer than {n} nodes, which the "
            f"kubelet does not promise; {BIND} is set to no binding instead", INFO,
            pod.ref, path_str(c.path + ("env",))))
    elif bind:
        pod.results.append(Result(
            f"container {c.name!r}: {BIND} left to vLLM {version_text(v)}'s default auto "
            f"(spec.workloads.threads.bind): vLLM binds one OpenMP thread per physical core "
            f"of the CPUs the container may use, right when the kubelet pins it", INFO,
            pod.ref, path_str(c.path + ("env",))))
        return "auto"
    per_rank = (f"; one entry per rank: vLLM splits it on | and rank i reads entry i, so a "
                f"single {rel.facts['off']} stops rank 1 with an IndexError ({rel.source})"
                if off != rel.facts["off"] else "")
    add_env(pod, c, {"name": BIND, "value": off},
            f"container {c.name!r}: {BIND} set to {off} (vLLM {version_text(v)} CPU backend): "
            f"with the default auto vLLM binds one OpenMP thread per physical core of a whole "
            f"NUMA node, and whether the kubelet gives this container an exclusive cpuset is "
            f"not certain at render time; with {rel.facts['off']} OMP_NUM_THREADS={cnt.count} "
            f"decides the count either way{per_rank}")
    return off


def _better(rel) -> str:
    """The no-binding value to suggest for release `rel` (None: unknown)."""
    if rel is None:
        return "nobind (vLLM 0.11.1 to 0.19 and from 0.21.0; all before)"
    return rel.facts["off"] or "nothing: vLLM 0.20.x has no no-binding value (0.21.0 has nobind)"


def _no_off(pod: PodView, c: ContainerView, cnt, v, rel, n: int, path: tuple) -> str | None:
    """A release with no working no-binding value (0.20.x): `auto` is left, with a warning
    for one rank and an error for more (each rank needs a NUMA node of its own)."""
    why = (f"vLLM {version_text(v)} has no value that turns its binding off (nobind stops it "
           f"at start with an IndexError: {rel.source}), so {BIND} is left to auto")
    if n > 1:
        pod.error(path, f"container {c.name!r}: {why}, which puts each of its {n} rank "
                        f"processes on a NUMA node of its own and stops when the container's "
                        f"CPUs span fewer, which the kubelet does not promise; use vLLM 0.21.0 "
                        f"or later (nobind), or one rank")
        return None
    pod.warn(path, f"container {c.name!r}: {why}: one OpenMP thread per physical core of the "
                   f"CPUs the container may use, less 1 for the scheduler, right only if the "
                   f"kubelet really pins it; OMP_NUM_THREADS={cnt.count} is not read; use vLLM "
                   f"0.21.0 or later to set nobind")
    return "auto"


def _existing(pod: PodView, c: ContainerView, cnt, bind: tuple, v, rel,
              n: int = 1) -> str | None:
    """VLLM_CPU_OMP_THREADS_BIND set: a no-binding spelling the release does not accept,
    or too few per-rank entries of it for `n` rank processes, is replaced by the value it
    accepts; `auto` and CPU lists are left alone with a warning, CPU lists with fewer
    entries than ranks with an error. Returns the value in effect (None: unknown)."""
    i, e = bind
    path = c.path + ("env", i)
    if "valueFrom" in e:
        pod.warn(path + ("valueFrom",),
                 f"container {c.name!r}: {BIND} comes from valueFrom and is left alone; make "
                 f"sure it is the no-binding value of the image's vLLM release (nobind from "
                 f"0.11.1, all before), so that OMP_NUM_THREADS={cnt.count} decides the count")
        return None
    have = str(e.get("value") or "").strip(numbers.BLANKS)
    shown = numbers.brief(have) if have else "(empty)"
    entries = have.split("|")
    if rel is not None and set(entries) <= _OFF and rel.facts["off"] is None:
        pod.error(path + ("value",),
                  f"container {c.name!r}: {BIND}={numbers.brief(have)} stops vLLM "
                  f"{version_text(v)} at start: it has no no-binding value ({rel.source}: "
                  f"with nobind its log loop indexes the empty CPU lists, IndexError, and "
                  f"anything else is read as CPU lists); remove it (auto) or use vLLM 0.21.0 "
                  f"or later")
        return None
    if rel is not None and (set(entries) <= _OFF or have == "auto" and not rel.facts["auto"]):
        off = off_value(rel, n)
        short = rel.facts["per_rank"] and set(entries) == {rel.facts["off"]} and \
            len(entries) < n
        if short or set(entries) != {rel.facts["off"]} or "|" in have and "|" not in off:
            why = (f"vLLM {version_text(v)} splits it on | and rank i reads entry i, so "
                   f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} for {n} rank "
                   f"processes stops rank {len(entries)} with an IndexError" if short else
                   f"vLLM {version_text(v)} does not accept {have} (it reads it as a CPU "
                   f"list and the worker fails to start)")
            pod.set(path + ("value",), off,
                    f"container {c.name!r}: {BIND} {numbers.brief(have)} -> {off}: {why}; "
                    f"{off} is its value for no binding ({rel.source})", e.get("value"),
                    severity=WARNING)
            return off
    if set(entries) <= _OFF:
        return have
    if have in ("auto", ""):
        pod.warn(path + ("value",),
                 f"container {c.name!r}: {BIND}={shown} binds one OpenMP thread per physical "
                 f"core of a whole NUMA node, filtered by the CPUs the container may use: "
                 f"right only if the kubelet really pins it (static CPU Manager on the node, "
                 f"pod still Guaranteed after admission); left alone — set it to "
                 f"{_better(rel)} so "
                 f"that OMP_NUM_THREADS={cnt.count} decides the count")
        return "auto"
    if n > 1 and len(entries) < n:
        pod.error(path + ("value",),
                  f"container {c.name!r}: {BIND}={shown} has {len(entries)} CPU "
                  f"list{'s' if len(entries) != 1 else ''} (split on |, one per rank) for "
                  f"{n} rank processes: rank {len(entries)} stops (IndexError; from vLLM "
                  f"0.20.0 an assertion); give one list per rank, or set it to "
                  f"{off_value(rel, n) if rel else 'nobind (vLLM >= 0.11.1)'}")
        return have
    pod.warn(path + ("value",),
             f"container {c.name!r}: {BIND}={shown} binds fixed CPU ids, but the kubelet "
             f"chooses the exclusive CPUs at admission, so the ids cannot be known to match "
             f"the container's cpuset; left alone — set it to "
             f"{_better(rel)} "
             f"(OMP_NUM_THREADS={cnt.count} then decides the count)")
    return have


def _kvcache(pod: PodView, c: ContainerView) -> None:
    """VLLM_CPU_KVCACHE_SPACE (GiB) above the memory limit: error; leaving < 1Gi: warning."""
    kv = env_entry(c, "VLLM_CPU_KVCACHE_SPACE")
    if kv is None or "valueFrom" in kv[1]:
        return
    i, e = kv
    path = c.path + ("env", i, "value")
    text = str(e.get("value") or "").strip(numbers.BLANKS)
    gib = numbers.count(text)
    if gib is None:
        found = numbers.shown(str(e.get("value") or ""))
        pod.warn(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={found} is "
                       f"not a whole number of GiB (ASCII digits), which vLLM reads it as, "
                       f"and is left alone; set a whole number")
        return
    raw = c.get("resources", "limits", "memory")
    try:
        mem = quantity.parse_memory(raw)
    except quantity.QuantityError:
        return
    kv_bytes = gib * GIB
    limit = mem.whole
    if kv_bytes > limit:
        fit = (limit - GIB) // GIB
        pod.error(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={text} GiB is more "
                        f"than the memory limit {mem.text}: vLLM reserves that much memory "
                        f"for the KV cache and the container is OOM-killed; lower it"
                        + (f" to at most {fit}" if fit >= 1 else "")
                        + " or raise resources.limits.memory")
    elif limit - kv_bytes < GIB:
        left = quantity.format_bytes(limit - kv_bytes) if limit > kv_bytes else "0"
        pod.warn(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={text} GiB leaves "
                       f"{left} of the memory limit {mem.text} for the model weights, Python "
                       f"and /dev/shm, less than 1Gi; lower VLLM_CPU_KVCACHE_SPACE or raise "
                       f"resources.limits.memory")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_SRC + "v0.11.1/vllm/v1/worker/cpu_worker.py",
    reserve=reserve,
    recognised="image `*vllm*-cpu*` (`public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo`, "
               "`vllm/vllm-openai-cpu`, a vLLM image with a `cpu` tag); `vllm serve` / "
               "`python -m vllm.entrypoints…` with `--device cpu`, or on a container that "
               "asks for no accelerator (`nvidia.com/gpu`, `amd.com/gpu`, ...); the version "
               "is the tag of an image whose name mentions vllm",
    sets="`VLLM_CPU_OMP_THREADS_BIND` = the release's no-binding value unless set (`nobind` "
         "from 0.11.1 except 0.20.x, which has none: `auto` is left, an error with more than "
         "one rank; `all` for 0.9.1–0.11.0, one `|`-separated entry per rank there: "
         "`all|all` with `-tp 2`; nothing before 0.9.1, whose default `all` does not bind), "
         "so that `OMP_NUM_THREADS` decides; a no-binding spelling the release does not "
         "accept, or too few per-rank entries, is replaced; thread vars = (N − the cores "
         "vLLM's own binding keeps for its scheduler) ÷ (tp × pp × local dp) rank processes",
    warns="`--device` from 0.10.0 (gone: the server does not start) is an **error**, a "
          "warning without a version; no version tag (nothing set: only the default is "
          "valid in every release); bind "
          "`auto` or a CPU list; `VLLM_CPU_NUM_OF_RESERVED_CPU` with no binding (read with "
          "`auto` only: use `reservedCpus`) or before 0.9.1; `VLLM_CPU_KVCACHE_SPACE` (GiB) "
          "above the memory limit is an **error**, leaving < 1Gi a warning; a CPU list with "
          "fewer entries than ranks, or more ranks than CPUs, is an **error**; `--config "
          "FILE` with a size not on the command line (the file may set it: rank count "
          "unknown, thread vars not divided)",
    sources=(("vLLM CPU installation",
              "https://docs.vllm.ai/en/latest/getting_started/installation/cpu.html"),),
)
