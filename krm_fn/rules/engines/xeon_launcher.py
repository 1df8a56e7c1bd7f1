"""The Intel Xeon launcher of PyTorch and Intel Extension for PyTorch (`ipexrun`, `python -m
intel_extension_for_pytorch.cpu.launch`, `python -m torch.backends.xeon.run_cpu`): it sets
`OMP_NUM_THREADS` to its cores per instance unless the variable is already set (its
`set_env` keeps an existing value), by default all physical cores of the node, and binds
each instance with `numactl -C` or `taskset -c` to core ids it counts from the node's CPUs
— not the cpuset the kubelet gives the container. So the thread vars are set (they win),
one thread per physical core is its default, and a warning asks for `--disable-numactl
--disable-taskset` unless args carry them.

Its instances are counted by ranks.launcher_instances (the processes a container runs).
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_SRC = ("https://github.com/pytorch/pytorch/blob/334032797f2b9ce73b8268d3f4d4609def4c1e69/"
        "torch/backends/xeon/run_cpu.py")
_OFF = (("--disable-numactl", "--disable_numactl"), ("--disable-taskset", "--disable_taskset"))


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
