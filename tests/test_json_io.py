"""JSON in, JSON out (#34): a manifest written as JSON keeps being JSON. The edits krm-fn
writes into a JSON object are JSON (quoted keys and strings, no block style), and the
objects it emits after a JSON input are JSON objects of a stream, as kubectl reads a JSON
file (k8s.io/apimachinery yaml.NewYAMLOrJSONDecoder); the stream is applied to the real API
server of the control-plane tests."""
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
    """The JSON objects of a stream (whitespace between them), as kubectl decodes it;
    raises ValueError for anything that is not such a stream."""
    dec, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


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
        # the edited object alone is a JSON document json.loads reads
        first_end = json.JSONDecoder().raw_decode(out)[1]
        assert json.loads(out[:first_end]) == objs[0]
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
