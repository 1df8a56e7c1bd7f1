"""tools/gen_kubelet_data.py on a tiny source tree: versioned specs evaluated per minor,
constant names resolved to gate names, removals found release to release, field types; the
data modules it writes (krm_fn/node/data/kubelet_1_NN.py: a docstring and `DATA = {...}`)."""
import ast
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from krm_fn.node import upstream

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gen", ROOT / "tools" / "gen_kubelet_data.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

FEATURES_OLD = '''
package features
const (
	// owner: @x  /* not a block */
	CPUCFSQuotaPeriod featuregate.Feature = "CustomCPUCFSQuotaPeriod"
	Gone featuregate.Feature = "Gone"
	Versioned featuregate.Feature = "Versioned"
)
var defaultKubernetesFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	CPUCFSQuotaPeriod: {Default: false, PreRelease: featuregate.Alpha},
	Gone:              {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
}
var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	Versioned: {
		{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.31"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.33"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
}
'''
FEATURES_NEW = FEATURES_OLD.replace(
    "\tGone:              {Default: true, PreRelease: featuregate.GA, LockToDefault: true},\n",
    "")
TYPES = '''
package v1beta1
type KubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// maxPods is the maximum number of Pods. // `json:"not"`
	MaxPods int32 `json:"maxPods,omitempty"`
	SyncFrequency metav1.Duration `json:"syncFrequency,omitempty"`
	ReservedMemory []MemoryReservation `json:"reservedMemory,omitempty"`
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}
type MemoryReservation struct {
	NumaNode int32 `json:"numaNode"`
	Limits v1.ResourceList `json:"limits"`
}
'''
EVICTION = '''
var DefaultEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"imagefs.available": "15%",
}
'''
# k8s.io/component-base/featuregate/feature_gate.go: the package's own gates
FEATUREGATE = '''
package featuregate
const (
	allAlphaGate Feature = "AllAlpha"
	allBetaGate Feature = "AllBeta"
)
var (
	defaultFeatures = map[Feature]VersionedSpecs{
		allAlphaGate: {{Default: false, PreRelease: Alpha, Version: version.MajorMinor(0, 0)}},
		allBetaGate:  {{Default: false, PreRelease: Beta, Version: version.MajorMinor(0, 0)}},
	}
)
func (f *featureGate) GetAll() map[Feature]FeatureSpec {
	retval := map[Feature]FeatureSpec{}
	return retval
}
'''


def _data(out: Path, minor: str) -> dict:
    """`DATA` of the module the generator wrote to `out` for `minor` (a literal: read with
    ast.literal_eval, so the test also proves the module holds nothing but data)."""
    tree = ast.parse((out / f"{gen.module_name(minor)}.py").read_text())
    assert [type(n).__name__ for n in tree.body] == ["Expr", "Assign"]
    assert [t.id for t in tree.body[1].targets] == ["DATA"]
    return ast.literal_eval(tree.body[1].value)


def _tree(root: Path, features: str, eviction: bool) -> str:
    (root / "pkg/features").mkdir(parents=True)
    (root / "pkg/features/kube_features.go").write_text(features)
    for path, text in ((gen.TYPES, TYPES), (gen.FEATUREGATE, FEATUREGATE)):
        (root / path).parent.mkdir(parents=True)
        (root / path).write_text(text)
    if eviction:
        (root / "pkg/kubelet/eviction").mkdir(parents=True)
        (root / gen.EVICTION).write_text(EVICTION)
    return str(root)


def test_generator_on_a_tiny_tree(tmp_path):
    a = _tree(tmp_path / "a", FEATURES_OLD, eviction=False)
    b = _tree(tmp_path / "b", FEATURES_NEW, eviction=True)
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--tree", f"1.31={a}", "--tree", f"1.33={b}", "--out", str(out),
                     "1.31", "1.33"]) == 0
    old = _data(out, "1.31")
    new = _data(out, "1.33")
    assert old["gates"]["CustomCPUCFSQuotaPeriod"] == {
        "stage": "ALPHA", "default": False, "locked": False}
    assert old["gates"]["Versioned"] == {"stage": "BETA", "default": True, "locked": False}
    assert new["gates"]["Versioned"] == {"stage": "GA", "default": True, "locked": True}
    assert old["gates"]["Gone"]["locked"] is True and "Gone" not in new["gates"]
    # the featuregate package's own gates, read from feature_gate.go
    assert (old["gates"]["AllAlpha"], old["gates"]["AllBeta"]) == (
        {"stage": "ALPHA", "default": False, "locked": False},
        {"stage": "BETA", "default": False, "locked": False})
    assert old["removedGates"] == {} and new["removedGates"] == {"Gone": "1.33"}
    assert old["fields"] == {
        "maxPods": {"go": "int32", "type": "int32"},
        "syncFrequency": {"go": "metav1.Duration", "type": "duration"},
        "reservedMemory": {"go": "[]MemoryReservation", "type": "list", "items": {
            "go": "MemoryReservation", "type": "object", "fields": {
                "numaNode": {"go": "int32", "type": "int32"},
                "limits": {"go": "v1.ResourceList", "type": "quantity-map"}}}},
        "featureGates": {"go": "map[string]bool", "type": "bool-map"}}
    # 1.31 lacks defaults_linux.go: it takes the nearest later minor's
    assert old["evictionHardDefault"] == [["memory.available", "100Mi"],
                                          ["imagefs.available", "15%"]]
    assert old["evictionHardDefaultFrom"] == "1.33"


def test_a_spec_for_a_later_min_compatibility_version_is_not_the_kubelets_default():
    """Found by the kubelet-configuration harness: at 1.37 the kubelet runs
    DRAFractionalCapacityRange off (its `{1.37, Default: true, MinCompatibilityVersion: 1.37}`
    spec is in effect only when the min compatibility version, by default the emulation
    version minus one minor, is 1.37: featureSpecAtEmulationAndMinCompatVersion in
    component-base/featuregate/feature_gate.go), so krm-fn took it for on and refused
    `DRAConsumableCapacity: false`, which the kubelet accepts."""
    specs = [gen.parse_spec('Version: version.MustParse("1.37"), Default: false, '
                            'PreRelease: featuregate.Beta'),
             gen.parse_spec('Version: version.MustParse("1.37"), Default: true, '
                            'PreRelease: featuregate.Beta, '
                            'MinCompatibilityVersion: version.MustParse("1.37")')]
    assert gen.at(specs, "1.37")["default"] is False
    assert gen.at(specs, "1.38")["default"] is True
    assert upstream.load((1, 37)).gate_default("DRAFractionalCapacityRange") is False


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_generator_reads_the_release_tag_of_a_git_clone(tmp_path):
    """--git reads v<minor>.0 by default, and the tag --ref names (a patch release)."""
    repo = Path(_tree(tmp_path / "k8s", FEATURES_OLD, eviction=True))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "old")
    _git(repo, "tag", "v1.31.0")
    (repo / "pkg/features/kube_features.go").write_text(FEATURES_NEW)
    _git(repo, "commit", "-qam", "new")
    _git(repo, "tag", "v1.31.2")
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--git", str(repo), "--out", str(out), "1.31"]) == 0
    data = _data(out, "1.31")
    assert (data["source"], "Gone" in data["gates"]) == ("kubernetes v1.31.0", True)
    assert gen.main(["--git", str(repo), "--ref", "1.31=v1.31.2", "--out", str(out),
                     "1.31"]) == 0
    data = _data(out, "1.31")
    assert (data["source"], "Gone" in data["gates"]) == ("kubernetes v1.31.2", False)


def test_generator_refuses_a_source_without_the_featuregate_package(tmp_path):
    a = _tree(tmp_path / "a", FEATURES_OLD, eviction=True)
    (Path(a) / gen.FEATUREGATE).unlink()
    with pytest.raises(SystemExit, match="1.31: staging/src/k8s.io/component-base/"
                                         "featuregate/feature_gate.go not found"):
        gen.main(["--tree", f"1.31={a}", "--out", str(tmp_path), "1.31"])


def _module_cache(root: Path) -> dict[tuple[str, str], str]:
    """A module cache as `go mod download` lays it out (module@version directories): the
    tiny tree's pkg/ in k8s.io/kubernetes@v1.31.2, each staging directory in its own
    module k8s.io/<name>@v0.31.2."""
    tree = Path(_tree(root / "tree", FEATURES_NEW, eviction=True))
    cache = root / "k8s.io"
    cache.mkdir()
    dirs = {("k8s.io/kubernetes", "v1.31.2"): cache / "kubernetes@v1.31.2"}
    dirs[("k8s.io/kubernetes", "v1.31.2")].mkdir()
    (tree / "pkg").rename(dirs[("k8s.io/kubernetes", "v1.31.2")] / "pkg")
    for staging in (tree / gen.STAGING).iterdir():
        module = (f"k8s.io/{staging.name}", "v0.31.2")
        dirs[module] = cache / f"{staging.name}@v0.31.2"
        staging.rename(dirs[module])
    for path in (gen.TYPES, *gen.GATE_FILES):     # the staging modules the tree lacks
        if path.startswith(gen.STAGING):
            name = path[len(gen.STAGING):].partition("/")[0]
            dirs[(f"k8s.io/{name}", "v0.31.2")] = cache / f"{name}@v0.31.2"
            dirs[(f"k8s.io/{name}", "v0.31.2")].mkdir(exist_ok=True)
    return {k: str(v) for k, v in dirs.items()}


def test_generator_reads_a_release_from_go_modules(tmp_path, monkeypatch):
    """--module 1.31=v1.31.2: pkg/ from k8s.io/kubernetes@v1.31.2, staging/src/k8s.io/<name>/
    from k8s.io/<name>@v0.31.2, each fetched once (go_download), named in `source`."""
    cache = _module_cache(tmp_path / "mod")
    asked = []

    def download(module, version):
        asked.append((module, version))
        return cache[(module, version)]
    monkeypatch.setattr(gen, "go_download", download)
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--module", "1.31=v1.31.2", "--out", str(out), "1.31"]) == 0
    data = _data(out, "1.31")
    assert sorted(asked) == sorted(set(asked)) == sorted(cache)
    assert data["source"] == ("kubernetes v1.31.2: Go modules k8s.io/kubernetes v1.31.2 and "
                              "k8s.io/apiextensions-apiserver, k8s.io/apiserver, "
                              "k8s.io/client-go, k8s.io/component-base, "
                              "k8s.io/controller-manager, k8s.io/kubelet v0.31.2")
    assert "Gone" not in data["gates"] and data["gates"]["AllBeta"]["stage"] == "BETA"
    assert data["fields"]["maxPods"] == {"go": "int32", "type": "int32"}
    assert data["evictionHardDefaultFrom"] == "1.31"


@pytest.mark.parametrize("arg,why", [
    ("1.31=1.31.2", "'1.31.2' is not a Kubernetes release tag such as v1.37.2"),
    ("1.31=v1.31", "'v1.31' is not a Kubernetes release tag such as v1.37.2"),
    ("1.31=v1.32.1", "v1.32.1 is not a 1.31 release"),
])
def test_generator_refuses_a_module_tag_that_is_not_the_minors_release(arg, why, capsys):
    with pytest.raises(SystemExit):
        gen.main(["--module", arg, "1.31"])
    assert f"--module {arg}: {why}" in capsys.readouterr().err


def test_go_download_names_the_module_when_go_cannot_fetch_it(monkeypatch):
    """The error of `go mod download` (here: the proxy turned off, so nothing is fetched)
    stops the generator with the module and go's own message."""
    if shutil.which("go") is None:
        pytest.skip("the go command is not installed")
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    with pytest.raises(SystemExit, match=r"go mod download k8s\.io/kubernetes@v1\.0\.999: "
                                         r".*GOPROXY=off"):
        gen.go_download("k8s.io/kubernetes", "v1.0.999")


def test_generator_marks_gates_not_from_the_releases_own_source(tmp_path):
    a = _tree(tmp_path / "a", FEATURES_OLD, eviction=True)
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--tree", f"1.31={a}", "--tree", f"1.32={a}", "--inexact-gates", "1.32",
                     "--out", str(out), "1.31", "1.32"]) == 0
    old = _data(out, "1.31")
    new = _data(out, "1.32")
    assert ("gatesExact" in old, new["gatesExact"]) == (False, False)


def test_generator_writes_a_module_per_minor_with_its_source_in_the_docstring(tmp_path):
    a = _tree(tmp_path / "a", FEATURES_OLD, eviction=True)
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--tree", f"1.31={a}", "--note", '1.31=tree "a" \\ test', "--out",
                     str(out), "1.31"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["kubelet_1_31.py"]
    text = (out / "kubelet_1_31.py").read_text()
    assert text.splitlines()[:3] == [
        '"""Generated by tools/gen_kubelet_data.py (docs/kubelet-data.md) from tree \\"a\\" '
        '\\\\ test: do not edit."""', "", "DATA = {"]
    assert ast.get_docstring(ast.parse(text)) == (
        'Generated by tools/gen_kubelet_data.py (docs/kubelet-data.md) from tree "a" \\ test: '
        'do not edit.')
    assert _data(out, "1.31")["source"] == 'tree "a" \\ test'


def test_literal_is_one_line_when_it_fits_else_one_entry_per_line():
    value = {"b": [["x", "1"], ["y", "2"]], "a": {"go": "int32", "type": "int32"},
             "c": {"long": "v" * 90, "ok": True, "n": None}, "d": [], "e": {}}
    assert gen.literal(value, 0, len("DATA = ")) == (
        "{\n"
        "    'a': {'go': 'int32', 'type': 'int32'},\n"
        "    'b': [['x', '1'], ['y', '2']],\n"
        "    'c': {\n"
        "        'long': '" + "v" * 90 + "',\n"
        "        'n': None,\n"
        "        'ok': True,\n"
        "    },\n"
        "    'd': [],\n"
        "    'e': {},\n"
        "}")
    assert gen.literal({"b": 1, "a": [1, False]}) == "{'a': [1, False], 'b': 1}"
    assert ast.literal_eval(gen.literal(value)) == value


MINORS = [f"1.{m}" for m in range(upstream.FIRST[1], upstream.LAST[1] + 1)]


def test_the_supported_minors_are_the_data_modules_present(tmp_path):
    """krm_fn.node.data.VERSIONS (upstream.FIRST .. LAST) lists the kubelet_1_<minor>.py
    modules of the package directory, oldest first; nothing else counts."""
    from krm_fn.node import data
    for name in ("__init__.py", "kubelet_1_9.py", "kubelet_1_10.py", "kubelet_1_x.py",
                 "kubelet_1_11.pyc", "kubelet_2_1.py", "notes.txt"):
        (tmp_path / name).write_text("")
    assert data._versions(str(tmp_path)) == ((1, 9), (1, 10))
    assert (upstream.VERSIONS, upstream.FIRST, upstream.LAST) == (
        data._versions(str(ROOT / "krm_fn/node/data")), data.VERSIONS[0], data.VERSIONS[-1])


def test_the_data_package_holds_one_module_per_generated_minor():
    names = sorted(p.name for p in (ROOT / "krm_fn/node/data").iterdir() if p.is_file())
    # defaults.py and gate_dependencies.py: generated by tools/gen_kubelet_defaults.py and
    # tools/gen_gate_dependencies.py (tests/test_kubelet_config_harness.py checks them)
    assert names == ["__init__.py", "defaults.py", "gate_dependencies.py"] + [
        f"{gen.module_name(m)}.py" for m in MINORS]


@pytest.mark.parametrize("minor", MINORS)
def test_each_committed_data_module_is_what_the_generator_writes(minor):
    """A regenerate of the same data writes the same bytes (the writer is deterministic),
    and upstream.load reads exactly that module's DATA."""
    text = (ROOT / "krm_fn/node/data" / f"{gen.module_name(minor)}.py").read_text()
    data = _data(ROOT / "krm_fn/node/data", minor)
    assert text == gen.module_text(data)
    assert data["version"] == minor and data["source"].count("v" + minor + ".") >= 1
    loaded = upstream.load(tuple(int(x) for x in minor.split(".")))
    assert (loaded.fields, loaded.gates, loaded.removed_gates, loaded.fields_since) == (
        data["fields"], data["gates"], data["removedGates"], data["fieldsSince"])
    assert list(loaded.eviction_hard_default.items()) == [
        tuple(kv) for kv in data["evictionHardDefault"]]


def test_the_committed_data_is_what_the_module_mode_generates(tmp_path, monkeypatch):
    """The committed modules, regenerated with --module from the releases their `source`
    names (docs/kubelet-data.md), byte for byte. Reads the Go module cache only
    (GOPROXY=off): skipped without the go command or without those modules in the cache
    (`go mod download k8s.io/kubernetes@<release>` and the staging modules fetch them)."""
    import re
    if shutil.which("go") is None:
        pytest.skip("the go command is not installed")
    releases = []
    for minor in MINORS:
        m = re.match(r"kubernetes (v1\.\d+\.\d+): Go modules ",
                     _data(ROOT / "krm_fn/node/data", minor)["source"])
        assert m, minor
        releases.append(m.group(1))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    args = [a for minor, tag in zip(MINORS, releases) for a in ("--module", f"{minor}={tag}")]
    try:
        gen.main([*args, "--out", str(tmp_path), *MINORS])
    except SystemExit as e:
        pytest.skip(f"not in the Go module cache: {e}")
    for minor in MINORS:
        name = f"{gen.module_name(minor)}.py"
        assert (tmp_path / name).read_text() == \
            (ROOT / "krm_fn/node/data" / name).read_text(), minor
