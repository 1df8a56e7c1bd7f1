"""Pod Security admission of the workload's own pod (krm_fn/admission/podsecurity.py and
pss_checks.py): in a Namespace of the input that enforces baseline or restricted, a pod
that breaks the level is refused by the API server, so the verdict is an error, with the
API server's own message. The checks are compared with the real API server's PodSecurity
admission (tests/controlplane, built at 1.37) on generated pods in Namespaces of every
level and of the versions where a check changes, message for message; and the Namespace
labels it refuses.

Coarser on purpose, by name: the containers a webhook injects are judged as the model
knows them (their securityContext is not modelled; Istio's istio-init has its own warning,
tests/test_pod_security_injection.py), and exemptions in the API server's PodSecurity
configuration are not seen.
"""
from __future__ import annotations

import copy
import os
import random

import pytest

from krm_fn.admission import podsecurity
from tests.test_verdict import NS_DEP, _ns_config, render

SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "1957"))
CASES = int(os.environ.get("KRM_FN_DIFF_EXAMPLES", "240"))
_LEVELS = ("baseline", "restricted")
# every release where a check starts or changes (allowPrivilegeEscalation 1.8, seccomp
# 1.19, capabilities 1.22, runAsUser 1.23, Windows 1.25, sysctls 1.27/1.29/1.32/1.37,
# seLinux 1.31, probe hosts 1.34, user namespaces and procMount 1.35), latest, unset, and
# one newer than the cluster
_VERSIONS = (None, "latest", "v1.0", "v1.7", "v1.8", "v1.18", "v1.19", "v1.22", "v1.23",
             "v1.24", "v1.25", "v1.27", "v1.29", "v1.31", "v1.32", "v1.34", "v1.35",
             "v1.36", "v1.37", "v1.99")


def _ns_name(level: str, version: str | None) -> str:
    return f"pss-{level}-{(version or 'unset').replace('.', '-')}"


def _labels(level: str, version: str | None) -> dict:
    out = {podsecurity.LABEL + "enforce": level}
    if version:
        out[podsecurity.LABEL + "enforce-version"] = version
    return out


def _maybe(rng: random.Random, p: float, value):
    return value if rng.random() < p else None


def _pick(rng: random.Random, *values):
    return rng.choice(values)


def _profile(rng: random.Random, kind: str) -> dict | None:
    t = _pick(rng, None, None, "RuntimeDefault", "Localhost", "Unconfined")
    if t is None:
        return None
    return {"type": t, "localhostProfile": "p.json" if kind == "seccomp" else "p"} \
        if t == "Localhost" else {"type": t}


def _selinux(rng: random.Random) -> dict | None:
    return _pick(rng, None, None, None, {"type": "container_t"}, {"type": "spc_t"},
                 {"type": "container_engine_t"}, {"user": "u", "role": "r"},
                 {"level": "s0:c1,c2"})


def _container_sc(rng: random.Random, windows: bool, userns: bool) -> dict:
    if windows:
        return {k: v for k, v in {"runAsNonRoot": _pick(rng, None, True, False)}.items()
                if v is not None}
    # privileged: true is refused by the API server without --allow-privileged (as this
    # control plane runs), before admission: the check is pinned by the unit tests below
    sc = {"privileged": _pick(rng, None, None, False),
          "runAsNonRoot": _pick(rng, None, True, False),
          "runAsUser": _pick(rng, None, None, 0, 1000),
          "seccompProfile": _profile(rng, "seccomp"),
          "appArmorProfile": _profile(rng, "apparmor"),
          "seLinuxOptions": _selinux(rng),
          "procMount": _pick(rng, None, "Default", "Unmasked") if userns else None}
    add = [c for c in ("NET_BIND_SERVICE", "CHOWN", "NET_ADMIN", "SYS_TIME", "NET_RAW")
           if rng.random() < 0.15]
    drop = [c for c in ("ALL", "NET_RAW") if rng.random() < 0.5]
    if rng.random() < 0.8:
        sc["capabilities"] = {k: v for k, v in (("add", add), ("drop", drop)) if v}
    # the API server refuses allowPrivilegeEscalation: false with privileged or
    # CAP_SYS_ADMIN (ValidateSecurityContext)
    if sc["privileged"] is not True:
        sc["allowPrivilegeEscalation"] = _pick(rng, None, True, False, False)
    return {k: v for k, v in sc.items() if v is not None}


def _probe(rng: random.Random) -> dict | None:
    host = _pick(rng, None, None, None, "10.0.0.1", "example.com")
    if rng.random() < 0.5:
        handler = {"httpGet": {"path": "/", "port": 8000, **({"host": host} if host else {})}}
    else:
        handler = {"tcpSocket": {"port": 8000, **({"host": host} if host else {})}}
    return handler if rng.random() < 0.5 else None


def _container(rng: random.Random, name: str, windows: bool, userns: bool,
               host_network: bool, init: bool = False) -> dict:
    c = {"name": name, "image": "registry.example/s:1"}
    if init:    # probes and lifecycle only on a sidecar (restartPolicy: Always)
        if rng.random() < 0.5:
            return {**c, "securityContext": _container_sc(rng, windows, userns)}
        c["restartPolicy"] = "Always"
    sc = _container_sc(rng, windows, userns)
    if sc or rng.random() < 0.5:
        c["securityContext"] = sc
    if not host_network and rng.random() < 0.2:
        c["ports"] = [{"containerPort": 8000, "hostPort": _pick(rng, 8000, 9100, 80)}]
    probe = _probe(rng)
    if probe:
        c[_pick(rng, "livenessProbe", "readinessProbe", "startupProbe")] = probe
    if rng.random() < 0.15:
        host = _pick(rng, "", "metadata.local")
        c["lifecycle"] = {"preStop": {"httpGet": {"path": "/q", "port": 8000,
                                                  **({"host": host} if host else {})}}}
    return c


_VOLUMES = ({"emptyDir": {}}, {"configMap": {"name": "c"}}, {"secret": {"secretName": "s"}},
            {"hostPath": {"path": "/dev/shm"}}, {"nfs": {"server": "n", "path": "/x"}},
            {"persistentVolumeClaim": {"claimName": "c"}}, {"downwardAPI": {"items": []}},
            {"projected": {"sources": []}}, {"iscsi": {"targetPortal": "10.0.0.2:3260",
                                                       "iqn": "iqn.2001-04.com.example:s",
                                                       "lun": 0}})
_SYSCTLS = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_reserved_ports",
            "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_rmem", "net.ipv4.tcp_notsent_lowat",
            "kernel.msgmax", "net.core.somaxconn")


def _pod_sc(rng: random.Random, windows: bool) -> dict:
    if windows:
        return {"runAsNonRoot": True} if rng.random() < 0.5 else {}
    sc = {"runAsNonRoot": _pick(rng, None, True, True, False),
          "runAsUser": _pick(rng, None, None, 0, 1000),
          "seccompProfile": _profile(rng, "seccomp"),
          "appArmorProfile": _profile(rng, "apparmor"), "seLinuxOptions": _selinux(rng)}
    names = [n for n in _SYSCTLS if rng.random() < 0.1]
    if names:
        sc["sysctls"] = [{"name": n, "value": "1"} for n in names]
    return {k: v for k, v in sc.items() if v is not None}


def _generated(rng: random.Random, k: int) -> dict:
    windows = rng.random() < 0.1
    userns = not windows and rng.random() < 0.15
    host = {} if (windows or userns) else {
        f: True for f in ("hostNetwork", "hostPID", "hostIPC") if rng.random() < 0.06}
    spec = {**host, "containers": [
        _container(rng, f"c{i}", windows, userns, bool(host.get("hostNetwork")))
        for i in range(rng.choice((1, 1, 2, 3)))]}
    if rng.random() < 0.3:
        spec["initContainers"] = [_container(rng, "init", windows, userns, False, True)]
    if windows:
        spec["os"] = {"name": "windows"}
    if userns:
        spec["hostUsers"] = False
    sc = _pod_sc(rng, windows)
    if sc or rng.random() < 0.3:
        spec["securityContext"] = sc
    vols = [dict(v, name=f"v{i}") for i, v in enumerate(_VOLUMES) if rng.random() < 0.12]
    if vols:
        spec["volumes"] = vols
    meta = {"name": f"p{k}", "namespace": _ns_name(rng.choice(_LEVELS),
                                                   rng.choice(_VERSIONS))}
    ann = {}
    for c in spec["containers"]:
        if not windows and "appArmorProfile" not in c.get("securityContext", {}) and \
                "appArmorProfile" not in sc and rng.random() < 0.15:
            ann["container.apparmor.security.beta.kubernetes.io/" + c["name"]] = _pick(
                rng, "unconfined", "runtime/default", "localhost/p")
    if ann:
        meta["annotations"] = ann
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _untyped(value):
    """`value` as krm-fn reads an item (krm_fn/yaml/load.py: every scalar its text)."""
    if isinstance(value, dict):
        return {k: _untyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untyped(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if value is None or isinstance(value, str) else str(value)


_SPELLED = {True: ("true", "True", "yes", "Yes", "on", "ON", "y"),
            False: ("false", "FALSE", "no", "No", "off", "n")}


def _spelled(value, rng: random.Random):
    """`value` written as kubectl reads it in YAML 1.1 spellings (sigs.k8s.io/yaml, go-yaml
    v2 resolve.go): booleans as yes / on / y ..., whole numbers as hex, octal-looking and
    float text (`0x50`, `080`, `80.0`: the JSON numbers 80 the API server decodes)."""
    if isinstance(value, dict):
        return {k: _spelled(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_spelled(v, rng) for v in value]
    if isinstance(value, bool):
        return rng.choice(_SPELLED[value])
    if isinstance(value, int):
        return rng.choice((str(value), hex(value), f"{value}.0", "0" + str(value)
                           if value and "8" in str(value) or "9" in str(value) else
                           str(value)))
    return value


def _krm_fn(pod: dict) -> str | None:
    """krm-fn's message for the generated pod at the 1.37 control plane, None if admitted;
    the same for the pod read typed, untyped (as a render reads it) and in YAML 1.1
    spellings of booleans and numbers."""
    level, rest = pod["metadata"]["namespace"][4:].split("-", 1)
    version = None if rest == "unset" else rest.replace("-", ".")
    policy = podsecurity.enforced(_labels(level, version), 37)
    said = set()
    spelled = _spelled(pod, random.Random(pod["metadata"]["name"]))
    spelled["metadata"], spelled["spec"]["containers"] = pod["metadata"], [
        {**c, "name": o["name"]} for c, o in zip(spelled["spec"]["containers"],
                                                 pod["spec"]["containers"])]
    for key in ("initContainers",):
        if key in pod["spec"]:
            spelled["spec"][key] = [{**c, "name": o["name"]} for c, o in
                                    zip(spelled["spec"][key], pod["spec"][key])]
    for p in (pod, _untyped(pod), spelled):
        found = podsecurity.violations(policy, p["metadata"].get("annotations"), p["spec"])
        said.add(podsecurity.message(policy, found) if found else None)
    assert len(said) == 1, said
    return said.pop()


def test_the_checks_against_the_api_servers_pod_security_admission(controlplane):
    for level in _LEVELS:
        for version in _VERSIONS:
            name = _ns_name(level, version)
            status, body = controlplane.request("POST", "/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": _labels(level, version)}})
            assert status in (201, 409), body
            controlplane.pod_namespace(name)
    rng = random.Random(SEED)
    wrong, invalid, refused, reasons = [], [], 0, set()
    for k in range(CASES):
        pod = _generated(rng, k)
        ns = pod["metadata"]["namespace"]
        status, body = controlplane.request(
            "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
        if status == 422:
            invalid.append(body.get("message"))
            continue
        want = None
        if status != 201:
            assert status == 403, (status, body)
            prefix = f'pods "{pod["metadata"]["name"]}" is forbidden: '
            assert body["message"].startswith(prefix + "violates PodSecurity"), body
            want = body["message"][len(prefix):]
            refused += 1
            reasons.update(r.split(" (")[0] for r in want.split(": ", 1)[1].split("), "))
        if _krm_fn(pod) != want:
            wrong.append((ns, pod["spec"], pod["metadata"].get("annotations"), want,
                          _krm_fn(pod)))
    assert not wrong, (f"KRM_FN_DIFF_SEED={SEED}", len(wrong), "\n".join(
        f"{w[0]}\napi:    {w[3]}\nkrm-fn: {w[4]}\nspec: {w[1]}" for w in wrong[:3]))
    judged = CASES - len(invalid)
    assert len(invalid) < CASES // 5, invalid[:5]           # the generator writes valid pods
    assert CASES // 5 < refused < judged, (refused, judged)  # both outcomes are reached
    assert len(reasons) >= 12, sorted(reasons)               # and most of the checks


@pytest.mark.parametrize("labels", [
    {"pod-security.kubernetes.io/enforce": "Restricted"},
    {"pod-security.kubernetes.io/enforce": "baseline",
     "pod-security.kubernetes.io/enforce-version": "v1.05"},
    {"pod-security.kubernetes.io/warn": "strict",
     "pod-security.kubernetes.io/audit-version": "1.30",
     "pod-security.kubernetes.io/enforce-version": "v2.0"},
    # past an int64: strconv.Atoi refuses it
    {"pod-security.kubernetes.io/enforce": "baseline",
     "pod-security.kubernetes.io/enforce-version": "v1.9223372036854775808"},
    {"pod-security.kubernetes.io/enforce": ""},
])
def test_the_namespace_labels_the_api_server_refuses(controlplane, labels):
    status, body = controlplane.request("POST", "/api/v1/namespaces?dryRun=All", {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "pss-labels", "labels": labels}})
    assert status == 422, body
    causes = [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]
    assert podsecurity.label_errors(labels) == causes


def _namespace(labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "serving", "labels": labels}}


def _errors(results: list) -> list:
    return [m for s, m in results if s == "error" and "Pod Security" in m]


def test_a_pod_the_namespace_refuses_is_an_error_with_the_api_servers_message():
    ns = _namespace({"pod-security.kubernetes.io/enforce": "restricted",
                     "pod-security.kubernetes.io/enforce-version": "v1.30"})
    _, results, _ = render(_ns_config({}), ns, copy.deepcopy(NS_DEP))
    assert _errors(results) == [
        "Namespace serving enforces Pod Security restricted (pod-security.kubernetes.io/"
        "enforce: restricted): the API server refuses the pod (violates PodSecurity "
        '"restricted:v1.30": allowPrivilegeEscalation != false (container "server" must set '
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
        '(container "server" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "server" must set '
        "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"server\" "
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"));'
        " set the fields the level asks for in the pod template, or label the Namespace "
        "with a level the pod meets "
        "(https://kubernetes.io/docs/concepts/security/pod-security-standards/)"]


def test_a_pod_meeting_the_level_gets_no_error_and_baseline_admits_the_plain_pod():
    assert _errors(render(_ns_config({}), _namespace(
        {"pod-security.kubernetes.io/enforce": "baseline"}), copy.deepcopy(NS_DEP))[1]) == []
    dep = copy.deepcopy(NS_DEP)
    spec = dep["spec"]["template"]["spec"]
    spec["securityContext"] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    for c in spec["containers"]:
        c["securityContext"] = {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}}
    assert _errors(render(_ns_config({}), _namespace(
        {"pod-security.kubernetes.io/enforce": "restricted"}), dep)[1]) == []


# What the control plane here refuses before admission (privileged containers without
# --allow-privileged; hostProcess without Windows nodes' validation rules), in the words of
# policy/check_privileged.go and check_windowsHostProcess.go, v0.37.2.
@pytest.mark.parametrize("spec, want", [
    ({"containers": [{"name": "a", "securityContext": {"privileged": True}},
                     {"name": "b", "securityContext": {"privileged": True}}]},
     'privileged (containers "a", "b" must not set securityContext.privileged=true)'),
    ({"securityContext": {"windowsOptions": {"hostProcess": True}},
      "containers": [{"name": "a", "securityContext": {
          "windowsOptions": {"hostProcess": True}}}]},
     'hostProcess (pod and container "a" must not set '
     'securityContext.windowsOptions.hostProcess=true)'),
])
def test_checks_the_control_plane_refuses_before_admission(spec, want):
    policy = podsecurity.enforced({"pod-security.kubernetes.io/enforce": "baseline"}, 37)
    assert podsecurity.message(policy, podsecurity.violations(policy, {}, spec)) == (
        'violates PodSecurity "baseline:latest": ' + want)


def test_the_checks_of_the_clusters_release_run_for_latest():
    """A 1.34 cluster's PodSecurity has no 1.35 procMount_restricted nor the 1.37 sysctls:
    latest is the cluster's newest release."""
    labels = {"pod-security.kubernetes.io/enforce": "baseline"}
    spec = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat",
                                             "value": "1"}]}, "containers": [{"name": "a"}]}
    old, new = podsecurity.enforced(labels, 34), podsecurity.enforced(labels, 37)
    assert (old.minor, new.minor) == (34, 37)
    assert podsecurity.violations(old, {}, spec) == [("forbidden sysctls",
                                                      "net.ipv4.tcp_notsent_lowat")]
    assert podsecurity.violations(new, {}, spec) == []


def test_no_check_and_no_import_without_a_pod_security_label():
    for labels in (None, {}, {"pod-security.kubernetes.io/enforce": "privileged"},
                   {"pod-security.kubernetes.io/warn": "restricted"}):
        assert podsecurity.enforced(labels, 37) is None


def test_the_namespaces_refused_labels_are_an_error_on_its_pods():
    ns = _namespace({"pod-security.kubernetes.io/enforce": "Baseline"})
    _, results, _ = render(_ns_config({}), ns, copy.deepcopy(NS_DEP))
    assert [m for s, m in results if s == "error" and "Pod Security labels" in m] == [
        "the API server refuses Namespace serving's Pod Security labels (metadata.labels"
        "[pod-security.kubernetes.io/enforce]: Invalid value: \"Baseline\": must be one of "
        "privileged, baseline, restricted): the Namespace is not created, and where it "
        "exists already its pods are checked at restricted "
        "(https://kubernetes.io/docs/concepts/security/pod-security-admission/)"]


_ATOMS = (None, True, False, 0, 1, "", "x", "true", "0", "0x0", "Unconfined", "ALL", [], {},
          1.5, "localhost/ x", "localhost/")
_KEYS = ("securityContext", "containers", "initContainers", "volumes", "hostNetwork",
         "hostUsers", "os", "name", "privileged", "capabilities", "add", "drop", "runAsUser",
         "runAsNonRoot", "seccompProfile", "type", "appArmorProfile", "seLinuxOptions", "user",
         "procMount", "windowsOptions", "hostProcess", "sysctls", "ports", "hostPort",
         "livenessProbe", "httpGet", "host", "lifecycle", "preStop", "hostPath",
         "allowPrivilegeEscalation")


def test_any_shape_of_spec_and_labels_is_judged_without_an_internal_error():
    rng = random.Random(SEED)

    def junk(depth: int):
        if depth > 4 or rng.random() < 0.3:
            return rng.choice(_ATOMS)
        if rng.random() < 0.5:
            return [junk(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(_KEYS): junk(depth + 1) for _ in range(rng.randint(0, 5))}
    for _ in range(3000):
        labels = {podsecurity.LABEL + "enforce": rng.choice(("baseline", "restricted", "x", None)),
                  podsecurity.LABEL + "enforce-version": rng.choice(("v1.0", "latest", None, 3))}
        ann = rng.choice(({}, {"container.apparmor.security.beta.kubernetes.io/x": "unconfined"},
                          {1: 2}, None))
        for minor in (18, 35, 37):
            policy = podsecurity.enforced(labels, minor)
            assert isinstance(podsecurity.message(policy, podsecurity.violations(
                policy, ann, junk(0))), str)
            assert isinstance(podsecurity.label_errors(labels), list)


def test_the_largest_int64_version_is_valid_and_null_labels_are_empty():
    assert podsecurity.label_errors({podsecurity.LABEL + "enforce-version":
                                     "v1.9223372036854775807"}) == []
    assert podsecurity.label_errors({podsecurity.LABEL + "enforce": None}) == [
        "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"\": must be "
        "one of privileged, baseline, restricted"]


@pytest.mark.parametrize("labels, tail", [
    # an invalid enforce level: the pods of an existing Namespace are checked at restricted
    ({"pod-security.kubernetes.io/enforce": "Baseline"},
     ", and where it exists already its pods are checked at restricted"),
    # an invalid version or warn label: the valid enforce level stands (PolicyToEvaluate)
    ({"pod-security.kubernetes.io/enforce": "privileged",
      "pod-security.kubernetes.io/enforce-version": "v9"}, ""),
    ({"pod-security.kubernetes.io/warn": "strict"}, ""),
])
def test_the_label_error_says_what_an_existing_namespace_enforces(labels, tail):
    found = podsecurity.findings("serving", labels, {}, {"containers": [{"name": "a"}]}, 37,
                                 "spec")
    assert [f.message for f in found][:1] == [
        f"the API server refuses Namespace serving's Pod Security labels ("
        f"{'; '.join(podsecurity.label_errors(labels))}): the Namespace is not created{tail} "
        f"(https://kubernetes.io/docs/concepts/security/pod-security-admission/)"]


def test_an_annotation_equal_to_the_pods_profile_with_a_null_field_is_not_copied():
    spec = {"securityContext": {"appArmorProfile": {"type": "Unconfined",
                                                    "localhostProfile": None}},
            "containers": [{"name": "server"}]}
    ann = {"container.apparmor.security.beta.kubernetes.io/server": "unconfined"}
    policy = podsecurity.enforced({"pod-security.kubernetes.io/enforce": "baseline"}, 37)
    assert podsecurity.message(policy, podsecurity.violations(policy, ann, spec)) == (
        'violates PodSecurity "baseline:latest": forbidden AppArmor profiles (pod and '
        'annotation must not set AppArmor profile type to "Unconfined", '
        '"container.apparmor.security.beta.kubernetes.io/server="unconfined"")')


def _restricted_ns() -> dict:
    return _namespace({"pod-security.kubernetes.io/enforce": "restricted"})


def test_a_knative_container_is_named_as_knative_names_it():
    ksvc = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
            "metadata": {"name": "k", "namespace": "serving"},
            "spec": {"template": {"spec": {"containers": [
                {"image": "s:1", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}}}}
    msgs = _errors(render(_ns_config({}), _restricted_ns(), ksvc)[1])
    assert msgs and 'container "user-container" must set' in msgs[0], msgs


def test_templates_a_controller_completes_are_not_judged_alone():
    """COARSER on purpose: an LLMInferenceService's template is merged over KServe's
    LLMInferenceServiceConfig, a `model` predictor's container over its ServingRuntime's,
    whose securityContext krm-fn does not see."""
    llm = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
           "metadata": {"name": "l", "namespace": "serving"},
           "spec": {"model": {"uri": "pvc://m"}, "template": {"containers": [
               {"name": "main", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}}}
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "m", "namespace": "serving"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"},
                                             "resources": {"limits": {"cpu": "4",
                                                                      "memory": "8Gi"}}}}}}
    for obj in (llm, isvc):
        assert _errors(render(_ns_config({}), _restricted_ns(), obj)[1]) == []


def test_a_custom_kserve_predictor_is_judged():
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "m", "namespace": "serving"},
            "spec": {"predictor": {"containers": [
                {"name": "kserve-container", "image": "s:1",
                 "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}}}
    msgs = _errors(render(_ns_config({}), _restricted_ns(), isvc)[1])
    assert msgs and 'container "kserve-container" must set' in msgs[0], msgs


def test_the_refusal_is_shown_beside_a_rules_error():
    """Pod Security is independent of the rules: fixing their error leaves the refusal, so
    one render names both."""
    dep = copy.deepcopy(NS_DEP)
    dep["spec"]["template"]["spec"]["hostNetwork"] = True
    del dep["spec"]["template"]["spec"]["containers"][0]["resources"]
    results = render(_ns_config({}), _namespace(
        {"pod-security.kubernetes.io/enforce": "baseline"}), dep)[1]
    assert any(m.startswith("Namespace serving enforces Pod Security baseline") and
               "host namespaces (hostNetwork=true)" in m for m in _errors(results)), results
