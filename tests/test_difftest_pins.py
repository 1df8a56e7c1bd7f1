"""The behaviour before the start-up changes (commit 5873913: regular expressions replaced
by character checks in quantity parsing, numbers, names, labels, images, durations,
Kubernetes versions and YAML plain-scalar quoting), pinned on hostile spellings.

tests/difftest/pins.json was written by tests/difftest/mkpins.py run on the tree of that
commit, the specified behaviour: each row is an input (tests/difftest/difftest_lists.py)
and exactly what the old code returned or raised (exception type and message). The
current code must give the same for every row. One change of behaviour since: the
supported Kubernetes versions became the three minors upstream maintains (1.35-1.37), so
the kubernetesVersion rows and the CLI cases were re-pinned from the code of that change
(a version outside them is refused, naming them; an example version is "1.35"; the default
config is 1.35's) and the spellings pinned with 1.34 are checked with 1.36 below."""
import json
from fractions import Fraction
from pathlib import Path

import pytest

from krm_fn import config, numbers, quantity
from krm_fn.node import kubelet_check
from krm_fn.yaml import emit

PINS = json.loads((Path(__file__).parent / "difftest" / "pins.json").read_text())


def _result(f, *args) -> list:
    """What mkpins.py records: ["ok", repr] (a Quantity as value, format, text) or
    ["error", exception type, message]."""
    try:
        v = f(*args)
    except Exception as e:  # noqa: BLE001 - the pinned row may be any exception
        return ["error", type(e).__name__, str(e)]
    if isinstance(v, quantity.Quantity):
        # the value as the pins record it: the exact ratio of units ("3/2"), from nano-units
        return ["ok", str(Fraction(v.nanos, quantity.NANO)), v.fmt, v.text]
    return ["ok", repr(v)]


def _mismatches(rows, *fns) -> list:
    return [(row[0], [_result(f, row[0]) for f in fns], row[1:]) for row in rows
            if [_result(f, row[0]) for f in fns] != row[1:]]


# Spellings whose reading changed on purpose: an amount finer than 1n (`1e-308`) is read as
# ParseQuantity reads it, rounded up to 1n (tests/test_quantity_apiserver.py checks the real
# API server), so krm-fn's config refuses it as finer than 1m (cpu) or as no whole number of
# bytes (memory), no longer as finer than 1n.
_FINER = "'1e-308' is finer than 1m, the smallest CPU unit; Kubernetes would round it up"
_NOT_BYTES = "'1e-308' is not a whole number of bytes (did you mean a byte count?)"
QUANTITY_NOW = {"1e-308": [["ok", "1/1000000000", "DecimalExponent", "1e-308"],
                           ["error", "QuantityError", _FINER],
                           ["error", "QuantityError", _NOT_BYTES]]}


def test_quantity_spellings_parse_as_before():
    rows = [[r[0], *QUANTITY_NOW[r[0]]] if r[0] in QUANTITY_NOW else r
            for r in PINS["quantity"]]
    assert len(rows) == 87
    # the pinned cpu reader refused amounts finer than 1m: krm-fn's own config still does
    # (parse_milli_cpu), a pod's cpu is read as the API server stores it since (parse_cpu:
    # tests/test_fine_cpu.py)
    assert _mismatches(rows, quantity.parse, quantity.parse_milli_cpu,
                       quantity.parse_memory) == []


def test_counts_and_decimals_read_as_before():
    rows = PINS["numbers"]
    assert len(rows) == 27
    assert _mismatches(rows, numbers.count, numbers.decimal) == []


def test_yaml_scalars_and_keys_quoted_as_before():
    rows = PINS["emit"]
    assert len(rows) == 40
    assert _mismatches(rows, emit.scalar, emit.key, lambda s: emit.to_yaml({s: [s]})) == []


# Durations whose verdict changed on purpose: it is now Go's time.ParseDuration's, which the
# kubelet decodes with (krm_fn.node.kubelet_says.duration_error, checked against the
# kubelet's own code by tests/test_kubelet_config_harness.py): a signed zero and the Greek
# mu are durations, other scripts' digits are not.
DURATIONS_NOW_AS_GO = {"-0": True, "+0": True, "1μs": True, "١s": False, "１s": False,
                       "१s": False}


def test_go_durations_accepted_as_before():
    rows = PINS["go_duration"]
    assert len(rows) == 38
    changed = [r for r in rows if r[0] in DURATIONS_NOW_AS_GO]
    assert [(r[0], kubelet_check._scalar_ok("duration", r[0])) for r in changed] == \
        list(DURATIONS_NOW_AS_GO.items())
    kept = [r for r in rows if r[0] not in DURATIONS_NOW_AS_GO]
    assert _mismatches(kept, lambda s: kubelet_check._scalar_ok("duration", s)) == []


def _typed(path: str, value) -> dict:
    spec: dict = {}
    node = spec
    for k in path.split(".")[:-1]:
        if k == "[0]":
            continue
        node = node.setdefault(k, [{}] if k == "nodePools" else {})
        if isinstance(node, list):
            node = node[0]
    node[path.split(".")[-1]] = value
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "t"}, "spec": spec}


def _flat(key: str, value) -> dict:
    data = {key: value}
    if key.startswith("monitoring") and key != "monitoring":
        data["monitoring"] = "true"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": data}


def _load(obj) -> list:
    try:
        config.load(obj)
        return ["ok"]
    except Exception as e:  # noqa: BLE001
        return ["error", type(e).__name__, str(e)]


CONFIG_PATHS = sorted({row[0] for row in PINS["config"]})


# Config values whose verdict changed on purpose: a zero rateWindow, which promtool and
# Prometheus refuse in every rate() (`duration must be greater than 0`), is a config error
# since issue #34's hostile round.
CONFIG_NOW = {("output.monitoring.rateWindow", "0s"): [
    "error", "ConfigError", "spec.output.monitoring.rateWindow: must be longer than zero "
    "(rate() needs a range), found '0s'"],
    # an amount finer than 1n is read rounded up to 1n (QUANTITY_NOW above)
    ("workloads.defaultCpus", "1e-308"): [
        "error", "ConfigError", f"spec.workloads.defaultCpus: {_FINER}"],
    ("workloads.defaultMemory", "1e-308"): [
        "error", "ConfigError", f"spec.workloads.defaultMemory: {_NOT_BYTES}"]}


# evictionHard percentages: the kubelet takes 0% too (it ignores exactly "0%" and "100%",
# the usual way to switch a signal off: pkg/kubelet/eviction/helpers.go
# parseThresholdStatement), so "0%" is accepted since the node-plan hostile round and the
# message names the range as from 0% to 100%.
_OLD_RANGE = "must be greater than 0% and at most 100%, found"
_NEW_RANGE = "must be from 0% to 100%, found"


def _eviction_now(value, want: list) -> list:
    if isinstance(value, dict) and list(value.values()) == ["0%"]:
        return ["ok"]
    if want[0] == "error" and _OLD_RANGE in want[2]:
        return want[:2] + [want[2].replace(_OLD_RANGE, _NEW_RANGE)]
    return want


@pytest.mark.parametrize("path", CONFIG_PATHS)
def test_config_values_checked_as_before(path):
    rows = [row for row in PINS["config"] if row[0] == path]
    assert rows
    bad = []
    for field, value, want in rows:
        if isinstance(value, str):
            want = CONFIG_NOW.get((field, value), want)
        if field.endswith("evictionHard"):
            want = _eviction_now(value, want)
        obj = _flat(field[len("data."):], value) if field.startswith("data.") else _typed(
            field, value)
        got = _load(obj)
        if got != want:
            bad.append((value, got, want))
    assert bad == []


def test_version_spellings_pinned_with_1_34_behave_the_same_with_a_supported_minor():
    """The kubernetesVersion spellings were pinned when 1.34 was supported: each spelling of
    1.34 the old code accepted is accepted for 1.36 (a supported minor), each it refused as
    not a minor version is refused the same way."""
    rows = [row for row in PINS["config"] if row[0] == "kubernetesVersion"
            and isinstance(row[1], str) and "34" in row[1] and "." in row[1]]
    assert len(rows) >= 10
    for _, value, _ in rows:
        spelled = value.replace("34", "36")
        old = [r for r in _OLD_SPELLINGS if r[0] == value]
        got = _load(_typed("kubernetesVersion", spelled))
        if old and old[0][1] == "ok":
            assert got == ["ok"], spelled
        else:
            assert got[0] == "error" and "expected a Kubernetes minor version" in got[2], spelled


# What the old code (commit 5873913) gave for the spellings of 1.34 (before the pins were
# re-pinned for the supported minors): accepted, or not a minor version.
_OLD_SPELLINGS = [("1.34", "ok"), ("v1.34", "ok"), ("1.34.0", "ok"), (" 1.34", "error"),
                  ("1.034", "error"), ("1.34 ", "error"), ("1.34\n", "error"),
                  ("v1.34.0", "ok"), ("vv1.34", "error"), ("V1.34", "error"),
                  ("1.34.", "error"), ("1.34.0.1", "error"), ("1.34.00", "ok"),
                  ("01.34", "error"), ("1,34", "error")]


def test_config_table_covers_every_changed_check():
    assert len(PINS["config"]) == 1080
    assert CONFIG_PATHS == [
        "data.cpuRounding", "data.defaultCpus", "data.evictionHard", "data.kubeReserved",
        "data.kubernetesVersion", "data.matchLabels", "data.monitoringAlertFor", "data.names",
        "data.namespaces", "data.nodePool", "data.threadsEnv", "data.verifyImage",
        "kubernetesVersion", "nodePools.[0].kubelet.cpuManagerReconcilePeriod",
        "nodePools.[0].kubelet.evictionHard", "nodePools.[0].kubelet.kubeReserved",
        "nodePools.[0].name", "nodePools.[0].topology.hugepages",
        "nodePools.[0].topology.memory", "output.monitoring.alertFor",
        "output.monitoring.labels", "output.monitoring.rateWindow", "output.namespace",
        "output.verifyImage", "selector.kinds", "selector.matchLabels", "selector.names",
        "selector.namespaces", "workloads.defaultCpus", "workloads.defaultMemory",
        "workloads.pinnedContainers", "workloads.threads.custom", "workloads.threads.env"]


# ResourceLists made by tools/difftest_gen.py (seed 424242, three per category) with the
# stdout, stderr and exit code the tree of commit 5873913 gave for each, byte for byte;
# re-pinned since: rawtext-26, whose scheduling error lists the pool's known node labels,
# `kubernetes.io/os=linux` included once every pool node was known to be a Linux one;
# rawtext-25 and rawtext-26, whose `image: 1e3`, `name: on` and `image: yes` the API server
# refuses (a number or a boolean where a string goes: krm_fn/apivalidation.py type_errors);
# engines-13, whose two containers both run a serving engine, so both are pinned (issue
# #32: the second no longer gets the warning of a container krm-fn does not pin; and the
# vLLM hint naming the releases nobind suits, 0.20.x having none);
# engines-12, engines-14 and version-17, whose Ollama and Triton messages and thread counts
# are those read at the engines' tags (issue #32: Ollama 0.30's LLAMA_ARG_THREADS, per
# physical core; Triton's enable-global-threadpool with intra_op_thread_count);
# quantity-0 and quantity-1, whose hugepages-2Mi `Me` and ephemeral-storage `1e-` and
# `10000000000000000000Ei` the API server refuses or krm-fn cannot read (verdict,
# admission/containerresources.py); engines-13, whose llama-server names no model (a router)
# and whose `vllm serve --device` gets the warning of releases without --device; seed-18,
# whose KServe runtime running vllm.entrypoints on no accelerator is now vLLM's CPU backend;
# seed-18 again: its `python -m% vllm.entrypoints.openai.api_server` runs the module `%`
# (python takes the rest of `-m%` as the module), so vllm.entrypoints is an argument, not
# the program (engines are recognised in program position, krm_fn/rules/engines/programs.py):
# no engine, the thread vars are the pinned CPUs; rawtext-25 and rawtext-26 again: an item
# left unchanged has its verdict line describe the pod as the input writes it (1m of cpu
# as requests and limits: no exclusive CPUs; a memory request of 1E above its limit:
# Burstable), not the pod krm-fn would have written; quantity-1 again: the note on the
# `10000000000000000000Ei` it cannot read no longer says Kubernetes rounds an amount finer
# than 1n (krm-fn reads such an amount as stored since: quantity.stored).
CLI_CASES = json.loads((Path(__file__).parent / "difftest" / "cli_cases.json").read_text())


@pytest.mark.parametrize("case", CLI_CASES,
                         ids=[f"{c['category']}-{i}" for i, c in enumerate(CLI_CASES)])
def test_hostile_resource_list_renders_as_before(case):
    from tests.helpers import run_fn
    p = run_fn([], case["input"])
    assert (p.returncode, p.stdout, p.stderr) == (case["exit"], case["stdout"], case["stderr"])


def test_hostile_resource_lists_cover_every_category():
    assert [c["category"] for c in CLI_CASES[::3]] == [
        "quantity", "names", "durations", "images", "engines", "version", "seed", "emit",
        "rawtext"]
    assert len(CLI_CASES) == 27
