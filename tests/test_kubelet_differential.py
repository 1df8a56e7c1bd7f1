"""krm-fn's kubelet model judged by the kubelet's own code (issue #30, docs/verdict.md
"Checked against the kubelet's code").

The same node and pods go through krm-fn's model (capacity.Packer, topology.admit) and
through tests/harness (the Topology, CPU and Memory Managers and the resource predicate of
k8s.io/kubernetes at the release of the node's minor), and the outcomes must be equal
(tests/harness/differential.py; what is deliberately not compared is named there, COARSER).

- test_generated: hypothesis cases (tests/harness/cases.py); KRM_FN_DIFF_EXAMPLES of them
  (default 2000), seed KRM_FN_DIFF_SEED (default: random, printed in the report header and
  in every failure); a failure shows hypothesis's shrunk counterexample.
- test_regression: each disagreement the harness found, kept by name.
- test_golden_verdicts: every pod judged in the golden cases and examples, alone and
  replicated until refused, against its verdict's exclusive CPUs, NUMA nodes and fit.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, seed, settings

from tests.harness import cases, differential, runner
from tests.harness.seed import EXAMPLES, SEED


def compare(harnesses, node, pods, repeat, open_ok: bool = False) -> None:
    """Assert krm-fn's model and the kubelet agree on `pods` (then `repeat` copies of the
    last) arriving on an empty node of `node`'s pool. `open_ok`: a difference that falls
    under an OPEN entry (tests/harness/differential.py) is counted and warned about
    instead."""
    got = differential.kubelet(harnesses[node.version], node, pods, repeat)
    if "startError" in got:
        from krm_fn.node import kubelet_check
        memory = sum(m.get("memory", 0) for m in node.numa_memory.values()) or None
        found = [f for f in kubelet_check.check(node.kubelet, node.version, memory,
                                                len(node.cpus))
                 if f.severity == "error"]
        assert found, (f"the kubelet {node.version} does not start: {got['startError']}; "
                       f"krm-fn's kubelet_check finds no error in {node.kubelet} "
                       f"(KRM_FN_DIFF_SEED={SEED})")
        return
    want = differential.model(node, pods, repeat)
    if want != got and open_ok:
        kind = differential.open_kind(node, pods)
        if kind is not None:
            return _open(kind, f"krm-fn {want} != kubelet {got}")
    assert want == got, (f"krm-fn (left) and the kubelet (right) differ "
                         f"(KRM_FN_DIFF_SEED={SEED})")


OPEN_SEEN: dict = {}


def _open(kind: str, detail: str) -> None:
    """Count a known open disagreement (differential.OPEN) and warn about its first case."""
    import warnings
    OPEN_SEEN[kind] = OPEN_SEEN.get(kind, 0) + 1
    if OPEN_SEEN[kind] == 1:
        warnings.warn(f"open disagreement {kind} (KRM_FN_DIFF_SEED={SEED}): {detail[:2000]}")


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@seed(SEED)
@given(cases.case())
def test_generated(harnesses, case):
    compare(harnesses, *case, open_ok=True)


def _node(**kubelet):
    from tests.admission.kit import node
    kubelet.setdefault("kubeReserved", {"memory": "256Mi"})
    return node(**kubelet)


def _regressions() -> dict:
    """Disagreements the harness found, by name: (node, pods, repeat)."""
    from tests.admission.kit import GI, MI, cores, ctr, pod
    one_cpu_2mi = pod(ctr("app0", 1, 1 / 16, **{"hugepages-2Mi": 4 * MI}))
    static_memory = dict(memoryManagerPolicy="Static", kubeReserved={"memory": "500Mi"},
                         systemReserved={"memory": "524Mi"},
                         evictionHard={"memory.available": "100Mi"},
                         reservedMemory=[{"numaNode": 0, "limits": {"memory": "1124Mi"}}])
    numa_mem = {0: {"memory": 96 * GI, "hugepages-1Gi": 8 * GI},
                1: {"memory": 96 * GI, "hugepages-1Gi": 8 * GI}}
    from krm_fn.admission.model import NodeModel
    from krm_fn.node.topology import Topology
    four_numa = NodeModel(
        "pool", {}, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,1",
                     "topologyManagerPolicy": "restricted", "topologyManagerScope": "container",
                     "kubeReserved": {"cpu": "1", "memory": "256Mi"},
                     "systemReserved": {"memory": "500Mi"},
                     "evictionHard": {"memory.available": "100Mi"},
                     "memoryManagerPolicy": "Static",
                     "reservedMemory": [{"numaNode": 0, "limits": {"memory": "400Mi"}},
                                        {"numaNode": 3, "limits": {"memory": "456Mi"}}]},
        (1, 35), tuple(Topology(2, 2, 8, 2, "adjacent").cpus()), frozenset({0, 1}),
        {0: {"memory": 16 * GI}, 1: {"memory": 32 * GI}, 2: {"memory": 32 * GI},
         3: {"memory": 32 * GI}})
    two_numa_2mi_on_1 = _node(
        sockets=2, cores=2, threads=1, reservedSystemCPUs="0", reserved={0},
        version=(1, 37), topologyManagerPolicy="best-effort", topologyManagerScope="pod",
        memoryManagerPolicy="Static", systemReserved={"memory": "256Mi"},
        evictionHard={"memory.available": "100Mi"},
        reservedMemory=[{"numaNode": 1, "limits": {"memory": "612Mi"}}],
        numa_memory={0: {"memory": 8 * GI}, 1: {"memory": 8 * GI, "hugepages-2Mi": 512 * MI}})
    four_numa_2mi_on_3 = NodeModel(
        "pool", {}, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                     "topologyManagerPolicy": "best-effort", "topologyManagerScope": "pod",
                     "systemReserved": {"memory": "256Mi"}, "kubeReserved": {"memory": "256Mi"},
                     "evictionHard": {"memory.available": "100Mi"},
                     "memoryManagerPolicy": "Static",
                     "reservedMemory": [{"numaNode": 3, "limits": {"memory": "612Mi"}}]},
        (1, 35), tuple(Topology(4, 1, 2, 2).cpus()), frozenset({0}),
        {0: {"memory": 8 * GI}, 1: {"memory": 64 * GI}, 2: {"memory": 8 * GI},
         3: {"memory": 8 * GI, "hugepages-2Mi": 512 * MI}})
    small_2mi = {"hugepages-2Mi": 4 * MI}
    return {
        # pod scope: the pod's memory request holds only the resources its app containers
        # ask for (memorymanager/policy_static.go getPodRequestedResources loops over
        # those), so huge pages only an init container asks for do not steer the pod's
        # hint; the Topology Manager picks NUMA 0, the init container's Allocate cannot
        # extend it to a preferred hint and the kubelet refuses the pod; krm-fn counted
        # the huge pages in the pod's hints and admitted it on NUMA 1
        "memory-pod-request-app-resources-only": (
            two_numa_2mi_on_1,
            [pod(ctr("init0", 1, 1 / 16, role="init", **small_2mi), ctr("app0", 1, 1 / 16))],
            0),
        # an app container's memory after a 40Gi init container on the same NUMA nodes:
        # Allocate extends the hint when the free memory alone does not hold the request
        # (isAffinitySatisfyRequest does not count the init container's reusable memory,
        # calculateHints does), and the extension is not preferred; krm-fn counted the
        # reusable memory first and reported another refusal
        "memory-extension-counts-free-memory-only": (
            four_numa_2mi_on_3,
            [pod(ctr("app0", 1, 1 / 16, **small_2mi),
                 pod_requests={"cpu": cores(1), "memory": 2 * GI},
                 pod_limits={"cpu": cores(1), "memory": 2 * GI}),
             pod(ctr("app0", 1, 1 / 16, **small_2mi)),
             pod(ctr("init0", 1, 40, role="init"), ctr("app0", 1, 40),
                 ctr("app1", 4, 1 / 16, **small_2mi))], 0),
        # two containers of 40Gi each need two NUMA nodes; the second's hint from the
        # Topology Manager includes a NUMA node the first one's group holds with another:
        # Allocate refuses it (memorymanager/policy_static.go
        # isAffinityViolatingNUMAAllocations); krm-fn allocated it
        "memory-group-violation": (
            four_numa, [pod(ctr("init0", 0.25, 1 / 16, role="init"),
                            ctr("app0", 1.5, 40), ctr("app1", 1.5, 40))], 0),
        # memory that needs both NUMA nodes, CPUs that fit one: a merged hint is preferred
        # only when every provider's mask is the same (topologymanager/policy.go
        # mergePermutation), so restricted refuses it; krm-fn admitted it
        "merged-hint-preferred-only-for-equal-masks": (
            _node(topologyManagerPolicy="restricted", numa_memory=numa_mem,
                  reservedSystemCPUs="0,32", reserved={0, 32}, version=(1, 36),
                  **static_memory),
            [pod(ctr("server", 4, 100))], 0),
        # Memory Manager Static on a pool that does not describe memory: its hints still
        # decide restricted admission (3 CPUs need 2 NUMA nodes, the memory 1); krm-fn left
        # memory out of the merge
        "memory-hints-count-without-described-memory": (
            _node(sockets=2, numa_per_socket=4, cores=4, threads=2, version=(1, 35),
                  topologyManagerPolicy="restricted", reservedSystemCPUs="3,4,12",
                  reserved={3, 4, 12}, **static_memory),
            [pod(ctr("app0", 3, 0.5))], 0),
        # a pod asking for huge pages on a pool that declares none: OutOfhugepages-2Mi,
        # krm-fn admitted it
        "hugepages-not-declared": (
            _node(sockets=1, cores=1, threads=2, version=(1, 35), reservedSystemCPUs="0",
                  topologyManagerPolicy="none"),
            [one_cpu_2mi], 0),
        "hugepages-declared-run-out": (
            _node(sockets=1, cores=4, threads=1, version=(1, 37), reservedSystemCPUs="0",
                  numa_memory={0: {"memory": 16 * GI, "hugepages-2Mi": 8 * MI}},
                  allocatable={"hugepages-2Mi": 8 * MI}),
            [one_cpu_2mi], 8),
        # an empty pod-level `resources: {}`: BestEffort before 1.37 (ComputePodQOS takes
        # the pod-level branch whenever spec.resources is present, kubernetes#135082), so
        # nothing is pinned; from 1.37 PodLevelResourcesFixKubeletQOSClass ignores it
        "empty-pod-level-resources-1.35": (
            _node(sockets=1, cores=4, threads=1, version=(1, 35), reservedSystemCPUs="0",
                  reserved={0}),
            [pod(ctr("app0", 2, 1), pod_requests={}, pod_limits={})], 0),
        "empty-pod-level-resources-1.37": (
            _node(sockets=1, cores=4, threads=1, version=(1, 37), reservedSystemCPUs="0",
                  reserved={0}),
            [pod(ctr("app0", 2, 1), pod_requests={}, pod_limits={})], 0),
        # a cpu finer than 1m: 3999999999n is 4 exclusive CPUs (Value 4, MilliValue 4000:
        # isIntegralCPUAmount), and the resource fit counts 428500000n as 429m, so 6 fit
        # in 3 CPUs, not the 7 of its exact sum (2.9995)
        "fine-cpu-3999999999n-pins-four": (
            _node(sockets=1, cores=8, threads=1, version=(1, 37), reservedSystemCPUs="0",
                  reserved={0}),
            [pod(ctr("app0", "3999999999n", 1))], 1),
        "fine-cpu-counted-in-millicores": (
            _node(sockets=1, cores=4, threads=1, version=(1, 35), reservedSystemCPUs="0",
                  reserved={0}),
            [pod(ctr("app0", "428500000n", 0.25))], 10),
    }


def _cpu_assignment_regressions() -> dict:
    """Where krm-fn's CPU assignment took other CPUs than the kubelet's cpu_assignment.go:
    (node, pods, repeat), each pod's containers checked for their NUMA nodes."""
    from krm_fn.admission.model import NodeModel
    from krm_fn.node.topology import Cpu
    from tests.admission.kit import ctr, pod
    alpha = {"CPUManagerPolicyAlphaOptions": True}

    def cpu_node(**kubelet):
        kubelet.setdefault("topologyManagerPolicy", "none")
        return _node(**kubelet)

    def one(cpus):
        return pod(ctr("app0", cpus, 0.5))

    # two physical cores of 4 threads, each split over two NUMA nodes (2 threads on each)
    split_cores = tuple(Cpu(c, c // 4, 0, (c % 4) // 2) for c in range(8))
    distribute_align = {"distribute-cpus-across-numa": "true", "align-by-socket": "true"}
    return {
        # a socket holds 2 NUMA nodes (socketsFirst): whole sockets are taken before NUMA
        # nodes (takeFullFirstLevel), so 4 CPUs are socket 1, not NUMA 1 and 2 left beside
        # the 2 CPUs kubeReserved reserves (by takeByTopology: NUMA 0)
        "cpu-sockets-first-takes-a-whole-socket": (
            cpu_node(sockets=4, numa_per_socket=2, cores=4, threads=1, version=(1, 36),
                     kubeReserved={"cpu": "1500m", "memory": "256Mi"}),
            [one(4)], 0),
        # distribute-cpus-across-numa spreads 6 CPUs 3 + 3 over two NUMA nodes
        # (takeByTopologyNUMADistributed), so the next CPU is on NUMA 1; krm-fn packed them
        "cpu-distribute-across-numa-spreads-evenly": (
            cpu_node(sockets=2, cores=4, threads=1, version=(1, 35), reservedSystemCPUs="0",
                     reserved={0},
                     cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true"}),
            [one(6), one(1)], 0),
        # with full-pcpus-only the NUMA node is chosen by the standardDeviation balance of
        # what each would leave (NUMA 1), not as the fullest (NUMA 0)
        "cpu-distribute-across-numa-balance-in-core-groups": (
            cpu_node(sockets=1, numa_per_socket=4, cores=20, threads=2, version=(1, 35),
                     reservedSystemCPUs="0,20", reserved={0, 20},
                     cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true",
                                              "full-pcpus-only": "true"}),
            [one(6)], 0),
        # prefer-align-cpus-by-uncorecache: no uncore cache reported, each socket is one
        # (getUncoreCacheID); the lowest cores of socket 0 hold 1 free CPU, not 2, so the
        # 2 CPUs come from socket 1 (takePartialUncore); krm-fn packed them on NUMA 0
        "cpu-uncore-cache-is-the-socket": (
            cpu_node(sockets=2, cores=2, threads=2, version=(1, 37), reservedSystemCPUs="0",
                     reserved={0},
                     cpuManagerPolicyOptions={"prefer-align-cpus-by-uncorecache": "true"}),
            [one(2)], 0),
        # distribute-cpus-across-cores takes CPUs by id within the socket
        # (CPUSortingStrategySpread), one thread of cores on both NUMA nodes
        "cpu-distribute-across-cores-spreads": (
            cpu_node(sockets=1, numa_per_socket=2, cores=4, threads=2, version=(1, 36),
                     reservedSystemCPUs="0,4", reserved={0, 4}, featureGates=alpha,
                     cpuManagerPolicyOptions={"distribute-cpus-across-cores": "true"}),
            [one(2)], 0),
        # align-by-socket: the hint (NUMA 2) is widened to its socket (getAlignedCPUs),
        # whose fullest NUMA node is 3
        "cpu-align-by-socket-takes-from-the-socket": (
            cpu_node(sockets=2, numa_per_socket=2, cores=4, threads=1, version=(1, 36),
                     reservedSystemCPUs="0-3,6", reserved={0, 1, 2, 3, 6},
                     featureGates=alpha, topologyManagerPolicy="best-effort",
                     cpuManagerPolicyOptions={"align-by-socket": "true"}),
            [one(1)], 0),
        # 1.37's takeByTopologyNUMADistributed prefers NUMA nodes of one socket under
        # align-by-socket (2 and 3); 1.36 takes the first balanced pair (1 and 2)
        "cpu-distribute-align-by-socket-1.37": (
            cpu_node(sockets=2, numa_per_socket=2, cores=4, threads=1, version=(1, 37),
                     reservedSystemCPUs="0", reserved={0}, featureGates=alpha,
                     cpuManagerPolicyOptions=distribute_align),
            [one(4)], 0),
        "cpu-distribute-align-by-socket-1.36": (
            cpu_node(sockets=2, numa_per_socket=2, cores=4, threads=1, version=(1, 36),
                     reservedSystemCPUs="0", reserved={0}, featureGates=alpha,
                     cpuManagerPolicyOptions=distribute_align),
            [one(4)], 0),
        # iterateCombinations builds each combination by append on a shared backing
        # array, and bestCombo keeps a slice of it: the 4th NUMA node of the balanced
        # (1, 2, 3, 4) is overwritten by the later (1, 2, 3, 7) with the same first three,
        # so the kubelet takes NUMA nodes 1, 2, 3 and 7
        "cpu-distribute-across-numa-keeps-a-go-slice": (
            cpu_node(sockets=2, numa_per_socket=4, cores=4, threads=1, version=(1, 35),
                     reservedSystemCPUs="0", reserved={0},
                     cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true"}),
            [one(4)], 0),
        # cadvisor lists a core's threads per NUMA node, so a core split over two NUMA
        # nodes is two cores: CPUsPerCore is 8 CPUs / 4 cores = 2, and 2 CPUs are whole
        # cores under full-pcpus-only; krm-fn counted 4 threads per core (SMTAlignmentError)
        "cpu-cores-per-numa-node-as-cadvisor-reports": (
            NodeModel("pool", {}, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                                   "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
                                   "topologyManagerPolicy": "none",
                                   "kubeReserved": {"memory": "256Mi"}},
                      (1, 35), split_cores, frozenset({0})),
            [one(2)], 0),
    }


REGRESSIONS = {**_regressions(), **_cpu_assignment_regressions()}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(harnesses, name):
    compare(harnesses, *REGRESSIONS[name])


def _inputs():
    """(name, ResourceList text) of every golden case (tests/testdata) and of the kpt
    example (overlays/kpt: its manifests, pin.yaml as the function config)."""
    from pathlib import Path
    from tests.helpers import case_input, cases as golden_cases, config_section
    for case in golden_cases():
        yield case, case_input(case)
    import yaml
    kpt = Path(__file__).parent.parent / "overlays" / "kpt"
    items = [doc for p in sorted(kpt.glob("*.yaml")) if p.name != "pin.yaml"
             for doc in yaml.safe_load_all(p.read_text()) if doc]
    yield "overlays-kpt", (yaml.safe_dump({"apiVersion": "config.kubernetes.io/v1",
                                           "kind": "ResourceList", "items": items})
                           + config_section((kpt / "pin.yaml").read_text()))


def _golden_pods() -> list:
    """(case, AdmittedPod, PodVerdict, NodeModel) of every pod judged in the golden cases
    and the examples (_inputs)."""
    from krm_fn import pipeline, resourcelist
    from krm_fn.pipeline import daemons, load
    out = []
    for case, text in _inputs():
        try:
            doc = resourcelist.parse(text, require_resource_list=True)
        except Exception:
            continue                    # a bad-input case: nothing is judged
        run = load.prepare(doc.items, doc.function_config, [])
        if run is None:
            continue
        result = pipeline.transform(doc.items, doc.function_config,
                                    retyped=resourcelist.retyped(doc))
        names = [p.name for p in run.cfg.nodePools]
        for pool, plan, judged, _ in result.pools:
            # the node as the verdicts judged it: every DaemonSet's pods, a tuned
            # DaemonSet's own verdict without itself (pipeline/daemons.py)
            node = result.nodes[names.index(plan.pool)]
            for i, (pod, verdict) in enumerate(judged):
                out.append(pytest.param(case, pod, verdict, daemons.without(node, pod),
                                        id=f"{case}-{plan.pool}-{i}"))
    return out


@pytest.mark.parametrize("case,pod,verdict,node", _golden_pods())
def test_golden_verdicts(harnesses, case, pod, verdict, node):
    """The verdict of every golden pod (its exclusive CPUs, their NUMA nodes, the replicas
    per node) is what the kubelet does with the pod alone, then its replicas until one is
    refused."""
    assert node.version in harnesses, (
        f"{case}: kubernetesVersion {node.version[0]}.{node.version[1]} has no harness "
        f"(built: {', '.join(runner.releases())})")
    node, (pod,), taken = differential.without_devices(node, [pod])   # COARSER
    got = differential.kubelet(harnesses[node.version], node, [pod], 400)
    assert "startError" not in got, f"{case}: the kubelet does not start: {got}"
    compare(harnesses, node, [pod], 400)
    first = got["pods"][-1]
    said = {"admitted": bool(verdict.exclusive) or not first["exclusive"],
            "exclusive": dict(verdict.exclusive), "numa": {k: list(v) for k, v in verdict.numa_of}}
    assert said == {k: first[k] for k in said}
    if verdict.fit is not None and first["admitted"] and not taken:
        assert verdict.fit == 1 + got["copies"]


def test_docs_name_every_deliberate_coarseness_and_open_disagreement():
    """docs/verdict.md lists COARSER and OPEN as they are (one line each)."""
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "verdict.md").read_text()
    for key, why in differential.COARSER.items():
        assert f"- `{key}`: {why}." in text, key
    for key, (why, _) in differential.OPEN.items():
        assert f"- `{key}`: {why}." in text, key


# PodLevelResourceManagers on, topologyManagerScope pod: the kubelet takes a pod-level-
# resources pod's cpu as one block (policy_static.go allocatePodForAdd). krm-fn's packer
# still judges such a pod container by container (coarser on purpose: the verdict warns),
# but where the kubelet refuses the pod or pins none of its containers the verdict must
# be an error: pod-level cpu 5 under full-pcpus-only (SMTAlignmentError), 4500m (shared
# pool); 6 is admitted, the server's 4 CPUs and the other 2 for the 500m side container,
# and the verdict only warns.
@pytest.mark.parametrize("pod_cpu, kubelet_says, severity", [
    (5, "SMT Alignment Error: requested 5 cpus not multiple cpus per core = 2", "error"),
    (4.5, "no exclusive CPUs", "error"),
    (6, "admitted", "warning"),
])
def test_pod_level_resource_managers_against_the_kubelet(harnesses, pod_cpu, kubelet_says,
                                                         severity):
    from krm_fn.admission.kubelet import judge
    from krm_fn.quantity import NANO
    from tests.admission.kit import GI, ctr, pod
    node = _node(sockets=1, cores=8, threads=2, reservedSystemCPUs="0,1", reserved={0, 1},
                 version=(1, 37), topologyManagerPolicy="restricted",
                 topologyManagerScope="pod",
                 cpuManagerPolicyOptions={"full-pcpus-only": "true"},
                 featureGates={"PodLevelResourceManagers": True})
    level = {"cpu": int(pod_cpu * NANO), "memory": 5 * GI}
    p = pod(ctr("server", 4, 4), ctr("side", 0.5, 1 / 16, designated=False),
            pod_requests=level, pod_limits=dict(level))
    (got,) = differential.kubelet(harnesses[node.version], node, [p])["pods"]
    if kubelet_says == "admitted":
        # the side container runs on the rest of the pod's block
        assert got["admitted"] and got["exclusive"] == {"server": 4, "side": 2}, got
    elif kubelet_says == "no exclusive CPUs":
        assert got["admitted"] and got["exclusive"] == {}, got
    else:
        assert not got["admitted"] and kubelet_says in got["message"], got
    findings = [f for f in judge(p, node)[3] if f.rule == "cpumanager"
                and "PodLevelResourceManagers" in f.message]
    assert [f.severity for f in findings] == [severity], findings
