"""Explicit standard tags on the scalars of a ResourceList (krm_fn/yaml/load.py): `!!str`
makes a string of any plain scalar (`!!str null` is the string "null", not null), as every
YAML reader of the chain reads it (kustomize's kyaml, go-yaml v3; the API server's
sigs.k8s.io/yaml, go-yaml v2 decode.go); `!!null`, `!!bool`, `!!int` and `!!float` on a
value go-yaml v2 reads as another type are refused, as go-yaml refuses them (resolve.go:
"cannot decode !!str `foo` as a !!null"), and so are `!!binary` and `!!timestamp`, whose
value the API server receives as another string."""
from __future__ import annotations

import pytest

from krm_fn import resourcelist
from krm_fn.yaml.load import InputError
from tests.helpers import run_fn, without_results

HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
CONFIG = ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
          "  metadata: {name: pin}\n  spec: {workloads: {threads: {env: [OMP_NUM_THREADS]}}}\n")
CM = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: c
    annotations:
      a: !!str null
      b: !!str true
      c: !!str ~
      d: !!str 1
      e: !!str
      f: ! null
      g: null
      h: ~
  data:
    x: !!str NULL
"""
WANT = {"a": "null", "b": "true", "c": "~", "d": "1", "e": "", "f": "null", "g": None,
        "h": None}


def _items(text: str) -> list:
    return resourcelist.parse(text, True).items


def test_str_tag_makes_a_string_of_a_null_spelling():
    (cm,) = _items(HEAD + CM)
    assert cm["metadata"]["annotations"] == WANT
    assert cm["data"] == {"x": "NULL"}


def test_str_tag_is_read_the_same_by_the_builder_of_items_with_aliases():
    # an anchor in the item sends it through the full builder (Builder._build)
    text = HEAD + CM.replace("    name: c\n", "    name: &n c\n    labels: {l: *n}\n")
    (cm,) = _items(text)
    assert cm["metadata"]["annotations"] == WANT
    assert cm["metadata"]["labels"] == {"l": "c"}
    anchored = HEAD + "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n" \
        "  data: {x: &a null, y: *a, z: &b !!str null, w: *b}\n"
    assert _items(anchored)[0]["data"] == {"x": None, "y": None, "z": "null", "w": "null"}


DEPLOY = """\
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: srv}
  spec:
    template:
      spec:
        containers:
        - name: server
          image: srv:1
          env:
          - name: FOO
            value: !!str null
          - name: OMP_NUM_THREADS
            value: !!str null
          resources: {requests: {cpu: "4", memory: 8Gi}, limits: {cpu: "4", memory: 8Gi}}
"""


def test_an_untouched_item_is_kept_byte_for_byte_and_a_touched_one_keeps_the_string():
    p = run_fn([], HEAD + CM + DEPLOY + CONFIG)
    assert p.returncode == 0, p.stderr
    out = without_results(p.stdout)
    assert out.startswith(HEAD + CM)
    assert "          - name: FOO\n            value: !!str null\n" in out
    assert ("message: \"container 'server': OMP_NUM_THREADS='null' is not a whole number "
            "(ASCII digits) and is left alone; set it to 4 (the 4 pinned CPUs)\"") in p.stdout
    (_, deploy, *_) = resourcelist.parse(p.stdout, True).items
    env = deploy["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[:2] == [{"name": "FOO", "value": "null"},
                       {"name": "OMP_NUM_THREADS", "value": "null"}]


@pytest.mark.parametrize("value, data", [
    ("!!null ~", None), ("!!null", None), ("!!null null", None), ('!!int "3"', "3"),
    ("!!int 0x10", "0x10"), ("!!float 1", "1"), ("!!float 1.5", "1.5"), ("!!bool yes", "yes"),
    ('!!bool "true"', "true"),
])
def test_a_standard_tag_go_yaml_honours_is_read(value, data):
    text = HEAD + f"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: c}}\n" \
                  f"  data:\n    x: {value}\n"
    assert _items(text)[0]["data"] == {"x": data}


@pytest.mark.parametrize("value, message", [
    ("!!null foo", "!!null foo: the API server's YAML reader (sigs.k8s.io/yaml, go-yaml "
                   "resolve.go) refuses it: \"cannot decode !!str `foo` as a !!null\""),
    ("!!bool null", "\"cannot decode !!null `null` as a !!bool\""),
    ("!!int abc", "\"cannot decode !!str `abc` as a !!int\""),
    ("!!int 1.5", "\"cannot decode !!float `1.5` as a !!int\""),
    ("!!float true", "\"cannot decode !!bool `true` as a !!float\""),
    ("!!binary aGVsbG8=", "!!binary aGVsbG8=: the API server's YAML reader (sigs.k8s.io/yaml) "
                          "reads another string than written (the decoded bytes)"),
    ("!!timestamp 2001-12-14", "!!timestamp 2001-12-14: the API server's YAML reader "
                               "(sigs.k8s.io/yaml) reads another string than written"),
])
def test_a_standard_tag_go_yaml_refuses_is_refused_with_item_and_field(value, message):
    for extra in ("", "    y: &a z\n    w: *a\n"):       # the fast and the full builder
        text = HEAD + f"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: c}}\n" \
                      f"  data:\n{extra}    x: {value}\n"
        with pytest.raises(InputError) as e:
            _items(text)
        line = 8 + (2 if extra else 0)
        assert str(e.value).startswith(f"items[0].data.x (line {line}): ")
        assert message in str(e.value)


# --- `!!str null` is no null where krm-fn reads the ResourceList's own fields --------------

@pytest.mark.parametrize("field", ["items", "results"])
def test_a_str_tagged_null_list_is_the_string_null(field):
    # yaml/load.py is_null: one definition for the loader and the ResourceList's fields
    head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
    rest = "items: []\n" if field == "results" else ""
    p = run_fn([], head + rest + f"{field}: !!str null\n")
    assert p.returncode == 1
    assert f"ResourceList {field} must be a list" in p.stderr
    for null in ("null", '!!null ""', "~"):        # nulls: no items, no results
        p = run_fn([], head + rest + f"{field}: {null}\n")
        assert p.returncode == 0, (null, p.stderr)


# --- a quoted scalar with an explicit type tag in the function config ----------------------

FC_HEAD = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
           "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
           "  metadata: {name: pin}\n")


def test_a_typed_quoted_scalar_of_the_function_config_has_its_tags_type():
    text = FC_HEAD + ('  data: {a: !!int "3", b: !!float "3", c: !!bool "false", '
                      'd: !!int "0x10", e: !!float ".5", f: !!str "3", g: "3"}\n')
    got = resourcelist.parse(text, True).function_config["data"]
    assert got == {"a": 3, "b": 3.0, "c": False, "d": 16, "e": 0.5, "f": "3", "g": "3"}
    assert [type(got[k]) for k in "abc"] == [int, float, bool]


def test_a_float_tagged_version_is_the_number_kustomize_reads():
    # go-yaml reads `!!float "1.30"` as the number 1.3, as it reads a plain 1.30
    p = run_fn([], FC_HEAD + '  spec: {kubernetesVersion: !!float "1.30"}\n')
    assert p.returncode == 1
    assert ("spec.kubernetesVersion: invalid function config: must be a quoted string such "
            "as \"1.35\", found the number 1.3") in p.stderr
    p = run_fn([], FC_HEAD + '  spec: {kubernetesVersion: !!str "1.35"}\n')
    assert "invalid function config" not in p.stdout, p.stdout


def test_a_bool_tag_on_a_yaml_1_1_word_is_refused_in_the_function_config():
    p = run_fn([], FC_HEAD + '  spec: {output: {monitoring: {enabled: !!bool "yes"}}}\n')
    assert p.returncode == 1
    assert ("functionConfig.spec.output.monitoring.enabled (line 8): !!bool 'yes': a YAML "
            "1.2 reader (kyaml, go-yaml v3, as kustomize and kpt read the function config) "
            "refuses it") in p.stderr
    p = run_fn([], FC_HEAD + '  spec: {output: {monitoring: {enabled: !!bool "true"}}}\n')
    assert "monitoring.enabled" not in p.stdout + p.stderr
