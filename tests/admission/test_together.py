"""How many sets of a pool's pods fit together (admission/verdict.py _together): when the
pods placed before the first refusal share one named signature, the count is taken from
the fit of one of them alone instead of placing them again. Compared here with placing
them one by one (the code before), on the node models and pods of
tests/admission/fit_golden.py."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn.admission import capacity, model, verdict
from krm_fn.results import Ref
from tests.admission import fit_golden
from tests.admission.kit import ctr, node, pod


def _placed_one_by_one(pods: list, node_model) -> int:
    packer = capacity.Packer(node_model)
    sets = 0
    while all(packer.place(p) for p in pods):
        sets += 1
    return sets


def _outcome(compute):
    try:
        return compute()
    except Exception as exc:            # the same exception either way
        return type(exc).__name__, str(exc)


def _judge_all(pods: list, node_model) -> None:
    """Each pod judged on a fresh node memo, as pool_summary has them."""
    model._PER_NODE.clear()
    for p in pods:
        verdict.judge(p, node_model)


def _copy(p, i: int, rename: bool = False):
    """An equal pod of another workload (a new object); `rename`: its first container
    renamed (same unnamed shape, another named signature)."""
    containers = p.containers
    if rename and containers:
        containers = (containers[0]._replace(name=containers[0].name + "x"),
                      ) + containers[1:]
    return p._replace(ref=Ref("apps/v1", "Deployment", f"copy{i}", "ns"),
                          containers=containers)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), copies=st.integers(2, 24),
       odd_at=st.none() | st.integers(0, 30), renamed=st.booleans(),
       judged=st.booleans())
def test_sets_together_are_the_sets_placed_one_by_one(seed, copies, odd_at, renamed,
                                                       judged):
    rng = random.Random(seed)
    n = fit_golden._node(rng, 0)
    a, b = fit_golden._pod(rng, "a"), fit_golden._pod(rng, "b")
    pods = [_copy(a, i) for i in range(copies)]
    if odd_at is not None and odd_at < copies:
        pods[odd_at] = _copy(a, odd_at, rename=True) if renamed else b
    model._PER_NODE.clear()
    if judged:                          # as pool_summary has them: every pod judged first
        for p in pods:
            _outcome(lambda p=p: verdict.judge(p, n))
    want = _outcome(lambda: _placed_one_by_one(pods, n))
    assert _outcome(lambda: verdict._together(pods, n)) == want


def test_pods_of_one_shape_are_counted_from_the_fit_of_one():
    n = node()                                  # 64 CPUs, nothing reserved
    pods = [pod(ctr("server", 4), name=f"w{i}") for i in range(3)]
    _judge_all(pods, n)
    assert verdict.fit_alone(pods[0], n)[0] == 16
    assert verdict._fit_of_one_shape(pods, n) == 16
    assert verdict._together(pods, n) == 5 == _placed_one_by_one(pods, n)


def test_a_pod_of_another_named_signature_is_placed_one_by_one():
    n = node()
    pods = [pod(ctr("server", 4), name="w0"), pod(ctr("model", 4), name="w1")]
    _judge_all(pods, n)
    assert verdict._fit_of_one_shape(pods, n) is None
    assert verdict._together(pods, n) == 8


def test_only_the_pods_placed_before_the_first_refusal_need_the_signature():
    n = node()
    pods = [pod(ctr("server", 20), name=f"w{i}") for i in range(4)]
    pods.append(pod(ctr("other", 1), name="w4"))    # never reached: the 4th is refused
    _judge_all(pods, n)
    assert verdict.fit_alone(pods[0], n)[0] == 3
    assert verdict._fit_of_one_shape(pods, n) == 3
    assert verdict._together(pods, n) == 0 == _placed_one_by_one(pods, n)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), order=st.permutations(range(3)))
def test_what_a_node_keeps_between_admissions_changes_no_outcome(seed, order):
    """The node-wide memos (the merged Topology Manager hints, pod plans, fits) give the
    outcome of a fresh computation: every pod's fit_detail and the mix, computed with
    everything the node keeps from the other pods, equal the same computed on a fresh
    memo each time."""
    rng = random.Random(seed)
    n = fit_golden._node(rng, 0)
    pods = [fit_golden._pod(rng, f"p{i}") for i in range(3)]

    def fresh(compute):
        model._PER_NODE.clear()
        return _outcome(compute)
    want = [fresh(lambda p=p: capacity.fit_detail(p, n)) for p in pods]
    want_mix = fresh(lambda: capacity.fit_mix([pods[i] for i in order], n))
    model._PER_NODE.clear()
    _outcome(lambda: capacity.fit_mix([(p, 1) for p in pods], n))      # warm the memos
    got_mix = _outcome(lambda: capacity.fit_mix([pods[i] for i in order], n))
    got = [_outcome(lambda p=p: capacity.fit_detail(p, n)) for p in pods]
    assert (got, got_mix) == (want, want_mix)
