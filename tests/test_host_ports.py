"""Host ports (hostile testing): a pod that asks for one host port twice is refused by the
API server (validation.go checkHostPortConflicts: across the containers, and within each
init container; protocol TCP when not written; under hostNetwork every container port is
a host port), so krm-fn fails the render instead of giving a pinned verdict. Judged by the
real API server (tests/controlplane): it refuses exactly the pods krm-fn refuses, at the
field krm-fn names. And on the node: a host port holds one pod per node, and one that a
DaemonSet of the pool holds leaves no room at all (the scheduler's NodePorts filter; the
fit itself is judged by the real kube-scheduler in tests/test_scheduler_differential.py).
"""
from __future__ import annotations

import pytest

from tests.test_verdict import GUARANTEED_4, config, deployment, render, verdicts


def _c(name: str, *ports: dict, **extra) -> dict:
    return {"name": name, "image": f"{name}:1", "resources": GUARANTEED_4,
            "ports": list(ports), **extra}


# (pod spec, the field of the duplicate or None when the pod is valid)
CASES = [
    ({"containers": [_c("a", {"containerPort": 80, "hostPort": 8080}),
                     _c("b", {"containerPort": 81, "hostPort": 8080})]},
     "spec.containers[1].ports[0].hostPort"),
    ({"containers": [_c("a", {"containerPort": 80, "hostPort": 8080},
                        {"containerPort": 81, "hostPort": 8080, "protocol": "TCP"})]},
     "spec.containers[0].ports[1].hostPort"),
    ({"containers": [_c("a", {"containerPort": 80, "hostPort": 8080},
                        {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"})]}, None),
    ({"containers": [_c("a", {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}),
                     _c("b", {"containerPort": 81, "hostPort": 8080,
                              "hostIP": "10.0.0.2"})]}, None),
    # init containers run one by one: each is checked alone, not against the others
    ({"initContainers": [_c("i", {"containerPort": 80, "hostPort": 8080})],
      "containers": [_c("a", {"containerPort": 80, "hostPort": 8080})]}, None),
    ({"initContainers": [_c("i", {"containerPort": 80, "hostPort": 9000},
                            {"containerPort": 81, "hostPort": 9000})],
      "containers": [_c("a")]}, "spec.initContainers[0].ports[1].hostPort"),
    # hostNetwork: each container port is its host port (defaultHostNetworkPorts)
    ({"hostNetwork": True, "containers": [_c("a", {"containerPort": 9100}),
                                          _c("b", {"containerPort": 9100})]},
     "spec.containers[1].ports[0].hostPort"),
    ({"containers": [_c("a", {"containerPort": 9100}), _c("b", {"containerPort": 9100})]},
     None),
]


def _pod(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ai"},
            "spec": spec}


@pytest.mark.parametrize("spec, field", CASES)
def test_a_host_port_asked_for_twice_fails_the_render(spec, field):
    code, results, items = render(config(), deployment(spec=spec))
    errors = [m for s, m in results if s == "error"]
    if field is None:
        assert code == 0 and not errors, errors
        return
    key = "UDP" if "UDP" in str(spec) else "TCP"
    port = 9100 if spec.get("hostNetwork") else 9000 if "initContainers" in str(spec) and \
        field.startswith("spec.initContainers") else 8080
    assert code == 1
    assert errors[0].startswith(f"Duplicate value: \"{key}//{port}\": "), errors
    assert errors[-1] == "left unchanged because of the errors above"
    assert all("will not run pinned" in v for v in verdicts(results))


@pytest.mark.parametrize("spec, field", CASES)
def test_the_api_server_refuses_the_same_pods(controlplane, spec, field):
    """Each case's pod, as krm-fn reads it (a Pod: spec.* paths), sent to the real API
    server (dry run): refused with "Duplicate value" at exactly the field krm-fn names,
    or accepted."""
    from tests.helpers import run_fn
    import yaml
    ns = controlplane.pod_namespace("ports")
    pod = {**_pod(spec), "metadata": {"name": "p", "namespace": ns}}
    code, body = controlplane.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
    causes = [(c.get("field"), c.get("reason")) for c in
              (body.get("details") or {}).get("causes", [])] if code != 201 else []
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [pod],
          "functionConfig": {**config(), "spec": {**config()["spec"],
                                                  "selector": {"kinds": ["Pod"]}}}}
    p = run_fn([], yaml.safe_dump(rl, sort_keys=False))
    ours = [r.get("field", {}).get("path") for r in yaml.safe_load(p.stdout)["results"]
            if r["severity"] == "error" and r["message"].startswith("Duplicate value")]
    if field is None:
        assert code == 201, body
        assert ours == []
    else:
        assert code == 422 and causes == [(field, "FieldValueDuplicate")], body
        assert ours == [field]


def _daemonset(port: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node-exporter", "namespace": "monitoring"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "e", "image": "e:1", "ports": [{"containerPort": port,
                                                          "hostPort": port}],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                               "limits": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def test_a_host_port_a_daemonset_holds_on_every_node_fails_the_render():
    """Hostile testing: the scheduler's NodePorts filter finds no node (the pool's
    DaemonSet holds the port on every one), so the pinned pod stays Pending: an error, not
    a pinned verdict (tests/test_scheduler_differential.py judges the Packer's host ports
    against the real kube-scheduler)."""
    cfg = config(selector={"kinds": ["Deployment"]})
    code, results, _ = render(cfg, _daemonset(9100), deployment(spec={"containers": [
        _c("server", {"containerPort": 9100, "hostPort": 9100})]}))
    assert code == 1
    assert [m for s, m in results if s == "error"] == [
        "no node of pool 'p' has room for one pod of Deployment srv beside the pods of "
        "DaemonSet node-exporter on every node: host port TCP/9100 (NodePorts: node(s) "
        "didn't have free ports for the requested pod ports); the scheduler leaves every "
        "replica Pending: free what it names on the pool's nodes or ask for less "
        "(https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/"
        "#kube-scheduler-implementation)",
        "left unchanged because of the errors above"]


def test_a_host_port_allows_one_pod_per_node():
    cfg = config(selector={"kinds": ["Deployment"]})
    code, results, _ = render(cfg, _daemonset(9100), deployment(spec={"containers": [
        _c("server", {"containerPort": 8080, "hostPort": 8080})]}))
    assert code == 0, results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 1 per node "
        "(host port TCP/8080)"]


def test_no_room_beside_the_daemonsets_cpu_fails_the_render():
    """The same class of fault without ports: DaemonSet pods that leave less cpu than one
    pod asks for (0 per node was an info)."""
    ds = _daemonset(9100)
    ds["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "28", "memory": "64Mi"}, "limits": {"cpu": "28", "memory": "64Mi"}}
    code, results, _ = render(config(selector={"kinds": ["Deployment"]}), ds, deployment())
    errors = [m for s, m in results if s == "error"]
    assert code == 1
    assert errors[0].startswith("no node of pool 'p' has room for one pod of Deployment srv "
                                "beside the pods of DaemonSet node-exporter on every node: "
                                "allocatable cpu 30, 28 of it taken by DaemonSet pods: 4 "
                                "each (OutOfcpu)"), errors


def test_a_daemonset_pod_too_big_for_the_node_is_not_a_crash():
    # the fit goldens found it: a DaemonSet pod refused for cpu before anything was placed
    # read the DaemonSet share before it existed (AttributeError, an internal error)
    ds = _daemonset(9100)
    ds["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500", "memory": "64Mi"}, "limits": {"cpu": "500", "memory": "64Mi"}}
    code, results, _ = render(config(selector={"kinds": ["Deployment"]}), ds, deployment())
    assert code == 0, results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each)"]
