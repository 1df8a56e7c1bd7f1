"""Writes the fixture trees of tests/test_verify.py: one directory per case, laid out like the
`/proc` and `/sys` a container sees (`krm-fn verify --root DIR`).

Run `python tests/verify_fixtures/build.py` after changing CASES; tests/test_verify.py
checks that the trees on disk are exactly what this file builds.

The machine of every case: 2 sockets, one NUMA node each, 8 cores per socket, 2 SMT threads
per core, Linux x86 numbering (CPU c and c+16 are siblings): NUMA node 0 = CPUs 0-7,16-23,
node 1 = CPUs 8-15,24-31. The good container has 4 exclusive CPUs = cores 2 and 3 whole
(2-3,18-19), a 12Gi memory limit, a cgroup namespace (`/proc/self/cgroup` is `0::/`) and
every default thread env var at "4", and a serving process (PID 1) of three threads on the
pinned CPUs, one of them runnable. Each bad case changes one thing.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from krm_fn.config import DEFAULT_THREAD_ENV  # noqa: E402

HERE = Path(__file__).resolve().parent
THREAD_ENV = DEFAULT_THREAD_ENV     # the threads rule's default spec.workloads.threads.env
STATUS = """\
Name:\tkrm-fn
Umask:\t0022
State:\tR (running)
Pid:\t1
Threads:\t1
Cpus_allowed:\t000c000c
Cpus_allowed_list:\t{cpus}
Mems_allowed_list:\t0-1
voluntary_ctxt_switches:\t3
"""
CONTROLLERS = "cpuset cpu io memory hugetlb pids rdma misc\n"
POD_CGROUP = "/kubepods.slice/kubepods-pod0a1b2c3d.slice"
CONTAINER_CGROUP = POD_CGROUP + "/cri-containerd-4e5f6a7b.scope"


def machine() -> dict[str, str]:
    """The /sys/devices/system files of the fixture machine."""
    files = {}
    for cpu in range(32):
        core = cpu % 16
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = \
            f"{core},{core + 16}\n"
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list"] = f"{core},{core + 16}\n"
    files["sys/devices/system/node/node0/cpulist"] = "0-7,16-23\n"
    files["sys/devices/system/node/node1/cpulist"] = "8-15,24-31\n"
    return files


def environ(**override: str) -> bytes:
    env = {"PATH": "/opt/krm-fn/bin:/usr/local/bin:/usr/bin:/bin", "HOSTNAME": "verify-x7k2p"}
    env.update({name: "4" for name in THREAD_ENV})
    env.update(override)
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())


TASK = "Name:\tserver\nState:\t{state}\nTgid:\t1\nPid:\t{tid}\nCpus_allowed_list:\t{cpus}\n"


def container(cpus: str = "2-3,18-19", cpu_max: str = "max 100000",
              memory_max: str = "12884901888", pids_max: str = "max",
              cgroup_dir: str = "sys/fs/cgroup", env: dict | None = None,
              tasks: tuple | None = None) -> dict:
    """Files of one container; None values are left out. `tasks`: (state, cpus) of each
    thread of PID 1 (default three threads on `cpus`, the second runnable)."""
    files = machine()
    for tid, (state, allowed) in enumerate(tasks or (("S (sleeping)", cpus),
                                                     ("R (running)", cpus),
                                                     ("S (sleeping)", cpus)), 1):
        files[f"proc/1/task/{tid}/status"] = TASK.format(state=state, tid=tid, cpus=allowed)
    files.update({
        "proc/self/status": STATUS.format(cpus=cpus),
        "proc/self/cgroup": "0::/\n",
        "proc/self/environ": environ(**(env or {})),
        "sys/fs/cgroup/cgroup.controllers": CONTROLLERS,
        f"{cgroup_dir}/cpuset.cpus.effective": cpus + "\n",
        f"{cgroup_dir}/cpu.max": cpu_max + "\n",
        f"{cgroup_dir}/memory.max": memory_max + "\n",
        f"{cgroup_dir}/pids.max": pids_max + "\n",
    })
    return files


def _host_cgroup() -> dict:
    """No cgroup namespace: the process sees the whole hierarchy and its pod's pids.max."""
    files = container(cgroup_dir="sys/fs/cgroup" + CONTAINER_CGROUP)
    files["proc/self/cgroup"] = f"0::{CONTAINER_CGROUP}\n"
    files[f"sys/fs/cgroup{POD_CGROUP}/pids.max"] = "4096\n"
    files["sys/fs/cgroup/kubepods.slice/pids.max"] = "max\n"
    return files


def _v1() -> dict:
    files = container()
    for name in ("cgroup.controllers", "cpuset.cpus.effective", "cpu.max", "memory.max",
                 "pids.max"):
        del files[f"sys/fs/cgroup/{name}"]
    files["sys/fs/cgroup/cpuset/cpuset.cpus"] = "2-3,18-19\n"
    files["sys/fs/cgroup/memory/memory.limit_in_bytes"] = "12884901888\n"
    return files


def _missing_memory() -> dict:
    files = container()
    del files["sys/fs/cgroup/memory.max"]
    return files


CASES = {
    "good": container(),
    "good-cpu-quota": container(cpu_max="400000 100000"),
    "good-host-cgroup": _host_cgroup(),
    "bad-cgroup-v1": _v1(),
    "bad-shared-pool": container(cpus="4-15,20-31"),
    "bad-split-smt": container(cpus="2-5"),
    "bad-two-numa": container(cpus="7-8,23-24"),
    "bad-quota": container(cpu_max="400000 100000"),
    "bad-memory": container(memory_max="8589934592"),
    "bad-pids": container(pids_max="1024"),
    "bad-thread-env": container(env={"OMP_NUM_THREADS": "32"}),
    "bad-missing-file": _missing_memory(),
    "bad-thread-affinity": container(tasks=(("S (sleeping)", "2-3,18-19"),
                                            ("S (sleeping)", "0-31"))),
    "bad-runnable-threads": container(tasks=tuple(("R (running)", "2-3,18-19")
                                                  for _ in range(6))),
}


def write(root: Path = HERE) -> None:
    """(Re)write every case directory below `root`."""
    for case, files in CASES.items():
        d = root / case
        if d.exists():
            shutil.rmtree(d)
        for rel, content in files.items():
            p = d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content if isinstance(content, bytes) else content.encode())


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
