"""Per-container facts, computed once per pod before the rules run (`krm_fn.rules.run`)
and handed to every rule as `ctx.facts`, so that no rule calls another:

- the cpu each container is given (the rounding decision: whole CPUs for a pinned
  container, SMT alignment, defaults, the init-container caps) with the results that
  decision reports, which the resources rule emits and writes;
- the cpu limit each container ends with, and from it its thread count (`Count`): whole
  CPUs minus `threads.reservedCpus`, divided by the worker processes it runs;
- the serving engines recognised in it (krm_fn/rules/engines/) and its worker count.

Sources: Guaranteed QoS (kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go), exclusive
CPUs for whole-number requests only and SMTAlignmentError under `full-pcpus-only`
(pkg/kubelet/cm/cpumanager/policy_static.go;
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/), integer init
containers (kubernetes/kubernetes#112228).
"""
from __future__ import annotations

import functools
import math
from collections import namedtuple

from krm_fn import numbers, quantity
from krm_fn.quantity import NANO, ceil_div, kubelet_cpus
from krm_fn.pod import ContainerView, PodView
from krm_fn.results import ERROR, WARNING
from krm_fn.rules import engines as serving
from krm_fn.rules.choice import another
from krm_fn.rules.engines.base import Workers

CPUS_ANNOTATION = "krm-fn.dev/cpus"
GUARANTEED = "Guaranteed QoS needs requests == limits for cpu and memory in every container"
_LIMIT = ("resources", "limits", "cpu")


class CpuPlan(namedtuple("CpuPlan", "notes target pinned shaped", defaults=(True,))):
    """The resources rule's cpu decision for one container. `notes`: the results it
    reports, in order, as (severity, field path, message); `target`: (canonical text,
    nanocores (int), reason) to write to requests and limits, or None (nothing written:
    an error, or the shape of `resources` is wrong); `pinned`: pinned by krm-fn;
    `shaped`: False when `resources` is not of the right shape (nothing else is read)."""

    __slots__ = ()


class Count(namedtuple("Count", "cpus base count whole workers why base_why physical kept",
                       defaults=(False, 0))):
    """The thread count of one container. `cpus`: its whole CPUs (rounded down when kept
    fractional); `base`: cpus - kept, at least 1 (what one process may use);
    `count`: base divided by the worker processes, at least 1 (what each pool gets);
    `whole`: the cpu limit is a whole number; `workers`: the Workers found or None;
    `why` / `base_why`: the reason for count / base, for messages; `physical`: count is one
    thread per physical core (base divided by the pool's threads per core, before the
    workers; threads.perCore); `kept`: the pinned CPUs no thread pool gets (the larger of
    threads.reservedCpus and the cores the engine keeps for its own other processes)."""

    __slots__ = ()


class ContainerFacts(namedtuple("ContainerFacts", "cpu limit count engines unread_workers",
                                defaults=((), None))):
    """What the rules know of one container before any of them runs. `cpu`: the CpuPlan
    (None for a container the resources rule skips); `limit`: the cpu limit (nanocores) the
    container has once the resources rule has written, None when absent or not a
    quantity; `count`: its Count, None when it gets no thread env (no whole CPUs);
    `engines`: the serving engines recognised (only for a container with a count and
    `threads.engines` on; else empty); `unread_workers`: (what, field path, text) of a
    worker count that is not a whole number, when no worker count was read."""

    __slots__ = ()


# -- the cpu decision (the resources rule writes it) --------------------------------------


def shape_note(c: ContainerView) -> tuple | None:
    """An error note when `resources` (or its requests/limits) is not a mapping."""
    res = c.data.get("resources")
    if res is None:
        return None
    if not isinstance(res, dict):
        return ERROR, c.path + ("resources",), f"container {c.name!r}: resources must be a mapping"
    for part in ("requests", "limits"):
        v = res.get(part)
        if v is not None and not isinstance(v, dict):
            return (ERROR, c.path + ("resources", part),
                    f"container {c.name!r}: resources.{part} must be a mapping")
    return None


def read_pair(c: ContainerView, res: str, kind: str, notes: list, plain=None):
    """(requests, limits, ok) of `res` as Quantity or None, read as the API server reads
    them (numbers.api_quantity: `cpu: 010` unquoted is 8 there, 10 as written: an error
    with both readings); problems go to `notes` as errors and give ok False. `plain`:
    f(path from the item root) -> whether the value there is unquoted (Edits.plain;
    None or f returning None: not known, such a spelling fails closed)."""
    out = []
    resources = c.data.get("resources")
    for part in ("requests", "limits"):
        values = resources.get(part) if isinstance(resources, dict) else None
        raw = values.get(res) if isinstance(values, dict) else None
        if raw is None:
            out.append(None)
            continue
        where = c.path + ("resources", part, res)
        text, other = numbers.api_quantity(raw)
        if other is not None and plain is not None:     # look at the YAML only then
            text, other = numbers.api_quantity(raw, plain(where))
        if other is not None:
            notes.append((ERROR, where, f"container {c.name!r}: {res} {other}"))
            return None, None, False
        try:
            q = quantity.parse_cpu(text) if kind == "cpu" else quantity.parse_memory(text)
        except quantity.QuantityError as e:
            notes.append((ERROR, c.path + ("resources", part, res),
                          f"container {c.name!r}: {e}"))
            return None, None, False
        if not q.nanos:
            notes.append((ERROR, c.path + ("resources", part, res),
                          f"container {c.name!r}: {res} {q.text!r} must be greater than zero "
                          f"({GUARANTEED} and non-zero limits)"))
            return None, None, False
        out.append(q)
    return out[0], out[1], True


def _smt(c: ContainerView, n: int, ctx, why: str, notes: list, pinned: bool = False) -> int:
    """`n` CPUs raised to a multiple of the pool's threads per core under full-pcpus-only
    (a warning note), or kept after an error note (cpuRounding error; for a `pinned`
    container it also says how to pin another)."""
    pool = ctx.pool
    if pool is None or not pool.full_pcpus_only or pool.threads_per_core <= 1:
        return n
    t = pool.threads_per_core
    if n % t == 0:
        return n
    m = math.ceil(n / t) * t
    if ctx.cfg.workloads.cpuRounding == "error":
        notes.append((ERROR, c.path + _LIMIT,
                      f"container {c.name!r}: cpu {n} is not a multiple of {t}: node pool "
                      f"{pool.name!r} uses full-pcpus-only with {t} threads per core, so the "
                      f"kubelet would fail the pod with SMTAlignmentError; set {m} "
                      f"(spec.workloads.cpuRounding is error)"
                      + (f"; {another()}" if pinned else "")))
        return n
    notes.append((WARNING, c.path + _LIMIT,
                  f"container {c.name!r}: cpu {n} raised to {m}: node pool {pool.name!r} uses "
                  f"full-pcpus-only with {t} threads per core, so {why} must be a multiple of "
                  f"{t} (else the kubelet fails the pod with SMTAlignmentError)"))
    return m


def _beyond_pool(c: ContainerView, n: int, ctx, what: str, notes: list,
                 pinned: bool = False) -> bool:
    """An error note (and True) when `n` exclusive CPUs exceed what the pool can give (for
    a `pinned` container it also says how to pin another)."""
    if ctx.pool is None or n <= ctx.pool.exclusive_cpus:
        return False
    notes.append((ERROR, c.path + _LIMIT,
                  f"container {c.name!r} {what.format(n=n)} but node pool {ctx.pool.name!r} "
                  f"has {ctx.pool.exclusive_cpus} CPUs outside its reserved CPUs: the kubelet "
                  f"could never admit the pod; ask for at most {ctx.pool.exclusive_cpus}, or "
                  f"give the pool more cores (topology) or fewer reserved.cores"
                  + (f"; {another()}" if pinned else "")))
    return True


def _requested(c: ContainerView, pinned: bool, ctx, req, lim, notes: list):
    """(nanocores asked for (int), True when the krm-fn.dev/cpus override applies),
    or None after an error note: the override, else the larger of request and limit,
    else the configured default."""
    cfg = ctx.cfg
    if pinned and ctx.cpus is not None:
        return ctx.cpus * NANO, True
    if req is not None or lim is not None:
        return (lim.nanos if req is None else req.nanos if lim is None
                else max(req.nanos, lim.nanos)), False
    if pinned:
        default = cfg.workloads.defaultCpus
        if default is None:
            notes.append((ERROR, c.path + _LIMIT,
                          f"container {c.name!r} is pinned but sets no cpu; set "
                          f"resources.limits.cpu to a whole number of CPUs (or "
                          f"spec.workloads.defaultCpus); {another()}"))
            return None
        base, why = default, "spec.workloads.defaultCpus"
    else:
        base, why = cfg.workloads.sidecarResources.cpu, "spec.workloads.sidecarResources.cpu"
    base, why = bounded(base, why, "cpu", ctx.bounds)
    notes.append((WARNING, c.path + _LIMIT,
                  f"container {c.name!r} sets no cpu; using {base.text} from {why}"))
    return base.nanos, False


def bounded(q, why: str, res: str, bounds: dict) -> tuple:
    """(quantity, where it comes from) for a `res` (cpu or memory) amount krm-fn chooses
    itself for a container that sets none: `q` (a quantity.Quantity from the config
    option `why`) as it is, or raised to the largest `min` / lowered to the smallest `max`
    that the LimitRanges of the pod's namespace set per container (`bounds`:
    admission.limitrange.container_bounds; the LimitRanger refuses a pod whose container
    asks for less or more: plugin/pkg/admission/limitranger/admission.go minConstraint,
    maxConstraint). Bounds that contradict each other leave `q` (the verdict reports the
    refusal)."""
    if not bounds:
        return q, why
    low, high = bounds.get((res, "min")), bounds.get((res, "max"))
    if low is not None and high is not None and low[0].nanos > high[0].nanos:
        return q, why
    if low is not None and q.nanos < low[0].nanos:
        return low[0], (f"the minimum {res} per container of LimitRange {low[1]} ({why} is "
                        f"{q.text}: the API server refuses less)")
    if high is not None and q.nanos > high[0].nanos:
        return high[0], (f"the maximum {res} per container of LimitRange {high[1]} ({why} "
                         f"is {q.text}: the API server refuses more)")
    return q, why


def _pinned_target(c: ContainerView, value: int, override: bool, ctx,
                   largest_app: int | None, notes: list):
    """The target of a pinned container (whole CPUs unless cpuRounding keeps it); `value`
    in nanocores (int): whole CPUs as the kubelet counts them (quantity.kubelet_cpus:
    `3999999999n` is 4)."""
    if not kubelet_cpus(value):
        mode = ctx.cfg.workloads.cpuRounding
        old = quantity.format_cpu(value)
        if mode == "keep":
            notes.append((WARNING, c.path + _LIMIT,
                          f"container {c.name!r} asks for {old} CPUs and is not pinned "
                          f"(spec.workloads.cpuRounding is keep): it runs in the shared pool"))
            return old, value, GUARANTEED
        if mode == "error":
            notes.append((ERROR, c.path + _LIMIT,
                          f"container {c.name!r} is pinned but asks for {old} CPUs; the "
                          f"static CPU Manager pins only whole CPUs: set a whole number "
                          f"(spec.workloads.cpuRounding is error); {another()}"))
            return None
        n = ceil_div(value, NANO) if mode == "up" else max(1, value // NANO)
        notes.append((WARNING, c.path + _LIMIT,
                      f"container {c.name!r}: cpu {old} rounded {mode} to {n}: the static "
                      f"CPU Manager gives exclusive CPUs only to whole-number requests"))
    else:
        n = kubelet_cpus(value)
    n = _smt(c, n, ctx, "the CPUs of a pinned container", notes, pinned=True)
    if _beyond_pool(c, n, ctx, "would need {n} exclusive CPUs", notes, pinned=True):
        return None
    if c.role != "app" and largest_app is not None and n > largest_app:
        notes.append((WARNING, c.path + _LIMIT,
                      f"init container {c.name!r}: cpu {n} lowered to {largest_app}, the "
                      f"largest app container: a pinned init container never needs more"))
        n = largest_app
    why = (f"annotation {CPUS_ANNOTATION}: \"{ctx.cpus}\" sets the pinned CPUs of this "
           f"workload; " if override else "whole CPUs for exclusive pinning; ")
    return (*whole_cpus(n), why + GUARANTEED)


@functools.lru_cache(maxsize=1024)
def whole_cpus(n: int) -> tuple[str, int]:
    """(canonical text, nanocores (int)) of `n` whole CPUs: ("4", 4 * NANO). Cached: the
    containers of a render ask for a few counts."""
    return quantity.format_cpu(n * NANO), n * NANO


def cpu_target(c: ContainerView, pinned: bool, ctx, largest_app: int | None, notes: list,
               plain=None):
    """The cpu value to write, as (text, nanocores (int), reason), or None after an error
    note. `largest_app`: the largest whole app container so far (caps a pinned init
    container), None for an app container."""
    req, lim, ok = read_pair(c, "cpu", "cpu", notes, plain)
    if not ok:
        return None
    found = _requested(c, pinned, ctx, req, lim, notes)
    if found is None:
        return None
    value, override = found
    if pinned:
        return _pinned_target(c, value, override, ctx, largest_app, notes)
    if kubelet_cpus(value):
        if c.role == "init":
            new = ctx.cfg.workloads.initContainerCpu
            return new.text, new.nanos, (
                "an init container that asks for whole CPUs takes exclusive CPUs and can "
                "fail admission (kubernetes/kubernetes#112228); it runs in the shared pool "
                "with spec.workloads.initContainerCpu instead — list it in "
                "spec.workloads.pinnedContainers to pin it")
        n = _smt(c, kubelet_cpus(value), ctx, "a container that asks for whole CPUs (it is "
                                     "pinned by the kubelet)", notes)
        if _beyond_pool(c, n, ctx, "asks for {n} whole CPUs", notes):
            return None
        return (*whole_cpus(n), GUARANTEED)
    return quantity.format_cpu(value), value, GUARANTEED


def cap_init(c: ContainerView, value: int, largest: int, ctx, notes: list):
    """A shared-pool regular init container never asks for more CPU than the largest app
    container: the pod's CPU request is the larger of its init containers and its app
    containers, so more would only reserve CPU the app never gets. Returns the target
    (text, nanocores, reason) to write instead, or None to keep it. `value`, `largest`:
    nanocores (int)."""
    if value <= largest:
        return None
    old = quantity.format_cpu(value)
    if not kubelet_cpus(largest):
        new = largest
    else:
        ic = ctx.cfg.workloads.initContainerCpu.nanos
        if ic >= largest:
            notes.append((WARNING, c.path + _LIMIT,
                          f"init container {c.name!r}: cpu {old} is more than the largest app "
                          f"container ({quantity.format_cpu(largest)}): it raises the pod's "
                          f"CPU request for nothing, and a whole number would pin it; set a "
                          f"fractional value below {quantity.format_cpu(largest)} (or lower "
                          f"spec.workloads.initContainerCpu)"))
            return None
        new = ic
    text = quantity.format_cpu(new)
    notes.append((WARNING, c.path + _LIMIT,
                  f"init container {c.name!r}: cpu {old} lowered to {text}: a regular init "
                  f"container never gets more CPU than the largest app container "
                  f"({quantity.format_cpu(largest)}); more only raises the pod's CPU request, "
                  f"and a whole number would pin it (kubernetes/kubernetes#112228)"))
    return text, new, (f"a regular init container never gets more CPU than the largest app "
                       f"container; {GUARANTEED}")


def resource_order(pod: PodView) -> list[ContainerView]:
    """The containers in the order the cpu decisions are made: app containers first (their
    sizes cap the init containers), then init containers and sidecars."""
    return [c for c in pod.containers if c.role == "app"] + \
           [c for c in pod.containers if c.role != "app"]


def plan_cpus(pod: PodView, ctx) -> dict:
    """{container path: CpuPlan} for every container of `pod`, in resource_order."""
    explicit = ctx.explicit | frozenset(ctx.cfg.workloads.pinnedContainers)
    largest_app: int | None = None
    largest_any: int | None = None
    plans: dict = {}
    for c in resource_order(pod):
        pinned = c.name in ctx.pinned and (c.role == "app" or c.name in explicit)
        shape = shape_note(c)
        if shape is not None:
            plans[c.path] = CpuPlan((shape,), None, pinned, shaped=False)
            continue
        notes: list = []
        target = cpu_target(c, pinned, ctx, largest_app if c.role != "app" else None, notes,
                            pod.edits.plain)
        if target is not None:
            value = target[1]
            if c.role == "app":
                largest_any = value if largest_any is None else max(largest_any, value)
                if kubelet_cpus(value):
                    largest_app = max(largest_app or 0, kubelet_cpus(value))
            elif c.role == "init" and not pinned and largest_any is not None:
                target = cap_init(c, value, largest_any, ctx, notes) or target
        plans[c.path] = CpuPlan(tuple(notes), target, pinned)
    return plans


# -- thread counts --------------------------------------------------------------------------


def _limit(c: ContainerView, plan: CpuPlan | None) -> int | None:
    """The cpu limit (nanocores, int) the container has after the resources rule: the
    planned target, else the limit as written (None when absent or not a quantity)."""
    if plan is not None and plan.target is not None:
        return plan.target[1]
    try:
        return quantity.parse_cpu(c.get(*_LIMIT)).nanos
    except quantity.QuantityError:
        return None


def count_for(c: ContainerView, limit: int | None, cfg, pinned: bool,
              workers: Workers | None, per_core: tuple | None = None,
              keep: tuple | None = None) -> Count | None:
    """The Count of a container whose cpu limit is `limit` (nanocores, int), or None when it
    gets no thread env: no positive limit, or a fractional one on a container krm-fn does not
    pin (a pinned one kept fractional gets the value rounded down, at least 1: a
    resourceFieldRef would round up). `per_core`: (threads per core, why) when the count
    is one thread per physical core (floor, at least 1); `workers` then divide it
    (threads.engines on). `keep`: (cores, why) the engine keeps for its own other
    processes (Engine.reserve); the larger of it and threads.reservedCpus is taken off."""
    if limit is None or limit <= 0:
        return None
    whole = kubelet_cpus(limit) > 0
    if whole:
        cpus = kubelet_cpus(limit)
    elif pinned:
        cpus = max(1, limit // NANO)
    else:
        return None
    threads = cfg.workloads.threads
    kept = threads.reservedCpus
    why = (f"the {cpus} pinned CPUs" if whole else
           "its fractional CPU rounded down, at least 1")
    if keep is not None and keep[0] > kept:
        kept = keep[0]
        why += f" minus {kept} kept by {keep[1]}"
    elif kept:
        why += f" minus {kept} reserved"
    base = max(1, cpus - kept)
    base_why = why
    count = base
    if per_core is not None and per_core[0] > 1:
        count = max(1, base // per_core[0])
        why += (f" as {count} physical core{'s' if count != 1 else ''} ({per_core[0]} threads "
                f"per core), since {per_core[1]}")
    if workers is not None and workers.count > 1:
        count = max(1, count // workers.count)
        why += f", divided by {workers.count} worker processes ({workers.what})"
    return Count(cpus, base, count, whole, workers, why, base_why,
                 per_core is not None and per_core[0] > 1, kept)


def engine_keep(c: ContainerView, engines: tuple, workers: Workers | None) -> tuple | None:
    """(cores, why) the first of `engines` with a `reserve` keeps for its own other
    processes when it runs `workers` processes (1 when None), else None."""
    for e in engines:
        if e.reserve is not None:
            found = e.reserve(c, workers.count if workers is not None else 1)
            if found is not None:
                return found
    return None


def per_core(engines: tuple, ctx) -> tuple | None:
    """(threads per core, why) when the container's threads go one per physical core:
    threads.perCore physical, or engine-default and a recognised engine does so by itself
    (Engine.per_core); None for one per logical CPU, or without SMT."""
    tpc = ctx.pool.threads_per_core if ctx.pool is not None else 1
    mode = ctx.cfg.workloads.threads.perCore
    if tpc <= 1 or mode == "logical":
        return None
    if mode == "physical":
        return tpc, "spec.workloads.threads.perCore is physical"
    for e in engines:
        if e.per_core == "physical":
            return tpc, f"{e.name} runs one thread per physical core by itself"
    return None


def compute(pod: PodView, ctx) -> dict:
    """{container path: ContainerFacts} for every container of `pod` (a PodView, after the
    merged containers were added) under `ctx` (a RuleContext). Pure: no results, no
    writes; the cpu plan's notes are reported by the resources rule."""
    plans = plan_cpus(pod, ctx)
    cfg = ctx.cfg
    on = cfg.workloads.threads.engines
    out: dict = {}
    ictx = getattr(ctx, "ictx", None)
    cms = getattr(ictx, "configmaps", None)
    for c in pod.containers:
        if cms and c.data.get("envFrom"):        # what envFrom gives (cmdline.env_from)
            c.memo["configmaps"] = (cms, pod.ref.namespace)
        plan = plans.get(c.path)
        limit = _limit(c, plan)
        pinned = c.name in ctx.pinned and c.role == "app"
        count = count_for(c, limit, cfg, pinned, None)
        found: tuple = ()
        unread = None
        if count is not None and on:
            found = tuple(serving.detect(c))
            workers, unread = serving.workers_read(c, found)
            cores = per_core(found, ctx)
            keep = engine_keep(c, found, workers)
            if workers is not None or cores is not None or keep is not None:
                count = count_for(c, limit, cfg, pinned, workers, cores, keep)
        elif count is not None and cfg.workloads.threads.perCore == "physical":
            count = count_for(c, limit, cfg, pinned, None, per_core((), ctx))
        out[c.path] = ContainerFacts(plan, limit, count, tuple(found), unread)
    return out
