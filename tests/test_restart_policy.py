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
