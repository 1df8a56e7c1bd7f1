"""Which tuned workloads get monitoring rules (pure): every workload with a pinned
container, with the latency histogram of the first engine recognised in a pinned container
that has one (krm_fn.monitoring.data), else none (pinning-health alerts only).

Pods are matched by namespace and the name prefix `<workload>-` (Deployments, StatefulSets,
Jobs and KServe predictors name their pods that way), the label set Prometheus' Kubernetes
service discovery gives a scraped pod (`namespace`, `pod`, `container`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from krm_fn.monitoring.data import BY_ENGINE, HISTOGRAMS


@dataclass(frozen=True)
class Target:
    """`kind`, `name`, `namespace` ("" unknown) of the workload; `pod_regex` its pods;
    `containers` the pinned container names; `histogram` (data.Histogram or None);
    `pool_index` its node pool."""

    kind: str
    name: str
    namespace: str
    pod_regex: str
    containers: tuple
    histogram: object
    pool_index: int


def _histogram_of(c):
    from krm_fn.rules import engines
    from krm_fn.rules.cmdline import text, tokens
    for e in engines.detect(c):
        if e.name in BY_ENGINE:
            return BY_ENGINE[e.name]
    image = str(c.data.get("image") or "")[:512].lower()
    line = text(tokens(c))
    for h in HISTOGRAMS:
        if any(re.search(p, image) for p in h.images) or any(re.search(p, line)
                                                             for p in h.commands):
            return h
    return None


def of_item(item, pool_index) -> Target | None:
    """The Target of one tuned item (krm_fn.pipeline.tune.TunedItem) placed in pool
    `pool_index`, or None when it has no pinned container (or is not placed)."""
    ref = item.pick.ref
    if ref is None or pool_index is None:
        return None
    names, hist = [], None
    for tp in item.pods:
        if tp.pod is None:
            continue
        for c in tp.pod.containers:
            if c.name in tp.pinned:
                names.append(str(c.name))
                hist = hist or _histogram_of(c)
    if not names:
        return None
    from krm_fn.monitoring.rules import literal
    return Target(ref.kind, ref.name, ref.namespace or "", f"{literal(ref.name)}-.+",
                  tuple(dict.fromkeys(names)), hist, pool_index)
