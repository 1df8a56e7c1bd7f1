"""resource.Quantity and strconv's floats as the kubelet's messages print them, ported from
k8s.io/apimachinery pkg/api/resource (quantity.go ParseQuantity, amount.go int64Amount,
Quantity.Add, CanonicalizeBytes) and Go's strconv: the values krm_fn.node.kubelet_says
quotes are computed the way the kubelet computes them.
"""
from __future__ import annotations

from krm_fn.node.kubelet_says import atoi, strconv_error
from krm_fn.quantity import NANO, ceil_div, int32

_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                "E": 18}
_BINARY_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64 = 2 ** 63


class GoQuantity:
    """A resource.Quantity held as apimachinery's int64Amount fast path: `value` x 10^`scale`
    in `fmt` (BinarySI, DecimalSI, DecimalExponent, or "" for the zero Quantity{}). Only
    quantities that stay on that path are modelled (`parse` and `add` return None
    otherwise): their inf.Dec twin prints a pointer."""

    __slots__ = ("value", "scale", "fmt")

    def __init__(self, value: int = 0, scale: int = 0, fmt: str = ""):
        self.value, self.scale, self.fmt = value, scale, fmt

    def dump(self) -> str:
        """fmt's %v of a Quantity value (String has a pointer receiver, so fmt prints the
        struct: int64Amount, infDecAmount, the cached string, Format), as
        pkg/kubelet/cm/node_container_manager_linux.go's message shows it; sums and new
        quantities cache no string."""
        return f"{{{{{self.value} {self.scale}}} {{<nil>}}  {self.fmt}}}"


def _split(text: str):
    """parseQuantityString and quantitySuffixer.interpret (quantity.go, suffix.go): (negative,
    numerator without leading zeros ("0" for none), denominator digits, Format, exponent
    of the suffix's base: 2 for BinarySI, else 10), or the error's message."""
    if text == "":
        return QUANTITY_FORMAT_WRONG
    s = text
    negative = s[:1] == "-"
    i = 1 if s[:1] in ("-", "+") else 0
    while i < len(s) and s[i] == "0":
        i += 1
    j = i
    while j < len(s) and s[j] in "0123456789":
        j += 1
    num = s[i:j] or "0"
    denom = ""
    if j < len(s) and s[j] == ".":
        k = j + 1
        while k < len(s) and s[k] in "0123456789":
            k += 1
        denom, j = s[j + 1:k], k
    k = j
    while k < len(s) and s[k] in "eEinumkKMGTP":
        k += 1
    if k < len(s) and s[k] in "+-":
        k += 1
    if s[k:].strip("0123456789"):
        return QUANTITY_FORMAT_WRONG
    suffix = s[j:]
    if suffix in _BINARY_EXP:
        return negative, num, denom, "BinarySI", _BINARY_EXP[suffix]
    if suffix in _DECIMAL_EXP:
        return negative, num, denom, "DecimalSI", _DECIMAL_EXP[suffix]
    if len(suffix) > 1 and suffix[0] in ("e", "E") and atoi(suffix[1:])[1] is None:
        return negative, num, denom, "DecimalExponent", int32(int(suffix[1:]))
    return QUANTITY_SUFFIX


def parse_quantity(text: str) -> GoQuantity | None:
    """resource.ParseQuantity(text) on its int64 fast path (quantity.go), or None (an error,
    or the inf.Dec path)."""
    if text == "0":
        return GoQuantity(0, 0, "DecimalSI")
    parts = _split(text)
    if isinstance(parts, str):
        return None
    negative, num, denom, fmt, exponent = parts
    mantissa = 1
    if fmt == "BinarySI":
        if not (exponent >= 0 and denom == ""):
            return None
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        scale = 0
    else:
        precision = 18 - (len(num) + len(denom))
        scale = exponent
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    value = int(num + denom)
    if value >= _INT64:
        return None
    result = value * mantissa
    if result >= _INT64:
        return None
    return GoQuantity(-result if negative else result, scale, fmt)


def add(total: GoQuantity, y: GoQuantity | None) -> GoQuantity | None:
    """Quantity.Add on the int64 path (y None: the zero Quantity{} of a missing map key):
    the Format follows y while the total is zero; int64Amount.Add keeps the smaller scale.
    None when it leaves the int64 path."""
    y = y or GoQuantity()
    out = GoQuantity(total.value, total.scale, y.fmt if total.value == 0 else total.fmt)
    if y.value == 0:
        return out
    if out.value == 0:
        out.value, out.scale = y.value, y.scale
        return out
    if out.scale == y.scale:
        out.value += y.value
    elif out.scale > y.scale:
        out.value = out.value * 10 ** (out.scale - y.scale) + y.value
        out.scale = y.scale
    else:
        out.value = out.value + y.value * 10 ** (y.scale - out.scale)
    return out if -_INT64 <= out.value < _INT64 else None


def float32(x: float) -> float:
    """x rounded to the nearest float32, as Go's float32(x)."""
    import struct
    return struct.unpack("<f", struct.pack("<f", x))[0]


def percent_of(capacity: int, text: str) -> int:
    """evictionapi.GetThresholdQuantity of a percentage threshold: int64(float64(capacity) *
    float64(percentage)), the percentage parsed as eviction's parsePercentage does
    (strconv.ParseFloat(..., 32), then float32 / 100)."""
    percentage = float32(float32(float(text.rstrip("%"))) / 100)
    return int(float(capacity) * percentage)


def quantity_string(q: GoQuantity) -> str:
    """Quantity.String(): the canonical form of q's value in q's Format (CanonicalizeBytes:
    BinarySI below 1024 or not whole bytes falls back to DecimalSI; DecimalExponent writes
    e<exponent>)."""
    from krm_fn import quantity
    if q.value == 0:            # 0e2147483647: no power of ten to compute
        return "0"
    if q.scale >= -9:
        value = q.value * 10 ** (q.scale + 9)       # in nano-units
    else:
        value, finer = divmod(q.value, 10 ** (-9 - q.scale))
        assert not finer, (q.value, q.scale)
    if value == 0:
        return "0"
    if q.fmt == "BinarySI":
        return quantity.format_binary_si(value)
    if q.fmt == "DecimalExponent":
        mant, exp = quantity._canonical_decimal(value)
        return f"{mant}e{exp}" if exp else str(mant)
    return quantity.format_decimal_si(value)


def total(parts) -> GoQuantity | None:
    """resource.NewQuantity(0, DecimalSI) with each of `parts` added in order (None: a
    missing map key, the zero Quantity{}): GetNodeAllocatableReservation's sum; None when
    a part or the sum leaves the int64 path (a part that did not parse there: pass False)."""
    out = GoQuantity(0, 0, "DecimalSI")
    for part in parts:
        if part is False:
            return None
        out = add(out, part)
        if out is None:
            return None
    return out



QUANTITY_FORMAT_WRONG = ("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
QUANTITY_SUFFIX = "unable to parse quantity's suffix"
_FLOAT32_MAX = 3.4028234663852886e38


def parse_float32(text: str) -> tuple[float | None, str | None]:
    """strconv.ParseFloat(text, 32) for the decimal forms: (value, None) or (None, its
    error: invalid syntax, or value out of range beyond float32)."""
    import math
    body = text[1:] if text[:1] in ("+", "-") else text
    lowered = body.lower()
    if lowered in ("inf", "infinity", "nan"):
        return float(text), None
    digits_ok = body != "" and not body.strip("0123456789.eE+-") and "_" not in body \
        and body[0] in "0123456789."
    try:
        value = float(text) if digits_ok else None
    except ValueError:
        value = None
    if value is None:
        return None, strconv_error("ParseFloat", text)
    if math.isinf(value) or abs(value) > _FLOAT32_MAX * (1 + 2 ** -25):
        return None, strconv_error("ParseFloat", text, "value out of range")
    return float32(value), None


def go_quantity(text: str):
    """resource.ParseQuantity(text): (value in nano-units (int), Format) or its error message
    (a str). The fast and the inf.Dec paths give the same value here (rounded up to 1n,
    BinarySI capped at 2^63-1)."""
    if text == "0":
        return 0, "DecimalSI"
    parts = _split(text)
    if isinstance(parts, str):
        return parts
    negative, num, denom, fmt, exponent = parts
    base = 2 if fmt == "BinarySI" else 10
    # an exponent past +-400 is finer than 1n or beyond int64 whatever the (at most a few
    # dozen) digits: clamped, so that 1e-2147483648 is not computed digit by digit
    exponent = max(-400, min(400, exponent))
    # the value is top / bottom exactly: the digits over 10^(fraction digits), times the
    # suffix's base^exponent; in nano-units, rounded up to 1n
    top, bottom = int(num + denom) * NANO, 10 ** len(denom)
    top, bottom = (top * base ** exponent, bottom) if exponent >= 0 else \
        (top, bottom * base ** -exponent)
    nanos = ceil_div(top, bottom)
    if fmt == "BinarySI" and nanos > (_INT64 - 1) * NANO:      # the cap at maxAllowed
        nanos = (_INT64 - 1) * NANO
    if fmt == "BinarySI" and 0 < nanos < NANO:
        fmt = "DecimalSI"
    return (-nanos if negative else nanos), fmt


# resource.NewQuantity(0, resource.DecimalSI) as go_quantity's (value, Format).
ZERO = (0, "DecimalSI")


def add_exact(x: tuple, y: tuple | None) -> tuple:
    """Quantity.Add on either of its paths, as go_quantity's (value, Format) pairs (y None:
    the zero Quantity{} of a missing map key, Format ""): the value is exact (the inf.Dec
    path loses nothing) and the Format follows y while x is zero."""
    value, fmt = y or (0, "")
    return x[0] + value, (fmt if x[0] == 0 else x[1])


def go_quantity_string(value, fmt: str) -> str:
    """Quantity.String() of a parsed value (go_quantity's nano-units)."""
    return quantity_string(GoQuantity(value, -9, fmt))
