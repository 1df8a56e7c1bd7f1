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
128Mi (container_sidecar.go `DefaultResource*`). The defaults make the pod Burstable. Then
the JSON patch of `vault.hashicorp.com/agent-json-patch` (vault-agent) or
`agent-init-json-patch` (vault-agent-init), applied to the container after its resources
(container_sidecar.go, container_init_sidecar.go, from vault-k8s 1.1.0): its `add`,
`replace` and `remove` operations under `/resources` are applied; any other operation
there leaves the resources unknown, which krm-fn reads as none (Burstable).

A pod already carrying `vault.hashicorp.com/agent-inject-status: injected` gets nothing
(agent.go ShouldInject).
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


STATUS = _P + "agent-inject-status"
PATCH = {model.APP: _P + "agent-json-patch", model.INIT: _P + "agent-init-json-patch"}


def trigger(meta: base.Meta):
    """(True, why) when the annotation opts in, (False, why) for any other value or a pod
    the injector marked injected, (None, None) without it."""
    value = meta.annotations.get(INJECT)
    if value is None:
        return None, None
    if str(meta.annotations.get(STATUS, "")) == "injected":
        return False, f"annotation {STATUS}=injected (already injected: nothing more)"
    return str(value) in _TRUE, f"annotation {INJECT}={value}"


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """vault-agent-init (INIT) and vault-agent (APP), as the annotations select."""
    ann = meta.annotations
    got = {n: base.first((ann, n)) or d for n, d in DEFAULTS.items()}
    req = {"cpu": got[CPU[0]], "memory": got[MEMORY[0]]}
    lim = {"cpu": got[CPU[1]], "memory": got[MEMORY[1]]}
    out = []
    if str(ann.get(PRE_POPULATE, "true")) not in _FALSE:
        out.append(base.container("vault-agent-init", model.INIT, ID,
                                  *_patched(req, lim, ann.get(PATCH[model.INIT]))))
    if str(ann.get(PRE_POPULATE_ONLY, "false")) not in _TRUE:
        out.append(base.container("vault-agent", model.APP, ID,
                                  *_patched(req, lim, ann.get(PATCH[model.APP]))))
    return tuple(out)


def _patched(req: dict, lim: dict, patch) -> tuple[dict, dict]:
    """(requests, limits) after the JSON patch `patch` (text, RFC 6902) of the container:
    its add, replace and remove under /resources applied in order; ({}, {}) when another
    operation touches /resources; unchanged for no patch or one that is not a list."""
    if not isinstance(patch, str) or "/resources" not in patch:
        return req, lim
    import json
    try:
        ops = json.loads(patch)
    except ValueError:
        return req, lim
    res = {"requests": dict(req), "limits": dict(lim)}
    for op in ops if isinstance(ops, list) else ():
        path = op.get("path") if isinstance(op, dict) else None
        if not isinstance(path, str) or not (path + "/").startswith("/resources/"):
            continue
        keys = [k.replace("~1", "/").replace("~0", "~") for k in path.split("/")[2:]]
        kind = op.get("op")
        if kind not in ("add", "replace", "remove") or len(keys) > 2:
            return {}, {}
        if not keys:
            value = op.get("value") if kind != "remove" else {}
            res = {k: dict(v) for k, v in value.items() if isinstance(v, dict)} \
                if isinstance(value, dict) else {}
        elif len(keys) == 1:
            if kind == "remove":
                res.pop(keys[0], None)
            else:
                value = op.get("value")
                res[keys[0]] = dict(value) if isinstance(value, dict) else {}
        else:
            part = res.setdefault(keys[0], {})
            if kind == "remove":
                part.pop(keys[1], None)
            else:
                part[keys[1]] = str(op.get("value"))
    return res.get("requests") or {}, res.get("limits") or {}


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so both containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.vault cpu and memory, which krm-fn writes "
            f"there)")
