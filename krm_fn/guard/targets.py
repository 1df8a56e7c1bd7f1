"""Which pods the admission policy matches, and what it checks of each (pure).

Every tuned pod template with a container pinned to whole CPUs gets the label LABEL, whose
value names that pod template and what is checked of it (`label_value`); the policy's
objectSelector lists the values of the render, so no other pod is matched: neither a pod of
another render's workloads (that render's policy's) nor one of an earlier template whose
checked values were different. The label is a write of the tune step (a Change of rule
RULE), so it is reported, dropped with the item's other changes when the item is left
unchanged, and written once (a second render finds it in place).

A workload, or one of its pod templates, opts out with the annotation OPT_OUT: "skip".

What the policy checks of a labelled pod template (`Target`) is the pod template as the
render leaves it: its pinned containers' cpu, the thread-count variables of those
containers that hold a literal value (the registry's names: the threads rule's and the
serving engines', krm_fn.rules.engines.thread_env_names), its node pool's nodeSelector
and SMT multiple, and what pod-level `spec.resources` added to a pod that the render left
without them would do on the pool's kubelet (`pod_level`). Values as rendered, not only
those written this time: a second render of the same input changes nothing, and emits the
same policy.
"""
from __future__ import annotations

import functools
import hashlib
from collections import namedtuple

from krm_fn.changes import path_str
from krm_fn.results import INFO
from krm_fn.workloads import get_path

LABEL = "krm-fn.dev/guard"
OPT_OUT = "krm-fn.dev/admission-policy"      # value "skip": no label, not checked
RULE = "admission-policy"                    # the rule ID of the label's Change
_LABEL_VALUE = 63                            # a label value's length bound
_HASH = 10                                   # hex digits of the identity hash
# Target.pod_level: what pod-level spec.resources (cpu or memory) on a pod whose template
# the render left without them does on the pool's kubelet (KEP-2837). With the
# PodLevelResources gate on, the pod's QoS class comes from them alone (qos.go
# ComputePodQOS), and without PodLevelResourceManagers the static CPU and Memory Managers
# skip the pod ("pod is using pod-level resources which are not supported by the static
# CPU manager policy", pkg/kubelet/cm/cpumanager/policy_static.go): krm_fn.admission.qos.
POD_LEVEL_UNCHECKED = 0     # the template sets them (the verdict judged it) or gate off
POD_LEVEL_UNPINS = 1        # any pod-level cpu or memory: no exclusive CPUs
POD_LEVEL_QOS = 2           # pod-level cpu and memory requests must equal their limits


class Target(namedtuple("Target", "value workload pool cpus env node_selector smt pod_level "
                         "node_affinity", defaults=(POD_LEVEL_UNCHECKED, None))):
    """One labelled pod template. `value`: its LABEL value; `workload`: how messages name
    it ("Deployment ns/name"); `pool`: its node pool's name; `cpus`: {pinned container
    name: cpu as rendered (str)}; `env`: {pinned container name: {thread variable: value
    (str)}} for the containers that hold one; `node_selector`: the labels of the pool's
    nodeSelector ({label: value}) the rendered pod spec's nodeSelector holds;
    `node_affinity`: those it requires through every term of its required node affinity
    instead (as krm-fn places a Knative pod whose nodeSelector Knative disallows), {} or
    None when none; `smt`: the number the pinned CPUs must be a multiple of (the pool's
    threads per core under full-pcpus-only, else 1); `pod_level`: one of POD_LEVEL_*."""

    __slots__ = ()


def label_value(ref, index: int, target: Target | None = None) -> str:
    """The LABEL value of pod template `index` (0-based, in krm_fn.workloads.locations
    order) of workload `ref` (results.Ref) whose checked data is `target` (`checked`; its
    `value` is ignored): the workload's name (up to 52 characters, those a label value may
    hold) then `-` and 10 hex digits of the SHA-256 of its group, kind, namespace, name,
    `index` and that data. Unique in a render, the same in every render of the same data;
    a render that changes what is checked gives the pods a new value, so the pods of the
    previous template (a ReplicaSet still scaling down) are not judged by data that was not
    theirs. `pod_level` is not hashed: it follows the pool's kubelet gates, not the pod
    template, so a change of it rolls no pod. At most 63 characters, starting and ending
    with a letter or digit
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set)."""
    group = ref.api_version.rpartition("/")[0]
    ident = f"{group}/{ref.kind}/{ref.namespace or ''}/{ref.name}/{index}"
    if target is not None:
        ident += "\n" + repr((sorted(target.cpus.items()),
                              sorted((c, sorted(e.items())) for c, e in target.env.items()),
                              sorted(target.node_selector.items()), target.smt))
        if target.node_affinity:
            ident += repr(sorted(target.node_affinity.items()))
    digest = hashlib.sha256(ident.encode()).hexdigest()[:_HASH]
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "-"
                   for ch in str(ref.name))
    name = name[:_LABEL_VALUE - _HASH - 1].strip("-_.")
    return f"{name}-{digest}" if name else digest


@functools.lru_cache(maxsize=16)
def thread_names(extra: tuple) -> frozenset:
    """The thread-count variables whose literal values are checked: the registry's
    (krm_fn.rules.engines.thread_env_names) and `extra` (the config's threads.env and
    custom)."""
    from krm_fn.rules.engines import thread_env_names
    return frozenset(thread_env_names(extra))


def checked(pod, pinned: frozenset, pool, names: frozenset, node=None) -> Target:
    """What the policy checks of the pod template of `pod` (a PodView, as the rules left
    it) in node pool `pool` (krm_fn.rules.PoolInfo) whose nodes are `node`
    (krm_fn.admission.model.NodeModel, None: pod-level resources unchecked): a Target
    without its `value`. `pinned`: the names of its containers pinned to whole CPUs;
    `names`: thread_names."""
    cpus, env = {}, {}
    for c in pod.containers:
        if c.name not in pinned:
            continue
        cpus[str(c.name)] = str(c.get("resources", "limits", "cpu"))
        found = _thread_env(c.get("env"), names)
        if found:
            env[str(c.name)] = found
    smt = pool.threads_per_core if pool.full_pcpus_only else 1
    selector, affinity = placement(pod.spec, pool.node_selector)
    return Target("", str(pod.ref), str(pool.name), cpus, env, selector, smt,
                  pod_level(pod, node), affinity)


_TERMS = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
          "nodeSelectorTerms")


def requires(term: object, key: str, value: str) -> bool:
    """Whether the node selector term `term` has a matchExpression `key` In values all
    equal to `value` (nodes without that label value never match it)."""
    exprs = term.get("matchExpressions") if isinstance(term, dict) else None
    return isinstance(exprs, list) and any(
        isinstance(m, dict) and m.get("key") == key and m.get("operator") == "In"
        and isinstance(m.get("values"), list) and m["values"]
        and all(v == value for v in m["values"]) for m in exprs)


def placement(spec: dict, selector: dict) -> tuple:
    """({label: value} of the pool's nodeSelector `selector` the pod spec `spec` (as the
    render leaves it) holds in its nodeSelector, {label: value} of the others that every
    term of its required node affinity requires instead): how the rendered pod reaches the
    pool, which the policy checks. A label neither holds is not checked (the render did not
    place the pod on it)."""
    held = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    terms = get_path(spec, _TERMS)
    by_selector, by_affinity = {}, {}
    for key, value in selector.items():
        if held.get(key) == value:
            by_selector[str(key)] = str(value)
        elif isinstance(terms, list) and terms and all(requires(t, key, value)
                                                       for t in terms):
            by_affinity[str(key)] = str(value)
    return by_selector, by_affinity


def pod_level(pod, node) -> int:
    """POD_LEVEL_* for the pod template of `pod` (a PodView) on `node` (a NodeModel or
    None): unchecked when the template sets pod-level resources itself (the verdict judged
    them) or the kubelet runs without the PodLevelResources gate (krm_fn.admission.qos.gate:
    the node's featureGates, else the default of its version)."""
    if node is None or pod.spec.get("resources") is not None:
        return POD_LEVEL_UNCHECKED
    from krm_fn.admission.qos import gate
    if not gate(node, "PodLevelResources"):
        return POD_LEVEL_UNCHECKED
    return POD_LEVEL_QOS if gate(node, "PodLevelResourceManagers") else POD_LEVEL_UNPINS


def opted_out(obj: dict, pod) -> bool:
    """Whether the workload `obj` or the pod template of `pod` (a PodView) carries the
    annotation OPT_OUT: "skip"."""
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}
    return ann.get(OPT_OUT) == "skip" or pod.annotations.get(OPT_OUT) == "skip"


def label_all(item, metas: list, pool, cfg, node=None) -> None:
    """`label` on every tuned pod template of `item` (krm_fn.pipeline.tune.TunedItem, after
    the rules), placed in node pool `pool`; `metas`: the metadata path of each pod template
    in order (two pod templates whose pods take their labels from the same place, such as a
    KServe predictor and its workerSpec, cannot be told apart: neither is checked; a place
    the workload has no pod template at, such as an absent workerSpec, shares nothing);
    `node`: the pool's NodeModel (`checked`)."""
    present = [meta for meta, tp in zip(metas, item.pods) if tp.pod is not None]
    for index, tp in enumerate(item.pods):
        if tp.pod is not None:
            label(tp.pod, item.pick.obj, index, tp.pinned, pool, cfg,
                  present.count(metas[index]) > 1, node)


def label(pod, obj: dict, index: int, pinned: frozenset, pool, cfg,
          shared: bool = False, node=None) -> None:
    """Write LABEL on the pod template of `pod` (a PodView of pod template `index` of the
    workload `obj`, placed in node pool `pool`, a krm_fn.rules.PoolInfo) when one of its
    containers is pinned to whole CPUs (`pinned`, their names) and neither opts out
    (OPT_OUT); the write is a Change of rule RULE, none when the label already holds the
    value. A pod template without metadata (a kind whose pods take none from the
    manifest), one that opts out, and one whose pods take their labels from the same place
    as another pod template's (`shared`) get an info saying it is not checked. `cfg`: the
    loaded config (spec.output.admissionPolicy.name, spec.workloads.threads); `node`: the
    pool's NodeModel (`checked`)."""
    if not pinned:
        return
    name = cfg.output.admissionPolicy.name
    pod.rule = RULE
    if pod.at.meta is None or shared or opted_out(obj, pod):
        why = ("its pods take no labels from the manifest" if pod.at.meta is None else
               f"its pods take their labels from the same place as another pod template "
               f"of the workload ({path_str(pod.at.meta)}), so the API server cannot tell "
               f"them apart" if shared else f"it opts out ({OPT_OUT}: skip)")
        pod.note(INFO, None, f"not checked by the admission policy {name}: {why}")
    else:
        target = checked(pod, pinned, pool, thread_names(_extra(cfg)), node)
        value = label_value(pod.ref, index, target)
        labels = get_path(pod.edits.root, pod.at.meta + ("labels",))
        if not isinstance(labels, dict) or labels.get(LABEL) != value:
            pod.set(pod.at.meta + ("labels", LABEL), value,
                    f"label {LABEL}={value}: the admission policy {name} checks these pods "
                    f"as the API server stores them (spec.output.admissionPolicy)")
    pod.rule = None


def _extra(cfg) -> tuple:
    threads = cfg.workloads.threads
    return tuple(threads.env) + tuple(threads.custom)


def of_item(item, pool, cfg, node=None) -> list:
    """The Targets of one tuned item (krm_fn.pipeline.tune.TunedItem) placed in node pool
    `pool` (krm_fn.rules.PoolInfo): one per pod template that carries the LABEL value of
    what is checked of it (`label` wrote it, or found it in place). `cfg`: the loaded
    config; `node`: the pool's NodeModel (`checked`)."""
    ref = item.pick.ref
    out = []
    names = thread_names(_extra(cfg))
    for index, tp in enumerate(item.pods):
        pod = tp.pod
        if pod is None or not tp.pinned or pod.at.meta is None:
            continue
        target = checked(pod, tp.pinned, pool, names, node)
        value = label_value(ref, index, target)
        labels = get_path(item.work, pod.at.meta + ("labels",))
        if isinstance(labels, dict) and labels.get(LABEL) == value:
            out.append(target._replace(value=value, workload=str(ref)))
    return out


def _thread_env(entries: object, names: frozenset) -> dict:
    """{name: value} of the env entries (a container's `env` list) named in `names` with a
    literal string value; a later entry of the same name wins, as in the container."""
    out: dict = {}
    for e in entries if isinstance(entries, list) else ():
        if isinstance(e, dict) and e.get("name") in names:
            value = e.get("value")
            if isinstance(value, str) and "valueFrom" not in e:
                out[e["name"]] = value
            else:
                out.pop(e["name"], None)
    return out
