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

from krm_fn.matching import LazyPattern, digits

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
