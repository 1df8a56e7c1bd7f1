"""The kubelet's own words: the message a kubelet prints when it refuses its configuration,
for krm-fn's findings to quote (issue #30).

Quoted from Kubernetes 1.35 on (`QUOTED_FROM`): those are the releases the quotes are
checked against, by running the kubelet's own code on the configurations krm-fn emits and
on generated ones (tests/harness, `harness kubeletconfig`, at v1.35.4, v1.36.3 and v1.37.2;
docs/kubelet-data.md, "Checked against the kubelet's code"). For an older version a finding
keeps krm-fn's own words only.

Besides `says`, the exact Go messages a finding needs, ported from their source:

- `decode_error`: what decoding a configuration file says about a value of the wrong type
  (`failed to decode: json: cannot unmarshal ...`; sigs.k8s.io/json, a fork of Go's
  encoding/json, as pkg/kubelet/kubeletconfig/util/codec/codec.go runs it; a
  metav1.Duration's string goes through Go's time.ParseDuration);
- `duration_error`: Go's time.ParseDuration (time/format.go), exactly: digits are ASCII,
  units ns, us, µs (U+00B5), μs (U+03BC), ms, s, m, h, overflow refused;
- `cpuset_error`: k8s.io/utils/cpuset Parse (CPUSet.String is topology.format_cpuset);
- `strconv_error`: Go's strconv ParseBool / Atoi errors (`strconv.ParseBool: parsing "x":
  invalid syntax`).

Go's own messages (time, strconv, encoding/json) are those of the Go release the harness is
built with (Go 1.26); they read the same since Go 1.15.
"""
from __future__ import annotations

from krm_fn.matching import LazyPattern

QUOTED_FROM = (1, 35)
UPSTREAM = "kubernetes/kubernetes"

# the upstream files the quoted messages come from
CODEC = "pkg/kubelet/kubeletconfig/util/codec/codec.go"
DEFAULTS = "pkg/kubelet/apis/config/v1beta1/defaults.go"
VALIDATION = "pkg/kubelet/apis/config/validation/validation.go"
VALIDATION_LINUX = "pkg/kubelet/apis/config/validation/validation_linux.go"
RESERVED_MEMORY_VALIDATION = "pkg/kubelet/apis/config/validation/validation_reserved_memory.go"
SERVER = "cmd/kubelet/app/server.go"
CPU_MANAGER = "pkg/kubelet/cm/cpumanager/cpu_manager.go"
CPU_POLICY_OPTIONS = "pkg/kubelet/cm/cpumanager/policy_options.go"
CPU_POLICY_STATIC = "pkg/kubelet/cm/cpumanager/policy_static.go"
CPU_POLICY_NONE = "pkg/kubelet/cm/cpumanager/policy_none.go"
TOPOLOGY_POLICY_OPTIONS = "pkg/kubelet/cm/topologymanager/policy_options.go"
TOPOLOGY_MANAGER = "pkg/kubelet/cm/topologymanager/topology_manager.go"
MEMORY_POLICY_STATIC = "pkg/kubelet/cm/memorymanager/policy_static.go"
MEMORY_MANAGER = "pkg/kubelet/cm/memorymanager/memory_manager.go"
NODE_ALLOCATABLE = "pkg/kubelet/cm/node_container_manager_linux.go"
EVICTION_HELPERS = "pkg/kubelet/eviction/helpers.go"
FEATURE_GATE = "k8s.io/component-base/featuregate/feature_gate.go"


def quoted(version) -> bool:
    """Whether findings for Kubernetes `version` ((major, minor)) quote the kubelet."""
    return tuple(version) >= QUOTED_FROM


def says(version, message: str, source: str) -> str:
    """`: "<message>" (kubernetes/kubernetes <source>)`, to follow the words of a finding that
    say the kubelet refuses, for a version whose messages are quoted; else "". The message
    is quoted verbatim (no escaping): a reader can search the kubelet's log for it."""
    if not quoted(version):
        return ""
    where = source if source.startswith("k8s.io/") else f"{UPSTREAM} {source}"
    return f": \"{message}\" ({where})"


_QUOTE = LazyPattern(r': ".*?" \((?:kubernetes/kubernetes |k8s\.io/)[^)]*\)')


def quotes_in(message: str) -> list[str]:
    """The `says` quotes a finding's message holds, each as `says` wrote it."""
    return _QUOTE.findall(message)


# --- Go's strconv and time messages ----------------------------------------------------

def go_quote(s: str) -> str:
    """strconv.Quote for the strings krm-fn quotes: printable characters as they are, `"`
    and `\\` escaped, the usual escapes, other control characters as \\x.. / \\u...."""
    out = ['"']
    for c in s:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c.isprintable() or c == " ":
            out.append(c)
        else:
            short = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                     "\t": "\\t", "\v": "\\v"}.get(c)
            n = ord(c)
            out.append(short or (f"\\x{n:02x}" if n < 0x80 else
                                 f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"))
    return "".join(out) + '"'


def strconv_error(func: str, text: str, why: str = "invalid syntax") -> str:
    """strconv.NumError.Error(): `strconv.ParseBool: parsing "x": invalid syntax`."""
    return f"strconv.{func}: parsing {go_quote(text)}: {why}"


_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False,
             "False": False}


def parse_bool(text: str) -> tuple[bool | None, str | None]:
    """strconv.ParseBool: (value, None), or (None, its error message)."""
    if text in _GO_BOOLS:
        return _GO_BOOLS[text], None
    return None, strconv_error("ParseBool", text)


def atoi(text: str) -> tuple[int | None, str | None]:
    """strconv.Atoi on 64-bit Go: an optional sign and ASCII digits (underscores are not
    allowed in base 10), in range of int64: (value, None), or (None, its error message)."""
    s = text[1:] if text[:1] in ("+", "-") else text
    if s == "" or s.strip("0123456789"):
        return None, strconv_error("Atoi", text)
    n = int(text)
    if not -2 ** 63 <= n < 2 ** 63:
        return None, strconv_error("Atoi", text, "value out of range")
    return n, None


def time_quote(s: str) -> str:
    """Go's time package quote(): `"` and `\\` escaped; each byte of a non-ASCII or control
    character as \\xNN (time/format.go)."""
    out = ['"']
    for c in s:
        if ord(c) >= 0x80 or c < " ":
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + c if c in ('"', "\\") else c)
    return "".join(out) + '"'


_UNITS = {b"ns": 1, b"us": 10 ** 3, "µs".encode(): 10 ** 3, "μs".encode(): 10 ** 3,
          b"ms": 10 ** 6, b"s": 10 ** 9, b"m": 60 * 10 ** 9, b"h": 3600 * 10 ** 9}
_DIGIT = b"0123456789"


def duration_error(text: str) -> str | None:
    """The error of Go's time.ParseDuration(text) (time/format.go), or None when it parses:
    `time: invalid duration "x"`, `time: missing unit in duration "1"`, `time: unknown unit
    "d" in duration "1d"`. Works on the UTF-8 bytes, as Go does."""
    return parse_duration(text)[1]


def parse_duration(text: str) -> tuple[int | None, str | None]:
    """Go's time.ParseDuration(text): (nanoseconds, None) or (None, its error)."""
    orig, s = text, text.encode("utf-8", "surrogatepass")

    def err(what: str) -> tuple[None, str]:
        return None, f"time: {what} {time_quote(orig)}"
    neg = False
    if s[:1] in (b"-", b"+"):
        neg, s = s[:1] == b"-", s[1:]
    if s == b"0":
        return 0, None
    if s == b"":
        return err("invalid duration")
    d = 0
    while s:
        if not (s[0] == 0x2E or 0x30 <= s[0] <= 0x39):
            return err("invalid duration")
        i, v = 0, 0
        while i < len(s) and s[i] in _DIGIT:
            if v > (1 << 63) // 10:
                return err("invalid duration")
            v = v * 10 + s[i] - 0x30
            if v > 1 << 63:
                return err("invalid duration")
            i += 1
        pre, s = i > 0, s[i:]
        f, scale, post = 0, 1.0, False
        if s[:1] == b".":
            s = s[1:]
            j, overflow = 0, False
            while j < len(s) and s[j] in _DIGIT:
                if not overflow:
                    if f > ((1 << 63) - 1) // 10:
                        overflow = True
                    else:
                        y = f * 10 + s[j] - 0x30
                        if y > 1 << 63:
                            overflow = True
                        else:
                            f, scale = y, scale * 10
                j += 1
            post, s = j > 0, s[j:]
        if not pre and not post:
            return err("invalid duration")
        i = 0
        while i < len(s) and s[i] != 0x2E and s[i] not in _DIGIT:
            i += 1
        if i == 0:
            return err("missing unit in duration")
        unit_bytes, s = s[:i], s[i:]
        unit = _UNITS.get(unit_bytes)
        if unit is None:
            u = unit_bytes.decode("utf-8", "surrogateescape")
            return err(f"unknown unit {time_quote(u)} in duration")
        if v > (1 << 63) // unit:
            return err("invalid duration")
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > 1 << 63:
                return err("invalid duration")
        d += v
        if d > 1 << 63:
            return err("invalid duration")
    if not neg and d > (1 << 63) - 1:
        return err("invalid duration")
    return (-d if neg else d), None


def duration_string(ns: int) -> str:
    """time.Duration.String(): "1m30s", "500ms", "1µs", "0s", "-1h0m0s"."""
    def frac(u: int, prec: int) -> tuple[int, str]:
        digits = str(u % 10 ** prec).rjust(prec, "0").rstrip("0") if prec else ""
        return u // 10 ** prec, ("." + digits) if digits else ""
    neg, u = ns < 0, abs(ns)
    if u < 10 ** 9:
        if u == 0:
            return "0s"
        unit, prec = (("ns", 0) if u < 10 ** 3 else ("µs", 3) if u < 10 ** 6 else ("ms", 6))
        whole, f = frac(u, prec)
        text = f"{whole}{f}{unit}"
    else:
        seconds, f = frac(u, 9)
        text = f"{seconds % 60}{f}s"
        minutes = seconds // 60
        if minutes:
            text = f"{minutes % 60}m{text}"
            if minutes // 60:
                text = f"{minutes // 60}h{text}"
    return ("-" if neg else "") + text


# --- k8s.io/utils/cpuset ---------------------------------------------------------------

def cpuset_error(text: str) -> str | None:
    """The error of k8s.io/utils/cpuset Parse(text), or None when it parses: elements split
    at ",", each `N` or `N-M` (split at the first "-") read by strconv.Atoi, `invalid range
    "5-3" (5 > 3)` for a reversed range."""
    if text == "":
        return None
    for r in text.split(","):
        lo, dash, hi = r.partition("-")
        start, e = atoi(lo)
        if e:
            return e
        if dash:
            end, e = atoi(hi)
            if e:
                return e
            if start > end:
                return f"invalid range {go_quote(r)} ({start} > {end})"
    return None


# --- decoding: sigs.k8s.io/json (encoding/json) ------------------------------------------

# the package name reflect gives a type of KubeletConfiguration's imports (types.go's
# aliases: metav1, logsapi, tracingapi and v1 are packages named v1); a type of its own
# package is v1beta1.<Name>
_PACKAGES = {"metav1": "v1", "logsapi": "v1", "tracingapi": "v1", "v1": "v1"}
_BUILTIN = {"string", "bool", "int32", "int64", "float64", "int", "uint32", "uint64"}
_INT_RANGE = {"int32": 2 ** 31, "int64": 2 ** 63}


def go_type(go: str) -> str:
    """The reflect type name Go's JSON errors print for a field declared `go` in types.go:
    pointers dropped, same-package types as v1beta1.X, import aliases as their package
    names (`*tracingapi.TracingConfiguration` -> `v1.TracingConfiguration`)."""
    go = go.lstrip("*")
    if go.startswith("[]"):
        return "[]" + go_type(go[2:])
    if go.startswith("map["):
        key, _, value = go[4:].partition("]")
        return f"map[{go_type(key)}]{go_type(value)}"
    if go in _BUILTIN:
        return go
    pkg, dot, name = go.rpartition(".")
    return f"{_PACKAGES.get(pkg, pkg)}.{name}" if dot else f"v1beta1.{go}"


def struct_name(go: str) -> str:
    """The struct name Go's JSON errors print for the fields inside a value of type `go`."""
    return go_type(go).lstrip("[]*").rpartition(".")[2]


def _json_kind(value: object, go: str) -> str:
    """How encoding/json names the JSON value it could not store in a `go` value: object,
    array, string, bool, number, or `number <literal>` for a number an integer type cannot
    hold (the number as the kubelet's YAML-to-JSON conversion writes it)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if go in _INT_RANGE:
        return f"number {_json_number(value)}"
    return "number"


def _json_number(value) -> str:
    """A YAML number as sigs.k8s.io/yaml writes it in JSON: an int as is, a float as Go's
    json.Marshal writes a float64 (shortest repr, exponent from 1e21)."""
    if isinstance(value, int):
        return str(value)
    f = float(value)
    if f.is_integer() and abs(f) < 1e21:
        return str(int(f))
    text = repr(f)
    if "e" in text:
        mant, _, exp = text.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        text = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
    return text


def value_fits(value: object, go: str) -> bool:
    """Whether encoding/json stores JSON `value` in a Go value of (reflect) type `go`
    without an error, for the scalar types (and whether the value has the container's
    shape, for the others). A null always fits."""
    if value is None:
        return True
    if go.startswith("[]"):
        return isinstance(value, list)
    if go.startswith("map["):
        return isinstance(value, dict)
    if go == "bool":
        return isinstance(value, bool)
    if go == "string":
        return isinstance(value, str)
    if go in _INT_RANGE:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if isinstance(value, float) and not value.is_integer():
            return False
        return -_INT_RANGE[go] <= int(value) < _INT_RANGE[go]
    if go == "float64":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, dict)          # a struct


# krm-fn's simple types (krm_fn.node.upstream `fields`) of a named type's underlying kind
_UNDERLYING = {"string": "string", "bool": "bool", "int32": "int32", "int64": "int64",
               "float": "float64"}


def decode_error(struct: str, path: str, value: object, go: str,
                 kind: str | None = None) -> str | None:
    """The kubelet's message for `value` at `path` (JSON names joined with ".", no map keys
    or list indexes, as Go's errors print it) inside struct `struct`, whose Go type is `go`
    as types.go declares it and `kind` its simple type in krm-fn's data (for a named type
    such as KubeletAuthorizationMode, a string); None when the kubelet decodes it (a scalar
    of the right kind, a container of the right shape: its elements are judged one by one;
    a null, except in a metav1.Duration that is not a pointer, whose UnmarshalJSON parses
    it as "")."""
    if go.lstrip("*") == "metav1.Duration":
        if isinstance(value, str):
            why = duration_error(value)
            return None if why is None else f"failed to decode: {why}"
        if value is None:   # UnmarshalJSON("null") reads "" unless the field is a pointer
            return None if go.startswith("*") else f"failed to decode: {duration_error('')}"
        target = "string"           # metav1.Duration.UnmarshalJSON reads a string first
    else:
        target = go_type(go)
        if value_fits(value, _UNDERLYING.get(kind or "", target)):
            return None
    return (f"failed to decode: json: cannot unmarshal "
            f"{_json_kind(value, _UNDERLYING.get(kind or '', target))} into Go "
            f"struct field {struct}.{path} of type {target}")


def nested_unknown(config: dict, fields: dict, tree: dict) -> list[tuple[str, dict]]:
    """[(path, the names known there)] of the unknown fields inside the objects whose type is
    another package's (logging, tracing, registerWithTaints' taints: krm-fn's field data,
    `fields`, does not go into them), by the field names strict decoding knows (`tree`:
    upstream.kubelet_defaults `fields`, from the kubelet's own types): the kubelet ignores
    them."""
    out: list[tuple[str, dict]] = []

    def walk(path: str, value, known) -> None:
        if isinstance(value, list):
            for i, x in enumerate(value):
                walk(f"{path}[{i}]", x, known)
        elif isinstance(value, dict) and isinstance(known, dict):
            for key, x in value.items():
                if str(key) not in known:
                    out.append((f"{path}.{key}", known))
                else:
                    walk(f"{path}.{key}", x, known[str(key)])
    for name, value in config.items():
        spec = fields.get(name)
        if spec is None or spec["type"] == "any":
            continue
        items = spec.get("items") or {}
        if (spec["type"] == "object" and not spec.get("fields")) or (
                spec["type"] == "list" and items.get("type") == "object"
                and not items.get("fields")):
            walk(name, value, tree.get(name))
    return out
