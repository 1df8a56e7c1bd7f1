"""Format `aks`: a ConfigMap carrying `kubelet-config.json`, the custom node configuration of
`az aks nodepool add|update --kubelet-config kubelet-config.json` (ARM `kubeletConfig`).

AKS names come from krm_fn.node.fields (each entry's `platforms["aks"]`; azure-mgmt-containerservice
KubeletConfig, https://learn.microsoft.com/en-us/azure/aks/custom-node-configuration):
cpuManagerPolicy, topologyManagerPolicy, cpuCfsQuota, podMaxPids, containerLogMaxSizeMB (whole
MiB), containerLogMaxFiles (>= 2), ... Every other field is a warning: AKS cannot set it; a
policy at the kubelet's default (fields.OMIT_AT_DEFAULT) is left out silently.
"""
from __future__ import annotations

import json

from krm_fn import quantity
from krm_fn.node import fields, platform_reserved
from krm_fn.node.formats._common import Rendered, Report, body, carrier
from krm_fn.results import INFO, WARNING

DATA_KEY = "kubelet-config.json"
PLATFORM = "AKS"
MIB = 1024 * 1024

NAMES = fields.platform_names("aks")


def _mib(value) -> int | None:
    """containerLogMaxSize ("10Mi") as a whole number of MiB, or None."""
    try:
        q = quantity.parse_memory(str(value)).whole
    except (quantity.QuantityError, ValueError):
        return None
    return q // MIB if q % MIB == 0 and q > 0 else None


def _mib_field(key: str, value, rep: Report):
    """containerLogMaxSize as containerLogMaxSizeMB, or None with a warning."""
    mib = _mib(value)
    if mib is None:
        rep.add(WARNING, key, f"{key} {value!r} is left out of the {PLATFORM} output: AKS "
                f"takes it as {NAMES[key].name}, a whole number of MiB; write "
                f"kubelet.extra.{key} as e.g. 10Mi", current=value)
    return mib


def _at_least_2(key: str, value, rep: Report):
    """containerLogMaxFiles when >= 2, or None with a warning."""
    if isinstance(value, int) and value >= 2:
        return value
    rep.add(WARNING, key, f"{key} {value} is left out of the {PLATFORM} output: AKS accepts 2 "
            f"or more", current=value)
    return None


CONVERT = {"mib": _mib_field, "at-least-2": _at_least_2}
# fields AKS sets per node pool rather than in the kubelet config: the value says what the
# node pool has (an info, not a warning), and how it is set there
POOL_FIELDS = {"maxPods": "az aks nodepool add --max-pods"}


def kubelet_config(plan, rep: Report, ctx=None) -> dict:
    """AKS kubeletConfig for `plan`; warnings for what AKS cannot take go to `rep`, and
    errors where the plan's reservation is not AKS's (krm_fn.node.platform_reserved.judge;
    `ctx` the RenderContext: the pool's memory and version)."""
    out: dict = {}
    judged = platform_reserved.judge(plan.merged or body(plan),
                                     platform_reserved.for_format("aks", plan, ctx),
                                     rep, plan.topology.total_cpus)
    for key, value in body(plan).items():
        if key in judged:
            continue
        on = NAMES.get(key)
        if on is None:
            if key in fields.OMIT_AT_DEFAULT and value == fields.OMIT_AT_DEFAULT[key]:
                continue
            if key in POOL_FIELDS:
                rep.add(INFO, key, f"{key} {value} is not in the {PLATFORM} output: {PLATFORM} "
                        f"sets it per node pool (`{POOL_FIELDS[key]}`), not in its kubelet "
                        f"config; krm-fn judged the pods and {PLATFORM}'s memory reservation "
                        f"with it: give the node pool the same", current=value)
                continue
            rep.unsupported(PLATFORM, key, value, version=getattr(ctx, "version", None))
            continue
        if on.convert:
            value = CONVERT[on.convert](key, value, rep)
            if value is None:
                continue
        out[on.name] = value
    return out


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-aks] with `kubelet-config.json` (2-space indented
    JSON), plus a warning per field AKS cannot set."""
    rep = Report(ctx)
    text = json.dumps(kubelet_config(plan, rep, ctx), indent=2) + "\n"
    return Rendered([carrier(plan, ctx, "aks", {DATA_KEY: text})], rep.results)
