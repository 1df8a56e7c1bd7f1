"""Format `kubelet-config`: the bare KubeletConfiguration of each pool, as a local-config
object for kpt packages.

kpt requires `metadata.name` on every item and writes new items to the file named by
`internal.config.kubernetes.io/path` (the KRM functions specification,
https://github.com/kubernetes-sigs/kustomize/blob/master/cmd/config/docs/api-conventions/functions-spec.md);
`config.kubernetes.io/local-config: "true"` keeps it client-side, and kustomize drops
local-config objects from build output (same specification), so a bare KubeletConfiguration
never reaches `kubectl apply`.
"""
from __future__ import annotations

from krm_fn.node.baseline import rollout_note
from krm_fn.node.formats._common import (LOCAL_CONFIG_ANNOTATION, PATH_ANNOTATION,
                                         ROLLOUT_NOTE, Rendered, labels)


def name_of(plan) -> str:
    """metadata.name: `kubelet-config-<pool>`."""
    return f"kubelet-config-{plan.pool}"


def path_of(plan) -> str:
    """File the object goes to under kpt: `node/kubelet-config-<pool>.yaml`."""
    return f"node/kubelet-config-{plan.pool}.yaml"


def render(plan, ctx) -> Rendered:
    """[KubeletConfiguration]: apiVersion, kind, metadata {name, labels (managed-by, pool:
    how a later run knows it generated the object), annotations {local-config
    "true", the rollout note when the plan resets node state, path when ctx.set_path}}, then the plan's kubelet fields in order; no results."""
    annotations = {LOCAL_CONFIG_ANNOTATION: "true"}
    if plan.state_changes:
        annotations[ROLLOUT_NOTE] = rollout_note(plan.state_changes)
    if ctx.set_path:
        annotations[PATH_ANNOTATION] = path_of(plan)
    obj: dict = {
        "apiVersion": plan.kubelet["apiVersion"],
        "kind": plan.kubelet["kind"],
        "metadata": {"name": name_of(plan), "labels": labels(plan), "annotations": annotations},
    }
    for key, value in plan.kubelet.items():
        if key not in obj:
            obj[key] = value
    return Rendered([obj])
