"""Format `json6902`: RFC 6902 operations that turn the node's current KubeletConfiguration
(`spec.output.baseline`) into the desired one, computed with the `jsonpatch` library, in a
ConfigMap key `kubelet-config.patch.json` (a JSON array, one operation per line).

The baseline is the node's configuration as the kubelet reports it
(`kubectl get --raw /api/v1/nodes/<node>/proxy/configz`; the `{"kubeletconfig": {...}}`
wrapper is unwrapped) or its config file. The desired configuration is the baseline with the
plan merged over it the way the kubelet merges a `--config-dir` drop-in (a JSON merge patch,
RFC 7386: maps merge per key, lists and scalars replace; kubelet.md §14), without the plan's
apiVersion/kind, so the operations apply to the baseline as given.

The baseline can hold `systemReservedCgroup`/`kubeReservedCgroup`, which the kubelet refuses
next to reservedSystemCPUs (kubelet.md §6): the desired configuration sets them to "" and
drops the `enforceNodeAllocatable` entries that need them, with a warning each.
Without a baseline: an error result naming spec.output.baseline, and no object.
"""
from __future__ import annotations

import copy
import json

import jsonpatch

from krm_fn.node.formats._common import Rendered, Report, body, carrier, text
from krm_fn.results import ERROR, WARNING

DATA_KEY = "kubelet-config.patch.json"
CONFIGZ_WRAPPER = "kubeletconfig"
BASELINE_PATH = "spec.output.baseline"
# enforceNodeAllocatable entries that need a reserved cgroup (kubelet validation).
ENFORCEMENT = {
    "system-reserved": "systemReservedCgroup",
    "system-reserved-compressible": "systemReservedCgroup",
    "kube-reserved": "kubeReservedCgroup",
    "kube-reserved-compressible": "kubeReservedCgroup",
}


def unwrap(baseline) -> dict:
    """The KubeletConfiguration inside a configz answer `{"kubeletconfig": {...}}`, or the
    baseline itself."""
    if isinstance(baseline, dict) and list(baseline) == [CONFIGZ_WRAPPER] \
            and isinstance(baseline[CONFIGZ_WRAPPER], dict):
        return baseline[CONFIGZ_WRAPPER]
    return baseline


def merge(target, patch):
    """RFC 7386 JSON merge patch of `patch` over `target` (a new value; inputs untouched)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def desired(baseline: dict, plan, rep: Report, where: str = BASELINE_PATH) -> dict:
    """The baseline with the plan merged over it, made acceptable to the kubelet next to
    reservedSystemCPUs; warnings go to `rep`, with paths below `where` (the baseline's
    field path)."""
    out = merge(baseline, body(plan))
    if not out.get("reservedSystemCPUs"):
        return out
    for key in ("systemReservedCgroup", "kubeReservedCgroup"):
        if out.get(key):
            rep.add(WARNING, key, f"the baseline sets {key} {text(out[key])}, which the "
                    f"kubelet refuses next to reservedSystemCPUs; the patch sets {key} to \"\"",
                    current=out[key], proposed="", path=f"{where}.{key}")
            out[key] = ""
    enforce = out.get("enforceNodeAllocatable")
    if isinstance(enforce, list):
        dropped = [e for e in enforce if e in ENFORCEMENT and not out.get(ENFORCEMENT[e])]
        if dropped:
            kept = [e for e in enforce if e not in dropped] or ["pods"]
            rep.add(WARNING, "enforceNodeAllocatable", f"the baseline's enforceNodeAllocatable "
                    f"{text(enforce)} enforces {', '.join(dropped)}, which needs a reserved "
                    f"cgroup that cannot be set next to reservedSystemCPUs; the patch sets "
                    f"enforceNodeAllocatable to {text(kept)}", current=enforce, proposed=kept,
                    path=f"{where}.enforceNodeAllocatable")
            out["enforceNodeAllocatable"] = kept
    return out


def operations(baseline, plan, rep: Report) -> list[dict]:
    """RFC 6902 operations from `baseline` (unwrapped) to the desired configuration."""
    base = unwrap(baseline)
    where = BASELINE_PATH if base is baseline else f"{BASELINE_PATH}.{CONFIGZ_WRAPPER}"
    return list(jsonpatch.make_patch(base, desired(base, plan, rep, where)).patch)


def patch_text(ops: list[dict]) -> str:
    """The operations as a JSON array, one operation per line, newline-terminated."""
    if not ops:
        return "[]\n"
    return "[\n" + ",\n".join("  " + json.dumps(op) for op in ops) + "\n]\n"


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-json6902] with `kubelet-config.patch.json`; without
    `ctx.baseline`, no object and an error result."""
    rep = Report(ctx)
    if not isinstance(ctx.baseline, dict) or not unwrap(ctx.baseline):
        rep.add(ERROR, None, "output format json6902 needs spec.output.baseline: the node's "
                "current KubeletConfiguration (e.g. the kubeletconfig object of `kubectl get "
                "--raw /api/v1/nodes/<node>/proxy/configz`), to compute the operations from; "
                "set it or remove json6902 from spec.output.formats", path=BASELINE_PATH)
        return Rendered([], rep.results)
    ops = operations(ctx.baseline, plan, rep)
    data = {DATA_KEY: patch_text(ops)}
    return Rendered([carrier(plan, ctx, "json6902", data)], rep.results)
