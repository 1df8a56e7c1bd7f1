"""resources: Guaranteed QoS with whole CPUs for every pinned container.

Rules (Kubernetes: pkg/apis/core/v1/helper/qos/qos.go; static CPU Manager:
pkg/kubelet/cm/cpumanager/policy_static.go; docs: "CPU Management Policies"):

- A pod is Guaranteed only when every container — app, init and restartable init
  (native sidecar) — has cpu and memory limits, with requests equal to limits.
- The static CPU Manager gives exclusive CPUs only to containers of a Guaranteed pod whose
  cpu request is a whole number.

What the rule does, per container:

- Pinned containers (the `krm-fn.dev/pinned-containers` annotation, else
  `spec.workloads.pinnedContainers`, else the `kubectl.kubernetes.io/default-container`
  annotation, else the model container of the kind, else the first container): cpu becomes
  the `krm-fn.dev/cpus` annotation of the workload when set, else the larger of request and
  limit, rounded per
  `cpuRounding` (warning with old and new value), then up to a multiple of the node pool's
  threads-per-core when `full-pcpus-only` is on (warning; else SMTAlignmentError).
  `cpuRounding: keep` leaves a fractional value as it is (the container then runs in
  the shared pool and its thread vars get the value rounded down, at least 1).
  Memory becomes the larger of request and limit, in the unit the user wrote. A pinned
  container with no cpu or no memory takes `defaultCpus` / `defaultMemory` (warning) or
  is an error.
- Every other container gets requests == limits too (cpu may stay fractional: it runs in
  the shared pool). Missing values come from `sidecarResources` (warning). An app or
  sidecar container that already asks for whole CPUs is pinned by the kubelet anyway, so
  it gets the same SMT rounding.
- A regular init container that asks for whole CPUs is moved to the shared pool with
  `initContainerCpu` (kubernetes/kubernetes#112228: integer init containers cause
  TopologyAffinityError and leak CPUs) unless it is listed in `pinnedContainers` (or the
  `krm-fn.dev/pinned-containers` annotation). No regular init container gets more CPU than
  the largest app container (warning): a pinned one is lowered to it; a shared-pool one is
  lowered to it when that is fractional, else to `initContainerCpu` when that is lower
  (a whole number would pin it), else warned about. Native sidecars
  (`restartPolicy: Always`) run beside the app containers and are not capped.
- Quantities are written in canonical form as quoted strings (`"4"`, `"500m"`); a value
  that is already equal is left as written.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView

_LEADING_ZERO = re.compile(r"^[+-]?0[0-9]+$")
CPUS_ANNOTATION = "krm-fn.dev/cpus"
_GUARANTEED = "Guaranteed QoS needs requests == limits for cpu and memory in every container"


def _read(pod: PodView, c: ContainerView, res: str, kind: str):
    """(requests value, limits value) as Quantity or None; errors are reported."""
    out = []
    for part in ("requests", "limits"):
        raw = c.get("resources", part, res)
        if raw is None:
            out.append(None)
            continue
        if _LEADING_ZERO.match(str(raw)):
            pod.error(c.path + ("resources", part, res),
                      f"container {c.name!r}: {res} {raw} has a leading zero: YAML 1.1 readers "
                      f"(kubectl, kustomize) read it as an octal number, Kubernetes quantities "
                      f"as decimal; write it without the leading zero, quoted")
            return None, None, False
        try:
            q = quantity.parse_cpu(raw) if kind == "cpu" else quantity.parse_memory(raw)
        except quantity.QuantityError as e:
            pod.error(c.path + ("resources", part, res), f"container {c.name!r}: {e}")
            return None, None, False
        if q.value == 0:
            pod.error(c.path + ("resources", part, res),
                      f"container {c.name!r}: {res} {q.text!r} must be greater than zero "
                      f"({_GUARANTEED} and non-zero limits)")
            return None, None, False
        out.append(q)
    return out[0], out[1], True


def _check_shape(pod: PodView, c: ContainerView) -> bool:
    res = c.data.get("resources")
    if res is None:
        return True
    if not isinstance(res, dict):
        pod.error(c.path + ("resources",), f"container {c.name!r}: resources must be a mapping")
        return False
    for part in ("requests", "limits"):
        v = res.get(part)
        if v is not None and not isinstance(v, dict):
            pod.error(c.path + ("resources", part),
                      f"container {c.name!r}: resources.{part} must be a mapping")
            return False
    return True


def _write(pod: PodView, c: ContainerView, res: str, text: str, value: Fraction,
           reason: str) -> None:
    """Set requests.<res> and limits.<res> to `text` unless already equal in value."""
    kind_parse = quantity.parse_cpu if res == "cpu" else quantity.parse_memory
    for part in ("requests", "limits"):
        path = c.path + ("resources", part, res)
        raw = c.get("resources", part, res)
        if raw is not None and kind_parse(raw).value == value:
            continue
        msg = (f"container {c.name!r}: {part}.{res} "
               + (f"{raw!s} -> {text}" if raw is not None else f"set to {text}")
               + f" ({reason})")
        pod.set(path, text, msg, raw)


def _smt(pod: PodView, c: ContainerView, n: int, ctx, why: str) -> int:
    pool = ctx.pool
    if pool is None or not pool.full_pcpus_only or pool.threads_per_core <= 1:
        return n
    t = pool.threads_per_core
    if n % t == 0:
        return n
    m = math.ceil(n / t) * t
    if ctx.cfg.workloads.cpuRounding == "error":
        pod.error(c.path + ("resources", "limits", "cpu"),
                  f"container {c.name!r}: cpu {n} is not a multiple of {t}: node pool "
                  f"{pool.name!r} uses full-pcpus-only with {t} threads per core, so the "
                  f"kubelet would fail the pod with SMTAlignmentError; set {m} "
                  f"(spec.workloads.cpuRounding is error)")
        return n
    pod.warn(c.path + ("resources", "limits", "cpu"),
             f"container {c.name!r}: cpu {n} raised to {m}: node pool {pool.name!r} uses "
             f"full-pcpus-only with {t} threads per core, so {why} must be a multiple of {t} "
             f"(else the kubelet fails the pod with SMTAlignmentError)")
    return m


def _memory(pod: PodView, c: ContainerView, pinned: bool, cfg) -> bool:
    req, lim, ok = _read(pod, c, "memory", "memory")
    if not ok:
        return False
    if req is None and lim is None:
        if pinned:
            default = cfg.workloads.defaultMemory
            if default is None:
                pod.error(c.path + ("resources", "limits", "memory"),
                          f"container {c.name!r} is pinned but sets no memory; set "
                          f"resources.limits.memory (or spec.workloads.defaultMemory): "
                          f"{_GUARANTEED}, and krm-fn never invents memory for a pinned "
                          f"container")
                return False
            chosen, why = default, "spec.workloads.defaultMemory"
        else:
            chosen, why = cfg.workloads.sidecarResources.memory, \
                "spec.workloads.sidecarResources.memory"
        pod.warn(c.path + ("resources", "limits", "memory"),
                 f"container {c.name!r} sets no memory; using {chosen.text} from {why}")
    else:
        chosen = max((q for q in (req, lim) if q is not None), key=lambda q: q.value)
    _write(pod, c, "memory", chosen.text, chosen.value, _GUARANTEED)
    return True


def _beyond_pool(pod: PodView, c: ContainerView, n: int, ctx, what: str) -> bool:
    """Error (and True) when `n` exclusive CPUs exceed what the node pool can give."""
    if ctx.pool is None or n <= ctx.pool.exclusive_cpus:
        return False
    pod.error(c.path + ("resources", "limits", "cpu"),
              f"container {c.name!r} {what.format(n=n)} but node pool {ctx.pool.name!r} has "
              f"{ctx.pool.exclusive_cpus} CPUs outside reservedSystemCPUs: the kubelet could "
              f"never admit the pod")
    return True


def _cpu_target(pod: PodView, c: ContainerView, pinned: bool, ctx, largest_app: int | None):
    """The cpu value to write, as (text, Fraction cores, reason), or None after an error."""
    cfg = ctx.cfg
    req, lim, ok = _read(pod, c, "cpu", "cpu")
    if not ok:
        return None
    cpus = ctx.cpus
    override = pinned and cpus is not None
    if override:
        value = Fraction(cpus)
    elif req is None and lim is None:
        if pinned:
            default = cfg.workloads.defaultCpus
            if default is None:
                pod.error(c.path + ("resources", "limits", "cpu"),
                          f"container {c.name!r} is pinned but sets no cpu; set "
                          f"resources.limits.cpu to a whole number of CPUs (or "
                          f"spec.workloads.defaultCpus)")
                return None
            base, why = default, "spec.workloads.defaultCpus"
        else:
            base, why = cfg.workloads.sidecarResources.cpu, "spec.workloads.sidecarResources.cpu"
        pod.warn(c.path + ("resources", "limits", "cpu"),
                 f"container {c.name!r} sets no cpu; using {base.text} from {why}")
        value = base.value
    else:
        value = max(q.value for q in (req, lim) if q is not None)
    if pinned:
        if value.denominator != 1:
            mode = cfg.workloads.cpuRounding
            old = quantity.format_cpu(value)
            if mode == "keep":
                pod.warn(c.path + ("resources", "limits", "cpu"),
                         f"container {c.name!r} asks for {old} CPUs and is not pinned "
                         f"(spec.workloads.cpuRounding is keep): it runs in the shared pool")
                return old, value, _GUARANTEED
            if mode == "error":
                pod.error(c.path + ("resources", "limits", "cpu"),
                          f"container {c.name!r} is pinned but asks for {old} CPUs; the "
                          f"static CPU Manager pins only whole CPUs: set a whole number "
                          f"(spec.workloads.cpuRounding is error)")
                return None
            n = math.ceil(value) if mode == "up" else max(1, math.floor(value))
            pod.warn(c.path + ("resources", "limits", "cpu"),
                     f"container {c.name!r}: cpu {old} rounded {mode} to {n}: the static "
                     f"CPU Manager gives exclusive CPUs only to whole-number requests")
        else:
            n = int(value)
        n = _smt(pod, c, n, ctx, "the CPUs of a pinned container")
        if _beyond_pool(pod, c, n, ctx, "would need {n} exclusive CPUs"):
            return None
        if c.role != "app" and largest_app is not None and n > largest_app:
            pod.warn(c.path + ("resources", "limits", "cpu"),
                     f"init container {c.name!r}: cpu {n} lowered to {largest_app}, the "
                     f"largest app container: a pinned init container never needs more")
            n = largest_app
        why = (f"annotation {CPUS_ANNOTATION}: \"{cpus}\" sets the pinned CPUs of this "
               f"workload; " if override else "whole CPUs for exclusive pinning; ")
        return quantity.format_cpu(Fraction(n)), Fraction(n), why + _GUARANTEED
    if value.denominator == 1:
        if c.role == "init":
            new = cfg.workloads.initContainerCpu
            return new.text, new.value, (
                "an init container that asks for whole CPUs takes exclusive CPUs and can "
                "fail admission (kubernetes/kubernetes#112228); it runs in the shared pool "
                "with spec.workloads.initContainerCpu instead — list it in "
                "spec.workloads.pinnedContainers to pin it")
        n = _smt(pod, c, int(value), ctx, "a container that asks for whole CPUs (it is "
                                          "pinned by the kubelet)")
        if _beyond_pool(pod, c, n, ctx, "asks for {n} whole CPUs"):
            return None
        return quantity.format_cpu(Fraction(n)), Fraction(n), _GUARANTEED
    return quantity.format_cpu(value), value, _GUARANTEED


def _sidecar_version(pod: PodView, ctx) -> None:
    version = ctx.cfg.kubernetesVersion
    for c in pod.containers:
        if c.role != "sidecar" or version >= (1, 29):
            continue
        pod.warn(c.path + ("restartPolicy",),
                 f"init container {c.name!r} is a native sidecar (restartPolicy: Always); "
                 f"before Kubernetes 1.29 the static CPU Manager let it share its exclusive "
                 f"CPUs with app containers (kubernetes/kubernetes#119442, fixed by PR "
                 f"#119447 and, for memory, PR #120715), and before 1.28 the kubelet does "
                 f"not know native sidecars at all: upgrade the nodes to pin it")


def _cap_init(pod: PodView, c: ContainerView, value: Fraction, largest: Fraction, ctx):
    """A shared-pool regular init container never asks for more CPU than the largest app
    container: the pod's CPU request is the larger of its init containers and its app
    containers, so more would only reserve CPU the app never gets. Returns the cpu to write
    as (text, value) or None to keep it."""
    if value <= largest:
        return None
    old = quantity.format_cpu(value)
    if largest.denominator != 1:
        new = largest
    else:
        ic = ctx.cfg.workloads.initContainerCpu.value
        if ic >= largest:
            pod.warn(c.path + ("resources", "limits", "cpu"),
                     f"init container {c.name!r}: cpu {old} is more than the largest app "
                     f"container ({quantity.format_cpu(largest)}): it raises the pod's CPU "
                     f"request for nothing, and a whole number would pin it; set a "
                     f"fractional value below {quantity.format_cpu(largest)} (or lower "
                     f"spec.workloads.initContainerCpu)")
            return None
        new = ic
    text = quantity.format_cpu(new)
    pod.warn(c.path + ("resources", "limits", "cpu"),
             f"init container {c.name!r}: cpu {old} lowered to {text}: a regular init "
             f"container never gets more CPU than the largest app container "
             f"({quantity.format_cpu(largest)}); more only raises the pod's CPU request, "
             f"and a whole number would pin it (kubernetes/kubernetes#112228)")
    return text, new, (f"a regular init container never gets more CPU than the largest app "
                       f"container; {_GUARANTEED}")


def apply(pod: PodView, ctx) -> None:
    """Make every container of `pod` Guaranteed; see the module docstring."""
    _sidecar_version(pod, ctx)
    order = [c for c in pod.containers if c.role == "app"] + \
            [c for c in pod.containers if c.role != "app"]
    explicit = ctx.explicit | frozenset(ctx.cfg.workloads.pinnedContainers)
    largest_app: int | None = None
    largest_any: Fraction | None = None
    for c in order:
        if not _check_shape(pod, c):
            continue
        pinned = c.name in ctx.pinned and (c.role == "app" or c.name in explicit)
        target = _cpu_target(pod, c, pinned, ctx, largest_app if c.role != "app" else None)
        if target is not None:
            text, value, reason = target
            if c.role == "app":
                largest_any = value if largest_any is None else max(largest_any, value)
                if value.denominator == 1:
                    largest_app = max(largest_app or 0, int(value))
            elif c.role == "init" and not pinned and largest_any is not None:
                capped = _cap_init(pod, c, value, largest_any, ctx)
                if capped is not None:
                    text, value, reason = capped
            _write(pod, c, "cpu", text, value, reason)
        _memory(pod, c, pinned, ctx.cfg)
