"""Format `openshift`: a `machineconfiguration.openshift.io/v1` KubeletConfig per node pool.

`metadata.name` is `krm-fn-<pool>` (cluster-scoped, no namespace);
`spec.machineConfigPoolSelector.matchLabels` selects the MachineConfigPool labelled
`pools.operator.machineconfiguration.openshift.io/<pool>: ""` (the label every pool the
MCO creates carries for its own name; add it to a custom pool); `spec.kubeletConfig` holds
the plan's KubeletConfiguration fields without apiVersion/kind (kubelet.md §14).

The Machine Config Operator refuses a whole KubeletConfig that sets cgroupDriver,
clusterDNS, clusterDomain, featureGates, staticPodPath, failSwapOn or
memorySwap.swapBehavior (MCO `validateUserKubeletConfig`): those are removed, one warning
each. Feature gates belong in the cluster FeatureGate CR. The MCO drains and reboots each
node of the pool and deletes `cpu_manager_state`/`memory_manager_state` itself.

On a pool tuned by the Node Tuning Operator, the PerformanceProfile's own KubeletConfig
`performance-<profile>` always overrides the CPU fields (kubelet.md §13): one warning says so.
"""
from __future__ import annotations

from krm_fn.node.formats._common import Rendered, Report, body, metadata, path_of, text
from krm_fn.results import WARNING

API_VERSION = "machineconfiguration.openshift.io/v1"
KIND = "KubeletConfig"
POOL_LABEL_PREFIX = "pools.operator.machineconfiguration.openshift.io/"
PLATFORM = "OpenShift"

# Fields the MCO rejects (the whole KubeletConfig fails) -> what to do instead.
REJECTED: dict[str, str] = {
    "featureGates": "set them cluster-wide in the FeatureGate CR `cluster` "
                    "(spec.featureSet: CustomNoUpgrade with spec.customNoUpgrade.enabled; "
                    "CustomNoUpgrade cannot be undone and blocks minor upgrades)",
    "cgroupDriver": "the MCO sets the cgroup driver itself",
    "clusterDNS": "the MCO sets it from the cluster network configuration",
    "clusterDomain": "the MCO sets it from the cluster network configuration",
    "staticPodPath": "the MCO owns the static pod path",
    "failSwapOn": "configure swap through the MCO's own swap support instead",
    "memorySwap": "configure swap through the MCO's own swap support instead",
}

# Fields a Node Tuning Operator PerformanceProfile sets on its pools (kubelet.md §13).
NTO_FIELDS = ("cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod",
              "topologyManagerPolicy", "reservedSystemCPUs", "memoryManagerPolicy",
              "reservedMemory")


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
        if key in REJECTED and not (key == "memorySwap" and isinstance(value, dict)
                                    and not value.get("swapBehavior")):
            rep.add(WARNING, key, f"{key} {text(value)} is removed from {PLATFORM} KubeletConfig "
                    f"{name}: the Machine Config Operator refuses a KubeletConfig that sets "
                    f"{key} (\"KubeletConfiguration: {key} is not allowed to be set\") and "
                    f"applies none of it; {REJECTED[key]}", current=value)
            continue
        kubelet_config[key] = value
    owned = [k for k in NTO_FIELDS if k in kubelet_config]
    if owned:
        rep.add(WARNING, None, f"{PLATFORM} KubeletConfig {name} sets {', '.join(owned)}: on a "
                f"MachineConfigPool tuned by a Node Tuning Operator PerformanceProfile the "
                f"profile owns these fields and its KubeletConfig performance-<profile> "
                f"overrides them; for such a pool set spec.cpu.reserved/spec.cpu.isolated and "
                f"spec.numa.topologyPolicy in the PerformanceProfile (other kubelet fields via "
                f"its kubeletconfig.experimental annotation) and do not select the pool here")
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
