"""Format `aks`: a ConfigMap carrying `kubelet-config.json`, the custom node configuration of
`az aks nodepool add|update --kubelet-config kubelet-config.json` (ARM `kubeletConfig`).

AKS names (azure-mgmt-containerservice KubeletConfig; kubelet.md §14):

| KubeletConfiguration | AKS kubeletConfig |
|---|---|
| cpuManagerPolicy, topologyManagerPolicy, allowedUnsafeSysctls, failSwapOn, containerLogMaxFiles (>= 2) | same |
| cpuCFSQuota, cpuCFSQuotaPeriod | cpuCfsQuota, cpuCfsQuotaPeriod |
| imageGCHighThresholdPercent, imageGCLowThresholdPercent | imageGcHighThreshold, imageGcLowThreshold |
| containerLogMaxSize (whole MiB) | containerLogMaxSizeMB (a number) |
| podPidsLimit | podMaxPids |

Every other field (topologyManagerScope other than `container`, cpuManagerPolicyOptions,
cpuManagerReconcilePeriod, reservedSystemCPUs, kube/systemReserved, evictionHard,
memoryManagerPolicy other than `None`, reservedMemory, featureGates, failCgroupV1, ...) is a
warning: AKS cannot set it.
"""
from __future__ import annotations

import json
from fractions import Fraction

from krm_fn import quantity
from krm_fn.node.formats._common import KUBELET_DEFAULTS, Rendered, Report, body, carrier
from krm_fn.results import WARNING

DATA_KEY = "kubelet-config.json"
PLATFORM = "AKS"
MIB = 1024 * 1024

RENAMES = {
    "cpuManagerPolicy": "cpuManagerPolicy",
    "cpuCFSQuota": "cpuCfsQuota",
    "cpuCFSQuotaPeriod": "cpuCfsQuotaPeriod",
    "imageGCHighThresholdPercent": "imageGcHighThreshold",
    "imageGCLowThresholdPercent": "imageGcLowThreshold",
    "topologyManagerPolicy": "topologyManagerPolicy",
    "allowedUnsafeSysctls": "allowedUnsafeSysctls",
    "failSwapOn": "failSwapOn",
    "containerLogMaxFiles": "containerLogMaxFiles",
    "podPidsLimit": "podMaxPids",
}


def _mib(value) -> int | None:
    """containerLogMaxSize ("10Mi") as a whole number of MiB, or None."""
    try:
        q = quantity.parse_memory(str(value)).value
    except (quantity.QuantityError, ValueError):
        return None
    n = Fraction(q) / MIB
    return int(n) if n.denominator == 1 and n > 0 else None


def kubelet_config(plan, rep: Report) -> dict:
    """AKS kubeletConfig for `plan`; warnings for what AKS cannot take go to `rep`."""
    out: dict = {}
    for key, value in body(plan).items():
        if key in KUBELET_DEFAULTS and value == KUBELET_DEFAULTS[key]:
            if key in RENAMES:
                out[RENAMES[key]] = value
            continue
        if key == "containerLogMaxSize":
            mib = _mib(value)
            if mib is None:
                rep.add(WARNING, key, f"containerLogMaxSize {value!r} is left out of the "
                        f"{PLATFORM} output: AKS takes it as containerLogMaxSizeMB, a whole "
                        f"number of MiB; write kubelet.extra.containerLogMaxSize as e.g. 10Mi",
                        current=value)
            else:
                out["containerLogMaxSizeMB"] = mib
        elif key == "containerLogMaxFiles" and not (isinstance(value, int) and value >= 2):
            rep.add(WARNING, key, f"containerLogMaxFiles {value} is left out of the {PLATFORM} "
                    f"output: AKS accepts 2 or more", current=value)
        elif key in RENAMES:
            out[RENAMES[key]] = value
        else:
            rep.unsupported(PLATFORM, key, value)
    return out


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-aks] with `kubelet-config.json` (2-space indented
    JSON), plus a warning per field AKS cannot set."""
    rep = Report(ctx)
    text = json.dumps(kubelet_config(plan, rep), indent=2) + "\n"
    return Rendered([carrier(plan, ctx, "aks", {DATA_KEY: text})], rep.results)
