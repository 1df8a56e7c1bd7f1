"""What the API server's validation refuses in a pod spec and its workload, beyond the
container checks of krm_fn/pod.py, with the API server's own words.

- `tolerations`: kubernetes/kubernetes pkg/apis/core/validation/validation.go
  ValidateTolerations at v1.37.2 (key a label key when set; operator Exists, Equal or
  empty, Lt / Gt refused with the TaintTolerationComparisonOperators gate off, its
  default; a value only with Equal and a label value; effect NoSchedule,
  PreferNoSchedule, NoExecute or empty; tolerationSeconds only with NoExecute), with
  apimachinery's pkg/api/validate/content IsLabelKey / IsLabelValue / IsDNS1123Subdomain
  messages. Checked before any rule (krm_fn.pod.build_views raises its ShapeError).
- `type_errors` (of `pod_fields`, `workload_fields`): a scalar of a field krm-fn reads written with a YAML type its API type is
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
from krm_fn.workloads import get_path

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


_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                 "characters or '-', and must start and end with an alphanumeric character")


def dns_name_errors(value: str, label: bool) -> list:
    """content.IsDNS1123Label (`label`: a Namespace's name, NameIsDNSLabel) or
    IsDNS1123Subdomain (most objects' names, NameIsDNSSubdomain): its messages, [] when
    valid."""
    if label:
        errs = ["must be no more than 63 characters"] if len(value) > 63 else []
        if not (value and "." not in value and _dns_subdomain(value)):
            errs.append("must not contain dots" if value and _dns_subdomain(value) else
                        _regex_error(DNS_LABEL_MSG, _DNS_LABEL_FMT, "my-name", "123-abc"))
        return errs
    errs = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not (value and _dns_subdomain(value)):
        errs.append(_regex_error(_DNS_MSG, _DNS_FMT, "example.com"))
    return errs


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


# --- JSON types ------------------------------------------------------------------------------
# the API type of a field: (JSON type, Go type, server-side apply's word for it, in words)
STRING = ("string", "string", "string", "a string")
INT32 = ("number", "int32", "numeric (int or float)", "an integer (int32)")
INT64 = ("number", "int64", "numeric (int or float)", "an integer (int64)")
BOOL = ("boolean", "bool", "boolean", "a boolean")
_CONTAINER = (("name", STRING), ("image", STRING), ("restartPolicy", STRING))
_TOLERATION = (("key", STRING), ("operator", STRING), ("value", STRING), ("effect", STRING),
               ("tolerationSeconds", INT64))
TYPES_SRC = ("https://github.com/kubernetes-sigs/yaml (YAML 1.1: https://yaml.org/type/); "
             "https://kubernetes.io/docs/reference/using-api/api-concepts/")


def _map_values(m, at: tuple, api: tuple) -> list:
    return [(at + (k,), api, v) for k, v in m.items()] if isinstance(m, dict) else []


def string_map_fields(m, at: tuple) -> list:
    """[(path, STRING, value)] of the values of a map of strings `m` at `at` (KubeRay's
    `rayStartParams`, `map[string]string` in its CRD schema); [] when `m` is no mapping."""
    return _map_values(m, at, STRING)


def _list_items(lst, at: tuple, fields: tuple) -> list:
    out = []
    for i, x in enumerate(lst if isinstance(lst, list) else ()):
        if isinstance(x, dict):
            out += [(at + (i, f), api, x[f]) for f, api in fields if f in x]
    return out


def pod_fields(spec: dict, at: tuple, meta: dict | None, at_meta: tuple | None,
               container_keys: tuple = ()) -> list:
    """[(path, API type, value)] of the scalars of pod spec `spec` (at `at`) and its metadata
    `meta` (at `at_meta`) that krm-fn reads: labels, annotations, nodeSelector values,
    runtimeClassName, hostNetwork, os.name, tolerations, and each container's name,
    image, restartPolicy, command, args and env names and values; the containers of
    `initContainers` and `containers`, then those of `container_keys` (keys of `spec`
    holding one container each: KServe's framework keys, workloads.PodSpecAt)."""
    out = []
    if isinstance(meta, dict) and at_meta is not None:
        for part in ("labels", "annotations"):
            out += _map_values(meta.get(part), at_meta + (part,), STRING)
    out += _map_values(spec.get("nodeSelector"), at + ("nodeSelector",), STRING)
    out += [(at + (f,), api, spec[f]) for f, api in (("runtimeClassName", STRING),
                                                     ("hostNetwork", BOOL)) if f in spec]
    if isinstance(spec.get("os"), dict) and "name" in spec["os"]:
        out.append((at + ("os", "name"), STRING, spec["os"]["name"]))
    out += _list_items(spec.get("tolerations"), at + ("tolerations",), _TOLERATION)
    for key in ("initContainers", "containers"):
        lst = spec.get(key)
        out += _list_items(lst, at + (key,), _CONTAINER)
        for i, c in enumerate(lst if isinstance(lst, list) else ()):
            if not isinstance(c, dict):
                continue
            out += _command_env(c, at + (key, i))
    for key in container_keys:
        c = spec.get(key)
        if isinstance(c, dict):
            out += [(at + (key, f), api, c[f]) for f, api in _CONTAINER if f in c]
            out += _command_env(c, at + (key,))
    return out


def _command_env(c: dict, at: tuple) -> list:
    """The command, args and env (names and values) fields of container `c` at `at`."""
    out = []
    for part in ("command", "args"):
        items = c.get(part)
        out += [(at + (part, j), STRING, x)
                for j, x in enumerate(items if isinstance(items, list) else ())]
    return out + _list_items(c.get("env"), at + ("env",), (("name", STRING), ("value", STRING)))


# the workload's count fields, int32 wherever they stand: a Deployment's, a Job's, a
# JobSet replicated job's and its Job's, a KubeRay worker group's (their CRDs: format int32)
COUNTS = ("replicas", "parallelism", "completions", "minReplicas", "maxReplicas")


def workload_fields(obj: dict, metadata: bool = True, specs: list = ()) -> list:
    """[(path, API type, value)] of the workload's own scalars krm-fn reads: its labels and
    annotations (unless not `metadata`: a Pod's are its pod spec's, pod_fields), and the
    COUNTS of `spec` and of every mapping on the way to each pod spec path of `specs`
    (`spec.replicatedJobs[0].replicas`, `spec.jobTemplate.spec.parallelism`,
    `spec.workerGroupSpecs[1].maxReplicas`; a pod spec's own fields are pod_fields')."""
    meta = obj.get("metadata")
    out = []
    if isinstance(meta, dict) and metadata:
        for part in ("labels", "annotations"):
            out += _map_values(meta.get(part), ("metadata", part), STRING)
    seen = set()
    for path in [("spec",)] + [tuple(p[:n]) for p in specs for n in range(2, len(p) + 1)]:
        if path in seen:
            continue
        seen.add(path)
        here = get_path(obj, path)
        if isinstance(here, dict):
            out += [(path + (f,), INT32, here[f]) for f in COUNTS if f in here]
    return out


_MAPS = ("labels", "annotations", "nodeSelector")
MAPS_SRC = ("kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/"
            "validation.go ValidateLabels, staging/src/k8s.io/apimachinery/pkg/api/validation/"
            "objectmeta.go ValidateAnnotations; https://kubernetes.io/docs/concepts/overview/"
            "working-with-objects/labels/#syntax-and-character-set")


def map_errors(fields: list, what: str) -> list:
    """[(path, message)] of the entries of `fields` ((path, API type, value) as pod_fields
    and workload_fields give them) in a `labels`, `annotations` or `nodeSelector` map whose
    key or value the API server refuses: a label or node selector key that is no qualified
    name (content.IsLabelKey) or a value that is no label value (IsLabelValue; a value
    that is no string is type_errors' business), an annotation key that is no qualified
    name once lower-cased (ValidateAnnotations). Each message gives the API server's
    error (`metadata.labels: Invalid value: "a b": ...`); `what`: "pod" or "workload"."""
    out = []
    for path, _, value in fields:
        if len(path) < 2 or path[-2] not in _MAPS or path[-1].__class__ is not str:
            continue
        key = path[-1]
        if path[-2] == "annotations":
            said = [(key, m) for m in _key_errors(key.lower())]
        else:
            said = [(key, m) for m in _key_errors(key)]
            if value.__class__ is str and (len(value) > 63
                                           or value and not _label_chars(value)):
                said += [(value, m) for m in label_value_errors(value)]
        # a pod template's labels and annotations are validated at spec.template.labels
        # (ValidatePodTemplateSpec: fldPath.Child("labels")), a workload's at metadata.labels
        where = path_str(path[:1] + tuple(p for p in path[1:-1] if p != "metadata"))
        for shown, msg in said:
            out.append((path, f"{where}: Invalid value: {go_quote(shown)}: "
                              f"{msg}: the API server refuses the {what}; write a "
                              f"{'key' if shown is key else 'value'} it accepts ({MAPS_SRC})"))
    return out


def _key_errors(key: str) -> list:
    """label_key_errors, with a character test first for the common key (`app`,
    `app.kubernetes.io/name`)."""
    name = key.rpartition("/")[2]
    if 0 < len(name) <= 63 and _label_chars(name) and key.count("/") <= 1 and (
            "/" not in key or (0 < len(key) - len(name) - 1 <= 253
                               and _dns_subdomain(key[:-len(name) - 1]))):
        return []
    return label_key_errors(key)


def _written(path: tuple, written: set) -> bool:
    """True when krm-fn wrote `path` or a field on the way to it."""
    for n in range(len(path), 0, -1):
        if path[:n] in written:
            return True
    return False


def type_errors(fields: list, yaml_type, written: set, what: str) -> list:
    """[(path, message)] of `fields` ((path, API type, value) of the input's item) whose
    scalar, as written, has another JSON type than the field (`yaml_type(path)`: the
    scalar's, None when unknown); null is any type's empty value. `written`: the paths
    krm-fn wrote (with their right types), judged by what krm-fn writes instead; `what`:
    "pod" or "workload"."""
    from krm_fn.resourcelist import BOOLS_NULLS, yaml_type as resolve
    out = []
    for path, api, value in fields:
        if value.__class__ is not str:
            continue            # null, or no scalar (the decoder's business)
        if (api is STRING and value and value[0] not in _NUMBER_STARTS
                and value not in BOOLS_NULLS):
            continue            # a string however it is written: no lookup
        if written and _written(path, written):
            continue
        plain = resolve(value, None, _STR_TAG)      # its type if written plain
        if plain == "string" and api is STRING:
            continue
        got = "string" if plain == "string" else yaml_type(path)
        if got is None or got == "null":
            continue
        if got == api[0]:
            if got == "number" and not _in_range(value, api):
                out.append((path, _range_message(path, value, api, what)))
            continue
        out.append((path, _type_message(path, value, got, api, what)))
    return out


_STR_TAG = "tag:yaml.org,2002:str"
# the first characters of go-yaml's numbers (digits, a sign, `.inf`, `.5`)
_NUMBER_STARTS = frozenset("0123456789+-.")
_BITS = {"int32": 31, "int64": 63}


def _in_range(text: str, api: tuple) -> bool:
    """True when the plain number `text` reaches the API server as a whole number (the
    JSON number sigs.k8s.io/yaml writes: numbers.api_json) within the Go integer type."""
    from krm_fn import numbers
    from krm_fn.matching import digits
    j = numbers.api_json(text)
    if j is None or not digits(j.lstrip("-")):
        return False
    bits = _BITS[api[1]]
    return -(2 ** bits) <= int(j) < 2 ** bits


def _range_message(path: tuple, text: str, api: tuple, what: str) -> str:
    from krm_fn import numbers
    return (f"{numbers.brief(text)} is no whole number the API server can hold in "
            f"{path_str(path)}, {api[3]}: it refuses the {what} (\"json: cannot unmarshal "
            f"number {numbers.brief(text)} into Go struct field ... of type {api[1]}\"); "
            f"write a whole number ({TYPES_SRC})")


_GO_JSON = {"boolean": "bool"}      # encoding/json's UnmarshalTypeError names


def _type_message(path: tuple, value, got: str, api: tuple, what: str) -> str:
    from krm_fn import numbers
    text = str(value)
    key = path[-1] if isinstance(path[-1], str) else f"{path[-2]}[{path[-1]}]"
    if got != "string":
        how = f"unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a {got}"
    elif numbers.yaml11_typed(text):    # only quotes make `3` a string
        how = "quoted, which makes it a string to kubectl and the API server"
    else:                               # `many`: a string quoted or not
        how = "a string to kubectl and the API server"
    if api is STRING:
        fix = f"write it quoted: {key}: {go_quote(text)}"
    elif api is BOOL:
        fix = (f"write {key}: {text.lower()} without quotes" if text.lower() in
               ("true", "false") else f"write {key}: true or false without quotes")
    else:
        n = numbers.api_int(text)[0]
        fix = (f"write {key}: {n} without quotes" if n is not None
               else f"write {key} as a whole number without quotes")
    shown = go_quote(text) if got == "string" else numbers.brief(text)
    return (f"{shown} is {how}, but {path_str(path)} is {api[3]}: "
            f"the API server refuses the {what} (server-side apply: \"expected {api[2]}, "
            f"got ...\"; kubectl apply: \"json: cannot unmarshal {_GO_JSON.get(got, got)} "
            f"into Go struct field "
            f"... of type {api[1]}\"); {fix} ({TYPES_SRC})")
