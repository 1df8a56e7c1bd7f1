"""The vendored CRDs of tests/controlplane/crds/ (docs/testing.md): intact and complete.

Intact: every file sources.json records is there with its sha256, no other file is, and
each parses as apiextensions.k8s.io/v1 CustomResourceDefinition(s).
Complete: every kind an API server must know for krm-fn's objects has a CRD that serves
it, or its group is in sources.json's `unavailable` list (with the reason): the non-core
kinds of krm_fn.workloads.KINDS, the objects of every golden output and example, and the
objects krm-fn emits itself (every node format and the monitoring rules, rendered here).
Objects annotated `config.kubernetes.io/local-config: "true"` stay client-side (the KRM
functions specification) and need none. Offline: tools/fetch_crds.py re-downloads.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from krm_fn import workloads
from tests.helpers import ROOT, TESTDATA

CRDS = ROOT / "tests" / "controlplane" / "crds"
SOURCES = json.loads((CRDS / "sources.json").read_text())
LOCAL_CONFIG = "config.kubernetes.io/local-config"

# API groups kube-apiserver serves itself that have a dot in their name (a CRD's group must
# have one, so every group without a dot is built in: core, apps, batch, policy, ...).
BUILTIN_DOTTED = {"admissionregistration.k8s.io", "apiextensions.k8s.io",
                  "apiregistration.k8s.io", "authentication.k8s.io",
                  "authorization.k8s.io", "certificates.k8s.io", "coordination.k8s.io",
                  "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io",
                  "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io",
                  "rbac.authorization.k8s.io", "resource.k8s.io", "scheduling.k8s.io",
                  "storage.k8s.io", "storagemigration.k8s.io"}


def builtin(group: str) -> bool:
    return "." not in group or group in BUILTIN_DOTTED


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _docs(path: Path) -> list:
    return [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER)
            if d is not None]


@functools.cache
def _crds() -> list[dict]:
    return [d for e in SOURCES["files"] for d in _docs(CRDS / e["file"])]


@pytest.fixture(scope="module")
def served() -> dict:
    """(group, kind) -> the versions its CRD serves."""
    out: dict = {}
    for crd in _crds():
        spec = crd["spec"]
        key = (spec["group"], spec["names"]["kind"])
        assert key not in out, f"two CRDs for {key}"
        out[key] = {v["name"] for v in spec["versions"] if v.get("served")}
    return out


UNAVAILABLE = {(u["group"], k): u for u in SOURCES["unavailable"] for k in u["kinds"]}


# --- intact --------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", SOURCES["files"], ids=lambda e: e["file"])
def test_vendored_file_is_the_recorded_release(entry):
    path = CRDS / entry["file"]
    assert path.is_file(), f"{entry['file']} missing: run tools/fetch_crds.py --update"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], (
        f"{entry['file']} is not {entry['module']}@{entry['version']} {entry['path']} "
        f"as recorded: vendored files are kept byte for byte (tools/fetch_crds.py)")
    for key in ("project", "module", "version", "path"):
        assert entry.get(key), f"{entry['file']}: no {key}"
    assert Path(entry["file"]).parts[0] != entry["file"], "one directory per project"


def test_every_vendored_file_is_recorded():
    on_disk = {p.relative_to(CRDS).as_posix() for p in CRDS.rglob("*") if p.is_file()}
    assert on_disk - {"sources.json"} == {e["file"] for e in SOURCES["files"]}


@pytest.mark.parametrize("entry", SOURCES["files"], ids=lambda e: e["file"])
def test_vendored_file_is_v1_custom_resource_definitions(entry):
    docs = _docs(CRDS / entry["file"])
    assert docs
    for crd in docs:
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["kind"] == "CustomResourceDefinition"
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        assert spec["scope"] in ("Namespaced", "Cluster")
        versions = spec["versions"]
        assert [v["name"] for v in versions if v["storage"]].__len__() == 1
        for v in versions:
            assert isinstance(v["served"], bool)
            assert v["schema"]["openAPIV3Schema"]["type"] == "object", (
                f"{crd['metadata']['name']} {v['name']}: no structural schema")


# --- complete ------------------------------------------------------------------------------

def test_every_registered_workload_kind_has_a_crd(served):
    needed = {key for key in workloads.KINDS if not builtin(key[0])}
    assert needed, "the registry has custom kinds"
    missing = sorted(k for k in needed if k not in served and k not in UNAVAILABLE)
    assert missing == [], "registered kinds without a vendored CRD (tests/controlplane/crds)"


def _golden_objects() -> list[tuple[str, dict]]:
    """(file, object) of every golden output and example: the items of each golden case's
    expected ResourceList, the expected output of the overlays, the rendered Flux example
    and the bases' resources."""
    out = []
    for path in sorted(TESTDATA.glob("*/expected.yaml")):
        for doc in _docs(path):
            if isinstance(doc, dict) and isinstance(doc.get("items"), list):
                out += [(str(path.relative_to(ROOT)), o) for o in doc["items"]]
    examples = [*ROOT.glob("overlays/*/expected.yaml"), *ROOT.glob("overlays/*/expected/**/*.yaml"),
                ROOT / "deploy" / "flux" / "example-rendered.yaml",
                *(p for p in ROOT.glob("bases/*/*.yaml") if p.name != "kustomization.yaml")]
    for path in sorted(examples):
        out += [(str(path.relative_to(ROOT)), o) for o in _docs(path)]
    return [(f, o) for f, o in out if isinstance(o, dict)]


def _emitted_objects() -> list[tuple[str, dict]]:
    """What krm-fn emits itself: every node format (json6902 with the node's configz as
    baseline) and the monitoring rules, for one pinned Deployment."""
    from krm_fn.node.formats import FORMATS
    from krm_fn.pipeline import transform
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "llm", "namespace": "serving"},
                  "spec": {"template": {"spec": {"containers": [{
                      "name": "vllm", "image": "vllm/vllm-openai-cpu:v0.10.0",
                      "resources": {"requests": {"cpu": "8", "memory": "16Gi"},
                                    "limits": {"cpu": "8", "memory": "16Gi"}}}]}}}}
    baseline = json.loads((ROOT / "tests" / "node" / "data" / "configz.json").read_text())
    # gke and aks write ConfigMaps (core, no CRD), and fail on krm-fn's default reservation
    # (their kubelets run the platform's own: krm_fn/node/platform_reserved.py)
    formats = [f for f in FORMATS if f not in ("gke", "aks")]
    cfg = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
           "metadata": {"name": "all-outputs"},
           "spec": {"output": {"formats": formats, "baseline": baseline,
                               "monitoring": {"enabled": True, "grafanaDashboard": True}}}}
    out = transform([deployment], cfg)
    assert [r.message for r in out.results if r.severity == "error"] == []
    kinds = {o["kind"] for o in out.emitted}
    assert {"PrometheusRule", "KubeletConfig", "PerformanceProfile"} <= kinds
    return [("emitted", o) for o in out.emitted]


def _applied(objects):
    """(file, group, version, kind) of the objects an API server gets, custom groups only."""
    for f, o in objects:
        annotations = (o.get("metadata") or {}).get("annotations") or {}
        if annotations.get(LOCAL_CONFIG) == "true":
            continue
        api, kind = o.get("apiVersion"), o.get("kind")
        assert isinstance(api, str) and isinstance(kind, str), f"{f}: object without a kind"
        group, _, version = api.rpartition("/")
        if not builtin(group):
            yield f, group, version, kind


@pytest.fixture(scope="module")
def applied():
    found = list(_applied(_golden_objects() + _emitted_objects()))
    assert len({f for f, *_ in found}) > 20
    return found


def test_every_applied_object_has_a_crd_serving_its_version(applied, served):
    missing = sorted({(g, v, k, f) for f, g, v, k in applied
                      if (g, k) not in UNAVAILABLE and v not in served.get((g, k), ())})
    assert missing == [], "objects whose group/version/kind no vendored CRD serves"


def test_unavailable_entries_are_needed_have_no_crd_and_say_why(applied, served):
    needed = {(g, k) for _, g, _, k in applied} | set(workloads.KINDS)
    for key, entry in UNAVAILABLE.items():
        assert key in needed, f"{key} is listed as unavailable but nothing needs it"
        assert key not in served, f"{key} is listed as unavailable but has a vendored CRD"
        assert len(entry["reason"]) > 40 and entry["project"]


def test_every_vendored_crd_is_needed(applied):
    """Every vendored file holds a CRD some object needs (a released file is kept whole, so
    the VPA's checkpoint CRD comes with the VPA's: deploy/vpa-v1-crd-gen.yaml)."""
    needed = {(g, k) for _, g, _, k in applied} | set(workloads.KINDS)
    extra = sorted(e["file"] for e in SOURCES["files"]
                   if not any((c["spec"]["group"], c["spec"]["names"]["kind"]) in needed
                              for c in _docs(CRDS / e["file"])))
    assert extra == [], "vendored CRD files of kinds nothing needs"
