"""The kubelet simulation gives exactly the recorded outcomes (tests/admission/fit_golden.py
builds the cases and records fit_detail, fit_mix, _together, pool_summary, verdict.judge,
line, exclusive_per_numa and a sequence of topology.admit calls with the CPU Manager's
hints). Both fixtures (cases(); split_cases(): cores across NUMA nodes, 8 NUMA nodes)
were written by the code before the speed work of issue #11 part 10;
KRM_FN_UPDATE_GOLDEN=1 rewrites them (then read the diff: a change there is a change of
behaviour)."""
from __future__ import annotations

import json

from tests.admission import fit_golden
from tests.helpers import UPDATE


def _first_difference(want, got, where="") -> str:
    if type(want) is not type(got) or not isinstance(want, (dict, list)):
        return f"{where}: recorded {want!r}, now {got!r}"
    if isinstance(want, dict):
        for k in sorted(set(want) | set(got)):
            if want.get(k) != got.get(k):
                return _first_difference(want.get(k), got.get(k), f"{where}.{k}")
    for i, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return _first_difference(a, b, f"{where}[{i}]")
    return f"{where}: recorded {len(want)} entries, now {len(got)}"


def _check(fixture, got: list, count: int) -> None:
    if UPDATE:
        fixture.write_text("\n".join(got) + "\n")
    want = fixture.read_text().splitlines()
    assert len(got) == len(want) == count
    for line_want, line_got in zip(want, got):
        if line_want != line_got:
            w, g = json.loads(line_want), json.loads(line_got)
            raise AssertionError(f"pool {w['pool']}: {_first_difference(w, g)}")


def test_every_case_gives_the_recorded_outcomes():
    _check(fit_golden.FIXTURE, fit_golden.lines(), fit_golden.CASES)


def test_every_case_with_cores_across_numa_nodes_gives_the_recorded_outcomes():
    _check(fit_golden.SPLIT_FIXTURE, fit_golden.lines(split=True), fit_golden.SPLIT_CASES)


def test_the_cases_cover_every_kind_of_outcome():
    seen = set()
    for line in fit_golden.FIXTURE.read_text().splitlines():
        case = json.loads(line)
        for step in case["admit"][:-1]:
            seen.add(step["reason"] or "admitted")
            seen.add("memory" if step["mem"] is not None else "no memory")
        for pod in case["pods"]:
            seen.add(pod["fit_detail"][2].split(" ")[0])
        seen.add("together" if case["together"] else "not together")
    assert seen == {"admitted", "TopologyAffinityError", "SMTAlignmentError",
                    "UnexpectedAdmissionError", "memory", "no memory", "allocatable",
                    "maxPods", "together", "not together"}
