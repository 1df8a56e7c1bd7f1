"""MALLOC_ARENA_MAX against GLIBC_TUNABLES (krm_fn/rules/engines/glibc.py), judged by this
machine's glibc: its dynamic loader prints the arena_max it takes from the environment
krm-fn leaves a container (`ld.so --list-tunables`, glibc 2.33 and later), in both orders
of the two variables. Where krm-fn does not warn, glibc takes the configured value.

Coarser on purpose, by name: krm-fn warns for any arena_max in GLIBC_TUNABLES other than the
configured text, also for one glibc does not take (`x`) or reads as the same number
(`0x2`); it does not model glibc's number parsing, which changed between releases."""
from __future__ import annotations

import glob
import os
import subprocess

import pytest

from krm_fn import numbers
from tests.helpers import env_of
from tests.test_engines import messages, res, run

ARENAS = 2
CASES = [None, "glibc.malloc.arena_max=2", "glibc.malloc.arena_max=8",
         "glibc.malloc.tcache_count=3", "glibc.malloc.arena_max=8:glibc.malloc.arena_max=2",
         "glibc.malloc.arena_max=2:glibc.malloc.arena_max=16", "glibc.malloc.arena_max=x",
         "glibc.malloc.arena_max=0x2", "glibc.malloc.arena_max="]


def _loader() -> str:
    found = sorted(glob.glob("/lib64/ld-linux-*.so.*") + glob.glob("/lib/ld-linux-*.so.*"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("no glibc dynamic loader, and CI=true")
        pytest.skip("no glibc dynamic loader")
    return found[0]


def _glibc_arena_max(env: dict, reverse: bool) -> int:
    """The arena_max glibc takes from `env` (its items in order, or reversed)."""
    items = list(env.items())
    argv = ["env", "-i", *(f"{k}={v}" for k, v in (items[::-1] if reverse else items)),
            _loader(), "--list-tunables"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("glibc.malloc.arena_max:"))
    return int(line.split()[1], 16)


@pytest.mark.parametrize("tunables", CASES)
def test_arena_max_as_glibc_takes_it(tunables):
    c = {"name": "app", "image": "python:3.12-slim", "command": ["python", "app.py"],
         "resources": res()}
    if tunables is not None:
        c["env"] = [{"name": "GLIBC_TUNABLES", "value": tunables}]
    p, out, after = run(c, {"mallocArenaMax": str(ARENAS)})
    env = {k: v for k, v in env_of(after).items()
           if k in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    assert env["MALLOC_ARENA_MAX"] == str(ARENAS)
    warned = [m for m in messages(out, "warning") if "GLIBC_TUNABLES" in m]
    taken = {_glibc_arena_max(env, False), _glibc_arena_max(env, True)}
    if not warned:
        assert taken == {ARENAS}, (tunables, taken)
    else:
        assert warned == [
            f"container 'app': GLIBC_TUNABLES sets glibc.malloc.arena_max="
            f"{numbers.brief(tunables.rpartition('=')[2])}, which glibc takes over MALLOC_ARENA_MAX whatever "
            f"their order: set it to 2 there (spec.workloads.threads.mallocArenaMax) or take "
            f"it out (https://www.gnu.org/software/libc/manual/html_node/Tunables.html)"]
    assert bool(warned) == (tunables is not None and "arena_max" in tunables
                            and tunables.rpartition("=")[2] != "2")
