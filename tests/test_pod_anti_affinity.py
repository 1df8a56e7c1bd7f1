"""Required pod anti-affinity on the pool's nodes (hostile testing: it was not modelled):
a pod whose anti-affinity selects a DaemonSet pod of the pool fits no node (an error, not a
pinned verdict), one that selects its own replicas runs one per node, and a DaemonSet pod's
terms that select the workload keep it off every node (admission/podaffinity.py; the real
kube-scheduler judges the model in tests/test_scheduler_differential.py)."""
from __future__ import annotations

from tests.test_verdict import config, deployment, render, verdicts

HOST = "kubernetes.io/hostname"


def _agent(affinity=None) -> dict:
    spec = {"containers": [{"name": "e", "image": "e:1", "resources": {
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "100m", "memory": "64Mi"}}}]}
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "monitoring"},
            "spec": {"template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}}}


def _anti(selector: dict, **term) -> dict:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOST, "labelSelector": selector, **term}]}}


def _server(affinity=None, labels=None) -> dict:
    spec = {"containers": [{"name": "server", "image": "srv:1", "resources": {
        "requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}]}
    if affinity:
        spec["affinity"] = affinity
    return deployment(spec=spec, labels=labels or {"app": "srv"})


CFG = config(selector={"kinds": ["Deployment"]})
NO_ROOM = ("no node of pool 'p' has room for one pod of Deployment srv beside the pods of "
           "DaemonSet agent on every node: pod anti-affinity (InterPodAffinity: node(s) ")


def test_anti_affinity_to_a_daemonset_of_the_pool_fails_the_render():
    code, results, _ = render(CFG, _agent(), _server(_anti({"matchLabels": {"app": "agent"}},
                                                           namespaceSelector={})))
    errors = [m for s, m in results if s == "error"]
    assert code == 1
    assert errors[0].startswith(NO_ROOM + "didn't match pod anti-affinity rules)"), errors
    assert errors[-1] == "left unchanged because of the errors above"


def test_a_term_in_the_pods_own_namespace_does_not_select_the_daemonset_elsewhere():
    code, results, _ = render(CFG, _agent(), _server(_anti({"matchLabels": {"app": "agent"}})))
    assert code == 0, results


def test_a_daemonsets_anti_affinity_that_selects_the_workload_keeps_it_off():
    agent = _agent(_anti({"matchExpressions": [{"key": "app", "operator": "In",
                                                "values": ["srv"]}]}, namespaces=["ai"]))
    code, results, _ = render(CFG, agent, _server())
    errors = [m for s, m in results if s == "error"]
    assert code == 1
    assert errors[0].startswith(NO_ROOM + "didn't satisfy existing pods anti-affinity "
                                          "rules)"), errors


def test_anti_affinity_to_its_own_replicas_runs_one_per_node():
    code, results, _ = render(CFG, _server(_anti({"matchLabels": {"app": "srv"}})))
    assert code == 0, results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 1 per node "
        "(pod anti-affinity)"]


def test_other_topology_keys_are_not_judged():
    # COARSER: the pool's nodes' zone labels are not known
    code, results, _ = render(CFG, _server(
        {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "topology.kubernetes.io/zone",
             "labelSelector": {"matchLabels": {"app": "srv"}}}]}}))
    assert code == 0 and "1 per node" not in verdicts(results)[0]


def _job(term: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train",
                                                                 "namespace": "ai"},
            "spec": {"parallelism": 4, "completions": 4, "template": {"spec": {
                "restartPolicy": "Never",
                "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": HOST, "labelSelector": term}]}},
                "containers": [{"name": "server", "image": "srv:1", "resources": {
                    "requests": {"cpu": "4", "memory": "8Gi"},
                    "limits": {"cpu": "4", "memory": "8Gi"}}}]}}}}


def test_labels_the_controller_adds_are_selected():
    # hostile testing: a Job's job-name (the API server writes it: job/strategy.go
    # generateSelector) and a Deployment's pod-template-hash were not the pods' labels, so
    # spreading one per node was read as 7 per node
    cfg = config(selector={"kinds": ["Job", "Deployment"]})
    for term in ({"matchLabels": {"job-name": "train"}},
                 {"matchExpressions": [{"key": "batch.kubernetes.io/controller-uid",
                                        "operator": "Exists"}]}):
        code, results, _ = render(cfg, _job(term))
        assert code == 0 and verdicts(results)[0].endswith("1 per node (pod anti-affinity)"), \
            (term, verdicts(results))
    code, results, _ = render(cfg, _server(_anti({"matchExpressions": [
        {"key": "pod-template-hash", "operator": "Exists"}]})))
    assert verdicts(results)[0].endswith("1 per node (pod anti-affinity)"), results
