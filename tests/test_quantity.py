"""Quantities parsed and formatted as k8s.io/apimachinery/pkg/api/resource does."""
from krm_fn.rational import Fraction

import pytest

from krm_fn.quantity import (QuantityError, format_binary_si, format_cpu, format_decimal_si,
                             parse, parse_cpu, parse_memory)


@pytest.mark.parametrize("text,value,fmt", [
    ("1", Fraction(1), "DecimalSI"),
    ("1.", Fraction(1), "DecimalSI"),
    (".5", Fraction(1, 2), "DecimalSI"),
    ("+2", Fraction(2), "DecimalSI"),
    ("500m", Fraction(1, 2), "DecimalSI"),
    ("1500m", Fraction(3, 2), "DecimalSI"),
    ("100u", Fraction(1, 10000), "DecimalSI"),
    ("5n", Fraction(5, 10 ** 9), "DecimalSI"),
    ("2k", Fraction(2000), "DecimalSI"),
    ("2E", Fraction(2 * 10 ** 18), "DecimalSI"),
    ("1Ki", Fraction(1024), "BinarySI"),
    ("1.5Gi", Fraction(1610612736), "BinarySI"),
    ("16Gi", Fraction(16 * 2 ** 30), "BinarySI"),
    ("1e3", Fraction(1000), "DecimalExponent"),
    ("1E3", Fraction(1000), "DecimalExponent"),
    ("12e-1", Fraction(6, 5), "DecimalExponent"),
    ("1e+2", Fraction(100), "DecimalExponent"),
    ("0", Fraction(0), "DecimalSI"),
    ("-0", Fraction(0), "DecimalSI"),
    (4, Fraction(4), "DecimalSI"),
])
def test_parse(text, value, fmt):
    q = parse(text)
    assert (q.value, q.fmt) == (value, fmt)


@pytest.mark.parametrize("text", ["1.5.0", "-2", "abc", "1e400", "", ".", "1e", "1Ki5", "1mi",
                                  "1 Gi", "0x10", "1.0e", "Gi", None, True])
def test_parse_rejects(text):
    with pytest.raises(QuantityError):
        parse(text)


def test_cpu_finer_than_a_millicore_is_refused():
    with pytest.raises(QuantityError, match="finer than 1m"):
        parse_cpu("0.0001m")
    with pytest.raises(QuantityError, match="finer than 1m"):
        parse_cpu("1500.5m")


def test_memory_must_be_whole_bytes():
    with pytest.raises(QuantityError, match="did you mean 500M"):
        parse_memory("500m")


@pytest.mark.parametrize("value,text", [(Fraction(3, 2), "1500m"), (Fraction(2), "2"),
                                        (Fraction(1000), "1k"), (Fraction(1, 2), "500m"),
                                        (Fraction(0), "0"), (Fraction(12000), "12k")])
def test_format_decimal_si(value, text):
    assert format_decimal_si(value) == text


@pytest.mark.parametrize("value,text", [(2 ** 32, "4Gi"), (1536 * 2 ** 20, "1536Mi"),
                                        (1000, "1k"), (1023, "1023"), (1025, "1025")])
def test_format_binary_si(value, text):
    assert format_binary_si(Fraction(value)) == text


def test_format_cpu():
    assert format_cpu(Fraction(4)) == "4"
    assert format_cpu(Fraction(1, 10)) == "100m"
    with pytest.raises(QuantityError):
        format_cpu(Fraction(1, 10000))


@pytest.mark.parametrize("text", ["1Gi\n", "4\n", "9" * 5000, "1" * 65])
def test_parse_rejects_trailing_newline_and_huge_text(text):
    with pytest.raises(QuantityError):
        parse(text)
