"""Exact rational numbers: the part of the standard library's `fractions.Fraction` krm-fn
uses, with the same results, made cheap to import.

Start-up is most of a small render's cost (docs/performance.md, P4), and `fractions` imports
`decimal` (a C extension, loaded and linked) and `numbers` (the numeric ABCs) and compiles a
regular expression: about 3.5 ms of CPU, 7 % of a 10-item render, for a type krm-fn uses
only to keep quantities exact (CPU in cores, memory in bytes; krm_fn/quantity.py). This
class gives the same values, `str`, hash, comparisons and rounding as `fractions.Fraction`
(Python 3.11, Lib/fractions.py) for what krm-fn does with it:

- `Fraction(n)` of an int (bool included), a Fraction (this one or the standard library's:
  anything with int `numerator` and `denominator`), a finite float (exactly, as
  `float.as_integer_ratio`) or a str; `Fraction(n, d)` of two ints or rationals.
  A str of the form `[+-]digits[.digits]` is read here; any other str is read by
  `fractions.Fraction` itself (imported then), so every spelling it accepts or refuses
  (`" 1e3 "`, `"1/3"`, `"1_0"`, `"inf"`) gives the same result or the same ValueError.
- `+ - * / // % divmod **` with ints and rationals (exact; `**` with an int exponent),
  with a float operand the float result; unary `- + abs`;
- `== != < <= > >=` with ints, rationals and floats; `hash` equal to the int's for a whole
  value (so 4 and Fraction(4) are one dict key), and to `fractions.Fraction`'s otherwise;
- `int()` (toward zero), `math.floor`, `math.ceil`, `round(x)` (half to even), `float()`,
  `bool`, `numerator`, `denominator`, `as_integer_ratio()`;
- `str`: "3" or "3/7"; `repr`: "Fraction(3, 7)".

Not provided (krm-fn uses none of them): complex operands, `real`, `imag`, `conjugate`,
`limit_denominator`, format specs. Raises what `fractions.Fraction` raises, with the same
text: ZeroDivisionError for a zero denominator or a division by zero, TypeError for an
operand of another type, ValueError for a str that is not a number. tests/test_rational.py
compares every operation and its error text with `fractions.Fraction` (hypothesis).
"""
from __future__ import annotations

import math
import sys

from krm_fn.matching import digits

_MODULUS = sys.hash_info.modulus
_INF = sys.hash_info.inf


def _decimal(s: str):
    """(numerator, denominator) of `s` when it is `[+-]digits[.digits]` in ASCII, else None."""
    body = s[1:] if s[:1] in ("+", "-") else s
    whole, dot, frac = body.partition(".")
    if not digits(whole) or (dot and not digits(frac)):
        return None
    scale = 10 ** len(frac)     # the two parts apart, as fractions.Fraction reads them (each
    n = int(whole) * scale + (int(frac) if frac else 0)     # under int's digit limit)
    return (-n if s[:1] == "-" else n), scale


def _div(n1: int, d1: int, n2: int, d2: int):
    """(n1/d1) / (n2/d2) as fractions.Fraction's _div computes it, so that a division by
    zero raises the same ZeroDivisionError text (`Fraction(1, 0)` for 3/7 / 0)."""
    g1 = math.gcd(n1, n2)
    if g1 > 1:
        n1 //= g1
        n2 //= g1
    g2 = math.gcd(d2, d1)
    if g2 > 1:
        d2 //= g2
        d1 //= g2
    n, d = n1 * d2, n2 * d1
    if d < 0:
        n, d = -n, -d
    if d == 0:
        raise ZeroDivisionError(f"Fraction({n}, 0)")
    return Fraction._of(n, d)


def _pair(x):
    """(numerator, denominator) of an int or a rational `x`, or None for anything else."""
    if x.__class__ is Fraction:
        return x.numerator, x.denominator
    if isinstance(x, int):
        return int(x), 1
    n, d = getattr(x, "numerator", None), getattr(x, "denominator", None)
    if isinstance(n, int) and isinstance(d, int) and not isinstance(x, float):
        return n, d
    return None


class Fraction:
    """An exact rational `numerator`/`denominator` (ints, denominator > 0, in lowest
    terms), immutable. Arguments and results as in the module docstring."""

    __slots__ = ("numerator", "denominator")

    def __new__(cls, numerator=0, denominator=None):
        self = object.__new__(cls)
        if denominator is None:
            if type(numerator) is int:
                self.numerator, self.denominator = numerator, 1
                return self
            p = _pair(numerator)
            if p is None:
                if isinstance(numerator, float):
                    p = numerator.as_integer_ratio()
                elif isinstance(numerator, str):
                    p = _decimal(numerator)
                    if p is None:
                        from fractions import Fraction as Std
                        std = Std(numerator)
                        p = std.numerator, std.denominator
                else:
                    raise TypeError("argument should be a string or a Rational instance")
            n, d = p
        else:
            a, b = _pair(numerator), _pair(denominator)
            if a is None or b is None:
                raise TypeError("both arguments should be Rational instances")
            n, d = a[0] * b[1], a[1] * b[0]
        if d == 0:
            raise ZeroDivisionError(f"Fraction({n}, 0)")
        g = math.gcd(n, d)
        if d < 0:
            g = -g
        self.numerator, self.denominator = n // g, d // g
        return self

    @classmethod
    def _of(cls, n: int, d: int) -> Fraction:
        """n/d already in lowest terms with d > 0."""
        self = object.__new__(cls)
        self.numerator, self.denominator = n, d
        return self

    @classmethod
    def _reduced(cls, n: int, d: int) -> Fraction:
        """n/d with d > 0, reduced."""
        g = math.gcd(n, d)
        return cls._of(n // g, d // g) if g != 1 else cls._of(n, d)

    def as_integer_ratio(self) -> tuple[int, int]:
        """(numerator, denominator)."""
        return self.numerator, self.denominator

    # arithmetic: exact with ints and rationals, float with a float, else NotImplemented
    def __add__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) + other if isinstance(other, float) else NotImplemented
        n, d = p
        return Fraction._reduced(self.numerator * d + n * self.denominator, self.denominator * d)

    __radd__ = __add__

    def __sub__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) - other if isinstance(other, float) else NotImplemented
        n, d = p
        return Fraction._reduced(self.numerator * d - n * self.denominator, self.denominator * d)

    def __rsub__(self, other):
        p = _pair(other)
        if p is None:
            return other - float(self) if isinstance(other, float) else NotImplemented
        n, d = p
        return Fraction._reduced(n * self.denominator - self.numerator * d, self.denominator * d)

    def __mul__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) * other if isinstance(other, float) else NotImplemented
        n, d = p
        return Fraction._reduced(self.numerator * n, self.denominator * d)

    __rmul__ = __mul__

    def __truediv__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) / other if isinstance(other, float) else NotImplemented
        return _div(self.numerator, self.denominator, p[0], p[1])

    def __rtruediv__(self, other):
        p = _pair(other)
        if p is None:
            return other / float(self) if isinstance(other, float) else NotImplemented
        return _div(p[0], p[1], self.numerator, self.denominator)

    def __floordiv__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) // other if isinstance(other, float) else NotImplemented
        return (self.numerator * p[1]) // (self.denominator * p[0])

    def __rfloordiv__(self, other):
        p = _pair(other)
        if p is None:
            return other // float(self) if isinstance(other, float) else NotImplemented
        return (p[0] * self.denominator) // (p[1] * self.numerator)

    def __mod__(self, other):
        p = _pair(other)
        if p is None:
            return float(self) % other if isinstance(other, float) else NotImplemented
        d = self.denominator * p[1]
        return Fraction((self.numerator * p[1]) % (p[0] * self.denominator), d)

    def __rmod__(self, other):
        p = _pair(other)
        if p is None:
            return other % float(self) if isinstance(other, float) else NotImplemented
        d = self.denominator * p[1]
        return Fraction((p[0] * self.denominator) % (self.numerator * p[1]), d)

    def __divmod__(self, other):
        p = _pair(other)
        if p is None:
            return divmod(float(self), other) if isinstance(other, float) else NotImplemented
        return self // other, self % other

    def __rdivmod__(self, other):
        p = _pair(other)
        if p is None:
            return divmod(other, float(self)) if isinstance(other, float) else NotImplemented
        return other // self, other % self

    def __pow__(self, other):
        p = _pair(other)
        if p is None or p[1] != 1:      # as fractions.Fraction: float(self) ** other
            return float(self) ** (other if p is None else p[0] / p[1])
        e = p[0]
        n, d = self.numerator, self.denominator
        if e >= 0:
            return Fraction._of(n ** e, d ** e)
        if n == 0:
            raise ZeroDivisionError(f"Fraction({d ** -e}, 0)")
        if n > 0:
            return Fraction._of(d ** -e, n ** -e)
        return Fraction._of((-d) ** -e, (-n) ** -e)

    def __rpow__(self, other):
        if self.denominator == 1 and self.numerator >= 0:
            return other ** self.numerator
        p = _pair(other)
        if p is not None:
            return Fraction._of(*p) ** self
        if self.denominator == 1:
            return other ** self.numerator
        return other ** float(self)

    def __neg__(self):
        return Fraction._of(-self.numerator, self.denominator)

    def __pos__(self):
        return Fraction._of(self.numerator, self.denominator)

    def __abs__(self):
        return Fraction._of(abs(self.numerator), self.denominator)

    # conversions
    def __int__(self) -> int:
        n, d = self.numerator, self.denominator
        return -(-n // d) if n < 0 else n // d

    __trunc__ = __int__

    def __floor__(self) -> int:
        return self.numerator // self.denominator

    def __ceil__(self) -> int:
        return -(-self.numerator // self.denominator)

    def __round__(self, ndigits=None):
        if ndigits is not None:
            shift = 10 ** abs(ndigits)
            if ndigits > 0:
                return Fraction(round(self * shift), shift)
            return Fraction(round(self / shift) * shift)
        floor, rem = divmod(self.numerator, self.denominator)
        twice = rem * 2
        if twice < self.denominator:
            return floor
        if twice > self.denominator:
            return floor + 1
        return floor if floor % 2 == 0 else floor + 1

    def __float__(self) -> float:
        return self.numerator / self.denominator

    def __bool__(self) -> bool:
        return self.numerator != 0

    # comparison and hashing
    def __hash__(self) -> int:
        n, d = self.numerator, self.denominator
        if d == 1:
            return hash(n)
        try:
            dinv = pow(d, -1, _MODULUS)
        except ValueError:
            h = _INF
        else:
            h = hash(hash(abs(n)) * dinv)
        h = h if n >= 0 else -h
        return -2 if h == -1 else h

    def _cmp(self, other):
        """(a, b) integers that compare as self and `other`, or None (NotImplemented)."""
        p = _pair(other)
        if p is None:
            if isinstance(other, float):
                if math.isnan(other) or math.isinf(other):
                    return 0.0, other
                p = other.as_integer_ratio()
            else:
                return None
        return self.numerator * p[1], p[0] * self.denominator

    def __eq__(self, other):
        if other.__class__ is int:
            return self.denominator == 1 and self.numerator == other
        if other.__class__ is Fraction:       # both in lowest terms
            return self.numerator == other.numerator and self.denominator == other.denominator
        c = self._cmp(other)
        return NotImplemented if c is None else c[0] == c[1]

    def __lt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c[0] < c[1]

    def __le__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c[0] <= c[1]

    def __gt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c[0] > c[1]

    def __ge__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c[0] >= c[1]

    # text, copying
    def __str__(self) -> str:
        if self.denominator == 1:
            return str(self.numerator)
        return f"{self.numerator}/{self.denominator}"

    def __repr__(self) -> str:
        return f"Fraction({self.numerator}, {self.denominator})"

    def __reduce__(self):
        return (Fraction, (self.numerator, self.denominator))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self
