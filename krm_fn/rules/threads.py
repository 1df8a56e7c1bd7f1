"""threads: thread-count env vars equal to the pinned CPUs.

Runtimes that size their thread pools from the host's CPU count (PyTorch, OpenMP, BLAS,
NumExpr, Go before 1.25, CPython's os.cpu_count) oversubscribe an exclusive cpuset and
lose the point of pinning (workloads.md §4; kserve/kserve#1031, golang/go#73193).

Every container that ends with a whole number of CPUs in a Guaranteed pod — pinned
containers, and any app or sidecar container that asks for whole CPUs, which the kubelet
pins too — gets each variable of `spec.workloads.threads.env` set to
`CPUs - threads.reservedCpus` (at least 1), as a quoted string.

- A pinned container kept fractional (`cpuRounding: keep`) gets the value rounded down,
  at least 1: never a `resourceFieldRef`, which rounds up (1500m -> 2).
- With `threads.engines` on (the default), a known worker count divides the value
  (floor, at least 1): gunicorn/uvicorn `--workers N` (or `WEB_CONCURRENCY`), any
  `--workers N` argument, TorchServe `TS_DEFAULT_WORKERS_PER_MODEL` — each worker is a
  process with its own pool (C12, C16). A container that runs `ray start` gets none of
  the variables: Ray sets `OMP_NUM_THREADS` per worker process from the task's
  `num_cpus` when it is unset, and a pod-wide value would give every worker the whole
  count (see the engines rule).
- `threads.source: downwardAPI` writes new variables as
  `valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: "1"}}` (the divisor
  written explicitly: an API server that defaults it makes GitOps tools show a diff), so
  the value follows a cpu limit patched later. Only when that resolves to the count: a
  fractional container, `reservedCpus` or a worker division get the literal, with a
  warning (a resourceFieldRef is `ceil(limit / divisor)`, kubelet.md §12). Existing
  entries keep the rules below and stay literal.
- A value already there that is lower is kept (`existing: keep-lower`); a higher one is
  replaced with a warning; `existing: replace` always writes the count.
- A value that is not a whole number is left alone with a warning. A `valueFrom` is left
  alone: silently when it is a resourceFieldRef on the container's own cpu that resolves
  to at most the count, else with a warning: the user must check it.
- New variables are appended at the end of `env`.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, WARNING, Result

DOWNWARD = {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}


def _cpus(c: ContainerView, pinned: bool) -> int | None:
    """Whole CPUs of the container; for a pinned container kept fractional
    (cpuRounding: keep) the value rounded down, at least 1 (a resourceFieldRef would round
    up and oversubscribe: kubelet.md §12)."""
    raw = c.get("resources", "limits", "cpu")
    if raw is None:
        return None
    try:
        q = quantity.parse_cpu(raw)
    except quantity.QuantityError:
        return None
    if q.value <= 0:
        return None
    if q.is_integer:
        return int(q.value)
    return max(1, int(q.value)) if pinned else None


def q_integer(c: ContainerView) -> bool:
    """True when the container's cpu limit is a whole number."""
    try:
        return quantity.parse_cpu(c.get("resources", "limits", "cpu")).is_integer
    except quantity.QuantityError:
        return False


@dataclass(frozen=True)
class Count:
    """The thread count of one container. `cpus`: its whole CPUs (rounded down when kept
    fractional); `base`: cpus - reservedCpus, at least 1 (what one process may use);
    `count`: base divided by the worker processes, at least 1 (what each pool gets);
    `whole`: the cpu limit is a whole number; `workers`: the engines.Workers found or
    None; `why` / `base_why`: the reason for count / base, for messages."""

    cpus: int
    base: int
    count: int
    whole: bool
    workers: object
    why: str
    base_why: str


def count_for(c: ContainerView, cfg, pinned: bool) -> Count | None:
    """The Count of a container that gets thread env, or None (no whole CPUs). Pure: no
    results."""
    cpus = _cpus(c, pinned)
    if cpus is None:
        return None
    threads = cfg.workloads.threads
    base = max(1, cpus - threads.reservedCpus)
    whole = q_integer(c)
    why = (f"the {cpus} pinned CPUs" if whole else
           "its fractional CPU rounded down, at least 1") + (
        f" minus {threads.reservedCpus} reserved" if threads.reservedCpus else "")
    base_why = why
    workers = None
    count = base
    if threads.engines:
        from krm_fn.rules import engines  # engines imports this module
        workers = engines.workers(c)
        if workers is not None and workers.count > 1:
            count = max(1, base // workers.count)
            why += f", divided by {workers.count} worker processes ({workers.what})"
    return Count(cpus, base, count, whole, workers, why, base_why)


def downward_ok(count: Count, cfg) -> bool:
    """True when a resourceFieldRef on limits.cpu with divisor 1 resolves to the count."""
    return (cfg.workloads.threads.source == "downwardAPI" and count.whole
            and count.count == count.cpus)


def env_index(pod: PodView, c: ContainerView) -> tuple[list, dict] | None:
    """(env list, {name: last index}) of the container, or None after an error result
    (env not a list, an entry without a name)."""
    env = c.data.get("env")
    if env is not None and not isinstance(env, list):
        pod.error(c.path + ("env",), f"container {c.name!r}: env must be a list")
        return None
    env = env or []
    by_name: dict[str, int] = {}
    for i, e in enumerate(env):
        name = e.get("name") if isinstance(e, dict) else None
        if not isinstance(name, str) or not name:
            pod.error(c.path + ("env", i), f"container {c.name!r}: env[{i}] must be a "
                                           f"mapping with a name")
            return None
        by_name[name] = i  # the last entry wins, as in the kubelet
    return env, by_name


def field_ref_value(c: ContainerView, value_from: object) -> int | None:
    """What a `valueFrom` resolves to when it is a resourceFieldRef on this container's
    cpu (ceil(cpu / divisor), kubelet.md §12); None for anything else."""
    if not isinstance(value_from, dict) or set(value_from) != {"resourceFieldRef"}:
        return None
    ref = value_from["resourceFieldRef"]
    if not isinstance(ref, dict) or ref.get("containerName") not in (None, "", c.name):
        return None
    resource = ref.get("resource")
    if resource not in ("limits.cpu", "requests.cpu"):
        return None
    try:
        cpu = quantity.parse_cpu(c.get("resources", resource.split(".")[0], "cpu"))
        divisor = quantity.parse_cpu(ref.get("divisor", "1"))
    except quantity.QuantityError:
        return None
    if divisor.value <= 0:
        return None
    return math.ceil(cpu.millis / divisor.millis)


def add_env(pod: PodView, c: ContainerView, entry: dict, message: str,
            shown: str | None = None) -> None:
    """Append the env `entry` to container `c` with an info result whose field path is the
    new entry and whose proposed value is `shown` (default: the entry's value)."""
    env = c.data.get("env") or []
    path = c.path + ("env", len(env))
    pod.edits.set(path, entry)
    pod.results.append(Result(message, INFO, pod.ref, path_str(path), None,
                              shown if shown is not None else entry.get("value")))


def set_env(pod: PodView, c: ContainerView, var: str, want: str, why: str, cfg,
            added: list | None = None, downward: bool = False,
            higher: str | None = None) -> None:
    """Make env `var` of `c` hold the whole number `want`, with the rules of the module
    docstring (`threads.existing`, valueFrom, non-numbers). A new entry is appended (as a
    resourceFieldRef when `downward`); its name goes to `added` for one combined info
    result, or, when `added` is None, gets its own info result. `higher`: why a higher
    existing value is replaced (default: more threads than `why`)."""
    found = env_index(pod, c)
    if found is None:
        return
    env, by_name = found
    count = int(want)
    if var not in by_name:
        entry = {"name": var, "valueFrom": copy.deepcopy(DOWNWARD)} if downward else {"name": var,
                                                                       "value": want}
        if added is not None:
            pod.edits.set(c.path + ("env", len(env)), entry)
            added.append(var)
        else:
            add_env(pod, c, entry, f"container {c.name!r}: {var} set to "
                                   + (f'resourceFieldRef limits.cpu (divisor "1") = {want}'
                                      if downward else want) + f" ({why})", want)
        return
    i = by_name[var]
    e = env[i]
    if "valueFrom" in e:
        resolved = field_ref_value(c, e["valueFrom"])
        if resolved is not None and resolved <= count:
            return
        how = (f"resolves to {resolved} (a resourceFieldRef is rounded up)"
               if resolved is not None else "is left alone")
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: {var} comes from valueFrom and {how}; make sure "
                 f"it resolves to at most {want} ({why}), e.g. value: \"{want}\"")
        return
    raw = e.get("value")
    text = "" if raw is None else str(raw).strip()
    if not text.isdigit():
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: {var}={text!r} is not a whole number and is "
                 f"left alone; set it to {want} ({why})")
        return
    n = int(text)
    if n == count or (cfg.workloads.threads.existing == "keep-lower" and n < count):
        return
    pod.set(c.path + ("env", i, "value"), want,
            f"container {c.name!r}: {var} {text} -> {want}"
            + (": " + (higher or f"{text} is more threads than {why} and would "
                                   f"oversubscribe them")
               if n > count else ": threads.existing is replace"), raw,
            severity=WARNING if n > count else INFO)


def _literal_warning(pod: PodView, c: ContainerView, cnt: Count, want: str) -> None:
    """threads.source is downwardAPI but a resourceFieldRef would not give `want`."""
    limit = c.get("resources", "limits", "cpu")
    if not cnt.whole:
        up = math.ceil(quantity.parse_cpu(limit).value)
        reason = (f"its cpu limit {limit} is fractional and a resourceFieldRef rounds it up "
                  f"to {up}, more threads than the CPU time it gets; make the cpu a whole "
                  f"number to get a resourceFieldRef")
    else:
        reason = (f"a resourceFieldRef on limits.cpu gives {cnt.cpus}, not {want} "
                  f"({cnt.why}); set threads.source to literal to silence this, or drop "
                  f"threads.reservedCpus / the worker count to get a resourceFieldRef")
    pod.warn(c.path + ("env",),
             f"container {c.name!r}: threads.source is downwardAPI but the thread vars are "
             f"written as the literal {want}: {reason}")


def _container(pod: PodView, c: ContainerView, cfg, pinned: bool) -> None:
    cnt = count_for(c, cfg, pinned)
    if cnt is None:
        return
    threads = cfg.workloads.threads
    if cnt.cpus - threads.reservedCpus < 1:
        pod.warn(c.path + ("env",), f"container {c.name!r}: {cnt.cpus} CPUs minus "
                 f"threads.reservedCpus {threads.reservedCpus} leaves no thread; using 1")
    if env_index(pod, c) is None:
        return
    if pod.at.ray_params is not None and c.role == "app" and c.path[-2:] == ("containers", 0):
        # KubeRay's Ray container: Ray sets OMP_NUM_THREADS per worker from its num_cpus
        # (rayStartParams.num-cpus, kept equal to the pinned CPUs by the ray rule); a
        # pod-wide value would give every worker the whole count (workloads.md §4).
        pod.results.append(Result(
            f"container {c.name!r} is the Ray container: no pod-wide thread env vars, Ray sets "
            f"OMP_NUM_THREADS per worker from rayStartParams.num-cpus", INFO, pod.ref,
            path_str(c.path + ("env",))))
        return
    if threads.engines:
        from krm_fn.rules import engines  # engines imports this module
        if engines.runs_ray(c):
            return  # Ray sizes each worker's pool itself: the engines rule says why
    want = str(cnt.count)
    downward = downward_ok(cnt, cfg)
    if threads.source == "downwardAPI" and not downward:
        _literal_warning(pod, c, cnt, want)
    added: list[str] = []
    for var in threads.env:
        set_env(pod, c, var, want, cnt.why, cfg, added, downward)
    if added:
        shown = ('resourceFieldRef limits.cpu (divisor "1") = ' + want) if downward else want
        pod.results.append(Result(
            f"container {c.name!r}: {', '.join(added)} set to {shown} ({cnt.why}; runtimes "
            f"size thread pools from the host CPU count otherwise)", INFO, pod.ref,
            path_str(c.path + ("env",)), None, want))


def apply(pod: PodView, ctx) -> None:
    """Set thread env vars on every container with whole CPUs; see the module docstring."""
    for c in pod.containers:
        _container(pod, c, ctx.cfg, c.name in ctx.pinned and c.role == "app")
