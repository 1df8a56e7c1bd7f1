"""The Pod Security admission labels of a Namespace, as the built-in PodSecurity admission
plugin reads them (https://kubernetes.io/docs/concepts/security/pod-security-admission/):
`pod-security.kubernetes.io/<mode>: <level>` for the modes `enforce` (the API server
refuses a pod that breaks the level), `warn` (the client is warned) and `audit` (an audit
annotation), and the levels `privileged`, `baseline` and `restricted`
(https://kubernetes.io/docs/concepts/security/pod-security-standards/).
"""
from __future__ import annotations

LABEL = "pod-security.kubernetes.io/"
MODES = ("enforce", "warn", "audit")
# the levels that refuse a container more privileges than the defaults: added capabilities
# beyond the baseline list (NET_ADMIN, NET_RAW, ...), hostPath volumes, ...
NOT_PRIVILEGED = ("baseline", "restricted")


def strict_modes(labels) -> list:
    """[(mode, level)] of the Namespace `labels` (a mapping, or None when the Namespace is
    not known) whose level is baseline or restricted, in MODES order."""
    if not isinstance(labels, dict):
        return []
    return [(mode, labels[LABEL + mode]) for mode in MODES
            if labels.get(LABEL + mode) in NOT_PRIVILEGED]
