"""Kubernetes resource quantities, parsed and formatted exactly as apimachinery does.

Source of the rules: k8s.io/apimachinery/pkg/api/resource/quantity.go (`ParseQuantity`,
`parseQuantityString`, `CanonicalizeBytes`) and suffix.go. Grammar::

    <quantity>        ::= <signedNumber><suffix>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

Values are held as Kubernetes holds them, as exact integers at a fixed scale: a Quantity's
`nanos` is its value in nano-units (int; nanocores for cpu, nanobytes for memory), rounded up
to 1n as ParseQuantity rounds a non-zero amount finer than that (`0.0000000001` is 1n).
Callers keep cpu in nanocores (int) and memory in bytes (int; `Quantity.whole`, exact for
parse_memory, which refuses fractions of a byte); nothing is ever a float or a rational.
Kubernetes caps BinarySI values above 2^63-1 and keeps larger decimal ones that Value()
cannot hold; krm-fn refuses both, because a manifest that relies on them is almost always a
typo (`1e400`). An amount of a resource list (a container's requests and limits, a
LimitRange's bounds) is stored rounded up to 1m (pkg/apis/core/v1/defaults.go
SetDefaults_ResourceList): `stored` and `parse_cpu` read it so (`3999999999n` is stored as
`4`), and `stored` gives the text the API server then keeps and shows (Quantity.String()).
The kubelet and the scheduler read that stored amount (Quantity.MilliValue): `milli_ceil`,
`kubelet_cpus`.
"""
from __future__ import annotations

import functools
import re
from collections import namedtuple

from krm_fn.matching import DIGITS, digits, only, span

__all__ = ["NANO", "MILLI", "Quantity", "QuantityError", "ceil_div", "trunc_div", "ratio", "parse",
           "parse_cpu", "parse_milli_cpu", "parse_memory", "milli_ceil", "kubelet_cpus",
           "format_cpu", "format_decimal_si", "format_quantity", "stored",
           "format_binary_si", "format_bytes", "format_cpu_rounded", "format_like", "int32"]

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY.items()}
# number then suffix; the suffix alphabet and the optional signed exponent digits mirror
# parseQuantityString's scanner (characters "eEinumkKMGTP", then [+-]?[0-9]*).
_SUFFIX_CHARS = "eEinumkKMGTP"
_MAX = 2 ** 63 - 1
_INT64 = 2 ** 63
NANO = 10 ** 9      # nano-units in one unit: a cpu amount in nanocores is cores * NANO
MILLI = NANO // 1000    # nano-units in one thousandth (1m): nanocores in a millicore


def milli_ceil(nanos: int) -> int:
    """`nanos` nano-units (int >= 0) rounded up to a whole thousandth (1m), in nano-units: the
    amount Quantity.MilliValue() gives (ceil(q * 1000); k8s.io/apimachinery/pkg/api/resource/
    quantity.go ScaledValue), which the scheduler's and the kubelet's cpu sums read
    (pkg/scheduler/framework/types.go Resource.Add: MilliCPU += MilliValue()).
    3999999999 -> 4000000000."""
    return -(-nanos // MILLI) * MILLI


def kubelet_cpus(nanos: int) -> int:
    """The exclusive CPUs the static CPU Manager gives a Guaranteed container whose cpu
    request is `nanos` nanocores (int >= 0): Value() (rounded up) when Value()*1000 ==
    MilliValue() (rounded up), else 0 (pkg/kubelet/cm/cpumanager/policy_static.go
    isIntegralCPUAmount, guaranteedCPUs). 3999999999 -> 4 (4, 4000m); 1500000001 -> 0 (2,
    1501m); 4 * NANO -> 4."""
    whole = -(-nanos // NANO)
    return whole if whole * 1000 == -(-nanos // MILLI) else 0


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up (b > 0): exact integer arithmetic, as math.ceil of the exact ratio."""
    return -(-a // b)


def trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero (b > 0), as int() of the exact ratio."""
    q = abs(a) // b
    return q if a >= 0 else -q


def ratio(text: str) -> tuple[int, int]:
    """(numerator, denominator > 0) of the number `text`, exactly as fractions.Fraction(text)
    reads it (not reduced); raises the ValueError or ZeroDivisionError it raises. A text of
    the form `[+-]digits[.digits]` (ASCII) is read here."""
    body = text[1:] if text[:1] in ("+", "-") else text
    whole, dot, frac = body.partition(".")
    if digits(whole) and (not dot or digits(frac)):
        scale = 10 ** len(frac)
        n = int(whole) * scale + (int(frac) if frac else 0)
        return (-n if text[:1] == "-" else n), scale
    # Any other spelling (" 1e3 ", "1/3", "1_0", "inf"): only fractions.Fraction reads every
    # spelling it accepts and refuses the rest with the same error, so it is imported here,
    # for such a text only (off a plain render's path).
    from fractions import Fraction
    f = Fraction(text)
    return f.numerator, f.denominator


class QuantityError(ValueError):
    """A string that Kubernetes would not accept as a resource quantity (or that krm-fn
    refuses for cpu/memory: negative, larger than 2^63-1)."""


class Quantity(namedtuple("Quantity", "nanos fmt text")):
    """A parsed quantity.

    `nanos` is the exact value in nano-units (int: nanocores for cpu, nanobytes for
    memory); `fmt` is the Kubernetes Format the suffix implies ("DecimalSI", "BinarySI" or
    "DecimalExponent"); `text` is the string as written, kept so that memory keeps the
    user's unit.
    """

    __slots__ = ()

    @property
    def whole(self) -> int:
        """The value rounded up to a whole unit, as Kubernetes' Quantity.Value(): bytes for
        memory (exact for parse_memory, which refuses fractions of a byte)."""
        return ceil_div(self.nanos, NANO)

    @property
    def is_integer(self) -> bool:
        """True when the value is a whole number as the kubelet and the API server test it,
        at milli scale (`Value()*1000 == MilliValue()`, both rounded up): the static CPU
        Manager's isIntegralCPUAmount (pkg/kubelet/cm/cpumanager/policy_static.go) and
        validation.go's integer check of an extended resource. `3999999999n` is one (4, 4000m);
        `1500000001n` is not (2, 1501m)."""
        return kubelet_cpus(self.nanos) > 0 or self.nanos == 0

    def __str__(self) -> str:
        return self.text


def parse(text: object) -> Quantity:
    """Parse `text` (a str, or an int/float scalar a YAML reader produced) into a Quantity.

    Raises QuantityError naming the problem. Accepts every spelling apimachinery accepts
    (`1`, `1.`, `.5`, `+2`, `500m`, `1Gi`, `1e3`, `1E3`, `2E`, `100u`, `5n`).
    """
    return _parse(_text_of(text))


@functools.lru_cache(maxsize=4096)
def _parse(s: str) -> Quantity:
    """parse() of the text `s`, cached: a Quantity is immutable and manifests repeat a few
    quantities (the 2,000-item benchmark parses 20,000, a handful distinct)."""
    if s == "":
        raise QuantityError("empty quantity")
    if len(s) > 64:
        raise QuantityError(f"{s[:20]!r}... is not a quantity (longer than 64 characters)")
    parts = _split(s)
    if parts is None:
        raise QuantityError(f"{s!r} is not a quantity (expected a number and an optional "
                            "suffix such as 500m, 4, 1Gi, 1e3)")
    sign, whole, frac, suf, expdigits = parts
    frac = frac or ""
    if whole == "" and frac == "":
        raise QuantityError(f"{s!r} is not a quantity: no digits")
    # the number is num / den exactly: its digits as one int over 10^(fraction digits)
    num, den = int((whole or "0") + frac), 10 ** len(frac)
    full_suffix = suf + expdigits
    if full_suffix in _BINARY:
        fmt, num = "BinarySI", num * 2 ** _BINARY[full_suffix]
    elif full_suffix in _DECIMAL:
        fmt, exp = "DecimalSI", _DECIMAL[full_suffix]
    elif suf in ("e", "E") and re.fullmatch(r"[+-]?[0-9]+", expdigits or "") and \
            -_INT64 <= int(expdigits) < _INT64:
        # interpret keeps int32(exponent): 1e4294967296 is 1; past +-100 the value (at most
        # 64 digits) is finer than 1n or above 2^63-1 whatever the digits, so it is clamped
        exp = max(-100, min(100, int32(int(expdigits))))
        fmt = "DecimalExponent"
    else:
        raise QuantityError(f"{s!r} has an unknown suffix {full_suffix!r} (use one of "
                            "n u m k M G T P E Ki Mi Gi Ti Pi Ei, or e<exponent>)")
    if fmt != "BinarySI":
        num, den = (num * 10 ** exp, den) if exp >= 0 else (num, den * 10 ** -exp)
    if sign == "-" and num != 0:
        raise QuantityError(f"{s!r} is negative")
    if num > _MAX * den:
        raise QuantityError(f"{s!r} is larger than 2^63-1, the largest quantity Kubernetes keeps")
    nanos = ceil_div(num * NANO, den)       # ParseQuantity rounds finer than 1n up
    if fmt == "BinarySI" and 0 < nanos < NANO:
        fmt = "DecimalSI"                   # ParseQuantity: a BinarySI amount below 1
    return Quantity(nanos, fmt, s)


def _split(s: str) -> tuple[str, str, str | None, str, str] | None:
    """(sign, whole digits, fraction digits or None without a `.`, suffix letters, signed
    exponent digits) of `s`: the groups of the regular expression
    `([+-]?)([0-9]*)(?:\\.([0-9]*))?([eEinumkKMGTP]*)([+-]?[0-9]*)` matching all of `s`, read
    left to right; None when `s` is not of that form."""
    i = 1 if s[:1] in ("+", "-") else 0
    j = span(s, i, DIGITS)
    frac = None
    k = j
    if s[j:j + 1] == ".":
        k = span(s, j + 1, DIGITS)
        frac = s[j + 1:k]
    e = span(s, k, _SUFFIX_CHARS)
    exp = s[e + 1:] if s[e:e + 1] in ("+", "-") else s[e:]
    if not only(exp, DIGITS):
        return None
    return s[:i], s[i:j], frac, s[k:e], s[e:]


# apimachinery quantity.go's parse errors (ErrFormatWrong, ErrSuffix): the API server's
# answer, decoding the whole object, to a quantity it cannot parse
FORMAT_WRONG = ("quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
SUFFIX_WRONG = "unable to parse quantity's suffix"


def api_error(text: str) -> str | None:
    """The error apimachinery's ParseQuantity gives for the string `text` as the API server
    decodes it (Quantity.UnmarshalJSON trims white space first): FORMAT_WRONG when it is
    empty or not a number then a suffix, SUFFIX_WRONG when the suffix is none it knows; None
    when Kubernetes reads it, possibly where parse() refuses it (no digits, above 2^63-1)."""
    s = text.strip()
    parts = _split(s) if s else None
    if parts is None:
        return FORMAT_WRONG
    suffix = parts[3] + parts[4]
    if suffix in _BINARY or suffix in _DECIMAL:
        return None
    if parts[3] in ("e", "E") and re.fullmatch(r"[+-]?[0-9]+", parts[4]) and \
            -2 ** 63 <= int(parts[4]) < 2 ** 63:
        return None
    return SUFFIX_WRONG


def _canonical_decimal(nanos: int) -> tuple[int, int]:
    """(mantissa, exponent) with exponent a multiple of 3, as large as possible, and an
    integer mantissa, of the value `nanos` nano-units: CanonicalizeBytes for
    DecimalSI/DecimalExponent."""
    if nanos == 0:
        return 0, 0
    exp, mant = -9, nanos
    while mant % 1000 == 0 and exp < 18:
        mant //= 1000
        exp += 3
    return mant, exp


@functools.lru_cache(maxsize=4096)
def format_decimal_si(nanos: int) -> str:
    """Canonical DecimalSI string of `nanos` nano-units (int): 1.5 * NANO -> "1500m",
    2 * NANO -> "2", 1000 * NANO -> "1k", 0 -> "0"."""
    mant, exp = _canonical_decimal(nanos)
    if mant == 0:
        return "0"
    return f"{mant}{_DECIMAL_BY_EXP[exp]}"


@functools.lru_cache(maxsize=4096)
def format_binary_si(nanos: int) -> str:
    """Canonical BinarySI string of `nanos` nano-units (int; nanobytes for memory):
    4294967296 bytes -> "4Gi", 1536Mi stays "1536Mi".

    Like CanonicalizeBytes: values below 1024 or not whole units fall back to DecimalSI.
    """
    if nanos % NANO or -1024 * NANO < nanos < 1024 * NANO:
        return format_decimal_si(nanos)
    n, exp = nanos // NANO, 0
    while n % 1024 == 0 and exp < 60:
        n //= 1024
        exp += 10
    return f"{n}{_BINARY_BY_EXP[exp]}" if exp else str(n)


def format_bytes(n: int) -> str:
    """Canonical BinarySI string of `n` bytes (int): format_binary_si of n * NANO."""
    return format_binary_si(n * NANO)


def int32(n: int) -> int:
    """`n` (int) wrapped to 32 bits as Go's int32(n): quantitySuffixer.interpret keeps an
    exponent so (k8s.io/apimachinery/pkg/api/resource/suffix.go), `1e4294967296` is 1."""
    return (n + 2 ** 31) % 2 ** 32 - 2 ** 31


def _kept_as_written(s: str) -> bool:
    """True when the API server stores the amount `s` (a string parse() reads, trimmed) of a
    resource list as written: ParseQuantity keeps the text of an amount on its int64 path
    that is already canonical (no multiple of 1000 in the digits, no leading zero, a scale
    that is a multiple of 3; for BinarySI a number not a multiple of 8), and
    SetDefaults_ResourceList's RoundUp(-3) keeps it when its scale is at least milli
    (k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity, RoundUp;
    pkg/apis/core/v1/defaults.go SetDefaults_ResourceList). `+1`, `5.`, `1E3`, `1500e0` are
    kept; `1.5e3`, `10e2`, `-0`, `1000m` are not."""
    if s == "0":
        return True
    _, whole, frac, suf, expdigits = _split(s)
    num, denom = whole.lstrip("0") or "0", frac or ""
    shifted = num + denom
    if suf + expdigits in _BINARY:
        exp = _BINARY[suf + expdigits]
        return (not denom and 15 - len(num) - exp * 3 // 10 - 1 >= 0
                and int(num) << exp < _INT64 and int(num) % 8 != 0)
    exp = _DECIMAL.get(suf + expdigits)
    scale = (int32(int(expdigits)) if exp is None else exp) - len(denom)
    return (len(shifted) <= 18 and scale >= -3 and scale % 3 == 0
            and not shifted.endswith("000") and shifted[0] != "0")


def format_quantity(nanos: int, fmt: str) -> str:
    """Quantity.String() of a value of `nanos` nano-units (int, may be negative) in the
    Format `fmt` ("DecimalSI", "BinarySI" or "DecimalExponent"): its canonical form
    (k8s.io/apimachinery/pkg/api/resource/quantity.go CanonicalizeBytes). 1500 * NANO in
    DecimalExponent -> "1500", NANO // 1000 -> "1e-3"; 1536 * 2**20 * NANO in BinarySI ->
    "1536Mi"."""
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    if fmt == "BinarySI":
        return sign + format_binary_si(nanos)
    if fmt == "DecimalExponent" and nanos:
        mant, exp = _canonical_decimal(nanos)
        return f"{sign}{mant}e{exp}" if exp else f"{sign}{mant}"
    return sign + format_decimal_si(nanos) if nanos else "0"


def stored(text: object) -> tuple[int, str]:
    """(signed nano-units, text) the API server stores for the amount `text` of a resource
    list (a container's requests or limits, a LimitRange's min or max): ParseQuantity
    (white space trimmed, rounded up to 1n), then SetDefaults_ResourceList's RoundUp(-3)
    (up to 1m, away from zero), and the text it then writes and `kubectl get -o yaml` shows
    (Quantity.String(): as written when _kept_as_written, else format_quantity)
    (k8s.io/apimachinery/pkg/api/resource/quantity.go; pkg/apis/core/v1/defaults.go).
    `0.0000000001` -> (MILLI, "1m"), `1e-12` -> (MILLI, "1e-3"), `+1` -> (NANO, "+1"),
    `-0` -> (0, "0"). Raises QuantityError as parse() does, except for a minus sign.
    Kept per string: the same few amounts repeat across the containers of a render."""
    if text.__class__ is str:
        return _stored_text(text)
    return _stored(_text_of(text))


@functools.lru_cache(maxsize=4096)
def _stored_text(text: str) -> tuple[int, str]:
    return _stored(text.strip())


def _stored(s: str) -> tuple[int, str]:
    negative = s.startswith("-")
    q = parse(s[1:] if negative else s)
    nanos = milli_ceil(q.nanos)
    if _kept_as_written(s):
        return (-nanos if negative else nanos), s
    nanos = -nanos if negative else nanos
    return nanos, format_quantity(nanos, q.fmt)


def parse_signed(text: object) -> tuple[int, str] | None:
    """stored(text), or None when it is no quantity (Quantity holds no sign)."""
    try:
        return stored(text)
    except (QuantityError, TypeError):
        return None


def format_amount(resource: str, amount: int) -> str:
    """A model amount of `resource` for a message: cpu (nanocores) as format_cpu, anything
    else (bytes, or a count for an extended resource) as format_bytes."""
    return format_cpu(amount) if resource == "cpu" else format_bytes(int(amount))


def format_cpu_rounded(nanocores: int) -> str:
    """`nanocores` (int, e.g. an allocatable total or a usage sum) rounded to 1m (half to
    even, as Python's round), then as format_cpu: 428571428 -> "429m", 4 * NANO -> "4"."""
    milli, rest = divmod(nanocores, MILLI)
    if 2 * rest > MILLI or (2 * rest == MILLI and milli % 2):
        milli += 1
    return format_cpu(milli * MILLI)


@functools.lru_cache(maxsize=4096)
def format_cpu(nanocores: int) -> str:
    """Canonical CPU string of `nanocores` (int), as the API server writes it (DecimalSI,
    quantity.go CanonicalizeBytes): whole cores as "4", fractions as millicores "500m", an
    amount finer than 1m in micro- or nanocores ("3999999999n")."""
    return format_decimal_si(nanocores)


def format_like(nanos: int, like: Quantity | None) -> str:
    """Format `nanos` nano-units (int) in the unit family of `like` (BinarySI when the user
    wrote Mi/Gi, DecimalSI otherwise): used for computed memory values such as an emptyDir
    sizeLimit."""
    if like is not None and like.fmt == "BinarySI":
        return format_binary_si(nanos)
    return format_decimal_si(nanos)


def _text_of(text: object) -> str:
    """The string parse() reads for a scalar `text`; QuantityError for bool and None."""
    if isinstance(text, bool) or text is None:
        raise QuantityError(f"{text!r} is not a quantity")
    return repr(text) if isinstance(text, float) else str(text)


def parse_cpu(text: object) -> Quantity:
    """Parse a cpu quantity of a Kubernetes object as the API server stores it (`nanos`:
    nanocores, rounded up to 1m as stored(): `3999999999n` is stored as `4`,
    `0.0000000001` as `1m`; `text` as written). Raises QuantityError as parse() does."""
    return _parse_cpu(_text_of(text))


@functools.lru_cache(maxsize=4096)
def _parse_cpu(s: str) -> Quantity:
    q = _parse(s)
    return q if q.nanos % MILLI == 0 else Quantity(milli_ceil(q.nanos), q.fmt, q.text)


def parse_milli_cpu(text: object) -> Quantity:
    """Parse a cpu quantity of krm-fn's own configuration (`nanos`: nanocores). Raises
    QuantityError also when the value is finer than 1m: a CPU amount krm-fn is told to write
    or reserve is kept to the millicores the kubelet counts (it would round `0.0001m` up to
    `1m`)."""
    return _parse_milli_cpu(_text_of(text))


@functools.lru_cache(maxsize=4096)
def _parse_milli_cpu(s: str) -> Quantity:
    q = _parse(s)
    if q.nanos % MILLI:
        raise QuantityError(f"{q.text!r} is finer than 1m, the smallest CPU unit; "
                            "Kubernetes would round it up")
    return q


def parse_memory(text: object) -> Quantity:
    """Parse a memory quantity (`whole`: bytes). Raises QuantityError also when the value
    is not a whole number of bytes (`500m` of memory is almost always a typo for `500M`)."""
    return _parse_memory(_text_of(text))


@functools.lru_cache(maxsize=4096)
def _parse_memory(s: str) -> Quantity:
    q = _parse(s)
    if q.nanos % NANO:
        raise QuantityError(f"{q.text!r} is not a whole number of bytes (did you mean "
                            f"{q.text[:-1] + 'M' if q.text.endswith('m') else 'a byte count'}?)")
    return q
