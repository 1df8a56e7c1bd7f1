"""Rule openshift: pods with exclusive CPUs on a PerformanceProfile pool get the profile's
RuntimeClass and the CRI-O annotations the config asks for."""
import copy

import pytest

from krm_fn.pipeline import transform
from krm_fn.results import ERROR, WARNING
from tests.helpers import default_selector

TYPED = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
         "metadata": {"name": "pin-inference"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "model", "namespace": "serving"},
              "spec": {"template": {"metadata": {"labels": {"app": "m"}},
                                    "spec": {"containers": [{
                                        "name": "model", "image": "model:1",
                                        "resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                                                      "limits": {"cpu": "4",
                                                                 "memory": "8Gi"}}}]}}}}
SPEC = ("spec", "template", "spec")
ANN = ("spec", "template", "metadata", "annotations")


def _run(perf: dict | None, item: dict = DEPLOYMENT, **workloads):
    pool = {"name": "inference"}
    if perf is not None:
        pool["performanceProfile"] = perf
    fc = {**TYPED, "spec": {"nodePools": [pool], "workloads": workloads}}
    return transform([copy.deepcopy(item)], fc)


def _writes(out) -> dict:
    """{path: value} the openshift rule wrote to item 0."""
    return {c.path: c.new for c in out.changes.get(0, []) if c.rule == "openshift"}


def _results(out):
    return [(r.severity, r.path, r.message) for r in out.results
            if r.severity in (ERROR, WARNING) and not default_selector(r.message)]


def test_nothing_without_runtime_class():
    assert _writes(_run(None)) == {}
    assert _writes(_run({"name": "perf"})) == {}


def test_runtime_class_and_crio_annotations():
    out = _run({"runtimeClass": True,
                "crioAnnotations": ["cpu-quota", "cpu-load-balancing", "irq-load-balancing"]})
    assert _writes(out) == {
        SPEC + ("runtimeClassName",): "performance-inference",
        ANN + ("cpu-quota.crio.io",): "disable",
        ANN + ("cpu-load-balancing.crio.io",): "disable",
        ANN + ("irq-load-balancing.crio.io",): "disable",
    }
    assert _results(out) == []


def test_runtime_class_follows_the_profile_name():
    out = _run({"name": "low-latency", "runtimeClass": True})
    assert _writes(out) == {SPEC + ("runtimeClassName",): "performance-low-latency"}


def test_the_profiles_runtime_class_is_the_one_the_nto_creates_not_an_unknown_one():
    # the NTO creates performance-<profile> (handler high-performance, scheduling
    # nodeSelector the profile's): the verdict knows it, so no "not in the input" note
    out = _run({"name": "low-latency", "runtimeClass": True})
    assert [r.message for r in out.results if "is not in the input" in r.message] == []
    # a RuntimeClass the input lacks and no profile gives is said to decide admission
    item = copy.deepcopy(DEPLOYMENT)
    item["spec"]["template"]["spec"]["runtimeClassName"] = "kata"
    out = _run(None, item)
    assert [(r.severity, r.path) for r in out.results if "is not in the input" in r.message] \
        == [("info", "spec.template.spec.runtimeClassName")]


def test_other_runtime_class_is_an_error():
    item = copy.deepcopy(DEPLOYMENT)
    item["spec"]["template"]["spec"]["runtimeClassName"] = "kata"
    out = _run({"runtimeClass": True, "crioAnnotations": ["cpu-quota"]}, item)
    assert _writes(out) == {}
    assert (ERROR, "spec.template.spec.runtimeClassName",
            "runtimeClassName kata conflicts with node pool 'inference', whose "
            "PerformanceProfile 'inference' runs pods with exclusive CPUs in RuntimeClass "
            "performance-inference; remove it, or set performanceProfile.runtimeClass: "
            "false") in _results(out)


def test_annotation_the_workload_sets_is_kept_with_a_warning():
    item = copy.deepcopy(DEPLOYMENT)
    item["spec"]["template"]["metadata"]["annotations"] = {"cpu-quota.crio.io": "enable",
                                                           "irq-load-balancing.crio.io": "disable"}
    out = _run({"runtimeClass": True, "crioAnnotations": ["cpu-quota", "irq-load-balancing"]},
               item)
    assert _writes(out) == {SPEC + ("runtimeClassName",): "performance-inference"}
    assert _results(out) == [(
        WARNING, "spec.template.metadata.annotations['cpu-quota.crio.io']",
        "cpu-quota.crio.io is 'enable', kept: the workload sets it; node pool 'inference' "
        "asks for 'disable'")]


def test_pod_without_exclusive_cpus_gets_nothing():
    item = copy.deepcopy(DEPLOYMENT)
    res = item["spec"]["template"]["spec"]["containers"][0]["resources"]
    res["requests"]["cpu"] = res["limits"]["cpu"] = "1500m"
    out = _run({"runtimeClass": True, "crioAnnotations": ["cpu-quota"]}, item,
               cpuRounding="keep")
    assert _writes(out) == {}


@pytest.mark.parametrize("perf, path, message", [
    ({"crioAnnotations": ["cpu-quota"]}, "spec.nodePools[0].performanceProfile.crioAnnotations",
     "needs runtimeClass: true"),
    ({"name": "Bad_Name"}, "spec.nodePools[0].performanceProfile.name",
     "must be a DNS subdomain"),
    ({"runtimeClass": True, "crioAnnotations": ["cpu-c-states"]},
     "spec.nodePools[0].performanceProfile.crioAnnotations[0]", "cpu-c-states"),
])
def test_performance_profile_config_errors(perf, path, message):
    out = _run(perf)
    errors = [r for r in out.results if r.severity == ERROR]
    assert errors[0].path == path and message in errors[0].message


def test_flat_configmap_keys():
    fc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pin"},
          "data": {"performanceProfileName": "ll", "performanceRuntimeClass": "true",
                   "crioAnnotations": "cpu-quota,irq-load-balancing",
                   "formats": "performance-profile",
                   "nodeSelector": "node-role.kubernetes.io/inference="}}
    out = transform([copy.deepcopy(DEPLOYMENT)], fc)
    assert _writes(out) == {SPEC + ("runtimeClassName",): "performance-ll",
                            ANN + ("cpu-quota.crio.io",): "disable",
                            ANN + ("irq-load-balancing.crio.io",): "disable"}
    assert [(o["kind"], o["metadata"]["name"]) for o in out.emitted] == [
        ("PerformanceProfile", "ll")]


def test_each_crio_annotation_message_states_its_cgroup_v2_behaviour():
    from krm_fn.config.spec import CRIO_ANNOTATIONS
    from krm_fn.rules import openshift
    assert set(openshift.WHY) == set(CRIO_ANNOTATIONS)
    out = _run({"runtimeClass": True, "crioAnnotations": list(CRIO_ANNOTATIONS)})
    infos = {c.path[-1]: c.message for c in out.changes.get(0, [])
             if c.rule == "openshift" and c.path[-2] == "annotations"}
    assert infos == {
        "cpu-quota.crio.io": "cpu-quota.crio.io: disable: no CFS quota on its exclusive CPUs "
        "(cgroup v2: cpu.max max; a CRI-O without cgroup v2 support in its hooks fails the "
        "container, cri-o/cri-o#5736) (CRI-O, RuntimeClass performance-inference)",
        "cpu-load-balancing.crio.io": "cpu-load-balancing.crio.io: disable: no scheduler load "
        "balancing on its exclusive CPUs (cgroup v2: an isolated cpuset partition, Linux "
        "6.7+) (CRI-O, RuntimeClass performance-inference)",
        "irq-load-balancing.crio.io": "irq-load-balancing.crio.io: disable: no device "
        "interrupts on its exclusive CPUs (not a cgroup setting: the same on cgroup v1 and "
        "v2) (CRI-O, RuntimeClass performance-inference)"}
