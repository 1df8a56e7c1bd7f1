"""threads: thread-count env vars equal to the pinned CPUs.

Runtimes that size their thread pools from the host's CPU count (PyTorch, OpenMP, BLAS,
NumExpr, Go before 1.25, CPython's os.cpu_count) oversubscribe an exclusive cpuset and
lose the point of pinning (PyTorch c10/core/thread_pool.cpp sizes its pool from the
physical cores; kserve/kserve#1031, golang/go#73193).

Every container that ends with a whole number of CPUs in a Guaranteed pod — pinned
containers, and any app or sidecar container that asks for whole CPUs, which the kubelet
pins too — gets each variable of `spec.workloads.threads.env` set to
`CPUs - threads.reservedCpus` (at least 1), as a quoted string.

- A pinned container kept fractional (`cpuRounding: keep`) gets the value rounded down,
  at least 1: never a `resourceFieldRef`, which rounds up (1500m -> 2).
- With `threads.engines` on (the default), a known worker count divides the value
  (floor, at least 1): the rank processes of vLLM (tp × pp × local dp), Text Generation
  Inference (`--num-shard`) and torchrun (`--nproc-per-node`), then gunicorn/uvicorn
  `--workers N` (or `WEB_CONCURRENCY`), any `--workers N` argument, TorchServe
  `TS_DEFAULT_WORKERS_PER_MODEL` — each worker is a process with its own pool (C12, C16). A container that runs `ray start` gets none of
  the variables: Ray sets `OMP_NUM_THREADS` per worker process from the task's
  `num_cpus` when it is unset, and a pod-wide value would give every worker the whole
  count (see the engines rule).
- `threads.source: downwardAPI` writes new variables as
  `valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: "1"}}` (the divisor
  written explicitly: an API server that defaults it makes GitOps tools show a diff), so
  the value follows a cpu limit patched later. Only when that resolves to the count: a
  fractional container, `reservedCpus` or a worker division get the literal, with a
  warning (a resourceFieldRef is `ceil(limit / divisor)`: kubernetes/kubernetes
  pkg/api/v1/resource/helpers.go). Existing
  entries keep the rules below and stay literal. A Knative pod (a Knative Service,
  Configuration or Revision; a Serverless KServe InferenceService) gets the literal with a
  warning unless Knative's `kubernetes.podspec-fieldref` flag allows it (ConfigMap
  `knative-serving/config-features` in the input; disabled by default): Knative's webhook
  refuses `resourceFieldRef` otherwise (knative/serving pkg/apis/config/features.go,
  pkg/apis/serving/fieldmask.go EnvVarSourceMask).
- A value already there that is lower is kept (`existing: keep-lower`); a higher one is
  replaced with a warning; `existing: replace` always writes the count. A value that
  refers to an env var before it (`$(T)`) is read as the kubelet expands it.
- A value the command line sets itself replaces the env's for the program: an assignment
  in a shell script (`export OMP_NUM_THREADS=32; exec server`, `OMP_NUM_THREADS=32 exec
  server`) or `env OMP_NUM_THREADS=32 server`. Unless it is the count (or lower, with
  `keep-lower`), a warning at that command entry (POSIX Shell Command Language 2.9.1). The
  same holds for the engines' own variables (`LLAMA_ARG_THREADS`, ...).
- A value that is not a whole number is left alone with a warning. A `valueFrom` is left
  alone: silently when it is a resourceFieldRef on the container's own cpu that resolves
  to at most the count, else with a warning: the user must check it.
- `threads.perCore`: `physical` makes the count one thread per physical core (the CPUs
  minus reservedCpus divided by the pool's threads per core, floor, at least 1), `logical`
  one per logical CPU; `engine-default` (the default) is physical where the recognised
  engine runs one thread per physical core by itself (vLLM's automatic binding,
  llama.cpp, Ollama, TGI, TorchServe, Triton, ONNX Runtime, OpenVINO Model Server, the
  Xeon launcher: see the engines rule) and logical elsewhere. A JVM's
  processor count and Ray's num-cpus stay logical CPUs.
- `threads.bind` (off by default) also writes `OMP_PROC_BIND=close` and `OMP_PLACES`
  (`cores` when one thread per physical core, else `threads`) unless set: each OpenMP
  thread then stays on one place of the container's cpuset. It helps only when the
  container really gets exclusive CPUs; on shared CPUs a bound thread cannot move away
  from a busy one. Not with more than one worker or rank process: they share the cpuset,
  and every process would bind its threads to the same first places.
- New variables are appended at the end of `env`.
"""
from __future__ import annotations


from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, Result
from krm_fn.rules.cmdline import env_entry
from krm_fn.rules.envvars import (add_env, downward_ok, downward_refused, env_index,
                                   set_envs)

ID = "threads"
OPTIONS = ("workloads.threads.env", "workloads.threads.reservedCpus",
           "workloads.threads.perCore", "workloads.threads.bind",
           "workloads.threads.engines", "workloads.threads.existing",
           "workloads.threads.source")


def _literal_warning(pod: PodView, c: ContainerView, cnt, want: str) -> None:
    """threads.source is downwardAPI but a resourceFieldRef would not give `want`."""
    limit = c.get("resources", "limits", "cpu")
    if not cnt.whole:
        up = quantity.parse_cpu(limit).whole
        reason = (f"its cpu limit {limit} is fractional and a resourceFieldRef rounds it up "
                  f"to {up}, more threads than the CPU time it gets; make the cpu a whole "
                  f"number to get a resourceFieldRef")
    else:
        reason = (f"a resourceFieldRef on limits.cpu gives {cnt.cpus}, not {want} "
                  f"({cnt.why}); set threads.source to literal to silence this, or drop "
                  f"threads.reservedCpus / the worker count / one thread per physical core "
                  f"to get a resourceFieldRef")
    pod.warn(c.path + ("env",),
             f"container {c.name!r}: threads.source is downwardAPI but the thread vars are "
             f"written as the literal {want}: {reason}")


def _container(pod: PodView, c: ContainerView, f, cfg, refused: str | None = None) -> None:
    cnt = f.count
    if cnt is None:
        return
    threads = cfg.workloads.threads
    if cnt.cpus - threads.reservedCpus < 1:
        pod.warn(c.path + ("env",), f"container {c.name!r}: {cnt.cpus} CPUs minus "
                 f"threads.reservedCpus {threads.reservedCpus} leaves no thread; using 1")
    found = env_index(pod, c)
    if found is None:
        return
    if pod.at.ray_params is not None and c.role == "app" and c.path[-2:] == ("containers", 0):
        # KubeRay's Ray container: Ray sets OMP_NUM_THREADS per worker from its num_cpus
        # (rayStartParams.num-cpus, kept equal to the pinned CPUs by the ray rule); a
        # pod-wide value would give every worker the whole count (ray-project/ray
        # python/ray/_private/utils.py set_omp_num_threads_if_unset).
        pod.results.append(Result(
            f"container {c.name!r} is the Ray container: no pod-wide thread env vars, Ray sets "
            f"OMP_NUM_THREADS per worker from rayStartParams.num-cpus", INFO, pod.ref,
            path_str(c.path + ("env",))))
        return
    if not all(e.thread_env for e in f.engines):
        return  # e.g. Ray sizes each worker's pool itself: the engines rule says why
    want = str(cnt.count)
    downward = downward_ok(cnt, cfg)
    if downward and refused:
        downward = False
        pod.warn(c.path + ("env",),
                 f"container {c.name!r}: threads.source is downwardAPI but the thread vars "
                 f"are written as the literal {want}: {refused}")
    elif threads.source == "downwardAPI" and not downward:
        _literal_warning(pod, c, cnt, want)
    added: list[str] = []
    set_envs(pod, c, found[1], threads.env, want, cnt.why, cfg, added, downward)
    if added:
        shown = ('resourceFieldRef limits.cpu (divisor "1") = ' + want) if downward else want
        pod.note(INFO, c.path + ("env",),
                 f"container {c.name!r}: {', '.join(added)} set to {shown} ({cnt.why}; "
                 f"runtimes size thread pools from the host CPU count otherwise)", None, want)
    if threads.bind:
        _bind(pod, c, cnt)


def _bind(pod: PodView, c: ContainerView, cnt) -> None:
    """threads.bind: OMP_PROC_BIND=close and OMP_PLACES=cores (one thread per physical
    core) or threads, unless set: OpenMP then keeps each thread on one place of the
    container's affinity mask (https://gcc.gnu.org/onlinedocs/libgomp/OMP_005fPLACES.html,
    https://gcc.gnu.org/onlinedocs/libgomp/OMP_005fPROC_005fBIND.html)."""
    if cnt.workers is not None and cnt.workers.count > 1:
        pod.results.append(Result(
            f"container {c.name!r}: spec.workloads.threads.bind not applied: its "
            f"{cnt.workers.count} processes ({cnt.workers.what}) share one cpuset, and "
            f"OMP_PROC_BIND/OMP_PLACES would bind the threads of every process to the same "
            f"first {cnt.count} places", INFO, pod.ref, path_str(c.path + ("env",))))
        return
    places = "cores" if cnt.physical else "threads"
    for var, value in (("OMP_PROC_BIND", "close"), ("OMP_PLACES", places)):
        if env_entry(c, var) is None:
            add_env(pod, c, {"name": var, "value": value},
                    f"container {c.name!r}: {var} set to {value} (spec.workloads.threads.bind: "
                    f"OpenMP keeps each of the {cnt.count} threads on one "
                    f"{'core' if cnt.physical else 'CPU'} of the container's cpuset)")


def apply(pod: PodView, ctx) -> None:
    """Set thread env vars on every container with whole CPUs; see the module docstring.
    Thread counts come from `ctx.facts` (krm_fn/rules/facts.py)."""
    refused = (downward_refused(pod, ctx)
               if ctx.cfg.workloads.threads.source == "downwardAPI" else None)
    for c in pod.containers:
        _container(pod, c, ctx.facts[c.path], ctx.cfg, refused)
