"""The checks of `krm-fn verify`: a `Probe` (what the container sees) against an `Expected`
(what the pod spec and the node pool's kubelet config promise). Pure: no I/O.

Units: CPUs are counted in whole logical CPUs, memory in bytes, CFS quota and period in µs.

| check | passes when | rule |
|---|---|---|
| `cgroup v2` | `/sys/fs/cgroup/cgroup.controllers` exists `failCgroupV1` (https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/); https://kubernetes.io/docs/concepts/architecture/cgroups/ |
| `cpuset` | the cgroup's `cpuset.cpus.effective` (cgroup v1: `Cpus_allowed_list`) holds exactly the pinned count static policy (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy) |
| `affinity` | `Cpus_allowed_list` equals `cpuset.cpus.effective` | the process runs on the whole set |
| `whole cores` | with full-pcpus-only: every SMT sibling of each CPU is in the set KEP-2625, https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy-options |
| `NUMA nodes` | with topologyManagerPolicy single-numa-node: the CPUs are on one NUMA node https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/ |
| `cpu.max` | quota `max` with DisableCPUQuotaWithExclusiveCPUs on (the default of every supported version), quota = CPUs × period with it off (`--cpu-quota`) kubernetes/kubernetes#70585, PR #127525; pkg/kubelet/cm/helpers_linux.go |
| `memory.max` | equals the memory limit (rounded down to whole pages); without one, is not `max` https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/; https://kubernetes.io/docs/concepts/architecture/cgroups/ |
| `pids.max` | the smallest visible limit equals podPidsLimit https://kubernetes.io/docs/concepts/policy/pid-limiting/ |
| `env NAME` | each thread env var of the registry that is set equals the thread count | krm_fn.rules.threads / engines |

A check that has nothing to compare with (no expected value, not required by the policy,
cgroup v1) is `skip` and never fails. A file that cannot be read fails the check that needs
it, naming the file.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from krm_fn.node.topology import format_cpuset, parse_cpuset

OK, MISMATCH, SKIP = "ok", "MISMATCH", "skip"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
# No CFS quota on exclusive CPUs where it is on (kubernetes/kubernetes PR #127525; generated data)
QUOTA_GATE = "DisableCPUQuotaWithExclusiveCPUs"
_VERSION = re.compile(r"v?([0-9]{1,3})\.([0-9]{1,3})(\.[0-9]+)?([-+].*)?")
_INT = re.compile(r"[0-9]{1,19}")


@dataclass(frozen=True)
class Row:
    """One line of the report: `check` name, `expected` and `found` as display strings,
    `ok` True (passed) / False (mismatch) / None (skipped), `detail` what a mismatch means
    and what to change (or why the check was skipped)."""

    check: str
    expected: str
    found: str
    ok: bool | None
    detail: str = ""

    @property
    def result(self) -> str:
        """"ok", "MISMATCH" or "skip"."""
        return OK if self.ok else SKIP if self.ok is None else MISMATCH

    def as_dict(self) -> dict:
        d = asdict(self)
        d["result"] = self.result
        return d


@dataclass(frozen=True)
class Expected:
    """What the container should see.

    `cpus`: pinned CPUs (whole number) or None (derived, see `expected_cpus`); `memory`:
    the memory limit in bytes or None; `pids`: podPidsLimit or None; `threads`: the value
    every thread env var should hold (None: the CPU count); `full_pcpus_only`: the pool's
    cpuManagerPolicyOptions has full-pcpus-only (None: unknown, not checked);
    `topology_policy`: the pool's topologyManagerPolicy (one of TOPOLOGY_POLICIES, or
    None); `kubernetes_version`: (major, minor) of the node's kubelet or None; `cpu_quota`:
    True when the pinned container keeps a CFS quota, False when it has none, None to
    derive it from `kubernetes_version`; `thread_env`: env var names to check beyond the
    registry's (`thread_env_names`)."""

    cpus: int | None = None
    memory: int | None = None
    pids: int | None = None
    threads: int | None = None
    full_pcpus_only: bool | None = None
    topology_policy: str | None = None
    kubernetes_version: tuple | None = None
    cpu_quota: bool | None = None
    thread_env: tuple = ()

    def as_dict(self) -> dict:
        d = asdict(self)
        v = self.kubernetes_version
        d["kubernetes_version"] = None if v is None else f"{v[0]}.{v[1]}"
        d["thread_env"] = list(self.thread_env)
        return d


def parse_version(text: str) -> tuple[int, int]:
    """"1.36", "v1.36.2", "v1.36.1-eks-1" -> (1, 36), for a minor krm-fn supports
    (krm_fn.node.upstream.VERSIONS). Raises ValueError otherwise, naming the supported
    minors for one outside them."""
    from krm_fn.config.versions import supported
    m = _VERSION.fullmatch(str(text).strip())
    if not m or m.group(1) != "1":
        raise ValueError(f"{text!r} is not a Kubernetes version such as 1.36 or v1.36.2")
    return supported(str(text).strip(), (1, int(m.group(2))))


def thread_env_names(extra: tuple | list = ()) -> tuple[str, ...]:
    """The thread-count env vars to check, in order (krm_fn.rules.engines.thread_env_names):
    the threads rule's default `spec.workloads.threads.env`, then every variable an engine
    sets to the thread count, then `extra`; no duplicates."""
    from krm_fn.rules.engines import thread_env_names as names
    return names(extra)


def quota_expected(exp: Expected) -> bool | None:
    """True when a pinned container keeps a CFS quota (= its limit), False when cpu.max
    should be `max`, None when unknown. `exp.cpu_quota` wins; else the default of QUOTA_GATE
    on the version (on in every supported version)."""
    if exp.cpu_quota is not None:
        return exp.cpu_quota
    if exp.kubernetes_version is None:
        return None
    from krm_fn.node import fields
    return not fields.gate_on_by_default(QUOTA_GATE, tuple(exp.kubernetes_version))


def parse_cpu_max(text: str) -> tuple[int | None, int]:
    """cpu.max "<quota> <period>" -> (quota µs or None for `max`, period µs). Raises
    ValueError for anything else."""
    parts = text.split()
    if len(parts) != 2 or not _INT.fullmatch(parts[1]) or not (
            parts[0] == "max" or _INT.fullmatch(parts[0])):
        raise ValueError(f"{text[:60]!r} is not \"<quota> <period>\"")
    if int(parts[1]) == 0 or parts[0] == "0":   # the kernel never shows a zero period/quota
        raise ValueError(f"{text[:60]!r} has a zero quota or period")
    return (None if parts[0] == "max" else int(parts[0])), int(parts[1])


def expected_cpus(probe, exp: Expected) -> tuple[int | None, str]:
    """(pinned CPU count, where it came from): `exp.cpus` ("given"); else cpu.max when it
    holds a quota that is a whole number of periods ("cpu.max": the kubelet writes quota =
    limit × period, pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota); else (None, "unknown"). Not the cpuset itself (that is
    what is checked) and not the thread env vars (checked too); with the quota off (the
    default of every supported version) the cgroup does not know the limit, so pass it (`--cpus`, or KRM_FN_CPUS from a
    resourceFieldRef on limits.cpu)."""
    if exp.cpus is not None:
        return exp.cpus, "given"
    if probe.cgroup_v2 and probe.cpu_max:
        try:
            quota, period = parse_cpu_max(probe.cpu_max)
        except ValueError:
            return None, "unknown"
        if quota is not None and period and quota % period == 0 and quota:
            return quota // period, "cpu.max"
    return None, "unknown"


SHOWN = 60     # characters of a file's text a report row shows (the rest is not the value)


def shown(text: str) -> str:
    """`text` quoted for a report row, cut to SHOWN characters with its length: a file the
    check could not read as its value is never printed whole."""
    if len(text) <= SHOWN:
        return repr(text)
    return repr(text[:SHOWN]) + f"... ({len(text)} characters)"


def _unreadable(probe, path: str) -> str:
    return f"cannot read {path}: {probe.unreadable.get(path, 'unreadable')}"


def _cpuset(probe) -> tuple[list[int] | None, str, Row | None]:
    """(the container's CPUs, the node path they came from, a failing Row or None)."""
    if probe.cgroup_v2:
        path, text = f"{probe.cgroup_dir}/cpuset.cpus.effective", probe.cpuset_effective
    else:
        path, text = "/proc/self/status Cpus_allowed_list", probe.cpus_allowed
    if text is None:
        where = path if probe.cgroup_v2 else "/proc/self/status"
        return None, path, Row("cpuset", "", "unreadable", False, _unreadable(probe, where))
    try:
        return parse_cpuset(text), path, None
    except ValueError as e:
        return None, path, Row("cpuset", "", shown(text), False, f"{path}: {e}")


def cpuset_of(probe) -> list[int] | None:
    """The container's pinned CPUs (sorted ids) from `probe`, None when unreadable."""
    return _cpuset(probe)[0]


def _count(n: int, word: str = "CPU") -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def run(probe, exp: Expected) -> list[Row]:
    """Every check of the module table, in that order, for `probe` (krm_fn.verify.read.Probe)
    against `exp`. Never raises for bad file contents: they are mismatch rows."""
    rows: list[Row] = []
    v2 = probe.cgroup_v2
    rows.append(Row("cgroup v2", "v2", "v2" if v2 else "v1", v2, "" if v2 else (
        "/sys/fs/cgroup/cgroup.controllers is missing: the node runs cgroup v1 (or the hybrid "
        "layout), so cpu.max, memory.max and pids.max are not checked; memory limits and "
        "tmpfs accounting differ there. Boot the node with cgroup v2 "
        "(systemd.unified_cgroup_hierarchy=1); failCgroupV1: true, the default from 1.35, "
        "makes the kubelet refuse v1 (https://kubernetes.io/docs/concepts/architecture/cgroups/)")))

    cpus, source = expected_cpus(probe, exp)
    cpuset, cpuset_path, bad = _cpuset(probe)
    want = "" if cpus is None else str(cpus)
    if bad is not None:
        rows.append(Row(bad.check, want, bad.found, False, bad.detail))
    else:
        found = f"{len(cpuset)} ({format_cpuset(cpuset)})"
        if cpus is None:
            rows.append(Row("cpuset", "", found, None,
                            "no expected count: pass --cpus N (or set KRM_FN_CPUS, e.g. from a "
                            "resourceFieldRef on limits.cpu with divisor \"1\"); cpu.max holds "
                            "no quota to derive it from"))
        elif len(cpuset) == cpus:
            rows.append(Row("cpuset", want, found, True,
                            "" if source == "given" else "expected count taken from cpu.max"))
        elif len(cpuset) > cpus:
            rows.append(Row("cpuset", want, found, False,
                            f"{cpuset_path} holds {len(cpuset)} CPUs, not the {cpus} pinned "
                            f"ones: the container runs in the shared pool. The static CPU "
                            f"Manager grants exclusive CPUs only to a Guaranteed pod (every "
                            f"container cpu and memory requests == limits) asking for a whole "
                            f"number of CPUs, on a node with cpuManagerPolicy: static "
                            f"(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy)"))
        else:
            rows.append(Row("cpuset", want, found, False,
                            f"{cpuset_path} holds only {len(cpuset)} CPUs, fewer than the "
                            f"{cpus} expected: the cpu limit is lower than you expected, or "
                            f"CPUs of the set went offline"))

    if v2:
        if probe.cpus_allowed is None:
            rows.append(Row("affinity", "cpuset.cpus.effective", "unreadable", False,
                            _unreadable(probe, "/proc/self/status")))
        elif cpuset is not None:
            try:
                allowed = parse_cpuset(probe.cpus_allowed)
            except ValueError as e:
                rows.append(Row("affinity", format_cpuset(cpuset), shown(probe.cpus_allowed),
                                False, f"/proc/self/status Cpus_allowed_list: {e}"))
            else:
                same = allowed == cpuset
                rows.append(Row("affinity", format_cpuset(cpuset), format_cpuset(allowed), same,
                                "" if same else
                                "Cpus_allowed_list of this process differs from its cgroup's "
                                "cpuset.cpus.effective: a wrapper (taskset, numactl) or the "
                                "runtime changed the affinity, or the kubelet updated the "
                                "cpuset after the process started"))

    rows.append(_whole_cores(probe, exp, cpuset))
    rows.append(_numa(probe, exp, cpuset))
    rows.append(_cpu_max(probe, exp, cpus))
    rows.append(_memory_max(probe, exp))
    rows.append(_pids_max(probe, exp))
    threads = exp.threads if exp.threads is not None else cpus
    if threads is None and cpuset is not None:
        threads = len(cpuset)
    rows.extend(_thread_env(probe, exp, threads))
    return rows


def _whole_cores(probe, exp: Expected, cpuset) -> Row:
    required = exp.full_pcpus_only is True
    want = "whole cores" if required else ""
    if cpuset is None:
        return Row("whole cores", want, "", None, "no cpuset to check")
    split: list[str] = []
    cores: set = set()
    missing: list[int] = []
    members = set(cpuset)
    seen: dict = {}         # sibling list text -> (core, CPUs outside the set) or None
    for cpu in cpuset:
        text = probe.siblings.get(cpu)
        if text is None:
            missing.append(cpu)
            continue
        if text not in seen:
            try:
                sib = parse_cpuset(text)
            except ValueError:
                seen[text] = None
            else:
                seen[text] = (tuple(sib), [s for s in sib if s not in members])
        if seen[text] is None:
            missing.append(cpu)
            continue
        core, outside = seen[text]
        cores.add(core)
        if outside:
            split.append(f"{cpu} (sibling {format_cpuset(outside)})")
    if missing:
        path = (f"/sys/devices/system/cpu/cpu{missing[0]}/topology/thread_siblings_list")
        return Row("whole cores", want, "unreadable", False if required else None,
                   f"no readable SMT sibling list for CPU {format_cpuset(missing)} "
                   f"({path}, core_cpus_list)")
    found = (f"yes ({_count(len(cores), 'core')})" if not split
             else "no: " + ", ".join(split))
    if not required:
        return Row("whole cores", want, found, None,
                   "not required: pass --full-pcpus-only when the pool's "
                   "cpuManagerPolicyOptions has full-pcpus-only")
    if not split:
        return Row("whole cores", want, found, True)
    return Row("whole cores", want, found, False,
               "CPUs of this container share a physical core with CPUs outside it: the "
               "sibling thread runs another container and pollutes these cores' L1/L2. "
               "full-pcpus-only makes the static policy allocate whole cores only (KEP-2625, "
               "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy-options): it is not in effect on this node (cpuManagerPolicyOptions "
               "missing, or the kubelet restarted with the old cpu_manager_state)")


def _numa(probe, exp: Expected, cpuset) -> Row:
    policy = exp.topology_policy
    required = policy == "single-numa-node"
    want = "1" if required else ""
    if cpuset is None:
        return Row("NUMA nodes", want, "", None, "no cpuset to check")
    if not probe.numa:
        return Row("NUMA nodes", want, "unreadable", False if required else None,
                   _unreadable(probe, "/sys/devices/system/node"))
    nodes, covered, members = [], set(), set(cpuset)
    for node in sorted(probe.numa):
        try:
            node_cpus = set(parse_cpuset(probe.numa[node]))
        except ValueError as e:
            return Row("NUMA nodes", want, "unreadable", False if required else None,
                       f"/sys/devices/system/node/node{node}/cpulist: {e}")
        if not node_cpus.isdisjoint(members):
            nodes.append(node)
            covered |= node_cpus
    outside = [c for c in cpuset if c not in covered]
    found = f"{len(nodes)} ({'node' if len(nodes) == 1 else 'nodes'} " \
            f"{','.join(map(str, nodes))})"
    if outside:
        found += f", CPU {format_cpuset(outside)} on none"
    if not required:
        why = ("restricted aligns to the fewest NUMA nodes the pod's whole request needs, "
               "which one container cannot see" if policy == "restricted" else
               "not required: pass --topology-policy single-numa-node when the pool runs it"
               if policy is None else f"not required by topologyManagerPolicy {policy}")
        return Row("NUMA nodes", want, found, None, why)
    if len(nodes) == 1 and not outside:
        return Row("NUMA nodes", want, found, True)
    return Row("NUMA nodes", want, found, False,
               "the CPUs span more than one NUMA node: topologyManagerPolicy "
               "single-numa-node admits a pod only when one NUMA node holds its CPUs "
               "(https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/), so the node's kubelet does not run that policy, or "
               "the pod was admitted before it was set; memory accesses pay remote-node "
               "latency")


def _cpu_max(probe, exp: Expected, cpus: int | None) -> Row:
    if not probe.cgroup_v2:
        return Row("cpu.max", "", "", None, "")
    path = f"{probe.cgroup_dir}/cpu.max"
    quota_on = quota_expected(exp)
    if probe.cpu_max is None:
        return Row("cpu.max", "", "unreadable", False, _unreadable(probe, path))
    try:
        quota, period = parse_cpu_max(probe.cpu_max)
    except ValueError as e:
        return Row("cpu.max", "", shown(probe.cpu_max), False, f"{path}: {e}")
    found = probe.cpu_max
    if quota_on is None:
        return Row("cpu.max", "", found, None,
                   "pass --kubernetes-version, or --cpu-quota / --no-cpu-quota (the quota "
                   f"is off for exclusive CPUs where {QUOTA_GATE} is on)")
    if not quota_on:
        want = f"max {period}"
        if quota is None:
            return Row("cpu.max", want, found, True)
        return Row("cpu.max", want, found, False,
                   f"a CFS quota of {quota} µs per {period} µs is set on exclusive CPUs: the "
                   f"container is throttled whenever its threads use more than that in a "
                   f"period (kubernetes/kubernetes#70585). {QUOTA_GATE}, on by default in "
                   f"every supported version, removes it (kubernetes/kubernetes PR #127525): "
                   f"the gate is off on this node (then pass --cpu-quota), the kubelet is "
                   f"older than the version given, or the CPUs are not exclusive")
    if cpus is None:
        return Row("cpu.max", f"<cpus × {period}> {period}", found, None,
                   "no expected CPU count: pass --cpus")
    want = f"{cpus * period} {period}"
    if quota == cpus * period:
        return Row("cpu.max", want, found, True)
    if quota is None:
        return Row("cpu.max", want, found, False,
                   f"no CFS quota, but with {QUOTA_GATE} off the kubelet sets quota = cpu "
                   "limit × period on every container (pkg/kubelet/cm/helpers_linux.go): the "
                   "gate is on on this node (pass --no-cpu-quota), or cpuCFSQuota is false, "
                   "which drops CPU limits node-wide "
                   "(https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/)")
    return Row("cpu.max", want, found, False,
               f"the quota is {quota} µs per {period} µs period: the container's cpu limit is "
               f"{quota / period:g} CPUs, not {cpus}")


def _memory_max(probe, exp: Expected) -> Row:
    if not probe.cgroup_v2:
        return Row("memory.max", "", "", None, "")
    path = f"{probe.cgroup_dir}/memory.max"
    want = "a limit" if exp.memory is None else str(exp.memory)
    text = probe.memory_max
    if text is None:
        return Row("memory.max", want, "unreadable", False, _unreadable(probe, path))
    if text == "max":
        return Row("memory.max", want, text, False,
                   "no memory limit on the container: the pod is not Guaranteed (every "
                   "container needs a memory limit, https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/), and memory-backed "
                   "emptyDirs are bounded only by the node")
    if not _INT.fullmatch(text):
        return Row("memory.max", want, shown(text), False, f"{path}: not a byte count or max")
    found = int(text)
    if exp.memory is None:
        return Row("memory.max", want, text, True)
    page = max(1, int(probe.page_size))
    if found in (exp.memory, exp.memory // page * page):
        return Row("memory.max", want, text, True,
                   "" if found == exp.memory else
                   f"the limit rounded down to whole {page}-byte pages, as the kernel keeps it")
    return Row("memory.max", want, text, False,
               f"memory.max is {found} bytes, not the {exp.memory}-byte limit: the kubelet "
               f"writes memory.max = limits.memory (https://kubernetes.io/docs/concepts/architecture/cgroups/), so the container's "
               f"memory limit is not the one expected")


def _pids_max(probe, exp: Expected) -> Row:
    if not probe.cgroup_v2:
        return Row("pids.max", "", "", None, "")
    want = "" if exp.pids is None else str(exp.pids)
    if not probe.pids_max:
        path = f"{probe.cgroup_dir}/pids.max"
        return Row("pids.max", want, "unreadable", False if exp.pids is not None else None,
                   _unreadable(probe, path) + " (is the pids controller enabled?)")
    limits = []
    for path, text in probe.pids_max:
        if text != "max" and not _INT.fullmatch(text):
            return Row("pids.max", want, shown(text), False, f"{path}: not a count or max")
        if text != "max":
            limits.append((int(text), path))
    if limits:
        n, where = min(limits)
        found = f"{n} ({where})"
    else:
        n, found = None, "max"
    if exp.pids is None:
        return Row("pids.max", want, found, None, "no expected limit: pass --pids N "
                                                  "(the pool's podPidsLimit)")
    if n == exp.pids:
        return Row("pids.max", want, found, True)
    hidden = probe.namespaced and (n is None or n > exp.pids)
    if hidden:
        return Row("pids.max", want, found, None,
                   "the kubelet puts podPidsLimit on the pod's cgroup (https://kubernetes.io/docs/concepts/policy/pid-limiting/), the "
                   "parent of this container's; inside a cgroup namespace that parent is "
                   "hidden, so only a lower container limit could be seen")
    return Row("pids.max", want, found, False,
               f"the smallest pids limit over this container's cgroups is "
               f"{'none' if n is None else n}, not podPidsLimit {exp.pids}: the node's kubelet "
               f"runs another podPidsLimit (or none), or the container runtime sets a pids "
               f"limit of its own; limits are hierarchical, the lowest wins")


def _thread_env(probe, exp: Expected, threads: int | None) -> list[Row]:
    names = thread_env_names(exp.thread_env)
    env = probe.environ
    present = [n for n in names if n in env]
    want = "" if threads is None else str(threads)
    if not present:
        return [Row("thread env", f"{', '.join(names[:2])}, ... = {want or 'N'}", "none set",
                    False, "no thread-count env var is set: runtimes (OpenMP, BLAS, PyTorch, "
                           "Go, ...) size their pools from the host's CPU count and "
                           "oversubscribe the pinned set; krm-fn's threads rule sets them")]
    rows = []
    for name in present:
        value = env[name]
        check = f"env {name}"
        if threads is None:
            rows.append(Row(check, "", value, None, "no expected count: pass --cpus"))
        elif not _INT.fullmatch(value.strip()):
            rows.append(Row(check, want, shown(value), False, "not a whole number"))
        elif int(value) == threads:
            rows.append(Row(check, want, value, True))
        elif int(value) > threads:
            rows.append(Row(check, want, value, False,
                            f"{int(value)} threads on {threads} CPUs: the pool oversubscribes "
                            f"the pinned set and threads wait on each other"))
        else:
            rows.append(Row(check, want, value, False,
                            f"{int(value)} threads on {threads} CPUs leave CPUs idle; when "
                            f"reservedCpus or worker processes explain it, pass --threads "
                            f"{int(value)}"))
    return rows
