"""resources: Guaranteed QoS with whole CPUs for every pinned container.

Rules (Kubernetes: pkg/apis/core/v1/helper/qos/qos.go; static CPU Manager:
pkg/kubelet/cm/cpumanager/policy_static.go; docs: "CPU Management Policies"):

- A pod is Guaranteed only when every container — app, init and restartable init
  (native sidecar) — has cpu and memory limits, with requests equal to limits.
- The static CPU Manager gives exclusive CPUs only to containers of a Guaranteed pod whose
  cpu request is a whole number.

What the rule does, per container:

- Pinned containers: the `krm-fn.dev/pinned-containers` annotation, else
  `spec.workloads.pinnedContainers`, else every app container running a serving engine
  krm-fn recognises (by image, command or args, `krm-fn explain rule engines`; a
  general-purpose runtime, the JVM or a uvicorn-gunicorn image, does not count), else the
  `kubectl.kubernetes.io/default-container` annotation, else the model container of the
  kind, else the first app container (a warning, when there are several, names it and the
  annotation that pins another). A container running a serving engine that would stay
  in the shared pool (not pinned, a fractional cpu) is an error, unless the annotation or `pinnedContainers` named the
  containers to pin without it (info). Every error that asks a pinned container for whole
  CPUs or memory also says how to pin another container instead.
  A pinned container's cpu becomes the `krm-fn.dev/cpus` annotation of the workload when
  set, else the larger of request and limit, rounded per `cpuRounding` (warning with old and new value), then up to a multiple of the node pool's
  threads-per-core when `full-pcpus-only` is on (warning; else SMTAlignmentError).
  `cpuRounding: keep` leaves a fractional value as it is (the container then runs in
  the shared pool and its thread vars get the value rounded down, at least 1).
  Memory becomes the larger of request and limit, in the unit the user wrote. A pinned
  container with no cpu or no memory takes `defaultCpus` / `defaultMemory` (warning) or
  is an error.
- Every other container gets requests == limits too (cpu may stay fractional: it runs in
  the shared pool). Missing values come from `sidecarResources` (warning). A value taken
  from `sidecarResources`, `defaultCpus` or `defaultMemory` is kept within the `min` and
  `max` per container of the LimitRanges of the pod's namespace in the input (warning
  naming the LimitRange: plugin/pkg/admission/limitranger/admission.go). An app or
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
- Quantities are written in canonical form as quoted strings (`"4"`, `"500m"`; memory
  in the family the user wrote, `1024Mi` as `1Gi`); a value that is already equal is left
  to the `canonical` rule, which writes it canonically when the container is changed.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.pod import ContainerView, PodView
from krm_fn.results import ERROR
from krm_fn.rules import choice, facts
from krm_fn.rules.facts import GUARANTEED as _GUARANTEED

ID = "resources"
OPTIONS = ("workloads.pinnedContainers", "workloads.cpuRounding", "workloads.defaultCpus",
           "workloads.defaultMemory", "workloads.sidecarResources",
           "workloads.initContainerCpu")


def _emit(pod: PodView, notes) -> None:
    """Report the (severity, path, message) notes of a cpu decision, in order."""
    for severity, path, message in notes:
        if severity == ERROR:
            pod.error(path, message)
        else:
            pod.warn(path, message)


def _check_shape(pod: PodView, c: ContainerView) -> bool:
    """False (after an error result) when resources or its requests/limits is not a
    mapping."""
    note = facts.shape_note(c)
    if note is not None:
        _emit(pod, (note,))
    return note is None


def _read(pod: PodView, c: ContainerView, res: str, kind: str):
    """(requests value, limits value, ok) as Quantity or None; errors are reported."""
    notes: list = []
    out = facts.read_pair(c, res, kind, notes, pod.edits.plain)
    _emit(pod, notes)
    return out


def _cpu_target(pod: PodView, c: ContainerView, pinned: bool, ctx, largest_app: int | None):
    """The cpu value to write, as (text, nanocores (int), reason), or None after an error
    (facts.cpu_target, with its notes reported)."""
    notes: list = []
    target = facts.cpu_target(c, pinned, ctx, largest_app, notes, pod.edits.plain)
    _emit(pod, notes)
    return target


def _write(pod: PodView, c: ContainerView, res: str, text: str, value: int,
           reason: str) -> None:
    """Set requests.<res> and limits.<res> to `text` unless already equal in value (`value`:
    nano-units (int), Quantity.nanos: nanocores for cpu)."""
    kind_parse = quantity.parse_cpu if res == "cpu" else quantity.parse_memory
    for part in ("requests", "limits"):
        resources = c.data.get("resources")     # read again: the write before may add it
        values = resources.get(part) if isinstance(resources, dict) else None
        raw = values.get(res) if isinstance(values, dict) else None
        if raw is not None and kind_parse(raw).nanos == value:
            continue
        path = c.path + ("resources", part, res)
        msg = (f"container {c.name!r}: {part}.{res} "
               + (f"{raw!s} -> {text}" if raw is not None else f"set to {text}")
               + f" ({reason})")
        pod.set(path, text, msg, raw)


def _memory(pod: PodView, c: ContainerView, pinned: bool, cfg, bounds: dict | None = None
            ) -> bool:
    """Write the memory of container `c` (requests == limits); `bounds`: RuleContext.bounds
    (a size taken from the config is kept within them). False after an error."""
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
                          f"container; {choice.another()}")
                return False
            chosen, why = default, "spec.workloads.defaultMemory"
        else:
            chosen, why = cfg.workloads.sidecarResources.memory, \
                "spec.workloads.sidecarResources.memory"
        chosen, why = facts.bounded(chosen, why, "memory", bounds)
        pod.warn(c.path + ("resources", "limits", "memory"),
                 f"container {c.name!r} sets no memory; using {chosen.text} from {why}")
    else:
        chosen = max((q for q in (req, lim) if q is not None), key=lambda q: q.nanos)
    _write(pod, c, "memory", quantity.format_like(chosen.nanos, chosen), chosen.nanos,
           _GUARANTEED)
    return True


def apply(pod: PodView, ctx) -> None:
    """Make every container of `pod` Guaranteed: report and write the cpu decisions of
    `ctx.facts` (krm_fn/rules/facts.py), then memory; see the module docstring. First
    what rules/choice.py says of the choice of the pinned containers."""
    for severity, path, message in choice.notes(pod, ctx):
        pod.note(severity, path, message)
    for c in facts.resource_order(pod):
        plan = ctx.facts[c.path].cpu
        _emit(pod, plan.notes)
        if not plan.shaped:
            continue
        if plan.target is not None:
            text, value, reason = plan.target
            _write(pod, c, "cpu", text, value, reason)
        _memory(pod, c, plan.pinned, ctx.cfg, ctx.bounds)
