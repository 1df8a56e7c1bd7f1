"""Numbers in the input read as kubectl, kustomize and the API server read them
(krm_fn/numbers.py `yaml11`, `api_json`, `api_int`: go-yaml's resolve.go, YAML 1.1 for
integers: https://yaml.org/type/int.html), checked against the real API server
(`controlplane`, tests/conftest.py) on a table of spellings and generated ones."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yaml

from krm_fn import numbers, quantity, resourcelist
from krm_fn.admission import resourcequota as rq
from krm_fn.pipeline import quantities
from krm_fn.yaml.load import InputError
from tests.helpers import run_fn
from tests.test_quota_total import _dep, _quota
from tests.test_verdict import config, errors, render

# spelling -> (go-yaml's number, the JSON number the API server receives, api_int)
TABLE = {
    "010": (8, "8", None), "0x0A": (10, "10", 10), "0X0a": (10, "10", 10),
    "0o10": (8, "8", 8), "0b101": (5, "5", 5), "1_000": (1000, "1000", 1000),
    "+12": (12, "12", 12), "12.0": (12.0, "12", 12), "1e3": (1000.0, "1000", 1000),
    "08": (8.0, "8", 8), "07": (7, "7", 7), "1.5": (1.5, "1.5", None),
    "-9223372036854775809": (-9223372036854775809.0, "-9223372036854776000",
                             -9223372036854776000),
    "1e-7": (1e-7, "1e-7", None), "1e21": (1e21, "1e+21", None),
    ".inf": (float("inf"), None, None), "yes": (None, None, None), "0x": (None, None, None),
    "abc": (None, None, None), "2001-12-14": (None, None, None), "1:30": (None, None, None),
}


@pytest.mark.parametrize("text", list(TABLE))
def test_go_yamls_reading_of_each_spelling(text):
    number, json_text, whole = TABLE[text]
    assert numbers.yaml11(text) == number
    assert numbers.api_json(text) == json_text
    assert numbers.api_int(text)[0] == whole


def test_messages_name_both_readings_of_a_leading_zero_octal():
    assert numbers.api_int("010") == (None, "`010` is 8 to kubectl, kustomize and the API "
                                            "server (a YAML 1.1 octal number) but 10 to a "
                                            "reader of the manifest (YAML 1.2); write 8 or 10")
    assert numbers.api_int("1.5") == (None, "1.5 is not a whole number: the API server "
                                            "refuses it")
    assert numbers.octal_reading("08") is None and numbers.octal_reading("07") is None


def test_replicas_are_counted_as_the_api_server_reads_them():
    assert rq.pod_count({"apiVersion": "apps/v1", "kind": "Deployment",
                         "spec": {"replicas": "0x0A"}}) == (10, None)
    assert rq.replicas({"spec": {"replicas": "1e1"}}, "spec.template.spec") == 10
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": "4", "completions": "010"}}
    assert rq.count_problem(job) == ("spec.completions", "Job j spec.completions: `010` is 8 "
                                     "to kubectl, kustomize and the API server (a YAML 1.1 "
                                     "octal number) but 10 to a reader of the manifest (YAML "
                                     "1.2); write 8 or 10")


def test_an_octal_replicas_fails_closed_naming_the_field():
    code, results, _ = render(config(), _quota(**{"requests.cpu": "100"}),
                              _dep("a", "4", replicas="010"))
    assert code == 1
    assert ("Deployment a spec.replicas: `010` is 8 to kubectl, kustomize and the API server "
            "(a YAML 1.1 octal number) but 10 to a reader of the manifest (YAML 1.2); write 8 "
            "or 10") in errors(results)


# --- quantities: numbers.api_quantity, the one reading every input quantity goes through -----

OCTAL_CPU = ("`010` is 8 to kubectl, kustomize and the API server (a YAML 1.1 octal number) "
             "but 10 as a Kubernetes quantity; write \"8\" or \"10\"")
# (text, plain) -> (the text ParseQuantity reads, why krm-fn refuses it)
QUANTITIES = {
    ("010", True): (None, OCTAL_CPU),
    ("010", False): ("010", None),          # quoted: the string 010, 10 to ParseQuantity
    ("010", None): (None, OCTAL_CPU.replace("API server", "API server (when it is written "
                                            "unquoted)")),
    ("0x0A", True): (None, "`0x0A` is 10 to kubectl, kustomize and the API server (a YAML "
                           "1.1 number) but not that quantity as written; write \"10\""),
    ("0x0A", False): ("0x0A", None),        # quoted: no quantity; the parser says so
    ("1_000", True): (None, "`1_000` is 1000 to kubectl, kustomize and the API server (a "
                            "YAML 1.1 number) but not that quantity as written; write "
                            "\"1000\""),
    ("1e3", True): ("1e3", None), ("08", True): ("08", None), ("4", True): ("4", None),
    ("500m", True): ("500m", None), ("+2", True): ("+2", None), (".5", True): (".5", None),
    ("12.0", True): ("12.0", None), ("0", True): ("0", None), ("1Gi", None): ("1Gi", None),
    ("0o10", True): (None, "`0o10` is 8 to kubectl, kustomize and the API server (a YAML "
                           "1.1 number) but not that quantity as written; write \"8\""),
}


@pytest.mark.parametrize("text,plain", list(QUANTITIES))
def test_each_quantity_spelling_is_read_as_the_api_server_reads_it(text, plain):
    assert numbers.api_quantity(text, plain) == QUANTITIES[(text, plain)]


def test_input_quantity_parses_what_the_api_server_parses():
    assert numbers.input_quantity("010", "cpu", False).nanos == 10 * quantity.NANO
    assert numbers.input_quantity("1e3", "memory", True).whole == 1000
    with pytest.raises(quantity.QuantityError, match="write \"8\" or \"10\""):
        numbers.input_quantity("010", "cpu", lambda: True)
    asked = []
    assert numbers.input_quantity("4", "cpu", lambda: asked.append(1)).nanos == 4 * quantity.NANO
    assert asked == []                      # the YAML is looked at only when it matters


class _Plain(str):
    """A str written unquoted (what a person writes: `cpu: 010`)."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


_Dumper.add_representer(_Plain, lambda d, s: d.represent_scalar(
    d.resolve(yaml.ScalarNode, str(s), (True, False)), str(s)))


def render_text(cfg: dict, *items: dict) -> tuple[int, list]:
    """(exit code, error messages) of one run; `_Plain` values are written unquoted."""
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": list(items), "functionConfig": cfg}
    text = yaml.dump(rl, Dumper=_Dumper, sort_keys=False)
    p = run_fn([], text)
    out = yaml.safe_load(p.stdout) or {}
    return p.returncode, [r["message"] for r in out.get("results") or []
                          if r["severity"] == "error"]


def _limitrange(**limits) -> dict:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr",
                                                                   "namespace": "ai"},
            "spec": {"limits": [{"type": "Container", **limits}]}}


def _runtimeclass(**fixed) -> dict:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"},
            "handler": "runc", "overhead": {"podFixed": fixed}}


def test_an_octal_cpu_fails_closed_naming_both_amounts():
    code, errs = render_text(config(), _dep("a", _Plain("010")))
    assert code == 1
    assert any(m.endswith("container 'server': cpu " + OCTAL_CPU) for m in errs)


def test_a_quoted_octal_looking_cpu_is_the_quantity_written():
    code, errs = render_text(config(), _dep("a", "010"))
    assert (code, errs) == (0, [])


# reader -> (the input object, the error krm-fn gives)
READERS = {
    "LimitRange max": (_limitrange(max={"cpu": _Plain("010")}),
                       "LimitRange lr spec.limits[0].max.cpu: " + OCTAL_CPU),
    "LimitRange default": (_limitrange(default={"memory": _Plain("0x10")}),
                           "LimitRange lr spec.limits[0].default.memory: `0x10` is 16 to "
                           "kubectl, kustomize and the API server (a YAML 1.1 number) but not "
                           "that quantity as written; write \"16\""),
    "LimitRange defaultRequest": (_limitrange(defaultRequest={"cpu": _Plain("010")}),
                                  "LimitRange lr spec.limits[0].defaultRequest.cpu: "
                                  + OCTAL_CPU),
    "LimitRange ratio": (_limitrange(maxLimitRequestRatio={"cpu": _Plain("02")}), None),
    "LimitRange min": (_limitrange(min={"cpu": _Plain("1_0")}),
                       "LimitRange lr spec.limits[0].min.cpu: `1_0` is 10 to kubectl, "
                       "kustomize and the API server (a YAML 1.1 number) but not that "
                       "quantity as written; write \"10\""),
    "ResourceQuota": (_quota(**{"requests.cpu": _Plain("010")}),
                      "ResourceQuota team spec.hard.requests.cpu: " + OCTAL_CPU),
    "RuntimeClass": (_runtimeclass(cpu=_Plain("010")),
                     "RuntimeClass rc overhead.podFixed.cpu: " + OCTAL_CPU),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_input_quantities_fail_closed_where_the_api_server_reads_another_amount(reader):
    obj, want = READERS[reader]
    code, errs = render_text(config(), obj, _dep("a", "1"))
    assert (code, errs) == ((1, [want]) if want else (0, []))


@pytest.mark.parametrize("reader", list(READERS))
def test_the_same_spellings_quoted_are_read_as_written(reader):
    obj, _ = READERS[reader]
    quoted = json.loads(json.dumps(obj))        # every _Plain a plain str: written quoted
    code, errs = render_text(config(), quoted, _dep("a", "1"))
    assert not any(" is 8 to kubectl" in m or "YAML 1.1 number" in m for m in errs), errs


def test_pod_level_resources_fail_closed_naming_both_amounts():
    d = _dep("a", "1")
    d["spec"]["template"]["spec"]["resources"] = {"limits": {"cpu": _Plain("010")}}
    code, errs = render_text(config(), d)
    assert code == 1
    assert "pod-level limits.cpu: " + OCTAL_CPU in errs


def test_an_unquoted_injector_annotation_is_refused_as_the_api_server_refuses_it():
    d = _dep("a", "1", annotations={"sidecar.istio.io/inject": "true",
                                    "sidecar.istio.io/proxyCPU": _Plain("010"),
                                    "sidecar.istio.io/proxyCPULimit": "1"})
    code, errs = render_text(config(), d)
    assert code == 1
    assert any(m.endswith("annotation sidecar.istio.io/proxyCPU must be a string: 010 is "
                          "written unquoted, which kubectl and the API server read as the "
                          "number 8, and the API server refuses the object "
                          "(metadata.annotations holds strings); write \"8\" or \"10\" (010 "
                          "is 8 as a YAML 1.1 octal number, 10 as a quantity)") for m in errs), errs


def test_node_and_topology_quantities_are_checked_without_the_yaml():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"capacity": {"cpu": "010"}, "allocatable": {"memory": "1Gi"}}}
    nrt = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": "n"}, "zones": [{"name": "node-0", "resources": [
               {"name": "cpu", "capacity": "0x10", "allocatable": "8", "available": "8"}]}]}
    assert [(r.path, r.message) for r in quantities.check([node, nrt])] == [
        ("status.capacity.cpu", "Node n status.capacity.cpu: " + OCTAL_CPU.replace(
            "API server", "API server (when it is written unquoted)")),
        ("zones[0].resources[0].capacity", "NodeResourceTopology n "
         "zones[0].resources[0].capacity: `0x10` is 16 to kubectl, kustomize and the API "
         "server (when it is written unquoted) (a YAML 1.1 number) but not that quantity as "
         "written; write \"16\"")]
    assert quantities.check([node, nrt], lambda i, path: False) == []      # quoted


# --- the function config and the baseline KubeletConfiguration ------------------------------

OCTAL_CONFIG = ("`010` is 8 to kustomize, kubectl and the kubelet (a YAML 1.1 octal number) "
                "but 10 in YAML 1.2 (kpt passes it on as written); write 8 or 10")


@pytest.mark.parametrize("text,where", [
    ("maxPods: 010\n", "the baseline file.maxPods (line 1)"),
    ("a: {b: [1, -010]}\n", "the baseline file.a.b[1] (line 1)"),
])
def test_a_leading_zero_octal_in_a_typed_document_fails_closed(text, where):
    with pytest.raises(InputError) as e:
        resourcelist.load_config_file(text, "the baseline file")
    two = ("`-010` is -8", "write -8 or -10", "but -10") if "-010" in text else None
    want = f"{where}: {OCTAL_CONFIG}"
    if two:
        want = (want.replace("`010` is 8", two[0]).replace("write 8 or 10", two[1])
                .replace("but 10", two[2]))
    assert str(e.value) == want


def test_a_number_only_to_yaml_11_in_a_typed_document_fails_closed():
    with pytest.raises(InputError) as e:
        resourcelist.load_config_file("maxPods: 1_000\n", "b")
    assert str(e.value) == ("b.maxPods (line 1): `1_000` is the number 1000 to kustomize, "
                            "kubectl and the kubelet (YAML 1.1) but a string in YAML 1.2 (kpt "
                            "passes it on as written); write 1000, or quote it for a string")


@pytest.mark.parametrize("text,value", [("010", "010"), ("08", 8), ("0", 0), ("-08", -8),
                                        ("0x0A", 10), ("0o10", 8), ("10", 10), ("1e3", 1000.0),
                                        ("1:30", "1:30"), ("0x", "0x")])
def test_other_spellings_in_a_typed_document(text, value):
    quoted = f"maxPods: '{text}'\n" if value == "010" else f"maxPods: {text}\n"
    assert resourcelist.load_config_file(quoted, "b") == {"maxPods": value}


def test_the_function_config_fails_closed_on_an_octal_count():
    text = (yaml.dump({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                       "items": [_dep("a", "1")], "functionConfig": config()},
                      sort_keys=False).replace("cores: 1\n", "cores: 010\n"))
    assert "cores: 010" in text
    p = run_fn([], text)
    assert p.returncode == 1
    assert ("functionConfig.spec.nodePools[0].reserved.cores (line " in p.stderr + p.stdout
            and OCTAL_CONFIG in p.stderr + p.stdout)


# --- the real API server --------------------------------------------------------------------

def _stored(controlplane, spellings: list) -> dict:
    """{spelling: spec.replicas the API server stores, or None when it refuses the object}
    from one server-side dry run of a Deployment per spelling, sent by kubectl as written."""
    docs = []
    for i, s in enumerate(spellings):
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: r{i}, namespace: default}}
spec:
  replicas: {s}
  selector: {{matchLabels: {{app: r}}}}
  template:
    metadata: {{labels: {{app: r}}}}
    spec:
      containers: [{{name: c, image: x}}]
""")
    out = {}
    for s, doc in zip(spellings, docs):
        p = controlplane.kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                                 input=doc)
        out[s] = json.loads(p.stdout)["spec"]["replicas"] if p.returncode == 0 else None
    return out


_SPELLINGS = ["010", "0x0A", "0o10", "0b101", "1_000", "+12", "12.0", "1e3", "08", "07",
              "1.5", "0X1F", "0B11", "1__2", "-1", "0", "3", ".inf", "yes", "abc", "1e21"]


def test_each_spelling_is_what_the_api_server_stores(controlplane):
    stored = _stored(controlplane, _SPELLINGS)
    for s in _SPELLINGS:
        got = numbers.yaml11(s)
        want = stored[s]
        if want is None:        # refused: krm-fn does not count it either
            assert numbers.api_int(s)[0] is None or numbers.api_int(s)[0] < 0, s
        else:
            assert got == want, s
            if numbers.octal_reading(s) is None:
                assert numbers.api_int(s) == (want, None), s


@settings(max_examples=30, deadline=None)
@given(st.text("0123456789_+-.eExXoObB", min_size=1, max_size=6))
def test_generated_spellings_against_the_api_server(controlplane, s):
    if not s[0].isalnum() and s[0] not in "+-.":
        return
    want = _stored(controlplane, [s])[s]
    got, _ = numbers.api_int(s)
    if numbers.octal_reading(s) is not None:
        assert want == numbers.octal_reading(s)[0], s
    elif want is None:
        assert got is None or got < 0, s
    else:
        assert got == want, s


# --- quantities against the real API server: what it stores is what krm-fn reads ----------

_Q_SPELLINGS = ["010", "0x0A", "0o10", "0b101", "1_000", "1e3", "08", "07", "+2", "12.0",
                ".5", "0", "4", "1.5", "00", "500m"]
_Q_OBJECTS = {
    "LimitRange": ("""apiVersion: v1
kind: LimitRange
metadata: {{name: lr, namespace: default}}
spec:
  limits:
  - type: Container
    max:
      cpu: {s}
""", lambda o: o["spec"]["limits"][0]["max"]["cpu"]),
    "ResourceQuota": ("""apiVersion: v1
kind: ResourceQuota
metadata: {{name: rq, namespace: default}}
spec:
  hard:
    requests.cpu: {s}
""", lambda o: o["spec"]["hard"]["requests.cpu"]),
    "RuntimeClass": ("""apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {{name: rc}}
handler: runc
overhead:
  podFixed:
    cpu: {s}
""", lambda o: o["overhead"]["podFixed"]["cpu"]),
}


def _amount(text):
    try:
        return quantity.parse(text).nanos
    except quantity.QuantityError:
        return None


@pytest.mark.parametrize("kind", list(_Q_OBJECTS))
def test_each_quantity_spelling_is_what_the_api_server_stores(controlplane, kind):
    """Each spelling unquoted and quoted, sent by kubectl as written: where krm-fn reads it
    (numbers.api_quantity gives a text), the API server stores that amount, or refuses the
    object where the text is no quantity; where krm-fn refuses it, the API server stores
    the YAML 1.1 number (the first of the two readings krm-fn names)."""
    doc, stored_of = _Q_OBJECTS[kind]
    for s in _Q_SPELLINGS:
        for plain in (True, False):
            written = s if plain else f'"{s}"'
            p = controlplane.kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                                     input=doc.format(s=written))
            stored = _amount(stored_of(json.loads(p.stdout))) if p.returncode == 0 else None
            text, why = numbers.api_quantity(s, plain)
            if why is None:
                assert stored == _amount(text), (kind, written, p.stderr)
            else:
                two = numbers.octal_reading(s)
                seen = two[0] * quantity.NANO if two else _amount(numbers.api_json(s))
                assert stored == seen, (kind, written, p.stderr)


# --- the baseline against the real kubelet: its config file is read with sigs.k8s.io/yaml ---

_KUBELET_SPELLINGS = ["-010", "-0x0A", "-08", "-07", "-10", "-0o10", "-1_0", "-1e1", "-0X0A",
                      "-0b101", "-00010"]


def test_the_kubelet_reads_baseline_numbers_as_krm_fn_does_or_krm_fn_refuses_them():
    """maxPods written each way in a KubeletConfiguration file, loaded as the kubelet loads
    --config (tests/harness `kubeletconfig`: configfiles.NewFsLoader(...).Load, decoding
    through sigs.k8s.io/yaml YAMLToJSON); a negative value makes the kubelet's validation
    name the number it read ("maxPods (--max-pods) -8 must not be a negative number").
    krm-fn reads the same text of a baseline (resourcelist.load_config_file) as that
    number, or refuses it naming both readings: a leading-zero octal, a spelling YAML 1.2
    reads as a string (`-1_0`, `-0o10`)."""
    from tests.harness import runner
    from tests.test_kubelet_config_harness import HEAD
    runner.require_go()
    h = runner.Harness(list(runner.releases())[-1])
    try:
        for s in _KUBELET_SPELLINGS:
            got = h.call("kubeletconfig", {"kubeletConfig": f"{HEAD}maxPods: {s}\n"})
            said = got["error"].removeprefix("invalid configuration: maxPods (--max-pods) ")
            kubelet = int(said.split()[0])
            try:
                mine = resourcelist.load_config_file(f"maxPods: {s}\n", "b")["maxPods"]
            except InputError as e:
                assert (f"`{s}` is {kubelet} to kustomize, kubectl and the kubelet" in str(e)
                        or f"`{s}` is the number {kubelet} to kustomize" in str(e)), (s, e)
                continue
            assert mine == kubelet, (s, mine, kubelet)
    finally:
        h.close()
