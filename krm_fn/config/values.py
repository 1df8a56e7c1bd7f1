"""`ConfigError` and the value checks every part of the function config shares: how a
value is named in a message, strings (length, control characters), scalars read as
strings, and Kubernetes quantities.

Units: cpu quantities are written in cores, memory quantities in bytes; a parsed one is a
krm_fn.quantity.Quantity (`nanos`: nanocores for cpu, `whole`: bytes for memory).
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.matching import LazyPattern

# Longest string accepted for any config value, longest quantity/duration string.
MAX_TEXT = 4096
MAX_LONG_TEXT = 1_000_000   # multi-line text such as an lscpu paste
MAX_QUANTITY_TEXT = 64
# C0/C1 control characters and the Unicode line/paragraph separators: never part of a name,
# label, quantity, duration or cpuset.
CONTROL_CHARS = frozenset(map(chr, [*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029]))
# A KubeletConfiguration field name (and a feature gate name): letters and digits.
FIELD_NAME = LazyPattern(r"[A-Za-z][A-Za-z0-9]*")


class ConfigError(ValueError):
    """A function config problem. `path` is the field path inside the config object
    (e.g. `spec.nodePools[0].topology.threadsPerCore`), `message` says what is wrong.
    `errors`: every problem found in one pass over the config (this one first), so a user
    fixes them all at once; the shape and type checks of every field are collected, the
    checks across fields run only on a config without those."""

    def __init__(self, path: str, message: str, more: list | None = None):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
        self.more = list(more or [])

    @property
    def errors(self) -> list["ConfigError"]:
        """This error and the ones found with it, in field order."""
        return [self] + self.more


def raise_all(errors: list[ConfigError]) -> None:
    """Raise the first of `errors` carrying all of them (nothing when empty)."""
    if errors:
        first = errors[0]
        raise ConfigError(first.path, first.message, errors[1:])


def unknown_fields(keys: list, known: list[str], path: str) -> ConfigError:
    """`unknown field 'x' (did you mean 'y'?) (known: ...)` for the mapping at `path`."""
    import difflib
    names = []
    for k in keys:
        close = difflib.get_close_matches(str(k), known, n=1, cutoff=0.6)
        names.append(short(str(k)) + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ConfigError(path, "unknown field" + ("s " if len(keys) > 1 else " ")
                       + ", ".join(names) + f" (known: {', '.join(known)})")


def type_name(v: object) -> str:
    """How a value's YAML type reads in a message: `null`, `a mapping`, `a string`..."""
    if v is None:
        return "null"
    for t, name in ((bool, "a boolean"), (dict, "a mapping"), (list, "a list"),
                    (str, "a string"), (int, "a number"), (float, "a number")):
        if isinstance(v, t):
            return name
    return type(v).__name__


def num(n: int) -> str:
    """str(n), or a description for numbers too long to print (str() of an int of more
    than 4300 digits raises)."""
    if n.bit_length() <= 128:
        return str(n)
    return f"a number of about {int(n.bit_length() * 0.30103)} digits"


def short(v: object, limit: int = 60) -> str:
    """repr of a scalar for an error message, shortened; containers are named by type."""
    if isinstance(v, (dict, list, tuple, set)):
        return type_name(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return num(v)
    r = repr(v)
    return r if len(r) <= limit else r[:limit - 4] + "..." + r[-1]


def check_text(s: str, path: str) -> str:
    """`s` unchanged when it has at most MAX_TEXT characters and no control character;
    raises ConfigError naming `path` otherwise."""
    if len(s) > MAX_TEXT:
        raise ConfigError(path, f"is {len(s)} characters long; at most {MAX_TEXT} are accepted")
    c = control_char(s)
    if c is not None:
        raise ConfigError(path, f"must not contain control characters, found {c!r} in "
                                f"{short(s)}")
    return s


def control_char(s: str) -> str | None:
    """The first character of `s` that is one of CONTROL_CHARS, or None (what the regular
    expression `[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]` finds first)."""
    if (s.isascii() and s.isprintable()) or CONTROL_CHARS.isdisjoint(s):
        return None
    return next(c for c in s if c in CONTROL_CHARS)


def scalar_str(v: object, path: str, text: bool = False) -> str:
    """A YAML scalar as a string: booleans as true/false, numbers as written by str();
    raises ConfigError for containers, huge numbers and bad text, and, where the field is
    `text` (a label value, a name), for an unquoted decimal number (a float: YAML keeps its
    value, not its text, so `8.10` would be "8.1" and `1e3` "1000.0":
    https://yaml.org/spec/1.2.2/#1032-tag-resolution). A quantity's value is what counts,
    so `cpu: 0.5` stays "0.5"."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if abs(v) >= 10 ** 60:
            raise ConfigError(path, f"number too large: {num(v)}")
        written = getattr(v, "text", None)      # yaml.load.WrittenInt: `07`, `0x0A`, `+5`
        if text and written is not None:
            raise ConfigError(path, f"an unquoted number written {short(written)}, which "
                                    f"YAML reads as the number {v}, not as the text "
                                    f"written: quote the value")
        return str(v)
    if isinstance(v, float):
        if not text:
            return str(v)
        raise ConfigError(path, f"an unquoted number, which YAML reads as the number {v!r}, "
                                f"not as the text written (8.10 and 8.1 are the same number): "
                                f"quote the value")
    if isinstance(v, str):
        return check_text(str(v), path)
    raise ConfigError(path, f"expected a string, found {type_name(v)}")


def parse_quantity(s: str, kind: str, path: str) -> quantity.Quantity:
    """Parse a cpu or memory quantity string (kind "cpu" / "memory"; "count" = a whole
    number in any quantity spelling); raise ConfigError naming `path`."""
    if len(s) > MAX_QUANTITY_TEXT:
        raise ConfigError(path, f"{short(s)} is not a quantity: longer than "
                                f"{MAX_QUANTITY_TEXT} characters")
    try:
        if kind == "cpu":
            return quantity.parse_milli_cpu(s)
        q = quantity.parse_memory(s)
    except ValueError as e:  # QuantityError, or int() refusing a huge digit string
        if kind == "count" and "whole number of bytes" in str(e):
            raise ConfigError(path, f"{short(s)} is not a whole number") from None
        raise ConfigError(path, str(e)) from None
    return q
