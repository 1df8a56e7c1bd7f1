"""Vault Agent injection: `vault-agent` and the init container `vault-agent-init`.

**When it fires** (hashicorp/vault-k8s agent-inject/agent/agent.go `ShouldInject`): the
pod annotation `vault.hashicorp.com/agent-inject` is true (`1`, `t`, `T`, `true`,
`TRUE`, `True`); any other value opts out. There is no Namespace-level trigger (the
webhook's optional namespaceSelector only limits where it runs).

**What it adds** (agent-inject/agent/container_init_sidecar.go, container_sidecar.go):
the init container `vault-agent-init` unless `vault.hashicorp.com/agent-pre-populate` is
false, and the app container `vault-agent` unless
`vault.hashicorp.com/agent-pre-populate-only` is true.

**Resources.** Both from the annotations `vault.hashicorp.com/agent-requests-cpu`,
`agent-limits-cpu`, `agent-requests-mem`, `agent-limits-mem`, each defaulting to the
injector's flags, by default requests cpu 250m, memory 64Mi and limits cpu 500m, memory
128Mi (container_sidecar.go `DefaultResource*`). The defaults make the pod Burstable.
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import WHEN, base

ID = "vault"
TITLE = "Vault agent"
KEY, FLAT = "vault", "vault"
_P = "vault.hashicorp.com/"
CPU = (_P + "agent-requests-cpu", _P + "agent-limits-cpu")
MEMORY = (_P + "agent-requests-mem", _P + "agent-limits-mem")
NOTE = None
INJECT = WHEN[ID].annotations[0]  # _P + "agent-inject": WHEN in __init__.py
PRE_POPULATE, PRE_POPULATE_ONLY = _P + "agent-pre-populate", _P + "agent-pre-populate-only"
DEFAULTS = {CPU[0]: "250m", CPU[1]: "500m", MEMORY[0]: "64Mi", MEMORY[1]: "128Mi"}
_TRUE = ("1", "t", "T", "true", "TRUE", "True")
_FALSE = ("0", "f", "F", "false", "FALSE", "False")


def trigger(meta: base.Meta):
    """(True, why) when the annotation opts in, (False, why) for any other value, (None,
    None) without it."""
    value = meta.annotations.get(INJECT)
    if value is None:
        return None, None
    return str(value) in _TRUE, f"annotation {INJECT}={value}"


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """vault-agent-init (INIT) and vault-agent (APP), as the annotations select."""
    ann = meta.annotations
    got = {n: base.first((ann, n)) or d for n, d in DEFAULTS.items()}
    req = {"cpu": got[CPU[0]], "memory": got[MEMORY[0]]}
    lim = {"cpu": got[CPU[1]], "memory": got[MEMORY[1]]}
    out = []
    if str(ann.get(PRE_POPULATE, "true")) not in _FALSE:
        out.append(base.container("vault-agent-init", model.INIT, ID, req, lim))
    if str(ann.get(PRE_POPULATE_ONLY, "false")) not in _TRUE:
        out.append(base.container("vault-agent", model.APP, ID, req, lim))
    return tuple(out)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so both containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.vault cpu and memory, which krm-fn writes "
            f"there)")
