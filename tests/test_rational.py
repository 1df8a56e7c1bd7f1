"""krm_fn.rational.Fraction against the standard library's fractions.Fraction: every
operation the module docstring names gives the same value, type, str, hash and error, on
generated operands (hypothesis) and on the edge cases below."""
from __future__ import annotations

import copy
import fractions
import math
import operator
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn.rational import Fraction

ints = st.integers(min_value=-10 ** 30, max_value=10 ** 30)
small = st.integers(min_value=-40, max_value=40)
nonzero = ints.filter(bool)
pairs = st.tuples(ints, nonzero)
floats = st.floats(allow_nan=True, allow_infinity=True)


def ours(p):
    return Fraction(*p) if isinstance(p, tuple) else p


def std(p):
    return fractions.Fraction(*p) if isinstance(p, tuple) else p


def same(a, b):
    """`a` (ours) and `b` (the standard library's) are the same result."""
    if isinstance(b, fractions.Fraction):
        assert type(a) is Fraction, (a, b)
        assert (a.numerator, a.denominator) == (b.numerator, b.denominator)
        assert str(a) == str(b) and hash(a) == hash(b)
        assert repr(a) == repr(b)
    elif isinstance(b, tuple):
        assert type(a) is tuple and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(b, float) and math.isnan(b):
        assert isinstance(a, float) and math.isnan(a)
    else:
        assert type(a) is type(b) and a == b, (a, b)


def outcome(fn, *args):
    """("ok", result), or (the error's type and text, None): the text counts too, since an
    uncaught error reaches the user as `internal error: <type>: <text>`."""
    try:
        return "ok", fn(*args)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}", None


def check(fn, *args_pairs):
    kind_a, a = outcome(fn, *map(ours, args_pairs))
    kind_b, b = outcome(fn, *map(std, args_pairs))
    assert kind_a == kind_b, (fn, args_pairs, kind_a, kind_b)
    if kind_a == "ok":
        same(a, b)


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, divmod, operator.eq, operator.ne, operator.lt, operator.le,
          operator.gt, operator.ge]


ODD = [0, 0.0, -0.0, None, "2", [1], True, float("nan"), float("inf"), 10 ** 40]


@pytest.mark.parametrize("other", ODD, ids=repr)
@pytest.mark.parametrize("x", [(3, 7), (-6, 4), (0, 1), (5, 1)], ids=str)
def test_errors_and_odd_operands_match_with_their_text(x, other):
    for op in BINARY:
        check(op, x, other)
        check(op, other, x)
    if other != 10 ** 40:       # (3/7) ** 10**40 takes forever in both
        check(operator.pow, x, other)
    check(operator.pow, other, x)


@settings(max_examples=150, deadline=None)
@given(pairs, st.one_of(pairs, ints, floats))
def test_binary_operations_match_the_standard_library(x, y):
    for op in BINARY:
        if op is divmod:
            def op(a, b):  # noqa: E731 - compare the two halves one by one
                return divmod(a, b)
            ka, a = outcome(op, ours(x), ours(y))
            kb, b = outcome(op, std(x), std(y))
            assert ka == kb
            if ka == "ok":
                same(a[0], b[0])
                same(a[1], b[1])
            continue
        check(op, x, y)
        check(op, y, x)


@settings(max_examples=200, deadline=None)
@given(st.tuples(st.integers(-10 ** 6, 10 ** 6), st.integers(-10 ** 6, 10 ** 6).filter(bool)),
       small)
def test_integer_powers_match(x, e):
    check(operator.pow, x, e)
    check(operator.pow, x[0] % 50, (e, 1))
    check(operator.pow, (x[0] % 50, 7), (e, 1))
    check(operator.pow, x[0] % 50, (e, 2))


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_conversions_and_rounding_match(x):
    for fn in (int, math.floor, math.ceil, round, float, bool, abs, operator.neg,
               operator.pos, str, repr, hash, lambda v: round(v, 2), lambda v: round(v, -2),
               lambda v: round(v, 0), lambda v: v.as_integer_ratio()):
        check(fn, x)


@settings(max_examples=200, deadline=None)
@given(st.one_of(ints, floats, st.text(max_size=12),
                 st.from_regex(r"\A[+-]?[0-9]{0,6}(\.[0-9]{0,6})?\Z")))
def test_construction_matches(v):
    constructed_alike(v)


def constructed_alike(v, compare=None):
    """Fraction(v) of ours and of the standard library: the same value or the same error
    (`compare(a, b)` checks the values; default `same`)."""
    kind_a, a = outcome(Fraction, v)
    kind_b, b = outcome(fractions.Fraction, v)
    assert kind_a == kind_b, (v, kind_a, kind_b)
    if kind_a == "ok":
        (compare or same)(a, b)


def test_long_decimal_strings_read_as_the_standard_library_reads_them():
    # each part under int's 4,300-digit limit, the two together over it (the values are
    # too long for str, so they are compared by numerator and denominator)
    for text in ("0" * 3000 + "1." + "0" * 3000, "1" * 4400 + ".5", "1." + "2" * 4400):
        constructed_alike(text, lambda a, b: (a.numerator, a.denominator) == (
            b.numerator, b.denominator) or pytest.fail(text[:20]))


@pytest.mark.parametrize("text", ["1", "-0", "+2.50", "10.5", ".5", "5.", "1e3", " 7 ", "1/3",
                                  "1_000", "\u0661\u0660", "inf", "nan", "", "-", "1.2.3",
                                  "0x10", "1/0"])
def test_strings_read_as_the_standard_library_reads_them(text):
    constructed_alike(text)


def test_whole_values_share_dict_keys_with_ints_and_standard_fractions():
    d = {4: "int"}
    assert d[Fraction(8, 2)] == "int"
    assert {Fraction(1, 3): 1}[fractions.Fraction(1, 3)] == 1
    assert Fraction(1, 3) == fractions.Fraction(1, 3)
    assert fractions.Fraction(3, 2) + Fraction(1, 2) == 2


def test_two_argument_forms_and_errors():
    assert Fraction(Fraction(1, 2), Fraction(1, 3)) == Fraction(3, 2)
    assert (Fraction(6, -4).numerator, Fraction(6, -4).denominator) == (-3, 2)
    with pytest.raises(ZeroDivisionError, match=r"Fraction\(1, 0\)"):
        Fraction(1, 0)
    with pytest.raises(TypeError):
        Fraction("1", 2)
    with pytest.raises(TypeError):
        Fraction([1])
    with pytest.raises(OverflowError):
        Fraction(float("inf"))
    with pytest.raises(ValueError):
        Fraction(float("nan"))


def test_copies_and_pickles_are_equal_values():
    x = Fraction(7, 3)
    assert copy.copy(x) is x and copy.deepcopy([x])[0] == x
    assert pickle.loads(pickle.dumps(x)) == x


def test_importing_it_does_not_import_fractions_decimal_or_numbers():
    code = ("import sys, krm_fn.rational as r; r.Fraction('2.5') + r.Fraction(1, 3); "
            "print(sorted(m for m in ('fractions', 'decimal', 'numbers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
