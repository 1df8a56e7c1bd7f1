"""The rollout krm-fn's edit starts (krm_fn/admission/rollout.py), against a real control
plane's ResourceQuota admission (tests/controlplane, v1.37).

Two tests, each case a Deployment whose pods krm-fn raises, under one quota:

- `test_the_first_surge_pod_as_the_deployment_controller_makes_it`: a control plane of its
  own that also runs the deployment and replicaset controllers. The input's Deployment is
  created, its pods admitted, then its template replaced with krm-fn's; the real
  controllers scale the new ReplicaSet up by maxSurge (and the old one down by
  maxUnavailable) and the ReplicaSet controller creates the pods. krm-fn's rollout error
  says the first new pod is refused ("beside N old pods the next new pod") exactly when the
  new ReplicaSet gets no pod and reports "exceeded quota". No kubelet runs, so no pod
  becomes Ready: the controllers stop after that first step (maxUnavailable 0 waits for
  new pods to be available), and the later steps are the next test's.
- `test_every_step_as_rollout_simulate_orders_them`: the shared control plane (no workload
  controllers); the test creates the old pods, then runs `rollout.simulate` with the API
  server deciding each new pod (created: admitted, else refused) and the test deleting the
  old pods the loop scales down: the quota admission of every step, the last one (one old
  pod beside N new) included, is the real one. What it does not cover: that the real
  controllers take the steps in this order (rolling.go read, not run, past the first).
"""
from __future__ import annotations

import copy
import itertools
import os
import time

import pytest

from krm_fn.admission import rollout
from tests.controlplane import cluster
from tests.test_quota_differential import CONFIG, _ctr, _deployment, _quota, _render_raw

_names = itertools.count()
# seconds a refusal must hold, old pods settled, before it is the answer: the ReplicaSet
# controller retries a refused create with backoff from 5 ms, so the few retries made
# before the old pods go leave its next retry well inside this
QUIET = 15
# (quota hard, replicas, cpu as written, strategy): krm-fn raises the cpu to whole CPUs
CASES = {
    "surge-refused": ({"requests.cpu": "8"}, 2, "3500m", None),
    "surge-admitted": ({"requests.cpu": "12"}, 2, "3500m", None),
    "last-step-refused": ({"requests.cpu": "11"}, 2, "3500m", None),
    "pods-equal-replicas": ({"pods": "3"}, 3, "1500m", None),
    "max-unavailable-1": ({"requests.cpu": "8"}, 2, "3500m",
                          {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    "surge-2-of-4": ({"limits.cpu": "18"}, 4, "3500m",
                     {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2,
                                                                 "maxUnavailable": 0}}),
}


def _case(name: str, ns: str) -> tuple:
    """(quota, input Deployment, rendered Deployment, krm-fn's rollout message or None)."""
    hard, replicas, cpu, strategy = CASES[name]
    q = _quota("q", dict(hard))
    d = _deployment("a", replicas, [_ctr("app", cpu, "1Gi")])
    if strategy:
        d["spec"]["strategy"] = copy.deepcopy(strategy)
    for o in (q, d):
        o["metadata"]["namespace"] = ns
    raw = _render_raw([copy.deepcopy(q), copy.deepcopy(d)])
    (out,) = [o for o in raw["items"] if o.get("kind") == "Deployment"]
    said = [r["message"] for r in raw.get("results") or []
            if "rollout of Deployment a" in r["message"]]
    assert CONFIG["spec"]["verdict"]["onFailure"] == "warning"     # the tuned output
    return q, d, out, (said[0] if said else None)


def _start(cp, name: str, prefix: str) -> tuple:
    """Case `name` in a new namespace of `cp` whose quota is created and counted by the
    quota controller: (namespace, input Deployment, rendered Deployment, krm-fn's rollout
    message or None)."""
    ns = cp.pod_namespace(f"{prefix}-{os.getpid()}-{next(_names)}")
    q, d, out, said = _case(name, ns)
    assert cp.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas", q)[0] == 201
    cluster.wait("the quota's status", lambda: (cp.request(
        "GET", f"/api/v1/namespaces/{ns}/resourcequotas/q")[1].get("status") or {}).get(
        "hard"))
    return ns, d, out, said


def _pods(cp, ns: str) -> list:
    return cp.request("GET", f"/api/v1/namespaces/{ns}/pods")[1]["items"]


# --- the real deployment controller, first step -------------------------------------------

@pytest.fixture(scope="module")
def workload_controllers():
    cluster.require_go()
    cp = cluster.ControlPlane(controllers=("serviceaccount", "resourcequota", "deployment",
                                           "replicaset")).start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_surge_pod_as_the_deployment_controller_makes_it(workload_controllers, name):
    cp = workload_controllers
    ns, d, out, said = _start(cp, name, "roll")
    apps = f"/apis/apps/v1/namespaces/{ns}/deployments"
    assert cp.request("POST", apps, d)[0] == 201
    n = d["spec"]["replicas"]
    cluster.wait("the input's pods", lambda: len(_pods(cp, ns)) == n)

    def replaced():
        """The template replaced with krm-fn's; None on a conflict (the controllers
        write the Deployment's status meanwhile), to read it again and retry."""
        cur = cp.request("GET", f"{apps}/a")[1]
        cur["spec"]["template"] = out["spec"]["template"]
        status, body = cp.request("PUT", f"{apps}/a", cur)
        assert status in (200, 409), body
        return status == 200

    cluster.wait("the template replaced", replaced)
    first_refused = said is not None and f"beside {n} old pods the next new pod" in said

    def new_rs():
        rss = cp.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"]
        rss = [r for r in rss if r["spec"]["template"]["spec"]["containers"][0][
            "resources"] == out["spec"]["template"]["spec"]["containers"][0]["resources"]]
        return rss[0] if rss and rss[0]["spec"].get("replicas") else None

    refused_since = []

    def settled():
        """("admitted", pods) once the new ReplicaSet has a pod; ("refused", 0) once its
        ReplicaFailure "exceeded quota" has held for QUIET seconds with the old pods scaled
        down as far as the controller goes. A refusal alone is not the answer: rolling.go
        scales the new ReplicaSet up before the old one down in separate syncs, so with
        maxUnavailable > 0 the first create is refused beside all old pods and the
        ReplicaSet controller's retry is admitted once one is deleted."""
        rs = new_rs()
        if rs is None:
            return None
        hash_ = rs["metadata"]["labels"]["pod-template-hash"]
        pods = _pods(cp, ns)
        made = [p for p in pods
                if p["metadata"].get("labels", {}).get("pod-template-hash") == hash_]
        if made:
            return ("admitted", len(made))
        failed = [c for c in (rs.get("status") or {}).get("conditions") or []
                  if c["type"] == "ReplicaFailure" and "exceeded quota" in c["message"]]
        old_rs = [r for r in cp.request(
            "GET", f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"]
            if r["metadata"]["name"] != rs["metadata"]["name"]]
        old_still = sum((r["spec"].get("replicas") or 0) for r in old_rs)
        if not failed or len(pods) != old_still:
            refused_since.clear()
            return None
        refused_since[:] = refused_since or [time.monotonic()]
        return ("refused", 0) if time.monotonic() - refused_since[0] > QUIET else None

    got = cluster.wait("the new ReplicaSet's first pod or its FailedCreate", settled, timeout=90)
    assert (got[0] == "refused") == first_refused, (name, got, said)


# --- every step, the API server deciding each pod -----------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_every_step_as_rollout_simulate_orders_them(controlplane, name):
    cp = controlplane
    ns, d, out, said = _start(cp, name, "rollsim")
    base = f"/api/v1/namespaces/{ns}"
    n = d["spec"]["replicas"]

    def pod(tmpl, name_):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name_},
                "spec": copy.deepcopy(tmpl["spec"]["template"]["spec"])}

    old = []
    for k in range(n):
        assert cp.request("POST", f"{base}/pods", pod(d, f"old-{k}"))[0] == 201
        old.append(f"old-{k}")
    new = []

    def fits(keep_old: int, have_new: int) -> bool:
        deleted = False
        while len(old) > keep_old:
            assert cp.request("DELETE", f"{base}/pods/{old.pop()}")[0] == 200
            deleted = True
        assert have_new == len(new)
        deadline = time.monotonic() + (10 if deleted else 0)
        while True:     # the quota controller gives a deleted pod's usage back
            status, body = cp.request("POST", f"{base}/pods", pod(out, f"new-{len(new)}"))
            if status == 201:
                new.append(body["metadata"]["name"])
                return True
            assert status == 403 and "exceeded quota" in body.get("message", ""), body
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    kind, surge, unavailable, _ = rollout.strategy(d, n)
    done, _ = rollout.simulate(n, surge, unavailable, n, fits)
    assert done == (said is None), (name, said)
