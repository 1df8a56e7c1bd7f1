"""What the API server refuses before any rule runs (krm_fn/pod.py build_views): duplicate
container names and ephemeral containers, through the whole function; and quantities in
messages printed as Kubernetes quantities, never as Python fractions."""
from __future__ import annotations

import re
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from krm_fn.admission.kubelet import judge
from tests.admission.kit import ctr, node, pod
from tests.test_verdict import GUARANTEED_4, POOL, config, deployment, errors, render

SRC = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"
DUP = ("container names must be unique across initContainers, containers and "
       "ephemeralContainers, so the API server refuses the pod: rename one of them (" + SRC
       + " validateInitContainers, validateContainers)")
HALF = {"requests": {"cpu": "500m", "memory": "200Mi"},
        "limits": {"cpu": "500m", "memory": "200Mi"}}


def _pod(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d", "namespace": "ai"},
            "spec": spec}


def test_two_app_containers_with_one_name_are_an_error_at_the_second_name():
    code, results, _ = render(config(), _pod({"containers": [
        {"name": "app", "image": "a:1", "resources": GUARANTEED_4},
        {"name": "app", "image": "a:1", "resources": GUARANTEED_4}]}))
    assert code == 1
    assert errors(results) == [
        "Duplicate value: \"app\": spec.containers[0] has the same name; " + DUP,
        "left unchanged because of the errors above"]


def test_an_init_container_named_like_an_app_container_is_the_duplicate_not_a_fraction():
    code, results, _ = render(config(), deployment(spec={
        "initContainers": [{"name": "app", "image": "f:1", "resources": HALF}],
        "containers": [{"name": "app", "image": "s:1", "resources": GUARANTEED_4}]}))
    assert code == 1
    assert errors(results) == [
        "Duplicate value: \"app\": spec.template.spec.containers[0] has the same name; "
        + DUP, "left unchanged because of the errors above"]
    assert not any("1/2" in m for _, m in results)


def test_ephemeral_containers_in_a_pod_manifest_are_refused_on_create():
    code, results, _ = render(config(), _pod({
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}))
    assert code == 1
    assert errors(results)[0] == (
        "Forbidden: cannot be set on create: the API server refuses the pod; ephemeral "
        "containers are added to a running pod with `kubectl debug` (the "
        "pods/ephemeralcontainers subresource), never in a manifest: remove "
        "spec.ephemeralContainers (" + SRC + " ValidatePodCreate; "
        "https://kubernetes.io/docs/concepts/workloads/pods/ephemeral-containers/)")


def test_ephemeral_containers_in_a_pod_template_are_refused():
    code, results, _ = render(config(), deployment(spec={
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}))
    assert code == 1
    assert errors(results)[0].startswith(
        "Forbidden: ephemeral containers not allowed in pod template: the API server "
        "refuses the workload;")
    assert "ValidatePodTemplateSpec" in errors(results)[0]


def test_a_fractional_cpu_request_is_printed_as_millicores():
    findings = judge(pod(ctr("app", "500m")), node())[3]
    assert [f.message for f in findings if "whole number" in f.message] == [
        "container 'app' is to be pinned but its cpu request 500m is not a whole number: it "
        "runs in the shared pool; request a whole number of CPUs (kubernetes/kubernetes "
        "pkg/kubelet/cm/cpumanager/policy_static.go guaranteedCPUs), or pin another "
        "container instead: annotate the workload or its pod template with "
        "krm-fn.dev/pinned-containers: \"NAME\" (or list it in "
        "spec.workloads.pinnedContainers)"]


# --- native sidecars (KEP-753): every supported version has them --------------------------

SIDECAR_POD = {"initContainers": [{"name": "proxy", "image": "p:1", "restartPolicy": "Always",
                                   "resources": {"limits": {"cpu": "500m", "memory": "200Mi"}}}],
               "containers": [{"name": "server", "image": "s:1", "resources": GUARANTEED_4}]}


def _sidecar_render(version: str, **pool) -> tuple[int, list]:
    from tests.test_verdict import POOL
    code, results, _ = render(config(version, {**POOL, **pool}), deployment(spec=SIDECAR_POD))
    return code, errors(results)


def test_a_native_sidecar_starts_on_every_supported_version():
    """SidecarContainers is GA and locked in 1.35 and 1.36 and gone (always on) in 1.37:
    nothing to check, no finding about the sidecar."""
    for version in ("1.35", "1.36", "1.37"):
        code, errs = _sidecar_render(version)
        assert [m for m in errs if "restartPolicy" in m] == [], version


def test_versions_without_native_sidecars_are_refused():
    """1.27 (no native sidecars) and 1.28 (SidecarContainers alpha, off) are outside the
    supported minors: the config is refused, naming them, before any pod is judged."""
    for version in ("1.27", "1.28"):
        code, errs = _sidecar_render(version)
        assert (code, errs) == (1, [
            f"invalid function config: Kubernetes {version} is not supported: krm-fn "
            f"supports Kubernetes 1.35, 1.36 and 1.37, as upstream maintains the three most "
            f"recent minor releases (https://kubernetes.io/releases/)"])


# --- Knative's kubernetes.podspec-fieldref flag and threads.source: downwardAPI -----------

KSVC = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
        "metadata": {"name": "predictor", "namespace": "ai"},
        "spec": {"template": {"spec": {"containers": [
            {"image": "model:1", "resources": {"requests": {"cpu": "2", "memory": "2Gi"},
                                               "limits": {"cpu": "2", "memory": "2Gi"}}}]}}}}
WRITTEN_AS_LITERAL = (
    "container 'user-container': threads.source is downwardAPI but the thread vars are "
    "written as the literal 2: Knative's webhook refuses env valueFrom.resourceFieldRef in a "
    "Knative pod (\"must not set the field(s)\"): set kubernetes.podspec-fieldref: "
    "\"enabled\" in ConfigMap knative-serving/config-features (read from ConfigMap "
    "knative-serving/config-features in the input), then krm-fn writes the resourceFieldRef "
    "(knative/serving pkg/apis/config/features.go, pkg/apis/serving/fieldmask.go "
    "EnvVarSourceMask)")


def _features(**data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "config-features", "namespace": "knative-serving",
                         "annotations": {"config.kubernetes.io/local-config": "true"}},
            "data": {"kubernetes.podspec-nodeselector": "enabled", **data}}


def _knative(service: dict, **data) -> tuple:
    cfg = config(workloads={"threads": {"source": "downwardAPI"},
                            "injection": {"knativeQueueProxy": {"cpu": "100m",
                                                                "memory": "128Mi"}}})
    code, results, items = render(cfg, service, _features(**data))
    env = items[0]["spec"]["template"]["spec"]["containers"][0].get("env") or []
    return code, results, env


def test_knative_downward_api_threads_are_literal_while_podspec_fieldref_is_off():
    code, results, env = _knative(KSVC)
    assert code == 0
    assert [m for s, m in results if s == "warning" and "resourceFieldRef" in m] == [
        WRITTEN_AS_LITERAL]
    assert env[0] == {"name": "OMP_NUM_THREADS", "value": "2"}
    assert not any("valueFrom" in e for e in env)


def test_knative_downward_api_threads_are_resource_field_refs_when_podspec_fieldref_is_on():
    code, results, env = _knative(KSVC, **{"kubernetes.podspec-fieldref": "enabled"})
    assert code == 0
    assert env[0] == {"name": "OMP_NUM_THREADS", "valueFrom": {"resourceFieldRef": {
        "resource": "limits.cpu", "divisor": "1"}}}


def test_a_resource_field_ref_already_in_a_knative_service_is_refused_by_the_verdict():
    import copy
    svc = copy.deepcopy(KSVC)
    svc["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]
    code, results, _ = _knative(svc)
    assert code == 1
    assert [m for m in errors(results) if "in env valueFrom" in m] == [
        "Knative's webhook refuses resourceFieldRef in env valueFrom (\"must not set the "
        "field(s)\"): set kubernetes.podspec-fieldref: \"enabled\" in ConfigMap "
        "knative-serving/config-features (read from ConfigMap knative-serving/config-features "
        "in the input) (knative/serving pkg/apis/serving/fieldmask.go (PodSpecMask) and "
        "pkg/apis/config/features.go)"]


# --- ResourceQuota of the namespace (admission/resourcequota.py) --------------------------

QSRC = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
        "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go)")


def _quota(**hard) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "team", "namespace": "ai"}, "spec": {"hard": hard}}


def _quota_results(quota: dict, replicas=None, cpu="3") -> tuple:
    box = {"requests": {"cpu": cpu, "memory": "8Gi"}, "limits": {"cpu": cpu, "memory": "8Gi"}}
    d = deployment(spec={"containers": [{"name": "server", "image": "s:1", "resources": box}]})
    if replicas is not None:
        d["spec"]["replicas"] = replicas
    code, results, _ = render(config(), d, quota)
    return code, [(s, m) for s, m in results if m.startswith("ResourceQuota")]


def test_a_pod_raised_by_krm_fn_above_the_namespace_quota_is_an_error():
    code, found = _quota_results(_quota(**{"requests.cpu": "3", "limits.cpu": "3"}))
    assert code == 1
    assert found == [("error",
        "ResourceQuota team of namespace ai: one pod needs limits.cpu=4,requests.cpu=4, above "
        "its hard limits.cpu=3,requests.cpu=3: the API server refuses every pod (\"exceeded "
        "quota: team, requested: limits.cpu=4,requests.cpu=4, ..., limited: "
        "limits.cpu=3,requests.cpu=3\"), whatever else runs in the namespace; raise the "
        "quota or lower the resources " + QSRC)]


def test_the_replicas_together_above_the_namespace_quota_are_an_error():
    code, found = _quota_results(_quota(cpu="10", memory="64Gi", pods="10"), replicas=3,
                                 cpu="4")
    assert code == 1
    assert found == [("error",
        "ResourceQuota team of namespace ai: 3 replicas need cpu=12, above its hard cpu=10: "
        "the API server refuses the pods after the first 2 (\"exceeded quota\"; the "
        "ReplicaSet reports FailedCreate), before counting the other pods of the namespace; "
        "raise the quota, lower the replicas or the resources " + QSRC)]


def test_replicas_within_the_namespace_quota_are_an_info_that_other_pods_count_too():
    code, found = _quota_results(_quota(**{"limits.memory": "64Gi", "pods": "4"}),
                                 replicas=2, cpu="4")
    assert code == 0
    assert found == [("info",
        "ResourceQuota team of namespace ai: 2 replicas use limits.memory=16Gi,pods=2 of its "
        "hard limits.memory=64Gi,pods=4; the other pods of the namespace count against it "
        "too, and krm-fn does not see them " + QSRC)]


def test_a_quota_of_another_namespace_or_scope_is_not_applied_and_said():
    other = _quota(cpu="1")
    other["metadata"]["namespace"] = "elsewhere"
    assert _quota_results(other) == (0, [])
    scoped = _quota(cpu="1")
    scoped["spec"]["scopes"] = ["Terminating"]
    assert _quota_results(scoped) == (0, [("info",
        "ResourceQuota team of namespace ai does not count this pod: scope Terminating does "
        "not match: the pod sets no activeDeadlineSeconds (https://kubernetes.io/docs/"
        "concepts/policy/resource-quotas/#quota-scopes; kubernetes/kubernetes pkg/quota/v1/"
        "evaluator/core/pods.go (podMatchesScopeFunc))")])
    # a scope with a resource the API server does not allow with it: the API server
    # refuses the quota (pipeline/refused.py says so), which counts no pod
    scoped["spec"]["scopes"] = ["BestEffort"]
    assert _quota_results(scoped) == (1, [])


def test_capacity_and_quota_messages_print_cpu_as_quantities():
    from krm_fn.admission.resourcequota import _show
    from krm_fn.quantity import NANO, format_cpu_rounded as cores
    assert (cores(30 * NANO), cores(3 * NANO // 2), _show("cpu", NANO // 2)) == (
        "30", "1500m", "500m")


# --- tolerations: validation.go ValidateTolerations (krm_fn/apivalidation.py) ---------------

TOL_SRC = (" (" + SRC + " ValidateTolerations; "
           "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/)")
_NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
              "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
              "[A-Za-z0-9]')")
# toleration -> [(field, the API server's words)] (tests/test_api_refusals.py's differential
# sends each to the real API server)
TOLERATIONS = {
    "exists-with-value": ({"key": "dedicated", "operator": "Exists", "value": "inference",
                           "effect": "NoSchedule"},
                          [("operator", "Invalid value: \"inference\": value must be empty when "
                                        "`operator` is 'Exists'")]),
    "empty-key-equal": ({"operator": "Equal", "value": "inference", "effect": "NoSchedule"},
                        [("operator", "Invalid value: \"Equal\": operator must be Exists when "
                                      "`key` is empty, which means \"match all values and all "
                                      "keys\"")]),
    "empty-key-no-operator": ({"effect": "NoSchedule"},
                              [("operator", "Invalid value: \"\": operator must be Exists when "
                                            "`key` is empty, which means \"match all values "
                                            "and all keys\"")]),
    "seconds-on-noschedule": ({"key": "a", "operator": "Exists", "effect": "NoSchedule",
                               "tolerationSeconds": 30},
                              [("effect", "Invalid value: \"NoSchedule\": effect must be "
                                          "'NoExecute' when `tolerationSeconds` is set")]),
    "seconds-without-effect": ({"key": "a", "operator": "Exists", "tolerationSeconds": 30},
                               [("effect", "Invalid value: \"\": effect must be 'NoExecute' "
                                           "when `tolerationSeconds` is set")]),
    "lowercase-operator": ({"key": "a", "operator": "exists"},
                           [("operator", "Unsupported value: \"exists\": supported values: "
                                         "\"Equal\", \"Exists\"")]),
    "lt-without-gate": ({"key": "a", "operator": "Lt", "value": "5"},
                        [("operator", "Unsupported value: \"Lt\": supported values: \"Equal\", "
                                      "\"Exists\", \"Lt\", \"Gt\"")]),
    "bad-effect": ({"key": "a", "operator": "Exists", "effect": "NoExec"},
                   [("effect", "Unsupported value: \"NoExec\": supported values: "
                               "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"")]),
    "bad-key": ({"key": "-gpu", "operator": "Exists"},
                [("key", "Invalid value: \"-gpu\": " + _NAME_PART)]),
    "bad-value": ({"key": "a", "value": "in ference"},
                  [("operator", "Invalid value: \"in ference\": a valid label must be an empty "
                                "string or consist of alphanumeric characters, '-', '_' or "
                                "'.', and must start and end with an alphanumeric character "
                                "(e.g. 'MyValue',  or 'my_value',  or '12345', "
                                "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
    "two-errors": ({"operator": "Equal", "value": "x", "effect": "Sometimes"},
                   [("operator", "Invalid value: \"Equal\": operator must be Exists when `key` "
                                 "is empty, which means \"match all values and all keys\""),
                    ("effect", "Unsupported value: \"Sometimes\": supported values: "
                               "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"")]),
}
VALID_TOLERATIONS = {
    "exists-any": {"operator": "Exists"},
    "exists-key": {"key": "example.com/gpu", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 60},
    "no-operator": {"key": "a", "value": "b", "effect": "PreferNoSchedule"},
    "equal-empty-value": {"key": "a", "operator": "Equal"},
}


def test_toleration_errors_are_the_api_servers_words():
    from krm_fn import apivalidation
    for name, (tol, want) in TOLERATIONS.items():
        got = [(f, said) for f, said, _ in apivalidation.toleration_errors(tol)]
        assert got == want, name
    for name, tol in VALID_TOLERATIONS.items():
        assert apivalidation.toleration_errors(tol) == [], name


def test_label_key_errors_name_each_part():
    from krm_fn import apivalidation
    assert apivalidation.label_key_errors("example.com/gpu") == []
    assert apivalidation.label_key_errors("a/b/c")[0].startswith(
        "a valid label key must consist of alphanumeric characters")
    assert apivalidation.label_key_errors("/gpu") == ["prefix part must be non-empty"]
    assert apivalidation.label_key_errors("Example.com/") == [
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
        "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "name part must be non-empty", _NAME_PART]
    assert apivalidation.label_key_errors("a" * 64) == [
        "name part must be no more than 63 bytes"]


def test_an_exists_toleration_with_a_value_fails_closed_before_any_rule():
    tol, _ = TOLERATIONS["exists-with-value"]
    code, results, _ = render(config(), deployment(spec={
        "tolerations": [{"operator": "Exists"}, tol],
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}]}))
    assert code == 1
    assert errors(results) == [
        "Invalid value: \"inference\": value must be empty when `operator` is 'Exists': the "
        "API server refuses the workload; Exists tolerates every value of the key: remove the "
        "value, or write operator: Equal" + TOL_SRC,
        "left unchanged because of the errors above"]


def test_every_refused_toleration_of_a_pod_is_named():
    code, results, _ = render(config(), _pod({
        "tolerations": [TOLERATIONS["seconds-on-noschedule"][0],
                        TOLERATIONS["lowercase-operator"][0]],
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}]}))
    assert code == 1
    assert errors(results)[0] == (
        "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` "
        "is set; spec.tolerations[1].operator: Unsupported value: \"exists\": supported "
        "values: \"Equal\", \"Exists\": the API server refuses the pod; tolerationSeconds "
        "only bounds how long a NoExecute taint is tolerated: remove it, or write effect: "
        "NoExecute; write Equal or Exists (the case matters)" + TOL_SRC)


# --- the real API server (`controlplane`, tests/conftest.py) ---------------------------------
# Each case rendered by krm-fn and sent as written to kube-apiserver v1.37.2 (kubectl apply
# --server-side --dry-run=server --validate=strict, tests/test_apiserver.py refusals):
# krm-fn fails closed exactly when the API server refuses, with the API server's words.

def _valid(obj: dict) -> dict:
    """`obj` (a tests.test_verdict deployment) with the selector and labels the API server
    needs."""
    obj["spec"]["selector"] = {"matchLabels": {"app": obj["metadata"]["name"]}}
    obj["spec"]["template"]["metadata"] = {"labels": {"app": obj["metadata"]["name"]}}
    return obj


def _tol_deployment(tols: list) -> dict:
    return _valid(deployment(name="tol", spec={
        "tolerations": tols,
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}]}))


def _api_lines(controlplane, obj: dict, tmp_path) -> list:
    from tests.test_apiserver import refusals
    return refusals(controlplane, [obj], tmp_path)


@pytest.mark.parametrize("name", list(TOLERATIONS) + list(VALID_TOLERATIONS))
def test_tolerations_against_the_api_server(controlplane, name, tmp_path):
    tol, want = TOLERATIONS.get(name, (VALID_TOLERATIONS.get(name), []))
    obj = _tol_deployment([tol])
    code, results, _ = render(config(), obj)
    lines = _api_lines(controlplane, obj, tmp_path)
    assert (code == 1) == bool(lines) == bool(want), (results, lines)
    text = "\n".join(lines)
    for field, said in want:
        assert f"spec.template.spec.tolerations[0].{field}: {said}" in text, text


_TOL_KEYS = st.sampled_from(["", "gpu", "example.com/gpu", "-gpu", "a/b/c", "Example.com/x"])
_TOL_VALUES = st.sampled_from(["", "x", "inference", "in ference", "1", "-a", "a" * 64])
_TOLERATION = st.fixed_dictionaries(
    {}, optional={"key": _TOL_KEYS,
                  "operator": st.sampled_from(["Exists", "Equal", "", "exists", "Gt"]),
                  "value": _TOL_VALUES,
                  "effect": st.sampled_from(["", "NoSchedule", "PreferNoSchedule",
                                             "NoExecute", "noexecute"]),
                  "tolerationSeconds": st.integers(0, 600)})


@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tol=_TOLERATION)
def test_generated_tolerations_against_the_api_server(controlplane, tol, tmp_path_factory):
    from krm_fn import apivalidation
    found = apivalidation.toleration_errors(tol)
    lines = _api_lines(controlplane, _tol_deployment([tol]), tmp_path_factory.mktemp("tol"))
    assert bool(found) == bool(lines), (tol, found, lines)
    text = "\n".join(lines)
    for field, said, _ in found:
        assert f"spec.template.spec.tolerations[0].{field}: {said}" in text, (tol, text)


# --- JSON types: a scalar written with another YAML type than its field's -----------------
# (krm_fn/apivalidation.py type_errors; render() writes a Python int unquoted and a str that
# a YAML reader would retype quoted, as kustomize passes them on)

TYPES_SRC = ("(https://github.com/kubernetes-sigs/yaml (YAML 1.1: https://yaml.org/type/); "
             "https://kubernetes.io/docs/reference/using-api/api-concepts/)")


def _typed(**over) -> dict:
    """A Deployment the API server accepts, with `over` put in: replicas, tolerations,
    env, args, node_selector, labels (the pod template's)."""
    obj = _valid(deployment(name="typed", spec={
        "tolerations": over.get("tolerations", [{"key": "a", "operator": "Exists"}]),
        "nodeSelector": over.get("node_selector", {"zone": "a"}),
        "containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4,
                        "args": over.get("args", ["--port", "8000"]),
                        "env": over.get("env", [{"name": "MODE", "value": "fast"}])}]}))
    if "replicas" in over:
        obj["spec"]["replicas"] = over["replicas"]
    obj["spec"]["template"]["metadata"]["labels"].update(over.get("labels", {}))
    return obj


# case -> (the Deployment's changes, the error krm-fn gives, or None when both accept it)
TYPED = {
    "replicas-quoted": ({"replicas": "3"}, (
        "\"3\" is quoted, which makes it a string to kubectl and the API server, but "
        "spec.replicas is an integer (int32): the API server refuses the workload "
        "(server-side apply: \"expected numeric (int or float), got ...\"; kubectl apply: "
        "\"json: cannot unmarshal string into Go struct field ... of type int32\"); write "
        "replicas: 3 without quotes " + TYPES_SRC)),
    "replicas-plain": ({"replicas": 3}, None),
    "replicas-whole-float": ({"replicas": 3.0}, None),
    "replicas-fraction": ({"replicas": 1.5}, (
        "1.5 is no whole number the API server can hold in spec.replicas, an integer "
        "(int32): it refuses the workload (\"json: cannot unmarshal number 1.5 into Go "
        "struct field ... of type int32\"); write a whole number " + TYPES_SRC)),
    "replicas-above-int32": ({"replicas": 3000000000}, (
        "3000000000 is no whole number the API server can hold in spec.replicas, an integer "
        "(int32): it refuses the workload (\"json: cannot unmarshal number 3000000000 into "
        "Go struct field ... of type int32\"); write a whole number " + TYPES_SRC)),
    "toleration-value-number": ({"tolerations": [{"key": "gpu", "operator": "Equal",
                                                  "value": 1, "effect": "NoSchedule"}]}, (
        "1 is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "number, but spec.template.spec.tolerations[0].value is a string: the API server "
        "refuses the workload (server-side apply: \"expected string, got ...\"; kubectl "
        "apply: \"json: cannot unmarshal number into Go struct field ... of type string\"); "
        "write it quoted: value: \"1\" " + TYPES_SRC)),
    "toleration-value-quoted": ({"tolerations": [{"key": "gpu", "operator": "Equal",
                                                  "value": "1", "effect": "NoSchedule"}]},
                                None),
    "toleration-seconds-quoted": ({"tolerations": [{"key": "gpu", "operator": "Exists",
                                                    "effect": "NoExecute",
                                                    "tolerationSeconds": "30"}]}, (
        "\"30\" is quoted, which makes it a string to kubectl and the API server, but "
        "spec.template.spec.tolerations[0].tolerationSeconds is an integer (int64): the API "
        "server refuses the workload (server-side apply: \"expected numeric (int or float), "
        "got ...\"; kubectl apply: \"json: cannot unmarshal string into Go struct field ... "
        "of type int64\"); write tolerationSeconds: 30 without quotes " + TYPES_SRC)),
    "env-value-boolean": ({"env": [{"name": "MODE", "value": True}]}, (
        "true is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "boolean, but spec.template.spec.containers[0].env[0].value is a string: the API "
        "server refuses the workload (server-side apply: \"expected string, got ...\"; "
        "kubectl apply: \"json: cannot unmarshal bool into Go struct field ... of type "
        "string\"); write it quoted: value: \"true\" " + TYPES_SRC)),
    "env-value-null": ({"env": [{"name": "MODE", "value": None}]}, None),
    "arg-number": ({"args": ["--port", 8000]}, (
        "8000 is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "number, but spec.template.spec.containers[0].args[1] is a string: the API server "
        "refuses the workload (server-side apply: \"expected string, got ...\"; kubectl "
        "apply: \"json: cannot unmarshal number into Go struct field ... of type string\"); "
        "write it quoted: args[1]: \"8000\" " + TYPES_SRC)),
    "node-selector-number": ({"node_selector": {"zone": 1}}, (
        "1 is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "number, but spec.template.spec.nodeSelector.zone is a string: the API server "
        "refuses the workload (server-side apply: \"expected string, got ...\"; kubectl "
        "apply: \"json: cannot unmarshal number into Go struct field ... of type string\"); "
        "write it quoted: zone: \"1\" " + TYPES_SRC)),
    "label-float": ({"labels": {"v": 1.5}}, (
        "1.5 is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "number, but spec.template.metadata.labels.v is a string: the API server refuses "
        "the workload (server-side apply: \"expected string, got ...\"; kubectl apply: "
        "\"json: cannot unmarshal number into Go struct field ... of type string\"); write "
        "it quoted: v: \"1.5\" " + TYPES_SRC)),
}


@pytest.mark.parametrize("name", list(TYPED))
def test_a_scalar_of_another_json_type_fails_closed_naming_the_field(name):
    over, want = TYPED[name]
    code, results, _ = render(config(), _typed(**over))
    assert code == (1 if want else 0), results
    assert errors(results) == ([want, "left unchanged because of the errors above"]
                               if want else [])


@pytest.mark.parametrize("name", list(TYPED))
def test_json_types_against_the_api_server(controlplane, name, tmp_path):
    over, want = TYPED[name]
    obj = _typed(**over)
    code, results, _ = render(config(), obj)
    lines = _api_lines(controlplane, obj, tmp_path)
    assert (code == 1) == bool(lines) == bool(want), (errors(results), lines)


def test_what_krm_fn_writes_is_not_judged_by_the_input_type():
    # an unquoted value krm-fn rewrites (the pool's nodeSelector value, quoted by placement)
    # is written with its right type: no error
    pool = {**POOL, "nodeSelector": {"pool": "1"}}
    obj = _typed(node_selector={"pool": 1})
    code, results, items = render(config(pool=pool), obj)
    assert code == 0, errors(results)
    assert items[0]["spec"]["template"]["spec"]["nodeSelector"]["pool"] == "1"


def test_the_input_types_are_read_where_the_input_wrote_them():
    # the check reads the input's own pod spec (pipeline/tune.py): a thread variable the
    # input wrote unquoted is rewritten by krm-fn (no error), the env entry after it is
    # still the input's and named at its own index, and the variables krm-fn appends
    # after both are never judged
    obj = _typed(env=[{"name": "OMP_NUM_THREADS", "value": 2},
                      {"name": "WORKERS", "value": 3}])
    code, results, items = render(config(), obj)
    assert code == 1
    assert errors(results) == [
        "3 is unquoted, which YAML 1.1 (kubectl, kustomize, the API server) reads as a "
        "number, but spec.template.spec.containers[0].env[1].value is a string: the API "
        "server refuses the workload (server-side apply: \"expected string, got ...\"; "
        "kubectl apply: \"json: cannot unmarshal number into Go struct field ... of type "
        "string\"); write it quoted: value: \"3\" " + TYPES_SRC,
        "left unchanged because of the errors above"]


# --- resources: validation.go validateResourceRequirements ---------------------------------

RES_SRC = ("(" + SRC + " validateResourceRequirements, ValidateResourceQuantityValue; "
           "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/)")
_C0 = "spec.template.spec.containers[0].resources"
# resources -> the API server's words (the first of them), or None when it accepts them
RESOURCES = {
    "gpu-fraction": ({"requests": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "500m"},
                      "limits": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "500m"}},
                     _C0 + ".limits[nvidia.com/gpu]: Invalid value: \"500m\": must be an "
                           "integer"),
    "extended-decimal": ({"requests": {"cpu": "4", "memory": "1Gi", "example.com/foo": "1.5"},
                          "limits": {"cpu": "4", "memory": "1Gi", "example.com/foo": "1.5"}},
                         _C0 + ".limits[example.com/foo]: Invalid value: \"1500m\": must be "
                               "an integer"),
    "gpu-whole": ({"requests": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "1"},
                   "limits": {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "1"}}, None),
    "negative-storage": ({"requests": {"cpu": "4", "memory": "1Gi",
                                       "ephemeral-storage": "-1Gi"},
                          "limits": {"cpu": "4", "memory": "1Gi"}},
                         _C0 + ".requests[ephemeral-storage]: Invalid value: \"-1Gi\": must be "
                               "greater than or equal to 0"),
    "storage-above-limit": ({"requests": {"cpu": "4", "memory": "1Gi",
                                          "ephemeral-storage": "2Gi"},
                             "limits": {"cpu": "4", "memory": "1Gi",
                                        "ephemeral-storage": "1Gi"}},
                            _C0 + ".requests: Invalid value: \"2Gi\": must be less than or "
                                  "equal to ephemeral-storage limit of 1Gi"),
    "hugepages-alone": ({"requests": {"hugepages-2Mi": "2Mi"},
                         "limits": {"hugepages-2Mi": "2Mi"}},
                        _C0 + ": Forbidden: HugePages require cpu or memory"),
}


def _with(res: str, amount: str, part: str = "limits") -> dict:
    """4 CPUs and 1Gi in requests and limits, and `res` of `amount` in both."""
    box = {"cpu": "4", "memory": "1Gi", res: amount}
    return {"requests": dict(box), "limits": box}


_REGEX = ("quantities must match the regular expression "
          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
# names and amounts the API server refuses that no rule reads (containerresources.py); the
# amounts fail when the API server decodes the object (ParseQuantity), the names in
# ValidateContainerResourceName
RESOURCES.update({
    "storage-10GB": (_with("ephemeral-storage", "10GB"),
                     _C0 + ".limits[ephemeral-storage]: Invalid value: \"10GB\": " + _REGEX),
    "gpu-word": (_with("nvidia.com/gpu", "one"),
                 _C0 + ".limits[nvidia.com/gpu]: Invalid value: \"one\": " + _REGEX),
    "hugepages-2MB": (_with("hugepages-2Mi", "2MB"),
                      _C0 + ".limits[hugepages-2Mi]: Invalid value: \"2MB\": " + _REGEX),
    "gpu-suffix": (_with("nvidia.com/gpu", "1e"),
                   _C0 + ".limits[nvidia.com/gpu]: Invalid value: \"1e\": unable to parse "
                         "quantity's suffix"),
    "gpu-finer-than-1n": (_with("nvidia.com/gpu", "1.0000000001"),
                          _C0 + ".limits[nvidia.com/gpu]: Invalid value: \"1001m\": must be "
                                "an integer"),
    "storage-spaced": (_with("ephemeral-storage", " 1Gi "), None),
    "name-Memory": (_with("Memory", "4Gi"),
                    _C0 + ".limits[Memory]: Invalid value: \"Memory\": must be a standard "
                          "resource type or fully qualified"),
    "name-storage": (_with("storage", "1Gi"),
                     _C0 + ".limits[storage]: Invalid value: \"storage\": must be a standard "
                           "resource for containers"),
    "name-requests-cpu": (_with("requests.cpu", "1"),
                          _C0 + ".limits[requests.cpu]: Invalid value: \"requests.cpu\": must "
                                "be a standard resource for containers"),
    "name-no-name-part": (_with("example.com/", "1"),
                          _C0 + ".limits[example.com/]: Invalid value: \"example.com/\": name "
                                "part must be non-empty"),
    "name-requests-hugepages": (_with("requests.hugepages-2Mi", "2Mi"),
                                _C0 + ".limits[requests.hugepages-2Mi]: Invalid value: "
                                      "\"requests.hugepages-2Mi\": must be a standard resource "
                                      "for containers"),
    "name-native-domain": (_with("kubernetes.io/foo", "1"), None),
    "name-extended": (_with("example.com/foo", "2"), None),
    # hostile test: read as kubectl and the API server read them (numbers.api_quantity)
    "extended-octal": (_with("example.com/dev", "010"),
                       _C0 + ".limits[example.com/dev]: Invalid value: \"010\": `010` is 8 to "
                             "kubectl"),
    "storage-list": (_with("ephemeral-storage", ["1Gi"]),
                     _C0 + ".limits[ephemeral-storage]: Invalid value: " + _REGEX),
})
# what the API server's answer holds where it is not krm-fn's words: a quantity it cannot
# parse fails the decoding of the whole object (no field path); one finer than 1m it stores
# rounded up (1001m here, as krm-fn says it) and then refuses as no integer
API_WORDS = {"storage-10GB": _REGEX, "gpu-word": _REGEX, "hugepages-2MB": _REGEX,
             "gpu-suffix": "unable to parse quantity's suffix",
             "gpu-finer-than-1n": "Invalid value: \"1001m\": must be an integer",
             "storage-list": "expected any scalar"}     # the server-side apply's words


def test_resource_refusals_in_the_api_servers_words():
    from krm_fn.admission.containerresources import resource_refusals
    for name, (res, want) in RESOURCES.items():
        spec = {"containers": [{"name": "app", "image": "a:1", "resources": res}]}
        got = [f.message for f in resource_refusals(spec, "spec.template.spec")]
        first = [re.split(r": (?:the API server|krm-fn does not read)", m)[0] for m in got]
        assert (first[0].startswith(want) if want else not first), (name, first)
    spec = {"containers": [{"name": "app", "resources": RESOURCES["gpu-fraction"][0]}]}
    assert resource_refusals(spec, "spec.template.spec")[1].message == (
        _C0 + ".requests[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer: the "
        "API server refuses the pod's container 'app'; an extended resource is counted in "
        "whole units: request a whole number of nvidia.com/gpu " + RES_SRC)


# krm-fn fails closed where the API server's reading depends on the quoting, which the
# tuned data no longer holds: an unquoted 010 is 8 to it, a quoted one 10 (this test sends
# it quoted, and the API server keeps 10)
FAIL_CLOSED = {"extended-octal"}


@pytest.mark.parametrize("name", sorted(set(RESOURCES) - FAIL_CLOSED))
def test_resources_against_the_api_server(controlplane, name, tmp_path):
    res, want = RESOURCES[name]
    obj = _valid(deployment(name="res", spec={"containers": [
        {"name": "app", "image": "a:1", "resources": res}]}))
    code, results, _ = render(config(), obj)
    lines = _api_lines(controlplane, obj, tmp_path)
    assert bool(lines) == bool(want), lines
    if want:
        assert code == 1 and any(m.startswith(want) for m in errors(results)), errors(results)
        assert any(API_WORDS.get(name, want) in line for line in lines), lines
    else:
        assert not any(f"{_C0}" in m for m in errors(results)), errors(results)


def test_a_word_in_an_integer_field_is_not_called_quoted():
    """Hostile test: `replicas: many` (plain) was said to be quoted; only a quoted number
    is (`"3"`)."""
    obj = deployment(name="web", spec={"containers": [
        {"name": "app", "image": "a:1", "resources": GUARANTEED_4}]})
    obj["spec"]["replicas"] = "many"
    code, results, _ = render(config(), obj)
    assert code == 1
    assert errors(results)[0].startswith(
        "\"many\" is a string to kubectl and the API server, but spec.replicas is an "
        "integer (int32)")


def test_a_pods_own_label_of_another_type_is_named_once():
    obj = _pod({"containers": [{"name": "app", "image": "a:1", "resources": GUARANTEED_4}]})
    obj["metadata"]["labels"] = {"v": 1}
    code, results, _ = render(config(), obj)
    assert code == 1
    assert [m.split(" is unquoted")[0] for m in errors(results)] == [
        "1", "left unchanged because of the errors above"]
    assert "the API server refuses the pod" in errors(results)[0]


def test_yaml_types_as_sigs_k8s_io_yaml_reads_them():
    from krm_fn.resourcelist import yaml_type
    plain = {"1": "number", "0x1F": "number", "1e3": "number", ".inf": "number",
             "1.5": "number", "yes": "boolean", "N": "boolean", "Off": "boolean",
             "~": "null", "": "null", "NULL": "null", "yEs": "string", "1:30": "string",
             "2001-12-14": "string", "x:1": "string", "--a": "string"}
    for text, want in plain.items():
        assert yaml_type(text, None, "tag:yaml.org,2002:str") == want, text
    assert yaml_type("1", '"', "tag:yaml.org,2002:str") == "string"
    assert yaml_type("yes", "|", "tag:yaml.org,2002:str") == "string"
    assert yaml_type("3", None, "tag:yaml.org,2002:int") == "number"


# a toleration whose scalars may be of any YAML type (an int value, a quoted
# tolerationSeconds): the whole render against the API server
_ANY_TOLERATION = st.fixed_dictionaries(
    {"key": st.sampled_from(["gpu", "", "a/b/c"])},
    optional={"operator": st.sampled_from(["Exists", "Equal"]),
              "value": st.sampled_from(["x", 1, "1", True, "yes", 1.5]),
              "effect": st.sampled_from(["NoExecute", "NoSchedule"]),
              "tolerationSeconds": st.sampled_from([30, "30", 1.5])})


@settings(max_examples=15, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tol=_ANY_TOLERATION)
def test_generated_typed_tolerations_against_the_api_server(controlplane, tol,
                                                            tmp_path_factory):
    obj = _tol_deployment([tol])
    code, results, _ = render(config(), obj)
    lines = _api_lines(controlplane, obj, tmp_path_factory.mktemp("tol"))
    assert (code == 1) == bool(lines), (tol, errors(results), lines)
