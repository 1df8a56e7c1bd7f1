"""The port of the kubelet's cpu_assignment.go (krm_fn/admission/cpu_assignment.py): the
parts whose Go semantics a plain Python rewrite would get wrong. The placements themselves
are checked against the kubelet's code by tests/test_kubelet_differential.py."""
from __future__ import annotations

from itertools import combinations

from krm_fn.admission.cpu_assignment import (AssignmentError, CPUTopology, _go_round,
                                             _iterate_combinations, _std_dev)
from krm_fn.node.topology import Topology


def test_combinations_come_in_iterate_combinations_order():
    items = [5, 1, 7, 3, 2, 9]
    for k in range(0, 7):
        seen = [tuple(view) for view in _iterate_combinations(items, k)]
        assert seen == (list(combinations(items, k)) if k else [])


def test_a_kept_combination_is_the_go_slice_later_appends_overwrite():
    kept = {}
    for view in _iterate_combinations([1, 2, 3, 4, 5], 4):
        kept.setdefault(tuple(view), view)
    # the combinations with the prefix (1, 2, 3) share one backing array of capacity 4
    assert tuple(kept[(1, 2, 3, 4)]) == (1, 2, 3, 5)
    # k = 3 and k = 5 append into a full array each time: nothing is shared
    for k in (3, 5):
        kept = [(tuple(v), v) for v in _iterate_combinations([1, 2, 3, 4, 5, 6], k)]
        assert all(tuple(v) == t for t, v in kept)


def test_balance_rounds_as_go_does():
    assert _go_round(0.5) == 1.0 and _go_round(2.5) == 3.0 and _go_round(-0.5) == -1.0
    assert _std_dev([0, 0, 0, 0, 1, 1, 1]) == 0.495
    assert _std_dev([2, 2]) == 0.0


def test_packed_takes_whole_sockets_before_numa_nodes_and_names_a_shortage():
    cpus = tuple(Topology(4, 2, 4, 1).cpus())          # 4 sockets of 2 NUMA nodes
    topo = CPUTopology(cpus, (1, 36), {})
    assert topo.sockets_first
    free = frozenset(range(2, 16))
    assert sorted(topo.take_by_topology(free, 4)) == [4, 5, 6, 7]
    try:
        topo.take_by_topology(frozenset({1, 2}), 3)
    except AssignmentError as e:
        assert str(e) == ("not enough cpus available to satisfy request: requested=3, "
                          "available=2")
    else:
        raise AssertionError("no error")
