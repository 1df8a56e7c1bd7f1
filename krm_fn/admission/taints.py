"""Taints and tolerations: does the pod tolerate the taints of its node pool's nodes?

The pool's taints (`NodeModel.taints`, built by `pool_taints`) are the ones its nodes
register with, `registerWithTaints` of the KubeletConfiguration they run (the pool's
`kubelet.extra.registerWithTaints`, else `spec.output.baseline`'s: the merged config), and
the `spec.taints` of the pool's `topology.fromNode` Node, less the taints the cluster sets
and lifts by itself (`TRANSIENT`: node conditions, cordons, cloud initialisation, the
cluster autoscaler's), in that order, each (key, effect) once.

The scheduler's TaintToleration filter places a pod only on a node whose every NoSchedule
and NoExecute taint one of the pod's tolerations tolerates (PreferNoSchedule never keeps a
pod off); it checks the taints in the node's order and stops at the first untolerated one
(`untolerated`). A toleration tolerates a taint (`tolerates`) when its effect is empty or
the taint's, its key is empty or the taint's, and its operator is `Exists`, or `Equal` /
empty with the taint's value; `Lt` / `Gt` compare integers only under the
TaintTolerationComparisonOperators gate (alpha since 1.35, off by default: they match
nothing).

The tolerations the scheduler sees are the pod's after admission (`admitted`): the
RuntimeClass's `scheduling.tolerations` merged in, the DefaultTolerationSeconds admission
plugin's `node.kubernetes.io/not-ready` and `unreachable` NoExecute tolerations (300 s),
and, for a DaemonSet's pod, the DaemonSet controller's. A NoExecute taint tolerated only
for `tolerationSeconds` gets the pod evicted by the taint eviction controller that long
after it starts (`evicted_after`).

krm-fn does not add tolerations itself: a taint on a dedicated pool is there to keep other
pods off, and whether a workload belongs there is the user's call. The error names the
toleration to add, as YAML.

Sources: k8s.io/api core/v1/toleration.go (`ToleratesTaint`),
k8s.io/component-helpers scheduling/corev1/helpers.go (`FindMatchingUntoleratedTaint`,
`TolerationsTolerateTaint`), kubernetes pkg/scheduler/framework/plugins/tainttoleration/
taint_toleration.go (`Filter`) and plugins/helper/taint.go (`DoNotScheduleTaintsFilterFunc`),
plugin/pkg/admission/defaulttolerationseconds/admission.go, pkg/controller/daemon/util/
daemonset_util.go (`AddOrUpdateDaemonPodTolerations`), pkg/controller/tainteviction/
taint_eviction.go (`getMinTolerationTime`), all at v1.37.2;
https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn.admission.model import ERROR, AdmittedPod, Finding, NodeModel
from krm_fn.admission.scheduling import _int
from krm_fn.numbers import yaml11_bool

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
BLOCKING = (NO_SCHEDULE, NO_EXECUTE)        # DoNotScheduleTaintsFilterFunc
SOURCE = ("https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/, "
          "k8s.io/component-helpers scheduling/corev1/helpers.go FindMatchingUntoleratedTaint")
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
# The tolerations the DefaultTolerationSeconds admission plugin adds to a pod that has none
# for these keys and effect NoExecute (admission.go: a toleration with an empty key or effect
# counts as one).
DEFAULT_TOLERATIONS = tuple(
    {"key": k, "operator": "Exists", "effect": NO_EXECUTE,
     "tolerationSeconds": DEFAULT_TOLERATION_SECONDS} for k in (NOT_READY, UNREACHABLE))
# AddOrUpdateDaemonPodTolerations, in its order; the last only for hostNetwork pods.
DAEMONSET_TOLERATIONS = tuple(
    {"key": k, "operator": "Exists", "effect": e} for k, e in (
        (NOT_READY, NO_EXECUTE), (UNREACHABLE, NO_EXECUTE),
        ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/unschedulable", NO_SCHEDULE)))
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable",
                           "operator": "Exists", "effect": NO_SCHEDULE}
# Taints of a Node that the cluster sets and lifts by itself (conditions, cordon, cloud
# provider initialisation and shutdown, the cluster autoscaler's scale-down): not the pool's.
TRANSIENT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
TRANSIENT_KEYS = ("ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler")


class Taint(namedtuple("Taint", "key value effect source", defaults=("", "", ""))):
    """One taint of the pool's nodes: `key`, `value` ("" when none), `effect` (NoSchedule,
    PreferNoSchedule, NoExecute) and `source`, where it comes from, for messages
    ("registerWithTaints of the pool's kubelet.extra", "spec.taints of Node 'n1'
    (topology.fromNode)")."""

    __slots__ = ()

    @property
    def text(self) -> str:
        """`key=value:effect` (`key:effect` without a value), as kubectl writes it."""
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


def _s(value: object) -> str:
    return "" if value is None else str(value)


def host_net(spec: dict) -> bool:
    """`hostNetwork: true` in plain pod spec `spec` (`host_flag`)."""
    return host_flag(spec, "hostNetwork")


def host_flag(spec: dict, field: str) -> bool:
    """`field: true` in plain pod spec `spec` (hostNetwork, hostIPC, hostUsers: a bool, or
    the text the YAML reader keeps, read as kubectl reads it: numbers.yaml11_bool)."""
    return yaml11_bool(spec.get(field)) is True


def _transient(key: str) -> bool:
    return key.startswith(TRANSIENT_PREFIXES) or key in TRANSIENT_KEYS


def pool_taints(merged: dict, own_kubelet: dict, node: dict | None) -> tuple:
    """The Taints of a pool's nodes: `merged`'s `registerWithTaints` (the KubeletConfiguration
    the nodes run), from the pool's `kubelet.extra` when `own_kubelet` (the config krm-fn
    emits, before the baseline merge) sets it, else from `spec.output.baseline`; then the
    `spec.taints` of `node` (the fromNode Node, plain, or None) that are not TRANSIENT; each
    (key, effect) once, the first kept (a Node's taints are unique by key and effect)."""
    out, seen = [], set()

    def add(t: object, source: str) -> None:
        if not isinstance(t, dict):
            return
        taint = Taint(_s(t.get("key")), _s(t.get("value")), _s(t.get("effect")), source)
        if (taint.key, taint.effect) not in seen:
            seen.add((taint.key, taint.effect))
            out.append(taint)
    own = isinstance(own_kubelet, dict) and "registerWithTaints" in own_kubelet
    where = ("registerWithTaints of the pool's kubelet.extra" if own else
             "registerWithTaints of spec.output.baseline")
    registered = merged.get("registerWithTaints") if isinstance(merged, dict) else None
    for t in registered if isinstance(registered, list) else []:
        add(t, where)
    if isinstance(node, dict):
        md = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
        spec = node.get("spec") if isinstance(node.get("spec"), dict) else {}
        name = md.get("name") or "?"
        for t in spec.get("taints") or [] if isinstance(spec.get("taints"), list) else []:
            if isinstance(t, dict) and not _transient(_s(t.get("key"))):
                add(t, f"spec.taints of Node {name!r} (topology.fromNode)")
    return tuple(out)


def tolerates(toleration: object, taint: Taint) -> bool:
    """Toleration (plain) tolerates `taint` (toleration.go ToleratesTaint, comparison
    operators off): effect empty or equal, key empty or equal, operator Exists, or Equal /
    empty with an equal value; Lt, Gt and any other operator match nothing."""
    if not isinstance(toleration, dict):
        return False
    effect, key = _s(toleration.get("effect")), _s(toleration.get("key"))
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    op = _s(toleration.get("operator"))
    if op in ("", "Equal"):
        return _s(toleration.get("value")) == taint.value
    return op == "Exists"


def untolerated(taints, tolerations) -> list:
    """The NoSchedule and NoExecute `taints` (in their order) that none of `tolerations`
    tolerates; the scheduler names the first (FindMatchingUntoleratedTaint with
    DoNotScheduleTaintsFilterFunc). [] when the pod may land."""
    return [t for t in taints if t.effect in BLOCKING
            and not any(tolerates(x, t) for x in tolerations)]


def admitted(tolerations, daemonset: bool = False, host_network: bool = False,
             extra=()) -> tuple:
    """The pod's tolerations (plain) after admission: its own, then `extra` (a RuntimeClass's
    `scheduling.tolerations`, merged by the RuntimeClass admission plugin), then for a
    DaemonSet's pod the DaemonSet controller's (AddOrUpdateDaemonPodTolerations: one equal
    in key, effect, operator and value replaced in place, else appended; network-unavailable
    only with `host_network`), then DefaultTolerationSeconds' not-ready / unreachable
    NoExecute ones unless a toleration with that key (or none) and effect NoExecute (or
    none) is there."""
    out = [t for t in tolerations if isinstance(t, dict)]
    out += [t for t in extra if isinstance(t, dict) and t not in out]
    if daemonset:
        for t in DAEMONSET_TOLERATIONS + ((HOST_NETWORK_TOLERATION,) if host_network else ()):
            same = [i for i, x in enumerate(out) if all(
                _s(x.get(f)) == _s(t.get(f)) for f in ("key", "effect", "operator", "value"))]
            if same:
                out[same[0]] = dict(t)
            else:
                out.append(dict(t))
    for default in DEFAULT_TOLERATIONS:
        if not any(_s(x.get("key")) in ("", default["key"])
                   and _s(x.get("effect")) in ("", NO_EXECUTE) for x in out):
            out.append(dict(default))
    return tuple(out)


def evicted_after(taints, tolerations) -> tuple | None:
    """(seconds, Taint) when the NoExecute `taints` are all tolerated but the first
    toleration matching one of them has `tolerationSeconds` (an integer, as the input
    writes it: the YAML reader keeps scalars as text): the taint eviction controller
    evicts the pod that long after it runs there (GetMatchingTolerations, the least
    seconds: getMinTolerationTime; 0 or less: at once); None when none is limited (or a
    NoExecute taint is untolerated: `untolerated` reports that)."""
    least = None
    for t in taints:
        if t.effect != NO_EXECUTE:
            continue
        first = next((x for x in tolerations if tolerates(x, t)), None)
        if first is None:
            return None
        secs = first.get("tolerationSeconds")
        secs = None if secs is None or isinstance(secs, bool) else _int(secs)
        if secs is not None:
            secs = max(secs, 0)
            if least is None or secs < least[0]:
                least = (secs, t)
    return least


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toleration_yaml(taint: Taint) -> str:
    """The toleration of exactly `taint`, as one line of flow YAML: `{key: k, operator:
    Equal, value: "v", effect: NoSchedule}` (`operator: Exists` without a value)."""
    if taint.value:
        return (f"{{key: {taint.key}, operator: Equal, value: {_quote(taint.value)}, "
                f"effect: {taint.effect}}}")
    return f"{{key: {taint.key}, operator: Exists, effect: {taint.effect}}}"


def _named(missing: list) -> tuple:
    """(the untolerated taints `missing` as "text (source); ...", the tolerations that
    tolerate them as one YAML flow list's items) for a finding's message."""
    return ("; ".join(f"{t.text} ({t.source})" for t in missing),
            ", ".join(toleration_yaml(t) for t in missing))


def _bound(pod: AdmittedPod, node: NodeModel, tolerations, where: str) -> tuple:
    """taints.check of a pod that names its node (`spec.nodeName`): the scheduler never
    sees it, and the kubelet's admission checks only the NoExecute taints
    (pkg/kubelet/lifecycle/predicate.go generalFilter: "Kubelet is only interested in the
    NoExecute taint", v1.37.2), so a NoSchedule taint does not keep it off."""
    missing = [t for t in untolerated(node.taints, tolerations) if t.effect == NO_EXECUTE]
    if not missing:
        return ()
    named, add = _named(missing)
    return (Finding(ERROR, f"the pod is never admitted on node pool {node.pool!r}: it names "
                           f"its node (spec.nodeName), whose kubelet refuses a pod that does "
                           f"not tolerate its NoExecute taint(s) {named} (TaintToleration: "
                           f"\"node(s) had untolerated taint(s)\"); add to the pod spec's "
                           f"tolerations: [{add}] (pkg/kubelet/lifecycle/predicate.go "
                           f"generalFilter, {SOURCE})", "scheduling", where),)


def check(pod: AdmittedPod, node: NodeModel, spec: dict | None = None,
          knative_fix: str | None = None) -> tuple:
    """Findings (ERROR, rule `scheduling`) of `pod` against the taints of `node` (its
    pool): one when some NoSchedule / NoExecute taint is untolerated (the pod stays
    Pending), naming every such taint, where it comes from and the tolerations to add; one
    when a NoExecute taint is tolerated for `tolerationSeconds` only. `spec`: the plain pod
    spec (hostNetwork, for a DaemonSet's pod; `nodeName`: a pod that names its node is
    judged as the kubelet admits it, NoExecute taints only: `_bound`); `knative_fix`: when
    the pod is a Knative
    revision's and Knative refuses tolerations, where to turn them on."""
    if not node.taints:
        return ()
    daemonset = pod.ref.kind == "DaemonSet"
    host_network = isinstance(spec, dict) and host_net(spec)
    tolerations = admitted(pod.tolerations, daemonset, host_network)
    where = f"{pod.path}.tolerations" if pod.path else "tolerations"
    bound = isinstance(spec, dict) and bool(spec.get("nodeName"))
    refused = _bound(pod, node, tolerations, where) if bound else ()
    if refused:
        return refused
    missing = [] if bound else untolerated(node.taints, tolerations)
    if missing:
        named, add = _named(missing)
        knative = (f"; Knative refuses tolerations unless they are turned on: {knative_fix}"
                   if knative_fix else "")
        return (Finding(ERROR, f"the pod never schedules on node pool {node.pool!r}: its "
                               f"nodes have the taint(s) {named}, which the pod does not "
                               f"tolerate, so the scheduler's TaintToleration filter leaves "
                               f"it Pending (\"node(s) had untolerated taint(s)\"); add to "
                               f"the pod spec's tolerations: [{add}]{knative}, or place the "
                               f"workload in another pool ({SOURCE})", "scheduling", where),)
    evicted = evicted_after(node.taints, tolerations)
    if evicted is not None:
        secs, t = evicted
        return (Finding(ERROR, f"the pod is evicted from node pool {node.pool!r} {secs} s "
                               f"after it starts: its toleration of the NoExecute taint "
                               f"{t.text} ({t.source}) has tolerationSeconds {secs}, and the "
                               f"taint eviction controller evicts a pod once that has passed;"
                               f" remove tolerationSeconds from that toleration "
                               f"(https://kubernetes.io/docs/concepts/scheduling-eviction/"
                               f"taint-and-toleration/#taint-based-evictions)",
                        "scheduling", where),)
    return ()
