"""Checks of `spec.output.baseline`, the nodes' current KubeletConfiguration: the fields
krm-fn reads from it must have the kubelet's shapes
(https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/).
Everything else in the baseline is carried as plain data (json6902) and never read.

`check_baseline(baseline)` raises ConfigError with every problem, each naming its field path.
"""
from __future__ import annotations


from krm_fn.config.checks import check_eviction as _check_eviction
from krm_fn.config.checks import check_reserved as _check_reserved
from krm_fn.config.values import FIELD_NAME as _FIELD_NAME
from krm_fn.config.values import ConfigError
from krm_fn.config.values import check_text as _check_text
from krm_fn.config.values import parse_quantity as _quantity
from krm_fn.config.values import raise_all as _raise_all
from krm_fn.config.values import scalar_str as _scalar_str
from krm_fn.config.values import short as _short
from krm_fn.config.values import type_name as _type_name
from krm_fn.node import topology

BASELINE_MAX_ENTRIES = 1024     # entries of a map or list krm-fn reads from the baseline


def _baseline_scalar(v: object, path: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ConfigError(path, f"expected a string, found {_type_name(v)}")
    return _scalar_str(v, path)


def _baseline_bool(v: object, path: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(path, f"expected true or false, found {_short(v)}")
    return v


def _baseline_cap(v: object, path: str) -> None:
    """At most BASELINE_MAX_ENTRIES entries in a baseline map or list krm-fn reads."""
    if len(v) > BASELINE_MAX_ENTRIES:
        raise ConfigError(path, f"has {len(v)} entries; at most {BASELINE_MAX_ENTRIES} are "
                                f"accepted")


def _baseline_map(v: object, path: str, values) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
    _baseline_cap(v, path)
    return {_check_text(str(k), path): values(x, f"{path}.{k}") for k, x in v.items()}


def _unwrap(baseline: object, root: str) -> tuple[object, str]:
    """(the KubeletConfiguration, its field path): configz's `{kubeletconfig: ...}` wrapper
    taken off once; anything but a mapping as it is. Raises ConfigError for other wrappers
    and a kind that is not KubeletConfiguration."""
    if not isinstance(baseline, dict):
        return baseline, root
    if "kubeletconfig" in baseline:
        others = [str(k) for k in baseline if k != "kubeletconfig"]
        if others:
            raise ConfigError(root, f"a `kubeletconfig` wrapper (configz's answer) must be the "
                                    f"only key, found also {', '.join(map(repr, others[:5]))}")
        baseline, root = baseline["kubeletconfig"], root + ".kubeletconfig"
        if not isinstance(baseline, dict):
            raise ConfigError(root, f"expected a mapping, found {_type_name(baseline)}")
    for wrapper in ("kubeletconfig", "kubeletConfig", "data", "spec"):
        if wrapper in baseline:
            raise ConfigError(f"{root}.{wrapper}", f"a KubeletConfiguration has no field "
                                                   f"{wrapper!r}: give the node's "
                                                   f"KubeletConfiguration itself (configz's "
                                                   f"answer, unwrapped at most once)")
    if "kind" in baseline and baseline["kind"] != "KubeletConfiguration":
        raise ConfigError(f"{root}.kind", f"expected KubeletConfiguration, found "
                                          f"{_short(baseline['kind'])}")
    return baseline, root


def _cpuset(v: object, path: str) -> None:
    text = _baseline_scalar(v, path)
    try:
        topology.parse_cpuset(text, repeats=True)     # the kubelet took it
    except ValueError as e:
        raise ConfigError(path, f"not a cpuset: {e}") from None


def _factor(v: object, path: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise ConfigError(path, f"expected a number in (0, 1], found {_short(v)}")


def _reservations(v: object, path: str) -> None:
    from krm_fn.node import memory as memory_mod
    m = _baseline_map(v, path, _baseline_scalar)
    _check_reserved({k: x for k, x in m.items() if not k.startswith("hugepages-")}, path)
    for k, x in m.items():
        if k.startswith("hugepages-"):
            if not memory_mod.is_type(k):
                raise ConfigError(f"{path}.{k}", f"{_short(k)} is not a hugepages-<size> "
                                                 f"resource")
            _quantity(x, "memory", f"{path}.{k}")


def _gates(v: object, path: str) -> None:
    if isinstance(v, dict):
        for k in v:
            if not isinstance(k, str) or not _FIELD_NAME.fullmatch(k):
                raise ConfigError(path, f"{_short(k)} is not a feature gate name")
    _baseline_map(v, path, _baseline_bool)


def _strlist(v: object, path: str) -> None:
    if not isinstance(v, list):
        raise ConfigError(path, f"expected a list, found {_type_name(v)}")
    _baseline_cap(v, path)
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise ConfigError(f"{path}[{i}]", f"expected a string, found {_type_name(x)}")
        _check_text(x, f"{path}[{i}]")


def _reserved_memory(v: object, path: str) -> None:
    from krm_fn.node import memory as memory_mod
    if v == []:
        return
    if isinstance(v, list):
        _baseline_cap(v, path)
    try:
        memory_mod.parse(v)
    except memory_mod.ReservedMemoryError as e:
        root = path[: -len(".reservedMemory")]
        raise ConfigError(f"{root}.{e.path}", e.message) from None


# One check per shape of the kubelet field table (krm_fn.node.fields.SHAPES).
SHAPE_CHECKS = {
    "text": _baseline_scalar,
    "cpuset": _cpuset,
    "factor": _factor,
    "quantity-map": _reservations,
    "eviction-map": lambda v, p: _check_eviction(_baseline_map(v, p, _baseline_scalar), p),
    "string-map": lambda v, p: _baseline_map(v, p, _baseline_scalar),
    "bool-map": _gates,
    "string-list": _strlist,
    "memory-reservations": _reserved_memory,
    "bool": _baseline_bool,
}


def _check_baseline(baseline: object) -> None:
    """spec.output.baseline: a KubeletConfiguration (or configz's `{kubeletconfig: ...}`
    with nothing beside it) whose fields krm-fn reads (krm_fn.node.fields.baseline_shapes)
    have the kubelet's shapes: strings of at most MAX_TEXT characters,
    kubeReserved/systemReserved/evictionHard as the typed config checks them
    (hugepages-<size> allowed in the reservations), option maps of strings, featureGates
    of booleans, enforceNodeAllocatable a list of strings, reservedMemory as
    krm_fn.node.memory.parse reads it. Raises ConfigError with every problem, each naming
    its field path."""
    if baseline is None:
        return
    from krm_fn.node import fields
    baseline, root = _unwrap(baseline, "spec.output.baseline")
    errors: list[ConfigError] = []
    for name, shape in fields.baseline_shapes().items():
        if name in baseline and baseline[name] is not None:
            try:
                SHAPE_CHECKS[shape](baseline[name], f"{root}.{name}")
            except ConfigError as e:
                errors.extend(e.errors)
    _raise_all(errors)


check_baseline = _check_baseline   # the public name
