"""The shapes of the serving-engine registry: `Engine` (how an engine is recognised, what
it reads, its check and its documentation row), `EnvSpec`, `WorkerSource` and `Workers`.
Data only; the engines themselves are the other modules of this package.
"""
from __future__ import annotations

from krm_fn.record import dataclass


@dataclass(frozen=True)
class EnvSpec:
    """An env var an engine reads: set to the thread count unless one of `flags` is in
    the container's command/args (a flag wins over the env var) or one of `follows` is
    (the engine then derives this value from that flag)."""

    name: str
    flags: tuple = ()
    follows: tuple = ()


@dataclass(frozen=True)
class Engine:
    """One serving engine. Recognised when a regex of `images` matches the image, a regex
    of `commands` matches command+args joined by spaces (and, when `needs` is given, one
    of `needs` matches too), the container is the KServe framework key of `kserve`, or an
    env var of `env_names` is present — unless an engine of `not_with` was recognised.

    `env`: variables set to the thread count; `thread_env`: False when the container gets
    no pod-wide thread vars at all (the engine sizes each worker's pool itself);
    `check(pod, c, facts, ctx, seen)`: what needs logic, called for a recognised container
    that gets thread env (`facts`: its ContainerFacts, `seen`: scratch shared by the
    containers of one pod). The documentation row (README table, `table()`):
    `recognised`, `sets`, `warns`, and `sources` (upstream documentation or source files
    the behaviour comes from, as (title, URL))."""

    name: str
    images: tuple = ()
    commands: tuple = ()
    needs: tuple = ()
    kserve: tuple = ()
    env_names: tuple = ()
    not_with: tuple = ()
    env: tuple = ()
    thread_env: bool = True
    check: Callable | None = None
    recognised: str = ""
    sets: str = ""
    warns: str = ""
    sources: tuple = ()


@dataclass(frozen=True)
class WorkerSource:
    """A way a server is told its worker process count: `flags` in command/args (only
    when `command` matches command+args, if given; `engine`: only when that engine is
    recognised) or the env vars `env`."""

    server: str
    command: str | None
    flags: tuple
    env: tuple = ()
    engine: str | None = None


@dataclass(frozen=True)
class Workers:
    """A worker process count found in the container: `count`, the `server` that runs
    them, `what` it was read from (for messages) and the field `path`."""

    count: int
    server: str
    what: str
    path: tuple
