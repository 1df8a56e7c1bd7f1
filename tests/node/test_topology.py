from hypothesis import given, settings, strategies as st
import pytest

from krm_fn import config
from krm_fn.node.topology import (Cpu, Topology, format_cpuset, parse_cpuset,
                                  reserve_cores)

BIG_SPLIT = Topology(2, 1, 16, 2, "split")
BIG_ADJ = Topology(2, 1, 16, 2, "adjacent")
SMALL = Topology(1, 1, 4, 1, "split")


def test_from_config_defaults():
    t = Topology.from_config(config.load(None).nodePools[0].topology)
    assert t == BIG_SPLIT
    assert (t.total_cores, t.total_cpus, t.numa_nodes) == (32, 64, 2)


def test_split_numbering_2x16x2():
    cpus = BIG_SPLIT.cpus()
    assert len(cpus) == 64
    assert [c.cpu for c in cpus] == list(range(64))
    assert cpus[0] == Cpu(0, 0, 0, 0)
    assert cpus[15] == Cpu(15, 15, 0, 0)
    assert cpus[16] == Cpu(16, 16, 1, 1)
    assert cpus[31] == Cpu(31, 31, 1, 1)
    assert cpus[32] == Cpu(32, 0, 0, 0)
    assert cpus[48] == Cpu(48, 16, 1, 1)
    assert cpus[63] == Cpu(63, 31, 1, 1)
    assert BIG_SPLIT.siblings_of(0) == [0, 32]
    assert BIG_SPLIT.siblings_of(17) == [17, 49]


def test_adjacent_numbering_2x16x2():
    cpus = BIG_ADJ.cpus()
    assert [c.cpu for c in cpus] == list(range(64))
    assert cpus[0] == Cpu(0, 0, 0, 0)
    assert cpus[1] == Cpu(1, 0, 0, 0)
    assert cpus[2] == Cpu(2, 1, 0, 0)
    assert cpus[31] == Cpu(31, 15, 0, 0)
    assert cpus[32] == Cpu(32, 16, 1, 1)
    assert cpus[63] == Cpu(63, 31, 1, 1)
    assert BIG_ADJ.siblings_of(0) == [0, 1]
    assert BIG_ADJ.siblings_of(17) == [34, 35]


def test_small_1x4x1_numbering():
    for mode in ("split", "adjacent"):
        t = Topology(1, 1, 4, 1, mode)
        assert (t.total_cores, t.total_cpus, t.numa_nodes) == (4, 4, 1)
        assert t.cpus() == [Cpu(0, 0, 0, 0), Cpu(1, 1, 0, 0), Cpu(2, 2, 0, 0), Cpu(3, 3, 0, 0)]
        assert t.siblings_of(3) == [3]


def test_numa_per_socket():
    t = Topology(2, 2, 8, 2, "split")   # 4 NUMA nodes of 4 cores
    assert t.numa_nodes == 4
    assert [t.numa_of(c) for c in (0, 3, 4, 7, 8, 12, 15)] == [0, 0, 1, 1, 2, 3, 3]
    assert [t.socket_of(c) for c in (0, 7, 8, 15)] == [0, 0, 1, 1]
    assert t.cpus()[20] == Cpu(20, 4, 0, 1)
    assert t.cores_of_numa(2) == [8, 9, 10, 11]


def test_reserve_two_cores():
    assert format_cpuset(reserve_cores(BIG_SPLIT, 2, False)) == "0-1,32-33"
    assert format_cpuset(reserve_cores(BIG_ADJ, 2, False)) == "0-3"
    assert reserve_cores(BIG_SPLIT, 2, False) == [0, 1, 32, 33]
    assert reserve_cores(SMALL, 3, False) == [0, 1, 2]


def test_reserve_spread():
    assert reserve_cores(BIG_SPLIT, 4, True) == [0, 1, 16, 17, 32, 33, 48, 49]
    assert reserve_cores(BIG_ADJ, 4, True) == [0, 1, 2, 3, 32, 33, 34, 35]
    # remainder goes to the lowest NUMA ids: 3 cores over 2 nodes -> 2 on NUMA 0, 1 on NUMA 1
    assert reserve_cores(BIG_SPLIT, 3, True) == [0, 1, 16, 32, 33, 48]
    # 4 NUMA nodes of 4 cores, 6 cores -> 2, 2, 1, 1
    t = Topology(2, 2, 8, 1, "split")
    assert reserve_cores(t, 6, True) == [0, 1, 4, 5, 8, 12]
    # spread on a single NUMA node is the same as not spreading
    assert reserve_cores(SMALL, 2, True) == reserve_cores(SMALL, 2, False) == [0, 1]


def test_reserve_errors():
    with pytest.raises(ValueError, match="at least one must be left for pods"):
        reserve_cores(BIG_SPLIT, 32, False)
    with pytest.raises(ValueError, match="node has 4 physical cores"):
        reserve_cores(SMALL, 4, True)
    with pytest.raises(ValueError, match="non-zero reservation"):
        reserve_cores(SMALL, 0, False)
    with pytest.raises(ValueError, match="non-zero reservation"):
        reserve_cores(SMALL, -1, True)


def test_topology_errors():
    with pytest.raises(ValueError, match="siblings"):
        Topology(1, 1, 4, 2, "interleaved")
    with pytest.raises(ValueError, match="divide evenly"):
        Topology(1, 3, 4, 1)
    with pytest.raises(ValueError, match="sockets"):
        Topology(0, 1, 4, 1)
    with pytest.raises(ValueError, match="does not exist"):
        BIG_SPLIT.siblings_of(32)
    with pytest.raises(ValueError, match="does not exist"):
        BIG_SPLIT.siblings_of(-1)


@pytest.mark.parametrize("cpus,text", [
    ([0, 1, 2, 5, 32, 33], "0-2,5,32-33"),
    ([], ""),
    ([7], "7"),
    ([3, 1, 2], "1-3"),
    ([0, 2, 4], "0,2,4"),
    ([10, 11], "10-11"),
])
def test_format_cpuset(cpus, text):
    assert format_cpuset(cpus) == text
    assert parse_cpuset(text) == sorted(cpus)


def test_format_cpuset_errors():
    with pytest.raises(ValueError, match="duplicate"):
        format_cpuset([1, 1])
    with pytest.raises(ValueError, match=">= 0"):
        format_cpuset([-1])


def test_parse_cpuset():
    assert parse_cpuset("0-2,5") == [0, 1, 2, 5]
    assert parse_cpuset("5,0-2") == [0, 1, 2, 5]
    assert parse_cpuset("3-3") == [3]
    # the kubelet's k8s.io/utils/cpuset Parse takes a CPU listed twice
    assert parse_cpuset("0-2,1,2-3", repeats=True) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="out of range"):
        parse_cpuset("0,0,16384", repeats=True)


@pytest.mark.parametrize("text,msg", [
    ("2-0", "reversed range"),
    ("0-2,1", "listed twice"),
    ("0,0", "listed twice"),
    ("0,,1", "bad element ''"),
    ("0,", "bad element ''"),
    ("0 ,1", "bad element"),
    ("a", "bad element"),
    ("1-", "bad range"),
    ("-1", "bad range"),
    ("1-2-3", "bad range"),
    ("+1", "bad element"),
])
def test_parse_cpuset_errors(text, msg):
    with pytest.raises(ValueError, match=msg):
        parse_cpuset(text)


@pytest.mark.parametrize("text", ["0-99999999999", "99999999999", "16384", "0-16384",
                                  "1-" + "9" * 6000, "9" * 6000])
def test_parse_cpuset_bounds_ids_before_expanding(text):
    import time
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"CPU id .* is out of range \(CPU ids go up to 16383"):
        parse_cpuset(text)
    assert time.monotonic() - start < 1


def test_parse_cpuset_largest_ids():
    assert parse_cpuset("0-16383") == list(range(16384))
    assert parse_cpuset("0016383") == [16383]


def test_topology_larger_than_max_cpus_is_refused():
    assert Topology(2, 1, 1024, 8).total_cpus == 16384
    with pytest.raises(ValueError, match="at most 16384"):
        Topology(4, 1, 1024, 8)


def _cpus_one_by_one(t: Topology) -> list:
    """Topology.cpus() as it was before it computed the rows in cpu id order: every core's
    socket_of, numa_of and siblings_of, sorted."""
    return sorted(Cpu(cpu, core, t.socket_of(core), t.numa_of(core))
                  for core in range(t.total_cores) for cpu in t.siblings_of(core))


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 12), st.integers(1, 4),
       st.sampled_from(["split", "adjacent"]))
def test_cpus_are_each_cores_siblings_sorted_by_cpu_id(sockets, numas, cores_per_numa,
                                                        threads, siblings):
    t = Topology(sockets=sockets, numa_per_socket=numas, cores_per_socket=numas * cores_per_numa,
                 threads_per_core=threads, siblings=siblings)
    assert t.cpus() == _cpus_one_by_one(t)


def test_cpu_is_the_namedtuple_it_replaces():
    """topology.Cpu behaves as collections.namedtuple("Cpu", "cpu core socket numa"):
    fields, repr, equality and order with plain tuples, hashing, unpacking, pickling,
    pattern matching, read-only fields."""
    import pickle
    from collections import namedtuple
    from krm_fn.node.topology import Cpu
    ref = namedtuple("Cpu", ["cpu", "core", "socket", "numa"])
    a, b = Cpu(3, 1, 0, 1), ref(3, 1, 0, 1)
    assert (repr(a), a, hash(a), tuple(a)) == (repr(b), b, hash(b), tuple(b))
    assert (a.cpu, a.core, a.socket, a.numa) == (3, 1, 0, 1) == (b.cpu, b.core, b.socket, b.numa)
    assert Cpu._fields == ref._fields and Cpu.__match_args__ == ref.__match_args__
    assert sorted([Cpu(2, 0, 0, 0), Cpu(1, 5, 0, 0)]) == [(1, 5, 0, 0), (2, 0, 0, 0)]
    assert pickle.loads(pickle.dumps(a)) == a and type(pickle.loads(pickle.dumps(a))) is Cpu
    match a:
        case Cpu(cpu, core, socket, numa):
            assert (cpu, core, socket, numa) == (3, 1, 0, 1)
    with pytest.raises(AttributeError):
        a.core = 2
    with pytest.raises(TypeError):
        Cpu(1, 2, 3)


@pytest.mark.parametrize("text", ["", "0", "0-3", "0-1,4-5", "4-5,0-1", "0-1,2-3", "7,3,5",
                                  "0-16383", "16383", "1,2,3,10-12"])
def test_cpuset_ranges_name_the_cpus_parse_cpuset_names(text):
    from krm_fn.node.topology import parse_cpuset_ranges
    ranges = parse_cpuset_ranges(text)
    assert [c for lo, hi in ranges for c in range(lo, hi + 1)] == parse_cpuset(text)
    assert all(b[0] > a[1] + 1 for a, b in zip(ranges, ranges[1:]))     # merged


@pytest.mark.parametrize("text", ["a", "1-", "-1", "3-1", "0,0", "0-2,2-3", "16384", " 1",
                                  "1,", "9" * 5000, "0-" + "9" * 5000])
def test_cpuset_ranges_refuse_what_parse_cpuset_refuses(text):
    from krm_fn.node.topology import parse_cpuset_ranges
    with pytest.raises(ValueError) as mine:
        parse_cpuset_ranges(text)
    with pytest.raises(ValueError) as theirs:
        parse_cpuset(text)
    assert str(mine.value) == str(theirs.value)
