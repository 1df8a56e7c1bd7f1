"""Text at the edges of a stream (hostile round on KRM and YAML round-trips): what is
written after the end of an input must not change what the input's last document reads
as. A block scalar that keeps its final line break (`|`, `>`, `|+`) and ends the text
without one would take in the line break written after it (`echo hi` read as `echo hi\\n`):
its header gets the strip indicator instead, which reads the same value."""
from __future__ import annotations

import yaml

from tests.helpers import run_cli

POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: s\n"
       "    image: srv:1\n    resources: {requests: {cpu: 3500m, memory: 1Gi}}\n")
SCRIPT = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  script: HEADER\n"
          "    echo hi")


def _scripts(text: str) -> list:
    docs = [d for d in yaml.safe_load_all(text) if d]
    items = docs[0]["items"] if docs[0].get("kind") == "ResourceList" else docs
    return [o["data"]["script"] for o in items if o.get("kind") == "ConfigMap"
            and o["metadata"]["name"] == "cm"]


def test_a_final_block_scalar_keeps_its_value_after_emitted_documents(tmp_path):
    for header in ("|", ">", "|+", "|2"):
        text = POD + "---\n" + SCRIPT.replace("HEADER", header)
        assert _scripts(text) == ["echo hi"]
        (tmp_path / "in.yaml").write_text(text)
        p = run_cli(["run", "in.yaml"], cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert _scripts(p.stdout) == ["echo hi"], (header, p.stdout[-200:])


def test_a_final_block_scalar_keeps_its_value_when_files_are_joined(tmp_path):
    (tmp_path / "a.yaml").write_text(SCRIPT.replace("HEADER", "|"))
    (tmp_path / "b.yaml").write_text(POD)
    p = run_cli(["run", "a.yaml", "b.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert _scripts(p.stdout) == ["echo hi"]


def test_a_final_block_scalar_of_a_resource_list_keeps_its_value():
    items = "".join("- " + "\n  ".join(t.splitlines()) + "\n" for t in (POD,))
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + items
            + "- " + "\n  ".join(SCRIPT.replace("HEADER", "|").splitlines()))
    assert _scripts(text) == ["echo hi"]
    p = run_cli([], text)
    assert p.returncode == 0, p.stderr
    assert _scripts(p.stdout) == ["echo hi"]


def test_inserted_lines_take_the_line_break_of_their_own_item(tmp_path):
    # one CRLF file (or a stray CRLF line) in the run does not make an LF item's new lines
    # CRLF: each item's inserted lines end as most of its own lines do
    (tmp_path / "a.yaml").write_bytes(POD.encode())
    (tmp_path / "b.yaml").write_bytes(SCRIPT.replace("HEADER", "|").replace(
        "\n", "\r\n").encode() + b"\r\n")
    for files in (["a.yaml", "b.yaml"], ["b.yaml", "a.yaml"]):
        p = run_cli(["run", *files], cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        out = p.stdout.encode() if isinstance(p.stdout, str) else p.stdout
        pod = out[out.index(b"kind: Pod"):]
        pod = pod[:pod.index(b"---")] if b"---" in pod else pod
        assert b"\r" not in pod, pod[:300]
    (tmp_path / "c.yaml").write_bytes(b"# written on windows\r\n" + POD.encode())
    p = run_cli(["run", "c.yaml"], cwd=tmp_path)
    out = p.stdout.encode() if isinstance(p.stdout, str) else p.stdout
    assert out.count(b"\r") == 1


def test_a_document_with_properties_on_its_marker_line_is_edited(tmp_path):
    # `--- !!map` / `--- &a`: the properties stand before the first key; the item is edited
    # from that key on, the marker line as written
    for props in ("!!map", "&a"):
        (tmp_path / "in.yaml").write_text(f"--- {props}\n" + POD)
        p = run_cli(["run", "in.yaml"], cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"--- {props}\napiVersion: v1\nkind: Pod\n")
        (pod,) = [d for d in yaml.safe_load_all(p.stdout) if d and d["kind"] == "Pod"]
        assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "4"


def test_an_explicit_tag_decides_what_a_yaml_reader_types(tmp_path):
    # `!!str 016` is the string "016" (the quantity 16) to kubectl and kustomize, not the
    # YAML 1.1 octal 14; `!!int 0x4` is the number 4, which a quantity field refuses
    pod = POD.replace("cpu: 3500m", "cpu: !!str 016")
    (tmp_path / "in.yaml").write_text(pod)
    p = run_cli(["run", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (out,) = [d for d in yaml.safe_load_all(p.stdout) if d and d["kind"] == "Pod"]
    assert out["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "16"
    (tmp_path / "in.yaml").write_text(POD.replace("cpu: 3500m", "cpu: !!int 0x4"))
    p = run_cli(["run", "in.yaml"], cwd=tmp_path)
    assert p.returncode == 1
    assert "cpu `0x4` is 4 to kubectl, kustomize and the API server" in p.stderr
