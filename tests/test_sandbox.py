"""krm-fn runs with a read-only root filesystem and no network, as the image is meant to run
(`docker run --read-only --network none`; docs/threat-model.md). No Docker engine runs here,
so the function runs in a user + mount + network namespace (`unshare -rmn`) in which every
mount is remounted read-only: any file it tried to create or any connection it tried to open
would fail the run. The golden cases and the legacy-plugin path come out exactly as outside.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import pytest

from tests.helpers import ROOT, case_input, case_output, check_golden

# Remount every mount read-only inside the new mount namespace, then run the command.
_READ_ONLY = ("mount --make-rprivate / 2>/dev/null; "
              "awk '{print $2}' /proc/self/mounts | while read -r m; do "
              "mount -o remount,bind,ro \"$m\" 2>/dev/null; done; exec \"$@\"")
_PROBE = (
    "import os, socket, sys\n"
    "for d in sys.argv[1:]:\n"
    "    try:\n"
    "        open(os.path.join(d, '.krm-fn-probe'), 'w')\n"
    "        print('writable', d)\n"
    "    except OSError:\n"
    "        pass\n"
    "s = socket.socket()\n"
    "s.settimeout(2)\n"
    "try:\n"
    "    s.connect(('1.1.1.1', 53))\n"
    "    print('network')\n"
    "except OSError:\n"
    "    pass\n")


def _sandboxed(args: list[str], stdin: bytes = b"", cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(["unshare", "-rmn", "sh", "-c", _READ_ONLY, "sh", *args],
                          input=stdin, capture_output=True, env=env, cwd=cwd, timeout=120)


def _available() -> str | None:
    """None when the sandbox works here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    p = subprocess.run(["unshare", "-rmn", "true"], capture_output=True)
    if p.returncode:
        return f"user namespaces are not available: {p.stderr.decode().strip()}"
    return None


@pytest.fixture(scope="module")
def sandbox():
    why = _available()
    if why and os.environ.get("CI"):
        pytest.fail(f"the read-only sandbox is needed in CI: {why}")
    if why:
        pytest.skip(why)


def test_the_sandbox_is_read_only_and_offline(sandbox, tmp_path):
    dirs = ["/", "/tmp", str(tmp_path), str(ROOT), os.path.expanduser("~"), "/dev/shm"]
    p = _sandboxed([sys.executable, "-c", _PROBE, *dirs])
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode() == ""          # nothing writable, no network


@pytest.mark.parametrize("case", ["c01-smt-alignment", "c07-istio-sidecar",
                                  "c10-memory-default", "skipped-items-untouched"])
def test_golden_case_in_the_sandbox(sandbox, case):
    p = _sandboxed([sys.executable, "-m", "krm_fn"], case_input(case).encode())
    assert p.stderr.decode() == ""
    assert p.returncode == 0
    assert p.stdout.decode() == case_output(case)


def test_kustomize_legacy_plugin_runs_sandboxed(sandbox, tmp_path):
    """The bundled example through the real `kubectl kustomize`, whose InferenceTuning
    plugin runs krm-fn in the sandbox: the README's main-job output, byte for byte."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    plugin = tmp_path / "krm-fn.dev" / "v1alpha1" / "inferencetuning" / "InferenceTuning"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("#!/bin/sh\n" + " ".join(
        ["exec", "unshare", "-rmn", "sh", "-c", shlex.quote(_READ_ONLY), "sh",
         shlex.quote(sys.executable), "-m", "krm_fn", "plugin", '"$@"']) + "\n")
    plugin.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1",
               KUSTOMIZE_PLUGIN_HOME=str(tmp_path))
    p = subprocess.run([kubectl, "kustomize", "--enable-alpha-plugins",
                        str(ROOT / "overlays" / "legacy-plugin")],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    check_golden(ROOT / "overlays" / "legacy-plugin" / "expected.yaml", p.stdout, update=False)


def test_run_output_on_a_read_only_filesystem_is_a_clean_error(sandbox, tmp_path):
    src = tmp_path / "input.yaml"
    src.write_text(case_input("c01-smt-alignment"))
    target = tmp_path / "out.yaml"
    p = _sandboxed([sys.executable, "-m", "krm_fn", "run", "--output", str(target), str(src)])
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "Traceback" not in err
    assert str(target) in err and "Read-only file system" in err
    assert not target.exists()
