"""Quantities parsed and formatted as k8s.io/apimachinery/pkg/api/resource does."""
from fractions import Fraction

import pytest

from krm_fn.quantity import (MILLI, NANO, QuantityError, ceil_div, format_binary_si,
                             format_bytes, format_cpu, format_cpu_rounded, format_decimal_si,
                             format_like, parse, parse_cpu, parse_memory, parse_milli_cpu, ratio,
                             trunc_div)

N = NANO        # values are exact integers in nano-units


@pytest.mark.parametrize("text,value,fmt", [
    ("1", N, "DecimalSI"),
    ("1.", N, "DecimalSI"),
    (".5", N // 2, "DecimalSI"),
    ("+2", 2 * N, "DecimalSI"),
    ("500m", N // 2, "DecimalSI"),
    ("1500m", 3 * N // 2, "DecimalSI"),
    ("100u", N // 10000, "DecimalSI"),
    ("5n", 5, "DecimalSI"),
    ("2k", 2000 * N, "DecimalSI"),
    ("2E", 2 * 10 ** 18 * N, "DecimalSI"),
    ("1Ki", 1024 * N, "BinarySI"),
    ("1.5Gi", 1610612736 * N, "BinarySI"),
    ("16Gi", 16 * 2 ** 30 * N, "BinarySI"),
    ("1e3", 1000 * N, "DecimalExponent"),
    ("1E3", 1000 * N, "DecimalExponent"),
    ("12e-1", 6 * N // 5, "DecimalExponent"),
    ("1e+2", 100 * N, "DecimalExponent"),
    ("0", 0, "DecimalSI"),
    ("-0", 0, "DecimalSI"),
    (4, 4 * N, "DecimalSI"),
])
def test_parse(text, value, fmt):
    q = parse(text)
    assert (q.nanos, q.fmt) == (value, fmt)


@pytest.mark.parametrize("text", ["1.5.0", "-2", "abc", "1e400", "1e-9223372036854775809",
                                  "", ".", "1e", "1Ki5", "1mi",
                                  "1 Gi", "0x10", "1.0e", "Gi", None, True])
def test_parse_rejects(text):
    with pytest.raises(QuantityError):
        parse(text)


def test_config_cpu_finer_than_a_millicore_is_refused():
    # a pod's cpu finer than 1m is read exactly (tests/test_fine_cpu.py); krm-fn's config not
    with pytest.raises(QuantityError, match="finer than 1m"):
        parse_milli_cpu("0.0001m")
    with pytest.raises(QuantityError, match="finer than 1m"):
        parse_milli_cpu("1500.5m")
    # a pod's is stored rounded up to 1m (pkg/apis/core/v1/defaults.go RoundUp(-3))
    assert parse_cpu("1500.5m").nanos == 1501 * 1000 * 1000


def test_memory_must_be_whole_bytes():
    with pytest.raises(QuantityError, match="did you mean 500M"):
        parse_memory("500m")


@pytest.mark.parametrize("value,text", [(3 * N // 2, "1500m"), (2 * N, "2"),
                                        (1000 * N, "1k"), (N // 2, "500m"),
                                        (0, "0"), (12000 * N, "12k")])
def test_format_decimal_si(value, text):
    assert format_decimal_si(value) == text


@pytest.mark.parametrize("value,text", [(2 ** 32, "4Gi"), (1536 * 2 ** 20, "1536Mi"),
                                        (1000, "1k"), (1023, "1023"), (1025, "1025")])
def test_format_binary_si(value, text):
    assert format_binary_si(value * N) == text
    assert format_bytes(value) == text


def test_format_cpu():
    assert format_cpu(4 * N) == "4"
    assert format_cpu(N // 10) == "100m"
    assert format_cpu(N // 10000) == "100u"


@pytest.mark.parametrize("text", ["1Gi\n", "4\n", "9" * 5000, "1" * 65])
def test_parse_rejects_trailing_newline_and_huge_text(text):
    with pytest.raises(QuantityError):
        parse(text)


def test_whole_rounds_up_as_value():
    # Quantity.Value() rounds up to a whole unit; is_integer is the exact test
    assert parse("1500m").whole == 2 and not parse("1500m").is_integer
    assert parse_memory("1Gi").whole == 2 ** 30 and parse_memory("1Gi").is_integer
    assert parse("5n").whole == 1


def test_finer_than_a_nano_rounds_up_and_too_large_is_refused():
    # ParseQuantity rounds a non-zero amount finer than 1n up to 1n (inf.RoundUp)
    assert parse("0.1n").nanos == 1 and parse("1e-400").nanos == 1
    assert parse("1.0000000001").nanos == N + 1
    assert parse("0e-400").nanos == 0
    # a BinarySI amount below 1 becomes DecimalSI
    assert parse("0.0000000001Ki").fmt == "DecimalSI" and parse("0.5Ki").fmt == "BinarySI"
    # interpret keeps int32(exponent): 2^32 wraps to 0
    assert parse("1e4294967296").nanos == N and parse("1e4294967299").nanos == 1000 * N
    with pytest.raises(QuantityError, match="larger than 2"):
        parse("9223372036854775808")
    assert parse("9223372036854775807").nanos == (2 ** 63 - 1) * N


def test_format_cpu_rounded_is_round_half_to_even():
    # what round(Fraction(cores) * 1000) / 1000 gave: half to even at 0.5m
    assert format_cpu_rounded(3 * N // 7) == "429m"
    assert format_cpu_rounded(4 * N) == "4"
    assert format_cpu_rounded(MILLI // 2) == "0"
    assert format_cpu_rounded(3 * MILLI // 2) == "2m"
    assert format_cpu_rounded(5 * MILLI // 2) == "2m"
    for nanos in (1, MILLI - 1, 123456789, 2 * N + MILLI // 2, 7 * MILLI + MILLI // 2 + 1):
        expect = round(Fraction(nanos, N) * 1000)
        assert format_cpu_rounded(nanos) == format_cpu(expect * MILLI)


def test_format_like_follows_the_family():
    assert format_like(2 ** 30 * N, parse_memory("1Gi")) == "1Gi"
    assert format_like(2 ** 30 * N, parse_memory("1G")) == "1073741824"
    assert format_like(N // 2, None) == "500m"


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (6, 3), (-6, 3), (0, 5), (1, 10 ** 9)])
def test_integer_division_helpers(a, b):
    import math
    assert ceil_div(a, b) == math.ceil(Fraction(a, b))
    assert trunc_div(a, b) == int(Fraction(a, b))


@pytest.mark.parametrize("text", ["10", "7.5", "-5", "+0.25", "1e3", " 5 ", "1/3", "1_0",
                                  "0.000001", "100", "5.", ".5"])
def test_ratio_reads_as_fractions_does(text):
    n, d = ratio(text)
    assert d > 0 and Fraction(n, d) == Fraction(text)


@pytest.mark.parametrize("text,error", [("abc", ValueError), ("", ValueError),
                                        ("inf", ValueError), ("1/0", ZeroDivisionError),
                                        ("1..5", ValueError)])
def test_ratio_refuses_as_fractions_does(text, error):
    with pytest.raises(error) as mine:
        ratio(text)
    with pytest.raises(error) as theirs:
        Fraction(text)
    assert str(mine.value) == str(theirs.value)


def test_the_kubelet_reads_a_wrapped_exponent_as_the_api_server_does():
    """Hostile test: `1e4294967296` is 1 to ParseQuantity (interpret keeps int32(exponent));
    krm-fn's config took it since the exponent wraps, and the kubelet model
    (node/go_quantity.py) then computed 10^4294967296 and hung. Both wrap it now."""
    from krm_fn.node import go_quantity
    assert go_quantity.go_quantity("1e4294967296") == (N, "DecimalExponent")
    assert go_quantity.go_quantity("1e-2147483648") == (1, "DecimalExponent")
    assert go_quantity.go_quantity("1e4294967299") == (1000 * N, "DecimalExponent")
    assert go_quantity.quantity_string(go_quantity.parse_quantity("0e2147483647")) == "0"


def test_a_render_with_a_wrapped_exponent_in_kube_reserved_finishes():
    import yaml
    from tests.helpers import run_fn
    from tests.test_verdict import config, deployment
    import copy
    cfg = copy.deepcopy(config())       # config() shares test_verdict's POOL: not changed
    cfg["spec"]["nodePools"][0].setdefault("kubelet", {})["kubeReserved"] = {
        "cpu": "@A@", "memory": "@A@"}
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [deployment()], "functionConfig": cfg}
    # quoted: unquoted, YAML 1.2 reads 1e4294967296 as a float (inf)
    text = yaml.safe_dump(rl, sort_keys=False).replace("'@A@'", '"1e4294967296"')
    p = run_fn([], text)
    assert p.returncode == 0 and "1e4294967296" in text, p.stderr
