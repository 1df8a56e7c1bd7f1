"""Step 1 of the pipeline, select: which input items krm-fn tunes or reports on.

Identity (apiVersion, kind, metadata.name as Kubernetes requires them), duplicates, the
local-config and orchestrator objects left alone, `spec.selector`, the
`krm-fn.dev/skip` annotation, and per pod spec the `krm-fn.dev/node-pool`, `krm-fn.dev/cpus`
and `krm-fn.dev/pinned-containers` annotations. Pure functions of plain items (dicts as read
from YAML, scalars as strings); problems are Results, never exceptions.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace

from krm_fn import numbers, objects
from krm_fn.config.checks import is_dns_label
from krm_fn.config.values import short
from krm_fn.matching import LazyPattern
from krm_fn.node.formats import LOCAL_CONFIG_ANNOTATION
from krm_fn.pod import path_str
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.rules.choice import DEFAULT_CONTAINER, PINNED_ANNOTATION  # noqa: F401
from krm_fn.workloads import (get_path, group_of, locations, registered, served_versions,
                               version_of)

SKIP_ANNOTATION = "krm-fn.dev/skip"
POOL_ANNOTATION = "krm-fn.dev/node-pool"
CPUS_ANNOTATION = "krm-fn.dev/cpus"
VERDICT_ANNOTATION = "krm-fn.dev/verdict"
LOCAL_CONFIG = LOCAL_CONFIG_ANNOTATION
_CPUS = LazyPattern(r"[1-9][0-9]{0,3}")


class Picked:
    """One input item the pipeline has something to say about. `index`: its place in the
    input; `findings`: select's results about it (a skipped item, a duplicate, a malformed
    item); `tune`: whether the later steps tune it (then `ref`, `file`, `handled`: a
    whole-object check of krm_fn/objects/ applies, `kind_known`: a workload kind with pod
    specs, `pool_index`/`pool`: the node pool it is placed in, or None, `pool_findings`:
    the error when its node-pool annotation names no pool)."""

    __slots__ = ("index", "obj", "ref", "findings", "tune", "file", "handled", "kind_known",
                 "pool_index", "pool", "pool_findings")

    def __init__(self, index: int, obj: object, ref: Ref | None = None,
                 findings: list | None = None, tune: bool = False, file: dict | None = None,
                 handled: bool = False, kind_known: bool = False,
                 pool_index: int | None = None, pool: SimpleNamespace | None = None,
                 pool_findings: list | None = None) -> None:
        self.index = index
        self.obj = obj
        self.ref = ref
        self.findings = [] if findings is None else findings
        self.tune = tune
        self.file = file
        self.handled = handled
        self.kind_known = kind_known
        self.pool_index = pool_index
        self.pool = pool
        self.pool_findings = [] if pool_findings is None else pool_findings


def ref_of(obj: dict) -> Ref:
    """Ref of a plain object (missing fields become "")."""
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return Ref(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""),
               str(md.get("name") or ""), str(md.get("namespace") or ""))


def annotations_of(obj: object, path: tuple = ("metadata",)) -> dict:
    """The annotations mapping at `path` + annotations of `obj`; {} when absent or not a
    mapping (items are not validated before they are read)."""
    a = get_path(obj, path + ("annotations",))
    return a if isinstance(a, dict) else {}


def is_local_config(obj: dict) -> bool:
    """True when `obj` carries config.kubernetes.io/local-config with any value but "false":
    kustomize drops such objects from its output (`KustTarget.IgnoreLocal`,
    https://github.com/kubernetes-sigs/kustomize/blob/master/api/internal/target/kusttarget.go,
    api/resource/factory.go `DropLocalNodes`: kept only when the key is absent or its value
    is the string "false"; kubernetes-sigs/kustomize#4124). Items are read untyped (every
    scalar a string, krm_fn/yaml/load.py), as kustomize reads annotations: `null`, `~`,
    `""`, `1`, `no`, `False` or a list mark the object local, a `false` in any quoting does
    not (tests/test_local_config.py runs the real kustomize on each spelling)."""
    ann = annotations_of(obj)
    if LOCAL_CONFIG not in ann:
        return False
    v = ann[LOCAL_CONFIG]
    return v != "false"


def file_of(obj: dict) -> dict | None:
    """The `file` of a result about `obj`: {path, index when not 0} from kpt's path and
    index annotations (internal.config.kubernetes.io/* first), or None without a path."""
    ann = annotations_of(obj)
    path = ann.get("internal.config.kubernetes.io/path", ann.get("config.kubernetes.io/path"))
    if not path:
        return None
    index = ann.get("internal.config.kubernetes.io/index",
                    ann.get("config.kubernetes.io/index", "0"))
    file = {"path": str(path)}
    n = numbers.count(str(index))
    if n:
        file["index"] = n
    return file


def shown(v: object) -> str:
    """A found value for a message: `nothing`, `a mapping`, `a list`, or its repr."""
    if v is None:
        return "nothing"
    if isinstance(v, (dict, list)):
        return "a mapping" if isinstance(v, dict) else "a list"
    return numbers.shown(v, 80)


def identity_problem(obj: dict) -> tuple[str, str] | None:
    """(field path, message) when the object lacks a string apiVersion, kind or
    metadata.name, or its metadata, labels or annotations are not mappings; else None."""
    for key in ("apiVersion", "kind"):
        v = obj.get(key)
        if not isinstance(v, str) or not v:
            return key, f"{key} must be a non-empty string, found {shown(v)}"
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return "metadata", f"metadata must be a mapping, found {shown(md)}"
    name = md.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name", f"metadata.name must be a non-empty string, found {shown(name)}"
    if md.get("namespace") is not None and not isinstance(md.get("namespace"), str):
        return "metadata.namespace", "metadata.namespace must be a string"
    for key in ("labels", "annotations"):
        v = md.get(key)
        if v is not None and not isinstance(v, dict):
            return f"metadata.{key}", f"metadata.{key} must be a mapping, found {shown(v)}"
        for k, x in (v or {}).items():
            if x is not None and not isinstance(x, str):
                return f"metadata.{key}['{k}']", f"metadata.{key} values must be strings"
    return None


def identity_key(obj: dict) -> tuple:
    """What makes an item unique in one render: API group, kind, namespace, name and the
    orchestrator's file path (kpt allows the same object in different files)."""
    ref = ref_of(obj)
    ann = annotations_of(obj)
    return (ref.api_version.split("/")[0] if "/" in ref.api_version else "", ref.kind,
            ref.namespace, ref.name,
            str(ann.get("internal.config.kubernetes.io/path",
                        ann.get("config.kubernetes.io/path", ""))))


def _identities(items: list) -> tuple[list, set]:
    """Per item, (identity_problem, identity_key or None) for a mapping, None for another
    item; and the identities that more than one well-formed item carries."""
    out: list = []
    seen, dup = set(), set()
    for obj in items:
        if not isinstance(obj, dict):
            out.append(None)
            continue
        problem = identity_problem(obj)
        key = identity_key(obj) if problem is None else None
        if key is not None:
            (dup if key in seen else seen).add(key)
        out.append((problem, key))
    return out, dup


def selected(obj: dict, sel: SimpleNamespace) -> bool:
    """Whether `obj` matches `spec.selector` (kinds, names, namespaces, matchLabels; an
    empty list matches everything; namespace "" is "default")."""
    md = obj.get("metadata") or {}
    if sel.kinds and obj.get("kind") not in sel.kinds:
        return False
    if sel.names and md.get("name") not in sel.names:
        return False
    if sel.namespaces:
        ns = md.get("namespace") or "default"
        if ns not in sel.namespaces and not (ns == "default" and "" in sel.namespaces):
            return False
    if sel.matchLabels:
        labels = md.get("labels") if isinstance(md.get("labels"), dict) else {}
        if any(str(labels.get(k)) != v for k, v in sel.matchLabels.items()):
            return False
    return True


def skipped(obj: dict) -> bool:
    """Whether `obj` carries krm-fn.dev/skip: "true" (any case)."""
    return str(annotations_of(obj).get(SKIP_ANNOTATION, "")).lower() == "true"


def untuned_because(obj: dict, sel) -> list[str]:
    """What keeps `obj` (plain, well formed) from being tuned, each as the fix to make
    (`add ConfigMap to spec.selector.kinds`, ...); [] when it is tuned. Each part of
    `spec.selector` (`sel`) is asked on its own through `selected`, so the answer follows
    it."""
    if is_local_config(obj):
        return [f"it is local-config ({LOCAL_CONFIG}), which krm-fn leaves unchanged and "
                f"kustomize and kpt leave out of their output: drop that annotation"]
    out = []
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    for f in type(sel).FIELDS:
        alone = type(sel)(**{g.name: getattr(sel, g.name) if g is f else type(g.default)()
                             for g in type(sel).FIELDS})
        if selected(obj, alone):
            continue
        if f.name == "kinds":
            out.append(f"add {obj.get('kind')} to spec.selector.kinds")
        elif f.name == "names":
            out.append(f"add {md.get('name')} to spec.selector.names")
        elif f.name == "namespaces":
            ns = md.get("namespace")
            out.append(f"add {ns} to spec.selector.namespaces" if ns else
                       "add \"\" to spec.selector.namespaces (it is cluster-scoped, which "
                       "counts as namespace default there)")
        else:
            out.append(f"give it the labels of spec.selector.{f.name}")
    if skipped(obj):
        out.append(f"remove its {SKIP_ANNOTATION} annotation")
    return out


def tuned_predicate(cfg) -> Callable[[object], bool]:
    """`tuned(o)`: whether krm-fn tunes item `o` in this render (well formed, not
    local-config, selected, not skipped), for the whole-object checks."""
    def tuned(o: object) -> bool:
        return (isinstance(o, dict) and identity_problem(o) is None and not is_local_config(o)
                and selected(o, cfg.selector) and not skipped(o))
    return tuned


def _item_shape(obj: object) -> str:
    """What a non-mapping item is, for a message: items are read with scalars as strings, so
    `42`, `true` and `"42"` all read as the scalar '42' (never Python's type names)."""
    if obj is None:
        return "null"
    if isinstance(obj, list):
        return "a list"
    return f"the scalar {short(str(obj))}"


def _item(run, i: int) -> tuple[str, str]:
    """("item N", "items[N]") naming item i as the input holds it: inside a `kind: List`
    ("item N, List entry items[J]", "items[N].items[J]"), run.origin."""
    origin = getattr(run, "origin", None)
    if origin is None:
        return f"item {i}", f"items[{i}]"
    n, prefix = origin[i]
    if not prefix:
        return f"item {n}", f"items[{n}]"
    from krm_fn.changes import path_str
    inner = path_str(prefix)
    return f"item {n}, List entry {inner}", f"items[{n}].{inner}"


def picks(items: list, run, progress=None) -> Iterator[Picked]:
    """The items krm-fn tunes or reports on, in input order, as Picked records; items it
    leaves alone without a word (not selected, local-config, kpt's own objects, the function
    config, the first of two duplicates) yield nothing. `run`: the pipeline's load.Run;
    `progress(i, len(items))` is called before item i is looked at."""
    seen_ids: dict[tuple, int] = {}
    identities, duplicated = _identities(items)
    for i, obj in enumerate(items):
        if progress is not None:
            progress(i, len(items))
        if not isinstance(obj, dict):
            name, path = _item(run, i)
            yield Picked(i, obj, findings=[Result(
                f"{name} is not a mapping (found {_item_shape(obj)}); every item must "
                f"be a KRM object", ERROR, None, path)])
            continue
        problem, key = identities[i]
        if problem:
            field_path, message = problem
            name, path = _item(run, i)
            yield Picked(i, obj, findings=[Result(
                f"{name}: {message}; every item must be a KRM object", ERROR, None,
                f"{path}.{field_path}")])
            continue
        ref = ref_of(obj)
        if (is_local_config(obj) or ref.api_version.startswith("kpt.dev/")
                or ref.kind == "Kptfile" or (run.fc_ref is not None and ref == run.fc_ref)):
            continue
        if key in seen_ids:
            first, (second, path) = _item(run, seen_ids[key])[0], _item(run, i)
            both = f"items {first[5:]} and {second[5:]}" if run.origin is None else \
                f"{first} and {second}"
            yield Picked(i, obj, ref, [Result(
                f"duplicate item: {both} are both {ref}; both are left unchanged", ERROR,
                ref, path)])
            continue
        seen_ids[key] = i
        if key in duplicated:
            continue      # the first copy: reported with the second, never tuned
        pick = _pick(i, obj, ref, run)
        if pick is not None:
            yield pick


def _pick(i: int, obj: dict, ref: Ref, run) -> Picked | None:
    """The Picked record of a well-formed, unique item; None when it is not selected."""
    kind_known = registered(obj, run.extra)
    handled = objects.handles(obj)
    if not (kind_known or handled) or not selected(obj, run.cfg.selector):
        if kind_known or handled or not selected(obj, run.cfg.selector) or skipped(obj):
            return None
        return _unknown_kind(i, obj, ref)
    if skipped(obj):
        return Picked(i, obj, ref, [Result(f"skipped: annotation {SKIP_ANNOTATION} is "
                                           f"\"true\"", INFO, ref)])
    group = group_of(ref.api_version)
    if kind_known and (group, ref.kind) not in run.extra:
        served = served_versions(obj)
        if served and version_of(ref.api_version) not in served:
            wants = [f"{group}/{v}" if group else v for v in served]
            return Picked(i, obj, ref, [Result(
                f"apiVersion {ref.api_version} is not one the API server serves {ref.kind} at "
                f"(only {' or '.join(wants)}), so kubectl and the API server refuse it (\"no "
                f"matches for kind\"); left unchanged: write apiVersion: {wants[0]} "
                f"(https://kubernetes.io/docs/reference/using-api/deprecation-guide/)",
                ERROR, ref, "apiVersion")])
    pick = Picked(i, obj, ref, tune=True, file=_file(i, obj, run), handled=handled,
                  kind_known=kind_known)
    if kind_known:
        pick.pool_index, pick.pool = pool_for(obj, run.cfg, ref, pick.pool_findings,
                                              run.extra)
    return pick


def _file(i: int, obj: dict, run) -> dict | None:
    """file_of(obj), or for an object inside a `kind: List` without a path of its own the
    List's (the file kustomize and kpt read it from; its results' field paths stay the
    object's own)."""
    file = file_of(obj)
    if file is None and run.origin is not None and run.origin[i][1]:
        file = file_of(run.outer[run.origin[i][0]])
    return file


def pool_for(obj: dict, cfg, ref: Ref, results: list, extra: dict):
    """(index, pool namespace) for the workload: the pool its krm-fn.dev/node-pool
    annotation names, else the first whose nodeSelector the pod spec's matches, else the
    first pool; (None, None) without pools, or with an error result appended to `results`
    when the annotation names no pool."""
    pools = cfg.nodePools
    if not pools:
        return None, None
    wanted = annotations_of(obj).get(POOL_ANNOTATION)
    for at in locations(obj, extra):
        if at.meta is not None:
            wanted = wanted or annotations_of(obj, at.meta).get(POOL_ANNOTATION)
    if wanted is not None:
        for i, p in enumerate(pools):
            if p.name == wanted:
                return i, p
        results.append(Result(f"annotation {POOL_ANNOTATION}={wanted!r} names no node pool "
                              f"(pools: {', '.join(p.name for p in pools)})", ERROR, ref,
                              f"metadata.annotations['{POOL_ANNOTATION}']"))
        return None, None
    for at in locations(obj, extra):
        ns = get_path(obj, at.spec + ("nodeSelector",))
        if isinstance(ns, dict):
            for i, p in enumerate(pools):
                if p.nodeSelector and all(str(ns.get(k)) == v for k, v in p.nodeSelector.items()):
                    return i, p
    return 0, pools[0]


def _annotation(obj: dict, at, key: str) -> tuple[object, tuple | None]:
    """(value, field path) of annotation `key`: the pod template's (that pod spec only)
    wins over the workload's (every pod spec); (None, None) when neither sets it."""
    if at.meta is not None:
        a = annotations_of(obj, at.meta)
        if key in a:
            return a[key], at.meta + ("annotations", key)
    a = annotations_of(obj)
    if key in a:
        return a[key], ("metadata", "annotations", key)
    return None, None


def overrides(obj: dict, at, ref: Ref, results: list):
    """The per-workload annotations of one pod spec: (cpus or None, listed container names
    or None, field path of the listed annotation or None). Invalid values are error
    results naming the annotation, appended to `results`."""
    cpus = None
    raw, path = _annotation(obj, at, CPUS_ANNOTATION)
    if raw is not None:
        text = raw.strip(numbers.BLANKS) if isinstance(raw, str) else None
        if text is None or not _CPUS.fullmatch(text):
            results.append(Result(f"annotation {CPUS_ANNOTATION} must be a whole number of "
                                  f"CPUs from 1 to 9999, quoted (such as \"4\"), found "
                                  f"{shown(raw)}", ERROR, ref, path_str(path)))
        else:
            cpus = int(text)
    listed = None
    raw, lpath = _annotation(obj, at, PINNED_ANNOTATION)
    if raw is not None:
        parts = [p.strip() for p in raw.split(",")] if isinstance(raw, str) else [""]
        if any(not is_dns_label(p) or len(p) > 63 for p in parts):
            results.append(Result(f"annotation {PINNED_ANNOTATION} must be a comma-separated "
                                  f"list of container names (DNS labels, such as "
                                  f"\"server,tokenizer\"), found {shown(raw)}", ERROR, ref,
                                  path_str(lpath)))
        else:
            listed = parts
    return cpus, listed, lpath if listed is not None else None


EXTRA_KINDS_DOCS = "https://github.com/krm-fn/krm-fn/blob/main/docs/configuration.md"
_MAX_DEPTH, _MAX_TEMPLATES = 12, 4


def pod_spec_paths(obj: dict) -> list[str]:
    """Field paths (`spec.template.spec`, `spec.replicaSpecs.Worker.template.spec`,
    `spec.workers[*].template.spec`) of the mappings in `obj` that look like a pod spec:
    a `containers` list of mappings that each carry `name` and `image` (PodSpec's required
    container fields: kubernetes pkg/apis/core/validation/validation.go
    validateContainerCommon). Found by shape, not by kind; `metadata` and `status` are not
    searched; at most _MAX_TEMPLATES paths, _MAX_DEPTH levels deep. A key holding a dot is
    shown quoted (`spec.groups."x.y".template.spec`): no spec.extraKinds path can name
    it."""
    out: list[str] = []

    def walk(node: object, path: tuple, depth: int) -> None:
        if len(out) >= _MAX_TEMPLATES or depth > _MAX_DEPTH:
            return
        if isinstance(node, list):
            for item in node:
                walk(item, path[:-1] + (path[-1] + "[*]",) if path else ("[*]",), depth + 1)
            return
        if not isinstance(node, dict):
            return
        ctrs = node.get("containers")
        if (isinstance(ctrs, list) and ctrs and all(
                isinstance(c, dict) and "name" in c and "image" in c for c in ctrs)):
            text = ".".join(path)
            if text not in out:
                out.append(text)
            return
        for key, value in node.items():
            if isinstance(value, (dict, list)) and not (depth == 0 and key in (
                    "metadata", "status")):
                key = str(key)
                walk(value, path + (f'"{key}"' if "." in key else key,), depth + 1)

    walk(obj, (), 0)
    return out


def _unknown_kind(i: int, obj: dict, ref: Ref) -> Picked | None:
    """A WARNING for a selected item of a kind krm-fn neither tunes nor checks that holds
    pod specs (pod_spec_paths): krm-fn leaves it untouched, and says how to declare it;
    None when it holds none."""
    paths = pod_spec_paths(obj)
    if not paths:
        return None
    group = ref.api_version.rpartition("/")[0]
    shown_paths = ", ".join(paths)
    named = [p for p in paths if '"' not in p]
    if not named:
        return Picked(i, obj, ref, [Result(
            f"{ref.kind} ({ref.api_version}) has pod specs at {shown_paths}, but krm-fn does "
            f"not support the kind {ref.kind}, so it left it untouched: no exclusive CPUs, "
            f"thread counts or verdict for its pods; a key with a dot in it cannot be named "
            f"in a spec.extraKinds path, so these pod specs cannot be declared either "
            f"({EXTRA_KINDS_DOCS})", WARNING, ref, None)])
    unnamed = [p for p in paths if p not in named]
    left = (f" ({', '.join(unnamed)} cannot be declared: a key with a dot in it cannot be "
            f"named in a spec.extraKinds path)" if unnamed else "")
    return Picked(i, obj, ref, [Result(
        f"{ref.kind} ({ref.api_version}) has pod specs at {shown_paths}, but krm-fn does not "
        f"support the kind {ref.kind}, so it left it untouched: no exclusive CPUs, thread "
        f"counts or verdict for its pods. To have them tuned, declare the kind in "
        f"spec.extraKinds: {{group: {group or chr(34) * 2}, kind: {ref.kind}, podSpecs: "
        f"[{', '.join(named)}]}}{left} ({EXTRA_KINDS_DOCS})", WARNING, ref,
        named[0].replace("[*]", "[0]"))])
