"""Argo CD recipes (deploy/argocd/, reference/cases.md C20): the Config Management Plugin's
own init and generate commands, read from deploy/argocd/plugin.yaml, run in a copy of each
bundled overlay as argocd-cmp-server runs them (cwd = the Application's path, the whole
repository beside it, the sidecar image's environment). What cannot run here: Argo CD
itself and the images (no Docker engine). generate's `kustomize` is each of two: standalone
kustomize, built from tests/kustomize at the release its go.mod pins (the real command, exec
functions included), and tests/e2e/argocd/kustomize, a shim that runs kubectl's embedded
kustomize and refuses exec functions rather than skip them."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from krm_e2e import (
    OVERLAYS,
    PLUGIN_HOME,
    PYTHON,
    REPO,
    VENV_BIN,
    assert_pinned,
    check_golden,
    docs,
    require,
    run,
)

pytestmark = pytest.mark.e2e

DEPLOY = REPO / "deploy/argocd"
PLUGIN_YAML = DEPLOY / "plugin.yaml"
KUSTOMIZE_SHIM = Path(__file__).resolve().parent / "argocd"
SYSTEM_PATH = ["/usr/bin", "/bin"]          # no /usr/local/bin: no docker client either


def plugin_spec() -> dict:
    doc = yaml.safe_load(PLUGIN_YAML.read_text())
    assert doc["apiVersion"] == "argoproj.io/v1alpha1"
    assert doc["kind"] == "ConfigManagementPlugin"
    return doc["spec"]


def argv(step: str) -> list[str]:
    """The command argocd-cmp-server runs for `step` (init / generate): command + args."""
    s = plugin_spec()[step]
    return list(s["command"]) + list(s.get("args") or [])


def sidecar_env(path: list[str], **extra: str) -> dict:
    """The sidecar's environment: the image's ENV (KUSTOMIZE_PLUGIN_HOME where the
    Dockerfile copies plugin/) and Argo CD's build variables."""
    env = {"PATH": os.pathsep.join(path), "HOME": "/home/argocd",
           "KUSTOMIZE_PLUGIN_HOME": str(PLUGIN_HOME),
           "ARGOCD_APP_NAME": "vllm-cpu", "ARGOCD_APP_NAMESPACE": "serving"}
    env.update(extra)
    return env


def app_copy(tmp_path: Path, overlay: str) -> Path:
    """The repository as the sidecar receives it: bases/ and the overlay, modes reset
    (preserveFileMode: false)."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "bases", root / "bases")
    shutil.copytree(OVERLAYS / overlay, root / "overlays" / overlay)
    for p in root.rglob("*"):
        if p.is_file():
            p.chmod(0o644)
    return root / "overlays" / overlay


@pytest.fixture(scope="module")
def kubectl() -> str:
    return require("kubectl")


SHIM, STANDALONE = "shim over kubectl kustomize", "standalone kustomize"


def cmp_env(kubectl: str) -> dict:
    return sidecar_env([str(KUSTOMIZE_SHIM), str(VENV_BIN), *SYSTEM_PATH], KUBECTL=kubectl)


def standalone_env(kustomize_bin: Path, tmp_path: Path) -> dict:
    """The sidecar's environment with standalone kustomize as its `kustomize`."""
    bin_dir = tmp_path / "kustomize-bin"
    bin_dir.mkdir()
    (bin_dir / "kustomize").symlink_to(kustomize_bin)
    return sidecar_env([str(bin_dir), str(VENV_BIN), *SYSTEM_PATH])


@pytest.fixture(params=[SHIM, STANDALONE])
def generate_env(request, tmp_path) -> dict:
    """The sidecar's environment for generate, its `kustomize` the shim over kubectl's
    kustomize or standalone kustomize (tests/kustomize)."""
    if request.param == SHIM:
        return cmp_env(request.getfixturevalue("kubectl"))
    return standalone_env(request.getfixturevalue("kustomize_bin"), tmp_path)


def standalone(env: dict) -> bool:
    return str(KUSTOMIZE_SHIM) not in env["PATH"].split(os.pathsep)


def test_plugin_yaml_fields():
    spec = plugin_spec()
    assert set(spec) == {"init", "generate", "preserveFileMode"}
    assert spec["preserveFileMode"] is False
    assert argv("generate") == ["sh", "-c",
                                "exec kustomize build --enable-alpha-plugins --enable-exec ."]
    assert yaml.safe_load(PLUGIN_YAML.read_text())["metadata"]["name"] == "krm-fn"
    app = yaml.safe_load((DEPLOY / "application-cmp.yaml").read_text())
    assert app["spec"]["source"]["plugin"] == {"name": "krm-fn"}
    assert (REPO / app["spec"]["source"]["path"]).is_dir()
    cm = yaml.safe_load((DEPLOY / "argocd-cm.yaml").read_text())
    assert cm["data"] == {"kustomize.buildOptions": "--enable-alpha-plugins --enable-exec"}
    side = yaml.safe_load((DEPLOY / "repo-server-cmp-sidecar.yaml").read_text())
    c = side["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert c["securityContext"]["runAsUser"] == 999
    assert {m["mountPath"]: m["name"] for m in c["volumeMounts"]} == {
        "/var/run/argocd": "var-files", "/home/argocd/cmp-server/plugins": "plugins",
        "/tmp": "krm-fn-cmp-tmp"}


def test_generate_on_the_legacy_plugin_overlay_gives_the_golden_output(generate_env,
                                                                       tmp_path):
    app = app_copy(tmp_path, "legacy-plugin")
    env = generate_env
    init = run(argv("init"), env, cwd=app)
    assert init.stdout == b""
    assert init.stderr.decode().startswith("krm-fn plugin: krm-fn 0.1.0 ok: Python ")
    out = run(argv("generate"), env, cwd=app).stdout
    check_golden(OVERLAYS / "legacy-plugin/expected.yaml", out, update=False)
    assert b'cpu: "4"' in out
    assert_pinned(docs(out))


def test_generate_on_the_container_fn_overlay_fails_loudly(generate_env, tmp_path):
    """C20: the sidecar (like the repo-server) has no container runtime; the render fails
    with a non-zero exit, never an empty or unpinned success."""
    app = app_copy(tmp_path, "container-fn")
    env = generate_env
    assert shutil.which("docker", path=env["PATH"]) is None
    run(argv("init"), env, cwd=app)
    proc = run(argv("generate"), env, cwd=app, check=False)
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert b"docker" in proc.stderr
    if standalone(env):
        assert proc.stderr == (b'Error: couldn\'t execute function: exec: "docker": '
                               b'executable file not found in $PATH \n')


def test_generate_on_the_kpt_package_fails_loudly(generate_env, tmp_path):
    """A kpt package is not a kustomization: render it in CI instead (deploy/flux)."""
    app = app_copy(tmp_path, "kpt")
    proc = run(argv("generate"), generate_env, cwd=app, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    assert b"kustomization" in proc.stderr.lower()
    if standalone(generate_env):
        assert proc.stderr == (b"Error: unable to find one of 'kustomization.yaml', "
                               b"'kustomization.yml' or 'Kustomization' in directory '"
                               + str(app).encode() + b"'\n")


def test_generate_on_the_exec_fn_overlay_gives_the_golden_output(kustomize_bin, tmp_path):
    """Way (a)'s exec function, run by the real `kustomize build --enable-alpha-plugins
    --enable-exec` of generate: krm-fn from PATH, nothing from the repository executable."""
    app = app_copy(tmp_path, "exec-fn")
    env = standalone_env(kustomize_bin, tmp_path)
    run(argv("init"), env, cwd=app)
    out = run(argv("generate"), env, cwd=app).stdout
    check_golden(OVERLAYS / "exec-fn/expected.yaml", out, update=False)
    assert_pinned(docs(out))


def test_generate_shim_refuses_an_exec_function_it_cannot_run(kubectl, tmp_path):
    """The shim never stands in for --enable-exec: an exec-function overlay fails."""
    app = app_copy(tmp_path, "exec-fn")
    assert "exec:" in (app / "pin.yaml").read_text()
    proc = run(argv("generate"), cmp_env(kubectl), cwd=app, check=False)
    assert proc.returncode == 125
    assert proc.stderr == b"kustomize shim (tests/e2e/argocd): ./pin.yaml declares an exec " \
                          b"function, which kubectl kustomize cannot run\n"


# --- C20: a missing tool, interpreter or module stops the sync at init, named ---------

def _init(tmp_path: Path, path: list[str]):
    app = app_copy(tmp_path, "legacy-plugin")
    return run(argv("init"), sidecar_env(path), cwd=app, check=False)


def test_c20_init_names_a_missing_krm_fn(tmp_path):
    proc = _init(tmp_path, [str(KUSTOMIZE_SHIM), *SYSTEM_PATH])
    assert shutil.which("krm-fn", path=os.pathsep.join(SYSTEM_PATH)) is None
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("krm-fn plugin: krm-fn is not on PATH (")
    assert lines[0].endswith("run the sidecar from the cmp-sidecar target of the krm-fn "
                             "Dockerfile")


def test_c20_init_names_a_missing_kustomize(tmp_path):
    proc = _init(tmp_path, [str(VENV_BIN), *SYSTEM_PATH])
    assert proc.returncode == 1
    assert proc.stderr.decode().startswith("krm-fn plugin: kustomize is not on PATH (")


def test_c20_init_names_a_missing_python(tmp_path):
    """krm-fn's interpreter is gone (a venv copied without its Python)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fn = bin_dir / "krm-fn"
    fn.write_text("#!/opt/krm-fn/bin/python\nfrom krm_fn.cli import main\nmain()\n")
    fn.chmod(0o755)
    proc = _init(tmp_path, [str(KUSTOMIZE_SHIM), str(bin_dir), *SYSTEM_PATH])
    assert proc.returncode == 1
    msg = proc.stderr.decode()
    assert msg.startswith(f"krm-fn plugin: {fn} cannot run (interpreter: "
                          f"/opt/krm-fn/bin/python): ")
    assert "not found" in msg


def test_c20_init_names_a_missing_module(tmp_path):
    """krm-fn runs but a dependency is missing: ruamel.yaml blocked in sys.modules."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fn = bin_dir / "krm-fn"
    fn.write_text(f"#!{PYTHON}\nimport sys\nsys.modules['ruamel'] = None\n"
                  f"from krm_fn.cli import main\nsys.argv[0] = 'krm-fn'\nmain()\n")
    fn.chmod(0o755)
    proc = _init(tmp_path, [str(KUSTOMIZE_SHIM), str(bin_dir), *SYSTEM_PATH])
    assert proc.returncode == 1
    msg = proc.stderr.decode()
    assert f"krm-fn plugin: {fn} cannot run (interpreter: {PYTHON}): " in msg
    assert msg.splitlines()[-1].endswith(
        "krm-fn: cannot import ruamel.yaml (ModuleNotFoundError: No module named "
        "'ruamel.yaml'; 'ruamel' is not a package); install ruamel.yaml into the Python that "
        f"runs krm-fn ({PYTHON})")
    assert proc.returncode == 1
