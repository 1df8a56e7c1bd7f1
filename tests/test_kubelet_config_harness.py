"""Everything krm-fn emits is a KubeletConfiguration the real kubelet of its version starts
with, and whatever that kubelet refuses krm-fn refuses too, with the kubelet's own message
(issue #30). The kubelet's code runs in the harness (tests/harness, `harness
kubeletconfig`: decoding, feature gates, validation and the start-up of the resource
managers on the pool's machine, built per minor from k8s.io/kubernetes; docs/kubelet-data.md,
"Checked against the kubelet's code").

(a) the golden cases (tests/testdata) and the examples (overlays/, bases/): every
    KubeletConfiguration they emit, in every format that carries one
    (tests/harness/kubeletconfigs.py), on the pool's machine (krm-fn's NodeModel as a
    cadvisor MachineInfo, tests/harness/convert.py), must start the kubelet of the config's
    kubernetesVersion; the same cases retargeted at each built minor too.
(b) generated pools (hypothesis): see test_generated_pools below.

Without Go these tests skip, except under CI=true (runner.require_go).
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests import helpers
from tests.harness import kubeletconfigs, runner

ROOT = helpers.ROOT
BUILT = runner.releases()            # {"1.35": "v1.35.4", ...}
OUTSIDE = ("kubernetesVersion outside the built harness minors (being moved to 1.35-1.37)")

_HARNESSES: dict = {}


def harness(minor: str) -> runner.Harness:
    """The serve process of `minor`'s harness (one per test session)."""
    runner.require_go()
    if minor not in _HARNESSES:
        _HARNESSES[minor] = runner.Harness(minor)
    return _HARNESSES[minor]


@pytest.fixture(scope="module", autouse=True)
def _close_harnesses():
    yield
    for h in _HARNESSES.values():
        h.close()
    _HARNESSES.clear()


def minor_of(version) -> str:
    return f"{version[0]}.{version[1]}"


def require_built(version) -> runner.Harness:
    """The harness of `version` ((1, minor)); a clear failure when none is built for it."""
    minor = minor_of(version)
    if minor not in BUILT:
        pytest.fail(f"kubernetesVersion {minor} has no kubelet harness: the harness is built "
                    f"for {', '.join(BUILT)} (tests/harness/go.mod, go.<minor>.mod); render "
                    f"at one of those or add that minor's module file "
                    f"(tests/harness/modfiles.py)")
    return harness(minor)


def test_a_version_without_a_harness_fails_with_a_clear_message():
    with pytest.raises(pytest.fail.Exception, match=r"kubernetesVersion 1\.34 has no kubelet "
                       r"harness: the harness is built for 1\.35, 1\.36, 1\.37"):
        require_built((1, 34))


# ---------------------------------------------------------------------------------------
# The harness's own answers, on configurations whose fate is known

HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
TWO_CPUS = {"num_cores": 2, "memory_capacity": 2**30, "topology": [
    {"node_id": 0, "memory": 2**30, "distances": [10], "cores": [
        {"core_id": 0, "thread_ids": [0], "socket_id": 0},
        {"core_id": 1, "thread_ids": [1], "socket_id": 0}]}]}


@pytest.mark.parametrize("minor", list(BUILT))
@pytest.mark.parametrize("text,machine,expected", [
    ("failCgroupV1: true\n", None, {"ok": True, "stage": "", "error": "", "strictError": ""}),
    ("metadata: {name: x}\nbogus: 1\n", None,
     {"ok": True, "stage": "", "error": "", "strictError":
      'strict decoding error: unknown field "bogus", unknown field "metadata"'}),
    ("maxPods: lots\n", None, {"ok": False, "stage": "decode", "strictError": "", "error":
     "failed to decode: json: cannot unmarshal string into Go struct field "
     "KubeletConfiguration.maxPods of type int32"}),
    ("featureGates: {NoSuchGate: true}\n", None, {
        "ok": False, "stage": "decode", "strictError": "", "panic": True, "error":
        "failed to merge global and in-flight KubeletConfiguration while setting defaults, "
        "error: unrecognized feature gate: NoSuchGate"}),
    ("maxPods: -1\n", None, {"ok": False, "stage": "validate", "strictError": "", "error":
     "invalid configuration: maxPods (--max-pods) -1 must not be a negative number"}),
    ("reservedSystemCPUs: 0-3\n", TWO_CPUS, {
        "ok": False, "stage": "start", "strictError": "",
        "error": "reserved-cpus: 0-3 is not a subset of online-cpus: 0-1"}),
    ("cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n", TWO_CPUS,
     {"ok": True, "stage": "", "error": "", "strictError": ""}),
], ids=["ok", "strict", "decode", "gates-panic", "validate", "start", "start-ok"])
def test_harness_stages(minor, text, machine, expected):
    """Each stage of `harness kubeletconfig` on a file whose fate is known, with the
    kubelet's message; the node runs cgroup v2 (failCgroupV1 passes whatever the test
    machine runs)."""
    got = kubeletconfigs.check(harness(minor), HEAD + text, machine)
    got.pop("errors", None)
    assert got == expected


@pytest.mark.parametrize("minor", list(BUILT))
def test_harness_node_runs_cgroup_v1_on_request(minor):
    got = harness(minor).call("kubeletconfig", {"kubeletConfig": HEAD + "failCgroupV1: true\n",
                                                "cgroupV1": True})
    assert (got["stage"], got["error"]) == (
        "validate", "kubelet is configured to not run on a host using cgroup v1. cgroup v1 "
        "support is unsupported and will be removed in a future release")


@pytest.mark.parametrize("minor", list(BUILT))
def test_harness_splits_gate_panics_per_gate(minor):
    got = kubeletconfigs.check(harness(minor), HEAD + "featureGates: {NoSuchGate: true, "
                               "AlsoNoSuchGate: false}\n", None)
    prefix = ("failed to merge global and in-flight KubeletConfiguration while setting "
              "defaults, error: ")
    assert got["panic"] and got["stage"] == "decode"
    # SetFromMap stops at the first unknown gate, in Go's map order
    assert got["errors"] in ([prefix + "unrecognized feature gate: NoSuchGate"],
                             [prefix + "unrecognized feature gate: AlsoNoSuchGate"])


WRONG = ["lots", 7, -1, 1.5, True, [1], {"a": 1}, 3000000000, "1.5", "-5s", "1d", "1μs",
         "\u0661s", "9999999999h", None, ["a", 2], {"a": "b", "c": 3}]


def _documents(fields: dict, prefix: tuple = ()):
    """(path, document) with one value of WRONG at each field (nested fields too)."""
    for name, spec in sorted(fields.items()):
        path = prefix + (name,)
        for value in WRONG:
            doc: dict = {}
            at = doc
            for p in path[:-1]:
                at = at.setdefault(p, {})
            at[path[-1]] = value
            yield ".".join(path), doc
        if spec.get("fields"):
            yield from _documents(spec["fields"], path)


@pytest.mark.parametrize("minor", list(BUILT))
def test_decoding_messages_are_the_kubelets(minor):
    """Every field of the version's data (nested ones too) with values of each wrong kind:
    where the kubelet cannot decode the file, krm-fn's type finding quotes its message
    exactly (krm_fn.node.kubelet_says.decode_error, duration_error); where it can, krm-fn
    quotes nothing for it."""
    from krm_fn.node import kubelet_check, upstream
    version = (1, int(minor.split(".")[1]))
    h = harness(minor)
    checked = 0
    for path, doc in _documents(upstream.load(version).fields):
        got = kubeletconfigs.check(h, {**kubeletconfigs.HEADER, **doc}, None)
        if got["strictError"]:          # a field this release does not have
            continue
        said = [f.message for f in kubelet_check.check(doc, version)
                if "failed to decode" in f.message]
        if got["stage"] == "decode" and not got.get("panic"):
            assert any(f'"{got["error"]}"' in m for m in said), (path, doc, got, said)
            checked += 1
        else:
            assert said == [], (path, doc, got)
    assert checked > 500


def test_gate_dependencies_are_what_the_generator_writes():
    """krm_fn/node/data/gate_dependencies.py is tools/gen_gate_dependencies.py's output for
    the releases the harness is built from (their sources are in the module cache once
    the harness is built)."""
    import importlib.util
    for minor in BUILT:
        harness(minor)
    spec = importlib.util.spec_from_file_location("gen", ROOT / "tools/gen_gate_dependencies.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = (ROOT / "krm_fn/node/data/gate_dependencies.py").read_text()
    assert text == gen.generate(list(BUILT.values()), gen.modcache())


def test_kubelet_defaults_are_what_the_generator_writes():
    """krm_fn/node/data/defaults.py is tools/gen_kubelet_defaults.py's output: the
    v1beta1 defaulting of each built release, from the harness."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen", ROOT / "tools/gen_kubelet_defaults.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for minor in BUILT:
        harness(minor)
    text = (ROOT / "krm_fn/node/data/defaults.py").read_text()
    assert text == gen.module_text(gen.collect())


@pytest.mark.parametrize("minor", list(BUILT))
def test_every_gate_is_judged_as_the_kubelet_judges_it(minor):
    """Each gate of the version's data set to true and to false, alone: the kubelet refuses
    exactly those krm-fn refuses (unknown, locked, a dependency left off; the kubelet's
    defaulting panics on them), and krm-fn quotes its message."""
    from krm_fn.node import kubelet_check, upstream
    version = (1, int(minor.split(".")[1]))
    h = harness(minor)
    wrong = []
    for gate in sorted(upstream.load(version).gates):
        for on in (True, False):
            doc = {"featureGates": {gate: on}}
            got = kubeletconfigs.check(h, {**kubeletconfigs.HEADER, **doc}, None)
            said = [f.message for f in kubelet_check.check(doc, version)
                    if f.severity == "error"]
            if got["ok"] == bool(said) or not all(
                    any(f'"{m}"' in t for t in said) for m in got.get("errors", [])):
                wrong.append((gate, on, got["error"], said))
    assert wrong == []


def test_kubelet_config_format_with_metadata_is_decoded_leniently():
    """The kubelet-config format carries the metadata kpt needs; copied to a node as is,
    the kubelet logs a strict-decoding error and decodes it leniently (docs/node-plan.md
    says to remove it)."""
    from krm_fn import pipeline
    fc = retarget(None, list(BUILT)[-1])
    fc["spec"].update(nodePools=[{"name": "p", "emit": "always"}],
                      output={"formats": ["kubelet-config"]})
    [obj] = pipeline.transform([], fc).emitted
    [(fmt, doc)] = kubeletconfigs.payloads(obj, with_metadata=True)
    got = kubeletconfigs.check(harness(list(BUILT)[-1]), doc, None)
    assert (fmt, got["ok"], got["strictError"]) == (
        "kubelet-config", True, 'strict decoding error: unknown field "metadata"')


# ---------------------------------------------------------------------------------------
# The sources: golden cases and examples, each as (items document, function config)

def _example_files(directory: Path) -> list[Path]:
    """The manifest files an example renders: a kustomization's resources (directories
    followed), or every YAML file of a kpt package except its Kptfile and function
    configs."""
    kust = directory / "kustomization.yaml"
    if kust.exists():
        out: list[Path] = []
        for res in yaml.safe_load(kust.read_text()).get("resources") or []:
            path = (directory / res).resolve()
            out += _example_files(path) if path.is_dir() else [path]
        return out
    skip = {"Kptfile", "pin.yaml", "validate.yaml"}
    return sorted(p for p in directory.glob("*.yaml") if p.name not in skip)


def _example_config(directory: Path) -> Path | None:
    for name in ("pin.yaml",):
        if (directory / name).exists():
            return directory / name
    return None


EXAMPLES = sorted(str(p.relative_to(ROOT)) for base in ("overlays", "bases")
                  for p in (ROOT / base).iterdir() if p.is_dir())


def source(kind: str, name: str):
    """(resourcelist.Document, function config) of a golden case or an example."""
    from krm_fn import resourcelist
    if kind == "golden":
        doc = resourcelist.parse(helpers.case_input(name), require_resource_list=True)
        return doc, doc.function_config
    directory = ROOT / name
    text = ""
    for f in _example_files(directory):
        t = f.read_text()
        text += ("" if not text or t.lstrip().startswith("---") else "---\n") + t
        text += "" if text.endswith("\n") else "\n"
    config = _example_config(directory)
    fc = resourcelist.load_config_file(config.read_text()) if config else None
    return resourcelist.parse(text, require_resource_list=False), fc


def version_of(fc):
    """The config's kubernetesVersion as (1, minor), or None when the config is invalid."""
    from krm_fn import config as config_mod
    try:
        return config_mod.load(fc).kubernetesVersion
    except config_mod.ConfigError:
        return None


def retarget(fc, minor: str):
    """A copy of function config `fc` (None: the defaults) at kubernetesVersion `minor`."""
    fc = copy.deepcopy(fc) if fc is not None else {
        "apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
        "metadata": {"name": "defaults"}, "spec": {}}
    if fc.get("kind") == "ConfigMap":
        fc.setdefault("data", {})["kubernetesVersion"] = minor
    else:
        fc.setdefault("spec", {})["kubernetesVersion"] = minor
    return fc


SOURCES = [("golden", c) for c in helpers.cases()] + [("example", e) for e in EXAMPLES]


def _params():
    out = []
    for kind, name in SOURCES:
        version = version_of(source(kind, name)[1])
        marks = []
        if version is not None and minor_of(version) not in BUILT:
            marks = [pytest.mark.xfail(strict=True, reason=OUTSIDE)]
        out.append(pytest.param(kind, name, marks=marks, id=f"{kind}:{name}"))
    return out


# ---------------------------------------------------------------------------------------
# Rendering: what krm-fn emits, and every other format of the same plans

def rendered(doc, fc):
    """[(pool index, format, emitted object)] of one render of `doc` with `fc`: the objects
    it emits (its own spec.output.formats), then, for each pool it emitted, every other
    format that carries a KubeletConfiguration (kubeletconfigs.FORMATS) rendered from the
    same plan as the pipeline renders it (krm_fn/pipeline/emit.py _render). Also returns
    the load.Run (None for an invalid config) and the pipeline's Output."""
    from krm_fn import pipeline, resourcelist
    from krm_fn.node.formats import RenderContext, render_with_results
    from krm_fn.pipeline import load
    out = pipeline.transform(doc.items, fc, set_path=resourcelist.has_path_annotations(doc),
                             aliased=doc.aliased, retyped=resourcelist.retyped(doc))
    run = load.prepare(doc.items, fc, [])
    if run is None:
        return [], None, out
    cfg = run.cfg
    index = {p.name: i for i, p in enumerate(cfg.nodePools)}
    objs = []
    for obj in list(out.emitted) + list(out.replace.values()):
        fmt = kubeletconfigs.format_of(obj)
        pool = ((obj.get("metadata") or {}).get("labels") or {}).get("krm-fn.dev/node-pool")
        if fmt is not None and pool in index:
            objs.append((index[pool], fmt, obj))
    ctx = RenderContext(cfg.output.namespace, run.set_path, baseline=cfg.output.baseline)
    for pool, plan, _judged, _count in out.pools:
        i = index[pool.name]
        for fmt in kubeletconfigs.FORMATS:
            if fmt in cfg.output.formats:
                continue
            if fmt == "json6902" and not kubeletconfigs.unwrap(cfg.output.baseline):
                continue        # without a baseline json6902 is an error by design
            got, _ = render_with_results(fmt, plan, RenderContext(
                ctx.namespace, False, baseline=cfg.output.baseline, pool=pool), run.fc_ref, i)
            objs += [(i, fmt, o) for o in got]
    return objs, run, out


def check_emitted(doc, fc) -> int:
    """Run every KubeletConfiguration `doc` rendered with `fc` emits through the harness of
    its kubernetesVersion on its pool's machine; each must start the kubelet, with no
    strict-decoding error. Returns how many were checked."""
    version = version_of(fc)
    if version is None:
        objs, run, out = rendered(doc, fc)
        assert not objs and out.has_errors, "an invalid config emitted kubelet configs"
        return 0
    h = require_built(version)
    objs, run, out = rendered(doc, fc)
    checked = 0
    for pool_index, fmt, obj in objs:
        machine = kubeletconfigs.machine(run.nodes[pool_index])
        whole = None if run.cfg.output.baseline else kubeletconfigs.file_of(obj)
        for fmt_, config in kubeletconfigs.payloads(obj, run.cfg.output.baseline):
            got = kubeletconfigs.check(h, whole or config, machine)
            where = (f"format {fmt_} of pool {run.cfg.nodePools[pool_index].name} "
                     f"(Kubernetes {minor_of(version)}, {BUILT[minor_of(version)]})")
            assert got["ok"], (f"the kubelet refuses {where} at {got['stage']}: "
                               f"{got['error']}\n{yaml.safe_dump(config)}")
            assert got["strictError"] == "", f"{where}: {got['strictError']}"
            checked += 1
    return checked


@pytest.mark.parametrize("kind,name", _params())
def test_emitted_kubelet_configs_start_the_kubelet(kind, name):
    doc, fc = source(kind, name)
    check_emitted(doc, fc)


def _retarget_params():
    return [pytest.param(kind, name, minor, id=f"{kind}:{name}-{minor}")
            for kind, name in SOURCES for minor in BUILT]


@pytest.mark.parametrize("kind,name,minor", _retarget_params())
def test_retargeted_kubelet_configs_start_the_kubelet(kind, name, minor):
    """The same cases with kubernetesVersion set to each built minor (the configs krm-fn
    emits for them must start that kubelet too)."""
    doc, fc = source(kind, name)
    if version_of(fc) is None:
        pytest.skip("invalid function config: nothing is emitted at any version")
    check_emitted(doc, retarget(fc, minor))


# ---------------------------------------------------------------------------------------
# (b) Generated pools: krm-fn and the kubelet agree, and krm-fn says what the kubelet says

import os                                   # noqa: E402
import re                                   # noqa: E402
import random                               # noqa: E402

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis import strategies as st     # noqa: E402

GENERATED_EXAMPLES = int(os.environ.get("KRM_FN_HARNESS_EXAMPLES", "0")) or 300
SEED_ENV = "KRM_FN_HARNESS_SEED"

# values a generated setting takes: valid ones and the kinds of wrong ones the kubelet
# refuses (durations, quantities, percentages, cpusets)
DURATIONS = ["10s", "1m30s", "0s", "5m", "100ms", "-5s", "10", "1x", "", "1h", "300s", "2s"]
QUANTITIES = ["100Mi", "500Mi", "1Gi", "2Gi", "64Gi", "4096Gi", "0", "1", "500m", "2",
              "-1Gi", "lots", "1.5Gi", "100", "1e3"]
PERCENTS = ["5%", "10%", "0%", "100%", "150%", "-5%", "x%"]


def mostly(good, bad, odds: int = 8):
    """`good`, and `bad` one time in `odds` (a middle draw: hypothesis favours the ends of
    an integer range)."""
    return st.integers(0, odds - 1).flatmap(lambda i: bad if i == odds // 2 else good)


GOOD_DURATIONS = st.sampled_from(["10s", "30s", "1m30s", "5m", "100ms"])
BAD_DURATIONS = st.sampled_from(["-5s", "10", "1x", "", "0s"])
GOOD_QUANTITIES = st.sampled_from(["100Mi", "500Mi", "1Gi", "2Gi", "64Gi", "4096Gi", "1",
                                   "500m", "2", "1.5Gi", "100", "1e3", "0"])
BAD_QUANTITIES = st.sampled_from(["-1Gi", "lots", "1.5.5"])


def _gate_names(minor: str) -> list[str]:
    from krm_fn.node import upstream
    return sorted(upstream.load((1, int(minor.split(".")[1]))).gates)


def _locked(minor: str) -> list[tuple[str, bool]]:
    """(gate, the value it is locked against) for every locked gate of `minor`'s data."""
    from krm_fn.node import upstream
    gates = upstream.load((1, int(minor.split(".")[1]))).gates
    return sorted((g, not s["default"]) for g, s in gates.items() if s["locked"])


def _field_names(minor: str) -> list[str]:
    from krm_fn.node import upstream
    return sorted(upstream.load((1, int(minor.split(".")[1]))).fields)


@st.composite
def feature_gates(draw, minor: str):
    gates: dict = {}
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["known", "known", "locked", "unknown", "special"]))
        if kind == "known":
            gates[draw(st.sampled_from(_gate_names(minor)))] = draw(st.booleans())
        elif kind == "locked":
            gate, against = draw(st.sampled_from(_locked(minor)))
            gates[gate] = against
        elif kind == "unknown":
            gates[draw(st.sampled_from(["NoSuchGate", "CPUManagerPolicyGammaOptions",
                                        "cpumanagerpolicyalphaoptions", "SidecarContainers",
                                        "MemoryManager"]))] = draw(st.booleans())
        else:
            gates[draw(st.sampled_from(["CPUManagerPolicyAlphaOptions",
                                        "CPUManagerPolicyBetaOptions",
                                        "TopologyManagerPolicyAlphaOptions",
                                        "TopologyManagerPolicyBetaOptions",
                                        "TopologyManagerPolicyOptions",
                                        "CPUManagerPolicyOptions", "MemoryQoS",
                                        "CustomCPUCFSQuotaPeriod", "NodeSwap",
                                        "GracefulNodeShutdown", "KubeletCrashLoopBackOffMax",
                                        "AllAlpha", "AllBeta"]))] = draw(st.booleans())
    return gates


# fields of KubeletConfiguration with values the kubelet's validation or start-up judges
# (pkg/kubelet/apis/config/validation/validation.go, cmd/kubelet/app/server.go), each with
# good and bad values
VALIDATED = {
    "nodeLeaseDurationSeconds": st.sampled_from([40, 0, -1, 10]),
    "eventBurst": st.sampled_from([100, 0, -1]),
    "eventRecordQPS": st.sampled_from([50, 0, -1]),
    "healthzPort": st.sampled_from([10248, 0, 70000, -1]),
    "cpuCFSQuotaPeriod": st.sampled_from(["100ms", "50ms", "2s", "0s"]),
    "imageGCHighThresholdPercent": st.sampled_from([85, 80, 101, -1, 0, 50]),
    "imageGCLowThresholdPercent": st.sampled_from([80, 85, 90, -1, 0, 50]),
    "imageMinimumGCAge": st.sampled_from(["2m", "0s", "-1m", "10m"]),
    "imageMaximumGCAge": st.sampled_from(["0s", "1h", "-1h", "1m"]),
    "iptablesDropBit": st.sampled_from([15, 32, -1]),
    "iptablesMasqueradeBit": st.sampled_from([14, 40, -1]),
    "kubeAPIBurst": st.sampled_from([100, -1]),
    "kubeAPIQPS": st.sampled_from([50, -1]),
    "nodeStatusMaxImages": st.sampled_from([50, -1, -2]),
    "maxOpenFiles": st.sampled_from([1000000, -1]),
    "maxPods": st.sampled_from([110, 0, -1, 250]),
    "oomScoreAdj": st.sampled_from([-999, -1001, 1001]),
    "podsPerCore": st.sampled_from([0, 10, -1]),
    "port": st.sampled_from([10250, 0, 70000]),
    "readOnlyPort": st.sampled_from([0, 10255, 70000]),
    "registryBurst": st.sampled_from([10, -1]),
    "registryPullQPS": st.sampled_from([5, -1]),
    "maxParallelImagePulls": st.sampled_from([1, 5, 0, -1]),
    "allowedUnsafeSysctls": st.lists(st.sampled_from(
        ["net.core.somaxconn", "net.ipv4.*", "net*", "kernel.shm*", "kernel.msgmax",
         "kernel.domainname", "user.max_user_namespaces", "vm.swappiness", "kernel.*",
         "net/ipv4/ip_forward", "Net.core", "fs.mqueue.msg_max", "a" * 254]), max_size=2),
    "serializeImagePulls": st.booleans(),
    "serverTLSBootstrap": st.booleans(),
    "hairpinMode": st.sampled_from(["promiscuous-bridge", "hairpin-veth", "none", "bogus"]),
    "systemCgroups": st.sampled_from(["", "/system.slice"]),
    "cgroupRoot": st.sampled_from(["", "/"]),
    "shutdownGracePeriod": st.sampled_from(["0s", "30s", "500ms", "-1s"]),
    "shutdownGracePeriodCriticalPods": st.sampled_from(["0s", "10s", "60s", "500ms"]),
    "memorySwap": st.sampled_from([{}, {"swapBehavior": "NoSwap"},
                                   {"swapBehavior": "LimitedSwap"}, {"swapBehavior": "Bogus"}]),
    "memoryThrottlingFactor": st.sampled_from([0.9, 0.5, 0, 1.5]),
    "containerRuntimeEndpoint": st.sampled_from(["unix:///run/containerd/containerd.sock",
                                                 ""]),
    "containerLogMaxWorkers": st.sampled_from([1, 0, 4]),
    "containerLogMonitorInterval": st.sampled_from(["10s", "1s", "3s"]),
    "containerLogMaxFiles": st.sampled_from([5, 1, 0]),
    "containerLogMaxSize": st.sampled_from(["10Mi", "lots"]),
    "podLogsDir": st.sampled_from(["/var/log/pods", "var/log/pods", "/var/log//pods/",
                                   "/var/log/pöds"]),
    "enforceNodeAllocatable": st.sampled_from([["pods"], ["pods", "pods"], ["none"],
                                               ["none", "pods"], ["system-reserved"],
                                               ["bogus"], []]),
    "cgroupsPerQOS": st.booleans(),
    "enableSystemLogQuery": st.booleans(),
    "enableSystemLogHandler": st.booleans(),
    "evictionSoft": st.dictionaries(st.sampled_from(["memory.available", "nodefs.available",
                                                     "bogus.available"]),
                                    st.sampled_from(QUANTITIES[:4] + PERCENTS), max_size=2),
    "evictionSoftGracePeriod": st.dictionaries(st.sampled_from(["memory.available",
                                                                "nodefs.available"]),
                                               st.sampled_from(DURATIONS), max_size=2),
    "evictionPressureTransitionPeriod": st.sampled_from(DURATIONS),
    "qosReserved": st.sampled_from([{"memory": "50%"}, {"memory": "150%"},
                                    {"cpu": "50%"}, {"memory": "x"}]),
    "runOnce": st.booleans(),
    "registerWithTaints": st.sampled_from([[{"key": "a", "effect": "NoSchedule"}],
                                           [{"key": "", "effect": "NoSchedule"}],
                                           [{"key": "a", "effect": "Bogus"}]]),
    "showHiddenMetricsForVersion": st.sampled_from(["", "1.2", "x"]),
    "logging": st.sampled_from([{"format": "text"}, {"format": "json"},
                                {"format": "bogus"}, {"verbosity": 4}]),
    "defaultPodSysctls": st.sampled_from([{"net.ipv4.ip_forward": "1"},
                                          {"kernel.bogus": "1"}, {"BAD NAME": "1"}]),
    "memoryReservationPolicy": st.sampled_from(["None", "TieredReservation", "Bogus"]),
    "crashLoopBackOff": st.sampled_from([{}, {"maxContainerRestartPeriod": "10s"},
                                         {"maxContainerRestartPeriod": "1h"}]),
    "userNamespaces": st.sampled_from([{"idsPerPod": 65536}, {"idsPerPod": 1000},
                                       {"idsPerPod": 100000}]),
    "cpuCFSQuota": st.booleans(),
    "systemReservedCgroup": st.sampled_from(["", "/system.slice"]),
    "kubeReservedCgroup": st.sampled_from(["", "/kube.slice"]),
    "bogusField": st.just(1),
    "cpuManagerPolicy": st.just("none"),
}


def _any_value(spec: dict):
    """A value of a data field's simple type, or of the wrong type."""
    kind = spec.get("type")
    good = {"bool": st.booleans(), "int32": st.integers(-3, 300),
            "int64": st.integers(-3, 300), "float": st.floats(-1, 2, allow_nan=False),
            "string": st.sampled_from(["", "x", "/var/lib/kubelet"]),
            "duration": st.sampled_from(DURATIONS),
            "string-map": st.dictionaries(st.sampled_from(["a", "memory"]),
                                          st.sampled_from(["1", "x"]), max_size=1),
            "string-list": st.lists(st.sampled_from(["a", "pods"]), max_size=2)}
    return good.get(kind, st.just(None)) | st.sampled_from(["lots", 7, True, [1], {"a": 1}])


@st.composite
def extra_fields(draw, minor: str):
    extra: dict = {}
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(sorted(VALIDATED)))
            extra[name] = draw(VALIDATED[name])
        else:
            from krm_fn.node import upstream
            fields = upstream.load((1, int(minor.split(".")[1]))).fields
            name = draw(st.sampled_from(sorted(fields)))
            value = draw(_any_value(fields[name]))
            if value is not None:
                extra[name] = value
    if draw(st.integers(0, 3)) == 0:
        extra["featureGates"] = draw(feature_gates(minor))
    return extra


def _cpuset(draw, cpus: int) -> str:
    kind = draw(st.sampled_from(["ok", "ok", "outside", "garbage", "reversed"]))
    if kind == "ok":
        a = draw(st.integers(0, cpus - 1))
        b = draw(st.integers(a, min(cpus - 1, a + 3)))
        return f"{a}-{b}" if b > a else str(a)
    if kind == "outside":
        return f"0,{cpus + draw(st.integers(0, 64))}"
    if kind == "reversed":
        return "3-1"
    return draw(st.sampled_from(["a-b", "0-", "1,,2", "-1"]))


@st.composite
def pools(draw, minor: str):
    from krm_fn.node import options
    sockets = draw(st.integers(1, 2))
    numa = draw(st.sampled_from([1, 2]))
    cores = draw(st.sampled_from([2, 4, 8, 8, 16]))
    threads = draw(st.integers(1, 2))
    cpus = sockets * cores * threads
    topology: dict = {"sockets": sockets, "numaNodesPerSocket": numa,
                      "coresPerSocket": cores, "threadsPerCore": threads}
    if draw(st.booleans()):
        topology["memory"] = draw(st.sampled_from(["2Gi", "16Gi", "64Gi", "256Gi"]))
    kubelet: dict = {}
    if draw(st.booleans()):
        names = list(options.CPU_OPTIONS) + ["bogus-option"]
        kubelet["cpuManagerPolicyOptions"] = draw(st.dictionaries(
            st.sampled_from(names), mostly(st.sampled_from(["true", "true", "false"]),
                                           st.just("maybe")), max_size=3))
    if draw(st.booleans()):
        kubelet["topologyManagerPolicyOptions"] = draw(st.dictionaries(
            st.sampled_from(list(options.TOPOLOGY_OPTIONS) + ["bogus-option"]),
            st.sampled_from(["true", "false", "8", "16", "3", "x"]), max_size=2))
    for name, values in (("topologyManagerPolicy", st.sampled_from([
                             "none", "best-effort", "restricted", "single-numa-node"])),
                         ("topologyManagerScope", st.sampled_from(["container", "pod"])),
                         ("memoryManagerPolicy", st.sampled_from(["None", "Static"])),
                         ("cpuManagerReconcilePeriod", mostly(GOOD_DURATIONS,
                                                              BAD_DURATIONS))):
        if draw(st.booleans()):
            kubelet[name] = draw(values)
    if draw(st.integers(0, 2)) == 0:
        kubelet["reservedSystemCPUs"] = _cpuset(draw, cpus)
    for name in ("kubeReserved", "systemReserved"):
        if draw(st.integers(0, 2)) == 0:
            good = {"memory": st.sampled_from(["100Mi", "500Mi", "1Gi", "2Gi", "64Gi",
                                               "4096Gi", "1.5Gi", "1e9", "1G", "0"]),
                    "cpu": st.sampled_from(["500m", "1", "2"]),
                    "ephemeral-storage": st.sampled_from(["1Gi", "4096Gi"]),
                    "pid": st.sampled_from(["100", "1000"])}
            keys = draw(st.lists(mostly(st.sampled_from(["memory", "memory", "cpu",
                                                         "ephemeral-storage", "pid"]),
                                        st.just("gpu")), max_size=2, unique=True))
            kubelet[name] = {k: draw(mostly(good.get(k, GOOD_QUANTITIES), BAD_QUANTITIES))
                             for k in keys}
    if draw(st.integers(0, 2)) == 0:
        kubelet["evictionHard"] = draw(st.dictionaries(
            mostly(st.sampled_from(["memory.available", "nodefs.available",
                                    "imagefs.available", "pid.available"]),
                   st.just("bogus.available")),
            mostly(st.sampled_from(["100Mi", "500Mi", "1Gi", "64Gi", "5%", "10%", "100%"]),
                   st.sampled_from(["0", "0%", "150%", "-5%", "x%", "lots"])), max_size=2))
    if kubelet.get("memoryManagerPolicy") == "Static" and draw(st.booleans()):
        kubelet["reservedMemory"] = draw(st.lists(st.fixed_dictionaries({
            "numaNode": st.integers(0, 4),
            "limits": st.dictionaries(st.sampled_from(["memory", "hugepages-2Mi", "cpu"]),
                                      st.sampled_from(["1100Mi", "1Gi", "100Mi", "0"]),
                                      min_size=1, max_size=2)}), min_size=1, max_size=2))
    for name, strategy in (("podPidsLimit", st.sampled_from([1024, 4096])),
                           ("failCgroupV1", st.booleans()),
                           ("singleProcessOOMKill", st.booleans()),
                           ("cgroupDriver", st.sampled_from(["systemd", "cgroupfs"]))):
        if draw(st.integers(0, 3)) == 0:
            kubelet[name] = draw(strategy)
    if draw(st.integers(0, 2)) > 0:
        kubelet["extra"] = draw(extra_fields(minor))
    return {"name": "gen", "nodeSelector": {"pool": "gen"}, "emit": "always",
            "topology": topology, "kubelet": kubelet}


# what a node's own configuration (spec.output.baseline) may hold that krm-fn merges under
# its own: fields the plan writes itself (overridden, or kept where the plan writes none),
# reservation maps with resources the kubelet does not reserve, and the validated fields
RESERVATION_KEYS = st.sampled_from(["memory", "memory", "cpu", "pid", "ephemeral-storage",
                                    "hugepages-2Mi", "gpu"])
BASELINE = {
    "cpuManagerPolicy": st.sampled_from(["none", "static", "Static", "bogus"]),
    "cpuManagerPolicyOptions": st.sampled_from([{"full-pcpus-only": "true"},
                                                {"bogus-option": "true"},
                                                {"align-by-socket": "maybe"}]),
    "memoryManagerPolicy": st.sampled_from(["None", "Static", "BestEffort", "bogus"]),
    "reservedMemory": st.just([{"numaNode": 0, "limits": {"memory": "1100Mi"}}]),
    "topologyManagerPolicyOptions": st.sampled_from([{"prefer-closest-numa-nodes": "true"},
                                                     {"bogus-option": "true"}]),
    "kubeReserved": st.dictionaries(RESERVATION_KEYS, mostly(GOOD_QUANTITIES, st.sampled_from(
        ["-1", "lots"])), max_size=2),
    "systemReserved": st.dictionaries(RESERVATION_KEYS, mostly(GOOD_QUANTITIES,
                                                               st.sampled_from(["-1", "lots"])),
                                      max_size=2),
    "evictionHard": st.dictionaries(st.sampled_from(["memory.available", "nodefs.available"]),
                                    st.sampled_from(["100Mi", "1Gi", "5%", "lots"]),
                                    max_size=2),
    **VALIDATED,
}


@st.composite
def baselines(draw):
    """A node's current configuration, bare or as configz's `{"kubeletconfig": ...}`."""
    names = draw(st.lists(st.sampled_from(sorted(BASELINE)), min_size=1, max_size=4,
                          unique=True))
    body = {name: draw(BASELINE[name]) for name in names}
    return {"kubeletconfig": body} if draw(st.booleans()) else body


@st.composite
def cases(draw, minor: str):
    """A generated pool and, one time in three, the nodes' current configuration."""
    pool = draw(pools(minor))
    return pool, (draw(baselines()) if draw(st.integers(0, 2)) == 0 else None)


def generated_config(minor: str, pool: dict, baseline=None) -> dict:
    output: dict = {"formats": ["configmap"]}
    if baseline is not None:
        output["baseline"] = baseline
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "generated"},
            "spec": {"kubernetesVersion": minor, "nodePools": [pool], "output": output}}


NODE_ALLOCATABLE = "invalid Node Allocatable configuration. "


def kubelet_messages(got: dict) -> list[str]:
    """The kubelet's messages of one refusal, one per problem: the harness's `errors` (an
    aggregate split, a defaulting panic split per gate), with the Node Allocatable check's
    one message (its resources in Go's map order) split into one per resource, each with
    the message's own prefix (pkg/kubelet/cm/node_container_manager_linux.go
    validateNodeAllocatable)."""
    out = []
    for msg in got.get("errors") or [got["error"]]:
        if msg.startswith(NODE_ALLOCATABLE):
            parts = msg[len(NODE_ALLOCATABLE):].split(" Resource ")
            out += [NODE_ALLOCATABLE + ("" if i == 0 else "Resource ") + p
                    for i, p in enumerate(parts)]
        else:
            out.append(msg)
    return out


class Verdict:
    """krm-fn's and the kubelet's answers for one generated pool."""

    def __init__(self, minor: str, pool: dict, baseline=None):
        from krm_fn import config as config_mod, pipeline
        from krm_fn.admission.build import node_model
        from krm_fn.node import plan as plan_mod
        self.minor, self.pool, self.baseline = minor, pool, baseline
        fc = generated_config(minor, pool, baseline)
        self.out = pipeline.transform([], fc)
        self.errors = [r for r in self.out.results if r.severity == "error"]
        self.warnings = [r for r in self.out.results if r.severity == "warning"]
        self.schema = None
        self.config = self.got = None
        try:
            cfg = config_mod.load(fc)
        except config_mod.ConfigError as e:
            self.schema = "; ".join(err.message for err in e.errors)
            return
        pool_cfg = cfg.nodePools[0]
        plan, _ = plan_mod.build(pool_cfg, cfg.kubernetesVersion, None, 0, cfg.output.baseline)
        self.machine = kubeletconfigs.machine(node_model(plan, pool_cfg,
                                                          cfg.kubernetesVersion))
        if self.errors:     # what krm-fn would have written, on the node's configuration
            from krm_fn.yaml import emit
            self.config = emit.to_yaml({**kubeletconfigs.HEADER, **plan.merged})
        elif baseline is None:      # what it wrote
            [cm] = [o for o in self.out.emitted if kubeletconfigs.format_of(o) == "configmap"]
            self.config = cm["data"]["kubelet-config.yaml"]
        else:               # what it wrote, merged onto the node's configuration
            [cm] = [o for o in self.out.emitted if kubeletconfigs.format_of(o) == "configmap"]
            [(_, self.config)] = kubeletconfigs.payloads(cm, baseline)
        self.got = kubeletconfigs.check(harness(minor), self.config, self.machine)

    def missing(self) -> list[str]:
        """The kubelet's messages that no krm-fn error carries."""
        if self.got is None or self.got["ok"]:
            return []
        text = [r.message for r in self.errors]
        return [m for m in kubelet_messages(self.got) if not any(m in t for t in text)]

    def describe(self) -> str:
        return yaml.safe_dump({"kubernetesVersion": self.minor, "pool": self.pool,
                               "baseline": self.baseline,
                               "kubelet": self.got, "krm-fn errors":
                               [r.message for r in self.errors]}, width=100)


# Where krm-fn's error cannot carry the kubelet's message, and why (the test names each
# exception it takes; everything else must match):
EXCEPTIONS = {
    "schema": "the typed pool fields are checked by krm-fn's config schema "
              "(krm_fn/config/types.py) when the config is loaded, before any "
              "KubeletConfiguration exists: its message names the field and the form it "
              "takes, not the kubelet's words (the config is refused either way)",
    "own-rule": "krm-fn refuses a pool by a rule of its own and its plan then lacks what "
                "was asked, so what the kubelet says of that plan is not about it: at "
                "least one physical core is left for pods (krm_fn/node/topology.py "
                "reserve_cores: no reservedSystemCPUs), reservedMemory is not computed "
                "from a percentage eviction threshold (krm_fn/node/memory.py: no "
                "reservedMemory)",
    "pointer": "the kubelet's Node Allocatable message prints its resource.Quantity "
               "values as structs, and a sum that left Quantity's int64 path holds an "
               "inf.Dec pointer (an address, different in every run); krm-fn's error says "
               "\"Expected capacity >= reservation\" instead of the exact text",
}
OWN_RULES = ("cannot reserve ", "krm-fn cannot resolve the percentage")


def _exception(v: "Verdict") -> str | None:
    """The EXCEPTIONS key that applies to `v`'s missing messages, or None."""
    if v.schema:
        return "schema"
    if any(rule in r.message for r in v.errors for rule in OWN_RULES):
        return "own-rule"
    missing = v.missing()
    if missing and all("{0x" in m and m.startswith(NODE_ALLOCATABLE) for m in missing) and \
            any("Expected capacity >= reservation" in r.message for r in v.errors):
        return "pointer"
    return None


def _seed() -> int:
    return int(os.environ.get(SEED_ENV) or random.randrange(2 ** 32))


@pytest.mark.parametrize("minor", list(BUILT))
def test_generated_pools_krm_fn_refuses_what_the_kubelet_refuses(minor):
    """Generated `spec.nodePools[].kubelet` settings (pools(): typed fields with good and bad
    values, `extra` fields the kubelet's validation judges and random fields of the
    version's data, feature gates known, unknown and locked, policy options of every
    maturity, bad durations and quantities, reservations above the node's memory,
    reservedMemory that does not add up, reservedSystemCPUs outside the node) and one time
    in three the nodes' configuration (spec.output.baseline: baselines()), rendered by
    krm-fn and run by the kubelet of `minor` on the pool's machine (what krm-fn emitted
    merged onto the baseline, or on an error what it would have emitted):

    - the kubelet refuses (decode, gates, validate, start) => krm-fn's render failed, and
      each of the kubelet's messages is in one of krm-fn's errors (EXCEPTIONS names where
      that cannot be, and why);
    - krm-fn accepts => the kubelet starts with what krm-fn emitted;
    - the kubelet only logs a strict-decoding error (an unknown field) => krm-fn warns or
      fails about that field.

    KRM_FN_HARNESS_EXAMPLES sets the number of examples (default 300 per minor),
    KRM_FN_HARNESS_SEED the seed (printed; a failure prints it again)."""
    seed = _seed()
    print(f"hypothesis seed {seed} ({SEED_ENV}={seed} reruns it)")
    harness(minor)
    seen: dict = {}

    @hypothesis_seed(seed)
    @settings(max_examples=GENERATED_EXAMPLES, deadline=None, database=None, derandomize=False,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=cases(minor))
    def check(case):
        v = Verdict(minor, *case)
        outcome = _exception(v) or ("refused" if not v.got["ok"] else "accepted")
        seen[outcome] = seen.get(outcome, 0) + 1
        where = f"seed {seed} ({SEED_ENV}={seed})\n{v.describe()}"
        if v.schema:
            assert v.errors, where
            return
        refused = not v.got["ok"]
        if refused:
            assert v.errors, f"the kubelet refuses what krm-fn accepts: {where}"
        if not v.errors:
            assert not refused, f"krm-fn accepts what the kubelet refuses: {where}"
        if refused and not _exception(v):
            assert v.missing() == [], f"krm-fn's errors miss the kubelet's words: {where}"
        if v.got["strictError"]:
            text = " ".join(r.message for r in v.errors + v.warnings)
            for name in re.findall(r'unknown field "([^"]+)"', v.got["strictError"]):
                assert name.rpartition(".")[2] in text, \
                    f"no krm-fn warning for the unknown field {name}: {where}"
    check()
    print(f"outcomes: {seen}")


SYSCTLS = ["kernel.domainname", "vm.swappiness", "net*", "net.*", "Net.core",
           "net/ipv4/ip_forward", "user.max_user_namespaces", "kernel.shm*", "kernel.*",
           "a" * 254]


@pytest.mark.parametrize("minor", list(BUILT))
@pytest.mark.parametrize("pattern", SYSCTLS)
def test_allowed_unsafe_sysctls_are_judged_as_the_kubelet_judges_them(minor, pattern):
    """Hostile testing: allowedUnsafeSysctls the kubelet refuses at start-up (NewMainKubelet
    -> sysctl.NewAllowlist: not a sysctl pattern, or not known to be namespaced; the
    namespaced names grew in 1.37) were emitted as they were. krm-fn refuses exactly what
    the kubelet of `minor` refuses, in its words."""
    v = Verdict(minor, {"name": "p", "emit": "always",
                        "kubelet": {"extra": {"allowedUnsafeSysctls": [pattern]}}})
    assert bool(v.errors) == (not v.got["ok"]), v.describe()
    assert v.missing() == [], v.describe()
