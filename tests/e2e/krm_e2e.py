"""Helpers for the end-to-end tests (real `kubectl kustomize` and `kpt` runs).

Golden files: the tests compare rendered output byte for byte with the expected files under
overlays/. Set KRM_FN_UPDATE_GOLDEN=1 to rewrite them from the current output instead (then
read the diff before committing); without it any difference fails.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# The tests' one compare/update helper (check_golden(path, bytes, update=False) for a second
# route that must match a golden file another test owns).
from tests.helpers import UPDATE, check_golden  # noqa: F401  (used by the e2e tests)

REPO = Path(__file__).resolve().parents[2]
OVERLAYS = REPO / "overlays"
SHIM_DIR = Path(__file__).resolve().parent          # holds the `docker` shim
# KRM_FN_E2E_VENV: a virtual environment with krm-fn installed from its wheel (.ci/run
# builds one); kustomize, kpt and the docker shim then run that installed copy, its
# `krm-fn`, its interpreter and its plugin tree, not this checkout. Unset: this venv.
INSTALLED = os.environ.get("KRM_FN_E2E_VENV")
VENV_BIN = Path(INSTALLED) / "bin" if INSTALLED else Path(sys.executable).parent
PYTHON = str(VENV_BIN / "python") if INSTALLED else sys.executable   # runs krm-fn
PLUGIN_HOME = Path(subprocess.run([VENV_BIN / "krm-fn", "plugin-home"], capture_output=True,
                                  text=True, check=True).stdout.strip()) if INSTALLED \
    else REPO / "plugin"
TIMEOUT = 300


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not on PATH; the e2e tests run the real {tool}")
    return path


def tool_env(**extra: str) -> dict:
    """Environment for kubectl/kpt: the docker shim first, then the venv's krm-fn."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(SHIM_DIR), str(VENV_BIN), env.get("PATH", "")])
    env["KRM_FN_PYTHON"] = PYTHON
    env.pop("KUSTOMIZE_PLUGIN_HOME", None)
    env.update(extra)
    return env


def run(cmd: list, env: dict, cwd: Path | str | None = None, check: bool = True):
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True,
                          timeout=TIMEOUT)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
                    f"stdout:\n{proc.stdout.decode(errors='replace')}\n"
                    f"stderr:\n{proc.stderr.decode(errors='replace')}")
    return proc


def tree(root: Path, skip: tuple = ()) -> dict:
    """{relative posix path: bytes} of every file under root, minus the `skip` entries."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not any(rel == s or rel.startswith(s + "/") for s in skip):
            out[rel] = p.read_bytes()
    return out


def check_golden_tree(expected: Path, actual_root: Path, skip: tuple = (),
                      names: dict | None = None) -> None:
    """Every file under actual_root must exist under expected with the same bytes, and
    expected must hold no other file. `names` maps an actual relative path to the name it
    has under expected (when the real name cannot be stored there)."""
    names = names or {}
    actual = {names.get(rel, rel): data for rel, data in tree(actual_root, skip).items()}
    if UPDATE:
        if expected.exists():
            shutil.rmtree(expected)
    else:
        assert expected.is_dir(), f"{expected} is missing; run with KRM_FN_UPDATE_GOLDEN=1"
        assert sorted(tree(expected)) == sorted(actual), \
            f"file set differs from {expected.relative_to(REPO)}"
    for rel, data in actual.items():
        check_golden(expected / rel, data)


def docs(text: bytes | str) -> list:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def find(objs: list, kind: str, name: str) -> dict:
    hits = [o for o in objs if o.get("kind") == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, f"expected exactly one {kind} {name}, found {len(hits)}"
    return hits[0]


def assert_pinned(objs: list) -> None:
    """The function really ran: kustomize and kpt skip functions silently in some modes."""
    dep = find(objs, "Deployment", "vllm-cpu")
    spec = dep["spec"]["template"]["spec"]
    vllm = next(c for c in spec["containers"] if c["name"] == "vllm")
    assert vllm["resources"] == {"requests": {"cpu": "4", "memory": "12Gi"},
                                 "limits": {"cpu": "4", "memory": "12Gi"}}
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    # vLLM runs one thread per physical core: 4 pinned CPUs, 2 threads per core
    assert env["OMP_NUM_THREADS"] == "2" and env["MKL_NUM_THREADS"] == "2"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env     # vLLM 0.8.5: its default all does not bind
    sidecar = next(c for c in spec["containers"] if c["name"] == "metrics-exporter")
    assert sidecar["resources"]["requests"] == sidecar["resources"]["limits"]
    shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"].get("sizeLimit"), "memory-backed /dev/shm got no sizeLimit"
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "m7i.8xlarge"}
    isvc = find(objs, "InferenceService", "qwen-chat")
    res = isvc["spec"]["predictor"]["model"]["resources"]
    assert res["requests"]["cpu"] == res["limits"]["cpu"] == "4"
    assert res["requests"]["memory"] == res["limits"]["memory"] == "6Gi"
    cm = find(objs, "ConfigMap", "kubelet-config-cpu-inference")
    kubelet = yaml.safe_load(cm["data"]["kubelet-config.yaml"])
    assert kubelet["cpuManagerPolicy"] == "static"
    assert kubelet["reservedSystemCPUs"] == "0-1,16-17"


def krm_fn_location() -> Path:
    """Where the krm-fn the tools run is imported from (its package directory), asked of
    that interpreter from `/` so that no checkout on the path can stand in for it."""
    out = subprocess.run([PYTHON, "-c", "import krm_fn, os; print(os.path.dirname("
                                        "os.path.abspath(krm_fn.__file__)))"],
                         capture_output=True, text=True, check=True, cwd="/",
                         env={"PATH": os.environ.get("PATH", "")}).stdout.strip()
    return Path(out)
