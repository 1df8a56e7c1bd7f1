"""The quantity fields of the input's objects that the verdict reads (a LimitRange, a
ResourceQuota, a RuntimeClass, a `topology.fromNode` Node or NodeResourceTopology, a
NIMService's container resources (objects/passthrough.py)), read as
the API server reads them: a spelling whose two readings differ is an error naming the
object, the field and both (krm_fn/numbers.py `api_quantity`). Containers' and pod-level
`resources` are checked where the rules read them (rules/facts.py `read_pair`,
rules/podlevel.py).

kubectl and the API server's YAML reader (sigs.k8s.io/yaml, go-yaml's resolve.go) read an
unquoted `cpu: 010` as the number 8, and resource.Quantity takes a JSON number's text
(https://github.com/kubernetes/apimachinery/blob/v0.37.2/pkg/api/resource/quantity.go
UnmarshalJSON), so a LimitRange `max: {cpu: 010}` is 8 cores; krm-fn reads the item's
scalars as the strings written (`010`, 10 as a quantity). With every such spelling refused
here, each other one means one amount to both, and the readers (admission/limitrange.py,
admission/resourcequota.py, admission/build.py `runtime_class`, node/from_node.py,
objects/passthrough.py) parse
the text as written. Whether a scalar was quoted comes from the YAML (`retyped`,
resourcelist.retyped): a quoted `"010"` is the string 010, 10 to ParseQuantity too.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.results import ERROR, Result

_ANY = None
# (apiVersion group, kind) -> field paths; _ANY: every key of a mapping or index of a list,
# a tuple: these keys
FIELDS = {
    ("", "LimitRange"): (("spec", "limits", _ANY, ("min", "max", "default",
                                                   "defaultRequest", "maxLimitRequestRatio"),
                          _ANY),),
    ("", "ResourceQuota"): (("spec", "hard", _ANY),),
    ("node.k8s.io", "RuntimeClass"): (("overhead", "podFixed", _ANY),),
    ("", "Node"): (("status", "capacity", _ANY), ("status", "allocatable", _ANY)),
    ("topology.node.k8s.io", "NodeResourceTopology"): (
        ("zones", _ANY, "resources", _ANY, ("capacity", "allocatable", "available")),),
    ("apps.nvidia.com", "NIMService"): (("spec", "resources", ("requests", "limits"), _ANY),),
}
_KINDS = frozenset(k for _, k in FIELDS)
TAGS = (("rule", "verdict"), ("part", "quantity"))


def check(items: list, retyped=None) -> list:
    """ERROR Results for every quantity field of FIELDS in `items` (plain objects, scalars
    as strings) that kubectl and the API server read as another amount than its text
    (numbers.api_quantity); `retyped`: resourcelist.retyped(doc) (f(i, path): whether the
    scalar there is unquoted), None when not known: such a spelling then fails closed
    whether quoted or not."""
    out: list = []
    for i, obj in enumerate(items):
        if not isinstance(obj, dict) or obj.get("kind") not in _KINDS:
            continue
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        for path in FIELDS.get((group, obj.get("kind")), ()):
            for where, value in _leaves(obj, path, ()):
                _, why = numbers.api_quantity(value)
                if why is not None and retyped is not None:
                    _, why = numbers.api_quantity(value, retyped(i, where))
                if why is not None:
                    out.append(_result(obj, where, why))
    return out


def _leaves(node, path: tuple, at: tuple):
    """(path, value) of each scalar (str) `path` reaches from `node`."""
    if not path:
        if isinstance(node, str):
            yield at, node
        return
    step, rest = path[0], path[1:]
    if isinstance(node, dict):
        keys = node if step is _ANY else (step,) if isinstance(step, str) else step
        for k in keys:
            if k in node:
                yield from _leaves(node[k], rest, at + (k,))
    elif isinstance(node, list) and step is _ANY:
        for n, child in enumerate(node):
            yield from _leaves(child, rest, at + (n,))


def _result(obj: dict, where: tuple, why: str) -> Result:
    from krm_fn.pipeline.select import ref_of
    ref = ref_of(obj)
    dotted = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where)[1:]
    return Result(f"{ref.kind} {ref.name} {dotted}: {why}", ERROR, ref, dotted, tags=TAGS)
