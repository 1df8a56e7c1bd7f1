"""Step 2 of the pipeline, tune: the rules on each pod spec of a picked item.

The rules (krm_fn.rules.run, after krm_fn.rules.merge) write into a copy of the item through
PodView; every write is a Change (krm_fn/changes.py). Whole-object checks
(krm_fn/objects/) run on the kinds they handle. Nothing here decides whether the item is
left unchanged: that is the verdict's (pipeline/verdict.py).
"""
from __future__ import annotations

import marshal

from krm_fn import apivalidation, objects, rules
from krm_fn.pipeline.select import PINNED_ANNOTATION, Picked, overrides
from krm_fn.pod import Edits, Findings, ShapeError, build_views, path_str
from krm_fn.results import ERROR, Result
from krm_fn.rules import choice
from krm_fn.workloads import get_path, locations


class TunedPod:
    """One pod spec after the rules: its findings are the item's `findings[:end]` after
    those of the pod specs before it; `pod`: the PodView (None when it was not tuned);
    `pinned`: names of the containers krm-fn pins in it; `verdict`: the verdict step's
    results for it; `at`: where the pod spec is in the item (workloads.locations)."""

    __slots__ = ("end", "pod", "pinned", "verdict", "at")

    def __init__(self, end: int, pod: object = None, pinned: frozenset = frozenset(),
                 verdict: list | None = None, at: object = None) -> None:
        self.end = end
        self.pod = pod
        self.pinned = pinned
        self.verdict = [] if verdict is None else verdict
        self.at = at


class TunedItem:
    """One picked item after the tune step. `object_changes`/`object_findings`: from the
    whole-object checks; `findings`: the pod specs' findings (Changes with a message and
    Results), in order, one list for the item (a rule may look at what an earlier pod spec
    of the same object reported); `pods`: per pod spec, in order; `tail`: findings about the
    workload as a whole (after its pod specs); `changes`: the rules' Changes; `work`: the
    tuned copy (plain data); `found`: some pod spec was present."""

    __slots__ = ("pick", "object_changes", "object_findings", "findings", "pods", "tail",
                 "changes", "work", "found")

    def __init__(self, pick: Picked, object_changes: list | None = None,
                 object_findings: list | None = None, findings: list | None = None,
                 pods: list | None = None, tail: list | None = None,
                 changes: list | None = None, work: dict | None = None,
                 found: bool = False) -> None:
        self.pick = pick
        self.object_changes = [] if object_changes is None else object_changes
        self.object_findings = [] if object_findings is None else object_findings
        self.findings = [] if findings is None else findings
        self.pods = [] if pods is None else pods
        self.tail = [] if tail is None else tail
        self.changes = [] if changes is None else changes
        self.work = work
        self.found = found


def copy_item(obj: dict) -> dict:
    """A deep copy of an item as read from YAML (dicts, lists, str, None): through marshal,
    which copies such trees in C about ten times faster than copy.deepcopy (the copy is the
    rules' scratch space for every tuned item); copy.deepcopy for anything else."""
    try:
        return marshal.loads(marshal.dumps(obj))
    except ValueError:          # a value marshal cannot write
        import copy
        return copy.deepcopy(obj)


def tune(pick: Picked, run) -> TunedItem:
    """Run the whole-object checks and the rules on `pick` (a Picked with `tune` set);
    `run`: the pipeline's load.Run."""
    item = TunedItem(pick)
    if pick.handled:
        item.object_changes, item.object_findings = objects.check(pick.obj, pick.ref,
                                                                   run.octx)
    if pick.kind_known and not pick.pool_findings:
        _tune_pods(item, run)
    return item


def _tune_pods(item: TunedItem, run) -> None:
    """The rules on every pod spec of the item's workload, on one copy of it."""
    pick = item.pick
    info = run.pool_info(pick.pool_index) if pick.pool is not None else None
    item.work = copy_item(pick.obj)
    edits = Edits(item.work, index=pick.index, ref=pick.ref, retyped=run.retyped)
    item.findings = Findings(edits)
    # a workload-level krm-fn.dev/pinned-containers must name a container of some pod spec
    listed_at: dict = {"path": None, "matched": False, "names": []}
    findings = item.findings
    metas, specs = [], []
    for at in locations(pick.obj, run.extra):
        tuned, chosen = _tune_pod(item, at, edits, info, listed_at, run)
        item.pods.append(TunedPod(len(findings), tuned, chosen, at=at))
        metas.append(tuple(at.meta or ()))
        specs.append(at.spec)
    if run.cfg.output.admissionPolicy.enabled and info is not None:
        from krm_fn.guard import targets        # spec.output.admissionPolicy
        targets.label_all(item, metas, info, run.cfg, run.nodes[pick.pool_index])
    _json_types(apivalidation.workload_fields(pick.obj, ("metadata",) not in metas, specs),
                item, edits, item.tail)
    if listed_at["path"] is not None and not listed_at["matched"]:
        item.tail.append(Result(f"annotation {PINNED_ANNOTATION} names no container of the "
                                f"workload (containers: {', '.join(listed_at['names'])})",
                                ERROR, pick.ref, path_str(listed_at["path"])))
    item.changes = edits.changes


def as_written(item: TunedItem, tp: TunedPod, run):
    """The PodView of the pod spec of `tp` as the input item writes it, with the containers
    a controller merges in (rules.merge), for the verdict on an item left unchanged; the
    tuned view `tp.pod` when the written one cannot be built."""
    pick = item.pick
    work = copy_item(pick.obj)
    edits = Edits(work, index=pick.index, ref=pick.ref, retyped=run.retyped)
    try:
        pod = build_views(work, tp.at, pick.ref, edits, Findings(edits))
    except ShapeError:
        return tp.pod
    if pod is None:
        return tp.pod
    rules.merge(pod, run.cfg, _bounds(pick, run))
    return pod


def _bounds(pick: Picked, run) -> dict:
    """RuleContext.bounds of the pods of `pick`: what the LimitRanges that may sit in its
    namespace set per container (admission.limitrange.container_bounds); {} without a
    LimitRange in the input (its module is then not imported: start-up)."""
    limit_ranges = run.ictx.limit_ranges_for(pick.ref.namespace or "")
    if not limit_ranges:
        return {}
    from krm_fn.admission import limitrange
    return limitrange.container_bounds(limit_ranges)


def _tune_pod(item: TunedItem, at, edits: Edits, info, listed_at: dict, run):
    """The rules on the pod spec at `at`; returns (its PodView, the names of the
    containers pinned), or (None, frozenset()) when it is absent, malformed, or its
    pinned-containers annotation names none of its containers."""
    pick, cfg, findings = item.pick, run.cfg, item.findings
    try:
        pod = build_views(item.work, at, pick.ref, edits, findings)
    except ShapeError as e:
        findings.append(Result(e.message, ERROR, pick.ref, path_str(e.path)))
        return None, frozenset()
    if pod is None:
        return None, frozenset()
    item.found = True
    bounds = _bounds(pick, run)
    rules.merge(pod, cfg, bounds)
    cpus, listed, lpath = overrides(pick.obj, at, pick.ref, findings)
    if not _listed_ok(pod, listed, lpath, listed_at, findings):
        return None, frozenset()
    names = [c.name for c in pod.containers]
    explicit = frozenset(n for n in (listed if listed is not None
                                     else cfg.workloads.pinnedContainers) if n in names)
    chosen, how = choice.choose(pod, cfg, listed)
    ctx = rules.RuleContext(cfg, info, chosen, cpus=cpus, explicit=explicit, chosen_by=how,
                            cluster=run.cluster,
                            namespaces=run.namespaces,
                            knative_features=run.features_for(pod), ictx=run.ictx,
                            bounds=bounds)
    ctx = rules.run(pod, ctx)
    # the input's own scalars, read from the input item: what the rules added or changed
    # is krm-fn's (written, so skipped by type_errors), and they only add entries, so the
    # paths of the others are the same in the tuned copy
    spec = get_path(pick.obj, at.spec)
    meta = get_path(pick.obj, at.meta) if at.meta is not None else None
    fields = apivalidation.pod_fields(spec if isinstance(spec, dict) else pod.spec,
                                      tuple(at.spec), meta, at.meta, at.container_keys)
    if at.ray_params is not None:       # the ray rule reads and writes num-cpus there
        fields += apivalidation.string_map_fields(get_path(pick.obj, at.ray_params),
                                                  tuple(at.ray_params))
    _json_types(fields, item, edits, findings)
    return pod, rules.pinned_whole(pod, ctx)


def _json_types(fields: list, item: TunedItem, edits: Edits, out: list) -> None:
    """An ERROR result in `out` per field of `fields` whose scalar the input writes with
    another JSON type than the API's (apivalidation.type_errors), unless krm-fn wrote it;
    nothing when the input's scalar types are not known (Edits.yaml_type). Before that,
    an ERROR per label, annotation or nodeSelector entry whose key or value the API server
    refuses (apivalidation.map_errors), whoever wrote it."""
    pick = item.pick
    what = "pod" if pick.ref.kind == "Pod" else "workload"
    # a custom resource's schema leaves label syntax alone: its controller's pods fail
    builtin = pick.ref.api_version.partition("/")[0] in ("v1", "apps", "batch")
    for path, message in apivalidation.map_errors(
            fields, what if builtin else "pods the workload's controller creates"):
        out.append(Result(message, ERROR, pick.ref, path_str(path)))
    if getattr(edits.retyped, "type_of", None) is None or edits.index is None:
        return
    for path, message in apivalidation.type_errors(fields, edits.yaml_type,
                                                   {c.path for c in edits.changes}, what):
        out.append(Result(message, ERROR, pick.ref, path_str(path)))


def _listed_ok(pod, listed, lpath, listed_at: dict, findings: list) -> bool:
    """Check krm-fn.dev/pinned-containers (`listed`, at `lpath`) against the pod spec's
    containers: a pod-template annotation must name one of them (else an error finding and
    False); a workload-level one is collected in `listed_at` for the whole workload."""
    if listed is None:
        return True
    names = [c.name for c in pod.containers]
    hit = [n for n in listed if n in names]
    at = pod.at
    template_level = at.meta is not None and lpath[:len(at.meta)] == at.meta
    if not template_level:
        listed_at["path"] = lpath
        listed_at["matched"] |= bool(hit)
        listed_at["names"] += [n for n in names if n not in listed_at["names"]]
        return True
    if hit:
        return True
    findings.append(Result(f"annotation {PINNED_ANNOTATION} names no container of this pod "
                           f"spec (containers: {', '.join(names)})", ERROR, pod.ref,
                           path_str(lpath)))
    return False

