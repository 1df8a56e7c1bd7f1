"""Fixtures shared by the end-to-end tests."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kustomize_bin() -> Path:
    """Standalone kustomize built from tests/kustomize (the release its go.mod pins).
    Without Go the test is skipped (failed under CI=true); a failed build fails it."""
    from tests import kustomize
    return kustomize.binary()
