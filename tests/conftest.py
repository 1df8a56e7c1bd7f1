"""pytest hooks and fixtures shared by the suite."""
import pytest


def pytest_report_header(config):
    """The seed of the generated kubelet differential cases (tests/harness/seed.py)."""
    from tests.harness.seed import EXAMPLES, SEED
    from tests import test_quota_differential as quota
    return [f"kubelet differential cases: KRM_FN_DIFF_SEED={SEED} "
            f"KRM_FN_DIFF_EXAMPLES={EXAMPLES}",
            f"quota differential cases: KRM_FN_QUOTA_SEED={quota.SEED} "
            f"KRM_FN_QUOTA_EXAMPLES={quota.EXAMPLES}"]


@pytest.fixture(scope="session")
def controlplane():
    """One real control plane for the session (tests/controlplane/cluster.py: etcd,
    kube-apiserver, the quota and service-account controllers, kube-scheduler on
    127.0.0.1), with the CRDs of tests/controlplane/crds installed; stopped at the end.
    Skips without Go, fails under CI=true."""
    from tests.controlplane import cluster
    cluster.require_go()
    cp = cluster.ControlPlane().start()
    try:
        cp.install_crds(cluster.crd_files())
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def harnesses():
    """{(1, minor): tests.harness.runner.Harness}: the kubelet harness's serve process of
    every minor it is built for (tests/harness, runner.releases()), closed at the end.
    Skips without Go, fails under CI=true."""
    from tests.harness import runner
    runner.require_go()
    built = {tuple(map(int, m.split("."))): runner.Harness(m) for m in runner.releases()}
    try:
        yield built
    finally:
        for h in built.values():
            h.close()
