"""Golden cases: tests/testdata/<case>/input.yaml -> expected.yaml (exact stdout),
expected-exit (exit code, default 0) and expected-stderr.txt (exact stderr, when present).

Like kpt's function catalog, every case runs twice: the output (without results) fed back
in must come out unchanged.
"""
import pytest

from tests.helpers import TESTDATA, UPDATE, check_golden, run_cli, without_results

CASES = sorted(p.name for p in TESTDATA.iterdir() if (p / "input.yaml").exists())


@pytest.mark.parametrize("case", CASES)
def test_golden(case):
    d = TESTDATA / case
    p = run_cli([], (d / "input.yaml").read_text())
    check_golden(d / "expected.yaml", p.stdout)
    exit_file = d / "expected-exit"
    if UPDATE:
        if p.returncode:
            exit_file.write_text(f"{p.returncode}\n")
        if p.stderr:
            (d / "expected-stderr.txt").write_text(p.stderr)
    want = int(exit_file.read_text()) if exit_file.exists() else 0
    assert p.returncode == want, p.stderr
    stderr_file = d / "expected-stderr.txt"
    assert p.stderr == (stderr_file.read_text() if stderr_file.exists() else "")


@pytest.mark.parametrize("case", CASES)
def test_golden_second_run_changes_nothing(case):
    d = TESTDATA / case
    first = run_cli([], (d / "input.yaml").read_text())
    if first.returncode:
        pytest.skip("error case: the first run changes nothing")
    again = without_results(first.stdout)
    second = run_cli([], again)
    assert second.returncode == 0, second.stderr
    assert without_results(second.stdout) == again
