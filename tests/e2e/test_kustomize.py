"""kustomize with krm-fn, run for real by both kustomizes: kubectl's embedded one (`kubectl
kustomize`) and standalone `kustomize build`, built from tests/kustomize at the release its
go.mod pins. Routes: a container function (through the tests/e2e/docker shim), a legacy exec
plugin (both tools) and a KRM exec function (`--enable-exec`: standalone only); golden output
under overlays/, the same bytes from every route and tool, and each tool's refusals."""
from __future__ import annotations

import os
import re
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
KUBECTL, STANDALONE = "kubectl kustomize", "kustomize build"
ROUTES = ["container-fn", "legacy-plugin", "exec-fn"]     # overlays/<route>

# The docker argv both kustomizes give a container function (checked by the shim too).
GOOD_ARGV = ["run", "--rm", "-i", "-a", "STDIN", "-a", "STDOUT", "-a", "STDERR",
             "--network", "none", "--user", "nobody", "--security-opt=no-new-privileges",
             "-e", "LOG_TO_STDERR=true", "-e", "STRUCTURED_RESULTS=true",
             "ghcr.io/krm-fn/krm-fn:0.1.0"]


@pytest.fixture(scope="module")
def kubectl() -> str:
    return require("kubectl")


@pytest.fixture(params=[KUBECTL, STANDALONE])
def tool(request) -> list:
    """The argv that renders a kustomization with one of the two kustomizes."""
    if request.param == KUBECTL:
        return [request.getfixturevalue("kubectl"), "kustomize"]
    return [request.getfixturevalue("kustomize_bin"), "build"]


def build(tool: list, target: Path, env: dict, *flags: str) -> bytes:
    return run([*tool, "--enable-alpha-plugins", *flags, target], env, cwd=REPO).stdout


def rebuild(tool: list, first: bytes, overlay: Path, tmp_path: Path, env: dict,
            *flags: str) -> bytes:
    """Feed the rendered output through the same transformer again."""
    d = tmp_path / "again"
    d.mkdir()
    (d / "rendered.yaml").write_bytes(first)
    shutil.copy(overlay / "pin.yaml", d / "pin.yaml")
    (d / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n- rendered.yaml\ntransformers:\n- pin.yaml\n")
    return build(tool, d, env, *flags)


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


def check_render(tool: list, overlay: Path, env: dict, tmp_path: Path, *flags: str) -> None:
    """The golden output, pinned, and unchanged by a second render."""
    out = build(tool, overlay, env, *flags)
    check_golden(overlay / "expected.yaml", out)
    assert b'cpu: "4"' in out
    objs = docs(out)
    assert_pinned(objs)
    assert_companion_clean(objs)
    again = rebuild(tool, out, overlay, tmp_path, env, *flags)
    assert again == out, "a second render changed the output (not idempotent)"


def test_container_function(tool, tmp_path):
    log = tmp_path / "docker.log"
    check_render(tool, OVERLAYS / "container-fn", tool_env(DOCKER_SHIM_LOG=str(log)), tmp_path)
    calls = log.read_text().splitlines()
    assert calls == [" ".join(GOOD_ARGV)] * 2, calls      # the render and the second one


@pytest.fixture(params=["krm-fn on PATH", "python3 -m krm_fn"])
def plugin_env(request, tmp_path, tool) -> dict:
    env = tool_env(KUSTOMIZE_PLUGIN_HOME=str(PLUGIN_HOME))
    if request.param == "python3 -m krm_fn":
        # No krm-fn anywhere on PATH; python3 is the venv's interpreter.
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        # A wrapper, not a symlink: a symlinked venv interpreter loses its venv.
        (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
        (bin_dir / "python3").chmod(0o755)
        tool_dir = Path(tool[0]).parent
        env["PATH"] = os.pathsep.join([str(bin_dir), str(tool_dir), "/usr/bin", "/bin"])
        assert shutil.which("krm-fn", path=env["PATH"]) is None
    return env


def test_legacy_exec_plugin(tool, plugin_env, tmp_path):
    check_render(tool, OVERLAYS / "legacy-plugin", plugin_env, tmp_path)


def test_exec_function(kustomize_bin, tmp_path):
    """The route the README documents for standalone kustomize: `exec: {path: krm-fn}`, krm-fn
    found on PATH, both flags."""
    check_render([kustomize_bin, "build"], OVERLAYS / "exec-fn", tool_env(), tmp_path,
                 "--enable-exec")


def test_every_route_gives_the_same_output():
    first, *rest = [(OVERLAYS / r / "expected.yaml").read_bytes() for r in ROUTES]
    assert rest == [first] * len(rest)


# --- refusals, with each tool's own message -------------------------------------------

# kubectl's error line: `error: MSG` (kubectl's CheckErr) or, from a kubectl whose main
# logs through component-base (the Google Cloud SDK's kubectl 1.32 here), a klog line.
KUBECTL_ERROR = re.compile(rb'(?:error: (?P<plain>.*)|E\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ '
                           rb'[\w.]+:\d+\] "command failed" err="(?P<klog>.*)")\n')


def error_of(tool: list, proc) -> str:
    """The one error message `tool` wrote, checked to be its whole standard error, and that
    it failed with exit code 1 and wrote nothing on standard output."""
    assert (proc.returncode, proc.stdout) == (1, b""), (proc.returncode, proc.stderr)
    if tool[1] == "build":                                 # standalone: cobra's own line
        m = re.fullmatch(rb"Error: (.*)\n", proc.stderr)
    else:
        m = KUBECTL_ERROR.fullmatch(proc.stderr)
    assert m, proc.stderr
    return next(g for g in m.groups() if g is not None).decode()


@pytest.mark.parametrize("route", ROUTES)
def test_without_alpha_plugins_kustomize_refuses(tool, route):
    proc = run([*tool, OVERLAYS / route],
               tool_env(KUSTOMIZE_PLUGIN_HOME=str(PLUGIN_HOME)), cwd=REPO, check=False)
    assert error_of(tool, proc) == \
        "external plugins disabled; unable to load external plugin 'InferenceTuning'"


def test_enable_exec_alone_refuses_too(kustomize_bin):
    """--enable-exec does not imply --enable-alpha-plugins."""
    tool = [kustomize_bin, "build"]
    proc = run([*tool, "--enable-exec", OVERLAYS / "exec-fn"], tool_env(), cwd=REPO,
               check=False)
    assert error_of(tool, proc) == \
        "external plugins disabled; unable to load external plugin 'InferenceTuning'"


def test_kubectl_has_no_enable_exec(kubectl):
    proc = run([kubectl, "kustomize", "--enable-alpha-plugins", "--enable-exec",
                OVERLAYS / "exec-fn"], tool_env(), cwd=REPO, check=False)
    assert (proc.returncode, proc.stdout) == (1, b"")
    first, *hint = proc.stderr.decode().splitlines()
    assert first.lower() == "error: unknown flag: --enable-exec", proc.stderr
    assert len(hint) == 1 and hint[0].startswith("See 'kubectl kustomize -"), proc.stderr


def test_an_exec_function_without_enable_exec_is_skipped_silently(tool, tmp_path):
    """The trap the README warns of, in both kustomizes: with --enable-alpha-plugins alone
    the exec function does not run, and the build succeeds, quietly, with the resources as
    they were (the render of the bases without the transformer)."""
    proc = run([*tool, "--enable-alpha-plugins", OVERLAYS / "exec-fn"], tool_env(), cwd=REPO)
    assert proc.stderr == b""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "bases", root / "bases")
    bare = root / "overlays/bare"
    bare.mkdir(parents=True)
    (bare / "kustomization.yaml").write_text(
        "resources:\n- ../../bases/vllm-cpu\n- ../../bases/kserve\n")
    assert proc.stdout == run([*tool, bare], tool_env(), cwd=root).stdout
    assert b'cpu: "4"' not in proc.stdout and b"InferenceTuning" not in proc.stdout


def test_the_kustomizes_under_test(kubectl, kustomize_bin):
    """Standalone: the release tests/kustomize/go.mod pins, which docs/gitops.md names;
    kubectl: a kustomize v5 inside."""
    from tests.kustomize import release
    assert run([kustomize_bin, "version"], tool_env()).stdout.decode() == release() + "\n"
    assert f"standalone kustomize {release()}" in \
        " ".join((REPO / "docs/gitops.md").read_text().split())
    out = run([kubectl, "version", "--client"], tool_env()).stdout.decode()
    assert re.search(r"^Kustomize Version: v5\.\d+\.\d+$", out, re.M), out


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
