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
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

from krm_fn import quantity, workloads
from krm_fn.node import topology
from krm_fn.node.topology import MAX_CPUS

API_VERSION = "krm-fn.dev/v1alpha1"
MIN_MINOR = 22   # cpuManagerPolicyOptions (full-pcpus-only) appeared in Kubernetes 1.22
KIND = "InferenceTuning"


class ConfigError(ValueError):
    """A function config problem. `path` is the field path inside the config object
    (e.g. `spec.nodePools[0].topology.threadsPerCore`), `message` says what is wrong.
    `errors`: every problem found in one pass over the config (this one first), so a user
    fixes them all at once; the shape and type checks of every field are collected, the
    checks across fields run only on a config without those."""

    def __init__(self, path: str, message: str, more: list | None = None):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
        self.more = list(more or [])

    @property
    def errors(self) -> list["ConfigError"]:
        """This error and the ones found with it, in field order."""
        return [self] + self.more


def _raise_all(errors: list[ConfigError]) -> None:
    """Raise the first of `errors` carrying all of them (nothing when empty)."""
    if errors:
        first = errors[0]
        raise ConfigError(first.path, first.message, errors[1:])


def _unknown(keys: list, known: list[str], path: str) -> ConfigError:
    """`unknown field 'x' (did you mean 'y'?) (known: ...)`."""
    import difflib
    names = []
    for k in keys:
        close = difflib.get_close_matches(str(k), known, n=1, cutoff=0.6)
        names.append(_short(str(k)) + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ConfigError(path, "unknown field" + ("s " if len(keys) > 1 else " ")
                       + ", ".join(names) + f" (known: {', '.join(known)})")


@dataclass(frozen=True)
class Field:
    """One config field.

    `kind` is one of: str, text (multi-line), int, bool, cpu, memory, duration, version,
    choice, list,
    choicelist, map, any (a mapping of plain data), data (plain data of any shape; the flat
    form keeps the string), object, objectlist. `fields` holds the children of object kinds.
    `flat` is the key of this field in the ConfigMap form (default: the field name); leaves
    under `nodePools` configure the first node pool. `minimum`/`maximum` bound int values
    (inclusive); `min_items` is the shortest allowed list (list kinds), `item` names one
    entry in that error ("at least one <item>").
    """

    name: str
    kind: str
    default: Any = None
    doc: str = ""
    choices: tuple = ()
    fields: tuple = ()
    flat: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_items: int = 0
    item: str = "entry"


DEFAULT_THREAD_ENV = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                      "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS",
                      "BLIS_NUM_THREADS", "TORCH_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                      "RAYON_NUM_THREADS", "GOMAXPROCS", "PYTHON_CPU_COUNT"]

FORMATS = ("configmap", "kubelet-config", "openshift", "kubeadm", "gke", "aks", "eks", "talos",
           "json6902")

def _injector(name: str, flat: str, doc: str) -> Field:
    """The config of one admission-time injector: proxy cpu and memory (request == limit)
    and when to write them. Flat keys `<flat>Cpu`, `<flat>Memory`, `<flat>Mode`."""
    return Field(name, "object", None, doc, fields=(
        Field("cpu", "cpu", None, "CPU request and limit of the injected proxy "
              "(null: not configured, warn when injection is detected).", flat=f"{flat}Cpu"),
        Field("memory", "memory", None, "Memory request and limit of the injected proxy.",
              flat=f"{flat}Memory"),
        Field("mode", "choice", "auto", "`auto`: when the workload opts in; `always`: also "
              "without a visible opt-in (namespace-level injection); `never`.",
              choices=("auto", "always", "never"), flat=f"{flat}Mode"),
    ))


POOL_FIELDS = (
    Field("name", "str", "inference", "Name of the node pool; names the emitted objects.",
          flat="nodePool"),
    Field("nodeSelector", "map", {"krm-fn.dev/cpu-pinning": "true"},
          "Labels of the pool's nodes; added to the pod spec `nodeSelector` of every workload "
          "placed in the pool. A conflicting existing value is an error."),
    Field("topology", "object", None, "CPU topology of the pool's nodes.", fields=(
        Field("sockets", "int", 2, "CPU sockets per node.", minimum=1, maximum=64),
        Field("numaNodesPerSocket", "int", 1, "NUMA nodes per socket.", minimum=1,
              maximum=64),
        Field("coresPerSocket", "int", 16, "Physical cores per socket.", minimum=1,
              maximum=1024),
        Field("threadsPerCore", "int", 2, "SMT siblings per core (1 = SMT off).", minimum=1,
              maximum=8),
        Field("siblings", "choice", "split",
              "CPU numbering: `split` = CPU i and i+cores are siblings (Linux x86 default); "
              "`adjacent` = CPUs 2i and 2i+1 are siblings.", choices=("split", "adjacent")),
        Field("lscpu", "text", None, "Output of `lscpu -p=CPU,CORE,SOCKET,NODE` from one node "
              "of the pool: the exact CPU numbering; when set, the counts above are ignored.",
              flat="lscpu"),
    )),
    Field("reserved", "object", None, "CPUs kept for system daemons (reservedSystemCPUs).", fields=(
        Field("cores", "int", 2, "Whole physical cores reserved (all SMT siblings); the seed "
              "advice is 2-4.", flat="reservedCores", minimum=1, maximum=1024),
        Field("spreadAcrossNuma", "bool", False, "Split the reserved cores evenly across NUMA "
              "nodes instead of taking the lowest cores of NUMA node 0.",
              flat="spreadReservedAcrossNuma"),
        Field("spreadMemoryAcrossNuma", "bool", False, "memoryManagerPolicy Static: split the "
              "computed reservedMemory evenly across NUMA nodes (whole Mi, whole hugepages) "
              "instead of reserving it all on NUMA node 0.",
              flat="spreadReservedMemoryAcrossNuma"),
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
        Field("topologyManagerPolicyOptions", "map", {},
              "Topology Manager options, checked against kubernetesVersion: "
              "`prefer-closest-numa-nodes` (\"true\"/\"false\"; best-effort and restricted "
              "only), `max-allowable-numa-nodes` (at least 8; added automatically for pools "
              "with more than 8 NUMA nodes)."),
        Field("topologyManagerScope", "choice", "pod",
              "Align each container (`container`) or the whole pod (`pod`).",
              choices=("container", "pod")),
        Field("memoryManagerPolicy", "choice", "None",
              "Memory Manager policy (capitalised, as the kubelet spells it). `Static` adds "
              "reservedMemory computed from the reservations.", choices=("None", "Static")),
        Field("reservedSystemCPUs", "str", None,
              "Explicit cpuset for system daemons (e.g. `0-1,32-33`); overrides "
              "`reserved.cores`."),
        Field("reservedMemory", "data", None, "memoryManagerPolicy Static: an explicit "
              "reservedMemory list ([{numaNode: 0, limits: {memory: 1636Mi}}], or the kubelet "
              "flag form `0:memory=836Mi;1:memory=800Mi`), checked to sum to kubeReserved + "
              "systemReserved + evictionHard[memory.available] per type. null: computed."),
        Field("kubeReserved", "map", None, "kubeReserved (cpu is dropped: "
              "reservedSystemCPUs replaces it). null: {memory: 500Mi}, or the baseline's "
              "kubeReserved when output.baseline sets one."),
        Field("systemReserved", "map", None, "systemReserved (cpu is dropped). null: "
              "{memory: 500Mi}, or the baseline's systemReserved when output.baseline sets "
              "one."),
        Field("evictionHard", "map", {},
              "Hard eviction thresholds, merged over the kubelet defaults (memory.available "
              "100Mi, nodefs.available 10%, nodefs.inodesFree 5%, imagefs.available 15%) and "
              "the baseline's (setting one signal would otherwise zero the others)."),
        Field("podPidsLimit", "int", 4096, "pids.max of every pod cgroup.", minimum=1,
              maximum=4194304),
        Field("failCgroupV1", "bool", True, "Refuse to start on cgroup v1 nodes "
              "(field since 1.31; kubelet default true from 1.35)."),
        Field("singleProcessOOMKill", "bool", None, "null: not written. true: an OOM kills "
              "only the offending process instead of the whole container (cgroup v2 "
              "memory.oom.group; field since 1.32). Never set unless asked."),
        Field("cgroupDriver", "choice", None, "null: not written. cgroupfs or systemd (the "
              "CRI's own setting wins when it reports one, KubeletCgroupDriverFromCRI).",
              choices=("cgroupfs", "systemd")),
        Field("extra", "any", {}, "Any other KubeletConfiguration fields, merged last."),
    )),
)

SCHEMA = (
    Field("kubernetesVersion", "version", "1.34",
          "Kubernetes minor version of the nodes (quoted, e.g. \"1.34\"); gates which kubelet "
          "fields and options may be emitted."),
    Field("mode", "choice", "mutate",
          "`mutate`: change the items and emit the node plan. `validate`: change nothing and "
          "emit nothing; report each change `mutate` would make as an error naming the item "
          "and field (exit 1), so a kpt validator or CI check fails on unpinned manifests.",
          choices=("mutate", "validate")),
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
                  flat="threadsReservedCpus", minimum=0, maximum=1024),
            Field("existing", "choice", "keep-lower", "A value already set: `keep-lower` keeps "
                  "a lower one and replaces a higher one; `replace` always writes the count.",
                  choices=("keep-lower", "replace"), flat="threadsExisting"),
            Field("source", "choice", "literal", "`literal` writes the count as a string; "
                  "`downwardAPI` writes a resourceFieldRef on limits.cpu with divisor \"1\" "
                  "(whole-CPU containers only).", choices=("literal", "downwardAPI"),
                  flat="threadsSource"),
            Field("engines", "bool", True, "Recognise the serving engine (vLLM, llama.cpp, "
                  "TorchServe, Triton, ONNX Runtime, Ray, JVM, gunicorn/uvicorn workers) and set "
                  "what it reads.",
                  flat="threadsEngines"),
            Field("goMemLimitPercent", "int", None, "Set GOMEMLIMIT to this percentage of the "
                  "memory limit on every container that gets thread env (a Go binary cannot "
                  "be told from its image; nothing else reads it) (null: off).",
                  flat="goMemLimitPercent",
                  minimum=1, maximum=100),
            Field("mallocArenaMax", "int", None, "Set MALLOC_ARENA_MAX on pinned containers "
                  "(null: off; 2-4 suits memory-limited pods).", flat="mallocArenaMax",
                  minimum=1, maximum=64),
        )),
        Field("injection", "object", None, "Sidecars injected at admission: their "
              "request == limit annotations on the pod template.", fields=(
            _injector("istio", "istio", "Istio istio-proxy (and istio-init)."),
            _injector("linkerd", "linkerd", "Linkerd linkerd-proxy (and linkerd-init)."),
            _injector("knativeQueueProxy", "queueProxy",
                      "Knative queue-proxy (Knative Services, KServe serverless)."),
            _injector("vault", "vault", "Vault agent (vault-agent, vault-agent-init)."),
            _injector("dapr", "dapr", "Dapr daprd."),
        )),
        Field("shm", "object", None, "Memory-backed emptyDir volumes.", fields=(
            Field("sizeLimitPercent", "int", 25, "sizeLimit for a `medium: Memory` emptyDir "
                  "without one, as a percentage of the pod's memory limit.",
                  flat="shmSizeLimitPercent", minimum=1, maximum=100),
        )),
    )),
    Field("extraKinds", "objectlist", [], "Custom workload kinds without a release, "
          "validated like the built-in ones (typed form only).", flat="-", fields=(
        Field("group", "str", "", "API group (\"\" for the core group)."),
        Field("kind", "str", None, "Kind."),
        Field("podSpecs", "list", [], "Paths of PodSpecs, e.g. spec.template.spec or "
              "spec.workers[*].template.spec."),
        Field("annotations", "list", [], "For each pod spec, the path of the mapping whose "
              "annotations the pods get (default: the pod spec's parent + .metadata)."),
    )),
    Field("nodePools", "objectlist", None, "Node pools; workloads go to the pool named by "
          "their `krm-fn.dev/node-pool` annotation, else the pool whose nodeSelector they "
          "already carry, else the first pool.", fields=POOL_FIELDS, min_items=1,
          item="node pool"),
    Field("output", "object", None, "What the node plan is emitted as.", fields=(
        Field("formats", "choicelist", ["configmap"], "Formats: " + ", ".join(FORMATS) + ".",
              choices=FORMATS, min_items=1, item="format"),
        Field("namespace", "str", "kube-system", "Namespace of emitted namespaced objects."),
        Field("baseline", "any", None, "The nodes' current KubeletConfiguration (as the "
              "kubelet's configz reports it; a `{kubeletconfig: ...}` wrapper is accepted): the "
              "plan is merged onto it and the result checked; unset reservations come from "
              "it; a change that needs the CPU/Memory Manager state reset gets a rollout "
              "note; what the `json6902` operations start from (typed form only).", flat="-"),
        Field("verifyJob", "bool", False, "Also emit, per node pool that received a "
              "workload, a batch/v1 Job `krm-fn-verify-<pool>` that runs `krm-fn verify` in a "
              "pinned container on one of the pool's nodes."),
        Field("verifyImage", "str", "ghcr.io/krm-fn/krm-fn:0.1.0", "Image of the verify Job "
              "(runs `krm-fn verify`; entrypoint krm-fn)."),
    )),
)


def _walk_leaves(fields, prefix=()):
    for f in fields:
        if f.flat == "-":          # only in the typed form
            continue
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

_DURATION = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|μs|ms|s|m|h))+")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_NS = {"ns": 1, "us": 10 ** 3, "µs": 10 ** 3, "μs": 10 ** 3, "ms": 10 ** 6,
                "s": 10 ** 9, "m": 60 * 10 ** 9, "h": 3600 * 10 ** 9}
# Go's time.Duration is an int64 of nanoseconds: 2562047h47m16.854775807s at most.
_MAX_DURATION_NS = 2 ** 63 - 1
_VERSION = re.compile(r"v?1\.([0-9]{1,2})(\.[0-9]+)?")
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
# Longest string accepted for any config value, longest quantity/duration string, deepest
# nesting of `kubelet.extra` (the extra mapping itself is level 1).
MAX_TEXT = 4096
MAX_LONG_TEXT = 1_000_000   # multi-line text such as an lscpu paste
MAX_QUANTITY_TEXT = 64
MAX_EXTRA_DEPTH = 32
# C0/C1 control characters and the Unicode line/paragraph separators: never part of a name,
# label, quantity, duration or cpuset.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_INT64 = 2 ** 63


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    for t, name in ((bool, "a boolean"), (dict, "a mapping"), (list, "a list"),
                    (str, "a string"), (int, "a number"), (float, "a number")):
        if isinstance(v, t):
            return name
    return type(v).__name__


def _num(n: int) -> str:
    """str(n), or a description for numbers too long to print (str() of an int of more
    than 4300 digits raises)."""
    if n.bit_length() <= 128:
        return str(n)
    return f"a number of about {int(n.bit_length() * 0.30103)} digits"


def _short(v: Any, limit: int = 60) -> str:
    """repr of a scalar for an error message, shortened; containers are named by type."""
    if isinstance(v, (dict, list, tuple, set)):
        return _type_name(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return _num(v)
    r = repr(v)
    return r if len(r) <= limit else r[:limit - 4] + "..." + r[-1]


def _check_text(s: str, path: str) -> str:
    if len(s) > MAX_TEXT:
        raise ConfigError(path, f"is {len(s)} characters long; at most {MAX_TEXT} are accepted")
    m = _CONTROL.search(s)
    if m:
        raise ConfigError(path, f"must not contain control characters, found {m.group()!r} in "
                                f"{_short(s)}")
    return s


def _scalar_str(v: Any, path: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if abs(v) >= 10 ** 60:
            raise ConfigError(path, f"number too large: {_num(v)}")
        return str(v)
    if isinstance(v, float):
        return str(v)
    if isinstance(v, str):
        return _check_text(str(v), path)
    raise ConfigError(path, f"expected a string, found {_type_name(v)}")


def _quantity(s: str, kind: str, path: str) -> quantity.Quantity:
    """Parse a cpu or memory quantity string (kind "cpu" / "memory"; "count" = a whole
    number in any quantity spelling); raise ConfigError naming `path`."""
    if len(s) > MAX_QUANTITY_TEXT:
        raise ConfigError(path, f"{_short(s)} is not a quantity: longer than "
                                f"{MAX_QUANTITY_TEXT} characters")
    try:
        if kind == "cpu":
            return quantity.parse_cpu(s)
        q = quantity.parse_memory(s)
    except ValueError as e:  # QuantityError, or int() refusing a huge digit string
        if kind == "count" and "whole number of bytes" in str(e):
            raise ConfigError(path, f"{_short(s)} is not a whole number") from None
        raise ConfigError(path, str(e)) from None
    return q


def _int(f: Field, v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)) or \
            (isinstance(v, str) and not re.fullmatch(r"-?[0-9]+", v.strip())):
        raise ConfigError(path, f"expected a whole number, found {_short(v)}")
    if isinstance(v, str):
        digits = v.strip().lstrip("-").lstrip("0")
        if len(digits) > 30:  # beyond every bound; int() refuses > 4300 digits anyway
            negative = v.strip().startswith("-")
            bound = (f"at least {f.minimum}" if negative and f.minimum is not None else
                     f"at most {f.maximum}" if not negative and f.maximum is not None else
                     "a smaller number")
            raise ConfigError(path, f"must be {bound}, found a {len(digits)}-digit number")
    n = int(v)
    if f.minimum is not None and n < f.minimum:
        raise ConfigError(path, f"must be at least {f.minimum}, found {_num(n)}")
    if f.maximum is not None and n > f.maximum:
        raise ConfigError(path, f"must be at most {f.maximum}, found {_num(n)}")
    return n


def _duration(s: str, path: str) -> str:
    if len(s) > MAX_QUANTITY_TEXT or not _DURATION.fullmatch(s):
        raise ConfigError(path, f"expected a duration such as 30s or 1m30s, found {_short(s)}")
    ns = sum(Fraction(num) * _DURATION_NS[unit] for num, unit in _DURATION_PART.findall(s))
    if ns > _MAX_DURATION_NS:
        raise ConfigError(path, f"{_short(s)} is longer than the longest Go duration "
                                f"(2562047h47m16.854775807s); the kubelet cannot parse it")
    if int(ns) == 0:
        raise ConfigError(path, f"must be greater than zero, found {_short(s)}")
    return s


class _JsonError(ValueError):
    pass


def _json_constant(name: str) -> Any:
    raise _JsonError(f"{name} is not a JSON number")


def _json_pairs(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _JsonError(f"duplicate key {_short(key)}")
        out[key] = value
    return out


_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _check_plain(v: Any, path: str, depth: int = 1) -> None:
    """`kubelet.extra` data must be plain JSON: mappings with string keys, lists, strings,
    64-bit integers, finite floats, booleans, null; at most MAX_EXTRA_DEPTH levels deep."""
    if v is None or isinstance(v, (bool, str)):
        return
    if isinstance(v, int):
        if not -_INT64 <= v < _INT64:
            raise ConfigError(path, f"{_num(v)} does not fit in a 64-bit integer")
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
                _check_plain(x, f"{path}[{i}]", depth + 1)
            return
        for key, x in v.items():
            if not isinstance(key, str):
                raise ConfigError(path, f"keys must be strings, found {_short(key)} "
                                        f"({_type_name(key)})")
            if depth == 1 and not _FIELD_NAME.fullmatch(key):
                raise ConfigError(path, f"{_short(key)} is not a KubeletConfiguration field "
                                        f"name (letters and digits, starting with a letter)")
            _check_plain(x, f"{path}.{key}", depth + 1)
        return
    raise ConfigError(path, f"{type(v).__name__} value {_short(v)} is not plain data (use "
                            f"mappings, lists, strings, numbers, booleans or null)")


def _map_key(a: Any, path: str) -> str:
    if a is None or isinstance(a, (dict, list)):
        raise ConfigError(path, f"keys must be strings, found {_type_name(a)}")
    return _scalar_str(a, path)


def _convert(f: Field, v: Any, path: str, from_flat: bool) -> Any:
    """Convert one leaf value to its Python form; raise ConfigError naming `path`."""
    if v is None:
        if f.kind in ("cpu", "memory", "str", "int", "text", "any", "bool", "choice", "map",
                      "data") and f.default is None:
            return None
        raise ConfigError(path, "must not be null")
    k = f.kind
    if k == "str":
        return _scalar_str(v, path)
    if k == "text":
        if not isinstance(v, str):
            raise ConfigError(path, f"expected text, found {_type_name(v)}")
        if len(v) > MAX_LONG_TEXT:
            raise ConfigError(path, f"is {len(v)} characters long; at most {MAX_LONG_TEXT} are "
                                    f"accepted")
        for n, line in enumerate(v.splitlines(), 1):
            m = _CONTROL.search(line.rstrip("\r"))
            if m:
                raise ConfigError(path, f"line {n} contains the control character "
                                        f"{m.group()!r}")
        return v
    if k == "int":
        return _int(f, v, path)
    if k == "bool":
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v in _TRUE | _FALSE:
            return v in _TRUE
        raise ConfigError(path, f"expected true or false, found {_short(v)}")
    if k in ("cpu", "memory"):
        s = _scalar_str(v, path)
        q = _quantity(s, k, path)
        if q.value == 0:
            raise ConfigError(path, f"must be greater than zero, found {s!r}")
        return q
    if k == "duration":
        return _duration(_scalar_str(v, path), path)
    if k == "version":
        if not isinstance(v, str):
            found = (f"the number {v!r} (YAML reads an unquoted 1.30 as 1.3): write the "
                     f"version in quotes" if isinstance(v, (int, float))
                     and not isinstance(v, bool) else _short(v))
            raise ConfigError(path, f"must be a quoted string such as \"1.34\", found {found}")
        m = _VERSION.fullmatch(v)
        if not m:
            raise ConfigError(path, f"expected a Kubernetes minor version such as \"1.34\", "
                                    f"found {_short(v)}")
        if int(m.group(1)) < MIN_MINOR:
            raise ConfigError(path, f"Kubernetes {v} is not supported: krm-fn needs 1."
                                    f"{MIN_MINOR} or later (cpuManagerPolicyOptions)")
        return (1, int(m.group(1)))
    if k == "choice":
        s = _scalar_str(v, path)
        if s not in f.choices:
            same = [c for c in f.choices if c.lower() == s.lower()]
            hint = f" (write {same[0]!r}: the spelling is case-sensitive)" if same else ""
            raise ConfigError(path, f"must be one of {', '.join(f.choices)}; found "
                                    f"{_short(s)}{hint}")
        return s
    if k in ("list", "choicelist"):
        if from_flat and isinstance(v, str):
            items = [x.strip() for x in v.split(",") if x.strip()]
            for i, x in enumerate(items):
                _check_text(x, f"{path}[{i}]")
        elif isinstance(v, list):
            items = [_scalar_str(x, f"{path}[{i}]") for i, x in enumerate(v)]
        elif isinstance(v, str) and not _CONTROL.search(v) and len(v) <= 200:
            raise ConfigError(path, f"expected a list, found a string (write [{v}])")
        else:
            raise ConfigError(path, f"expected a list, found {_type_name(v)}")
        if len(items) < f.min_items:
            raise ConfigError(path, f"must list at least "
                                    f"{'one' if f.min_items == 1 else f.min_items} {f.item}")
        for i, x in enumerate(items):
            if k == "choicelist" and x not in f.choices:
                raise ConfigError(f"{path}[{i}]", f"must be one of {', '.join(f.choices)};"
                                                  f" found {_short(x)}")
            if x in items[:i]:
                raise ConfigError(f"{path}[{i}]", f"{_short(x)} is listed twice")
        return items
    if k == "map":
        out: dict[str, str] = {}
        if from_flat and isinstance(v, str):
            for part in [p.strip() for p in v.split(",") if p.strip()]:
                if "=" not in part:
                    raise ConfigError(path, f"expected key=value pairs separated by commas, "
                                            f"found {_short(part)}")
                a, b = (x.strip() for x in part.split("=", 1))
                _check_text(a, path)
                if not a:
                    raise ConfigError(path, f"empty key in {_short(part)}")
                if a in out:
                    raise ConfigError(f"{path}.{a}", f"key {_short(a)} is given twice")
                out[a] = _check_text(b, f"{path}.{a}")
            return out
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
        for a, b in v.items():
            key = _map_key(a, path)
            if key in out:
                raise ConfigError(f"{path}.{key}", f"key {_short(key)} is given twice")
            out[key] = _scalar_str(b, f"{path}.{key}")
        return out
    if k == "any":
        if from_flat and isinstance(v, str):
            text = v
            try:
                v = json.loads(text, parse_constant=_json_constant,
                               object_pairs_hook=_json_pairs) if text.strip() else {}
            except RecursionError:
                raise ConfigError(path, f"JSON nested more than {MAX_EXTRA_DEPTH} levels "
                                        f"deep") from None
            except _JsonError as e:
                raise ConfigError(path, f"{e}; write a plain JSON object such as "
                                        f"{{\"maxPods\": 110}}") from None
            except ValueError as e:
                raise ConfigError(path, f"expected a JSON object such as "
                                        f"{{\"maxPods\": 110}}, found {_short(text)} "
                                        f"({_short(str(e), 200)[1:-1]})") from None
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
        _check_plain(v, path)
        return v
    if k == "data":
        # Plain data of any shape, checked by its user (e.g. krm_fn.node.memory.parse); the
        # flat form keeps the string as written.
        if not (from_flat and isinstance(v, str)):
            _check_plain(v, path, 2)
        return v
    raise AssertionError(k)


def _default(f: Field) -> Any:
    if f.kind == "object":
        return _build(f.fields, {}, f.name)
    if f.kind == "objectlist":
        return [] if f.default == [] else [_build(f.fields, {}, f"{f.name}[0]")]
    if f.kind in ("cpu", "memory", "version") and f.default is not None:
        return _convert(f, f.default, f.name, False)
    if isinstance(f.default, (list, dict)):
        return type(f.default)(f.default)
    return f.default


def _build(fields, data: Any, path: str, from_flat: bool = False) -> SimpleNamespace:
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a mapping, found {_type_name(data)}")
    known = {f.name: f for f in fields}
    errors: list[ConfigError] = []
    unknown = [k for k in data if k not in known]
    if unknown:
        errors.append(_unknown(unknown, list(known), path))
    ns = SimpleNamespace()
    for f in fields:
        sub = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            setattr(ns, f.name, _default(f))
            continue
        v = data[f.name]
        try:
            if f.kind == "object":
                setattr(ns, f.name, _build(f.fields, {} if v is None else v, sub, from_flat))
            elif f.kind == "objectlist":
                if not isinstance(v, list):
                    raise ConfigError(sub, f"expected a list, found {_type_name(v)}")
                if len(v) < f.min_items:
                    raise ConfigError(sub, f"must list at least "
                                           f"{'one' if f.min_items == 1 else f.min_items} "
                                           f"{f.item}")
                built, item_errors = [], []
                for i, x in enumerate(v):
                    try:
                        built.append(_build(f.fields, x, f"{sub}[{i}]", from_flat))
                    except ConfigError as e:
                        item_errors.extend(e.errors)
                _raise_all(item_errors)
                setattr(ns, f.name, built)
            else:
                setattr(ns, f.name, _convert(f, v, sub, from_flat))
        except ConfigError as e:
            errors.extend(e.errors)
    _raise_all(errors)
    return ns


# A container image reference, as the distribution/reference grammar defines it:
# [domain[:port]/]path-component[/path-component...][:tag][@digest].
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_DOMAIN = (r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
                 r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?")
_IMAGE = re.compile(rf"(?:{_IMAGE_DOMAIN}/)?{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
                    r"(?::[\w][\w.-]{0,127})?"
                    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")
# Used with fullmatch only: `$` would also match before a trailing newline.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Environment variable names the thread variables may use: C identifiers, what language
# runtimes (getenv in OpenMP, MKL, Go, Python...) read.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Kind names (CamelCase identifiers).
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")

# kubeReserved / systemReserved resource names and how their values parse (kubelet.md §1).
RESERVED_RESOURCES = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "memory",
                      "pid": "pid"}
# evictionHard signals (kubelet eviction API) and how an absolute threshold parses:
# bytes for *.available, a count for inodes and pids.
EVICTION_SIGNALS = {
    "memory.available": "memory", "nodefs.available": "memory",
    "nodefs.inodesFree": "count", "imagefs.available": "memory",
    "imagefs.inodesFree": "count", "containerfs.available": "memory",
    "containerfs.inodesFree": "count", "pid.available": "count",
    "allocatableMemory.available": "memory",
}
_PERCENT = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,6})?)%")
MAX_PIDS = 4194304  # PID_MAX_LIMIT on 64-bit Linux
# Linux MAX_NUMNODES with the largest CONFIG_NODES_SHIFT (10).
MAX_NUMA_NODES = 1024


def _check_labels(labels: dict, path: str) -> None:
    """Label keys and values as the API server validates them (Kubernetes "Labels and
    Selectors": optional DNS-subdomain prefix + '/' + name of at most 63 characters; values
    at most 63 characters, alphanumeric at both ends)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (not _LABEL_NAME.fullmatch(name) or len(name) > 63
                or (prefix and (not _DNS_SUBDOMAIN.fullmatch(prefix) or len(prefix) > 253))):
            raise ConfigError(f"{path}.{key}", f"{_short(key)} is not a valid label key")
        if value and (not _LABEL_NAME.fullmatch(value) or len(value) > 63):
            raise ConfigError(f"{path}.{key}", f"{_short(value)} is not a valid label value")


def _check_reserved(m: dict, path: str) -> None:
    """kubeReserved / systemReserved: known resource names with valid quantities."""
    for key, value in m.items():
        sub = f"{path}.{key}"
        kind = RESERVED_RESOURCES.get(key)
        if kind is None:
            raise ConfigError(sub, f"unknown resource {_short(key)} (known: "
                                   f"{', '.join(RESERVED_RESOURCES)})")
        if kind == "pid":
            if not re.fullmatch(r"[0-9]{1,10}", value) or not 0 < int(value) <= MAX_PIDS:
                raise ConfigError(sub, f"must be a whole number of process IDs from 1 to "
                                       f"{MAX_PIDS}, found {_short(value)}")
        else:
            _quantity(value, kind, sub)


def _check_eviction(m: dict, path: str) -> None:
    """evictionHard: known signals; each threshold a quantity or a percentage in (0, 100]."""
    for key, value in m.items():
        sub = f"{path}.{key}"
        kind = EVICTION_SIGNALS.get(key)
        if kind is None:
            raise ConfigError(sub, f"unknown eviction signal {_short(key)} (known: "
                                   f"{', '.join(EVICTION_SIGNALS)})")
        if value.endswith("%"):
            pm = _PERCENT.fullmatch(value)
            if not pm or not 0 < Fraction(pm.group(1)) <= 100:
                raise ConfigError(sub, f"a percentage threshold must be greater than 0% and at "
                                       f"most 100%, found {_short(value)}")
            continue
        q = _quantity(value, kind, sub)
        if kind == "count" and q.value.denominator != 1:
            raise ConfigError(sub, f"{_short(value)} is not a whole number")


def _check_names(items: list, path: str, pattern: re.Pattern, limit: int, what: str,
                 allow_empty: bool = False) -> None:
    for i, x in enumerate(items):
        if allow_empty and x == "":
            continue
        if not pattern.fullmatch(x) or len(x) > limit:
            raise ConfigError(f"{path}[{i}]", f"must be {what} of at most {limit} characters, "
                                              f"found {_short(x)}")


def extra_registry(cfg: SimpleNamespace) -> dict:
    """The config's extraKinds as registry entries: (group, kind) -> (PodSpecAt, ...)."""
    out: dict = {}
    for k in cfg.extraKinds:
        ats = []
        for i, spec_path in enumerate(k.podSpecs):
            spec = workloads.parse_path(spec_path)
            meta = (workloads.parse_path(k.annotations[i]) if i < len(k.annotations)
                    else spec[:-1] + ("metadata",))
            ats.append(workloads.PodSpecAt(spec=spec, meta=meta))
        out[(k.group, k.kind)] = tuple(ats)
    return out


def _check_extra_kinds(cfg: SimpleNamespace) -> None:
    seen = set()
    for i, k in enumerate(cfg.extraKinds):
        path = f"spec.extraKinds[{i}]"
        if not k.kind or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", k.kind):
            raise ConfigError(f"{path}.kind", f"must be a Kind name such as InferenceJob, found "
                                              f"{_short(k.kind)}")
        if k.group and not _DNS_SUBDOMAIN.fullmatch(k.group):
            raise ConfigError(f"{path}.group", f"must be an API group such as example.com, found "
                                               f"{_short(k.group)}")
        if (k.group, k.kind) in seen:
            raise ConfigError(f"{path}.kind", f"{k.kind} is declared twice")
        seen.add((k.group, k.kind))
        if not k.podSpecs:
            raise ConfigError(f"{path}.podSpecs", "must list at least one pod spec path")
        if len(k.annotations) > len(k.podSpecs):
            raise ConfigError(f"{path}.annotations", "has more entries than podSpecs")
        for key in ("podSpecs", "annotations"):
            for j, text in enumerate(getattr(k, key)):
                try:
                    workloads.parse_path(text)
                except ValueError as e:
                    raise ConfigError(f"{path}.{key}[{j}]", str(e)) from None


# spec.output.baseline: the KubeletConfiguration fields krm-fn reads, and their shapes.
# Everything else in the baseline is carried as plain data (json6902) and never read.
BASELINE_STR = ("cpuManagerPolicy", "memoryManagerPolicy", "topologyManagerPolicy",
                "topologyManagerScope", "systemReservedCgroup",
                "kubeReservedCgroup")
BASELINE_MAX_ENTRIES = 1024     # entries of a map or list krm-fn reads from the baseline


def _baseline_scalar(v: Any, path: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ConfigError(path, f"expected a string, found {_type_name(v)}")
    return _scalar_str(v, path)


def _baseline_bool(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(path, f"expected true or false, found {_short(v)}")
    return v


def _baseline_cap(v: Any, path: str) -> None:
    """At most BASELINE_MAX_ENTRIES entries in a baseline map or list krm-fn reads."""
    if len(v) > BASELINE_MAX_ENTRIES:
        raise ConfigError(path, f"has {len(v)} entries; at most {BASELINE_MAX_ENTRIES} are "
                                f"accepted")


def _baseline_map(v: Any, path: str, values) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(path, f"expected a mapping, found {_type_name(v)}")
    _baseline_cap(v, path)
    return {_check_text(str(k), path): values(x, f"{path}.{k}") for k, x in v.items()}


def _check_baseline(baseline: Any) -> None:
    """spec.output.baseline: a KubeletConfiguration (or configz's `{kubeletconfig: ...}`
    with nothing beside it) whose fields krm-fn reads have the kubelet's shapes: strings
    of at most MAX_TEXT characters, kubeReserved/systemReserved/evictionHard as the typed
    config checks them (hugepages-<size> allowed in the reservations), option maps of
    strings, featureGates of booleans, enforceNodeAllocatable a list of strings,
    reservedMemory as krm_fn.node.memory.parse reads it. Raises ConfigError with every
    problem, each naming its field path."""
    if baseline is None:
        return
    from krm_fn.node import memory as memory_mod
    root = "spec.output.baseline"
    if isinstance(baseline, dict) and "kubeletconfig" in baseline:
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
    errors: list[ConfigError] = []

    def check(name: str, fn) -> None:
        if name in baseline and baseline[name] is not None:
            try:
                fn(baseline[name], f"{root}.{name}")
            except ConfigError as e:
                errors.extend(e.errors)

    for name in BASELINE_STR:
        check(name, _baseline_scalar)

    def cpuset(v, path):
        text = _baseline_scalar(v, path)
        try:
            topology.parse_cpuset(text)
        except ValueError as e:
            raise ConfigError(path, f"not a cpuset: {e}") from None

    check("reservedSystemCPUs", cpuset)

    def factor(v, path):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ConfigError(path, f"expected a number in (0, 1], found {_short(v)}")

    check("memoryThrottlingFactor", factor)

    def reservations(v, path):
        m = _baseline_map(v, path, _baseline_scalar)
        _check_reserved({k: x for k, x in m.items() if not k.startswith("hugepages-")}, path)
        for k, x in m.items():
            if k.startswith("hugepages-"):
                if not memory_mod.is_type(k):
                    raise ConfigError(f"{path}.{k}", f"{_short(k)} is not a hugepages-<size> "
                                                     f"resource")
                _quantity(x, "memory", f"{path}.{k}")

    check("kubeReserved", reservations)
    check("systemReserved", reservations)
    check("evictionHard", lambda v, p: _check_eviction(_baseline_map(v, p, _baseline_scalar), p))
    for name in ("cpuManagerPolicyOptions", "topologyManagerPolicyOptions"):
        check(name, lambda v, p: _baseline_map(v, p, _baseline_scalar))

    def gates(v, path):
        if isinstance(v, dict):
            for k in v:
                if not isinstance(k, str) or not _FIELD_NAME.fullmatch(k):
                    raise ConfigError(path, f"{_short(k)} is not a feature gate name")
        _baseline_map(v, path, _baseline_bool)

    check("featureGates", gates)

    def strlist(v, path):
        if not isinstance(v, list):
            raise ConfigError(path, f"expected a list, found {_type_name(v)}")
        _baseline_cap(v, path)
        for i, x in enumerate(v):
            if not isinstance(x, str):
                raise ConfigError(f"{path}[{i}]", f"expected a string, found {_type_name(x)}")
            _check_text(x, f"{path}[{i}]")

    check("enforceNodeAllocatable", strlist)

    def reserved_memory(v, path):
        if isinstance(v, list):
            _baseline_cap(v, path)
        try:
            memory_mod.parse(v)
        except memory_mod.ReservedMemoryError as e:
            raise ConfigError(f"{root}.{e.path}", e.message) from None

    check("reservedMemory", lambda v, p: reserved_memory(v, p) if v != [] else None)

    check("cpuCFSQuota", _baseline_bool)
    _raise_all(errors)


def _check(cfg: SimpleNamespace) -> None:
    _check_baseline(cfg.output.baseline)
    _check_extra_kinds(cfg)
    for i, pool in enumerate(cfg.nodePools):
        if pool.topology.lscpu:
            try:
                topology.from_lscpu(pool.topology.lscpu)
            except ValueError as e:
                raise ConfigError(f"spec.nodePools[{i}].topology.lscpu", str(e)) from None
    names = [p.name for p in cfg.nodePools]
    for i, n in enumerate(names):
        if not _DNS_LABEL.fullmatch(n or "") or len(n) > 40:
            raise ConfigError(f"spec.nodePools[{i}].name", f"must be a DNS label of at most 40 "
                                                           f"characters, found {_short(n)}")
        if names.index(n) != i:
            raise ConfigError(f"spec.nodePools[{i}].name", f"duplicate pool name {n!r}")
    for i, p in enumerate(cfg.nodePools):
        for k, v in p.kubelet.cpuManagerPolicyOptions.items():
            if v not in ("true", "false"):
                raise ConfigError(f"spec.nodePools[{i}].kubelet.cpuManagerPolicyOptions.{k}",
                                  f"must be \"true\" or \"false\", found {_short(v)}")
        t = p.topology
        if t.coresPerSocket % t.numaNodesPerSocket:
            raise ConfigError(f"spec.nodePools[{i}].topology.coresPerSocket",
                              f"{t.coresPerSocket} cores do not divide evenly into "
                              f"{t.numaNodesPerSocket} NUMA nodes per socket")
        cpus = t.sockets * t.coresPerSocket * t.threadsPerCore
        if cpus > MAX_CPUS:
            raise ConfigError(f"spec.nodePools[{i}].topology", f"{t.sockets} sockets x "
                              f"{t.coresPerSocket} cores x {t.threadsPerCore} threads is {cpus} "
                              f"logical CPUs per node; at most {MAX_CPUS} are supported "
                              f"(Linux supports at most 8192)")
        if t.sockets * t.numaNodesPerSocket > MAX_NUMA_NODES:
            raise ConfigError(f"spec.nodePools[{i}].topology.numaNodesPerSocket",
                              f"{t.sockets} sockets x {t.numaNodesPerSocket} NUMA nodes is "
                              f"{t.sockets * t.numaNodesPerSocket} NUMA nodes per node; Linux "
                              f"supports at most {MAX_NUMA_NODES}")
        kp = f"spec.nodePools[{i}].kubelet"
        _check_reserved(p.kubelet.kubeReserved or {}, f"{kp}.kubeReserved")
        _check_reserved(p.kubelet.systemReserved or {}, f"{kp}.systemReserved")
        _check_eviction(p.kubelet.evictionHard, f"{kp}.evictionHard")
    if cfg.workloads.initContainerCpu.is_integer:
        raise ConfigError("spec.workloads.initContainerCpu", f"must be a fractional CPU such as "
                          f"500m so the init container runs in the shared pool, found "
                          f"{cfg.workloads.initContainerCpu.text!r} (whole CPUs would be pinned)")
    for i, p in enumerate(cfg.nodePools):
        _check_labels(p.nodeSelector, f"spec.nodePools[{i}].nodeSelector")
    _check_labels(cfg.selector.matchLabels, "spec.selector.matchLabels")
    if not _DNS_LABEL.fullmatch(cfg.output.namespace) or len(cfg.output.namespace) > 63:
        raise ConfigError("spec.output.namespace", f"must be a DNS label (lowercase letters, "
                                                   f"digits, '-'), found "
                                                   f"{_short(cfg.output.namespace)}")
    if len(cfg.output.verifyImage) > 1024 or not _IMAGE.fullmatch(cfg.output.verifyImage):
        raise ConfigError("spec.output.verifyImage", f"must be a container image reference "
                                                     f"such as ghcr.io/krm-fn/krm-fn:0.1.0, "
                                                     f"found {_short(cfg.output.verifyImage)}")
    _check_names(cfg.workloads.threads.env, "spec.workloads.threads.env", _ENV_NAME, 256,
                 "an environment variable name (letters, digits and '_', not starting with "
                 "a digit)")
    _check_names(cfg.workloads.pinnedContainers, "spec.workloads.pinnedContainers",
                 _DNS_LABEL, 63, "a container name (DNS label)")
    _check_names(cfg.selector.kinds, "spec.selector.kinds", _KIND, 63,
                 "a kind name such as Deployment")
    _check_names(cfg.selector.names, "spec.selector.names", _DNS_SUBDOMAIN, 253,
                 "an object name (DNS subdomain)")
    _check_names(cfg.selector.namespaces, "spec.selector.namespaces", _DNS_LABEL, 63,
                 "a namespace name (DNS label)", allow_empty=True)
    if cfg.workloads.threads.reservedCpus < 0:
        raise ConfigError("spec.workloads.threads.reservedCpus", "must not be negative")


def _spec_from_flat(data: dict, path: str) -> dict:
    spec: dict = {}
    for key, value in data.items():
        if key not in FLAT_KEYS:
            raise ConfigError(f"{path}.{key}", f"unknown key {_short(key)} (known: "
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
    """Name the flat ConfigMap key (`data.threadsPerCore`) instead of the nested field, for
    every error `e` carries."""
    mapped = [ConfigError(flat_path(x.path), x.message) for x in e.errors]
    return ConfigError(mapped[0].path, mapped[0].message, mapped[1:])


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
