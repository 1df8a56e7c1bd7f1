"""cgroup v2: memory-backed emptyDir volumes get a sizeLimit.

On cgroup v2 a `medium: Memory` emptyDir is a tmpfs whose pages are charged to the memory
of the container that writes them; without `sizeLimit` it may grow to the sum of the pod's
memory limits (Kubernetes API reference, EmptyDirVolumeSource.sizeLimit; feature
SizeMemoryBackedVolumes), so a model server that fills /dev/shm is OOM-killed instead of
getting ENOSPC.

- A memory-backed emptyDir without `sizeLimit` gets `spec.workloads.shm.sizeLimitPercent`
  percent (default 25) of the pod's memory: the sum of the memory limits of its app and
  restartable init containers, in bytes rounded down, written in the unit family the
  containers use.
- A `sizeLimit` above the pod's memory is an error: the tmpfs could never be filled
  without an OOM kill.
- The memory limit itself (memory.max) is always present after the resources rule.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.pod import PodView
from krm_fn.quantity import NANO

ID = "cgroup"
OPTIONS = ("workloads.shm.sizeLimitPercent",)


def _pod_memory(pod: PodView):
    """(the sum of the memory limits of the app and restartable init containers, in
    bytes as a whole number, the first of those limits) or (None, None) when one is
    absent or not a quantity, or no container counts. A memory quantity is whole bytes
    (quantity.parse_memory), so the sum is taken over ints."""
    total = 0
    like = None
    for c in pod.containers:
        if c.role == "init":
            continue
        raw = c.get("resources", "limits", "memory")
        if raw is None:
            return None, None
        try:
            q = quantity.parse_memory(raw)
        except quantity.QuantityError:
            return None, None
        total += q.whole
        like = like or q
    return (total, like) if like is not None else (None, None)


def apply(pod: PodView, ctx) -> None:
    """Give every memory-backed emptyDir of `pod` a sizeLimit; see the module docstring."""
    volumes = pod.spec.get("volumes")
    if volumes is None:
        return
    if not isinstance(volumes, list):
        pod.error(pod.spec_path("volumes"), "volumes must be a list")
        return
    total, like = None, None
    for i, v in enumerate(volumes):
        if not isinstance(v, dict):
            pod.error(pod.spec_path("volumes", i), "each volume must be a mapping")
            continue
        ed = v.get("emptyDir")
        if ed is None:
            continue
        if not isinstance(ed, dict):
            pod.error(pod.spec_path("volumes", i, "emptyDir"), "emptyDir must be a mapping "
                                                               "({} for the defaults)")
            continue
        if ed.get("medium") != "Memory":
            continue
        if total is None:
            whole, like = _pod_memory(pod)
            if whole is None:
                return
            total = whole
        path = pod.spec_path("volumes", i, "emptyDir", "sizeLimit")
        name = v.get("name", f"#{i}")
        raw = ed.get("sizeLimit")
        if raw is not None:
            try:
                q = quantity.parse_memory(raw)
            except quantity.QuantityError as e:
                pod.error(path, f"volume {name!r}: {e}")
                continue
            if q.whole > total:
                pod.error(path, f"volume {name!r}: sizeLimit {q.text} is above the pod's "
                                f"memory limit {quantity.format_like(total * NANO, like)}; the "
                                f"tmpfs "
                                f"is charged to the pod's memory, so filling it would OOM-kill "
                                f"the pod: lower sizeLimit or raise the memory limits")
            continue
        pct = ctx.cfg.workloads.shm.sizeLimitPercent
        size = whole * pct // 100      # whole bytes, pct a whole percentage
        text = quantity.format_like(size * NANO, like)
        pod.set(path, text, f"volume {name!r}: memory-backed emptyDir sizeLimit set to {text} "
                            f"({pct}% of the pod's memory "
                            f"{quantity.format_like(total * NANO, like)}); "
                            f"its pages are charged to the pod's memory.max on cgroup v2")
