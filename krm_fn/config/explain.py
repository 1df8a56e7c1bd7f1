"""`krm-fn explain`: the documentation of a config field or a rule, from the same sources
the function uses (the config definition, krm_fn.config.spec, for fields and flat ConfigMap
keys: each field's type describes itself; each rule module's docstring for rules).

Field names are dotted paths from `spec` (`spec.` optional), with `[]` or `[N]` allowed after
a list (`nodePools[0].kubelet.topologyManagerPolicy`, `nodePools.kubelet...`), or a flat
ConfigMap key (`threadsPerCore`). Rules are named `rule NAME` (module names in
krm_fn/rules/: `rule resources`); `rule` alone lists them.
"""
from __future__ import annotations

import difflib
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from krm_fn import config
from krm_fn.config import spec
from krm_fn.config.fields import Field, Object, ObjectList
from krm_fn.config.types import List

WIDTH = 88
_INDENT = "    "


class UnknownName(LookupError):
    """No config field, flat ConfigMap key or rule has this name. `suggestions`: close
    names (difflib), best first, at most 5."""

    def __init__(self, name: str, suggestions: list[str], what: str = "config field or "
                                                                        "ConfigMap key"):
        shown = name if len(name) <= 80 else name[:77] + "..."
        super().__init__(f"no {what} named {shown!r}")
        self.name = name
        self.suggestions = suggestions


@dataclass(frozen=True)
class Found:
    """A field found by `lookup`: `path` the display path (`spec.nodePools[].name`),
    `prefix` its (name, kind) parents as in config.FLAT_KEYS, `field` the Field."""

    path: str
    prefix: tuple
    field: Field


def _all_fields(fields=None, prefix: tuple = ()):
    """Every field of the definition (spec.SCHEMA) as (prefix, Field), depth first, in
    definition order."""
    for f in spec.SCHEMA if fields is None else fields:
        yield prefix, f
        if not f.type.leaf:
            yield from _all_fields(f.fields, prefix + ((f.name, f.kind),))


def _display(prefix: tuple, f: Field) -> str:
    parts = [n + ("[]" if k == "objectlist" else "") for n, k in prefix] + [f.name]
    return "spec." + ".".join(parts)


_SEGMENT = re.compile(r"([A-Za-z][A-Za-z0-9]*)(\[[0-9]*\])?")


def _rules() -> list:
    """(ID, module) of every rule in the order the engine applies them: `merged` (run by
    the engine before the others), then rules.RULES."""
    from krm_fn.rules import RULES, merged, rule_id
    return [(rule_id(m), m) for m in ((merged, *RULES) if merged not in RULES else RULES)]


def _steps() -> list:
    """(ID, module) of the pipeline steps whose results carry a `rule` tag of their own
    though no rule module makes them: the verdict (krm_fn.pipeline.verdict) and the
    admission policy's label (krm_fn.guard.targets, spec.output.admissionPolicy). The IDs
    are the tags those modules write."""
    from krm_fn.guard import targets
    from krm_fn.pipeline import verdict
    return [(dict(verdict.VERDICT_TAGS)["rule"], verdict), (targets.RULE, targets)]


def _source(module) -> str:
    """The file of rule `module`, from the repository root (`krm_fn/rules/threads.py`)."""
    return module.__name__.replace(".", "/") + ".py"


def _normal(text: str) -> str:
    t = re.sub(r"\[[0-9]*\]", "", text.strip())
    return t[len("spec."):] if t.startswith("spec.") else t


def _suggest(name: str, rules: bool = False) -> list[str]:
    """Close names for `name`: fields whose last segment equals its last segment first, then
    difflib matches among field paths, flat keys (and rule names as `rule NAME`)."""
    displays = {_normal(_display(p, f)): _display(p, f) for p, f in _all_fields()}
    query = _normal(name)
    last = query.rsplit(".", 1)[-1].lower()
    out = [d for n, d in displays.items() if n.rsplit(".", 1)[-1].lower() == last]
    pool: dict[str, str] = dict(displays)
    pool.update({k: k for k in config.FLAT_KEYS})
    if rules or "." not in query:
        pool.update({n: f"rule {n}" for n, _ in _rules()})
    for m in difflib.get_close_matches(query, list(pool), n=5, cutoff=0.6):
        if pool[m] not in out:
            out.append(pool[m])
    return out[:5]


def lookup(name: str) -> Found | None:
    """The field `name` denotes; None for the top level (`""` or `spec`).

    `name`: a dotted path from spec (`spec.` optional; `[]`/`[N]` allowed after an object
    list or a list) or a flat ConfigMap key. Raises UnknownName with suggestions."""
    text = name.strip()
    if text in ("", "spec"):
        return None
    path = text[len("spec."):] if text.startswith("spec.") else text
    fields, prefix, found = spec.SCHEMA, (), None
    for i, seg in enumerate(path.split(".")):
        m = _SEGMENT.fullmatch(seg)
        f = next((x for x in fields if m and x.name == m.group(1)), None)
        if f is None or (m.group(2) and not isinstance(f.type, (ObjectList, List))):
            found = None
            break
        found = Found("", prefix, f)
        if i + 1 < len(path.split(".")):
            if f.type.leaf:
                found = None
                break
            prefix += ((f.name, f.kind),)
            fields = f.fields
    if found is None and text in config.FLAT_KEYS:
        p, f = config.FLAT_KEYS[text]
        found = Found("", p, f)
    if found is None:
        raise UnknownName(name, _suggest(name))
    return Found(_display(found.prefix, found.field), found.prefix, found.field)


def _value(v: Any) -> str:
    """A default or choice as YAML flow text: "1.34" quoted when YAML would not read it as
    a string, true/false, [a, b], {k: v}."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_value(k)}: {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str) and (v == "" or re.fullmatch(r"[-+.0-9][-+.0-9eE]*|true|false|null|"
                                                      r"[Tt]rue|[Ff]alse|~", v)):
        return '"' + v + '"'
    return str(v)


def _wrap(text: str, indent: str = _INDENT) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False) or [indent.rstrip()]


def _default_text(f: Field) -> str | None:
    if isinstance(f.type, Object):
        return None
    if isinstance(f.type, ObjectList):
        return "[]" if f.default == [] else "one entry with the defaults below"
    if f.default is None:
        return "null (not set)" if f.nullable else None
    return _value(f.default)


def _flat_text(prefix: tuple, f: Field) -> str | None:
    if not f.type.leaf:
        return None
    if f.flat == "-" or any(pf.flat == "-" for pf in _parents(prefix)):
        return "none (typed form only)"
    key = f.flat or f.name
    if any(k == "objectlist" for _, k in prefix):
        return f"{key} (sets the first node pool)"
    return key


def _parents(prefix: tuple) -> list[Field]:
    out, fields = [], spec.SCHEMA
    for name, _ in prefix:
        f = next(x for x in fields if x.name == name)
        out.append(f)
        fields = f.fields
    return out


def _summary_lines(fields) -> list[str]:
    """Sub-field listing: `  name <type> = default` then the doc, indented."""
    lines = []
    for f in fields:
        head = f"  {f.name} <{f.kind}>"
        d = _default_text(f)
        if d is not None and not isinstance(f.type, ObjectList):
            head += f" = {d}"
        lines.append(head)
        lines.extend(_wrap(f.doc, "      "))
    return lines


def explain_field(name: str) -> str:
    """The documentation of one config field (see `lookup` for `name`), or of the top level
    for "" / "spec": path, type, default, allowed values, range, flat ConfigMap key, the
    doc text and the sub-fields. Raises UnknownName."""
    found = lookup(name)
    if found is None:
        lines = [f"{config.KIND} ({config.API_VERSION}): the function config.",
                 *_wrap("Also accepted: a v1 ConfigMap with flat keys under data (kpt fn eval "
                        "-- key=value). `krm-fn explain FIELD` for a field (a path from spec, "
                        "such as nodePools.kubelet.topologyManagerPolicy, or a ConfigMap key), "
                        "`krm-fn explain rule NAME` for a rule, `krm-fn schema` for the JSON "
                        "Schema.", ""),
                 "", "FIELDS (spec):", *_summary_lines(spec.SCHEMA),
                 "", *textwrap.wrap("RULES: " + ", ".join(n for n, _ in _rules()), WIDTH,
                                    subsequent_indent="       ")]
        return "\n".join(lines) + "\n"
    f = found.field
    rows = [("FIELD", found.path), ("TYPE", f"{f.type.label} <{f.kind}>")]
    d = _default_text(f)
    if d is not None:
        rows.append(("DEFAULT", d))
    rows += f.type.facts()
    flat = _flat_text(found.prefix, f)
    if flat is not None:
        rows.append(("CONFIGMAP KEY", flat))
    width = max(len(k) for k, _ in rows) + 2
    lines = []
    for k, v in rows:
        lines += textwrap.wrap(v, WIDTH, initial_indent=f"{k + ':':<{width}}",
                               subsequent_indent=" " * width, break_on_hyphens=False,
                               break_long_words=False)
    if f.doc:
        lines += ["", "DESCRIPTION:", *_wrap(f.doc)]
    if f.fields:
        lines += ["", "FIELDS:", *_summary_lines(f.fields)]
    return "\n".join(lines) + "\n"


def explain_rule(name: str | None) -> str:
    """The documentation of rule `name` (a module of krm_fn/rules/, in the order applied):
    its module docstring. `None`: the list of rules with their first docstring line.
    Raises UnknownName."""
    rules = _rules()
    if name is None:
        width = max(len(n) for n, _ in rules) + 2
        lines = ["RULES (in the order they run; `krm-fn explain rule NAME` for one):"]
        for n, m in rules:
            first = " ".join(inspect.cleandoc(m.__doc__ or "").split("\n\n")[0].split())
            first = first.split(": ", 1)[1] if ": " in first else first
            lines += textwrap.wrap(first, WIDTH, initial_indent=f"  {n:<{width}}",
                                   subsequent_indent=" " * (width + 2),
                                   break_on_hyphens=False, break_long_words=False)
        return "\n".join(lines) + "\n"
    for i, (n, m) in enumerate(rules):
        if n == name:
            # a rule whose documentation is assembled from its registry has `explain()`
            doc = m.explain() if hasattr(m, "explain") else inspect.cleandoc(
                m.__doc__ or "(no documentation)")
            head = f"RULE: {n} ({i + 1} of {len(rules)}, {_source(m)})"
            return head + "\n\n" + doc + "\n"
    for n, m in _steps():
        if n == name:
            head = (f"RESULTS TAGGED rule: {n} (not a rule: a step after the rules, "
                    f"{_source(m)})")
            return head + "\n\n" + inspect.cleandoc(m.__doc__) + "\n"
    names = [n for n, _ in rules]
    raise UnknownName(name, difflib.get_close_matches(name, names, n=3, cutoff=0.5), "rule")
