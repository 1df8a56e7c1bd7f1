"""The Pod Security Standards checks as the PodSecurity admission plugin runs them
(k8s.io/pod-security-admission policy/check_*.go, v0.37.2;
https://kubernetes.io/docs/concepts/security/pod-security-standards/), one function each,
registered in CHECKS with its level and the first minor release of each of its versions.
A check takes the pod's metadata annotations (a mapping) and its spec (plain data) and
returns None when the pod passes, else (reason, detail) in the admission's own words.
krm_fn/admission/podsecurity.py picks the checks of a Namespace's level and version.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

from krm_fn.apivalidation import go_quote
from krm_fn.numbers import yaml11_bool, yaml11_int as _int


class Check(namedtuple("Check", "id level versions overrides", defaults=((),))):
    """One Pod Security Standards check: `id` (policy CheckID), `level` (baseline or
    restricted), `versions` ((first minor release, fn), ...) in increasing order, where
    fn(annotations, spec) returns None (allowed) or (reason, detail); `overrides`: the
    baseline check IDs it replaces at the restricted level."""

    __slots__ = ()


CHECKS: dict[str, Check] = {}


def _check(id_: str, level: str, *versions, overrides: tuple = ()) -> None:
    CHECKS[id_] = Check(id_, level, versions, overrides)


# --- helpers as policy/helpers.go and visitor.go write them ---------------------------

def _obj(d, key: str):
    """d[key] when it is a mapping (a set pointer field), else None."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else None


def _list(d, key: str) -> list:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, list) else []


def _containers(spec: dict) -> list:
    """initContainers, containers, ephemeralContainers (visitContainers), mappings only."""
    return [c for k in ("initContainers", "containers", "ephemeralContainers")
            for c in _list(spec, k) if isinstance(c, dict)]


def _name(c: dict) -> str:
    n = c.get("name")
    return n if isinstance(n, str) else ""


def _sc(c) -> dict | None:
    return _obj(c, "securityContext")


def _join(items) -> str:
    """joinQuote: `"a", "b"`; "" for none."""
    items = list(items)
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(one: str, many: str, n: int) -> str:
    return one if n == 1 else many


def _named(kind: str, names: list) -> str:
    """`container "a"` / `containers "a", "b"`."""
    return f"{_plural(kind, kind + 's', len(names))} {_join(names)}"


def _true(v) -> bool:
    """A bool field set to true, typed or as the YAML text kubectl reads (items are read
    untyped: krm_fn/yaml/load.py; numbers.yaml11_bool: YAML 1.1's yes, on, y too)."""
    return yaml11_bool(v) is True


def _false(v) -> bool:
    return yaml11_bool(v) is False


def _windows(spec: dict) -> bool:
    return (_obj(spec, "os") or {}).get("name") == "windows"


def _user_namespaced(spec: dict) -> bool:
    """relaxPolicyForUserNamespacePod: hostUsers: false."""
    return _false(spec.get("hostUsers"))


def _unless(cond: Callable, fn: Callable) -> Callable:
    """fn, allowed where cond(spec) holds (the 1.25 Windows and 1.35 user namespace
    versions of a check)."""
    return lambda ann, spec: None if cond(spec) else fn(ann, spec)


def _setters(pod_bad: bool, containers: list) -> list:
    """["pod", `containers "a", "b"`] as the checks name who set a forbidden value."""
    return (["pod"] if pod_bad else []) + ([_named("container", containers)] if containers
                                           else [])


# --- baseline -------------------------------------------------------------------------

def _privileged(ann, spec):
    bad = [_name(c) for c in _containers(spec) if _true((_sc(c) or {}).get("privileged"))]
    if bad:
        return ("privileged",
                f"{_named('container', bad)} must not set securityContext.privileged=true")
    return None


_CAPS_DEFAULT = frozenset(("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                           "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP",
                           "SETUID", "SYS_CHROOT"))


def _caps_added(c) -> list:
    return [str(x) for x in _list(_obj(_sc(c), "capabilities"), "add")]


def _capabilities_baseline(ann, spec):
    bad, caps = [], set()
    for c in _containers(spec):
        extra = [x for x in _caps_added(c) if x not in _CAPS_DEFAULT]
        if extra:
            bad.append(_name(c))
            caps.update(extra)
    if bad:
        return ("non-default capabilities", f"{_named('container', bad)} must not include "
                f"{_join(sorted(caps))} in securityContext.capabilities.add")
    return None


def _host_namespaces(ann, spec):
    on = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if _true(spec.get(k))]
    return ("host namespaces", ", ".join(on)) if on else None


def _host_path_volumes(ann, spec):
    bad = [str(v.get("name", "")) for v in _list(spec, "volumes")
           if isinstance(v, dict) and _obj(v, "hostPath") is not None]
    return ("hostPath volumes", _named("volume", bad)) if bad else None


def _host_ports(ann, spec):
    bad, ports = [], set()
    for c in _containers(spec):
        used = [n for p in _list(c, "ports") if isinstance(p, dict)
                for n in [_int(p.get("hostPort"))] if isinstance(n, int) and n != 0]
        if used:
            bad.append(_name(c))
            ports.update(str(p) for p in used)
    if bad:
        return ("hostPort", f"{_named('container', bad)} {_plural('uses', 'use', len(bad))} "
                f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")
    return None


def _hosts(handler) -> list:
    return [h["host"] for k in ("httpGet", "tcpSocket")
            for h in [_obj(handler, k)] if h and isinstance(h.get("host"), str) and h["host"]]


def _host_probes(ann, spec):
    bad, hosts = set(), set()
    for c in _containers(spec):
        life = _obj(c, "lifecycle")
        found = [h for k in ("livenessProbe", "readinessProbe", "startupProbe")
                 for h in _hosts(_obj(c, k))]
        found += [h for k in ("postStart", "preStop") for h in _hosts(_obj(life, k))]
        if found:
            bad.add(_name(c))
            hosts.update(found)
    if bad:
        return ("probe or lifecycle host",
                f"{_named('container', sorted(bad))} {_plural('uses', 'use', len(bad))} "
                f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))}"
                f" {_join(sorted(hosts))}")
    return None


def _apparmor(ann, spec):
    ok = ("RuntimeDefault", "Localhost")
    values, setters, bad = set(), [], []
    prof = _obj(_sc(spec), "appArmorProfile")
    if prof is not None and prof.get("type") not in ok:
        setters.append("pod")
        values.add(str(prof.get("type") or ""))
    for c in _containers(spec):
        prof = _obj(_sc(c), "appArmorProfile")
        if prof is not None and prof.get("type") not in ok:
            bad.append(_name(c))
            values.add(str(prof.get("type") or ""))
    if bad:
        setters.append(_named("container", bad))
    prefix = "container.apparmor.security.beta.kubernetes.io/"
    notes = sorted(f"{k}={go_quote(v)}" for k, v in ann.items()
                   if isinstance(k, str) and k.startswith(prefix) and isinstance(v, str)
                   and not (v == "" or v == "runtime/default" or v.startswith("localhost/")))
    listed = sorted(values) + notes
    if notes:
        setters.append(_plural("annotation", "annotations", len(notes)))
    if setters:
        return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles",
                        len(listed)),
                f"{' and '.join(setters)} must not set AppArmor profile type to "
                f"{_join(listed)}")
    return None


def _proc_mount(ann, spec):
    bad, kinds = [], set()
    for c in _containers(spec):
        pm = (_sc(c) or {}).get("procMount")
        if pm is not None and pm != "Default":
            bad.append(_name(c))
            kinds.add(str(pm))
    if bad:
        return ("procMount", f"{_named('container', bad)} must not set "
                f"securityContext.procMount to {_join(sorted(kinds))}")
    return None


def _selinux(allowed: frozenset) -> Callable:
    def check(ann, spec):
        types: set = set()
        flags = {"user": False, "role": False}

        def valid(opts: dict) -> bool:
            good = True
            if str(opts.get("type") or "") not in allowed:
                good = False
                types.add(str(opts.get("type") or ""))
            for k in flags:
                if opts.get(k):
                    good, flags[k] = False, True
            return good
        pod = _obj(_sc(spec), "seLinuxOptions")
        pod_bad = pod is not None and not valid(pod)
        bad = [_name(c) for c in _containers(spec)
               if _obj(_sc(c), "seLinuxOptions") is not None
               and not valid(_obj(_sc(c), "seLinuxOptions"))]
        setters = _setters(pod_bad, bad)
        if not setters:
            return None
        data = ([f"{_plural('type', 'types', len(types))} {_join(sorted(types))}"]
                if types else [])
        data += [f"{k} may not be set" for k in ("user", "role") if flags[k]]
        return ("seLinuxOptions", f"{' and '.join(setters)} set forbidden "
                f"securityContext.seLinuxOptions: {'; '.join(data)}")
    return check


_SELINUX_1_0 = frozenset(("", "container_t", "container_init_t", "container_kvm_t"))


def _seccomp_ok(t) -> bool:
    return t in ("Localhost", "RuntimeDefault")


def _seccomp_annotations(ann, spec):
    """Before 1.19: the seccomp annotations of the pod and its containers."""
    def ok(v) -> bool:
        return v in ("runtime/default", "docker/default") or (
            isinstance(v, str) and v.startswith("localhost/"))
    keys = ["seccomp.security.alpha.kubernetes.io/pod"] + [
        "container.seccomp.security.alpha.kubernetes.io/" + _name(c) for c in _containers(spec)]
    bad = sorted({f"{k}={go_quote(str(ann[k]))}" for k in keys if k in ann and not ok(ann[k])})
    if bad:
        return ("seccompProfile", f"forbidden {_plural('annotation', 'annotations', len(bad))} "
                f"{', '.join(bad)}")
    return None


def _seccomp(restricted: bool) -> Callable:
    def check(ann, spec):
        values: set = set()
        prof = _obj(_sc(spec), "seccompProfile")
        pod_bad = prof is not None and not _seccomp_ok(prof.get("type"))
        if pod_bad:
            values.add(str(prof.get("type") or ""))
        pod_set = prof is not None and not pod_bad
        bad, implicit = [], []
        for c in _containers(spec):
            cp = _obj(_sc(c), "seccompProfile")
            if cp is not None:
                if not _seccomp_ok(cp.get("type")):
                    bad.append(_name(c))
                    values.add(str(cp.get("type") or ""))
            elif not pod_set:
                implicit.append(_name(c))
        setters = _setters(pod_bad, bad)
        if setters:
            return ("seccompProfile", f"{' and '.join(setters)} must not set "
                    f"securityContext.seccompProfile.type to {_join(sorted(values))}")
        if restricted and implicit:
            return ("seccompProfile", f"pod or {_named('container', implicit)} must set "
                    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
        return None
    return check


_SYSCTLS = {0: ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                "net.ipv4.ip_unprivileged_port_start"),
            27: ("net.ipv4.ip_local_reserved_ports",),
            29: ("net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"),
            32: ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"),
            37: ("net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat")}


def _sysctls(minor: int) -> tuple:
    """(minor, the sysctls check of that release): the allowed names of every release up
    to `minor`."""
    allowed = frozenset(n for m, names in _SYSCTLS.items() if m <= minor for n in names)

    def check(ann, spec):
        bad = [str(s.get("name")) for s in _list(_sc(spec), "sysctls")
               if isinstance(s, dict) and s.get("name") not in allowed]
        return ("forbidden sysctls", ", ".join(bad)) if bad else None
    return (minor, check)


def _host_process(ann, spec):
    def on(sc) -> bool:
        return _true((_obj(sc, "windowsOptions") or {}).get("hostProcess"))
    bad = [_name(c) for c in _containers(spec) if on(_sc(c))]
    setters = _setters(on(_sc(spec)), bad)
    if setters:
        return ("hostProcess", f"{' and '.join(setters)} must not set "
                "securityContext.windowsOptions.hostProcess=true")
    return None


# --- restricted -----------------------------------------------------------------------

def _escalation(ann, spec):
    bad = [_name(c) for c in _containers(spec)
           if not _false((_sc(c) or {}).get("allowPrivilegeEscalation"))]
    if bad:
        return ("allowPrivilegeEscalation != false", f"{_named('container', bad)} must set "
                "securityContext.allowPrivilegeEscalation=false")
    return None


def _capabilities_restricted(ann, spec):
    no_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        held = _obj(_sc(c), "capabilities")
        if held is None:
            no_drop.append(_name(c))
            continue
        if "ALL" not in _list(held, "drop"):
            no_drop.append(_name(c))
        extra = [x for x in _caps_added(c) if x != "NET_BIND_SERVICE"]
        if extra:
            adding.append(_name(c))
            caps.update(extra)
    details = []
    if no_drop:
        details.append(f'{_named("container", no_drop)} must set '
                       'securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_named('container', adding)} must not include "
                       f"{_join(sorted(caps))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUMES = frozenset(("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                              "image", "persistentVolumeClaim", "projected", "secret"))
# the volume sources restrictedVolumes names, in its order (a volume has one source)
_NAMED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
                  "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                  "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
                  "photonPersistentDisk", "portworxVolume", "scaleIO")


def _restricted_volumes(ann, spec):
    bad, kinds = [], set()
    for v in _list(spec, "volumes"):
        if not isinstance(v, dict):
            continue
        if any(v.get(k) is not None for k in _ALLOWED_VOLUMES):
            continue
        bad.append(str(v.get("name", "")))
        kind = next((k for k in _NAMED_VOLUMES if v.get(k) is not None), None)
        kinds.add(kind or ("storageos" if v.get("storageos") is not None else "unknown"))
    if bad:
        return ("restricted volume types",
                f"{_named('volume', bad)} {_plural('uses', 'use', len(bad))} "
                f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} "
                f"{_join(sorted(kinds))}")
    return None


def _non_root(ann, spec):
    pod = (_sc(spec) or {}).get("runAsNonRoot")
    pod_bad, pod_ok = _false(pod), _true(pod)
    bad, implicit = [], []
    for c in _containers(spec):
        v = (_sc(c) or {}).get("runAsNonRoot")
        if v is not None:
            if _false(v):
                bad.append(_name(c))
        elif not pod_ok:
            implicit.append(_name(c))
    setters = _setters(pod_bad, bad)
    if setters:
        return ("runAsNonRoot != true",
                f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return ("runAsNonRoot != true", f"pod or {_named('container', implicit)} must set "
                "securityContext.runAsNonRoot=true")
    return None


def _root(sc) -> bool:
    return _int((sc or {}).get("runAsUser")) == 0


def _run_as_user(ann, spec):
    setters = _setters(_root(_sc(spec)), [_name(c) for c in _containers(spec) if _root(_sc(c))])
    if setters:
        return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")
    return None


_check("appArmorProfile", "baseline", (0, _apparmor))
_check("capabilities_baseline", "baseline", (0, _capabilities_baseline))
_check("hostNamespaces", "baseline", (0, _host_namespaces))
_check("hostPathVolumes", "baseline", (0, _host_path_volumes))
_check("hostPorts", "baseline", (0, _host_ports))
_check("hostProbesAndHostLifecycle", "baseline", (34, _host_probes))
_check("privileged", "baseline", (0, _privileged))
_check("procMount", "baseline", (0, _proc_mount), (35, _unless(_user_namespaced, _proc_mount)))
_check("seLinuxOptions", "baseline", (0, _selinux(_SELINUX_1_0)),
       (31, _selinux(_SELINUX_1_0 | {"container_engine_t"})))
_check("seccompProfile_baseline", "baseline", (0, _seccomp_annotations),
       (19, _seccomp(False)))
_check("sysctls", "baseline", *(_sysctls(m) for m in sorted(_SYSCTLS)))
_check("windowsHostProcess", "baseline", (0, _host_process))
_check("allowPrivilegeEscalation", "restricted", (8, _escalation),
       (25, _unless(_windows, _escalation)))
_check("capabilities_restricted", "restricted", (22, _capabilities_restricted),
       (25, _unless(_windows, _capabilities_restricted)), overrides=("capabilities_baseline",))
_check("procMount_restricted", "restricted", (35, _proc_mount), overrides=("procMount",))
_check("restrictedVolumes", "restricted", (0, _restricted_volumes),
       overrides=("hostPathVolumes",))
_check("runAsNonRoot", "restricted", (0, _non_root), (35, _unless(_user_namespaced, _non_root)))
_check("runAsUser", "restricted", (23, _run_as_user),
       (35, _unless(_user_namespaced, _run_as_user)))
_check("seccompProfile_restricted", "restricted", (19, _seccomp(True)),
       (25, _unless(_windows, _seccomp(True))), overrides=("seccompProfile_baseline",))


# the newest release any check has a version for (policy/registry.go maxVersion)
NEWEST = max(v[0] for c in CHECKS.values() for v in c.versions)


def _at(check: Check, minor: int):
    """The check's function at release 1.`minor`, or None before its first version."""
    fn = None
    for first, f in check.versions:
        if first <= minor:
            fn = f
    return fn


def checks_at(level: str, minor: int) -> list:
    """[(id, fn)] the PodSecurity admission runs for `level` at release 1.`minor`, in its
    order: baseline checks by ID then restricted ones by ID; at restricted, the baseline
    checks a restricted check present at that release overrides left out."""
    if level not in ("baseline", "restricted"):
        return []
    at = {c.id: (c, _at(c, minor)) for c in CHECKS.values()}
    at = {i: cf for i, cf in at.items() if cf[1] is not None
          and (level == "restricted" or cf[0].level == "baseline")}
    gone = {o for c, _ in at.values() if c.level == "restricted" for o in c.overrides}
    order = sorted(i for i, (c, _) in at.items() if c.level == "baseline") + sorted(
        i for i, (c, _) in at.items() if c.level == "restricted")
    return [(i, at[i][1]) for i in order if i not in gone]
