"""Format `configmap` (default): one v1 ConfigMap per node pool.

`data.kubelet-config.yaml` is the pool's full KubeletConfiguration (apiVersion/kind
included), usable as a kubelet `--config-dir` drop-in (KEP-3983; the file must be named
`*.conf` there) and as a kubeadm `kubeletconfiguration` patch
(https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/).
`data.rollout.txt` names the pool and its nodeSelector, then the numbered rollout steps
(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/).
A ConfigMap applies cleanly to any cluster, so GitOps tools
carry it; the kubelet does not read it, a human or node tooling does.
"""
from __future__ import annotations

from krm_fn.node.formats._common import Rendered, metadata
from krm_fn.yaml import emit

DATA_CONFIG_KEY = "kubelet-config.yaml"
DATA_ROLLOUT_KEY = "rollout.txt"


def name_of(plan) -> str:
    """metadata.name of the pool's ConfigMap: `kubelet-config-<pool>`."""
    return f"kubelet-config-{plan.pool}"


def path_of(plan) -> str:
    """File the object goes to under kpt: `node/kubelet-<pool>.yaml`."""
    return f"node/kubelet-{plan.pool}.yaml"


def rollout_text(plan) -> str:
    """The rollout note: a line naming the pool and its nodeSelector, then one numbered
    step per line (`1. Cordon the node...`), newline-terminated."""
    sel = ", ".join(f"{k}={v}" for k, v in plan.node_selector.items())
    head = (f"Node pool {plan.pool} (nodeSelector {sel})" if sel
            else f"Node pool {plan.pool} (no nodeSelector)")
    lines = [head + ": apply on each node, one node at a time:"]
    lines += [f"{i}. {step}" for i, step in enumerate(plan.rollout, 1)]
    return "\n".join(lines) + "\n"


def render(plan, ctx) -> Rendered:
    """[ConfigMap] for `plan` (NodePlan) in `ctx.namespace` (RenderContext), with the
    rollout-note annotation when the plan resets node state; no results."""
    return Rendered([{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(plan, ctx, name_of(plan), path_of(plan)),
        "data": {
            DATA_CONFIG_KEY: emit.to_yaml(plan.kubelet),
            DATA_ROLLOUT_KEY: rollout_text(plan),
        },
    }])
