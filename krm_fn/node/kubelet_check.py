"""Check the KubeletConfiguration a kubelet of a given version will run, whatever its source.

`check(config, version)` checks a KubeletConfiguration (plain data: the plan merged onto the
baseline, `NodePlan.merged`) against the upstream facts of that version
(krm_fn.node.upstream, generated from the Kubernetes source):

- every field: unknown to the version (did-you-mean), not yet added, wrong type (the kubelet
  decodes the file strictly by type: `maxPods: lots` stops it; an unknown field is ignored,
  so a misspelled setting silently does nothing) — kubernetes/kubernetes
  staging/src/k8s.io/kubelet/config/v1beta1/types.go;
- `featureGates`: unknown or removed gates (`unrecognized feature gate`), a value that is not
  true/false, a gate locked to its default set against it (`cannot set feature gate ... to
  ..., feature is locked to ...`) — k8s.io/component-base/featuregate/feature_gate.go;
- `cpuManagerPolicyOptions` / `topologyManagerPolicyOptions` whose group gate is off
  (beta options need CPUManagerPolicyBetaOptions / TopologyManagerPolicyBetaOptions, alpha
  ones the *AlphaOptions gate) — pkg/kubelet/cm/cpumanager/policy_options.go,
  pkg/kubelet/cm/topologymanager/policy_options.go;
- eviction maps: unknown signals, thresholds that are not a positive quantity or a
  percentage from 0% to 100%, grace periods that are not positive durations, an
  `evictionSoft` signal without its
  `evictionSoftGracePeriod` (`grace period must be specified for the soft eviction
  threshold`; a grace period without a threshold is dead, a warning) —
  pkg/kubelet/eviction/helpers.go ParseThresholdConfig;
- kubeReserved + systemReserved (+ hard eviction memory) above the node's capacity
  (`Expected capacity >= reservation`, pkg/kubelet/cm/node_container_manager_linux.go);
- from 1.35, with the kubelet's own defaults (upstream.kubelet_defaults): gates left on
  with a dependency off and the option gates as AllAlpha / AllBeta leave them
  (krm_fn.node.kubelet_gates), unknown fields inside other packages' types, what
  ValidateKubeletConfiguration refuses (krm_fn.node.kubelet_validation), and what the
  kubelet refuses at start-up in the file alone (krm_fn.node.kubelet_start: qosReserved,
  every eviction threshold, NewMainKubelet's checks).

From 1.35 each finding quotes the kubelet's own message (krm_fn.node.kubelet_says), as the
kubelet's code at v1.35.4, v1.36.3 and v1.37.2 prints it (tests/test_kubelet_config_harness.py
runs that code on the same configurations). Findings are `Finding(severity, field,
message)` with `field` a dotted path inside the KubeletConfiguration; the caller maps it to
where the value came from.
"""
from __future__ import annotations


from collections import namedtuple

from krm_fn import quantity
from krm_fn.quantity import NANO
from krm_fn.node import fields, kubelet_gates, kubelet_says, kubelet_start
from krm_fn.node import upstream
from krm_fn.results import ERROR, WARNING

HEADER = ("apiVersion", "kind")
REFERENCE = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/"
GATES_DOC = "https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/"
EVICTION_DOC = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
# Eviction signals of a Linux kubelet
SIGNALS = kubelet_start.EVICTION_SIGNALS
# The eviction maps whose keys are signals, and the reservation maps (krm_fn.node.fields).
EVICTION_MAPS = tuple(f.name for f in fields.FIELDS
                      if f.name.startswith("eviction") and f.type.startswith("map["))
RESERVATIONS = tuple(f.name for f in fields.FIELDS if f.shape == "quantity-map")
_INT_RANGE = {"int32": 2 ** 31, "int64": 2 ** 63}


class Finding(namedtuple("Finding", "severity field message unknown", defaults=(False,))):
    """One problem: `severity` ERROR (the kubelet refuses to start, or the setting cannot
    work) or WARNING; `field` the dotted path inside the KubeletConfiguration (e.g.
    `featureGates.Foo`, `maxPods`); `message` names the field, the version and the fix;
    `unknown`: the field is not in the version's KubeletConfiguration (the kubelet ignores
    it) rather than refused."""

    __slots__ = ()


def _vs(version) -> str:
    return upstream.version_str(version)


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _guess(name: str, known) -> str:
    """ "; did you mean X?" for the closest known name (case-insensitive first), or ""."""
    import difflib      # only on a finding: keeps it off the start-up path
    lower = {k.lower(): k for k in known}
    if name.lower() in lower:
        return f"; did you mean {lower[name.lower()]}?"
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def check(config: dict, version, node_memory: int | None = None,
          node_cpus: int | None = None) -> list[Finding]:
    """Findings for KubeletConfiguration `config` (plain data, apiVersion/kind ignored) run
    by a kubelet of `version` (major, minor; one of the supported versions,
    krm_fn.node.upstream.VERSIONS).
    `node_memory` (bytes) / `node_cpus` (logical CPUs): the node's capacity, for the
    reservation check (None: not checked). Never raises for bad data."""
    data = upstream.load(version)
    out: list[Finding] = []
    for name, value in config.items():
        if name in HEADER:
            continue
        spec = data.fields.get(name)
        if spec is None:
            out.append(_unknown_field(name, version, data))
        elif name == "featureGates":
            out.extend(_gates(value, version, data))
        else:
            out.extend(_typed(name, value, spec, version))
    defaults = upstream.kubelet_defaults(tuple(version))
    if defaults is not None:
        out.extend(Finding(ERROR, path, f"{path} is not a field the kubelet of Kubernetes "
                           f"{_vs(version)} knows{_guess(path.rpartition('.')[2], known)}; it "
                           f"ignores it", unknown=True) for path, known in
                   kubelet_says.nested_unknown(config, data.fields, defaults["fields"]))
    gates = config.get("featureGates")
    enabled = kubelet_gates.enabled_gates(data, gates if isinstance(gates, dict) else {})
    out.extend(Finding(ERROR, field, message) for field, message in
               kubelet_gates.dependency_problems(gates, enabled, version))
    # an unknown field is only ignored; a type error stops decoding, a gate defaulting
    decodes = not any(f.severity == ERROR and (not f.unknown or f.field.startswith(
        "featureGates")) for f in out)
    out.extend(Finding(ERROR, field, message) for field, message in
               kubelet_gates.option_problems(config, version, data, enabled))
    if decodes and defaults is not None:    # the kubelet gets as far as validation
        from krm_fn.node import kubelet_validation
        for field, message, source in (
                kubelet_validation.validate(config, version, enabled, defaults)
                + kubelet_start.reservation_errors(config)
                + kubelet_start.resource_managers(config, version, enabled, defaults,
                                                  node_memory, node_cpus)
                + kubelet_start.main_kubelet(config, version, enabled, defaults)):
            out.append(Finding(ERROR, field, f"{field}: the kubelet of Kubernetes "
                               f"{_vs(version)} refuses the configuration"
                               f"{kubelet_says.says(version, message, source)}"))
        if config.get("cpuManagerPolicy") == "static":      # NewStaticPolicy's options
            from krm_fn.node import options as cpu_options
            raw = config.get("cpuManagerPolicyOptions")
            opts = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
            topology = config.get("topologyManagerPolicy")
            out.extend(Finding(ERROR, "cpuManagerPolicyOptions", problem) for problem in
                       cpu_options.check_cpu_options(opts, version, topology if isinstance(
                           topology, str) else defaults["defaults"]["topologyManagerPolicy"])[1])
    evictions = _eviction(config, version) + _thresholds(config, version)
    if kubelet_says.quoted(version):
        evictions = _quoting(evictions, kubelet_start.eviction_errors(config), version,
                             kubelet_says.EVICTION_HELPERS, "refuses to start")
    out.extend(evictions)
    out.extend(_reservations(config, version, node_memory, node_cpus))
    out.extend(Finding(ERROR, field, message)
               for field, message in kubelet_start.qos_findings(config, version))
    return out


def _unknown_field(name: str, version, data) -> Finding:
    since = upstream.field_since(name, version)
    if since is not None and since > tuple(version):
        return Finding(ERROR, name, f"{name} does not exist in Kubernetes {_vs(version)}: the "
                       f"field was added in {_vs(since)}; remove it or raise "
                       f"kubernetesVersion", unknown=True)
    return Finding(ERROR, name, f"{name} is not a KubeletConfiguration field in Kubernetes "
                   f"{_vs(version)}{_guess(name, data.fields)} (the kubelet ignores unknown "
                   f"fields, so the setting has no effect; {REFERENCE})", unknown=True)


def _scalar_ok(kind: str, v: object) -> bool:
    if kind == "bool":
        return isinstance(v, bool)
    if kind in _INT_RANGE:
        return isinstance(v, int) and not isinstance(v, bool) \
            and -_INT_RANGE[kind] <= v < _INT_RANGE[kind]
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "string":
        return isinstance(v, str)
    if kind == "duration":
        return isinstance(v, str) and kubelet_says.duration_error(v) is None
    return True


_EXPECT = {"bool": "true or false", "int32": "a whole number",
           "int64": "a whole number", "float": "a number", "string": "a string",
           "duration": "a Go duration string such as 10s or 1m30s",
           "string-map": "a mapping of string to string", "bool-map": "a mapping to true/false",
           "quantity-map": "a mapping of resource name to quantity",
           "string-list": "a list of strings", "list": "a list", "map": "a mapping",
           "object": "a mapping"}


TOP_STRUCT = "KubeletConfiguration"
# the Go element type of a container kind whose data gives none (string-list: []string)
_ELEMENT = {"string-map": "string", "bool-map": "bool", "string-list": "string"}


def _typed(path: str, v: object, spec: dict, version, depth: int = 0,
           struct: str = TOP_STRUCT, gopath: str | None = None) -> list[Finding]:
    """Type findings for value `v` of field `path` with generated type `spec`. From 1.35
    each quotes what decoding the file says (krm_fn.node.kubelet_says.decode_error): for
    the value itself, or for its first element of the wrong type; `struct` is the Go struct
    holding the field and `gopath` the field's path as Go's errors print it (no indexes)."""
    kind = spec["type"]
    gopath = path if gopath is None else gopath

    def bad(value: object = v, go: str = spec["go"]) -> list[Finding]:
        error = kubelet_says.decode_error(struct, gopath, value, go,
                                          kind if value is v else None)
        said = "" if error is None else kubelet_says.says(version, error, kubelet_says.CODEC)
        return [Finding(ERROR, path, f"{path} must be {_EXPECT.get(kind, kind)} "
                        f"({spec['go']}), found {_short(v)}: the kubelet of Kubernetes "
                        f"{_vs(version)} cannot decode it and refuses to start{said}")]

    def first_bad(values, element: str, ok) -> list[Finding]:
        for x in values:
            if not ok(x):
                return bad(x, element)
        return []
    if v is None and kind == "duration" and not spec["go"].startswith("*"):
        return bad()                        # metav1.Duration reads null as ""
    if v is None or kind == "any":          # "any": a type of another package
        return []
    if kind in ("string-map", "bool-map", "quantity-map", "map", "object"):
        if not isinstance(v, dict):
            return bad()
        ordered = [v[k] for k in sorted(v, key=str)]    # the kubelet's YAML-to-JSON order
        if kind in ("string-map", "bool-map"):
            element = _ELEMENT[kind]
            return first_bad(ordered, element, lambda x: kubelet_says.value_fits(x, element))
        if kind == "quantity-map" and not all(
                isinstance(x, (str, int, float)) and not isinstance(x, bool)
                for x in v.values()):
            return bad()
        if kind == "map":                   # map[string][]string
            element = kubelet_says.go_type(spec["go"]).partition("]")[2]
            out = first_bad(ordered, element, lambda x: kubelet_says.value_fits(x, element))
            return out or first_bad([y for x in ordered for y in x], "string",
                                    lambda y: isinstance(y, str))
        nested = spec.get("fields")
        if kind == "object" and nested and depth < 4:
            out: list[Finding] = []
            inner = kubelet_says.struct_name(spec["go"])
            for key, x in v.items():
                sub = nested.get(str(key))
                if sub is None:
                    out.append(Finding(ERROR, f"{path}.{key}", f"{path}.{key} is not a field "
                               f"of {spec['go']} in Kubernetes {_vs(version)}"
                               f"{_guess(str(key), nested)}; the kubelet ignores it",
                               unknown=True))
                else:
                    out.extend(_typed(f"{path}.{key}", x, sub, version, depth + 1, inner,
                                      f"{gopath}.{key}"))
            return out
        return []
    if kind in ("string-list", "list"):
        if not isinstance(v, list):
            return bad()
        if kind == "string-list":
            return first_bad(v, "string", lambda x: isinstance(x, str) or x is None)
        items, out = spec["items"], []
        for i, x in enumerate(v):
            if items["type"] == "object" and x is not None and not isinstance(x, dict):
                return bad(x, items["go"])
            out.extend(_typed(f"{path}[{i}]", x, items, version, depth + 1, struct, gopath))
        return out
    return [] if _scalar_ok(kind, v) else bad()


def _gates(value: object, version, data) -> list[Finding]:
    """featureGates: each gate known to `version`, true/false, not against its lock."""
    vs = _vs(version)

    def undecodable(v: object, go: str) -> str:
        error = kubelet_says.decode_error(TOP_STRUCT, "featureGates", v, go)
        return kubelet_says.says(version, error, kubelet_says.CODEC) if error else ""
    if not isinstance(value, dict):
        return [Finding(ERROR, "featureGates", f"featureGates must be a mapping of gate name "
                        f"to true/false, found {_short(value)}: the kubelet of Kubernetes "
                        f"{vs} cannot decode it and refuses to start"
                        f"{undecodable(value, 'map[string]bool')}")]
    out = []
    for gate, on in value.items():
        path = f"featureGates.{gate}"
        spec = data.gates.get(gate)
        if spec is None and isinstance(on, bool):
            out.append(_unknown_gate(str(gate), path, version, data))
            continue
        if not isinstance(on, bool):        # decoding fails before any gate is looked up
            out.append(Finding(ERROR, path, f"feature gate {gate} must be true or false, "
                               f"found {_short(on)}: the kubelet of Kubernetes {vs} cannot "
                               f"decode featureGates and refuses to start"
                               f"{undecodable(on, 'bool')}; write {gate}: "
                               f"true or {gate}: false"))
            if spec is None:
                out.append(_unknown_gate(str(gate), path, version, data))
            continue
        if spec["locked"] and on != spec["default"]:
            default = str(spec["default"]).lower()
            said = kubelet_gates.gate_refusal(version, f"cannot set feature gate {gate} to "
                                          f"{str(on).lower()}, feature is locked to {default}")
            out.append(Finding(ERROR, path, f"feature gate {gate} is {spec['stage']} and "
                               f"locked to {default} in Kubernetes {vs}: "
                               f"the kubelet refuses to start with {gate}: "
                               f"{str(on).lower()}{said}; remove it"))
    return out


def _unknown_gate(gate: str, path: str, version, data) -> Finding:
    """A gate the version's data does not list: removed, misspelled, or (when the data's
    gates were not generated from that release, `data.gates_exact` false) maybe new."""
    vs = _vs(version)
    removed = data.removed_gates.get(gate)
    guess = "" if removed else _guess(gate, data.gates)
    why = (f"was removed in Kubernetes {removed}" if removed else
           f"is not a feature gate of the Kubernetes {vs} kubelet{guess}")
    if not removed and not guess and not data.gates_exact:
        dv = _vs(data.version)
        return Finding(WARNING, path, f"feature gate {gate} {why} as far as krm-fn knows: "
                       f"its {dv} gate list was not generated from the {dv} source "
                       f"({data.source}), so a gate new in {dv} is missing from it; if "
                       f"this is not one, the kubelet refuses to start (unrecognized "
                       f"feature gate) ({GATES_DOC})", unknown=True)
    said = kubelet_gates.gate_refusal(version, f"unrecognized feature gate: {gate}") or \
        " (unrecognized feature gate)"
    return Finding(ERROR, path, f"feature gate {gate} {why}: the kubelet of {vs} refuses to "
                   f"start{said}; remove it ({GATES_DOC})", unknown=True)


def _quoting(findings: list[Finding], said: list[tuple[str, str]], version, source: str,
             refuses: str) -> list[Finding]:
    """`findings` with the kubelet's words `said` ([(field, message)]) added to the finding of
    the same field, or as a finding of their own where krm-fn had none for it (the kubelet
    refuses what krm-fn's own check let through: fail closed)."""
    out = list(findings)
    for field, message in said:
        quote = kubelet_says.says(version, message, source)
        at = next((i for i, f in enumerate(out)
                   if f.field == field and f.severity == ERROR), None)
        if at is None:
            out.append(Finding(ERROR, field, f"{field}: the kubelet of Kubernetes "
                               f"{_vs(version)} {refuses}{quote}"))
        elif quote not in out[at].message:      # after the words that say it refuses
            words = f" {refuses}"
            text = out[at].message
            text = (text.replace(words, words + quote, 1) if words in text
                    else f"{text}; the kubelet says{quote}")
            out[at] = out[at]._replace(message=text)
    return out


def _eviction(config: dict, version) -> list[Finding]:
    """Unknown signals in the eviction maps; soft thresholds and grace periods in pairs."""
    out = []
    for name in EVICTION_MAPS:
        m = config.get(name)
        if not isinstance(m, dict):
            continue
        for signal in m:
            if signal not in SIGNALS:
                out.append(Finding(ERROR, f"{name}.{signal}", f"{name}: {signal} is not an "
                                   f"eviction signal{_guess(str(signal), SIGNALS)}: the "
                                   f"kubelet of Kubernetes {_vs(version)} refuses to start "
                                   f"({EVICTION_DOC})"))
    soft = config.get("evictionSoft") if isinstance(config.get("evictionSoft"), dict) else {}
    grace = config.get("evictionSoftGracePeriod")
    grace = grace if isinstance(grace, dict) else {}
    for signal in soft:
        if signal not in grace:
            out.append(Finding(ERROR, f"evictionSoft.{signal}", f"evictionSoft sets {signal} "
                               f"without evictionSoftGracePeriod.{signal}: the kubelet of "
                               f"Kubernetes {_vs(version)} refuses to start; add "
                               f"evictionSoftGracePeriod.{signal}, e.g. \"1m30s\""))
    for signal in grace:
        if signal not in soft:
            out.append(Finding(WARNING, f"evictionSoftGracePeriod.{signal}",
                               f"evictionSoftGracePeriod sets {signal} without an "
                               f"evictionSoft threshold for it: the kubelet of Kubernetes "
                               f"{_vs(version)} ignores the grace period; add "
                               f"evictionSoft.{signal} or remove it"))
    return out


def _threshold_problem(value: str) -> str | None:
    """Why the kubelet refuses eviction threshold `value`, or None: a percentage between 0%
    and 100%, or a positive quantity (pkg/kubelet/eviction/helpers.go
    parseThresholdStatement; "0%" and "100%" mean no threshold)."""
    if value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            return "not a percentage"
        return None if 0 <= percent <= 100 else "a percentage must be between 0% and 100%"
    try:
        q = quantity.parse(value)
    except quantity.QuantityError:
        return "not a quantity"
    return None if q.nanos > 0 else "eviction threshold must be positive"


def _thresholds(config: dict, version) -> list[Finding]:
    """evictionHard / evictionSoft values the kubelet cannot parse, evictionSoftGracePeriod
    values that are not positive Go durations (helpers.go parseGracePeriods). Values of the
    wrong type are left to the type check."""
    out = []
    for name in EVICTION_MAPS:      # evictionMinimumReclaim has rules of its own: not here
        m = config.get(name)
        grace = name.endswith("GracePeriod")
        if not isinstance(m, dict) or name.endswith("MinimumReclaim"):
            continue
        for signal, value in m.items():
            if not isinstance(value, str):
                continue
            if grace and (value.startswith("-") or kubelet_says.duration_error(value)):
                out.append(Finding(ERROR, f"{name}.{signal}", f"{name}.{signal} is "
                                   f"{_short(value)}, not a positive Go duration: the kubelet "
                                   f"of Kubernetes {_vs(version)} refuses to start; write "
                                   f"e.g. \"1m30s\""))
            elif not grace and (why := _threshold_problem(value)):
                out.append(Finding(ERROR, f"{name}.{signal}", f"{name}.{signal} is "
                                   f"{_short(value)}, {why}: the kubelet of Kubernetes "
                                   f"{_vs(version)} refuses to start; write a quantity such "
                                   f"as 500Mi or a percentage such as 10% ({EVICTION_DOC})"))
    return out


def _reserved_amount(config: dict, resource: str, parse) -> int:
    """The sum of `resource` over the RESERVATIONS maps, in nano-units (Quantity.nanos)."""
    total = 0
    for name in RESERVATIONS:
        m = config.get(name)
        if isinstance(m, dict) and m.get(resource) is not None:
            total += parse(m[resource]).nanos
    return total


def _reservations(config: dict, version, node_memory: int | None,
                  node_cpus: int | None) -> list[Finding]:
    """kubeReserved + systemReserved (+ evictionHard memory.available) against the node's
    memory and CPUs. Unparseable quantities are left to the type checks."""
    out: list[Finding] = []
    try:
        # memory is memory / scale bytes exactly: a percentage of the node's memory need not
        # be whole bytes
        memory, scale = _reserved_amount(config, "memory", quantity.parse_memory) // NANO, 1
        cpu = _reserved_amount(config, "cpu", quantity.parse_milli_cpu)       # nanocores
        hard = config.get("evictionHard") if isinstance(config.get("evictionHard"),
                                                        dict) else {}
        evict = hard.get("memory.available")
        if isinstance(evict, str) and evict.endswith("%") and node_memory is not None:
            # a percentage is of the node's capacity (evictionapi.GetThresholdQuantity)
            n, d = quantity.ratio(evict[:-1])
            memory, scale = memory * d * 100 + node_memory * n, d * 100
        elif isinstance(evict, str) and not evict.endswith("%"):
            memory += quantity.parse_memory(evict).whole
    except (quantity.QuantityError, ValueError, ZeroDivisionError):
        return out
    if node_memory is not None and memory > node_memory * scale:
        out.append(Finding(ERROR, "kubeReserved.memory", f"kubeReserved.memory + "
                           f"systemReserved.memory + evictionHard[memory.available] is "
                           f"{quantity.trunc_div(memory, scale)} bytes, more than the node's "
                           f"memory ({node_memory} "
                           f"bytes): the kubelet of Kubernetes {_vs(version)} refuses to "
                           f"start{_over_capacity(config, version, node_memory)}; lower the "
                           f"reservations"))
    # reservedSystemCPUs replaces the cpu of both maps (cmd/kubelet/app/server.go).
    if node_cpus is not None and cpu > node_cpus * NANO and not config.get("reservedSystemCPUs"):
        out.append(Finding(ERROR, "kubeReserved.cpu", f"kubeReserved.cpu + systemReserved.cpu "
                           f"is {cpu / NANO:g} CPUs, more than the node's {node_cpus}: the "
                           f"kubelet of Kubernetes {_vs(version)} refuses to start (Expected "
                           f"capacity >= reservation); lower the reservations"))
    return out


def _over_capacity(config: dict, version, node_memory: int) -> str:
    """The quote of the kubelet's Node Allocatable check for memory (kubelet_start
    node_allocatable), or " (Expected capacity >= reservation)" where it cannot be given."""
    message = kubelet_start.node_allocatable(config, node_memory) \
        if kubelet_says.quoted(version) else None
    if message is None:
        return " (Expected capacity >= reservation)"
    return kubelet_says.says(version, message, kubelet_says.NODE_ALLOCATABLE)
