"""The Intel Xeon launcher of PyTorch and Intel Extension for PyTorch (`ipexrun`, `python -m
intel_extension_for_pytorch.cpu.launch`, `python -m torch.backends.xeon.run_cpu`): it sets
`OMP_NUM_THREADS` to its cores per instance unless the variable is already set (its
`set_env` keeps an existing value), by default all physical cores of the node, and binds
each instance with `numactl -C` or `taskset -c` to core ids it counts from the node's CPUs
— not the cpuset the kubelet gives the container. So the thread vars are set (they win),
one thread per physical core is its default, and a warning asks for `--disable-numactl
--disable-taskset` unless args carry them.

Its instances (`instances`) are read as its own argparse reads its options, up to the
program it launches (any unambiguous prefix of a long option too: allow_abbrev): `--rank r`
starts one; `--core-list` with `--ncores-per-instance` one per that many listed cores (the
`--ninstances` given when above 1 and the list is longer); `--ninstances n` n. Where the
count comes from the node's cores (`--ncores-per-instance` alone: the node's physical
cores divided by it; `--latency-mode`: by 4; `--throughput-mode`, `--multi-instance`:
one per NUMA node of the node), not the container's, it is not known from the manifest.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_SRC = ("https://github.com/pytorch/pytorch/blob/334032797f2b9ce73b8268d3f4d4609def4c1e69/"
        "torch/backends/xeon/run_cpu.py")
_OFF = (("--disable-numactl", "--disable_numactl"), ("--disable-taskset", "--disable_taskset"))


SERVER = "Intel Xeon launcher"
_LAUNCHERS = ("ipexrun", "intel_extension_for_pytorch.cpu.launch", "torch.backends.xeon.run_cpu")
# run_cpu.py's options (create_args, _add_*_params): those taking a value, by the name read
_VALUE = {"--ncores-per-instance": "ncores", "--ncores_per_instance": "ncores",
          "--ninstances": "ninstances", "--rank": "rank", "--node-id": "", "--node_id": "",
          "--core-list": "cores", "--core_list": "cores", "--log-path": "", "--log_path": "",
          "--log-file-prefix": "", "--log_file_prefix": ""}
_SWITCH = {"--multi-instance": "multi", "--multi_instance": "multi",
           "--latency-mode": "latency", "--latency_mode": "latency",
           "--throughput-mode": "throughput", "--throughput_mode": "throughput",
           **{n: "" for n in ("--module", "--no-python", "--no_python", "--enable-tcmalloc",
                              "--enable_tcmalloc", "--enable-jemalloc", "--enable_jemalloc",
                              "--use-default-allocator", "--use_default_allocator",
                              "--disable-iomp", "--disable_iomp", "--skip-cross-node-cores",
                              "--skip_cross_node_cores", "--use-logical-core",
                              "--use_logical_core", "--disable-numactl", "--disable_numactl",
                              "--disable-taskset", "--disable_taskset", "--help")}}


def _options(toks: list) -> dict | None:
    """{name read: (value, token)} of the launcher's options in `toks` (its command words),
    switches as (True, token); None when no launcher word is found or argparse would stop
    at an option (unknown or ambiguous)."""
    start = next((i for i, t in enumerate(toks)
                  if t.text.rsplit("/", 1)[-1] in _LAUNCHERS), None)
    if start is None:
        return None
    out: dict = {}
    i = start + 1
    while i < len(toks):
        word = toks[i].text
        if word in ("-m", "-h"):
            i += 1
            continue
        if not word.startswith("--"):
            break                           # the program: the rest are its arguments
        key, eq, value = word.partition("=")
        if key not in _VALUE and key not in _SWITCH:
            found = {n for n in (*_VALUE, *_SWITCH) if n.startswith(key)}
            if len(found) != 1:
                return None                 # unknown or ambiguous: argparse stops there
            key = found.pop()
        if key in _SWITCH:
            if _SWITCH[key]:
                out[_SWITCH[key]] = (True, toks[i])
            i += 1
            continue
        if not eq:
            if i + 1 >= len(toks):
                return None
            i += 1
            value = toks[i].text
        if _VALUE[key]:
            out[_VALUE[key]] = (value, toks[i])
        i += 1
    return out


def instances(toks: list):
    """The launcher's instance count as workers.py reads counts: (server, what, field path,
    the text found or None, the count or None), at most one; nothing when it runs one
    instance by default or no launcher word is found (module docstring)."""
    opts = _options(toks)
    if not opts:
        return
    rank, cores, n, per = (opts.get(k) for k in ("rank", "cores", "ninstances", "ncores"))
    if rank is not None and count_text(rank[0]) is not None:
        yield SERVER, f"{SERVER} --rank {rank[0]}", rank[1].path, "1", 1
        return
    if cores is not None and per is not None:
        listed, k = len(cores[0].split(",")), count_text(per[0])
        m = count_text(n[0]) if n is not None else None
        count = m if m is not None and m > 1 and k and k * m < listed else \
            (listed // k if k else None)
        yield (SERVER, f"{SERVER} --core-list {cores[0]} --ncores-per-instance {per[0]}",
               per[1].path, per[0], count)
        return
    node = next((f"--{k}-mode" for k in ("latency", "throughput") if k in opts), None)
    if node is None and n is None and ("multi" in opts or per is not None):
        node = "--multi-instance" if per is None else f"--ncores-per-instance {per[0]}"
    if node is not None:
        where = opts.get("latency") or opts.get("throughput") or per or opts["multi"]
        yield SERVER, f"{SERVER} {node}", where[1].path, None, None
    elif n is not None:
        yield SERVER, f"{SERVER} --ninstances {n[0]}", n[1].path, n[0], count_text(n[0])


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn when the launcher's own core binding is on."""
    words = {t.text for t in tokens(c)}
    if all(any(w in words for w in names) for names in _OFF):
        return
    pod.warn(c.path + ("args",),
             f"container {c.name!r} runs the Intel Xeon launcher, which binds each instance "
             f"with numactl -C / taskset -c to core ids counted from the node's CPUs (by "
             f"default all its physical cores), not the cpuset the kubelet gives the "
             f"container; add --disable-numactl --disable-taskset to its args "
             f"(OMP_NUM_THREADS={f.count.count}, set, wins over its own count)")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    per_core="physical",
    per_core_source=_SRC,
    recognised="`ipexrun`, `python -m intel_extension_for_pytorch.cpu.launch` or `python -m "
               "torch.backends.xeon.run_cpu` in command/args",
    sets="the thread vars (an `OMP_NUM_THREADS` already set wins over the launcher's count), "
         "divided by its `--ninstances` processes",
    warns="its numactl/taskset binding to the node's core ids unless `--disable-numactl "
          "--disable-taskset`",
    sources=(("torch/backends/xeon/run_cpu.py (the launcher ipexrun ships)", _SRC),
             ("IPEX launch script guide",
              "https://intel.github.io/intel-extension-for-pytorch/cpu/2.2.0%2Bcpu/"
              "tutorials/performance_tuning/launch_script.html")),
)
