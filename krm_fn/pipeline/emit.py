"""Step 4 of the pipeline, emit: per node pool that received a workload (or asks to be
emitted without one, `spec.nodePools[].emit: always`), its results, the fit
summary, and the objects of each output format (node/formats), checked against the input:
an emitted object never overwrites an item krm-fn did not generate, and one it generated on
an earlier run (kpt feeds the output back in) is rewritten to the plan in place.
"""
from __future__ import annotations

from krm_fn.node.formats import MANAGED_BY_LABEL, POOL_LABEL, RenderContext, render_with_results
from krm_fn.node.formats._common import PATH_ANNOTATION, cluster_gates, pool_labels
from krm_fn.pipeline.load import flat_paths
from krm_fn.pipeline.select import annotations_of, ref_of
from krm_fn.results import ERROR, INFO, WARNING, Result

# Annotations the orchestrators own; ignored when comparing an emitted object with the copy
# of it that kpt feeds back in on the next render.
_ORCHESTRATOR_PREFIXES = ("config.kubernetes.io/path", "config.kubernetes.io/index",
                          "internal.config.kubernetes.io/", "config.k8s.io/id",
                          "kustomize.config.k8s.io/")


def always_emitted(cfg, placement: dict) -> list[int]:
    """Indices of the node pools with `emit: always` (spec.nodePools[].emit) that no
    workload was placed on (`placement`: {pool index: verdict.Placement}): they are
    emitted all the same, a node-only render."""
    return [i for i, pool in enumerate(cfg.nodePools)
            if pool.emit == "always" and i not in placement]


def emit(items: list, run, placement: dict, out) -> dict:
    """For each pool index of `placement` ({pool index: verdict.Placement}), in order:
    append the plan's results and the pool's fit summary to `out.results`, (config pool,
    NodePlan, [(AdmittedPod, PodVerdict)], workloads placed) to `out.pools`, and each format's objects
    to `out.emitted` (or `out.replace`, with results); `run`: the pipeline's load.Run.
    Returns the index of the input items by name it placed them by (_by_name), for
    emit_monitoring."""
    cfg = run.cfg
    ctx = RenderContext(cfg.output.namespace, run.set_path, baseline=cfg.output.baseline,
                        version=cfg.kubernetesVersion, cluster_gates=cluster_gates(items))
    by_name = _by_name(items)
    emitted_by: dict = {}        # emitted object key -> (pool name, format)
    if (cfg.output.verifyJob or cfg.output.nodeAuditJob or cfg.output.nodeAuditDaemonSet) \
            and placement:
        out.results.extend(_default_image_warning(run))
    for pool_index in sorted(placement):
        pool, plan = cfg.nodePools[pool_index], run.plans[pool_index]
        placed = placement[pool_index]
        out.results.extend(run.plan_results[pool_index])
        out.results.append(placed.summary)
        out.pools.append((pool, plan, placed.judged, placed.count))
        extra = (["verify-job"] if cfg.output.verifyJob else []) + (
            ["node-audit-job"] if cfg.output.nodeAuditJob else []) + (
            ["node-audit-daemonset"] if cfg.output.nodeAuditDaemonSet else [])
        for fmt in list(cfg.output.formats) + extra:
            objs = _render(fmt, plan, ctx, run, pool_index, out)
            for obj in objs:
                if _collides(obj, pool.name, fmt, emitted_by, out):
                    continue
                _place(obj, items, by_name, run, pool.name, fmt, placed.count, out)
    return by_name


def _by_name(items: list) -> dict:
    """Existing items by (apiVersion, kind, name) -> [(namespace, index)]; a namespace
    matches as kustomize and the API server see it: "" is "default", and a cluster-scoped
    object has none."""
    by_name: dict = {}
    for i, o in enumerate(items):
        if isinstance(o, dict):
            ro = ref_of(o)
            by_name.setdefault((ro.api_version, ro.kind, ro.name), []).append((ro.namespace, i))
    return by_name


def emit_monitoring(items: list, run, targets: list, out, by_name: dict) -> None:
    """spec.output.monitoring: one PrometheusRule per target (krm_fn.monitoring.targets),
    in the workload's namespace, and the Grafana dashboard ConfigMap when asked; placed
    like every emitted object (an input item of the same name that krm-fn did not
    generate is an error and left alone); `by_name`: the index of the input items that
    `emit` returned (read only: placing an object does not add it)."""
    from krm_fn.monitoring import rules
    cfg, mon = run.cfg, run.cfg.output.monitoring
    emitted_by: dict = {}
    for t in targets:
        pool, plan = cfg.nodePools[t.pool_index], run.plans[t.pool_index]
        gates = plan.kubelet.get("featureGates") or {}
        where = f"{t.namespace}-" if t.namespace else ""
        for distinct in (False, True):  # another target's name (kind prefix against name)
            name = rules.name_of(t, distinct)
            ann = ({PATH_ANNOTATION: f"monitoring/{where}{name}.yaml"} if run.set_path
                   else {})
            obj = rules.prometheus_rule(t, mon, cfg.kubernetesVersion, gates,
                                        pool_labels(pool.name), ann, name)
            if _key(obj) not in emitted_by:
                break
        if not _collides(obj, pool.name, "monitoring", emitted_by, out):
            _place(obj, items, by_name, run, pool.name, "monitoring", 1, out)
    if mon.grafanaDashboard and any(t.metrics is not None for t in targets):
        pool = cfg.nodePools[targets[0].pool_index]
        obj = rules.dashboard(targets, cfg.output.namespace,
                              pool_labels(pool.name))
        if run.set_path:
            obj["metadata"]["annotations"] = {PATH_ANNOTATION: "monitoring/dashboard.yaml"}
        _place(obj, items, by_name, run, pool.name, "monitoring", len(targets), out)


def emit_admission_policy(items: list, run, guarded: list, out, by_name: dict) -> None:
    """spec.output.admissionPolicy: the ValidatingAdmissionPolicy and its binding
    (krm_fn.guard.policy) for the pod templates labelled in the tune step
    (krm_fn.guard.targets) of the placed items `guarded` ([(TunedItem, pool index)]);
    placed like every emitted object, under the first node pool's label (the objects
    serve the whole render). No labelled pod template: nothing is emitted, an info says
    so."""
    from krm_fn.guard import policy, targets
    cfg, conf = run.cfg, run.cfg.output.admissionPolicy
    found = [t for item, i in guarded
             for t in targets.of_item(item, run.pool_info(i), cfg, run.nodes[i])]
    where = "spec.output.admissionPolicy"
    if not found:
        out.results.append(Result(f"{where}: no tuned pod template has a container pinned "
                                  f"to whole CPUs to check; no admission policy emitted",
                                  INFO, run.fc_ref))
        return
    pool = str(cfg.nodePools[0].name)
    labels = pool_labels(pool)
    stem = policy.file_stem(conf.name)

    def ann(kind: str) -> dict:     # kpt: the file of the emitted object in the package
        return ({PATH_ANNOTATION: f"admission-policy/{stem}-{kind}.yaml"}
                if run.set_path else {})
    vap = policy.policy(conf.name, found, labels, ann("policy"))
    long = policy.too_long(vap)
    if long:
        out.results.append(Result(
            f"{where}: the admission policy's {', '.join(long)} would be longer than the "
            f"{policy.MAX_EXPRESSION} characters the API server's CEL parser takes "
            f"({len(found)} pod templates); split the workloads over renders that each "
            f"enable it under their own {where}.name, or opt some out with "
            f"{targets.OPT_OUT}: skip; no admission policy emitted", ERROR, run.fc_ref, where))
        return
    for obj in (vap, policy.binding(conf.name, conf, labels, ann("binding"))):
        _place(obj, items, by_name, run, pool, "admission-policy", len(found), out)


def _default_image_warning(run) -> list:
    """[the warning] when the verify or node-audit Job runs the default
    `spec.output.verifyImage`, an image not published to any registry yet (its pod would fail with ErrImagePull:
    https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff), else []."""
    from krm_fn import config
    from krm_fn.config.spec import DEFAULT_VERIFY_IMAGE
    if run.cfg.output.verifyImage != DEFAULT_VERIFY_IMAGE:
        return []
    which = "verifyJob" if run.cfg.output.verifyJob else \
        "nodeAuditJob" if run.cfg.output.nodeAuditJob else "nodeAuditDaemonSet"
    job, image = (config.flat_path(p) if run.flat else p
                  for p in (f"spec.output.{which}", "spec.output.verifyImage"))
    return [Result(f"{job} is on with the default {image} {DEFAULT_VERIFY_IMAGE}, which is "
                   f"not published to a registry yet: its pod would fail to "
                   f"pull it (ErrImagePull, https://kubernetes.io/docs/concepts/containers/"
                   f"images/#imagepullbackoff); build the image from krm-fn's Dockerfile, "
                   f"push it to a registry your nodes pull from and set {image} to it",
                   WARNING, run.fc_ref, image)]


def _taints(run, pool_index: int) -> tuple:
    """The taints of pool `pool_index`'s nodes as the verdict models them (NodeModel)."""
    nodes = getattr(run, "nodes", None) or []
    return tuple(nodes[pool_index].taints) if pool_index < len(nodes) else ()


def _render(fmt: str, plan, ctx: RenderContext, run, pool_index: int, out) -> list:
    """The objects of output format `fmt` for one plan; its results go to `out.results`."""
    cfg = run.cfg
    if fmt == "verify-job":     # spec.output.verifyJob: krm_fn/node/verify_job.py
        from krm_fn.node import verify_job
        return [verify_job.render(plan, ctx, cfg.output.verifyImage, cfg.kubernetesVersion,
                                  cfg.workloads.threads.env, _taints(run, pool_index))]
    if fmt in ("node-audit-job", "node-audit-daemonset"):   # spec.output.nodeAudit*
        from krm_fn.node import verify_job
        out.results.extend(verify_job.namespace_refusal(
            run.namespaces.get(str(ctx.namespace)), fmt, run.fc_ref))
        taints = _taints(run, pool_index)
        if fmt == "node-audit-job":
            return [verify_job.render_node_audit(plan, ctx, cfg.output.verifyImage, taints)]
        return [verify_job.render_node_audit_daemonset(plan, ctx, cfg.output.verifyImage,
                                                       taints)]
    pool_ctx = ctx._replace(pool=cfg.nodePools[pool_index])
    objs, fmt_results = render_with_results(fmt, plan, pool_ctx, run.fc_ref, pool_index)
    out.results.extend(flat_paths(fmt_results) if run.flat else fmt_results)
    return objs


def _key(obj: dict) -> tuple:
    """(apiVersion, kind, namespace, name) of an emitted object, what _collides compares."""
    r = ref_of(obj)
    return r.api_version, r.kind, r.namespace, r.name


def _collides(obj: dict, pool: str, fmt: str, emitted_by: dict, out) -> bool:
    """True (with an error result) when another pool's output already has `obj`'s name."""
    r, key = ref_of(obj), _key(obj)
    if key in emitted_by:
        other_pool, other_fmt = emitted_by[key]
        out.results.append(Result(
            f"node pool {pool!r}: the {fmt} output has the same name as the {other_fmt} "
            f"output of node pool {other_pool!r}; one would overwrite the other: rename a "
            f"pool", ERROR, r))
        return True
    emitted_by[key] = (pool, fmt)
    return False


def _place(obj: dict, items: list, by_name: dict, run, pool: str, fmt: str, placed: int,
           out) -> None:
    """Emit `obj`, or rewrite the input item of the same name when krm-fn generated it on
    an earlier run, or refuse (error) when that item is not krm-fn's."""
    r = ref_of(obj)
    ns = r.namespace                # "" for a cluster-scoped object
    fc = run.fc_ref
    fc_key = (fc.api_version, fc.kind, fc.name) if fc is not None else None
    existing = next((i for item_ns, i in by_name.get((r.api_version, r.kind, r.name), [])
                     if not ns or (item_ns or "default") == ns), None)
    if existing is None:
        out.emitted.append(obj)
        out.results.append(Result(f"node pool {pool!r}: emitted {fmt} ({placed} workload(s) "
                                  f"placed)", INFO, r))
    elif not _generated(items[existing], pool) or fc_key == (r.api_version, r.kind, r.name):
        # never overwrite an object krm-fn did not generate (data loss)
        why = ("it is the function config itself" if fc_key == (r.api_version, r.kind, r.name)
               else f"it was not generated by krm-fn (it lacks the labels "
                    f"{MANAGED_BY_LABEL}: krm-fn and {POOL_LABEL}: {pool})")
        out.results.append(Result(
            f"node pool {pool!r}: the {fmt} output is this object's name, but {why}: it is "
            f"left unchanged and the {fmt} output is not emitted; rename the item, or change "
            f"spec.output.namespace or the pool name", ERROR, r))
    else:
        out.regenerated.add(existing)
        new, changed = _replacement(items[existing], obj)
        if new is not None:
            out.replace[existing] = new
            out.changes.pop(existing, None)
            if out.tuned is not None:
                out.tuned.pop(existing, None)
            for field_path in changed:
                out.results.append(Result(
                    f"node pool {pool!r}: {fmt} {field_path} rewritten to the plan (the "
                    f"object is generated by krm-fn: change the function config instead)",
                    WARNING, r, field_path))


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
    import copy
    want = _plainify(_strip_orchestrator(new))
    have = _strip_orchestrator(old)
    if have == want:
        return None, []
    obj = copy.deepcopy(new)
    keep = {k: v for k, v in annotations_of(old).items() if k.startswith(_ORCHESTRATOR_PREFIXES)}
    if keep:
        md = obj.setdefault("metadata", {})
        md["annotations"] = {**(md.get("annotations") or {}), **keep}
    changed = []
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
    """A copy of `obj` without the orchestrator annotations (_ORCHESTRATOR_PREFIXES)."""
    import copy
    obj = copy.deepcopy(obj)
    ann = annotations_of(obj)
    for k in list(ann):
        if k.startswith(_ORCHESTRATOR_PREFIXES):
            del ann[k]
    if isinstance(obj.get("metadata"), dict) and "annotations" in obj["metadata"] and not ann:
        del obj["metadata"]["annotations"]
    return obj


def stale_plans(items: list, run, placement: dict, out) -> None:
    """spec.output.stalePlans: a result (error or warning) for each input item krm-fn
    generated on an earlier render (both labels, `_generated`) that this render did not
    emit again (`out.regenerated`): its node pool is no longer in spec.nodePools, or the
    pool was emitted this time without that object (a format, Job or rule it no longer
    has). Items of a pool in the config that received no workload this time are left
    alone: that render may simply not include its workloads."""
    cfg = run.cfg
    names = {str(p.name) for p in cfg.nodePools}
    emitted = {str(cfg.nodePools[i].name) for i in placement}
    severity = ERROR if cfg.output.stalePlans == "error" else WARNING
    where = "spec.output.stalePlans"
    for i, obj in enumerate(items):
        if i in out.regenerated or not isinstance(obj, dict):
            continue
        md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        lab = md.get("labels") if isinstance(md.get("labels"), dict) else {}
        pool = lab.get(POOL_LABEL)
        if lab.get(MANAGED_BY_LABEL) != "krm-fn" or not isinstance(pool, str):
            continue
        if pool not in names:
            why = (f"node pool {pool!r} is no longer in spec.nodePools (renamed or removed), "
                   f"so its kubelet configuration would stay applied to nodes no pool "
                   f"describes")
        elif pool in emitted:
            why = (f"node pool {pool!r} no longer has this output (spec.output.formats, "
                   f"namespace, verifyJob, nodeAuditJob, nodeAuditDaemonSet, monitoring or "
                   f"admissionPolicy changed)")
        else:
            continue
        fix = ("delete it from the input (kpt: its file)" if severity == ERROR else
               "it is kept; delete it from the input (kpt: its file)")
        out.results.append(Result(
            f"stale node plan: krm-fn emitted this object on an earlier render, but {why}; "
            f"{fix}" + (f", or set {where}: warning to keep it" if severity == ERROR else ""),
            severity, ref_of(obj)))
