"""Which containers of a pod spec krm-fn pins (a helper of the rules, not a rule).

The order (`choose`), first that names a container of the pod spec:

1. the `krm-fn.dev/pinned-containers` annotation (pod template, else workload), else
   `spec.workloads.pinnedContainers`: the user said so;
2. every app container running a model-serving engine krm-fn recognises (its image,
   command or args, krm_fn/rules/engines/recognition.py: the entries with `serving`; a
   general-purpose runtime, the JVM or a uvicorn-gunicorn image, does not count, since
   exporters and proxies run on it too);
3. the `kubectl.kubernetes.io/default-container` annotation of the pod
   (https://kubernetes.io/docs/reference/labels-annotations-taints/#kubectl-kubernetes-io-default-container);
4. the kind's model container (KServe: `kserve-container`, krm_fn/workloads.py);
5. the first app container; with more than one app container a warning names it and how
   to pin another.

`notes` is what the resources rule reports about the choice: that warning, and a container
running a serving engine left in the shared pool — an error, unless the annotation or
pinnedContainers named the containers to pin without it (then an info).
"""
from __future__ import annotations

from krm_fn.quantity import kubelet_cpus
from krm_fn.results import ERROR, INFO, WARNING
from krm_fn.rules import engines
from krm_fn.workloads import model_names

PINNED_ANNOTATION = "krm-fn.dev/pinned-containers"
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"

# how the pinned containers were chosen (RuleContext.chosen_by), in the order above
LISTED, CONFIG, ENGINE, DEFAULT, MODEL, FIRST = ("annotation", "config", "engine",
                                                 "default-container", "model", "first")
_SOURCE = {LISTED: f"annotation {PINNED_ANNOTATION}", CONFIG: "spec.workloads.pinnedContainers"}


def choose(pod, cfg, listed: list | None = None) -> tuple[frozenset, str]:
    """(names of the containers of `pod` (a PodView) to pin, how they were chosen: one of
    LISTED, CONFIG, ENGINE, DEFAULT, MODEL, FIRST; "" when the pod has no app container
    and nothing names one). `listed`: the names of the krm-fn.dev/pinned-containers
    annotation, None when absent; `cfg`: the loaded config. The order is the module
    docstring's."""
    names = [c.name for c in pod.containers]
    wanted, how = (listed, LISTED) if listed is not None else \
        (cfg.workloads.pinnedContainers, CONFIG)
    chosen = [n for n in wanted if n in names]
    if chosen:
        return frozenset(chosen), how
    apps = [c for c in pod.containers if c.role == "app"]
    serving = [c.name for c in apps if engines.serving_names(c)]
    if serving:
        return frozenset(serving), ENGINE
    default = pod.annotations.get(DEFAULT_CONTAINER)
    if default in [c.name for c in apps]:     # an init container named there is passed over
        return frozenset([default]), DEFAULT
    for model in model_names(pod.at):
        if model in names:
            return frozenset([model]), MODEL
    return (frozenset([apps[0].name]), FIRST) if apps else (frozenset(), "")


def another() -> str:
    """How to pin another container than the one a message is about: the end of each
    message that asks for whole CPUs (or memory) on a pinned container."""
    return (f"or pin another container instead: annotate the workload or its pod template "
            f"with {PINNED_ANNOTATION}: \"NAME\" (or list it in "
            f"spec.workloads.pinnedContainers)")


def _pin_text(names: list) -> str:
    return f"{PINNED_ANNOTATION}: \"{','.join(names)}\""


def notes(pod, ctx) -> list:
    """(severity, field path, message) about the choice of `ctx.pinned` in `pod` (after
    facts.compute: `ctx.facts` holds each container's cpu plan): a warning when the first
    of several app containers was taken for want of anything else; per app container or
    native sidecar running a serving engine that krm-fn does not pin and that keeps a
    fractional cpu (a whole number is pinned by the static CPU Manager anyway), an error,
    or an info when the annotation or pinnedContainers chose (`ctx.chosen_by`)."""
    out = []
    order = [c.name for c in pod.containers]
    apps = [c for c in pod.containers if c.role == "app"]
    if ctx.chosen_by == FIRST and len(apps) > 1:
        first = apps[0]
        default = pod.annotations.get(DEFAULT_CONTAINER)
        other = (f" ({DEFAULT_CONTAINER} names {default!r}, which is no app container)"
                 if default in order else "")
        out.append((WARNING, first.path,
                    f"container {first.name!r} is pinned because it is the first container: "
                    f"no container runs a serving engine krm-fn recognises, and neither "
                    f"{PINNED_ANNOTATION}, spec.workloads.pinnedContainers nor "
                    f"{DEFAULT_CONTAINER} names one{other}; to pin another, annotate the workload "
                    f"or its pod template with {PINNED_ANNOTATION}: \"NAME\" (one or more of "
                    f"{', '.join(c.name for c in apps)}, comma-separated) or list it in "
                    f"spec.workloads.pinnedContainers"))
    for c in pod.containers:
        f = ctx.facts.get(c.path)
        plan = getattr(f, "cpu", None)
        if c.role == "init" or plan is None or not plan.shaped or plan.pinned \
                or (f.limit is not None and kubelet_cpus(f.limit)):
            continue            # pinned by krm-fn, or by the kubelet (a whole number)
        found = engines.serving_names(c)
        if not found:
            continue
        pinned = [n for n in order if n in ctx.pinned]
        if ctx.chosen_by in _SOURCE:
            out.append((INFO, c.path,
                        f"container {c.name!r} runs {found[0]} and stays in the shared pool: "
                        f"{_SOURCE[ctx.chosen_by]} names {', '.join(pinned)} to pin"))
            continue
        now = (f"krm-fn pins {', '.join(repr(n) for n in pinned)}" if pinned
               else "krm-fn pins no container")
        out.append((ERROR, c.path,
                    f"container {c.name!r} runs {found[0]} but would stay in the shared pool "
                    f"({now}): its threads would share CPUs with every other pod's; to pin "
                    f"it, annotate the workload or its pod template with "
                    f"{_pin_text([n for n in order if n in ctx.pinned or n == c.name])}"))
    return out
