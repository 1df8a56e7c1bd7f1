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


@pytest.fixture(scope="session")
def harnesses():
    """{(1, minor): runner.Harness} for every minor the harness is built for."""
    runner.require_go()
    built = {tuple(map(int, m.split("."))): runner.Harness(m) for m in runner.releases()}
    yield built
    for h in built.values():
        h.close()


def compare(harnesses, node, pods, repeat) -> None:
    """Assert krm-fn's model and the kubelet agree on `pods` (then `repeat` copies of the
    last) arriving on an empty node of `node`'s pool."""
    got = differential.kubelet(harnesses[node.version], node, pods, repeat)
    if "startError" in got:
        from krm_fn.node import kubelet_check
        found = [f for f in kubelet_check.check(node.kubelet, node.version)
                 if f.severity == "error"]
        assert found, (f"the kubelet {node.version} does not start: {got['startError']}; "
                       f"krm-fn's kubelet_check finds no error in {node.kubelet} "
                       f"(KRM_FN_DIFF_SEED={SEED})")
        return
    want = differential.model(node, pods, repeat)
    assert want == got, (f"krm-fn (left) and the kubelet (right) differ "
                         f"(KRM_FN_DIFF_SEED={SEED})")


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@seed(SEED)
@given(cases.case())
def test_generated(harnesses, case):
    compare(harnesses, *case)


def _node(**kubelet):
    from tests.admission.kit import node
    kubelet.setdefault("kubeReserved", {"memory": "256Mi"})
    return node(**kubelet)


def _regressions() -> dict:
    """Disagreements the harness found, by name: (node, pods, repeat)."""
    from krm_fn.admission.model import APP, SIDECAR
    from tests.admission.kit import GI, MI, ctr, pod
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
    return {
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
    }


REGRESSIONS = _regressions()


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
    from krm_fn.pipeline import load
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
            node = run.nodes[names.index(plan.pool)]
            for i, (pod, verdict) in enumerate(judged):
                out.append(pytest.param(case, pod, verdict, node,
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
    got = differential.kubelet(harnesses[node.version], node, [pod], 400)
    assert "startError" not in got, f"{case}: the kubelet does not start: {got}"
    compare(harnesses, node, [pod], 400)
    first = got["pods"][-1]
    said = {"admitted": bool(verdict.exclusive) or not first["exclusive"],
            "exclusive": dict(verdict.exclusive), "numa": {k: list(v) for k, v in verdict.numa_of}}
    assert said == {k: first[k] for k in said}
    if verdict.fit is not None and first["admitted"]:
        assert verdict.fit == 1 + got["copies"]


def test_docs_name_every_deliberate_coarseness():
    """docs/verdict.md lists COARSER as it is (one line each)."""
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "verdict.md").read_text()
    for key, why in differential.COARSER.items():
        assert f"- `{key}`: {why}." in text, key
