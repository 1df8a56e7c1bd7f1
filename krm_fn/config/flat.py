"""The ConfigMap form of the function config: one flat key per leaf field (what
`kpt fn eval -- key=value` and a Kptfile `configMap:` produce), derived from the definition
(krm_fn.config.spec). Leaves under `nodePools` configure the first node pool; fields with
`flat="-"` (and everything under them) exist in the typed form only.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator

from krm_fn.config.fields import Field
from krm_fn.config.spec import SCHEMA
from krm_fn.config.values import ConfigError, short


def _walk_leaves(fields, prefix: tuple = ()) -> Iterator[tuple[tuple, Field]]:
    for f in fields:
        if f.flat == "-":          # only in the typed form
            continue
        if not f.type.leaf:
            yield from _walk_leaves(f.fields, prefix + ((f.name, f.kind),))
        else:
            yield prefix, f


def flat_keys(fields=SCHEMA) -> dict[str, tuple[tuple, Field]]:
    """Map of ConfigMap flat key -> (path of (name, kind) parents, Field), in definition
    order. Raises AssertionError when two fields would share a key."""
    out: dict[str, tuple[tuple, Field]] = {}
    for prefix, f in _walk_leaves(fields):
        key = f.flat or f.name
        if key in out:
            raise AssertionError(f"duplicate flat config key {key}")
        out[key] = (prefix, f)
    return out


@functools.cache
def spec_keys() -> dict[str, tuple[tuple, Field]]:
    """flat_keys() of the config definition, made the first time a ConfigMap config, a flat
    path or the key table needs it (a typed config never does); also as `FLAT_KEYS`."""
    return flat_keys()


def __getattr__(name: str) -> object:
    """`FLAT_KEYS`: spec_keys(), built on first use."""
    if name == "FLAT_KEYS":
        return spec_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dotted(prefix: tuple, f: Field, index: str = "[0]") -> str:
    """`nodePools[0].topology.sockets` for a field and its (name, kind) parents; `index`
    follows each object list."""
    return ".".join([n + (index if k == "objectlist" else "") for n, k in prefix] + [f.name])


def spec_from_flat(data: dict, path: str) -> dict:
    """The typed `spec` mapping the flat keys of `data` (at `path`, e.g. `data`) stand for;
    the values stay strings. Raises ConfigError for an unknown key."""
    spec: dict = {}
    keys = spec_keys()
    for key, value in data.items():
        if key not in keys:
            raise ConfigError(f"{path}.{key}", f"unknown key {short(key)} (known: "
                                               f"{', '.join(sorted(keys))})")
        prefix, f = keys[key]
        node = spec
        for name, kind in prefix:
            if kind == "objectlist":
                lst = node.setdefault(name, [{}])
                node = lst[0]
            else:
                node = node.setdefault(name, {})
        node[f.name] = value
    return spec


def flat_path(path: str) -> str:
    """The ConfigMap form's name for a nested config field path:
    `spec.nodePools[0].topology.threadsPerCore` -> `data.threadsPerCore` (unchanged when no
    flat key covers it)."""
    for key, (prefix, f) in spec_keys().items():
        for root in ("data", "spec"):
            nested = root + "." + dotted(prefix, f)
            if path == nested or path.startswith(nested + ".") or path.startswith(nested + "["):
                return "data." + key + path[len(nested):]
    return path


def flat_error(e: ConfigError) -> ConfigError:
    """Name the flat ConfigMap key (`data.threadsPerCore`) instead of the nested field, for
    every error `e` carries."""
    mapped = [ConfigError(flat_path(x.path), x.message) for x in e.errors]
    return ConfigError(mapped[0].path, mapped[0].message, mapped[1:])


def flat_value(d: object) -> str:
    """A value as the ConfigMap writes it: true/false, lists comma-separated, maps
    `k=v,k2=v2`, anything else str()."""
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, list):
        return ",".join(d)
    if isinstance(d, dict):
        return ",".join(f"{a}={b}" for a, b in d.items())
    return str(d)


def flat_key_table() -> str:
    """Markdown table of the ConfigMap flat keys (docs/configuration.md; tested to match)."""
    rows = ["| key | field | default |", "|---|---|---|"]
    for key, (prefix, f) in spec_keys().items():
        d = None if f.default is None else flat_value(f.default)
        rows.append(f"| `{key}` | `spec.{dotted(prefix, f)}` | "
                    f"{'' if d in (None, '') else '`' + d + '`'} |")
    return "\n".join(rows)
