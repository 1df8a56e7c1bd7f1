"""Format `kubeadm`: a ConfigMap carrying the pool's kubeadm patch for the kubelet.

kubeadm (>= 1.25, kubernetes/kubernetes#110405) patches the node's KubeletConfiguration
from a file in the directory given to `kubeadm init|join|upgrade node --patches DIR`
(or `patches.directory` in Init/Join/UpgradeConfiguration), named
`target[suffix][+patchtype].{yaml,json}`
(https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/control-plane-flags/#patches).
The file here is
`kubeletconfiguration+merge.yaml`: target `kubeletconfiguration`, a JSON merge patch
(RFC 7386: maps merge per key, lists and scalars replace) holding the plan's full
KubeletConfiguration. A ConfigMap key cannot hold '+', so the data key is
`kubeletconfiguration-merge.yaml`: write it to `DIR/kubeletconfiguration+merge.yaml`
(kubeadm would also read the key's own name, as target `kubeletconfiguration` with suffix
`-merge` and the default strategic patch type). kubeadm takes every KubeletConfiguration
field: no results.
"""
from __future__ import annotations

from krm_fn.node.formats._common import Rendered, carrier
from krm_fn.yaml import emit

DATA_KEY = "kubeletconfiguration-merge.yaml"
PATCH_FILE = "kubeletconfiguration+merge.yaml"


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-kubeadm] with DATA_KEY = the plan as YAML."""
    return Rendered([carrier(plan, ctx, "kubeadm", {DATA_KEY: emit.to_yaml(plan.kubelet)})])
