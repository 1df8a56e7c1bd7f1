"""Whole numbers read from the input (env values, command-line arguments, annotations):
the one parser every rule uses, so that no value can stop a render.

A count is ASCII digits only, with ASCII blanks around them allowed (what C's `strtol`,
libgomp's `OMP_NUM_THREADS` parser and Python's `int()` skip), and at most `bound`.
Anything else — digits of another script (`"²"`, `"٢"`, `"४"`: Python's `str.isdigit`
accepts them, `int()` refuses the first and reads the others), a sign, a fraction, an
empty value, more digits than any count has (`int()` refuses more than 4300 digits:
https://docs.python.org/3/library/stdtypes.html#int-max-str-digits) — is not a count,
and the caller warns and leaves the value alone.
"""
from __future__ import annotations

from krm_fn.matching import DIGITS, LazyPattern, digits, span

# The largest count any value krm-fn reads means (threads, workers, CPUs, GiB): 2**20.
# A bigger one is no real count and is reported like a non-number.
MAX_COUNT = 1 << 20
BLANKS = " \t\n\r\f\v"
_DECIMAL = LazyPattern(r"([0-9]{1,16})(?:\.([0-9]{0,16}))?")


def count(text: object, bound: int = MAX_COUNT) -> int | None:
    """The whole number `text` writes (str: ASCII digits, ASCII blanks around them allowed;
    an int: itself), when 0 <= it <= `bound`; else None. Never raises."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text if 0 <= text <= bound else None
    if not isinstance(text, str):
        return None
    body = text.strip(BLANKS)
    if len(body) > 16 or not digits(body):    # [0-9]{1,16}
        return None
    n = int(body)
    return n if n <= bound else None


def decimal(text: object, bound: int = MAX_COUNT) -> tuple[int, bool] | None:
    """(whole part, True when a non-zero fraction follows) of `text` written as ASCII digits
    with at most one `.` (blanks around allowed), at most `bound`; else None. For values
    an engine reads as a float (Ray's `num-cpus`). Never raises."""
    if not isinstance(text, str):
        return None if isinstance(text, bool) or not isinstance(text, int) else (
            (text, False) if 0 <= text <= bound else None)
    m = _DECIMAL.fullmatch(text.strip(BLANKS))
    if m is None:
        return None
    n = int(m.group(1))
    if n > bound:
        return None
    return n, bool((m.group(2) or "").strip("0"))


def shown(text: object, limit: int = 40) -> str:
    """`text` for a message: its repr, cut to `limit` characters with the length said
    (a 5,000-digit value is not copied into every result)."""
    r = repr(text)
    if len(r) <= limit:
        return r
    n = len(text) if isinstance(text, str) else len(r)
    return f"{r[:limit]}… ({n} characters)"


def brief(text: str, limit: int = 40) -> str:
    """`text` itself when short and printable ASCII, else `shown(text)`: how a value is
    quoted inside a longer message."""
    if text and text == text.strip() and len(text) <= limit and text.isascii() \
            and text.isprintable():
        return text
    return shown(text, limit)


# --- plain YAML scalars as kubectl, kustomize and the API server read them -------------------
#
# kubectl, Argo CD and Flux turn YAML into JSON with sigs.k8s.io/yaml (yaml.go YAMLToJSON:
# go.yaml.in/yaml/v2 Unmarshal, then encoding/json); kustomize reads and rewrites numbers
# with go.yaml.in/yaml/v3, whose resolve.go reads integers and floats the same way. Both
# resolve.go (https://github.com/yaml/go-yaml/blob/v2.4.0/resolve.go,
# .../v3.0.1/resolve.go) take a plain scalar that starts with a digit or a sign, drop every
# `_`, and read it with Go's strconv.ParseInt(s, 0, 64) (a sign, then `0x`/`0X` hex, `0o`/`0O`
# or a bare leading `0` octal, `0b`/`0B` binary, else decimal), then ParseUint (up to
# 2^64-1), then as a float when it matches yamlStyleFloat; a scalar that starts with `.` is
# read with ParseFloat; `.inf`, `.nan` and the booleans and nulls come from a table. So
# `010` is 8 (YAML 1.1 octal: https://yaml.org/type/int.html), where YAML 1.2's core schema
# reads 10.
_GO_TABLE = {".nan": float("nan"), ".NaN": float("nan"), ".NAN": float("nan")}
_GO_TABLE.update({s: float("inf") for s in (".inf", ".Inf", ".INF", "+.inf", "+.Inf",
                                            "+.INF")})
_GO_TABLE.update({s: float("-inf") for s in ("-.inf", "-.Inf", "-.INF")})
# go-yaml v2 resolve.go's booleans (YAML 1.1: y, yes, on, true and negations, three
# spellings each) and nulls: the plain scalars it reads as no number and no string
_GO_TRUE = frozenset("y Y yes Yes YES true True TRUE on On ON".split())
_GO_FALSE = frozenset("n N no No NO false False FALSE off Off OFF".split())
_GO_NOT_NUMBERS = _GO_TRUE | _GO_FALSE | frozenset("null Null NULL ~".split())
_BASES = {"x": (16, "0123456789abcdefABCDEF"), "o": (8, "01234567"), "b": (2, "01")}
_INT64 = 1 << 63


def _go_uint(s: str, base: int | None) -> int | None:
    """strconv.ParseUint(s, base, 64) with base None for 0 (prefix decides); None where it
    fails (no sign allowed, nothing but the base's digits, at most 2^64-1)."""
    if base is None:
        base, alphabet = 10, DIGITS
        if s[:1] == "0":
            if len(s) >= 3 and s[1].lower() in _BASES:
                base, alphabet = _BASES[s[1].lower()]
                s = s[2:]
            else:
                base, alphabet, s = 8, "01234567", s[1:]
    else:
        alphabet = _BASES["b"][1] if base == 2 else DIGITS
    if s and not all(ch in alphabet for ch in s) or (not s and base != 8):
        return None
    if len(s) > 70:                     # beyond 2^64 in any base: and int() has a limit
        return None
    n = int(s, base) if s else 0
    return n if n < (1 << 64) else None


def _go_int(s: str, base: int | None) -> int | None:
    """strconv.ParseInt(s, base, 64): an optional sign, then as _go_uint; int64 range."""
    sign = -1 if s[:1] == "-" else 1
    body = s[1:] if s[:1] in ("+", "-") else s
    n = _go_uint(body, base) if body else None
    if n is None:
        return None
    n *= sign
    return n if -_INT64 <= n < _INT64 else None



def yaml11(text: str) -> int | float | None:
    """The number kubectl, kustomize and the API server read in the plain YAML scalar `text`
    (str, as written, without quotes): an int (exact, -2^63 to 2^64-1) or a float (nan and
    ±inf included); None when they read something else (a string, a boolean, null, a
    timestamp). A port of go-yaml's resolve.go for numbers (see above); never raises."""
    if not isinstance(text, str) or not text:
        return None
    first = text[0]
    if first in DIGITS and digits(text) and (first != "0" or len(text) == 1):
        return int(text) if len(text) <= 18 else _go_number(text)    # the usual case
    if text in _GO_TABLE:
        return _GO_TABLE[text]
    if text in _GO_NOT_NUMBERS:
        return None
    if first == ".":
        return go_float(text)
    if first in DIGITS or first in "+-":
        return _go_number(text)
    return None


def yaml11_int(value: object) -> int | None:
    """An int field's value, typed or as kubectl reads its YAML text (yaml11: `080`, `1e2`
    are floats there, JSON numbers the API server decodes as 80, 100); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = yaml11(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def yaml11_bool(value: object) -> bool | None:
    """The boolean kubectl reads in a plain YAML scalar (go-yaml v2 resolve.go, as
    sigs.k8s.io/yaml uses it: YAML 1.1's y, yes, on, true and their negations in three
    spellings each), or a bool itself; None for anything else."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    if value in _GO_TRUE:
        return True
    return False if value in _GO_FALSE else None


def go_style_float(s: str) -> bool:
    r"""Whether `s` is what go-yaml's yamlStyleFloat accepts (resolve.go: the expression
    `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` on the whole string), as a
    character test (tests/test_spelling.py proves them equal): a render checks quantities
    with suffixes here and must compile no pattern (CONTRIBUTING.md)."""
    i = 1 if s[:1] in ("+", "-") else 0
    if s[i:i + 1] == ".":
        j = span(s, i + 1, DIGITS)
        if j == i + 1:
            return False
    else:
        j = span(s, i, DIGITS)
        if j == i:
            return False
        if s[j:j + 1] == ".":
            j = span(s, j + 1, DIGITS)
    if j < len(s) and s[j] in "eE":
        k = j + 1 + (1 if s[j + 1:j + 2] in ("+", "-") else 0)
        j = span(s, k, DIGITS)
        if j == k:
            return False
    return j == len(s)


def yaml11_typed(text: str) -> bool:
    """True when kubectl and the API server read the plain YAML scalar `text` as no string:
    a number (yaml11), a boolean or null (`yes`, `off`, `~`: go-yaml's resolve.go table)."""
    return text in _GO_NOT_NUMBERS or text == "" or yaml11(text) is not None


def go_float(s: str) -> float | None:
    """strconv.ParseFloat(s, 64) of a string yamlStyleFloat matches; None out of range."""
    if len(s) > 400 or not go_style_float(s):
        return None
    f = float(s)
    return None if f in (float("inf"), float("-inf")) else f


def _go_number(text: str) -> int | float | None:
    plain = text.replace("_", "")
    n = _go_int(plain, None)
    if n is None and plain[:1] != "+" and plain[:1] != "-":
        n = _go_uint(plain, None)
    if n is not None:
        return n
    f = go_float(plain)
    if f is not None:
        return f
    if plain.startswith("0b"):           # resolve.go: ParseInt(plain[2:], 2, 64), a sign
        n = _go_int(plain[2:], 2)        # after the prefix allowed
        return n if n is not None else _go_uint(plain[2:], 2)
    if plain.startswith("-0b"):
        return _go_int("-" + plain[3:], 2)
    return None


def octal_reading(text: str) -> tuple[int, int] | None:
    """(what kubectl and the API server read, what YAML 1.2 and a reader of the manifest
    read) when the plain scalar `text` is a whole number written with a leading zero whose
    YAML 1.1 octal value differs from its decimal one (`010`: (8, 10)); else None
    (`07`, `08` (no octal digit 8: a float 8.0 to go-yaml), `0`, `10`)."""
    if not isinstance(text, str):
        return None
    plain = text.replace("_", "")
    body = plain[1:] if plain[:1] in ("+", "-") else plain
    if len(body) < 2 or body[0] != "0" or not digits(body) or text[:1] == "_":
        return None
    got = yaml11(text)
    if not isinstance(got, int):
        return None
    decimal_value = int(body) * (-1 if plain[:1] == "-" else 1)
    return (got, decimal_value) if got != decimal_value else None


def yaml_disagreement(text: str, yaml12_number: bool) -> str | None:
    """Why krm-fn refuses the plain scalar `text` of the function config or a baseline
    KubeletConfiguration, which it reads as YAML 1.2 (a number when `yaml12_number`), or
    None: a leading-zero octal (`010`: 8 to go-yaml, as the kubelet reads its --config file
    and drop-ins through sigs.k8s.io/yaml and kustomize rewrites it before krm-fn runs,
    while kpt passes it on and YAML 1.2 takes 10), or a number to go-yaml that YAML 1.2
    reads as a string (`1_000`, `-0o10`, `0b101`). krm-fn will not pick one reading
    (krm_fn/yaml/load.py Builder calls this for typed documents)."""
    two = octal_reading(text)
    if two is not None:
        return (f"`{text}` is {two[0]} to kustomize, kubectl and the kubelet (a YAML 1.1 "
                f"octal number) but {two[1]} in YAML 1.2 (kpt passes it on as written); "
                f"write {two[0]} or {two[1]}")
    seen = None if yaml12_number else api_json(text)
    if seen is not None:
        return (f"`{text}` is the number {seen} to kustomize, kubectl and the kubelet (YAML "
                f"1.1) but a string in YAML 1.2 (kpt passes it on as written); write {seen}, "
                f"or quote it for a string")
    return None


def api_json(text: str) -> str | None:
    """The JSON number text the API server receives for the plain YAML scalar `text`
    (sigs.k8s.io/yaml: go-yaml's number, then encoding/json: an integral float below 1e21
    without a fraction, `8` for `08`; `1000` for `1e3`); None when it is no number or one
    JSON cannot carry (nan, ±inf: kubectl refuses the file)."""
    got = yaml11(text)
    if got is None or isinstance(got, bool):
        return None
    if isinstance(got, int):
        return str(got)
    if got != got or got in (float("inf"), float("-inf")):
        return None
    return _go_json_float(got)


def _go_json_float(f: float) -> str:
    """encoding/json's text of the finite float `f` (encode.go floatEncoder): the shortest
    digits that read back as `f` (Python's repr finds the same), written without an
    exponent from 1e-6 to below 1e21 (`1000`, `-9223372036854776000`), else as `1e+21`,
    `1e-7`."""
    mant, _, exp = repr(f).partition("e")
    sign = "-" if mant.startswith("-") else ""
    mant = mant.lstrip("-")
    if f != 0 and not 1e-6 <= abs(f) < 1e21:
        return f"{sign}{mant.removesuffix('.0')}e{exp[0]}{exp[1:].lstrip('0') or '0'}"
    whole, _, frac = mant.partition(".")
    ds, p = whole + frac, len(whole) + int(exp or 0)     # digits, where the point goes
    if p <= 0:
        out = "0." + "0" * -p + ds
    elif p >= len(ds):
        out = ds + "0" * (p - len(ds))
    else:
        out = ds[:p] + "." + ds[p:]
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    out = out.lstrip("0") or "0"
    if out.startswith("."):
        out = "0" + out
    return sign + out if out != "0" else "0"      # -0.0 is `-0` to Go; the same number


def api_int(text: object) -> tuple[int | None, str | None]:
    """(the integer the API server stores for an integer field written as the YAML scalar
    `text` (an int, or str as written), None) or (None, why it cannot be used): a leading-zero
    octal that a reader takes for another number (`010`: 8 to the API server, 10 in YAML 1.2;
    "write 8 or 10"), or no whole number (`1.5`, `abc`, `1e21`: the API server refuses the
    object). The input's scalars are strings whatever their quoting (krm_fn/yaml/load.py),
    so a quoted `"3"`, which the API server refuses, reads as 3 here."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        return None, f"{shown(text)} is not a whole number: the API server refuses it"
    s = str(text).strip(BLANKS)
    two = octal_reading(s)
    if two is not None:
        return None, (f"`{s}` is {two[0]} to kubectl, kustomize and the API server (a YAML "
                      f"1.1 octal number) but {two[1]} to a reader of the manifest (YAML 1.2); "
                      f"write {two[0]} or {two[1]}")
    j = api_json(s)
    if j is None or not digits(j.lstrip("-")):
        return None, f"{brief(s)} is not a whole number: the API server refuses it"
    return int(j), None


# --- quantities in the input, as the API server reads them -----------------------------------
#
# A quantity field (container and pod-level resources, a LimitRange's min / max / default /
# defaultRequest / maxLimitRequestRatio, a ResourceQuota's spec.hard, a RuntimeClass's
# overhead.podFixed, a Node's status.capacity / allocatable) is resource.Quantity, whose
# UnmarshalJSON takes a JSON string or a JSON number and parses its text with ParseQuantity
# (https://github.com/kubernetes/apimachinery/blob/v0.37.2/pkg/api/resource/quantity.go).
# A quoted scalar reaches it as written: `"010"` is 10. A plain scalar that YAML 1.1 reads as
# a number reaches it as that number's JSON text (api_json): `010` is 8, `0x0A` 10, `1e3`
# 1000. krm-fn reads every scalar of the items as a string (krm_fn/yaml/load.py), so whether
# one was plain comes from the YAML nodes (resourcelist.retyped): `plain` True / False, or
# None when not known (an object krm-fn built itself, a direct call), where a spelling whose
# two readings differ fails closed.

# the last character of a quantity with a suffix (`500m`, `1Gi`, `2k`) that no YAML 1.1
# number ends with (`E` does: `0x1E`)
_UNIT_ENDS = frozenset("imnukMGTP")


def api_quantity(text: object, plain: bool | None = None) -> tuple[str | None, str | None]:
    """(the text resource.ParseQuantity reads for the quantity field written as the YAML
    scalar `text`, None), or (None, why krm-fn cannot use it) when it was (or may have been,
    `plain` None) a plain scalar the API server reads as another amount than the text says:
    a leading-zero octal (`010`: 8, but 10 as a quantity; "write "8" or "10""), or a number
    that is no quantity as written (`0x0A`: 10; "write "10""). `plain` False: the text as
    written. The text returned is `text` itself wherever both readings are one amount (`4`,
    `08`, `1e3`, `500m`), so the common case costs one character test."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        return text, None               # the parser says why (None, a boolean) or reads it
    s = str(text)
    if plain is False or not s or (s[0] not in DIGITS and s[0] not in "+-.") or (
            digits(s) and (s[0] != "0" or len(s) == 1)) or s[-1] in _UNIT_ENDS:
        return s, None
    whole, dot, frac = s.partition(".")
    if dot and len(s) <= 16 and digits(whole) and digits(frac):
        return s, None      # `1.5`: a float of at most 15 digits reads back as that decimal
    seen = api_json(s)
    if seen is None:
        return s, None
    two = octal_reading(s)
    hint = "" if plain else " (when it is written unquoted)"
    if two is not None:
        return None, (f"`{s}` is {two[0]} to kubectl, kustomize and the API server{hint} (a "
                      f"YAML 1.1 octal number) but {two[1]} as a Kubernetes quantity; write "
                      f"\"{two[0]}\" or \"{two[1]}\"")
    from krm_fn import quantity
    try:
        api = quantity.parse(seen).nanos
    except quantity.QuantityError:
        return s, None                  # no quantity either way: the parser says why
    try:
        same = quantity.parse(s).nanos == api
    except quantity.QuantityError:
        same = False
    if same:
        return s, None
    return None, (f"`{s}` is {seen} to kubectl, kustomize and the API server{hint} (a YAML "
                  f"1.1 number) but not that quantity as written; write \"{seen}\"")


def input_quantity(text: object, res: str, plain: bool | None = None):
    """The Quantity of resource `res` (cpu: quantity.parse_cpu, memory and ephemeral-storage
    and hugepages-*: parse_memory, anything else: parse) the API server reads in the input's
    quantity field written as `text` (api_quantity). Raises quantity.QuantityError with
    api_quantity's reason when the two readings differ, or the parser's. `plain`: as
    api_quantity's, or a function of no arguments giving it, asked only then."""
    from krm_fn import quantity
    s, why = api_quantity(text, None if callable(plain) else plain)
    if why is not None and callable(plain):
        s, why = api_quantity(text, plain())
    if why is not None:
        raise quantity.QuantityError(why)
    if res == "cpu":
        return quantity.parse_cpu(s)
    if res == "memory" or res == "ephemeral-storage" or res.startswith("hugepages-"):
        return quantity.parse_memory(s)
    return quantity.parse(s)
