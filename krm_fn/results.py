"""KRM function results (functions-spec `results`): one `Result` per change, warning or error.

Shape (kustomize cmd/config/docs/api-conventions/functions-spec.md)::

    message: str (required)       severity: error | warning | info (always written)
    resourceRef: {apiVersion, kind, name, namespace?}
    field: {path, currentValue?, proposedValue?}
    file: {path, index?}
    tags: {rule: <rule ID>}       (map[string]string; the rule that made the result)

`tags` is kyaml's `Result.Tags` ("an unstructured key value map stored with a result",
https://github.com/kubernetes-sigs/kustomize/blob/master/kyaml/fn/framework/result.go).
"""
from __future__ import annotations

from collections import namedtuple

ERROR, WARNING, INFO = "error", "warning", "info"


def value_text(value: object) -> str:
    """A value as one line for messages and a result's currentValue/proposedValue: strings
    as they are, everything else as compact JSON (true/false, numbers, mappings, lists)."""
    if isinstance(value, str):
        return value
    import json     # here, not at the top: a render's values are mostly strings (start-up)
    return json.dumps(value, separators=(",", ":"), sort_keys=False)


class Ref(namedtuple("Ref", "api_version kind name namespace", defaults=("",))):
    """Identity of a KRM object: apiVersion, kind, name, namespace ("" when unset)."""

    __slots__ = ()

    def as_dict(self) -> dict:
        d = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            d["namespace"] = self.namespace
        return d

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name}"


class Result(namedtuple("Result", "message severity ref path current proposed file tags",
                        defaults=(INFO, None, None, None, None, None, ()))):
    """One result. `path` is the field path (`spec.template.spec.containers[0].resources
    .limits.cpu`); `current`/`proposed` are the values before and after, as strings;
    `tags`: (key, value) string pairs, written as the `tags` map (`rule`: the ID of the rule
    that made the result)."""

    __slots__ = ()

    def as_dict(self) -> dict:
        d: dict[str, object] = {"message": self.message, "severity": self.severity}
        if self.ref is not None and (self.ref.kind or self.ref.name):
            d["resourceRef"] = self.ref.as_dict()       # none for an object with neither
        if self.path is not None:
            fld: dict[str, object] = {"path": self.path}
            if self.current is not None:
                fld["currentValue"] = self.current
            if self.proposed is not None:
                fld["proposedValue"] = self.proposed
            d["field"] = fld
        if self.file:
            d["file"] = dict(self.file)
        if self.tags:
            d["tags"] = dict(self.tags)
        return d

    def line(self) -> str:
        """One human-readable line, as printed on stderr: `error: Deployment ns/x spec...: msg`."""
        ref = str(self.ref).strip() if self.ref else ""      # "" for no kind and no name
        where = " ".join(x for x in (ref, self.path or "") if x)
        line = f"{self.severity}: {where + ': ' if where else ''}{self.message}"
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
