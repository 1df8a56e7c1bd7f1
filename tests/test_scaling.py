"""Work that grows with the input grows linearly (issue #16, fault 3): each case times the
same work at size N and 4N (best of five, in this process) and compares the two as a
ratio. Linear work gives about 4; quadratic about 16; the bound, 9, leaves room for a
loaded machine and still fails on quadratic growth. Each case takes a second or two.
Found quadratic before: the lscpu table (16k CPUs: ~10 s, read twice), 20 node pools of
16k CPUs (198 s), `krm-fn verify --root` with 20k NUMA nodes (69 s)."""
from __future__ import annotations

import gc
import time

from krm_fn import pipeline
from krm_fn.node import topology
from krm_fn.verify import checks
from krm_fn.verify import read as probe

RATIO = 9


def _best(fn, n: int) -> float:
    """Fastest of five runs of fn(n), the cyclic garbage collector paused (its passes over
    a growing heap are not the work being measured; the render pauses it too)."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            start = time.perf_counter()
            fn(n)
            times.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return min(times)


def _linear(fn, n: int) -> float:
    fn(n)                                   # warm caches and imports
    small, large = _best(fn, n), _best(fn, 4 * n)
    ratio = large / max(small, 1e-6)
    assert ratio < RATIO, f"{n} -> {4 * n}: {small:.3f} s -> {large:.3f} s ({ratio:.1f}x)"
    return ratio


def _lscpu(cpus: int, tag: str = "") -> str:
    """An lscpu -p paste: 2 sockets, one NUMA node each, SMT split, `cpus` CPUs."""
    cores = cpus // 2
    half = cores // 2
    return f"# {tag} {cpus}\n" + "\n".join(
        f"{c},{c % cores},{(c % cores) // half},{(c % cores) // half}" for c in range(cpus))


def test_lscpu_table_is_linear():
    def work(n):
        getattr(topology.from_lscpu, "cache_clear", lambda: None)()
        t = topology.Topology.from_config(type("NS", (), {"lscpu": _lscpu(n)})())
        for core in range(t.total_cores):
            t.siblings_of(core), t.numa_of(core), t.socket_of(core)
        for numa in range(t.numa_nodes):
            t.cores_of_numa(numa)
        assert t.total_cpus == n and t.threads_per_core == 2
    _linear(work, 2048)


def test_node_pools_are_linear_in_the_pools():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {
               "limits": {"cpu": "2", "memory": "1Gi"}}}]}}

    def work(n):
        getattr(topology.from_lscpu, "cache_clear", lambda: None)()
        pools = [{"name": f"p{i}", "nodeSelector": {"pool": f"p{i}"},
                  "topology": {"lscpu": _lscpu(512, f"pool {i}")}} for i in range(n)]
        fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
              "metadata": {"name": "t"}, "spec": {"nodePools": pools}}
        out = pipeline.transform([pod], fc)
        assert not out.has_errors, [r.message for r in out.results if r.severity == "error"]
    _linear(work, 3)


def test_verify_numa_nodes_are_linear():
    def work(n):
        p = probe.Probe(True, "/sys/fs/cgroup", True, f"0-{n - 1}", f"0-{n - 1}",
                        "max 100000", "max", (), {i: str(i) for i in range(n)},
                        {i: str(i) for i in range(n)}, {}, {}, 4096)
        rows = {r.check: r for r in checks.run(p, checks.Expected(cpus=n))}
        assert rows["NUMA nodes"].found.startswith(f"{n} (nodes 0,1,2,")
    _linear(work, 1000)


def test_config_lists_are_linear():
    from krm_fn.config.types import List

    def work(n):
        List(max_items=10 ** 6).convert([f"n{i}" for i in range(n)], "spec.selector.names",
                                        False)
    _linear(work, 2000)
