"""Which objects are local config (krm_fn/pipeline/select.py is_local_config), against the
real kustomize (tests/kustomize, the release its go.mod pins): for each spelling of the
`config.kubernetes.io/local-config` value, `kustomize build` drops the object or keeps it,
and `krm-fn run --drop-local-config` must keep the same objects (a local object is not a
workload the cluster runs)."""
from __future__ import annotations

import subprocess

import pytest

from tests.helpers import run_cli

SPELLINGS = ["null", "~", '""', "''", "1", "0", "true", '"true"', "false", '"false"',
             "'false'", "no", "off", "FALSE", "False", "x", '"null"']


@pytest.fixture(scope="module")
def kustomize_bin():
    from tests import kustomize
    return kustomize.binary()


def _objects() -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a{i}\n  annotations:\n"
        f"    config.kubernetes.io/local-config: {v}\n" for i, v in enumerate(SPELLINGS))


def _kept(text: str) -> list[str]:
    return sorted(line.split(": ")[1] for line in text.splitlines()
                  if line.startswith("  name: "))


def test_local_config_as_kustomize_reads_it(kustomize_bin, tmp_path):
    (tmp_path / "r.yaml").write_text(_objects())
    (tmp_path / "kustomization.yaml").write_text("resources:\n- r.yaml\n")
    k = subprocess.run([str(kustomize_bin), "build", str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert k.returncode == 0, k.stderr
    p = run_cli(["run", "--drop-local-config", "r.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    kept = _kept(k.stdout)
    # what kustomize keeps: `false` in any quoting, nothing else
    assert kept == ["a10", "a8", "a9"]
    assert _kept(p.stdout) == kept


def test_a_value_that_is_no_string_is_refused_with_the_field(tmp_path):
    """kustomize drops an object whose local-config value is a list or a mapping; krm-fn
    refuses it (an annotation value must be a string: the API server refuses it too)."""
    (tmp_path / "r.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n"
        "    config.kubernetes.io/local-config: []\n")
    p = run_cli(["run", "--drop-local-config", "r.yaml"], cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.splitlines()[0] == (
        "krm-fn: error: items[0].metadata.annotations['config.kubernetes.io/local-config']: "
        "item 0: metadata.annotations values must be strings; every item must be a KRM "
        "object")
