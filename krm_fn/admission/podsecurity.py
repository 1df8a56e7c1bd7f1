"""Pod Security admission: the Namespace labels the built-in PodSecurity admission plugin
reads (https://kubernetes.io/docs/concepts/security/pod-security-admission/), and the Pod
Security Standards checks it runs on a pod (k8s.io/pod-security-admission policy/check_*.go,
v0.37.2; https://kubernetes.io/docs/concepts/security/pod-security-standards/).

Labels: `pod-security.kubernetes.io/<mode>: <level>` for the modes `enforce` (the API server
refuses a pod that breaks the level: a Deployment is admitted with a warning, and its
ReplicaSet's pods are refused), `warn` (the client is warned) and `audit` (an audit
annotation); the levels `privileged`, `baseline` and `restricted`; `<mode>-version: v1.<n>`
or `latest` picks the checks of that release.

`message(...)` is the API server's message for a pod its Namespace's enforce level
refuses, word for word: `violates PodSecurity "restricted:latest": allowPrivilegeEscalation
!= false (container "server" must set securityContext.allowPrivilegeEscalation=false), ...`.
The checks are registered in krm_fn/admission/pss_checks.py CHECKS with their level and the
first release of each of their versions; `checks_at` orders them as policy/registry.go
does (baseline checks by ID, then restricted checks by ID; a restricted check named as
overriding a baseline check replaces it at the restricted level).

Coarser on purpose: exemptions in the API server's PodSecurity configuration (usernames,
runtime classes, namespaces) and its defaults for Namespaces without labels are not seen
(a Namespace without an enforce label is taken as privileged, the built-in default).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from krm_fn.admission.pss_checks import CHECKS, Check, go_quote

LABEL = "pod-security.kubernetes.io/"
MODES = ("enforce", "warn", "audit")
LEVELS = ("privileged", "baseline", "restricted")
# the levels that refuse a container more privileges than the defaults: added capabilities
# beyond the baseline list (NET_ADMIN, NET_RAW, ...), hostPath volumes, ...
NOT_PRIVILEGED = ("baseline", "restricted")
DOC = "https://kubernetes.io/docs/concepts/security/pod-security-standards/"


def strict_modes(labels) -> list:
    """[(mode, level)] of the Namespace `labels` (a mapping, or None when the Namespace is
    not known) whose level is baseline or restricted, in MODES order."""
    if not isinstance(labels, dict):
        return []
    return [(mode, labels[LABEL + mode]) for mode in MODES
            if labels.get(LABEL + mode) in NOT_PRIVILEGED]


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
    if level not in NOT_PRIVILEGED:
        return []
    at = {c.id: (c, _at(c, minor)) for c in CHECKS.values()}
    at = {i: cf for i, cf in at.items() if cf[1] is not None
          and (level == "restricted" or cf[0].level == "baseline")}
    gone = {o for c, _ in at.values() if c.level == "restricted" for o in c.overrides}
    order = sorted(i for i, (c, _) in at.items() if c.level == "baseline") + sorted(
        i for i, (c, _) in at.items() if c.level == "restricted")
    return [(i, at[i][1]) for i in order if i not in gone]


_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")      # api/helpers.go versionRegexp


class Enforced(NamedTuple):
    """The enforce policy of a Namespace: `level`, `version` ("latest" or "v1.<n>", as the
    message writes it), `minor` (the release whose checks run), `label` (the label text),
    `cluster`: the cluster's minor release."""
    level: str
    version: str
    minor: int
    label: str
    cluster: int


def enforced(labels, cluster_minor: int) -> Enforced | None:
    """The enforce policy of a Namespace with `labels` (None when the Namespace is not in
    the input) on a cluster of release 1.`cluster_minor`, as api.PolicyToEvaluate reads
    it: an unknown level is restricted (it fails closed), an unknown version is latest,
    and a version newer than the cluster's checks runs the newest ones; None for
    privileged or no label."""
    if not isinstance(labels, dict) or LABEL + "enforce" not in labels:
        return None
    raw = labels[LABEL + "enforce"]
    level = raw if raw in LEVELS else "restricted"
    if level == "privileged":
        return None
    version, minor = "latest", min(cluster_minor, NEWEST)
    v = labels.get(LABEL + "enforce-version")
    if isinstance(v, str) and _VERSION.fullmatch(v):
        version, minor = v, min(int(v[3:]), minor)
    return Enforced(level, version, minor, f"{LABEL}enforce: {raw}", cluster_minor)


def violations(policy: Enforced, annotations, spec) -> list:
    """[(reason, detail)] of the checks of `policy` the pod (its metadata `annotations`, a
    mapping, and its `spec`) fails, in the admission's order; [] when it is admitted."""
    ann = annotations if isinstance(annotations, dict) else {}
    spec = apparmor_synced(ann, spec if isinstance(spec, dict) else {}, policy.cluster)
    return [r for _, fn in checks_at(policy.level, policy.minor) for r in [fn(ann, spec)] if r]


_APPARMOR = "container.apparmor.security.beta.kubernetes.io/"


def apparmor_synced(annotations: dict, spec: dict, cluster_minor: int) -> dict:
    """`spec` as the API server stores a new pod from 1.30 on: a container without an
    appArmorProfile gets the one its deprecated annotation
    `container.apparmor.security.beta.kubernetes.io/<name>` names (unconfined,
    runtime/default, localhost/<profile>), unless that is the pod's own profile or the pod
    is a Windows pod (pkg/registry/core/pod/strategy.go applyAppArmorVersionSkew,
    pkg/api/pod/util.go ApparmorFieldForAnnotation). The containers changed are copies."""
    osys = spec.get("os")
    if cluster_minor < 30 or not any(str(k).startswith(_APPARMOR) for k in annotations) or \
            (isinstance(osys, dict) and osys.get("name") == "windows"):
        return spec
    pod_profile = ((spec.get("securityContext") or {}).get("appArmorProfile")
                   if isinstance(spec.get("securityContext"), dict) else None)
    out = dict(spec)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        if not isinstance(spec.get(key), list):
            continue
        out[key] = [_synced(c, annotations, pod_profile) if isinstance(c, dict) else c
                    for c in spec[key]]
    return out


def _synced(c: dict, annotations: dict, pod_profile) -> dict:
    value = annotations.get(_APPARMOR + str(c.get("name", "")))
    sc = c.get("securityContext") if isinstance(c.get("securityContext"), dict) else None
    if not isinstance(value, str) or (sc and sc.get("appArmorProfile") is not None):
        return c
    field = {"unconfined": {"type": "Unconfined"},
             "runtime/default": {"type": "RuntimeDefault"}}.get(value)
    name = value[len("localhost/"):]
    if field is None and value.startswith("localhost/") and name and name == name.strip() \
            and len(name) <= 4095:
        field = {"type": "Localhost", "localhostProfile": name}
    if field is None or field == pod_profile:
        return c
    return {**c, "securityContext": {**(sc or {}), "appArmorProfile": field}}


def message(policy: Enforced, found: list) -> str:
    """The API server's text for `found` (violations): `violates PodSecurity "level:version":
    reason (detail), ...` (admission.go EvaluatePod, policy AggregateCheckResult)."""
    parts = [f"{reason} ({detail})" if detail else reason for reason, detail in found]
    return (f'violates PodSecurity "{policy.level}:{policy.version}": ' + ", ".join(parts))


def label_errors(labels) -> list:
    """The API server's errors for the Pod Security labels of a Namespace (`labels`, a
    mapping): a level label not one of LEVELS, a version label neither `latest` nor
    `v1.<n>` (api.PolicyToEvaluate, in its order: enforce, audit, warn; level then
    version). The API server refuses to create a Namespace with any of them."""
    if not isinstance(labels, dict):
        return []
    out = []
    for mode in ("enforce", "audit", "warn"):
        for key, ok, why in (
                (LABEL + mode, lambda v: v in LEVELS, "must be one of " + ", ".join(LEVELS)),
                (LABEL + mode + "-version", lambda v: v == "latest" or _VERSION.fullmatch(v),
                 'must be "latest" or "v1.x"')):
            v = labels.get(key)
            if v is not None and not (isinstance(v, str) and ok(v)):
                out.append(f"metadata.labels[{key}]: Invalid value: {go_quote(str(v))}: {why}")
    return out


def findings(namespace: str, labels, annotations, spec, cluster_minor: int,
             path: str) -> list:
    """ERROR Findings (admission.model.Finding, part "podsecurity", at `path`) for a pod
    (its metadata `annotations` and `spec`, as the webhooks leave them) in Namespace
    `namespace` whose `labels` (None when the Namespace is not in the input) the API server
    refuses, or whose enforce level refuses the pod, on a cluster of release
    1.`cluster_minor`; [] otherwise."""
    from krm_fn.admission.model import ERROR, Finding
    out = []
    bad = label_errors(labels)
    if bad:
        out.append(Finding(ERROR, f"the API server refuses Namespace {namespace}'s Pod "
                                  f"Security labels ({'; '.join(bad)}): the Namespace is "
                                  f"not created, and where it exists already its pods are "
                                  f"checked at restricted (https://kubernetes.io/docs/"
                                  f"concepts/security/pod-security-admission/)",
                           "podsecurity", path))
    policy = enforced(labels, cluster_minor)
    found = violations(policy, annotations, spec) if policy else []
    if found:
        out.append(Finding(ERROR, f"Namespace {namespace} enforces Pod Security "
                                  f"{policy.level} ({policy.label}): the API server refuses "
                                  f"the pod ({message(policy, found)}); set the fields the "
                                  f"level asks for in the pod template, or label the "
                                  f"Namespace with a level the pod meets ({DOC})",
                           "podsecurity", path))
    return out
