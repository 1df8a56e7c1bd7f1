"""podlevel: pod-level `resources` made consistent with the containers, and warned about.

A PodSpec may carry `resources` for the whole pod (KEP-2837, alpha 1.32, beta and on by
default from 1.34, so in every supported version). When it is set, the pod's QoS class is
computed from it alone, and the static CPU Manager gives such a pod no exclusive CPUs at all
("pod is using pod-level resources which are not supported by the static CPU manager
policy") unless the `PodLevelResourceManagers` gate is on (alpha in 1.36, beta and off by
default in 1.37). The warning says what the config's version does. KServe's inline PodSpec
has the field too: `spec.predictor.resources` is pod-level, not the model container's
(`spec.predictor.<framework>.resources`).

When a pod spec carries `resources`:

- cpu and memory get `requests == limits`, each the largest of the pod-level request, the
  pod-level limit and what the containers need after the resources rule: the larger of
  (every app container + every native sidecar) and (each regular init container + the
  native sidecars declared before it) — the pod's effective request, counting the
  containers admission webhooks inject (krm_fn/admission/injectors, sized as the
  injector-annotations rule leaves them): the API server validates the pod after the
  webhooks, and refuses pod-level requests below that aggregate (KEP-2837);
- on a pool whose kubelet pins such pods (below), the cpu is rounded up to whole CPUs
  (whole cores under `full-pcpus-only`), the block the kubelet can pin, as `cpuRounding`
  rounds a container's cpu;
- a warning says that pinning needs the field removed, and where, unless the pool's
  kubelet pins such pods (PodLevelResourceManagers on with the Topology Manager's pod
  scope: the verdict then says how it shares the pod's block of CPUs out).
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.pod import PodView
from krm_fn.quantity import NANO

ID = "podlevel"
OPTIONS = ()


def _injected(pod: PodView, ctx) -> tuple:
    """The containers the admission-time injectors add to `pod` (model.Container, cpu in
    nanocores, memory in bytes), sized as they will be after this render's annotations."""
    if getattr(ctx, "ictx", None) is None:
        return ()
    from krm_fn.admission import injectors
    return tuple(c for inj in injectors.for_pod(pod, ctx.ictx) for c in inj.containers)


def _need(pod: PodView, res: str, injected: tuple = ()):
    """(effective request of the containers, injected ones included, in nano-units (int,
    Quantity.nanos: nanocores for cpu), a Quantity to format like) or (None, None) when a
    container has no usable value.
    Injected init containers and sidecars run before the pod's own (they are put first)."""
    parse = quantity.parse_cpu if res == "cpu" else quantity.parse_memory
    apps = sidecars = init_peak = 0
    scale = 1 if res == "cpu" else NANO     # the model's memory is in bytes
    like = None
    for c in sorted(injected, key=lambda c: c.role == "app"):
        amount = c.requests.get(res, 0) * scale
        if c.role == "app":
            apps += amount
        elif c.role == "sidecar":
            sidecars += amount
        else:
            init_peak = max(init_peak, sidecars + amount)
    for c in pod.containers:       # containers first, then initContainers, in order
        raw = c.get("resources", "limits", res)
        try:
            q = parse(raw)
        except (quantity.QuantityError, TypeError):
            return None, None
        like = like or q
        if c.role == "app":
            apps += q.nanos
        elif c.role == "sidecar":
            sidecars += q.nanos
        else:
            init_peak = max(init_peak, sidecars + q.nanos)
    if like is None:
        return None, None
    return max(apps + sidecars, init_peak), like


def apply(pod: PodView, ctx) -> None:
    """Make pod-level resources requests == limits and warn; see the module docstring."""
    res = pod.spec.get("resources")
    if res is None:
        return
    base = pod.spec_path("resources")
    if not isinstance(res, dict) or any(
            res.get(p) is not None and not isinstance(res.get(p), dict)
            for p in ("requests", "limits")):
        pod.error(base, "pod-level resources must be a mapping with requests and limits "
                        "mappings")
        return
    if not (res.get("requests") or res.get("limits")):
        return      # empty: not set for the kubelet (1.37); before, the verdict says why
    where = ".".join(str(p) for p in base)
    injected = _injected(pod, ctx)
    added = (", injected " + ", ".join(c.name for c in injected) + " included"
             if injected else "")
    for r in ("cpu", "memory"):
        have = {}
        for part in ("requests", "limits"):
            raw = (res.get(part) or {}).get(r)
            if raw is None:
                continue
            try:
                have[part] = (raw, numbers.input_quantity(
                    raw, r, lambda: pod.edits.plain(base + (part, r))))
            except quantity.QuantityError as e:
                pod.error(base + (part, r), f"pod-level {part}.{r}: {e}")
                return
        need, like = _need(pod, r, injected)
        candidates = [q.nanos for _, q in have.values()] + ([need] if need is not None else [])
        if not candidates:
            continue
        value = max(candidates)
        block = _block(value, ctx) if r == "cpu" else None
        if block is not None:
            value = block[0]
        if have:        # memory keeps the unit written at pod level
            like = max((q for _, q in have.values()), key=lambda q: q.nanos)
        text = quantity.format_cpu(value) if r == "cpu" else quantity.format_like(value, like)
        for part in ("requests", "limits"):
            raw, q = have.get(part, (None, None))
            if q is not None and q.nanos == value:
                continue
            because = (block[1] if block is not None else
                       "the containers need " + text + added if need == value and
                       (q is None or need != q.nanos) else "the larger pod-level value")
            pod.set(base + (part, r), text,
                    f"pod-level {part}.{r} " + (f"{raw} -> {text}" if raw is not None
                                                 else f"set to {text}")
                    + f" ({because}): with pod-level resources the pod's QoS comes from "
                      f"them alone, and Guaranteed needs requests == limits", raw)
    kserve = (" In KServe this field is pod-level, not the model container's: container "
              "resources go under the framework key (e.g. spec.predictor.model.resources)."
              if pod.at.platform == "kserve" else "")
    if getattr(ctx.pool, "pins_pod_level", False):
        return      # the pool's kubelet pins it as one block: the verdict says how
    if not getattr(ctx.pool, "skips_pod_level", True):
        return      # the pool's kubelet pins its containers one by one: the verdict says so
    pod.warn(base, f"{where} sets pod-level resources: {_version_note(ctx)}; remove {where} "
                   f"and keep the container resources." + kserve)


def _block(value: int, ctx) -> tuple[int, str] | None:
    """(cpu in nanocores, why) when the pool's kubelet pins pods with pod-level resources
    (PoolInfo.pins_pod_level) and `value` is not a block it can pin: whole CPUs, and under
    `full-pcpus-only` whole cores (policy_static.go allocatePodForAdd, podGuaranteedCPUs:
    a pod-level cpu that is no whole number runs in the shared pool; a block of part of a
    core is an SMTAlignmentError); None when no rounding is needed. As for a container's
    cpu (facts._pinned_target, _smt), `spec.workloads.cpuRounding` error rounds nothing,
    keep leaves a fractional cpu but raises a whole one to whole cores; up and down both
    round up here, as the pod-level cpu must cover the containers'."""
    pool = getattr(ctx, "pool", None)
    mode = ctx.cfg.workloads.cpuRounding
    if pool is None or not pool.pins_pod_level or mode == "error" or (
            mode == "keep" and not quantity.kubelet_cpus(value)):
        return None     # kept as written: the verdict says why the pod is not pinned
    per = pool.threads_per_core if pool.full_pcpus_only else 1
    unit = NANO * per
    whole = quantity.ceil_div(value, unit) * unit
    if whole == value:
        return None
    return whole, (f"{quantity.format_cpu(value)} rounded up to "
                   f"{quantity.format_cpu(whole)}: the kubelet pins the pod's pod-level cpu "
                   f"as one block only in whole CPUs"
                   + (f", under full-pcpus-only whole cores of {per} threads" if per > 1
                      else ""))


def _version_note(ctx) -> str:
    """What pod-level resources do on the config's Kubernetes version, for a pool whose
    kubelet skips such pods (PoolInfo.skips_pod_level: KEP-2837; the PodLevelResources gate
    is on by default in every supported version, and the static CPU Manager skips such pods
    unless the PodLevelResourceManagers gate, from 1.36, is on, or from 1.36 whenever the
    kubelet's PodLevelResources is off; its stage and default from the generated upstream
    data, krm_fn.node.upstream)."""
    from krm_fn.node import upstream
    version = tuple(ctx.cfg.kubernetesVersion)
    data = upstream.load(version)
    gate = "PodLevelResourceManagers"
    if gate not in data.gates:
        unless = ""
    elif not getattr(ctx.pool, "pod_level_gate", True):
        unless = (f"; the pool's kubelet runs with the PodLevelResources gate off, and from "
                  f"Kubernetes 1.36 skips such a pod unless PodLevelResources and {gate} are "
                  f"both on")
    else:
        unless = f"; unless the {gate} gate ({data.gate_text(gate)}) is on"
    return (f"on Kubernetes {upstream.version_str(version)} the static CPU Manager gives a pod "
            f"with pod-level resources no exclusive CPUs (KEP-2837{unless}), so no container "
            f"is pinned")
