"""Hostile files given to `krm-fn run` (issue #16, faults 2 and 5): links out of the tree,
FIFOs and devices, oversized files, and an --output that is an input through a hard link.
The manifest is tests/hostile/files/pod.yaml; links, FIFOs and devices are made in a
temporary directory (a link to /dev/zero in the repository would hang any tool that reads
the tree). Each case asserts the exit code and the exact message, within a time bound."""
import os
import time

import pytest

from krm_fn.cli import files
from tests.helpers import ROOT, run_cli

POD = (ROOT / "tests" / "hostile" / "files" / "pod.yaml").read_text()
LINK_OUT = ("krm-fn: {name}: a symbolic link to {target}, outside the current directory "
            "{root}: krm-fn does not read files a link leads out of the tree to (as "
            "kustomize's load restrictor); pass --load-restrictor LoadRestrictionsNone to "
            "allow it\n")


@pytest.fixture
def tree(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pod.yaml").write_text(POD)
    (tmp_path / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
                                          "stringData: {token: hunter2}\n")
    return repo


def _run(args, cwd):
    start = time.monotonic()
    p = run_cli(args, cwd=cwd)
    assert time.monotonic() - start < 30
    assert "Traceback" not in p.stderr
    return p


@pytest.mark.parametrize("option", [[], ["--config"], ["--baseline"]])
def test_a_link_to_dev_zero_is_refused_at_once(tree, option):
    os.symlink("/dev/zero", tree / "zero.yaml")
    args = ["run", *option, "zero.yaml", "pod.yaml"] if option else ["run", "zero.yaml"]
    p = _run(args, tree)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == LINK_OUT.format(name=("--baseline zero.yaml" if option == ["--baseline"]
                                             else "zero.yaml"),
                                       target="/dev/zero", root=os.path.realpath(tree))


def test_a_device_is_refused_even_with_links_allowed(tree):
    os.symlink("/dev/zero", tree / "zero.yaml")
    p = _run(["run", "--load-restrictor", "LoadRestrictionsNone", "zero.yaml"], tree)
    assert p.returncode == 1
    assert p.stderr == ("krm-fn: zero.yaml is a character device, not a regular file; "
                        "krm-fn reads only regular files\n")


@pytest.mark.parametrize("option", [[], ["--config"], ["--baseline"]])
def test_a_fifo_is_refused_without_blocking(tree, option):
    os.mkfifo(tree / "fifo.yaml")
    p = _run(["run", *option, "fifo.yaml", "pod.yaml"] if option else ["run", "fifo.yaml"],
             tree)
    name = "--baseline fifo.yaml" if option == ["--baseline"] else "fifo.yaml"
    assert p.returncode == 1
    assert p.stderr == (f"krm-fn: {name} is a FIFO (named pipe), not a regular file; "
                        f"krm-fn reads only regular files\n")


def test_a_link_out_of_the_tree_is_not_copied_into_the_output(tree):
    os.symlink(tree.parent / "secret.yaml", tree / "more.yaml")
    p = _run(["run", "pod.yaml", "more.yaml"], tree)
    assert p.returncode == 1 and "hunter2" not in p.stdout + p.stderr
    assert p.stderr == LINK_OUT.format(name="more.yaml",
                                       target=os.path.realpath(tree.parent / "secret.yaml"),
                                       root=os.path.realpath(tree))


def test_links_out_of_the_tree_are_read_with_load_restrictions_none(tree):
    os.symlink(tree.parent / "secret.yaml", tree / "more.yaml")
    p = _run(["run", "--load-restrictor", "LoadRestrictionsNone", "pod.yaml", "more.yaml"],
             tree)
    assert p.returncode == 0, p.stderr
    assert "stringData: {token: hunter2}" in p.stdout


def test_links_inside_the_tree_and_paths_named_outside_it_are_read(tree):
    os.symlink("pod.yaml", tree / "alias.yaml")
    assert _run(["run", "alias.yaml"], tree).returncode == 0
    # a path the user names outside the current directory is read as named
    p = _run(["run", str(tree.parent / "secret.yaml")], tree)
    assert p.returncode == 0 and "hunter2" in p.stdout


def test_oversized_files_are_one_error(tree, monkeypatch):
    big = tree / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(files.MAX_CONFIG_BYTES + 1)       # sparse: costs no disk
    p = _run(["run", "--config", "big.yaml", "pod.yaml"], tree)
    assert p.returncode == 1
    assert p.stderr == ("krm-fn: big.yaml is larger than 16777216 bytes (16 MiB), the most "
                        "krm-fn reads from it; split the input\n")
    with open(big, "wb") as fh:
        fh.truncate(files.MAX_INPUT_BYTES + 1)
    p = _run(["run", "big.yaml"], tree)
    assert p.stderr == ("krm-fn: big.yaml is larger than 268435456 bytes (256 MiB), the most "
                        "krm-fn reads from it; split the input\n")


def test_stdin_is_read_up_to_the_bound(monkeypatch):
    import io
    import sys

    class _Stdin:
        buffer = io.BytesIO(b"x" * 11)
    monkeypatch.setattr(sys, "stdin", _Stdin)
    with pytest.raises(ValueError, match="^stdin is larger than 10 bytes"):
        files.read_stdin(limit=10)


def test_output_that_is_an_input_through_a_hard_link_is_refused(tree):
    os.link(tree / "pod.yaml", tree / "rendered.yaml")
    p = _run(["run", "--output", "rendered.yaml", "pod.yaml"], tree)
    assert p.returncode == 2
    assert "--output rendered.yaml is also an input (pod.yaml); write the result to another " \
           "file" in p.stderr
    assert (tree / "pod.yaml").read_text() == POD


# --- krm-fn verify --root (fault 4) ---------------------------------------------------------

def _verify_tree(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(ROOT / "tests" / "verify_fixtures" / "good", root)
    (tmp_path / "shadow").write_text("root:$6$secret-hash:19000:0:99999:7:::\n" * 50)
    return root


def test_verify_never_follows_a_link_out_of_its_root(tmp_path):
    root = _verify_tree(tmp_path)
    cpu_max = root / "sys" / "fs" / "cgroup" / "cpu.max"
    cpu_max.unlink()
    os.symlink(tmp_path / "shadow", cpu_max)
    p = _run(["verify", "--root", str(root), "--cpus", "4", "--json"], tmp_path)
    assert "secret-hash" not in p.stdout + p.stderr
    import json
    doc = json.loads(p.stdout)
    assert doc["unreadable"]["/sys/fs/cgroup/cpu.max"] == ("a symbolic link out of --root (not "
                                                          "followed)")


def test_verify_links_inside_the_root_are_followed(tmp_path):
    root = _verify_tree(tmp_path)
    cpu_max = root / "sys" / "fs" / "cgroup" / "cpu.max"
    (root / "cpu.max.real").write_text(cpu_max.read_text())
    cpu_max.unlink()
    os.symlink(root / "cpu.max.real", cpu_max)
    p = _run(["verify", "--root", str(root), "--json"], tmp_path)
    assert "/sys/fs/cgroup/cpu.max" not in __import__("json").loads(p.stdout)["unreadable"]


def test_verify_shows_at_most_the_start_of_a_file_it_cannot_read_as_its_value(tmp_path):
    root = _verify_tree(tmp_path)
    (root / "sys" / "fs" / "cgroup" / "memory.max").write_text("x" * 5000)
    p = _run(["verify", "--root", str(root), "--memory", "1Gi", "--json"], tmp_path)
    assert p.returncode == 1
    (row,) = [r for r in __import__("json").loads(p.stdout)["checks"]
              if r["check"] == "memory.max"]
    assert row["found"] == "'" + "x" * 60 + "'... (5000 characters)"
    assert "x" * 61 not in p.stdout


def test_verify_refuses_more_numa_nodes_than_linux_has(tmp_path):
    root = _verify_tree(tmp_path)
    node_dir = root / "sys" / "devices" / "system" / "node"
    for i in range(2, 1026):
        (node_dir / f"node{i}").mkdir()
    p = _run(["verify", "--root", str(root), "--json"], tmp_path)
    assert __import__("json").loads(p.stdout)["unreadable"]["/sys/devices/system/node"] == \
        "more than 1024 NUMA nodes listed; krm-fn reads at most 1024"
