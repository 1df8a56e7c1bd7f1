"""`kubectl kustomize --enable-alpha-plugins` with krm-fn as a container function (through the
tests/e2e/docker shim) and as a legacy exec plugin; golden output under overlays/."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from krm_e2e import (OVERLAYS, PLUGIN_HOME, PYTHON, REPO, SHIM_DIR, VENV_BIN, assert_pinned,
                      check_golden, docs, find, require, run, tool_env)

pytestmark = pytest.mark.e2e

PLUGIN = PLUGIN_HOME / "krm-fn.dev/v1alpha1/inferencetuning/InferenceTuning"
LOCAL_CONFIG = "config.kubernetes.io/local-config"
FUNCTION = "config.kubernetes.io/function"


@pytest.fixture(scope="module")
def kubectl() -> str:
    return require("kubectl")


def build(kubectl: str, target: Path, env: dict) -> bytes:
    return run([kubectl, "kustomize", "--enable-alpha-plugins", target], env, cwd=REPO).stdout


def rebuild(kubectl: str, first: bytes, overlay: Path, tmp_path: Path, env: dict) -> bytes:
    """Feed the rendered output through the same transformer again."""
    d = tmp_path / "again"
    d.mkdir()
    (d / "rendered.yaml").write_bytes(first)
    shutil.copy(overlay / "pin.yaml", d / "pin.yaml")
    (d / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n- rendered.yaml\ntransformers:\n- pin.yaml\n")
    return build(kubectl, d, env)


def assert_companion_clean(objs: list) -> None:
    """C19: the emitted kubelet ConfigMap survives kustomize's local-config pruning and
    carries none of the function config's annotations."""
    cm = find(objs, "ConfigMap", "kubelet-config-cpu-inference")
    annotations = cm["metadata"].get("annotations") or {}
    assert LOCAL_CONFIG not in annotations
    assert FUNCTION not in annotations
    assert not any(k.startswith(("config.kubernetes.io/", "internal.config.kubernetes.io/"))
                   for k in annotations), annotations
    assert not [o for o in objs if o.get("kind") == "InferenceTuning"], \
        "the function config leaked into the build output"


def test_container_function(kubectl, tmp_path):
    log = tmp_path / "docker.log"
    env = tool_env(DOCKER_SHIM_LOG=str(log))
    overlay = OVERLAYS / "container-fn"
    out = build(kubectl, overlay, env)

    calls = log.read_text().splitlines()
    assert len(calls) == 1, calls
    argv = calls[0].split()
    assert argv[0] == "run" and argv[-1] == "ghcr.io/krm-fn/krm-fn:0.1.0", argv
    assert "--network none" in calls[0] and "--user nobody" in calls[0], argv

    check_golden(overlay / "expected.yaml", out)
    assert b'cpu: "4"' in out
    objs = docs(out)
    assert_pinned(objs)
    assert_companion_clean(objs)

    again = rebuild(kubectl, out, overlay, tmp_path, env)
    assert again == out, "a second render changed the output (not idempotent)"


@pytest.fixture(params=["krm-fn on PATH", "python3 -m krm_fn"])
def plugin_env(request, tmp_path, kubectl) -> dict:
    env = tool_env(KUSTOMIZE_PLUGIN_HOME=str(PLUGIN_HOME))
    if request.param == "python3 -m krm_fn":
        # No krm-fn anywhere on PATH; python3 is the venv's interpreter.
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        # A wrapper, not a symlink: a symlinked venv interpreter loses its venv.
        (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
        (bin_dir / "python3").chmod(0o755)
        kubectl_dir = Path(kubectl).parent
        env["PATH"] = os.pathsep.join([str(bin_dir), str(kubectl_dir), "/usr/bin", "/bin"])
        assert shutil.which("krm-fn", path=env["PATH"]) is None
    return env


def test_legacy_exec_plugin(kubectl, plugin_env, tmp_path):
    overlay = OVERLAYS / "legacy-plugin"
    out = build(kubectl, overlay, plugin_env)
    check_golden(overlay / "expected.yaml", out)
    assert b'cpu: "4"' in out
    objs = docs(out)
    assert_pinned(objs)
    assert_companion_clean(objs)

    again = rebuild(kubectl, out, overlay, tmp_path, plugin_env)
    assert again == out, "a second render changed the output (not idempotent)"


def test_container_and_plugin_agree():
    assert (OVERLAYS / "container-fn/expected.yaml").read_bytes() == \
        (OVERLAYS / "legacy-plugin/expected.yaml").read_bytes()


def test_without_alpha_plugins_kustomize_refuses(kubectl):
    proc = run([kubectl, "kustomize", OVERLAYS / "legacy-plugin"],
               tool_env(KUSTOMIZE_PLUGIN_HOME=str(PLUGIN_HOME)), cwd=REPO, check=False)
    assert proc.returncode != 0
    assert b"external plugins disabled" in proc.stderr


# --- the entry-point scripts on their own (no kubectl needed) --------------------------

def _is_executable(p: Path) -> bool:
    return bool(p.stat().st_mode & stat.S_IXUSR) and p.read_bytes().startswith(b"#!")


def test_scripts_are_executable_with_shebang():
    assert _is_executable(PLUGIN)
    assert _is_executable(SHIM_DIR / "docker")


def test_plugin_fails_clearly_without_krm_fn(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = OVERLAYS / "legacy-plugin/pin.yaml"
    proc = run(["/bin/sh", PLUGIN, cfg], {"PATH": str(empty)}, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "neither krm-fn nor python3" in lines[0], lines

    # python3 exists but cannot import krm_fn
    fake = tmp_path / "fake"
    fake.mkdir()
    py = fake / "python3"
    py.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'krm_fn'\" >&2\n"
                  "exit 1\n")
    py.chmod(0o755)
    proc = run(["/bin/sh", PLUGIN, cfg], {"PATH": f"{fake}:/usr/bin:/bin"}, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "No module named 'krm_fn'" in lines[0], lines


GOOD_ARGV = ["run", "--rm", "-i", "-a", "STDIN", "-a", "STDOUT", "-a", "STDERR",
             "--network", "none", "--user", "nobody", "--security-opt=no-new-privileges",
             "-e", "LOG_TO_STDERR=true", "-e", "STRUCTURED_RESULTS=true",
             "ghcr.io/krm-fn/krm-fn:0.1.0"]


def _shim(argv: list, stdin: bytes = b""):
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "KRM_FN_PYTHON": PYTHON}
    return subprocess.run([SHIM_DIR / "docker", *argv], input=stdin, env=env,
                          capture_output=True, timeout=60)


def test_docker_shim_runs_the_function():
    rl = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n")
    proc = _shim(GOOD_ARGV, rl)
    assert proc.returncode == 0, proc.stderr
    assert b"kind: ResourceList" in proc.stdout


@pytest.mark.parametrize("argv, message", [
    (["build", "."], b"unsupported subcommand"),
    ([a if a != "none" else "host" for a in GOOD_ARGV], b"--network none"),
    ([a for a in GOOD_ARGV if a not in ("--network", "none")], b"--network none"),
    ([a if a != "nobody" else "1000:1000" for a in GOOD_ARGV], b"--user nobody"),
    (GOOD_ARGV[:-1] + ["ghcr.io/other/fn:v1"], b"unexpected image"),
    (GOOD_ARGV[:-1] + ["ghcr.io/krm-fn/krm-fn"], b"unexpected image"),
    (GOOD_ARGV + ["extra"], b"unexpected arguments after the image"),
    (GOOD_ARGV[:-1] + ["--mount", "type=bind,source=/x,target=/x",
                       "ghcr.io/krm-fn/krm-fn:0.1.0"], b"mounts are not emulated"),
    ([a for a in GOOD_ARGV if a != "-i"], b"missing -i"),
])
def test_docker_shim_rejects_unexpected_argv(argv, message):
    proc = _shim(argv)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_the_tools_run_the_krm_fn_under_test():
    """With KRM_FN_E2E_VENV (.ci/run: the wheel installed in a fresh venv) the e2e tests run
    that installed copy, its plugin tree included; else this checkout."""
    from krm_e2e import INSTALLED, krm_fn_location
    where = krm_fn_location()
    if INSTALLED:
        assert where.is_relative_to(Path(INSTALLED).resolve()), where
        assert not where.is_relative_to(REPO), where
        assert PLUGIN_HOME == where / "plugin_home"
    else:
        assert where == REPO / "krm_fn"
    assert (PLUGIN_HOME / "krm-fn.dev/v1alpha1/inferencetuning/InferenceTuning").stat().st_mode \
        & stat.S_IXUSR
