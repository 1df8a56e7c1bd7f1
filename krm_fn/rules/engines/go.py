"""Go: `GOMEMLIMIT` = `threads.goMemLimitPercent` percent of the memory limit in bytes (never
above it), on every container that gets thread env (a Go binary cannot be told from its
image, and nothing else reads the variable: the same reason `GOMAXPROCS` is in the default
env list). Go's runtime does not derive it from memory.max
(https://pkg.go.dev/runtime#hdr-Environment_Variables; https://go.dev/doc/gc-guide).
"""
from __future__ import annotations

import re

from krm_fn import numbers, quantity
from krm_fn.pod import ContainerView, PodView
from krm_fn.results import INFO, WARNING
from krm_fn.rules.cmdline import env_entry
from krm_fn.rules.envvars import add_env

_GO_SIZE = re.compile(r"^([0-9]{1,20})(B|KiB|MiB|GiB|TiB)?$")
_GO_UNITS = {None: 1, "B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set or lower GOMEMLIMIT when threads.goMemLimitPercent is set."""
    cfg = ctx.cfg
    pct = cfg.workloads.threads.goMemLimitPercent
    if pct is None:
        return
    try:
        mem = quantity.parse_memory(c.get("resources", "limits", "memory"))
    except quantity.QuantityError:
        return
    limit = mem.whole
    want = limit * pct // 100
    why = (f"{pct}% of the memory limit {mem.text}, spec.workloads.threads."
           f"goMemLimitPercent: the Go GC works harder before the container reaches "
           f"memory.max instead of being OOM-killed; ignored by anything but Go")
    entry = env_entry(c, "GOMEMLIMIT")
    if entry is None:
        add_env(pod, c, {"name": "GOMEMLIMIT", "value": str(want)},
                f"container {c.name!r}: GOMEMLIMIT set to {want} ({why})")
        return
    i, e = entry
    if "valueFrom" in e:
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: GOMEMLIMIT comes from valueFrom and is left alone; "
                 f"make sure it is at most {want} bytes ({pct}% of the memory limit "
                 f"{mem.text})")
        return
    text = str(e.get("value") or "").strip(numbers.BLANKS)
    m = _GO_SIZE.match(text)
    if m is None:
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: GOMEMLIMIT={numbers.shown(str(e.get('value') or ''))} "
                 f"is not a byte count krm-fn reads and is left alone; set it to {want} "
                 f"({pct}% of the memory limit {mem.text})")
        return
    have = int(m.group(1)) * _GO_UNITS[m.group(2)]
    if have == want or (cfg.workloads.threads.existing == "keep-lower" and have < want):
        return
    over = (f"above the memory limit {mem.text} itself, so the Go GC would not act before "
            f"the OOM kill"
            if have > limit else f"above {pct}% of the memory limit {mem.text}")
    pod.set(c.path + ("env", i, "value"), str(want),
            f"container {c.name!r}: GOMEMLIMIT {text} -> {want}: "
            + (over if have > want else "threads.existing is replace"), e.get("value"),
            severity=WARNING if have > want else INFO)
