"""What the API server's validation refuses in a pod spec and its workload, beyond the
container checks of krm_fn/pod.py, with the API server's own words.

- `tolerations`: kubernetes/kubernetes pkg/apis/core/validation/validation.go
  ValidateTolerations at v1.37.2 (key a label key when set; operator Exists, Equal or
  empty, Lt / Gt refused with the TaintTolerationComparisonOperators gate off, its
  default; a value only with Equal and a label value; effect NoSchedule,
  PreferNoSchedule, NoExecute or empty; tolerationSeconds only with NoExecute), with
  apimachinery's pkg/api/validate/content IsLabelKey / IsLabelValue / IsDNS1123Subdomain
  messages. Checked before any rule (krm_fn.pod.build_views raises its ShapeError).
- `json_types`: a scalar of a field krm-fn reads written with a YAML type its API type is
  not (`replicas: "3"`, a toleration's `value: 1`): kubectl sends the JSON sigs.k8s.io/yaml
  makes of it (YAML 1.1, krm_fn.resourcelist.yaml_type) and the API server's decoder
  refuses the object ("json: cannot unmarshal string into Go struct field
  DeploymentSpec.spec.replicas of type int32"). kustomize re-emits such a scalar with its
  type (`replicas: "3"` stays quoted, `value: 1` plain). Checked after the rules: a field
  krm-fn wrote is written with its right type, so only the ones it left are judged.
"""
from __future__ import annotations

from krm_fn.changes import path_str
from krm_fn.matching import ALNUM, DIGITS, LOWER, only

SOURCE = "kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateTolerations"
TAINT_DOCS = "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_LABEL_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
              "end with an alphanumeric character")
_DNS_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character")


def go_quote(s: str) -> str:
    """%q of a Go string (strconv.Quote) for the printable strings of a manifest."""
    from krm_fn.node.kubelet_says import go_quote as quote
    return quote(s)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """content.RegexError."""
    return msg + " (e.g. " + "".join(("" if i == 0 else " or ") + f"'{e}', "
                                     for i, e in enumerate(examples)) + \
        f"regex used for validation is '{fmt}')"


def _label_chars(s: str) -> bool:
    """`([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` as a character test."""
    return s != "" and s[0] in ALNUM and s[-1] in ALNUM and only(s, ALNUM + "-_.")


def _dns_subdomain(s: str) -> bool:
    """`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*` as a character
    test."""
    lower = LOWER + DIGITS
    return all(p != "" and p[0] in lower and p[-1] in lower and only(p, lower + "-")
               for p in s.split("."))


def label_key_errors(value: str) -> list:
    """content.IsLabelKey (validation.IsQualifiedName): its messages, [] when valid."""
    errs = []
    parts = value.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_LABEL_MSG, _LABEL_FMT, "MyName",
                                                    "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. "
                  "'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if prefix == "":
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _dns_subdomain(prefix):
                errs.append("prefix part " + _regex_error(_DNS_MSG, _DNS_FMT, "example.com"))
    if name == "":
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _label_chars(name):
        errs.append("name part " + _regex_error(_LABEL_MSG, _LABEL_FMT, "MyName", "my.name",
                                                "123-abc"))
    return errs


def label_value_errors(value: str) -> list:
    """content.IsLabelValue: its messages, [] when valid."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if value != "" and not _label_chars(value):
        errs.append(_regex_error("a valid label must be an empty string or "
                                 + _LABEL_MSG.removeprefix("must "),
                                 f"({_LABEL_FMT})?", "MyValue", "my_value", "12345"))
    return errs


def _text(value) -> str | None:
    """A toleration field as the API server holds it ("" for absent or null); None when it
    is no scalar (json_types and the decoder refuse it)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def toleration_errors(t: dict) -> list:
    """[(field, the API server's words, how to fix it)] of one toleration `t` (plain data),
    in ValidateTolerations' order."""
    key, op, value = _text(t.get("key")), _text(t.get("operator")), _text(t.get("value"))
    effect = _text(t.get("effect"))
    if key is None or op is None or value is None or effect is None:
        return []
    out = []
    for msg in label_key_errors(key) if key else ():
        out.append(("key", f"Invalid value: {go_quote(key)}: {msg}",
                    "a toleration's key is the taint's key, a label key"))
    if key == "" and op != "Exists":
        out.append(("operator", f"Invalid value: {go_quote(op)}: operator must be Exists when "
                    "`key` is empty, which means \"match all values and all keys\"",
                    "give the taint's key, or write operator: Exists (and no value) to "
                    "tolerate every taint"))
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        out.append(("effect", f"Invalid value: {go_quote(effect)}: effect must be 'NoExecute' "
                    "when `tolerationSeconds` is set",
                    "tolerationSeconds only bounds how long a NoExecute taint is tolerated: "
                    "remove it, or write effect: NoExecute"))
    if op in ("Equal", ""):
        msgs = label_value_errors(value)
        if msgs:
            out.append(("operator", f"Invalid value: {go_quote(value)}: " + ";".join(msgs),
                        "a toleration's value is the taint's value, a label value"))
    elif op == "Exists":
        if value:
            out.append(("operator", f"Invalid value: {go_quote(value)}: value must be empty "
                        "when `operator` is 'Exists'",
                        "Exists tolerates every value of the key: remove the value, or "
                        "write operator: Equal"))
    elif op in ("Lt", "Gt"):
        out.append(("operator", f"Unsupported value: {go_quote(op)}: supported values: "
                    "\"Equal\", \"Exists\", \"Lt\", \"Gt\"",
                    "Lt and Gt need the TaintTolerationComparisonOperators feature gate "
                    "(alpha, off by default) on the API server: write Equal or Exists"))
    else:
        out.append(("operator", f"Unsupported value: {go_quote(op)}: supported values: "
                    "\"Equal\", \"Exists\"", "write Equal or Exists (the case matters)"))
    if effect and effect not in _EFFECTS:
        out.append(("effect", f"Unsupported value: {go_quote(effect)}: supported values: "
                    "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                    "write NoSchedule, PreferNoSchedule or NoExecute (the case matters), or "
                    "leave it out to match every effect"))
    return out


def tolerations(spec: dict, at: tuple, what: str) -> tuple | None:
    """(path of the first refused field, message) when ValidateTolerations refuses the
    `tolerations` of pod spec `spec` at path `at` (from the item root); `what`: "pod" or
    "workload", what the API server refuses. None when it accepts them (or they are not a
    list of mappings: the decoder's business)."""
    items = spec.get("tolerations")
    if not isinstance(items, list):
        return None
    found = []
    for i, t in enumerate(items):
        if isinstance(t, dict):
            found += [(at + ("tolerations", i, f), said, fix)
                      for f, said, fix in toleration_errors(t)]
    if not found:
        return None
    said = "; ".join([found[0][1]] + [f"{path_str(p)}: {s}" for p, s, _ in found[1:]])
    fixes = "; ".join(dict.fromkeys(fix for _, _, fix in found))
    return found[0][0], (f"{said}: the API server refuses the {what}; {fixes} ({SOURCE}; "
                         f"{TAINT_DOCS})")
