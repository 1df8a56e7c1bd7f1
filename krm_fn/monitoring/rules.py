"""The PromQL and the objects of `spec.output.monitoring` (pure).

Pods: the record `krm_fn:workload_pod:info` (labels `namespace`, `pod`, `workload`) lists
the pods of each workload, found by owner through kube-state-metrics (targets.OWNER_CHAIN);
every other expression keeps only the series of those pods (`and on (namespace, pod)`).

Jitter signals (krm_fn.monitoring.data: vLLM's inter-token latency and time to first
token, TGI's time per output token), per pod, labels `workload` and `engine`:

| record | what |
|---|---|
| `krm_fn:inference_<signal>_seconds:mean` | `rate(_sum) / rate(_count)`: exact |
| `krm_fn:inference_<signal>_seconds:stddev` | from the buckets, every observation at its bucket's midpoint (the `+Inf` bucket at the last finite bound) |
| `krm_fn:inference_<signal>_seconds:bucket_halfwidth` | sqrt(sum_i p_i (w_i / 2)^2) over the share p_i of observations in bucket i of width w_i; 10^9 times the share above the last finite bound is added |
| `krm_fn:inference_<signal>:cv` | stddev / mean |
| `krm_fn:inference_<signal>:cv_error_bound` | bucket_halfwidth / mean |
| `krm_fn:inference_<signal>:cv_resolved` | the CV, only where its error bound is at most 0.05 |

The bound holds for any latencies, whatever their distribution: with X an observation and
M its bucket's midpoint, |X - M| <= w/2, so the midpoint stddev is within sqrt(E[(X -
M)^2]) <= bucket_halfwidth of the true stddev (Minkowski), and the mean is exact. Each
layout of a signal (an engine release's metric and buckets) has its own records, guarded
so that they apply only to a pod whose series have exactly that layout's `le` values: a
pod of a release with other buckets records nothing rather than a wrong value.

Alerts: `KrmFnLatencyCVHigh` (per signal: the CV above the threshold by more than its
error bound, so certainly above it, for the `for` window), `KrmFnLatencyCVUnresolved`
(severity info: the estimated CV is above the threshold but within its error bound of it:
the buckets cannot tell; `krm-fn probe` measures it),
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

With `histograms: native` (a Prometheus 3 that converts the classic histograms,
`convert_classic_histograms_to_nhcb`), the mean and stddev come from histogram_avg and
histogram_stddev of each metric of the layouts, once per metric (labelled `layout` with the
metric's name: layouts that share a metric differ only in their buckets, which a native
histogram carries itself); no error bound is recorded (PromQL cannot
read a native histogram's bucket widths), so there is no `cv_resolved` and the CV alert
compares the CV itself with the threshold.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal

from krm_fn.monitoring.targets import OWNER_CHAIN

POD_INFO = "krm_fn:workload_pod:info"
BY = "namespace, pod"
RESOLVED = 0.05            # the CV error bound up to which a CV is recorded as resolved
OVER = Decimal(10) ** 9    # weight of the share of observations above the last bound
PSI_GATE = "KubeletPSI"
THROTTLED_RATIO = 0.01     # share of CFS periods throttled
CPU_PRESSURE = 0.05        # share of time some task of the container waited for a CPU
IO_PRESSURE = 0.10         # share of time some task waited for I/O


def record(signal: str, what: str) -> str:
    """The record name of `what` (mean, stddev, bucket_halfwidth: seconds; cv,
    cv_error_bound, cv_resolved: ratios) of the jitter signal `signal`."""
    if what in ("mean", "stddev", "bucket_halfwidth"):
        return f"krm_fn:inference_{signal}_seconds:{what}"
    return f"krm_fn:inference_{signal}:{what}"


def le_regex(bound: float) -> str:
    """A regex (for a PromQL raw string) matching the `le` label of upper bound `bound` as
    the engine writes it and as Prometheus 3 normalises it: `1.0` and `1` for whole numbers,
    the shortest round-trip decimal otherwise."""
    if float(bound).is_integer():
        return f"{int(bound)}([.]0)?"
    return literal(repr(float(bound)))


def literal(text: str) -> str:
    """`text` as a regex matching it alone: `.` and `+` (in Kubernetes names and decimals)
    in brackets, every other character but letters, digits, `-` and `_` escaped with a
    backslash (re.escape; only a name the API server would refuse has one). Embed it with
    `_q`, which doubles the backslashes as PromQL strings need."""
    return "".join(c if c.isalnum() or c in "-_" else f"[{c}]" if c in ".+" else re.escape(c)
                   for c in text)


def selector(namespace: str, extra: str = "") -> str:
    """`{namespace="NS",EXTRA}` ("" for an unknown namespace and no extra); the namespace
    quoted as a PromQL string (quotes and backslashes escaped)."""
    parts = [f"namespace={_q(namespace)}"] if namespace else []
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def own(t) -> str:
    """`and on (namespace, pod) krm_fn:workload_pod:info{...}`: keeps the series of the
    pods of target `t`."""
    return f"and on ({BY}) {POD_INFO}{selector(t.namespace, f'workload={_q(workload(t))}')}"


def workload(t) -> str:
    """The `workload` label of target `t`'s series: its name for a Deployment,
    `<Kind>/<name>` for another kind (a StatefulSet may share a Deployment's name)."""
    return t.name if t.kind == "Deployment" else f"{t.kind}/{t.name}"


def _q(text: str) -> str:
    return json.dumps(str(text))


def pods_of(t) -> str:
    """The PromQL of `krm_fn:workload_pod:info` for target `t`: 1 per pod it owns."""
    ns = t.namespace
    if t.kind == "Pod":
        return f"max by ({BY}) (kube_pod_info{selector(ns, f'pod={_q(t.name)}')})"
    if t.kind not in OWNER_CHAIN:
        prefix = f"pod=~{_q(literal(t.name) + '-.+')}"
        return f"max by ({BY}) (kube_pod_info{selector(ns, prefix)})"
    chain = OWNER_CHAIN[t.kind]
    if chain is None:
        owner = f"owner_kind={_q(t.kind)},owner_name={_q(t.name)}"
        return f"max by ({BY}) (kube_pod_owner{selector(ns, owner)})"
    kind, series, label = chain
    owners = selector(ns, f"owner_kind={_q(t.kind)},owner_name={_q(t.name)}")
    return (f"max by ({BY}) (kube_pod_owner{selector(ns, f'owner_kind={_q(kind)}')} "
            f"* on (namespace, owner_name) group_left () max by (namespace, owner_name) "
            f'(label_replace({series}{owners}, "owner_name", "$1", "{label}", "(.+)")))')


def midpoints(buckets: tuple) -> list:
    """Midpoints of the buckets (0, b0], (b0, b1], ..., and the last finite bound for +Inf,
    as exact decimals (Decimal of each bound's shortest repr)."""
    b = [Decimal(repr(float(x))) for x in buckets]
    mids = [b[0] / 2] + [(lo + hi) / 2 for lo, hi in zip(b, b[1:])]
    return mids + [b[-1]]


def _halves(buckets: tuple) -> list:
    """(w_i / 2)^2 of each finite bucket (0, b0], (b0, b1], ..., as exact decimals."""
    b = [Decimal(repr(float(x))) for x in buckets]
    return [((hi - lo) / 2) ** 2 for lo, hi in zip([Decimal(0)] + b, b)]


def _weighted(metric: str, t, window: str, les: list, weights: list) -> str:
    """sum_i weights_i * (C_i - C_(i-1)) over the cumulative bucket rates C_i of the `le`
    regexes `les`, written as sum_i C_i (weights_i - weights_(i+1)) + C_n weights_n; the
    weights are exact decimals, so the expression carries no rounding of its own."""
    terms = []
    for i, w in enumerate(weights):
        d = w - (weights[i + 1] if i + 1 < len(weights) else 0)
        if d == 0:
            continue
        sel = selector(t.namespace, f'le=~"{les[i]}"')
        terms.append(f"{_decimal(d)} * sum by ({BY}) (rate({metric}_bucket{sel}"
                     f"[{window}]) {own(t)})")
    return " + ".join(terms) if terms else "0"


def _decimal(d: Decimal) -> str:
    """`d` in plain notation without trailing zeros (PromQL reads it exactly as written)."""
    return format(d.normalize(), "f")


def _guard(layout, t) -> str:
    """`and on (namespace, pod) (...)`: the pods whose `<metric>_bucket` series have
    exactly the layout's `le` values (and none of the metrics that replace it)."""
    m, n = layout.metric, len(layout.buckets) + 1
    every = "|".join([le_regex(b) for b in layout.buckets] + ["[+]Inf"])
    inside = selector(t.namespace, f'le=~"{every}"')
    outside = selector(t.namespace, f'le!~"{every}"')
    out = (f"and on ({BY}) (count by ({BY}) (count by ({BY}, le) ({m}_bucket{inside} "
           f"{own(t)})) == {n} unless on ({BY}) ({m}_bucket{outside} {own(t)})")
    for newer in layout.unless:
        out += f" unless on ({BY}) ({newer}_count{selector(t.namespace)} {own(t)})"
    return out + ")"


def layout_expressions(layout, t, window: str, native: bool) -> dict:
    """{"mean": PromQL, "stddev": PromQL, "bucket_halfwidth": PromQL (classic only)} of
    one layout (data.Layout) of target `t`, each kept to the pods with that layout."""
    m, sel = layout.metric, selector(t.namespace)
    if native:
        agg = f"sum by ({BY}) (rate({m}{sel}[{window}]) {own(t)})"
        return {"mean": f"histogram_avg({agg})", "stddev": f"histogram_stddev({agg})"}
    count = f"sum by ({BY}) (rate({m}_count{sel}[{window}]) {own(t)})"
    guard = _guard(layout, t)
    mean = f"(sum by ({BY}) (rate({m}_sum{sel}[{window}]) {own(t)}) / {count}) {guard}"
    les = [le_regex(b) for b in layout.buckets] + ["[+]Inf"]
    mids = midpoints(tuple(layout.buckets))
    first = _weighted(m, t, window, les, mids)
    second = _weighted(m, t, window, les, [x * x for x in mids])
    stddev = f"sqrt(clamp_min(({second}) / {count} - (({first}) / {count}) ^ 2, 0)) {guard}"
    finite = _weighted(m, t, window, les[:-1], _halves(tuple(layout.buckets)))
    last = selector(t.namespace, f'le=~"{les[-2]}"')
    top = selector(t.namespace, 'le=~"[+]Inf"')
    over = (f"(sum by ({BY}) (rate({m}_bucket{top}[{window}]) {own(t)}) - sum by ({BY}) "
            f"(rate({m}_bucket{last}[{window}]) {own(t)}))")
    half = f"(sqrt(({finite}) / {count}) + {_decimal(OVER)} * {over} / {count}) {guard}"
    return {"mean": mean, "stddev": stddev, "bucket_halfwidth": half}


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


def _alert(name: str, expr: str, for_: str, summary: str, description: str,
           severity: str = "warning", **labels) -> dict:
    return {"alert": name, "expr": expr, "for": for_,
            "labels": {"severity": severity, **labels},
            "annotations": {"summary": summary, "description": description}}


def recording_rules(t, mon) -> list:
    """The recording rules of target `t` (krm_fn.monitoring.targets.Target): its pods, and
    per jitter signal of its engine the records of each layout and the CV, its error bound
    and the resolved CV (classic histograms)."""
    out = [{"record": POD_INFO, "expr": pods_of(t), "labels": {"workload": workload(t)}}]
    if t.metrics is None:
        return out
    native = mon.histograms == "native"
    labels = {"workload": workload(t), "engine": t.metrics.engine}
    mine = selector(t.namespace, f"workload={_q(workload(t))}")
    for sig in t.metrics.signals:
        # native: the expressions read the metric alone, so layouts sharing a metric would
        # record the same series twice, each labelled with a release the pod may not run
        layouts = sig.layouts if not native else list(
            {lay.metric: lay for lay in reversed(sig.layouts)}.values())[::-1]
        for layout in layouts:
            exprs = layout_expressions(layout, t, mon.rateWindow, native)
            name = layout.metric if native else layout_name(layout)
            out += [{"record": record(sig.name, what), "expr": expr,
                     "labels": {**labels, "layout": name}}
                    for what, expr in exprs.items()]
        cv = f"{record(sig.name, 'stddev')}{mine} / {record(sig.name, 'mean')}{mine}"
        out.append({"record": record(sig.name, "cv"), "expr": cv, "labels": dict(labels)})
        if native:
            continue
        bound = (f"{record(sig.name, 'bucket_halfwidth')}{mine} / "
                 f"{record(sig.name, 'mean')}{mine}")
        out.append({"record": record(sig.name, "cv_error_bound"), "expr": bound,
                    "labels": dict(labels)})
        out.append({"record": record(sig.name, "cv_resolved"),
                    "expr": f"{record(sig.name, 'cv')}{mine} unless "
                            f"{record(sig.name, 'cv_error_bound')}{mine} > {RESOLVED:g}",
                    "labels": dict(labels)})
    return out


def layout_name(layout) -> str:
    """The `layout` label of a layout's records: `<metric> <releases>`."""
    return f"{layout.metric} {layout.releases}"


def _cv_alerts(t, mon, where: str) -> list:
    """KrmFnLatencyCVHigh and KrmFnLatencyCVUnresolved per jitter signal of `t`."""
    threshold = mon.cvThresholdPercent / 100
    mine = selector(t.namespace, f"workload={_q(workload(t))}")
    out = []
    for sig in t.metrics.signals if t.metrics is not None else ():
        cv, bound = f"{record(sig.name, 'cv')}{mine}", f"{record(sig.name, 'cv_error_bound')}{mine}"
        metrics = " or ".join(dict.fromkeys(lay.metric for lay in sig.layouts))
        high = (f"{cv} > {threshold:g}" if mon.histograms == "native"
                else f"{cv} > {bound} + {threshold:g}")
        out.append(_alert(
            "KrmFnLatencyCVHigh", high, mon.alertFor,
            f"{where}: {sig.title} CV above {threshold:g}",
            f"Pod {{{{ $labels.pod }}}}: the coefficient of variation (stddev/mean) of the "
            f"{sig.title} ({metrics}) is {{{{ $value | printf \"%.2f\" }}}} over "
            f"{mon.rateWindow}, above {threshold:g}"
            f"{'' if mon.histograms == 'native' else ' beyond the error of its buckets'}. Check "
            f"thread affinity and NUMA placement: krm-fn verify in the pod, krm-fn verify "
            f"--node on its node.", signal=sig.name))
        if mon.histograms == "native":
            continue
        out.append(_alert(
            "KrmFnLatencyCVUnresolved", f"{cv} > {threshold:g} unless {high}", mon.alertFor,
            f"{where}: {sig.title} CV may be above {threshold:g}",
            f"Pod {{{{ $labels.pod }}}}: the {sig.title} buckets put its coefficient of "
            f"variation at {{{{ $value | printf \"%.2f\" }}}}, but they are too wide to "
            f"tell whether it is above {threshold:g} (krm_fn:inference_{sig.name}:"
            f"cv_error_bound): measure it with krm-fn probe.", severity="info",
            signal=sig.name))
    return out


def alerts(t, mon, version: tuple, gates: dict) -> list:
    """The alerts of target `t` on Kubernetes `version` (major, minor) with the pool's
    kubelet `gates` (featureGates of the plan)."""
    where = f"{t.kind} {t.namespace + '/' if t.namespace else ''}{t.name}"
    out = _cv_alerts(t, mon, where)
    qos = selector(t.namespace, 'qos_class!="Guaranteed"')
    out.append(_alert(
        "KrmFnPinnedPodNotGuaranteed",
        f"max by ({BY}, qos_class) (kube_pod_status_qos_class{qos} {own(t)}) == 1",
        "5m", f"{where}: a pinned pod is not Guaranteed",
        "Pod {{ $labels.pod }} has QoS class {{ $labels.qos_class }}: the static CPU "
        "Manager gives exclusive CPUs only to Guaranteed pods "
        "(https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/). "
        "Something added at admission (a sidecar, a LimitRange) changed its resources."))
    containers = "|".join(literal(c) for c in sorted(t.containers))
    csel = selector(t.namespace, f"container=~{_q(containers)}")
    by = f"{BY}, container"
    if _quota_on(version, gates):
        out.append(_alert(
            "KrmFnPinnedContainerThrottled",
            f"sum by ({by}) (rate(container_cpu_cfs_throttled_periods_total{csel}"
            f"[{mon.rateWindow}]) {own(t)}) / sum by ({by}) (rate("
            f"container_cpu_cfs_periods_total{csel}[{mon.rateWindow}]) {own(t)}) > "
            f"{THROTTLED_RATIO:g}", "10m",
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
                f"sum by ({by}) (rate({metric}{csel}[{mon.rateWindow}]) {own(t)}) > "
                f"{limit:g}", "10m",
                f"{where}: {res} pressure in a pinned container",
                f"Container {{{{ $labels.container }}}} of pod {{{{ $labels.pod }}}} waited on "
                f"{res} {{{{ $value | humanizePercentage }}}} of the time (PSI, KEP-4205): "
                f"{why}."))
    return out


def name_of(t, distinct: bool = False) -> str:
    """metadata.name of the PrometheusRule: `krm-fn-jitter-<name>` for a Deployment,
    `krm-fn-jitter-<kind>-<name>` for another kind. A name longer than 253 characters, or
    with `distinct` (the name is another target's already: Deployment `statefulset-llm`
    and StatefulSet `llm`), ends in `-` and 10 hex digits of the SHA-256 of the kind and the
    name, the rest cut to fit and never ending in `-` or `.` (a DNS subdomain)."""
    kind = "" if t.kind == "Deployment" else f"{t.kind.lower()}-"
    full = f"krm-fn-jitter-{kind}{t.name}"
    if len(full) <= 253 and not distinct:
        return full
    import hashlib
    digest = hashlib.sha256(f"{t.kind}/{t.name}".encode()).hexdigest()[:10]
    return full[:253 - 11].rstrip("-.") + "-" + digest


def prometheus_rule(t, mon, version: tuple, gates: dict, labels: dict,
                    annotations: dict, name: str | None = None) -> dict:
    """The monitoring.coreos.com/v1 PrometheusRule of target `t` (in its namespace), named
    `name` (default name_of(t))."""
    name = name or name_of(t)
    groups = []
    rec = recording_rules(t, mon)
    if rec:
        groups.append({"name": f"{name}.records", "rules": rec})
    groups.append({"name": f"{name}.alerts", "rules": alerts(t, mon, version, gates)})
    md: dict = {"name": name}
    if t.namespace:
        md["namespace"] = t.namespace
    md["labels"] = {**{str(k): str(v) for k, v in mon.labels.items()}, **labels}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": md, "spec": {"groups": groups}}


def dashboard(targets: list, namespace: str, labels: dict) -> dict:
    """A Grafana dashboard ConfigMap (label grafana_dashboard: "1", the Grafana sidecar's
    default, https://github.com/grafana/helm-charts/tree/main/charts/grafana) plotting,
    per jitter signal of the targets' engines, the recorded mean, CV and CV error bound."""
    signals: dict = {}
    for t in targets:
        for sig in t.metrics.signals if t.metrics is not None else ():
            signals.setdefault(sig.name, (sig, []))[1].append(workload(t))
    panels = []
    for row, (sig, names) in enumerate(signals.values()):
        wl = "|".join(literal(n) for n in dict.fromkeys(names))
        for col, (title, what) in enumerate(((f"{sig.title} mean (s)", "mean"),
                                             (f"{sig.title} CV", "cv"),
                                             (f"{sig.title} CV error bound",
                                              "cv_error_bound"))):
            panels.append({"id": len(panels) + 1, "type": "timeseries", "title": title,
                           "gridPos": {"h": 8, "w": 8, "x": 8 * col, "y": 8 * row},
                           "targets": [{"expr": f"{record(sig.name, what)}{{workload=~{_q(wl)}}}",
                                        "legendFormat": "{{workload}} {{pod}}"}]})
    doc = {"title": "krm-fn jitter", "uid": "krm-fn-jitter", "schemaVersion": 39,
           "panels": panels, "time": {"from": "now-6h", "to": "now"}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "krm-fn-jitter-dashboard", "namespace": namespace,
                         "labels": {"grafana_dashboard": "1", **labels}},
            "data": {"krm-fn-jitter.json": json.dumps(doc, indent=2, sort_keys=True) + "\n"}}
