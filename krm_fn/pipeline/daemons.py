"""Every DaemonSet's share of each node: the tune and verdict steps when the input holds a
DaemonSet that krm-fn tunes.

A DaemonSet runs one pod on every node it selects, so its pod takes capacity on every node
of its pool before the other workloads' replicas (capacity.Packer places `node.daemons`
first, through the resource managers: a daemon pod's exclusive CPUs are taken on every
node). The DaemonSets krm-fn does not tune count as written (pipeline/load.py,
admission/build.daemon_pods); the ones it tunes count as krm-fn writes them, which is known
only after their own verdict. So when the input holds one, every picked item is tuned
first, then:

1. each tuned DaemonSet is judged on its pool's node with the other tuned DaemonSets' pods
   as tuned (admission/build.admitted_pod, with the containers injected at admission) and
   without its own (its verdict does not count itself twice);
2. the nodes get each tuned DaemonSet's pods as written: as tuned when the item keeps its
   changes (the AdmittedPods of its verdict), else as the input writes it (daemon_pods:
   its containers as written, no injection modelled), on every node whose labels its
   nodeSelector and required node affinity select (admission/scheduling.evaluate);
3. every other item is judged on those nodes, and the pool summaries read them.

Coarser on purpose: two tuned DaemonSets judge each other as tuned, also when one of them
ends up left unchanged (step 1 runs before any outcome is known).
"""
from __future__ import annotations

from krm_fn.admission import build, scheduling
from krm_fn.admission.model import AdmittedPod, NodeModel
from krm_fn.pipeline import tune, verdict


def is_daemonset(obj) -> bool:
    """An apps/v1 DaemonSet (the kind build.daemon_pods counts)."""
    return (isinstance(obj, dict) and obj.get("kind") == "DaemonSet"
            and str(obj.get("apiVersion") or "").startswith("apps/"))


def runs_on(pod: AdmittedPod, node: NodeModel) -> bool:
    """Whether `pod`'s nodeSelector and required node affinity select `node`'s labels."""
    return scheduling.evaluate(pod.node_selector, pod.affinity, node.labels)[0] is True


def with_daemons(node: NodeModel, pods: list) -> NodeModel:
    """`node` with the `pods` (AdmittedPods of tuned DaemonSets) that run on it
    (runs_on) placed after its own daemons; `node` itself when none does."""
    extra = tuple(p for p in pods if runs_on(p, node))
    return node._replace(daemons=node.daemons + extra) if extra else node


def without(node: NodeModel, pod: AdmittedPod) -> NodeModel:
    """`node` without the daemon pod `pod` (the very object): where a DaemonSet's own
    replicas per node are counted."""
    if not any(d is pod for d in node.daemons):
        return node
    return node._replace(daemons=tuple(d for d in node.daemons if d is not pod))


def _as_tuned(item, run) -> list:
    """The AdmittedPods of a tuned item's pod specs as the rules left them, with the
    containers injected at admission (as verdict.judge builds them)."""
    out = []
    for tp in item.pods:
        if tp.pod is not None:
            ns = item.pick.ref.namespace
            out.append(build.admitted_pod(tp.pod, tp.pinned, run.injections(tp.pod), ns,
                                          runtime_classes=run.ictx.runtime_classes,
                                          priority_classes=run.ictx.priority_classes,
                                          limit_ranges=run.ictx.limit_ranges_for(ns)))
    return out


def judge(picks, run) -> list:
    """[(Picked, TunedItem or None, verdict.Outcome or None)] of every pick in `picks`, in
    order, judged as the module docstring says; `run.nodes` ends with every DaemonSet's
    pods (load.Run)."""
    entries = [(pick, tune.tune(pick, run) if pick.tune else None) for pick in picks]
    base = list(run.nodes)
    tuned = {k: _as_tuned(item, run) for k, (pick, item) in enumerate(entries)
             if item is not None and pick.pool is not None and is_daemonset(pick.obj)}
    outcomes = {}
    for k in tuned:
        others = [p for j, pods in tuned.items() if j != k for p in pods]
        run.nodes = [with_daemons(n, others) for n in base]
        outcomes[k] = verdict.judge(entries[k][1], run)
    final, written = [], []
    for k, outcome in outcomes.items():
        if outcome.pool_index is not None:
            final += [a for a, _ in outcome.verdicts]
        else:
            written.append(entries[k][0].obj)
    run.nodes = [with_daemons(n._replace(
        daemons=n.daemons + build.daemon_pods(written, n.labels)) if written else n, final)
        for n in base]
    return [(pick, item, None if item is None else
             outcomes[k] if k in outcomes else verdict.judge(item, run))
            for k, (pick, item) in enumerate(entries)]
