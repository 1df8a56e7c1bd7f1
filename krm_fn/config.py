"""The function config: `krm-fn.dev/v1alpha1 InferenceTuning`, or a ConfigMap of flat keys.

One definition, `SCHEMA`, drives parsing, defaults, the flat ConfigMap keys (which is what
`kpt fn eval -- key=value` and a Kptfile `configMap:` produce) and the documentation.
Parsing is strict: every unknown field is an error that names it, every wrongly typed value
is an error that names the field path and the value found.

Units: cpu values are Kubernetes quantities in cores (`"4"`, `"500m"`), memory values are
quantities in bytes (`"128Mi"`), durations are Go durations (`"30s"`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from krm_fn import quantity

API_VERSION = "krm-fn.dev/v1alpha1"
KIND = "InferenceTuning"


class ConfigError(ValueError):
    """A function config problem. `path` is the field path inside the config object
    (e.g. `spec.nodePools[0].topology.threadsPerCore`), `message` says what is wrong."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Field:
    """One config field.

    `kind` is one of: str, int, bool, cpu, memory, duration, version, choice, list,
    choicelist, map, any, object, objectlist. `fields` holds the children of object kinds.
    `flat` is the key of this field in the ConfigMap form (default: the field name); leaves
    under `nodePools` configure the first node pool.
    """

    name: str
    kind: str
    default: Any = None
    doc: str = ""
    choices: tuple = ()
    fields: tuple = ()
    flat: str | None = None
    minimum: int | None = None


DEFAULT_THREAD_ENV = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                      "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS",
                      "BLIS_NUM_THREADS", "TORCH_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                      "RAYON_NUM_THREADS", "GOMAXPROCS", "PYTHON_CPU_COUNT"]

FORMATS = ("configmap", "kubelet-config")

POOL_FIELDS = (
    Field("name", "str", "inference", "Name of the node pool; names the emitted objects.",
          flat="nodePool"),
    Field("nodeSelector", "map", {"krm-fn.dev/cpu-pinning": "true"},
          "Labels of the pool's nodes; added to the pod spec `nodeSelector` of every workload "
          "placed in the pool. A conflicting existing value is an error."),
    Field("topology", "object", None, "CPU topology of the pool's nodes.", fields=(
        Field("sockets", "int", 2, "CPU sockets per node.", minimum=1),
        Field("numaNodesPerSocket", "int", 1, "NUMA nodes per socket.", minimum=1),
        Field("coresPerSocket", "int", 16, "Physical cores per socket.", minimum=1),
        Field("threadsPerCore", "int", 2, "SMT siblings per core (1 = SMT off).", minimum=1),
        Field("siblings", "choice", "split",
              "CPU numbering: `split` = CPU i and i+cores are siblings (Linux x86 default); "
              "`adjacent` = CPUs 2i and 2i+1 are siblings.", choices=("split", "adjacent")),
    )),
    Field("reserved", "object", None, "CPUs kept for system daemons (reservedSystemCPUs).", fields=(
        Field("cores", "int", 2, "Whole physical cores reserved (all SMT siblings); the seed "
              "advice is 2-4.", flat="reservedCores", minimum=1),
        Field("spreadAcrossNuma", "bool", False, "Split the reserved cores evenly across NUMA "
              "nodes instead of taking the lowest cores of NUMA node 0.",
              flat="spreadReservedAcrossNuma"),
    )),
    Field("kubelet", "object", None, "KubeletConfiguration settings for the pool.", fields=(
        Field("cpuManagerPolicyOptions", "map", {"full-pcpus-only": "true"},
              "Static CPU Manager options. `full-pcpus-only` (default) allocates whole "
              "physical cores so no other pod shares an SMT sibling's L1/L2."),
        Field("cpuManagerReconcilePeriod", "duration", "30s",
              "How often the CPU Manager reconciles cpusets (kubelet default 10s)."),
        Field("topologyManagerPolicy", "choice", "best-effort",
              "Topology Manager policy. best-effort always admits; restricted and "
              "single-numa-node reject pods that do not fit (TopologyAffinityError).",
              choices=("none", "best-effort", "restricted", "single-numa-node")),
        Field("topologyManagerScope", "choice", "pod",
              "Align each container (`container`) or the whole pod (`pod`).",
              choices=("container", "pod")),
        Field("memoryManagerPolicy", "choice", "None",
              "Memory Manager policy (capitalised, as the kubelet spells it). `Static` adds "
              "reservedMemory computed from the reservations.", choices=("None", "Static")),
        Field("reservedSystemCPUs", "str", None,
              "Explicit cpuset for system daemons (e.g. `0-1,32-33`); overrides "
              "`reserved.cores`."),
        Field("kubeReserved", "map", {"memory": "500Mi"}, "kubeReserved (cpu is dropped: "
              "reservedSystemCPUs replaces it)."),
        Field("systemReserved", "map", {"memory": "500Mi"}, "systemReserved (cpu is dropped)."),
        Field("evictionHard", "map", {"memory.available": "100Mi"},
              "Hard eviction thresholds, merged over the kubelet defaults (setting one "
              "signal would otherwise zero the others)."),
        Field("podPidsLimit", "int", 4096, "pids.max of every pod cgroup.", minimum=1),
        Field("failCgroupV1", "bool", True, "Refuse to start on cgroup v1 nodes "
              "(field since 1.31; kubelet default true from 1.35)."),
        Field("extra", "any", {}, "Any other KubeletConfiguration fields, merged last."),
    )),
)

SCHEMA = (
    Field("kubernetesVersion", "version", "1.34",
          "Kubernetes minor version of the nodes (quoted, e.g. \"1.34\"); gates which kubelet "
          "fields and options may be emitted."),
    Field("selector", "object", None, "Which workloads to tune; empty = every workload with "
          "a pod spec.", fields=(
        Field("kinds", "list", [], "Workload kinds, e.g. [Deployment, InferenceService]."),
        Field("names", "list", [], "Workload names."),
        Field("namespaces", "list", [], "Workload namespaces."),
        Field("matchLabels", "map", {}, "Labels the workload's metadata.labels must carry."),
    )),
    Field("workloads", "object", None, "How pod specs are rewritten.", fields=(
        Field("cpuRounding", "choice", "up", "Fractional CPU on a pinned container: round `up`, "
              "round `down` (minimum 1), `keep` it (not pinned; thread vars get the value "
              "rounded down), or `error` (also for SMT rounding).",
              choices=("up", "down", "keep", "error")),
        Field("pinnedContainers", "list", [], "Names of the containers to pin. Default: the "
              "`kubectl.kubernetes.io/default-container` annotation, else the KServe model "
              "container, else the first entry of `containers`."),
        Field("defaultCpus", "cpu", None, "CPU for a pinned container that declares none "
              "(null = error)."),
        Field("defaultMemory", "memory", None, "Memory for a pinned container that declares "
              "none (null = error)."),
        Field("sidecarResources", "object", None, "Resources for non-pinned containers that "
              "declare none.", fields=(
            Field("cpu", "cpu", "100m", "CPU (shared pool).", flat="sidecarCpu"),
            Field("memory", "memory", "128Mi", "Memory.", flat="sidecarMemory"),
        )),
        Field("initContainerCpu", "cpu", "500m", "CPU given to a regular init container that "
              "asks for whole CPUs, so it runs in the shared pool instead of taking exclusive "
              "CPUs (kubernetes/kubernetes#112228). List it in pinnedContainers to pin it."),
        Field("threads", "object", None, "Thread-count env vars on containers with exclusive "
              "CPUs.", fields=(
            Field("env", "list", DEFAULT_THREAD_ENV, "Variables set to the pinned CPU count.",
                  flat="threadsEnv"),
            Field("reservedCpus", "int", 0, "Pinned CPUs left to the runtime's own threads.",
                  flat="threadsReservedCpus", minimum=0),
            Field("existing", "choice", "keep-lower", "A value already set: `keep-lower` keeps "
                  "a lower one and replaces a higher one; `replace` always writes the count.",
                  choices=("keep-lower", "replace"), flat="threadsExisting"),
        )),
        Field("shm", "object", None, "Memory-backed emptyDir volumes.", fields=(
            Field("sizeLimitPercent", "int", 25, "sizeLimit for a `medium: Memory` emptyDir "
                  "without one, as a percentage of the pod's memory limit.",
                  flat="shmSizeLimitPercent", minimum=1),
        )),
    )),
    Field("nodePools", "objectlist", None, "Node pools; workloads go to the pool named by "
          "their `krm-fn.dev/node-pool` annotation, else the pool whose nodeSelector they "
          "already carry, else the first pool.", fields=POOL_FIELDS),
    Field("output", "object", None, "What the node plan is emitted as.", fields=(
        Field("formats", "choicelist", ["configmap"], "Formats: " + ", ".join(FORMATS) + ".",
              choices=FORMATS),
        Field("namespace", "str", "kube-system", "Namespace of emitted namespaced objects."),
    )),
)


def _walk_leaves(fields, prefix=()):
    for f in fields:
        if f.kind in ("object", "objectlist"):
            yield from _walk_leaves(f.fields, prefix + ((f.name, f.kind),))
        else:
            yield prefix, f


def flat_keys() -> dict[str, tuple[tuple, Field]]:
    """Map of ConfigMap flat key -> (path of (name, kind) parents, Field). Built from SCHEMA."""
    out: dict[str, tuple[tuple, Field]] = {}
    for prefix, f in _walk_leaves(SCHEMA):
        key = f.flat or f.name
        if key in out:
            raise AssertionError(f"duplicate flat config key {key}")
        out[key] = (prefix, f)
    return out


FLAT_KEYS = flat_keys()

_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
_VERSION = re.compile(r"^v?1\.([0-9]{1,2})(\.[0-9]+)?$")
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}


def _type_name(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def _scalar_str(v: Any, path: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return v
    raise ConfigError(path, f"expected a string, found {_type_name(v)}")


def _convert(f: Field, v: Any, path: str, from_flat: bool) -> Any:
    """Convert one leaf value to its Python form; raise ConfigError naming `path`."""
    if v is None:
        if f.kind in ("cpu", "memory", "str") and f.default is None:
            return None
        raise ConfigError(path, "must not be null")
    k = f.kind
    if k == "str":
        return _scalar_str(v, path)
    if k == "int":
        if isinstance(v, bool) or not isinstance(v, (int, str)) or \
                (isinstance(v, str) and not re.fullmatch(r"-?[0-9]+", v.strip())):
            raise ConfigError(path, f"expected a whole number, found {v!r}")
        n = int(v)
        if f.minimum is not None and n < f.minimum:
            raise ConfigError(path, f"must be at least {f.minimum}, found {n}")
        return n
    if k == "bool":
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v in _TRUE | _FALSE:
            return v in _TRUE
        raise ConfigError(path, f"expected true or false, found {v!r}")
    if k in ("cpu", "memory"):
        s = _scalar_str(v, path)
        try:
            q = quantity.parse_cpu(s) if k == "cpu" else quantity.parse_memory(s)
        except quantity.QuantityError as e:
            raise ConfigError(path, str(e)) from None
        if q.value == 0:
            raise ConfigError(path, f"must be greater than zero, found {s!r}")
        return q
    if k == "duration":
        s = _scalar_str(v, path)
        if not _DURATION.match(s):
            raise ConfigError(path, f"expected a duration such as 30s or 1m30s, found {s!r}")
        return s
    if k == "version":
        if not isinstance(v, str):
            raise ConfigError(path, f"must be a quoted string such as \"1.34\" (YAML reads "
                                    f"1.30 as the number 1.3), found {v!r}")
        m = _VERSION.match(v)
        if not m:
            raise ConfigError(path, f"expected a Kubernetes minor version such as \"1.34\", "
                                    f"found {v!r}")
        return (1, int(m.group(1)))
    if k == "choice":
        s = _scalar_str(v, path)
        if s not in f.choices:
            raise ConfigError(path, f"must be one of {', '.join(f.choices)}; found {s!r}")
        return s
    if k in ("list", "choicelist"):
        if from_flat and isinstance(v, str):
            items = [x.strip() for x in v.split(",") if x.strip()]
        elif isinstance(v, list):
            items = [_scalar_str(x, f"{path}[{i}]") for i, x in enumerate(v)]
        else:
            raise ConfigError(path, f"expected a list, found {_type_name(v)}")
        if k == "choicelist":
            for i, x in enumerate(items):
                if x not in f.choices:
                    raise ConfigError(f"{path}[{i}]", f"must be one of {', '.join(f.choices)};"
                                                      f" found {x!r}")
        return items
    if k == "map":
        if from_flat and isinstance(v, str):
            out = {}
            for part in [p.strip() for p in v.split(",") if p.strip()]:
                if "=" not in part:
                    raise ConfigError(path, f"expected key=value pairs separated by commas, "
                                            f"found {part!r}")
                a, b = part.split("=", 1)
                out[a.strip()] = b.strip()
            return out
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
        return {str(a): _scalar_str(b, f"{path}.{a}") for a, b in v.items()}
    if k == "any":
        if from_flat and isinstance(v, str):
            try:
                v = json.loads(v) if v.strip() else {}
            except ValueError as e:
                raise ConfigError(path, f"expected a JSON object such as "
                                        f"{{\"maxPods\": 110}}, found {v!r} ({e})") from None
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
        return v
    raise AssertionError(k)


def _default(f: Field) -> Any:
    if f.kind == "object":
        return _build(f.fields, {}, f.name)
    if f.kind == "objectlist":
        return [_build(f.fields, {}, f"{f.name}[0]")]
    if f.kind in ("cpu", "memory", "version") and f.default is not None:
        return _convert(f, f.default, f.name, False)
    if isinstance(f.default, (list, dict)):
        return type(f.default)(f.default)
    return f.default


def _build(fields, data: Any, path: str, from_flat: bool = False) -> SimpleNamespace:
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a mapping, found {_type_name(data)}")
    known = {f.name: f for f in fields}
    unknown = [k for k in data if k not in known]
    if unknown:
        raise ConfigError(path, "unknown field" + ("s " if len(unknown) > 1 else " ")
                          + ", ".join(repr(str(k)) for k in unknown)
                          + f" (known: {', '.join(known)})")
    ns = SimpleNamespace()
    for f in fields:
        sub = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            setattr(ns, f.name, _default(f))
            continue
        v = data[f.name]
        if f.kind == "object":
            setattr(ns, f.name, _build(f.fields, {} if v is None else v, sub, from_flat))
        elif f.kind == "objectlist":
            if not isinstance(v, list):
                raise ConfigError(sub, f"expected a list, found {_type_name(v)}")
            setattr(ns, f.name, [_build(f.fields, x, f"{sub}[{i}]", from_flat)
                                 for i, x in enumerate(v)])
        else:
            setattr(ns, f.name, _convert(f, v, sub, from_flat))
    return ns


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _check_labels(labels: dict, path: str) -> None:
    """Label keys and values as the API server validates them (Kubernetes "Labels and
    Selectors": optional DNS-subdomain prefix + '/' + name of at most 63 characters; values
    at most 63 characters, alphanumeric at both ends)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (not _LABEL_NAME.match(name) or len(name) > 63
                or (prefix and (not _DNS_SUBDOMAIN.match(prefix) or len(prefix) > 253))):
            raise ConfigError(f"{path}.{key}", f"{key!r} is not a valid label key")
        if value and (not _LABEL_NAME.match(value) or len(value) > 63):
            raise ConfigError(f"{path}.{key}", f"{value!r} is not a valid label value")


def _check(cfg: SimpleNamespace) -> None:
    names = [p.name for p in cfg.nodePools]
    for i, n in enumerate(names):
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n or "") or len(n) > 40:
            raise ConfigError(f"spec.nodePools[{i}].name", f"must be a DNS label of at most 40 "
                                                           f"characters, found {n!r}")
        if names.index(n) != i:
            raise ConfigError(f"spec.nodePools[{i}].name", f"duplicate pool name {n!r}")
    for i, p in enumerate(cfg.nodePools):
        for k, v in p.kubelet.cpuManagerPolicyOptions.items():
            if v not in ("true", "false"):
                raise ConfigError(f"spec.nodePools[{i}].kubelet.cpuManagerPolicyOptions.{k}",
                                  f"must be \"true\" or \"false\", found {v!r}")
        if p.topology.coresPerSocket % p.topology.numaNodesPerSocket:
            raise ConfigError(f"spec.nodePools[{i}].topology.coresPerSocket",
                              f"{p.topology.coresPerSocket} cores do not divide evenly into "
                              f"{p.topology.numaNodesPerSocket} NUMA nodes per socket")
    if cfg.workloads.initContainerCpu.is_integer:
        raise ConfigError("spec.workloads.initContainerCpu", f"must be a fractional CPU such as "
                          f"500m so the init container runs in the shared pool, found "
                          f"{cfg.workloads.initContainerCpu.text!r} (whole CPUs would be pinned)")
    for i, p in enumerate(cfg.nodePools):
        _check_labels(p.nodeSelector, f"spec.nodePools[{i}].nodeSelector")
    _check_labels(cfg.selector.matchLabels, "spec.selector.matchLabels")
    if not _DNS_LABEL.match(cfg.output.namespace) or len(cfg.output.namespace) > 63:
        raise ConfigError("spec.output.namespace", f"must be a DNS label (lowercase letters, "
                                                   f"digits, '-'), found "
                                                   f"{cfg.output.namespace!r}")
    if cfg.workloads.threads.reservedCpus < 0:
        raise ConfigError("spec.workloads.threads.reservedCpus", "must not be negative")


def _spec_from_flat(data: dict, path: str) -> dict:
    spec: dict = {}
    for key, value in data.items():
        if key not in FLAT_KEYS:
            raise ConfigError(f"{path}.{key}", f"unknown key {key!r} (known: "
                                               f"{', '.join(sorted(FLAT_KEYS))})")
        prefix, f = FLAT_KEYS[key]
        node = spec
        for name, kind in prefix:
            if kind == "objectlist":
                lst = node.setdefault(name, [{}])
                node = lst[0]
            else:
                node = node.setdefault(name, {})
        node[f.name] = value
    return spec


def load(obj: Any) -> SimpleNamespace:
    """Load a functionConfig object (plain dict as read from YAML, or None).

    Returns a namespace tree mirroring SCHEMA, with defaults filled; `kubernetesVersion`
    becomes a `(major, minor)` tuple, cpu/memory fields become `quantity.Quantity`.
    Accepts `krm-fn.dev/v1alpha1 InferenceTuning` (fields under `spec`) and `v1 ConfigMap`
    (flat keys under `data`, all strings; an empty ConfigMap means defaults).
    Raises ConfigError naming the field path.
    """
    if obj is None:
        spec: Any = {}
        flat = False
    elif not isinstance(obj, dict):
        raise ConfigError("functionConfig", f"expected a mapping, found {_type_name(obj)}")
    elif obj.get("kind") == "ConfigMap":
        data = obj.get("data") or {}
        if not isinstance(data, dict):
            raise ConfigError("data", f"expected a mapping, found {_type_name(data)}")
        spec, flat = _spec_from_flat(data, "data"), True
    elif obj.get("kind") == KIND:
        if obj.get("apiVersion") != API_VERSION:
            raise ConfigError("apiVersion", f"expected {API_VERSION}, found "
                                            f"{obj.get('apiVersion')!r}")
        top_unknown = [k for k in obj if k not in ("apiVersion", "kind", "metadata", "spec")]
        if top_unknown:
            raise ConfigError("", "unknown field" + ("s " if len(top_unknown) > 1 else " ")
                              + ", ".join(repr(str(k)) for k in top_unknown)
                              + " (known: apiVersion, kind, metadata, spec)")
        spec, flat = (obj.get("spec") or {}), False
    else:
        raise ConfigError("kind", f"functionConfig must be a {API_VERSION} {KIND} or a v1 "
                                  f"ConfigMap, found {obj.get('apiVersion')!r} "
                                  f"{obj.get('kind')!r}")
    try:
        cfg = _build(SCHEMA, spec, "data" if flat else "spec", from_flat=flat)
        _check(cfg)
    except ConfigError as e:
        raise (_flat_error(e) if flat else e) from None
    return cfg


def _nested_path(prefix: tuple, f: Field, root: str) -> str:
    parts = [n + ("[0]" if k == "objectlist" else "") for n, k in prefix] + [f.name]
    return root + "." + ".".join(parts)


def flat_path(path: str) -> str:
    """The ConfigMap form's name for a nested config field path:
    `spec.nodePools[0].topology.threadsPerCore` -> `data.threadsPerCore` (unchanged when no
    flat key covers it)."""
    for key, (prefix, f) in FLAT_KEYS.items():
        for root in ("data", "spec"):
            nested = _nested_path(prefix, f, root)
            if path == nested or path.startswith(nested + ".") or path.startswith(nested + "["):
                return "data." + key + path[len(nested):]
    return path


def is_flat(obj: Any) -> bool:
    """True when a functionConfig object is the ConfigMap (flat keys) form."""
    return isinstance(obj, dict) and obj.get("kind") == "ConfigMap"


def _flat_error(e: ConfigError) -> ConfigError:
    """Name the flat ConfigMap key (`data.threadsPerCore`) instead of the nested field."""
    return ConfigError(flat_path(e.path), e.message)


def flat_key_table() -> str:
    """Markdown table of the ConfigMap flat keys (used in the README; tested to match)."""
    rows = ["| key | field | default |", "|---|---|---|"]
    for key, (prefix, f) in FLAT_KEYS.items():
        dotted = ".".join(n + ("[0]" if k == "objectlist" else "") for n, k in prefix)
        dotted = f"{dotted}.{f.name}" if dotted else f.name
        d = f.default
        if isinstance(d, bool):
            d = "true" if d else "false"
        elif isinstance(d, list):
            d = ",".join(d)
        elif isinstance(d, dict):
            d = ",".join(f"{a}={b}" for a, b in d.items())
        rows.append(f"| `{key}` | `spec.{dotted}` | {'' if d in (None, '') else '`' + str(d) + '`'} |")
    return "\n".join(rows)
