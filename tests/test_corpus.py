"""Run the function over every manifest of ../shared/corpus/public (real manifests from
public projects): no traceback, exit 0, and every pod spec of a selected workload comes
out Guaranteed (kubernetes pkg/apis/core/v1/helper/qos/qos.go) with whole pinned CPUs.
Items of kinds without a registered pod spec come out byte for byte."""
import os
from pathlib import Path

import pytest
import yaml

from krm_fn import quantity
from krm_fn.workloads import get_path, locations
from tests.helpers import ROOT, run_cli

CORPUS = Path(os.environ.get("KRM_FN_CORPUS") or ROOT.parent / "shared" / "corpus" / "public")
FILES = sorted(CORPUS.glob("*/*.yaml"))
CONFIG = """\
apiVersion: krm-fn.dev/v1alpha1
kind: InferenceTuning
metadata: {name: corpus}
spec:
  workloads: {defaultCpus: "2", defaultMemory: 4Gi}
  # GPU-node sized pool: lws/vllm-gpu-lws.yaml asks for 125 CPUs per pod (126 after SMT
  # rounding), more than the default 64-CPU topology has outside the reserved cores
  nodePools:
  - name: inference
    topology: {sockets: 2, coresPerSocket: 64, threadsPerCore: 2}
  # Public manifests come without their clusters' objects (KServe's storage containers,
  # Knative's config, GKE's sidecar sizes): the verdict on each pod after admission is kept
  # as warnings here, and each tuned pod must get one (tests/testdata holds verdict cases)
  verdict: {onFailure: warning}
"""
# The cluster's Knative lets pods choose nodes: without this, Knative's webhook refuses a
# nodeSelector (knative/serving pkg/apis/config/features.go), so krm-fn gives the pods of a
# Serverless InferenceService none and fails with an error naming the flag.
KNATIVE_FEATURES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-features
  namespace: knative-serving
  annotations: {config.kubernetes.io/local-config: "true"}
data:
  kubernetes.podspec-nodeselector: enabled
"""


def guaranteed(spec: dict) -> list[str]:
    """Reasons the pod spec is not Guaranteed (empty list = Guaranteed)."""
    problems = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            res = c.get("resources") or {}
            for r in ("cpu", "memory"):
                lim = (res.get("limits") or {}).get(r)
                req = (res.get("requests") or {}).get(r, lim)
                if lim is None or quantity.parse(str(lim)).nanos == 0:
                    problems.append(f"{c.get('name')}: no {r} limit")
                elif quantity.parse(str(req)).nanos != quantity.parse(str(lim)).nanos:
                    problems.append(f"{c.get('name')}: {r} request {req} != limit {lim}")
    return problems


def framework_containers(spec: dict, at) -> list[dict]:
    return [spec[k] for k in at.container_keys if isinstance(spec.get(k), dict)]


def test_corpus_is_present():
    # The corpus lives in ../shared beside the checkout (as CI lays it out). Outside CI a
    # checkout without it skips, saying why; under CI a missing corpus fails.
    if not FILES and os.environ.get("CI") != "true":
        pytest.skip(f"public corpus not found at {CORPUS} (set KRM_FN_CORPUS to its folder)")
    assert len(FILES) >= 14, f"corpus not found at {CORPUS}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_manifest(path: Path, tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    src = path.read_text()
    files = [str(path)]
    if "InferenceService" in src:
        (tmp_path / "knative.yaml").write_text(KNATIVE_FEATURES)
        files.append(str(tmp_path / "knative.yaml"))
    p = run_cli(["run", "--config", str(cfg), *files])
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    verdicts = run_cli(["run", "--config", str(cfg), "--report", *files]).stderr
    assert "Pods after admission:" in verdicts or not any(
        locations(d) for d in yaml.safe_load_all(src) if d is not None)
    docs_in = [d for d in yaml.safe_load_all(src) if d is not None]
    docs_out = [d for d in yaml.safe_load_all(p.stdout) if d is not None]
    assert docs_out[:len(docs_in)] != [] and len(docs_out) >= len(docs_in)
    tuned = 0
    for before, after in zip(docs_in, docs_out):
        assert (before["kind"], before["metadata"]["name"]) == \
            (after["kind"], after["metadata"]["name"])
        locs = locations(after)
        if not locs:
            assert before == after
            continue
        for at in locs:
            spec = get_path(after, at.spec)
            if spec is None:
                continue
            tuned += 1
            assert guaranteed(spec) == [], f"{after['kind']} {after['metadata']['name']}"
            first = (framework_containers(spec, at) or spec.get("containers"))[0]
            cpu = quantity.parse(str(first["resources"]["limits"]["cpu"])).nanos
            assert cpu % (2 * quantity.NANO) == 0, cpu   # whole cores, SMT pairs
            cores = cpu // quantity.NANO
            env = {e["name"]: e.get("value") for e in first.get("env") or []}
            if at.ray_params is not None or "ray start" in " ".join(
                    map(str, first.get("command", []) + first.get("args", []))):
                # Ray sets OMP_NUM_THREADS per worker from num-cpus, which follows the pinned
                # CPUs (ray and threads rules)
                assert "OMP_NUM_THREADS" not in env and "PYTHON_CPU_COUNT" not in env
                if at.ray_params is not None:
                    params = get_path(after, at.ray_params)
                    assert params["num-cpus"] == str(cores)
                assert spec["nodeSelector"]["krm-fn.dev/cpu-pinning"] == "true"
                continue
            assert 1 <= int(env["OMP_NUM_THREADS"]) <= cores
            # the same count as the other thread vars: the pinned CPUs, or their physical
            # cores for an engine that runs one thread per core by itself (perCore)
            assert env["PYTHON_CPU_COUNT"] == env["OMP_NUM_THREADS"]
            assert spec["nodeSelector"]["krm-fn.dev/cpu-pinning"] == "true"
    if not tuned:
        assert p.stdout == src   # nothing selected: byte for byte
    else:
        assert any(d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kubelet-config-inference"
                   for d in docs_out[len(docs_in):])
    # unchanged documents are byte-identical: a second run over the output changes nothing
    again = run_cli(["run", "--config", str(cfg), "-"], p.stdout)
    assert again.returncode == 0, again.stderr
    assert again.stdout == p.stdout
