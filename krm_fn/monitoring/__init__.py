"""`spec.output.monitoring`: per selected workload, a `monitoring.coreos.com/v1`
PrometheusRule with its pods by owner, recording rules for the mean, CV and CV error bound
of the jitter signals its serving engine exposes (inter-token latency, time to first
token), alerts when a CV is certainly (or possibly) above the threshold, and pinning-health
alerts (QoS not Guaranteed, CFS throttling, CPU and I/O pressure); optionally a Grafana
dashboard ConfigMap. Imported only when `spec.output.monitoring.enabled` is true.

- `data`: the engines' jitter histograms per release (metric, bucket bounds, source).
- `targets`: which tuned workloads get rules, and how their pods are found (pure).
- `rules`: the PromQL and the PrometheusRule / dashboard objects (pure).
"""
