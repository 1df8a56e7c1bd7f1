"""LimitRange min / max / maxLimitRequestRatio (krm_fn/admission/limitrange.py `refused`)
against the real API server's LimitRanger (plugin/pkg/admission/limitranger/admission.go
PodValidateLimitFunc): generated LimitRanges of type Container and Pod over cpu, memory,
ephemeral-storage, huge pages and an extended resource, and generated pods (init
containers, sidecars, pod-level cpu and memory) in a fresh namespace each; the constraints
the API server names as broken must be exactly krm-fn's (resource, kind, and which check),
counted per pod. Seed KRM_FN_DIFF_SEED (default 7311)."""
from __future__ import annotations

import os
import random
import re
from collections import Counter

import pytest

from krm_fn.admission import limitrange
from krm_fn.admission.build import requests_limits
from krm_fn.admission.model import APP, INIT, SIDECAR, AdmittedPod, Container
from krm_fn.results import Ref

SEED = int(os.environ.get("KRM_FN_DIFF_SEED", "7311"))
CASES = int(os.environ.get("KRM_FN_DIFF_EXAMPLES", "40"))

_RES = {"cpu": ("500m", "1", "2", "4"), "memory": ("512Mi", "1Gi", "2Gi", "4Gi"),
        "ephemeral-storage": ("1Gi", "2Gi", "4Gi"), "hugepages-2Mi": ("2Mi", "4Mi", "8Mi"),
        "example.com/foo": ("1", "2", "3")}
# the check a message names: (minimum|maximum|ratio, resource, Container|Pod, what failed)
_MESSAGE = re.compile(r"(minimum|maximum) (\S+) usage per (Container|Pod) is \S+?"
                      r"(?:, but (request|limit) is|\.  No (request|limit) is specified)"
                      r"|([\w./-]+) max limit to request ratio per (Container|Pod) is \S+, but "
                      r"(provided ratio|no request|no limit)")


def _limit_range(rng: random.Random) -> dict:
    items = []
    for kind in ("Container", "Pod"):
        if rng.random() < 0.6:
            item: dict = {"type": kind}
            for key in ("min", "max"):
                bound = {r: rng.choice(v) for r, v in _RES.items() if rng.random() < 0.3}
                if bound:
                    item[key] = bound
            for r in set(item.get("min", {})) & set(item.get("max", {})):
                low, high = sorted((item["min"][r], item["max"][r]), key=_size)
                item["min"][r], item["max"][r] = low, high     # the API refuses min > max
            if rng.random() < 0.2:
                item["maxLimitRequestRatio"] = {rng.choice(("cpu", "memory")): "2"}
            if len(item) > 1:
                items.append(item)
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": items or [{"type": "Container", "max": {"cpu": "2"}}]}}


def _box(rng: random.Random) -> dict:
    """Valid container resources: requests at most limits, huge pages and the extended
    resource with request == limit, always some cpu and memory."""
    req, lim = {}, {}
    for r, values in _RES.items():
        if r in ("cpu", "memory") or rng.random() < 0.3:
            a, b = sorted((rng.choice(values), rng.choice(values)), key=_size)
            if r in ("hugepages-2Mi", "example.com/foo"):
                a = b
            if r == "cpu" or rng.random() < 0.8:
                req[r] = a
            if rng.random() < 0.7 or r in ("hugepages-2Mi", "example.com/foo"):
                lim[r] = b
    return {"requests": req, "limits": lim}


def _size(text: str) -> float:
    from krm_fn import quantity
    return quantity.parse(text).nanos


def _pod(rng: random.Random, k: int) -> dict:
    spec: dict = {"containers": [{"name": f"c{i}", "image": "srv:1", "resources": _box(rng)}
                                 for i in range(rng.randint(1, 2))]}
    if rng.random() < 0.4:
        spec["initContainers"] = [
            {"name": "i0", "image": "srv:1", "resources": _box(rng),
             **({"restartPolicy": "Always"} if rng.random() < 0.5 else {})}]
    if rng.random() < 0.3:         # pod-level cpu and memory covering the containers
        level = {"cpu": "16", "memory": "32Gi"}
        spec["resources"] = {"requests": dict(level), "limits": dict(level)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{k}"}, "spec": spec}


def _model(pod: dict, lrs: list) -> AdmittedPod:
    """The admission model krm-fn builds: LimitRange defaults set, pod-level resources."""
    spec = pod["spec"]
    own = [Container(c["name"], SIDECAR if c.get("restartPolicy") == "Always" else INIT,
                     *requests_limits(c["resources"])) for c in spec.get("initContainers", [])]
    own += [Container(c["name"], APP, *requests_limits(c["resources"]))
            for c in spec["containers"]]
    own = limitrange.with_defaults(own, limitrange.defaults(lrs))
    level = requests_limits(spec["resources"]) if "resources" in spec else (None, None)
    return AdmittedPod(Ref("v1", "Pod", pod["metadata"]["name"], "x"), "spec", tuple(own),
                       *level)


def _checks(texts) -> Counter:
    """The checks named in the messages `texts` (each said once: the API server's message
    lists an error that several containers break alike once, utilerrors.NewAggregate)."""
    return Counter(m.group(0).split(" is ")[0] + "|" + (m.group(4) or m.group(5) or
                                                        m.group(8) or "")
                   for text in set(texts) for m in _MESSAGE.finditer(text))


def _split(message: str) -> list:
    """The errors of the API server's message `pods "p" is forbidden: [a, b]` (or one)."""
    body = message.split(" is forbidden: ", 1)[-1].strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return re.split(r", (?=(?:minimum|maximum) |[\w./-]+ max limit to request ratio)", body)


_QUOTED = re.compile(r'refuses [^"]*: "(.*?)"; the API server refuses the pod')


def test_limitrange_checks_against_the_api_server(controlplane):
    from tests.controlplane.cluster import wait
    rng = random.Random(SEED)
    wrong, refused, invalid = [], 0, 0
    for k in range(CASES):
        lr, pods = _limit_range(rng), [_pod(rng, j) for j in range(4)]
        ns = controlplane.pod_namespace(f"lr-validate-{SEED}-{k}")
        status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/limitranges", lr)
        if status == 422:       # e.g. a ratio above max / min: the API server refuses it
            controlplane.request("DELETE", f"/api/v1/namespaces/{ns}")
            continue
        assert status == 201, got.get("message")
        probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
                 "spec": {"containers": [{"name": "c", "image": "srv:1"}]}}

        def seen():         # the LimitRanger's informer has the LimitRange
            status, got = controlplane.request(
                "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", probe)
            return status != 201 or "kubernetes.io/limit-ranger" in (
                got["metadata"].get("annotations") or {})
        wait("the LimitRange in the LimitRanger", seen)
        for pod in pods:
            status, got = controlplane.request(
                "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
            if status == 422:
                # invalid before the LimitRanger validates (a LimitRange default limit
                # below the container's request): krm-fn's API validation says that
                invalid += 1
                continue
            assert status in (201, 403), got
            api = Counter() if status == 201 else _checks(_split(got.get("message", "")))
            refused += bool(api)
            ours = _checks([_QUOTED.search(f.message).group(1) for f in
                            limitrange.refused(_model(pod, [lr]), [lr])])
            if api != ours:
                wrong.append((lr["spec"], pod["spec"], dict(api), dict(ours),
                              got.get("message")))
        controlplane.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert not wrong, (f"KRM_FN_DIFF_SEED={SEED}", wrong[:3])
    # both outcomes reached, at most half of the pods lost to validation
    compared = CASES * 4 - invalid
    assert compared * 9 // 10 > refused > compared // 5 and invalid < CASES * 2, (refused,
                                                                                invalid)


@pytest.mark.parametrize("lr_ns,dep_ns", [(None, "default"), ("default", None), (None, None),
                                          ("default", "default"), (None, "other")])
def test_a_limitrange_without_a_namespace_or_of_a_workload_without_one_counts(lr_ns, dep_ns):
    """An object without metadata.namespace lands where the tool that applies the render
    puts it (`kubectl apply` without -n: the context's namespace, `default`), so a
    LimitRange and a workload of which one names no namespace may share one: the API server
    refuses every pod there, and krm-fn fails closed, as for an HPA (model.same_namespace).
    Only two different namespaces, both written, keep them apart."""
    from tests.test_verdict import config, deployment, render
    lr = {"apiVersion": "v1", "kind": "LimitRange",
          "metadata": {"name": "cap", **({"namespace": lr_ns} if lr_ns else {})},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}
    dep = deployment(namespace=dep_ns)
    code, results, _ = render(config(), lr, dep)
    said = [m for s, m in results if s == "error" and m.startswith("LimitRange cap ")]
    assert code == 1 and len(said) == 1, results
    assert "\"maximum cpu usage per Container is 2, but limit is 4\"" in said[0]
    if bool(lr_ns) != bool(dep_ns):
        assert "(when the render is applied there: " in said[0]


def test_limitranges_of_two_written_namespaces_stay_apart():
    from tests.test_verdict import config, deployment, render
    lr = {"apiVersion": "v1", "kind": "LimitRange",
          "metadata": {"name": "cap", "namespace": "default"},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}
    dep = deployment(namespace="other")
    code, results, _ = render(config(), lr, dep)
    assert code == 0, [m for s, m in results if s == "error"]


# bounds written in other Formats than the canonical DecimalSI: the API server's message
# shows each as it stores it (Quantity.String(): `1e9`, `500e-3`, `1500e-3`, `1G`)
SPELLED = [
    ({"type": "Container", "min": {"memory": "1e9"}},
     "minimum memory usage per Container is 1e9, but request is 512Mi"),
    ({"type": "Container", "max": {"cpu": "5E-1"}},
     "maximum cpu usage per Container is 500e-3, but limit is 1"),
    ({"type": "Container", "maxLimitRequestRatio": {"cpu": "15e-1"}},
     "cpu max limit to request ratio per Container is 1500e-3, but provided ratio is "
     "2.000000"),
    ({"type": "Container", "min": {"memory": "1G"}},
     "minimum memory usage per Container is 1G, but request is 512Mi"),
]
_SPELLED_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "srv:1", "resources": {
                    "requests": {"cpu": "500m", "memory": "512Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"}}}]}}


def test_limitrange_bounds_are_shown_as_stored():
    for item, want in SPELLED:
        lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
              "spec": {"limits": [item]}}
        said = [_QUOTED.search(f.message).group(1) for f in
                limitrange.refused(_model(_SPELLED_POD, [lr]), [lr])]
        assert said == [want], (item, said)


def test_limitrange_bounds_are_shown_as_the_api_server_shows_them(controlplane):
    from tests.controlplane.cluster import wait
    for k, (item, want) in enumerate(SPELLED):
        ns = controlplane.pod_namespace(f"lr-spelled-{k}")
        lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
              "spec": {"limits": [item]}}
        status, got = controlplane.request("POST", f"/api/v1/namespaces/{ns}/limitranges", lr)
        assert status == 201, got

        def refused():
            status, got = controlplane.request(
                "POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", _SPELLED_POD)
            return got.get("message") if status == 403 else None
        wait("the LimitRange in the LimitRanger", refused)
        assert _split(refused()) == [want]
        controlplane.request("DELETE", f"/api/v1/namespaces/{ns}")
