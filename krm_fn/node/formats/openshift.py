"""Format `openshift`: a `machineconfiguration.openshift.io/v1` KubeletConfig per node pool.

`metadata.name` is `krm-fn-<pool>` (cluster-scoped, no namespace);
`spec.machineConfigPoolSelector.matchLabels` selects the MachineConfigPool labelled
`pools.operator.machineconfiguration.openshift.io/<pool>: ""` (the label every pool the
MCO creates carries for its own name; add it to a custom pool); `spec.kubeletConfig` holds
the plan's KubeletConfiguration fields without apiVersion/kind
(openshift/api machineconfiguration/v1 KubeletConfig,
https://github.com/openshift/api/blob/master/machineconfiguration/v1/types.go).

The Machine Config Operator refuses a whole KubeletConfig that sets one of the fields
krm_fn.node.fields marks `Off` for openshift (cgroupDriver, clusterDNS, featureGates,
memorySwap.swapBehavior, ...; openshift/machine-config-operator
pkg/controller/kubelet-config/helpers.go `validateUserKubeletConfig`): those are removed, one
warning each. Feature gates belong in the cluster FeatureGate CR. The MCO drains and reboots each
node of the pool and deletes `cpu_manager_state`/`memory_manager_state` itself.

On a pool tuned by the Node Tuning Operator, the PerformanceProfile's own KubeletConfig
`performance-<profile>` always overrides the CPU fields (the fields whose openshift entry
names an owner; openshift/cluster-node-tuning-operator
pkg/performanceprofile/controller/performanceprofile/components/kubeletconfig/kubeletconfig.go):
one warning says so.
"""
from __future__ import annotations

from krm_fn.node import fields, platform_reserved
from krm_fn.node.formats._common import (Rendered, Report, body, metadata, path_of,
                                         refused_gates, text)
from krm_fn.results import WARNING

API_VERSION = "machineconfiguration.openshift.io/v1"
KIND = "KubeletConfig"
POOL_LABEL_PREFIX = "pools.operator.machineconfiguration.openshift.io/"
PLATFORM = "OpenShift"

# Fields the MCO rejects (the whole KubeletConfig fails) -> what to do instead.
REJECTED = fields.refused_by("openshift")
# Fields a Node Tuning Operator PerformanceProfile sets on its pools.
NTO_FIELDS = fields.owned_on("openshift")


def name_of(plan) -> str:
    """metadata.name: `krm-fn-<pool>`."""
    return f"krm-fn-{plan.pool}"


def render(plan, ctx) -> Rendered:
    """[KubeletConfig] for `plan`, plus a warning per field the MCO rejects and one about
    PerformanceProfile ownership of the CPU fields."""
    rep = Report(ctx)
    name = name_of(plan)
    kubelet_config: dict = {}
    for key, value in body(plan).items():
        off = REJECTED.get(key)
        if off is not None and not (off.unless_empty and isinstance(value, dict)
                                    and not value.get(off.unless_empty)):
            if refused_gates(rep, key, value, f"{PLATFORM} KubeletConfig {name}", ctx):
                continue
            rep.add(WARNING, key, f"{key} {text(value)} is removed from {PLATFORM} KubeletConfig "
                    f"{name}: the Machine Config Operator refuses a KubeletConfig that sets "
                    f"{key} (\"KubeletConfiguration: {key} is not allowed to be set\") and "
                    f"applies none of it; {off.reason}", current=value)
            continue
        kubelet_config[key] = value
    platform_reserved.mco_system_reserved(kubelet_config, plan.merged or body(plan), rep,
                                          f"{PLATFORM} KubeletConfig {name}")
    platform_reserved.mco_cleared(kubelet_config, rep, f"{PLATFORM} KubeletConfig {name}")
    owned = [k for k in NTO_FIELDS if k in kubelet_config]
    if owned:
        rep.add(WARNING, None, f"{PLATFORM} KubeletConfig {name} sets {', '.join(owned)}: on a "
                f"MachineConfigPool tuned by a Node Tuning Operator PerformanceProfile the "
                f"profile owns these fields and its KubeletConfig performance-<profile> "
                f"overrides them; for such a pool set spec.cpu.reserved/spec.cpu.isolated and "
                f"spec.numa.topologyPolicy in the PerformanceProfile (other kubelet fields via "
                f"its kubeletconfig.experimental annotation: output format "
                f"performance-profile writes it from this plan) and do not select the pool "
                f"here")
    obj = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata(plan, ctx, name, path_of(plan, "openshift"), namespaced=False),
        "spec": {
            "machineConfigPoolSelector": {"matchLabels": {POOL_LABEL_PREFIX + str(plan.pool): ""}},
            "kubeletConfig": kubelet_config,
        },
    }
    return Rendered([obj], rep.results)
