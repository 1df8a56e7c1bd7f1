"""Which tuned workloads get monitoring rules (pure): every workload with a pinned
container, with the jitter signals (krm_fn.monitoring.data) of the first engine
recognised in a pinned container that has them, else none (pinning-health alerts only).

A workload's pods are found by owner, as kube-state-metrics reports it
(https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/workload/pod-metrics.md
`kube_pod_owner`; `kube_replicaset_owner`, `kube_job_owner`), not by a name prefix that
would also take the pods of `llm-canary` for `llm`: OWNER_CHAIN says, per kind, through
which owner a pod belongs to the workload. Kinds without an entry (custom resources whose
controllers name their pods, such as KServe's predictors) fall back to the name prefix
`<workload>-`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from krm_fn.monitoring.data import BY_ENGINE, ENGINES

# kind: (the kind that owns the pod, the kube-state-metrics series giving that owner's
# owner and its owned-object label) or None when the workload owns its pods directly.
# A bare Pod is itself.
OWNER_CHAIN = {
    "Deployment": ("ReplicaSet", "kube_replicaset_owner", "replicaset"),
    "Rollout": ("ReplicaSet", "kube_replicaset_owner", "replicaset"),     # Argo Rollouts
    "CronJob": ("Job", "kube_job_owner", "job_name"),
    "StatefulSet": None, "DaemonSet": None, "ReplicaSet": None, "Job": None,
    "ReplicationController": None,
}


@dataclass(frozen=True)
class Target:
    """`kind`, `name`, `namespace` ("" unknown) of the workload; `containers` the pinned
    container names; `metrics` (data.EngineMetrics or None); `pool_index` its node
    pool."""

    kind: str
    name: str
    namespace: str
    containers: tuple
    metrics: object
    pool_index: int


def _metrics_of(c):
    """The EngineMetrics of the engine container `c` (a ContainerView) runs, or None: an
    engine of the registry recognised in it (engines.detect), else one of data.ENGINES whose
    image regex matches its image or whose command Pattern matches a word in program
    position of its command line (engines/programs.py: `pgrep -f text-generation-launcher`
    runs no TGI)."""
    from krm_fn.rules import engines
    from krm_fn.rules.cmdline import text, tokens
    from krm_fn.rules.engines import programs
    for e in engines.detect(c):
        if e.name in BY_ENGINE:
            return BY_ENGINE[e.name]
    image = str(c.data.get("image") or "")[:512].lower()
    toks = tokens(c)
    line, spans = text(toks), programs.spans(toks)
    for m in ENGINES:
        if any(re.search(p, image) for p in m.images) or any(p.search(line, spans)
                                                             for p in m.commands):
            return m
    return None


def of_item(item, pool_index) -> Target | None:
    """The Target of one tuned item (krm_fn.pipeline.tune.TunedItem) placed in pool
    `pool_index`, or None when it has no pinned container (or is not placed)."""
    ref = item.pick.ref
    if ref is None or pool_index is None:
        return None
    names, found = [], None
    for tp in item.pods:
        if tp.pod is None:
            continue
        for c in tp.pod.containers:
            if c.name in tp.pinned:
                names.append(str(c.name))
                found = found or _metrics_of(c)
    if not names:
        return None
    return Target(ref.kind, ref.name, ref.namespace or "", tuple(dict.fromkeys(names)),
                  found, pool_index)
