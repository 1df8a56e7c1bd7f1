"""The static CPU Manager under the PodLevelResourceManagers gate (KEP-5526): with the
Topology Manager's pod scope it gives a pod with pod-level resources one block of
exclusive CPUs and shares it out among its containers (`findings`). Imported by the
kubelet model only when the gate is on and the pod sets pod-level resources.
"""
from __future__ import annotations

from krm_fn.admission import cpumanager, topology
from krm_fn.admission.model import ERROR, WARNING, AdmittedPod, Finding, NodeModel
from krm_fn.admission.qos import GUARANTEED, gate, pod_level_set
from krm_fn.quantity import kubelet_cpus


PLRM_SRC = ("KEP-5526, https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/"
            "5526-pod-level-resource-managers; kubernetes/kubernetes "
            "pkg/kubelet/cm/cpumanager/policy_static.go allocatePodForAdd, podGuaranteedCPUs")


def pins_pod_level(node: NodeModel) -> bool:
    """Whether the kubelet of `node` pins a pod with pod-level resources at all: the
    PodLevelResources and PodLevelResourceManagers gates on, the static CPU Manager, and
    the Topology Manager's pod scope under a policy other than none (`findings`)."""
    return (gate(node, "PodLevelResources") and gate(node, "PodLevelResourceManagers")
            and cpumanager.is_static(node) and topology.policy(node) != topology.NONE
            and topology.scope(node) == "pod")


def findings(pod: AdmittedPod, node: NodeModel, qos: str) -> list:
    """With PodLevelResourceManagers on, the static CPU Manager and the Topology Manager's
    pod scope (policy other than none) give a pod with pod-level resources one block of
    exclusive CPUs, sized by its pod-level cpu, and each whole-CPU container its CPUs from
    that block (scope_pod.go admitUsingPodResources, policy_static.go allocatePodForAdd):
    a pod that is not Guaranteed or whose pod-level cpu is no whole number runs in the
    shared pool (podGuaranteedCPUs 0), a block that is not whole cores under
    `full-pcpus-only` is an SMTAlignmentError; the block itself is not modelled (the
    containers are judged one by one), which a warning says. Container scope and policy
    none allocate container by container, as modelled."""
    if not (pod_level_set(pod) and pins_pod_level(node)):
        return []
    pinned = [c.name for c in pod.containers if c.designated]
    cpu = (pod.pod_requests or {}).get("cpu")
    total = kubelet_cpus(cpu) if qos == GUARANTEED and cpu and cpu > 0 else 0
    if not total:
        if not pinned:
            return []
        return [Finding(ERROR, f"the pod-level cpu request is "
                        f"{'no whole number' if qos == GUARANTEED else 'not Guaranteed'}: "
                        f"with PodLevelResourceManagers on and topologyManagerScope pod, the "
                        f"static CPU Manager runs such a pod in the shared pool, so "
                        f"{', '.join(pinned)} {'gets' if len(pinned) == 1 else 'get'} no "
                        f"exclusive CPUs; set spec.resources cpu "
                        f"to a whole number with requests == limits, or remove spec.resources "
                        f"({PLRM_SRC})", "cpumanager", pod.path)]
    smt = cpumanager.CpuState(node).smt_error(total)
    if smt.startswith("SMT Alignment Error: requested"):
        return [Finding(ERROR, f"the kubelet refuses the pod on every node of pool "
                        f"{node.pool!r} ({smt}): with PodLevelResourceManagers on it takes the "
                        f"pod-level cpu ({total}) as one block of whole cores under "
                        f"full-pcpus-only; request a multiple of the CPUs per core in "
                        f"spec.resources ({PLRM_SRC})", "cpumanager", pod.path)]
    return [Finding(WARNING, f"PodLevelResourceManagers is on: the kubelet gives the pod "
                    f"{total} exclusive CPUs as one block, each whole-CPU container its CPUs "
                    f"from that block and the pod's other containers the rest of it; krm-fn "
                    f"judges the containers one by one, so the exclusive CPUs per node and "
                    f"the NUMA placement below may differ ({PLRM_SRC})", "cpumanager",
                    pod.path)]
