"""Format `gke`: a ConfigMap carrying `system-config.yaml`, the node system configuration of
`gcloud container node-pools create|update POOL --system-config-from-file=system-config.yaml`.

Top-level `kubeletConfig:` with GKE's own field names, taken from krm_fn.node.fields (each
entry's `platforms["gke"]`; gcloud `container/util.py` LoadSystemConfigFromYAML refuses unknown
keys; https://cloud.google.com/kubernetes-engine/docs/how-to/node-system-config): e.g.
topologyManagerPolicy -> topologyManager.policy, singleProcessOOMKill -> singleProcessOomKill,
evictionMaxPodGracePeriod -> evictionMaxPodGracePeriodSeconds. Conversions by name:
`pids-range` (GKE accepts podPidsLimit 1024 <= n < 4194304), `signals` (eviction signals
renamed, e.g. memory.available -> memoryAvailable), `cgroup-mode` (`failCgroupV1: true` becomes
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
PIDS_MIN, PIDS_MAX = 1024, 4194304      # GKE: podPidsLimit >= 1024 and < 4194304
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


def _pids_range(key: str, value, rep: Report):
    """podPidsLimit within GKE's range, or None with a warning."""
    if isinstance(value, int) and PIDS_MIN <= value < PIDS_MAX:
        return value
    rep.add(WARNING, key, f"{key} {value} is left out of the {PLATFORM} output: GKE accepts "
            f"{key} from {PIDS_MIN} to {PIDS_MAX - 1}, so pods get GKE's default pids limit; "
            f"set kubelet.{key} within that range", current=value)
    return None


def _signals(key: str, value, rep: Report):
    """An eviction map with GKE's signal names, or None with a warning."""
    if not isinstance(value, dict):
        rep.unsupported(PLATFORM, key, value)
        return None
    unknown = ", ".join(s for s in value if s not in SIGNALS)
    if unknown:
        rep.unsupported(PLATFORM, key, value, f" with the signal(s) {unknown} (GKE takes "
                        f"{', '.join(SIGNALS)})")
        return None
    return {SIGNALS[s]: v for s, v in value.items()}


def _cgroup_mode(key: str, value, rep: Report):
    """CGROUP_MODE_V2 for `true`; None with a warning otherwise."""
    if value is True:
        return CGROUP_V2
    rep.unsupported(PLATFORM, key, value)
    return None


CONVERT = {"pids-range": _pids_range, "signals": _signals, "cgroup-mode": _cgroup_mode}


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
        if on.convert:
            value = CONVERT[on.convert](key, value, rep)
            if value is None:
                continue
        target, name = (linux, on.name[len(LINUX):]) if on.name.startswith(LINUX) else (kc, on.name)
        group, dot, leaf = name.partition(".")
        if dot:
            target.setdefault(group, {})[leaf] = value
        else:
            target[name] = value
    out: dict = {"kubeletConfig": kc}
    if linux:
        out["linuxConfig"] = linux
    return out


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-gke] with `system-config.yaml`, plus a warning per
    field GKE cannot set."""
    rep = Report(ctx)
    text = emit.to_yaml(system_config(plan, rep, ctx))
    return Rendered([carrier(plan, ctx, "gke", {DATA_KEY: text})], rep.results)
