"""The character tests that replaced the regular expressions a render used to compile at
import (issue 11 part 10, start-up time) accept exactly what those expressions accepted with
`fullmatch`: each property compares the old expression (quoted here, as it was in the code)
with its replacement on generated strings: strings the expression matches, the same with one
character inserted, replaced or dropped, joined with separators, a newline at the end
(`$` would match before it; `fullmatch` does not), non-ASCII letters and digits."""
from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from krm_fn import numbers, quantity
from krm_fn.config import checks, values
from krm_fn.yaml import emit

# ASCII letters and digits, the punctuation the grammars use, and what they must refuse:
# other scripts' letters and digits (isdigit / isdecimal / isalnum accept them), the micro
# sign and Greek mu, the Kelvin sign, whitespace, a newline, control characters.
_ALPHABET = ("abcdefghijklmnopqrstuvwxyzAZKMGTPEiunm0123456789"
             "-_./:@+%,;= \n\t\r\x00\x7f\x85\xa0\u2028\u2029é߲²٣४µμ\u212a")
# KRM_FN_PROPERTY_EXAMPLES=5000 for a longer search (as tests/test_properties.py)
_EXAMPLES = int(os.environ.get("KRM_FN_PROPERTY_EXAMPLES", "0")) or 400
_SETTINGS = settings(max_examples=_EXAMPLES, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _mutated(args: tuple) -> str:
    s, pos, ch, how = args
    pos = pos % (len(s) + 1)
    if how == "insert":
        return s[:pos] + ch + s[pos:]
    if how == "replace":
        return s[:pos] + ch + s[pos + 1:]
    if how == "drop":
        return s[:pos] + s[pos + 1:]
    return s + "\n"


def _strings(pattern: str, matching=None) -> st.SearchStrategy[str]:
    """Strings near the language of `pattern` (`matching`: strings it matches, default
    generated from it): matching ones, one edit away, joined."""
    if matching is None:
        matching = st.from_regex(pattern, fullmatch=True)
    edits = st.tuples(matching, st.integers(0, 300), st.sampled_from(_ALPHABET),
                      st.sampled_from(["insert", "replace", "drop", "newline"]))
    joined = st.tuples(matching, st.sampled_from(["", ".", "/", ":", "@", "-", "_", "__"]),
                       matching).map(lambda t: "".join(t))
    return st.one_of(matching, edits.map(_mutated), joined, st.text(_ALPHABET, max_size=16))


def _same(pattern: str, test, s: str) -> None:
    assert test(s) == (re.fullmatch(pattern, s) is not None), (pattern, s)


DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
PROM_DURATION = r"(?=[0-9])([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?"
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_DOMAIN = (r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
                 r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?")
IMAGE = (rf"(?:{_IMAGE_DOMAIN}/)?{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
         r"(?::[\w][\w.-]{0,127})?"
         r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")
VERSION = r"v?1\.([0-9]{1,2})(\.[0-9]+)?"
CONTROL = "[\x00-\x1f\x7f-\x9f\u2028\u2029]"
QUANTITY = r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*)([+-]?[0-9]*)$"
COUNT = r"[0-9]{1,16}"
# Go's time.ParseDuration: ASCII digits only, both micro signs (µ U+00B5, μ U+03BC), a signed
# "0"; krm_fn.node.kubelet_says.duration_error replaced kubelet_check.is_go_duration, whose
# expression took any script's digits (\d) and missed μs (tests/test_kubelet_config_harness.py
# checks the port against the kubelet's own Go)
GO_DURATION = r"[-+]?0|[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+"
_GO_UNIT_NS = {"ns": 1, "us": 10 ** 3, "µs": 10 ** 3, "μs": 10 ** 3, "ms": 10 ** 6,
               "s": 10 ** 9, "m": 60 * 10 ** 9, "h": 3600 * 10 ** 9}
PLAIN_KEY = r"^[A-Za-z_][A-Za-z0-9_./-]*$"
# go-yaml resolve.go yamlStyleFloat (krm_fn.numbers.go_style_float)
GO_YAML_FLOAT = r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"
PLAIN_VALUE = r"^[A-Za-z][A-Za-z0-9_./-]*$"


@_SETTINGS
@given(_strings(DNS_LABEL))
@example("a-b\n")
@example("ａ")
def test_dns_label_is_the_expression(s):
    _same(DNS_LABEL, checks.is_dns_label, s)


CONTAINER_NAME = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"   # krm_fn/pipeline/select.py's


@_SETTINGS
@given(_strings(CONTAINER_NAME))
@example("a" * 63)
@example("a" * 64)
def test_pinned_container_name_is_the_expression(s):
    # pipeline/select.py: `is_dns_label(p) and len(p) <= 63` for each listed container
    _same(CONTAINER_NAME, lambda p: checks.is_dns_label(p) and len(p) <= 63, s)


@_SETTINGS
@given(_strings(DNS_SUBDOMAIN))
@example("a.b\n")
@example("a..b")
@example(".a")
def test_dns_subdomain_is_the_expression(s):
    _same(DNS_SUBDOMAIN, checks.is_dns_subdomain, s)


@_SETTINGS
@given(_strings(LABEL_NAME))
@example("a.b_c-D\n")
@example("é")
def test_label_name_is_the_expression(s):
    _same(LABEL_NAME, checks.is_label_name, s)


@_SETTINGS
@given(_strings(ENV_NAME))
@example("OMP_NUM_THREADS\n")
@example("é")
@example("_1")
def test_env_name_is_the_expression(s):
    _same(ENV_NAME, checks.is_identifier, s)


@_SETTINGS
@given(_strings(PROM_DURATION))
@example("5ms")
@example("1m5ms")
@example("5ms5s")
@example("1h1h")
@example("15m\n")
@example("٣m")
def test_prometheus_duration_is_the_expression(s):
    _same(PROM_DURATION, checks.is_prom_duration, s)


def _optional(prefix: str, part: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), part.map(lambda p: prefix + p))


# image references assembled from their parts (generating from the whole expression is slow:
# its hex digest and tag repeat 32+ and 128 times); tags and digests near their length bounds
_IMAGES = st.tuples(
    st.one_of(st.just(""), st.from_regex(_IMAGE_DOMAIN, fullmatch=True).map(lambda d: d + "/")),
    st.lists(st.from_regex(_IMAGE_COMPONENT, fullmatch=True), min_size=1, max_size=3)
    .map("/".join),
    _optional(":", st.from_regex(r"[\w][\w.-]{0,12}", fullmatch=True)
              | st.integers(126, 129).map(lambda n: "t" * n)),
    _optional("@", st.tuples(
        st.from_regex(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*", fullmatch=True),
        st.text("0123456789abcdefABCDEF", min_size=30, max_size=34))
        .map(lambda t: f"{t[0]}:{t[1]}")),
).map("".join)


@_SETTINGS
@given(_strings(IMAGE, _IMAGES))
@example("ghcr.io/krm-fn/krm-fn:0.1.0")
@example("localhost:5000/a/b:tag@sha256:" + "a" * 64)
@example("host:5000")
@example("Host:5000/x")
@example("Host/x")
@example("a__b/c--d/e.f_g:é٣")
@example("a___b")
@example("a:b/c:d")
@example("a@b")
@example("img:" + "t" * 128)
@example("img:" + "t" * 129)
@example("img@sha256+b.c_d-e:" + "0" * 32 + "\n")
@example("ghcr.io/krm-fn/krm-fn:0.1.0\n")
def test_image_reference_is_the_expression(s):
    _same(IMAGE, checks.is_image, s)


@_SETTINGS
@given(_strings(VERSION))
@example("1.34\n")
@example("v1.34.2")
@example("1.٣")
@example("vv1.2")
@example("1.2.3.4")
def test_version_is_the_expression(s):
    from krm_fn.config.versions import version_minor
    m = re.fullmatch(VERSION, s)
    assert version_minor(s) == (int(m.group(1)) if m else None), s


@_SETTINGS
@given(st.text(_ALPHABET + "\x1f\x9f\u2027\u202a", max_size=24))
@example("")
@example("tab\there")
@example("x\u2028")
def test_control_character_is_the_expression(s):
    m = re.search(CONTROL, s)
    assert values.control_char(s) == (m.group() if m else None), s


@_SETTINGS
@given(_strings(QUANTITY[1:-1]))
@example("1.5e+3")
@example("+.5Mi")
@example("-")
@example("1.2.3")
@example("5m\n")
@example("1e-3\n")
@example("٣")
def test_quantity_scan_is_the_expression(s):
    m = re.fullmatch(QUANTITY, s)
    assert quantity._split(s) == (m.groups() if m else None), s


@_SETTINGS
@given(st.one_of(_strings(COUNT), st.text(_ALPHABET, max_size=20)))
@example("1" * 16)
@example("1" * 17)
@example("٣")
@example("12\n")
def test_count_digits_are_the_expression(s):
    assert (numbers.count(s, 10 ** 17) is not None) == \
        (re.fullmatch(COUNT, s.strip(numbers.BLANKS)) is not None), s


@_SETTINGS
@given(_strings(GO_DURATION))
@example("0")
@example("-0")
@example("5.")
@example(".")
@example(".5s.5s")
@example("1µs")
@example("1μs")
@example("٣s")
@example("²s")
@example("1m30s\n")
@example("١٠s")
@example("-1h")
@example("9223372036854775807ns")
@example("9223372036854775808ns")
def test_go_duration_is_the_expression(s):
    """duration_error accepts what the expression matches, up to Go's overflow check (a
    total above 2^63-1 ns is refused, -2^63 accepted): near the limit the test only asks
    that an accepted total fits."""
    from fractions import Fraction
    from krm_fn.node.kubelet_says import duration_error
    m = re.fullmatch(GO_DURATION, s)
    if m is None:
        assert duration_error(s) is not None, s
        return
    total = sum(Fraction(n) * _GO_UNIT_NS[u] for n, u in
                re.findall(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)", s.lstrip("+-")))
    if total < 2 ** 62:
        assert duration_error(s) is None, s
    elif total > 2 ** 64:
        assert duration_error(s).startswith("time: invalid duration "), s


@_SETTINGS
@given(_strings(PLAIN_KEY[1:-1]))
@example("a/b\n")
@example("_x")
def test_plain_yaml_key_is_the_expression(s):
    _same(PLAIN_KEY, emit.plain_key_chars, s)


@_SETTINGS
@given(_strings(PLAIN_VALUE[1:-1]))
@example("abc\n")
@example("_x")
def test_plain_yaml_value_is_the_expression(s):
    _same(PLAIN_VALUE, emit.plain_value_chars, s)


# krm_fn/yaml/load.py: the YAML 1.2 core int and float patterns of typed scalars, compiled
# on first use and tried only for a scalar starting with a character both need
YAML_INT = r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$"
YAML_FLOAT = (r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|"
              r"^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")


def _typed_before(v: str):
    """Builder(typed=True).scalar of a plain untagged scalar `v`, as it was written with
    the patterns compiled at import."""
    from krm_fn.yaml.load import _BOOL, _NULL, MAX_INT_DIGITS, InputError
    if v in _NULL:
        return None
    if v in _BOOL:
        return _BOOL[v]
    if re.match(YAML_INT, v):
        if len(v) > MAX_INT_DIGITS:
            raise InputError("too long")
        return int(v, 0) if v.startswith(("0o", "0x")) else int(v)
    if re.match(YAML_FLOAT, v):
        return float(v.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                     .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
    return v


@_SETTINGS
@given(st.one_of(_strings(YAML_INT, st.from_regex(YAML_INT)),
                 _strings(YAML_FLOAT, st.from_regex(YAML_FLOAT)),
                 st.text("+-.0123456789eExoabcdfinfINFNaN_ \n", max_size=12)))
@example("1\n")
@example(".inf")
@example("-.5e3")
@example("0x1F")
@example("+")
def test_typed_yaml_scalars_read_as_before(v):
    import math

    import yaml as pyyaml

    from krm_fn.yaml.load import Builder, InputError, WrittenInt
    node = pyyaml.ScalarNode("tag:yaml.org,2002:str", v, style=None)
    try:
        want = _typed_before(v)
    except InputError:
        want = InputError
    # the one change since: a plain scalar that go-yaml (the kubelet's and kubectl's YAML
    # 1.1) reads as another number than YAML 1.2 does (a leading-zero octal), or as a
    # number where YAML 1.2 reads a string (`1_000`, `0b101`), is refused
    # (krm_fn/yaml/load.py _octal)
    if numbers.octal_reading(v) is not None or (
            isinstance(want, str) and numbers.api_json(v) is not None):
        want = InputError
    try:
        got = Builder(typed=True, number_check=numbers.yaml_disagreement).scalar(node)
    except InputError:
        got = InputError
    # the second: an int written otherwise than str() writes it (`0x1F`, `+5`, `07`) keeps
    # its text (yaml.load.WrittenInt, an int), for the config's text fields
    if isinstance(got, WrittenInt):
        assert got.text == v and str(int(got)) != v, v
        got = int(got)
    if isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), v
    else:
        assert (type(got), got) == (type(want), want), v


# krm_fn/rules/cmdline.py image_version: the version an image tag starts with (`re.match`)
TAG_VERSION = r"v?([0-9]{1,6})\.([0-9]{1,6})(?:\.([0-9]{1,6}))?(?:\.([0-9]{1,6}))?(?![0-9])"


def _tag_version_before(tag: str):
    m = re.match(TAG_VERSION, tag)
    if m is None:
        return None
    return tuple(int(g) if g else 0 for g in m.groups()[:3]) + (
        (int(m.group(4)),) if m.group(4) else ())


@_SETTINGS
@given(st.one_of(
    _strings(TAG_VERSION),
    st.lists(st.one_of(st.text("0123456789", min_size=0, max_size=8),
                       st.sampled_from(["v", "-cpu", "a", "٣", "\n"])), max_size=5)
    .map(".".join),
    st.text("v0123456789.-x٣", max_size=20)))
@example("v0.8.5")
@example("0.9.0-cpu")
@example("1.2.3.4.5")
@example("1.2.1234567")
@example("1.2.3.1234567")
@example("1.1234567")
@example("1234567.1")
@example("1.2.")
@example("v")
@example("vv1.2")
@example("1.2.3.0")
@example("1.2\n")
def test_tag_version_is_the_expression(tag):
    from krm_fn.rules.cmdline import tag_version
    assert tag_version(tag) == _tag_version_before(tag), tag


@_SETTINGS
@given(_strings(GO_YAML_FLOAT))
@example("1e3")
@example("+.5")
@example("5.")
@example(".")
@example("1e")
@example("1e+")
@example("-")
@example("")
def test_go_style_float(s):
    _same(GO_YAML_FLOAT, numbers.go_style_float, s)
