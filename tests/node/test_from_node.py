"""Pool topology from a Node and from a NodeResourceTopology object
(spec.nodePools[].topology.fromNode / fromNodeResourceTopology, krm_fn/node/from_node.py)."""
import copy
from pathlib import Path

import yaml

from krm_fn.pipeline import transform
from krm_fn.results import ERROR, INFO, WARNING
from tests.helpers import default_selector

DATA = Path(__file__).parent / "data"
NODE = yaml.safe_load((DATA / "node.yaml").read_text())
NRT = yaml.safe_load((DATA / "nrt.yaml").read_text())
TYPED = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
         "metadata": {"name": "pin-inference"}}


def _run(topology: dict, items=()):
    fc = {**TYPED, "spec": {"nodePools": [{"name": "inference", "emit": "always",
                                           "topology": topology}]}}
    return transform([copy.deepcopy(i) for i in items], fc)


def _topology(out):
    [(pool, plan, _, _)] = out.pools
    t = pool.topology
    return ((t.sockets, t.numaNodesPerSocket, t.coresPerSocket, t.threadsPerCore),
            t.memory.whole if t.memory is not None else None, dict(t.numaMemory),
            dict(t.hugepages), plan.reserved_cpus, plan.exclusive_cpus)


def _infos(out):
    return [r.message for r in out.results
            if r.severity == INFO and r.path == "spec.nodePools[0].topology"]


def test_topology_from_a_node_object():
    out = _run({"fromNode": NODE})
    assert not out.has_errors
    assert _topology(out) == ((2, 1, 16, 2), 263921284 * 1024, {}, {"1Gi": "16Gi"},
                              [0, 1, 32, 33], 60)
    assert _infos(out) == [
        "node pool 'inference': topology: 64 CPUs from Node 'worker-1', read as 2 socket(s) "
        "x 16 cores x 2 threads (threads: its SMT label; sockets and NUMA nodes per socket: "
        "assumed from the topology, a Node has no NUMA layout)"]


def test_topology_from_a_node_without_smt():
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"]["feature.node.kubernetes.io/cpu-hardware_multithreading"] = "false"
    out = _run({"fromNode": node, "sockets": 1})
    assert _topology(out)[0] == (1, 1, 64, 1)


def test_topology_from_a_node_named_in_the_input():
    out = _run({"fromNode": "worker-1"}, [NODE])
    assert not out.has_errors and _topology(out)[0] == (2, 1, 16, 2)


def test_topology_from_a_node_resource_topology_object():
    out = _run({"fromNodeResourceTopology": NRT})
    assert not out.has_errors
    assert _topology(out) == ((2, 1, 16, 2), 135095123968 + 135291219968,
                              {"0": "131928832Ki", "1": "132120332Ki"}, {"1Gi": "16Gi"},
                              [0, 1, 32, 33], 60)
    assert _infos(out) == [
        "node pool 'inference': topology: 2 NUMA node(s) of 32 CPUs from the "
        "NodeResourceTopology, read as 2 socket(s) x 16 cores x 2 threads"]


def test_topology_from_a_node_resource_topology_in_the_input_with_its_node():
    out = _run({"fromNodeResourceTopology": "worker-1", "fromNode": "worker-1",
                "numaNodesPerSocket": 2}, [NRT, NODE])
    assert not out.has_errors
    assert _topology(out)[0] == (1, 2, 32, 2)


def test_explicit_memory_is_kept():
    out = _run({"fromNodeResourceTopology": NRT, "memory": "200Gi", "hugepages": {"1Gi": "4Gi"}})
    assert _topology(out)[1:4] == (200 * 2 ** 30, {"0": "131928832Ki", "1": "132120332Ki"},
                                   {"1Gi": "4Gi"})


def test_missing_input_item_is_a_config_error():
    out = _run({"fromNode": "worker-9"}, [NODE])
    [r] = [r for r in out.results if r.severity == ERROR]
    assert r.path == "spec.nodePools[0].topology.fromNode"
    assert r.message.startswith("invalid function config: no Node named 'worker-9' in the input")
    assert out.emitted == []


def test_node_and_nrt_that_disagree_are_an_error():
    node = copy.deepcopy(NODE)
    node["status"]["capacity"]["cpu"] = "48"
    out = _run({"fromNodeResourceTopology": NRT, "fromNode": node})
    [r] = [r for r in out.results if r.severity == ERROR]
    assert (r.path, r.message) == (
        "spec.nodePools[0].topology.fromNodeResourceTopology",
        "invalid function config: the NodeResourceTopology has 64 CPUs, the Node 48: they "
        "describe different nodes")


def test_uneven_numa_cpus_ask_for_lscpu():
    nrt = copy.deepcopy(NRT)
    nrt["zones"][1]["resources"][0]["capacity"] = "24"
    out = _run({"fromNodeResourceTopology": nrt})
    [r] = [r for r in out.results if r.severity == ERROR]
    assert r.message == ("invalid function config: NUMA nodes have different CPU counts "
                         "[24, 32]: give topology.lscpu for this node")


def _warnings(out):
    return [(r.path, r.message) for r in out.results if r.severity == WARNING
            and not default_selector(r.message)]


def test_node_without_the_pools_labels_is_a_warning():
    out = _run({"fromNode": NODE})
    assert _warnings(out) == [(
        "spec.nodePools[0].topology.fromNode",
        "node pool 'inference': Node 'worker-1' does not carry the pool's nodeSelector "
        "label(s) krm-fn.dev/cpu-pinning=true (it has none of them): the pool's pods are "
        "scheduled only on nodes with every label, so this Node is not one of the pool's "
        "nodes yet; label the pool's nodes (kubectl label node worker-1 "
        "krm-fn.dev/cpu-pinning=true) or give a Node of the pool")]


def test_node_with_the_pools_labels_has_no_warning():
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"]["krm-fn.dev/cpu-pinning"] = "true"
    out = _run({"fromNode": node})
    assert _warnings(out) == [] and not out.has_errors
    node["metadata"]["labels"]["krm-fn.dev/cpu-pinning"] = "false"
    [(_, message)] = _warnings(_run({"fromNode": node}))
    assert "(it has krm-fn.dev/cpu-pinning=false)" in message


def test_node_in_the_input_must_be_local_config():
    node = copy.deepcopy(NODE)
    del node["metadata"]["annotations"]
    out = _run({"fromNode": "worker-1"}, [node])
    [r] = [r for r in out.results if r.severity == ERROR]
    assert (r.path, r.message) == (
        "spec.nodePools[0].topology.fromNode",
        "invalid function config: the Node 'worker-1' in the input is not marked "
        "config.kubernetes.io/local-config: \"true\": it is written back to the output, and "
        "kubectl apply or a GitOps sync would apply it to the cluster; add the annotation "
        "(kustomize, kpt and krm-fn run --drop-local-config then leave it out of their "
        "output)")
    assert out.emitted == []
