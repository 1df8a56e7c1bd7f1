"""placement: the node pool's nodeSelector is added to the pod spec.

Pinned pods must land on nodes whose kubelet runs the static CPU Manager; the pool's
`nodeSelector` (default `krm-fn.dev/cpu-pinning: "true"`) is merged into the pod spec's
`nodeSelector`. A key the pod already sets to another value is an error, never an
overwrite: the workload was meant for other nodes.

A workload is placed in the pool named by its `krm-fn.dev/node-pool` annotation (on the
workload or its pod template), else the first pool whose whole nodeSelector the pod already
carries, else the first pool.
"""
from __future__ import annotations

from krm_fn.pod import PodView

ID = "placement"
OPTIONS = ("nodePools.nodeSelector",)


def apply(pod: PodView, ctx) -> None:
    """Merge the pool's nodeSelector into the pod spec; see the module docstring."""
    if ctx.pool is None:
        return
    current = pod.spec.get("nodeSelector")
    if current is not None and not isinstance(current, dict):
        pod.error(pod.spec_path("nodeSelector"), "nodeSelector must be a mapping")
        return
    current = current or {}
    for key, value in ctx.pool.node_selector.items():
        path = pod.spec_path("nodeSelector", key)
        if key in current:
            if str(current[key]) != value:
                pod.error(path, f"nodeSelector {key}={current[key]} conflicts with node pool "
                                f"{ctx.pool.name!r}, which needs {key}={value}; remove it, or "
                                f"place the workload in another pool with the "
                                f"krm-fn.dev/node-pool annotation")
            continue
        pod.set(path, value, f"nodeSelector {key}={value}: node pool {ctx.pool.name!r} runs "
                             f"the static CPU Manager")
