"""The pod's sysctls against the kubelet's own admission of them (krm_fn/admission/
sysctls.py): tests/controlplane/sysctl runs k8s.io/kubernetes pkg/kubelet/sysctl
(SafeSysctlAllowlist for this machine's kernel, NewAllowlist with the node's
allowedUnsafeSysctls, Admit) at the release tests/controlplane/go.mod pins, on the same
pods; and end to end, the verdict of a render."""
from __future__ import annotations

import random
from pathlib import Path

from krm_fn.admission import sysctls
from tests import gobuild
from tests.admission.kit import node
from tests.test_verdict import GUARANTEED_4, POOL, config, deployment, errors, render

HERE = Path(__file__).resolve().parent / "controlplane" / "sysctl"
PROGRAM = gobuild.GoProgram("sysctl", HERE, modfile="../go.mod",
                            what="the kubelet's sysctl admission (tests/controlplane/sysctl)")
NAMES = ["net.core.somaxconn", "net/core/somaxconn", "net.ipv4.tcp_syncookies",
         "net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced", "kernel.shmmax",
         "kernel.msgmax", "fs.mqueue.msg_max", "kernel.domainname", "user.max_user_namespaces",
         "vm.swappiness", "net.ipv4.conf.eno2/100.rp_filter", "net/ipv4/conf/eno2.100/rp_filter",
         "kernel.sem"]
ALLOWED = [[], ["net.core.somaxconn"], ["net.*"], ["kernel.shm*", "kernel.msg*"],
           ["net.core.*", "fs.mqueue.*"], ["user.*"], ["net.ipv4.conf.*"]]


def _cases(n: int, seed: int = 36) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        spec = {"containers": [{"name": "c", "image": "x"}], "securityContext": {"sysctls": [
            {"name": rng.choice(NAMES), "value": "1"} for _ in range(rng.randint(1, 3))]}}
        for host in ("hostNetwork", "hostIPC", "hostUsers"):
            if rng.random() < 0.3:
                spec[host] = rng.random() < 0.5
        out.append((rng.choice(ALLOWED), spec))
    return out


def _kubelet(cases: list) -> list:
    return gobuild.run_json(PROGRAM, [{"allowed": a, "pod": {"spec": s}} for a, s in cases])


def test_sysctls_are_admitted_as_the_kubelet_admits_them():
    cases = _cases(400)
    for (allowed, spec), got in zip(cases, _kubelet(cases)):
        assert got["start"] == "", got
        found = sysctls.refusals(spec, node(allowedUnsafeSysctls=allowed), "spec")
        assert (not found) == got["admit"], (allowed, spec, got, found)
        if found:
            assert f"({got['reason']}: {got['message']})" in found[0].message, (got, found)


def test_an_unsafe_sysctl_fails_the_verdict_unless_the_pool_allows_it():
    spec = {"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    code, results, _ = render(config(), deployment(spec=spec))
    assert code == 1
    assert errors(results)[0].startswith(
        "the kubelet on pool 'p' refuses the pod (SysctlForbidden: forbidden sysctl: "
        "\"net.core.somaxconn\" not allowlisted)")
    pool = {**POOL, "kubelet": {"extra": {"allowedUnsafeSysctls": ["net.core.somaxconn"]}}}
    code, results, _ = render(config(pool=pool), deployment(spec=spec))
    assert code == 0, errors(results)
