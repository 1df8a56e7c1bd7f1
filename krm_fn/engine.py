"""The pure core: plain items + functionConfig in, edits + emitted objects + results out.

Data flow (DESIGN.md): load config (strict) -> for each selected workload locate its pod
specs (workloads.KINDS) -> PodView -> rules in order -> node plan per node pool that
received a workload -> render each requested format. An item with an error result is left
unchanged (its edits are dropped). No YAML here: the I/O module replays the edits.
"""
from __future__ import annotations

import copy
import dataclasses
import marshal
import re
from dataclasses import dataclass, field
from types import SimpleNamespace

from krm_fn import changes as changes_mod
from krm_fn import config as config_mod
from krm_fn import quantity
from krm_fn.node import checks
from krm_fn import objects
from krm_fn.node import plan as plan_mod
from krm_fn.node.formats import (LOCAL_CONFIG_ANNOTATION, MANAGED_BY_LABEL, POOL_LABEL,
                                 RenderContext, render_with_results)
from krm_fn.pod import Edits, ShapeError, build_views, path_str
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn import rules
from krm_fn.workloads import get_path, locations, model_names, registered

SKIP_ANNOTATION = "krm-fn.dev/skip"
POOL_ANNOTATION = "krm-fn.dev/node-pool"
CPUS_ANNOTATION = "krm-fn.dev/cpus"
PINNED_ANNOTATION = "krm-fn.dev/pinned-containers"
_CPUS = re.compile(r"[1-9][0-9]{0,3}")
_CONTAINER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
LOCAL_CONFIG = LOCAL_CONFIG_ANNOTATION
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"
# Annotations the orchestrators own; ignored when comparing an emitted object with the copy
# of it that kpt feeds back in on the next render.
_ORCHESTRATOR_PREFIXES = ("config.kubernetes.io/path", "config.kubernetes.io/index",
                          "internal.config.kubernetes.io/", "config.k8s.io/id",
                          "kustomize.config.k8s.io/")


@dataclass
class Output:
    """`changes[i]`: the Changes (krm_fn/changes.py) made to input item i, in write order
    (items left unchanged have none); `replace[i]`: a whole new object for input item i (a
    kubelet config krm-fn emitted on an earlier run); `emitted`: new objects (plain dicts) to
    append; `results`: every Result, in order; `pools`: for each node pool that received a
    workload, (config pool, NodePlan, [checks.PodCpus], workloads placed), for the human
    report (krm_fn/report.py); `tuned[i]`: item i as krm-fn writes it (plain data), for the
    items with changes, when transform was asked to keep them (else None)."""

    changes: dict = field(default_factory=dict)
    replace: dict = field(default_factory=dict)
    emitted: list = field(default_factory=list)
    results: list = field(default_factory=list)
    pools: list = field(default_factory=list)
    mode: str = "mutate"        # "validate": nothing changed or emitted (krm_fn/validate.py)
    tuned: dict | None = None

    @property
    def ops(self) -> dict:
        """{item index: [(path tuple, value)]}: what the YAML layer writes into each item,
        derived from `changes` (krm_fn.changes.ops)."""
        return {i: changes_mod.ops(c) for i, c in self.changes.items()}

    @property
    def has_errors(self) -> bool:
        return any(r.severity == ERROR for r in self.results)


def ref_of(obj: dict) -> Ref:
    """Ref of a plain object (missing fields become "")."""
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return Ref(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""),
               str(md.get("name") or ""), str(md.get("namespace") or ""))


def _identity_key(obj: dict) -> tuple:
    ref = ref_of(obj)
    ann = annotations_of(obj)
    return (ref.api_version.split("/")[0] if "/" in ref.api_version else "", ref.kind,
            ref.namespace, ref.name,
            str(ann.get("internal.config.kubernetes.io/path",
                        ann.get("config.kubernetes.io/path", ""))))


def _duplicated_ids(items: list) -> set:
    """Identities that more than one well-formed item carries."""
    seen, dup = set(), set()
    for obj in items:
        if isinstance(obj, dict) and _identity_problem(obj) is None:
            key = _identity_key(obj)
            (dup if key in seen else seen).add(key)
    return dup


def _identity_problem(obj: dict) -> tuple[str, str] | None:
    """(field path, message) when the object lacks a string apiVersion, kind or
    metadata.name, or its metadata, labels or annotations are not mappings; else None."""
    for key in ("apiVersion", "kind"):
        v = obj.get(key)
        if not isinstance(v, str) or not v:
            return key, f"{key} must be a non-empty string, found {_shown(v)}"
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return "metadata", f"metadata must be a mapping, found {_shown(md)}"
    name = md.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name", f"metadata.name must be a non-empty string, found {_shown(name)}"
    if md.get("namespace") is not None and not isinstance(md.get("namespace"), str):
        return "metadata.namespace", "metadata.namespace must be a string"
    for key in ("labels", "annotations"):
        v = md.get(key)
        if v is not None and not isinstance(v, dict):
            return f"metadata.{key}", f"metadata.{key} must be a mapping, found {_shown(v)}"
        for k, x in (v or {}).items():
            if x is not None and not isinstance(x, str):
                return f"metadata.{key}['{k}']", f"metadata.{key} values must be strings"
    return None


def _shown(v: object) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, (dict, list)):
        return "a mapping" if isinstance(v, dict) else "a list"
    return repr(v)


def annotations_of(obj: object, path: tuple = ("metadata",)) -> dict:
    """The annotations mapping at `path` + annotations of `obj`; {} when absent or not a
    mapping (items are not validated before they are read)."""
    a = get_path(obj, path + ("annotations",))
    return a if isinstance(a, dict) else {}


def is_local_config(obj: dict) -> bool:
    """True when `obj` carries config.kubernetes.io/local-config with any value but "false"
    (krm.md §3: kustomize drops such objects from its output)."""
    v = annotations_of(obj).get(LOCAL_CONFIG)
    return v is not None and str(v) != "false"


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
    if str(index).isdigit() and int(index):
        file["index"] = int(index)
    return file


def _selected(obj: dict, sel: SimpleNamespace) -> bool:
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


def _pinned(pod, cfg, listed: list | None = None) -> frozenset:
    """Names of the containers to pin: `listed` (the krm-fn.dev/pinned-containers
    annotation) when given, else spec.workloads.pinnedContainers, else the
    default-container annotation, else the kind's model container, else the first app
    container."""
    names = [c.name for c in pod.containers]
    wanted = listed if listed is not None else cfg.workloads.pinnedContainers
    chosen = [n for n in wanted if n in names]
    if chosen:
        return frozenset(chosen)
    default = pod.annotations.get(DEFAULT_CONTAINER)
    if default in names:
        return frozenset([default])
    for model in model_names(pod.at):
        if model in names:
            return frozenset([model])
    apps = [c.name for c in pod.containers if c.role == "app"]
    return frozenset(apps[:1])


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


def _overrides(obj: dict, at, ref: Ref, results: list):
    """The per-workload annotations of one pod spec: (cpus or None, listed container names
    or None, field path of the listed annotation or None). Invalid values are error
    results naming the annotation."""
    cpus = None
    raw, path = _annotation(obj, at, CPUS_ANNOTATION)
    if raw is not None:
        text = raw.strip() if isinstance(raw, str) else None
        if text is None or not _CPUS.fullmatch(text):
            results.append(Result(f"annotation {CPUS_ANNOTATION} must be a whole number of "
                                  f"CPUs from 1 to 9999, quoted (such as \"4\"), found "
                                  f"{_shown(raw)}", ERROR, ref, path_str(path)))
        else:
            cpus = int(text)
    listed = None
    raw, lpath = _annotation(obj, at, PINNED_ANNOTATION)
    if raw is not None:
        parts = [p.strip() for p in raw.split(",")] if isinstance(raw, str) else [""]
        if any(not _CONTAINER_NAME.fullmatch(p) for p in parts):
            results.append(Result(f"annotation {PINNED_ANNOTATION} must be a comma-separated "
                                  f"list of container names (DNS labels, such as "
                                  f"\"server,tokenizer\"), found {_shown(raw)}", ERROR, ref,
                                  path_str(lpath)))
        else:
            listed = parts
    return cpus, listed, lpath if listed is not None else None


def _pool_for(obj: dict, cfg, ref: Ref, results: list, extra: dict):
    """(index, pool namespace) for the workload, or (None, None) with an error result."""
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


def _copy_item(obj: dict) -> dict:
    """A deep copy of an item as read from YAML (dicts, lists, str, None): through marshal,
    which copies such trees in C about ten times faster than copy.deepcopy (the copy is the
    rules' scratch space for every tuned item); copy.deepcopy for anything else."""
    try:
        return marshal.loads(marshal.dumps(obj))
    except ValueError:          # a value marshal cannot write
        return copy.deepcopy(obj)


def _tune(obj: dict, cfg, ref: Ref, plans: list, extra: dict,
          cluster: frozenset = frozenset()):
    """Run the rules on a copy of `obj`; returns (changes, findings, pool index or None,
    [checks.PodCpus], the tuned copy or None when the item is left unchanged).
    `cluster`: the KServe cluster objects fixed in this render (objects.cluster_tag)."""
    results: list[Result] = []
    pool_index, pool = _pool_for(obj, cfg, ref, results, extra)
    if results:
        return [], results, None, [], None
    info = (rules.PoolInfo.from_config(pool, plans[pool_index].exclusive_cpus,
                                 plans[pool_index].topology.threads_per_core)
            if pool is not None else None)
    work = _copy_item(obj)
    edits = Edits(work, ref=ref)
    found = False
    pods: list = []
    # a workload-level krm-fn.dev/pinned-containers must name a container of some pod spec
    workload_listed: dict = {"path": None, "matched": False, "names": []}
    for at in locations(obj, extra):
        try:
            pod = build_views(work, at, ref, edits, results)
        except ShapeError as e:
            results.append(Result(e.message, ERROR, ref, path_str(e.path)))
            continue
        if pod is None:
            continue
        found = True
        rules.merge(pod, cfg)
        cpus, listed, lpath = _overrides(obj, at, ref, results)
        names = [c.name for c in pod.containers]
        if listed is not None:
            hit = [n for n in listed if n in names]
            template_level = at.meta is not None and lpath[:len(at.meta)] == at.meta
            if not template_level:
                workload_listed["path"] = lpath
                workload_listed["matched"] |= bool(hit)
                workload_listed["names"] += [n for n in names
                                             if n not in workload_listed["names"]]
            elif not hit:
                results.append(Result(f"annotation {PINNED_ANNOTATION} names no container of "
                                      f"this pod spec (containers: {', '.join(names)})",
                                      ERROR, ref, path_str(lpath)))
                continue
        explicit = frozenset(n for n in (listed if listed is not None
                                         else cfg.workloads.pinnedContainers) if n in names)
        ctx = rules.RuleContext(cfg, info, _pinned(pod, cfg, listed), cpus=cpus, explicit=explicit,
                          cluster=cluster)
        rules.run(pod, ctx)
        if pool is not None:
            need = _pod_cpus(pod)
            pods.append(need)
            results.extend(checks.check_pod(plans[pool_index], need))
    if workload_listed["path"] is not None and not workload_listed["matched"]:
        results.append(Result(f"annotation {PINNED_ANNOTATION} names no container of the "
                              f"workload (containers: {', '.join(workload_listed['names'])})",
                              ERROR, ref, path_str(workload_listed["path"])))
    if any(r.severity == ERROR for r in results):
        results.append(Result("left unchanged because of the errors above", ERROR, ref))
        return [], results, None, [], None
    return edits.changes, results, (pool_index if found else None), pods, work


def _pod_cpus(pod) -> checks.PodCpus:
    """The exclusive CPUs a tuned pod asks for: whole-CPU limits of its containers."""
    app, init = [], []
    for c in pod.containers:
        try:
            q = quantity.parse_cpu(c.get("resources", "limits", "cpu"))
        except quantity.QuantityError:
            continue
        if not q.is_integer or q.value == 0:
            continue
        if c.role == "app":
            app.append((c.name, int(q.value)))
        else:
            init.append((c.name, int(q.value), c.role == "sidecar"))
    return checks.PodCpus(pod.ref, path_str(pod.at.spec), tuple(app), tuple(init))


def _plainify(v):
    """Scalars as the I/O layer reads them back (strings; None stays None)."""
    if isinstance(v, dict):
        return {str(k): _plainify(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plainify(x) for x in v]
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return None
    return str(v)


def _strip_orchestrator(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    ann = annotations_of(obj)
    for k in list(ann):
        if k.startswith(_ORCHESTRATOR_PREFIXES):
            del ann[k]
    if isinstance(obj.get("metadata"), dict) and "annotations" in obj["metadata"] and not ann:
        del obj["metadata"]["annotations"]
    return obj


def _requested_mode(function_config, mode: str | None) -> str | None:
    """`mode` (the command line's), else `spec.mode` / flat `data.mode` as written in the
    function config, read without validating the rest of it."""
    if mode:
        return mode
    if not isinstance(function_config, dict):
        return None
    holder = function_config.get("data" if config_mod.is_flat(function_config) else "spec")
    return holder.get("mode") if isinstance(holder, dict) else None


def _generated(obj: dict, pool: str) -> bool:
    """True when `obj` is an object krm-fn emitted for node pool `pool` on an earlier run:
    it carries both labels every emitted object gets (formats/_common.labels)."""
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    lab = md.get("labels") if isinstance(md.get("labels"), dict) else {}
    return lab.get(MANAGED_BY_LABEL) == "krm-fn" and lab.get(POOL_LABEL) == str(pool)


def _replacement(old: dict, new: dict) -> tuple[dict | None, list[str]]:
    """A previously emitted object `old` (read back, e.g. by kpt on the next render) and the
    desired `new`: (object to write in its place, keeping the orchestrator annotations kpt
    put on it, and the changed field paths), or (None, []) when nothing changed."""
    if _strip_orchestrator(old) == _plainify(_strip_orchestrator(new)):
        return None, []
    obj = copy.deepcopy(new)
    keep = {k: v for k, v in annotations_of(old).items() if k.startswith(_ORCHESTRATOR_PREFIXES)}
    if keep:
        md = obj.setdefault("metadata", {})
        md["annotations"] = {**(md.get("annotations") or {}), **keep}
    changed = []
    want = _plainify(_strip_orchestrator(new))
    have = _strip_orchestrator(old)
    for key in list(want) + [k for k in have if k not in want]:
        if key == "metadata":
            for mkey in sorted(set(want.get("metadata", {})) | set(have.get("metadata", {}))):
                if want.get("metadata", {}).get(mkey) != have.get("metadata", {}).get(mkey):
                    changed.append(f"metadata.{mkey}")
        elif want.get(key) != have.get(key):
            sub = want.get(key), have.get(key)
            if all(isinstance(x, dict) for x in sub):
                changed += [f"{key}.{k}" if "." not in k and "/" not in k else f"{key}['{k}']"
                            for k in sorted(set(sub[0]) | set(sub[1]))
                            if sub[0].get(k) != sub[1].get(k)]
            else:
                changed.append(key)
    return obj, changed


def transform(items: list, function_config: dict | None, set_path: bool = False,
              aliased: frozenset | set = frozenset(), progress=None,
              mode: str | None = None, keep_tuned: bool = False) -> Output:
    """Tune `items` (plain dicts as read from YAML, scalars as strings) per
    `function_config` (plain typed dict, or None for defaults).

    `set_path`: the orchestrator is kpt (items carry path annotations), so emitted objects
    get their own `internal.config.kubernetes.io/path`. `aliased`: indices of items that use
    YAML aliases; they are never edited (an edit through an alias would change every place
    the alias is used), so a needed change there is an error. Never raises for bad input:
    every problem is an error Result. `progress`: called as progress(i, len(items)) before
    item i (0-based) is looked at, for a progress line. `mode`: "mutate" or "validate",
    overriding `spec.mode` (`krm-fn run --mode`); in validate mode the output has no ops,
    replacements or emitted objects and each needed change is an error result
    (krm_fn/validate.py). `keep_tuned`: keep each changed item as krm-fn writes it in
    `Output.tuned` (for the `--report` table; costs memory on large inputs).
    """
    out = Output(tuned={} if keep_tuned else None)
    # validate mode as asked, even when the config holding it turns out invalid: a check
    # must not print manifests (krm-fn run --mode validate) on any path
    out.mode = "validate" if _requested_mode(function_config, mode) == "validate" else "mutate"
    fc_ref = ref_of(function_config) if isinstance(function_config, dict) else None
    try:
        cfg = config_mod.load(function_config)
    except config_mod.ConfigError as e:
        for err in e.errors:
            out.results.append(Result(f"invalid function config: {err.message}", ERROR,
                                      fc_ref, err.path or None))
        return out
    if function_config is None:
        pool0, t = cfg.nodePools[0], cfg.nodePools[0].topology
        sel = ", ".join(f"{k}={v}" for k, v in pool0.nodeSelector.items())
        defaults_note = (Result(
            f"no function config: defaults used (node pool {pool0.name!r} with nodeSelector "
            f"{sel}, {t.sockets} sockets x {t.coresPerSocket} cores x {t.threadsPerCore} "
            f"threads, kubernetesVersion {cfg.kubernetesVersion[0]}.{cfg.kubernetesVersion[1]}"
            f"); give a config that describes your nodes (`krm-fn explain`, README "
            f"Configuration)", WARNING))
    else:
        defaults_note = None
    # Node plans first: a pool whose kubelet config would not start is a config error, and
    # nothing is changed on a config error.
    plans, plan_results = [], []
    for pool_index, pool in enumerate(cfg.nodePools):
        plan, presults = plan_mod.build(pool, cfg.kubernetesVersion, fc_ref, pool_index,
                                         cfg.output.baseline)
        if config_mod.is_flat(function_config):
            presults = [dataclasses.replace(r, path=config_mod.flat_path(r.path))
                        if r.path else r for r in presults]
        plans.append(plan)
        plan_results.append(presults)
    if any(r.severity == ERROR for pr in plan_results for r in pr):
        for pr in plan_results:
            out.results.extend(pr)
        out.results.append(Result("nothing changed because of the function config errors "
                                  "above", ERROR, fc_ref))
        return out
    extra = config_mod.extra_registry(cfg)
    placed: dict[int, int] = {}
    pool_pods: dict[int, list] = {}
    seen_ids: dict[tuple, int] = {}
    duplicated = _duplicated_ids(items)

    def tuned(o: object) -> bool:
        """Whether krm-fn tunes item `o` in this render (selected, not skipped)."""
        return (isinstance(o, dict) and _identity_problem(o) is None and not is_local_config(o)
                and _selected(o, cfg.selector)
                and str(annotations_of(o).get(SKIP_ANNOTATION, "")).lower() != "true")

    cluster = frozenset(objects.cluster_tag(o) for o in items
                        if tuned(o) and objects.cluster_tag(o) is not None)
    octx = objects.ObjectContext(
        cfg, [rules.PoolInfo.from_config(p, plans[i].exclusive_cpus,
                                   plans[i].topology.threads_per_core)
              for i, p in enumerate(cfg.nodePools)], items, tuned)
    for i, obj in enumerate(items):
        if progress is not None:
            progress(i, len(items))
        if not isinstance(obj, dict):
            out.results.append(Result(f"item {i} is not a mapping (found "
                                      f"{type(obj).__name__}); every item must be a KRM "
                                      f"object", ERROR, None, f"items[{i}]"))
            continue
        ref = ref_of(obj)
        problem = _identity_problem(obj)
        if problem:
            field_path, message = problem
            out.results.append(Result(f"item {i}: {message}; every item must be a KRM object",
                                      ERROR, None,
                                      f"items[{i}].{field_path}"))
            continue
        if (is_local_config(obj) or ref.api_version.startswith("kpt.dev/")
                or ref.kind == "Kptfile" or (fc_ref is not None and ref == fc_ref)):
            continue
        # kpt allows the same object in different files (subpackages): the path is part of
        # the identity when the orchestrator sends one.
        key = _identity_key(obj)
        if key in seen_ids:
            out.results.append(Result(f"duplicate item: items {seen_ids[key]} and {i} are "
                                      f"both {ref}; both are left unchanged", ERROR, ref,
                                      f"items[{i}]"))
            continue
        seen_ids[key] = i
        if key in duplicated:
            continue      # the first copy: reported with the second, never tuned
        kind_known = registered(obj, extra)
        if not (kind_known or objects.handles(obj)) or not _selected(obj, cfg.selector):
            continue
        if str(annotations_of(obj).get(SKIP_ANNOTATION, "")).lower() == "true":
            out.results.append(Result(f"skipped: annotation {SKIP_ANNOTATION} is \"true\"",
                                      INFO, ref))
            continue
        ops, results, pool_index, pods, work = [], [], None, [], None
        if objects.handles(obj):
            ops, results = objects.check(obj, ref, octx)
            if any(r.severity == ERROR for r in results):
                results.append(Result("left unchanged because of the errors above", ERROR,
                                      ref))
                ops = []
        if kind_known:
            more_ops, more, pool_index, pods, work = _tune(obj, cfg, ref, plans, extra, cluster)
            ops, results = ops + more_ops, results + more
        if ops and i in aliased:
            results.append(Result("uses YAML anchors and aliases, so krm-fn cannot change it "
                                  "without changing every place an alias points to; expand "
                                  "the aliases (kustomize does this before running functions)"
                                  " and run again; left unchanged", ERROR, ref))
            ops, pool_index = [], None
        file = file_of(obj)
        results = changes_mod.results(results, file)
        if any(r.severity == ERROR for r in results):
            # the item is left unchanged: drop the infos that describe changes not made
            results = [r for r in results if r.severity != INFO]
        out.results.extend(results)
        if ops:
            out.changes[i] = [dataclasses.replace(c, index=i) for c in ops]
            if out.tuned is not None and work is not None:
                out.tuned[i] = work
        if pool_index is not None:
            placed[pool_index] = placed.get(pool_index, 0) + 1
            pool_pods.setdefault(pool_index, []).extend(pods)
    if not placed and not out.has_errors:
        out.results.append(Result("no workload was selected: nothing tuned and no kubelet "
                                  "config emitted (check spec.selector)", WARNING, fc_ref))
    ctx = RenderContext(cfg.output.namespace, set_path, baseline=cfg.output.baseline)
    # existing items by (apiVersion, kind, name); a namespace matches as kustomize and the
    # API server see it: "" is "default", and a cluster-scoped object has none
    by_name: dict = {}
    for i, o in enumerate(items):
        if isinstance(o, dict):
            ro = ref_of(o)
            by_name.setdefault((ro.api_version, ro.kind, ro.name), []).append((ro.namespace, i))
    fc_key = ((fc_ref.api_version, fc_ref.kind, fc_ref.name) if fc_ref is not None else None)
    emitted_by: dict = {}        # emitted object key -> (pool name, format)
    for pool_index in sorted(placed):
        pool, plan = cfg.nodePools[pool_index], plans[pool_index]
        out.results.extend(plan_results[pool_index])
        out.results.append(checks.summary(plan, pool_pods.get(pool_index, []), fc_ref))
        out.pools.append((pool, plan, pool_pods.get(pool_index, []), placed[pool_index]))
        for fmt in list(cfg.output.formats) + (["verify-job"] if cfg.output.verifyJob else []):
            if fmt == "verify-job":     # spec.output.verifyJob: krm_fn/node/verify_job.py
                from krm_fn.node import verify_job
                objs, fmt_results = [verify_job.render(
                    plan, ctx, cfg.output.verifyImage, cfg.kubernetesVersion,
                    cfg.workloads.threads.env)], []
            else:
                objs, fmt_results = render_with_results(fmt, plan, ctx, fc_ref, pool_index)
            if config_mod.is_flat(function_config):
                fmt_results = [dataclasses.replace(r, path=config_mod.flat_path(r.path))
                               if r.path else r for r in fmt_results]
            out.results.extend(fmt_results)
            for obj in objs:
                r = ref_of(obj)
                ns = r.namespace                # "" for a cluster-scoped object
                key = (r.api_version, r.kind, ns, r.name)
                if key in emitted_by:
                    other_pool, other_fmt = emitted_by[key]
                    out.results.append(Result(
                        f"node pool {pool.name!r}: the {fmt} output has the same name as the "
                        f"{other_fmt} output of node pool {other_pool!r}; one would overwrite "
                        f"the other: rename a pool", ERROR, r))
                    continue
                emitted_by[key] = (pool.name, fmt)
                existing = next((i for item_ns, i in by_name.get(
                    (r.api_version, r.kind, r.name), [])
                    if not ns or (item_ns or "default") == ns), None)
                if existing is None:
                    out.emitted.append(obj)
                    out.results.append(Result(f"node pool {pool.name!r}: emitted {fmt} "
                                              f"({placed[pool_index]} workload(s) placed)",
                                              INFO, r))
                elif not _generated(items[existing], pool.name) or (
                        fc_key == (r.api_version, r.kind, r.name)):
                    # never overwrite an object krm-fn did not generate (data loss)
                    why = ("it is the function config itself" if fc_key == (
                        r.api_version, r.kind, r.name) else
                        f"it was not generated by krm-fn (it lacks the labels "
                        f"{MANAGED_BY_LABEL}: krm-fn and {POOL_LABEL}: {pool.name})")
                    out.results.append(Result(
                        f"node pool {pool.name!r}: the {fmt} output is this object's name, but "
                        f"{why}: it is left unchanged and the {fmt} output is not emitted; "
                        f"rename the item, or change spec.output.namespace or the pool name",
                        ERROR, r))
                else:
                    new, changed = _replacement(items[existing], obj)
                    if new is not None:
                        out.replace[existing] = new
                        out.changes.pop(existing, None)
                        if out.tuned is not None:
                            out.tuned.pop(existing, None)
                        for field_path in changed:
                            out.results.append(Result(
                                f"node pool {pool.name!r}: {fmt} {field_path} rewritten to "
                                f"the plan (the object is generated by krm-fn: change the "
                                f"function config instead)", WARNING, r, field_path))
    if defaults_note is not None:
        out.results.append(defaults_note)
    if (mode or cfg.mode) == "validate":
        from krm_fn import validate
        return validate.report(items, out, fc_ref)
    return out
