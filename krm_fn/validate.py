"""Validate mode (`spec.mode: validate`, `krm-fn run --mode validate`): the same rules as
mutate mode, but nothing is changed and nothing is emitted; every change mutate mode would
make becomes an error result naming the item and the field.

Why errors: a validator is there to fail a pipeline whose manifests are not pinned (a kpt
`validators:` entry, a CI check of rendered output after kustomize silently skipped an exec
function without `--enable-exec`, reference/krm.md §3 and cases.md C20). kpt runs
validators after the mutators, and krm-fn is idempotent, so a package that went through the
krm-fn mutator validates clean; one that did not fails with exit 1.

Severities, from mutate mode's results:
- a field mutate mode would change: error (`field.currentValue`/`proposedValue` set), with
  the reason from mutate mode's info for that field when there is one;
- an object mutate mode would emit (the node pool's kubelet config): error, except a
  local-config one (format `kubelet-config`), which kustomize drops from its output: warning;
- an emitted object present but out of date (mutate would rewrite it): error;
- mutate mode's errors stay errors (the item is left unchanged either way), its warnings stay
  warnings (advice that no edit can fix, such as a KServe cluster-wide container) and do not
  fail validation; its infos about changes are replaced by the errors above.
"""
from __future__ import annotations

import copy
import json

from krm_fn.pod import Edits, path_str
from krm_fn.results import ERROR, INFO, WARNING, Result
from krm_fn.workloads import get_path

LOCAL_CONFIG = "config.kubernetes.io/local-config"


def _show(v: object) -> str:
    return json.dumps(v, sort_keys=False)


def _annotations(obj: dict) -> dict:
    md = obj.get("metadata")
    a = md.get("annotations") if isinstance(md, dict) else None
    return a if isinstance(a, dict) else {}


def _file_of(obj: dict) -> dict | None:
    """The `file` of a result about `obj` (kpt path annotations), as the engine sets it."""
    ann = _annotations(obj)
    path = ann.get("internal.config.kubernetes.io/path", ann.get("config.kubernetes.io/path"))
    if not path:
        return None
    index = ann.get("internal.config.kubernetes.io/index",
                    ann.get("config.kubernetes.io/index", "0"))
    file = {"path": str(path)}
    if str(index).isdigit() and int(index):
        file["index"] = int(index)
    return file


def changes(obj: dict, ops: list) -> list[tuple[tuple, object, object]]:
    """The real changes `ops` ((path tuple, value) pairs, pod.Edits) make to `obj`:
    [(path, old, new)] in first-touched order, old/new None when absent; ops that write the
    value already there are not changes. `obj` is not modified."""
    work = copy.deepcopy(obj)
    edits = Edits(work)
    order: list[tuple] = []
    for path, value in ops:
        edits.set(path, value)
        if path not in order:
            order.append(path)
    out = []
    for path in order:
        old, new = get_path(obj, path), get_path(work, path)
        if old != new:
            out.append((path, old, new))
    return out


def _message(old: object, new: object, reason: str | None) -> str:
    """`would change from "3500m" to "4": <reason>` (the field path is the result's own)."""
    if old is None:
        text = f"not pinned: would be set to {_show(new)}"
    elif new is None:
        text = f"not pinned: would be removed (now {_show(old)})"
    else:
        text = f"not pinned: would change from {_show(old)} to {_show(new)}"
    return f"{text}; {reason}" if reason else text


def report(items: list, out, fc_ref) -> object:
    """Turn mutate mode's `out` (engine.Output for `items`) into validate mode's: no ops, no
    replacements, nothing emitted; results as described in the module docstring, plus one
    closing result on the function config (`fc_ref`): an error counting what would change,
    or an info that nothing would. Returns a new engine.Output with mode "validate"."""
    from krm_fn.engine import Output, ref_of

    changed_refs = {ref_of(items[i]) for i in list(out.ops) + list(out.replace)}
    emitted_refs = {ref_of(o) for o in out.emitted}
    # mutate mode's infos that describe a change (their field is about to become an error)
    reasons: dict[tuple, str] = {}
    kept: list[Result] = []
    for r in out.results:
        if r.severity == INFO and r.ref is not None and (
                r.ref in emitted_refs or (r.ref in changed_refs and r.path)):
            reasons.setdefault((r.ref, r.path), r.message)
            continue
        if r.severity == WARNING and r.ref in {ref_of(items[i]) for i in out.replace}:
            kept.append(Result(f"would be rewritten to the node plan: {r.message}", ERROR,
                               r.ref, r.path, r.current, r.proposed, r.file))
            continue
        kept.append(r)

    new: list[Result] = []
    fields = 0
    for i in sorted(out.ops):
        obj = items[i]
        ref, file = ref_of(obj), _file_of(obj)
        for path, old, value in changes(obj, out.ops[i]):
            fields += 1
            p = path_str(path)
            new.append(Result(_message(old, value, reasons.get((ref, p))), ERROR, ref,
                              p, None if old is None else _text(old),
                              None if value is None else _text(value), file))
    would_emit = 0
    for obj in out.emitted:
        ref = ref_of(obj)
        local = str(_annotations(obj).get(LOCAL_CONFIG, "false")) != "false"
        reason = reasons.get((ref, None)) or "generated by krm-fn for the node pool"
        if local:
            new.append(Result(f"would be emitted ({reason}); it is local-config, so kustomize "
                              f"drops it from rendered output and its absence here is expected "
                              f"only in kustomize output", WARNING, ref))
        else:
            would_emit += 1
            new.append(Result(f"missing: mutate mode would emit it ({reason})", ERROR, ref))

    items_changed = len({ref_of(items[i]) for i in out.ops if changes(items[i], out.ops[i])})
    rewritten = len(out.replace)
    if fields or would_emit or rewritten:
        parts = []
        if fields:
            parts.append(f"{fields} field(s) of {items_changed} item(s) would change")
        if rewritten:
            parts.append(f"{rewritten} generated object(s) are out of date")
        if would_emit:
            parts.append(f"{would_emit} object(s) would be emitted")
        closing = Result(f"validate mode: {'; '.join(parts)}. Nothing was changed: run krm-fn "
                         f"in mutate mode (the Kptfile mutator, the kustomize transformer or "
                         f"`krm-fn run`) before this check", ERROR, fc_ref)
    elif any(r.severity == ERROR for r in kept):
        closing = None
    else:
        closing = Result("validate mode: nothing would change", INFO, fc_ref)
    results = kept + new + ([closing] if closing else [])
    return Output(results=results, pools=list(getattr(out, "pools", [])), mode="validate")


def _text(v: object) -> str:
    """A field value as KRM results carry it: strings as they are, other values as JSON."""
    return v if isinstance(v, str) else _show(v)
