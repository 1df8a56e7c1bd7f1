"""Format `eks`: a ConfigMap carrying `nodeconfig.yaml`, a `node.eks.aws/v1alpha1` NodeConfig
for nodeadm (Amazon Linux 2023 EKS AMIs), with the plan under `spec.kubelet.config`.

nodeadm writes `spec.kubelet.config` as the kubelet drop-in
`/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf`, merged over its own
`/etc/kubernetes/kubelet/config.json` (maps per key, lists and scalars replaced;
https://awslabs.github.io/amazon-eks-ami/nodeadm/).
The map is free: every KubeletConfiguration field passes. Three nodeadm defaults matter:

- nodeadm sets `systemReservedCgroup: /system` and `kubeReservedCgroup: /runtime`, and the
  kubelet refuses `reservedSystemCPUs` next to either. With reservedSystemCPUs in the plan
  both are written as `""` (overriding nodeadm's values), with a warning.
- nodeadm's `kubeReserved.memory` is `11 * maxPods + 255` Mi. A kubeReserved.memory in the
  plan replaces it (warning: less than nodeadm would reserve on dense nodes); without one
  the kubelet reserves it unseen, and with `memoryManagerPolicy: Static` the plan's
  reservedMemory misses it and the kubelet refuses to start (error: set
  kubeReserved.memory).
- nodeadm's `kubeReserved.cpu` is 6% of the first core, 1% of the next, 0.5% of the next 2
  and 0.25% of each further one (nodeadm/internal/kubelet/config.go). Without
  reservedSystemCPUs (which replaces it) and without a kubeReserved.cpu in the plan the
  kubelet reserves it and the verdict would not count it (error: set kubeReserved.cpu).

Put the NodeConfig in the launch template's user data as a MIME part of type
`application/node.eks.aws` (managed node groups and Karpenter add their own part with the
cluster details).
"""
from __future__ import annotations

from krm_fn.node.baseline import string_map, unwrap
from krm_fn.node import fields, platform_reserved
from krm_fn.node.formats._common import Rendered, Report, body, carrier, text
from krm_fn.results import ERROR, WARNING
from krm_fn.yaml import emit

DATA_KEY = "nodeconfig.yaml"
API_VERSION = "node.eks.aws/v1alpha1"
KIND = "NodeConfig"
PLATFORM = "EKS"
# nodeadm's own values (krm_fn.node.fields, each entry's platforms["eks"].platform_default).
NODEADM_CGROUPS = {n: fields.platform_default("eks", n) for n in fields.RESERVED_CGROUP_FIELDS}
NODEADM_KUBE_RESERVED_MEMORY = fields.platform_default("eks", "kubeReserved")["memory"]
NODEADM_SOURCE = ("https://github.com/awslabs/amazon-eks-ami/blob/main/nodeadm/internal/kubelet/"
                  "config.go")


def node_config(plan, rep: Report, baseline=None) -> dict:
    """The NodeConfig for `plan`; warnings about nodeadm's defaults go to `rep`. With a
    `baseline` (`spec.output.baseline`) that sets kubeReserved.memory, the plan's
    reservedMemory already counts nodeadm's value, so no warning about it."""
    config = body(plan)
    if config.get("reservedSystemCPUs"):
        overridden = [k for k in NODEADM_CGROUPS if k not in config]
        for key in overridden:
            config[key] = ""
        if overridden:
            was = ", ".join(f"{k}: {NODEADM_CGROUPS[k]}" for k in overridden)
            rep.add(WARNING, "reservedSystemCPUs", f"{PLATFORM}: nodeadm sets {was} in the "
                    f"kubelet config, and the kubelet refuses to start with reservedSystemCPUs "
                    f"next to a systemReservedCgroup or kubeReservedCgroup (the node never "
                    f"registers); the NodeConfig sets {' and '.join(overridden)} to \"\" to "
                    f"override them, so kube/system reservations are not enforced on those "
                    f"cgroups", current=config["reservedSystemCPUs"])
    kube_memory = (config.get("kubeReserved") or {}).get("memory")
    if kube_memory is not None:
        rep.add(WARNING, "kubeReserved.memory", f"{PLATFORM}: kubeReserved.memory "
                f"{text(kube_memory)} replaces nodeadm's default kubeReserved.memory "
                f"({NODEADM_KUBE_RESERVED_MEMORY}, e.g. 574Mi for 29 pods on m5.large), which "
                f"grows with the pods per node; on dense nodes raise kubelet.kubeReserved.memory "
                f"to at least that", current=kube_memory)
    elif "memory" not in string_map(unwrap(baseline)[0].get("kubeReserved")) and \
            config.get("memoryManagerPolicy") != "Static":
        rep.add(ERROR, "kubeReserved.memory", f"{PLATFORM}: nodeadm sets kubeReserved.memory "
                f"to {NODEADM_KUBE_RESERVED_MEMORY} and the plan has no kubeReserved.memory "
                f"to replace it: the kubelet would reserve memory that krm-fn did not judge "
                f"allocatable with; set kubelet.kubeReserved.memory (e.g. the value nodeadm "
                f"computes for the instance type)")
    elif "memory" not in string_map(unwrap(baseline)[0].get("kubeReserved")):
        rep.add(ERROR, "kubeReserved.memory", f"{PLATFORM}: memoryManagerPolicy Static needs "
                f"reservedMemory = kubeReserved.memory + systemReserved.memory + "
                f"evictionHard[memory.available], and nodeadm sets kubeReserved.memory to "
                f"{NODEADM_KUBE_RESERVED_MEMORY}, which the plan's reservedMemory does not "
                f"include: the kubelet refuses to start; set kubelet.kubeReserved.memory "
                f"explicitly (e.g. the value nodeadm computes for the instance type)",
                current=config.get("memoryManagerPolicy"))
    merged = plan.merged or config
    kube = merged.get("kubeReserved") if isinstance(merged.get("kubeReserved"), dict) else {}
    if not merged.get("reservedSystemCPUs") and "cpu" not in kube:
        cpus = plan.topology.total_cpus
        millis = int(platform_reserved.brackets(cpus, platform_reserved.GKE_CPU) * 1000 + 1e-9)
        rep.add(ERROR, "kubeReserved.cpu", f"{PLATFORM}: nodeadm sets kubeReserved.cpu to "
                f"{millis}m on a {cpus}-CPU node (6% of the first core, 1% of the next, 0.5% "
                f"of the next 2, 0.25% of each further one; {NODEADM_SOURCE}) and the plan "
                f"has no kubeReserved.cpu to replace it: the kubelet would reserve CPU that "
                f"krm-fn did not judge with; set kubelet.kubeReserved.cpu (e.g. {millis}m)",
                proposed=f"{millis}m")
    return {"apiVersion": API_VERSION, "kind": KIND,
            "spec": {"kubelet": {"config": config}}}


def render(plan, ctx) -> Rendered:
    """[ConfigMap kubelet-config-<pool>-eks] with `nodeconfig.yaml`, plus the warnings
    about nodeadm's reserved cgroups and kubeReserved.memory."""
    rep = Report(ctx)
    text_ = emit.to_yaml(node_config(plan, rep, ctx.baseline))
    return Rendered([carrier(plan, ctx, "eks", {DATA_KEY: text_})], rep.results)
