"""A pod template `restartPolicy` the API server refuses for the workload's kind
(krm_fn/pod.py `_restart_policy`: pkg/apis/apps/validation/validation.go, Always only;
pkg/apis/batch/validation/validation.go validateJobSpec, OnFailure or Never, unset being
defaulted to Always; only Never with a podFailurePolicy).

Found by sending rendered workloads to the real API server: a Deployment whose template
says `restartPolicy: Never` got `Guaranteed after admission` and exit 0 while the API server
refused it. Each case is rendered and sent to the real API server (dry run): its error must
be krm-fn's, and what it accepts krm-fn must pass."""
from __future__ import annotations

import pytest
import yaml

from tests.helpers import run_fn
from tests.test_verdict import config, deployment, errors, render

G = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
POD = {"containers": [{"name": "server", "image": "srv:1", "resources": G}]}
DOC = "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#restart-policy"
APPS = "kubernetes/kubernetes pkg/apis/apps/validation/validation.go"
JOB = "kubernetes/kubernetes pkg/apis/batch/validation/validation.go validateJobSpec"
PFP = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}


def _job(policy=None, pfp=False, kind="Job") -> dict:
    spec = {"template": {"spec": {**POD, **({"restartPolicy": policy} if policy else {})}},
            **({"podFailurePolicy": PFP} if pfp else {})}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    return {"apiVersion": "batch/v1", "kind": kind, "metadata": {"name": "j"}, "spec": spec}


def _dep(policy) -> dict:
    d = deployment(spec={**POD, "restartPolicy": policy}, labels={"app": "srv"}, namespace="")
    d["spec"]["selector"] = {"matchLabels": {"app": "srv"}}
    return d


_JOB_FIX = "write restartPolicy: OnFailure or Never in the Job's pod template"
# name: (workload, the API server's field path and words, the fix; None: accepted)
CASES = {
    "deployment-never": (_dep("Never"), ("spec.template.spec.restartPolicy",
                                         'Unsupported value: "Never": supported values: '
                                         '"Always"', "remove restartPolicy or write Always",
                                         APPS)),
    "deployment-always": (_dep("Always"), None),
    "job-unset": (_job(), ("spec.template.spec.restartPolicy",
                           'Required value: valid values: "OnFailure", "Never"', _JOB_FIX,
                           JOB)),
    "job-never": (_job("Never"), None),
    "job-on-failure-with-pod-failure-policy": (
        _job("OnFailure", pfp=True),
        ("spec.template.spec.restartPolicy", 'Invalid value: "OnFailure": only "Never" is '
         'supported when podFailurePolicy is specified',
         "write restartPolicy: Never in the Job's pod template", JOB)),
    "cronjob-unset": (_job(kind="CronJob"), ("spec.jobTemplate.spec.template.spec."
                                             "restartPolicy", 'Required value: valid values: '
                                             '"OnFailure", "Never"', _JOB_FIX, JOB)),
    "cronjob-on-failure": (_job("OnFailure", kind="CronJob"), None),
}
_PATHS = {"Deployment": "apis/apps/v1", "Job": "apis/batch/v1", "CronJob": "apis/batch/v1"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_krm_fn_refuses_what_the_api_server_refuses(controlplane, name):
    obj, want = CASES[name]
    code, results, _ = render(config(), obj)
    if want is None:
        assert code == 0 and errors(results) == []
    else:
        assert errors(results) == [f"{want[1]}: the API server refuses the workload; "
                                   f"{want[2]} ({want[3]}; {DOC})",
                                   "left unchanged because of the errors above"]
    ns = controlplane.pod_namespace("restart-policy")
    kind = obj["kind"].lower() + "s"
    status, got = controlplane.request(
        "POST", f"/{_PATHS[obj['kind']]}/namespaces/{ns}/{kind}?dryRun=All", obj)
    if want is None:
        assert status == 201, got
        return
    said = [f"{c['field']}: {c['message']}" for c in got["details"]["causes"]]
    assert said == [f"{want[0]}: {want[1]}"], got


def _jobset(policy=None, pfp=False) -> dict:
    job = _job(policy, pfp)["spec"]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1,
                                         "template": {"spec": job}}]}}


# JobSet's replicated Jobs: the JobSet webhook sets an unset restartPolicy to OnFailure
# (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go Default), and the API server
# refuses the Job the controller then creates as it refuses any Job's
JOBSET = {"unset": (None, False, None), "never": ("Never", False, None),
          "on-failure": ("OnFailure", False, None),
          "always": ("Always", False, 'Required value: valid values: "OnFailure", "Never"'),
          "sometimes": ("Sometimes", False, 'Unsupported value: "Sometimes": supported '
                                            'values: "OnFailure", "Never"'),
          "unset-with-pod-failure-policy": (None, True, 'Invalid value: "OnFailure": only '
                                                        '"Never" is supported when '
                                                        'podFailurePolicy is specified'),
          "never-with-pod-failure-policy": ("Never", True, None)}


@pytest.mark.parametrize("name", sorted(JOBSET))
def test_a_jobset_job_template_is_a_jobs(controlplane, name):
    policy, pfp, want = JOBSET[name]
    obj = _jobset(policy, pfp)
    code, results, _ = render(config(), obj)
    if want is None:
        assert code == 0 and errors(results) == []
    else:
        fix = ("write restartPolicy: Never in the Job's pod template" if pfp else _JOB_FIX)
        assert errors(results) == [f"{want}: the API server refuses the workload; {fix} "
                                   f"({JOB}; {DOC})",
                                   "left unchanged because of the errors above"]
    # the Job the JobSet controller creates, after the JobSet webhook's default
    job = _job(policy or "OnFailure", pfp)
    ns = controlplane.pod_namespace("restart-policy")
    status, got = controlplane.request(
        "POST", f"/apis/batch/v1/namespaces/{ns}/jobs?dryRun=All", job)
    if want is None:
        assert status == 201, got
        return
    said = [f"{c['field']}: {c['message']}" for c in got["details"]["causes"]]
    # an unknown policy is also refused by the pod spec's own validation (a second error)
    assert f"spec.template.spec.restartPolicy: {want}" in said, got


def test_a_jobset_error_names_the_replicated_job_field():
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [_jobset("Always")], "functionConfig": config()}
    out = yaml.safe_load(run_fn([], yaml.safe_dump(rl)).stdout)
    fields = [r.get("field", {}).get("path") for r in out["results"]
              if r["severity"] == "error" and "restartPolicy" in r["message"]]
    assert fields == ["spec.replicatedJobs[0].template.spec.template.spec.restartPolicy"]
