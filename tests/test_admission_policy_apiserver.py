"""spec.output.admissionPolicy against the real API server of the tests (tests/controlplane,
the release go.mod pins: v1.37).

- `test_the_policy_denies_exactly_the_pods_that_lost_their_pinning` (the shared control
  plane): the rendered Deployment's pod passes; mutating admission policies
  (admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, GA and served by default from
  1.36: k8s.io/kubernetes pkg/features/kube_features.go) stand in for the injectors and
  controllers that change a pod after the render: one adds a sidecar without resources,
  one a native sidecar (a restartable init container) without resources, one raises
  OMP_NUM_THREADS, one drops the nodeSelector, one sets the pinned container's
  cpu to an odd number on a full-pcpus-only pool, one adds pod-level resources (the static
  CPU Manager skips such a pod on 1.37 by default). Each pod is refused with the check's
  message under Deny, and created with that message as a warning under Warn; the pods of
  a workload that opts out and of a namespace outside the binding are created, mutated
  but unchecked. Pods are created with dryRun=All: admission runs in full, nothing is
  stored.
- `test_the_policy_type_checks_on_every_supported_version`: per supported minor (1.35,
  1.36, 1.37), a control plane of its own (no scheduler: no pod is created) whose
  kube-apiserver and kube-controller-manager emulate that minor (--emulated-version, KEP-4330 compatibility versions: a 1.37 binary
  emulates down to 1.34); the API server accepts the policy rendered for that
  kubernetesVersion (it compiles every expression in the CEL environment of that
  version's compatibility version), and the controller manager's
  validatingadmissionpolicy-status-controller finds no type-checking warning against
  the Pod schema (`status.typeChecking`). What emulation does not cover: a real 1.35 or
  1.36 binary's own code beyond what its emulated version switches.
- `test_every_golden_render_with_the_guard_on_is_accepted` (the shared control plane):
  every golden case rendered again with the option on, applied as tests/test_apiserver.py
  applies renders (server-side dry run, strict field validation): the label in the pod
  template of every workload kind, the policy and the binding are accepted.
"""
from __future__ import annotations

import json

import pytest
import yaml

from krm_fn.config.spec import VERSIONS
from krm_fn.guard import targets
from krm_fn.pipeline import transform
from tests.controlplane import cluster
from tests.helpers import TESTDATA, case_input, config_section, run_fn
from tests.test_apiserver import _applied, _documents, _golden_cases, assert_no_new_refusal

GUARDED, ELSEWHERE = "guarded", "elsewhere"
NAME = "test-guard"         # the policy's name on the shared control plane (deleted after)
INJECT = "test.krm-fn.dev/inject"          # the label each mutating policy below matches
SIDECAR_MESSAGE = ("container(s) mesh-proxy without cpu and memory requests equal to "
                   "limits: the pod is not Guaranteed")


def _config(version: str, actions: list) -> dict:
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "pin"},
            "spec": {"kubernetesVersion": version, "output": {"admissionPolicy": {
                "enabled": True, "name": NAME, "validationActions": actions,
                "namespaces": [GUARDED]}}}}


def _deployment(name: str, annotations: dict | None = None) -> dict:
    md = {"name": name, "namespace": GUARDED}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md,
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "server", "image": "example.com/server:1",
                    "resources": {"requests": {"cpu": "4", "memory": "1Gi"},
                                  "limits": {"cpu": "4", "memory": "1Gi"}}}]}}}}


def _render(version: str, actions: list) -> tuple:
    """(tuned guarded Deployment, tuned opted-out Deployment, policy, binding)."""
    out = transform([_deployment("llm"), _deployment("batch", {targets.OPT_OUT: "skip"})],
                    _config(version, actions), keep_tuned=True)
    assert not out.has_errors, [r.message for r in out.results if r.severity == "error"]
    by_kind = {o["kind"]: o for o in out.emitted}
    return (out.tuned[0], out.tuned[1], by_kind["ValidatingAdmissionPolicy"],
            by_kind["ValidatingAdmissionPolicyBinding"])


def _pod(deployment: dict, inject: str | None = None) -> dict:
    """A pod of `deployment`'s template, as its ReplicaSet would create it."""
    tpl = json.loads(json.dumps(deployment["spec"]["template"]))
    labels = dict(tpl["metadata"]["labels"])
    if inject:
        labels[INJECT] = inject
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": deployment["metadata"]["name"] + "-",
                         "labels": labels},
            "spec": tpl["spec"]}


def _mutation(name: str, mutation: dict) -> list:
    """A MutatingAdmissionPolicy applying `mutation` to pods labelled INJECT=`name`, and
    its binding."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "MutatingAdmissionPolicy", "metadata": {"name": f"test-{name}"},
              "spec": {"matchConstraints": {"resourceRules": [{
                  "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["pods"]}]},
                  "matchConditions": [{"name": "labelled", "expression":
                                       f"has(object.metadata.labels) && "
                                       f"object.metadata.labels[?'{INJECT}'].orValue('') == "
                                       f"'{name}'"}],
                  "failurePolicy": "Fail", "reinvocationPolicy": "Never",
                  "mutations": [mutation]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": f"test-{name}"},
               "spec": {"policyName": f"test-{name}"}}
    return [policy, binding]


def _apply_config(expression: str) -> dict:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def _json_patch(expression: str) -> dict:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


# name: (the mutation, what the guard's message says of the mutated pod)
MUTATIONS = {
    "sidecar": (_apply_config(
        "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'mesh-proxy', "
        "image: 'example.com/proxy:1'}]}}"), SIDECAR_MESSAGE),
    "native-sidecar": (_apply_config(
        "Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: "
        "'mesh-init', image: 'example.com/proxy:1', restartPolicy: 'Always'}]}}"),
        "container(s) mesh-init without cpu and memory requests equal to limits"),
    "threads": (_apply_config(
        "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'server', env: "
        "[Object.spec.containers.env{name: 'OMP_NUM_THREADS', value: '64'}]}]}}"),
        "thread-count variables changed in server: OMP_NUM_THREADS is '64', rendered '4' "
        "(the values rendered are for the pinned CPUs)"),
    "selector": (_json_patch("[JSONPatch{op: 'remove', path: '/spec/nodeSelector'}]"),
                 "nodeSelector krm-fn.dev/cpu-pinning=true of its node pool is missing"),
    "cpu": (_json_patch(
        "[JSONPatch{op: 'replace', path: '/spec/containers/0/resources/limits/cpu', "
        "value: '3'}, JSONPatch{op: 'replace', path: "
        "'/spec/containers/0/resources/requests/cpu', value: '3'}]"),
        "pinned container(s) server (cpu 3, rendered 4) need a whole number of CPUs, a "
        "multiple of 2 (the pool runs full-pcpus-only with 2 threads per core)"),
    # hostile testing: limits of 0 equal to requests of 0 passed the check, but ComputePodQOS
    # counts only limits above zero, so the pod is Burstable
    "zero": (_apply_config(
        "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'zero', image: "
        "'example.com/zero:1', resources: Object.spec.containers.resources{requests: "
        "{'cpu': '0', 'memory': '64Mi'}, limits: {'cpu': '0', 'memory': '64Mi'}}}]}}"),
        "container(s) zero without cpu and memory requests equal to limits"),
    "pod-level": (_apply_config(
        "Object{spec: Object.spec{resources: Object.spec.resources{limits: {'cpu': '4', "
        "'memory': '1Gi'}}}}"),
        "pod-level spec.resources set: the static CPU Manager gives a pod with pod-level "
        "resources no exclusive CPUs"),
}


# name: whether a pod spec the API server returns shows that mutation
MUTATED = {
    "sidecar": lambda spec: "mesh-proxy" in [c["name"] for c in spec["containers"]],
    "native-sidecar": lambda spec: [c["name"] for c in spec.get("initContainers", [])] ==
    ["mesh-init"],
    "threads": lambda spec: {"name": "OMP_NUM_THREADS", "value": "64"} in
    spec["containers"][0].get("env", []),
    "selector": lambda spec: "nodeSelector" not in spec,
    "cpu": lambda spec: spec["containers"][0]["resources"]["limits"]["cpu"] == "3",
    "pod-level": lambda spec: "resources" in spec,
    "zero": lambda spec: "zero" in [c["name"] for c in spec["containers"]],
}


def _call(cp, method: str, path: str, body: object | None = None) -> tuple:
    """(HTTP status, decoded body, [Warning header values]) of one API request."""
    return cp.request_warned(method, path, body)


def _path(obj: dict) -> str:
    """The collection of the admissionregistration object `obj`."""
    plural = {"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
              "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
              "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
              "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings"}[obj["kind"]]
    return f"/apis/admissionregistration.k8s.io/v1/{plural}"


def _create(cp, obj: dict) -> dict:
    """Create (or replace) the cluster-scoped admissionregistration object `obj`."""
    base = _path(obj)
    status, body, _ = _call(cp, "POST", base, obj)
    if status == 409:
        _, old, _ = _call(cp, "GET", f"{base}/{obj['metadata']['name']}")
        obj = {**obj, "metadata": {**obj["metadata"],
                                   "resourceVersion": old["metadata"]["resourceVersion"]}}
        status, body, _ = _call(cp, "PUT", f"{base}/{obj['metadata']['name']}", obj)
    assert status in (200, 201), (status, body)
    return body


def _try_pod(cp, namespace: str, pod: dict) -> tuple:
    """(status, body, warnings) of creating `pod` with dryRun=All (admission in full, the
    pod not stored)."""
    return _call(cp, "POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", pod)


def _containers(body: dict) -> list:
    return [c["name"] for c in body["spec"]["containers"]]


def _delete(cp, obj: dict) -> None:
    """Delete the cluster-scoped admissionregistration object `obj` (gone already: fine)."""
    status, body, _ = _call(cp, "DELETE", _path(obj) + "/" + obj["metadata"]["name"])
    assert status in (200, 404), (status, body)


def test_the_policy_denies_exactly_the_pods_that_lost_their_pinning(controlplane):
    cp = controlplane
    made = [o for name, (mutation, _) in MUTATIONS.items() for o in _mutation(name, mutation)]
    made += list(_render(f"{VERSIONS[-1][0]}.{VERSIONS[-1][1]}", ["Deny"])[2:])
    try:
        _deny_then_warn(cp)
    finally:        # the control plane is the session's: leave no policy behind
        for obj in reversed(made):
            _delete(cp, obj)


def _deny_then_warn(cp) -> None:
    for ns in (GUARDED, ELSEWHERE):
        cp.pod_namespace(ns)
    llm, batch, vap, vapb = _render(f"{VERSIONS[-1][0]}.{VERSIONS[-1][1]}", ["Deny"])
    assert targets.LABEL in llm["spec"]["template"]["metadata"]["labels"]
    assert targets.LABEL not in batch["spec"]["template"]["metadata"]["labels"]
    for name, (mutation, _) in MUTATIONS.items():
        for obj in _mutation(name, mutation):
            _create(cp, obj)
    # each mutation is in force once an unguarded pod comes back mutated
    for name, mutated in MUTATED.items():
        cluster.wait(f"the {name} mutation", lambda name=name, mutated=mutated: mutated(
            _try_pod(cp, ELSEWHERE, _pod(batch, name))[1]["spec"]))
    _create(cp, vap)
    _create(cp, vapb)
    cluster.wait("the policy in force", lambda: _try_pod(
        cp, GUARDED, _pod(llm, "sidecar"))[0] >= 400)
    status, body, warnings = _try_pod(cp, GUARDED, _pod(llm))
    assert (status, warnings) == (201, []), body
    for name, (_, says) in MUTATIONS.items():
        status, body, _ = _try_pod(cp, GUARDED, _pod(llm, name))
        assert status == 422, (name, body)
        assert ("ValidatingAdmissionPolicy 'test-guard' with binding 'test-guard' "
                "denied request: krm-fn admission policy: Deployment guarded/llm (node pool "
                "inference): ") in body["message"], (name, body["message"])
        assert says in body["message"], (name, body["message"])
    # a workload that opts out, and a namespace outside the binding: mutated, not checked
    status, body, warnings = _try_pod(cp, GUARDED, _pod(batch, "sidecar"))
    assert (status, warnings, _containers(body)) == (201, [], ["server", "mesh-proxy"])
    status, body, warnings = _try_pod(cp, ELSEWHERE, _pod(llm, "sidecar"))
    assert (status, warnings, _containers(body)) == (201, [], ["server", "mesh-proxy"])
    # Warn: the same pods are created, each with its message as a warning
    _create(cp, _render(f"{VERSIONS[-1][0]}.{VERSIONS[-1][1]}", ["Warn"])[3])
    cluster.wait("the binding's Warn", lambda: _try_pod(
        cp, GUARDED, _pod(llm, "sidecar"))[0] == 201)
    for name, (_, says) in MUTATIONS.items():
        status, body, warnings = _try_pod(cp, GUARDED, _pod(llm, name))
        assert status == 201, (name, body)
        assert len(warnings) == 1 and says in warnings[0], (name, warnings)
    assert _try_pod(cp, GUARDED, _pod(llm))[2] == []


def _type_checked(cp, name: str, timeout: float = 120) -> dict:
    """The policy's status once the status controller has type-checked its generation."""
    path = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}"

    def done():
        _, body, _ = _call(cp, "GET", path)
        status = body.get("status") or {}
        return status if status.get("observedGeneration") == \
            body["metadata"]["generation"] else None
    return cluster.wait(f"the type check of {name}", done, timeout)


@pytest.mark.parametrize("minor", [f"{v[0]}.{v[1]}" for v in VERSIONS])
def test_the_policy_type_checks_on_every_supported_version(minor):
    cluster.require_go()
    emulate = (f"--emulated-version={minor}",)
    cp = cluster.ControlPlane(controllers=("serviceaccount",
                                           "validatingadmissionpolicy-status-controller"),
                              extra_args={"kube-apiserver": emulate,
                                          "kube-controller-manager": emulate},
                              scheduler=False).start()
    try:
        _, version, _ = _call(cp, "GET", "/version")
        assert (version["emulationMajor"], version["emulationMinor"]) == \
            tuple(minor.split("."))
        _, _, vap, vapb = _render(minor, ["Deny"])
        created = _create(cp, vap)
        _create(cp, vapb)
        assert created["spec"]["validations"] == vap["spec"]["validations"]
        status = _type_checked(cp, vap["metadata"]["name"])
        assert status.get("typeChecking", {}).get("expressionWarnings") is None, status
        # the variables only some renders have: required node affinity (Knative)
        affine = _affinity_render(minor, "Deny")
        assert "nodeAffinity" in [v["name"] for v in affine[0]["spec"]["variables"]]
        for obj in affine[:2]:
            _create(cp, obj)
        status = _type_checked(cp, affine[0]["metadata"]["name"])
        assert status.get("typeChecking", {}).get("expressionWarnings") is None, status
        # the controller does check: a field the Pod schema lacks is a warning
        wrong = json.loads(json.dumps(vap))
        wrong["metadata"]["name"] = "wrong"
        wrong["spec"]["validations"][0]["expression"] = "object.spec.noSuchField == 1"
        _create(cp, wrong)
        warned = _type_checked(cp, "wrong")["typeChecking"]["expressionWarnings"]
        assert [w["fieldRef"] for w in warned] == ["spec.validations[0].expression"], warned
        assert [c for c in status.get("conditions") or [] if c.get("status") != "True"] \
            == [], status
    finally:
        cp.stop()


def _guarded_config(case: str) -> str:
    """The config.yaml of golden case `case` with spec.output.admissionPolicy on (a flat
    ConfigMap: `admissionPolicy: "true"`; no config: an InferenceTuning with only that)."""
    path = TESTDATA / case / "config.yaml"
    cfg = yaml.safe_load(path.read_text("utf-8")) if path.exists() else None
    if cfg is None:
        cfg = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
               "metadata": {"name": "pin"}, "spec": {}}
    if cfg.get("kind") == "ConfigMap":
        cfg.setdefault("data", {})["admissionPolicy"] = "true"
    else:
        spec = cfg.setdefault("spec", {})
        spec.setdefault("output", {}).setdefault("admissionPolicy", {})["enabled"] = True
    return yaml.safe_dump(cfg, sort_keys=False)


@pytest.mark.parametrize("case", _golden_cases())
def test_every_golden_render_with_the_guard_on_is_accepted(controlplane, case, tmp_path):
    """Every golden case that renders, rendered again with the option on: the labels krm-fn
    adds to the pod templates of every workload kind, and the policy and binding, are
    accepted by the API server with strict field validation (no label in a field a
    kind's schema lacks), and each label krm-fn wrote is in the policy's objectSelector."""
    text = (TESTDATA / case / "input.yaml").read_text("utf-8") + config_section(
        _guarded_config(case))
    p = run_fn([], text)
    assert p.returncode == 0, p.stderr
    out = yaml.safe_load(p.stdout)
    written = {r["field"]["proposedValue"] for r in out.get("results") or []
               if (r.get("tags") or {}).get("rule") == targets.RULE and "field" in r}
    policies = [o for o in out["items"] if o.get("kind") == "ValidatingAdmissionPolicy"]
    if written:
        (vap,) = policies
        selector = vap["spec"]["matchConstraints"]["objectSelector"]["matchExpressions"][0]
        assert written <= set(selector["values"])
    after = _applied(_documents(p.stdout))
    before = _applied(_documents(case_input(case)))
    assert_no_new_refusal(controlplane, before, after, tmp_path, f"golden/{case}")


def _with_env(name: str, env: list) -> dict:
    """_deployment(`name`) whose container starts with `env`."""
    d = _deployment(name)
    d["spec"]["template"]["spec"]["containers"][0]["env"] = env
    return d


def test_thread_variables_are_judged_as_the_container_sees_them(controlplane):
    """The kubelet keeps the last env entry of a name (makeEnvironmentVariables), and the
    API server drops an empty `value`: a rendered pod whose thread variable is repeated
    (the last a literal) or empty is not refused; a later entry that changes it is."""
    cp = controlplane
    cp.pod_namespace(GUARDED)
    omp = "OMP_NUM_THREADS"
    items = [_with_env("dup", [{"name": omp, "value": "8"}, {"name": omp, "value": "4"}]),
             _with_env("from", [{"name": omp, "valueFrom": {"resourceFieldRef": {
                 "resource": "limits.cpu"}}}, {"name": omp, "value": "4"}]),
             _with_env("empty", [{"name": omp, "value": ""}])]
    name = NAME + "-env"
    cfg = _config(f"{VERSIONS[-1][0]}.{VERSIONS[-1][1]}", ["Deny"])
    cfg["spec"]["output"]["admissionPolicy"]["name"] = name
    out = transform(items, cfg, keep_tuned=True)
    made = [o for o in out.emitted if o["kind"].startswith("ValidatingAdmissionPolicy")]
    changed = _pod(out.tuned[0])
    changed["spec"]["containers"][0]["env"].append({"name": omp, "value": "64"})
    try:
        for obj in made:
            _create(cp, obj)
        cluster.wait("the policy in force", lambda: _try_pod(cp, GUARDED, changed)[0] >= 400)
        assert "thread-count variables changed in server: OMP_NUM_THREADS is '64', " \
            "rendered '4' (" in _try_pod(cp, GUARDED, changed)[1]["message"]
        gone = _pod(out.tuned[0])       # the message says what the container holds instead
        env = gone["spec"]["containers"][0]["env"]
        env[:] = [e for e in env if e["name"] != omp]
        assert f"changed in server: {omp} is unset, rendered '4' (" in \
            _try_pod(cp, GUARDED, gone)[1]["message"]
        moved = _pod(out.tuned[0])
        moved["spec"]["containers"][0]["env"].append(
            {"name": omp, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
        assert f"changed in server: {omp} is set from valueFrom, rendered '4' (" in \
            _try_pod(cp, GUARDED, moved)[1]["message"]
        for i in range(len(items)):
            status, body, _ = _try_pod(cp, GUARDED, _pod(out.tuned[i]))
            assert status == 201, (items[i]["metadata"]["name"], body)
    finally:
        for obj in reversed(made):
            _delete(cp, obj)


def _affinity_render(minor: str, action: str) -> tuple:
    """(policy, binding, the rendered items) of golden case knative-affinity-flag with the
    guard on (name NAME-affinity, validationActions [action]) for kubernetesVersion
    `minor`: its Knative pods reach the pool through required node affinity."""
    cfg = _guarded_config("knative-affinity-flag").replace(
        "admissionPolicy:\n      enabled: true",
        f"admissionPolicy:\n      enabled: true\n      name: {NAME}-affinity\n"
        f"      validationActions: [{action}]").replace(
        "spec:\n", f"spec:\n  kubernetesVersion: '{minor}'\n", 1)
    assert f"{NAME}-affinity" in cfg and f"kubernetesVersion: '{minor}'" in cfg
    text = (TESTDATA / "knative-affinity-flag" / "input.yaml").read_text("utf-8")
    out = yaml.safe_load(run_fn([], text + config_section(cfg)).stdout)
    by_kind = {o["kind"]: o for o in out["items"]}
    return (by_kind["ValidatingAdmissionPolicy"], by_kind["ValidatingAdmissionPolicyBinding"],
            out["items"])


def test_a_pod_placed_through_node_affinity_is_judged_by_it(controlplane):
    """Golden case knative-affinity-flag (Knative allows affinity, not nodeSelector): the
    pod of the rendered Configuration, placed through its required node affinity, is
    created; the same pod without the affinity is refused."""
    cp = controlplane
    cp.pod_namespace("serving")
    vap, vapb, items = _affinity_render(f"{VERSIONS[-1][0]}.{VERSIONS[-1][1]}", "Deny")
    made = [vap, vapb]
    (conf,) = [o for o in items if o["kind"] == "Configuration"]
    placed = _pod(conf)
    unplaced = json.loads(json.dumps(placed))
    del unplaced["spec"]["affinity"]
    try:
        for obj in made:
            _create(cp, obj)
        cluster.wait("the policy in force", lambda: _try_pod(cp, "serving", unplaced)[0] >= 400)
        assert "required node affinity krm-fn.dev/cpu-pinning In [true] of its node pool is " \
               "missing" in _try_pod(cp, "serving", unplaced)[1]["message"]
        status, body, warnings = _try_pod(cp, "serving", placed)
        assert (status, warnings) == (201, []), body
    finally:
        for obj in reversed(made):
            _delete(cp, obj)
