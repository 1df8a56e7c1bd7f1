"""Regular expressions for the JSON Schema of config values (krm_fn.config.schema): the
spelling of quantities, of whole numbers within a range, of supported Kubernetes versions.
Each matches what the loader's type accepts (krm_fn.config.types), or a close superset.
"""
from __future__ import annotations

# Kubernetes quantity spelling (krm_fn/quantity.py grammar; negative values are refused
# for cpu and memory). A superset of what parses: "1.5" bytes or "0" still fail the loader.
QUANTITY = r"^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
# types.Int: optional surrounding whitespace, optional minus, digits.
_INT_STRING = r"^\s*-?[0-9]+\s*$"


def _digits(a: str, b: str) -> str:
    return a if a == b else f"[{a}-{b}]"


def _same_length(a: str, b: str) -> list[str]:
    """Regex alternatives matching exactly the digit strings from a to b (same length)."""
    n = len(a) - 1
    if a == b:
        return [a]
    if n == 0:
        return [_digits(a, b)]
    if a[1:] == "0" * n and b[1:] == "9" * n:
        return [_digits(a[0], b[0]) + f"[0-9]{{{n}}}"]
    if a[0] == b[0]:
        return [a[0] + p for p in _same_length(a[1:], b[1:])]
    out = [a[0] + p for p in _same_length(a[1:], "9" * n)]
    if int(b[0]) - int(a[0]) > 1:
        out.append(_digits(str(int(a[0]) + 1), str(int(b[0]) - 1)) + f"[0-9]{{{n}}}")
    return out + [b[0] + p for p in _same_length("0" * n, b[1:])]


def int_pattern(minimum: int | None, maximum: int | None) -> str:
    """Pattern for an int field's string spelling (types.Int: surrounding whitespace,
    digits, leading zeros allowed) that also enforces the range, since `minimum`/`maximum`
    apply to numbers only. Without a non-negative minimum and a maximum: any whole number."""
    if minimum is None or maximum is None or minimum < 0 or minimum > maximum:
        return _INT_STRING
    alts = []
    for width in range(len(str(minimum)), len(str(maximum)) + 1):
        lo = max(minimum, 10 ** (width - 1) if width > 1 else 0)
        hi = min(maximum, 10 ** width - 1)
        if lo <= hi:
            alts += _same_length(str(lo), str(hi))
    return r"^\s*0*(" + "|".join(alts) + r")\s*$"


def version_pattern(minors: list[int]) -> str:
    """versions.version_minor (`v?1.MINOR(.PATCH)?`) restricted to the minors `minors` (the
    supported ones, krm_fn.config.versions.Version)."""
    return rf"^v?1\.({'|'.join(str(m) for m in minors)})(\.[0-9]+)?$"
