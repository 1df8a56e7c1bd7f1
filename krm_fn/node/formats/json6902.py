"""Format `json6902`: RFC 6902 operations that turn the node's current KubeletConfiguration
(`spec.output.baseline`) into the desired one, in a ConfigMap key `kubelet-config.patch.json`
(a JSON array, one operation per line).

The baseline is the node's configuration as the kubelet reports it
(`kubectl get --raw /api/v1/nodes/<node>/proxy/configz`, a `{"kubeletconfig": {...}}`
wrapper without apiVersion/kind) or its config file. The desired configuration is a complete
KubeletConfiguration file: `apiVersion: kubelet.config.k8s.io/v1beta1`, `kind:
KubeletConfiguration`, then the baseline with the plan merged over it the way the kubelet
merges a `--config-dir` drop-in (a JSON merge patch, RFC 7386: maps merge per key, lists and
scalars replace; https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/).

The operations apply to the baseline document exactly as given: for a configz answer they
first `move` every field out of `/kubeletconfig` to the top level and `remove` the emptied
wrapper, then turn that configuration into the desired one; for an unwrapped baseline only
the second part. Either way the patched document is the file the kubelet reads with
`--config`.

The plan was built against the same baseline (krm_fn.node.baseline): it already sets the
baseline's `systemReservedCgroup`/`kubeReservedCgroup` to "" next to reservedSystemCPUs and
trims `enforceNodeAllocatable`, and computes reservedMemory from the merged reservations.
Without a baseline: an error result naming spec.output.baseline, and no object.

The operations are in a fixed order, so the same inputs always give the same text (a GitOps
render that changed on every sync would show a diff forever): removals in the baseline's key
order, then additions and replacements in the desired configuration's key order; maps are
compared per key, lists and scalars are replaced whole (the `jsonpatch` library's
`make_patch` walks Python sets, whose order changes from one process to the next).
"""
from __future__ import annotations

import json

from krm_fn.node import baseline as baseline_mod
from krm_fn.node import fields
from krm_fn.node.formats._common import HEADER, Rendered, Report, body, carrier
from krm_fn.results import ERROR

DATA_KEY = "kubelet-config.patch.json"
BASELINE_PATH = baseline_mod.BASELINE_PATH
API_VERSION, KIND = fields.API_VERSION, fields.KIND


def desired(base: dict, plan) -> dict:
    """The complete KubeletConfiguration: apiVersion and kind first, then the baseline
    (unwrapped; its own apiVersion/kind dropped) with the plan merged over it (RFC 7386, as
    the kubelet merges a drop-in). The plan already carries what the merge needs to start
    the kubelet (krm_fn.node.baseline.reconcile, run when the plan was built)."""
    own = {k: v for k, v in base.items() if k not in HEADER}
    return {"apiVersion": API_VERSION, "kind": KIND, **baseline_mod.merge(own, body(plan))}


def _pointer(key: str) -> str:
    """The RFC 6901 JSON pointer of top-level key `key` (`~` -> `~0`, `/` -> `~1`)."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


def operations(baseline, plan) -> list[dict]:
    """RFC 6902 operations from `baseline` exactly as given (a configz answer
    `{"kubeletconfig": {...}}` or a bare configuration) to the complete desired
    KubeletConfiguration (`desired`)."""
    base, path = baseline_mod.unwrap(baseline)
    ops: list[dict] = []
    if path != BASELINE_PATH:       # configz wrapper: lift every field, drop the wrapper
        wrapper = _pointer(baseline_mod.CONFIGZ_WRAPPER)
        ops = [{"op": "move", "from": wrapper + _pointer(k), "path": _pointer(k)}
               for k in base]
        ops.append({"op": "remove", "path": wrapper})
    return ops + diff(base, desired(base, plan))


def diff(src: dict, dst: dict, at: str = "") -> list[dict]:
    """RFC 6902 operations that turn map `src` into map `dst`, in a fixed order: `remove`
    for keys only in `src` (in `src`'s order), then `add` for keys only in `dst` and
    `replace` for changed values (in `dst`'s order). Maps on both sides are compared per key
    under `at` (a JSON pointer); any other changed value is replaced whole."""
    ops = [{"op": "remove", "path": at + _pointer(k)} for k in src if k not in dst]
    for k, v in dst.items():
        path = at + _pointer(k)
        if k not in src:
            ops.append({"op": "add", "path": path, "value": v})
        elif isinstance(v, dict) and isinstance(src[k], dict):
            ops.extend(diff(src[k], v, path))
        elif v != src[k] or type(v) is not type(src[k]):
            ops.append({"op": "replace", "path": path, "value": v})
    return ops


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
