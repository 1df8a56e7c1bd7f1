"""engines: what each serving engine really reads, set from the pinned CPU count.

The generic thread variables (threads rule) do not bound every runtime
(workloads.md §4): vLLM's CPU backend binds its own OpenMP threads, llama.cpp and Triton's
ONNX Runtime backend take flags, ONNX Runtime reads no env var at all, TorchServe and
gunicorn/uvicorn run one pool per worker process, Ray sets the count per worker, a JVM
sizes its pools from `availableProcessors()`. With `threads.engines` on (the default) each
container that gets thread env (whole CPUs, or pinned and kept fractional) is matched
against `ENGINES` — data: engine -> image / command+args patterns -> what is set — and
gets what its engine reads. N is the container's thread count (threads rule: CPUs minus
`threads.reservedCpus`, divided by the worker count).

- **vLLM CPU backend** (image `*vllm*-cpu*` such as
  `public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo`, `vllm/vllm-openai-cpu`, a vLLM image
  with a `cpu` tag; or `vllm serve` / `python -m vllm.entrypoints...` with `--device cpu`):
  `VLLM_CPU_OMP_THREADS_BIND=nobind` unless set. With the default `auto` vLLM binds one
  OpenMP thread per physical core of a whole NUMA node, filtered by the affinity mask: right
  only when the kubelet really gives the container an exclusive cpuset, which is not
  certain at render time (node policy not rolled out yet, pod not Guaranteed after
  admission-time injection); with `nobind` `OMP_NUM_THREADS` decides the count whether or
  not the container ends up pinned. `auto` or a CPU list already set is left alone with a
  warning (a fixed list cannot match the cpuset the kubelet picks);
  `VLLM_CPU_NUM_OF_RESERVED_CPU` only works with `auto` (warning when set with `nobind`).
  `VLLM_CPU_KVCACHE_SPACE` (GiB) larger than the memory limit is an error; leaving less
  than 1Gi for weights, Python and `/dev/shm` a warning.
- **llama.cpp** (`llama-server` in command/args, image `ghcr.io/ggml-org/llama.cpp:server*`):
  `LLAMA_ARG_THREADS` and `LLAMA_ARG_THREADS_BATCH` = N, unless `--threads`/`-t`
  (`--threads-batch`/`-tb`; `-tb` defaults to `-t`) is in args, which wins over the env
  var; an arg above N is warned.
- **TorchServe** (`torchserve` in command/args or image, KServe `pytorch`): each worker
  is a Python process with its own torch pool; with `TS_DEFAULT_WORKERS_PER_MODEL` = W the
  thread vars are N / W (threads rule), else a warning (TorchServe's default is one worker
  per CPU the JVM sees).
- **Triton** (`nvcr.io/nvidia/tritonserver`, `tritonserver`, KServe `triton`): the env
  vars reach the PyTorch and Python backends; warning that the ONNX Runtime backend needs
  `--backend-config=onnxruntime,intra_op_thread_count=N` unless args have it.
- **ONNX Runtime** (image or args mention `onnxruntime`, KServe `onnx`): ORT reads no
  thread env var (OMP only in OpenMP builds): the pod template gets the annotation
  `krm-fn.dev/threads: "N"` for the app to pass to `intra_op_num_threads` (downward API
  `metadata.annotations['krm-fn.dev/threads']`), and a warning — never reported as bound.
- **Ray** (`ray start` in command/args): no pod-wide thread vars (Ray sets
  `OMP_NUM_THREADS` per worker from its `num_cpus` when unset; a pod-wide value would give
  every worker the whole count); `ray start` must carry `--num-cpus` <= the CPUs (warning
  otherwise). KubeRay `rayStartParams` are not handled here.
- **JVM** (image of a JDK/JRE or a JVM server such as djl-serving, command `java`,
  `JAVA_TOOL_OPTIONS`/`JAVA_OPTS` present): `-XX:ActiveProcessorCount=N` appended to
  `JAVA_TOOL_OPTIONS` (never replacing its other options; an existing lower count is
  kept, a higher one lowered with a warning). N here is CPUs minus reservedCpus (a JVM is
  one process). A higher count in `JAVA_OPTS`, `JDK_JAVA_OPTIONS` or the command line wins
  over `JAVA_TOOL_OPTIONS`: warning.
- **Multi-worker servers** (gunicorn `--workers N`/`-w N`, uvicorn `--workers N`, their
  `WEB_CONCURRENCY`, any `--workers N` argument): thread vars divided by N (threads rule)
  and, from Kubernetes 1.28, a warning that on cgroup v2 one OOM kills the whole container
  (`memory.oom.group`), so the memory limit must cover every worker.

Without engine recognition, on every container that gets thread env:

- `GOMEMLIMIT` (when `threads.goMemLimitPercent` is set) = that percentage of the memory
  limit in bytes, never above it. Set on every such container, not only "Go" ones: a Go
  binary cannot be told from its image (distroless, any name), and nothing else reads
  the variable — the same reason `GOMAXPROCS` is in the default env list.
- `MALLOC_ARENA_MAX` (when `threads.mallocArenaMax` is set): glibc's default is 8 arenas
  per host CPU on 64-bit.

Existing values follow `threads.existing` (a lower one kept, a higher one replaced with a
warning); `valueFrom` and non-numbers are left alone with a warning. Every change is an
info result with its field path.
"""
from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, WARNING, Result
from krm_fn.rules import threads as _threads

THREADS_ANNOTATION = "krm-fn.dev/threads"
GIB = 2 ** 30


@dataclass(frozen=True)
class EnvSpec:
    """An env var an engine reads: set to the thread count unless one of `flags` is in
    the container's command/args (a flag wins over the env var) or one of `follows` is
    (the engine then derives this value from that flag)."""

    name: str
    flags: tuple = ()
    follows: tuple = ()


@dataclass(frozen=True)
class Engine:
    """One serving engine. Recognised when a regex of `images` matches the image, a regex
    of `commands` matches command+args joined by spaces (and, when `needs` is given, one
    of `needs` matches too), the container is the KServe framework key of `kserve`, or an
    env var of `env_names` is present — unless an engine of `not_with` was recognised.
    `env`: variables set to the thread count; `check`: the function (in CHECKS) for what
    needs logic. `sets`/`warns`: the user documentation, one line each."""

    name: str
    images: tuple = ()
    commands: tuple = ()
    needs: tuple = ()
    kserve: tuple = ()
    env_names: tuple = ()
    not_with: tuple = ()
    env: tuple = ()
    check: str | None = None
    sets: str = ""
    warns: str = ""


ENGINES: tuple[Engine, ...] = (
    Engine("vLLM CPU",
           images=(r"vllm[\w.-]*[-_]cpu", r"vllm[\w./-]*:[\w.-]*\bcpu\b"),
           commands=(r"(^|[\s/])vllm\s+serve(\s|$)", r"\bvllm\.entrypoints\."),
           needs=(r"(^|\s)--device(=|\s+)cpu(\s|$)",),
           check="vllm",
           sets="VLLM_CPU_OMP_THREADS_BIND=nobind unless set",
           warns="bind auto or a CPU list; VLLM_CPU_NUM_OF_RESERVED_CPU with nobind; "
                 "VLLM_CPU_KVCACHE_SPACE over the memory limit (error) or leaving < 1Gi"),
    Engine("llama.cpp",
           images=(r"(^|/)llama\.cpp:server",),
           commands=(r"(^|[\s/])llama-server(\s|$)",),
           env=(EnvSpec("LLAMA_ARG_THREADS", flags=("--threads", "-t")),
                EnvSpec("LLAMA_ARG_THREADS_BATCH", flags=("--threads-batch", "-tb"),
                        follows=("--threads", "-t"))),
           check="flags",
           sets="LLAMA_ARG_THREADS, LLAMA_ARG_THREADS_BATCH = N unless -t / -tb in args",
           warns="-t / -tb above N"),
    Engine("TorchServe",
           images=(r"torchserve",),
           commands=(r"(^|[\s/])torchserve(\s|$)",),
           kserve=("pytorch",),
           check="torchserve",
           sets="thread vars = N / TS_DEFAULT_WORKERS_PER_MODEL",
           warns="worker count unknown: one torch pool per worker process"),
    Engine("Triton",
           images=(r"(^|/)tritonserver(:|@|$)",),
           commands=(r"(^|[\s/])tritonserver(\s|$)",),
           kserve=("triton",),
           check="triton",
           sets="thread vars (PyTorch and Python backends)",
           warns="--backend-config=onnxruntime,intra_op_thread_count=N missing or above N"),
    Engine("ONNX Runtime",
           images=(r"onnxruntime",),
           commands=(r"onnxruntime",),
           kserve=("onnx",),
           not_with=("Triton",),
           check="ort",
           sets="pod annotation krm-fn.dev/threads: N",
           warns="always: the app must pass N to intra_op_num_threads"),
    Engine("Ray",
           commands=(r"(^|[\s/;&|(])ray\s+start(\s|$)",),
           check="ray",
           sets="no pod-wide thread vars",
           warns="ray start without --num-cpus or above the CPUs; pod-wide OMP/MKL"),
    Engine("JVM",
           images=(r"(^|/)(eclipse-temurin|openjdk|amazoncorretto|ibm-semeru-runtimes|"
                   r"sapmachine|zulu-openjdk[\w-]*|adoptopenjdk|djl-serving|tomcat|jetty)"
                   r"(:|@|$)",),
           commands=(r"^(\S*/)?java(\s|$)",),
           env_names=("JAVA_TOOL_OPTIONS", "JAVA_OPTS", "JDK_JAVA_OPTIONS"),
           check="jvm",
           sets="-XX:ActiveProcessorCount=N appended to JAVA_TOOL_OPTIONS",
           warns="a higher count in JAVA_OPTS, JDK_JAVA_OPTIONS or the command line"),
)


@dataclass(frozen=True)
class WorkerSource:
    """A way a server is told its worker process count: `flags` in command/args (only
    when `command` matches command+args, if given; TorchServe: when ENGINES recognises
    it) or the env vars `env`."""

    server: str
    command: str | None
    flags: tuple
    env: tuple = ()


WORKER_SOURCES: tuple[WorkerSource, ...] = (
    WorkerSource("gunicorn", r"(^|[\s/])gunicorn(\s|$)", ("--workers", "-w"),
                 ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")),
    WorkerSource("uvicorn", r"(^|[\s/])uvicorn(\s|$)", ("--workers",), ("WEB_CONCURRENCY",)),
    WorkerSource("TorchServe", None, (), ("TS_DEFAULT_WORKERS_PER_MODEL",)),  # see ENGINES
    WorkerSource("", None, ("--workers",)),
)


@dataclass(frozen=True)
class Token:
    """One word of the container's command/args: `text`, and where it was written (the
    field path of the command/args entry it came from)."""

    text: str
    path: tuple


@dataclass(frozen=True)
class Workers:
    """A worker process count found in the container: `count`, the `server` that runs
    them, `what` it was read from (for messages) and the field `path`."""

    count: int
    server: str
    what: str
    path: tuple


def _words(text: str) -> tuple[str, ...]:
    """The shell words of one line. Short lines (flags, a model path) repeat across the
    containers of a render and are cached; long ones (a script) are not kept."""
    return _short_words(text) if len(text) <= 256 else _split_words(text)


@functools.lru_cache(maxsize=4096)
def _short_words(text: str) -> tuple[str, ...]:
    return _split_words(text)


def _split_words(text: str) -> tuple[str, ...]:
    if not any(ch in text for ch in "'\"\\"):
        return tuple(text.split())        # what shlex gives, without its cost
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


# Engines are recognised from the first 64 KiB of a container's command and args (a
# launcher script longer than that is not read further): the words and the regexes run
# over them stay bounded whatever the input holds.
MAX_COMMAND_TEXT = 64 * 1024
# An image reference longer than this is no real reference (OCI: a 255-character name plus
# tag or digest); it is not matched against the engine image patterns.
MAX_IMAGE_TEXT = 512


def tokens(c: ContainerView) -> list[Token]:
    """command then args, split into words (an entry such as a `bash -c` script is split
    with shell rules, a `;` word between its lines), each with the path of its entry.
    Kept in the container view's memo (one item) for as long as command and args hold the
    same entries: the rules ask several times per container."""
    command, args = c.data.get("command"), c.data.get("args")
    key = (tuple(command) if isinstance(command, list) else None,
           tuple(args) if isinstance(args, list) else None)
    hit = c.memo.get("tokens")
    if hit is not None and hit[0] == key:
        return list(hit[1])
    out: list[Token] = []
    budget = MAX_COMMAND_TEXT
    for k, lst in (("command", command), ("args", args)):
        if not isinstance(lst, list):
            continue
        for i, entry in enumerate(lst):
            if budget < 0:
                break
            if isinstance(entry, (dict, list)) or entry is None:
                continue
            path = c.path + (k, i)
            for n, line in enumerate(str(entry).splitlines() or [""]):
                budget -= len(line) + 1
                if budget < 0:
                    break
                if n:
                    out.append(Token(";", path))  # a script's next line
                out.extend(Token(w, path) for w in _words(line))
    c.memo["tokens"] = (key, tuple(out))
    return out


def _text(toks: list[Token]) -> str:
    return " ".join(t.text for t in toks)


def _env_value(c: ContainerView, name: str) -> str | None:
    """The literal value of env `name` (last entry wins), None when absent or valueFrom."""
    value = None
    for e in c.data.get("env") or []:
        if isinstance(e, dict) and e.get("name") == name:
            value = None if "valueFrom" in e else str(e.get("value") or "")
    return value


def _env_names(c: ContainerView) -> set:
    env = c.data.get("env")
    return {e["name"] for e in env if isinstance(e, dict) and isinstance(e.get("name"), str)} \
        if isinstance(env, list) else set()


def flag(toks: list[Token], names: tuple) -> tuple[str, Token, str] | None:
    """(value, token holding the value, the flag as written) of the last `--flag value` /
    `--flag=value` with a name in `names`, or None."""
    found = None
    for i, t in enumerate(toks):
        for n in names:
            if t.text == n and i + 1 < len(toks):
                found = (toks[i + 1].text, toks[i + 1], f"{n} {toks[i + 1].text}")
            elif t.text.startswith(n + "="):
                found = (t.text[len(n) + 1:], t, t.text)
    return found


def runs_ray(c: ContainerView) -> bool:
    """True when the container is recognised as running `ray start`."""
    return any(e.check == "ray" for e in detect(c))


def _framework_key(c: ContainerView) -> str | None:
    """The KServe framework key (`pytorch`, `onnx`, ...) when the container is one."""
    return c.path[-1] if c.path and isinstance(c.path[-1], str) else None


def detect(c: ContainerView) -> list[Engine]:
    """The engines recognised in container `c`, in ENGINES order."""
    image = str(c.data.get("image") or "").lower()
    image = image if len(image) <= MAX_IMAGE_TEXT else ""
    names = frozenset(n for n in _env_names(c) if isinstance(n, str))
    return list(_detect(image, _text(tokens(c)), _framework_key(c), names))


@functools.lru_cache(maxsize=4096)
def _detect(image: str, text: str, key: str | None, names: frozenset) -> tuple[Engine, ...]:
    found: list[Engine] = []
    for e in ENGINES:
        hit = any(re.search(p, image) for p in e.images) or (key is not None and key in
                                                                e.kserve)
        if not hit and any(re.search(p, text) for p in e.commands):
            hit = not e.needs or any(re.search(p, text) for p in e.needs)
        if not hit and names & set(e.env_names):
            hit = True
        if hit:
            found.append(e)
    return tuple(e for e in found if not any(o.name in e.not_with for o in found))


def _count_text(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def workers(c: ContainerView) -> Workers | None:
    """The worker process count of the container when a WORKER_SOURCES entry gives one
    (the first that does), else None."""
    toks = tokens(c)
    text = _text(toks)
    torchserve = any(e.name == "TorchServe" for e in detect(c))
    for src in WORKER_SOURCES:
        if src.server == "TorchServe":
            if not torchserve:
                continue
        elif src.command is not None and not re.search(src.command, text):
            continue
        if src.flags:
            f = flag(toks, src.flags)
            if f is not None and _count_text(f[0]) is not None:
                return Workers(_count_text(f[0]), src.server,
                               f"{src.server} {_shown(f)}".strip(), f[1].path)
        for var in src.env:
            value = _env_value(c, var)
            if value is None:
                continue
            if var == "GUNICORN_CMD_ARGS":
                words = [Token(w, ()) for w in _words(value)]
                f = flag(words, src.flags)
                n = _count_text(f[0]) if f else None
            else:
                n = _count_text(value)
            if n is not None:
                return Workers(n, src.server, f"{src.server} {var}={value}",
                               _env_path(c, var))
    return None


def _shown(found: tuple[str, Token, str]) -> str:
    """`--flag=value` or `--flag value` as written, for messages."""
    return found[2]


def _env_path(c: ContainerView, name: str) -> tuple:
    index = None
    for i, e in enumerate(c.data.get("env") or []):
        if isinstance(e, dict) and e.get("name") == name:
            index = i
    return c.path + ("env", index) if index is not None else c.path + ("env",)


def ray_start(c: ContainerView) -> tuple[Token, list[Token]] | None:
    """(the `start` word, the words after it up to the end of that shell command) when the
    container runs `ray start`, else None."""
    toks = tokens(c)
    for i in range(len(toks) - 1):
        if toks[i].text.rsplit("/", 1)[-1] == "ray" and toks[i + 1].text == "start":
            rest = toks[i + 2:]
            for j, t in enumerate(rest):
                if t.text in (";", "&&", "||", "|"):
                    return toks[i + 1], rest[:j]
                if t.text.endswith(";"):
                    return toks[i + 1], rest[:j + 1]
            return toks[i + 1], rest
    return None


def _env_ok(c: ContainerView) -> bool:
    env = c.data.get("env")
    return env is None or (isinstance(env, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"] for e in env))


def _env_entry(c: ContainerView, name: str) -> tuple[int, dict] | None:
    found = None
    for i, e in enumerate(c.data.get("env") or []):
        if isinstance(e, dict) and e.get("name") == name:
            found = (i, e)
    return found


# -- checks: one function per Engine.check --------------------------------------------------


def _vllm(pod: PodView, c: ContainerView, cfg, cnt, toks) -> None:
    name = c.name
    bind = _env_entry(c, "VLLM_CPU_OMP_THREADS_BIND")
    effective = None
    if bind is None:
        _threads.add_env(
            pod, c, {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "nobind"},
            f"container {name!r}: VLLM_CPU_OMP_THREADS_BIND set to nobind (vLLM CPU "
            f"backend): with the default auto vLLM binds one OpenMP thread per physical "
            f"core of a whole NUMA node, and whether the kubelet gives this container "
            f"an exclusive cpuset is not certain at render time; with nobind "
            f"OMP_NUM_THREADS={cnt.count} decides the count either way")
        effective = "nobind"
    else:
        i, e = bind
        path = c.path + ("env", i)
        if "valueFrom" in e:
            pod.warn(path + ("valueFrom",),
                     f"container {name!r}: VLLM_CPU_OMP_THREADS_BIND comes from valueFrom "
                     f"and is left alone; make sure it is nobind (then OMP_NUM_THREADS="
                     f"{cnt.count} decides the thread count)")
        else:
            effective = str(e.get("value") or "").strip()
            if effective in ("auto", "all", ""):
                pod.warn(path + ("value",),
                         f"container {name!r}: VLLM_CPU_OMP_THREADS_BIND={effective or '(empty)'}"
                         f" binds one OpenMP thread per physical core of a whole NUMA node, "
                         f"filtered by the CPUs the container may use: right only if the "
                         f"kubelet really pins it (static CPU Manager on the node, pod still "
                         f"Guaranteed after admission); left alone — set it to nobind so "
                         f"that OMP_NUM_THREADS={cnt.count} decides the count")
            elif effective != "nobind":
                pod.warn(path + ("value",),
                         f"container {name!r}: VLLM_CPU_OMP_THREADS_BIND={effective} binds "
                         f"fixed CPU ids, but the kubelet chooses the exclusive CPUs at "
                         f"admission, so the ids cannot be known to match the container's "
                         f"cpuset; left alone — set it to nobind (OMP_NUM_THREADS="
                         f"{cnt.count} then decides the count)")
    reserved = _env_entry(c, "VLLM_CPU_NUM_OF_RESERVED_CPU")
    if reserved is not None and effective == "nobind":
        pod.warn(c.path + ("env", reserved[0]),
                 f"container {name!r}: VLLM_CPU_NUM_OF_RESERVED_CPU is only used with "
                 f"VLLM_CPU_OMP_THREADS_BIND=auto and is ignored with nobind; remove it, "
                 f"and set spec.workloads.threads.reservedCpus to leave pinned CPUs to "
                 f"vLLM's own threads")
    _vllm_kvcache(pod, c)


def _vllm_kvcache(pod: PodView, c: ContainerView) -> None:
    kv = _env_entry(c, "VLLM_CPU_KVCACHE_SPACE")
    if kv is None or "valueFrom" in kv[1]:
        return
    i, e = kv
    path = c.path + ("env", i, "value")
    text = str(e.get("value") or "").strip()
    if not text.isdigit():
        pod.warn(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={text!r} is not a whole "
                       f"number of GiB, which vLLM reads it as; set a whole number")
        return
    raw = c.get("resources", "limits", "memory")
    try:
        mem = quantity.parse_memory(raw)
    except quantity.QuantityError:
        return
    kv_bytes = int(text) * GIB
    limit = int(mem.value)
    if kv_bytes > limit:
        fit = (limit - GIB) // GIB
        pod.error(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={text} GiB is more "
                        f"than the memory limit {mem.text}: vLLM reserves that much memory "
                        f"for the KV cache and the container is OOM-killed; lower it"
                        + (f" to at most {fit}" if fit >= 1 else "")
                        + f" or raise resources.limits.memory")
    elif limit - kv_bytes < GIB:
        left = quantity.format_binary_si(limit - kv_bytes) if limit > kv_bytes else "0"
        pod.warn(path, f"container {c.name!r}: VLLM_CPU_KVCACHE_SPACE={text} GiB leaves "
                       f"{left} of the memory limit {mem.text} for the model weights, Python "
                       f"and /dev/shm, less than 1Gi; lower VLLM_CPU_KVCACHE_SPACE or raise "
                       f"resources.limits.memory")


def _flags(pod: PodView, c: ContainerView, cfg, cnt, toks, engine: Engine) -> None:
    want = str(cnt.count)
    for spec in engine.env:
        f = flag(toks, spec.flags)
        if f is not None:
            n = _count_text(f[0])
            if n is not None and n > cnt.count:
                pod.warn(f[1].path, f"container {c.name!r}: {engine.name} {_shown(f)} "
                                    f"asks for more threads than {cnt.why} and wins over "
                                    f"{spec.name}; set it to {want}")
            continue
        if spec.follows and flag(toks, spec.follows) is not None:
            continue
        _threads.set_env(pod, c, spec.name, want, f"{engine.name}: {cnt.why}", cfg,
                         downward=_threads.downward_ok(cnt, cfg))


def _torchserve(pod: PodView, c: ContainerView, cfg, cnt, toks) -> None:
    w = cnt.workers
    if w is not None and w.server == "TorchServe":
        pod.warn(w.path, f"container {c.name!r}: thread vars divided by the {w.count} "
                         f"TorchServe workers per model of TS_DEFAULT_WORKERS_PER_MODEL, which "
                         f"TorchServe reads only with enable_envvars_config=true in "
                         f"config.properties: make sure it is set there, or set "
                         f"default_workers_per_model={w.count} in config.properties")
        return
    if w is not None:
        return
    pod.warn(c.path + ("env",),
             f"container {c.name!r} runs TorchServe: each worker is a Python process with "
             f"its own torch thread pool, and TorchServe starts default_workers_per_model "
             f"workers per model (default: one per CPU the JVM sees, {cnt.cpus} here), so "
             f"{cnt.cpus} workers x {cnt.count} threads oversubscribe the {cnt.cpus} CPUs; "
             f"set env TS_DEFAULT_WORKERS_PER_MODEL (read with enable_envvars_config=true "
             f"in config.properties) and krm-fn divides the thread vars by it, e.g. 1 "
             f"worker with {cnt.count} threads")


_ORT_ARG = re.compile(r"^(?:--backend-config=)?onnxruntime,intra_op_thread_count=(\S+)$")


def _triton(pod: PodView, c: ContainerView, cfg, cnt, toks) -> None:
    want = str(cnt.count)
    for i, t in enumerate(toks):
        m = _ORT_ARG.match(t.text)
        if m and (t.text.startswith("--") or (i and toks[i - 1].text == "--backend-config")):
            n = _count_text(m.group(1))
            if n is not None and n > cnt.count:
                pod.warn(t.path, f"container {c.name!r}: Triton "
                                 f"onnxruntime,intra_op_thread_count={n} is more threads "
                                 f"than {cnt.why}; set it to {want}")
            return
    where = c.path + ("args",)
    pod.warn(where, f"container {c.name!r} runs Triton: the thread env vars reach its "
                    f"PyTorch and Python backends, but the ONNX Runtime backend sizes its "
                    f"pools from the cores; if it serves ONNX models add "
                    f"--backend-config=onnxruntime,intra_op_thread_count={want} to args")


def _ort(pod: PodView, c: ContainerView, cfg, cnt, toks, seen: dict) -> None:
    want = str(cnt.count)
    key = THREADS_ANNOTATION
    if pod.at.meta is None:       # a pod spec whose pods get no annotations from the object
        _ort_warning(pod, c, want, annotated=False)
        return
    path = pod.at.meta + ("annotations", key)
    ann = _get(pod.edits.root, pod.at.meta + ("annotations",))
    if ann is not None and not isinstance(ann, dict):
        pod.error(pod.at.meta + ("annotations",), "annotations must be a mapping")
        return
    current = (ann or {}).get(key)
    if key in seen and seen[key] != want:
        pod.warn(path, f"container {c.name!r}: annotation {key} already holds {seen[key]} "
                       f"for another ONNX Runtime container; pass {want} to this one's "
                       f"intra_op_num_threads directly")
    elif current is None or str(current) != want:
        pod.set(path, want, f"annotation {key}={want}: the thread count of container "
                            f"{c.name!r} ({cnt.why}), for the app to pass to ONNX Runtime",
                current)
    seen.setdefault(key, want)
    _ort_warning(pod, c, want)


def _get(root: object, path: tuple) -> object:
    """The value at `path` (mapping keys and list indices), None when absent."""
    cur = root
    for key in path:
        if isinstance(cur, dict):
            cur = cur.get(key)
        elif isinstance(cur, list) and isinstance(key, int) and 0 <= key < len(cur):
            cur = cur[key]
        else:
            return None
    return cur


def _ort_warning(pod: PodView, c: ContainerView, want: str, annotated: bool = True) -> None:
    key = THREADS_ANNOTATION
    source = (f", e.g. from annotation {key} via the downward API (env valueFrom fieldRef "
              f"metadata.annotations['{key}'])" if annotated else "")
    pod.warn(c.path, f"container {c.name!r} runs ONNX Runtime, which reads no thread env "
                     f"var: its intra-op pool defaults to the physical cores (OMP_NUM_THREADS "
                     f"reaches only OpenMP builds), so the variables krm-fn sets do not bound "
                     f"it; pass {want} to SessionOptions.intra_op_num_threads in the app"
                     f"{source}; under Triton add "
                     f"--backend-config=onnxruntime,intra_op_thread_count={want} to args")


def _ray(pod: PodView, c: ContainerView, cfg, cnt, toks) -> None:
    found = ray_start(c)
    where, rest = (found[0].path, found[1]) if found is not None else (c.path, [])
    n_cpus = cnt.base
    pod.results.append(_info(pod, c.path + ("env",),
                             f"container {c.name!r} runs ray start: thread env vars not set; "
                             f"Ray sets OMP_NUM_THREADS for each worker process from its "
                             f"num_cpus when unset, and a pod-wide value would give every "
                             f"worker {n_cpus} threads"))
    f = flag(rest, ("--num-cpus",))
    if f is None:
        pod.warn(where, f"container {c.name!r}: ray start has no --num-cpus, so Ray detects "
                        f"the CPU count itself and may schedule more tasks than the "
                        f"{n_cpus} pinned CPUs; add --num-cpus={n_cpus}")
    else:
        n = _count_text(f[0])
        if n is None or n > n_cpus:
            pod.warn(f[1].path, f"container {c.name!r}: ray start --num-cpus {f[0]} is more "
                                f"than the {n_cpus} pinned CPUs; set --num-cpus={n_cpus}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        entry = _env_entry(c, var)
        if entry is not None:
            pod.warn(c.path + ("env", entry[0]),
                     f"container {c.name!r}: {var} is set for the whole container and "
                     f"overrides the per-worker value Ray derives from num_cpus, so every "
                     f"Ray worker uses that many threads; remove it unless every task uses "
                     f"all {n_cpus} CPUs")


_APC = re.compile(r"-XX:ActiveProcessorCount=(\S*)")


def _jvm(pod: PodView, c: ContainerView, cfg, cnt, toks) -> None:
    n = cnt.base
    want = f"-XX:ActiveProcessorCount={n}"
    why = (f"{cnt.base_why}; a JVM's availableProcessors() is min(affinity, cpu quota "
           f"rounded up), or the host count on JVMs that do not see the cgroup")
    entry = _env_entry(c, "JAVA_TOOL_OPTIONS")
    if entry is None:
        _threads.add_env(pod, c, {"name": "JAVA_TOOL_OPTIONS", "value": want},
                         f"container {c.name!r}: JAVA_TOOL_OPTIONS set to {want} ({why})")
    else:
        i, e = entry
        if "valueFrom" in e:
            pod.warn(c.path + ("env", i, "valueFrom"),
                     f"container {c.name!r}: JAVA_TOOL_OPTIONS comes from valueFrom and is "
                     f"left alone; make sure it holds {want}")
        else:
            value = str(e.get("value") or "")
            m = None
            for m in _APC.finditer(value):
                pass
            if m is None:
                new = (value.rstrip() + " " + want).strip()
                pod.set(c.path + ("env", i, "value"), new,
                        f"container {c.name!r}: {want} appended to JAVA_TOOL_OPTIONS ({why})",
                        e.get("value"))
            else:
                have = _count_text(m.group(1))
                if have is None or have > n:
                    new = value[:m.start()] + want + value[m.end():]
                    pod.set(c.path + ("env", i, "value"), new,
                            f"container {c.name!r}: JAVA_TOOL_OPTIONS "
                            f"-XX:ActiveProcessorCount={m.group(1)} -> {n}: more processors "
                            f"than {cnt.base_why}", e.get("value"),
                            severity=WARNING)
    later = [(var, _env_entry(c, var)) for var in ("JAVA_OPTS", "JDK_JAVA_OPTIONS")]
    sources = [(f"env {var}", c.path + ("env", ent[0], "value"), str(ent[1].get("value") or ""))
               for var, ent in later if ent is not None and "valueFrom" not in ent[1]]
    sources += [("the command line", t.path, t.text) for t in toks]
    for what, path, value in sources:
        for m in _APC.finditer(value):
            have = _count_text(m.group(1))
            if have is None or have > n:
                pod.warn(path, f"container {c.name!r}: -XX:ActiveProcessorCount={m.group(1)} "
                               f"in {what} comes after JAVA_TOOL_OPTIONS on the JVM command "
                               f"line and wins; set it to {n} or remove it")


def _info(pod: PodView, path: tuple, message: str) -> Result:
    return Result(message, INFO, pod.ref, path_str(path))


CHECKS = {"vllm": _vllm, "torchserve": _torchserve, "triton": _triton, "ray": _ray,
          "jvm": _jvm}


# -- not engine-specific ---------------------------------------------------------------------


def _multi_worker(pod: PodView, c: ContainerView, cfg, cnt) -> None:
    w = cnt.workers
    if w is None or w.count <= 1 or cfg.kubernetesVersion < (1, 28):
        return
    mem = c.get("resources", "limits", "memory")
    pod.warn(w.path, f"container {c.name!r} runs {w.count} worker processes ({w.what}): since "
                     f"Kubernetes 1.28 on cgroup v2 the kubelet sets memory.oom.group, so one "
                     f"worker going over the memory limit kills the whole container, all "
                     f"{w.count} workers; make resources.limits.memory ({mem}) cover all "
                     f"{w.count} workers at their peak, or set singleProcessOOMKill: true in "
                     f"the node pool's kubelet.extra (Kubernetes >= 1.32); thread vars are "
                     f"{cnt.count} per worker")


_GO_SIZE = re.compile(r"^([0-9]+)(B|KiB|MiB|GiB|TiB)?$")
_GO_UNITS = {None: 1, "B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


def _gomemlimit(pod: PodView, c: ContainerView, cfg) -> None:
    pct = cfg.workloads.threads.goMemLimitPercent
    if pct is None:
        return
    try:
        mem = quantity.parse_memory(c.get("resources", "limits", "memory"))
    except quantity.QuantityError:
        return
    limit = int(mem.value)
    want = limit * pct // 100
    why = (f"{pct}% of the memory limit {mem.text}, spec.workloads.threads."
           f"goMemLimitPercent: the Go GC works harder before the container reaches "
           f"memory.max instead of being OOM-killed; ignored by anything but Go")
    entry = _env_entry(c, "GOMEMLIMIT")
    if entry is None:
        _threads.add_env(pod, c, {"name": "GOMEMLIMIT", "value": str(want)},
                         f"container {c.name!r}: GOMEMLIMIT set to {want} ({why})")
        return
    i, e = entry
    if "valueFrom" in e:
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: GOMEMLIMIT comes from valueFrom and is left alone; "
                 f"make sure it is at most {want} bytes ({pct}% of the memory limit "
                 f"{mem.text})")
        return
    text = str(e.get("value") or "").strip()
    m = _GO_SIZE.match(text)
    if m is None:
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: GOMEMLIMIT={text!r} is not a byte count krm-fn "
                 f"reads and is left alone; set it to {want} ({pct}% of the memory limit "
                 f"{mem.text})")
        return
    have = int(m.group(1)) * _GO_UNITS[m.group(2)]
    if have == want or (cfg.workloads.threads.existing == "keep-lower" and have < want):
        return
    over = (f"above the memory limit {mem.text} itself, so the Go GC would not act before "
            f"the OOM kill"
            if have > limit else f"above {pct}% of the memory limit {mem.text}")
    pod.set(c.path + ("env", i, "value"), str(want),
            f"container {c.name!r}: GOMEMLIMIT {text} -> {want}: "
            + (over if have > want else "threads.existing is replace"), e.get("value"),
            severity=WARNING if have > want else INFO)


def _malloc(pod: PodView, c: ContainerView, cfg) -> None:
    arenas = cfg.workloads.threads.mallocArenaMax
    if arenas is None:
        return
    _threads.set_env(pod, c, "MALLOC_ARENA_MAX", str(arenas),
                     "spec.workloads.threads.mallocArenaMax; glibc's default is 8 arenas per "
                     "host CPU on 64-bit, each growing its own heap", cfg,
                     higher=f"more arenas than spec.workloads.threads.mallocArenaMax "
                            f"({arenas}), and each arena grows its own heap")


def apply(pod: PodView, ctx) -> None:
    """Set what each recognised engine reads; see the module docstring."""
    cfg = ctx.cfg
    seen: dict = {}
    for c in pod.containers:
        pinned = c.name in ctx.pinned and c.role == "app"
        cnt = _threads.count_for(c, cfg, pinned)
        if cnt is None or not _env_ok(c):
            continue  # a malformed env was reported by the threads rule
        if cfg.workloads.threads.engines:
            toks = tokens(c)
            for engine in detect(c):
                if engine.check == "flags":
                    _flags(pod, c, cfg, cnt, toks, engine)
                elif engine.check == "ort":
                    _ort(pod, c, cfg, cnt, toks, seen)
                elif engine.check is not None:
                    CHECKS[engine.check](pod, c, cfg, cnt, toks)
            _multi_worker(pod, c, cfg, cnt)
        _gomemlimit(pod, c, cfg)
        _malloc(pod, c, cfg)
