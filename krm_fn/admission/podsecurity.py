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
from collections import namedtuple

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


_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")      # api/helpers.go versionRegexp
_INT64 = (1 << 63) - 1          # strconv.Atoi on a 64-bit build refuses more


def _label(labels: dict, key: str):
    """The value of label `key` as the API server sees it: a null value is "" (what
    `kubectl create` and server-side apply send), absent is None."""
    if key not in labels:
        return None
    v = labels[key]
    return "" if v is None else v


def _level_ok(v) -> bool:
    return v in LEVELS


def _version_ok(v) -> bool:
    """api.ParseVersion: `latest` or v1.<n> with n a decimal without leading zeros that
    fits an int64."""
    return v == "latest" or (isinstance(v, str) and _VERSION.fullmatch(v) is not None
                             and int(v[3:]) <= _INT64)


class Enforced(namedtuple("Enforced", "level version minor label cluster")):
    """The enforce policy of a Namespace: `level`, `version` ("latest" or "v1.<n>", as the
    message writes it), `minor` (the release whose checks run), `label` (the label text),
    `cluster`: the cluster's minor release."""

    __slots__ = ()


def enforced(labels, cluster_minor: int) -> Enforced | None:
    """The enforce policy of a Namespace with `labels` (None when the Namespace is not in
    the input) on a cluster of release 1.`cluster_minor`, as api.PolicyToEvaluate reads
    it: an unknown level is restricted (it fails closed), an unknown version is latest,
    and a version newer than the cluster's checks runs the newest ones; None for
    privileged or no label."""
    if not isinstance(labels, dict) or LABEL + "enforce" not in labels:
        return None
    from krm_fn.admission.pss_checks import NEWEST
    raw = _label(labels, LABEL + "enforce")
    level = raw if _level_ok(raw) else "restricted"
    if level == "privileged":
        return None
    version, minor = "latest", min(cluster_minor, NEWEST)
    v = _label(labels, LABEL + "enforce-version")
    if v != "latest" and _version_ok(v):
        version, minor = v, min(int(v[3:]), minor)
    return Enforced(level, version, minor, f"{LABEL}enforce: {raw}", cluster_minor)


def violations(policy: Enforced, annotations, spec) -> list:
    """[(reason, detail)] of the checks of `policy` the pod (its metadata `annotations`, a
    mapping, and its `spec`) fails, in the admission's order; [] when it is admitted."""
    ann = annotations if isinstance(annotations, dict) else {}
    spec = apparmor_synced(ann, spec if isinstance(spec, dict) else {}, policy.cluster)
    from krm_fn.admission.pss_checks import checks_at
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
    if field is None or field == _set_fields(pod_profile):
        return c
    return {**c, "securityContext": {**(sc or {}), "appArmorProfile": field}}


def _set_fields(profile):
    """An AppArmorProfile mapping without its null fields (apiequality.Semantic.DeepEqual
    compares the decoded struct, where a null localhostProfile is unset)."""
    return {k: v for k, v in profile.items() if v is not None} \
        if isinstance(profile, dict) else profile


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
    from krm_fn.apivalidation import go_quote
    out = []
    for mode in ("enforce", "audit", "warn"):
        for key, ok, why in ((LABEL + mode, _level_ok, "must be one of " + ", ".join(LEVELS)),
                             (LABEL + mode + "-version", _version_ok,
                              'must be "latest" or "v1.x"')):
            v = _label(labels, key)
            if v is not None and not ok(v):
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
        fallback = ("" if _level_ok(_label(labels, LABEL + "enforce") or "privileged") else
                    ", and where it exists already its pods are checked at restricted")
        out.append(Finding(ERROR, f"the API server refuses Namespace {namespace}'s Pod "
                                  f"Security labels ({'; '.join(bad)}): the Namespace is "
                                  f"not created{fallback} (https://kubernetes.io/docs/"
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
