"""The render's pods of one namespace together against its ResourceQuotas
(krm_fn/admission/quotatotal.py, krm_fn/pipeline/quota.py), through the whole function;
tests/test_quota_differential.py checks the same against the real API server."""
from __future__ import annotations


from krm_fn.admission import resourcequota as rq
from krm_fn.admission.model import SIDECAR
from tests.admission.kit import cores, ctr, pod
from tests.test_verdict import config, deployment, errors, render

SRC = ("(https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
       "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go, "
       "pkg/quota/v1/evaluator/core/pods.go)")
RACE = ("the controllers of the workloads create their pods side by side, so which workload "
        "loses pods is a race, and other pods of the namespace, which krm-fn does not see, "
        "count too")


def _quota(name="team", **hard) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": "ai"}, "spec": {"hard": hard}}


def _dep(name: str, cpu: str, replicas: int = 1, **kw) -> dict:
    box = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}
    d = deployment(name, spec={"containers": [{"name": "server", "image": "s:1",
                                               "resources": box}]}, **kw)
    d["spec"]["replicas"] = replicas
    return d


def _total(results: list) -> list:
    return [(s, m) for s, m in results if "the render's pods" in m or "not counted" in m]


TOGETHER_12 = (
        "ResourceQuota team of namespace ai: the render's pods in the namespace need "
        "requests.cpu=12 together (Deployment a 1 × requests.cpu=4, Deployment b 2 × "
        "requests.cpu=4), above its hard requests.cpu=10: created in render order, the API "
        "server admits 1 of the 2 pods of Deployment b and refuses the rest (\"exceeded "
        "quota: team\"; its controller reports FailedCreate); " + RACE + "; raise its hard "
        "requests.cpu by 2 (to 12), or lower the replicas or the resources " + SRC)


def test_two_workloads_that_fit_alone_exceed_the_quota_together():
    code, results, items = render(config(), _quota(**{"requests.cpu": "10"}),
                                  _dep("a", "4"), _dep("b", "4", replicas=2))
    assert code == 1
    assert _total(results) == [("error", TOGETHER_12)]
    # b is left unchanged (fail closed); a keeps its changes
    assert "left unchanged because of the errors above" in errors(results)


def test_krm_fns_smt_raise_breaks_a_quota_the_input_fits():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "7", "limits.cpu": "7"}),
                              _dep("a", "3500m"), _dep("b", "3500m"))
    assert code == 1
    again, found = _total(results)
    # b is left unchanged, so a's pod runs beside b's as the input writes it: 7500m
    assert again == ("error",
        "ResourceQuota team of namespace ai: the render's pods in the namespace need "
        "limits.cpu=7500m,requests.cpu=7500m together (Deployment b 1 × "
        "limits.cpu=3500m,requests.cpu=3500m, Deployment a 1 × limits.cpu=4,requests.cpu=4), "
        "above its hard limits.cpu=7,requests.cpu=7: with Deployment b left unchanged (the "
        "pods the input writes, which run already) and the others' pods created after them, "
        "the API server admits 0 of the 1 pod of Deployment a and refuses the rest "
        "(\"exceeded quota: team\"; its controller reports FailedCreate); " + RACE + "; the "
        "input's own amounts fit (limits.cpu=7,requests.cpu=7): krm-fn raised Deployment a's "
        "cpu from 3500m to 4 per pod (limits.cpu, requests.cpu), and that is what breaks it; "
        "raise its hard limits.cpu by 500m (to 7500m) and requests.cpu by 500m (to 7500m), or "
        "lower the replicas or the resources (krm-fn.dev/cpus: N on a workload pins N whole "
        "CPUs per pod) " + SRC)
    assert found[0] == "error"
    assert ("the input's own amounts fit (limits.cpu=7,requests.cpu=7): krm-fn raised "
            "Deployment a's cpu from 3500m to 4 per pod (limits.cpu, requests.cpu), "
            "Deployment b's cpu from 3500m to 4 per pod (limits.cpu, requests.cpu), and that "
            "is what breaks it; raise its hard limits.cpu by 1 (to 8) and requests.cpu by 1 "
            "(to 8), or lower the replicas or the resources (krm-fn.dev/cpus: N on a "
            "workload pins N whole CPUs per pod) " + SRC) in found[1]
    assert "admits 0 of the 1 pod of Deployment b" in found[1]


def test_on_failure_warning_lowers_it_and_keeps_the_changes():
    code, results, items = render(config(verdict={"onFailure": "warning"}),
                                  _quota(**{"requests.cpu": "7"}),
                                  _dep("a", "3500m"), _dep("b", "3500m"))
    assert code == 0
    assert [s for s, _ in _total(results)] == ["warning"]
    cpus = [i["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            for i in items if i["kind"] == "Deployment"]
    assert cpus == ["4", "4"]


def test_a_workload_krm_fn_does_not_tune_counts_and_loses_pods_as_a_warning():
    skipped = _dep("c", "3", meta={"annotations": {"krm-fn.dev/skip": "true"}})
    a = _dep("a", "4")
    # Recreate: the rollout krm-fn's edit starts deletes the old pod first (a RollingUpdate
    # would need room for 4 more: tests/test_quota_rollout.py)
    a["spec"]["strategy"] = {"type": "Recreate"}
    code, results, _ = render(config(), _quota(**{"requests.cpu": "8"}), a,
                              _dep("b", "2"), skipped)
    (found,) = _total(results)
    assert found[0] == "warning"        # the input's own amounts (4 + 2 + 3) break it
    assert "admits 0 of the 1 pod of Deployment c" in found[1]
    assert code == 0


def test_a_later_smaller_pod_still_fits_after_a_refused_one():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "7"}), _dep("a", "4"),
                              _dep("b", "4"), _dep("c", "2"))
    assert [m.split(": created in render order, ")[1].split(" and refuses")[0]
            for _, m in _total(results)] == ["the API server admits 0 of the 1 pod of "
                                             "Deployment b"]


def test_a_daemonset_is_not_counted_and_said_so():
    ds = _dep("d", "1")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    ds["metadata"]["annotations"] = {"krm-fn.dev/skip": "true"}
    code, results, _ = render(config(), _quota(**{"requests.cpu": "100"}), _dep("a", "4"), ds)
    assert _total(results) == [("info",
        "DaemonSet d is not counted in the total of namespace ai against its ResourceQuotas: "
        "a DaemonSet runs one pod on every node it selects, and the render does not list the "
        "nodes")]


def test_one_workload_alone_is_said_once_by_its_own_check():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "10"}), _dep("a", "4", 3))
    assert code == 1
    assert _total(results) == []
    assert any(m.startswith("ResourceQuota team of namespace ai: 3 replicas need")
               for m in errors(results))


def test_a_jobs_pods_are_its_parallelism_at_most_its_completions():
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 4, "completions": 3}}
    assert rq.pod_count(job) == (3, None)
    assert rq.pod_count({"apiVersion": "v1", "kind": "PodTemplate"}) == (0, None)
    assert rq.pod_count({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {}}) == (
        1, None)


def test_usage_counts_sidecars_pod_level_resources_and_overhead_as_pods_go():
    side = ctr("proxy", "500m", role=SIDECAR)
    p = pod(side, ctr("app", 2))
    assert rq._usage(p)["requests.cpu"] == cores("2500m")
    # the overhead goes on every request, on a limit only where the pod has one
    q = pod(ctr("app", 2))._replace(overhead={"cpu": cores("250m")})
    q = q._replace(containers=tuple(c._replace(limits={"memory": 2**30})
                                           for c in q.containers))
    use = rq._usage(q)
    assert (use["requests.cpu"], use["limits.cpu"]) == (cores("2250m"), 0)
    # pod-level resources take the place of the containers' (PodLevelResources)
    r = pod(ctr("app", 2), pod_requests={"cpu": cores(3)}, pod_limits={"cpu": cores(3)})
    assert (rq._usage(r)["requests.cpu"], rq._usage(r)["limits.cpu"]) == (cores(3), cores(3))


def test_a_workload_the_namespace_total_leaves_unchanged_gets_no_change_result():
    """As for an item's own error (pipeline/verdict._outcome): the warning of a change not
    made ("OMP_NUM_THREADS 16 -> 4", with the value it would write) goes with the changes."""
    b = _dep("b", "4", replicas=2)
    b["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "OMP_NUM_THREADS", "value": "16"}]
    threads = {"threads": {"env": ["OMP_NUM_THREADS"], "engines": False}}
    code, results, items = render(config(workloads=threads), _quota(**{"requests.cpu": "10"}),
                                  _dep("a", "4"), b)
    assert code == 1
    assert not [m for s, m in results if "OMP_NUM_THREADS 16 -> 4" in m]
    # a is left unchanged too: adding its thread env starts a rollout the quota has no room
    # for
    assert [c.get("env") for d in items if d.get("kind") == "Deployment"
            for c in d["spec"]["template"]["spec"]["containers"]] == [
        None, [{"name": "OMP_NUM_THREADS", "value": "16"}]]


def _unnamespaced(obj: dict) -> dict:
    obj["metadata"].pop("namespace", None)
    return obj


def test_a_quota_without_a_namespace_counts_the_workloads_of_the_namespace_it_may_land_in():
    # kubectl apply -n ai / Argo CD's destination namespace put the quota beside the
    # Deployments of namespace ai: the API server counts their pods against it together
    code, results, _ = render(config(), _unnamespaced(_quota(**{"requests.cpu": "10"})),
                              _dep("a", "4"), _dep("b", "4", replicas=2))
    assert code == 1
    assert _total(results) == [("error", TOGETHER_12)]


def test_workloads_without_a_namespace_count_against_the_quota_of_a_namespace():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "10"}),
                              _dep("a", "4", namespace=""), _dep("b", "4", replicas=2,
                                                                  namespace=""))
    assert code == 1
    assert _total(results) == [("error", TOGETHER_12)]


def test_workloads_of_two_namespaces_are_not_added_up_against_a_quota_of_neither():
    # the quota lands in one namespace: a's and b's pods never count against it together
    code, results, _ = render(config(), _unnamespaced(_quota(**{"requests.cpu": "13"})),
                              _dep("a", "4", replicas=2, namespace="x"),
                              _dep("b", "4", replicas=2, namespace="y"))
    assert _total(results) == []
    assert code == 0
