"""What the format modules share: the label/annotation names, object metadata, the ConfigMap
that carries a platform's file, and the results a format returns.

Every format module has `render(plan, ctx) -> Rendered`: the emitted objects (plain dicts,
plain str values, insertion-ordered) and the results (krm_fn.results.Result) that say what
the platform cannot take. A field the platform cannot take is a warning naming the field and
the platform, never dropped silently; a policy equal to the kubelet's own default
(krm_fn.node.fields OMIT_AT_DEFAULT) is left out without a result, since the node runs it
anyway. Platform names, refusals and consequences come from krm_fn.node.fields.
"""
from __future__ import annotations

from krm_fn.node import fields, upstream
from krm_fn.results import ERROR, WARNING, Result, value_text

PATH_ANNOTATION = "internal.config.kubernetes.io/path"
LOCAL_CONFIG_ANNOTATION = "config.kubernetes.io/local-config"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
POOL_LABEL = "krm-fn.dev/node-pool"
# On emitted objects whose plan needs the node's CPU/Memory Manager state reset
# (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/).
ROLLOUT_NOTE = "krm-fn.dev/rollout-note"

HEADER = fields.HEADER


class Rendered:
    """What a format returns: `objects` to emit and `results` about them."""

    __slots__ = ("objects", "results")

    def __init__(self, objects: list | None = None, results: list | None = None) -> None:
        self.objects = [] if objects is None else objects
        self.results = [] if results is None else results


def labels(plan) -> dict:
    """Labels of every emitted object of node plan `plan` (pool_labels of its pool)."""
    return pool_labels(plan.pool)


def pool_labels(pool) -> dict:
    """Labels of every object emitted for node pool `pool` (its name): krm-fn manages it,
    and the pool it was emitted for (what a later render's stale-output check reads)."""
    return {MANAGED_BY_LABEL: "krm-fn", POOL_LABEL: str(pool)}


def name_of(plan, fmt: str) -> str:
    """metadata.name of a platform format's ConfigMap: `kubelet-config-<pool>-<format>`."""
    return f"kubelet-config-{plan.pool}-{fmt}"


def path_of(plan, fmt: str) -> str:
    """File a platform format's object goes to under kpt: `node/kubelet-<pool>-<format>.yaml`."""
    return f"node/kubelet-{plan.pool}-{fmt}.yaml"


def metadata(plan, ctx, name: str, path: str, namespaced: bool = True) -> dict:
    """metadata {name, namespace (when namespaced), labels, annotations}: ROLLOUT_NOTE when
    the plan changes settings the node's resource-manager checkpoint depends on
    (krm_fn.node.fields STATE_FIELDS), PATH_ANNOTATION under kpt."""
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
    below the top level allowed): the typed pool field (krm_fn.node.fields.result_field),
    `kubelet.extra.<name>` for any other field, the pool's kubelet for derived fields."""
    base = f"spec.nodePools[{index}].kubelet"
    top, _, rest = name.partition(".")
    if top not in fields.MANAGED:
        return f"{base}.extra.{name}"
    typed = fields.result_field(top)
    if typed is None:
        return base
    return f"{base}.{typed}" + (f".{rest}" if rest and typed == top else "")


class Report:
    """Collects a format's results; `ctx.ref` is their resourceRef (the function config),
    `ctx.index` the pool's index in spec.nodePools."""

    def __init__(self, ctx):
        self.ref = getattr(ctx, "ref", None)
        self.index = getattr(ctx, "index", 0)
        self.results: list[Result] = []

    def add(self, severity: str, name: str | None, message: str, current: object = None,
            proposed: object = None, path: str | None = None) -> None:
        """One result about KubeletConfiguration field `name` (None: the whole pool)."""
        if path is None:
            path = (config_path(name, self.index) if name
                    else f"spec.nodePools[{self.index}].kubelet")
        self.results.append(Result(message, severity, self.ref, path,
                                   None if current is None else text(current),
                                   None if proposed is None else text(proposed)))

    def unsupported(self, platform: str, name: str, value: object, detail: str = "",
                    version=None) -> None:
        """Warning: `name` is left out because `platform` cannot take it; an error for a
        field the verdict reads (fields.Field.judged): the platform's kubelet runs the
        kubelet's default instead, and the pods were judged with `value`. Nothing when
        `value` is the kubelet's own default (on `version`): the node runs it anyway."""
        f = fields.get(name)
        if f is not None and "." not in name and value is not None and \
                value == f.default_for(version or upstream.FIRST):
            return
        why = f.consequence if f else ""
        if f is not None and f.judged and "." not in name:
            default = f.default if f.default is not None else {}
            self.add(ERROR, name, f"{name} {text(value)} cannot be set on {platform}: its "
                     f"kubelet runs {name} {text(default)}{detail}"
                     + (f" ({why})" if why else "") + f", and krm-fn judged the pods with "
                     f"{text(value)}; set kubelet.{f.typed or name}: {text(default)} so "
                     f"krm-fn judges what {platform} runs", current=value, proposed=default)
            return
        self.add(WARNING, name, f"{name} {text(value)} is left out of the {platform} output: "
                 f"{platform} cannot set it{detail}" + (f"; {why}" if why else ""),
                 current=value)


# OpenShift's cluster-wide feature gates (config.openshift.io/v1 FeatureGate `cluster`,
# https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/config_apis/featuregate-config-openshift-io-v1):
# with spec.featureSet CustomNoUpgrade, spec.customNoUpgrade.enabled turns gates on for
# every node's kubelet.
FEATURE_GATE = ("config.openshift.io/v1", "FeatureGate", "cluster")


def cluster_gates(items: list) -> frozenset:
    """The gates an OpenShift FeatureGate `cluster` among `items` (plain dicts) enables:
    spec.customNoUpgrade.enabled less .disabled when spec.featureSet is CustomNoUpgrade;
    empty otherwise (the gates of the named feature sets are OpenShift's own list, which
    krm-fn does not carry)."""
    for obj in items:
        if not isinstance(obj, dict):
            continue
        md = obj.get("metadata")
        if (obj.get("apiVersion"), obj.get("kind"),
                md.get("name") if isinstance(md, dict) else None) != FEATURE_GATE:
            continue
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        custom = spec.get("customNoUpgrade")
        if spec.get("featureSet") != "CustomNoUpgrade" or not isinstance(custom, dict):
            return frozenset()
        names = lambda key: {str(g) for g in custom.get(key) or [] if isinstance(g, str)} \
            if isinstance(custom.get(key), list) else set()  # noqa: E731
        return frozenset(names("enabled") - names("disabled"))
    return frozenset()


def refused_gates(rep: "Report", key: str, value: object, where: str, ctx) -> bool:
    """For a feature-gate map `key` the Machine Config Operator refuses, removed from
    `where` (e.g. "OpenShift KubeletConfig krm-fn-inference"): an error, and True, when it
    turns on gates that are off by default in the nodes' version (ctx.version) and that the
    cluster does not enable (ctx.cluster_gates): without them the kubelet refuses the
    options that need them and does not start (the option gates,
    https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#cpu-policy-static--options).
    False (nothing added) otherwise: the caller warns as for any refused field."""
    f = fields.get(key)
    if f is None or f.shape != "bool-map" or not isinstance(value, dict):
        return False
    data = upstream.load(getattr(ctx, "version", None) or upstream.FIRST)
    on = getattr(ctx, "cluster_gates", frozenset())
    needed = [str(g) for g, v in value.items()
              if v is True and data.gate_default(str(g)) is not True and g not in on]
    if not needed:
        return False
    gates, them = ", ".join(needed), "it" if len(needed) == 1 else "them"
    rep.add(ERROR, key, f"{key} {text(value)} cannot be carried by {where}: the Machine Config "
            f"Operator refuses a KubeletConfig that sets {key}, and "
            f"{'; '.join(f'{g} is {data.gate_text(g)}' for g in needed)}: the kubelet would "
            f"run without {them}, refuse the CPU or Topology Manager options that need {them} "
            f"and not start. Enable {gates} for the whole cluster in the FeatureGate `cluster` "
            f"(config.openshift.io/v1: spec.featureSet: CustomNoUpgrade, "
            f"spec.customNoUpgrade.enabled: [{gates}]; CustomNoUpgrade cannot be undone and "
            f"blocks minor upgrades) and put that FeatureGate in the input so krm-fn sees it, "
            f"or leave out the options that need {them}", current=value)
    return True
