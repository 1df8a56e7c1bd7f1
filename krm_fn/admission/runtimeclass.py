"""What the API server refuses in a RuntimeClass of the input (kubernetes/kubernetes
pkg/apis/node/validation/validation.go ValidateRuntimeClass, v1.37.2): such a RuntimeClass
is never created, and the RuntimeClass admission controller refuses every pod that names
one that does not exist ("pod rejected: RuntimeClass "kata" not found",
plugin/pkg/admission/runtimeclass/admission.go), so a pod that names it is refused unless
the cluster holds a RuntimeClass of that name already.
"""
from __future__ import annotations

from krm_fn import apivalidation
from krm_fn.admission.containerresources import requirement_errors
from krm_fn.admission.model import ERROR, Finding
from krm_fn.matching import DIGITS, LOWER, only

SOURCE = "kubernetes/kubernetes pkg/apis/node/validation/validation.go ValidateRuntimeClass"
DOCS = "https://kubernetes.io/docs/concepts/containers/runtime-class/"
# apimachinery validation.IsDNS1123Label's message (NameIsDNSLabel)
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character (e.g. 'my-name', "
              " or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
# the fields of a toleration that make it one (validateTolerations' listKey)
_LIST_KEYS = ("key", "operator", "value", "effect")


def errors(rc) -> list[str]:
    """The API server's errors for RuntimeClass `rc` (plain data), each as it writes them
    (`handler: Required value`), in ValidateRuntimeClass's order: the handler (required, a
    DNS-1123 label), `overhead.podFixed` as a container's limits
    (ValidateContainerResourceRequirements: resource names, negative amounts, huge pages
    without cpu or memory; containerresources.requirement_errors), `scheduling.nodeSelector`
    as labels and `scheduling.tolerations` (ValidateTolerations, then no two with the same
    key, operator, value and effect). [] when it accepts the object. Its metadata is not
    checked here."""
    if not isinstance(rc, dict):
        return []
    out = []
    handler = rc.get("handler")
    if handler is None or handler == "":
        out.append("handler: Required value")
    else:
        text = str(handler)
        if len(text) > 63:
            out.append(f"handler: Invalid value: {apivalidation.go_quote(text)}: must be no "
                       f"more than 63 bytes")
        if not (text[0] in LOWER + DIGITS and text[-1] in LOWER + DIGITS
                and only(text, LOWER + DIGITS + "-")):
            out.append(f"handler: Invalid value: {apivalidation.go_quote(text)}: {_LABEL_MSG}")
    overhead = rc.get("overhead")
    fixed = overhead.get("podFixed") if isinstance(overhead, dict) else None
    if isinstance(fixed, dict):
        out += requirement_errors({"limits": fixed}, "overhead")
    scheduling = rc.get("scheduling")
    if isinstance(scheduling, dict):
        out += _scheduling_errors(scheduling)
    return out


def _scheduling_errors(scheduling: dict) -> list[str]:
    """validateScheduling: the node selector's keys and values as labels, then the
    tolerations."""
    out = []
    selector = scheduling.get("nodeSelector")
    for key, value in (selector.items() if isinstance(selector, dict) else ()):
        for text, msgs in ((str(key), apivalidation.label_key_errors(str(key))),
                           (str(value), apivalidation.label_value_errors(str(value)))):
            out += [f"scheduling.nodeSelector: Invalid value: {apivalidation.go_quote(text)}: "
                    f"{m}" for m in msgs]
    tolerations = scheduling.get("tolerations")
    seen: set = set()
    for i, t in enumerate(tolerations if isinstance(tolerations, list) else ()):
        if not isinstance(t, dict):
            continue
        at = f"scheduling.tolerations[{i}]"
        out += [f"{at}.{name}: {words}" for name, words, _ in apivalidation.toleration_errors(t)]
        key = tuple(str(t.get(f) or "") for f in _LIST_KEYS)
        if key in seen:
            out.append(f"{at}: Duplicate value: {dict(zip(_LIST_KEYS, key))}")
        seen.add(key)
    return out


def refusal(pod_spec: dict, runtime_classes: dict, at: str) -> Finding | None:
    """An ERROR Finding (rule `validation`, at `at`) when the pod spec `pod_spec` names a
    RuntimeClass of `runtime_classes` ({name: RuntimeClass}) that the API server refuses to
    create (`errors`), None otherwise."""
    name = pod_spec.get("runtimeClassName") if isinstance(pod_spec, dict) else None
    rc = runtime_classes.get(str(name)) if name else None
    bad = errors(rc) if isinstance(rc, dict) else []
    if not bad:
        return None
    said = bad[0] if len(bad) == 1 else "[" + ", ".join(bad) + "]"
    return Finding(ERROR, f"the API server refuses RuntimeClass {name} "
                          f"(RuntimeClass.node.k8s.io \"{name}\" is invalid: {said}): it is "
                          f"never created, so the RuntimeClass admission controller refuses "
                          f"the pod (pod rejected: RuntimeClass \"{name}\" not found) unless "
                          f"the cluster holds one of that name already; fix the RuntimeClass "
                          f"({SOURCE}; {DOCS})", "validation", f"{at}.runtimeClassName")
