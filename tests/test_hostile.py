"""Hostile inputs found by adversarial testing, one per kind of fault, kept as regression
tests (inputs in tests/hostile/). Every run: no traceback, the documented exit code and
message, valid YAML out, and for successful runs a second run changes nothing."""
import time

import pytest
import yaml

from tests.helpers import ROOT, run_cli, without_results

HOSTILE = ROOT / "tests" / "hostile"

# file -> (exit code, stderr fragment or "" for none)
CASES = {
    "r01-bomb-results.yaml": (1, "krm-fn: input is too large or expands too far through aliases"),
    "r02-bomb-cpu.yaml": (1, "krm-fn: input is too large or expands too far through aliases"),
    "r03-bomb-name.yaml": (1, "krm-fn: input is too large or expands too far through aliases"),
    "r06-dots-end.yaml": (0, ""),
    "r07-json-nochange.yaml": (0, ""),
    "r08-indented-root.yaml": (0, ""),
    "r09-dash-3spaces.yaml": (0, ""),
    "r10-anchor-used-later.yaml": (1, "alias to an anchor in another item (line 8); kustomize "
                                      "splits items, so aliases cannot cross them"),
    "r11-alias-across-items.yaml": (1, "aliases cannot cross them"),
    "r12-shared-env-alias.yaml": (1, "uses YAML anchors and aliases, so krm-fn cannot change it"),
    "r13-octal-cpu.yaml": (1, "cpu 016 has a leading zero: YAML 1.1 readers"),
    "r14-cpu-overflow.yaml": (1, "exclusive CPUs but node pool 'inference' has 60 CPUs outside "
                                 "reservedSystemCPUs"),
    "r15-trailing-comment.yaml": (0, ""),
    "r16-comment-between.yaml": (0, ""),
    "r17-crlf.yaml": (0, ""),
    "r18-untouched-rewrites.yaml": (0, ""),
    "r19-4space.yaml": (0, ""),
    "r27-dup-root-items.yaml": (1, "krm-fn: ResourceList: duplicate key 'items' (line 12)"),
    "r30-deploy-spec-scalar.yaml": (1, "krm-fn: error: Deployment d spec: must be a mapping"),
    "r31-volumes-map.yaml": (1, "krm-fn: error: Pod p spec.volumes: volumes must be a list"),
    "r33-trailing-docstart.yaml": (0, ""),
    "r34-fc-list.yaml": (1, "invalid function config: expected a mapping, found a list"),
    "r35-newline-in-name.yaml": (1, "krm-fn: error: Pod p\\nq spec.containers[0]"),
    "r36-container-noname.yaml": (1, "spec.containers[0].name: every container needs a name"),
    "r42-fedback-edited.yaml": (0, ""),
}


def test_every_hostile_input_has_a_case():
    assert sorted(p.name for p in HOSTILE.glob("*.yaml")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile(name):
    src = (HOSTILE / name).read_bytes()
    start = time.monotonic()
    p = run_cli([], src)
    assert time.monotonic() - start < 30   # bounded, generous for a loaded CI machine
    code, fragment = CASES[name]
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    if fragment:
        assert fragment in p.stderr
    for line in p.stderr.splitlines():
        assert line.startswith("krm-fn: ")       # one line per message, never raw newlines
    if p.stdout:
        (out,) = [d for d in yaml.safe_load_all(p.stdout) if d is not None]
        assert out["kind"] == "ResourceList"
    if code == 0:
        again = run_cli([], without_results(p.stdout))
        assert again.returncode == 0
        assert without_results(again.stdout) == without_results(p.stdout)


def test_untouched_scalars_of_a_changed_item_stay_byte_for_byte():
    src = (HOSTILE / "r18-untouched-rewrites.yaml").read_text()
    out = run_cli([], src).stdout
    for line in ['      esc: "caf\\u00e9"', "      date: 2001-12-14t21:59:43.10-05:00",
                 "      multi: first\n        second", "      args: [--a, # why\n        --b]",
                 "      command: ['a\tb']", "      - {name: A, value: ~}",
                 "      - {name: B, value: 12_3}"]:
        assert line in out


def test_crlf_stays_crlf():
    out = run_cli([], (HOSTILE / "r17-crlf.yaml").read_bytes()).stdout
    assert "\n" not in out.replace("\r\n", "")


def test_results_go_before_the_document_end_marker():
    out = run_cli([], (HOSTILE / "r06-dots-end.yaml").read_text()).stdout
    assert out.rstrip().endswith("...")
    assert out.index("results:") < out.rindex("...")


def test_fed_back_kubelet_config_is_rewritten_with_a_warning_per_field():
    out = yaml.safe_load(run_cli([], (HOSTILE / "r42-fedback-edited.yaml").read_text()).stdout)
    paths = [r["field"]["path"] for r in out["results"]
             if r["severity"] == "warning" and "field" in r]
    assert "metadata.labels" in paths and "data['kubelet-config.yaml']" in paths
