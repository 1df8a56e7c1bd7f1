"""Topology from an lscpu paste (`lscpu -p=CPU,CORE,SOCKET,NODE`)."""
import pytest

from krm_fn import config
from krm_fn.config import ConfigError
from krm_fn.node import plan as node_plan
from krm_fn.node.topology import Topology, from_lscpu, reserve_cores
from krm_fn.results import Ref

# A 2-socket machine, 4 cores per socket, SMT 2, Linux x86 numbering (siblings i and i+8),
# as `lscpu -p=CPU,CORE,SOCKET,NODE` prints it.
TWO_SOCKET = """\
# The following is the parsable format, which can be fed to other
# programs. Each different item in every column has an unique ID
# starting usually from zero.
# CPU,Core,Socket,Node
0,0,0,0
1,1,0,0
2,2,0,0
3,3,0,0
4,4,1,1
5,5,1,1
6,6,1,1
7,7,1,1
8,0,0,0
9,1,0,0
10,2,0,0
11,3,0,0
12,4,1,1
13,5,1,1
14,6,1,1
15,7,1,1
"""


def test_two_socket_smt_paste():
    t = from_lscpu(TWO_SOCKET)
    assert (t.total_cpus, t.total_cores, t.numa_nodes, t.threads_per_core) == (16, 8, 2, 2)
    assert t.siblings_of(5) == [5, 13]
    assert t.cores_of_numa(1) == [4, 5, 6, 7]
    assert reserve_cores(t, 2, spread=False) == [0, 1, 8, 9]
    assert reserve_cores(t, 2, spread=True) == [0, 4, 8, 12]
    # the table gives the same answers as the counts for a regular machine
    counted = Topology(2, 1, 4, 2, "split")
    assert [tuple(c) for c in t.cpus()] == [tuple(c) for c in counted.cpus()]


def test_irregular_numbering_is_followed_exactly():
    # cores numbered with gaps and siblings adjacent: the paste decides
    text = "0,0,0,0\n1,0,0,0\n2,8,0,0\n3,8,0,0\n4,16,0,1\n5,16,0,1\n"
    t = from_lscpu(text)
    assert t.siblings_of(8) == [2, 3]
    assert reserve_cores(t, 1, spread=True) == [0, 1]
    assert reserve_cores(t, 2, spread=True) == [0, 1, 4, 5]


def test_empty_node_field_means_numa_0():
    assert from_lscpu("0,0,0,\n1,0,0,\n").numa_nodes == 1


@pytest.mark.parametrize("text,message", [
    ("", "has no CPU lines"),
    ("0,0,0\n", "lscpu line 1: expected 4 fields"),
    ("0,0,0,0\nx,1,0,0\n", "lscpu line 2: fields must be whole numbers"),
    ("0,0,0,0\n0,1,0,0\n", "lscpu line 2: CPU 0 is listed twice"),
    ("0,0,0,0\n1,0,1,0\n", "lscpu line 2: core 0 is listed on socket/NUMA node (0, 0) and (1, 0)"),
    ("99999,0,0,0\n", "CPU 99999 is out of range"),
])
def test_strict_parse(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_lscpu(text)


def test_config_error_names_the_field():
    with pytest.raises(ConfigError) as e:
        config.load({"kind": "ConfigMap", "data": {"lscpu": "0,0,0\n"}})
    assert e.value.path == "data.lscpu"
    assert "expected 4 fields" in e.value.message


def test_plan_uses_the_paste():
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "spec": {"nodePools": [{"name": "p", "topology": {"lscpu": TWO_SOCKET}}]}})
    plan, results = node_plan.build(cfg.nodePools[0], (1, 35), Ref("v1", "ConfigMap", "x"))
    assert plan.kubelet["reservedSystemCPUs"] == "0-1,8-9"
    assert plan.exclusive_cpus == 12
    assert [r for r in results if r.severity == "error"] == []
