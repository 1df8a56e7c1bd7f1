"""The rollout krm-fn's edit starts, against the namespace's ResourceQuotas
(krm_fn/admission/rollout.py): a RollingUpdate that creates new pods before it deletes old
ones needs room for both. tests/test_quota_rollout_apiserver.py runs the same steps against
the real API server's quota admission."""
from __future__ import annotations

import pytest

from krm_fn.admission import rollout
from tests.test_verdict import config, deployment, errors, render

SRC = ("(https://kubernetes.io/docs/concepts/workloads/controllers/deployment/"
       "#rolling-update-deployment; kubernetes/kubernetes pkg/controller/deployment/"
       "rolling.go, pkg/controller/deployment/util/deployment_util.go ResolveFenceposts)")


def _strategy(replicas: int, **ru) -> tuple:
    obj = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": ru}}}
    return rollout.strategy(obj, replicas)[:3]


@pytest.mark.parametrize("replicas, ru, want", [
    # the defaults, 25% each: surge rounded up, unavailable down (ResolveFenceposts)
    (1, {}, ("RollingUpdate", 1, 0)), (3, {}, ("RollingUpdate", 1, 0)),
    (4, {}, ("RollingUpdate", 1, 1)), (10, {}, ("RollingUpdate", 3, 2)),
    (2, {"maxSurge": "0", "maxUnavailable": "0"}, ("RollingUpdate", 0, 1)),
    (2, {"maxSurge": "0%", "maxUnavailable": "0%"}, ("RollingUpdate", 0, 1)),
    (3, {"maxSurge": "100%", "maxUnavailable": "0"}, ("RollingUpdate", 3, 0)),
    (3, {"maxUnavailable": "5"}, ("RollingUpdate", 1, 3)),      # at most the replicas
    (3, {"maxSurge": "x%"}, (None, 0, 0)), (3, {"maxSurge": "1.5"}, (None, 0, 0)),
])
def test_max_surge_and_max_unavailable_as_resolve_fenceposts_resolves_them(replicas, ru, want):
    assert _strategy(replicas, **ru) == want


def test_recreate_and_an_unset_strategy():
    assert rollout.strategy({"spec": {"strategy": {"type": "Recreate"}}}, 2)[:3] == (
        "Recreate", 0, 0)
    assert rollout.strategy({"spec": {}}, 2) == (
        "RollingUpdate", 1, 0, "maxSurge 1 (25% of 2 replicas, rounded up, the default) and "
        "maxUnavailable 0 (25% of 2 replicas, rounded down, the default)")


def _room(hard: float, old_use: float, new_use: float):
    return lambda old, new: old * old_use + (new + 1) * new_use <= hard


@pytest.mark.parametrize("args, room, want", [
    # maxUnavailable 0: room for the old pods and one new one at every step
    ((2, 1, 0, 2), (8, 3.5, 4), (False, (2, 0))),
    ((2, 1, 0, 2), (11.5, 3.5, 4), (True, (0, 2))),
    ((2, 1, 0, 2), (11, 3.5, 4), (False, (1, 1))),      # the last step needs 3500m + 2 × 4
    ((3, 1, 0, 3), (3, 1, 1), (False, (3, 0))),         # pods: 3 blocks every rollout
    ((3, 1, 0, 3), (4, 1, 1), (True, (0, 3))),
    # maxUnavailable 1: an old pod goes first
    ((2, 1, 1, 2), (8, 3.5, 4), (True, (0, 2))),
    ((4, 1, 1, 4), (16, 3.5, 4), (True, (0, 4))),
    # an old ReplicaSet whose pods were refused in part: its missing pod makes room for the
    # first new one, but not for the last (3500m + 2 × 4)
    ((2, 1, 0, 1), (8, 3.5, 4), (False, (1, 1))),
    ((2, 1, 0, 1), (11.5, 3.5, 4), (True, (0, 2))),
    # maxSurge 2: the second new pod waits for an old one to go
    ((4, 2, 0, 4), (5, 1, 1), (True, (0, 4))),
])
def test_the_rolling_update_loop(args, room, want):
    assert rollout.simulate(*args, _room(*room)) == want


def test_need_is_the_least_room_a_rolling_update_completes_with():
    assert rollout.need(2, 2, {"cpu": 7}, {"cpu": 8}, ["cpu"]) == {"cpu": 7 + 8 + 8}
    assert rollout.need(3, 3, {"pods": 1}, {"pods": 1}, ["pods"]) == {"pods": 4}
    # the largest step is the first one when the new pods are smaller
    assert rollout.need(2, 2, {"cpu": 8}, {"cpu": 2}, ["cpu"]) == {"cpu": 18}


def _quota(name="q", ns="ai", **hard) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": ns}, "spec": {"hard": hard}}


def _dep(name="a", cpu="3500m", replicas=2, strategy=None, ns="ai") -> dict:
    box = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}
    d = deployment(name, spec={"containers": [{"name": "server", "image": "s:1",
                                               "resources": box}]},
                   meta={"namespace": ns})
    d["spec"]["replicas"] = replicas
    if strategy is not None:
        d["spec"]["strategy"] = strategy
    return d


def _rollout(results: list) -> list:
    return [(s, m) for s, m in results if "rollout" in m]


def test_the_default_rolling_update_has_no_room_and_the_item_is_left_unchanged():
    code, results, items = render(config(), _quota(**{"requests.cpu": "8"}), _dep())
    assert code == 1
    assert _rollout(results) == [("error",
        "ResourceQuota q of namespace ai has no room for the rollout of Deployment a that "
        "krm-fn's edit starts (it changes the pod template): with RollingUpdate maxSurge 1 "
        "(25% of 2 replicas, rounded up, the default) and maxUnavailable 0 (25% of 2 "
        "replicas, rounded down, the default) the Deployment controller creates a new pod "
        "before it deletes an old one, and beside 2 old pods the next new pod makes "
        "requests.cpu=11, above its hard requests.cpu=8: the API server refuses it "
        "(\"exceeded quota: q\"), the rollout stops there for good (the Deployment reports "
        "ProgressDeadlineExceeded) and the cluster keeps running the old pods, which "
        "krm-fn's changes do not pin; raise its hard requests.cpu by 3500m (to 11500m), or "
        "set spec.strategy.rollingUpdate.maxUnavailable to 1 or more (old pods go first), "
        "or spec.strategy.type: Recreate; other pods of the namespace, which krm-fn does not "
        "see, count too " + SRC)]
    assert "left unchanged because of the errors above" in errors(results)
    (dep,) = [i for i in items if i["kind"] == "Deployment"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "cpu"] == "3500m"


@pytest.mark.parametrize("strategy", [
    {"type": "Recreate"},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
])
def test_recreate_or_max_unavailable_1_has_room(strategy):
    code, results, _ = render(config(), _quota(**{"requests.cpu": "8"}),
                              _dep(strategy=strategy))
    assert code == 0, errors(results)
    assert _rollout(results) == []


def test_a_quota_of_pods_equal_to_the_replicas_blocks_every_default_rollout():
    code, results, _ = render(config(), _quota(pods="2"), _dep())
    assert code == 1
    (found,) = _rollout(results)
    assert ("beside 2 old pods the next new pod makes pods=3, above its hard pods=2" in
            found[1])
    assert "raise its hard pods by 1 (to 3)" in found[1]


def test_an_item_krm_fn_does_not_change_starts_no_rollout():
    d = _dep(cpu="4")
    d["metadata"]["annotations"] = {"krm-fn.dev/skip": "true"}
    code, results, _ = render(config(), _quota(**{"requests.cpu": "8"}), d)
    assert _rollout(results) == []


def test_other_workloads_count_at_their_least_and_an_info_at_their_larger():
    # b's pods are 1500m as written and 2 as rendered (krm-fn's raise): a's rollout under
    # 15 CPUs needs 3500m + 2 × 4 = 11500m at its last step, beside b's 2 × 1500m (fits) or
    # b's 2 × 2 (does not)
    b = _dep("b", "1500m", replicas=2, strategy={"type": "Recreate"})
    code, results, _ = render(config(), _quota(**{"requests.cpu": "15"}), _dep(), b)
    (found,) = _rollout(results)
    assert found[0] == "info"
    assert found[1].startswith(
        "ResourceQuota q of namespace ai may have no room for the rollout of Deployment a "
        "that krm-fn's edit starts (it changes the pod template): with RollingUpdate "
        "maxSurge 1 (25% of 2 replicas, rounded up, the default) and maxUnavailable 0 (25% "
        "of 2 replicas, rounded down, the default) the Deployment controller creates a new "
        "pod before it deletes an old one, and beside 1 old pod and 1 new pod, with the "
        "render's other workloads of the namespace at the larger of their usages before and "
        "after their own rollouts, the next new pod makes requests.cpu=15500m, above its hard "
        "requests.cpu=15 (the render's other pods in the namespace use requests.cpu=4 of it "
        "there): whether the rollout stalls there depends on the order the workloads roll "
        "out, which krm-fn does not know")


def _argo(strategy: dict) -> dict:
    d = _dep()
    d["apiVersion"], d["kind"] = "argoproj.io/v1alpha1", "Rollout"
    d["spec"]["strategy"] = strategy
    return d


def test_a_blue_green_rollout_needs_room_for_every_new_pod_beside_the_old_ones():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "12"}),
                              _argo({"blueGreen": {"activeService": "a"}}))
    assert code == 1
    assert _rollout(results) == [("error",
        "ResourceQuota q of namespace ai has no room for the blue-green rollout of Rollout a "
        "that krm-fn's edit starts (it changes the pod template): it runs the 2 new pods "
        "beside the 2 old ones until it switches, and the quota has room for 1 of them: the "
        "API server refuses the rest (\"exceeded quota: q\"), the Rollout never switches "
        "and the cluster keeps running the old pods, which krm-fn's changes do not pin; "
        "raise its hard requests.cpu by 3 (to 15); other pods of the namespace, which "
        "krm-fn does not see, count too "
        "(https://argoproj.github.io/argo-rollouts/features/bluegreen/)")]


def test_a_canary_without_room_for_a_new_pod_is_an_info():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "8"}),
                              _argo({"canary": {"steps": [{"setWeight": 50}]}}))
    assert _rollout(results) == [("info",
        "ResourceQuota q of namespace ai has no room for a new pod of Rollout a beside its 2 "
        "old ones, and krm-fn's edit starts a canary rollout; krm-fn does not model a "
        "canary's steps (maxSurge, setWeight), so it cannot tell whether the rollout stalls "
        "(https://argoproj.github.io/argo-rollouts/features/canary/)")]


def _hpa(low: int, high: int, name="a") -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": f"{name}-hpa", "namespace": "ai"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": name},
                     "minReplicas": low, "maxReplicas": high}}


def test_a_workload_an_hpa_scales_rolls_out_at_its_min_replicas_certainly():
    # spec.replicas 1 says nothing: the HPA keeps 3 pods, and 3 + 1 surge > pods=3
    code, results, _ = render(config(), _quota(pods="3"), _dep(replicas=1), _hpa(3, 3))
    assert code == 1
    (found,) = _rollout(results)
    assert found[0] == "error"
    assert found[1].startswith(
        "at HorizontalPodAutoscaler a-hpa's minReplicas 3, the fewest pods it keeps: "
        "ResourceQuota q of namespace ai has no room for the rollout of Deployment a")
    assert "beside 3 old pods the next new pod makes pods=4, above its hard pods=3" in found[1]


def test_a_rollout_stuck_only_at_max_replicas_is_an_info():
    # at minReplicas 1 the rollout has room; at maxReplicas 3 (which fits pods=3 at steady
    # state) the surge pod does not: whether it stalls depends on where the HPA is
    code, results, _ = render(config(), _quota(pods="3"), _dep(replicas=2), _hpa(1, 3))
    assert code == 0, errors(results)
    (found,) = _rollout(results)
    assert found[0] == "info"
    assert found[1].startswith(
        "when HorizontalPodAutoscaler a-hpa has scaled it to its maxReplicas 3: "
        "ResourceQuota q of namespace ai has no room for the rollout of Deployment a")
