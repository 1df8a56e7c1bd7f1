"""vLLM's own CPU binding code, at each release krm-fn's vllm.py RELEASES names (and the
newest checked), run in-process on what krm-fn writes: the statements of the CPU worker
(vllm/worker/cpu_worker.py, vllm/v1/worker/cpu_worker.py) that turn
VLLM_CPU_OMP_THREADS_BIND into each rank's CPU list, and from 0.20.0 the
OMPProcessManager of vllm/utils/ompmultiprocessing.py, are taken out with `ast` from the
sdist on PyPI (tests/engines/fetch.py) and executed with stubbed imports, once per rank.

Each rank must get at least one thread and all ranks together no more than the pinned
CPUs less the cores vLLM keeps for itself, which must be what krm-fn counted. A rank whose
value binds (not the no-binding one) would run one thread per CPU of its list
(csrc/cpu/utils.cpp init_cpu_threads_env: omp_set_num_threads(the list's size)); one that
does not bind runs OMP_NUM_THREADS threads.
"""
import ast
import contextlib
from collections.abc import Callable
import os
import textwrap
import types

import pytest

from tests.engines import fetch
from tests.helpers import env_of
from tests.test_engines import messages, res, run

REPO = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v"
# the releases of krm_fn/rules/engines/vllm.py RELEASES, 0.11.0 (the last `all` release)
# and the newest checked
VERSIONS = ("0.5.4", "0.9.1", "0.10.0", "0.10.2", "0.11.0", "0.11.1", "0.20.0", "0.21.0",
            "0.31.0", "0.34.0")
NO_OFF = ("0.20.0",)    # no value turns the binding off: krm-fn leaves auto (one rank only)
LAYOUTS = (  # (args, tp × pp, local data-parallel ranks, pinned CPUs)
    ([], 1, 1, 8),
    (["-tp", "2"], 2, 1, 8),
    (["-tp", "2", "-pp", "2"], 4, 1, 16),
    (["-tp", "4"], 4, 1, 8),
    (["-dp", "2"], 1, 2, 8),
    (["-tp", "2", "-dp", "2"], 2, 2, 12),
)


def _version(v: str) -> tuple:
    return tuple(int(x) for x in v.split("."))


class _Stop(Exception):
    """Raised by a stub past the statements under test."""


def _fail(*_a, **_k):
    raise AssertionError("vLLM took its automatic binding path")


# -- the worker's statements (before 0.20.0) --------------------------------------------------


def _worker_file(v: str) -> str:
    return "vllm/worker/cpu_worker.py" if _version(v) < (0, 9, 1) else \
        "vllm/v1/worker/cpu_worker.py"


def _block(src: str, target: str) -> list:
    """The statements from the assignment to `target` (a name) through the first `if`
    after it (the one that decides its value)."""
    for node in ast.walk(ast.parse(src)):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, st in enumerate(body):
                if isinstance(st, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == target for t in st.targets):
                    out = []
                    for nxt in body[i:]:
                        out.append(nxt)
                        if isinstance(nxt, ast.If):
                            return out
                    raise AssertionError(f"no if after the assignment to {target}")
    raise AssertionError(f"no assignment to {target} in the source")


def _compile(stmts: list, returns: str, params: str):
    code = "\n".join(ast.unparse(s) for s in stmts)
    text = f"def _f({params}):\n{textwrap.indent(code, '    ')}\n    return {returns}\n"
    ns: dict = {}
    exec(compile(text, "<vllm>", "exec"), ns)
    return ns["_f"]


def _platform_stubs():
    arch = types.SimpleNamespace(X86="x86", POWERPC="ppc", S390X="s390x", ARM="arm",
                                 RISCV="riscv")
    current = types.SimpleNamespace(get_cpu_architecture=lambda: arch.X86, is_cpu=lambda: True)
    return arch, current


def _worker_ranks(v: str, bind: str, world: int, dpl: int) -> list:
    """Each rank's (CPU list or the no-binding value, whether it binds), from the worker's
    own statements at `v`."""
    src = fetch.require("vllm", v, _worker_file(v))
    stmts = _block(src, "omp_cpuids")
    # the `if` that binds (before 0.9.1 in init_device, the list being made in __init__)
    call = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.If)
                and "local_omp_cpuid" in ast.unparse(n.test)
                and "init_cpu_threads_env" in ast.unparse(n))
    f = _compile(stmts, f"self.local_omp_cpuid, ({ast.unparse(call.test)})",
                 "self, rank, envs, platform, current_platform, CpuArchEnum")
    arch, current = _platform_stubs()
    envs = types.SimpleNamespace(VLLM_CPU_OMP_THREADS_BIND=bind)
    out = []
    for dp in range(dpl):
        for r in range(world):
            pc = types.SimpleNamespace(world_size=world, data_parallel_size_local=dpl,
                                       data_parallel_rank_local=dp if dpl > 1 else None)
            self = types.SimpleNamespace(rank=r, local_rank=r, parallel_config=pc,
                                         _get_autobind_cpu_ids=_fail,
                                         get_cpus_id_binding_based_on_numa_nodes=_fail)
            out.append(f(self, r, envs, types.SimpleNamespace(system=lambda: "Linux"),
                         current, arch))
    return out


def _worker_reserve(v: str, world: int, dpl: int) -> int:
    """The cores each rank's automatic binding keeps at `v` with VLLM_CPU_NUM_OF_RESERVED_CPU
    unset, times the ranks (each keeps them off its own CPU list)."""
    default = _env_default(v, "VLLM_CPU_NUM_OF_RESERVED_CPU")
    if default is not None:
        return default * world * dpl
    src = fetch.require("vllm", v, _worker_file(v))
    stmts = _block(src, "reserve_cpu_num")
    f = _compile(stmts, "reserve_cpu_num", "self, envs")
    pc = types.SimpleNamespace(world_size=world, data_parallel_size_local=dpl)
    per_rank = f(types.SimpleNamespace(parallel_config=pc),
                 types.SimpleNamespace(VLLM_CPU_NUM_OF_RESERVED_CPU=None))
    return per_rank * world * dpl


def _env_default(v: str, name: str):
    """The value vllm/envs.py at `v` gives `name` when it is not in the environment (0 when
    it has no such variable)."""
    tree = ast.parse(fetch.require("vllm", v, "vllm/envs.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, val in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == name:
                    fake_os = types.SimpleNamespace(environ={}, getenv=lambda n, d=None: d)
                    return eval(compile(ast.Expression(val), "<envs>", "eval"),
                                {"os": fake_os})()
    return 0


# -- OMPProcessManager (0.20.0 on) ------------------------------------------------------------


class CPU:
    """vllm/utils/cpu_resource_utils.py LogicalCPUInfo: one logical CPU."""

    def __init__(self, id: int, physical_core: int, numa_node: int):
        self.id, self.physical_core, self.numa_node = id, physical_core, numa_node

    def __repr__(self):
        return f"CPU({self.id}, {self.physical_core}, {self.numa_node})"


def pinned(cpus: int) -> list:
    """The cpuset the kubelet gives `cpus` exclusive CPUs under full-pcpus-only on a node
    with 2 threads per core, 32 cores on NUMA node 0 (siblings k and k + 32): whole cores
    from core 2 on (an odd count ends with one sibling)."""
    out = []
    for i in range(cpus):
        core = 2 + i // 2
        out.append(CPU(core + 32 * (i % 2), core, 0))
    return sorted(out, key=lambda x: x.id)


def _manager(v: str, bind: str, world: int, dp_rank, cpus: int = 0):
    """An OMPProcessManager of vllm/utils/ompmultiprocessing.py at `v` for one engine of
    `world` ranks, made by its own __init__ with VLLM_CPU_OMP_THREADS_BIND=`bind`, on the
    cpuset pinned(cpus)."""
    src = fetch.require("vllm", v, "vllm/utils/ompmultiprocessing.py")
    cls = next(n for n in ast.parse(src).body
               if isinstance(n, ast.ClassDef) and n.name == "OMPProcessManager")
    arch, current = _platform_stubs()
    logger = types.SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)
    ns = {"os": os, "contextmanager": contextlib.contextmanager, "Callable": Callable,
          "envs": types.SimpleNamespace(VLLM_CPU_OMP_THREADS_BIND=bind,
                                        VLLM_CPU_NUM_OF_RESERVED_CPU=None),
          "current_platform": current, "CpuArchEnum": arch, "logger": logger,
          "cr_utils": types.SimpleNamespace(get_visible_memory_node=lambda *a: [0],
                                            get_allowed_cpu_list=lambda: pinned(cpus),
                                            parse_id_list=_fail),
          "LogicalCPUInfo": CPU}
    exec(compile(ast.Module([cls], []), "<vllm>", "exec"), ns)
    pc = types.SimpleNamespace(local_world_size=world, data_parallel_rank_local=dp_rank,
                               _api_process_count=1, assigned_physical_gpu_ids=None)
    return ns["OMPProcessManager"](types.SimpleNamespace(parallel_config=pc,
                                                         kv_transfer_config=None))


def _manager_threads(m, world: int, omp: str) -> list:
    """OMP_NUM_THREADS each local rank of manager `m` runs with, the pod's being `omp`."""
    out = []
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = omp
    try:
        for r in range(world):
            with m.configure_omp_envs(r, r):
                out.append(int(os.environ["OMP_NUM_THREADS"]))
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    return out


# -- the tests --------------------------------------------------------------------------------


def _krm_fn(v: str, args: list, cpus: int, data: dict | None = None):
    c = {"name": "vllm", "image": REPO + v, "args": ["serve", "m", *args],
         "resources": res(str(cpus))}
    p, out, after = run(c, data)
    assert p.returncode == 0, messages(out, "error")
    return env_of(after), out


@pytest.mark.parametrize("v", VERSIONS)
@pytest.mark.parametrize("args, world, dpl, cpus", LAYOUTS)
def test_every_rank_gets_threads_within_the_pinned_cpus(v, args, world, dpl, cpus):
    if v in NO_OFF and world * dpl > 1:
        c = {"name": "vllm", "image": REPO + v, "resources": res(str(cpus)),
             "args": ["serve", "m", *args]}
        p, out, after = run(c)
        assert p.returncode == 1
        assert "use vLLM 0.21.0 or later (nobind), or one rank" in messages(out, "error")[0]
        if world > 1:       # one engine's ranks on a cpuset of one NUMA node
            with pytest.raises(AssertionError, match="Not enough allowed NUMA nodes"):
                _manager(v, "auto", world, None, cpus)
        return
    if v in NO_OFF:
        env, out = _krm_fn(v, args, cpus)
        assert "VLLM_CPU_OMP_THREADS_BIND" not in env
        with pytest.raises(IndexError):         # the claim: nobind stops 0.20.x
            _manager(v, "nobind", world, None, cpus)
        _check_auto(v, cpus)
        return
    env, out = _krm_fn(v, args, cpus)
    omp = env["OMP_NUM_THREADS"]
    bind = env.get("VLLM_CPU_OMP_THREADS_BIND", _env_default(v, "VLLM_CPU_OMP_THREADS_BIND")
                   if _version(v) >= (0, 9, 1) else "all")
    if _version(v) >= (0, 20, 0):
        threads, kept = [], 0
        for dp in range(dpl):
            m = _manager(v, bind, world, dp if dpl > 1 else None)
            assert m.skip_setup, f"{bind!r} is not vLLM {v}'s no-binding value"
            threads += _manager_threads(m, world, omp)
            kept += m.reserve_cpu_num
    else:
        ranks = _worker_ranks(v, bind, world, dpl)
        assert not any(binds for _, binds in ranks), ranks
        threads = [int(omp)] * len(ranks)
        kept = _worker_reserve(v, world, dpl)
    assert len(threads) == world * dpl
    assert min(threads) >= 1
    assert sum(threads) + kept <= cpus, (threads, kept)
    divided = [m for m in messages(out, "info") if m.startswith("container 'vllm': OMP_")]
    counted = f" minus {kept} kept by vLLM {v}" if kept else ""
    assert (counted in divided[0]) if kept else (" kept by " not in divided[0]), divided


@pytest.mark.parametrize("v", ("0.9.1", "0.10.0", "0.11.0"))
def test_a_single_all_stops_the_second_rank(v):
    """The claim the per-rank value rests on: with -tp 2, `all` makes rank 1 fail."""
    with pytest.raises(IndexError):
        _worker_ranks(v, "all", 2, 1)
    assert [b for b, _ in _worker_ranks(v, "all|all", 2, 1)] == ["all", "all"]


@pytest.mark.parametrize("v", ("0.5.4", "0.11.1"))
def test_the_no_binding_value_is_read_whole_there(v):
    off = "all" if v == "0.5.4" else "nobind"
    assert [b for b, binds in _worker_ranks(v, off, 2, 2)] == [off] * 4


def test_nobind_is_read_whole_by_the_process_manager():
    for v in ("0.21.0", "0.31.0", "0.34.0"):
        assert _manager(v, "nobind", 4, None).skip_setup


def _check_auto(v: str, cpus: int) -> None:
    """vLLM's `auto` binding of one rank on pinned(cpus): at least one thread, within the
    cpuset."""
    m = _manager(v, "auto", 1, None, cpus)
    assert m.auto_setup
    lists = m.cpu_lists
    assert len(lists) == 1 and len(lists[0]) >= 1, lists
    assert set(lists[0]) <= {x.id for x in pinned(cpus)}
    assert _manager_threads(m, 1, "99") == [len(lists[0])]


@pytest.mark.parametrize("v", ("0.20.0", "0.21.0", "0.31.0", "0.34.0"))
@pytest.mark.parametrize("cpus", (1, 2, 3, 8))
def test_bind_leaves_auto_only_where_it_gives_threads(v, cpus):
    """threads.bind with one rank leaves vLLM to auto: on any cpuset the kubelet can give,
    it binds at least one thread (it never keeps every CPU for the scheduler)."""
    env, out = _krm_fn(v, [], cpus, {"threadsBind": "true"})
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env
    _check_auto(v, cpus)


def _worker_auto(v: str, cpus: int) -> list:
    """The CPU ids the worker's own auto binding at `v` (0.11.x) gives one rank on
    pinned(cpus) (x86: the last sibling of each core)."""
    src = fetch.require("vllm", v, "vllm/v1/worker/cpu_worker.py")
    fn = next(n for n in ast.walk(ast.parse(src))
              if isinstance(n, ast.FunctionDef) and n.name == "_get_autobind_cpu_ids")
    fn.decorator_list = []
    logger = types.SimpleNamespace(info=lambda *a, **k: None)
    platform = types.SimpleNamespace(
        get_allowed_cpu_core_node_list=lambda: ([0], pinned(cpus)))
    ns = {"Callable": Callable, "LogicalCPUInfo": CPU, "CpuPlatform": platform,
          "logger": logger, "Optional": object,
          "envs": types.SimpleNamespace(VLLM_CPU_NUM_OF_RESERVED_CPU=None)}
    exec(compile(ast.Module([fn], []), "<vllm>", "exec"), ns)
    pc = types.SimpleNamespace(world_size=1, data_parallel_size_local=1)
    self = types.SimpleNamespace(parallel_config=pc, local_rank=0)
    return ns["_get_autobind_cpu_ids"](self, lambda cs: cs[-1:]).split(",")


@pytest.mark.parametrize("v", ("0.11.0", "0.11.1"))
@pytest.mark.parametrize("cpus", (1, 2, 3, 8))
def test_bind_leaves_the_worker_auto_only_where_it_gives_threads(v, cpus):
    env, out = _krm_fn(v, [], cpus, {"threadsBind": "true"})
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env
    ids = _worker_auto(v, cpus)
    assert ids and all(ids) and {int(i) for i in ids} <= {x.id for x in pinned(cpus)}
