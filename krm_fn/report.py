"""The human report of `krm-fn run --report` (on stderr), built from the transform outcome.

`render(items, out, function_config)` is pure: `items` are the input items (plain dicts, as
resourcelist.parse reads them), `out` the pipeline.Output of
pipeline.transform(..., keep_tuned=True) on them (the tuned copies are the "after" column;
nothing is replayed). It
shows, per workload that krm-fn looked at (it changed it or reported on it), each container
of each pod spec with cpu and memory (request/limit; cpu in cores or millicores, memory in
the unit written) and thread count (the first variable of `threads.env` the container sets),
as `before → after` when they differ; then per node pool that received a workload the
KubeletConfiguration fields of the plan (node/plan.py) and the fit: exclusive CPUs per node
and per NUMA node and, per pod, its exclusive CPUs and how many fit on one node (the
verdicts, krm_fn/admission/verdict.py); and a table of every pod after admission. `Progress` writes the progress line for large inputs.
"""
from __future__ import annotations

import json
from typing import Any, TextIO

from krm_fn import config as config_mod
from krm_fn.pipeline import Output, ref_of
from krm_fn.admission import build, verdict
from krm_fn.pod import Edits, ShapeError, build_views, path_str
from krm_fn.results import ERROR
from krm_fn.workloads import get_path, locations, registered

ARROW = "→"
# Inputs with more items than this get a progress line (Progress).
PROGRESS_MIN_ITEMS = 500
# On a terminal the line is rewritten every this many items.
PROGRESS_EVERY = 100


def after(items: list, out: Output, i: int) -> dict:
    """Item i as krm-fn writes it, as plain data: the tuned copy the rules wrote into
    (`out.tuned[i]`, kept by transform(..., keep_tuned=True)) for a changed item, else the
    input item. Raises ValueError when `out` was made without keep_tuned."""
    if out.tuned is None:
        raise ValueError("the report needs transform(..., keep_tuned=True)")
    return out.tuned.get(i, items[i])


def _res(c: dict | None, kind: str) -> str:
    """`request/limit` of one resource of a container, `-` for a missing value."""
    def one(which: str) -> str:
        v = get_path(c, ("resources", which, kind)) if c is not None else None
        return "-" if v is None else str(v)
    return f"{one('requests')}/{one('limits')}"


def _threads(c: dict | None, names: list) -> str:
    """The first of `names` the container's env sets: its value, `valueFrom`, or `-`."""
    env = c.get("env") if isinstance(c, dict) else None
    by_name = {e["name"]: e for e in env if isinstance(e, dict)
               and isinstance(e.get("name"), str)} if isinstance(env, list) else {}
    for n in names:
        e = by_name.get(n)
        if e is not None:
            return str(e["value"]) if e.get("value") is not None else (
                "valueFrom" if e.get("valueFrom") is not None else "-")
    return "-"


def _change(before: str, now: str) -> str:
    return now if before == now else f"{before} {ARROW} {now}"


def _table(rows: list[list[str]], indent: str = "") -> list[str]:
    """The rows as aligned lines; a character that is not printable (a carriage return or
    an escape in an object's name) is written escaped (`\\r`), as the result lines write it,
    so that it cannot move the cursor over another row."""
    rows = [[c if c.isprintable() else "".join(ch if ch.isprintable() else repr(ch)[1:-1]
                                                for ch in c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip()
            for r in rows]


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_scalar(x)}" for k, x in v.items()) or "{}"
    if isinstance(v, list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _status(i: int, ref, out: Output, by_ref: dict) -> str:
    mine = by_ref.get(ref, [])
    if any(r.severity == ERROR for r in mine):
        return "left unchanged: error"
    if any(r.message.startswith("skipped:") for r in mine):
        return "skipped"
    return "changed" if i in out.changes else "unchanged"


def _workloads(items: list, out: Output, cfg) -> list[str]:
    extra = config_mod.extra_registry(cfg)
    names = list(cfg.workloads.threads.env)
    by_ref: dict = {}
    for r in out.results:
        if r.ref is not None:
            by_ref.setdefault(r.ref, []).append(r)
    reported = set(by_ref)
    rows: list[list[str]] = [["WORKLOAD / CONTAINER", "CPU req/lim", "MEMORY req/lim",
                              "THREADS"]]
    count = 0
    for i, obj in enumerate(items):
        if not isinstance(obj, dict) or not registered(obj, extra):
            continue
        ref = ref_of(obj)
        if i not in out.changes and ref not in reported:
            continue
        count += 1
        now = after(items, out, i)
        rows.append([f"{ref} ({_status(i, ref, out, by_ref)})", "", "", ""])
        pods = []
        for at in locations(now, extra):
            try:
                pod = build_views(now, at, ref, Edits(now), [])
            except ShapeError:
                continue
            if pod is not None:
                pods.append(pod)
        for pod in pods:
            if len(pods) > 1:
                rows.append([f"  {path_str(pod.at.spec)}", "", "", ""])
            for c in pod.containers:
                old = get_path(obj, c.path)
                old = old if isinstance(old, dict) else None
                rows.append([("    " if len(pods) > 1 else "  ") + c.name
                             + ("" if c.role == "app" else f" ({c.role})"),
                             _change(_res(old, "cpu"), _res(c.data, "cpu")),
                             _change(_res(old, "memory"), _res(c.data, "memory")),
                             _change(_threads(old, names), _threads(c.data, names))])
    if not count:
        return ["No workload was tuned or reported on."]
    return [f"Workloads ({count}):", *_table(rows, "  ")]


def _verdicts(out: Output) -> list[str]:
    """One row per pod placed in a node pool: its verdict after admission (QoS class,
    exclusive CPUs per container, NUMA nodes, injected containers, replicas per node)."""
    rows = [["POD", "QOS", "EXCLUSIVE CPUS", "NUMA", "INJECTED", "PER NODE"]]
    for i in sorted(out.verdicts):
        for pod, v in out.verdicts[i]:
            failed = any(f.severity == ERROR for f in v.findings)
            rows.append([f"{pod.ref} {pod.path}", v.qos + (" (error)" if failed else ""),
                         ", ".join(f"{n} {c}" for n, c in v.exclusive) or "-",
                         "+".join(str(n) for n in v.numa) or "-",
                         ", ".join(v.injected) or "-",
                         "-" if v.fit is None else str(v.fit)])
    if len(rows) == 1:
        return []
    return ["", "Pods after admission:", *_table(rows, "  ")]


def _pools(out: Output, cfg) -> list[str]:
    lines: list[str] = []
    for pool, plan, judged, placed in out.pools:
        node = build.node_model(plan, pool, cfg.kubernetesVersion)
        per_numa = verdict.exclusive_per_numa(node)
        rows = [["nodeSelector", _scalar(plan.node_selector)]]
        rows += [[k, _scalar(v)] for k, v in plan.kubelet.items()
                 if k not in ("apiVersion", "kind")]
        numa = ", ".join(f"NUMA {n}: {c}" for n, c in sorted(per_numa.items()))
        rows.append(["fit", f"{sum(per_numa.values())} exclusive CPUs per node ({numa})"])
        for p, v in judged:
            need = sum(c for _, c in v.exclusive)
            where = f"{p.ref} {p.path}"
            rows.append(["", f"{where}: needs {need} exclusive, {verdict.fit_text(v)}"
                         if need else f"{where}: no exclusive CPUs"])
        lines += ["", f"Node pool {pool.name} ({placed} workload{'s' if placed != 1 else ''}):",
                  *_table(rows, "  ")]
    return lines


def render(items: list, out: Output, function_config: dict | None) -> str:
    """The report text (lines ending in newline), or one line saying the config is invalid.

    `items`: the input items; `out`: pipeline.transform(items, function_config, ...,
    keep_tuned=True). Raises ValueError when `out` has no tuned copies."""
    try:
        cfg = config_mod.load(function_config)
    except config_mod.ConfigError:
        return "krm-fn report: the function config is invalid (see the error above)\n"
    errors = sum(1 for r in out.results if r.severity == ERROR)
    warnings = sum(1 for r in out.results if r.severity == "warning")
    head = (f"krm-fn report: {len(items)} item{'s' if len(items) != 1 else ''}, "
            f"{len(out.changes)} changed, {errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''}")
    return "\n".join([head, "", *_workloads(items, out, cfg), *_verdicts(out),
                      *_pools(out, cfg)]) + "\n"


class Progress:
    """Progress line for inputs of more than PROGRESS_MIN_ITEMS items, on `stream`
    (stderr). On a terminal (`tty`): `krm-fn: N/TOTAL items` rewritten in place with `\\r`
    every PROGRESS_EVERY items; otherwise nothing until `done()`, which writes the final
    line once (ending in a newline). Smaller inputs: nothing at all."""

    def __init__(self, stream: TextIO, tty: bool):
        self.stream = stream
        self.tty = tty
        self.total = 0

    def __call__(self, i: int, total: int) -> None:
        """pipeline.transform's progress callback: item i (0-based) of `total` is next."""
        self.total = total
        if self.tty and total > PROGRESS_MIN_ITEMS and i % PROGRESS_EVERY == 0:
            self.stream.write(f"\rkrm-fn: {i}/{total} items")
            self.stream.flush()

    def done(self) -> None:
        """Write the final line (`krm-fn: TOTAL/TOTAL items`) when the input was large."""
        if self.total > PROGRESS_MIN_ITEMS:
            self.stream.write(f"{chr(13) if self.tty else ''}krm-fn: {self.total}/{self.total}"
                              f" items\n")
            self.stream.flush()
