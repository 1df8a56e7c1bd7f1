"""The wheel holds everything every documented route needs (issue #16): the package, the
kubelet facts (the generated modules krm_fn/node/data/kubelet_1_NN.py, a package found like
every other) and the legacy exec plugin tree
(krm_fn/plugin_home, which `krm-fn plugin-home` prints and plugin/ links to), the plugin
script executable. Without a wheel: the package-data globs of pyproject.toml cover every
file under krm_fn/ that is not Python. With KRM_FN_WHEEL (.ci/run builds the sdist and
the wheel from it): that wheel's files are exactly the checkout's."""
from __future__ import annotations

import fnmatch
import os
import subprocess
import tomllib
import zipfile

import pytest

from tests.helpers import ROOT

PLUGIN = "krm_fn/plugin_home/krm-fn.dev/v1alpha1/inferencetuning/InferenceTuning"


def _package_files() -> set:
    out = subprocess.run(["git", "ls-files", "krm_fn"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return {f for f in out if (ROOT / f).is_file()}


def test_package_data_globs_cover_every_data_file():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    patterns = [f"{pkg.replace('.', '/')}/{glob}" for pkg, globs in data.items()
                for glob in globs]
    missing = [f for f in _package_files() if not f.endswith(".py")
               and not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == []
    assert PLUGIN in _package_files()


def test_every_package_directory_is_found_by_setuptools():
    """Every directory of krm_fn/ with Python files is a package the wheel's
    packages.find gives (an __init__.py in each): so krm_fn/node/data's modules are in the
    wheel without a package-data glob."""
    import setuptools
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]["find"]
    found = set(setuptools.find_packages(str(ROOT), include=find["include"]))
    dirs = {os.path.dirname(f).replace("/", ".") for f in _package_files() if f.endswith(".py")}
    assert dirs <= found and "krm_fn.node.data" in found


def test_plugin_dir_of_the_checkout_is_the_packaged_tree():
    assert os.path.realpath(ROOT / "plugin") == str((ROOT / "krm_fn" / "plugin_home").resolve())


@pytest.mark.skipif(not os.environ.get("KRM_FN_WHEEL"), reason="KRM_FN_WHEEL not set "
                    "(.ci/run sets it to the wheel it builds)")
def test_the_wheel_holds_exactly_the_package_files():
    with zipfile.ZipFile(os.environ["KRM_FN_WHEEL"]) as z:
        infos = {i.filename: i for i in z.infolist()}
    files = {n for n in infos if n.startswith("krm_fn/")}
    assert files == _package_files()
    assert "krm_fn/node/data/__init__.py" in files and "krm_fn/node/data/kubelet_1_36.py" in files
    assert (infos[PLUGIN].external_attr >> 16) & 0o111
    meta = [n for n in infos if n.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(os.environ["KRM_FN_WHEEL"]) as z:
        assert "krm-fn = krm_fn.cli:main" in z.read(meta[0]).decode()
