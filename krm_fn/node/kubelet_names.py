"""The names the kubelet's validation judges by rules of their own
(pkg/kubelet/apis/config/validation/validation.go): defaultPodSysctls (isValidSysctlName,
k8s.io/component-helpers/node/util/sysctl's namespaces) and registerWithTaints
(pkg/util/taints CheckTaintValidation: apimachinery's qualified names and label values),
with the kubelet's messages.
"""
from __future__ import annotations

from krm_fn.matching import LazyPattern
from krm_fn.node import kubelet_says as ks

_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL = LazyPattern(f"({_SEGMENT}[./])*{_SEGMENT}")
_DNS_SUBDOMAIN = LazyPattern(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = LazyPattern(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def sysctls(sysctls, on, bad) -> None:
    """defaultPodSysctls (1.37): the gate, the names (isValidSysctlName), their namespace
    (k8s.io/component-helpers/node/util/sysctl GetNamespace), duplicates after
    NormalizeName. Go's map order is not kept: each finding stands alone."""
    if not sysctls:
        return
    if not on("DefaultPodSysctls"):
        bad("defaultPodSysctls", "DefaultPodSysctls feature gate is required for Kubelet "
            "configuration option defaultPodSysctls")
        return
    seen = set()
    for name in sysctls:
        if not _sysctl_name(name):
            bad("defaultPodSysctls", f"{ks.go_quote(name)} is not a valid sysctl name for "
                f"defaultPodSysctls")
            continue
        normal = _normalize_sysctl(name)
        if _sysctl_namespace(normal.split("*", 1)[0]) == "":
            bad("defaultPodSysctls", f"{ks.go_quote(name)} is not known to be namespaced for "
                f"defaultPodSysctls")
        if normal in seen:
            bad("defaultPodSysctls", f"duplicate sysctl {ks.go_quote(normal)} found in "
                f"defaultPodSysctls")
        seen.add(normal)


def _sysctl_name(name: str) -> bool:
    """validation.go isValidSysctlName: at most 253 characters of
    `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?`."""
    if len(name) > 253 or name == "":
        return False
    return _SYSCTL.fullmatch(name) is not None


def _normalize_sysctl(name: str) -> str:
    """sysctl.NormalizeName: a name whose first separator is "/" has "." and "/" swapped."""
    seps = [i for i in (name.find("."), name.find("/")) if i >= 0]
    if not seps or name[min(seps)] == ".":
        return name
    return name.translate(str.maketrans("./", "/."))


_SYSCTL_NAMES = {"kernel.domainname": "UTS", "kernel.sem": "IPC", "kernel.shmall": "IPC",
                 "kernel.shmmax": "IPC", "kernel.shmmni": "IPC",
                 "kernel.shm_rmid_forced": "IPC", "kernel.shm": "IPC", "kernel.msgmax": "IPC",
                 "kernel.msgmnb": "IPC", "kernel.msgmni": "IPC", "kernel.msg": "IPC"}
_SYSCTL_PREFIXES = {"net": "Net", "fs.mqueue": "IPC", "user": "User"}


def _sysctl_namespace(name: str) -> str:
    """sysctl namespaceOf: the namespace of a sysctl (or prefix), "" when unknown."""
    if name in _SYSCTL_NAMES:
        return _SYSCTL_NAMES[name]
    return next((ns for p, ns in _SYSCTL_PREFIXES.items() if name.startswith(p + ".")), "")


def _qualified_name(key: str) -> bool:
    """apimachinery validation.IsQualifiedName: an optional DNS-1123 subdomain prefix and
    "/", then 1-63 of [A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]."""
    prefix, slash, name = key.rpartition("/") if "/" in key else ("", "", key)
    if key.count("/") > 1:
        return False
    if slash:
        if not prefix or len(prefix) > 253 or _DNS_SUBDOMAIN.fullmatch(prefix) is None:
            return False
    return 0 < len(name) <= 63 and _label_chars(name)


def _label_chars(s: str) -> bool:
    return _LABEL.fullmatch(s) is not None


def taint(taint) -> list[tuple[str, str, str]]:
    """registerWithTaints: pkg/util/taints CheckTaintValidation (key, value, effect); the
    message prints the taint (%v of a v1.Taint value: {key value effect timeAdded})."""
    out: list[tuple[str, str, str]] = []
    if not isinstance(taint, dict):
        return out
    key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
    effect = str(taint.get("effect") or "")
    ok = (_qualified_name(key) and (value == "" or (len(value) <= 63 and _label_chars(value)))
          and effect in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"))
    if not ok:
        out.append(("registerWithTaints", f"invalid taint: {{{key} {value} {effect} <nil>}}",
                    ks.VALIDATION))
    if taint.get("timeAdded") is not None:
        out.append(("registerWithTaints", "invalid configuration: taint.TimeAdded is not nil",
                    ks.VALIDATION))
    return out
