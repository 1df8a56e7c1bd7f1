"""JSON in, JSON out (#34): a manifest written as JSON keeps being JSON. The edits krm-fn
writes into a JSON object are JSON (quoted keys and strings, no block style), and the
objects it emits after a JSON input are JSON documents of a YAML stream that starts with a
`---` line: kubectl reads a stream that starts with `{` as consecutive JSON objects only
(k8s.io/apimachinery yaml.NewYAMLOrJSONDecoder), which kustomize, kpt and krm-fn itself do
not read (they would see the first object alone), while every one of them reads the YAML
stream. The stream is applied to the real API server of the control-plane tests and built
by kustomize."""
from __future__ import annotations

import json

import yaml

from tests.helpers import run_cli

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "vllm", "namespace": "serving"},
    "spec": {"selector": {"matchLabels": {"app": "vllm"}},
             "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": {"containers": [{
                 "name": "vllm", "image": "registry.example/vllm-cpu:v0.9.0",
                 "resources": {"requests": {"cpu": "3500m", "memory": "12Gi"},
                               "limits": {"cpu": "3500m", "memory": "12Gi"}}}]}}}}


def stream(text: str) -> list:
    """The JSON objects of a YAML stream whose documents are each one JSON object (after a
    first `---` line); raises ValueError for anything else."""
    assert text.startswith("---\n"), text[:40]
    return [json.loads(d) for d in text[4:].split("\n---\n")]


def run(tmp_path, text: str, name: str = "in.json"):
    (tmp_path / name).write_text(text)
    p = run_cli(["run", name], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_json_manifest_comes_back_as_json(tmp_path):
    for text in (json.dumps(DEPLOYMENT, indent=2) + "\n", json.dumps(DEPLOYMENT)):
        out = run(tmp_path, text)
        objs = stream(out)
        assert [o["kind"] for o in objs] == ["Deployment", "ConfigMap"]
        # the same objects as for the YAML spelling of the manifest
        as_yaml = run(tmp_path, yaml.safe_dump(DEPLOYMENT, sort_keys=False), "in.yaml")
        assert objs == list(yaml.safe_load_all(as_yaml))
        assert objs == list(yaml.safe_load_all(out))        # a YAML reader's view
        c = objs[0]["spec"]["template"]["spec"]["containers"][0]
        assert c["resources"]["limits"]["cpu"] == "4"            # a JSON string, rounded
        assert c["env"][0] == {"name": "OMP_NUM_THREADS", "value": "2"}


def test_a_json_object_inside_a_yaml_stream_stays_json(tmp_path):
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" + \
        json.dumps(DEPLOYMENT) + "\n"
    out = run(tmp_path, text, "in.yaml")
    docs = out.split("\n---\n")
    assert docs[0] == "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}"
    assert json.loads(docs[1])["kind"] == "Deployment"          # the JSON item is JSON
    assert docs[2].startswith("apiVersion: v1\nkind: ConfigMap\n")   # emitted: YAML


def test_the_json_stream_is_applied_by_the_api_server(controlplane, tmp_path):
    out = run(tmp_path, json.dumps(DEPLOYMENT, indent=2) + "\n")
    (tmp_path / "out.json").write_text(out)
    controlplane.ensure_namespace("serving")
    p = controlplane.kubectl("apply", "--server-side", "--dry-run=server",
                             "--validate=strict", "--field-manager=krm-fn-test", "-f",
                             str(tmp_path / "out.json"))
    assert p.returncode == 0, p.stderr
    assert "deployment.apps/vllm serverside-applied (server dry run)" in p.stdout
    assert "configmap/kubelet-config-inference serverside-applied (server dry run)" in p.stdout


def test_kustomize_and_krm_fn_read_every_object_of_the_json_output(tmp_path):
    import shutil
    import subprocess
    out = run(tmp_path, json.dumps(DEPLOYMENT) + "\n")
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "out.yaml").write_text(out)
    (tmp_path / "k" / "kustomization.yaml").write_text("resources: [out.yaml]\n")
    kubectl = shutil.which("kubectl")
    if kubectl:
        built = subprocess.run([kubectl, "kustomize", str(tmp_path / "k")], capture_output=True,
                               text=True, check=True).stdout
        assert sorted(o["kind"] for o in yaml.safe_load_all(built)) == ["ConfigMap",
                                                                       "Deployment"]
    # and `krm-fn run --mode validate` reads its own output (the GitOps check)
    p = run_cli(["run", "--mode", "validate", "k/out.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
