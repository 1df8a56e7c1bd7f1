"""Step 3 of the pipeline, verdict: what each tuned pod will be, and what the item becomes.

For now exactly what krm_fn/node/checks.py computes: the exclusive CPUs each tuned pod asks
for (whole-CPU limits) and whether the node pool's kubelet would admit it (`check_pod`),
then per pool the fit summary (`summary`). An item with an error is left unchanged: its
changes are dropped, and so are the infos describing them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from krm_fn import changes as changes_mod
from krm_fn import quantity
from krm_fn.node import checks
from krm_fn.pipeline.tune import TunedItem
from krm_fn.pod import path_str
from krm_fn.results import ERROR, INFO, Result

LEFT_UNCHANGED = "left unchanged because of the errors above"


@dataclass
class Outcome:
    """What one picked item comes to: `changes` (krm_fn/changes.py) to write, [] when it is
    left unchanged; `results`: its KRM results, in order; `pool_index`: the node pool it is
    placed in (None: not placed); `needs`: [checks.PodCpus] of its pods; `work`: the tuned
    copy when it has changes."""

    changes: list
    results: list
    pool_index: int | None = None
    needs: list = field(default_factory=list)
    work: dict | None = None


def pod_cpus(pod) -> checks.PodCpus:
    """The exclusive CPUs a tuned pod (PodView) asks for: whole-CPU limits of its
    containers (app containers; init and sidecar containers separately)."""
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


def judge(item: TunedItem, run) -> Outcome:
    """The verdict on one tuned item (`run`: the pipeline's load.Run): each tuned pod's
    admission check against its node pool's plan, then the item's outcome."""
    pick = item.pick
    needs = []
    if pick.pool is not None:
        plan = run.plans[pick.pool_index]
        for tp in item.pods:
            if tp.pod is not None:
                need = pod_cpus(tp.pod)
                needs.append(need)
                tp.verdict = checks.check_pod(plan, need)
    return _outcome(item, needs, run)


def _pod_findings(item: TunedItem) -> list:
    """The item's pod spec findings with each pod's verdict after its own, then the
    workload-level ones."""
    out, start = [], 0
    for tp in item.pods:
        out += item.findings[start:tp.end]
        out += tp.verdict
        start = tp.end
    return out + item.findings[start:] + item.tail


def _outcome(item: TunedItem, needs: list, run) -> Outcome:
    """Changes and results of the item: the whole-object checks' (dropped on their own
    errors), then the rules' (dropped on any error of the pod specs); nothing is written to
    an item that uses YAML aliases."""
    pick = item.pick
    changes, findings = [], []
    if pick.handled:
        changes, findings = list(item.object_changes), list(item.object_findings)
        if _has_error(findings):
            findings.append(Result(LEFT_UNCHANGED, ERROR, pick.ref))
            changes = []
    pool_index, work = None, None
    if pick.kind_known:
        if pick.pool_findings:
            findings += pick.pool_findings
            needs = []
        else:
            more = _pod_findings(item)
            if _has_error(more):
                more.append(Result(LEFT_UNCHANGED, ERROR, pick.ref))
                needs = []
            else:
                changes += item.changes
                pool_index = pick.pool_index if item.found else None
                work = item.work
            findings += more
    if changes and pick.index in run.aliased:
        findings.append(Result("uses YAML anchors and aliases, so krm-fn cannot change it "
                               "without changing every place an alias points to; expand "
                               "the aliases (kustomize does this before running functions)"
                               " and run again; left unchanged", ERROR, pick.ref))
        changes, pool_index = [], None
    results = changes_mod.results(findings, pick.file)
    if _has_error(results):
        # the item is left unchanged: drop the infos that describe changes not made
        results = [r for r in results if r.severity != INFO]
    changes = [c if c.index == pick.index else _indexed(c, pick.index) for c in changes]
    return Outcome(changes, results, pool_index, needs, work if changes else None)


def _indexed(change, index: int):
    return dataclasses.replace(change, index=index)


def _has_error(findings: list) -> bool:
    return any(f.severity == ERROR for f in findings)


@dataclass
class Placement:
    """The workloads placed in one node pool: `count`, their pods' `needs`
    ([checks.PodCpus]) and, once `summarize` ran, the pool's fit `summary` Result."""

    count: int = 0
    needs: list = field(default_factory=list)
    summary: Result | None = None


def place(placement: dict, outcome: Outcome) -> None:
    """Count `outcome`'s workload in its pool's Placement in `placement` ({pool index:
    Placement}) when it is placed."""
    if outcome.pool_index is not None:
        p = placement.setdefault(outcome.pool_index, Placement())
        p.count += 1
        p.needs.extend(outcome.needs)


def summarize(placement: dict, run) -> None:
    """Each placed pool's fit summary (checks.summary), on the function config."""
    for i, p in placement.items():
        p.summary = checks.summary(run.plans[i], p.needs, run.fc_ref)
