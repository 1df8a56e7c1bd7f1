"""Workload rules, one module each, applied in order to every PodView.

Each module's docstring is its user documentation; each exposes
`apply(pod: PodView, ctx: RuleContext) -> None`, writing through `pod.set` and reporting
through `pod.warn` / `pod.error`. Order (DESIGN.md): resources -> pod-level resources ->
KubeRay num-cpus -> sidecar-injector annotations -> injected containers -> threads ->
engines -> cgroup v2 -> node placement. `merged` (containers a controller merges in by
name) runs before them all, from the engine, since it changes which containers the pod has.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from krm_fn.rules import (cgroup, engines, injected, merged, placement, podlevel, ray,
                          resources, sidecars, threads)


@dataclass(frozen=True)
class PoolInfo:
    """What the rules need to know of the node pool a workload is placed in.

    `threads_per_core`: SMT siblings per core; `full_pcpus_only`: the static policy option
    `full-pcpus-only` is "true" (exclusive CPU counts must be multiples of threads_per_core,
    else the kubelet fails the pod with SMTAlignmentError, kubelet.md §10.3);
    `exclusive_cpus`: logical CPUs a pod can get exclusively (capacity minus
    reservedSystemCPUs).
    """

    name: str
    node_selector: dict
    threads_per_core: int
    full_pcpus_only: bool
    exclusive_cpus: int

    @classmethod
    def from_config(cls, pool: SimpleNamespace, exclusive_cpus: int,
                    threads_per_core: int | None = None) -> "PoolInfo":
        """From a config node pool and its NodePlan's `exclusive_cpus` (logical CPUs
        outside reservedSystemCPUs) and topology's threads per core (from an lscpu paste
        when given; else the pool's threadsPerCore)."""
        opts = pool.kubelet.cpuManagerPolicyOptions
        return cls(pool.name, dict(pool.nodeSelector),
                   threads_per_core or pool.topology.threadsPerCore,
                   opts.get("full-pcpus-only") == "true", exclusive_cpus)


@dataclass(frozen=True)
class RuleContext:
    """Config and placement for one pod: `cfg` is the loaded config (config.load),
    `pool` the PoolInfo or None when no node pool is configured, `pinned` the names of the
    containers to pin in this pod."""

    cfg: SimpleNamespace
    pool: PoolInfo | None
    pinned: frozenset
    # per-workload annotations (engine._overrides): krm-fn.dev/cpus, and the containers
    # named by krm-fn.dev/pinned-containers or pinnedContainers (init containers among them
    # may be pinned); KServe cluster objects fixed in this render (objects.cluster_tag)
    cpus: int | None = None
    explicit: frozenset = frozenset()
    cluster: frozenset = frozenset()


RULES = (resources, podlevel, ray, sidecars, injected, threads, engines, cgroup, placement)


def rule_id(module) -> str:
    """The ID of a rule module: its `ID` attribute, else the last part of its name."""
    return getattr(module, "ID", module.__name__.rsplit(".", 1)[-1])


def merge(pod, cfg) -> None:
    """Add the containers a controller merges in by name (rules/merged.py) to `pod` (a
    PodView); runs before the per-workload annotations are read, since it changes which
    containers the pod has. Writes are attributed to the `merged` rule (`pod.rule`)."""
    pod.rule = rule_id(merged)
    merged.apply(pod, cfg)
    pod.rule = None


def run(pod, ctx: RuleContext) -> None:
    """Apply every rule of RULES in order to `pod` (a PodView) with `ctx`; each write is
    attributed to the rule that made it (`pod.rule` holds the running rule's ID)."""
    for rule in RULES:
        pod.rule = rule_id(rule)
        rule.apply(pod, ctx)
    pod.rule = None
