"""Objects of the input the API server refuses to create, whose fields krm-fn would
otherwise judge pods by: a ResourceQuota (its `spec.hard` and scopes), a
HorizontalPodAutoscaler (its replica bounds and `scaleTargetRef`) and a Namespace (its name,
labels and annotations, which krm-fn reads for injection and Pod Security). Such an object
is never created, so it counts, scales or labels no pod: InjectionContext.from_items leaves
it out, and pipeline/refused.py makes each one an error on the object, in the API server's
words.

Sources (kubernetes/kubernetes v1.37.2): pkg/apis/core/validation/validation.go
ValidateResourceQuota (ValidateResourceQuotaResourceName, ValidateResourceQuantityValue,
validateResourceQuotaScopes, validateScopedResourceSelectorRequirement) and ValidateNamespace
(ValidateObjectMeta); pkg/apis/autoscaling/validation/validation.go
ValidateHorizontalPodAutoscaler (validateHorizontalPodAutoscalerSpec,
ValidateCrossVersionObjectReference), with the create options of
pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go (minReplicas at least 1, a
scaleTargetRef apiVersion with a group).
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.admission import quotascope
from krm_fn.apivalidation import (dns_name_errors, go_quote, label_key_errors,
                                  label_value_errors)
from krm_fn.quantity import NANO

CORE = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"
HPA_SRC = "kubernetes/kubernetes pkg/apis/autoscaling/validation/validation.go"
# helpers.go standardResources: the standard quota resources and `storage`
_STANDARD = ("storage",)
# helpers.go integerResources: the quota resources counted in whole units
_INTEGER = ("pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
            "configmaps", "persistentvolumeclaims", "services.nodeports",
            "services.loadbalancers")
_NEGATIVE = "must be greater than or equal to 0"


def _spec(obj) -> dict:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec if isinstance(spec, dict) else {}


def quota_errors(quota) -> list[str]:
    """The API server's errors for ResourceQuota `quota` (plain data), each as it writes
    them (`spec.hard[pods]: Invalid value: "1500m": must be an integer`): per name of
    `spec.hard` (sorted), a name that is no qualified name or no standard quota resource
    without a domain, a negative amount, a fraction of a resource counted in whole units;
    then `spec.scopes` and `spec.scopeSelector` (an unknown scope or operator, a scope a
    hard resource does not allow, conflicting scopes, values with Exists / DoesNotExist or
    none with In / NotIn), each error once. [] when it accepts the object. Amounts that
    are no quantity are
    left to pipeline/quantities.py; the API server's order within `spec.hard` is a Go
    map's."""
    spec = _spec(quota)
    hard = spec.get("hard") if isinstance(spec.get("hard"), dict) else {}
    out = []
    for key in sorted(map(str, hard)):
        at = f"spec.hard[{key}]"
        out += [f"{at}: Invalid value: {go_quote(key)}: {m}" for m in _quota_name(key)]
        got = quantity.parse_signed(hard.get(key))
        if got is None:
            continue
        if got[0] < 0:
            out.append(f"{at}: Invalid value: {go_quote(got[1])}: {_NEGATIVE}")
        if _integer(key) and quantity.ceil_div(got[0], NANO // 1000) % 1000:
            out.append(f"{at}: Invalid value: {go_quote(got[1])}: must be an integer")
    names = [str(k) for k in hard]
    scopes = spec.get("scopes")
    if isinstance(scopes, list) and scopes:
        out += _scope_errors([str(s) for s in scopes], names)
    sel = spec.get("scopeSelector")
    exprs = sel.get("matchExpressions") if isinstance(sel, dict) else None
    if isinstance(exprs, list):
        out += _selector_errors([e if isinstance(e, dict) else {} for e in exprs], names)
    return list(dict.fromkeys(out))     # field.ErrorList.ToAggregate: each error once


def _quota_name(key: str) -> list[str]:
    """ValidateResourceQuotaResourceName: validateResourceName (a qualified name; a
    standard resource unless it has a domain), then a standard quota resource unless it
    has a domain."""
    errs = label_key_errors(key)
    if "/" not in key:
        if not errs and not (quotascope.standard_quota(key) or key in _STANDARD):
            errs.append("must be a standard resource type or fully qualified")
        if not quotascope.standard_quota(key):
            errs.append("must be a standard resource for quota")
    return errs


def _integer(key: str) -> bool:
    """helpers.go IsIntegerResourceName: integerResources, or an extended resource (a
    domain outside kubernetes.io, no `requests.` prefix, a qualified name with it)."""
    if key in _INTEGER:
        return True
    return ("/" in key and "kubernetes.io/" not in key and not key.startswith("requests.")
            and not label_key_errors("requests." + key))


def _unsupported(scope: str, names: list) -> int:
    """How many standard quota resources of `names` `scope` does not allow
    (IsResourceQuotaScopeValidForResource): one error each."""
    ok = quotascope.allowed(scope)
    return 0 if ok is None else sum(quotascope.standard_quota(k) and k not in ok
                                    for k in set(names))


def _conflicts(scopes) -> int:
    return sum(all(p in scopes for p in pair) for pair in quotascope.CONFLICTS)


def _scope_errors(scopes: list, names: list) -> list[str]:
    """validateResourceQuotaScopes: `spec.scopes` shown as JSON (json imported here: only a
    quota with scopes needs it, and a plain render imports no json: tests/test_cli.py)."""
    import json
    shown = json.dumps(scopes, separators=(",", ":"), ensure_ascii=False)
    at = f"spec.scopes: Invalid value: {shown}"
    out = []
    for s in scopes:
        if s not in quotascope.SCOPES:
            out.append(f"{at}: unsupported scope")
        out += [f"{at}: unsupported scope applied to resource"] * _unsupported(s, names)
    return out + [f"{at}: conflicting scopes"] * _conflicts(scopes)


def _selector_errors(exprs: list, names: list) -> list[str]:
    """validateScopedResourceSelectorRequirement, per match expression; the whole
    selector's value is shown as "..." (the API server prints the Go struct)."""
    at = "spec.scopeSelector.matchExpressions"
    out = []
    for e in exprs:
        name, op = str(e.get("scopeName") or ""), str(e.get("operator") or "")
        values = e.get("values") if isinstance(e.get("values"), list) else []
        if name not in quotascope.SCOPES:
            out.append(f"{at}.scopeName: Invalid value: {go_quote(name)}: unsupported scope")
        out += [f"{at}: Invalid value: ...: unsupported scope applied to "
                f"resource"] * _unsupported(name, names)
        if name in quotascope.EXISTS_ONLY and op != "Exists":
            out.append(f"{at}.operator: Invalid value: {go_quote(op)}: must be 'Exists' when "
                       f"scope is any of ResourceQuotaScopeTerminating, "
                       f"ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                       f"ResourceQuotaScopeNotBestEffort or "
                       f"ResourceQuotaScopeCrossNamespacePodAffinity")
        if op in ("In", "NotIn") and not values:
            out.append(f"{at}.values: Required value: must be at least one value when "
                       f"`operator` is 'In' or 'NotIn' for scope selector")
        elif op in ("Exists", "DoesNotExist") and values:
            out.append(f"{at}.values: Invalid value: ...: must be no value when `operator` "
                       f"is 'Exist' or 'DoesNotExist' for scope selector")
        elif op not in quotascope.OPERATORS:
            out.append(f"{at}.operator: Invalid value: {go_quote(op)}: not a valid selector "
                       f"operator")
    seen = {str(e.get("scopeName") or "") for e in exprs}
    return out + [f"{at}: Invalid value: ...: conflicting scopes"] * _conflicts(seen)


def meta_errors(obj, label_name: bool = False) -> list[str]:
    """ValidateObjectMeta's checks of `obj`'s name (required; a DNS-1123 subdomain, or with
    `label_name` a DNS-1123 label: NameIsDNSSubdomain, NameIsDNSLabel), labels and
    annotations (every object's): a label key that is no qualified name, a label value
    that is no label value (ValidateLabels), an annotation key that is no qualified name
    once lower-cased, and annotations above 256 KiB together (ValidateAnnotations); labels
    and annotations in sorted order (the API server's is a Go map's)."""
    md = obj.get("metadata") if isinstance(obj, dict) else None
    md = md if isinstance(md, dict) else {}
    name = md.get("name")
    if name is None or name == "":
        out = ["metadata.name: Required value: name or generateName is required"]
    else:
        out = [f"metadata.name: Invalid value: {go_quote(str(name))}: {m}"
               for m in dns_name_errors(str(name), label_name)]
    labels = md.get("labels") if isinstance(md.get("labels"), dict) else {}
    for k in sorted(map(str, labels)):
        out += [f"metadata.labels: Invalid value: {go_quote(k)}: {m}"
                for m in label_key_errors(k)]
        v = labels.get(k)
        if isinstance(v, str):
            out += [f"metadata.labels: Invalid value: {go_quote(v)}: {m}"
                    for m in label_value_errors(v)]
    notes = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}
    for k in sorted(map(str, notes)):
        out += [f"metadata.annotations: Invalid value: {go_quote(k)}: {m}"
                for m in label_key_errors(k.lower())]
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in notes.items())
    if size > 256 * 1024:
        out.append("metadata.annotations: Too long: may not be more than 262144 bytes")
    return out


# pkg/features/kube_features.go HPAScaleToZero: beta, on by default, from 1.37
# (pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go: minReplicas 0 allowed)
SCALE_TO_ZERO = 37


def hpa_errors(hpa, minor: int = SCALE_TO_ZERO) -> list[str]:
    """The API server's errors for HorizontalPodAutoscaler `hpa` (plain data; autoscaling
    v1 or v2, validated alike after conversion, `minReplicas` defaulted to 1) on create
    by an API server of release 1.`minor`, each as it writes them, in
    validateHorizontalPodAutoscalerSpec's order: `minReplicas` below 1 (below 0 from 1.37,
    where HPAScaleToZero is on by default),
    `maxReplicas` unset, 0 or below 1, `maxReplicas` below `minReplicas`, `scaleTargetRef`
    (kind and name required and usable as a path segment, an apiVersion with a group
    unless the kind is ReplicationController), and `minReplicas: 0` without an Object or
    External metric. Its metadata as meta_errors, first. [] when it accepts the object.
    Replica counts that are no whole number are left to the type checks
    (apivalidation.workload_fields); the rest of its metrics and its behavior, which
    krm-fn does not read, are not checked."""
    spec = _spec(hpa)
    out = meta_errors(hpa)
    low = numbers.api_int(spec["minReplicas"])[0] if spec.get("minReplicas") is not None \
        else 1
    high = numbers.api_int(spec["maxReplicas"])[0] if spec.get("maxReplicas") is not None \
        else 0
    bound = 0 if minor >= SCALE_TO_ZERO else 1
    if low is not None and low < bound:
        out.append(f"spec.minReplicas: Invalid value: {low}: must be greater than or equal "
                   f"to {bound}")
    if high == 0:
        out.append("spec.maxReplicas: Required value")
    elif high is not None and high < 0:
        out.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than or equal "
                   f"to 1")
    if low is not None and high is not None and high < low:
        out.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than or equal "
                   f"to `minReplicas`")
    ref = spec.get("scaleTargetRef") if isinstance(spec.get("scaleTargetRef"), dict) else {}
    for key in ("kind", "name"):
        text = str(ref.get(key) or "")
        if not text:
            out.append(f"spec.scaleTargetRef.{key}: Required value")
            continue
        out += [f"spec.scaleTargetRef.{key}: Invalid value: {go_quote(text)}: {m}"
                for m in _path_segment(text)]
    version = str(ref.get("apiVersion") or "")
    why = _group_version(version, ref.get("kind") == "ReplicationController")
    if why:
        out.append(f"spec.scaleTargetRef.apiVersion: Invalid value: {go_quote(version)}: "
                   f"{why}")
    metrics = spec.get("metrics") if isinstance(spec.get("metrics"), list) else []
    if low == 0 and bound == 0 and not any(
            isinstance(m, dict) and m.get("type") in ("Object", "External") for m in metrics):
        out.append("spec.metrics: Forbidden: must specify at least one Object or External "
                   "metric to support scaling to zero replicas")
    return out


def _path_segment(name: str) -> list[str]:
    """apimachinery content.IsPathSegmentName's messages."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _group_version(text: str, core: bool) -> str:
    """Why ValidateAPIVersion refuses `text` (schema.ParseGroupVersion, then a group
    required unless `core`), "" when it accepts it."""
    if text.count("/") > 1:
        return f"unexpected GroupVersion string: {text}"
    if not core and ("/" not in text or not text.partition("/")[0]):
        return "apiVersion must specify API group"
    return ""


def namespace_errors(ns, minor: int = SCALE_TO_ZERO) -> list[str]:
    """The API server's errors for Namespace `ns` (plain data) that krm-fn reads: its
    name (a DNS-1123 label), labels (with the `kubernetes.io/metadata.name` label the API
    server sets to the name) and annotations (ValidateNamespace's ValidateObjectMeta:
    meta_errors). [] when it accepts them."""
    md = ns.get("metadata") if isinstance(ns, dict) else None
    if not isinstance(md, dict) or not md.get("name"):
        return meta_errors(ns, label_name=True)
    # pkg/apis/core/v1/defaults.go SetDefaults_Namespace: the name as a label too
    labels = md.get("labels") if isinstance(md.get("labels"), dict) else {}
    labels = {**labels, "kubernetes.io/metadata.name": str(md["name"])}
    return meta_errors({**ns, "metadata": {**md, "labels": labels}}, label_name=True)


def quota_all_errors(quota, minor: int = SCALE_TO_ZERO) -> list[str]:
    """ValidateResourceQuota: meta_errors, then quota_errors."""
    return meta_errors(quota) + quota_errors(quota)


# (apiVersion group, kind) -> its errors (of the object and the API server's minor release),
# [] when the API server creates it: the objects
# InjectionContext.from_items leaves out when refused, and pipeline/refused.py reports
CHECKS = {("", "ResourceQuota"): quota_all_errors,
          ("autoscaling", "HorizontalPodAutoscaler"): hpa_errors,
          ("", "Namespace"): namespace_errors}
KINDS = frozenset(k for _, k in CHECKS)
WHAT = {"ResourceQuota": "it counts no pod of the render",
        "HorizontalPodAutoscaler": "it scales no workload of the render",
        "Namespace": "its labels and annotations apply to no pod of the render"}
SOURCES = {"ResourceQuota": f"{CORE} ValidateResourceQuota",
           "HorizontalPodAutoscaler": f"{HPA_SRC} ValidateHorizontalPodAutoscaler",
           "Namespace": f"{CORE} ValidateNamespace"}


def errors(obj, minor: int | None = None) -> list[str]:
    """The API server's errors for `obj` when it is of a kind of CHECKS, else [], by an API
    server of release 1.`minor` (None: the newest krm-fn knows)."""
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        return []
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    check = CHECKS.get((group, obj.get("kind")))
    return check(obj, SCALE_TO_ZERO if minor is None else minor) if check else []
