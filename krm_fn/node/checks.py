"""Admission checks: would the kubelet of a node pool admit and pin a rewritten pod?

Pure functions over a NodePlan and the exclusive-CPU needs of a pod (no YAML). Sources:
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/
(SMTAlignmentError: `full-pcpus-only` needs a multiple of the threads per core and enough
free whole cores), https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/
(TopologyAffinityError: `restricted` and `single-numa-node` reject what one NUMA node cannot
hold), kubelet pkg/kubelet/cm/cpumanager/policy_static.go podGuaranteedCPUs (pod requirement
with init containers and native sidecars),
https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ (allocatable =
capacity - reservedSystemCPUs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from krm_fn.node.plan import NodePlan
from krm_fn.results import ERROR, INFO, Ref, Result


@dataclass(frozen=True)
class PodCpus:
    """Exclusive CPUs one pod asks for: whole-CPU containers of a Guaranteed pod, by role.

    `app`: (name, cpus) of regular containers; `init`: (name, cpus, restartable) of init
    containers in order, restartable = native sidecar (restartPolicy Always); `ref`, `path`:
    the workload and pod spec path for results.
    """

    ref: Ref
    path: str
    app: tuple = ()
    init: tuple = ()

    @property
    def requirement(self) -> int:
        """Exclusive CPUs the pod holds at its peak (kubelet
        pkg/kubelet/cm/cpumanager/policy_static.go, podGuaranteedCPUs):
        max(max_i(sidecars started before init i + init i), sum(app) + sum(sidecars))."""
        sidecars = 0
        peak_init = 0
        for _, cpus, restartable in self.init:
            if restartable:
                sidecars += cpus
            else:
                peak_init = max(peak_init, sidecars + cpus)
        return max(peak_init, sum(c for _, c in self.app) + sidecars)

    @property
    def containers(self) -> list[tuple[str, int]]:
        """(name, cpus) of every container that gets exclusive CPUs."""
        return [(n, c) for n, c in self.app] + [(n, c) for n, c, _ in self.init]


@dataclass
class PoolFit:
    """Per-pool capacity: exclusive CPUs per node and per NUMA node, after the reserved
    CPUs (with full-pcpus-only, a reserved CPU makes its whole core unavailable)."""

    total: int
    per_numa: dict = field(default_factory=dict)


_FITS: dict = {}


def pool_fit(plan: NodePlan) -> PoolFit:
    """Free CPUs of one node of the pool, overall and per NUMA node (memoised per plan)."""
    key = (id(plan), plan.pool, tuple(plan.reserved_cpus))
    hit = _FITS.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    fit = _pool_fit(plan)
    if len(_FITS) > 16:
        _FITS.clear()
    _FITS[key] = (plan, fit)
    return fit


def _pool_fit(plan: NodePlan) -> PoolFit:
    reserved = set(plan.reserved_cpus)
    whole = (plan.kubelet.get("cpuManagerPolicyOptions") or {}).get("full-pcpus-only") == "true"
    cpus = plan.topology.cpus()
    if whole:
        touched = {c.core for c in cpus if c.cpu in reserved}
        used = {c.cpu for c in cpus if c.core in touched}
    else:
        used = reserved
    per_numa: dict[int, int] = {}
    for c in cpus:
        if c.cpu not in used:
            per_numa[c.numa] = per_numa.get(c.numa, 0) + 1
    return PoolFit(sum(per_numa.values()), per_numa)


def check_pod(plan: NodePlan, pod: PodCpus) -> list[Result]:
    """Errors for what the pool's kubelet would reject for `pod`; [] when it fits."""
    out: list[Result] = []
    if pod.requirement == 0:
        return out
    fit = pool_fit(plan)
    k = plan.kubelet
    if pod.requirement > fit.total:
        out.append(Result(
            f"pod needs {pod.requirement} exclusive CPUs but a node of pool {plan.pool!r} has "
            f"{fit.total} outside reservedSystemCPUs: the kubelet would reject it",
            ERROR, pod.ref, pod.path))
        return out
    policy = k.get("topologyManagerPolicy", "none")
    if policy in ("restricted", "single-numa-node") and fit.per_numa:
        largest = max(fit.per_numa.values())
        scope = k.get("topologyManagerScope", "container")
        needs = ([("pod", pod.requirement)] if scope == "pod" else
                 [(f"container {n!r}", c) for n, c in pod.containers])
        for what, cpus in needs:
            if cpus > largest:
                out.append(Result(
                    f"{what} needs {cpus} exclusive CPUs but the largest NUMA node of pool "
                    f"{plan.pool!r} has {largest} free: topologyManagerPolicy {policy} with "
                    f"scope {scope} would fail the pod with TopologyAffinityError; lower the "
                    f"CPUs, use scope container, or best-effort", ERROR, pod.ref, pod.path))
    return out


def summary(plan: NodePlan, pods: list[PodCpus], ref: Ref | None) -> Result:
    """One info result per pool: exclusive CPUs per node and per NUMA node, each pod's
    need and how many such pods fit on one node (by CPU only)."""
    fit = pool_fit(plan)
    numa = ", ".join(f"NUMA {n}: {c}" for n, c in sorted(fit.per_numa.items()))
    parts = []
    for p in pods:
        need = p.requirement
        fits = fit.total // need if need else 0
        parts.append(f"{p.ref.kind} {p.ref.name} needs {need} ({fits} per node)" if need
                     else f"{p.ref.kind} {p.ref.name} needs none")
    return Result(f"node pool {plan.pool!r}: {fit.total} exclusive CPUs per node ({numa}); "
                  + ("; ".join(parts) if parts else "no pinned pod"), INFO, ref)
