"""Changes the API server refuses to an object that exists already (krm_fn/admission/
updates.py): a bare Pod's spec and a Job's pod template stay as created, so krm-fn's edits
reach only an object created from the render, and an info says so. Judged by the real API
server (tests/controlplane): the input is applied first, as a cluster that runs it already
holds it, then the render over it with `kubectl apply`, as a GitOps tool does."""
from __future__ import annotations

import json

import pytest
import yaml

from krm_fn.admission import updates
from tests.helpers import load, results, run_fn

RES = {"requests": {"cpu": "3500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
CONTAINER = {"name": "server", "image": "registry.k8s.io/pause:3.10", "resources": RES}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "upd"},
       "spec": {"containers": [CONTAINER]}}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "upd"},
       "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "d", "namespace": "upd"},
              "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                  "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [CONTAINER]}}}}
# kind -> (input object, the words the API server refuses the update with, or None)
CASES = {"Pod": (POD, "pod updates may not change fields other than"),
         "Job": (JOB, "field is immutable"),
         "Deployment": (DEPLOYMENT, None)}


def _render(obj: dict) -> tuple:
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [obj],
           "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                              "metadata": {"name": "t"}, "spec": {}}}
    p = run_fn([], json.dumps(doc))
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    return out["items"][0], [r["message"] for r in results(out)
                             if ("part", "update") in (r.get("tags") or {}).items()]


def test_the_note_names_the_kind_and_the_way_to_recreate_it():
    _, notes = _render(JOB)
    assert notes == [
        "Job j: the API server refuses these changes to a Job that exists already "
        "(spec.template: field is immutable), so they reach a Job created from this render "
        "only: delete an existing one first (Argo CD: the sync option Replace=true; Flux: the "
        "annotation kustomize.toolkit.fluxcd.io/force: enabled) (https://kubernetes.io/docs/"
        "concepts/workloads/controllers/job/; pkg/apis/batch/validation/validation.go "
        "validatePodTemplateUpdate)"]
    _, notes = _render(DEPLOYMENT)
    assert notes == []


def test_only_changes_under_the_fixed_path_count():
    from krm_fn.changes import Change
    from krm_fn.results import Ref
    pod = Ref("v1", "Pod", "p", "upd")
    meta = Change(0, pod, ("metadata", "annotations", "a"), None, "x")
    assert updates.note(pod, [meta]) is None      # a Pod's annotations may change
    assert updates.note(pod, [meta._replace(path=("spec", "nodeSelector", "a"))]) is not None


def test_a_jobset_keeps_its_replicated_jobs():
    # not run against the real webhook (the control plane has no JobSet controller):
    # jobset_webhook.go ValidateUpdate refuses any change of spec.replicatedJobs
    from krm_fn.changes import Change
    from krm_fn.results import Ref
    js = Ref("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "upd")
    change = Change(0, js, ("spec", "replicatedJobs", 0, "template", "spec"), None, "x")
    assert updates.note(js, [change]).startswith(
        "JobSet js: the API server refuses these changes to a JobSet that exists already "
        "(spec.replicatedJobs: field is immutable)")
    assert updates.note(js, [change._replace(path=("metadata", "labels", "a"))]) is None


@pytest.mark.parametrize("kind", list(CASES))
def test_updates_against_the_api_server(controlplane, kind):
    obj, refused = CASES[kind]
    rendered, notes = _render(obj)
    assert bool(notes) == (refused is not None)
    controlplane.pod_namespace("upd")
    name = obj["metadata"]["name"]
    controlplane.kubectl("delete", kind.lower(), name, "-n", "upd", "--ignore-not-found",
                         "--wait=true")
    first = controlplane.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))
    assert first.returncode == 0, first.stderr
    again = controlplane.kubectl("apply", "-f", "-", input=yaml.safe_dump(rendered))
    if refused is None:
        assert again.returncode == 0, again.stderr
    else:
        assert again.returncode != 0 and refused in again.stderr, again.stderr
