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
- A value already there that is lower is kept (`existing: keep-lower`); a higher one is
  replaced with a warning; `existing: replace` always writes the count.
- A value that is not a whole number, or comes from `valueFrom`, is left alone with a
  warning: the user must check it.
- New variables are appended at the end of `env`.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, WARNING, Result


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


def _container(pod: PodView, c: ContainerView, cfg, pinned: bool) -> None:
    cpus = _cpus(c, pinned)
    if cpus is None:
        return
    threads = cfg.workloads.threads
    count = cpus - threads.reservedCpus
    if count < 1:
        pod.warn(c.path + ("env",), f"container {c.name!r}: {cpus} CPUs minus "
                 f"threads.reservedCpus {threads.reservedCpus} leaves no thread; using 1")
        count = 1
    want = str(count)
    why = (f"the {cpus} pinned CPUs" if q_integer(c) else
           f"its fractional CPU rounded down, at least 1") + (
        f" minus {threads.reservedCpus} reserved" if threads.reservedCpus else "")
    env = c.data.get("env")
    if env is not None and not isinstance(env, list):
        pod.error(c.path + ("env",), f"container {c.name!r}: env must be a list")
        return
    env = env or []
    by_name: dict[str, int] = {}
    for i, e in enumerate(env):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"]:
            pod.error(c.path + ("env", i), f"container {c.name!r}: env[{i}] must be a "
                                           f"mapping with a name")
            return
        by_name[e["name"]] = i  # the last entry wins, as in the kubelet
    next_index = len(env)
    added: list[str] = []
    for var in threads.env:
        if var not in by_name:
            pod.edits.set(c.path + ("env", next_index), {"name": var, "value": want})
            added.append(var)
            next_index += 1
            continue
        i = by_name[var]
        e = env[i]
        if "valueFrom" in e:
            pod.warn(c.path + ("env", i, "valueFrom"),
                     f"container {c.name!r}: {var} comes from valueFrom and is left alone; "
                     f"make sure it resolves to at most {want} ({why})")
            continue
        raw = e.get("value")
        text = "" if raw is None else str(raw).strip()
        if not text.isdigit():
            pod.warn(c.path + ("env", i, "value"),
                     f"container {c.name!r}: {var}={text!r} is not a whole number and is "
                     f"left alone; set it to {want} ({why})")
            continue
        n = int(text)
        if n == count or (threads.existing == "keep-lower" and n < count):
            continue
        pod.set(c.path + ("env", i, "value"), want,
                f"container {c.name!r}: {var} {text} -> {want}"
                + (f": {text} is more threads than {why} and would oversubscribe them"
                   if n > count else ": threads.existing is replace"), raw,
                severity=WARNING if n > count else INFO)
    if added:
        pod.results.append(Result(
            f"container {c.name!r}: {', '.join(added)} set to {want} ({why}; runtimes "
            f"size thread pools from the host CPU count otherwise)", INFO, pod.ref,
            path_str(c.path + ("env",)), None, want))


def apply(pod: PodView, ctx) -> None:
    """Set thread env vars on every container with whole CPUs; see the module docstring."""
    for c in pod.containers:
        _container(pod, c, ctx.cfg, c.name in ctx.pinned and c.role == "app")
