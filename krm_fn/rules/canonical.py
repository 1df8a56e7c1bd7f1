"""canonical: in every container krm-fn changes, cpu and memory are written as the API
server stores them.

The API server keeps a resource quantity in canonical form (apimachinery
`resource.Quantity`, k8s.io/apimachinery/pkg/api/resource/quantity.go `CanonicalizeBytes`):
`1000m` of cpu is stored as `1`, `0.5` and `"0.5"` as `500m`, `2000m` as `2`, `1.0` as `1`;
an amount keeps its family (binary `Mi`/`Gi`, decimal, or `e<exponent>`) with the largest
exact suffix, `1024Mi` as `1Gi`, `1.5Gi` as `1536Mi`, `10e2` as `1e3`; one already in that
form is kept as written (`+1`, `5.`, `1E3`); an amount finer than 1m is stored rounded up
(`3999999999n` as `4`): quantity.stored. A GitOps tool that compares the rendered manifest
with the live object (Argo CD, Flux's drift detection) then shows a difference for every
quantity written another way. krm-fn writes its own values canonically; in a container it
changes (any rule's write inside the container), this rule rewrites the other cpu and memory
requests and limits whose text is not canonical (info results: old and new text). Containers
krm-fn does not change are left as written, byte for byte.
"""
from __future__ import annotations

import functools

from krm_fn import quantity
from krm_fn.pod import PodView

ID = "canonical"
OPTIONS = ()
_RESOURCES = (("cpu", quantity.parse_cpu), ("memory", quantity.parse_memory))


def canonical(res: str, text: object) -> str | None:
    """The canonical text of the `res` ("cpu" or "memory") quantity `text`, or None when it
    does not parse (the resources rule reports it). Cached for a string `text`: the
    containers of a render repeat their quantities."""
    if text.__class__ is str:
        return _canonical_text(res, text)
    return _canonical(res, text)


@functools.lru_cache(maxsize=4096)
def _canonical_text(res: str, text: str) -> str | None:
    return _canonical(res, text)


def _canonical(res: str, text: object) -> str | None:
    parse = dict(_RESOURCES)[res]
    try:
        parse(text)
    except quantity.QuantityError:
        return None
    return quantity.stored(text)[1]


def apply(pod: PodView, ctx) -> None:
    """Rewrite the non-canonical cpu/memory requests and limits of each container of `pod`
    that an earlier rule changed (module docstring)."""
    paths = [ch.path for ch in pod.edits.changes]     # before this rule's own writes
    changed: dict = {}      # {length n: the first n keys of every path in paths}
    for c in pod.containers:
        n = len(c.path)
        prefixes = changed.get(n)
        if prefixes is None:
            prefixes = changed[n] = {p[:n] for p in paths}
        if c.path not in prefixes:
            continue
        for part in ("requests", "limits"):
            values = c.get("resources", part)
            if not isinstance(values, dict):
                continue
            for res, _ in _RESOURCES:
                raw = values.get(res)
                if raw is None or isinstance(raw, (dict, list)):
                    continue
                new = canonical(res, raw)
                if new is None or new == str(raw):
                    continue
                pod.set(c.path + ("resources", part, res), new,
                        f"container {c.name!r}: {part}.{res} {raw} -> {new} (the canonical "
                        f"form the API server stores it in, so GitOps tools show no "
                        f"difference)")
