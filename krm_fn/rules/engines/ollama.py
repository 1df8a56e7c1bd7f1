"""Ollama (`ollama serve`, image `ollama/ollama`): no `OLLAMA_*` variable of its
envconfig/config.go is a thread count; each model's runner uses `num_thread` from the
request's options or the Modelfile (`PARAMETER num_thread N`, api/types.go
`Options.NumThread`) when it is above 0 (the default, 0, "lets the runtime decide"). What
decides without it depends on the release (the image tag names it, `ollama/ollama:0.30.0`):

- up to 0.12 the server counts the node's physical cores in /proc/cpuinfo
  (discover/types.go `GetOptimalThreadCount`), not the pinned CPUs: a warning naming
  `num_thread`;
- 0.13 to 0.24 it counts the container's CPU quota, whole CPUs of cgroup v2
  `/sys/fs/cgroup/cpu.max` (discover/cpu_linux.go `overwriteThreadCountByLinuxCgroups`; on
  a cgroup v1 node, with no such file, the node's physical cores): the pinned CPUs, so a
  warning naming `num_thread` only when the thread count differs from them
  (`threads.reservedCpus`, one thread per physical core);
- from 0.30 (no 0.25 to 0.29 was released) each model runs in a llama.cpp `llama-server`
  child process started with the server's environment (llm/llama_server.go
  `SetupLlamaServerCommandEnv`: `os.Environ()`) and `-t` only when `num_thread` is above 0,
  so krm-fn sets `LLAMA_ARG_THREADS` = N, which llama-server reads when no `-t` is given
  (its default is the node's physical cores); a `num_thread` in a Modelfile or request
  still wins.

An image whose tag names no version gets `LLAMA_ARG_THREADS` (ignored before 0.30) and a
warning naming `num_thread` for older releases; a release before 0.12 (the first krm-fn
has read) gets nothing set and a warning naming `num_thread`. Its own default being one thread per
physical core (llama.cpp's, and the server's before 0.13), `threads.perCore:
engine-default` counts physical cores.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, env_entry, image_version
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, Release, release_for, version_text
from krm_fn.rules.envvars import downward_ok, downward_refused, set_env

_SRC = "https://github.com/ollama/ollama/blob/"
ENV = "LLAMA_ARG_THREADS"
RELEASES = (
    Release((0, 12, 0), {"default": "node"}, _SRC + "v0.12.0/discover/types.go",
            "without `num_thread` the node's physical cores (/proc/cpuinfo), not the "
            "pinned CPUs", label="0.12"),
    Release((0, 13, 0), {"default": "quota"}, _SRC + "v0.13.0/discover/cpu_linux.go",
            "without `num_thread` the container's CPU quota (cgroup v2 `cpu.max`, whole "
            "CPUs; on cgroup v1 the node's physical cores)"),
    Release((0, 30, 0), {"env": ENV}, _SRC + "v0.30.0/llm/llama_server.go",
            f"each model in a `llama-server` child that inherits the environment and gets "
            f"`-t` only from `num_thread`: `{ENV}` = N set"),
)


def version(c: ContainerView) -> tuple | None:
    """The Ollama release an `ollama/ollama:0.30.0` image names, else None (unknown)."""
    image = str(c.data.get("image") or "")
    return image_version(c) if "ollama" in image.rsplit(":", 1)[0].lower() else None


def _advice(want: int) -> str:
    return (f"set PARAMETER num_thread {want} in the Modelfile (or \"options\": "
            f"{{\"num_thread\": {want}}} in each request)")


_SCHED = _SRC + "000ce02098f6bfea486601b5cae35ba38f8824fc/server/sched.go"
MAX_LOADED = "OLLAMA_MAX_LOADED_MODELS"


def _loaded_models(pod: PodView, c: ContainerView, want: int) -> None:
    """Warn when OLLAMA_MAX_LOADED_MODELS asks for more than one model loaded at once: each
    loaded model is its own runner process sized to `want` threads, so requests to several
    models at once run that many pools on the pinned CPUs. Unset, the server allows 3 on a
    CPU node (server/sched.go: `defaultModelsPerGPU` 3 × the device list, one CPU entry):
    not warned, since one served model loads one runner."""
    found = env_entry(c, MAX_LOADED)
    if found is None or not isinstance(found[1].get("value"), str):
        return
    text = found[1]["value"]
    n = count_text(text.strip().strip("\"'"))     # envconfig Var: blanks, then quotes trimmed
    if n == 1:
        return
    many = "3 (the CPU default its value 0 stands for)" if n == 0 else (
        str(n) if n is not None else f"3 (Ollama does not read {text!r} as a count)")
    pod.warn(c.path + ("env", found[0], "value"),
             f"container {c.name!r}: {MAX_LOADED}={numbers.brief(text)} lets Ollama keep "
             f"{many} models loaded at once, each in its own runner process with {want} "
             f"threads: requests to different models at once run that many thread pools on "
             f"the {want} pinned CPUs and queue for them; set {MAX_LOADED}=1 to serve one "
             f"model at a time, or give each model its own Deployment ({_SCHED})")


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set LLAMA_ARG_THREADS for the llama-server runners (0.30+ or an unknown release);
    warn naming num_thread where the release sizes its runners otherwise (module
    docstring), and about several models loaded at once (_loaded_models)."""
    cnt, cfg = f.count, ctx.cfg
    want = cnt.count
    _loaded_models(pod, c, want)
    v = version(c)
    rel = release_for(RELEASES, v)
    if rel is None and v is not None:
        pod.warn(c.path, f"container {c.name!r} runs Ollama {version_text(v)}, older than "
                         f"{RELEASES[0].label}, the first release krm-fn has read: it reads no "
                         f"thread-count env var and a model runner without num_thread sizes "
                         f"itself, not to the pinned CPUs; {_advice(want)}")
        return
    if rel is None or "env" in rel.facts:
        set_env(pod, c, ENV, str(want), f"{ENGINE.name} 0.30+ llama-server runners: "
                                        f"{cnt.why}", cfg,
                downward=downward_ok(cnt, cfg) and downward_refused(pod, ctx) is None)
        if rel is None:
            pod.warn(c.path, f"container {c.name!r} runs Ollama of a version its image tag "
                             f"does not name: from 0.30 its llama-server "
                             f"runners read {ENV} (set), but before 0.30 no thread-count env "
                             f"var is read and a runner without num_thread uses the node's "
                             f"physical cores or the CPU quota, not {want}; on those "
                             f"{_advice(want)}")
        return
    if rel.facts["default"] == "quota":
        if want == cnt.cpus:
            return                  # the quota it counts is the pinned CPUs
        pod.warn(c.path, f"container {c.name!r} runs Ollama {version_text(v)}, which reads no "
                         f"thread-count env var: a model runner without num_thread uses the "
                         f"container's CPU quota, {cnt.cpus} threads, not {want} "
                         f"({cnt.why}); {_advice(want)}")
        return
    pod.warn(c.path, f"container {c.name!r} runs Ollama {version_text(v)}, which reads no "
                     f"thread-count env var: each model runner uses num_thread from the "
                     f"request options or the Modelfile, and its default 0 lets the server "
                     f"count the node's physical cores, not the pinned CPUs; {_advice(want)}")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_SRC + "v0.12.0/discover/types.go",
    recognised="image `ollama/ollama`; `ollama serve` in command/args; the release is the "
               "image tag",
    sets=f"the thread vars; from 0.30 (or no version in the tag) `{ENV}` = N, read by its "
         f"`llama-server` runners",
    warns=f"`{MAX_LOADED}` set to anything but 1 (each loaded model is a runner with N "
          f"threads; unset, a CPU node allows 3 at once, not warned); "
          "before 0.13: always (`num_thread`, Modelfile `PARAMETER num_thread N` or request "
          "options, defaults to the node's physical cores); 0.13-0.24: when N is not the "
          "pinned CPUs (the default is the CPU quota); no version in the tag",
    sources=(("ollama envconfig/config.go (no thread variable)",
              _SRC + "v0.32.15/envconfig/config.go"),
             ("ollama api/types.go (Options.NumThread)", _SRC + "v0.32.15/api/types.go"),
             ("ollama llm/llama_server.go (llama-server env and -t)",
              _SRC + "v0.32.15/llm/llama_server.go")),
)
