"""Step 3 of the pipeline, verdict: what each tuned pod will be after admission, and what
the item becomes.

Each tuned pod placed in a node pool becomes an admission.model.AdmittedPod (its containers
as tuned, plus the ones injected at admission) and is judged on one node of its pool
(krm_fn/admission/verdict.py): one info result states the verdict in a line, each finding
becomes a result. A finding that the pod will not get exclusive CPUs for its pinned
containers (not Guaranteed after admission, refused by a webhook, never schedulable, never
admitted) is an error: the render fails closed, unless `spec.verdict.onFailure` or the
workload's `krm-fn.dev/verdict` annotation lowers it to a warning. An item with an error is
left unchanged: its changes are dropped, and so are the infos describing them; when the error
is known before the verdict (the item's own, a pod spec's, YAML aliases), each of its pods is
judged as the input writes it (tune.as_written), since that is the pod the cluster gets. Per pool,
the fit summary says how many of each pod fit on one node (admission/capacity.py).
"""
from __future__ import annotations

from krm_fn import changes as changes_mod
from krm_fn.admission import build, injectors, updates
from krm_fn.admission import verdict as judging
from krm_fn.admission.model import DEPENDS
from krm_fn.pipeline.select import VERDICT_ANNOTATION, annotations_of
from krm_fn.pipeline.tune import TunedItem, as_written
from krm_fn.results import ERROR, INFO, WARNING, Result

LEFT_UNCHANGED = "left unchanged because of the errors above"
VERDICT_TAGS = (("rule", "verdict"),)
_FIXED_KINDS = frozenset(kind for _, kind in updates.FIXED)


class Outcome:
    """What one picked item comes to: `changes` (krm_fn/changes.py) to write, [] when it is
    left unchanged; `results`: its KRM results, in order; `pool_index`: the node pool it is
    placed in (None: not placed); `verdicts`: (AdmittedPod, PodVerdict) per judged pod;
    `work`: the tuned copy when it has changes."""

    __slots__ = ("changes", "results", "pool_index", "work", "verdicts")

    def __init__(self, changes: list, results: list, pool_index: int | None = None,
                 work: dict | None = None, verdicts: list | None = None) -> None:
        self.changes = changes
        self.results = results
        self.pool_index = pool_index
        self.work = work
        self.verdicts = [] if verdicts is None else verdicts


def severity_on_failure(item: TunedItem, pod, cfg) -> str:
    """ERROR or WARNING: what a verdict that the pod will not run pinned becomes.
    `krm-fn.dev/verdict: warning` on the workload or its pod template lowers it for that
    workload; else `spec.verdict.onFailure`."""
    for ann in (annotations_of(item.pick.obj), pod.annotations):
        value = ann.get(VERDICT_ANNOTATION)
        if value in ("warning", "error"):
            return WARNING if value == "warning" else ERROR
    return WARNING if cfg.verdict.onFailure == "warning" else ERROR


# Findings that stand whatever the rules' error was: what an injector, a webhook, the
# scheduler or the API server will do with the pod once the rules' error is fixed.
INDEPENDENT = ("injection", "webhook", "scheduling", "podlevel", "limitrange", "vpa",
               "resourcequota", "validation", "hpa", "podsecurity")


def _results(v, admitted, on_failure, rules_failed: bool, written=None) -> list:
    """The results of one pod's verdict: the one-line summary, then each finding (an
    ERROR finding as `on_failure()`, called only for one; DEPENDS as an info).
    `rules_failed`: the rules reported an error on this pod (it is left unchanged, so it
    will not run pinned): the kubelet's findings on the pod as the rules left it would
    mostly restate that error, so only the ERROR findings of the INDEPENDENT parts are
    given, so that one render names every fix; `written`: the verdict on the pod as the
    input writes it, which the summary line then describes (`v` is the tuned pod's)."""
    ref, path = admitted.ref, admitted.path
    shown = v.findings if not rules_failed else [
        f for f in v.findings if f.severity == ERROR and f.rule in INDEPENDENT]
    severity = {DEPENDS: INFO}
    if not rules_failed and any(f.severity == ERROR for f in shown):
        severity[ERROR] = on_failure()
    summary = judging.line(written or v, rules_failed, severity.get(ERROR, ERROR))
    out = [Result(f"verdict: {summary}", INFO, ref, path, tags=VERDICT_TAGS)]
    for f in shown:
        if f.severity == ERROR and ERROR not in severity:
            severity[ERROR] = on_failure()
        sev = severity.get(f.severity, f.severity)
        out.append(Result(f.message, sev, ref, f.path or path,
                          tags=VERDICT_TAGS + (("part", f.rule),)))
    return out


def judge(item: TunedItem, run) -> Outcome:
    """The verdict on one tuned item (`run`: the pipeline's load.Run): each tuned pod
    placed in a node pool judged on one node of it, then the item's outcome."""
    pick = item.pick
    verdicts = []
    # an item with YAML aliases is left unchanged when krm-fn would change it (_outcome),
    # and so is one with an error of its own or of any of its pod specs: none of its pods
    # will run as tuned, so each is judged as written
    unchanged = (bool(item.changes) and pick.index in run.aliased) or \
        _has_error(item.object_findings) or _has_error(item.findings)
    if pick.pool is not None:
        node = run.nodes[pick.pool_index]
        for tp in item.pods:
            if tp.pod is None:
                continue
            admitted, v, meta = _judge_pod(tp.pod, tp, item, node, run)
            judged, written = admitted, None
            if unchanged and item.changes:      # the pod the cluster gets is the input's
                judged, written, _ = _judge_pod(as_written(item, tp, run), tp, item, node,
                                                run)
            verdicts.append((judged, written or v))
            tp.verdict = _results(v, admitted, lambda tp=tp: severity_on_failure(
                item, tp.pod, run.cfg), unchanged, written)
            unseen = injectors.unseen_namespace(meta, run.ictx, run.flat)
            if unseen:
                tp.verdict.append(Result(unseen, INFO, admitted.ref, admitted.path,
                                         tags=VERDICT_TAGS + (("part", "injection"),)))
            tp.verdict += [Result(m, WARNING, admitted.ref, admitted.path,
                                  tags=VERDICT_TAGS + (("part", "injection"),))
                           for m in injectors.pod_security(meta, admitted.injections)]
    outcome = _outcome(item, run)
    if item.changes and not outcome.changes and not unchanged and verdicts:
        # the verdict's own errors leave the item as written: its lines describe that pod
        verdicts = _as_written_lines(item, run)
        outcome = _outcome(item, run)
    outcome.verdicts = verdicts
    return outcome


def _as_written_lines(item: TunedItem, run) -> list:
    """Each judged pod of `item`, which the verdict's errors leave unchanged, judged again
    as the input writes it: its summary line (the first of `tp.verdict`) replaced by that
    pod's; returns (AdmittedPod, PodVerdict) of each, as `judge` keeps them."""
    node = run.nodes[item.pick.pool_index]
    out = []
    for tp in item.pods:
        if tp.pod is None:
            continue
        admitted, v, _ = _judge_pod(as_written(item, tp, run), tp, item, node, run)
        first = tp.verdict[0]
        tp.verdict[0] = first._replace(message=f"verdict: {judging.line(v, True)}")
        out.append((admitted, v))
    return out


def _judge_pod(pod, tp, item: TunedItem, node, run) -> tuple:
    """(AdmittedPod, PodVerdict, injector meta) of the PodView `pod` (the tuned pod spec of
    `tp`, or the same spec as written) on `node`, the model of its pool."""
    pick = item.pick
    namespace = pick.ref.namespace or ""
    admitted = build.admitted_pod(pod, tp.pinned, run.injections(pod), pick.ref.namespace,
                                  runtime_classes=run.ictx.runtime_classes,
                                  priority_classes=run.ictx.priority_classes,
                                  limit_ranges=run.ictx.limit_ranges_for(namespace))
    quotas = run.ictx.quotas_for(namespace)
    meta = injectors.meta_of(pod, ctx=run.ictx)
    v = judging.judge(admitted, node, run.features_for(pod), pod.spec,
                      run.ictx.limit_ranges_for(namespace),
                      _vpas_of(run, pick.ref, pick.obj, admitted.path), quotas,
                      _replicas(pick.obj, admitted.path) if quotas else 1, _unmodelled(meta),
                      hpas=_hpas_of(run, pick.ref, admitted.path),
                      security=_pod_security(meta, pod, node, admitted.path,
                                             pick.ref.namespace))
    return admitted, v, meta


def _unmodelled(meta) -> tuple:
    """admission.unmodelled.fired(meta): the injecting webhooks krm-fn does not model that
    fire for the pod; () without importing that table when the pod and its Namespace carry
    no annotation or label (no trigger can hold)."""
    if not (meta.annotations or meta.labels or meta.ns_labels or meta.ns_annotations):
        return ()
    from krm_fn.admission import unmodelled
    return unmodelled.fired(meta)


def _pod_security(meta, pod, node, path: str, namespace: str | None) -> tuple:
    """admission.podsecurity.findings for the tuned pod `pod` (a PodView: its template
    annotations and spec) in its Namespace of the input at the pool's release; () without
    importing the checks when that Namespace carries no Pod Security label, and for pod
    specs that are not the whole pod (_whole_pod)."""
    labels = meta.ns_labels
    if not labels or not any(str(k).startswith("pod-security.kubernetes.io/") for k in labels):
        return ()
    spec = _whole_pod(pod)
    if spec is None:
        return ()
    from krm_fn.admission import podsecurity
    return tuple(podsecurity.findings(namespace or "default", labels, meta.annotations, spec,
                                      node.version[1], path))


def _whole_pod(pod) -> dict | None:
    """The pod spec of PodView `pod` as the pod will have it, for Pod Security: its
    containers under the names the platform gives them (Knative's user-container); None
    where a controller merges the spec over a template krm-fn does not judge
    (COARSER: LLMInferenceService and Seldon templates, ServingRuntimes, KServe workers and
    framework/`model` predictors, whose container the ServingRuntime's completes)."""
    at = pod.at
    if not at.needs_containers and not (
            pod.ref.kind == "InferenceService" and at.spec[-1] != "workerSpec"
            and not any(pod.spec.get(k) is not None for k in at.container_keys)):
        return None
    lists: dict = {"containers": [], "initContainers": []}
    for c in pod.containers:
        key = c.path[len(at.spec)]
        if key in lists:
            lists[key].append(c.data if c.data.get("name") == c.name
                              else {**c.data, "name": c.name})
    return {**pod.spec, **{k: v for k, v in lists.items() if v or k in pod.spec}}


def _vpas_of(run, ref, obj=None, path: str = "") -> list:
    """The VerticalPodAutoscalers of the input that target workload `ref`, or for an
    InferenceService `obj` the Deployment KServe makes for its pod spec at `path`
    (vpa.kserve_deployments) (admission/vpa.py, imported only when the input holds one)."""
    if not run.ictx.vpas:
        return []
    from krm_fn.admission import vpa
    ns = ref.namespace or ""
    made = (vpa.kserve_deployments(obj, path)
            if ref.kind == "InferenceService" and isinstance(obj, dict) else ())
    return [x for x in run.ictx.vpas
            if vpa.targets(x, ref.kind, ref.name, ns)
            or any(vpa.targets(x, "Deployment", n, ns) for n in made)]


def _hpas_of(run, ref, path: str) -> list:
    """The HorizontalPodAutoscalers of the input that scale workload `ref`, for its pod
    template at `path` when that is the one its replicas count (`spec.template.spec`, as
    resourcequota.replicas); admission/hpa.py is imported only when the input holds one."""
    if not run.ictx.hpas or path != "spec.template.spec":
        return []
    from krm_fn.admission import hpa
    return [x for x in run.ictx.hpas
            if hpa.targets(x, ref.kind, ref.name, ref.namespace or "")]


def _replicas(obj: dict, path: str) -> int:
    """admission.resourcequota.replicas (what a ResourceQuota counts; imported only when
    the pod's namespace has one)."""
    from krm_fn.admission import resourcequota
    return resourcequota.replicas(obj, path)


def _pod_findings(item: TunedItem) -> list:
    """The item's pod spec findings with each pod's verdict after its own, then the
    workload-level ones."""
    out, start = [], 0
    for tp in item.pods:
        out += item.findings[start:tp.end]
        out += tp.verdict
        start = tp.end
    return out + item.findings[start:] + item.tail


def _outcome(item: TunedItem, run) -> Outcome:
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
    blocked = _has_error(findings)      # the object's own error: its pod specs stay too
    if pick.kind_known:
        if pick.pool_findings:
            findings += pick.pool_findings
        else:
            more = _pod_findings(item)
            if _has_error(more):
                more.append(Result(LEFT_UNCHANGED, ERROR, pick.ref))
            elif not blocked:
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
    if _has_error(findings):
        # the item is left unchanged: drop the changes not made, whatever their severity
        # (a warning such as "OMP_NUM_THREADS 16 -> 2" would claim a value not written),
        # and the infos that describe them (the verdict's stay: they say what the pod is
        # as written, or would be as tuned when the verdict itself failed it), before
        # changes.results raises some infos to warnings
        findings = [f for f in findings if f.severity == ERROR or (
            f.__class__ is not changes_mod.Change and (f.severity != INFO or
                                                       f.tags[:1] == VERDICT_TAGS))]
    if changes and pick.ref.kind in _FIXED_KINDS:
        fixed = updates.note(pick.ref, changes)
        if fixed is not None:
            findings.append(Result(fixed, INFO, pick.ref, tags=VERDICT_TAGS + (
                ("part", "update"),)))
    results = changes_mod.results(findings, pick.file)
    changes = [c if c.index == pick.index else _indexed(c, pick.index) for c in changes]
    return Outcome(changes, results, pool_index, work if changes else None)


def _indexed(change, index: int):
    return change._replace(index=index)


def _has_error(findings: list) -> bool:
    for f in findings:          # a loop: any() over a generator costs a resume per item
        if f.severity == ERROR:
            return True
    return False


class Placement:
    """The workloads placed in one node pool: `count`, their pods' verdicts `judged`
    ((admission.model.AdmittedPod, PodVerdict) each) and, once `summarize` ran, the pool's
    fit `summary` Result."""

    __slots__ = ("count", "judged", "summary")

    def __init__(self, count: int = 0, judged: list | None = None,
                 summary: Result | None = None) -> None:
        self.count = count
        self.judged = [] if judged is None else judged
        self.summary = summary


def place(placement: dict, outcome: Outcome) -> None:
    """Count `outcome`'s workload in its pool's Placement in `placement` ({pool index:
    Placement}) when it is placed."""
    if outcome.pool_index is not None:
        p = placement.setdefault(outcome.pool_index, Placement())
        p.count += 1
        p.judged.extend(outcome.verdicts)


def summarize(placement: dict, run) -> None:
    """Each placed pool's fit summary (admission/capacity.py), on the function config."""
    for i, p in placement.items():
        text = judging.pool_summary(run.nodes[i], p.judged)
        for name, why in run.unsure_daemons[i] if i < len(run.unsure_daemons) else ():
            text += (f"; DaemonSet {name} may run on its nodes too ({'; '.join(why)}), and "
                     f"its pods are not counted")
        p.summary = Result(text, INFO, run.fc_ref)
