"""Container fields the API server refuses that krm-fn passed (krm_fn/pod.py
`_container_refusal`): a regular init container with `lifecycle` or a probe, which only a
sidecar (restartPolicy Always) may have, and a `resources.claims` entry that names no
entry of the pod's `resourceClaims` (pkg/apis/core/validation/validation.go
validateInitContainers, validateResourceClaimNames).

Found by sending rendered Deployments to the real API server: an init container with a
startupProbe, and a container claiming `gpu` without `resourceClaims`, each got `Guaranteed
after admission` and exit 0 while the API server refused the Deployment. Each case is
rendered and sent to the real API server (tests/controlplane, dry run): its error must be
krm-fn's, and what it accepts krm-fn must pass."""
from __future__ import annotations

import pytest

from tests.test_verdict import config, deployment, errors, render

G = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
SMALL = {"requests": {"cpu": "100m", "memory": "128Mi"},
         "limits": {"cpu": "100m", "memory": "128Mi"}}
PROBE = {"exec": {"command": ["true"]}}
SRC = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"


def _init(field: str, sidecar: bool = False) -> dict:
    c = {"name": "init", "image": "busybox:1", "resources": SMALL, field: PROBE if field != (
        "lifecycle") else {"postStart": PROBE}}
    return {"initContainers": [{**c, **({"restartPolicy": "Always"} if sidecar else {})}],
            "containers": [{"name": "server", "image": "srv:1", "resources": G}]}


def _claims(claim: str, pod_claims: list) -> dict:
    return {"resourceClaims": [{"name": n, "resourceClaimName": n} for n in pod_claims],
            "containers": [{"name": "server", "image": "srv:1", "resources": {
                **G, "claims": [{"name": claim}]}}]}


def _init_error(field: str) -> list:
    return [f"Forbidden: may not be set for init containers without restartPolicy=Always: "
            f"the API server refuses the workload; remove {field}, or make the container a "
            f"sidecar (restartPolicy: Always) ({SRC} validateInitContainers)"]


def _claim_error(detail: str) -> list:
    return [f"Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims{detail}: "
            f"the API server refuses the workload; add a resourceClaims entry of that name to "
            f"the pod spec, or remove the claim ({SRC} validateResourceClaimNames; "
            f"https://kubernetes.io/docs/concepts/scheduling-eviction/"
            f"dynamic-resource-allocation/)"]


# name: (pod spec, krm-fn's errors, the API server's field path or None when it accepts)
CASES = {
    **{f"init-{f}": (_init(f), _init_error(f), f"spec.template.spec.initContainers[0].{f}")
       for f in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")},
    "sidecar-startupProbe": (_init("startupProbe", sidecar=True), [], None),
    "claim-without-resource-claims": (_claims("gpu", []), _claim_error(" which is empty"),
                                      "spec.template.spec.containers[0].resources.claims[0]"),
    "claim-of-another-name": (_claims("gpu", ["tpu", "fpga"]), _claim_error(": fpga, tpu"),
                              "spec.template.spec.containers[0].resources.claims[0]"),
    "claim-of-the-pod": (_claims("gpu", ["gpu"]), [], None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_krm_fn_refuses_what_the_api_server_refuses(controlplane, name):
    spec, want, field = CASES[name]
    code, results, _ = render(config(), deployment(spec=spec))
    assert errors(results)[:1] == want
    ns = controlplane.pod_namespace("container-refusals")
    dep = deployment(spec=spec, namespace=ns, labels={"app": "srv"})
    dep["spec"]["selector"] = {"matchLabels": {"app": "srv"}}
    status, got = controlplane.request(
        "POST", f"/apis/apps/v1/namespaces/{ns}/deployments?dryRun=All", dep)
    if field is None:
        assert status == 201, got
        assert code == 0 and not want
        return
    assert status == 422, got
    said = [f"{c['field']}: {c['message']}" for c in got["details"]["causes"]]
    assert said == [f"{field}: {want[0].split(': the API server refuses')[0]}"], got
