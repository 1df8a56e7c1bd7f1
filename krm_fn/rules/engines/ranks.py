"""Ranks: the processes one serving container runs for its model's parallel ranks, each a
process with its own OpenMP pool, so that the thread vars are the pinned cores divided
among them (engines/workers.py reads these first, then the worker counts).

- torchrun (`torchrun`, `python -m torch.distributed.run`): `--nproc-per-node` /
  `--nproc_per_node` processes, or its env `PET_NPROC_PER_NODE` (torch/distributed/run.py,
  `action=env`: torch/distributed/argparse_util.py reads `PET_{dest}`; the flag wins;
  `auto`/`cpu`/`gpu` are not whole numbers and are not read); each is one rank of whatever
  it launches, so the engine's own parallel sizes are not multiplied in.
- vLLM: `--tensor-parallel-size`/`-tp` × `--pipeline-parallel-size`/`-pp` worker processes
  per data-parallel rank, times `--data-parallel-size-local`/`-dpl` (else
  `--data-parallel-size`/`-dp`) data-parallel ranks in this pod, one with
  `--data-parallel-rank`/`-dpn` or `--data-parallel-external-lb`/`-dpe` (external load
  balancing, one pod per rank) (vllm/engine/arg_utils.py;
  FlexibleArgumentParser also takes `_` for `-`); none of them is read from env
  (vllm/envs.py has only `VLLM_DP_SIZE`, read for offline SPMD data parallelism, where each
  data-parallel rank is a process launched by someone else: vllm/config/parallel.py at
  v0.34.0, so not counted here). Not read when the ranks run on other pods too: the Ray
  executor (`--distributed-executor-backend ray`, `--data-parallel-backend ray`, `ray
  start` or the multi-node-serving.sh of vLLM's LeaderWorkerSet example in the
  container), `--headless`, or `--nnodes`/`-n`
  above 1 with data parallelism written; with `--nnodes N` alone each pod runs tp × pp ÷ N
  of them (`--nnodes 1`: all).
- the Intel Xeon launcher (`ipexrun`, torch/backends/xeon/run_cpu.py): its instances, read
  as its own argparse reads its options, up to the program it launches (an unambiguous
  prefix of a long option too: allow_abbrev): `--rank r` starts one; `--core-list` with
  `--ncores-per-instance` one per that many listed cores (the `--ninstances` given when
  above 1 and the list is longer); `--ninstances n` n. A count the launcher takes from the
  node's cores (`--ncores-per-instance` alone: the node's physical cores divided by it;
  `--latency-mode`: by 4; `--throughput-mode`, `--multi-instance`: one per NUMA node) is
  not known from the manifest.
- vLLM `--config FILE` (FlexibleArgumentParser reads options from the YAML file; the
  command line wins): a size not on the command line may be in the file, which is not in
  the manifest, so the rank count is unknown (a warning; the thread vars not divided).
- Text Generation Inference: `--num-shard`, or its env `NUM_SHARD` (launcher/src/main.rs,
  `#[clap(long, env)] num_shard`; the flag wins): the launcher starts one shard process per
  rank, each sizing torch's threads from `OMP_NUM_THREADS`.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.rules.cmdline import Token, count_text, env_path, env_value, flag, own_command
from krm_fn.rules.engines.recognition import MODULE_AT, Pattern

VLLM = "vLLM CPU"
TGI = "Text Generation Inference (CPU)"
SERVERS = ("torchrun", VLLM, TGI)      # the `server` of the Workers read here
# torchrun counts only as the program in program position (engines/programs.py): the words
# it runs are those of its own command (cmdline.own_command), not `echo torchrun ...`
TORCHRUN = Pattern(r"(^|[\s/;&|(])torchrun(\s|$)|" + MODULE_AT + r"torch\.distributed\.run\b",
                   ("torchrun", "torch.distributed.run"))
VLLM_PROGRAM = "vllm"                   # the program of `vllm serve`
TGI_PROGRAM = "text-generation-launcher"
NPROC = ("--nproc-per-node", "--nproc_per_node")
TP = ("--tensor-parallel-size", "-tp", "--tensor_parallel_size")
PP = ("--pipeline-parallel-size", "-pp", "--pipeline_parallel_size")
DP = ("--data-parallel-size", "-dp", "--data_parallel_size")
DPL = ("--data-parallel-size-local", "-dpl", "--data_parallel_size_local")
# external load balancing: this server is one data-parallel rank, whatever -dp says
# (vllm/engine/arg_utils.py: `data_parallel_external_lb = ... or data_parallel_rank is not
# None` -> data_parallel_size_local = 1; --data-parallel-rank from 0.10.0, -dpe from 0.11)
DPN = ("--data-parallel-rank", "-dpn", "--data_parallel_rank")
DPE = ("--data-parallel-external-lb", "-dpe")
# vLLM's --headless (no API server: this pod runs engine ranks of a server elsewhere), read
# as vLLM reads it, in its own command; the script of vLLM's LeaderWorkerSet example that
# starts a Ray cluster (examples/online_serving/multi-node-serving.sh), as a program run
HEADLESS = ("--headless",)
RAY_SCRIPT = "multi-node-serving.sh"
# Ray places the data-parallel ranks (--data-parallel-backend / -dpb ray), maybe elsewhere
DP_BACKEND = ("--data-parallel-backend", "-dpb")
# the pods (nodes) one vLLM server's ranks are spread over with its mp backend
# (vllm/engine/arg_utils.py from 0.11: `--nnodes`/`-n`, with `--node-rank`/`-r`)
NNODES = ("--nnodes", "-n")
BACKEND = ("--distributed-executor-backend", "--distributed_executor_backend")
# vLLM reads options from a YAML file too (FlexibleArgumentParser._pull_args_from_config,
# `vllm serve --config FILE`; the command line wins): the sizes it leaves open are unknown
CONFIG = ("--config",)
FROM_FILE = "<the --config file>"   # the raw text of a count only that file gives
# TGI's launcher parses its options with clap 4 (launcher/Cargo.toml), whose `#[clap(long,
# env)] num_shard: Option<usize>` is set once: given twice, clap refuses the command line
# ("cannot be used multiple times") and no shard starts
NUM_SHARD = ("--num-shard",)
REPEATED = "<given more than once>"     # the raw text of a count the launcher refuses
# the long flags read here, which an unambiguous prefix also names (flexible)
_LONG = tuple(names[0] for names in (TP, PP, DP, DPL, DPN, DPE, BACKEND, DP_BACKEND,
                                     HEADLESS))


def read(c, toks: list, line: str, names: set, spans: tuple):
    """The rank process count of the container as (server, what, field path, the text
    found, the count or None when a size is not a whole number), at most one; nothing when
    no rank size is written. `toks`/`line`: its command words and their text; `names`:
    the names of the engines recognised in it; `spans`: the words of `line` in program
    position (engines/programs.py spans(toks)), where torchrun must be for its count."""
    if TORCHRUN.search(line, spans):
        found = flag(own_command(toks, TORCHRUN.within, spans, launcher=True), NPROC)
        if found is not None:
            yield ("torchrun", f"torchrun {numbers.brief(found[2])}", found[1].path, found[0],
                   count_text(found[0]))
            return
        value = env_value(c, "PET_NPROC_PER_NODE")
        if value is not None:
            yield ("torchrun", f"torchrun PET_NPROC_PER_NODE={numbers.brief(value)}",
                   env_path(c, "PET_NPROC_PER_NODE"), value, count_text(value))
            return
    if VLLM in names:
        words = flexible(own_command(toks, (VLLM_PROGRAM,), spans))
        nodes = _nodes(words)
        if nodes is not None and not _elsewhere(words, line, names, spans):
            config = flag(words, CONFIG)
            if config is not None and _sizes_open(words):
                yield (VLLM, f"vLLM {numbers.brief(config[2])}", config[1].path, FROM_FILE,
                       None)
                return
            yield from _vllm(words, nodes)
    if TGI in names:
        words = own_command(toks, (TGI_PROGRAM,), spans)
        found = flag(words, NUM_SHARD)
        given = [t for t in words if t.text.partition("=")[0] in NUM_SHARD]
        if len(given) > 1:
            yield (TGI, f"TGI {NUM_SHARD[0]} given {len(given)} times", given[1].path, REPEATED,
                   None)
            return
        if found is not None:
            yield (TGI, f"TGI {numbers.brief(found[2])}", found[1].path, found[0],
                   count_text(found[0]))
            return
        value = env_value(c, "NUM_SHARD")
        if value is not None:
            yield (TGI, f"TGI NUM_SHARD={numbers.brief(value)}", env_path(c, "NUM_SHARD"),
                   value, count_text(value))


def _sizes_open(toks: list) -> bool:
    """Whether some vLLM size (tp, pp, local data-parallel ranks) is not on the command
    line `toks` (as `flexible` gives them), so that a `--config` file may set it."""
    tp, pp, dp = _vllm_written(toks)
    return tp is None or pp is None or (dp is None and not _external_lb(toks))


def flexible(toks: list) -> list:
    """vLLM's command words as its FlexibleArgumentParser hands them to argparse, and as
    argparse reads them: in a `--name` or `--name=value` word, `_` in the name (up to a
    `.`) becomes `-` (vllm/utils.py FlexibleArgumentParser.parse_args;
    vllm/utils/argparse_utils.py from 0.11), so `--tensor_parallel-size 2` is
    `--tensor-parallel-size 2`; then a name that only starts one of the flags read here
    (`--tensor-parallel 2`) is that flag, as argparse takes an unambiguous prefix of a long
    option (allow_abbrev, which vLLM's parser leaves on). A prefix of another option of
    vLLM's too is ambiguous, and vLLM stops at start-up whatever is read here."""
    out = []
    for t in toks:
        s = t.text
        if s.startswith("--") and ("_" in s or s.partition("=")[0] not in _LONG):
            key, sep, value = s.partition("=")
            name, dot, rest = key[2:].partition(".")
            key = "--" + name.replace("_", "-") + dot + rest
            if key not in _LONG and len(key) > 4:
                starts = [f for f in _LONG if f.startswith(key)]
                key = starts[0] if len(starts) == 1 else key
            if key + sep + value != s:
                t = Token(key + sep + value, t.path)
        out.append(t)
    return out


def _nodes(toks: list) -> int | None:
    """The nodes vLLM's ranks are spread over: `--nnodes`/`-n` (1 when not written); None
    when that is not a whole number above 0, or when it is above 1 with data parallelism
    written (the nodes then split the data-parallel ranks too: vllm/config/parallel.py
    nnodes_within_dp, not read here). With one data-parallel rank each node runs
    tp × pp ÷ nnodes ranks (ParallelConfig.local_world_size, v0.11.1)."""
    found = flag(toks, NNODES)
    if found is None:
        return 1
    n = count_text(found[0])
    if n is None or n < 1 or (n > 1 and (flag(toks, DP) or flag(toks, DPL))):
        return None
    return n


def _elsewhere(toks: list, line: str, names: set, spans: tuple) -> bool:
    """Whether vLLM's ranks may run on other pods too (see the module docstring): Ray in
    the container, vLLM's `--headless` or a Ray backend in its own words `toks` (as
    `flexible` gives them), or RAY_SCRIPT run as a program (one of `spans`, the words of
    `line` in program position), not a word that only names it (`echo --headless`)."""
    if "Ray" in names or any(t.text in HEADLESS for t in toks):
        return True
    if any(line[a:b].rsplit("/", 1)[-1] == RAY_SCRIPT for a, b in spans):
        return True
    return any(found is not None and found[0] == "ray"
               for found in (flag(toks, BACKEND), flag(toks, DP_BACKEND)))


def _external_lb(toks: list) -> bool:
    """Whether this vLLM server is one data-parallel rank of an externally balanced
    deployment (one pod per rank): `--data-parallel-rank`/`-dpn` written, or
    `--data-parallel-external-lb`/`-dpe` the last of it and its `--no-` form."""
    if flag(toks, DPN) is not None:
        return True
    on = False
    for t in toks:
        if t.text in DPE:
            on = True
        elif t.text == "--no-data-parallel-external-lb":
            on = False
    return on


def _vllm_written(toks: list) -> list:
    """The flag() of each vLLM size, None where it is not written: tp, pp, then the local
    data-parallel ranks (`-dpl`, else `-dp`; None under external load balancing, where
    the server runs one: _external_lb); `toks` as `flexible` gives them."""
    dp = None if _external_lb(toks) else flag(toks, DPL if flag(toks, DPL) is not None
                                              else DP)
    return [flag(toks, TP), flag(toks, PP), dp]


def _vllm_flags(toks: list) -> list:
    """The flag() of each vLLM size written, in _vllm_written's order."""
    return [x for x in _vllm_written(toks) if x is not None]


def vllm_sizes(toks: list) -> tuple[int, int]:
    """(tp × pp, local data-parallel ranks) of vLLM's command words `toks`; a size not
    written or not a whole number above 0 counts 1."""
    found = []
    for x in _vllm_written(flexible(toks)):
        k = count_text(x[0]) if x is not None else None
        found.append(k if k is not None and k >= 1 else 1)
    return found[0] * found[1], found[2]


def _vllm(toks: list, nodes: int = 1):
    """vLLM's local processes: tp × pp × local data-parallel ranks (sizes not written: 1),
    divided among `nodes` nodes (_nodes; a world they do not divide stops vLLM at start-up:
    nothing is read)."""
    sizes = _vllm_flags(toks)
    if not sizes:
        return
    what = "vLLM " + " × ".join(numbers.brief(s[2]) for s in sizes)
    n = 1
    for value, _, _ in sizes:
        k = count_text(value)
        if k is None or k < 1:
            yield VLLM, what, sizes[0][1].path, value, None
            return
        n *= k
    written = " × ".join(s[0] for s in sizes)
    if nodes > 1:
        if n % nodes:
            return
        n //= nodes
        what += f" on one of {nodes} nodes"
        written += f" ÷ {nodes}"
    yield VLLM, what, sizes[0][1].path, written, n


# The Intel Xeon launcher (engines/xeon_launcher.py) starts instances, each a process that
# keeps an OMP_NUM_THREADS already set (torch/backends/xeon/run_cpu.py launch, set_env)
SERVER = "Intel Xeon launcher"
LAUNCHERS = ("ipexrun", "intel_extension_for_pytorch.cpu.launch", "torch.backends.xeon.run_cpu")
# run_cpu.py's options (create_args, _add_*_params): those taking a value, by the name read
_VALUE = {"--ncores-per-instance": "ncores", "--ncores_per_instance": "ncores",
          "--ninstances": "ninstances", "--rank": "rank", "--node-id": "", "--node_id": "",
          "--core-list": "cores", "--core_list": "cores", "--log-path": "", "--log_path": "",
          "--log-file-prefix": "", "--log_file_prefix": ""}
# the options that take a value (engines/programs.py reads past them to the program)
LAUNCHER_OPTIONS = tuple(_VALUE)
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
                  if t.text.rsplit("/", 1)[-1] in LAUNCHERS), None)
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


def launcher_instances(toks: list):
    """The Intel Xeon launcher's instance count as workers.py reads counts: (server, what,
    field path, the text found or None, the count or None), at most one; nothing when it
    runs one instance by default or no launcher word is found (module docstring)."""
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
