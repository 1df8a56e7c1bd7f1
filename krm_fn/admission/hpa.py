"""HorizontalPodAutoscaler: its controller sets the workload's replicas anywhere between
`minReplicas` and `maxReplicas`, whatever `spec.replicas` says, so a workload is judged at
the most pods the HPA will ask for.

Source: k8s.io/api autoscaling/v2 (and v1) HorizontalPodAutoscalerSpec: `scaleTargetRef`
(kind, name, apiVersion of a workload of the HPA's namespace), `minReplicas` (default 1),
`maxReplicas` (required, not below minReplicas); kubernetes/kubernetes
pkg/controller/podautoscaler/horizontal.go (the desired replicas are kept within
minReplicas and maxReplicas and written to the target's scale subresource);
https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/.

Modelled, per HPA of the input that targets the workload:

- each ResourceQuota of the namespace that counts the pod (resourcequota.py: the same
  usage, scopes and constraints), against `maxReplicas` pods: above its `spec.hard`, the
  HPA scales into refusals ("exceeded quota", FailedCreate): an error;
- the pool's fit: `maxReplicas` pods at the pod's replicas per empty node (capacity.py)
  need that many nodes of the pool; krm-fn does not know the pool's size, so an info says
  how many.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.admission.model import ERROR, INFO, AdmittedPod, Finding, same_namespace

SOURCE = ("https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/; "
          "kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go")


def targets(hpa: dict, kind: str, name: str, namespace: str) -> bool:
    """`hpa` (plain object) scales the workload `kind`/`name` in `namespace` (its
    spec.scaleTargetRef, in the HPA's namespace: same_namespace)."""
    spec = hpa.get("spec") if isinstance(hpa.get("spec"), dict) else {}
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict):
        return False
    return (str(ref.get("kind")) == kind and str(ref.get("name")) == name
            and same_namespace(hpa, namespace))


def bounds(hpa: dict) -> tuple:
    """(minReplicas, maxReplicas) of `hpa` as the API server reads them (numbers.api_int;
    minReplicas default 1); maxReplicas None when absent or not a whole number (the API
    server refuses such an HPA)."""
    spec = hpa.get("spec") if isinstance(hpa.get("spec"), dict) else {}
    low = spec.get("minReplicas")
    low = numbers.api_int(low)[0] if low is not None else 1
    high = spec.get("maxReplicas")
    high = numbers.api_int(high)[0] if high is not None else None
    return (low if low is not None else 1), high


def name_of(hpa: dict) -> str:
    """metadata.name of `hpa` (plain object)."""
    md = hpa.get("metadata") if isinstance(hpa.get("metadata"), dict) else {}
    return str(md.get("name"))


def findings(pod: AdmittedPod, hpas: list, quotas: list = (), fit: int | None = None,
             pool: str = "") -> list:
    """Findings (rule `hpa`) of `pod` scaled by each HPA of `hpas` (plain objects targeting
    its workload) to its maxReplicas: an ERROR per ResourceQuota of `quotas` (the pod's
    namespace's) that counts the pod and has no room for maxReplicas of them (one pod
    above it, or a container that does not state a resource, is resourcequota.refused's
    error already); an INFO with the nodes of pool `pool` maxReplicas pods need at `fit`
    per node (None or 0: not said; the verdict has its own errors then); an INFO for an
    HPA whose maxReplicas krm-fn cannot read (bounds)."""
    out: list = []
    use = None
    for hpa in hpas:
        name, (low, high) = name_of(hpa), bounds(hpa)
        if high is None or high < 1:
            spec = hpa.get("spec") if isinstance(hpa.get("spec"), dict) else {}
            out.append(Finding(INFO, f"HorizontalPodAutoscaler {name}: spec.maxReplicas "
                               f"{spec.get('maxReplicas')!r} is no whole number of at least "
                               f"1, so krm-fn does not judge the replicas it scales to "
                               f"(the API server refuses such an HPA) ({SOURCE})", "hpa",
                               pod.path))
            continue
        for quota in quotas:
            if use is None:
                from krm_fn.admission import resourcequota
                use = resourcequota._usage(pod)
            f = _quota(pod, quota, use, name, high)
            if f is not None:
                out.append(f)
        if fit:
            nodes = -(-high // fit)
            out.append(Finding(INFO, f"HorizontalPodAutoscaler {name} scales this workload "
                               f"between {low} and {high} replicas: at {fit} per node, "
                               f"{high} replicas need {nodes} node{'s' if nodes != 1 else ''} "
                               f"of pool {pool!r} with nothing else on them; krm-fn does not "
                               f"know how many the pool has, and the replicas beyond stay "
                               f"Pending ({SOURCE})", "hpa", pod.path))
    return out


def _quota(pod: AdmittedPod, quota: dict, use: dict, name: str, high: int):
    """The ERROR Finding of `high` pods against `quota`, None when they fit, or when the
    quota is not counted against here (resourcequota.refused says why); resourcequota.py
    is imported only for a namespace with a quota."""
    from krm_fn.admission import quotascope
    from krm_fn.admission import resourcequota as rq
    if not rq.modelled(quota) or quotascope.matches(quota, pod)[0] is not True:
        return None
    if rq.unstated(pod, quota) is not None:
        return None
    hard = rq._hard(quota)
    keys = sorted(hard)
    if any(rq.used(use, k) > hard[k] for k in keys):
        return None
    total = {k: rq.used(use, k) * high for k in keys}
    many = [k for k in keys if total[k] > hard[k]]
    if not many:
        return None
    fit = min((int(hard[k] // rq.used(use, k)) for k in keys if rq.used(use, k)), default=0)
    qname = (quota.get("metadata") or {}).get("name")
    return Finding(ERROR, f"ResourceQuota {qname} of namespace {pod.namespace or 'default'}: "
                          f"HorizontalPodAutoscaler {name} scales this workload up to "
                          f"maxReplicas {high}, which need {rq._list(many, total)}, above "
                          f"its hard {rq._list(many, hard)}: the API server refuses the pods "
                          f"after the first {fit} (\"exceeded quota: {qname}\"; the "
                          f"controller reports FailedCreate) and the HPA scales into "
                          f"refusals, before counting the other pods of the namespace; set "
                          f"maxReplicas to at most {fit}, or raise the quota ({rq.SOURCE}; "
                          f"{SOURCE})", "hpa", pod.path)
