"""Format `gke`: a ConfigMap carrying `system-config.yaml`, the node system configuration of
`gcloud container node-pools create|update POOL --system-config-from-file=system-config.yaml`.

Top-level `kubeletConfig:` with GKE's own field names (gcloud `container/util.py`
LoadSystemConfigFromYAML, which refuses unknown keys; kubelet.md §14):

| KubeletConfiguration | GKE kubeletConfig |
|---|---|
| cpuManagerPolicy | cpuManagerPolicy |
| topologyManagerPolicy, topologyManagerScope | topologyManager {policy, scope} |
| memoryManagerPolicy (`Static` only; `None` is GKE's default and is left out) | memoryManager {policy} |
| podPidsLimit (GKE accepts 1024 <= n < 4194304) | podPidsLimit |
| cpuCFSQuota, cpuCFSQuotaPeriod | cpuCFSQuota, cpuCFSQuotaPeriod |
| containerLogMaxSize, containerLogMaxFiles, allowedUnsafeSysctls, maxParallelImagePulls | same |
| imageGCHigh/LowThresholdPercent, imageMinimum/MaximumGCAge | imageGcHigh/LowThresholdPercent, imageMinimum/MaximumGcAge |
| singleProcessOOMKill | singleProcessOomKill |
| evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim (signals renamed, e.g. memory.available -> memoryAvailable) | same names |
| evictionMaxPodGracePeriod | evictionMaxPodGracePeriodSeconds |

`failCgroupV1: true` becomes `linuxConfig.cgroupMode: CGROUP_MODE_V2` (the node pool runs
cgroup v2, which is what refusing v1 asks for). Every other field (reservedSystemCPUs,
kubeReserved, systemReserved, cpuManagerPolicyOptions, cpuManagerReconcilePeriod,
evictionHard, reservedMemory, featureGates, ...) is a warning: GKE cannot set it.
"""
from __future__ import annotations

from krm_fn.node.formats._common import KUBELET_DEFAULTS, Rendered, Report, body, carrier
from krm_fn.results import WARNING
from krm_fn.yaml import emit

DATA_KEY = "system-config.yaml"
PLATFORM = "GKE"
PIDS_MIN, PIDS_MAX = 1024, 4194304      # GKE: podPidsLimit >= 1024 and < 4194304
CGROUP_V2 = "CGROUP_MODE_V2"

RENAMES = {
    "cpuManagerPolicy": "cpuManagerPolicy",
    "cpuCFSQuota": "cpuCFSQuota",
    "cpuCFSQuotaPeriod": "cpuCFSQuotaPeriod",
    "podPidsLimit": "podPidsLimit",
    "containerLogMaxSize": "containerLogMaxSize",
    "containerLogMaxFiles": "containerLogMaxFiles",
    "allowedUnsafeSysctls": "allowedUnsafeSysctls",
    "maxParallelImagePulls": "maxParallelImagePulls",
    "imageGCHighThresholdPercent": "imageGcHighThresholdPercent",
    "imageGCLowThresholdPercent": "imageGcLowThresholdPercent",
    "imageMinimumGCAge": "imageMinimumGcAge",
    "imageMaximumGCAge": "imageMaximumGcAge",
    "singleProcessOOMKill": "singleProcessOomKill",
    "evictionMaxPodGracePeriod": "evictionMaxPodGracePeriodSeconds",
}
NESTED = {
    "topologyManagerPolicy": ("topologyManager", "policy"),
    "topologyManagerScope": ("topologyManager", "scope"),
    "memoryManagerPolicy": ("memoryManager", "policy"),
}
EVICTION_MAPS = ("evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim")
SIGNALS = {
    "memory.available": "memoryAvailable",
    "nodefs.available": "nodefsAvailable",
    "nodefs.inodesFree": "nodefsInodesFree",
    "imagefs.available": "imagefsAvailable",
    "imagefs.inodesFree": "imagefsInodesFree",
    "pid.available": "pidAvailable",
}


def system_config(plan, rep: Report) -> dict:
    """The node system configuration {kubeletConfig, linuxConfig?} for `plan`; warnings
    for what GKE cannot take go to `rep`."""
    kc: dict = {}
    linux: dict = {}
    for key, value in body(plan).items():
        if key in NESTED:
            if key == "memoryManagerPolicy" and value == KUBELET_DEFAULTS[key]:
                continue
            group, leaf = NESTED[key]
            kc.setdefault(group, {})[leaf] = value
        elif key == "podPidsLimit" and not (isinstance(value, int)
                                            and PIDS_MIN <= value < PIDS_MAX):
            rep.add(WARNING, key, f"podPidsLimit {value} is left out of the {PLATFORM} output: "
                    f"GKE accepts podPidsLimit from {PIDS_MIN} to {PIDS_MAX - 1}, so pods get "
                    f"GKE's default pids limit; set kubelet.podPidsLimit within that range",
                    current=value)
        elif key in RENAMES:
            kc[RENAMES[key]] = value
        elif key in EVICTION_MAPS and isinstance(value, dict) \
                and all(s in SIGNALS for s in value):
            kc[key] = {SIGNALS[s]: v for s, v in value.items()}
        elif key in EVICTION_MAPS and isinstance(value, dict):
            unknown = ", ".join(s for s in value if s not in SIGNALS)
            rep.unsupported(PLATFORM, key, value, f" with the signal(s) {unknown} (GKE takes "
                            f"{', '.join(SIGNALS)})")
        elif key == "failCgroupV1" and value is True:
            linux["cgroupMode"] = CGROUP_V2
        else:
            rep.unsupported(PLATFORM, key, value)
    out: dict = {"kubeletConfig": kc}
    if linux:
        out["linuxConfig"] = linux
    return out


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-gke] with `system-config.yaml`, plus a warning per
    field GKE cannot set."""
    rep = Report(ctx)
    text = emit.to_yaml(system_config(plan, rep))
    return Rendered([carrier(plan, ctx, "gke", {DATA_KEY: text})], rep.results)
