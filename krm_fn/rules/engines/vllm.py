"""vLLM's CPU backend: `VLLM_CPU_OMP_THREADS_BIND=nobind` so that `OMP_NUM_THREADS` decides
the thread count whether or not the kubelet pins the container; checks of
`VLLM_CPU_NUM_OF_RESERVED_CPU` and `VLLM_CPU_KVCACHE_SPACE` (GiB of memory).
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import env_entry
from krm_fn.rules.engines.base import Engine
from krm_fn.rules.envvars import add_env

GIB = 2 ** 30


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set VLLM_CPU_OMP_THREADS_BIND=nobind unless set; warn about a bind that depends on
    pinning, about VLLM_CPU_NUM_OF_RESERVED_CPU with nobind, and check the KV cache."""
    cnt = f.count
    name = c.name
    bind = env_entry(c, "VLLM_CPU_OMP_THREADS_BIND")
    effective = None
    if bind is None:
        add_env(pod, c, {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "nobind"},
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
    reserved = env_entry(c, "VLLM_CPU_NUM_OF_RESERVED_CPU")
    if reserved is not None and effective == "nobind":
        pod.warn(c.path + ("env", reserved[0]),
                 f"container {name!r}: VLLM_CPU_NUM_OF_RESERVED_CPU is only used with "
                 f"VLLM_CPU_OMP_THREADS_BIND=auto and is ignored with nobind; remove it, "
                 f"and set spec.workloads.threads.reservedCpus to leave pinned CPUs to "
                 f"vLLM's own threads")
    _kvcache(pod, c)


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


ENGINE = Engine(
    "vLLM CPU",
    images=(r"vllm[\w.-]*[-_]cpu", r"vllm[\w./-]*:[\w.-]*\bcpu\b"),
    commands=(r"(^|[\s/])vllm\s+serve(\s|$)", r"\bvllm\.entrypoints\."),
    needs=(r"(^|\s)--device(=|\s+)cpu(\s|$)",),
    check=check,
    recognised="image `*vllm*-cpu*` (`public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo`, "
               "`vllm/vllm-openai-cpu`, a vLLM image with a `cpu` tag); `vllm serve` / "
               "`python -m vllm.entrypoints…` with `--device cpu`",
    sets="`VLLM_CPU_OMP_THREADS_BIND=nobind` unless set: `auto` binds one thread per core of "
         "a whole NUMA node and is right only when the container is really pinned, which is "
         "not certain at render time; with `nobind`, `OMP_NUM_THREADS` decides",
    warns="bind `auto` or a CPU list; `VLLM_CPU_NUM_OF_RESERVED_CPU` with `nobind` (only "
          "read with `auto`: use `reservedCpus`); `VLLM_CPU_KVCACHE_SPACE` (GiB) above the "
          "memory limit is an **error**, leaving < 1Gi a warning",
    sources=(("vLLM CPU installation",
              "https://docs.vllm.ai/en/latest/getting_started/installation/cpu.html"),
             ("vllm/envs.py", "https://github.com/vllm-project/vllm/blob/main/vllm/envs.py")),
)
