"""Golden cases, in the layout of kustomize's kyaml frameworktestutil and the kpt function
catalog (tests/testdata/README.md): tests/testdata/<case>/ holds config.yaml (the function
config, when the case has one), input.yaml (the items), expected.yaml (the output items),
results.yaml (the results), expected-exit and expected-stderr.txt. helpers.check_case runs
each case in this process and compares every file exactly; KRM_FN_UPDATE_GOLDEN=1 rewrites
them.

Like kpt's function catalog, every case runs twice: the output (without results) fed back
in must come out unchanged.
"""
import pytest

from tests.helpers import case_input, cases, check_case, run_fn, without_results

CASES = cases()


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    check_case(case)


@pytest.mark.parametrize("case", CASES)
def test_golden_second_run_changes_nothing(case):
    first = run_fn([], case_input(case))
    if first.returncode:
        pytest.skip("error case: the first run changes nothing")
    again = without_results(first.stdout)
    second = run_fn([], again)
    assert second.returncode == 0, second.stderr
    assert without_results(second.stdout) == again
