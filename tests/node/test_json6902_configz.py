"""The documented json6902 flow end to end: the patch applied with the jsonpatch library to what
`kubectl get --raw /api/v1/nodes/<node>/proxy/configz` returns (tests/node/data/configz.json,
the `{"kubeletconfig": {...}}` wrapper, no apiVersion/kind) gives the complete
KubeletConfiguration the kubelet will run."""
import copy
import json
from pathlib import Path

import jsonpatch

from krm_fn import config
from krm_fn.node import kubelet_check
from krm_fn.node import plan as node_plan
from krm_fn.node.formats import RenderContext, render_with_results
from krm_fn.pipeline import transform
from krm_fn.results import Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")
CONFIGZ = json.loads((Path(__file__).parent / "data" / "configz.json").read_text())
TYPED = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
         "metadata": {"name": "pin-inference"}}


def _patch(objs) -> list:
    [cm] = objs
    return json.loads(cm["data"]["kubelet-config.patch.json"])


def test_json6902_applied_to_a_configz_answer_is_a_complete_kubelet_configuration():
    plan, _ = node_plan.build(config.load(None).nodePools[0], (1, 35), REF, 0, CONFIGZ)
    objs, results = render_with_results("json6902", plan,
                                        RenderContext("kube-system", False, CONFIGZ), REF)
    assert results == []
    given = copy.deepcopy(CONFIGZ)
    patched = jsonpatch.apply_patch(given, _patch(objs))
    assert given == CONFIGZ                             # the input is not modified
    assert (patched["apiVersion"], patched["kind"]) == ("kubelet.config.k8s.io/v1beta1",
                                                        "KubeletConfiguration")
    assert "kubeletconfig" not in patched
    # valid for the kubelet of the target version: every field known, every type right
    assert kubelet_check.check(patched, (1, 35)) == []
    # exactly the configuration the plan says the kubelet runs (baseline + plan, merged)
    assert {k: v for k, v in patched.items() if k not in ("apiVersion", "kind")} == plan.merged
    inner = CONFIGZ["kubeletconfig"]
    assert set(patched) == {"apiVersion", "kind"} | set(inner) | set(plan.kubelet)
    untouched = [k for k in inner if k not in plan.kubelet]
    assert {k: patched[k] for k in untouched} == {k: inner[k] for k in untouched}
    assert (patched["cpuManagerPolicy"], patched["reservedSystemCPUs"],
            patched["topologyManagerScope"], patched["podPidsLimit"]) == (
        "static", "0-1,32-33", "pod", 4096)
    # a map the plan sets keeps the configz keys the plan does not name
    assert patched["evictionHard"]["imagefs.inodesFree"] == "5%"
    assert patched["clusterDNS"] == ["10.96.0.10"] and patched["maxPods"] == 110


def test_json6902_patch_applies_to_the_configz_answer_through_the_pipeline():
    fc = {**TYPED, "spec": {"output": {"formats": ["json6902"], "baseline": CONFIGZ},
                            "nodePools": [{"name": "inference", "emit": "always"}]}}
    out = transform([], fc)
    assert not out.has_errors
    patched = jsonpatch.apply_patch(CONFIGZ, _patch(out.emitted))
    assert (patched["apiVersion"], patched["kind"], patched["cpuManagerPolicy"]) == (
        "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", "static")
    assert "kubeletconfig" not in patched
