"""The ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding of
`spec.output.admissionPolicy` (pure): CEL that checks, on a pod as the API server will store
it (validating admission runs after every mutating webhook and mutating policy:
https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/),
what the render's verdict promised of it and what the pod alone shows:

- every container, init container and restartable init container (injected ones
  included) has cpu and memory requests equal to its limits: else the pod is not
  Guaranteed and no container gets exclusive CPUs
  (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy);
- each pinned container's cpu is a whole number, on a full-pcpus-only pool a multiple of
  the threads per core (else the kubelet refuses the pod with SMTAlignmentError);
- the thread-count variables of each pinned container still hold the values rendered, as
  the container sees them: the last entry of each name, a literal (not valueFrom), an
  omitted value the empty string (the API server drops an empty `value`; the kubelet's
  makeEnvironmentVariables, pkg/kubelet/kubelet_pods.go, keeps the last entry of a name);
- the node pool's nodeSelector is present, or for a pod the render placed through its
  required node affinity instead, every term of it still requires the pool's labels;
- no pod-level `spec.resources` for cpu or memory appeared on a pod whose template the
  render left without them (targets.POD_LEVEL_*): with the PodLevelResources gate the
  pod's QoS class comes from them alone, and without PodLevelResourceManagers the static
  CPU Manager skips the pod (KEP-2837,
  https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/2837-pod-level-resource-spec).

Capacity, NUMA admission, quotas and what the kubelet's configuration decides are the
render's alone (docs/admission-policy.md).

The per-pod-template data (guard.targets.Target) are CEL map literals keyed by the pod's
krm-fn.dev/guard label, looked up once per request in `variables`. Every expression uses
only what the API server's CEL environment offers to every supported version: the
Kubernetes quantity library (`quantity`, `compareTo`, `isInteger`, `asInteger`) and CEL
optional types (`[?key]`, `orValue`), both from 1.28, the Kubernetes list library's
`lastIndexOf` (in the base environment: IntroducedVersion 1.0), and the strings
extension's `join` (version 0) (https://kubernetes.io/docs/reference/using-api/cel/,
k8s.io/apiserver pkg/cel/environment/base.go). Literals are homogeneous (the environment's
HomogeneousAggregateLiterals), and no map of the data holds an empty map or list.
"""
from __future__ import annotations

from krm_fn.guard.targets import LABEL, POD_LEVEL_UNPINS

API_VERSION = "admissionregistration.k8s.io/v1"
STATIC_POLICY = ("https://kubernetes.io/docs/tasks/administer-cluster/"
                 "cpu-management-policies/#static-policy")
# the pod spec's lists of containers every check walks (restartable init containers are in
# initContainers; ephemeral containers cannot be set when a pod is created)
CONTAINER_LISTS = ("containers", "initContainers")


def cel_str(text: str) -> str:
    """`text` as a single-quoted CEL string literal (backslash, quote and control
    characters escaped: https://github.com/google/cel-spec/blob/master/doc/langdef.md#string-and-bytes-values)."""
    out = []
    for ch in str(text):
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ch == "\x7f":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def cel_value(value) -> str:
    """A CEL literal of `value`: str, int, or a dict / list of them (keys in order)."""
    if isinstance(value, bool):
        raise TypeError("no bool literals in the guard's data")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return cel_str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cel_str(k)}: {cel_value(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(cel_value(v) for v in value) + "]"


def each_container(body: str) -> str:
    """CEL: `<list>.<body>` over the pod's containers, then its init containers (restartable
    ones included) when it has some, concatenated (both results must be lists of one
    type: `body` ends in a `map` to strings)."""
    first, *rest = CONTAINER_LISTS
    out = f"object.spec.{first}.{body}"
    for key in rest:
        out += f" + (has(object.spec.{key}) ? object.spec.{key}.{body} : [])"
    return out


_RES = "has(c.resources) && has(c.resources.{0})"
EQUAL = (f"{_RES.format('requests')} && has(c.resources.limits) && "
         f"['cpu', 'memory'].all(r, r in c.resources.requests && r in c.resources.limits && "
         f"quantity(c.resources.requests[r]).compareTo(quantity(c.resources.limits[r])) == 0 "
         f"&& quantity(c.resources.limits[r]).compareTo(quantity('0')) > 0)")
CPU = f"{_RES.format('limits')} && 'cpu' in c.resources.limits"
WHOLE = (f"{CPU} && quantity(c.resources.limits['cpu']).isInteger() && "
         f"quantity(c.resources.limits['cpu']).asInteger() % variables.smt == 0")
# the entry of variable k the container runs with: the last of that name (the kubelet's
# makeEnvironmentVariables keeps the last; an omitted `value` is the empty string)
LAST = "c.env[c.env.map(e, e.name).lastIndexOf(k)]"
KEPT = (f"has(c.env) && c.env.exists(e, e.name == k) && !has({LAST}.valueFrom) && "
        f"(has({LAST}.value) ? {LAST}.value : '') == variables.threadEnv[c.name][k]")
# what the container holds for thread variable k instead, for the message
FOUND = (f"(!has(c.env) || !c.env.exists(e, e.name == k) ? 'unset' : has({LAST}.valueFrom) "
         f"? 'set from valueFrom' : has({LAST}.value) ? \"'\" + {LAST}.value + \"'\" : \"''\")")
# pod-level resources (object.spec.resources) that name cpu or memory, and their being
# Guaranteed (requests equal to limits for both)
_POD = "object.spec.resources"
POD_SET = (f"has({_POD}) && (has({_POD}.requests) && ['cpu', 'memory'].exists(r, r in "
           f"{_POD}.requests) || has({_POD}.limits) && ['cpu', 'memory'].exists(r, r in "
           f"{_POD}.limits))")
POD_EQUAL = (f"has({_POD}.requests) && has({_POD}.limits) && ['cpu', 'memory'].all(r, r in "
             f"{_POD}.requests && r in {_POD}.limits && quantity({_POD}.requests[r])"
             f".compareTo(quantity({_POD}.limits[r])) == 0 && quantity({_POD}.limits[r])"
             f".compareTo(quantity('0')) > 0)")
_TERMS = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
AFFINE = (f"has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
          f"has({_TERMS}) && size({_TERMS}.nodeSelectorTerms) > 0 && "
          f"{_TERMS}.nodeSelectorTerms.all(t, has(t.matchExpressions) && "
          f"t.matchExpressions.exists(m, m.key == k && m.operator == 'In' && has(m.values) && "
          f"size(m.values) > 0 && m.values.all(v, v == variables.nodeAffinity[k])))")
SELECTED = ("has(object.spec.nodeSelector) && k in object.spec.nodeSelector && "
            "object.spec.nodeSelector[k] == variables.nodeSelector[k]")


def _by_target(targets: list, field: str) -> dict:
    """{label value: the field of each target whose field is not empty}."""
    return {t.value: getattr(t, field) for t in targets if getattr(t, field)}


def _lookup(data: dict) -> str:
    """CEL: the entry of this pod's label in the map literal `data`, an empty map when the
    pod's label has none (optional index `[?key]`, CEL optional types: in the API
    server's CEL environment from 1.28)."""
    return f"{cel_value(data)}[?variables.guard].orValue({{}})"


def variables(targets: list) -> list:
    """The policy's `variables`: `guard` (the pod's label value), `workload` (how messages
    name it), `cpus` ({pinned container: cpu rendered}), `smt`, `threadEnv` and
    `nodeSelector`, `nodeAffinity` (when some target has one), `podLevel` (when some target
    checks pod-level resources), then the failures: `unequal`, `fractional`,
    `threadsChanged`, `selectorMissing`, `affinityMissing`, `podResources` (lists of
    strings naming what failed)."""
    out = [("guard", f"object.metadata.labels[{cel_str(LABEL)}]"),
           ("workload", cel_value({t.value: f"{t.workload} (node pool {t.pool})"
                                   for t in targets}) + "[variables.guard]"),
           ("cpus", cel_value({t.value: t.cpus for t in targets}) + "[variables.guard]"),
           ("smt", cel_value({t.value: t.smt for t in targets}) + "[variables.guard]"),
           ("unequal", each_container(f"filter(c, !({EQUAL})).map(c, c.name)")),
           ("fractional", each_container(
               f"filter(c, c.name in variables.cpus && !({WHOLE})).map(c, c.name + ' (cpu ' "
               f"+ ({CPU} ? string(c.resources.limits['cpu']) : 'none') + ', rendered ' + "
               f"variables.cpus[c.name] + ')')"))]
    env = _by_target(targets, "env")
    if env:
        out += [("threadEnv", _lookup(env)),
                ("threadsChanged", each_container(
                    f"filter(c, c.name in variables.threadEnv && variables.threadEnv[c.name]"
                    f".exists(k, !({KEPT}))).map(c, c.name + ': ' + variables.threadEnv"
                    f"[c.name].filter(k, !({KEPT})).map(k, k + ' is ' + {FOUND} + "
                    f"\", rendered '\" + variables.threadEnv[c.name][k] + \"'\").join(', '))"))]
    selectors = _by_target(targets, "node_selector")
    if selectors:
        out += [("nodeSelector", _lookup(selectors)),
                ("selectorMissing", f"variables.nodeSelector.filter(k, !({SELECTED}))"
                                    f".map(k, k + '=' + variables.nodeSelector[k])")]
    affinity = _by_target(targets, "node_affinity")
    if affinity:
        out += [("nodeAffinity", _lookup(affinity)),
                ("affinityMissing", f"variables.nodeAffinity.filter(k, !({AFFINE}))"
                                    f".map(k, k + ' In [' + variables.nodeAffinity[k] + ']')")]
    pod_level = _by_target(targets, "pod_level")
    if pod_level:
        out += [("podLevel", f"{cel_value(pod_level)}[?variables.guard].orValue(0)"),
                ("podResources", f"variables.podLevel == 0 || !({POD_SET}) ? [] : "
                                 f"variables.podLevel == {POD_LEVEL_UNPINS} ? ['set'] : "
                                 f"{POD_EQUAL} ? [] : ['unequal']")]
    return [{"name": n, "expression": e} for n, e in out]


def _validation(failures: str, message: str, says: str) -> dict:
    """A validation that passes when the variable `failures` (a list) is empty; its
    messageExpression is `says` (CEL, naming what failed), `message` the text the API
    server shows when that expression cannot be evaluated."""
    return {"expression": f"size(variables.{failures}) == 0",
            "message": message,
            "messageExpression": "'krm-fn admission policy: ' + variables.workload + ': ' + "
                                 + says}


def validations(targets: list) -> list:
    """The policy's `validations`, one per check (see the module docstring), each with a
    message that names the containers and the fix, as the render's results do."""
    out = [_validation(
        "unequal", "a container of a pod krm-fn pins has cpu or memory requests that differ "
                   "from its limits: the pod is not Guaranteed",
        "'container(s) ' + variables.unequal.join(', ') + "
        + cel_str(" without cpu and memory requests equal to limits: the pod is not "
                  "Guaranteed, so no container gets exclusive CPUs (" + STATIC_POLICY +
                  "); set requests equal to limits for cpu and memory in each (an injected "
                  "sidecar through its injector's resource annotations or configuration)")),
        _validation(
        "fractional", "a pinned container's cpu is not the whole number of CPUs krm-fn "
                      "rendered",
        "'pinned container(s) ' + variables.fractional.join(', ') + ' need a whole number of "
        "CPUs' + (variables.smt > 1 ? ', a multiple of ' + string(variables.smt) + ' (the "
        "pool runs full-pcpus-only with ' + string(variables.smt) + ' threads per core)' : "
        "'') + " + cel_str(" to get exclusive CPUs (" + STATIC_POLICY + "); set requests and "
                           "limits cpu back to the rendered value"))]
    if _by_target(targets, "env"):
        out.append(_validation(
            "threadsChanged", "a thread-count variable of a pinned container differs from "
                              "the value krm-fn rendered",
            "'thread-count variables changed in ' + variables.threadsChanged.join('; ') + "
            + cel_str(" (the values rendered are for the pinned CPUs): a runtime that sizes "
                      "its thread pools otherwise oversubscribes its CPUs; set them back")))
    if _by_target(targets, "node_selector"):
        out.append(_validation(
            "selectorMissing", "the pod lacks its node pool's nodeSelector",
            "'nodeSelector ' + variables.selectorMissing.join(', ') + "
            + cel_str(" of its node pool is missing: the pod may land on a node without the "
                      "pool's kubelet configuration; add it back")))
    if _by_target(targets, "node_affinity"):
        out.append(_validation(
            "affinityMissing", "the pod's required node affinity lacks its node pool",
            "'required node affinity ' + variables.affinityMissing.join(', ') + "
            + cel_str(" of its node pool is missing from a term: the pod may land on a node "
                      "without the pool's kubelet configuration; add it back to every "
                      "term")))
    if _by_target(targets, "pod_level"):
        out.append(_validation(
            "podResources", "pod-level spec.resources were added to a pod krm-fn pins",
            "'pod-level spec.resources ' + (variables.podResources[0] == 'set' ? " + cel_str(
                "set: the static CPU Manager gives a pod with pod-level resources no "
                "exclusive CPUs (PodLevelResourceManagers is off on the pool, KEP-2837)") +
            " : " + cel_str("without cpu and memory requests equal to limits: the pod's QoS "
                            "class comes from them alone and it is not Guaranteed") +
            ") + " + cel_str("; remove spec.resources from the pod (a webhook or controller "
                             "added it)")))
    return out


# The longest expression the API server's CEL parser takes, in code points (cel-go's default
# expressionSizeCodePointLimit, https://github.com/google/cel-go/blob/v0.29.2/parser/parser.go,
# which Kubernetes keeps)
MAX_EXPRESSION = 100_000


# The longest file name stem kpt is given for the policy and binding: a file name may have
# 255 bytes (NAME_MAX of Linux file systems; kpt fails with "file name too long"), an object
# name 253 characters, and "-binding.yaml" follows the stem
FILE_STEM = 200


def file_stem(name: str) -> str:
    """The stem of the kpt package files of policy `name`: the name when it is at most
    FILE_STEM characters, else its start, `-` and 10 hex digits of its SHA-256 (the same in
    every render)."""
    if len(name) <= FILE_STEM:
        return name
    import hashlib
    return name[:FILE_STEM - 11] + "-" + hashlib.sha256(name.encode()).hexdigest()[:10]


def too_long(vap: dict) -> list:
    """The names of the variables of policy `vap` whose expression the API server would
    refuse for its length (MAX_EXPRESSION); a render with many pod templates makes the
    data maps long."""
    return [v["name"] for v in vap["spec"]["variables"] if len(v["expression"]) > MAX_EXPRESSION]


def policy(name: str, targets: list, labels: dict, annotations: dict) -> dict:
    """The ValidatingAdmissionPolicy `name`: pods created with one of the targets' LABEL
    values (objectSelector), failurePolicy Fail, the variables and validations above."""
    values = list(dict.fromkeys(t.value for t in targets))
    md: dict = {"name": name, "labels": dict(labels)}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy", "metadata": md,
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["pods"]}],
                    "objectSelector": {"matchExpressions": [
                        {"key": LABEL, "operator": "In", "values": values}]}},
                "variables": variables(targets),
                "validations": validations(targets)}}


def binding(name: str, conf, labels: dict, annotations: dict) -> dict:
    """The ValidatingAdmissionPolicyBinding `name` of policy `name`: `conf`
    (spec.output.admissionPolicy) gives its validationActions and the namespaces it applies
    in (namespaces: by their kubernetes.io/metadata.name label, which the API server sets on
    every Namespace; namespaceLabels: matchLabels)."""
    md: dict = {"name": name, "labels": dict(labels)}
    if annotations:
        md["annotations"] = dict(annotations)
    spec: dict = {"policyName": name, "validationActions": list(conf.validationActions)}
    if conf.namespaces:
        spec["matchResources"] = {"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In",
             "values": list(conf.namespaces)}]}}
    elif conf.namespaceLabels:
        spec["matchResources"] = {"namespaceSelector": {
            "matchLabels": dict(conf.namespaceLabels)}}
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": md, "spec": spec}
