"""The thread check of `krm-fn verify`: every thread of the serving process may run only on
the pinned CPUs, and no more of them are runnable than there are pinned CPUs.

Reads, below the root, `/proc/PID/task/*/status` (`State`, `Cpus_allowed_list`; kernel
Documentation/filesystems/proc.rst). PID is the serving process: 1 in a container started
by the runtime (`kubectl exec` runs verify beside it); another with `--pid`. A thread whose
affinity reaches outside the pinned set was moved there (taskset, numactl, an engine that
pins its own threads) or inherited the affinity of a process started before the kubelet
updated the cpuset (CPU Manager reconcile,
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/). More runnable
threads than pinned CPUs wait for each other: the engine's thread pools are larger than the
pinned set (set the thread env vars, or the engine's flags, to the pinned count).
"""
from __future__ import annotations

import os
import re

from krm_fn.node.topology import format_cpuset, parse_cpuset
from krm_fn.verify.checks import Row
from krm_fn.verify.read import below, read_regular

MAX_TASKS = 65536          # threads read at most (the kernel's default pid_max is 32768)
_TID = re.compile(r"[0-9]{1,10}")


def read_tasks(root: str, pid: int) -> tuple[list, str | None]:
    """[(tid, state letter, Cpus_allowed_list text or None)] of /proc/PID/task below
    `root`, by tid; and the reason the task directory cannot be read (else None). A thread
    that exits while it is read is left out, and so is one whose status is a symbolic link
    out of `root` (a root other than `/`: nothing outside the tree is read)."""
    try:
        task_dir = below(root, f"/proc/{pid}/task")
        names = [n for n in os.listdir(task_dir) if _TID.fullmatch(n)]
    except OSError as e:
        return [], f"cannot read /proc/{pid}/task: {e.strerror or type(e).__name__}"
    out = []
    for n in sorted(names, key=int)[:MAX_TASKS]:
        try:        # a link out of --root is never followed (read.below)
            status = below(root, f"/proc/{pid}/task/{n}/status")
            text = read_regular(status).decode("utf-8", "replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        state = fields.get("State", "").strip()[:1]
        allowed = fields.get("Cpus_allowed_list")
        out.append((int(n), state, allowed.strip() if allowed is not None else None))
    return out, None


def rows(tasks: list, problem: str | None, pinned: list | None, pid: int) -> list[Row]:
    """The `thread-affinity` and `runnable-threads` rows for the tasks of read_tasks and
    the pinned CPUs `pinned` (sorted ids; None when unknown)."""
    if problem is not None or not tasks:
        why = problem or f"/proc/{pid}/task lists no thread"
        return [Row("thread-affinity", "", "", None, why)]
    if pinned is None:
        return [Row("thread-affinity", "", f"{len(tasks)} threads", None,
                    "the pinned set is unknown (no cpuset to compare with)")]
    want = set(pinned)
    outside = []
    for tid, _, allowed in tasks:
        try:
            cpus = set(parse_cpuset(allowed or ""))
        except ValueError:
            cpus = None
        if allowed is None or cpus is None or not cpus <= want:
            outside.append((tid, allowed))
    found = (f"{len(tasks)} threads, all inside" if not outside else
             f"{len(outside)} of {len(tasks)} threads outside")
    detail = "" if not outside else (
        "threads allowed outside the pinned CPUs " + format_cpuset(pinned) + ": " +
        ", ".join(f"tid {t} on {a!r}" for t, a in outside[:8]) +
        (" ..." if len(outside) > 8 else "") + ". They were moved (taskset, numactl, an "
        "engine pinning its own threads) or kept the affinity they had before the kubelet "
        "changed the cpuset; restart the container, and do not pin threads by hand "
        "(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/)")
    out = [Row("thread-affinity", format_cpuset(pinned), found, not outside, detail)]
    runnable = sum(1 for _, s, _ in tasks if s == "R")
    ok = runnable <= len(pinned)
    out.append(Row("runnable-threads", f"<= {len(pinned)}", str(runnable), ok, "" if ok else (
        f"{runnable} threads of PID {pid} were runnable at once on {len(pinned)} pinned CPUs: "
        f"they queue for each other, which is latency jitter. Lower the engine's thread "
        f"counts (OMP_NUM_THREADS and the engine's own flags) to the pinned CPUs")))
    return out
