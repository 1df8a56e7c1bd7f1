"""The shapes of the serving-engine registry: `Engine` (how an engine is recognised, what
it reads, its check and its documentation row), `EnvSpec`, `WorkerSource` and `Workers`.
Data only; the engines themselves are the other modules of this package.
"""
from __future__ import annotations

from collections import namedtuple


class EnvSpec(namedtuple("EnvSpec", "name flags follows", defaults=((), ()))):
    """An env var an engine reads: set to the thread count unless one of `flags` is in
    the container's command/args (a flag wins over the env var) or one of `follows` is
    (the engine then derives this value from that flag)."""

    __slots__ = ()


class Engine(namedtuple("Engine", "recognition env thread_env check recognised sets warns "
                        "sources releases per_core per_core_source reserve",
                        defaults=((), True, None, "", "", "", (), (), "logical", "", None))):
    """One serving engine. `recognition`: how it is recognised (its
    krm_fn/rules/engines/recognition.py entry, the one place that data lives; `name` is
    its name).

    `env`: variables set to the thread count; `thread_env`: False when the container gets
    no pod-wide thread vars at all (the engine sizes each worker's pool itself);
    `check(pod, c, facts, ctx, seen)`: what needs logic, called for a recognised container
    that gets thread env (`facts`: its ContainerFacts, `seen`: scratch shared by the
    containers of one pod). The documentation row (README table, `table()`):
    `recognised`, `sets`, `warns`, and `sources` (upstream documentation or source files
    the behaviour comes from, as (title, URL)); `releases`: the Release table of the
    settings that appeared, changed or went away (the docs list each with its source);
    `per_core`: how many threads the engine runs per pinned core by its own default,
    "physical" (one per physical core) or "logical" (one per logical CPU), with the
    upstream `per_core_source` it comes from (`threads.perCore: engine-default`);
    `reserve(c, processes)`: (cores, why) the engine keeps free of its thread pools for its
    own other processes when container `c` runs `processes` rank processes, or None."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The engine's name (its Recognition's)."""
        return self.recognition.name


class WorkerSource(namedtuple("WorkerSource", "server command flags env engine",
                              defaults=((), None))):
    """A way a server is told its worker process count: `flags` in command/args (only
    when `command`, a recognition.Pattern, matches command+args, if given; `engine`: only
    when that engine is recognised) or the env vars `env`."""

    __slots__ = ()


class Workers(namedtuple("Workers", "count server what path")):
    """A worker process count found in the container: `count`, the `server` that runs
    them, `what` it was read from (for messages) and the field `path`."""

    __slots__ = ()


class Release(namedtuple("Release", "since facts source note label", defaults=("", ""))):
    """What an engine's releases from `since` on (a version tuple such as (0, 11, 1), up to
    the next Release of the same table) read: `facts` (engine-specific: the values a
    setting accepts, its default, ...), `source` (the upstream source file at that
    release's tag, https), `note` (what changed, for the docs table) and `label` (how the
    engine writes that version, such as "8u191" or "b3683"; default: "0.11.1")."""

    __slots__ = ()


def release_for(releases: tuple, version: tuple | None) -> Release | None:
    """The Release of `releases` (sorted by `since`) that `version` belongs to; None when
    the version is unknown (None) or older than the first one."""
    if version is None:
        return None
    found = None
    for r in releases:
        if version >= r.since:
            found = r
    return found


def version_text(version: tuple) -> str:
    """(0, 11, 1) -> "0.11.1"."""
    return ".".join(str(n) for n in version)
