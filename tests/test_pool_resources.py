"""Every DaemonSet's share of each node and every resource a pod requests, through the whole
function (pipeline/daemons.py, admission/capacity.py, admission/kubelet.py): exact verdict
lines, findings and pool summaries (issue #31 part 4)."""
from __future__ import annotations

from tests.test_verdict import POOL, config, deployment, errors, render, verdicts

POOL_44 = {**POOL, "reserved": {"cores": 2},
           "topology": {"sockets": 1, "numaNodesPerSocket": 1, "coresPerSocket": 24,
                        "threadsPerCore": 2, "memory": "192Gi"}}


def daemonset(name="agent", cpu="4", extra=None, node_selector=None) -> dict:
    res = {"cpu": cpu, "memory": "1Gi", **(extra or {})}
    spec = {"containers": [{"name": "agent", "image": "agent:1",
                            "resources": {"requests": res, "limits": res}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "ops"},
            "spec": {"template": {"spec": spec}}}


def summary(results) -> str:
    return next(m for _, m in results if m.startswith("node pool 'p': "))


def test_a_tuned_daemonset_takes_its_exclusive_cpus_on_every_node():
    # 44 allocatable CPUs: 11 pods of 4 alone; the tuned DaemonSet's pod takes 4 exclusive
    # CPUs on every node first, so 10 fit; its own verdict does not count itself
    code, results, _ = render(config(pool=POOL_44), daemonset(), deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs agent 4 on NUMA 0; "
        "11 per node (allocatable cpu 44: 4 each)",
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "10 per node (allocatable cpu 44, 4 of it taken by DaemonSet pods: 4 each)"]
    assert summary(results) == (
        "node pool 'p': 44 exclusive CPUs per node (NUMA 0: 44), 190.9Gi allocatable "
        "memory, less the pods of DaemonSet agent on every node; DaemonSet agent needs 4 "
        "exclusive CPUs (one on every node); Deployment srv needs 4 exclusive CPUs (10 per "
        "node, limited by allocatable cpu 44, 4 of it taken by DaemonSet pods: 4 each (OutOfcpu))")


def test_a_tuned_daemonset_counts_as_krm_fn_writes_it():
    # 3500m is rounded up to 4 (full-pcpus-only on 2 threads per core): the other pods
    # share what the tuned pod takes, not what the input wrote
    code, results, _ = render(config(pool=POOL_44), daemonset(cpu="3500m"),
                              deployment())
    assert code == 0
    assert verdicts(results)[1] == (
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "10 per node (allocatable cpu 44, 4 of it taken by DaemonSet pods: 4 each)")


def test_two_tuned_daemonsets_count_each_other_not_themselves():
    code, results, _ = render(config(pool=POOL_44), daemonset("a"), daemonset("b", cpu="8"),
                              deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs agent 4 on NUMA 0; "
        "9 per node (allocatable cpu 44, 8 of it taken by DaemonSet pods: 4 each)",
        "verdict: Guaranteed after admission; exclusive CPUs agent 8 on NUMA 0; "
        "5 per node (allocatable cpu 44, 4 of it taken by DaemonSet pods: 8 each)",
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "8 per node (allocatable cpu 44, 12 of it taken by DaemonSet pods: 4 each)"]


def test_a_tuned_daemonset_left_unchanged_counts_as_the_input_writes_it():
    # the DaemonSet's memory has no limit and no default: its rules fail, it is left
    # unchanged, and its pod (requests only) takes 6 CPUs of the shared pool on every node
    bad = daemonset(cpu="6")
    bad["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "6"}}
    code, results, _ = render(config(pool=POOL_44), bad, deployment())
    assert code == 1
    assert verdicts(results)[1] == (
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "9 per node (allocatable cpu 44, 6 of it taken by DaemonSet pods: 4 each)")


def test_an_untuned_daemonset_is_not_counted_twice():
    code, results, _ = render(config(pool=POOL_44, selector={"kinds": ["Deployment"]}),
                              daemonset(), deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "10 per node (allocatable cpu 44, 4 of it taken by DaemonSet pods: 4 each)"]


def _node(allocatable: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"pool": "p"},
                         "annotations": {"config.kubernetes.io/local-config": "true"}},
            "status": {"capacity": {"cpu": "48", "memory": "192Gi", **allocatable},
                       "allocatable": {"cpu": "47", "memory": "190Gi", **allocatable}}}


FROM_NODE = {**POOL_44, "topology": {"fromNode": "n1", "sockets": 1, "threadsPerCore": 2}}


def _gpu_deployment(gpus="1", storage=None) -> dict:
    res = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": gpus}
    if storage:
        res["ephemeral-storage"] = storage
    return deployment(spec={"containers": [{"name": "server", "image": "srv:1",
                                            "resources": {"requests": res, "limits": res}}]})


def test_gpus_of_the_node_limit_the_replicas_per_node():
    code, results, _ = render(config(pool=FROM_NODE), _node({"nvidia.com/gpu": "4"}),
                              _gpu_deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "4 per node (allocatable nvidia.com/gpu 4: 1 each)"]


def test_a_resource_the_node_does_not_list_never_schedules():
    code, results, _ = render(config(pool=FROM_NODE), _node({"ephemeral-storage": "100Gi"}),
                              _gpu_deployment(storage="200Gi"))
    assert code == 1
    assert errors(results) == [
        "the pod requests 200Gi ephemeral-storage but Node 'n1' (topology.fromNode of pool "
        "'p') has 100Gi in status.allocatable: it never schedules (Insufficient "
        "ephemeral-storage); lower the requests or use larger nodes (kubernetes/kubernetes "
        "pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest; "
        "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"
        "#local-ephemeral-storage)",
        "the pod requests 1 nvidia.com/gpu but Node 'n1' (topology.fromNode of pool 'p') "
        "lists none in status.allocatable: it never schedules (Insufficient "
        "nvidia.com/gpu); lower the requests or use larger nodes (kubernetes/kubernetes "
        "pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest; "
        "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"
        "#extended-resources)",
        "left unchanged because of the errors above"]
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "0 per node (allocatable ephemeral-storage 100Gi: 200Gi each); will not run "
        "pinned (see the errors)"]


def test_without_a_node_extended_resources_and_disk_are_an_info_and_do_not_limit():
    code, results, _ = render(config(pool=POOL_44), _gpu_deployment("2", "10Gi"))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "11 per node (allocatable cpu 44: 4 each)"]
    assert ("info", "the pod requests 10Gi ephemeral-storage, 2 nvidia.com/gpu: node pool "
            "'p' is not described by a Node (topology.fromNode), so krm-fn does not know "
            "how much of them a node has and does not count them in the replicas per "
            "node; the scheduler binds the pod only to a node whose status.allocatable has "
            "enough (Insufficient ephemeral-storage, Insufficient nvidia.com/gpu); give "
            "topology.fromNode (kubectl get node NAME -o yaml) to count them "
            "(kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go "
            "fitsRequest; https://kubernetes.io/docs/concepts/configuration/"
            "manage-resources-containers/#extended-resources, https://kubernetes.io/docs/"
            "concepts/configuration/manage-resources-containers/#local-ephemeral-storage)"
            ) in results


def test_a_tuned_daemonset_takes_its_gpu_on_every_node():
    code, results, _ = render(config(pool=FROM_NODE), _node({"nvidia.com/gpu": "4"}),
                              daemonset(extra={"nvidia.com/gpu": "1"}), _gpu_deployment())
    assert code == 0
    assert verdicts(results)[1] == (
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "3 per node (allocatable nvidia.com/gpu 4: 1 each)")


def test_an_extended_resource_request_without_a_limit_is_refused_by_the_api_server():
    res = {"cpu": "4", "memory": "8Gi"}
    dep = deployment(spec={"containers": [{"name": "server", "image": "srv:1", "resources": {
        "requests": {**res, "nvidia.com/gpu": "1"}, "limits": res}}]})
    code, results, _ = render(config(pool=FROM_NODE), _node({"nvidia.com/gpu": "4"}), dep)
    assert code == 1
    assert errors(results)[0] == (
        "container 'server' requests 1 nvidia.com/gpu without a limit: the API server "
        "refuses the pod (\"Limit must be set for non overcommitable resources\"): an "
        "extended resource or huge pages are never overcommitted, so requests must equal "
        "limits; set limits.nvidia.com/gpu to 1 (kubernetes/kubernetes "
        "pkg/apis/core/validation/validation.go validateResourceRequirements; "
        "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"
        "#extended-resources)")
    unequal = deployment(spec={"containers": [{"name": "server", "image": "srv:1",
                                               "resources": {
        "requests": {**res, "nvidia.com/gpu": "1"}, "limits": {**res, "nvidia.com/gpu": "2"}}}]})
    code, results, _ = render(config(pool=FROM_NODE), _node({"nvidia.com/gpu": "4"}), unequal)
    assert code == 1
    assert errors(results)[0].startswith(
        "container 'server' requests 1 nvidia.com/gpu but its limit is 2: the API server "
        "refuses the pod (\"must be equal to nvidia.com/gpu limit of 2\")")
