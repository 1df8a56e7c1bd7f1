"""glibc malloc: `MALLOC_ARENA_MAX` = `threads.mallocArenaMax` on every container that
gets thread env; glibc's default is 8 arenas per host CPU on 64-bit
(https://www.gnu.org/software/libc/manual/html_node/Memory-Allocation-Tunables.html).
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.envvars import set_env


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set MALLOC_ARENA_MAX when threads.mallocArenaMax is set."""
    arenas = ctx.cfg.workloads.threads.mallocArenaMax
    if arenas is None:
        return
    set_env(pod, c, "MALLOC_ARENA_MAX", str(arenas),
            "spec.workloads.threads.mallocArenaMax; glibc's default is 8 arenas per "
            "host CPU on 64-bit, each growing its own heap", ctx.cfg,
            higher=f"more arenas than spec.workloads.threads.mallocArenaMax "
                   f"({arenas}), and each arena grows its own heap")
