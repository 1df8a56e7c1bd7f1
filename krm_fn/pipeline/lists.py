"""`kind: List` (what `kubectl get -o yaml` writes) and every other `<Kind>List` with an
`items` field, read as the objects it holds, as kubectl and kustomize read them.

kustomize inlines such an object's items wherever it reads resources
(sigs.k8s.io/kustomize/api resource/factory.go `inlineAnyEmbeddedLists`: a kind ending in
`List` with an `items` key; `items: null` is an empty list, items that are not a list are an
error; lists inside lists are inlined too), and `kubectl apply -f` applies each item
(k8s.io/cli-runtime resource.FlattenListVisitor). So krm-fn tunes and judges each item as an
object of its own, and writes its edits back inside the List document (`items[j]...`), which
keeps every other byte of the file: the output is still one List.

`expand(items)` -> (flat items, origin, results): origin[k] = (index of the input item,
path prefix of flat item k inside it: () for an item that is no List); None when the input
holds no List (the common case: nothing is copied). Results: an error per List whose
`items` is not a list or holds something other than objects (kustomize refuses such a file;
krm-fn leaves the List unchanged).
"""
from __future__ import annotations

from krm_fn.results import ERROR, Result

MAX_DEPTH = 8           # Lists inside Lists inlined at most this deep


def is_list(obj) -> bool:
    """Whether `obj` is a collection kustomize inlines: a kind ending in `List` with an
    `items` key."""
    return obj.__class__ is dict and isinstance(obj.get("kind"), str) and \
        obj["kind"].endswith("List") and "items" in obj


def expand(items: list) -> tuple[list, list | None, list]:
    """(flat items, origin or None, results): see the module docstring."""
    if not any(is_list(o) for o in items):
        return items, None, []
    flat: list = []
    origin: list = []
    results: list = []
    for i, obj in enumerate(items):
        _add(obj, i, (), flat, origin, results, 0)
    return flat, origin, results


def _add(obj, i: int, prefix: tuple, flat: list, origin: list, results: list,
         depth: int) -> None:
    if not is_list(obj) or depth >= MAX_DEPTH:
        flat.append(obj)
        origin.append((i, prefix))
        return
    inner = obj["items"]
    if inner is None:
        return                                  # an empty list
    from krm_fn.changes import path_str
    from krm_fn.pipeline.select import ref_of
    where = path_str(prefix + ("items",)) if prefix else "items"
    if not isinstance(inner, list) or not all(o.__class__ is dict for o in inner):
        what = "not a list" if not isinstance(inner, list) else "a list holding a non-object"
        results.append(Result(
            f"{obj['kind']} {where} is {what}: kustomize refuses such a file (expected "
            f"array in {obj['kind']}/items) and kubectl cannot apply it; krm-fn leaves it "
            f"unchanged", ERROR, ref_of(obj), where))
        flat.append(obj)
        origin.append((i, prefix))
        return
    for j, item in enumerate(inner):
        _add(item, i, prefix + ("items", j), flat, origin, results, depth + 1)


def inner_prefix(origin: list | None, k: int) -> tuple:
    """The path prefix of flat item k inside its input item (() when not inside a List)."""
    return () if origin is None else origin[k][1]
