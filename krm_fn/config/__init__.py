"""The function config: `krm-fn.dev/v1alpha1 InferenceTuning`, or a ConfigMap of flat keys.

One definition (krm_fn.config.spec: fields whose types are krm_fn.config.types classes)
drives parsing, defaults, the flat ConfigMap keys (krm_fn.config.flat; what
`kpt fn eval -- key=value` and a Kptfile `configMap:` produce), `krm-fn schema`
(krm_fn.config.schema), `krm-fn explain` (krm_fn.config.explain) and the documentation.
Parsing is strict: every unknown field is an error that names it, every wrongly typed value
is an error that names the field path and the value found.

Units: cpu values are Kubernetes quantities in cores (`"4"`, `"500m"`), memory values are
quantities in bytes (`"128Mi"`), durations are Go durations (`"30s"`).
"""
from __future__ import annotations


from krm_fn import workloads
from krm_fn.config.fields import Field, Object, ObjectList, Record
from krm_fn.config.records import Spec
from krm_fn.config.spec import (DEFAULT_THREAD_ENV, FORMATS, POOL_FIELDS, SCHEMA,
                                SPEC)
from krm_fn.config.values import ConfigError, short, type_name

API_VERSION = "krm-fn.dev/v1alpha1"
KIND = "InferenceTuning"

__all__ = ["API_VERSION", "KIND", "ConfigError", "Field", "Object", "ObjectList",
           "Record", "Spec", "SCHEMA", "POOL_FIELDS", "FLAT_KEYS", "FORMATS",
           "DEFAULT_THREAD_ENV", "load", "is_flat", "flat_path", "flat_key_table",
           "extra_registry"]


def load(obj: object) -> Spec:
    """Load a functionConfig object (plain dict as read from YAML, or None).

    Returns a `Spec` (krm_fn.config.records) mirroring the definition, with defaults
    filled; `kubernetesVersion` becomes a `(major, minor)` tuple, cpu/memory fields become
    `quantity.Quantity`. Accepts `krm-fn.dev/v1alpha1 InferenceTuning` (fields under
    `spec`) and `v1 ConfigMap` (flat keys under `data`, all strings; an empty ConfigMap
    means defaults). Raises ConfigError naming the field path (the flat key for a
    ConfigMap), carrying every shape and type problem found.
    """
    if obj is None:
        spec: object = {}
        flat = False
    elif not isinstance(obj, dict):
        raise ConfigError("functionConfig", f"expected a mapping, found {type_name(obj)}")
    elif obj.get("kind") == "ConfigMap":
        data = obj.get("data")
        data = {} if data is None else data     # `data: []`, `false`, `""` are no mapping
        if not isinstance(data, dict):
            raise ConfigError("data", f"expected a mapping, found {type_name(data)}")
        from krm_fn.config.flat import spec_from_flat
        spec, flat = spec_from_flat(data, "data"), True
    elif obj.get("kind") == KIND:
        if obj.get("apiVersion") != API_VERSION:
            have = obj.get("apiVersion")
            raise ConfigError("apiVersion", f"expected {API_VERSION}, found "
                                            + ("none" if have is None else short(have)))
        top_unknown = [k for k in obj if k not in ("apiVersion", "kind", "metadata", "spec")]
        if top_unknown:
            raise ConfigError("", "unknown field" + ("s " if len(top_unknown) > 1 else " ")
                              + ", ".join(repr(str(k)) for k in top_unknown)
                              + " (known: apiVersion, kind, metadata, spec)")
        spec, flat = obj.get("spec"), False
        if spec is None:
            spec = {}
        elif not isinstance(spec, dict):        # `spec: []`, `false`, `0`: no defaults
            raise ConfigError("spec", f"expected a mapping, found {type_name(spec)}")
    else:
        found = (f"{obj.get('apiVersion')!r} {obj.get('kind')!r}" if obj.get("apiVersion")
                 is not None or obj.get("kind") is not None else "neither apiVersion nor kind")
        raise ConfigError("kind", f"functionConfig must be a {API_VERSION} {KIND} or a v1 "
                                  f"ConfigMap, found {found}")
    try:
        cfg = SPEC.build(spec, "data" if flat else "spec", flat)
        cfg.check("spec")
    except ConfigError as e:
        if flat:
            from krm_fn.config.flat import flat_error
            raise flat_error(e) from None
        raise e from None
    return cfg


# krm_fn.config.flat's functions, and `FLAT_KEYS`, imported from it on first use: only a
# ConfigMap config and its result paths need them (start-up: docs/performance.md)
_FROM_FLAT = ("flat_error", "flat_key_table", "flat_path", "spec_from_flat", "spec_keys")


def __getattr__(name: str) -> object:
    """The functions of krm_fn.config.flat named in `_FROM_FLAT`, and `FLAT_KEYS`
    (ConfigMap flat key -> (its (name, kind) parents, Field); krm_fn.config.flat.spec_keys),
    from krm_fn.config.flat on first use, as a typed config never needs them."""
    if name in _FROM_FLAT or name == "FLAT_KEYS":
        from krm_fn.config import flat
        return flat.spec_keys() if name == "FLAT_KEYS" else getattr(flat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_flat(obj: object) -> bool:
    """True when a functionConfig object is the ConfigMap (flat keys) form."""
    return isinstance(obj, dict) and obj.get("kind") == "ConfigMap"


def extra_registry(cfg: Spec) -> dict:
    """The config's extraKinds as registry entries: (group, kind) -> (PodSpecAt, ...)."""
    out: dict = {}
    for k in cfg.extraKinds:
        ats = []
        for i, spec_path in enumerate(k.podSpecs):
            spec = workloads.parse_path(spec_path)
            meta = (workloads.parse_path(k.annotations[i]) if i < len(k.annotations)
                    else spec[:-1] + ("metadata",))
            # an entry of a declared [*] list may lack the pod spec: krm-fn does not know
            # what the kind's own schema requires
            ats.append(workloads.PodSpecAt(spec=spec, meta=meta, optional="*" in spec))
        out[(k.group, k.kind)] = tuple(ats)
    return out
