"""Before the pipeline's steps: the function config and the node plans.

The config is loaded strictly (krm_fn/config.py); each node pool's plan (node/plan.py) is
built first, since a pool whose kubelet config would not start is a config error, and
nothing is changed on a config error.
"""
from __future__ import annotations

from krm_fn import config as config_mod
from krm_fn import objects, rules, workloads
from krm_fn.admission import cpumanager, injectors, podscope, serving_mode
from krm_fn.admission.qos import gate
from krm_fn.admission.build import daemon_pods, node_model
from krm_fn.node import plan as plan_mod
from krm_fn.pod import Edits
from krm_fn.pipeline.tune import copy_item
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.pipeline.select import ref_of, tuned_predicate, untuned_because


class Run:
    """What every step of one transform reads. `cfg`: the loaded config; `fc_ref`: the
    function config's Ref (None without one); `flat`: the config is a flat ConfigMap (result
    paths are rewritten to its keys); `plans[i]`/`plan_results[i]`: node pool i's NodePlan
    and its results; `extra`: the workload kinds the config adds; `octx`: the whole-object
    checks' context; `cluster`: the KServe cluster objects fixed in this render;
    `defaults_note`: the warning when no function config was given; `aliased`: indices of
    items that use YAML aliases; `set_path`: emitted objects get a kpt path annotation;
    `origin`: origin[i] = (input index, path prefix) of item i when the input held a
    `kind: List` (pipeline/lists.py), else None; `outer`: the input's items before their
    Lists were read as objects (the Lists themselves), None without a List;
    `nodes[i]`: one node of pool i as the verdict models it (admission.model.NodeModel);
    `ictx`: what the admission-time injectors read from the input (Namespaces, cluster
    ConfigMaps and custom resources; admission.injectors.InjectionContext), and
    `namespaces` its Namespace objects by name; `knative_features`: Knative's feature
    flags read from the input (admission.knative.features), read when the first Knative
    pod asks (features_for; None until then: a render without Knative pods does not
    import the webhook's tables)."""

    __slots__ = ("cfg", "fc_ref", "flat", "plans", "plan_results", "extra", "octx", "cluster",
                 "defaults_note", "aliased", "set_path", "retyped", "origin", "outer", "nodes",
                 "ictx", "namespaces", "knative_features", "pools", "unsure_daemons")

    def __init__(self, cfg: object, fc_ref: Ref | None, flat: bool, plans: list,
                 plan_results: list, extra: dict, octx: objects.ObjectContext,
                 cluster: frozenset, defaults_note: Result | None,
                 aliased: frozenset | set = frozenset(), set_path: bool = False,
                 retyped: object = None, origin: list | None = None,
                 nodes: list | None = None, ictx: object = None,
                 namespaces: dict | None = None, knative_features: dict | None = None,
                 pools: list | None = None) -> None:
        self.cfg = cfg
        self.fc_ref = fc_ref
        self.flat = flat
        self.plans = plans
        self.plan_results = plan_results
        self.extra = extra
        self.octx = octx
        self.cluster = cluster
        self.defaults_note = defaults_note
        self.aliased = aliased
        self.set_path = set_path
        self.retyped = retyped      # resourcelist.retyped(doc), or None
        self.origin = origin        # pipeline/lists.py: where each item is inside a List
        self.outer = None           # the input items holding them (Lists), with origin
        self.nodes = [] if nodes is None else nodes
        self.ictx = ictx
        self.namespaces = {} if namespaces is None else namespaces
        self.knative_features = knative_features
        self.pools = [] if pools is None else pools    # pool_info(i) of each node pool
        # per pool: (name, reasons) of the DaemonSets that may run on its nodes or not
        self.unsure_daemons: list = []

    def injections(self, pod) -> tuple:
        """The admission.model.Injections that fire for `pod` (a tuned PodView)."""
        return injectors.for_pod(pod, self.ictx)

    def features_for(self, pod) -> dict | None:
        """Knative's feature flags (admission.knative.Features, of the input's
        config-features or KnativeServing, else the defaults) when `pod` (a PodView)
        becomes a Knative revision's pod (admission.serving_mode.serverless), else None."""
        default = self.ictx.kserve_default_mode() if self.ictx is not None else None
        if not serving_mode.serverless(pod, default)[0]:
            return None
        if self.knative_features is None:
            from krm_fn.admission import knative
            self.knative_features = knative.features(self.octx.items)
        return self.knative_features

    def pool_info(self, pool_index: int) -> rules.PoolInfo:
        """rules.PoolInfo of node pool `pool_index` (made once per pool in `prepare` and
        shared: PoolInfo is frozen)."""
        return self.pools[pool_index]


def prepare(items: list, function_config: dict | None, results: list) -> Run | None:
    """Load `function_config` and build the node plans. On a config error or a node plan
    with errors, append the error results to `results` and return None."""
    fc_ref = ref_of(function_config) if isinstance(function_config, dict) else None
    try:
        cfg = config_mod.load(function_config)
    except config_mod.ConfigError as e:
        for err in e.errors:
            results.append(Result(f"invalid function config: {err.message}", ERROR,
                                  fc_ref, err.path or None))
        return None
    flat = config_mod.is_flat(function_config)
    unknown = unknown_kinds(cfg)
    if unknown:
        results.extend(Result(f"invalid function config: {message}", ERROR, fc_ref,
                              "kinds" if flat else path) for path, message in unknown)
        return None
    described: dict = {}        # pool index -> (Node name, its other allocatable)
    if not _topologies_from_objects(cfg, items, fc_ref, results, described):
        return None
    plans, plan_results = [], []
    for pool_index, pool in enumerate(cfg.nodePools):
        plan, presults = plan_mod.build(pool, cfg.kubernetesVersion, fc_ref, pool_index,
                                         cfg.output.baseline)
        plans.append(plan)
        plan_results.append(flat_paths(presults) if flat else presults)
    for i in _defaulted_selectors(function_config, flat):
        plan_results[i].append(_default_selector_note(cfg.nodePools[i], i, fc_ref, flat))
    if any(r.severity == ERROR for pr in plan_results for r in pr):
        for pr in plan_results:
            results.extend(pr)
        results.append(Result("nothing changed because of the function config errors "
                              "above", ERROR, fc_ref))
        return None
    tuned = tuned_predicate(cfg)
    is_tuned = [tuned(o) for o in items]     # once per item: prepare asks three times
    cluster = frozenset(objects.cluster_tag(o) for o, t in zip(items, is_tuned)
                        if t and objects.cluster_tag(o) is not None)
    run = Run(cfg, fc_ref, flat, plans, plan_results, config_mod.extra_registry(cfg),
              None, cluster, _defaults_note(cfg) if function_config is None else None)
    run.nodes = [node_model(plan, pool, cfg.kubernetesVersion, _from_node(pool, items))
                 for plan, pool in zip(plans, cfg.nodePools)]
    for i, (name, alloc) in described.items():
        run.nodes[i] = run.nodes[i]._replace(allocatable=alloc, from_node=name)
    # DaemonSets krm-fn does not tune run as written on every node they select: they take
    # their share of each node before the fit per node is counted (the ones it tunes are
    # added as it writes them: pipeline/daemons.py)
    untuned = [o for o, t in zip(items, is_tuned) if isinstance(o, dict) and not t]
    run.unsure_daemons = [[] for _ in run.nodes]
    run.nodes = [n._replace(daemons=daemon_pods(untuned, n.labels, n.taints, unsure))
                 for n, unsure in zip(run.nodes, run.unsure_daemons)]
    run.pools = [rules.PoolInfo.from_plan(pool, plan)._replace(
        pins_pod_level=podscope.pins_pod_level(node),
        skips_pod_level=cpumanager.skips_pod_level_resources(node),
        pod_level_gate=gate(node, "PodLevelResources"))
        for pool, plan, node in zip(cfg.nodePools, plans, run.nodes)]
    run.octx = objects.ObjectContext(cfg, run.pools, items, tuned)
    run.ictx = injectors.InjectionContext.for_config(
        _as_rendered(items, is_tuned, run.octx), cfg)._replace(
            untuned=lambda obj: untuned_because(obj, cfg.selector))
    run.namespaces = run.ictx.namespaces
    _nto_runtime_classes(run, plans)
    return run


def _nto_runtime_classes(run: Run, plans: list) -> None:
    """Add to run.ictx.runtime_classes the RuntimeClass the Node Tuning Operator creates for
    the PerformanceProfile of each pool whose `performanceProfile.runtimeClass` the
    openshift rule names in its pods (performance_profile.nto_runtime_class), unless the
    input holds one of that name: the cluster has it once the profile is applied."""
    known = dict(run.ictx.runtime_classes)
    for pool, plan in zip(run.cfg.nodePools, plans):
        conf = getattr(pool, "performanceProfile", None)
        if conf is None or not conf.runtimeClass:
            continue
        from krm_fn.node.formats import performance_profile
        rc = performance_profile.nto_runtime_class(pool, plan)
        known.setdefault(rc["metadata"]["name"], rc)
    if len(known) != len(run.ictx.runtime_classes):
        run.ictx = run.ictx._replace(runtime_classes=known)


def _from_node(pool, items: list) -> dict | None:
    """The pool's `topology.fromNode` Node (plain; checked by _topologies_from_objects
    already), or None: its taints and OS / architecture labels are the pool's
    (admission.build.node_model)."""
    if pool.topology.fromNode is None:
        return None
    from krm_fn.node import from_node
    try:
        return from_node.resolve(pool.topology.fromNode, from_node.NODE, items, "fromNode")
    except from_node.SourceError:
        return None


def known_kinds(cfg) -> set:
    """Every kind spec.selector.kinds can select: the workload registry's
    (krm_fn.workloads.KINDS), the config's extraKinds and the whole-object checks'
    (krm_fn.objects.kinds)."""
    return ({kind for _, kind in workloads.KINDS} | {k.kind for k in cfg.extraKinds}
            | objects.kinds())


def unknown_kinds(cfg) -> list:
    """(field path, message) for each spec.selector.kinds entry that no kind krm-fn tunes
    or checks is spelled as: such a selector can never match, and kustomize shows no
    warning, so it is an error, with the kinds it may have meant (kinds are case-sensitive,
    as the API server's)."""
    known = known_kinds(cfg)
    lower = {k.lower(): k for k in known}
    out = []
    for i, kind in enumerate(cfg.selector.kinds):
        if kind in known:
            continue
        import difflib          # only for a kind krm-fn does not know
        near = [lower[kind.lower()]] if kind.lower() in lower else \
            difflib.get_close_matches(kind, sorted(known), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(near)}?" if near else (
            "; add it under spec.extraKinds if it is a custom workload kind")
        out.append((f"spec.selector.kinds[{i}]",
                    f"{kind!r} is not a kind krm-fn tunes or checks, so this selector never "
                    f"matches (kinds are case-sensitive){hint}"))
    return out


def _as_rendered(items: list, is_tuned: list, octx) -> list:
    """`items` with the KServe cluster objects this render fixes (objects.cluster_tag:
    inferenceservice-config, ClusterStorageContainer) as krm-fn writes them, so that the
    verdict sizes the containers they control from what the cluster will hold.
    `is_tuned[i]`: whether krm-fn tunes items[i] (select.tuned_predicate)."""
    out = list(items)
    for i, obj in enumerate(items):
        if not (isinstance(obj, dict) and is_tuned[i] and objects.cluster_tag(obj)):
            continue
        changes, findings = objects.check(obj, ref_of(obj), octx)
        if changes and not any(getattr(f, "severity", None) == ERROR for f in findings):
            copy = copy_item(obj)
            edits = Edits(copy)
            for c in changes:
                edits.set(c.path, c.new)
            out[i] = copy
    return out


def _topologies_from_objects(cfg, items: list, fc_ref, results: list,
                             described: dict) -> bool:
    """Fill each pool topology that names a Node or NodeResourceTopology
    (krm_fn.node.from_node) and check it again; an info per pool says what was read and
    assumed; `described[pool index]` gets (the Node's name, its status.allocatable other
    than cpu, memory, pods and huge pages: from_node.allocatable) of each pool with a
    `fromNode`. False (with error results) when one cannot be used."""
    pools = [(i, p) for i, p in enumerate(cfg.nodePools)
             if p.topology.fromNode is not None or p.topology.fromNodeResourceTopology is not None]
    if not pools:
        return True
    from krm_fn.node import from_node
    ok = True
    for i, pool in pools:
        path = f"spec.nodePools[{i}].topology"
        try:
            notes = from_node.fill(pool.topology, items, path)
            node_alloc = from_node.allocatable(pool.topology, items, path)
            if node_alloc is not None:
                described[i] = node_alloc
            pool.topology.check(path)
            pool.topology.check_memory(path)
        except from_node.SourceError as e:
            results.append(Result(f"invalid function config: {e.message}", ERROR, fc_ref,
                                  e.path))
            ok = False
            continue
        except config_mod.ConfigError as e:
            results.extend(Result(f"invalid function config: {err.message}", ERROR, fc_ref,
                                  err.path or None) for err in e.errors)
            ok = False
            continue
        results.extend(Result(f"node pool {pool.name!r}: topology: {note}", INFO, fc_ref, path)
                       for note in notes)
        unlabelled = from_node.missing_labels(pool.topology, items, pool.nodeSelector, path)
        if unlabelled:
            results.append(Result(f"node pool {pool.name!r}: {unlabelled}", WARNING, fc_ref,
                                  f"{path}.fromNode"))
    return ok


def flat_paths(results: list) -> list:
    """`results` with field paths rewritten to the flat ConfigMap's keys
    (config.flat_path)."""
    return [r._replace(path=config_mod.flat_path(r.path)) if r.path else r
            for r in results]


def _defaulted_selectors(function_config, flat: bool) -> list[int]:
    """Indices of the node pools whose `nodeSelector` the function config does not set (so
    the default applies); [] without a function config (the defaults warning says it)."""
    if not isinstance(function_config, dict):
        return []
    if flat:
        data = function_config.get("data")
        try:
            spec = config_mod.spec_from_flat(data if isinstance(data, dict) else {}, "data")
        except config_mod.ConfigError:
            return []
    else:
        spec = function_config.get("spec")
    pools = spec.get("nodePools") if isinstance(spec, dict) else None
    if not isinstance(pools, list):
        return [0]
    return [i for i, p in enumerate(pools) if isinstance(p, dict) and "nodeSelector" not in p]


def _default_selector_note(pool, index: int, fc_ref, flat: bool) -> Result:
    """The warning that node pool `pool` (at `index`) places its workloads with the default
    nodeSelector, a label no node carries unless someone put it there; `flat`: the config
    is a flat ConfigMap (the field is named by its key)."""
    sel = ", ".join(f"{k}={v}" for k, v in pool.nodeSelector.items())
    path = f"spec.nodePools[{index}].nodeSelector"
    path = config_mod.flat_path(path) if flat else path
    return Result(
        f"node pool {pool.name!r}: {path} is not set, so the default {sel} is added to "
        f"every workload placed in this pool; their pods stay Pending unless the nodes "
        f"carry that label (kubectl label node NODE {sel}): set {path} to the labels of "
        f"the nodes that get this kubelet config "
        f"(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/"
        f"#nodeselector)", WARNING, fc_ref, path)


def _defaults_note(cfg) -> Result:
    """The warning that no function config was given and what the defaults are."""
    pool0, t = cfg.nodePools[0], cfg.nodePools[0].topology
    sel = ", ".join(f"{k}={v}" for k, v in pool0.nodeSelector.items())
    return Result(
        f"no function config: defaults used (node pool {pool0.name!r} with nodeSelector "
        f"{sel}, {t.sockets} sockets x {t.coresPerSocket} cores x {t.threadsPerCore} "
        f"threads, kubernetesVersion {cfg.kubernetesVersion[0]}.{cfg.kubernetesVersion[1]}"
        f"); give a config that describes your nodes (`krm-fn explain`, README "
        f"Configuration)", WARNING)


def requested_mode(function_config, mode: str | None) -> str | None:
    """`mode` (the command line's), else `spec.mode` / flat `data.mode` as written in the
    function config, read without validating the rest of it."""
    if mode:
        return mode
    if not isinstance(function_config, dict):
        return None
    holder = function_config.get("data" if config_mod.is_flat(function_config) else "spec")
    return holder.get("mode") if isinstance(holder, dict) else None
