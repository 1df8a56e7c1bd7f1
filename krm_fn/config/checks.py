"""Checks of config values against what the Kubernetes API and the kubelet accept: label
keys and values, DNS names, container images, kubelet reservations and eviction thresholds,
and plain data (what `kubelet.extra` and the baseline may hold).

Each check raises `ConfigError` naming the field path it was given.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from krm_fn.config.values import (FIELD_NAME, ConfigError, num, parse_quantity, short,
                                  type_name)

# Deepest nesting of `kubelet.extra` (the extra mapping itself is level 1).
MAX_EXTRA_DEPTH = 32
_INT64 = 2 ** 63

# A container image reference, as the distribution/reference grammar defines it
# (https://github.com/distribution/reference/blob/main/reference.go):
# [domain[:port]/]path-component[/path-component...][:tag][@digest].
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_DOMAIN = (r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
                 r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?")
IMAGE = re.compile(rf"(?:{_IMAGE_DOMAIN}/)?{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
                   r"(?::[\w][\w.-]{0,127})?"
                   r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")
# Used with fullmatch only: `$` would also match before a trailing newline.
# a Prometheus duration: units ms s m h d w y, largest first, no fractions
# (https://prometheus.io/docs/prometheus/latest/querying/basics/#time-durations)
PROM_DURATION = re.compile(r"(?=[0-9])([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?"
                           r"([0-9]+s)?([0-9]+ms)?")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Environment variable names the thread variables may use: C identifiers, what language
# runtimes (getenv in OpenMP, MKL, Go, Python...) read.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Kind names (CamelCase identifiers).
KIND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")

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
_PERCENT = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,6})?)%")
MAX_PIDS = 4194304  # PID_MAX_LIMIT on 64-bit Linux


def check_labels(labels: dict, path: str) -> None:
    """Label keys and values as the API server validates them (Kubernetes "Labels and
    Selectors": optional DNS-subdomain prefix + '/' + name of at most 63 characters; values
    at most 63 characters, alphanumeric at both ends)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (not _LABEL_NAME.fullmatch(name) or len(name) > 63
                or (prefix and (not DNS_SUBDOMAIN.fullmatch(prefix) or len(prefix) > 253))):
            raise ConfigError(f"{path}.{key}", f"{short(key)} is not a valid label key")
        if value and (not _LABEL_NAME.fullmatch(value) or len(value) > 63):
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
    """evictionHard: known signals; each threshold a quantity or a percentage in (0, 100]."""
    for key, value in m.items():
        sub = f"{path}.{key}"
        kind = EVICTION_SIGNALS.get(key)
        if kind is None:
            raise ConfigError(sub, f"unknown eviction signal {short(key)} (known: "
                                   f"{', '.join(EVICTION_SIGNALS)})")
        if value.endswith("%"):
            pm = _PERCENT.fullmatch(value)
            if not pm or not 0 < Fraction(pm.group(1)) <= 100:
                raise ConfigError(sub, f"a percentage threshold must be greater than 0% and at "
                                       f"most 100%, found {short(value)}")
            continue
        q = parse_quantity(value, kind, sub)
        if kind == "count" and q.value.denominator != 1:
            raise ConfigError(sub, f"{short(value)} is not a whole number")


def check_names(items: list, path: str, pattern: re.Pattern, limit: int, what: str,
                allow_empty: bool = False) -> None:
    """Every entry of `items` (strings) matches `pattern` and has at most `limit` characters
    (`allow_empty`: "" also passes); the error names the entry as `<what>`."""
    for i, x in enumerate(items):
        if allow_empty and x == "":
            continue
        if not pattern.fullmatch(x) or len(x) > limit:
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
