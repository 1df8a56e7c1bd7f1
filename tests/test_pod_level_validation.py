"""What the API server refuses in pod-level `spec.resources` (krm_fn/admission/podresources.py,
validatePodResources in pkg/apis/core/validation/validation.go): renders whose verdict
would otherwise call a refused pod pinned, and the same rules against the real API server
(tests/controlplane, a server-side dry run of each generated pod after its defaulting).

Coarser on purpose, by name: the control plane is built at 1.37, so the generated pods check
1.37's defaulting (DefaultPodLevelResources, after the webhooks); that of 1.35 and 1.36
(SetDefaults_Pod, before them) is read from their source and not run here."""
from __future__ import annotations

import os
import random
import re

import pytest

from krm_fn.admission import verdict
from krm_fn.admission.build import requests_limits
from krm_fn.admission.model import APP, INIT, SIDECAR, AdmittedPod, Container
from krm_fn.results import Ref
from tests.admission.kit import node
from tests.test_verdict import config, errors, render

SRC = ("(pkg/apis/core/validation/validation.go validatePodResources; "
       "https://kubernetes.io/docs/tasks/configure-pod-container/assign-pod-level-resources/)")
SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "2837"))
CASES = int(os.environ.get("KRM_FN_DIFF_EXAMPLES", "160"))


def _gated_config() -> dict:
    """1.37 with PodLevelResourceManagers on and the pod scope: a pod with pod-level
    resources gets exclusive CPUs, so the verdict alone would call it pinned."""
    fc = config("1.37")
    pool = fc["spec"]["nodePools"][0] = dict(fc["spec"]["nodePools"][0])
    pool["kubelet"] = {**pool.get("kubelet", {}), "topologyManagerScope": "pod",
                       "extra": {"featureGates": {"PodLevelResourceManagers": True}}}
    return fc


def _pod(pod_resources: dict, **server_extra) -> dict:
    server = {"name": "server", "image": "registry.example/vllm-cpu:0.6.0",
              "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                            "limits": {"cpu": "4", "memory": "16Gi"}}}
    server["resources"]["limits"].update(server_extra)
    server["resources"]["requests"].update(server_extra)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "serving"},
            "spec": {"nodeSelector": {"pool": "p"},
                     "resources": pod_resources, "containers": [server]}}


@pytest.mark.parametrize("pod_resources, extra, want", [
    ({"requests": {"ephemeral-storage": "1Gi"}}, {},
     'spec.resources.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": '
     'supported values: "cpu", "hugepages-", "memory": the API server refuses the pod; '
     'remove ephemeral-storage from the pod-level resources (only cpu, memory and huge pages '
     'can be set for the whole pod; keep ephemeral-storage on the containers) ' + SRC),
    ({"limits": {"hugepages-2Mi": "3Mi"}}, {},
     'spec.resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive '
     'integer multiple of hugepages-2Mi: the API server refuses the pod; give hugepages-2Mi '
     'in whole pages ' + SRC),
    ({"requests": {"hugepages-2Mi": "4Mi"}}, {},
     "spec.resources.limits: Required value: Limit must be set for non overcommitable "
     "resources: the API server refuses the pod; set limits.hugepages-2Mi to the request "
     + SRC),
    ({"limits": {"hugepages-2Mi": "2Mi"}}, {"hugepages-2Mi": "4Mi"},
     'spec.resources.limits[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or '
     'equal to aggregate container limits of 4Mi: the API server refuses the pod; raise it '
     'to at least 4Mi ' + SRC),
])
def test_a_refused_pod_level_spec_is_an_error_not_a_pinned_pod(pod_resources, extra, want):
    code, results, _ = render(_gated_config(), _pod(pod_resources, **extra))
    assert code == 1, results
    assert want in errors(results), errors(results)


def test_huge_pages_the_containers_limit_are_defaulted_at_the_pod_level():
    # defaultHugePagePodLimits: a pod-level spec without hugepages takes the containers'
    # aggregate limit, so nothing is refused
    code, results, _ = render(_gated_config(), _pod({"limits": {"cpu": "4"}},
                                                     **{"hugepages-2Mi": "4Mi"}))
    assert not [m for m in errors(results) if "spec.resources" in m], errors(results)


# --- against the real API server ---------------------------------------------------------

_NAMES = ("cpu", "memory", "hugepages-2Mi", "ephemeral-storage", "example.com/foo")
# mostly amounts that cover the containers (cpu 0.5-2 and memory 1-2Gi each, huge pages
# 2-4Mi), some below them, a huge page amount that is no whole page
_AMOUNTS = {"cpu": ("8", "16", "4", "500m", "1"), "memory": ("8Gi", "16Gi", "4Gi", "512Mi"),
            "hugepages-2Mi": ("16Mi", "32Mi", "2Mi", "3Mi", "0"),
            "ephemeral-storage": ("1Gi",), "example.com/foo": ("1",)}
_WEIGHTS = {"cpu": 0.5, "memory": 0.5, "hugepages-2Mi": 0.3, "ephemeral-storage": 0.04,
            "example.com/foo": 0.04}


def _resources(rng: random.Random, names: tuple) -> dict:
    out: dict = {}
    for part in ("requests", "limits"):
        chosen = {n: rng.choice(_AMOUNTS[n][:2] if rng.random() < 0.6 else _AMOUNTS[n])
                  for n in names if rng.random() < _WEIGHTS[n]}
        if chosen:
            out[part] = chosen
    return out


def _container(rng: random.Random, i: int, init: str | None) -> dict:
    """A container the API server accepts alone: cpu and memory requests at most their
    limits, huge pages with request == limit, with cpu and memory."""
    cpu, mem = rng.choice(("1", "2", "500m")), rng.choice(("1Gi", "2Gi"))
    req, lim = {"cpu": cpu, "memory": mem}, {"cpu": cpu, "memory": mem}
    if rng.random() < 0.5:
        del lim["cpu"]
    if rng.random() < 0.3:
        req["hugepages-2Mi"] = lim["hugepages-2Mi"] = rng.choice(("2Mi", "4Mi"))
    c = {"name": f"c{i}", "image": "srv:1", "resources": {"requests": req, "limits": lim}}
    if init == "sidecar":
        c["restartPolicy"] = "Always"
    return c


def _generated(rng: random.Random, k: int) -> dict:
    spec: dict = {"containers": [_container(rng, i, None) for i in range(rng.randint(1, 2))],
                  "resources": _resources(rng, _NAMES)}
    inits = [_container(rng, 10 + i, rng.choice((None, "sidecar"))) for i in
             range(rng.choice((0, 0, 1, 2)))]
    if inits:
        spec["initContainers"] = inits
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pl-{k}", "namespace": "podlevel"}, "spec": spec}


def _model(pod: dict) -> AdmittedPod:
    """The admission model of a plain pod without injections (model.Container per
    container, as build.container makes them)."""
    spec = pod["spec"]
    out = []
    for c in spec.get("initContainers", []):
        role = SIDECAR if c.get("restartPolicy") == "Always" else INIT
        out.append(Container(c["name"], role, *requests_limits(c["resources"])))
    for c in spec["containers"]:
        out.append(Container(c["name"], APP, *requests_limits(c["resources"])))
    req, lim = requests_limits(spec["resources"])
    return AdmittedPod(Ref("v1", "Pod", pod["metadata"]["name"], "podlevel"), "spec",
                       tuple(out), req, lim)


_PATH = re.compile(r"(spec\.resources[A-Za-z0-9_.\[\]/-]*): (?:Invalid value|Unsupported "
                   r"value|Required value|Forbidden)")


def _api_paths(lines: list) -> list:
    """The field paths of the API server's errors about pod-level resources, sorted."""
    return sorted(_PATH.findall("\n".join(lines)))


def _krm_fn_paths(pod: dict) -> list:
    """The field paths of krm-fn's refusals of the pod's pod-level resources
    (verdict._podlevel_findings with podresources), in the API server's spelling, sorted;
    one per error text, as the API server's message lists an error said twice once
    (apimachinery field.ErrorList.ToAggregate)."""
    found = verdict._podlevel_findings(_model(pod), node(version=(1, 37)), pod["spec"])
    said = {f.message.split(": the API server refuses")[0]: f.path for f in found}
    return sorted(re.sub(r"\.(requests|limits)\.(cpu|memory)$", r".\1[\2]", path)
                  for path in said.values())


def test_pod_level_resources_against_the_api_server(controlplane, tmp_path):
    from tests.test_apiserver import refusals
    rng = random.Random(SEED)
    pods = [_generated(rng, k) for k in range(CASES)]
    wrong, said = [], {}
    for pod in pods:
        if not pod["spec"]["resources"]:
            continue
        lines = refusals(controlplane, [pod], tmp_path, pod["metadata"]["name"])
        api = _api_paths(lines)
        assert bool(api) == bool(lines), lines       # refused for its pod-level resources
        for path in api:
            said[re.sub(r"\[\d+\]", "[i]", path)] = True
        if api != _krm_fn_paths(pod):
            wrong.append((pod["spec"], api, _krm_fn_paths(pod), lines))
    assert not wrong, (f"KRM_FN_DIFF_SEED={SEED}", wrong[:3])
    accepted = sum(1 for p in pods if p["spec"]["resources"] and not _krm_fn_paths(p))
    assert accepted > CASES // 5, accepted       # the generator reaches both outcomes
    assert len(said) >= 12, sorted(said)         # and most of the refusals


# container huge pages in whole pages (validateResourceQuantityHugePageValue, also for
# containers: containerresources.resource_refusals)
_PAGES = {"pages-3mi": ("hugepages-2Mi", "3Mi"), "pages-4mi": ("hugepages-2Mi", "4Mi"),
          "pages-1gi-in-2mi": ("hugepages-2Mi", "1Gi"), "pages-zero": ("hugepages-2Mi", "0"),
          "pages-1500mi-in-1gi": ("hugepages-1Gi", "1500Mi"),
          "pages-2gi-in-1gi": ("hugepages-1Gi", "2Gi")}


def _paged(name: str) -> dict:
    res, amount = _PAGES[name]
    box = {"cpu": "1", "memory": "1Gi", res: amount}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "podlevel"},
            "spec": {"containers": [{"name": "c", "image": "srv:1",
                                     "resources": {"requests": dict(box), "limits": box}}]}}


def test_container_huge_pages_in_whole_pages_as_the_api_server_counts_them(controlplane,
                                                                          tmp_path):
    from krm_fn.admission.containerresources import resource_refusals
    from tests.test_apiserver import refusals
    for name in _PAGES:
        pod = _paged(name)
        ours = [f.path for f in resource_refusals(pod["spec"], "spec")]
        lines = refusals(controlplane, [pod], tmp_path, name)
        assert bool(ours) == bool(lines), (name, ours, lines)
        assert ours == [] or all("is not positive integer multiple of" in line
                                 for line in lines[1:] or lines), (name, lines)
    assert [n for n in _PAGES if resource_refusals(_paged(n)["spec"], "spec")] == [
        "pages-3mi", "pages-1500mi-in-1gi"]


def _fill_warning(results: list) -> list:
    return [m for s, m in results if s == "warning" and "sets pod-level resources:" in m]


def test_no_remove_warning_where_the_pools_kubelet_pins_pod_level_pods():
    # PodLevelResourceManagers on with the pod scope: the kubelet pins the pod's block, the
    # verdict says how; "remove spec.resources" would contradict it
    level = {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}
    code, results, _ = render(_gated_config(), _pod(level))
    assert code == 0 and _fill_warning(results) == [], results
    code, results, _ = render(config("1.37"), _pod(level))
    assert _fill_warning(results) == [
        "spec.resources sets pod-level resources: on Kubernetes 1.37 the static CPU Manager "
        "gives a pod with pod-level resources no exclusive CPUs (KEP-2837; unless the "
        "PodLevelResourceManagers gate (beta, off by default in Kubernetes 1.37) is on), so no "
        "container is pinned; remove spec.resources and keep the container resources."]


def _istio_pod_of_8500m(workloads: dict) -> tuple:
    """(config, Namespace, Pod): a pod-level 8-cpu pod whose server takes all 8 CPUs, in a
    Namespace with Istio injection (istio-proxy 500m), under the gated 1.37 config with
    `workloads` in spec.workloads: the containers need 8500m."""
    fc = _gated_config()
    fc["spec"]["workloads"] = {**workloads,
                               "injection": {"istio": {"cpu": "500m", "memory": "512Mi"}}}
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "serving", "labels": {"istio-injection": "enabled"}}}
    pod = _pod({"requests": {"cpu": "8", "memory": "16Gi"},
                "limits": {"cpu": "8", "memory": "16Gi"}})
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8", "memory": "8Gi"},
                                                 "limits": {"cpu": "8", "memory": "8Gi"}}
    return fc, ns, pod


def test_pod_level_cpu_is_rounded_to_a_block_the_kubelet_pins():
    # server 8 + istio-proxy 500m need 8500m; with PodLevelResourceManagers the kubelet
    # pins the pod-level cpu as one block of whole CPUs (whole cores under full-pcpus-only):
    # 10, not 8500m, which would run in the shared pool
    code, results, items = render(*_istio_pod_of_8500m({}))
    assert code == 0, errors(results)
    (out,) = [i for i in items if i["kind"] == "Pod"]
    assert out["spec"]["resources"]["requests"]["cpu"] == "10"
    assert out["spec"]["resources"]["limits"]["cpu"] == "10"
    assert ("info", "pod-level requests.cpu 8 -> 10 (8500m rounded up to 10: the kubelet pins "
            "the pod's pod-level cpu as one block only in whole CPUs, under full-pcpus-only "
            "whole cores of 2 threads): with pod-level resources the pod's QoS comes from "
            "them alone, and Guaranteed needs requests == limits") in results


@pytest.mark.parametrize("rounding", ["up", "down", "error", "keep"])
def test_the_pod_level_block_is_rounded_as_cpu_rounding_rounds_a_container(rounding):
    # cpuRounding error or keep leaves the fractional pod-level cpu as the containers need
    # it, so the verdict says the pod is not pinned; up and down round up, the pod-level
    # cpu covering the containers'
    code, results, _ = render(*_istio_pod_of_8500m({"cpuRounding": rounding}))
    said = [m for s, m in results if m.startswith("pod-level requests.cpu 8 -> ")]
    if rounding in ("up", "down"):
        assert code == 0 and said[0].startswith("pod-level requests.cpu 8 -> 10 "), results
    else:
        assert code == 1 and said == []
        assert [m for m in errors(results) if m.startswith(
            "the pod-level cpu request is no whole number")], errors(results)
