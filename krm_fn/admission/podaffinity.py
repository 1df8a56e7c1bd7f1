"""Required inter-pod anti-affinity on one node: the kube-scheduler's InterPodAffinity filter
(pkg/scheduler/framework/plugins/interpodaffinity/filtering.go) as it decides between the
pods krm-fn places on one node of a pool (admission/capacity.py Packer: the pool's DaemonSet
pods, then the workload's replicas).

A pod does not fit a node when one of its required anti-affinity terms
(`affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`) selects a pod
already there ("node(s) didn't match pod anti-affinity rules"), or when a term of a pod
already there selects it ("node(s) didn't satisfy existing pods anti-affinity rules"). A
term selects a pod when its `labelSelector` matches the pod's labels (nil matches nothing,
`{}` everything: metav1.LabelSelectorAsSelector) and the pod's namespace is one of the
term's: `namespaces`, every namespace with `namespaceSelector: {}`, else the namespace of the
pod that holds the term (GetNamespacesFromPodAffinityTerm).

COARSER (not judged, the term is left out): a topologyKey other than
`kubernetes.io/hostname` (the pool's other labels are not known per node), a
`namespaceSelector` with selectors (the Namespaces' labels are not known), `matchLabelKeys`
or `mismatchLabelKeys`, a selector the API server refuses; required pod affinity (a pod that
needs another beside it) is not modelled.
"""
from __future__ import annotations

HOSTNAME = "kubernetes.io/hostname"
ALL = None      # a term's namespaces: every namespace


def terms(affinity, namespace: str) -> tuple:
    """The judged required anti-affinity terms of a pod (`affinity`: its plain
    spec.affinity; `namespace`: its namespace) as ((matchLabels items, expressions),
    namespaces: a frozenset, or ALL) pairs, hashable; () for none."""
    part = affinity.get("podAntiAffinity") if isinstance(affinity, dict) else None
    required = part.get("requiredDuringSchedulingIgnoredDuringExecution") \
        if isinstance(part, dict) else None
    out = []
    for t in required if isinstance(required, list) else ():
        if not isinstance(t, dict) or t.get("topologyKey") != HOSTNAME or \
                t.get("matchLabelKeys") or t.get("mismatchLabelKeys"):
            continue
        selector = _selector(t.get("labelSelector"))
        spaces = _namespaces(t, namespace)
        if selector is not False and spaces is not False:
            out.append((selector, spaces))
    return tuple(out)


def _selector(sel):
    """A hashable form of a metav1.LabelSelector: None for nil (matches nothing), else
    (matchLabels items, ((key, operator, values), ...)); False when it is not one the API
    server takes."""
    if sel is None:
        return None
    if not isinstance(sel, dict):
        return False
    labels, exprs = sel.get("matchLabels") or {}, sel.get("matchExpressions") or []
    if not isinstance(labels, dict) or not isinstance(exprs, list):
        return False
    out = []
    for e in exprs:
        if not isinstance(e, dict):
            return False
        op, values = e.get("operator"), e.get("values") or []
        if not isinstance(e.get("key"), str) or not isinstance(values, list) or \
                op not in ("In", "NotIn", "Exists", "DoesNotExist") or \
                (op in ("In", "NotIn")) != bool(values):
            return False
        out.append((e["key"], op, tuple(str(v) for v in values)))
    return tuple(sorted((str(k), str(v)) for k, v in labels.items())), tuple(out)


def _namespaces(t: dict, own: str):
    """The namespaces term `t` selects pods in: a frozenset, ALL, or False when they depend
    on Namespace labels krm-fn does not know."""
    listed, sel = t.get("namespaces"), t.get("namespaceSelector")
    names = frozenset(str(n) for n in listed) if isinstance(listed, list) else frozenset()
    if sel is None:
        return names or frozenset((own,))
    if sel == {}:
        return ALL
    return False


def selects(term: tuple, labels: dict, namespace: str) -> bool:
    """Whether `term` (terms) selects a pod with `labels` in `namespace`
    (labels/selector.go Requirement.Matches: NotIn and DoesNotExist hold for an absent
    key)."""
    selector, spaces = term
    if selector is None or (spaces is not ALL and namespace not in spaces):
        return False
    plain, exprs = selector
    for k, v in plain:
        if labels.get(k) != v:
            return False
    for key, op, values in exprs:
        have = labels.get(key)
        if op == "In" and (have is None or str(have) not in values):
            return False
        if op == "NotIn" and have is not None and str(have) in values:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
    return True


def refused(pod, placed: list) -> str | None:
    """The InterPodAffinity reason a node holding `placed` (AdmittedPods) refuses `pod`
    (an AdmittedPod) for, or None."""
    for term in pod.anti:
        for other in placed:
            if selects(term, other.labels, other.namespace):
                return "node(s) didn't match pod anti-affinity rules"
    for other in placed:
        for term in other.anti:
            if selects(term, pod.labels, pod.namespace):
                return "node(s) didn't satisfy existing pods anti-affinity rules"
    return None
