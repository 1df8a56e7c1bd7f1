"""The pure core: plain items + function config in, changes + emitted objects + results out.

    load    the function config and each node pool's plan (pipeline/load.py)
    select  identity, duplicates, selection, skip/override annotations, pool (select.py)
    tune    the rules on each pod spec of a picked item: Changes (tune.py, krm_fn/rules)
    verdict what each tuned pod will be: admission checks; items with errors are left
            unchanged (verdict.py)
    emit    per node pool that received a workload (or has emit: always): plan results, fit
            summary, the output formats, collisions with existing items (emit.py)

No YAML here: the YAML layer writes the changes' values into the input text
(krm_fn.changes.ops). The KRM results, validate mode (krm_fn/validate.py) and the
`--report` table (krm_fn/report.py) are functions of the changes and the verdict.
"""
from __future__ import annotations

from krm_fn import changes as changes_mod
from krm_fn.pipeline import emit, load, quantities, refused, select, tune, verdict
from krm_fn.pipeline.select import (CPUS_ANNOTATION, DEFAULT_CONTAINER, LOCAL_CONFIG,
                                    PINNED_ANNOTATION, POOL_ANNOTATION, SKIP_ANNOTATION,
                                    annotations_of, file_of, is_local_config, ref_of)
from krm_fn.results import ERROR, INFO, WARNING, Result

__all__ = ["Output", "transform", "ref_of", "annotations_of", "file_of", "is_local_config",
           "SKIP_ANNOTATION", "POOL_ANNOTATION", "CPUS_ANNOTATION", "PINNED_ANNOTATION",
           "LOCAL_CONFIG", "DEFAULT_CONTAINER"]


class Output:
    """`changes[i]`: the Changes (krm_fn/changes.py) made to input item i, in write order
    (items left unchanged have none); `replace[i]`: a whole new object for input item i (a
    kubelet config krm-fn emitted on an earlier run); `emitted`: new objects (plain dicts) to
    append; `results`: every Result, in order; `pools`: for each node pool that received a
    workload or has `emit: always`, (config pool, NodePlan, [(admission.model.AdmittedPod,
    PodVerdict)], workloads placed), for the human report (krm_fn/report.py); `tuned[i]`:
    item i as krm-fn writes it (plain data), for the items with changes, when transform was
    asked to keep them (else None); `verdicts[i]`: [(admission.model.AdmittedPod,
    PodVerdict)] of item i's pods placed in a pool; `nodes[i]`: node pool i's NodeModel
    as the verdicts judged it (its DaemonSet pods included); `regenerated`: indices of the
    input items krm-fn generated earlier and emitted again this render (pipeline/emit.py);
    `flat` and `origin`: when the input holds a `kind: List` (pipeline/lists.py), the items
    with each List's items in its place, which every index above counts, and
    origin[k] = (input index, path prefix) of flat item k; None otherwise. `ops` and
    `replaced_items` are by input index."""

    __slots__ = ("changes", "replace", "emitted", "results", "pools", "mode", "tuned",
                 "verdicts", "nodes", "regenerated", "origin", "flat")

    def __init__(self, changes: dict | None = None, replace: dict | None = None,
                 emitted: list | None = None, results: list | None = None,
                 pools: list | None = None, mode: str = "mutate", tuned: dict | None = None,
                 verdicts: dict | None = None, nodes: list | None = None,
                 regenerated: set | None = None, origin: list | None = None,
                 flat: list | None = None) -> None:
        self.changes = {} if changes is None else changes
        self.replace = {} if replace is None else replace
        self.emitted = [] if emitted is None else emitted
        self.results = [] if results is None else results
        self.pools = [] if pools is None else pools
        self.mode = mode    # "validate": nothing changed or emitted (krm_fn/validate.py)
        self.tuned = tuned
        self.verdicts = {} if verdicts is None else verdicts
        self.nodes = [] if nodes is None else nodes
        self.regenerated = set() if regenerated is None else regenerated
        self.origin = origin
        self.flat = flat

    @property
    def ops(self) -> dict:
        """{input item index: [(path tuple, value)]}: what the YAML layer writes into each
        input item, derived from `changes` (krm_fn.changes.ops). With `origin` (the input
        held a List, pipeline/lists.py: the indices of changes, replace, tuned and verdicts
        are those of the items in `flat`, origin[k] = (input index, path prefix)), each write
        goes to its List at the item's prefix, and a replaced item inside a List is written
        whole at its prefix."""
        if self.origin is None:
            return {i: changes_mod.ops(c) for i, c in self.changes.items()}
        out: dict = {}
        for k, c in self.changes.items():
            i, prefix = self.origin[k]
            out.setdefault(i, []).extend((prefix + path, v) for path, v in changes_mod.ops(c))
        for k, obj in self.replace.items():
            i, prefix = self.origin[k]
            if prefix:
                out.setdefault(i, []).append((prefix, obj))
        return out

    @property
    def replaced_items(self) -> dict:
        """{input item index: new object} of the whole input items `replace` rewrites (an
        item inside a List is written through `ops` instead)."""
        if self.origin is None:
            return self.replace
        return {self.origin[k][0]: obj for k, obj in self.replace.items()
                if not self.origin[k][1]}

    @property
    def has_errors(self) -> bool:
        """Whether any result is an error (the run exits 1)."""
        return any(r.severity == ERROR for r in self.results)


def transform(items: list, function_config: dict | None, set_path: bool = False,
              aliased: frozenset | set = frozenset(), progress=None,
              mode: str | None = None, keep_tuned: bool = False,
              retyped=None) -> Output:
    """Tune `items` (plain dicts as read from YAML, scalars as strings) per
    `function_config` (plain typed dict, or None for defaults).

    `set_path`: the orchestrator is kpt (items carry path annotations), so emitted objects
    get their own `internal.config.kubernetes.io/path`. `aliased`: indices of items that use
    YAML aliases; they are never edited (an edit through an alias would change every place
    the alias is used), so a needed change there is an error. Never raises for bad input:
    every problem is an error Result. `progress`: called as progress(i, len(items)) before
    item i (0-based) is looked at, for a progress line. `mode`: "mutate" or "validate",
    overriding `spec.mode` (`krm-fn run --mode`); in validate mode the output has no
    changes, replacements or emitted objects and each needed change is an error result
    (krm_fn/validate.py). `keep_tuned`: keep each changed item as krm-fn writes it in
    `Output.tuned` (for the `--report` table; costs memory on large inputs). `retyped`:
    `f(i, path) -> bool`, True where items[i] holds a plain scalar a YAML reader would not
    read as a string (resourcelist.retyped); None: no such scalar is known of.
    """
    out = Output(tuned={} if keep_tuned else None)
    outer = items
    if any(o.__class__ is dict and str(o.get("kind", "")).endswith("List") for o in items):
        items, aliased, retyped = _expand_lists(items, out, aliased, retyped)
    # validate mode as asked, even when the config holding it turns out invalid: a check
    # must not print manifests (krm-fn run --mode validate) on any path
    validating = load.requested_mode(function_config, mode) == "validate"
    out.mode = "validate" if validating else "mutate"
    run = load.prepare(items, function_config, out.results)
    if run is None:
        return out
    run.aliased, run.set_path, run.retyped = aliased, set_path, retyped
    run.origin, run.outer = out.origin, (outer if out.origin is not None else None)
    # quantities as the API server reads them (LimitRanges, ...); objects it never creates
    out.results.extend(quantities.check(items, retyped) + refused.check(items, run.cfg))
    placement: dict = {}
    watch = [] if run.cfg.output.monitoring.enabled else None   # spec.output.monitoring
    # spec.output.admissionPolicy: (TunedItem, pool index) of each placed item
    guarded = [] if run.cfg.output.admissionPolicy.enabled else None
    # with a ResourceQuota in the input, the namespace totals (pipeline/quota.py) are
    # judged once every item's verdict is known, before any outcome is taken
    done: list | None = [] if run.ictx.quotas else None
    picked = select.picks(items, run, progress)
    if any(daemons_of(o) for o in items):
        # a tuned DaemonSet takes its share of every node as krm-fn writes it: every item
        # is tuned first, the DaemonSets judged before the rest (pipeline/daemons.py)
        from krm_fn.pipeline import daemons
        judged = daemons.judge(picked, run)
    else:
        judged = _judged(picked, run)
    for entry in judged:
        if done is None:
            _take(out, entry, placement, watch, guarded)
        else:
            done.append(entry)
    if done is not None:
        from krm_fn.pipeline import quota
        tail = quota.judge(items, done, run)
        for entry in done:
            _take(out, entry, placement, watch, guarded)
        out.results.extend(tail)
    always = emit.always_emitted(run.cfg, placement)
    if not placement and not out.has_errors:
        out.results.append(_nothing_selected(run, always, not items))
    for pool_index in always:       # spec.nodePools[].emit: always, no workload placed
        placement[pool_index] = verdict.Placement()
    verdict.summarize(placement, run)
    out.nodes = run.nodes
    by_name = emit.emit(items, run, placement, out)
    if any(o.__class__ is dict and o.get("kind") == "NodePool" for o in items):
        _karpenter(items, run, placement, out)
    _emit_watchers(items, run, watch, guarded, out, by_name)
    emit.stale_plans(items, run, placement, out)
    if run.defaults_note is not None:
        out.results.append(run.defaults_note)
    if (mode or run.cfg.mode) == "validate":
        from krm_fn import validate
        return Output(results=validate.results(items, out, run.fc_ref), pools=out.pools,
                      mode="validate")
    return out


def _emit_watchers(items: list, run, watch: list | None, guarded: list | None, out: Output,
                   by_name: dict) -> None:
    """What watches the tuned workloads once they run: spec.output.monitoring's rules
    (`watch`: their targets) and spec.output.admissionPolicy's policy (`guarded`:
    (TunedItem, pool index) of each placed item); None or empty: off."""
    if watch:
        emit.emit_monitoring(items, run, [t for t in watch if t is not None], out, by_name)
    if guarded:
        emit.emit_admission_policy(items, run, guarded, out, by_name)


def _karpenter(items: list, run, placement: dict, out: Output) -> None:
    """Mirror the reservation of each emitted pool's plan into the EC2NodeClass of the
    Karpenter NodePools that provision its nodes (krm_fn/node/karpenter.py): the edits go
    to `out.changes` (and `out.tuned`), the results to `out.results`."""
    from krm_fn.node import karpenter
    pools = [(run.cfg.nodePools[i].name, run.plans[i].node_selector, run.plans[i])
             for i in sorted(placement)]
    frozen = set(run.aliased) | {i for i, o in enumerate(items)
                                 if o.__class__ is dict and is_local_config(o)}
    paths = {run.cfg.nodePools[i].name: f"spec.nodePools[{i}].nodeSelector"
             for i in sorted(placement)}
    edits, results = karpenter.mirror(items, pools, frozen, run.fc_ref, paths)
    for i, changes in edits.items():
        out.changes.setdefault(i, []).extend(changes)
        if out.tuned is not None:
            work = out.tuned.setdefault(i, tune.copy_item(items[i]))
            for change in changes:
                karpenter.put(work, change.path, change.new)
    out.results.extend(results)


def _expand_lists(items: list, out: Output, aliased, retyped):
    """kind: List and other <Kind>Lists (pipeline/lists.py): their items are objects of
    their own. Sets out.origin and out.flat, adds the results; returns (items, aliased,
    retyped) of the flat items: an item inside a List uses aliases when its List does, and
    its paths are below its prefix."""
    from krm_fn.pipeline import lists
    flat, out.origin, list_results = lists.expand(items)
    out.results.extend(list_results)
    if out.origin is None:
        return items, aliased, retyped
    origin = out.origin
    out.flat = flat
    flat_aliased = frozenset(k for k, (i, _) in enumerate(origin) if i in aliased)
    if retyped is None:
        return flat, flat_aliased, None
    return flat, flat_aliased, \
        lambda k, path: retyped(origin[k][0], origin[k][1] + tuple(path))


def daemons_of(obj) -> bool:
    """Whether `obj` is a DaemonSet (a cheap look before pipeline/daemons.py is used)."""
    return obj.__class__ is dict and obj.get("kind") == "DaemonSet"


def _judged(picked, run):
    """(Picked, TunedItem or None, verdict.Outcome or None) of each pick, tuned and judged
    one after another."""
    for pick in picked:
        if not pick.tune:
            yield pick, None, None
        else:
            item = tune.tune(pick, run)
            yield pick, item, verdict.judge(item, run)


def _take(out: Output, entry: tuple, placement: dict, watch: list | None,
          guarded: list | None = None) -> None:
    """Put one picked item's (Picked, TunedItem, Outcome) into `out` and its pool's
    Placement (an item not tuned: its select findings); a placed item goes to `guarded`
    too when that is a list (spec.output.admissionPolicy)."""
    pick, item, outcome = entry
    if item is None:
        out.results.extend(pick.findings)
        return
    if watch is not None:
        from krm_fn.monitoring.targets import of_item
        watch.append(of_item(item, outcome.pool_index))
    if guarded is not None and outcome.pool_index is not None:
        guarded.append((item, outcome.pool_index))
    out.results.extend(outcome.results)
    if outcome.changes:
        out.changes[pick.index] = outcome.changes
        if out.tuned is not None and outcome.work is not None:
            out.tuned[pick.index] = outcome.work
    if outcome.verdicts:
        out.verdicts[pick.index] = outcome.verdicts
    verdict.place(placement, outcome)


def _nothing_selected(run, always: list, empty: bool = False) -> Result:
    """No workload of the input was placed: a warning (nothing tuned, nothing emitted; for
    an `empty` input, one saying so), or, when pools with `emit: always` are emitted
    anyway, an info naming them."""
    if not always:
        why = ("the input holds no items (was it piped from a command that failed?)" if empty
               else "no workload was selected")
        return Result(f"{why}: nothing tuned and no kubelet config emitted"
                      + ("" if empty else " (check spec.selector)"), WARNING, run.fc_ref)
    names = ", ".join(repr(run.cfg.nodePools[i].name) for i in always)
    return Result(f"no workload was selected: nothing tuned; the node config of node "
                  f"pool(s) {names} is emitted (spec.nodePools[].emit: always)", INFO,
                  run.fc_ref)
