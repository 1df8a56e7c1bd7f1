"""Format `talos`: a ConfigMap carrying `kubelet-patch.yaml`, a Talos machine config patch
that sets `machine.kubelet.extraConfig` (merged by Talos into the KubeletConfiguration it
generates;
https://www.talos.dev/latest/reference/configuration/v1alpha1/config/),
for `talosctl patch machineconfig --patch @kubelet-patch.yaml`
or `talosctl gen config --config-patch-worker @kubelet-patch.yaml`.

Talos refuses to let extraConfig override the fields it protects (apiVersion and kind are
simply not written; the others, marked `Off` for talos in krm_fn.node.fields, are removed with
a warning each). Talos writes its default
`systemReserved` {cpu: 50m, memory: 384Mi on workers / 512Mi on control planes, pid: 100,
ephemeral-storage: 256Mi} only when extraConfig has no systemReserved: a systemReserved in
the plan replaces all of it (warning), and none is an error (the kubelet would reserve
what the verdict did not count; with `memoryManagerPolicy: Static` it would not start),
unless spec.output.baseline gives the node's own systemReserved.memory.
"""
from __future__ import annotations

from krm_fn.node.baseline import string_map, unwrap
from krm_fn.node import fields
from krm_fn.node.formats._common import Rendered, Report, body, carrier, text
from krm_fn.results import ERROR, WARNING
from krm_fn.yaml import emit

DATA_KEY = "kubelet-patch.yaml"
PLATFORM = "Talos"
PROTECTED = fields.refused_by("talos")
TALOS_SYSTEM_RESERVED = fields.platform_default("talos", "systemReserved")


def patch(plan, rep: Report, baseline=None) -> dict:
    """The machine config patch for `plan`; warnings go to `rep`. `baseline`
    (`spec.output.baseline`): when it sets systemReserved.memory, the plan's reservedMemory
    already counts the node's systemReserved (Talos's default included), so no warning."""
    extra: dict = {}
    for key, value in body(plan).items():
        if key in PROTECTED:
            rep.add(WARNING, key, f"{key} {text(value)} is removed from the {PLATFORM} patch: "
                    f"Talos manages {key} itself and does not let machine.kubelet.extraConfig "
                    f"override it", current=value)
            continue
        extra[key] = value
    if "systemReserved" in extra:
        given = extra["systemReserved"] if isinstance(extra["systemReserved"], dict) else {}
        keys = ("pid", "ephemeral-storage") if extra.get("reservedSystemCPUs") else \
            ("cpu", "pid", "ephemeral-storage")     # reservedSystemCPUs replaces the cpu
        lost = [k for k in keys if k not in given]
        rep.add(WARNING, "systemReserved", f"{PLATFORM}: systemReserved "
                f"{text(extra['systemReserved'])} replaces Talos's whole default systemReserved "
                f"{TALOS_SYSTEM_RESERVED}, which Talos writes only when extraConfig has none"
                + (f"; add {' and '.join(lost)} to kubelet.systemReserved to keep "
                   f"{'them' if len(lost) > 1 else 'it'}" if lost else ""),
                current=extra["systemReserved"])
    elif "memory" not in string_map(unwrap(baseline)[0].get("systemReserved")):
        static = extra.get("memoryManagerPolicy") == "Static"
        rep.add(ERROR, "systemReserved", f"{PLATFORM}: the plan has no systemReserved, so Talos "
                f"adds its default systemReserved {TALOS_SYSTEM_RESERVED}, which krm-fn did "
                f"not judge allocatable with" + (
                    ", and memoryManagerPolicy Static needs reservedMemory = "
                    "kubeReserved.memory + systemReserved.memory + "
                    "evictionHard[memory.available], which the plan's reservedMemory does not "
                    "include: the kubelet refuses to start" if static else "")
                + "; set kubelet.systemReserved explicitly (or give spec.output.baseline from "
                "a node's configz)", current=extra.get("memoryManagerPolicy") if static else None)
    return {"machine": {"kubelet": {"extraConfig": extra}}}


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-talos] with `kubelet-patch.yaml`, plus warnings."""
    rep = Report(ctx)
    text_ = emit.to_yaml(patch(plan, rep, ctx.baseline))
    return Rendered([carrier(plan, ctx, "talos", {DATA_KEY: text_})], rep.results)
