"""Every quota resource the API server counts pods against (pods.go MatchingResources,
podComputeUsageHelper): ephemeral-storage, hugepages-<size>, requests.<extended resource>,
count/pods beside cpu, memory and pods; a `spec.hard` name it counts no pod against gets an
info. tests/test_quota_differential.py draws the same names against the real API server."""
from __future__ import annotations

import pytest

from krm_fn.admission import quotatotal
from krm_fn.admission import resourcequota as rq
from krm_fn.admission.model import INIT, SIDECAR
from krm_fn.quantity import NANO
from tests.admission.kit import GI, MI, ctr, pod
from tests.test_verdict import config, deployment, errors, render

SRC = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
       "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go)")
EXT = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/"
       "#resource-quota-for-extended-resources; kubernetes/kubernetes "
       "pkg/quota/v1/evaluator/core/pods.go MatchingResources, "
       "isExtendedResourceNameForQuota)")


@pytest.mark.parametrize("key, want", [
    ("cpu", ("requests", "cpu")), ("limits.memory", ("limits", "memory")),
    ("ephemeral-storage", ("requests", "ephemeral-storage")),
    ("requests.ephemeral-storage", ("requests", "ephemeral-storage")),
    ("limits.ephemeral-storage", ("limits", "ephemeral-storage")),
    ("hugepages-2Mi", ("requests", "hugepages-2Mi")),
    ("requests.hugepages-1Gi", ("requests", "hugepages-1Gi")),
    ("requests.nvidia.com/gpu", ("requests", "nvidia.com/gpu")),
    ("count/pods", (None, "count/pods")), ("pods", (None, "pods")),
    # not counted for pods
    ("limits.hugepages-2Mi", None), ("limits.nvidia.com/gpu", None), ("nvidia.com/gpu", None),
    ("requests.example.kubernetes.io/foo", None), ("services", None),
    ("count/deployments.apps", None), ("requests.storage", None),
])
def test_the_quota_names_pods_go_counts(key, want):
    assert rq.counted(key) == want


def test_quota_names_tell_other_objects_from_names_meant_for_pods():
    q = {"metadata": {"name": "q", "namespace": "ai"}, "spec": {"hard": {
        "services": "1", "count/deployments.apps": "1", "count/pods": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "1Gi", "requests.storage": "1",
        "nvidia.com/gpu": "1", "limits.nvidia.com/gpu": "1", "limits.hugepages-2Mi": "1",
        "requests.deviceclass.resource.kubernetes.io/gpu": "1"}}}
    assert rq.quota_names(q) == (["nvidia.com/gpu", "limits.nvidia.com/gpu",
                                  "limits.hugepages-2Mi"],
                                 ["requests.deviceclass.resource.kubernetes.io/gpu"])
    assert quotatotal.unmodelled_names(q) == [
        "ResourceQuota q of namespace ai: the API server counts no pod against "
        "nvidia.com/gpu, limits.nvidia.com/gpu: a quota limits an extended resource only as "
        "requests.<name> (and counts no name of the kubernetes.io domain), so krm-fn does not "
        "check the render's pods against them " + EXT,
        "ResourceQuota q of namespace ai: limits.hugepages-2Mi is no resource the API server "
        "knows for a quota: its validation refuses the quota (\"must be a standard resource "
        "type or fully qualified\"), and pods are counted against none of it "
        "(pkg/apis/core/validation/validation.go ValidateResourceQuotaResourceName)",
        "ResourceQuota q of namespace ai: krm-fn does not count the render's pods against "
        "requests.deviceclass.resource.kubernetes.io/gpu: DRA's extended resources are "
        "counted from the ResourceClaims the scheduler makes for a pod, which the render does "
        "not hold; the API server counts them " + EXT]


def test_usage_of_ephemeral_storage_hugepages_and_extended_resources():
    p = pod(ctr("setup", 1, role=INIT, **{"nvidia.com/gpu": 2, "ephemeral-storage": GI}),
            ctr("proxy", 1, role=SIDECAR, **{"ephemeral-storage": GI}),
            ctr("app", 4, **{"nvidia.com/gpu": 1, "hugepages-2Mi": 64 * MI,
                             "ephemeral-storage": 2 * GI}))
    use = rq._usage(p)
    # init containers and sidecars as the scheduler counts them (the peak)
    assert {k: use[k] for k in ("requests.nvidia.com/gpu", "requests.hugepages-2Mi",
                                "hugepages-2Mi", "requests.ephemeral-storage",
                                "ephemeral-storage", "limits.ephemeral-storage",
                                "count/pods", "pods")} == {k: v * NANO for k, v in {   # nano-units
        "requests.nvidia.com/gpu": 2, "requests.hugepages-2Mi": 64 * MI,
        "hugepages-2Mi": 64 * MI, "requests.ephemeral-storage": 3 * GI,
        "ephemeral-storage": 3 * GI, "limits.ephemeral-storage": 3 * GI, "count/pods": 1,
        "pods": 1}.items()}
    assert "limits.nvidia.com/gpu" not in use and rq.used(use, "requests.example.com/x") == 0


def _quota(**hard) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "ai"}, "spec": {"hard": hard}}


def _dep(name="a", replicas=2, **extra) -> dict:
    box = {"requests": {"cpu": "4", "memory": "8Gi", **extra},
           "limits": {"cpu": "4", "memory": "8Gi", **extra}}
    d = deployment(name, spec={"containers": [{"name": "server", "image": "s:1",
                                               "resources": box}]})
    d["spec"]["replicas"] = replicas
    return d


@pytest.mark.parametrize("hard, extra, need", [
    ({"requests.example.com/foo": "1"}, {"example.com/foo": "1"}, "requests.example.com/foo=2"),
    ({"count/pods": "1"}, {}, "count/pods=2"),
    ({"requests.ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1Gi"},
     "requests.ephemeral-storage=2Gi"),
    ({"limits.ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1Gi"},
     "limits.ephemeral-storage=2Gi"),
    ({"hugepages-2Mi": "64Mi"}, {"hugepages-2Mi": "64Mi"}, "hugepages-2Mi=128Mi"),
])
def test_replicas_above_a_quota_of_the_new_resources_are_an_error(hard, extra, need):
    code, results, _ = render(config(), _quota(**hard), _dep(**extra))
    assert code == 1
    (name, text), = hard.items()
    one = need.split("=")[0] + "=" + text
    assert (f"ResourceQuota q of namespace ai: 2 replicas need {need}, above its hard {one}: "
            f"the API server refuses the pods after the first 1 (\"exceeded quota\"; the "
            f"ReplicaSet reports FailedCreate), before counting the other pods of the "
            f"namespace; raise the quota, lower the replicas or the resources {SRC}"
            ) in errors(results)


def test_one_pod_above_an_extended_resource_quota_is_an_error():
    code, results, _ = render(config(), _quota(**{"requests.nvidia.com/gpu": "1"}),
                              _dep(replicas=1, **{"nvidia.com/gpu": "2"}))
    assert code == 1
    assert (f"ResourceQuota q of namespace ai: one pod needs requests.nvidia.com/gpu=2, "
            f"above its hard requests.nvidia.com/gpu=1: the API server refuses every pod "
            f"(\"exceeded quota: q, requested: requests.nvidia.com/gpu=2, ..., limited: "
            f"requests.nvidia.com/gpu=1\"), whatever else runs in the namespace; raise the "
            f"quota or lower the resources {SRC}") in errors(results)


def test_a_container_without_ephemeral_storage_is_not_refused_by_must_specify():
    """pods.go validationSet: only cpu and memory must be stated ("do not add more
    resources to this list!"); a pod without ephemeral-storage uses none."""
    code, results, _ = render(config(), _quota(**{"requests.ephemeral-storage": "1Gi",
                                                  "requests.nvidia.com/gpu": "1"}), _dep())
    assert code == 0, errors(results)
    assert not [m for _, m in results if "must specify" in m]


def test_two_workloads_exceed_a_gpu_quota_together():
    code, results, _ = render(config(), _quota(**{"requests.nvidia.com/gpu": "2"}),
                              _dep("a", 1, **{"nvidia.com/gpu": "1"}),
                              _dep("b", 2, **{"nvidia.com/gpu": "1"}))
    assert code == 1
    (found,) = [m for m in errors(results) if "the render's pods" in m]
    assert found.startswith(
        "ResourceQuota q of namespace ai: the render's pods in the namespace need "
        "requests.nvidia.com/gpu=3 together (Deployment a 1 × requests.nvidia.com/gpu=1, "
        "Deployment b 2 × requests.nvidia.com/gpu=1), above its hard "
        "requests.nvidia.com/gpu=2: created in render order, the API server admits 1 of the "
        "2 pods of Deployment b")
    assert "raise its hard requests.nvidia.com/gpu by 1 (to 3)" in found


def test_a_name_the_api_server_counts_no_pod_against_is_an_info_not_silence():
    code, results, _ = render(config(), _quota(**{"limits.nvidia.com/gpu": "1",
                                                  "services": "1"}),
                              _dep(replicas=3, **{"nvidia.com/gpu": "1"}))
    assert code == 0
    assert [m for s, m in results if "counts no pod against" in m] == [
        "ResourceQuota q of namespace ai: the API server counts no pod against "
        "limits.nvidia.com/gpu: a quota limits an extended resource only as requests.<name> "
        "(and counts no name of the kubernetes.io domain), so krm-fn does not check the "
        "render's pods against it " + EXT]
    assert not [m for _, m in results if "services" in m]


@pytest.mark.parametrize("q_ns,dep_ns", [(None, "default"), ("default", None)])
def test_a_quota_without_a_namespace_or_of_a_workload_without_one_counts(q_ns, dep_ns):
    """`kubectl apply` without -n puts an object without metadata.namespace in the
    context's namespace (`default`): a ResourceQuota and a workload of which one names no
    namespace may share one, so the pod's quota check counts that quota (failing closed,
    as model.same_namespace reads HPAs), and one pod above it is an error."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "q", **({"namespace": q_ns} if q_ns else {})},
             "spec": {"hard": {"limits.cpu": "2"}}}
    dep = deployment(namespace=dep_ns)
    code, results, _ = render(config(), quota, dep)
    assert code == 1
    assert any(s == "error" and m.startswith("ResourceQuota q of namespace ") and
               "one pod needs limits.cpu=4, above its hard limits.cpu=2" in m
               for s, m in results), results
