"""`kpt fn render --allow-exec` of overlays/kpt (Kptfile pipeline `exec: krm-fn`) and
`kpt fn eval --exec krm-fn` of its resources; golden package files in overlays/kpt/expected/."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from krm_e2e import (OVERLAYS, REPO, assert_pinned, check_golden, check_golden_tree, docs, run,
                     require, tool_env, tree)

pytestmark = pytest.mark.e2e

PKG = OVERLAYS / "kpt"
EXPECTED = PKG / "expected"
RESOURCES = ("deployment.yaml", "inferenceservice.yaml", "storage-container.yaml")
COMPANION = "node/kubelet-cpu-inference.yaml"
# A directory holding a file named Kptfile is a kpt subpackage, which kpt renders even when
# .krmignore lists it: the expected Kptfile is stored under another name.
EXPECTED_NAMES = {"Kptfile": "Kptfile.golden"}
# Same settings as pin.yaml, in the flat ConfigMap form `kpt fn eval -- key=value` sends.
FLAT_CONFIG = ["kubernetesVersion=1.37", "kinds=Deployment,InferenceService",
               "namespaces=serving", "nodePool=cpu-inference",
               "nodeSelector=node.kubernetes.io/instance-type=m7i.8xlarge", "sockets=1",
               "numaNodesPerSocket=1", "coresPerSocket=16", "threadsPerCore=2",
               "reservedCores=2"]


@pytest.fixture(scope="module")
def kpt() -> str:
    return require("kpt")


def package_objs(root: Path) -> list:
    return [o for p in sorted(root.rglob("*.yaml")) for o in docs(p.read_bytes())]


def copy_package(dst: Path) -> Path:
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns("expected"))
    return dst


def test_package_resources_match_the_bases():
    assert (PKG / "deployment.yaml").read_bytes() == \
        (REPO / "bases/vllm-cpu/deployment.yaml").read_bytes()
    assert (PKG / "inferenceservice.yaml").read_bytes() == \
        (REPO / "bases/kserve/inferenceservice.yaml").read_bytes()
    assert (PKG / "storage-container.yaml").read_bytes() == \
        (REPO / "bases/kserve/storage-container.yaml").read_bytes()


def test_render(kpt, tmp_path):
    pkg = copy_package(tmp_path / "pkg")
    env = tool_env()
    # cwd is not the package: a bare exec name is found on PATH from anywhere
    # (kpt resolves relative exec paths against its own cwd, not the package).
    run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd=tmp_path)
    check_golden_tree(EXPECTED, pkg, skip=(".krmignore",), names=EXPECTED_NAMES)
    assert b'cpu: "4"' in (pkg / "deployment.yaml").read_bytes()
    assert_pinned(package_objs(pkg))

    before = tree(pkg)
    run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd="/")
    assert tree(pkg) == before, "a second render changed the package (not idempotent)"


def test_render_in_place_leaves_expected_alone(kpt, tmp_path):
    """Rendering overlays/kpt itself (expected/ included) works: .krmignore keeps expected/
    out of the package, and nothing in it looks like a subpackage."""
    pkg = tmp_path / "pkg"
    shutil.copytree(PKG, pkg)
    run([kpt, "fn", "render", "--allow-exec", pkg], tool_env(), cwd=tmp_path)
    assert tree(pkg / "expected") == tree(EXPECTED)
    for rel, data in tree(pkg, skip=("expected", ".krmignore")).items():
        assert data == (EXPECTED / EXPECTED_NAMES.get(rel, rel)).read_bytes(), rel


def test_render_needs_allow_exec(kpt, tmp_path):
    pkg = copy_package(tmp_path / "pkg")
    before = tree(pkg)
    proc = run([kpt, "fn", "render", pkg], tool_env(), cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert b"--allow-exec" in proc.stderr + proc.stdout
    assert tree(pkg) == before


@pytest.mark.parametrize("config", ["--fn-config pin.yaml", "-- key=value"])
def test_eval(kpt, tmp_path, config):
    res = tmp_path / "resources"
    res.mkdir()
    for name in RESOURCES:
        shutil.copy(PKG / name, res / name)
    cmd = [kpt, "fn", "eval", res, "--exec", "krm-fn"]
    cmd += ["--fn-config", PKG / "pin.yaml"] if config.startswith("--fn-config") \
        else ["--", *FLAT_CONFIG]
    env = tool_env()
    run(cmd, env, cwd=tmp_path)

    assert sorted(tree(res)) == sorted(RESOURCES + (COMPANION,))
    for rel, data in tree(res).items():
        check_golden(EXPECTED / rel, data, update=False)    # same files as the render
    assert_pinned(package_objs(res))

    before = tree(res)
    run(cmd, env, cwd="/")
    assert tree(res) == before, "a second eval changed the files (not idempotent)"


def test_a_renamed_pool_leaves_no_plan_behind_silently(kpt, tmp_path):
    """Issue #33 part 6: render, rename the pool, render again: kpt fails with the stale
    plan named and the package unchanged; deleting that file makes the render pass and
    write the new pool's plan."""
    pkg = copy_package(tmp_path / "pkg")
    env = tool_env()
    run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd=tmp_path)
    old = pkg / COMPANION
    assert old.exists()
    pin = pkg / "pin.yaml"
    pin.write_text(pin.read_text().replace("- name: cpu-inference", "- name: cpu-serving"))
    before = tree(pkg)
    proc = run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd=tmp_path, check=False)
    assert proc.returncode != 0
    said = (proc.stdout + proc.stderr).decode()
    assert "stale node plan" in said and "'cpu-inference' is no longer in spec.nodePools" in said
    assert tree(pkg) == before
    old.unlink()
    run([kpt, "fn", "render", "--allow-exec", pkg], env, cwd=tmp_path)
    assert (pkg / "node/kubelet-cpu-serving.yaml").exists() and not old.exists()
