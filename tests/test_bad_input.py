"""Bad input: a corpus of small files (tests/bad_input/), one per kind of fault, each with the
exit code and the message fragments it must produce (the table below).

Every case asserts: exit code 1; one `krm-fn: ` line per message on stderr naming the item
and the field (or the line and column when the text is not YAML); no traceback and no
"internal error"; and that nothing else was written: stdout is empty when the input cannot
be parsed, and when it can, every item comes out unchanged (the output without its
`results` is the input, byte for byte; `krm-fn run` writes the input back as it was).

The cases run in-process through click's CliRunner (the same entry point as the console
script, fast); the ones that depend on the real process (stack depth, memory) run in a
subprocess. Existing hostile regression inputs live in tests/hostile/ and are not repeated.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass

import pytest
import yaml
from click.testing import CliRunner

from krm_fn.cli import cli
from tests.helpers import ROOT, without_results

BAD = ROOT / "tests" / "bad_input"


DEEP = ("exceeded maximum nesting depth", "items[0]: nested more than 100 levels deep (line 7)")


@dataclass(frozen=True)
class Case:
    fragments: tuple            # each must appear in stderr (a tuple: one of its strings)
    parseable: bool = True      # False: stdout must be empty
    args: tuple = ()            # CLI arguments (file names relative to tests/bad_input)
    stdin: bool = True          # the file is fed on stdin
    process: bool = False       # run in a subprocess (stack depth, memory)
    bug: str | None = None      # a krm_fn bug: strict xfail with this reason


NOT_YAML, NOT_RL = "input is not valid YAML at line", "input is not a ResourceList"
LEFT = "left unchanged because of the errors above"
NOTHING = "nothing changed because of the function config errors above"
C0 = "spec.containers[0]"

CASES: dict[str, Case] = {
    # --- not YAML, not UTF-8, not a ResourceList: one line, nothing on stdout
    "b01-unclosed-flow.yaml": Case((NOT_YAML + " 3, column 1",), False),
    "b02-tab-indentation.yaml": Case((NOT_YAML + " 4, column 1",
                                      "found character that cannot start any token"), False),
    "b03-mapping-value-not-allowed.yaml": Case(
        (NOT_YAML + " 2, column 19", "mapping values are not allowed"), False),
    "b04-utf16-bom.bin": Case(("stdin is not UTF-8 text (byte 0xff at offset 0)",), False),
    "b05-latin1.bin": Case(("stdin is not UTF-8 text (byte 0xe9 at offset 119)",), False),
    "b06-nul-byte.bin": Case(("input is not YAML text (it contains NUL bytes)",), False),
    "b07-empty.yaml": Case(("no input: krm-fn expects a ResourceList on stdin",), False),
    "b08-only-comments.yaml": Case(("no input",), False),
    "b09-scalar-document.yaml": Case((NOT_RL,), False),
    "b10-list-document.yaml": Case((NOT_RL,), False),
    "b11-two-documents.yaml": Case((NOT_RL,), False),
    "b12-kind-list.yaml": Case((NOT_RL,), False),
    "b13-wrong-api-version.yaml": Case(
        ("ResourceList apiVersion 'config.kubernetes.io/v2' is not one of",), False),
    "b14-missing-items.yaml": Case(("ResourceList has no items field",), False),
    "b15-items-mapping.yaml": Case(("ResourceList items must be a list",), False),
    "b16-items-scalar.yaml": Case(("ResourceList items must be a list",), False),
    "b17-duplicate-function-config.yaml": Case(
        ("ResourceList: duplicate key 'functionConfig' (line 5)",), False),
    "b18-duplicate-key-in-item.yaml": Case(("items[0].metadata: duplicate key 'name' (line 8)",),
                                           False),
    "b19-merge-key.yaml": Case(
        ("items[0].spec.containers[0]", "YAML merge keys (<<) are not supported"), False),
    "b20-alias-bomb-function-config.yaml": Case(
        ("input is too large or expands too far through aliases",), False),
    "b21-alias-bomb-run-mode.yaml": Case(
        ("input is too large or expands too far through aliases",), False, args=("run", "-")),
    # --- items that are not KRM objects: named by index and field, passed through
    "b22-item-is-a-string.yaml": Case(("error: items[0]: item 0 is not a mapping (found the scalar 'just a string')",)),
    "b62-item-is-a-number.yaml": Case(
        ("error: items[0]: item 0 is not a mapping (found the scalar '42')",)),
    "b23-item-is-a-list.yaml": Case(("error: items[0]: item 0 is not a mapping (found a list)",)),
    "b24-item-is-null.yaml": Case(("error: items[0]: item 0 is not a mapping (found null)",)),
    "b25-item-without-api-version.yaml": Case(
        ("items[0].apiVersion: item 0: apiVersion must be a non-empty string, found nothing",)),
    "b26-item-without-kind.yaml": Case(("items[0].kind: item 0: kind must be a non-empty",)),
    "b27-item-without-metadata.yaml": Case(
        ("items[0].metadata: item 0: metadata must be a mapping, found nothing",)),
    "b28-item-without-name.yaml": Case(("items[0].metadata.name: item 0: metadata.name must "
                                        "be a non-empty string, found nothing",)),
    "b29-name-is-a-mapping.yaml": Case(("items[0].metadata.name:", "found a mapping")),
    "b30-labels-is-a-list.yaml": Case(("items[0].metadata.labels: item 0: metadata.labels "
                                       "must be a mapping, found a list",)),
    "b31-annotation-value-mapping.yaml": Case(
        ("items[0].metadata.annotations['note']:", "values must be strings")),
    "b32-duplicate-items.yaml": Case(("ConfigMap ml/settings items[1]: duplicate item: items 0 "
                                      "and 1 are both ConfigMap ml/settings",)),
    # --- quantities (Pod p, its only container 'app')
    "b33-cpu-1.5.0.yaml": Case((f"Pod p {C0}.resources.limits.cpu: container 'app': '1.5.0' "
                                "is not a quantity", f"Pod p: {LEFT}")),
    "b34-cpu-negative.yaml": Case((f"Pod p {C0}.resources.limits.cpu:", "'-2' is negative")),
    "b35-cpu-abc.yaml": Case((f"Pod p {C0}.resources.limits.cpu:", "'abc' is not a quantity")),
    "b36-memory-1e400.yaml": Case((f"Pod p {C0}.resources.limits.memory:",
                                   "'1e400' is larger than 2^63-1")),
    # one suffix only: apimachinery's parseQuantityString refuses `1e3m` too
    "b38-cpu-1e3m-two-suffixes.yaml": Case((f"Pod p {C0}.resources.limits.cpu:",
                                            "'1e3m' is not a quantity")),
    "b39-cpu-zero.yaml": Case((f"Pod p {C0}.resources.limits.cpu:",
                               "cpu '0' must be greater than zero")),
    "b40-cpu-negative-millis.yaml": Case((f"Pod p {C0}.resources.requests.cpu:",
                                          "'-500m' is negative")),
    "b41-memory-zero.yaml": Case((f"Pod p {C0}.resources.limits.memory:",
                                  "memory '0Gi' must be greater than zero")),
    "b42-memory-fractional-bytes.yaml": Case((f"Pod p {C0}.resources.limits.memory:",
                                              "'500m' is not a whole number of bytes")),
    "b43-cpu-huge-text.yaml": Case((f"Pod p {C0}.resources.limits.cpu:",
                                    "is not a quantity (longer than 64 characters)")),
    # --- env, containers, resources
    "b44-env-without-name.yaml": Case((f"Pod p {C0}.env[0]: container 'app': env[0] must be a "
                                       "mapping with a name",)),
    "b45-env-is-a-mapping.yaml": Case((f"Pod p {C0}.env: container 'app': env must be a list",)),
    "b46-env-entry-is-a-string.yaml": Case((f"Pod p {C0}.env[1]:", "env[1] must be a mapping")),
    "b47-container-is-a-string.yaml": Case((f"Pod p {C0}: must be a mapping (a container)",)),
    "b48-containers-is-a-mapping.yaml": Case(("Pod p spec.containers: must be a list",)),
    "b49-pinned-resources-null.yaml": Case(
        (f"Pod p {C0}.resources.limits.cpu: container 'app' is pinned but sets no cpu",
         f"Pod p {C0}.resources.limits.memory: container 'app' is pinned but sets no memory")),
    "b50-pinned-resources-empty.yaml": Case(
        (f"Pod p {C0}.resources.limits.cpu: container 'app' is pinned but sets no cpu",
         f"Pod p {C0}.resources.limits.memory: container 'app' is pinned but sets no memory")),
    "b51-resources-is-a-list.yaml": Case((f"Pod p {C0}.resources:",
                                          "resources must be a mapping")),
    "b52-requests-is-a-string.yaml": Case((f"Pod p {C0}.resources.requests:",
                                           "resources.requests must be a mapping")),
    "b53-container-without-name.yaml": Case((f"Pod p {C0}.name: every container needs a name",)),
    "b54-deployment-without-pod-template.yaml": Case(
        ("Deployment d spec.template: missing: a Deployment keeps its pod spec at "
         "spec.template.spec",)),
    "b55-shm-larger-than-pod.yaml": Case(("Pod p spec.volumes[0].emptyDir.sizeLimit: volume "
                                          "'shm': sizeLimit 2Gi is above the pod's memory",)),
    "b56-node-selector-conflict.yaml": Case(
        ("Pod p spec.nodeSelector['krm-fn.dev/cpu-pinning']:", "conflicts with node pool")),
    "b57-unknown-node-pool.yaml": Case(("Pod p metadata.annotations['krm-fn.dev/node-pool']:",
                                        "'gpu' names no node pool")),
    "b58-volume-is-a-string.yaml": Case(("Pod p spec.volumes[0]: each volume must be a mapping",)),
    # found by tests/test_fuzz.py (was an internal error in rules/engines.py; fixed)
    "b59-env-name-is-a-list.yaml": Case(
        (f"Pod p {C0}.env[0]:", "env[0] must be a mapping with a name")),
    # a non-string key at the ResourceList root (was an internal TypeError; found by fuzzing)
    "b60-list-key-at-root.yaml": Case(
        ("ResourceList: keys must be strings, found a list key (line 1)",), False),
    "b61-mapping-key-at-root.yaml": Case(
        ("ResourceList: keys must be strings, found a mapping key (line 3)",), False),
    # --- deep nesting: the real process's stack
    # (was an internal RecursionError at ~500 levels; fixed). libyaml builds that carry its
    # nesting limit refuse it while parsing; the others parse it and krm-fn's own depth
    # check refuses it
    "d01-deep-flow-nesting.yaml": Case((DEEP,), False, process=True),
    "d02-deep-flow-mappings.yaml": Case((DEEP,), False, process=True),
    # --- the function config: named as the functionConfig and its field; nothing changed
    "c01-config-unknown-topology-field.yaml": Case(
        ("InferenceTuning pin spec.nodePools[0].topology: invalid function config: unknown "
         "field 'cores'",)),
    "c02-config-unknown-top-level-field.yaml": Case(
        ("InferenceTuning pin: invalid function config: unknown field 'specs'",)),
    "c03-config-threads-per-core-string.yaml": Case(
        ("InferenceTuning pin spec.nodePools[0].topology.threadsPerCore:",
         "expected a whole number, found 'two'")),
    "c04-config-thread-env-not-a-list.yaml": Case(
        ("InferenceTuning pin spec.workloads.threads.env:", "expected a list, found a string")),
    "c05-config-bad-choice.yaml": Case(("InferenceTuning pin spec.workloads.cpuRounding:",
                                        "must be one of up, down, keep, error")),
    "c06-config-default-cpus-not-a-quantity.yaml": Case(
        ("InferenceTuning pin spec.workloads.defaultCpus:", "'lots' is not a quantity")),
    "c07-config-version-unquoted.yaml": Case(("InferenceTuning pin spec.kubernetesVersion:",
                                              "must be a quoted string")),
    "c08-configmap-unknown-key.yaml": Case(("ConfigMap pin data.cpuRoundng:",
                                            "unknown key 'cpuRoundng'")),
    "c09-configmap-wrong-type.yaml": Case(("ConfigMap pin data.threadsPerCore:",
                                           "expected a whole number, found 'abc'")),
    "c10-config-wrong-kind.yaml": Case(("Deployment pin kind: invalid function config: "
                                        "functionConfig must be a krm-fn.dev/v1alpha1 "
                                        "InferenceTuning or a v1 ConfigMap",)),
    "c11-reserved-cores-exceed-machine.yaml": Case(
        ("InferenceTuning pin spec.nodePools[0].reserved.cores: cannot reserve 8 cores: the "
         "node has 4 physical cores", f"InferenceTuning pin: {NOTHING}")),
    "c12-reserved-cores-equal-machine.yaml": Case(
        ("InferenceTuning pin spec.nodePools[0].reserved.cores: cannot reserve 4 cores",
         "at least one must be left for pods")),
    "c13-reserved-cpuset-beyond-machine.yaml": Case(
        ("InferenceTuning pin spec.nodePools[0].kubelet.reservedSystemCPUs:",
         "CPUs 8-63 do not exist on this pool's nodes (CPUs 0-7)")),
    "c14-config-node-pools-not-a-list.yaml": Case(("InferenceTuning pin spec.nodePools:",
                                                   "expected a list, found a mapping")),
    "c15-config-negative-reserved-cpus.yaml": Case(
        ("InferenceTuning pin spec.workloads.threads.reservedCpus:", "must be at least 0")),
    "c16-config-unknown-resource.yaml": Case(
        ("InferenceTuning pin spec.workloads.sidecarResources:", "unknown field 'gpu'")),
    # the input's results are written back with krm-fn's after them: a mapping was dropped
    "b84-results-not-a-list.yaml": Case(
        ("ResourceList results must be a list (line 5); krm-fn appends its own to them",),
        False),
    # --- a ResourceList rewritten whole (flow style, flow-style results) by ruamel.yaml,
    # which writes some plain scalars of items krm-fn does not change its own way (the
    # timestamp cut to microseconds, 9.99e999 and 1e400 as .inf): refused, not changed
    "e01-flow-results-retyped-scalars.yaml": Case(
        ("cannot rewrite this ResourceList safely: items[0], which krm-fn does not change, "
         "would not read back as it was",), False),
    "e02-json-number-beyond-float.yaml": Case(
        ("cannot rewrite this ResourceList safely: items[0], which krm-fn does not change, "
         "would not read back as it was",), False),
    # --- `krm-fn run --config FILE`: plain YAML in, config from a file
    "r01-config-file-two-documents.config.yaml": Case(
        ("the config file must hold exactly one YAML document, found 2",), False,
        args=("run", "--config", "r01-config-file-two-documents.config.yaml", "r00-pod.yaml"),
        stdin=False),
    "r02-config-file-a-list.config.yaml": Case(
        ("the config file must hold a mapping",), False,
        args=("run", "--config", "r02-config-file-a-list.config.yaml", "r00-pod.yaml"),
        stdin=False),
    "r03-config-file-bad-choice.config.yaml": Case(
        ("InferenceTuning pin spec.workloads.cpuRounding:", "found 'upward'"), True,
        args=("run", "--config", "r03-config-file-bad-choice.config.yaml", "r00-pod.yaml"),
        stdin=False),
}
INPUTS_ONLY = {"r00-pod.yaml"}   # used by the cases above, not a case itself


def _params():
    out = []
    for name, case in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=case.bug)] if case.bug else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_the_table_covers_the_corpus():
    files = {p.name for p in BAD.iterdir() if p.is_file()}
    assert files == set(CASES) | INPUTS_ONLY
    assert len(CASES) >= 40


def _invoke(case: Case, data: bytes) -> tuple[int, bytes, str]:
    """(exit code, stdout bytes, stderr text), in-process or in a subprocess."""
    args = list(case.args)
    if case.process:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("KRM_FN_DEBUG", None)
        p = subprocess.run([sys.executable, "-m", "krm_fn", *args], input=data,
                           capture_output=True, cwd=BAD, env=env, timeout=60)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
    cwd = os.getcwd()
    os.chdir(BAD)
    try:
        r = CliRunner().invoke(cli, args, input=data, catch_exceptions=True,
                               env={"KRM_FN_DEBUG": None})
    finally:
        os.chdir(cwd)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"exception escaped the CLI: {r.exception!r}") from r.exception
    return r.exit_code, r.stdout_bytes, r.stderr_bytes.decode("utf-8", "replace")


@pytest.mark.parametrize("name", _params())
def test_bad_input(name):
    case = CASES[name]
    src = (BAD / name).read_bytes() if case.stdin else b""
    code, stdout, stderr = _invoke(case, src)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert code == 1, stderr
    assert stderr, "no message"
    for line in stderr.splitlines():
        assert line.startswith("krm-fn: "), line       # one line per message
    for fragment in case.fragments:
        alternatives = fragment if isinstance(fragment, tuple) else (fragment,)
        assert any(a in stderr for a in alternatives), f"{fragment!r} not in:\n{stderr}"
    if not case.parseable:
        assert stdout == b""
        return
    out = stdout.decode()
    if case.stdin and not case.args:
        # the ResourceList comes back with every item unchanged, plus the error results
        assert without_results(out) == src.decode()
        results = yaml.safe_load(out)["results"]
        assert any(r["severity"] == "error" for r in results)
    else:
        # `krm-fn run`: the input comes back as it was
        args = list(case.args)
        config = args[args.index("--config") + 1] if "--config" in args else None
        inputs = [a for a in args[1:] if a.endswith(".yaml") and a != config]
        assert out == "".join((BAD / f).read_text() for f in inputs)


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_huge_document_is_refused_quickly():
    n = 2_100_000
    src = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
           "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: huge}\n  data: {x: ["
           + ",".join(["0"] * n) + "]}\n").encode()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        p = subprocess.run([sys.executable, "-m", "krm_fn"], input=src, capture_output=True,
                           env=env, timeout=6, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("not refused within 6 s")
    stderr = p.stderr.decode()
    assert p.returncode == 1 and p.stdout == b""
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert "input is too large" in stderr
