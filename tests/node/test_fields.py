"""The kubelet field table (krm_fn.node.fields) is the one list of KubeletConfiguration
fields: every field the plan can emit is in it, every format's name map comes from it, its
versions are sane, and no other module of krm_fn.node lists field names."""
import ast
import copy
import pathlib

import pytest

from krm_fn import config
from krm_fn.node import baseline as baseline_mod
from krm_fn.node import fields
from krm_fn.node import plan as node_plan
from krm_fn.node import upstream
from krm_fn.node.formats import FORMATS, RenderContext, render_with_results
from krm_fn.node.formats import aks, eks, gke, openshift, talos
from krm_fn.results import Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")
NODE = pathlib.Path(fields.__file__).parent


def pool(**kubelet):
    p = copy.deepcopy(config.load(None).nodePools[0])
    for k, v in kubelet.items():
        setattr(p.kubelet, k, v)
    return p


# Pools that together make the plan write every field it can write without kubelet.extra.
POOLS = [
    pool(),
    pool(cpuManagerPolicyOptions={"full-pcpus-only": "true", "align-by-socket": "true"},
         topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true"},
         memoryManagerPolicy="Static", singleProcessOOMKill=True, cgroupDriver="systemd",
         kubeReserved={"memory": "1Gi"}, systemReserved={"memory": "1Gi"}),
]
BASELINE = {"systemReservedCgroup": "/system", "kubeReservedCgroup": "/runtime",
            "enforceNodeAllocatable": ["pods", "system-reserved", "kube-reserved"],
            "cpuManagerPolicy": "none", "cpuManagerPolicyOptions": {"align-by-socket": "true"}}


def emitted(version=(1, 35), baseline=None) -> set[str]:
    out: set[str] = set()
    for p in POOLS:
        plan, _ = node_plan.build(p, version, REF, baseline=baseline)
        out |= set(plan.kubelet)
    return out - set(fields.HEADER)


@pytest.mark.parametrize("version", upstream.VERSIONS)
def test_every_field_the_plan_emits_is_in_the_table(version):
    written = emitted(version) | emitted(version, BASELINE)
    missing = sorted(n for n in written if n not in fields.BY_NAME)
    assert not missing, f"plan fields missing from krm_fn.node.fields: {missing}"
    # and the typed pool settings the plan copies are the table's `typed` names
    for name in fields.MANAGED:
        if name in fields.HEADER:
            continue
        assert fields.BY_NAME[name].managed


def test_managed_fields_have_typed_pool_settings():
    kubelet = config.load(None).nodePools[0].kubelet
    for f in fields.FIELDS:
        if f.managed and f.typed is not None:
            assert hasattr(kubelet, f.typed), f.name
        if not f.managed:
            assert f.typed is None and f.reported_at is None, f.name


def test_the_plan_uses_the_table_for_managed_fields_and_header():
    assert node_plan.MANAGED is fields.MANAGED
    assert (node_plan.KUBELET_API_VERSION, node_plan.KUBELET_KIND) == (fields.API_VERSION,
                                                                       fields.KIND)
    assert set(fields.HEADER) <= set(fields.MANAGED)


def test_format_name_maps_are_derived_from_the_table():
    assert gke.NAMES == fields.platform_names("gke")
    assert aks.NAMES == fields.platform_names("aks")
    assert openshift.REJECTED == fields.refused_by("openshift")
    assert openshift.NTO_FIELDS == fields.owned_on("openshift")
    assert talos.PROTECTED == fields.refused_by("talos")
    assert talos.TALOS_SYSTEM_RESERVED == fields.platform_default("talos", "systemReserved")
    assert set(eks.NODEADM_CGROUPS) == set(fields.RESERVED_CGROUP_FIELDS)
    assert all(eks.NODEADM_CGROUPS.values())
    assert baseline_mod.ENFORCEMENT is fields.ENFORCEMENT
    assert baseline_mod.RESERVED_CGROUP_FIELDS is fields.RESERVED_CGROUP_FIELDS


def test_every_format_is_classified_and_every_platform_entry_names_a_format():
    assert set(fields.FORMAT_KIND) == set(FORMATS)
    for f in fields.FIELDS:
        for fmt, how in f.platforms.items():
            assert fmt in fields.FORMAT_KIND, (f.name, fmt)
            assert isinstance(how, (fields.On, fields.Off)), (f.name, fmt)
            if isinstance(how, fields.Off):
                assert how.reason, (f.name, fmt)
                # a CLOSED format refuses everything it does not name: Off says nothing new
                assert fields.FORMAT_KIND[fmt] == fields.OPEN, (f.name, fmt)
            else:
                assert how.name, (f.name, fmt)


def test_conversions_named_in_the_table_exist_in_the_formats():
    modules = {"gke": gke, "aks": aks}
    for f in fields.FIELDS:
        for fmt, how in f.platforms.items():
            if isinstance(how, fields.On) and how.convert:
                assert how.convert in modules[fmt].CONVERT, (f.name, fmt, how.convert)


def test_versions_defaults_and_states_are_sane():
    for f in fields.FIELDS:
        assert f.shape in fields.SHAPES, f.name
        assert f.state in (None, fields.CPU_STATE, fields.MEMORY_STATE), f.name
        if f.omit_at_default:
            assert f.default is not None, f.name
    assert [f.name for f in fields.STATE_FIELDS] == [
        "cpuManagerPolicy", "reservedSystemCPUs", "memoryManagerPolicy", "reservedMemory"]
    # pkg/kubelet/apis/config/v1beta1/defaults.go: FailCgroupV1 defaults to true in every
    # supported release
    assert [fields.BY_NAME["failCgroupV1"].default_for(v) for v in upstream.VERSIONS] == [
        True, True, True]


@pytest.mark.parametrize("version", upstream.VERSIONS)
def test_every_field_the_plan_writes_exists_in_every_supported_version(version):
    """The plan writes failCgroupV1, singleProcessOOMKill, ... without a version check:
    every supported version has every field it can write (types.go of each release)."""
    written = emitted(version) | emitted(version, BASELINE)
    assert sorted(n for n in written if not upstream.has_field(n, version)) == []


def test_baseline_shapes_cover_what_the_plan_reads():
    shapes = fields.baseline_shapes()
    for name in ("reservedSystemCPUs", "evictionHard", "reservedMemory", "featureGates",
                 "cpuCFSQuota", *fields.RESERVED_CGROUP_FIELDS):
        assert name in shapes
    assert set(shapes.values()) <= set(fields.SHAPES)


def test_closed_platforms_report_fields_they_cannot_set():
    # every field a closed platform cannot set is reported: a warning, an error when the
    # verdict reads it (Field.judged), or by the platform's reservation check
    # (platform_reserved.judge speaks for the reservation fields)
    plan, _ = node_plan.build(pool(), (1, 35), REF)
    ctx = RenderContext(namespace="kube-system")
    for fmt in ("gke", "aks"):
        _, results = render_with_results(fmt, plan, ctx, REF)
        said = {(r.severity, r.path.rpartition("kubelet.")[2]) for r in results}
        names = fields.platform_names(fmt)
        for key, value in plan.kubelet.items():
            if key in fields.HEADER or key in names:
                continue
            if fields.OMIT_AT_DEFAULT.get(key) == value or value == fields.BY_NAME[
                    key].default_for((1, 35)):
                continue        # the kubelet's default: the node runs it anyway
            if key == "reservedSystemCPUs":
                assert any(r.path.endswith("reserved.cores") and r.severity == "error"
                           for r in results), fmt
                continue
            if key in fields.PLATFORM_SIZED and key not in fields.RESERVATIONS:
                continue        # evictionHard: memory.available is GKE's and AKS's 100Mi
            want = "error" if fields.BY_NAME[key].judged else "warning"
            assert (want, key) in said, (fmt, key)


def _literal_field_lists(path: pathlib.Path) -> list[tuple[int, list[str]]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = node.elts
        else:
            continue
        names = [i.value for i in items
                 if isinstance(i, ast.Constant) and i.value in fields.BY_NAME]
        if len(names) >= 2:
            out.append((node.lineno, names))
    return out


def test_no_other_node_module_lists_kubelet_fields():
    # data/: the generated upstream data fields.py is checked against, not a hand-typed list
    found = {str(p.relative_to(NODE)): hits for p in sorted(NODE.rglob("*.py"))
             if p.name != "fields.py" and p.parent.name != "data"
             for hits in [_literal_field_lists(p)] if hits}
    assert not found, f"lists of kubelet field names outside krm_fn/node/fields.py: {found}"


def test_every_baseline_shape_has_its_check_in_the_config():
    """spec.output.baseline is checked field by field from the table: each shape the table
    gives a baseline field has one check (krm_fn.config.baseline.SHAPE_CHECKS)."""
    from krm_fn.config.baseline import SHAPE_CHECKS
    assert set(fields.baseline_shapes().values()) <= set(SHAPE_CHECKS)
    assert set(SHAPE_CHECKS) <= set(fields.SHAPES)
