"""glibc malloc: `MALLOC_ARENA_MAX` = `threads.mallocArenaMax` on every container that
gets thread env; glibc's default is 8 arenas per host CPU on 64-bit
(https://www.gnu.org/software/libc/manual/html_node/Memory-Allocation-Tunables.html).

`MALLOC_ARENA_MAX` is the env alias of the tunable `glibc.malloc.arena_max`; a valid
`glibc.malloc.arena_max=V` in `GLIBC_TUNABLES` wins over it whatever the order of the two
(the dynamic loader's tunables, elf/dl-tunables.c; tests/test_glibc_tunables.py runs this
machine's ld.so --list-tunables), so one that is not the setting is warned about.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import env_path, env_value
from krm_fn.rules.envvars import set_env

TUNABLE = "glibc.malloc.arena_max"


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
    tunables = env_value(c, "GLIBC_TUNABLES")
    value = tunable(tunables) if tunables is not None else None
    if value is not None and value != str(arenas):
        pod.warn(env_path(c, "GLIBC_TUNABLES"),
                 f"container {c.name!r}: GLIBC_TUNABLES sets {TUNABLE}="
                 f"{numbers.brief(value)}, which glibc takes over MALLOC_ARENA_MAX whatever "
                 f"their order: set it to {arenas} there (spec.workloads.threads."
                 f"mallocArenaMax) or take it out "
                 f"(https://www.gnu.org/software/libc/manual/html_node/Tunables.html)")


def tunable(text: str) -> str | None:
    """The value the last `glibc.malloc.arena_max=V` entry of a GLIBC_TUNABLES text
    (`name=value` entries separated by `:`) gives, None when none does."""
    found = None
    for entry in text.split(":"):
        name, eq, value = entry.partition("=")
        if eq and name == TUNABLE:
            found = value
    return found
