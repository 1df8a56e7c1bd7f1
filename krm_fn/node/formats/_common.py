"""What the format modules share: the label/annotation names, object metadata, the ConfigMap
that carries a platform's file, and the results a format returns.

Every format module has `render(plan, ctx) -> Rendered`: the emitted objects (plain dicts,
plain str values, insertion-ordered) and the results (krm_fn.results.Result) that say what
the platform cannot take. A field the platform cannot take is a warning naming the field and
the platform, never dropped silently; a value equal to the kubelet's own default
(KUBELET_DEFAULTS) is left out without a result, since the node runs it anyway.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from krm_fn.results import WARNING, Result, value_text

PATH_ANNOTATION = "internal.config.kubernetes.io/path"
LOCAL_CONFIG_ANNOTATION = "config.kubernetes.io/local-config"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
POOL_LABEL = "krm-fn.dev/node-pool"
# On emitted objects whose plan needs the node's CPU/Memory Manager state reset (C05).
ROLLOUT_NOTE = "krm-fn.dev/rollout-note"

# The KubeletConfiguration document header: not a setting, never warned about.
HEADER = ("apiVersion", "kind")

# Values that equal the kubelet's default (kubelet.md §1): leaving them out changes nothing.
KUBELET_DEFAULTS: dict[str, Any] = {
    "memoryManagerPolicy": "None",
    "topologyManagerPolicy": "none",
    "topologyManagerScope": "container",
}

# Why a field that a platform cannot take matters (appended to the warning).
CONSEQUENCES: dict[str, str] = {
    "cpuManagerPolicyOptions": "the static CPU Manager runs without these options (without "
                               "full-pcpus-only a pinned container can get half a physical "
                               "core and share its L1/L2 with another pod)",
    "cpuManagerReconcilePeriod": "the kubelet default (10s) applies",
    "topologyManagerScope": "the kubelet default scope `container` applies: the containers "
                            "of a pod can be aligned to different NUMA nodes",
    "topologyManagerPolicy": "the kubelet default `none` applies: no NUMA alignment",
    "topologyManagerPolicyOptions": "the Topology Manager runs without these options (on "
                                    "nodes with more than 8 NUMA nodes a policy other than "
                                    "none then stops the kubelet)",
    "memoryManagerPolicy": "the kubelet default `None` applies: memory is not NUMA-aligned",
    "reservedMemory": "the platform must size the Memory Manager's reservation itself",
    "reservedSystemCPUs": "the static policy then reserves ceil(kubeReserved.cpu + "
                          "systemReserved.cpu) CPUs of the platform's own reservation, chosen "
                          "by the kubelet, and system daemons are not kept off the pinned "
                          "cores",
    "kubeReserved": "the platform's own kubeReserved applies",
    "systemReserved": "the platform's own systemReserved applies",
    "evictionHard": "the platform's own hard eviction thresholds apply",
    "podPidsLimit": "pods get the platform's default pids limit",
    "failCgroupV1": "the kubelet does not refuse cgroup v1: make sure the nodes run cgroup v2",
    "featureGates": "the gates keep their defaults (the kubelet refuses alpha CPU Manager "
                    "options without CPUManagerPolicyAlphaOptions)",
}


@dataclass
class Rendered:
    """What a format returns: `objects` to emit and `results` about them."""

    objects: list = field(default_factory=list)
    results: list = field(default_factory=list)


def labels(plan) -> dict:
    """Labels of every emitted object."""
    return {MANAGED_BY_LABEL: "krm-fn", POOL_LABEL: str(plan.pool)}


def name_of(plan, fmt: str) -> str:
    """metadata.name of a platform format's ConfigMap: `kubelet-config-<pool>-<format>`."""
    return f"kubelet-config-{plan.pool}-{fmt}"


def path_of(plan, fmt: str) -> str:
    """File a platform format's object goes to under kpt: `node/kubelet-<pool>-<format>.yaml`."""
    return f"node/kubelet-{plan.pool}-{fmt}.yaml"


def metadata(plan, ctx, name: str, path: str, namespaced: bool = True) -> dict:
    """metadata {name, namespace (when namespaced), labels, annotations}: ROLLOUT_NOTE when
    the plan changes settings the node's resource-manager checkpoint depends on (cases.md
    C05), PATH_ANNOTATION under kpt."""
    md: dict = {"name": name}
    if namespaced:
        md["namespace"] = str(ctx.namespace)
    md["labels"] = labels(plan)
    annotations = {}
    changes = getattr(plan, "state_changes", None)
    if changes:
        from krm_fn.node.baseline import rollout_note
        annotations[ROLLOUT_NOTE] = rollout_note(changes)
    if ctx.set_path:
        annotations[PATH_ANNOTATION] = path
    if annotations:
        md["annotations"] = annotations
    return md


def carrier(plan, ctx, fmt: str, data: dict) -> dict:
    """The v1 ConfigMap `<namespace>/kubelet-config-<pool>-<format>` holding `data` (file
    name -> text). ConfigMap keys allow only letters, digits, '-', '_' and '.'."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(plan, ctx, name_of(plan, fmt), path_of(plan, fmt)),
        "data": dict(data),
    }


def body(plan) -> dict:
    """The plan's KubeletConfiguration fields without apiVersion/kind (a shallow copy)."""
    return {k: v for k, v in plan.kubelet.items() if k not in HEADER}


text = value_text      # the formats' name for it


def config_path(name: str, index: int) -> str:
    """The function config field that produced KubeletConfiguration field `name` (dotted
    below the top level allowed): the typed pool field, `kubelet.extra.<name>` for any
    other field, the memory policy for reservedMemory."""
    from krm_fn.node.plan import MANAGED

    base = f"spec.nodePools[{index}].kubelet"
    top, _, rest = name.partition(".")
    if top not in MANAGED:
        return f"{base}.extra.{name}"
    if top == "reservedMemory":       # computed from the memory policy (or given with it)
        return f"{base}.memoryManagerPolicy"
    typed = MANAGED[top]
    if typed is None:
        return base
    return f"{base}.{typed}" + (f".{rest}" if rest else "")


class Report:
    """Collects a format's results; `ctx.ref` is their resourceRef (the function config),
    `ctx.index` the pool's index in spec.nodePools."""

    def __init__(self, ctx):
        self.ref = getattr(ctx, "ref", None)
        self.index = getattr(ctx, "index", 0)
        self.results: list[Result] = []

    def add(self, severity: str, name: str | None, message: str, current: Any = None,
            proposed: Any = None, path: str | None = None) -> None:
        """One result about KubeletConfiguration field `name` (None: the whole pool)."""
        if path is None:
            path = (config_path(name, self.index) if name
                    else f"spec.nodePools[{self.index}].kubelet")
        self.results.append(Result(message, severity, self.ref, path,
                                   None if current is None else text(current),
                                   None if proposed is None else text(proposed)))

    def unsupported(self, platform: str, name: str, value: Any, detail: str = "") -> None:
        """Warning: `name` is left out because `platform` cannot take it."""
        why = CONSEQUENCES.get(name.partition(".")[0])
        self.add(WARNING, name, f"{name} {text(value)} is left out of the {platform} output: "
                 f"{platform} cannot set it{detail}" + (f"; {why}" if why else ""),
                 current=value)
