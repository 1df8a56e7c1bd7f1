"""Scheduling: can the pod land on its node pool at all? nodeSelector and required node
affinity against the pool's labels.

The scheduler's NodeAffinity filter places a pod only on a node whose labels match every
`nodeSelector` entry and, when `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring
Execution` is set, one of its `nodeSelectorTerms` (terms are ORed; a term's
`matchExpressions` and `matchFields` are ANDed; a term with neither matches no node).
Operators: `In` (label present, value listed), `NotIn` (label absent or value not listed),
`Exists`, `DoesNotExist`, `Gt` / `Lt` (label present and its value, an integer, greater /
less than the one integer given; anything else does not match). `matchFields` can only
name `metadata.name` (`In` / `NotIn`, one value): which node that is cannot be told from
labels.

krm-fn knows of the pool's nodes the pool's labels (its `nodeSelector`), their OS
(`kubernetes.io/os: linux` and its twin `beta.kubernetes.io/os`, `with_twins`: the kubelet
sets both from runtime.GOOS, and the kubelet
configs krm-fn emits are Linux ones) and the OS and architecture of the pool's
`topology.fromNode` Node (`known_labels`); any other label is unknown. So an expression on a label the pool does not list is DEPENDS (the pod
lands only on those of the pool's nodes that carry it), while an expression on a pool
label is decided exactly; ERROR only when no node of the pool can ever match. The labels
the kubelet registers every node with (`kubernetes.io/hostname`, `kubernetes.io/arch` and
the `beta.kubernetes.io/` twins, pkg/kubelet/kubelet_node_status.go initialNode) are on
every node even where krm-fn does not know their value: `Exists` on one matches every node
and `DoesNotExist` none (`REGISTERED`). A `topologySpreadConstraints` entry with
`whenUnsatisfiable: DoNotSchedule` keeps the pod off every node without its `topologyKey`
(the PodTopologySpread filter): on a label the pool does not list, DEPENDS too (`spread`).

Sources: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go
(`GetRequiredNodeAffinity`, `RequiredNodeAffinity.Match`, `nodeSelectorTerm.match`,
`isEmptyNodeSelectorTerm`), k8s.io/apimachinery/pkg/labels/selector.go
(`Requirement.Matches`, `NewRequirement`), https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/

The kubelet of a Linux node also refuses, at admission, a pod whose `spec.os.name` is not
`linux` (reason PodOSNotSupported) and a pod whose own label `kubernetes.io/os` is not
`linux` (PodOSSelectorNodeLabelDoesNotMatch): `os_refusals`, after
pkg/kubelet/lifecycle/predicate.go (`rejectPodAdmissionBasedOnOSField`,
`rejectPodAdmissionBasedOnOSSelector`, v1.37.2); the API server refuses `spec.os.name`
other than `linux` and `windows` (pkg/apis/core/validation/validation.go `validateOS`).
"""
from __future__ import annotations

from krm_fn.admission.model import DEPENDS, ERROR, AdmittedPod, Finding, NodeModel
from krm_fn.admission.podaffinity import HOSTNAME

REQUIRED = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
_SOURCE = ("k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go, "
           "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/")
_INT_OPS = ("Gt", "Lt")
OS_LABEL, ARCH_LABEL = "kubernetes.io/os", "kubernetes.io/arch"
# the deprecated twins the kubelet still sets to the same values (kubeletapis.LabelOS,
# LabelArch: pkg/kubelet/kubelet_node_status.go initialNode, v1.37.2)
_TWINS = (("beta.kubernetes.io/os", OS_LABEL), ("beta.kubernetes.io/arch", ARCH_LABEL))
# every label the kubelet registers its Node with (initialNode, v1.37.2): present on every
# node of every pool, whatever its value
REGISTERED = (HOSTNAME, OS_LABEL, ARCH_LABEL, *(twin for twin, _ in _TWINS))
NODE_OS = "linux"
_OS_SOURCE = ("pkg/kubelet/lifecycle/predicate.go, "
              "https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-os")


def known_labels(selector: dict, node: dict | None = None) -> dict:
    """The labels every node of a pool carries: `selector` (the pool's nodeSelector), then,
    where it does not name them, `kubernetes.io/os: linux` and the `kubernetes.io/arch` of
    `node` (the pool's fromNode Node, plain, or None)."""
    out = dict(selector)
    out.setdefault(OS_LABEL, NODE_OS)
    md = node.get("metadata") if isinstance(node, dict) else None
    labels = md.get("labels") if isinstance(md, dict) else None
    if isinstance(labels, dict) and labels.get(ARCH_LABEL) is not None:
        out.setdefault(ARCH_LABEL, str(labels[ARCH_LABEL]))
    return out


def os_refusals(spec: dict, labels: dict, path: str = "") -> tuple:
    """Findings (ERROR, rule `scheduling`) for a pod (plain `spec`, its own metadata
    `labels`) that the Linux kubelet of every pool refuses: `spec.os.name` other than
    linux (PodOSNotSupported; the API server refuses names other than linux and windows),
    label kubernetes.io/os other than linux (PodOSSelectorNodeLabelDoesNotMatch)."""
    out = []
    where = f"{path}." if path else ""
    os_ = spec.get("os") if isinstance(spec, dict) else None
    name = os_.get("name") if isinstance(os_, dict) else None
    if name is not None and str(name) != NODE_OS:
        api = ("" if str(name) == "windows" else
               f"; the API server refuses it first (spec.os.name: Unsupported value "
               f"{str(name)!r}: supported values: \"linux\", \"windows\")")
        out.append(Finding(ERROR, f"spec.os.name is {name}, but the pool's nodes run a Linux "
                                  f"kubelet, which refuses the pod (PodOSNotSupported: "
                                  f"\"Failed to admit pod as the OS field doesn't match node "
                                  f"OS\"){api}; set spec.os.name to linux or remove it "
                                  f"({_OS_SOURCE})", "scheduling", f"{where}os.name"))
    own = labels.get(OS_LABEL) if isinstance(labels, dict) else None
    if own is not None and str(own) != NODE_OS:
        out.append(Finding(ERROR, f"the pod's label {OS_LABEL}={own} does not match the "
                                  f"pool's nodes ({OS_LABEL}={NODE_OS}): their kubelet "
                                  f"refuses the pod (PodOSSelectorNodeLabelDoesNotMatch: "
                                  f"\"Failed to admit pod as the `{OS_LABEL}` label doesn't "
                                  f"match node label\"); set the label to {NODE_OS} or remove "
                                  f"it ({_OS_SOURCE})", "scheduling",
                           f"{path[:-len('spec')] if path.endswith('spec') else where}"
                           f"metadata.labels"))
    return tuple(out)


def _int(text: object) -> int | None:
    """strconv.ParseInt(s, 10, 64) of a label value: an optionally signed decimal."""
    s = str(text)
    body = s[1:] if s[:1] in "+-" else s
    if not body.isdigit() or not body.isascii():
        return None
    n = int(s)
    return n if -(1 << 63) <= n < (1 << 63) else None


def _malformed(expr: object) -> str | None:
    """Why a matchExpressions entry is invalid (NewRequirement), else None."""
    if not isinstance(expr, dict) or not isinstance(expr.get("key"), str):
        return "an expression needs a key"
    op, values = expr.get("operator"), expr.get("values") or []
    if not isinstance(values, list):
        return "values must be a list"
    if op in ("In", "NotIn") and not values:
        return f"operator {op} needs at least one value"
    if op in ("Exists", "DoesNotExist") and values:
        return f"operator {op} takes no values"
    if op in _INT_OPS and (len(values) != 1 or _int(values[0]) is None):
        return f"operator {op} needs exactly one integer value"
    if op not in ("In", "NotIn", "Exists", "DoesNotExist", *_INT_OPS):
        return f"unknown operator {op!r}"
    return None


def with_twins(labels: dict) -> dict:
    """`labels` with `beta.kubernetes.io/os` and `beta.kubernetes.io/arch` where it gives
    the stable label and not the twin: the kubelet registers every node with both, set
    from runtime.GOOS and runtime.GOARCH (pkg/kubelet/kubelet_node_status.go initialNode);
    `labels` itself when nothing is added."""
    add = {twin: labels[stable] for twin, stable in _TWINS
           if stable in labels and twin not in labels}
    return {**labels, **add} if add else labels


def expression(expr: dict, labels: dict) -> bool | None:
    """One well-formed matchExpressions entry against a node carrying `labels` (the pool's
    labels; other labels unknown): True, False, or None when it depends on a label the
    pool does not list (labels/selector.go `Requirement.Matches`)."""
    labels = with_twins(labels)
    key, op = expr["key"], expr["operator"]
    values = [str(v) for v in expr.get("values") or []]
    if key not in labels:
        if key in REGISTERED and op in ("Exists", "DoesNotExist"):
            return op == "Exists"
        return None
    have = str(labels[key])
    if op == "In":
        return have in values
    if op == "NotIn":
        return have not in values
    if op == "Exists":
        return True
    if op == "DoesNotExist":
        return False
    n = _int(have)
    if n is None:
        return False
    limit = _int(values[0])
    return n > limit if op == "Gt" else n < limit


def _and(results: list) -> bool | None:
    if any(r is False for r in results):
        return False
    return True if all(r is True for r in results) else None


def term(t: object, labels: dict) -> tuple[bool | None, list[str]]:
    """One nodeSelectorTerm against the pool's labels: (True / False / None, reasons): the
    expressions that fail (for False) or depend on unknown labels or the node name (for
    None)."""
    if not isinstance(t, dict):
        return False, ["a term must be a mapping"]
    exprs, fields = t.get("matchExpressions") or [], t.get("matchFields") or []
    if not exprs and not fields:
        return False, ["an empty term matches no node"]
    results, failed, unknown = [], [], []
    for e in exprs if isinstance(exprs, list) else [None]:
        bad = _malformed(e)
        if bad:
            results.append(False)
            failed.append(f"{bad} (the API server refuses the pod)")
            continue
        r = expression(e, labels)
        results.append(r)
        vals = [str(v) for v in e.get("values") or []]
        text = f"{e['key']} {e['operator']}" + (f" [{', '.join(vals)}]" if vals else "")
        if r is False:
            failed.append(f"{text} (the pool's nodes have {e['key']}={labels[e['key']]})"
                          if e["key"] in labels else
                          f"{text} (the kubelet registers every node with label {e['key']})"
                          if e["key"] in REGISTERED else text)
        elif r is None:
            unknown.append(f"{text} on label {e['key']}, which the pool does not list")
    for f in fields if isinstance(fields, list) else [None]:
        ok = (isinstance(f, dict) and f.get("key") == "metadata.name"
              and f.get("operator") in ("In", "NotIn") and len(f.get("values") or []) == 1)
        results.append(None if ok else False)
        (unknown if ok else failed).append(
            f"matchFields metadata.name {f.get('operator')} {f.get('values')[0]}: which node "
            f"that is cannot be told from labels" if ok else
            "matchFields takes only metadata.name with In or NotIn and one value (the API "
            "server refuses the pod)")
    verdict = _and(results)
    return verdict, failed if verdict is False else unknown if verdict is None else []


def evaluate(node_selector: dict, affinity: object,
             labels: dict) -> tuple[bool | None, list[str]]:
    """The pod's nodeSelector AND its required node affinity (terms ORed) against a node of
    a pool with `labels`: (True: every node of the pool matches; False: none can; None: it
    depends on labels krm-fn does not know or the node name, reasons)."""
    labels = with_twins(labels)
    sel_results, failed, unknown = [], [], []
    for key, value in (node_selector or {}).items():
        if key not in labels:
            sel_results.append(None)
            unknown.append(f"nodeSelector {key}={value}: a label the pool does not list")
        elif str(labels[key]) != str(value):
            sel_results.append(False)
            failed.append(f"nodeSelector {key}={value} (the pool's nodes have "
                          f"{key}={labels[key]})")
        else:
            sel_results.append(True)
    required = required_affinity(affinity)
    if required is not None:
        terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
        per = [term(t, labels) for t in terms] if isinstance(terms, list) else []
        if not per:
            sel_results.append(False)
            failed.append("required node affinity without nodeSelectorTerms matches no node")
        elif any(r is True for r, _ in per):
            sel_results.append(True)
        elif all(r is False for r, _ in per):
            sel_results.append(False)
            failed += [f"term {i}: {'; '.join(why)}" for i, (_, why) in enumerate(per)]
        else:
            sel_results.append(None)
            unknown += [f"term {i}: {'; '.join(why)}" for i, (r, why) in enumerate(per)
                        if r is None]
    verdict = _and(sel_results)
    return verdict, failed if verdict is False else unknown if verdict is None else []


def required_affinity(affinity: object):
    """affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, else None."""
    cur = affinity
    for key in REQUIRED[1:]:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def requires(affinity: object, labels: dict) -> bool:
    """Every term of the required node affinity requires each of `labels` (an `In`
    expression on the key listing only its value): the affinity alone keeps the pod on
    nodes with those labels. False without a required node affinity."""
    required = required_affinity(affinity)
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    if not isinstance(terms, list) or not terms:
        return False
    for t in terms:
        exprs = t.get("matchExpressions") if isinstance(t, dict) else None
        exprs = exprs if isinstance(exprs, list) else []
        for key, value in labels.items():
            if not any(isinstance(e, dict) and e.get("key") == key
                       and e.get("operator") == "In"
                       and [str(v) for v in e.get("values") or []] == [str(value)]
                       for e in exprs):
                return False
    return True


def check(node_selector: dict, affinity: object, labels: dict, pool: str,
          path: str = "") -> tuple:
    """Findings (rule `scheduling`) for a pod with `node_selector` and `affinity` (plain
    data) placed in node pool `pool` whose nodes carry `labels`: () when every node of the
    pool matches; one ERROR with the fix when none can; one DEPENDS naming the expressions
    on labels the pool does not list (or on the node name). `path`: the pod spec's field
    path, for the finding."""
    verdict, why = evaluate(node_selector, affinity, labels)
    if verdict is True:
        return ()
    sel = _labels_text(labels)
    where = f"{path}." if path else ""
    if verdict is False:
        at = (f"{where}nodeSelector" if any(w.startswith("nodeSelector") for w in why)
              else f"{where}{'.'.join(REQUIRED)}")
        return (Finding(ERROR, f"the pod never schedules on node pool {pool!r} (node labels "
                               f"{sel}): {'; '.join(why)}; change or remove the nodeSelector"
                               f" entry or required node affinity term so the pool's labels "
                               f"match, or place the workload in the pool it selects with "
                               f"the krm-fn.dev/node-pool annotation ({_SOURCE})",
                        "scheduling", at),)
    return (Finding(DEPENDS, f"the pod schedules on node pool {pool!r} (node labels {sel}) "
                             f"only on the nodes that also match: {'; '.join(why)}; add "
                             f"such labels to the pool's nodeSelector when all its nodes "
                             f"carry them ({_SOURCE})",
                    "scheduling", f"{where}{'.'.join(REQUIRED)}"
                    if required_affinity(affinity) is not None else f"{where}nodeSelector"),)


def _labels_text(labels: dict) -> str:
    """A pool's node labels as its messages name them: `k=v, k2=v2`, or `none`."""
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "none"


SPREAD = "topologySpreadConstraints"
_SPREAD_SOURCE = ("pkg/scheduler/framework/plugins/podtopologyspread/filtering.go, "
                  "https://kubernetes.io/docs/concepts/scheduling-eviction/"
                  "topology-spread-constraints/")
# the scheduler's words for a node without a constraint's topologyKey (podtopologyspread
# plugin.go ErrReasonNodeLabelNotMatch, v1.37.2)
SPREAD_MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"


def spread(spec: dict, node: NodeModel, path: str = "") -> tuple:
    """DEPENDS findings (rule `scheduling`) for the `topologySpreadConstraints` of the pod
    spec `spec` (plain) with `whenUnsatisfiable: DoNotSchedule` whose `topologyKey` is
    neither a label of the pool (`node.labels`, with the twins) nor one the kubelet registers
    every node with (REGISTERED): the scheduler's PodTopologySpread filter refuses a node
    that does not carry that label (SPREAD_MISSING), so the pod lands only on the pool's
    nodes that do, and on none when no node of the pool carries it. ScheduleAnyway
    constraints only score nodes."""
    constraints = spec.get(SPREAD) if isinstance(spec, dict) else None
    if not isinstance(constraints, list) or not constraints:
        return ()
    labels = with_twins(node.labels)
    sel = _labels_text(node.labels)
    where = f"{path}." if path else ""
    out = []
    for i, c in enumerate(constraints):
        if not isinstance(c, dict) or c.get("whenUnsatisfiable") != "DoNotSchedule":
            continue
        key = c.get("topologyKey")
        if not isinstance(key, str) or key in labels or key in REGISTERED:
            continue
        out.append(Finding(DEPENDS, f"the pod schedules on node pool {node.pool!r} (node "
                                    f"labels {sel}) only on the nodes that carry label {key}: "
                                    f"{SPREAD}[{i}] spreads the pods over it with "
                                    f"whenUnsatisfiable: DoNotSchedule, and the scheduler's "
                                    f"PodTopologySpread filter refuses a node without it "
                                    f"(\"{SPREAD_MISSING}\"); add {key} to the pool's "
                                    f"nodeSelector when all its nodes carry it, or use "
                                    f"whenUnsatisfiable: ScheduleAnyway ({_SPREAD_SOURCE})",
                           "scheduling", f"{where}{SPREAD}[{i}].topologyKey"))
    return tuple(out)


def matches(pod: AdmittedPod, node: NodeModel) -> tuple:
    """Findings of `check` for the pod's nodeSelector (after krm-fn's edits) and required
    node affinity against `node.labels`, the labels of `node.pool`."""
    return check(pod.node_selector, pod.affinity, node.labels, node.pool, pod.path)
