"""The QoS class of a pod after admission, and the feature gates the kubelet model reads.

`pod_qos` follows kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS,
resourceQOS) as of the release that added pod-level resources: only `cpu` and `memory`
count; with the `PodLevelResources` gate on and `spec.resources` set, the class comes from
the pod-level values alone (KEP-2837,
https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/2837-pod-level-resource-spec);
otherwise every init container (sidecars included) and app container is classified on its
own and the pod is Guaranteed only when all are, BestEffort only when all are.
"""
from __future__ import annotations

from krm_fn.admission.model import AdmittedPod, NodeModel, node_memo

GUARANTEED, BURSTABLE, BESTEFFORT = "Guaranteed", "Burstable", "BestEffort"
QOS_RESOURCES = ("cpu", "memory")
QOS_SOURCE = "kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS)"

# Gate defaults come from the generated upstream data of the node's version
# (krm_fn/node/upstream.py: pkg/features/kube_features.go of each supported minor).


def gate(node: NodeModel, name: str) -> bool:
    """Whether feature gate `name` is on for the kubelet of `node`: `featureGates` of the
    merged KubeletConfiguration when it sets it, else the default of `node.version` from the
    generated data (kubernetes/kubernetes pkg/features/kube_features.go of that release).
    Unknown gates, and a gate on a version before it exists, are off. Memoised per node
    (model.node_memo)."""
    memo = node_memo(node)
    key = ("gate", name)
    if key not in memo:
        memo[key] = _gate(node, name)
    return memo[key]


def known(node: NodeModel, name: str) -> bool:
    """Whether the release of `node` has feature gate `name` at all (pkg/features/
    kube_features.go of that release, through the generated data)."""
    from krm_fn.node import upstream
    return upstream.load(tuple(node.version)).gate_default(name) is not None


def api_gate(node: NodeModel, name: str) -> bool:
    """Whether feature gate `name` is on for the API server of `node`'s cluster: the default
    of `node.version`. The pool's `featureGates` configure its kubelet only; the QoS class
    the kubelet reads is the API server's (pkg/registry/core/pod/strategy.go PrepareForCreate
    sets status.qosClass; pkg/apis/core/v1/helper/qos/qos.go GetPodQOS reads it first), and
    the API server keeps and validates pod-level `spec.resources` by its own gate."""
    from krm_fn.node import upstream
    data = upstream.load(tuple(node.version))
    return data.gate_default(name) is not None and data.gate_on(name, {})


def _gate(node: NodeModel, name: str) -> bool:
    from krm_fn.node import upstream
    gates = (node.kubelet or {}).get("featureGates") or {}
    data = upstream.load(tuple(node.version))
    if data.gate_default(name) is None:
        return False                            # the release does not know the gate
    return data.gate_on(name, gates)


def pod_level_set(pod: AdmittedPod) -> bool:
    """The pod's `spec.resources` sets a resource pod-level resources support: cpu, memory
    or a huge page size (k8s.io/component-helpers resource/helpers.go
    IsPodLevelResourcesSet and IsSupportedPodLevelResource, the same in v0.35 to v0.37)."""
    return any(r in QOS_RESOURCES or r.startswith("hugepages-")
               for part in (pod.pod_requests, pod.pod_limits) for r in part or ())


def from_pod_level(pod: AdmittedPod, pod_level: bool, ignore_empty: bool) -> bool:
    """Whether `pod_qos` classifies `pod` from its pod-level `spec.resources` alone (the
    arguments are pod_qos's)."""
    return pod_level and (pod.pod_requests is not None or pod.pod_limits is not None) and (
        not ignore_empty or pod_level_set(pod))


def resource_qos(requests: dict, limits: dict) -> str:
    """The class of one set of resource requirements (qos.go resourceQOS): BestEffort when
    nothing is set at all; Burstable when the cpu or memory request differs from its limit,
    or one of them is set and the other not; Guaranteed when both are set with request ==
    limit. Amounts: cpu nanocores (int), memory int bytes; absent = 0."""
    if not requests and not limits:
        return BESTEFFORT
    qos = None
    for res in QOS_RESOURCES:
        req, lim = requests.get(res, 0), limits.get(res, 0)
        if req != lim:
            return BURSTABLE
        best_effort = req == 0
        if qos is None:
            qos = BESTEFFORT if best_effort else GUARANTEED
        elif best_effort != (qos == BESTEFFORT):
            return BURSTABLE
    return qos


def pod_qos(pod: AdmittedPod, pod_level: bool = True, ignore_empty: bool = False) -> str:
    """"Guaranteed", "Burstable" or "BestEffort" for `pod` (qos.go ComputePodQOS).

    `pod_level`: the PodLevelResources gate is on (see `gate`); then a pod that has
    `spec.resources` is classified from it alone, an empty one (`{}`) too, which makes it
    BestEffort (kubernetes/kubernetes#135082), unless `ignore_empty`: the
    PodLevelResourcesFixKubeletQOSClass gate (1.37) is on, and only pod-level resources
    that are set count (`pod_level_set`). Containers' requests are the defaulted ones (a limit
    without a request gives request = limit, pkg/apis/core/v1/defaults.go).
    """
    if from_pod_level(pod, pod_level, ignore_empty):
        return resource_qos(pod.pod_requests or {}, pod.pod_limits or {})
    qos = None
    for c in pod.containers:
        one = resource_qos(c.requests, c.limits)
        if one == BURSTABLE:
            return BURSTABLE
        if qos is None:
            qos = one
        elif qos != one:
            return BURSTABLE
    return qos or BESTEFFORT


def not_guaranteed(pod: AdmittedPod) -> list[str]:
    """Names of the containers that keep the pod from being Guaranteed (each one's cpu or
    memory request differs from its limit, or a limit is missing), in pod order."""
    return [c.name for c in pod.containers
            if resource_qos(c.requests, c.limits) != GUARANTEED]
