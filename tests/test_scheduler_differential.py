"""krm-fn's resource fit judged by the real kube-scheduler and the kubelet's allocatable
(issue #31 part 3, first slice; docs/verdict.md "Checked against a real control plane").

krm-fn counts how many pods fit on a node of a pool (admission/capacity.py Packer): the
resource fit (the pod's effective requests against node allocatable and maxPods), then the
kubelet's resource managers. The managers are judged by the kubelet's own code
(tests/test_kubelet_differential.py); this judges the rest, on the same generated cases
(tests/harness/cases.py: nodes of 1-8 NUMA nodes with reservations, memory, huge pages and
maxPods; pods with init containers, sidecars, pod-level resources, huge pages):

1. allocatable: krm-fn's capacity.allocatable(node) (cpu, memory when the pool describes
   it, huge pages) and the pods (maxPods, podsPerCore) equal what the kubelet's nodestatus
   setter computes for that node (the harness's `allocatable`);
2. placement: a Node with that allocatable is created in the real control plane
   (tests/controlplane), then the pool's DaemonSet pods, the pods and the copies of the last
   one, one by one, each waited for until the scheduler binds it or marks it Unschedulable:
   which pods are bound and, for the first that is not, the resource the scheduler names
   ("Insufficient cpu", "Too many pods", or a host port: "didn't have free ports", the
   NodePorts filter, which runs before the resource fit) must be what krm-fn's fit says.

Deliberately not compared here: the resource managers' refusals (the kubelet harness's
part; krm-fn's model runs with them off), and pods the API server refuses as invalid
(counted: `API_INVALID`; krm-fn's own checks of pod-level resources are tested elsewhere).
"""
from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, seed, settings, strategies as st

from krm_fn.admission import capacity
from tests.controlplane import placement
from tests.harness import cases, convert
from tests.harness.seed import SEED

EXAMPLES = int(os.environ.get("KRM_FN_SCHED_EXAMPLES", "60"))
MESSAGES: list = []     # the scheduler's messages, the last ones shown on a difference
API_INVALID: dict = {}


def _amount(resource: str, text: str):
    from krm_fn import quantity
    if resource == "cpu":
        return quantity.parse_cpu(text).nanos          # the model's units: nanocores, bytes
    return quantity.parse_memory(text).whole


def kubelet_allocatable(harness, node) -> dict:
    """{resource: amount} of the node's allocatable as the kubelet computes it."""
    got = harness.call("admit", convert.admit_input(node, [], 0))
    return got.get("allocatable"), got.get("startError")


def model_fit(node, pods: list, repeat: int, alloc: dict) -> dict:
    """krm-fn's resource fit: Packer on `node` with allocatable `alloc` and the resource
    managers off."""
    kubelet = {**(node.kubelet or {}), "cpuManagerPolicy": "none",
               "topologyManagerPolicy": "none", "memoryManagerPolicy": "None"}
    plain = node._replace(kubelet=kubelet, allocatable=alloc, daemons=())
    packer = capacity.Packer(plain)
    out = {"placed": [], "copies": 0, "stoppedBy": None}
    for p in list(node.daemons) + list(pods):
        ok = packer.place(p)
        out["placed"].append(ok if ok else _reason(packer.why))
    if repeat and pods:
        for _ in range(repeat):
            if not packer.place(pods[-1]):
                out["stoppedBy"] = _reason(packer.why)
                break
            out["copies"] += 1
    return out


def _reason(why: str) -> str:
    if why.startswith(("maxPods", "pods ")):      # maxPods, or podsPerCore x CPUs
        return "pods"
    if "(NodePorts: " in why:
        return "ports"
    if "(InterPodAffinity: " in why:
        return "antiaffinity"
    m = re.search(r"\(OutOf(\S+)\)$", why)
    assert m, why
    return m.group(1)


def scheduler_fit(cp, index: int, node, pods: list, repeat: int, alloc: dict) -> dict:
    """The same placement through the real scheduler."""
    case = placement.OneNode(cp, f"sched-{index}", alloc, dict(node.labels))
    try:
        out = {"placed": [], "copies": 0, "stoppedBy": None}
        listed = [(convert.pod(d, f"daemon-{i}"), f"daemon-{i}")
                  for i, d in enumerate(node.daemons)]
        listed += [(convert.pod(p, f"pod-{i}"), f"pod-{i}") for i, p in enumerate(pods)]
        for pod, name in listed:
            got = _decision(case.place(pod["spec"], name, pod["metadata"].get("labels")))
            if isinstance(got, str) and got.startswith("invalid: "):
                return {"invalid": got}
            out["placed"].append(got)
        if repeat and pods:
            last = convert.pod(pods[-1], "copy")
            for i in range(repeat):
                got = _decision(case.place(last["spec"], f"copy-{i}",
                                           last["metadata"].get("labels")))
                if got is not True:
                    out["stoppedBy"] = got
                    break
                out["copies"] += 1
        return out
    finally:
        case.close()


def _decision(got):
    """True (bound), "invalid: ..." (refused by the API server), else the first short
    resource the scheduler names (AssertionError when it names none: only resources can
    stop these pods)."""
    if got is True or got.startswith("invalid: "):
        return got
    MESSAGES.append(got)
    short = placement.first_short(got)
    assert short, got
    return short


COUNTER = [0]


def compare(controlplane, harnesses, node, pods, repeat) -> None:
    alloc_text, start_error = kubelet_allocatable(harnesses[node.version], node)
    if start_error:
        return                  # tests/test_kubelet_differential.py judges start errors
    kubelet = {k: _amount(k, v) for k, v in alloc_text.items()
               if k in ("cpu", "memory", "pods") or k.startswith("hugepages-")}
    ours = capacity.allocatable(node)
    assert ours["cpu"] == kubelet["cpu"], (ours, alloc_text, f"KRM_FN_DIFF_SEED={SEED}")
    if ours["memory"] is not None:
        assert ours["memory"] == kubelet["memory"], (ours, alloc_text)
    for res, v in kubelet.items():
        if res.startswith("hugepages-"):
            assert ours.get(res, 0) == v, (res, ours, alloc_text)
    assert capacity.pod_capacity(node)[0] == kubelet["pods"]     # maxPods, podsPerCore
    # the Node gets what the kubelet reports; memory AMPLE where the pool does not describe
    # it, as the harness's machine has (convert.UNDESCRIBED_MEMORY)
    COUNTER[0] += 1
    got = scheduler_fit(controlplane, COUNTER[0], node, pods, min(repeat, 24), alloc_text)
    if "invalid" in got:
        # only the pod-level resources the generator draws independently of the containers
        # (validatePodResourceConsistency: pod-level requests below the containers' sum);
        # krm-fn refuses pod-level resources on a pinned pod anyway (rule podlevel)
        assert "spec.resources." in got["invalid"], got["invalid"]
        API_INVALID[got["invalid"][:80]] = API_INVALID.get(got["invalid"][:80], 0) + 1
        return
    model_alloc = {**kubelet}
    want = model_fit(node, pods, min(repeat, 24), model_alloc)
    assert want == got, (MESSAGES[-3:], f"krm-fn (left) and the scheduler (right) differ "
                         f"(KRM_FN_DIFF_SEED={SEED})")


# host ports the generated pods and DaemonSet pods ask for: a few, so that they meet
# (0.0.0.0 and "" bind every address; another IP meets itself and those)
PORTS = (("TCP", "", 8080), ("UDP", "", 8080), ("TCP", "10.0.0.1", 8080),
         ("TCP", "0.0.0.0", 9100), ("SCTP", "", 9100))


# labels and required pod anti-affinity selectors the generated pods draw from, so that
# they select each other (every pod is in the one namespace of its case: terms without
# namespaces select that one, namespaceSelector {} every namespace)
LABELS = ({}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"})
SELECTORS = ({"matchLabels": {"app": "a"}},
             {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
             {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
             {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
             {})


@st.composite
def with_ports(draw) -> tuple:
    """cases.case() with host ports on one pod in three (the NodePorts filter) and labels
    and required pod anti-affinity on kubernetes.io/hostname on one in four
    (InterPodAffinity); the kubelet harness's cases stay without
    (tests/test_kubelet_differential.py)."""
    from krm_fn.admission import podaffinity
    node, pods, repeat = draw(cases.case())

    def ports() -> tuple:
        if draw(st.integers(0, 2)):
            return ()
        return tuple(draw(st.lists(st.sampled_from(PORTS), min_size=1, max_size=2,
                                   unique=True)))

    def placed(p):
        p = p._replace(host_ports=ports(), labels=draw(st.sampled_from(LABELS)),
                       namespace="default")
        if draw(st.integers(0, 3)):
            return p
        term = {"topologyKey": podaffinity.HOSTNAME,
                "labelSelector": draw(st.sampled_from(SELECTORS))}
        if draw(st.booleans()):
            term["namespaceSelector"] = {}
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                        [term]}}
        return p._replace(affinity=affinity, anti=podaffinity.terms(affinity, "default"))
    pods = [placed(p) for p in pods]
    node = node._replace(daemons=tuple(placed(d) for d in node.daemons))
    return node, pods, repeat


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@seed(SEED)
@given(with_ports())
def test_generated(controlplane, harnesses, case):
    compare(controlplane, harnesses, *case)
