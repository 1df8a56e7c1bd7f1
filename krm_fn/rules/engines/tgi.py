"""Text Generation Inference on CPU (image `ghcr.io/huggingface/text-generation-inference`
with an `intel-cpu` tag): from 2.3.0 its CPU path (`init_cpu_threads_env`,
server/text_generation_server/models/flash_causal_lm.py) sets torch's threads from
`OMP_NUM_THREADS`, and without it from the node's physical cores per rank
(`psutil.cpu_count(logical=False)`, the host's, not the pinned CPUs); when the container's
affinity mask covers every CPU of the node (not pinned) it binds the threads itself. So
`OMP_NUM_THREADS` must be among the thread vars (a warning when it is not); one thread per
physical core is its own default (`threads.perCore: engine-default`).

Shards. `--num-shard N` (or its env `NUM_SHARD`: launcher/src/main.rs `#[clap(long, env)]
num_shard`, the flag winning) makes the launcher start N shard processes (`for rank in
0..num_shard`), and each sets torch's threads from `OMP_NUM_THREADS` on its own
(`num_cpus_per_rank = int(os.getenv("OMP_NUM_THREADS"))`, v2.3.0 flash_causal_lm.py), so
the thread vars are the pinned cores divided among the shards (floor; more shards than
cores is an error).
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import env_entry
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, Release

_SRC = "https://github.com/huggingface/text-generation-inference/blob/"
_FILE = "server/text_generation_server/models/flash_causal_lm.py"
RELEASES = (
    Release((2, 3, 0), {"omp": True}, _SRC + "v2.3.0/" + _FILE,
            "CPU path reads `OMP_NUM_THREADS` in each shard process (default: the node's "
            "physical cores per rank)"),
)


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn when OMP_NUM_THREADS is neither written by krm-fn nor set."""
    if "OMP_NUM_THREADS" in ctx.cfg.workloads.threads.env or \
            env_entry(c, "OMP_NUM_THREADS") is not None:
        return
    pod.warn(c.path + ("env",),
             f"container {c.name!r} runs Text Generation Inference on CPU, which sizes torch's "
             f"threads from OMP_NUM_THREADS and without it from the node's physical cores, not "
             f"the pinned CPUs; add OMP_NUM_THREADS to spec.workloads.threads.env (or set it "
             f"to {f.count.count})")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_SRC + "v3.3.7/" + _FILE,
    recognised="image `ghcr.io/huggingface/text-generation-inference:*-intel-cpu`",
    sets="the thread vars (its CPU path reads `OMP_NUM_THREADS`), N ÷ `--num-shard` / "
         "`NUM_SHARD` (one process per shard)",
    warns="`OMP_NUM_THREADS` neither in `threads.env` nor set: the default is the node's "
          "physical cores",
    sources=(("TGI flash_causal_lm.py init_cpu_threads_env", _SRC + "v3.3.7/" + _FILE),
             ("TGI launcher num_shard", _SRC + "v3.3.7/launcher/src/main.rs"),
             ("TGI on Intel CPUs",
              "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/docs/"
              "source/installation_intel.md")),
)
