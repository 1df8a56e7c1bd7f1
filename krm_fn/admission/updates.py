"""Changes the API server refuses to an object that exists already.

A render is applied over what the cluster runs: `kubectl apply`, Argo CD and Flux update
an existing object in place. Three workload kinds krm-fn tunes keep their pod spec fixed once
created, so krm-fn's edits reach only an object created from the render:

- a bare Pod: `ValidatePodUpdate` (pkg/apis/core/validation/validation.go) refuses any
  change of `spec` other than the containers' images, activeDeadlineSeconds, added
  tolerations and terminationGracePeriodSeconds ("pod updates may not change fields other
  than ..."; container resources change only through the `resize` subresource, which none
  of those tools uses):
  https://kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement
- a Job: `validatePodTemplateUpdate` (pkg/apis/batch/validation/validation.go) refuses any
  change of `spec.template` of a Job that is not suspended ("field is immutable"):
  https://kubernetes.io/docs/concepts/workloads/controllers/job/
- a JobSet: its validating webhook refuses any change of `spec.replicatedJobs` but the
  node selector of a suspended one (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go
  ValidateUpdate).

`note(ref, changes)` is the info an item of such a kind gets when krm-fn changes a field
under that path. A CronJob's `jobTemplate` may change (its next Jobs get it), and the other
kinds' pod templates roll out.
"""
from __future__ import annotations

# (group, kind) -> (the path under which the API server refuses updates, what it says, the
# validation function and file, the public page)
FIXED = {
    ("", "Pod"): (("spec",), "Forbidden: pod updates may not change fields other than "
                  "spec.containers[*].image, spec.initContainers[*].image, "
                  "spec.activeDeadlineSeconds, spec.tolerations (only additions to existing "
                  "tolerations) or spec.terminationGracePeriodSeconds",
                  "pkg/apis/core/validation/validation.go ValidatePodUpdate",
                  "https://kubernetes.io/docs/concepts/workloads/pods/"
                  "#pod-update-and-replacement"),
    ("batch", "Job"): (("spec", "template"), "spec.template: field is immutable",
                       "pkg/apis/batch/validation/validation.go validatePodTemplateUpdate",
                       "https://kubernetes.io/docs/concepts/workloads/controllers/job/"),
    ("jobset.x-k8s.io", "JobSet"): (
        ("spec", "replicatedJobs"), "spec.replicatedJobs: field is immutable",
        "the JobSet webhook's ValidateUpdate",
        "https://github.com/kubernetes-sigs/jobset/blob/main/pkg/webhooks/jobset_webhook.go"),
}
RECREATE = ("delete an existing one first (Argo CD: the sync option Replace=true; Flux: the "
            "annotation kustomize.toolkit.fluxcd.io/force: enabled)")


def note(ref, changes: list) -> str | None:
    """The info message for an item `ref` (results.Ref) whose `changes` (changes.Change,
    paths from the object root) touch the fields its kind keeps fixed once created
    (FIXED), or None."""
    group = ref.api_version.rpartition("/")[0]
    fixed = FIXED.get((group, ref.kind))
    if fixed is None:
        return None
    at, says, where, page = fixed
    if not any(c.path[:len(at)] == at for c in changes):
        return None
    return (f"{ref.kind} {ref.name}: the API server refuses these changes to a {ref.kind} "
            f"that exists already ({says}), so they reach a {ref.kind} created from this "
            f"render only: {RECREATE} ({page}; {where})")
