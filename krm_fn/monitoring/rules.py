"""The PromQL and the objects of `spec.output.monitoring` (pure).

Recording rules, per workload (labels `workload`, `engine` on every recorded series; one
series per pod):

| record | classic buckets | native histograms |
|---|---|---|
| `krm_fn:inference_request_latency_seconds:mean` | `rate(_sum) / rate(_count)` (exact) | `histogram_avg` |
| `krm_fn:inference_request_latency_seconds:stddev` | estimated from the buckets (below) | `histogram_stddev` |
| `krm_fn:inference_request_latency:cv` | stddev / mean | stddev / mean |

The classic estimate puts every observation of a bucket at the bucket's midpoint (the
`+Inf` bucket at the last finite bound): with C_i the cumulative rate of bucket i and m_i its midpoint,
E[X^2] = sum_i C_i (m_i^2 - m_(i+1)^2) + C_n m_n^2 and E[X] likewise, a sum of
per-`le` series with constant weights, so the bucket boundaries of the engine version
(krm_fn.monitoring.data) are part of the expression. Error: observations spread evenly
inside a bucket of width w make the variance low by w^2/12 in that bucket's share
(Sheppard's correction); observations piled at one edge make it off by up to (w/2)^2;
requests above the last finite bound are counted at that bound. So the estimate resolves a
CV only when the latencies span several buckets (docs/jitter.md has the numbers).

Alerts: `KrmFnLatencyCVHigh` (CV above the threshold for the `for` window),
`KrmFnPinnedPodNotGuaranteed` (kube-state-metrics `kube_pod_status_qos_class`),
`KrmFnPinnedContainerThrottled` (cAdvisor `container_cpu_cfs_throttled_periods_total`; only
where the kubelet still applies a CFS quota to exclusive CPUs: with the
DisableCPUQuotaWithExclusiveCPUs gate off, kubernetes/kubernetes#127525),
`KrmFnPinnedContainerCPUPressure` / `KrmFnPinnedContainerIOPressure` (cAdvisor
`container_pressure_*`, KEP-4205: where the KubeletPSI gate is on, by default in every
supported version;
https://kubernetes.io/docs/reference/instrumentation/understand-psi-metrics/). Gate
defaults come from the generated Kubernetes data (krm_fn.node.fields), the pool's
featureGates override them.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal

RECORD_MEAN = "krm_fn:inference_request_latency_seconds:mean"
RECORD_STDDEV = "krm_fn:inference_request_latency_seconds:stddev"
RECORD_CV = "krm_fn:inference_request_latency:cv"
BY = "namespace, pod"
PSI_GATE = "KubeletPSI"
THROTTLED_RATIO = 0.01     # share of CFS periods throttled
CPU_PRESSURE = 0.05        # share of time some task of the container waited for a CPU
IO_PRESSURE = 0.10         # share of time some task waited for I/O


def le_regex(bound: float) -> str:
    """A regex (for a PromQL raw string) matching the `le` label of upper bound `bound` as
    the engine writes it and as Prometheus 3 normalises it: `1.0` and `1` for whole numbers,
    the shortest round-trip decimal otherwise."""
    if float(bound).is_integer():
        return f"{int(bound)}([.]0)?"
    return literal(repr(float(bound)))


def literal(text: str) -> str:
    """`text` (a Kubernetes name or a decimal: letters, digits, `-`, `.`, `+`) as a regex
    without backslashes ('.' and '+' in brackets), so it reads the same in every PromQL
    string form."""
    return re.sub(r"([.+])", r"[\1]", text)


def selector(namespace: str, pod_regex: str, extra: str = "") -> str:
    """`{namespace="NS",pod=~"RE"}` (no namespace matcher when `namespace` is "")."""
    parts = [f'namespace="{namespace}"'] if namespace else []
    parts.append(f'pod=~"{pod_regex}"')
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}"


def midpoints(buckets: tuple) -> list:
    """Midpoints of the buckets (0, b0], (b0, b1], ..., and the last finite bound for +Inf,
    as exact decimals (Decimal of each bound's shortest repr)."""
    b = [Decimal(repr(float(x))) for x in buckets]
    mids = [b[0] / 2] + [(lo + hi) / 2 for lo, hi in zip(b, b[1:])]
    return mids + [b[-1]]


def _moment(metric: str, sel: str, window: str, buckets: tuple, power: int) -> str:
    """sum_i C_i (m_i^p - m_(i+1)^p) + C_n m_n^p over the cumulative bucket rates C_i: the
    sum of m^p over the observations per second, with m the bucket midpoints. The weights
    are exact decimals, so the expression carries no rounding of its own."""
    mids = midpoints(buckets)
    les = [le_regex(b) for b in buckets] + ["[+]Inf"]
    terms = []
    for i, m in enumerate(mids):
        w = m ** power - (mids[i + 1] ** power if i + 1 < len(mids) else 0)
        if w == 0:
            continue
        le = sel[:-1] + f',le=~"{les[i]}"' + "}"
        terms.append(f"{_decimal(w)} * sum by ({BY}) (rate({metric}_bucket{le}[{window}]))")
    return " + ".join(terms)


def _decimal(d: Decimal) -> str:
    """`d` in plain notation without trailing zeros (PromQL reads it exactly as written)."""
    text = format(d.normalize(), "f")
    return text


def expressions(hist, namespace: str, pod_regex: str, window: str, native: bool) -> dict:
    """{"mean": PromQL, "stddev": PromQL} for the engine histogram `hist`
    (krm_fn.monitoring.data.Histogram) over the pods `pod_regex` of `namespace`."""
    sel = selector(namespace, pod_regex)
    m = hist.metric
    if native:
        agg = f"sum by ({BY}) (rate({m}{sel}[{window}]))"
        return {"mean": f"histogram_avg({agg})", "stddev": f"histogram_stddev({agg})"}
    count = f"sum by ({BY}) (rate({m}_count{sel}[{window}]))"
    mean = f"sum by ({BY}) (rate({m}_sum{sel}[{window}])) / {count}"
    first = _moment(m, sel, window, tuple(hist.buckets), 1)
    second = _moment(m, sel, window, tuple(hist.buckets), 2)
    stddev = (f"sqrt(clamp_min(({second}) / {count} - (({first}) / {count}) ^ 2, 0))")
    return {"mean": mean, "stddev": stddev}
def _gate_on(gate: str, version: tuple, gates: dict) -> bool:
    """`gate` as the pool's featureGates set it, else its default on `version` (the
    generated Kubernetes data, krm_fn.node.fields)."""
    from krm_fn.node import fields
    value = gates.get(gate)
    return value if isinstance(value, bool) else fields.gate_on_by_default(gate, tuple(version))


def _psi_on(version: tuple, gates: dict) -> bool:
    return _gate_on(PSI_GATE, version, gates)


def _quota_on(version: tuple, gates: dict) -> bool:
    from krm_fn.node.plan import CPU_QUOTA_GATE
    return not _gate_on(CPU_QUOTA_GATE, version, gates)


def _alert(name: str, expr: str, for_: str, summary: str, description: str) -> dict:
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": "warning"},
            "annotations": {"summary": summary, "description": description}}


def recording_rules(t, mon) -> list:
    """The recording rules of target `t` (krm_fn.monitoring.targets.Target); [] when its
    engine has no latency histogram."""
    if t.histogram is None:
        return []
    exprs = expressions(t.histogram, t.namespace, t.pod_regex, mon.rateWindow,
                        mon.histograms == "native")
    labels = {"workload": t.name, "engine": t.histogram.engine}
    own = selector(t.namespace, t.pod_regex, f'workload="{t.name}"')
    return [{"record": RECORD_MEAN, "expr": exprs["mean"], "labels": dict(labels)},
            {"record": RECORD_STDDEV, "expr": exprs["stddev"], "labels": dict(labels)},
            {"record": RECORD_CV, "expr": f"{RECORD_STDDEV}{own} / {RECORD_MEAN}{own}",
             "labels": dict(labels)}]


def alerts(t, mon, version: tuple, gates: dict) -> list:
    """The alerts of target `t` on Kubernetes `version` (major, minor) with the pool's
    kubelet `gates` (featureGates of the plan)."""
    sel = selector(t.namespace, t.pod_regex)
    where = f"{t.kind} {t.namespace + '/' if t.namespace else ''}{t.name}"
    threshold = mon.cvThresholdPercent / 100
    out = []
    if t.histogram is not None:
        own = selector(t.namespace, t.pod_regex, f'workload="{t.name}"')
        out.append(_alert(
            "KrmFnLatencyCVHigh", f"{RECORD_CV}{own} > {threshold:g}", mon.alertFor,
            f"{where}: request latency CV above {threshold:g}",
            f"Pod {{{{ $labels.pod }}}}: the coefficient of variation (stddev/mean) of "
            f"{t.histogram.metric} is {{{{ $value | printf \"%.2f\" }}}} over "
            f"{mon.rateWindow}. Check thread affinity and NUMA placement: krm-fn verify in "
            f"the pod, krm-fn verify --node on its node."))
    out.append(_alert(
        "KrmFnPinnedPodNotGuaranteed",
        f'max by ({BY}, qos_class) (kube_pod_status_qos_class{sel[:-1]},qos_class!="Guaranteed"}}) == 1',
        "5m", f"{where}: a pinned pod is not Guaranteed",
        "Pod {{ $labels.pod }} has QoS class {{ $labels.qos_class }}: the static CPU "
        "Manager gives exclusive CPUs only to Guaranteed pods "
        "(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/). "
        "Something added at admission (a sidecar, a LimitRange) changed its resources."))
    containers = "|".join(literal(c) for c in sorted(t.containers))
    csel = selector(t.namespace, t.pod_regex, f'container=~"{containers}"')
    by = f"{BY}, container"
    if _quota_on(version, gates):
        out.append(_alert(
            "KrmFnPinnedContainerThrottled",
            f"sum by ({by}) (rate(container_cpu_cfs_throttled_periods_total{csel}"
            f"[{mon.rateWindow}])) / sum by ({by}) (rate(container_cpu_cfs_periods_total"
            f"{csel}[{mon.rateWindow}])) > {THROTTLED_RATIO:g}", "10m",
            f"{where}: a pinned container is CFS-throttled",
            "Container {{ $labels.container }} of pod {{ $labels.pod }} is throttled "
            "in {{ $value | humanizePercentage }} of its CFS periods: this kubelet still "
            "applies the CPU limit as a quota to exclusive CPUs (kubernetes/kubernetes#127525)."
            " Lower the engine's threads to the pinned CPUs, or turn "
            "DisableCPUQuotaWithExclusiveCPUs back on."))
    if _psi_on(version, gates):
        for res, metric, limit, why in (
                ("CPU", "container_pressure_cpu_waiting_seconds_total", CPU_PRESSURE,
                 "more runnable threads than pinned CPUs: set the engine's thread counts to "
                 "the pinned CPUs"),
                ("IO", "container_pressure_io_waiting_seconds_total", IO_PRESSURE,
                 "I/O contention (model loading, swap, logs); io.weight cannot be set from a "
                 "pod spec: see docs/jitter.md")):
            out.append(_alert(
                f"KrmFnPinnedContainer{res}Pressure",
                f"sum by ({by}) (rate({metric}{csel}[{mon.rateWindow}])) > {limit:g}", "10m",
                f"{where}: {res} pressure in a pinned container",
                f"Container {{{{ $labels.container }}}} of pod {{{{ $labels.pod }}}} waited on "
                f"{res} {{{{ $value | humanizePercentage }}}} of the time (PSI, KEP-4205): "
                f"{why}."))
    return out


def name_of(t) -> str:
    """metadata.name of the PrometheusRule: `krm-fn-jitter-<workload>`, cut to 253."""
    return f"krm-fn-jitter-{t.name}"[:253]


def prometheus_rule(t, mon, version: tuple, gates: dict, labels: dict,
                    annotations: dict) -> dict:
    """The monitoring.coreos.com/v1 PrometheusRule of target `t` (in its namespace)."""
    groups = []
    rec = recording_rules(t, mon)
    if rec:
        groups.append({"name": f"krm-fn-jitter-{t.name}.records", "rules": rec})
    groups.append({"name": f"krm-fn-jitter-{t.name}.alerts", "rules": alerts(t, mon, version,
                                                                            gates)})
    md: dict = {"name": name_of(t)}
    if t.namespace:
        md["namespace"] = t.namespace
    md["labels"] = {**{str(k): str(v) for k, v in mon.labels.items()}, **labels}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": md, "spec": {"groups": groups}}


def dashboard(targets: list, namespace: str, labels: dict) -> dict:
    """A Grafana dashboard ConfigMap (label grafana_dashboard: "1", the Grafana sidecar's
    default, https://github.com/grafana/helm-charts/tree/main/charts/grafana) plotting the
    recorded mean, stddev and CV of every target with a latency histogram."""
    panels = []
    for i, (title, record) in enumerate((("Latency mean (s)", RECORD_MEAN),
                                         ("Latency stddev (s)", RECORD_STDDEV),
                                         ("Latency CV", RECORD_CV))):
        wl = "|".join(literal(t.name) for t in targets if t.histogram is not None)
        panels.append({"id": i + 1, "type": "timeseries", "title": title,
                       "gridPos": {"h": 8, "w": 8, "x": 8 * i, "y": 0},
                       "targets": [{"expr": f'{record}{{workload=~"{wl}"}}',
                                    "legendFormat": "{{workload}} {{pod}}"}]})
    doc = {"title": "krm-fn jitter", "uid": "krm-fn-jitter", "schemaVersion": 39,
           "panels": panels, "time": {"from": "now-6h", "to": "now"}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "krm-fn-jitter-dashboard", "namespace": namespace,
                         "labels": {"grafana_dashboard": "1", **labels}},
            "data": {"krm-fn-jitter.json": json.dumps(doc, indent=2, sort_keys=True) + "\n"}}
