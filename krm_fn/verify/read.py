"""Read what the kernel says about the current container into plain data (the only I/O of
`krm-fn verify`).

Everything is read below `root` ("/" on a node; a fixture tree laid out like `/proc` and
`/sys` in tests). Paths in the result are node paths (`/sys/fs/cgroup/cpu.max`), whatever the
root, so messages name the file to look at on the node.

Files read (kernel Documentation/admin-guide/cgroup-v2.rst, cputopology.rst; https://kubernetes.io/docs/concepts/architecture/cgroups/):

| file | what |
|---|---|
| `/proc/self/status` `Cpus_allowed_list` | the CPUs this process may run on (cpuset list) |
| `/proc/self/cgroup` `0::PATH` | the process's cgroup v2 path; `/` inside a cgroup namespace (runc and the CRI runtimes give each container its own on cgroup v2, so the pod cgroup above it is hidden) |
| `/proc/self/environ` | the environment, only when no `environ` mapping is passed (fixtures) |
| `/sys/fs/cgroup/cgroup.controllers` | exists only on cgroup v2 (the unified hierarchy is mounted at `/sys/fs/cgroup`) |
| `<cgroup>/cpuset.cpus.effective` | the CPUs the container's cgroup grants: the exclusive set for a pinned container |
| `<cgroup>/cpu.max` | `"<quota> <period>"` in µs, quota `max` = no CFS quota |
| `<cgroup>/memory.max` | bytes, or `max` = no limit |
| `<cgroup>/pids.max`, and each visible parent's | a count or `max`; limits are hierarchical |
| `/sys/devices/system/cpu/cpuN/topology/thread_siblings_list` (else `core_cpus_list`) | the SMT siblings of CPU N |
| `/sys/devices/system/node/nodeN/cpulist` | the CPUs of NUMA node N |

`<cgroup>` is `/sys/fs/cgroup` + the `0::` path when that directory exists under `root` (a
process without a cgroup namespace), else `/sys/fs/cgroup` (the namespace root, which is the
container's own cgroup).
"""
from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from typing import Mapping

CGROUP_ROOT = "/sys/fs/cgroup"
STATUS = "/proc/self/status"
PROC_CGROUP = "/proc/self/cgroup"
ENVIRON = "/proc/self/environ"
CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
# Longest file krm-fn reads (a cpuset list of 16384 CPUs is far shorter): a hostile or broken
# file cannot make it read without bound.
MAX_READ = 1 << 20
# Most entries read from the CPU and NUMA directories: Linux's own limits (NR_CPUS is at
# most 8192, MAX_NUMNODES 1 << NODES_SHIFT, at most 1024), with room; each CPU and node costs
# a file read, so a hostile --root tree cannot make verify read without bound.
MAX_CPUS = 16384
MAX_NUMA_NODES = 1024
_CPU_ENTRY = re.compile(r"cpu([0-9]{1,5})")
_NODE_ENTRY = re.compile(r"node([0-9]{1,5})")


@dataclass(frozen=True)
class Probe:
    """What one container sees. Raw file texts (stripped), None when unreadable; parsing is
    left to `krm_fn.verify.checks`, which turns bad text into a mismatch row.

    `cgroup_v2`: `/sys/fs/cgroup/cgroup.controllers` exists. `cgroup_dir`: node path of the
    cgroup directory read. `namespaced`: the parents of `cgroup_dir` are hidden (cgroup
    namespace root, or no `0::` line). `cpus_allowed`: `Cpus_allowed_list` of
    `/proc/self/status`. `cpuset_effective`, `cpu_max`, `memory_max`: the cgroup files.
    `pids_max`: ((node path, text), ...) from `cgroup_dir` up to the last visible parent below
    `/sys/fs/cgroup` (the root cgroup has no pids.max). `siblings`: CPU id -> sibling list
    text; `numa`: NUMA node id -> cpulist text (only nodes with CPUs). `environ`: name ->
    value. `unreadable`: node path -> reason (`No such file or directory`, ...) for every
    file that was looked for and could not be read. `page_size`: bytes; the kernel keeps
    memory.max in whole pages (mm/page_counter.c page_counter_memparse rounds down).
    """

    cgroup_v2: bool
    cgroup_dir: str
    namespaced: bool
    cpus_allowed: str | None
    cpuset_effective: str | None
    cpu_max: str | None
    memory_max: str | None
    pids_max: tuple = ()
    siblings: dict = field(default_factory=dict)
    numa: dict = field(default_factory=dict)
    environ: dict = field(default_factory=dict)
    unreadable: dict = field(default_factory=dict)
    page_size: int = 4096


def read_regular(path: str) -> bytes:
    """At most MAX_READ bytes of `path`, which must be a regular file (/proc and /sys
    files are): opened non-blocking and checked first, so a FIFO or device in a --root
    tree cannot block verify. Raises OSError (strerror "not a regular file" for others)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_READ)
    finally:
        os.close(fd)


OUTSIDE_ROOT = "a symbolic link out of --root (not followed)"


def below(root: str, path: str) -> str:
    """The file under `root` for node path `path` (absolute), its symbolic links resolved.
    Raises OSError (OUTSIDE_ROOT) when they lead out of `root` (a root other than `/`)."""
    joined = os.path.join(root, path.lstrip("/"))
    real_root = os.path.realpath(root)
    if real_root == "/":
        return joined
    real = os.path.realpath(joined)
    if os.path.commonpath([real_root, real]) != real_root:
        raise OSError(errno.EXDEV, OUTSIDE_ROOT)
    return real


class _Reader:
    """Reads node paths below `root`. With a root other than `/` (a fixture tree), a path
    whose symbolic links lead out of the root is never opened: it counts as unreadable
    (OUTSIDE_ROOT), so no file of the machine outside the tree reaches the report."""

    def __init__(self, root: str):
        self.root = root
        self.real_root = os.path.realpath(root)
        self.unreadable: dict[str, str] = {}

    def host(self, path: str) -> str:
        """The file under root for node path `path` (absolute), its links resolved. Raises
        OSError (OUTSIDE_ROOT) when they lead out of the root."""
        return below(self.root, path)

    def text(self, path: str, note: bool = True) -> str | None:
        try:
            data = read_regular(self.host(path))
        except OSError as e:
            if note or e.strerror == OUTSIDE_ROOT:
                self.unreadable[path] = e.strerror or type(e).__name__
            return None
        return data.decode("utf-8", "replace").strip()

    def exists(self, path: str) -> bool:
        try:
            return os.path.exists(self.host(path))
        except OSError:
            return False

    def isdir(self, path: str) -> bool:
        try:
            return os.path.isdir(self.host(path))
        except OSError:
            return False

    def listdir(self, path: str, limit: int, what: str) -> list[str]:
        """The entries of directory `path`; none (and `path` unreadable) when it holds more
        than `limit` entries named like `what` (cpuN / nodeN)."""
        try:
            entries = os.listdir(self.host(path))
        except OSError as e:
            self.unreadable[path] = e.strerror or type(e).__name__
            return []
        pattern = _CPU_ENTRY if what == "CPUs" else _NODE_ENTRY
        if sum(1 for e in entries if pattern.fullmatch(e)) > limit:
            self.unreadable[path] = f"more than {limit} {what} listed; krm-fn reads at most " \
                                    f"{limit}"
            return []
        return entries


def _status_field(text: str | None, name: str) -> str | None:
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            return value.strip()
    return None


def _cgroup_path(text: str | None) -> str | None:
    """The cgroup v2 path of the `0::PATH` line of /proc/self/cgroup, normalised; None when
    absent or outside the namespace (`/../x`)."""
    for line in (text or "").splitlines():
        if line.startswith("0::"):
            path = line[3:].strip()
            if not path.startswith("/"):
                return None
            norm = posixpath.normpath(path)
            if ".." in norm.split("/"):
                return None
            return "/" if norm in ("/", "//") else norm
    return None


def parse_environ(data: bytes) -> dict[str, str]:
    """`/proc/<pid>/environ` bytes (NUL-separated NAME=value) -> {name: value}; the last of
    repeated names wins, entries without `=` are dropped."""
    out: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.decode("utf-8", "replace").partition("=")
        if sep and name:
            out[name] = value
    return out


def read(root: str = "/", environ: Mapping[str, str] | None = None,
         page_size: int | None = None) -> Probe:
    """Read the Probe of the current process below `root` (a directory).

    `environ`: the environment to check; None reads `<root>/proc/self/environ` (what the
    container started with; fixtures carry one). `page_size`: bytes, default this kernel's
    (`os.sysconf("SC_PAGE_SIZE")`). Never raises for missing or unreadable files:
    each is recorded in `Probe.unreadable` with its node path.
    """
    r = _Reader(root)
    status = r.text(STATUS)
    allowed = _status_field(status, "Cpus_allowed_list")
    if status is not None and allowed is None:
        r.unreadable[STATUS] = "no Cpus_allowed_list line"
    cgroup_v2 = r.exists(f"{CGROUP_ROOT}/cgroup.controllers")
    path = _cgroup_path(r.text(PROC_CGROUP, note=False)) if cgroup_v2 else None
    cgroup_dir, namespaced = CGROUP_ROOT, True
    if path not in (None, "/") and r.isdir(CGROUP_ROOT + path):
        cgroup_dir, namespaced = CGROUP_ROOT + path, False
    effective = cpu_max = memory_max = None
    pids: list[tuple[str, str]] = []
    if cgroup_v2:
        effective = r.text(f"{cgroup_dir}/cpuset.cpus.effective")
        cpu_max = r.text(f"{cgroup_dir}/cpu.max")
        memory_max = r.text(f"{cgroup_dir}/memory.max")
        d = cgroup_dir
        while True:
            value = r.text(f"{d}/pids.max", note=(d == cgroup_dir))
            if value is not None:
                pids.append((f"{d}/pids.max", value))
            if namespaced or d == CGROUP_ROOT:
                break
            d = posixpath.dirname(d)
            if d == CGROUP_ROOT:       # the root cgroup has no pids.max
                break
    siblings: dict[int, str] = {}
    for entry in sorted(r.listdir(CPU_DIR, MAX_CPUS, "CPUs")):
        m = _CPU_ENTRY.fullmatch(entry)
        if not m:
            continue
        base = f"{CPU_DIR}/{entry}/topology"
        text = r.text(f"{base}/thread_siblings_list", note=False)
        if text is None:
            text = r.text(f"{base}/core_cpus_list", note=False)
        if text is not None:
            siblings[int(m.group(1))] = text
    numa: dict[int, str] = {}
    if not r.isdir(NODE_DIR):
        r.unreadable[NODE_DIR] = "No such file or directory"
    else:
        for entry in sorted(r.listdir(NODE_DIR, MAX_NUMA_NODES, "NUMA nodes")):
            m = _NODE_ENTRY.fullmatch(entry)
            if m:
                text = r.text(f"{NODE_DIR}/{entry}/cpulist")
                if text:
                    numa[int(m.group(1))] = text
    if environ is None:
        try:
            env = parse_environ(read_regular(r.host(ENVIRON)))
        except OSError as e:
            r.unreadable[ENVIRON] = e.strerror or type(e).__name__
            env = {}
    else:
        env = dict(environ)
    if page_size is None:
        try:
            page_size = os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            page_size = 4096
    return Probe(cgroup_v2, cgroup_dir, namespaced, allowed, effective, cpu_max, memory_max,
                 tuple(pids), siblings, numa, env, dict(r.unreadable), int(page_size))
