"""`krm-fn explain`: field and rule documentation from the config definition and the rule modules.

Exact output, through the real command line. The top-level listing and the rule list change
whenever a field or rule is added: they are golden files (tests/golden/explain-*.txt,
KRM_FN_UPDATE_GOLDEN=1 rewrites them).
"""
import inspect

import pytest

from krm_fn import config
from krm_fn.config import explain
from krm_fn.rules import RULES, merged
from tests.helpers import ROOT, check_golden, run_cli

GOLDEN = ROOT / "tests" / "golden"

TOPOLOGY_POLICY = """\
FIELD:         spec.nodePools[].kubelet.topologyManagerPolicy
TYPE:          string, one of VALUES <choice>
DEFAULT:       best-effort
VALUES:        none, best-effort, restricted, single-numa-node
CONFIGMAP KEY: topologyManagerPolicy (sets the first node pool)

DESCRIPTION:
    Topology Manager policy. best-effort always admits; restricted and single-numa-node
    reject pods that do not fit (TopologyAffinityError).
"""


@pytest.mark.parametrize("name", [
    "spec.nodePools.kubelet.topologyManagerPolicy",
    "nodePools.kubelet.topologyManagerPolicy",
    "spec.nodePools[].kubelet.topologyManagerPolicy",
    "nodePools[0].kubelet.topologyManagerPolicy",
    "topologyManagerPolicy",                     # the ConfigMap key
])
def test_field_by_any_spelling(name):
    p = run_cli(["explain", name])
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout == TOPOLOGY_POLICY


def test_int_field_with_range_and_flat_key():
    p = run_cli(["explain", "reservedCores"])
    assert p.returncode == 0
    assert p.stdout == """\
FIELD:         spec.nodePools[].reserved.cores
TYPE:          integer <int>
DEFAULT:       2
RANGE:         0..1024
CONFIGMAP KEY: reservedCores (sets the first node pool)

DESCRIPTION:
    Whole physical cores reserved (all SMT siblings) as reservedSystemCPUs; the seed
    advice is 2-4. 0: no reservedSystemCPUs, the CPU reservation is kubeReserved.cpu +
    systemReserved.cpu (the static policy holds back their ceiling in CPUs, lowest cores
    first), as on GKE and AKS, which cannot set reservedSystemCPUs.
"""


def test_object_field_lists_its_sub_fields():
    p = run_cli(["explain", "workloads.injection.istio"])
    assert p.returncode == 0
    assert p.stdout == """\
FIELD: spec.workloads.injection.istio
TYPE:  object <object>

DESCRIPTION:
    Istio istio-proxy (and istio-init).

FIELDS:
  cpu <cpu> = null (not set)
      CPU request and limit of the injected proxy (null: not configured, warn when
      injection is detected).
  memory <memory> = null (not set)
      Memory request and limit of the injected proxy.
  mode <choice> = auto
      `auto`: when the workload opts in; `always`: also without a visible opt-in
      (namespace-level injection); `never`.
"""


def test_list_item_and_long_default_wrap():
    p = run_cli(["explain", "workloads.threads.env[0]"])
    assert p.returncode == 0
    assert p.stdout == """\
FIELD:         spec.workloads.threads.env
TYPE:          list of strings <list>
DEFAULT:       [OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS,
               NUMEXPR_NUM_THREADS, NUMEXPR_MAX_THREADS, VECLIB_MAXIMUM_THREADS,
               BLIS_NUM_THREADS, TORCH_NUM_THREADS, TF_NUM_INTRAOP_THREADS,
               RAYON_NUM_THREADS, GOMAXPROCS, PYTHON_CPU_COUNT]
CONFIGMAP KEY: threadsEnv

DESCRIPTION:
    Variables set to the thread count: names of thread-count variables krm-fn knows
    (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS, NUMEXPR_NUM_THREADS,
    NUMEXPR_MAX_THREADS, VECLIB_MAXIMUM_THREADS, BLIS_NUM_THREADS, TORCH_NUM_THREADS,
    TF_NUM_INTRAOP_THREADS, RAYON_NUM_THREADS, GOMAXPROCS, PYTHON_CPU_COUNT,
    TF_NUM_INTEROP_THREADS, OMP_THREAD_LIMIT, GOTO_NUM_THREADS, NUMBA_NUM_THREADS,
    POLARS_MAX_THREADS, TOKIO_WORKER_THREADS, ORT_INTRA_OP_NUM_THREADS,
    ORT_INTER_OP_NUM_THREADS) or listed in `custom`.
"""


def test_typed_only_field_and_quoted_default():
    p = run_cli(["explain", "spec.output.baseline"])
    assert p.returncode == 0
    assert "CONFIGMAP KEY: none (typed form only)\n" in p.stdout
    assert "DEFAULT:       null (not set)\n" in p.stdout
    p = run_cli(["explain", "kubernetesVersion"])
    assert p.stdout.startswith('FIELD:         spec.kubernetesVersion\n'
                               'TYPE:          Kubernetes minor version, quoted ("1.35") '
                               '<version>\n'
                               'DEFAULT:       "1.35"\n'
                               'VALUES:        1.35, 1.36, 1.37\n'
                               'CONFIGMAP KEY: kubernetesVersion\n')


def test_unknown_field_exits_2_with_suggestions():
    p = run_cli(["explain", "nodePools.kubelet.topologyManagerPolicyy"])
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (
        "krm-fn: no config field or ConfigMap key named "
        "'nodePools.kubelet.topologyManagerPolicyy'; did you mean: "
        "spec.nodePools[].kubelet.topologyManagerPolicy, "
        "spec.nodePools[].kubelet.topologyManagerPolicyOptions, "
        "spec.nodePools[].kubelet.topologyManagerScope, "
        "spec.nodePools[].kubelet.memoryManagerPolicy, "
        "spec.nodePools[].kubelet.cpuManagerPolicyOptions\n")
    p = run_cli(["explain", "cores"])
    assert (p.returncode, p.stderr) == (
        2, "krm-fn: no config field or ConfigMap key named 'cores'; did you mean: "
           "spec.nodePools[].reserved.cores\n")
    # a bare rule name is not a field: the suggestion says how to ask for the rule
    p = run_cli(["explain", "placement"])
    assert p.returncode == 2 and "rule placement" in p.stderr


@pytest.mark.parametrize("name", ["nodePools.kubelet.extra.maxPods", "selector[0]",
                                  "workloads.cpuRounding.up", "spec.", "Spec.selector"])
def test_paths_into_or_beyond_leaves_are_unknown(name):
    p = run_cli(["explain", name])
    assert p.returncode == 2 and p.stderr.startswith("krm-fn: no config field")


def test_rule_is_its_module_docstring():
    p = run_cli(["explain", "rule", "placement"])
    from krm_fn.rules import placement
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout == (f"RULE: placement ({RULES.index(placement) + 2} of {len(RULES) + 1}, "
                        f"krm_fn/rules/placement.py)\n\n"
                        + inspect.cleandoc(placement.__doc__) + "\n")
    assert p.stdout.startswith("RULE: placement (11 of 12, krm_fn/rules/placement.py)\n\n"
                               "placement: the node pool's nodeSelector is added to the pod "
                               "spec.\n\nPinned pods must land on nodes whose kubelet runs")


def test_the_engines_rule_is_explained_from_each_engine_module():
    """`explain rule engines` holds each engine's module docstring, once, under its name,
    in the registry's order; the rule's own docstring names no engine."""
    from krm_fn.rules import engines, serving_engines
    text = explain.explain_rule("engines")
    own = inspect.cleandoc(serving_engines.__doc__)
    assert "- **" not in own
    assert text.startswith("RULE: engines (") and own.split("\n\n")[0] in text
    assert text.endswith(own.split("\n\n")[-1] + "\n")
    at = 0
    sections = [(e.name, inspect.getmodule(e.check)) for e in (*engines.ENGINES,
                                                                 engines.WORKERS)]
    sections += [(name, engines.module(name)) for name, _ in engines.ALWAYS]
    for name, module in sections:
        head = text.index(f"- **{name}** ", at)
        body = "\n".join(f"  {ln}" if ln else "" for ln in
                         inspect.cleandoc(module.__doc__).split("\n"))
        assert text.count(body) == 1 and text.index(body) > head, name
        at = head + 1
    assert "VLLM_CPU_KVCACHE_SPACE` (GiB) larger than the memory limit is an error" in text


def test_every_rule_is_explained():
    from krm_fn.rules import rule_id
    modules = (merged, *RULES)
    for i, m in enumerate(modules):
        n, path = rule_id(m), m.__name__.replace(".", "/") + ".py"
        assert (ROOT / path).is_file()
        text = explain.explain_rule(n)
        assert text.startswith(f"RULE: {n} ({i + 1} of {len(modules)}, {path})\n\n")
        assert len(text.splitlines()) > 5


def test_unknown_rule_exits_2():
    p = run_cli(["explain", "rule", "thread"])
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "krm-fn: no rule named 'thread'; did you mean: threads\n")


def test_too_many_words_is_a_usage_error():
    p = run_cli(["explain", "a", "b"])
    assert p.returncode == 2 and "give one field name, or `rule NAME`" in p.stderr


def test_top_level_and_rule_list_golden():
    p = run_cli(["explain"])
    assert p.returncode == 0
    check_golden(GOLDEN / "explain-top.txt", p.stdout)
    assert run_cli(["explain", "spec"]).stdout == p.stdout
    for f in config.SCHEMA:
        assert f"\n  {f.name} <{f.kind}>" in p.stdout
    p = run_cli(["explain", "rule"])
    assert p.returncode == 0
    check_golden(GOLDEN / "explain-rules.txt", p.stdout)


def test_every_field_and_flat_key_is_explained():
    """No field of SCHEMA is missing: each path and each flat key explains itself."""
    for prefix, f in explain._all_fields():
        found = explain.lookup(explain._display(prefix, f))
        assert found.field is f
    for key, (prefix, f) in config.FLAT_KEYS.items():
        text = explain.explain_field(key)
        assert "CONFIGMAP KEY: " + key in text
        assert explain.lookup(key).field is f


def test_a_very_long_unknown_name_is_shortened_in_the_message():
    p = run_cli(["explain", "x" * 100000])
    assert p.returncode == 2
    assert p.stderr.startswith("krm-fn: no config field or ConfigMap key named '" + "x" * 77
                               + "...'")
    assert len(p.stderr) < 1000


@pytest.mark.parametrize("name,module", [("verdict", "krm_fn.pipeline.verdict"),
                                         ("admission-policy", "krm_fn.guard.targets")])
def test_the_steps_that_tag_results_as_a_rule_are_explained(name, module):
    """Results carry `tags.rule` "verdict" and "admission-policy" (the guard's label),
    which no rule module makes: `explain rule NAME` explains the step instead of saying
    there is no such rule."""
    import importlib
    p = run_cli(["explain", "rule", name])
    mod = importlib.import_module(module)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout == (f"RESULTS TAGGED rule: {name} (not a rule: a step after the rules, "
                        f"{module.replace('.', '/')}.py)\n\n"
                        + inspect.cleandoc(mod.__doc__) + "\n")
