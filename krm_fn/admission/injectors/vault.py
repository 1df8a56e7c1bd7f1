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
(container_sidecar.go, container_init_sidecar.go, from vault-k8s 1.1.0): its operations
whose `path` or `from` is under `/resources` are applied; a value copied or moved into
`/resources` from elsewhere in the container leaves the resources unknown, which krm-fn
reads as none (Burstable).

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
    """(requests, limits) after the JSON patch `patch` (text, RFC 6902) of the container, as
    vault-k8s applies it to the marshalled container (evanphx/json-patch): add, replace,
    remove, copy and move whose `path` or `from` is under /resources; ({}, {}) when a value
    comes into /resources from elsewhere in the container (krm-fn does not model the rest of
    it); unchanged for no patch, or one that is not JSON."""
    if not isinstance(patch, str) or "/resources" not in patch:
        return req, lim
    import copy
    import json
    try:
        ops = json.loads(patch)
    except ValueError:
        return req, lim
    box = {"resources": {"requests": dict(req), "limits": dict(lim)}}
    for op in ops if isinstance(ops, list) else ():
        if not isinstance(op, dict):
            continue
        path, src, kind = _pointer(op.get("path")), _pointer(op.get("from")), op.get("op")
        mine = path is not None and path[:1] == ["resources"]
        if kind in ("copy", "move") and src is not None and src[:1] == ["resources"]:
            value = copy.deepcopy(_get(box, src))
            if kind == "move":
                _put(box, src, None)
            if mine:
                _put(box, path, value)
        elif mine and kind in ("copy", "move"):
            return {}, {}       # a value from outside the resources
        elif mine and kind in ("add", "replace", "remove"):
            _put(box, path, None if kind == "remove" else copy.deepcopy(op.get("value")))
    res = box.get("resources") if isinstance(box.get("resources"), dict) else {}
    return tuple({k: str(v) for k, v in part.items()} if isinstance(part, dict) else {}
                 for part in (res.get("requests"), res.get("limits")))


def _pointer(text) -> list | None:
    """The keys of JSON pointer `text` (RFC 6901: ~1 is /, ~0 is ~), or None."""
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    return [k.replace("~1", "/").replace("~0", "~") for k in text.split("/")[1:]]


def _get(box: dict, keys: list):
    cur = box
    for k in keys:
        cur = cur.get(k) if isinstance(cur, dict) else None
    return cur


def _put(box: dict, keys: list, value) -> None:
    """Set `value` at `keys` in nested dicts (None: remove it); a missing parent: nothing."""
    parent = _get(box, keys[:-1])
    if isinstance(parent, dict):
        if value is None:
            parent.pop(keys[-1], None)
        else:
            parent[keys[-1]] = value


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so both containers get request == limit ("" when they do)."""
    if base.guaranteed(added):
        return ""
    return (f"set the pod template annotations {', '.join(CPU + MEMORY)} with request == "
            f"limit (or spec.workloads.injection.vault cpu and memory, which krm-fn writes "
            f"there)")
