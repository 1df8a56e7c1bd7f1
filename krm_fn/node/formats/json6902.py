"""Format `json6902`: RFC 6902 operations that turn the node's current KubeletConfiguration
(`spec.output.baseline`) into the desired one, computed with the `jsonpatch` library, in a
ConfigMap key `kubelet-config.patch.json` (a JSON array, one operation per line).

The baseline is the node's configuration as the kubelet reports it
(`kubectl get --raw /api/v1/nodes/<node>/proxy/configz`; the `{"kubeletconfig": {...}}`
wrapper is unwrapped) or its config file. The desired configuration is the baseline with the
plan merged over it the way the kubelet merges a `--config-dir` drop-in (a JSON merge patch,
RFC 7386: maps merge per key, lists and scalars replace;
https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/), without the plan's
apiVersion/kind, so the operations apply to the baseline as given.

The plan was built against the same baseline (krm_fn.node.baseline): it already sets the
baseline's `systemReservedCgroup`/`kubeReservedCgroup` to "" next to reservedSystemCPUs and
trims `enforceNodeAllocatable`, and computes reservedMemory from the merged reservations.
Without a baseline: an error result naming spec.output.baseline, and no object.
"""
from __future__ import annotations

import json

import jsonpatch

from krm_fn.node import baseline as baseline_mod
from krm_fn.node.formats._common import Rendered, Report, body, carrier
from krm_fn.results import ERROR

DATA_KEY = "kubelet-config.patch.json"
BASELINE_PATH = baseline_mod.BASELINE_PATH


def desired(base: dict, plan) -> dict:
    """The baseline (unwrapped) with the plan merged over it (RFC 7386, as the kubelet
    merges a drop-in). The plan already carries what the merge needs to start the kubelet
    (krm_fn.node.baseline.reconcile, run when the plan was built)."""
    return baseline_mod.merge(base, body(plan))


def operations(baseline, plan) -> list[dict]:
    """RFC 6902 operations from `baseline` (unwrapped) to the desired configuration."""
    base, _ = baseline_mod.unwrap(baseline)
    return list(jsonpatch.make_patch(base, desired(base, plan)).patch)


def patch_text(ops: list[dict]) -> str:
    """The operations as a JSON array, one operation per line, newline-terminated."""
    if not ops:
        return "[]\n"
    return "[\n" + ",\n".join("  " + json.dumps(op) for op in ops) + "\n]\n"


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-json6902] with `kubelet-config.patch.json`; without
    `ctx.baseline`, no object and an error result."""
    rep = Report(ctx)
    if not isinstance(ctx.baseline, dict) or not baseline_mod.unwrap(ctx.baseline)[0]:
        rep.add(ERROR, None, "output format json6902 needs spec.output.baseline: the node's "
                "current KubeletConfiguration (e.g. the kubeletconfig object of `kubectl get "
                "--raw /api/v1/nodes/<node>/proxy/configz`), to compute the operations from; "
                "set it or remove json6902 from spec.output.formats", path=BASELINE_PATH)
        return Rendered([], rep.results)
    ops = operations(ctx.baseline, plan)
    data = {DATA_KEY: patch_text(ops)}
    return Rendered([carrier(plan, ctx, "json6902", data)], rep.results)
