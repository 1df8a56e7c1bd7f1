"""Format `gke`: a ConfigMap carrying `system-config.yaml`, the node system configuration of
`gcloud container node-pools create|update POOL --system-config-from-file=system-config.yaml`.

Top-level `kubeletConfig:` with GKE's own field names, taken from krm_fn.node.fields (each
entry's `platforms["gke"]`; gcloud `container/util.py` LoadSystemConfigFromYAML refuses unknown
keys; https://cloud.google.com/kubernetes-engine/docs/how-to/node-system-config): e.g.
topologyManagerPolicy -> topologyManager.policy, singleProcessOOMKill -> singleProcessOomKill,
evictionMaxPodGracePeriod -> evictionMaxPodGracePeriodSeconds. A field with `bounds` (the
fields GKE takes within a range, e.g. podPidsLimit 1024 to 4194303, maxParallelImagePulls 2
to 5, containerLogMaxFiles 2 to 10, imageMinimumGCAge at most 2m) is left out with a
warning outside it. Conversions by name: `signals`
(eviction signals renamed, e.g. memory.available -> memoryAvailable; a value the GKE API
refuses, such as a percentage for memoryAvailable or a minimum reclaim above 10%, left out
with a warning), `cgroup-mode` (`failCgroupV1: true` becomes
`linuxConfig.cgroupMode: CGROUP_MODE_V2`: the node pool runs cgroup v2, which is what refusing
v1 asks for). A name starting with `linuxConfig.` goes under the root's linuxConfig; the rest
under kubeletConfig. Every other field is a warning: GKE cannot set it.
"""
from __future__ import annotations

from krm_fn.node import fields, platform_reserved
from krm_fn.node.formats._common import Rendered, Report, body, carrier
from krm_fn.results import WARNING
from krm_fn.yaml import emit

DATA_KEY = "system-config.yaml"
PLATFORM = "GKE"
CGROUP_V2 = "CGROUP_MODE_V2"

NAMES = fields.platform_names("gke")
LINUX = "linuxConfig."
SIGNALS = {
    "memory.available": "memoryAvailable",
    "nodefs.available": "nodefsAvailable",
    "nodefs.inodesFree": "nodefsInodesFree",
    "imagefs.available": "imagefsAvailable",
    "imagefs.inodesFree": "imagefsInodesFree",
    "pid.available": "pidAvailable",
}


# what the GKE API takes (google.container.v1 EvictionSignals, EvictionMinimumReclaim,
# NodeKubeletConfig; https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/
# NodeConfig): memoryAvailable a quantity in Ki, Mi or Gi of at least 100Mi, nodefsAvailable
# a percentage from 10% to 50%, imagefsAvailable from 15% to 50%; a minimum reclaim a
# percentage of at most 10%
SOFT_RANGES = {"memory.available": ("quantity", 100 * 2**20, None),
               "nodefs.available": ("percent", 10, 50),
               "imagefs.available": ("percent", 15, 50),
               "nodefs.inodesFree": ("percent", 5, 50),
               "imagefs.inodesFree": ("percent", 5, 50),
               "pid.available": ("percent", 10, 50)}
def _in_range(bounds: tuple, value) -> str | None:
    """None when GKE takes `value` within `bounds` (fields.On.bounds), else what it takes."""
    kind, low, high = bounds
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return None if ok else f"a whole number from {low} to {high}"
    if kind == "size":
        from krm_fn.quantity import QuantityError, parse_memory
        try:
            text = str(value)
            ok = text[-2:] in ("Ki", "Mi", "Gi") and low <= parse_memory(text).whole <= high
        except QuantityError:
            ok = False
        return None if ok else (f"a quantity in Ki, Mi or Gi from {low // 2**20}Mi to "
                                f"{high // 2**20}Mi")
    from krm_fn.node.kubelet_says import parse_duration
    ns = parse_duration(str(value))[0]
    if ns is not None and low <= ns <= high:
        return None
    if low == 1:
        return f"a positive duration of at most {_go_duration(high)}"
    return f"a duration from {_go_duration(low)} to {_go_duration(high)}"


def _go_duration(ns: int) -> str:
    """A whole number of nanoseconds the way the bounds are written: `1ns`, `1ms`, `2m`."""
    for unit, size in (("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("ns", 1)):
        if ns % size == 0:
            return f"{ns // size}{unit}"
    return f"{ns}ns"


def _range(key: str, value, rep: Report, bounds: tuple):
    """`value` when GKE takes it for `key` within `bounds`, else None with a warning."""
    takes = _in_range(bounds, value)
    if takes is None:
        return value
    rep.add(WARNING, key, f"{key} {value} is left out of the {PLATFORM} output: the GKE API "
            f"takes {takes} there, and refuses the node pool's system config otherwise",
            current=value)
    return None


def _gke_refuses(key: str, signal: str, value) -> str | None:
    """What the GKE API says of `value` for `signal` in eviction field `key`, or None."""
    from krm_fn.quantity import QuantityError, parse_memory
    text = str(value).strip()
    if key == "evictionMinimumReclaim":
        n = text[:-1] if text.endswith("%") else None
        return None if n is not None and n.replace(".", "", 1).isdigit() and float(n) <= 10 \
            else "a percentage of at most 10%"
    kind, low, high = SOFT_RANGES.get(signal, (None, None, None))
    if key != "evictionSoft" or kind is None:
        return None
    if kind == "percent":
        n = text[:-1] if text.endswith("%") else ""
        ok = n.replace(".", "", 1).isdigit() and low <= float(n) <= high
        return None if ok else f"a percentage from {low}% to {high}%"
    try:
        ok = text[-2:] in ("Ki", "Mi", "Gi") and parse_memory(text).whole >= low
    except QuantityError:
        ok = False
    return None if ok else "a quantity in Ki, Mi or Gi of at least 100Mi"


def _signals(key: str, value, rep: Report):
    """An eviction map with GKE's signal names, or None with a warning; a signal whose
    value the GKE API refuses is left out with a warning."""
    if not isinstance(value, dict):
        rep.unsupported(PLATFORM, key, value)
        return None
    unknown = ", ".join(s for s in value if s not in SIGNALS)
    if unknown:
        rep.unsupported(PLATFORM, key, value, f" with the signal(s) {unknown} (GKE takes "
                        f"{', '.join(SIGNALS)})")
        return None
    out = {}
    for s, v in value.items():
        refused = _gke_refuses(key, s, v)
        if refused is None:
            out[SIGNALS[s]] = v
            continue
        rep.add(WARNING, key, f"{key} {s} {v} is left out of the {PLATFORM} output: the GKE "
                f"API takes {refused} there, and refuses the node pool's system config "
                f"otherwise", current=v)
    return out or None


def _cgroup_mode(key: str, value, rep: Report):
    """CGROUP_MODE_V2 for `true`; None with a warning otherwise."""
    if value is True:
        return CGROUP_V2
    rep.unsupported(PLATFORM, key, value)
    return None


CONVERT = {"signals": _signals, "cgroup-mode": _cgroup_mode}


def system_config(plan, rep: Report, ctx=None) -> dict:
    """The node system configuration {kubeletConfig, linuxConfig?} for `plan`; warnings
    for what GKE cannot take go to `rep`, and errors where the plan's reservation is not
    GKE's (krm_fn.node.platform_reserved.judge; `ctx` the RenderContext: the pool's memory
    and version)."""
    kc: dict = {}
    linux: dict = {}
    judged = platform_reserved.judge(plan.merged or body(plan),
                                     platform_reserved.for_format("gke", plan, ctx),
                                     rep, plan.topology.total_cpus)
    for key, value in body(plan).items():
        if key in judged:
            continue
        on = NAMES.get(key)
        if on is None:
            rep.unsupported(PLATFORM, key, value, version=getattr(ctx, "version", None))
            continue
        if on.omit_default and value == fields.BY_NAME[key].default:
            continue
        if on.bounds:
            value = _range(key, value, rep, on.bounds)
        elif on.convert:
            value = CONVERT[on.convert](key, value, rep)
        if value is None:
            continue
        target, name = (linux, on.name[len(LINUX):]) if on.name.startswith(LINUX) else (kc, on.name)
        group, dot, leaf = name.partition(".")
        if dot:
            target.setdefault(group, {})[leaf] = value
        else:
            target[name] = value
    _pair(kc, rep)
    out: dict = {"kubeletConfig": kc}
    if linux:
        out["linuxConfig"] = linux
    return out


def _pair(kc: dict, rep: Report) -> None:
    """Keep in `kc` (GKE names) only soft eviction grace periods whose threshold is there:
    one left out by _signals takes its grace period with it, with a warning."""
    soft, grace = kc.get("evictionSoft") or {}, kc.get("evictionSoftGracePeriod")
    for signal in [s for s in grace or {} if s not in soft]:
        name = next(k for k, v in SIGNALS.items() if v == signal)
        rep.add(WARNING, "evictionSoftGracePeriod", f"evictionSoftGracePeriod {name} is left "
                f"out of the {PLATFORM} output with its soft threshold", current=grace[signal])
        del grace[signal]
    if grace == {}:
        del kc["evictionSoftGracePeriod"]


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-gke] with `system-config.yaml`, plus a warning per
    field GKE cannot set."""
    rep = Report(ctx)
    text = emit.to_yaml(system_config(plan, rep, ctx))
    return Rendered([carrier(plan, ctx, "gke", {DATA_KEY: text})], rep.results)
