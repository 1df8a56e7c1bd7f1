"""`krm-fn schema`: the JSON Schema generated from the config definition agrees with config.load.

Every config in the repository validates (and loads); wrong configs fail both the loader and
the schema; lenient spellings the loader takes (quoted numbers, numbers for strings) pass
both. The committed schema/*.json files are the golden output of `krm-fn schema`
(KRM_FN_UPDATE_GOLDEN=1 rewrites them).
"""
import copy
import random
import re

import jsonschema
import pytest

from krm_fn import config, resourcelist
from krm_fn.config import schema, spec, types
from krm_fn.config import ConfigError
from tests.helpers import ROOT, case_input, case_output, cases, check_golden, run_cli

TYPED = schema.inference_tuning()
FLAT = schema.configmap()


def _errors(s: dict, doc) -> list[str]:
    v = jsonschema.Draft202012Validator(s)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]


def _loads(doc) -> bool:
    try:
        config.load(doc)
    except ConfigError:
        return False
    return True


def _schema_for(doc) -> dict:
    return FLAT if config.is_flat(doc) else TYPED


@pytest.mark.parametrize("s", [TYPED, FLAT], ids=["typed", "configmap"])
def test_schema_is_valid_json_schema(s):
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # yaml-language-server checks schemas against draft-07: only shared keywords are used
    jsonschema.Draft7Validator.check_schema({k: v for k, v in s.items() if k != "$schema"})
    text = schema.dumps(s)
    assert not re.search(r'"\$(defs|ref|dynamicRef)"|"prefixItems"|"unevaluated|"dependent',
                         text)


@pytest.mark.parametrize("args,path", [(["schema"], "inferencetuning.json"),
                                       (["schema", "--configmap"], "configmap.json")])
def test_committed_schema_is_the_generated_one(args, path):
    p = run_cli(args)
    assert p.returncode == 0 and p.stderr == ""
    check_golden(ROOT / "schema" / path, p.stdout)


def _example_configs():
    """(name, config) of every function config in the repository that krm-fn accepts:
    overlays/*/pin.yaml, the golden cases' functionConfig (except cases about an invalid
    config, which are in INVALID_EXAMPLES) and the yaml blocks of kind InferenceTuning in
    README.md and docs/*.md."""
    out = []
    for f in sorted((ROOT / "overlays").glob("*/pin.yaml")):
        out.append((str(f.relative_to(ROOT)), resourcelist.load_config_file(f.read_text())))
    for name in cases():
        fc = resourcelist.parse(case_input(name), require_resource_list=True).function_config
        if fc is not None and "invalid function config" not in case_output(name):
            out.append((f"tests/testdata/{name}", fc))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, block in enumerate(re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)):
            if re.search(r"^kind: InferenceTuning$", block, re.M):
                out.append((f"{page.relative_to(ROOT)} yaml block {n}",
                            resourcelist.load_config_file(block)))
    return out


EXAMPLES = _example_configs()


INVALID_EXAMPLES = [
    (f"tests/testdata/{name}", resourcelist.parse(case_input(name), True).function_config)
    for name in cases() if "invalid function config" in case_output(name)]


@pytest.mark.parametrize("name,doc", INVALID_EXAMPLES, ids=[n for n, _ in INVALID_EXAMPLES])
def test_golden_cases_with_an_invalid_config_fail_loader_and_schema(name, doc):
    assert not _loads(doc)
    assert _errors(_schema_for(doc), doc)


def test_examples_were_found():
    names = [n for n, _ in EXAMPLES]
    assert {"overlays/kpt/pin.yaml", "overlays/container-fn/pin.yaml",
            "overlays/legacy-plugin/pin.yaml"} <= set(names)
    assert any(n.startswith("README.md") for n in names)
    assert any(n.startswith("docs/configuration.md") for n in names)
    assert sum(config.is_flat(d) for _, d in EXAMPLES) >= 5
    assert sum(not config.is_flat(d) for _, d in EXAMPLES) >= 15


@pytest.mark.parametrize("name,doc", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_every_example_config_validates_and_loads(name, doc):
    assert _errors(_schema_for(doc), doc) == []
    config.load(doc)


def typed(spec):
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "x"}, "spec": spec}


def flat(data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data}


POOL = {"name": "cpu", "topology": {"sockets": 1, "coresPerSocket": 8}}

REJECTED = [
    # unknown fields, at every level
    ("unknown top-level field", {**typed({}), "status": {}}),
    ("unknown spec field", typed({"nodepools": []})),
    ("unknown nested field", typed({"workloads": {"threads": {"envs": []}}})),
    ("unknown pool field", typed({"nodePools": [{**POOL, "cpus": 4}]})),
    ("unknown injector field", typed({"workloads": {"injection": {"istio": {"cpus": "1"}}}})),
    ("unknown extraKinds field", typed({"extraKinds": [{"kind": "X", "podSpecs": ["spec"],
                                                        "paths": []}]})),
    # wrong types
    ("int as a word", typed({"nodePools": [{**POOL, "topology": {"sockets": "two"}}]})),
    ("int as a float", typed({"workloads": {"shm": {"sizeLimitPercent": 25.5}}})),
    ("bool as yes", typed({"nodePools": [{**POOL, "kubelet": {"failCgroupV1": "yes"}}]})),
    ("list as a string", typed({"selector": {"kinds": "Deployment"}})),
    ("map as a list", typed({"nodePools": [{**POOL, "nodeSelector": ["a=b"]}]})),
    ("object as a list", typed({"workloads": []})),
    ("pools as a mapping", typed({"nodePools": POOL})),
    ("version as a number", typed({"kubernetesVersion": 1.3})),
    ("extra as a list", typed({"nodePools": [{**POOL, "kubelet": {"extra": [1]}}]})),
    ("extra key not a field name", typed({"nodePools": [{**POOL, "kubelet": {
        "extra": {"max-pods": 1}}}]})),
    ("lscpu as a number", typed({"nodePools": [{**POOL, "topology": {"lscpu": 5}}]})),
    ("map value a mapping", typed({"selector": {"matchLabels": {"a": {"b": "c"}}}})),
    # enums, ranges, spellings
    ("bad enum", typed({"nodePools": [{**POOL, "kubelet": {"topologyManagerPolicy":
                                                           "strict"}}]})),
    ("bad list enum", typed({"output": {"formats": ["configmap", "yaml"]}})),
    ("bad cpuRounding", typed({"workloads": {"cpuRounding": "nearest"}})),
    ("above maximum", typed({"nodePools": [{**POOL, "topology": {"threadsPerCore": 9}}]})),
    ("below minimum", typed({"nodePools": [{**POOL, "reserved": {"cores": -1}}]})),
    ("quoted above maximum", typed({"nodePools": [{**POOL, "topology": {
        "threadsPerCore": "16"}}]})),
    ("old version", typed({"kubernetesVersion": "1.21"})),
    ("version before the supported minors", typed({"kubernetesVersion": "1.34"})),
    ("patch of a version before the supported minors", typed({"kubernetesVersion": "v1.34.9"})),
    ("version after the supported minors", typed({"kubernetesVersion": "1.38"})),
    ("three-digit minor", typed({"kubernetesVersion": "1.135"})),
    ("not a version", typed({"kubernetesVersion": "latest"})),
    ("duration without unit", typed({"nodePools": [{**POOL, "kubelet": {
        "cpuManagerReconcilePeriod": "30"}}]})),
    ("not a quantity", typed({"workloads": {"defaultMemory": "lots"}})),
    ("negative cpu", typed({"workloads": {"sidecarResources": {"cpu": "-100m"}}})),
    ("zero cpu number", typed({"workloads": {"defaultCpus": 0}})),
    ("too long a string", typed({"output": {"namespace": "a" * 5000}})),
    # lists
    ("no node pool", typed({"nodePools": []})),
    ("no format", typed({"output": {"formats": []}})),
    ("listed twice", typed({"workloads": {"threads": {"env": ["A", "A"]}}})),
    # nulls where the default is not null
    ("null choice with a default", typed({"workloads": {"cpuRounding": None}})),
    ("null list", typed({"selector": {"kinds": None}})),
    ("null pool entry", typed({"nodePools": [None]})),
    ("null duration", typed({"nodePools": [{**POOL, "kubelet": {
        "cpuManagerReconcilePeriod": None}}]})),
    ("null version", typed({"kubernetesVersion": None})),
    # the object itself
    ("wrong apiVersion", {**typed({}), "apiVersion": "krm-fn.dev/v1"}),
    ("no apiVersion", {k: v for k, v in typed({}).items() if k != "apiVersion"}),
    # ConfigMap form
    ("unknown ConfigMap key", flat({"threadPerCore": "2"})),
    ("typed-only key in a ConfigMap", flat({"extraKinds": "[]"})),
    ("ConfigMap int out of range", flat({"threadsPerCore": "9"})),
    ("ConfigMap int a word", flat({"sockets": "two"})),
    ("ConfigMap bad enum", flat({"topologyManagerPolicy": "strict"})),
    ("ConfigMap bad bool", flat({"failCgroupV1": "yes"})),
    ("ConfigMap bad format list", flat({"formats": "configmap,yaml"})),
    ("ConfigMap empty format list", flat({"formats": " , "})),
    ("ConfigMap formats run together", flat({"formats": "configmapgke"})),
    ("ConfigMap bad duration", flat({"cpuManagerReconcilePeriod": "10"})),
    ("ConfigMap data a list", flat(["threadsPerCore=2"])),
]


@pytest.mark.parametrize("name,doc", REJECTED, ids=[n for n, _ in REJECTED])
def test_wrong_config_fails_loader_and_schema(name, doc):
    assert not _loads(doc), "the loader accepted it"
    assert _errors(_schema_for(doc), doc), "the schema accepted it"


ACCEPTED = [
    ("empty", typed({})),
    ("null spec", typed(None)),
    ("null objects mean defaults", typed({"selector": None, "workloads": {"threads": None}})),
    ("no metadata", {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning"}),
    ("quoted ints", typed({"nodePools": [{**POOL, "topology": {"sockets": "2",
                                                                "threadsPerCore": " 02 "}}]})),
    ("bool spellings", typed({"nodePools": [{**POOL, "kubelet": {"failCgroupV1": "False"},
                                             "reserved": {"spreadAcrossNuma": True}}]})),
    ("numbers for strings", typed({"output": {"namespace": 123},
                                   "selector": {"matchLabels": {"tier": 1}}})),
    ("numbers for quantities", typed({"workloads": {"defaultCpus": 4, "defaultMemory": 1e9,
                                                    "sidecarResources": {"cpu": 0.5}}})),
    ("nullable fields null", typed({"workloads": {"defaultCpus": None, "threads": {
        "goMemLimitPercent": None}}, "output": {"baseline": None}})),
    ("v-prefixed patch version", typed({"kubernetesVersion": "v1.36.2"})),
    ("newest supported version", typed({"kubernetesVersion": "1.37"})),
    ("extra with nested data", typed({"nodePools": [{**POOL, "kubelet": {"extra": {
        "maxPods": 110, "featureGates": {"A": True}}}}]})),
    ("ConfigMap empty", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    ("ConfigMap null data", flat(None)),
    ("ConfigMap strings", flat({"threadsPerCore": "1", "kinds": "Deployment, Pod",
                                "matchLabels": "tier=inference", "formats": "configmap, gke",
                                "spreadReservedAcrossNuma": "true", "extra": '{"maxPods": 1}',
                                "cpuManagerReconcilePeriod": "1m30s"})),
    ("ConfigMap unquoted int", flat({"threadsPerCore": 1})),
]


@pytest.mark.parametrize("name,doc", ACCEPTED, ids=[n for n, _ in ACCEPTED])
def test_lenient_spellings_pass_loader_and_schema(name, doc):
    assert _loads(doc), "the loader refused it"
    assert _errors(_schema_for(doc), doc) == []


def test_every_field_has_a_description_and_defaults_load():
    """Descriptions and defaults come from SCHEMA: every field has one, and a document
    made of every schema default loads to the same config as the empty one."""
    def walk(node, path):
        for name, sub in (node.get("properties") or {}).items():
            assert sub.get("description"), f"{path}.{name} has no description"
            walk(sub, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")
    walk(TYPED["properties"]["spec"], "spec")

    def defaults(node):
        out = {}
        for name, sub in node["properties"].items():
            if "properties" in sub:
                out[name] = defaults(sub)
            elif "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
        return out
    doc = typed(defaults(TYPED["properties"]["spec"]))
    assert _errors(TYPED, doc) == []
    assert vars(config.load(doc).workloads.threads) == vars(config.load(None).workloads.threads)
    flat_doc = flat({k: s["default"] for k, s in FLAT["properties"]["data"]["properties"].items()
                     if "default" in s})
    assert _errors(FLAT, flat_doc) == []
    assert config.load(flat_doc).nodePools[0].topology == config.load(None).nodePools[0].topology


def test_int_range_patterns_match_the_loader():
    """The string spelling of every int field: the pattern and the Int type agree."""
    rng = random.Random(6)
    for prefix, f in config.FLAT_KEYS.values():
        if f.kind != "int":
            continue
        t = f.type
        pat = re.compile(schema.int_pattern(t.minimum, t.maximum))
        hi = t.maximum if t.maximum is not None else 10 ** 6
        tries = {0, 1, 9, 10, 99, 100, hi - 1, hi, hi + 1, hi * 10}
        tries |= {rng.randrange(0, hi * 2 + 2) for _ in range(300)}
        if t.minimum is not None:
            tries |= {t.minimum - 1, t.minimum, t.minimum + 1}
        for n in sorted(t for t in tries if t >= 0):
            text = f"0{n}" if n % 7 == 0 else str(n)
            try:
                t.convert(text, "x", False)
                ok = True
            except ConfigError:
                ok = False
            assert bool(pat.search(text)) == ok, (f.name, text)


def test_version_pattern_matches_the_loader():
    """kubernetesVersion: the schema's pattern accepts exactly the spellings the loader
    takes, the supported minors (krm_fn.node.upstream.VERSIONS) and nothing else."""
    from krm_fn.node import upstream
    [f] = [f for f in spec.SCHEMA if f.name == "kubernetesVersion"]
    pat = re.compile(f.type.json_schema()["pattern"])
    assert [m for _, m in f.type.supported] == [m for _, m in upstream.VERSIONS]
    for minor in range(0, 140):
        for text in (f"1.{minor}", f"v1.{minor}", f"1.{minor}.3", f"v1.{minor}.0",
                     f"1.0{minor}", f"2.{minor}", f"1.{minor}."):
            try:
                f.type.convert(text, "x", False)
                ok = True
            except ConfigError:
                ok = False
            assert bool(pat.search(text)) == ok, text
            assert ok == (text.lstrip("v").startswith("1.")
                          and (1, minor) in upstream.VERSIONS
                          and not text.startswith("1.0") and not text.endswith(".")), text


def test_unknown_field_kind_is_refused(monkeypatch):
    """A new field type in the definition must give a JSON Schema, not slip through."""
    class Novel(types.Type):
        kind = "novel"
    monkeypatch.setattr(spec, "SCHEMA", spec.SCHEMA + (config.Field("x", Novel()),))
    with pytest.raises(ValueError, match="kind 'novel'"):
        schema.inference_tuning()
