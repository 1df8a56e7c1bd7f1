"""A pod spec that sets `spec.overhead` itself (krm_fn/admission/build.py own_overhead): the
RuntimeClass admission controller sets the overhead from the pod's RuntimeClass and refuses
a pod that brings its own unless it is exactly the RuntimeClass's (plugin/pkg/admission/
runtimeclass/admission.go setOverhead, validateOverhead). The verdict against the real API
server's admission of the same pods (tests/controlplane)."""
from __future__ import annotations

import pytest

from tests.test_verdict import GUARANTEED_4, config, errors, render, verdicts

_SRC = ("(plugin/pkg/admission/runtimeclass/admission.go setOverhead, validateOverhead; "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/)")
_FIX = ("remove spec.overhead: the RuntimeClass admission controller sets it from the pod's "
        "RuntimeClass " + _SRC)
_KATA = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
         "metadata": {"name": "kata-overhead"}, "handler": "kata",
         "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}}}
_RUNC = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
         "metadata": {"name": "runc-plain"}, "handler": "runc"}

# case -> (runtimeClassName or None, the pod's spec.overhead, krm-fn's error or None, the
# API server's words or None)
CASES = {
    "no-runtime-class": (None, {"cpu": "250m"}, (
        "spec.overhead is set without a runtimeClassName: the API server refuses the pod (pod "
        "rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead); "
        + _FIX), "Pod Overhead set without corresponding RuntimeClass defined Overhead"),
    "runtime-class-without-overhead": ("runc-plain", {"cpu": "250m"}, (
        "spec.overhead is set but RuntimeClass runc-plain defines no overhead: the API server "
        "refuses the pod (pod rejected: Pod Overhead set without corresponding RuntimeClass "
        "defined Overhead); " + _FIX),
        "Pod Overhead set without corresponding RuntimeClass defined Overhead"),
    "another-overhead": ("kata-overhead", {"cpu": "100m", "memory": "160Mi"}, (
        "spec.overhead is not the overhead.podFixed of RuntimeClass kata-overhead: the API "
        "server refuses the pod (pod rejected: Pod's Overhead doesn't match RuntimeClass's "
        "defined Overhead); " + _FIX), "Pod's Overhead doesn't match RuntimeClass's defined"),
    "a-resource-missing": ("kata-overhead", {"cpu": "250m"}, (
        "spec.overhead is not the overhead.podFixed of RuntimeClass kata-overhead: the API "
        "server refuses the pod (pod rejected: Pod's Overhead doesn't match RuntimeClass's "
        "defined Overhead); " + _FIX), "Pod's Overhead doesn't match RuntimeClass's defined"),
    # the same amounts in other spellings are the same overhead (quantities compared)
    "the-same-overhead": ("kata-overhead", {"cpu": "0.25", "memory": "160Mi"}, None, None),
    "empty-overhead": ("kata-overhead", {}, None, None),
    "null-overhead": (None, None, None, None),
}


def _pod(name: str, rc, overhead) -> dict:
    spec = {"containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}],
            "overhead": overhead}
    if rc:
        spec["runtimeClassName"] = rc
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ai"}, "spec": spec}


@pytest.mark.parametrize("name", list(CASES))
def test_a_pods_own_overhead_is_refused_as_the_api_server_refuses_it(name):
    rc, overhead, want, _ = CASES[name]
    code, results, _ = render(config(), _KATA, _RUNC, _pod(name, rc, overhead))
    assert code == (1 if want else 0), results
    assert errors(results) == ([want, "left unchanged because of the errors above"]
                               if want else [])


def test_an_unknown_runtime_class_leaves_the_overhead_unchecked_and_counts_it():
    # admitted only when the RuntimeClass defines the same overhead: counted in the fit
    code, results, _ = render(config(), _pod("srv", "elsewhere", {"cpu": "2"}))
    assert code == 0
    assert ("warning", "spec.overhead is set: the API server refuses the pod unless "
                       "RuntimeClass elsewhere defines exactly this overhead, and elsewhere "
                       "is not in the input, so that is not checked; " + _FIX) in results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "5 per node (allocatable cpu 30: 4 + 2 each)"]


def test_a_runtime_class_the_input_lacks_is_said_to_decide_admission_and_fit():
    # the RuntimeClass admission refuses a pod whose RuntimeClass the cluster lacks, and
    # adds its overhead and scheduling: none of it is known without the object
    code, results, _ = render(config(), _pod("srv", "kata", None))
    assert code == 0
    assert [m for s, m in results if "RuntimeClass" in m] == [
        "RuntimeClass kata is not in the input: the API server refuses the pod unless the "
        "cluster has it (pod rejected: RuntimeClass \"kata\" not found), and krm-fn does not "
        "count its overhead.podFixed (added to the pod's requests for the scheduler and "
        "quotas) nor its scheduling.nodeSelector and tolerations (merged into the pod's); "
        "add it to the input to have them judged (https://kubernetes.io/docs/concepts/"
        "containers/runtime-class/; " + _SRC[1:-1] + ")"]
    assert [s for s, m in results if "RuntimeClass kata" in m] == ["info"]
    # in the input: judged, nothing to say
    code, results, _ = render(config(), _KATA, _pod("srv", "kata-overhead", None))
    assert code == 0 and not [m for s, m in results if "is not in the input" in m]


def test_pod_overheads_against_the_api_server(controlplane, tmp_path):
    from tests.test_apiserver import _dump, refusals
    path = tmp_path / "runtimeclasses.yaml"
    path.write_text(_dump([_KATA, _RUNC]))
    controlplane.kubectl("apply", "--server-side", "--field-manager=krm-fn-test", "-f",
                         str(path), check=True)
    for name, (rc, overhead, want, said) in CASES.items():
        lines = refusals(controlplane, [_pod(name, rc, overhead)], tmp_path, name)
        assert bool(lines) == bool(want), (name, lines)
        if said:
            assert said in "\n".join(lines), (name, lines)
