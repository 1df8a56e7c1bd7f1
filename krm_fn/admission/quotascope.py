"""ResourceQuota scopes: which quotas of its namespace the API server counts a pod against.

Source: https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-scopes and
kubernetes/kubernetes pkg/quota/v1/evaluator/core/pods.go (podMatchesScopeFunc,
IsTerminating, isBestEffort, podMatchesSelector, usesCrossNamespacePodAffinity);
staging/src/k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go (Matches,
getScopeSelectorsFromQuota: every entry of `spec.scopes` is a selector with operator
Exists, then every `spec.scopeSelector.matchExpressions` entry; the quota counts the pod
only when the pod matches all of them); pkg/apis/core/v1/helper/helpers.go
(ScopedResourceSelectorRequirementsAsSelector) and pkg/apis/core/validation/validation.go
(validateResourceQuotaScopes, validateScopedResourceSelectorRequirement).

Per scope, for a pod after admission:

- Terminating / NotTerminating: `activeDeadlineSeconds` set (>= 0) or not;
- BestEffort / NotBestEffort: its QoS class (qos.pod_qos) is BestEffort or not;
- PriorityClass: its priorityClassName after the Priority admission plugin (the spec's, else
  the cluster's globalDefault PriorityClass: model.AdmittedPod.priority_class), matched as
  the label `PriorityClass=<name>` (absent when the pod has none) by In / NotIn / Exists /
  DoesNotExist;
- CrossNamespacePodAffinity: a pod (anti-)affinity term, required or preferred, with
  `namespaces` or a `namespaceSelector`;
- VolumeAttributesClass (a PersistentVolumeClaim scope) and any other name: no pod.

Only the operator of a PriorityClass expression counts: pods.go ignores it for the other
scopes, which the API server's validation allows with Exists only.
"""
from __future__ import annotations

SOURCE = ("https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-scopes; "
          "kubernetes/kubernetes pkg/quota/v1/evaluator/core/pods.go (podMatchesScopeFunc)")
EXISTS_ONLY = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort",
               "CrossNamespacePodAffinity")
SCOPES = EXISTS_ONLY + ("PriorityClass", "VolumeAttributesClass")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
# helpers.go IsResourceQuotaScopeValidForResource: the standard quota resources a scope allows
_POD = ("pods", "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
        "limits.memory")
_ALLOWED = {"BestEffort": ("pods",), "VolumeAttributesClass": ("persistentvolumeclaims",
                                                               "requests.storage")}
# helpers.go standardQuotaResources (and IsQuotaHugePageResourceName: hugepages-<size>,
# requests.hugepages-<size>)
_STANDARD_QUOTA = _POD + ("ephemeral-storage", "requests.storage", "requests.ephemeral-storage",
                          "limits.ephemeral-storage", "resourcequotas", "services",
                          "replicationcontrollers", "secrets", "persistentvolumeclaims",
                          "configmaps", "services.nodeports", "services.loadbalancers")
CONFLICTS = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def selectors(quota: dict) -> list:
    """[(scope name, operator, values tuple, how the quota writes it)] of `quota` (plain
    data), as getScopeSelectorsFromQuota lists them: `spec.scopes` (operator Exists), then
    `spec.scopeSelector.matchExpressions`."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), dict) else {}
    out = []
    scopes = spec.get("scopes")
    for s in scopes if isinstance(scopes, list) else ():
        out.append((str(s), "Exists", (), f"scope {s}"))
    sel = spec.get("scopeSelector")
    exprs = sel.get("matchExpressions") if isinstance(sel, dict) else None
    for e in exprs if isinstance(exprs, list) else ():
        e = e if isinstance(e, dict) else {}
        values = e.get("values")
        values = tuple(str(v) for v in values) if isinstance(values, list) else ()
        name, op = str(e.get("scopeName")), str(e.get("operator"))
        shown = f" ({', '.join(values)})" if values else ""
        out.append((name, op, values, f"scopeSelector {name} {op}{shown}"))
    return out


def problem(quota: dict) -> str | None:
    """Why krm-fn cannot evaluate `quota`'s scopes, or None: what the API server's
    validation refuses (an unknown scope or operator, a scope with a resource it does not
    allow, conflicting scopes, values with Exists / DoesNotExist or none with In / NotIn,
    another operator than Exists for the scopes that allow only it), and a PriorityClass
    value that is no label value (ScopedResourceSelectorRequirementsAsSelector fails: the
    API server cannot match the quota)."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), dict) else {}
    sel = spec.get("scopeSelector")
    if sel is not None and not (isinstance(sel, dict) and isinstance(
            sel.get("matchExpressions", []), list)):
        return "its scopeSelector is not a list of matchExpressions"
    if spec.get("scopes") is not None and not isinstance(spec.get("scopes"), list):
        return "its scopes are not a list"
    hard = spec.get("hard") if isinstance(spec.get("hard"), dict) else {}
    names: dict = {}        # {"scope" or "scopeSelector": scope names}: checked apart
    for name, op, values, shown in selectors(quota):
        if name not in SCOPES:
            return f"{shown}: {name} is no scope the API server knows"
        if op not in OPERATORS:
            return f"{shown}: {op} is no scope selector operator"
        if name in EXISTS_ONLY and op != "Exists":
            return f"{shown}: the API server allows only Exists with {name}"
        if op in ("In", "NotIn") and not values:
            return f"{shown}: {op} needs at least one value"
        if op in ("Exists", "DoesNotExist") and values:
            return f"{shown}: {op} takes no values"
        ok = allowed(name)
        wrong = sorted(str(k) for k in hard if standard_quota(str(k)) and str(k) not in ok)
        if wrong:
            return (f"{shown} does not apply to {', '.join(wrong)}: the API server allows "
                    f"only {', '.join(ok)} with it")
        bad = [v for v in values if not _label_value(v)]
        if bad:
            return (f"{shown}: {bad[0]} is no label value, so the API server cannot match "
                    f"the selector")
        names.setdefault(shown.split(" ")[0], set()).add(name)
    for where, got in names.items():
        for pair in CONFLICTS:
            if all(p in got for p in pair):
                return f"its {where} names both {' and '.join(pair)}"
    return None


def allowed(scope: str) -> tuple | None:
    """The standard quota resources `scope` allows (helpers.go
    IsResourceQuotaScopeValidForResource); None for a scope it does not know (every
    resource)."""
    return _ALLOWED.get(scope, _POD) if scope in SCOPES else None


def standard_quota(resource: str) -> bool:
    """helpers.go IsStandardQuotaResourceName: standardQuotaResources, or a huge page
    resource of a quota (`hugepages-<size>`, `requests.hugepages-<size>`)."""
    return resource in _STANDARD_QUOTA or resource.startswith(("requests.hugepages-",
                                                               "hugepages-"))


def _label_value(v: str) -> bool:
    """apimachinery IsLabelValue: empty, or at most 63 characters of [A-Za-z0-9-_.]
    beginning and ending with a letter or digit."""
    if not v:
        return True
    return (len(v) <= 63 and v[0] in _ALNUM and v[-1] in _ALNUM
            and all(c in _ALNUM or c in "-_." for c in v))


def matches(quota: dict, pod) -> tuple:
    """(whether the API server counts `pod` (model.AdmittedPod after admission) against
    `quota`: True, False, or None when krm-fn cannot tell; why: "" when it counts it and
    nothing is assumed, else the first selector the pod does not match and the pod's fact,
    or what krm-fn cannot tell or assumes). Call `problem` first: a quota with a problem
    is evaluated here as pods.go would, not as the API server refuses it."""
    assumed = ""
    for name, op, values, shown in selectors(quota):
        got, fact = _one(name, op, values, pod)
        if got is None:
            return None, f"{shown}: {fact}"
        if name == "PriorityClass" and not pod.priority_class:
            assumed = (f"{shown} {'matches' if got else 'does not match'} a pod without "
                       f"priorityClassName: the pod names none and the input holds no "
                       f"PriorityClass with globalDefault: true (the Priority admission "
                       f"plugin gives the pod the name of the cluster's globalDefault "
                       f"PriorityClass where there is one)")
        if not got:
            return False, assumed or f"{shown} does not match: {fact}"
    return True, assumed


def _one(name: str, op: str, values: tuple, pod) -> tuple:
    """(pods.go podMatchesScopeFunc for one selector: True / False / None unknown, the
    pod's fact as a phrase)."""
    if name in ("Terminating", "NotTerminating"):
        term = terminating(pod.active_deadline)
        if term is None:
            return None, (f"activeDeadlineSeconds {pod.active_deadline!s} is not a whole "
                          f"number")
        fact = ("the pod sets activeDeadlineSeconds" if term
                else "the pod sets no activeDeadlineSeconds")
        return term == (name == "Terminating"), fact
    if name in ("BestEffort", "NotBestEffort"):
        from krm_fn.admission.qos import BESTEFFORT, pod_qos
        qos = pod_qos(pod)
        return (qos == BESTEFFORT) == (name == "BestEffort"), f"the pod is {qos}"
    if name == "PriorityClass":
        pc = pod.priority_class
        fact = f"priorityClassName {pc}" if pc else "no priorityClassName"
        if op == "Exists":
            return bool(pc), fact
        if op == "DoesNotExist":
            return not pc, fact
        if op == "In":
            return bool(pc) and pc in values, fact
        return not pc or pc not in values, fact
    if name == "CrossNamespacePodAffinity":
        cross = cross_namespace(pod.affinity)
        return cross, ("a pod affinity term names other namespaces" if cross else
                       "no pod affinity term names namespaces or a namespaceSelector")
    return False, "it counts PersistentVolumeClaims, not pods"


def terminating(value) -> bool | None:
    """pods.go IsTerminating: `activeDeadlineSeconds` (as written; None when not set) set
    and >= 0; None when it is no whole number (numbers.api_int)."""
    if value is None:
        return False
    from krm_fn import numbers
    got, _ = numbers.api_int(value)
    return None if got is None else got >= 0


def cross_namespace(affinity) -> bool:
    """pods.go usesCrossNamespacePodAffinity: a term of `podAffinity` or `podAntiAffinity`
    (required, or the podAffinityTerm of a preferred one) with non-empty `namespaces` or a
    `namespaceSelector` (an empty one `{}` included: it selects every namespace)."""
    if not isinstance(affinity, dict):
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(kind)
        if not isinstance(part, dict):
            continue
        required = part.get("requiredDuringSchedulingIgnoredDuringExecution")
        preferred = part.get("preferredDuringSchedulingIgnoredDuringExecution")
        terms = list(required) if isinstance(required, list) else []
        for w in preferred if isinstance(preferred, list) else ():
            if isinstance(w, dict):
                terms.append(w.get("podAffinityTerm"))
        for t in terms:
            if isinstance(t, dict) and (t.get("namespaces") or
                                        t.get("namespaceSelector") is not None):
                return True
    return False
