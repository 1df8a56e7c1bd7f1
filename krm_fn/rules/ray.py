"""ray: KubeRay `rayStartParams.num-cpus` equal to the pinned CPUs of the Ray container.

Ray schedules tasks and actors by its logical CPU count and sets `OMP_NUM_THREADS` of each
worker process from the CPUs it reserves (ray-project/ray python/ray/_private/utils.py
`set_omp_num_threads_if_unset`).
Without `num-cpus`, KubeRay derives the count from the Ray container's cpu limit, rounding
up (ray-project/kuberay `generateRayStartCommand`): right for whole CPUs, one too many for a
fractional limit, and wrong whenever the value in `rayStartParams` was written for other
resources.

For every head and worker group (RayCluster, RayService `spec.rayClusterConfig`, RayJob
`spec.rayClusterSpec`), the Ray container is `containers[0]` (KubeRay `RayContainerIndex`).
After the resources rule its cpu is whole (pinned); krm-fn sets
`rayStartParams.num-cpus` to that count as a quoted string: info when absent, warning when
it held another value. `"0"` is kept: it keeps Ray tasks off that group (KubeRay's advice for
the head in production). A Ray container kept fractional (`cpuRounding: keep`) gets the value
rounded down, at least 1. A value that is not a plain number (`$(...)`) is left alone with a
warning.

With `enableInTreeAutoscaling: true` KubeRay adds an `autoscaler` container to the head pod,
sized 500m / 512Mi, or exactly by `autoscalerOptions.resources` when set
(krm_fn/admission/injectors/kuberay.py). When that is set with request != limit, krm-fn sets
both to the larger for cpu and memory (a whole-number cpu is left with a warning: the
kubelet would pin the autoscaler).
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.pod import PodView
from krm_fn.quantity import NANO
from krm_fn.results import WARNING
from krm_fn.workloads import get_path

AUTOSCALER_SOURCE = ("ray-project/kuberay ray-operator/controllers/ray/common/pod.go "
                     "BuildAutoscalerContainer, mergeAutoscalerOverrides")

ID = "ray"
OPTIONS = ()
KEY = "num-cpus"


def _ray_cpus(pod: PodView, ctx) -> tuple[str, int] | None:
    """(name, CPUs) of the Ray container (containers[0]) from the cpu limit it ends with
    (`ctx.facts`); None when it has no usable cpu."""
    for c in pod.containers:
        if c.path == pod.spec_path("containers", 0):
            limit = ctx.facts[c.path].limit
            if limit is None or limit <= 0:
                return None
            return c.name, quantity.kubelet_cpus(limit) or max(1, limit // NANO)
    return None


def apply(pod: PodView, ctx) -> None:
    """Keep rayStartParams.num-cpus equal to the Ray container's CPUs; on the head, make
    the autoscaler's resources request == limit."""
    if pod.at.ray_params is None:
        return
    _autoscaler(pod)
    found = _ray_cpus(pod, ctx)
    if found is None:
        return
    name, n = found
    want = str(n)
    params = get_path(pod.edits.root, pod.at.ray_params)
    path = pod.at.ray_params + (KEY,)
    if params is not None and not isinstance(params, dict):
        pod.error(pod.at.ray_params, "rayStartParams must be a mapping of strings")
        return
    have = (params or {}).get(KEY)
    limit = ctx.facts[pod.spec_path("containers", 0)].limit
    has = (f"has {n} pinned CPUs" if quantity.kubelet_cpus(limit) else
           f"has a cpu limit of {quantity.format_cpu(limit)}, not a whole number, so it runs "
           f"in the shared pool, {n} CPUs of it counted")
    why = (f"the Ray container {name!r} {has}; Ray schedules "
           f"tasks and sizes each worker's OMP_NUM_THREADS by num-cpus")
    if have is None:
        pod.set(path, want, f"rayStartParams.num-cpus set to {want}: {why}")
        return
    text = str(have).strip(numbers.BLANKS)
    if text == want or text == "0":
        return      # "0": no Ray work on this node (KubeRay's advice for the head)
    if numbers.decimal(text) is None:
        pod.warn(path, f"rayStartParams.num-cpus {numbers.shown(text)} is not a number and is "
                       f"left alone; it should be {want} ({why})")
        return
    pod.set(path, want, f"rayStartParams.num-cpus {text} -> {want}: {why}", have,
            severity=WARNING)


def _autoscaler(pod: PodView) -> None:
    """On the head group's pod of a cluster with `autoscalerOptions.resources`: per cpu and
    memory, request and limit set to the larger of the two (the one set when only one is),
    since KubeRay gives the autoscaler container exactly these and request != limit makes
    the head pod Burstable. A whole-number cpu is not written (the kubelet would pin the
    autoscaler): a warning names a fractional value instead."""
    params = pod.at.ray_params
    if "headGroupSpec" not in params:
        return
    base = params[:params.index("headGroupSpec")] + ("autoscalerOptions", "resources")
    res = get_path(pod.edits.root, base)
    if not isinstance(res, dict):
        return
    where = ".".join(str(p) for p in base)
    for r in ("cpu", "memory"):
        have = {}
        for part in ("requests", "limits"):
            raw = get_path(res, (part, r))
            if raw is None:
                continue
            try:
                have[part] = (raw, numbers.input_quantity(
                    raw, r, lambda: pod.edits.plain(base + (part, r))))
            except quantity.QuantityError as e:
                if numbers.api_quantity(raw)[1] is not None:   # read as another amount
                    pod.error(base + (part, r), f"{where}.{part}.{r}: {e}")
                return
            except TypeError:
                return
        if not have or (len(have) == 2 and have["requests"][1].nanos == have["limits"][1].nanos):
            continue
        raw, big = max(have.values(), key=lambda h: h[1].nanos)
        if r == "cpu" and big.is_integer:
            pod.warn(base, f"{where}: the autoscaler's cpu {raw} is a whole number; with "
                           f"requests != limits the head pod is Burstable, and as requests "
                           f"== limits the kubelet would pin the autoscaler; set both to a "
                           f"fractional value such as "
                           f"{quantity.kubelet_cpus(big.nanos) * 1000 - 100}m "
                           f"({AUTOSCALER_SOURCE})")
            continue
        text = quantity.format_cpu(big.nanos) if r == "cpu" else str(raw)
        for part in ("requests", "limits"):
            old = have.get(part, (None, None))[0]
            if old is not None and have[part][1].nanos == big.nanos:
                continue
            what = f"{old} -> {text}" if old is not None else f"set to {text}"
            pod.set(base + (part, r), text,
                    f"{where}.{part}.{r} {what}: KubeRay gives the autoscaler container of "
                    f"the head pod exactly these resources, and request != limit makes the "
                    f"head pod Burstable ({AUTOSCALER_SOURCE})", old)
