"""The Change record: one write krm-fn makes to one input item, and what is derived from it.

Rules write through `PodView.set` / `Edits.set` (krm_fn/pod.py); each write is a `Change`
holding the field path, the value before and after, the rule that made it and, when the rule
explains it, the message and severity. Everything downstream is a function of the changes:

- `ops(changes)`: the (path, value) pairs the YAML layer writes into the input text;
- `result(change, file)`: the KRM result (functions-spec `results` entry) of a change that
  has a message;
- `results(findings, file)`: the KRM results of a pod's or an item's findings, an ordered mix
  of `Change`s (writes) and plain `Result`s (warnings and errors that are not writes);
- `net(item, changes)`: per field, the input value and the final value (validate mode, the
  `--report` table).

Shape of a KRM result: kustomize `cmd/config/docs/api-conventions/functions-spec.md`
(https://github.com/kubernetes-sigs/kustomize/blob/master/cmd/config/docs/api-conventions/functions-spec.md).
"""
from __future__ import annotations

import functools
from collections.abc import Iterable

from collections import namedtuple

from krm_fn import objects, quantity
from krm_fn.results import INFO, WARNING, Ref, Result, value_text
from krm_fn.workloads import get_path


class Change(namedtuple("Change", "index ref path old new rule severity message upstream",
                        defaults=(None, INFO, None, None))):
    """One write to an input item.

    `index`: the item's index in the input list (None until the pipeline knows it);
    `ref`: the item's identity; `path`: the field path tuple from the object root (str keys,
    int list indices); `old`: the value at `path` just before this write, in krm-fn's
    working copy (None when absent); `new`: the value written (plain data: str, dict, list);
    `rule`: ID of the rule that wrote it (krm_fn.rules.rule_id; None outside the rules);
    `severity`: info, or warning for a change the user should look at; `message`: why, as
    the KRM result says it (None: the write is reported by a separate result, or not at
    all); `upstream`: an optional URL of the public source the change rests on. A value:
    nothing changes a Change after it is made (`_replace` makes another).
    """

    __slots__ = ()


def path_str(path: tuple) -> str:
    """(`spec`, `containers`, 0, `env`) -> `spec.containers[0].env`; keys with `.` or `/`
    are bracketed: `nodeSelector['krm-fn.dev/cpu-pinning']`. Cached: the items of a render
    share their field paths."""
    return _path_str(path if path.__class__ is tuple else tuple(path))


@functools.lru_cache(maxsize=8192)
def _path_str(path: tuple) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif "." in p or "/" in p or not p:
            out += f"['{p}']"
        else:
            out += ("." if out else "") + p
    return out


def value_shown(value: object) -> str | None:
    """A changed value as a KRM result's currentValue/proposedValue: strings as they are,
    other values as JSON (spaces after separators); None for None."""
    if value is None or isinstance(value, str):
        return value
    import json     # here, not at the top: a render's values are mostly strings (start-up)
    return json.dumps(value)


_CPU_FIELDS = (("resources", "requests", "cpu"), ("resources", "limits", "cpu"))


def severity(finding) -> str:
    """The severity of a finding's result (`finding`: a Change, or a plain Result): the one
    it was made with, raised from info to warning when it is one a kustomize user must see
    (kustomize prints no info result; warnings reach stderr with some runners,
    functions-spec.md):

    - a write to, or a note about, a shared object that every pod of a kind reads (KServe's
      `inferenceservice-config` and ClusterStorageContainer, Knative's `config-deployment`:
      krm_fn.objects.CLUSTER, told by `shared`);
    - a Change that lowers a cpu request or limit of a container or a pod (`lowers_cpu`:
      cpuRounding down, an init container capped or moved to the shared pool), which takes
      CPU time away from it.
    """
    sev = finding.severity
    if sev != INFO:
        return sev
    if (finding.__class__ is Change and lowers_cpu(finding)) or shared(finding.ref):
        return WARNING
    return INFO


def lowers_cpu(change: Change) -> bool:
    """True when `change` writes `resources.requests.cpu` or `resources.limits.cpu` (the
    path's last three keys: a container's, or a pod's `spec.resources`) to a quantity below
    the one there before (quantities compared as krm_fn.quantity.parse_cpu reads them);
    False for a new value, or one of the two that does not parse."""
    path = change.path
    if len(path) < 3 or path[-1] != "cpu" or tuple(path[-3:]) not in _CPU_FIELDS \
            or change.old is None:
        return False
    try:
        return quantity.parse_cpu(change.new).nanos < quantity.parse_cpu(change.old).nanos
    except (ValueError, TypeError):
        return False


def shared(ref: Ref | None) -> bool:
    """True when `ref` names a shared cluster object krm-fn fixes (krm_fn.objects.CLUSTER:
    recognised by kind, name and namespace, `objects.cluster_tag`)."""
    if ref is None or ref.kind not in objects.CLUSTER_KINDS:
        return False
    md = {"name": ref.name}
    if ref.namespace:
        md["namespace"] = ref.namespace
    return objects.cluster_tag({"apiVersion": ref.api_version, "kind": ref.kind,
                                "metadata": md}) is not None


def result(change: Change, file: dict | None = None) -> Result:
    """The KRM result of `change` (which must have a message): its message and severity
    (`severity`: info raised to warning for a shared object or a lower cpu), the item's
    ref, the field path with the value before (`currentValue`, when there was one) and
    after (`proposedValue`), and `file` ({path, index?}) when given."""
    return Result(change.message, severity(change), change.ref, path_str(change.path),
                  None if change.old is None else value_text(change.old), value_shown(change.new),
                  file, rule_tags(change.rule))


def results(findings: Iterable, file: dict | None = None) -> list[Result]:
    """KRM results of `findings` (Changes and Results, in order): a Change with a message
    becomes its result (`result`), a Change without one none; a Result stays as it is but
    for its severity (`severity`). Every result gets `file` when given."""
    out: list[Result] = []
    for f in findings:
        if isinstance(f, Change):
            if f.message is not None:
                out.append(result(f, file))
        else:
            sev = severity(f)
            out.append(f if file is None and sev == f.severity else
                       _with_file(f, f.file if file is None else file, sev))
    return out


def _with_file(r: Result, file: dict | None, sev: str) -> Result:
    return Result(r.message, sev, r.ref, r.path, r.current, r.proposed, file, r.tags)


def rule_tags(rule: str | None) -> tuple:
    """A result's tags naming `rule` ((("rule", ID),)); () for None."""
    return (("rule", rule),) if rule else ()


def ops(changes: Iterable[Change]) -> list[tuple[tuple, object]]:
    """The (path tuple, value) pairs the YAML layer writes into the input, in write order."""
    return [(c.path, c.new) for c in changes]


def net(item: dict, changes: Iterable[Change]) -> list[tuple[tuple, object, object, Change]]:
    """Per field path written, in first-written order: (path, value in the input `item`,
    last value written, the last Change there), leaving out fields that end with the value
    they had (None for an absent value)."""
    last: dict[tuple, Change] = {}
    for c in changes:
        last[c.path] = c
    out = []
    for path, c in last.items():
        old = get_path(item, path)
        if old != c.new:
            out.append((path, old, c.new, c))
    return out
