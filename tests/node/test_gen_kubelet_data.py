"""tools/gen_kubelet_data.py on a tiny source tree: versioned specs evaluated per minor,
constant names resolved to gate names, removals found release to release, field types."""
import importlib.util
import json
import subprocess
from pathlib import Path

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


def _tree(root: Path, features: str, eviction: bool) -> str:
    (root / "pkg/features").mkdir(parents=True)
    (root / "pkg/features/kube_features.go").write_text(features)
    types = root / gen.TYPES
    types.parent.mkdir(parents=True)
    types.write_text(TYPES)
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
    old = json.loads((out / "kubelet-1.31.json").read_text())
    new = json.loads((out / "kubelet-1.33.json").read_text())
    assert old["gates"]["CustomCPUCFSQuotaPeriod"] == {
        "stage": "ALPHA", "default": False, "locked": False}
    assert old["gates"]["Versioned"] == {"stage": "BETA", "default": True, "locked": False}
    assert new["gates"]["Versioned"] == {"stage": "GA", "default": True, "locked": True}
    assert old["gates"]["Gone"]["locked"] is True and "Gone" not in new["gates"]
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
    data = json.loads((out / "kubelet-1.31.json").read_text())
    assert (data["source"], "Gone" in data["gates"]) == ("kubernetes v1.31.0", True)
    assert gen.main(["--git", str(repo), "--ref", "1.31=v1.31.2", "--out", str(out),
                     "1.31"]) == 0
    data = json.loads((out / "kubelet-1.31.json").read_text())
    assert (data["source"], "Gone" in data["gates"]) == ("kubernetes v1.31.2", False)


def test_generator_marks_gates_not_from_the_releases_own_source(tmp_path):
    a = _tree(tmp_path / "a", FEATURES_OLD, eviction=True)
    out = tmp_path / "out"
    out.mkdir()
    assert gen.main(["--tree", f"1.31={a}", "--tree", f"1.32={a}", "--inexact-gates", "1.32",
                     "--out", str(out), "1.31", "1.32"]) == 0
    old = json.loads((out / "kubelet-1.31.json").read_text())
    new = json.loads((out / "kubelet-1.32.json").read_text())
    assert ("gatesExact" in old, new["gatesExact"]) == (False, False)
