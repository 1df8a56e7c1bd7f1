"""krm-fn's taint verdict against the real kube-scheduler (issue #31 part 4; docs/verdict.md
"Checked against a real control plane").

Each case is a set of node taints (keys, values, effects NoSchedule / PreferNoSchedule /
NoExecute) and a set of pod tolerations (Exists with a key or with none, Equal or no
operator with a value, an effect or none, tolerationSeconds on NoExecute ones). The real
control plane (the `controlplane` fixture, tests/controlplane) gets a Node with those
taints and a Pod with those tolerations whose nodeSelector matches that Node only; the
test waits until the scheduler binds the pod or marks it Unschedulable, then deletes both
and waits until they are gone. Then:

- the pod's tolerations as the API server stores them (empty strings omitted) must be
  krm-fn's `taints.admitted` of the pod's own (the DefaultTolerationSeconds admission
  plugin's added);
- the scheduler binds the pod exactly when krm-fn's `taints.untolerated` finds no taint,
  and an unschedulable pod's message names untolerated taints ("node(s) had untolerated
  taint(s)": v1.37.2's TaintToleration Filter does not name which one, so the first one
  krm-fn names, FindMatchingUntoleratedTaint's in node taint order, cannot be compared);
- krm-fn's render of a Deployment with those tolerations on a pool whose kubelet config
  registers those taints fails exactly then, naming the first untolerated taint.

Cases: the named TABLE, and EXAMPLES (40) hypothesis-generated ones from a fixed seed
(`KRM_FN_TAINT_SEED`, `KRM_FN_TAINT_EXAMPLES` change them).
"""
from __future__ import annotations

import itertools
import os
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from krm_fn.admission import taints as taints_mod
from krm_fn.admission.taints import Taint
from tests.controlplane import placement
from tests.test_verdict import GUARANTEED_4, POOL, config, deployment, errors, render

SEED = int(os.environ.get("KRM_FN_TAINT_SEED") or 20261205)
EXAMPLES = int(os.environ.get("KRM_FN_TAINT_EXAMPLES") or 40)
NS, NE, PNS = "NoSchedule", "NoExecute", "PreferNoSchedule"
UNTOLERATED = "node(s) had untolerated taint(s)"
_ids = itertools.count()


def _taint_dict(t: tuple) -> dict:
    key, value, effect = t
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def scheduler_says(cp, node_taints: list, tolerations: list) -> tuple:
    """(bound, the PodScheduled condition's message or "", the pod's tolerations as stored)
    of one pod with `tolerations` on a new Node with `node_taints` (dicts), through
    tests/controlplane/placement.py (which waits until the scheduler has seen the Node, and
    until both are gone afterwards)."""
    name = f"taint-case-{next(_ids)}-{int(time.time() * 1000) % 100000}"
    one = placement.OneNode(cp, name, {"cpu": "8", "memory": "16Gi", "pods": "110"},
                            {"kubernetes.io/os": "linux"}, node_taints)
    try:
        created = cp.request("GET", f"/api/v1/nodes/{name}")[1]
        assert [t for t in created["spec"].get("taints") or []
                if t != one.taint] == node_taints
        got = one.place({"tolerations": tolerations,
                         "containers": [{"name": "c", "image": "example/app:1", "resources": {
                             "requests": {"cpu": "1", "memory": "1Gi"},
                             "limits": {"cpu": "1", "memory": "1Gi"}}}]}, name)
        assert not str(got).startswith("invalid: "), got
        stored = [t for t in one.stored["spec"].get("tolerations") or []
                  if t != one.toleration]
        return got is True, "" if got is True else got, stored
    finally:
        one.close()


def krm_fn_says(node_taints: list, tolerations: list) -> tuple:
    """(the untolerated Taints by taints.untolerated of the admitted tolerations, the
    admitted tolerations, the render's taint error or None)."""
    model = tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in node_taints)
    admitted = taints_mod.admitted(tolerations)
    missing = taints_mod.untolerated(model, admitted)
    pool = {**POOL, "kubelet": {"extra": {"registerWithTaints": node_taints}}} \
        if node_taints else POOL
    spec = {"containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    if tolerations:
        spec["tolerations"] = tolerations
    _, results, _ = render(config("1.37", pool=pool), deployment(spec=spec))
    error = next((m for m in errors(results) if m.startswith(
        "the pod never schedules on node pool 'p': its nodes have the taint(s)")), None)
    return missing, list(admitted), error


def check(cp, node_taints: list, tolerations: list) -> None:
    bound, message, stored = scheduler_says(cp, node_taints, tolerations)
    missing, admitted, error = krm_fn_says(node_taints, tolerations)
    case = f"taints {node_taints}, tolerations {tolerations}"
    # the API server omits empty strings (omitempty)
    assert stored == [{k: v for k, v in t.items() if v != ""} for t in admitted], case
    assert bound == (not missing), (case, message, missing)
    if not bound:
        assert UNTOLERATED in message, (case, message)
        assert error is not None and error.startswith(
            "the pod never schedules on node pool 'p': its nodes have the taint(s) "
            f"{missing[0].text} (registerWithTaints of the pool's kubelet.extra)"), (case, error)
    else:
        assert error is None, (case, error)


TABLE = {
    "no-taints": ([], []),
    "noschedule-untolerated": ([_taint_dict(("a", "x", NS))], []),
    "prefernoschedule-never-blocks": ([_taint_dict(("a", "x", PNS))], []),
    "noexecute-untolerated": ([_taint_dict(("a", "", NE))], []),
    "empty-key-exists-tolerates-all": (
        [_taint_dict(("a", "x", NS)), _taint_dict(("b", "", NE))], [{"operator": "Exists"}]),
    "empty-key-exists-one-effect": (
        [_taint_dict(("a", "x", NS)), _taint_dict(("b", "", NE))],
        [{"operator": "Exists", "effect": NS}]),
    "equal-wrong-value": ([_taint_dict(("a", "x", NS))],
                          [{"key": "a", "operator": "Equal", "value": "y", "effect": NS}]),
    "no-operator-is-equal": ([_taint_dict(("a", "x", NS))], [{"key": "a", "value": "x"}]),
    "effect-mismatch": ([_taint_dict(("a", "x", NS))],
                        [{"key": "a", "operator": "Exists", "effect": NE}]),
    "empty-effect-matches-noexecute": ([_taint_dict(("a", "", NE))],
                                       [{"key": "a", "operator": "Exists"}]),
    "one-of-two-tolerated": (
        [_taint_dict(("a", "x", NS)), _taint_dict(("example.com/b", "y", NS))],
        [{"key": "a", "operator": "Exists"}]),
    "noexecute-with-seconds-schedules": (
        [_taint_dict(("a", "", NE))],
        [{"key": "a", "operator": "Exists", "effect": NE, "tolerationSeconds": 60}]),
    "not-ready-tolerated-by-empty-effect": (
        [], [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_named_taint_cases_match_the_scheduler(controlplane, name):
    node_taints, tolerations = TABLE[name]
    check(controlplane, node_taints, tolerations)


_KEYS = st.sampled_from(["a", "b", "example.com/c"])
_VALUES = st.sampled_from(["", "x", "y"])
_EFFECTS = st.sampled_from([NS, PNS, NE])


@st.composite
def _toleration(draw) -> dict:
    effect = draw(st.sampled_from(["", NS, PNS, NE]))
    kind = draw(st.sampled_from(["exists", "exists-any-key", "equal", "no-operator"]))
    if kind == "exists-any-key":
        t = {"operator": "Exists"}
    elif kind == "exists":
        t = {"key": draw(_KEYS), "operator": "Exists"}
    else:
        t = {"key": draw(_KEYS), **({"operator": "Equal"} if kind == "equal" else {}),
             "value": draw(_VALUES)}
    if effect:
        t["effect"] = effect
    if effect == NE and draw(st.booleans()):
        t["tolerationSeconds"] = draw(st.integers(0, 600))
    return t


_CASE = st.tuples(
    st.lists(st.tuples(_KEYS, _VALUES, _EFFECTS), max_size=3,
             unique_by=lambda t: (t[0], t[2])).map(lambda ts: [_taint_dict(t) for t in ts]),
    st.lists(_toleration(), max_size=3))


@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_CASE)
def test_generated_taint_cases_match_the_scheduler(controlplane, case):
    node_taints, tolerations = case
    check(controlplane, node_taints, tolerations)
