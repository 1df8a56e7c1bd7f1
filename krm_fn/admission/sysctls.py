"""The pod's sysctls as the kubelet admits them: the kubelet refuses a pod
(`SysctlForbidden`, the pod fails on the node it was scheduled to) whose
`spec.securityContext.sysctls` holds a sysctl neither safe nor in the node's
`allowedUnsafeSysctls`, or a network sysctl with `hostNetwork`, an IPC one with `hostIPC`,
a user-namespace one without `hostUsers: false` (k8s.io/kubernetes pkg/kubelet/sysctl
allowlist.go NewAllowlist, validateSysctl, Admit; safe_sysctls.go; namespaces from
k8s.io/component-helpers node/util/sysctl namespace.go, v1.37.2;
https://kubernetes.io/docs/tasks/administer-cluster/sysctl-cluster/).

Coarser on purpose: the safe sysctls whose kernel namespaces them from a given Linux
release (net.ipv4.tcp_keepalive_time from 4.5, ..., net.ipv4.tcp_rmem from 4.15) are taken
as safe: every node of a supported Kubernetes release runs a newer kernel.
"""
from __future__ import annotations

from krm_fn.admission.model import ERROR, Finding, NodeModel
from krm_fn.admission.taints import host_flag

# pkg/kubelet/sysctl/safe_sysctls.go safeSysctls, v1.37.2
SAFE = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
        "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat")
# component-helpers node/util/sysctl namespace.go nameToNamespace, prefixToNamespace
_NAMES = {"kernel.domainname": "UTS", "kernel.sem": "IPC", "kernel.shmall": "IPC",
          "kernel.shmmax": "IPC", "kernel.shmmni": "IPC", "kernel.shm_rmid_forced": "IPC",
          "kernel.shm": "IPC", "kernel.msgmax": "IPC", "kernel.msgmnb": "IPC",
          "kernel.msgmni": "IPC", "kernel.msg": "IPC"}
_PREFIXES = {"net": "Net", "fs.mqueue": "IPC", "user": "User"}
SRC = ("kubernetes/kubernetes pkg/kubelet/sysctl/allowlist.go; "
       "https://kubernetes.io/docs/tasks/administer-cluster/sysctl-cluster/")


def normalize(name: str) -> str:
    """A sysctl written with `/` separators in its dotted form (sysctl.go NormalizeName:
    `net/ipv4/conf/eno2.100/rp_filter` is `net.ipv4.conf.eno2/100.rp_filter`)."""
    first = next((i for i, ch in enumerate(name) if ch in "./"), -1)
    if first < 0 or name[first] == ".":
        return name
    return name.translate(str.maketrans("./", "/."))


def namespace(name: str) -> str:
    """The kernel namespace of a (normalized) sysctl or prefix: "IPC", "Net", "UTS",
    "User", or "" when it is not known to be namespaced."""
    if name in _NAMES:
        return _NAMES[name]
    return next((ns for p, ns in _PREFIXES.items() if name.startswith(p + ".")), "")


def _allowlist(patterns) -> tuple[dict, dict] | None:
    """({sysctl: namespace}, {prefix: namespace}) of the safe sysctls and `patterns` (the
    node's allowedUnsafeSysctls; `prefix*` for a prefix); None when a pattern is not known
    to be namespaced: the kubelet does not start then (kubelet_check's finding)."""
    exact, prefixes = {}, {}
    for p in SAFE + tuple(str(x) for x in patterns):
        name = normalize(p)
        star = name.find("*")
        prefixed = star >= 0
        name = name[:star] if prefixed else name
        ns = namespace(name)
        if not ns:
            return None
        (prefixes if prefixed else exact)[name] = ns
    return exact, prefixes


def _refused(name: str, allow: tuple, host: dict) -> str:
    """validateSysctl's error for one sysctl, "" when allowed."""
    name = normalize(name)
    exact, prefixes = allow
    ns = exact.get(name)
    if ns is None:
        ns = next((n for p, n in prefixes.items() if name.startswith(p)), None)
    if ns is None:
        return f"\"{name}\" not allowlisted"
    if host.get(ns):
        return f"\"{name}\" not allowed with host {ns} enabled"
    return ""


def refusals(spec: dict, node: NodeModel, at: str) -> tuple:
    """An ERROR Finding when the kubelet of `node` refuses the pod spec `spec` (plain, at
    path `at`) for its sysctls (the first one it refuses, as Admit reports it); () else."""
    sc = spec.get("securityContext") if isinstance(spec, dict) else None
    sysctls = sc.get("sysctls") if isinstance(sc, dict) else None
    if not isinstance(sysctls, list) or not sysctls:
        return ()
    allowed = (node.kubelet or {}).get("allowedUnsafeSysctls") or ()
    allow = _allowlist(allowed if isinstance(allowed, list) else ())
    if allow is None:
        return ()
    host = {"Net": host_flag(spec, "hostNetwork"), "IPC": host_flag(spec, "hostIPC"),
            "User": spec.get("hostUsers") is None or host_flag(spec, "hostUsers")}
    for i, s in enumerate(sysctls):
        name = s.get("name") if isinstance(s, dict) else None
        if not isinstance(name, str):
            continue
        why = _refused(name, allow, host)
        if why:
            fix = ("remove it, or allow it on the pool's nodes with the kubelet's "
                   "allowedUnsafeSysctls (spec.nodePools[].kubelet.extra)"
                   if "allowlisted" in why else
                   "remove it, or the host namespace setting that shares it")
            return (Finding(ERROR, f"the kubelet on pool {node.pool!r} refuses the pod "
                                   f"(SysctlForbidden: forbidden sysctl: {why}); the scheduler "
                                   f"still places it, and it fails on the node: {fix} ({SRC})",
                            "scheduling", f"{at}.securityContext.sysctls[{i}]"),)
    return ()
