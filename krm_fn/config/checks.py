"""Checks of config values against what the Kubernetes API and the kubelet accept: label
keys and values, DNS names, environment variable names, container images, Prometheus
durations, kubelet reservations and eviction thresholds, and plain data (what
`kubelet.extra` and the baseline may hold).

Each check raises `ConfigError` naming the field path it was given.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

from krm_fn.config.values import (FIELD_NAME, ConfigError, num, parse_quantity, short,
                                  type_name)
from krm_fn.matching import ALNUM, DIGITS, LOWER, LazyPattern, digits, only, span
from krm_fn.quantity import ratio

# Deepest nesting of `kubelet.extra` (the extra mapping itself is level 1).
MAX_EXTRA_DEPTH = 32
_INT64 = 2 ** 63

# Kind names (CamelCase identifiers); the spellings every render checks (DNS labels and
# subdomains, label names, environment variable names, images, Prometheus durations) are
# the character tests below (is_dns_label...), each accepting exactly what the regular
# expression in its docstring accepts with fullmatch (tests/test_spelling.py compares them).
KIND_NAME = LazyPattern(r"[A-Za-z][A-Za-z0-9]*")

# kubeReserved / systemReserved resource names and how their values parse
# (https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/).
RESERVED_RESOURCES = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "memory",
                      "pid": "pid"}
# evictionHard signals and how an absolute threshold parses: bytes for *.available, a count
# for inodes and pids (https://kubernetes.io/docs/concepts/scheduling-eviction/
# node-pressure-eviction/#eviction-signals).
EVICTION_SIGNALS = {
    "memory.available": "memory", "nodefs.available": "memory",
    "nodefs.inodesFree": "count", "imagefs.available": "memory",
    "imagefs.inodesFree": "count", "containerfs.available": "memory",
    "containerfs.inodesFree": "count", "pid.available": "count",
    "allocatableMemory.available": "memory",
}
_PERCENT = LazyPattern(r"([0-9]{1,3}(?:\.[0-9]{1,6})?)%")
MAX_PIDS = 4194304  # PID_MAX_LIMIT on 64-bit Linux


_DNS_CHARS = LOWER + DIGITS + "-"
_LABEL_CHARS = ALNUM + "-_."
_IDENTIFIER_CHARS = ALNUM + "_"
_LOWER_ALNUM = LOWER + DIGITS
_HEX = DIGITS + "abcdefABCDEF"


def is_dns_label(s: str) -> bool:
    """`[a-z0-9]([-a-z0-9]*[a-z0-9])?`: an RFC 1123 label without its length bound
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names)."""
    return s != "" and only(s, _DNS_CHARS) and s[0] != "-" and s[-1] != "-"


def is_dns_subdomain(s: str) -> bool:
    """`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`: DNS labels joined
    by dots, without the length bound."""
    return all(is_dns_label(part) for part in s.split("."))


def is_label_name(s: str) -> bool:
    """`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`: the name part of a label key, and a
    non-empty label value, without the length bound (https://kubernetes.io/docs/concepts/
    overview/working-with-objects/labels/#syntax-and-character-set)."""
    return s != "" and only(s, _LABEL_CHARS) and s[0] in ALNUM and s[-1] in ALNUM


def is_identifier(s: str) -> bool:
    """`[A-Za-z_][A-Za-z0-9_]*`: a C identifier, the environment variable names language
    runtimes read (getenv in OpenMP, MKL, Go, Python...)."""
    return s != "" and only(s, _IDENTIFIER_CHARS) and s[0] not in DIGITS


def is_prom_duration(s: str) -> bool:
    """`(?=[0-9])([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?`:
    a Prometheus duration, whole numbers with units largest first, each unit at most once
    (https://prometheus.io/docs/prometheus/latest/querying/basics/#time-durations)."""
    return prom_duration_ns(s) is not None


PROM_UNITS = {"y": 365 * 86400 * 10**9, "w": 7 * 86400 * 10**9, "d": 86400 * 10**9,
              "h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6}


def prom_duration_ns(s: str) -> int | None:
    """The nanoseconds of Prometheus duration `s` (is_prom_duration's syntax), or None when
    it is not one. Prometheus holds at most 2^63-1 (prometheus/common model.ParseDuration:
    "duration out of range" beyond, which promtool and Prometheus refuse)."""
    units = tuple(PROM_UNITS)
    last, i, total = -1, 0, 0
    if s == "":
        return None
    while i < len(s):
        j = span(s, i, DIGITS)
        k = span(s, j, "ywdhms")
        unit = s[j:k]
        if j == i or unit not in units or units.index(unit) <= last:
            return None
        last = units.index(unit)
        total += int(s[i:j]) * PROM_UNITS[unit]
        i = k
    return total


def _image_component(c: str) -> bool:
    """`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`: one path component of an image name."""
    if not only(c, _LOWER_ALNUM + "._-"):
        return False
    i = 0
    while True:
        j = span(c, i, _LOWER_ALNUM)
        if j == i:
            return False
        if j == len(c):
            return True
        k = span(c, j, "._-")
        sep = c[j:k]
        if sep not in (".", "_", "__") and not only(sep, "-"):
            return False
        i = k


def _image_domain(d: str) -> bool:
    """`(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\\.(...))*(?::[0-9]+)?`: the
    registry host of an image name, with an optional port."""
    host, colon, port = d.partition(":")
    if colon and not digits(port):
        return False
    return all(p != "" and only(p, ALNUM + "-") and p[0] != "-" and p[-1] != "-"
               for p in host.split("."))


def _image_tag(t: str) -> bool:
    """`[\\w][\\w.-]{0,127}`: a tag; `\\w` is a Unicode word character (str.isalnum or `_`),
    as in the regular expression the check used."""
    return (0 < len(t) <= 128 and (t[0].isalnum() or t[0] == "_")
            and all(ch.isalnum() or ch in "_.-" for ch in t))


def _image_digest(d: str) -> bool:
    """`[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`: an algorithm
    and at least 32 hex digits."""
    algorithm, colon, hexdigits = d.partition(":")
    if not colon or len(hexdigits) < 32 or not only(hexdigits, _HEX):
        return False
    for sep in "_+.":
        algorithm = algorithm.replace(sep, "-")
    return all(p != "" and only(p, ALNUM) and p[0] not in DIGITS for p in algorithm.split("-"))


def is_image(s: str) -> bool:
    """A container image reference `[domain[:port]/]component[/component...][:tag][@digest]`
    as the distribution/reference grammar defines it
    (https://github.com/distribution/reference/blob/main/reference.go), without its length
    bound; the parts are `_image_domain`, `_image_component`, `_image_tag`, `_image_digest`."""
    name, at, digest = s.partition("@")
    if at and not _image_digest(digest):
        return False
    head, slash, last = name.rpartition("/")
    component, colon, tag = last.partition(":")
    if colon and not _image_tag(tag):
        return False
    parts = (head.split("/") if slash else []) + [component]
    if not all(_image_component(p) for p in parts[1:]):
        return False
    return _image_component(parts[0]) or (len(parts) > 1 and _image_domain(parts[0]))


def check_labels(labels: dict, path: str) -> None:
    """Label keys and values as the API server validates them (Kubernetes "Labels and
    Selectors": optional DNS-subdomain prefix + '/' + name of at most 63 characters; values
    at most 63 characters, alphanumeric at both ends)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (not is_label_name(name) or len(name) > 63
                or (prefix and (not is_dns_subdomain(prefix) or len(prefix) > 253))):
            raise ConfigError(f"{path}.{key}", f"{short(key)} is not a valid label key")
        if value and (not is_label_name(value) or len(value) > 63):
            raise ConfigError(f"{path}.{key}", f"{short(value)} is not a valid label value")


def check_reserved(m: dict, path: str) -> None:
    """kubeReserved / systemReserved: known resource names with valid quantities."""
    for key, value in m.items():
        sub = f"{path}.{key}"
        kind = RESERVED_RESOURCES.get(key)
        if kind is None:
            raise ConfigError(sub, f"unknown resource {short(key)} (known: "
                                   f"{', '.join(RESERVED_RESOURCES)})")
        if kind == "pid":
            if not re.fullmatch(r"[0-9]{1,10}", value) or not 0 < int(value) <= MAX_PIDS:
                raise ConfigError(sub, f"must be a whole number of process IDs from 1 to "
                                       f"{MAX_PIDS}, found {short(value)}")
        else:
            parse_quantity(value, kind, sub)


def check_eviction(m: dict, path: str) -> None:
    """evictionHard: known signals; each threshold a quantity or a percentage from 0% to
    100% (the kubelet ignores exactly "0%" and "100%", the usual way to switch a signal
    off: pkg/kubelet/eviction/helpers.go parseThresholdStatement)."""
    for key, value in m.items():
        sub = f"{path}.{key}"
        kind = EVICTION_SIGNALS.get(key)
        if kind is None:
            raise ConfigError(sub, f"unknown eviction signal {short(key)} (known: "
                                   f"{', '.join(EVICTION_SIGNALS)})")
        if value.endswith("%"):
            pm = _PERCENT.fullmatch(value)
            n, d = ratio(pm.group(1)) if pm else (0, 1)
            if not pm or not 0 <= n <= 100 * d:
                raise ConfigError(sub, f"a percentage threshold must be from 0% to 100%, found "
                                       f"{short(value)}")
            continue
        q = parse_quantity(value, kind, sub)
        if kind == "count" and not q.is_integer:
            raise ConfigError(sub, f"{short(value)} is not a whole number")


def check_names(items: list, path: str, valid: Callable[[str], bool], limit: int, what: str,
                allow_empty: bool = False) -> None:
    """Every entry of `items` (strings) passes `valid` (such as is_dns_label, or
    KIND_NAME.fullmatch) and has at most `limit` characters (`allow_empty`: "" also
    passes); the error names the entry as `<what>`."""
    for i, x in enumerate(items):
        if allow_empty and x == "":
            continue
        if not valid(x) or len(x) > limit:
            raise ConfigError(f"{path}[{i}]", f"must be {what} of at most {limit} characters, "
                                              f"found {short(x)}")


def check_plain(v: object, path: str, depth: int = 1) -> None:
    """`kubelet.extra` data must be plain JSON: mappings with string keys, lists, strings,
    64-bit integers, finite floats, booleans, null; at most MAX_EXTRA_DEPTH levels deep.
    At depth 1 (the mapping itself) keys must be KubeletConfiguration field names."""
    if v is None or isinstance(v, (bool, str)):
        return
    if isinstance(v, int):
        if not -_INT64 <= v < _INT64:
            raise ConfigError(path, f"{num(v)} does not fit in a 64-bit integer")
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(path, f"{v!r} is not a finite number (NaN, infinity or a "
                                    f"number too large for a float such as 1e400)")
        return
    if isinstance(v, (dict, list)):
        if depth > MAX_EXTRA_DEPTH:
            raise ConfigError(path, f"nested more than {MAX_EXTRA_DEPTH} levels deep")
        if isinstance(v, list):
            for i, x in enumerate(v):
                check_plain(x, f"{path}[{i}]", depth + 1)
            return
        for key, x in v.items():
            if not isinstance(key, str):
                raise ConfigError(path, f"keys must be strings, found {short(key)} "
                                        f"({type_name(key)})")
            if depth == 1 and not FIELD_NAME.fullmatch(key):
                raise ConfigError(path, f"{short(key)} is not a KubeletConfiguration field "
                                        f"name (letters and digits, starting with a letter)")
            check_plain(x, f"{path}.{key}", depth + 1)
        return
    raise ConfigError(path, f"{type(v).__name__} value {short(v)} is not plain data (use "
                            f"mappings, lists, strings, numbers, booleans or null)")


def check_pool_selectors(pools: list, path: str) -> None:
    """No node pool's `nodeSelector` (dict[str, str]) is contained in another's: a pod's
    nodeSelector matches every node that carries all its labels (Kubernetes "Assign Pods to
    Nodes", https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
    #nodeselector), so the nodes of the pool with more labels are also nodes of the other:
    they would get both kubelet configurations, and the other pool's pods could be scheduled
    on them. `path` is `spec`; the error names the later pool's nodeSelector."""
    for j, later in enumerate(pools):
        for first in pools[:j]:
            a, b = (first.nodeSelector or {}).items(), (later.nodeSelector or {}).items()
            if not (a <= b or b <= a):
                continue
            wide, narrow = (first, later) if a <= b else (later, first)
            sel = ", ".join(f"{k}={v}" for k, v in (wide.nodeSelector or {}).items())
            raise ConfigError(
                f"{path}.nodePools[{j}].nodeSelector",
                f"node pool {wide.name!r} nodeSelector ({sel or 'empty'}) matches every node "
                f"of node pool {narrow.name!r}: those nodes would get both pools' kubelet "
                f"configurations, and pods placed in {wide.name!r} could be scheduled on "
                f"them; give each pool a label the other lacks, such as "
                f"krm-fn.dev/node-pool: <pool> (https://kubernetes.io/docs/concepts/"
                f"scheduling-eviction/assign-pod-node/#nodeselector)")
