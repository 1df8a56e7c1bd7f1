"""pytest hooks shared by the suite."""


def pytest_report_header(config):
    """The seed of the generated kubelet differential cases (tests/harness/seed.py)."""
    from tests.harness.seed import EXAMPLES, SEED
    return [f"kubelet differential cases: KRM_FN_DIFF_SEED={SEED} "
            f"KRM_FN_DIFF_EXAMPLES={EXAMPLES}"]
