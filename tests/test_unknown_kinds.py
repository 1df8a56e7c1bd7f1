"""Kinds krm-fn does not know that hold pod specs (krm_fn/pipeline/select.py
pod_spec_paths, _unknown_kind): found by shape, warned about when the selector would have
chosen them, never tuned."""
from __future__ import annotations

import pytest

from krm_fn.pipeline.select import pod_spec_paths
from tests.helpers import run_fn

_POD = {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.8.0"}]}


@pytest.mark.parametrize("obj, want", [
    ({"spec": {"template": {"spec": _POD}}}, ["spec.template.spec"]),
    ({"spec": {"workers": [{"template": {"spec": _POD}}, {"template": {"spec": _POD}}]}},
     ["spec.workers[*].template.spec"]),
    ({"spec": {"replicaSpecs": {"Launcher": {"template": {"spec": _POD}},
                                "Worker": {"template": {"spec": _POD}}}}},
     ["spec.replicaSpecs.Launcher.template.spec", "spec.replicaSpecs.Worker.template.spec"]),
    # a container without image is not a pod spec's; an empty list is none
    ({"spec": {"containers": [{"name": "server"}]}}, []),
    ({"spec": {"containers": []}}, []),
    # metadata and status are not searched
    ({"metadata": {"x": _POD}, "status": {"y": _POD}}, []),
    ({"data": {"containers": "none"}}, []),
    # a key with a dot is shown quoted: no spec.extraKinds path names it
    ({"spec": {"groups": {"x.y": {"template": {"spec": _POD}}}}},
     ['spec.groups."x.y".template.spec']),
])
def test_pod_spec_paths_by_shape(obj, want):
    assert pod_spec_paths(obj) == want


def _list(*items: str, config: str = "") -> str:
    body = "".join(items)
    return ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + body
            + config)


_CLONESET = """- apiVersion: apps.kruise.io/v1alpha1
  kind: CloneSet
  metadata: {name: llm, namespace: ml, labels: {app: llm}}
  spec:
    template:
      spec:
        containers:
        - {name: server, image: vllm/vllm-openai:v0.8.0}
"""


def test_a_selected_unknown_kind_gets_one_warning_and_is_left_untouched():
    out = run_fn([], _list(_CLONESET))
    assert out.returncode == 0
    assert ("- message: \"CloneSet (apps.kruise.io/v1alpha1) has pod specs at "
            "spec.template.spec, but krm-fn does not support the kind CloneSet, so it left "
            "it untouched: no exclusive CPUs, thread counts or verdict for its pods. To have "
            "them tuned, declare the kind in spec.extraKinds: {group: apps.kruise.io, kind: "
            "CloneSet, podSpecs: [spec.template.spec]} "
            "(https://github.com/krm-fn/krm-fn/blob/main/docs/configuration.md)\"\n"
            "  severity: warning\n") in out.stdout
    assert out.stdout.split("results:\n")[0] == _list(_CLONESET)   # untouched


def test_an_unknown_kind_the_selector_would_not_choose_gets_nothing():
    config = ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
              "  metadata: {name: pin}\n  spec:\n    selector: {matchLabels: {app: other}}\n")
    out = run_fn([], _list(_CLONESET, config=config))
    assert "CloneSet (apps.kruise.io/v1alpha1)" not in out.stdout


def test_a_pod_spec_under_a_dotted_key_is_not_offered_as_an_extra_kinds_path():
    """Hostile review: the suggested podSpecs path `spec.groups.x.y.template.spec` named
    nothing (and a quoted key is refused): such a pod spec is said to be undeclarable."""
    dotted = """- apiVersion: example.com/v1
  kind: Multi
  metadata: {name: m}
  spec:
    roles:
    - template:
        spec:
          containers:
          - {name: server, image: vllm/vllm-openai:v0.8.0}
    groups:
      x.y:
        template:
          spec:
            containers:
            - {name: server, image: vllm/vllm-openai:v0.8.0}
"""
    out = run_fn([], _list(dotted))
    assert out.returncode == 0
    assert ("To have them tuned, declare the kind in spec.extraKinds: {group: example.com, "
            "kind: Multi, podSpecs: [spec.roles[*].template.spec]} "
            "(spec.groups.\\\"x.y\\\".template.spec cannot be declared: a key with a dot in "
            "it cannot be named in a spec.extraKinds path) (https://") in out.stdout
    only = dotted.replace("    roles:\n    - template:\n        spec:\n          containers:\n"
                          "          - {name: server, image: vllm/vllm-openai:v0.8.0}\n", "")
    out = run_fn([], _list(only))
    assert ("a key with a dot in it cannot be named in a spec.extraKinds path, so these pod "
            "specs cannot be declared either") in out.stdout
