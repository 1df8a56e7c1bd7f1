"""VerticalPodAutoscaler: its admission controller rewrites container resources when a pod
is created, so the CPUs krm-fn pins are not what the kubelet sees.

Source: kubernetes/autoscaler vertical-pod-autoscaler (pkg/apis/autoscaling.k8s.io/v1
types.go: `updatePolicy.updateMode` Off | Initial | Recreate | InPlaceOrRecreate | Auto,
default Auto; `resourcePolicy.containerPolicies[]`: `containerName` (`*` for every
container), `mode` Auto | Off, `controlledResources` (default cpu and memory),
`controlledValues` RequestsAndLimits (default) | RequestsOnly; the admission controller's
pod patch, pkg/admission-controller/resource/pod/patch/resource_updates.go), and
https://github.com/kubernetes/autoscaler/tree/master/vertical-pod-autoscaler#quick-start.

For a VPA in the input whose `targetRef` is the workload and whose update mode is not
`Off`, every pinned container whose cpu the VPA controls gets the recommendation instead
of its whole CPU count: with `RequestsAndLimits` both scale by the same factor to a value
that is almost never a whole number (the static CPU Manager then gives no exclusive CPUs);
with `RequestsOnly` the request changes and the limit stays, so the pod is Burstable.
Either way the pin cannot be promised: an error naming the VPA and the fix.
"""
from __future__ import annotations

from krm_fn.admission.model import ERROR, AdmittedPod, Finding

SOURCE = ("kubernetes/autoscaler vertical-pod-autoscaler pkg/apis/autoscaling.k8s.io/v1 "
          "types.go, https://github.com/kubernetes/autoscaler/tree/master/"
          "vertical-pod-autoscaler")


def targets(vpa: dict, kind: str, name: str, namespace: str) -> bool:
    """`vpa` (plain object) targets the workload `kind`/`name` in `namespace`."""
    md = vpa.get("metadata") if isinstance(vpa.get("metadata"), dict) else {}
    ref = (vpa.get("spec") or {}).get("targetRef") if isinstance(vpa.get("spec"), dict) else None
    if not isinstance(ref, dict):
        return False
    return (str(ref.get("kind")) == kind and str(ref.get("name")) == name
            and str(md.get("namespace") or "") == (namespace or ""))


def _policy(spec: dict, container: str) -> dict:
    """The containerPolicies entry for `container` (by name, else `*`), {} when none."""
    policies = ((spec.get("resourcePolicy") or {}).get("containerPolicies") or []
                if isinstance(spec.get("resourcePolicy"), dict) else [])
    by_name = {str(p.get("containerName")): p for p in policies if isinstance(p, dict)}
    return by_name.get(container) or by_name.get("*") or {}


def refused(pod: AdmittedPod, vpas: list) -> tuple:
    """ERROR Findings (rule `vpa`) for each VPA of `vpas` (those targeting the pod's
    workload) that will rewrite the cpu of a container krm-fn pins."""
    out = []
    for vpa in vpas:
        spec = vpa.get("spec") if isinstance(vpa.get("spec"), dict) else {}
        name = (vpa.get("metadata") or {}).get("name")
        mode = str((spec.get("updatePolicy") or {}).get("updateMode") or "Auto") \
            if isinstance(spec.get("updatePolicy") or {}, dict) else "Auto"
        if mode == "Off":
            continue
        for c in pod.containers:
            if not c.designated:
                continue
            pol = _policy(spec, c.name)
            if str(pol.get("mode") or "Auto") == "Off":
                continue
            controlled = pol.get("controlledResources") or ["cpu", "memory"]
            if "cpu" not in [str(r) for r in controlled]:
                continue
            values = str(pol.get("controlledValues") or "RequestsAndLimits")
            effect = ("the limit stays, so the pod is Burstable" if values == "RequestsOnly"
                      else "the limit scales with it, to a value that is almost never a "
                           "whole number, so the static CPU Manager gives no exclusive CPUs")
            out.append(Finding(ERROR, f"VerticalPodAutoscaler {name} (updateMode {mode}) "
                                      f"sets container {c.name!r}'s cpu request to its "
                                      f"recommendation when each pod is created, and {effect}; "
                                      f"keep cpu out of its control for this container: "
                                      f"spec.resourcePolicy.containerPolicies entry "
                                      f"{{containerName: {c.name}, controlledResources: "
                                      f"[memory]}} (or mode: \"Off\"), or updateMode: "
                                      f"\"Off\" ({SOURCE})", "vpa", pod.path))
    return tuple(out)
