"""After every item's verdict, the render's pods together against the ResourceQuotas of their
namespace (admission/quotatotal.py): a workload that loses pods to a quota because of the
others (or because of krm-fn's edits to them) gets a result of its own, an error that
leaves a tuned item unchanged like the verdict's other errors (pipeline/verdict.py).

Only when the input holds a ResourceQuota (imported then). Each workload's pods as krm-fn
writes them: the pods judged by the verdict when the item keeps its changes, else the pods
of the input (an item left unchanged, not selected, or one krm-fn does not tune), with the
containers the injectors add and the RuntimeClass overhead.
"""
from __future__ import annotations

from krm_fn.admission import build, quotascope, quotatotal
from krm_fn.admission import resourcequota as rq
from krm_fn.admission.model import ERROR, same_namespace
from krm_fn.changes import results as file_results
from krm_fn.pipeline.select import (VERDICT_ANNOTATION, annotations_of, is_local_config,
                                    ref_of)
from krm_fn.pipeline.tune import copy_item
from krm_fn.pipeline.verdict import LEFT_UNCHANGED, VERDICT_TAGS
from krm_fn.pod import Edits, ShapeError, build_views
from krm_fn.results import INFO, WARNING, Result
from krm_fn.workloads import locations

TAGS = VERDICT_TAGS + (("part", "resourcequota"),)


def judge(items: list, done: list, run) -> list:
    """Judge the namespace totals; `done`: [(Picked, TunedItem or None, Outcome or None)]
    in input order, the Outcomes changed in place (results added; an ERROR leaves the item
    unchanged). Returns the results about items with no Outcome (after all items').
    The namespaces judged are those of `_spaces`."""
    by_index = {p.index: (p, o) for p, _, o in done if o is not None}
    spaces = _spaces(items, run)
    rows_of: dict = {ns: [] for ns in spaces}
    tail: list = []
    said: set = set()       # (item index, message): an item of several namespaces' once

    def add(i, outcome, pick, result):
        if (i, result.message) not in said:
            said.add((i, result.message))
            _add(tail, outcome, pick, result)
    for i, obj in enumerate(items):
        if not _creates_pods(obj, run):
            continue
        mine = [ns for ns in spaces if same_namespace(obj, ns)]
        if not mine:
            continue
        pick, outcome = by_index.get(i, (None, None))
        problem = rq.count_problem(obj)
        if problem is not None:
            add(i, outcome, pick, Result(problem[1], _severity(obj, run.cfg, True),
                                         ref_of(obj), problem[0], tags=TAGS))
            continue
        count, why = rq.pod_count(obj)
        if count == 0:
            continue
        for ns in mine:
            if count is None:
                add(i, outcome, pick, Result(
                    f"{obj.get('kind')} {ref_of(obj).name} is not counted in the total of "
                    f"namespace {ns or 'default'} against its ResourceQuotas: {why}", INFO,
                    ref_of(obj), tags=TAGS))
                continue
            share, unknown, unstated = _share(i, obj, ns, spaces[ns], count, outcome, run)
            if share is not None:
                rows_of[ns].append((i, obj, share))
            if outcome is None:     # else resourcequota.refused has said it on the item
                for name, what in unstated:
                    add(i, outcome, pick, Result(
                        rq.unstated_message(name, ns, what), _severity(obj, run.cfg, False),
                        ref_of(obj), _path(obj, run), tags=TAGS))
                for why in unknown:
                    add(i, outcome, pick, Result(
                        f"{obj.get('kind')} {ref_of(obj).name} is not counted in the total "
                        f"of namespace {ns or 'default'} against {why}", INFO, ref_of(obj),
                        tags=TAGS))
    for quotas in run.ictx.quotas.values():
        for q in quotas:
            note = quotatotal.unmodelled(q)
            if note is not None:
                tail.append(Result(note, INFO, ref_of(q), tags=TAGS))
            for note in quotatotal.unmodelled_names(q):
                tail.append(Result(note, INFO, ref_of(q), tags=TAGS))
    for ns, quotas in spaces.items():
        rows = rows_of[ns]
        refused: set = set()
        for r in quotatotal.judge(ns, quotas, [s for _, _, s in rows]):
            refused.add(r.index)
            i, obj, share = rows[r.index]
            pick, outcome = by_index.get(i, (None, None))
            sev = _severity(obj, run.cfg, outcome is not None or r.broken)
            add(i, outcome, pick, Result(r.message, sev, share.ref, _path(obj, run),
                                         tags=TAGS))
        _at_max(ns, quotas, rows, by_index, run, tail, refused)
        rows = _reverted(ns, quotas, rows, by_index, run, tail)
        _rollouts(ns, quotas, rows, by_index, run, tail)
    return tail


def _written_ns(obj: dict) -> str:
    md = obj.get("metadata")
    return str((md if isinstance(md, dict) else {}).get("namespace") or "")


def _spaces(items: list, run) -> dict:
    """{namespace: [its ResourceQuotas]}: each namespace the input's quotas may count pods
    in. A quota or a workload without a namespace lands where the tool that applies the
    render puts it (admission/model.same_namespace), so krm-fn judges each namespace the
    input names, with the quotas written there and those written without one, and there
    the workloads written there and those without one (failing closed: they may land
    together); "" (the namespace of the apply) when the input names none. A workload of
    one namespace is never added up with one of another, which the API server never
    does (a quota counts the pods of its own namespace only:
    https://kubernetes.io/docs/concepts/policy/resource-quotas/)."""
    quotas = run.ictx.quotas
    loose = list(quotas.get("", ()))
    named = {ns for ns in quotas if ns}
    if loose:
        named |= {_written_ns(obj) for obj in items if _creates_pods(obj, run)} - {""}
    if not named:
        return {"": loose} if loose else {}
    return {ns: list(quotas.get(ns, ())) + loose for ns in sorted(named)}


def _at_max(ns: str, quotas: list, rows: list, by_index: dict, run, tail: list,
            said: set) -> None:
    """The namespace total again with each workload a HorizontalPodAutoscaler of the input
    scales (admission/hpa.py) at its maxReplicas where that is above its replicas (the
    largest of several HPAs'): a workload that loses pods only then (not in `said`, the
    rows refused at their replicas) gets the refusal, which names the maxReplicas (which
    workload loses the pods is a race, as at the replicas)."""
    if not run.ictx.hpas or not rows:
        return
    import dataclasses
    from krm_fn.admission import hpa
    scaled, names = {}, []
    for k, (_, _, s) in enumerate(rows):
        tops = [(hpa.bounds(h)[1], hpa.name_of(h)) for h in run.ictx.hpas
                if hpa.targets(h, s.ref.kind, s.ref.name, s.ref.namespace or "")]
        tops = [(m, n) for m, n in tops if m is not None and m > s.count]
        if tops:
            m, n = max(tops)
            scaled[k] = m
            names.append(f"{s.ref.kind} {s.ref.name} at HorizontalPodAutoscaler {n}'s "
                         f"maxReplicas {m}")
    if not scaled:
        return
    shares = [dataclasses.replace(s, count=scaled.get(k, s.count))
              for k, (_, _, s) in enumerate(rows)]
    order = f"created in render order with {', '.join(names)}"
    for r in quotatotal.judge(ns, quotas, shares, order):
        if r.index in said:
            continue
        said.add(r.index)
        i, obj, share = rows[r.index]
        pick, outcome = by_index.get(i, (None, None))
        sev = _severity(obj, run.cfg, outcome is not None or r.broken)
        _add(tail, outcome, pick, Result(r.message, sev, share.ref, _path(obj, run),
                                         tags=TAGS))


def _reverted(ns: str, quotas: list, rows: list, by_index: dict, run, tail: list) -> list:
    """The namespace total again while an error leaves items unchanged: such an item runs
    the input's pods, not the ones judged, so the others are judged beside those (a
    workload left unchanged at 3500m under a 7-CPU quota leaves no room for another raised
    to 4); a refusal found now goes to an item that still keeps its changes (and leaves it
    unchanged in turn), their pods created after those of the items left unchanged, which
    run already. Returns the rows with the shares of the items left unchanged as
    the input writes them."""
    done: set = set()
    while True:
        gone = [k for k, (i, _, s) in enumerate(rows) if k not in done and s.use != s.before
                and not _keeps(by_index.get(i, (None, None))[1])]
        if not gone:
            return rows
        done.update(gone)
        rows = [(i, obj, quotatotal.Share(s.ref, s.count, s.before, s.before, False,
                                          s.counted_before, s.counted_before, s.refused))
                if k in gone else (i, obj, s) for k, (i, obj, s) in enumerate(rows)]
        # the pods of the items left unchanged run already: the kept ones' pods come after
        order = sorted(range(len(rows)), key=lambda k: _keeps(by_index.get(
            rows[k][0], (None, None))[1]))
        left = [rows[k][2].ref for k in order if not _keeps(by_index.get(
            rows[k][0], (None, None))[1])]
        said = (f"with {', '.join(f'{x.kind} {x.name}' for x in left)} left unchanged "
                f"(the pods the input writes, which run already) and the others' pods "
                f"created after them")
        for r in quotatotal.judge(ns, quotas, [rows[k][2] for k in order], said):
            i, obj, share = rows[order[r.index]]
            pick, outcome = by_index.get(i, (None, None))
            if _keeps(outcome):
                _add(tail, outcome, pick, Result(r.message, _severity(obj, run.cfg, True),
                                                 share.ref, _path(obj, run), tags=TAGS))


def _keeps(outcome) -> bool:
    return outcome is not None and bool(outcome.changes)


def _rollouts(ns: str, quotas: list, rows: list, by_index: dict, run, tail: list) -> None:
    """The rollout each kept edit starts, against the namespace's quotas (admission/
    rollout.py): an item whose changes are kept after the steady-state checks; every
    workload's pods as many as the quotas admit at steady state, as the input writes them
    and as rendered (quotatotal.admitted)."""
    from krm_fn.admission import rollout
    pairs = [(str((q.get("metadata") or {}).get("name")), rq._hard(q))
             for q in quotas if rq.modelled(q)]
    if not pairs or not rows:
        return
    rolls = [_keeps(by_index.get(i, (None, None))[1]) for i, _, _ in rows]
    said: set = set()
    for shares, scaled in _hpa_counts(rows, run):
        counts = tuple([n for n, _ in quotatotal.admitted(pairs, shares, usage)]
                       for usage in ("before", "use")) + (rolls,)
        for index, (i, obj, share) in enumerate(rows):
            pick, outcome = by_index.get(i, (None, None))
            if not rolls[index] or index in said or (scaled.get("only") and
                                                     index not in scaled):
                continue
            got = rollout.check(obj, ns, pairs, shares, index, counts)
            if got is None:
                continue
            said.add(index)
            certain, message = got
            if scaled:
                certain = certain and scaled.get(index, (True,))[0]
                message = f"{scaled[index][1]}: {message}" if index in scaled else message
            sev = _severity(obj, run.cfg, True) if certain else INFO
            _add(tail, outcome, pick, Result(message, sev, share.ref, _path(obj, run),
                                             tags=TAGS))


def _hpa_counts(rows: list, run):
    """The namespace's shares to judge rollouts with, each with {row index: (certain,
    what is said first)} for the rows a HorizontalPodAutoscaler of the input scales
    (admission/hpa.py): first at the replicas the HPA keeps at least (its minReplicas,
    whatever spec.replicas says: certain), then at its maxReplicas (where it may have
    scaled the workload when the rollout starts: not certain; only those rows, "only")."""
    shares = [s for _, _, s in rows]
    if not run.ictx.hpas:
        yield shares, {}
        return
    import dataclasses
    from krm_fn.admission import hpa
    low, high = {}, {}
    for k, s in enumerate(shares):
        found = [(hpa.bounds(h), hpa.name_of(h)) for h in run.ictx.hpas
                 if hpa.targets(h, s.ref.kind, s.ref.name, s.ref.namespace or "")]
        found = [((lo, hi), n) for (lo, hi), n in found if hi is not None]
        if found:
            (lo, _), n = max(found, key=lambda f: f[0][0])
            low[k] = (lo, n)
            (_, hi), n2 = max(found, key=lambda f: f[0][1])
            high[k] = (hi, n2)
    yield ([dataclasses.replace(s, count=low[k][0]) if k in low else s
            for k, s in enumerate(shares)],
           {k: (True, f"at HorizontalPodAutoscaler {n}'s minReplicas {m}, the fewest pods "
                      f"it keeps") for k, (m, n) in low.items()})
    if high:
        yield ([dataclasses.replace(s, count=high[k][0]) if k in high else s
                for k, s in enumerate(shares)],
               {"only": True, **{k: (False, f"when HorizontalPodAutoscaler {n} has scaled "
                                            f"it to its maxReplicas {m}")
                                 for k, (m, n) in high.items()}})


def _creates_pods(obj, run) -> bool:
    if not isinstance(obj, dict) or is_local_config(obj):
        return False
    api = str(obj.get("apiVersion") or "")
    return not api.startswith("kpt.dev/") and bool(locations(obj, run.extra))


def _path(obj: dict, run) -> str:
    from krm_fn.pod import path_str
    return path_str(locations(obj, run.extra)[0].spec)


def _share(i: int, obj: dict, ns: str, quotas: list, count: int, outcome, run) -> tuple:
    """(the quotatotal.Share of item `i` in namespace `ns`, or None when its pod spec cannot
    be read; [ResourceQuota <name>: why] for each of `quotas` (the namespace's) krm-fn
    cannot tell counts
    the pod as rendered or not (quotascope.matches): it is not counted against those;
    [(quota name, what the containers do not state)] for each quota that counts the pod
    and refuses every one (resourcequota.unstated))."""
    ref = ref_of(obj)
    before = _input_pod(i, obj, ref, ns, run)
    if before is None:
        return None, [], []
    judged = (outcome.verdicts[0][0] if outcome is not None and len(outcome.verdicts) == 1
              else None)
    kept = judged is not None and not any(r.severity == ERROR for r in outcome.results)
    pod = judged if kept else before
    use = rq._usage(pod)
    # resourcequota.refused judged these very pods alone (same usage, same count)
    alone = (judged is not None and rq.replicas(obj, judged.path) == count
             and rq._usage(judged) == use)
    quotas = [q for q in quotas if rq.modelled(q)]
    counted, unknown = _counted(quotas, pod)
    unstated = []
    for q in quotas:
        name = str((q.get("metadata") or {}).get("name"))
        what = rq.unstated(pod, q) if name in counted else None
        if what is not None:
            unstated.append((name, what))
    share = quotatotal.Share(ref, count, use, rq._usage(before), alone, counted,
                             _counted(quotas, before)[0], frozenset(n for n, _ in unstated))
    return share, unknown, unstated


def _counted(quotas: list, pod) -> tuple:
    """(frozenset of the names of `quotas` that count `pod`, [ResourceQuota <name>: why]
    of those krm-fn cannot tell for)."""
    names, unknown = [], []
    for q in quotas:
        name = str((q.get("metadata") or {}).get("name"))
        counts, why = quotascope.matches(q, pod)
        if counts:
            names.append(name)
        elif counts is None:
            unknown.append(f"ResourceQuota {name}: krm-fn cannot tell whether it counts "
                           f"its pods ({why}); the API server does ({quotascope.SOURCE})")
    return frozenset(names), unknown


def _input_pod(i: int, obj: dict, ref, ns: str, run):
    """The AdmittedPod of the (only) pod spec of `obj` as the input writes it."""
    at = locations(obj, run.extra)
    if len(at) != 1:
        return None
    work = copy_item(obj)
    try:
        view = build_views(work, at[0], ref, Edits(work, index=i, ref=ref), [])
    except ShapeError:
        return None
    if view is None:
        return None
    return build.admitted_pod(view, frozenset(), run.injections(view), ns,
                              runtime_classes=run.ictx.runtime_classes,
                              priority_classes=run.ictx.priority_classes,
                              limit_ranges=run.ictx.limit_ranges_for(ns))


def _severity(obj: dict, cfg, strict: bool) -> str:
    """ERROR, lowered to a WARNING by `krm-fn.dev/verdict: warning` on the workload or its
    pod template, else by spec.verdict.onFailure (pipeline/verdict.severity_on_failure);
    WARNING when not `strict` (a workload krm-fn does not tune, which the input's own
    amounts already break: krm-fn makes it no worse)."""
    if not strict:
        return WARNING
    template = annotations_of(obj, ("spec", "template", "metadata"))
    for ann in (annotations_of(obj), template):
        value = ann.get(VERDICT_ANNOTATION)
        if value in ("warning", "error"):
            return WARNING if value == "warning" else ERROR
    return WARNING if cfg.verdict.onFailure == "warning" else ERROR


def _add(tail: list, outcome, pick, result: Result) -> None:
    """Add `result` to the item's Outcome (before its `left unchanged`; an ERROR leaves a
    kept item unchanged), or to `tail` when the item has none."""
    if outcome is None:
        tail.append(result)
        return
    (result,) = file_results([result], pick.file)
    res = outcome.results
    at = len(res)
    if res and res[-1].message == LEFT_UNCHANGED:
        at -= 1
    res.insert(at, result)
    if result.severity != ERROR or at < len(res) - 1:
        return
    # the item is left unchanged: as pipeline/verdict._outcome does for the verdict's errors
    # (the results of its changes, those with the value written, go whatever their severity)
    outcome.results = [r for r in res if r.severity == ERROR or (r.proposed is None and (
        r.severity != INFO or r.tags[:1] == VERDICT_TAGS))]
    outcome.results.append(Result(LEFT_UNCHANGED, ERROR, pick.ref))
    outcome.changes, outcome.pool_index, outcome.work = [], None, None
