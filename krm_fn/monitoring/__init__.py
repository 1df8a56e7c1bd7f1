"""`spec.output.monitoring`: per selected workload whose serving engine exposes a
request-latency histogram, a `monitoring.coreos.com/v1` PrometheusRule with recording rules
for the latency mean, stddev and CV, an alert when the CV stays above the threshold, and
pinning-health alerts (QoS not Guaranteed, CFS throttling, CPU and I/O pressure); optionally
a Grafana dashboard ConfigMap. Imported only when `spec.output.monitoring.enabled` is true.

- `data`: the engines' latency histograms (metric, labels, bucket boundaries, source).
- `targets`: which tuned workloads get rules (pure, from the tune step's pod views).
- `rules`: the PromQL and the PrometheusRule / dashboard objects (pure).
"""
