"""Every object krm-fn emits, accepted by a real API server (issue #31; docs/testing.md).

The control plane of tests/controlplane (kube-apiserver, etcd, the controller manager's
quota and service-account controllers and kube-scheduler at the release its go.mod pins,
started once per test session by the `controlplane` fixture of tests/conftest.py) gets the
CustomResourceDefinitions of tests/controlplane/crds, then each render is applied the way
Flux applies (server-side apply) as a dry run with strict field validation:

    kubectl apply --server-side --dry-run=server --validate=strict -f <render>

- every overlay's expected output (overlays/*/expected.yaml, overlays/kpt*/expected/): each
  object must be accepted;
- every golden case that exits 0 (tests/testdata/*/expected.yaml) and the function's output
  on every manifest of the public corpus (../shared/corpus/public, with
  tests/test_corpus.py's configuration): each object must be accepted, except in the
  renders named in INPUT_REFUSED, whose input holds an object the API server refuses as
  written: there the render may carry exactly the input's refusals, nothing more;
- items marked `config.kubernetes.io/local-config: "true"` are left out (kustomize and kpt
  drop them), and so are objects of the few API groups whose CRD no reachable release
  publishes (tests/controlplane/crds/sources.json `unavailable`, with the reason each);
- the namespaces the objects name are created first (a render's Namespace object is
  applied like the rest).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests import test_corpus
from tests.helpers import ROOT, TESTDATA, case_input, cases, run_cli

LOCAL_CONFIG = "config.kubernetes.io/local-config"
NO_CRD = "no matches for kind"      # kubectl: the API server serves no such kind


def _yaml() -> YAML:
    y = YAML()          # round trip: every scalar goes to the API server as written
    y.preserve_quotes = True
    y.width = 4096
    return y


def _documents(text: str) -> list:
    """The objects of a render: a ResourceList's items, or the documents of a stream."""
    docs = [d for d in _yaml().load_all(text) if d is not None]
    if len(docs) == 1 and docs[0].get("kind") == "ResourceList":
        return list(docs[0].get("items") or [])
    return docs


def _no_crd() -> set:
    """API groups whose CRD no reachable release publishes (tests/controlplane/crds/
    sources.json `unavailable`, each with its reason; tests/test_crds.py keeps it true)."""
    sources = json.loads((ROOT / "tests/controlplane/crds/sources.json").read_text())
    return {entry["group"] for entry in sources["unavailable"]}


NO_CRD_GROUPS = _no_crd()


def _applied(docs: list) -> list:
    """The objects kustomize and kpt pass on (no local config) of kinds the API server can
    serve here (not in NO_CRD_GROUPS)."""
    return [d for d in docs
            if str(((d.get("metadata") or {}).get("annotations") or {})
                   .get(LOCAL_CONFIG, "")).lower() != "true"
            and str(d.get("apiVersion", "")).rpartition("/")[0] not in NO_CRD_GROUPS]


def _dump(docs: list) -> str:
    out = io.StringIO()
    _yaml().dump_all(docs, out)
    return out.getvalue()


def refusals(cp, docs: list, tmp_path: Path, name: str = "render") -> list:
    """kubectl's error lines (the file path replaced by `<render>`) when `docs` are applied
    to control plane `cp` as a server-side dry run with strict field validation, after
    the namespaces they name are created; [] when the API server accepts every object."""
    def objects(ds):        # a List's items are objects of their own for kubectl
        for d in ds:
            if isinstance(d, dict) and str(d.get("kind", "")).endswith("List") and \
                    isinstance(d.get("items"), list):
                yield from objects(d["items"])
            elif isinstance(d, dict):
                yield d
    for ns in sorted({(d.get("metadata") or {}).get("namespace")
                      for d in objects(docs)} - {None}):
        cp.ensure_namespace(str(ns))
    path = tmp_path / f"{name}.yaml"
    path.write_text(_dump(docs))
    p = cp.kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict",
                   "--field-manager=krm-fn-test", "-f", str(path))
    lines = [line.replace(str(path), "<render>") for line in p.stderr.splitlines()
             if line.strip()]
    assert p.returncode == 0 or lines, f"kubectl failed without a message: {p}"
    return lines if p.returncode else []


# Renders whose input holds an object the API server refuses as written: the render may
# carry exactly the same refusal (krm-fn passes the object on), nothing more. Every other
# render must be accepted whole.
INPUT_REFUSED = {
    "golden/c17-comments-order": "a ConfigMap's `enabled: on` and `mode: 0644`, kept as "
                                 "written on purpose: YAML 1.1 (kubectl) reads a boolean and "
                                 "the number 420 where ConfigMap data must be strings",
    "corpus/gke/triton-deployment.yaml": "the public manifest's `$K8S_SA_NAME` placeholder "
                                         "as serviceAccountName",
    "corpus/kserve/bloom-560m.yaml": "the public manifest's `nodeName` directly under the "
                                     "InferenceService's spec, a field its CRD does not have",
}


def assert_no_new_refusal(cp, before: list, after: list, tmp_path: Path,
                          render: str) -> None:
    """The API server refuses nothing in `after` (the render) that it accepts in `before`
    (its input): every error line of the render is one of the input's (an input object
    the API server refuses as written, which krm-fn passes on untouched or edits without
    adding a reason). Raises AssertionError listing the new refusals."""
    got = refusals(cp, after, tmp_path, "render")
    if not got:
        return
    missing = [line for line in got if NO_CRD in line]
    assert not missing, ("a kind without its CRD in tests/controlplane/crds:\n"
                         + "\n".join(missing))
    assert render in INPUT_REFUSED, "the API server refuses the render:\n" + "\n".join(got)
    known = set(refusals(cp, before, tmp_path, "input")) if before else set()
    new = [line for line in got if line not in known]
    assert not new, "the API server refuses the render:\n" + "\n".join(new)


def _golden_cases() -> list:
    """The golden cases whose render succeeds (no expected-exit) and emits objects the API
    server can serve here (not only local config or NO_CRD_GROUPS kinds)."""
    return [case for case in cases()
            if not (TESTDATA / case / "expected-exit").exists()
            and (TESTDATA / case / "expected.yaml").exists()
            and _applied(_documents((TESTDATA / case / "expected.yaml").read_text("utf-8")))]


def _overlay_renders() -> list:
    overlays = ROOT / "overlays"
    files = sorted(overlays.glob("*/expected.yaml")) + sorted(overlays.glob("*/expected/*.yaml"))
    return [pytest.param(f, id=f"overlay/{f.relative_to(overlays)}") for f in files
            if _applied(_documents(f.read_text("utf-8")))]      # not only local config


@pytest.mark.parametrize("case", _golden_cases())
def test_golden_renders_are_accepted(controlplane, case, tmp_path):
    after = _applied(_documents((TESTDATA / case / "expected.yaml").read_text("utf-8")))
    before = _applied(_documents(case_input(case)))
    assert_no_new_refusal(controlplane, before, after, tmp_path, f"golden/{case}")


@pytest.mark.parametrize("path", _overlay_renders())
def test_overlay_renders_are_accepted(controlplane, path, tmp_path):
    docs = _applied(_documents(path.read_text("utf-8")))
    assert refusals(controlplane, docs, tmp_path) == []


@pytest.mark.parametrize("path", test_corpus.FILES,
                         ids=lambda p: f"corpus/{p.parent.name}/{p.name}")
def test_corpus_renders_are_accepted(controlplane, path, tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(test_corpus.CONFIG)
    files = [str(path)]
    if "InferenceService" in path.read_text():
        (tmp_path / "knative.yaml").write_text(test_corpus.KNATIVE_FEATURES)
        files.append(str(tmp_path / "knative.yaml"))
    p = run_cli(["run", "--config", str(cfg), *files])
    assert p.returncode == 0, p.stderr
    before = _applied([d for f in files for d in _documents(Path(f).read_text("utf-8"))])
    assert_no_new_refusal(controlplane, before, _applied(_documents(p.stdout)), tmp_path,
                          f"corpus/{path.parent.name}/{path.name}")
