"""Fuzzing the CLI entry point in-process: bytes in, krm-fn's behaviour out.

Whatever the bytes, `krm-fn` (the KRM function on stdin) and `krm-fn run -` must end with
SystemExit 0, 1 or 2 — never another exception — and never print "internal error"
(an unexpected exception caught by cli._guard); every stderr line is a `krm-fn: ` message
(or click's usage text for exit 2).

Inputs come from three generators, mixed:
  - raw bytes;
  - mutations of real inputs (the golden cases as the function reads them, tests/hostile/,
    tests/bad_input/):
    YAML-significant tokens inserted, spans deleted or duplicated, lines re-indented,
    swapped or dropped, bytes flipped;
  - KRM-shaped documents: objects of every registered kind (and others) whose pod specs are
    random trees over the PodSpec vocabulary (containers, resources, env, volumes, ...) with
    quantities and junk as values, written in random YAML styles, with a valid or random
    functionConfig.

CI runs 200 examples (a few seconds). To fuzz for minutes:

    KRM_FN_FUZZ_EXAMPLES=20000 /tmp/venv/bin/pytest -m fuzz tests/test_fuzz.py -q

(about 100 examples a second on one core; failures are saved in .hypothesis/ and replayed
first on the next run). KRM_FN_FUZZ_STRICT=1 also asserts that every exit-0 output is
valid YAML (it can hit the known span-editor bugs listed in
tests/test_properties.py, test_bug_*).
"""
from __future__ import annotations

import os

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from krm_fn import workloads
from krm_fn.cli import cli
from tests.helpers import ROOT, case_input, cases

EXAMPLES = int(os.environ.get("KRM_FN_FUZZ_EXAMPLES", "200"))
# Crashes already reported, each with a strict-xfail reproduction; an example that hits one
# is discarded so that the fuzz looks for new ones. Remove an entry once its bug is fixed.
KNOWN_CRASHES: dict[str, str] = {
    # stderr fragment -> what triggers it (and where its reproduction is). None open now;
    # found and fixed: env entry names that are not strings (tests/test_bad_input.py b59).
}
STRICT = os.environ.get("KRM_FN_FUZZ_STRICT") == "1"
_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def _seeds() -> list[bytes]:
    seeds = [case_input(c).encode() for c in cases()]
    files = sorted((ROOT / "tests" / "hostile").glob("*.yaml"))
    files += sorted(p for p in (ROOT / "tests" / "bad_input").iterdir() if p.is_file())
    seeds += [p.read_bytes() for p in files]
    return [s for s in seeds if len(s) < 20_000]


SEEDS = _seeds()
TOKENS = [b":", b": ", b"- ", b"-", b"[", b"]", b"{", b"}", b",", b"&a ", b"*a", b"&b ",
          b"*b", b"!!str ", b"!!int ", b"!custom ", b"|", b"|-", b">", b"\t", b"\n", b"\r\n",
          b"#", b" # c", b'"', b"'", b"\\", b"\xff", b"\xc3", b"\x00", b"\x1b", b"~", b"null",
          b"0644", b"1e400", b"-1", b"0", b"1.5.0", b"500m", b"1Gi", b"<<: ", b"<<: *a",
          b"---\n", b"...\n", b"\xef\xbb\xbf", b"%YAML 1.1\n", b"? ", b"  ", b"    ",
          b"name: ", b"cpu: ", b"memory: ", b"env: ", b"resources: ", b"containers: ",
          b"restartPolicy: Always", b"medium: Memory", b"valueFrom: ", b"\xe2\x80\xa8",
          b"\xf0\x9f\x9a\x80", b"kind: ResourceList\n", b"items: []\n", b"items:\n- "]


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["value", "value", "value", "insert", "insert", "delete",
                                   "duplicate", "flip", "indent", "dedent", "drop-line",
                                   "swap-lines", "copy-line"]))
        n = len(data)
        pos = draw(st.integers(0, n))
        if draw(st.booleans()):   # at a line start or a value: keeps more inputs parseable
            starts = [i + 1 for i, b in enumerate(data) if b == 10][2:] or [0]
            pos = draw(st.sampled_from(starts))
        if op == "value":   # a scalar after `key: ` replaced: the structure stays valid
            lines = bytes(data).split(b"\n")
            keyed = [i for i, ln in enumerate(lines) if ln[:1] in (b" ", b"-")
                     and (b": " in ln or ln.rstrip().endswith(b":"))]
            if keyed:
                i = draw(st.sampled_from(keyed))
                key = lines[i].split(b": ", 1)[0].rstrip(b":")
                lines[i] = key + b": " + draw(st.sampled_from(VALUES + ["{}", "[]", "~", "''"])
                                              ).encode()
                data = bytearray(b"\n".join(lines))
        elif op == "insert":
            tok = draw(st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=4))
            data[pos:pos] = tok
        elif op == "delete" and n:
            data[pos:pos + draw(st.integers(1, 20))] = b""
        elif op == "duplicate" and n:
            end = min(n, pos + draw(st.integers(1, 80)))
            data[pos:pos] = data[pos:end]
        elif op == "flip" and pos < n:
            data[pos] = draw(st.integers(0, 255))
        else:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(min(3, len(lines) - 1), len(lines) - 1))
            if op == "indent":
                lines[i] = b"  " + lines[i]
            elif op == "dedent":
                lines[i] = lines[i][2:] if lines[i].startswith(b"  ") else lines[i]
            elif op == "drop-line":
                del lines[i]
            elif op == "copy-line":
                lines.insert(draw(st.integers(0, len(lines))), lines[i])
            else:
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


# --- KRM-shaped documents ----------------------------------------------------------------

POD_KEYS = ["containers", "initContainers", "name", "image", "resources", "requests",
            "limits", "cpu", "memory", "env", "value", "valueFrom", "resourceFieldRef",
            "resource", "divisor", "volumes", "emptyDir", "medium", "sizeLimit",
            "nodeSelector", "restartPolicy", "annotations", "labels", "args", "command",
            "storageUri", "workerSpec", "rayStartParams", "template", "metadata", "spec",
            "kserve-container", "model", "pytorch", "hugepages-2Mi", "ephemeral-storage"]
VALUES = ["2", "500m", "1.5", ".5", "1e3", "1Gi", "1024Mi", "0", "-1", "1.5.0", "abc", "",
          "Always", "Memory", "OMP_NUM_THREADS", "GOMAXPROCS", "limits.cpu", "true", "false",
          "0644", "016", "1e400", "0.0001m", "app", "vllm serve --device cpu", "--workers",
          "4", "ray start --num-cpus=3", "gunicorn -w 4", "kubectl.kubernetes.io/default-container",
          "krm-fn.dev/cpu-pinning", "serving.kserve.io/deploymentMode", "RawDeployment",
          "sidecar.istio.io/inject", "s3://bucket/model", "java", "-XX:ActiveProcessorCount=64"]
QUANTITY = st.sampled_from(["2", "500m", "1", "4", "1Gi", "512Mi", "1.5", "3", "64Mi",
                            "0", "-1", "abc", "1e3", "016"])
SCALARS = st.sampled_from(VALUES) | st.none() | st.booleans() | st.integers(-3, 10**20) \
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
TREE = st.recursive(
    SCALARS,
    lambda kids: st.lists(kids, max_size=3)
    | st.dictionaries(st.sampled_from(POD_KEYS + VALUES[:6]), kids, max_size=5),
    max_leaves=30)


def mostly(usual, rare, odds: int = 8):
    """`usual`, and `rare` once in `odds` draws."""
    return st.sampled_from(range(odds)).flatmap(lambda i: rare if i == odds // 2 else usual)


@st.composite
def container(draw):
    c = {"name": draw(st.sampled_from(["app", "side", "kserve-container", "main", "app"]))}
    if draw(st.booleans()):
        c["resources"] = {part: {res: draw(QUANTITY | SCALARS) for res in
                                 draw(st.lists(st.sampled_from(["cpu", "memory"]), unique=True))}
                          for part in draw(st.lists(st.sampled_from(["requests", "limits"]),
                                                    unique=True))}
    if draw(st.booleans()):
        c["env"] = draw(st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["OMP_NUM_THREADS", "GOMAXPROCS", "JAVA_TOOL_OPTIONS",
                                      "TS_DEFAULT_WORKERS_PER_MODEL", "X"])},
            optional={"value": QUANTITY | SCALARS, "valueFrom": TREE}) | TREE, max_size=3))
    if draw(st.integers(0, 2)) == 0:
        for k, v in draw(st.dictionaries(st.sampled_from(POD_KEYS), TREE, max_size=2)).items():
            c.setdefault(k, v)
    if draw(st.integers(0, 3)) == 0:
        c["restartPolicy"] = "Always"
    return c


@st.composite
def pod_spec(draw):
    spec = {"containers": draw(st.lists(mostly(container(), TREE), max_size=3))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(st.lists(container(), max_size=2))
    if draw(st.booleans()):
        spec["volumes"] = draw(st.lists(st.fixed_dictionaries(
            {"name": st.just("shm"), "emptyDir": st.fixed_dictionaries(
                {"medium": st.just("Memory")}, optional={"sizeLimit": QUANTITY}) | TREE}),
            max_size=2))
    if draw(st.integers(0, 2)) == 0:
        for k, v in draw(st.dictionaries(st.sampled_from(POD_KEYS), TREE, max_size=2)).items():
            spec.setdefault(k, v)
    return spec


def _place(obj: dict, path: tuple, value, draw) -> None:
    cur = obj
    for i, key in enumerate(path[:-1]):
        nxt_is_list = path[i + 1] == "*"
        if key == "*":
            if not cur:
                cur.append({})
            cur = cur[0]
            continue
        if not isinstance(cur.get(key), (dict, list)):
            cur[key] = [] if nxt_is_list else {}
        cur = cur[key]
    if path[-1] == "*":
        cur.append(value)
    else:
        cur[path[-1]] = value


@st.composite
def krm_object(draw):
    kinds = list(workloads.KINDS) + [("", "ConfigMap"), ("example.com", "Widget")]
    group, kind = draw(st.sampled_from(kinds))
    good = f"{group}/v1" if group else "v1"
    obj: dict = {"apiVersion": draw(st.sampled_from([good] * 8 + ["v1", ""])),
                 "kind": kind,
                 "metadata": {"name": draw(st.sampled_from(["a", "b", "w", "x"] * 3 + [""]))}}
    if draw(st.booleans()):
        obj["metadata"]["annotations"] = draw(st.dictionaries(st.sampled_from(
            ["krm-fn.dev/skip", "krm-fn.dev/node-pool", "kubectl.kubernetes.io/default-container",
             "sidecar.istio.io/inject", "serving.kserve.io/deploymentMode",
             "config.kubernetes.io/path", "config.kubernetes.io/local-config"]), SCALARS,
            max_size=3))
    for at in workloads.KINDS.get((group, kind), ()):
        if draw(st.integers(0, 4)):
            _place(obj, at.spec, draw(pod_spec()), draw)
    if draw(st.integers(0, 5)) == 0:
        obj[draw(st.sampled_from(["spec", "data", "metadata"]))] = draw(TREE)
    return obj


FUNCTION_CONFIGS = [
    None,
    {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "metadata": {"name": "p"},
     "spec": {"workloads": {"defaultCpus": "2", "defaultMemory": "1Gi"}}},
    {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "metadata": {"name": "p"},
     "spec": {"workloads": {"cpuRounding": "keep", "threads": {"source": "downwardAPI",
                                                               "reservedCpus": 1}},
              "nodePools": [{"name": "a", "topology": {"threadsPerCore": 1}},
                            {"name": "b", "nodeSelector": {"pool": "b"}}]}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"},
     "data": {"istioCpu": "100m", "istioMemory": "128Mi", "istioMode": "always",
              "formats": "configmap,kubelet-config"}},
]


@st.composite
def krm_document(draw) -> bytes:
    rl: dict = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                "items": draw(st.lists(mostly(krm_object(), TREE), max_size=4))}
    fc = draw(mostly(st.sampled_from(FUNCTION_CONFIGS), TREE))
    if fc is not None:
        rl["functionConfig"] = fc
    text = yaml.safe_dump(rl, default_flow_style=draw(st.sampled_from([False, None, True])),
                          sort_keys=draw(st.booleans()), allow_unicode=True, width=10_000)
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    return text.encode()


INPUTS = st.one_of(st.binary(max_size=300), mutated(), mutated(), krm_document(),
                   krm_document())


def run_cli_inprocess(args: list[str], data: bytes):
    r = CliRunner().invoke(cli, args, input=data, catch_exceptions=True,
                           env={"KRM_FN_DEBUG": None})
    return r


@pytest.mark.fuzz
@settings(max_examples=EXAMPLES, deadline=None, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much, HealthCheck.large_base_example])
@given(data=INPUTS, mode=st.sampled_from([[], [], ["run", "-"]]))
def test_cli_survives_any_bytes(data, mode):
    r = run_cli_inprocess(mode, data)
    exc = r.exception
    assert exc is None or isinstance(exc, SystemExit), f"escaped: {exc!r}"
    assert r.exit_code in (0, 1, 2), r.exit_code
    stderr = r.stderr_bytes.decode("utf-8", "replace")
    assume(not any(sig in stderr for sig in KNOWN_CRASHES))
    assert "internal error" not in stderr, stderr
    assert "Traceback" not in stderr
    if r.exit_code != 2:
        for line in stderr.splitlines():
            assert line.startswith("krm-fn: "), line
    if r.exit_code == 0:
        assert r.stdout_bytes or mode, "exit 0 without a ResourceList on stdout"
        if STRICT:
            list(yaml.load_all(r.stdout_bytes.decode(), Loader=_LOADER))
    if r.exit_code == 1 and not r.stdout_bytes:
        assert len(stderr.splitlines()) == 1, stderr    # unusable input: one line


def test_seeds_are_found():
    assert len(SEEDS) > 40
