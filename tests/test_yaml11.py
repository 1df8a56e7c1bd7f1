"""Numbers in the input read as kubectl, kustomize and the API server read them
(krm_fn/numbers.py `yaml11`, `api_json`, `api_int`: go-yaml's resolve.go, YAML 1.1 for
integers: https://yaml.org/type/int.html), checked against the real API server
(`controlplane`, tests/conftest.py) on a table of spellings and generated ones."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krm_fn import numbers
from krm_fn.admission import resourcequota as rq
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


def test_an_octal_cpu_fails_closed_naming_both_amounts():
    d = _dep("a", "010")
    code, results, _ = render(config(), d)
    assert code == 1
    assert any(m.endswith("container 'server': cpu 010 is 8 to kubectl, kustomize and the "
                          "API server (a YAML 1.1 octal number) but 10 as a Kubernetes "
                          "quantity; write \"8\" or \"10\"") for m in errors(results))


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
