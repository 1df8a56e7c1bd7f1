"""Workload rules, one module each, applied in order to every PodView.

Each rule module declares `ID` (what `krm-fn explain rule ID` and the results name it by),
`OPTIONS` (the function-config field paths it reads; their defaults live in the config
definition) and `apply(pod: PodView, ctx: RuleContext) -> None`, writing through `pod.set`
and reporting through `pod.warn` / `pod.error`; its docstring is its user documentation.
`RULES` lists them in the order they run: resources -> KubeRay num-cpus -> sidecar-injector
annotations -> platform containers -> pod-level resources (which count what the injectors
add) -> threads -> serving
engines -> cgroup v2 -> OpenShift RuntimeClass and CRI-O annotations -> node placement ->
canonical quantities in every changed container.
`merged` (containers a controller merges in by name) runs before them all, from the
pipeline, since it changes which containers the pod has.

No rule imports another: what several rules need of a container (its cpu decision, thread
count, worker count, serving engines) is computed once by `facts.compute` before the rules
run and handed over as `ctx.facts`. Shared helpers that are not rules: facts.py,
cmdline.py, envvars.py, and the serving-engine registry engines/.
"""
from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace

from krm_fn.quantity import kubelet_cpus
from krm_fn.rules import (canonical, cgroup, facts, injector_annotations, merged, openshift,
                          placement, platform_containers, podlevel, ray, resources,
                          serving_engines, threads)


class PoolInfo(namedtuple("PoolInfo", "name node_selector threads_per_core full_pcpus_only "
                          "exclusive_cpus single_process_oom_kill pins_pod_level "
                          "skips_pod_level pod_level_gate",
                          defaults=(False, False, True, True))):
    """What the rules need to know of the node pool a workload is placed in.

    `threads_per_core`: SMT siblings per core; `full_pcpus_only`: the static policy option
    `full-pcpus-only` is "true" (exclusive CPU counts must be multiples of threads_per_core,
    else the kubelet fails the pod with SMTAlignmentError: pkg/kubelet/cm/cpumanager/
    policy_static.go, https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/);
    `exclusive_cpus`: logical CPUs a pod can get exclusively (capacity minus
    reservedSystemCPUs); `single_process_oom_kill`: the kubelet runs with
    `singleProcessOOMKill: true` (an OOM kills one process, not the container's whole
    cgroup); `pins_pod_level`: the kubelet pins pods with pod-level resources
    (admission.podscope.pins_pod_level: PodLevelResourceManagers on, pod scope);
    `skips_pod_level`: its static CPU Manager gives such pods no exclusive CPUs at all
    (admission.cpumanager.skips_pod_level_resources, per release); `pod_level_gate`: its
    PodLevelResources feature gate is on.
    """

    __slots__ = ()

    @classmethod
    def from_plan(cls, pool: SimpleNamespace, plan) -> "PoolInfo":
        """From a config node pool (its name and nodeSelector) and its NodePlan: the
        topology's threads per core (from an lscpu paste when given), `exclusive_cpus`
        (logical CPUs outside reservedSystemCPUs) and `full-pcpus-only` as the kubelet
        will run it (`plan.merged`: the emitted settings on top of `spec.output.baseline`,
        so a baseline that sets the option counts too); singleProcessOOMKill the same way."""
        opts = plan.merged.get("cpuManagerPolicyOptions")
        full = isinstance(opts, dict) and str(opts.get("full-pcpus-only")).lower() == "true"
        oom = str(plan.merged.get("singleProcessOOMKill")).lower() == "true"
        return cls(pool.name, dict(pool.nodeSelector), plan.topology.threads_per_core,
                   full, plan.exclusive_cpus, oom)


class RuleContext(namedtuple("RuleContext", "cfg pool pinned cpus explicit chosen_by cluster "
                             "facts namespaces knative_features ictx bounds")):
    """Config and placement for one pod: `cfg` is the loaded config (config.load),
    `pool` the PoolInfo or None when no node pool is configured, `pinned` the names of the
    containers to pin in this pod. `facts`: {container path: facts.ContainerFacts},
    filled by `run` before the rules (empty until then). `knative_features`: Knative's
    feature flags for this input when the pod is a Knative revision's
    (admission.knative.Features; None: the defaults, or not a Knative pod).
    `ictx`: the input objects the admission-time injectors read (Namespaces, cluster
    ConfigMaps, custom resources), so a rule can size what they add. `bounds`: the cpu and
    memory bounds the LimitRanges of the pod's namespace set on each container
    (admission.limitrange.container_bounds; empty when none), so a size krm-fn chooses
    itself stays within them."""

    __slots__ = ()

    # `cpus`, `explicit`: per-workload annotations (engine._overrides): krm-fn.dev/cpus, and
    # the containers named by krm-fn.dev/pinned-containers or pinnedContainers (init
    # containers among them may be pinned); `chosen_by`: how `pinned` was chosen
    # (rules/choice.py: LISTED, CONFIG, ENGINE, DEFAULT, MODEL, FIRST; "" when nothing
    # was); `cluster`: KServe cluster objects fixed in this render (objects.cluster_tag);
    # `namespaces`: the input's Namespace objects by name (injector triggers on Namespace
    # labels and annotations: krm_fn/admission/injectors); `ictx`: what the admission-time
    # injectors read from the input (admission.injectors.InjectionContext; None: only the
    # pod itself is seen)
    def __new__(cls, cfg, pool: PoolInfo | None, pinned: frozenset, cpus: int | None = None,
                explicit: frozenset = frozenset(), chosen_by: str = "",
                cluster: frozenset = frozenset(), facts: dict | None = None,
                namespaces: dict | None = None, knative_features: dict | None = None,
                ictx: object | None = None, bounds: dict | None = None):
        return super().__new__(cls, cfg, pool, pinned, cpus, explicit, chosen_by, cluster,
                               {} if facts is None else facts,
                               {} if namespaces is None else namespaces, knative_features,
                               ictx, {} if bounds is None else bounds)


RULES = (resources, ray, injector_annotations, platform_containers, podlevel, threads,
         serving_engines, cgroup, openshift, placement, canonical)


def rule_id(module) -> str:
    """The ID of a rule module: its `ID` attribute, else the last part of its name."""
    return getattr(module, "ID", module.__name__.rsplit(".", 1)[-1])


# (rule module, its ID) of RULES, in order: `run` names each rule's writes without looking
# its ID up per pod
_RULE_IDS = tuple((rule, rule_id(rule)) for rule in RULES)


def merge(pod, cfg, bounds: dict | None = None) -> None:
    """Add the containers a controller merges in by name (rules/merged.py) to `pod` (a
    PodView); runs before the per-workload annotations are read, since it changes which
    containers the pod has. Writes are attributed to the `merged` rule (`pod.rule`).
    `bounds`: RuleContext.bounds of the pod."""
    pod.rule = rule_id(merged)
    merged.apply(pod, cfg, bounds or {})
    pod.rule = None


def run(pod, ctx: RuleContext) -> RuleContext:
    """Compute the per-container facts of `pod` (a PodView) once, then apply every rule of
    RULES in order with `ctx` carrying them; each write is attributed to the rule that made
    it (`pod.rule` holds the running rule's ID). Returns the context with the facts."""
    ctx = ctx._replace(facts=facts.compute(pod, ctx))
    for rule, rid in _RULE_IDS:
        pod.rule = rid
        rule.apply(pod, ctx)
    pod.rule = None
    return ctx


def pinned_whole(pod, ctx: RuleContext) -> frozenset:
    """Names of the containers of `pod` krm-fn pins with a whole number of CPUs (after
    `run`: the containers the verdict expects exclusive CPUs for; a container kept
    fractional by cpuRounding `keep` is not among them)."""
    out = set()
    for c in pod.containers:
        f = ctx.facts.get(c.path)
        if f is not None and f.cpu is not None and f.cpu.pinned and f.limit \
                and kubelet_cpus(f.limit):
            out.add(c.name)
    return frozenset(out)
