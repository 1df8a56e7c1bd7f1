"""spec.output.monitoring (krm_fn/monitoring/): the emitted PrometheusRule, checked and
unit-tested with the real promtool, expressions Prometheus 2.42 cannot parse checked with
promql-parser, and an end-to-end run of a real Prometheus on 127.0.0.1 scraping a stub
exporter of vLLM's latency histogram."""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from krm_fn.monitoring import data, rules
from krm_fn.pipeline import transform

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
# Under CI=true a missing tool fails the tests instead of skipping them (.ci/run installs it)
CI = os.environ.get("CI") == "true"
needs_promtool = pytest.mark.skipif(PROMTOOL is None and not CI,
                                    reason="promtool missing (.ci/run installs Debian's "
                                           "prometheus)")
VLLM = data.BY_ENGINE["vLLM CPU"]

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "llm", "namespace": "serving"},
              "spec": {"template": {"spec": {"containers": [{
                  "name": "vllm", "image": "vllm/vllm-openai-cpu:v0.10.0",
                  "resources": {"requests": {"cpu": "8", "memory": "16Gi"},
                                "limits": {"cpu": "8", "memory": "16Gi"}}}]}}}}


# A 1.35 pool whose kubelet keeps the CFS quota on exclusive CPUs and reports no PSI (both
# gates are on by default in every supported version and can be turned off on 1.35).
QUOTA_NO_PSI = {"DisableCPUQuotaWithExclusiveCPUs": False, "KubeletPSI": False}


def config(version="1.35", gates=None, **monitoring):
    spec = {"kubernetesVersion": version,
            "output": {"monitoring": {"enabled": True, **monitoring}}}
    if gates:
        spec["nodePools"] = [{"name": "inference", "kubelet": {"extra": {
            "featureGates": gates}}}]
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "t"}, "spec": spec}


def emitted(items, cfg, kind="PrometheusRule"):
    out = transform([dict(i) for i in items], cfg)
    return [o for o in out.emitted if o["kind"] == kind]


def vllm_rule(**kw):
    [rule] = emitted([DEPLOYMENT], config(**kw))
    return rule


def names(rule):
    return [r.get("record") or r.get("alert") for g in rule["spec"]["groups"] for r in g["rules"]]


# --- what is emitted ---------------------------------------------------------------------

def test_vllm_workload_gets_records_cv_alert_and_pinning_alerts_with_the_quota_kept():
    rule = vllm_rule(gates=QUOTA_NO_PSI)
    assert rule["metadata"]["name"] == "krm-fn-jitter-llm"
    assert rule["metadata"]["namespace"] == "serving"
    assert names(rule) == [rules.RECORD_MEAN, rules.RECORD_STDDEV, rules.RECORD_CV,
                           "KrmFnLatencyCVHigh", "KrmFnPinnedPodNotGuaranteed",
                           "KrmFnPinnedContainerThrottled"]
    cv = rule["spec"]["groups"][1]["rules"][0]
    assert cv["expr"] == ('krm_fn:inference_request_latency:cv{namespace="serving",pod=~"llm-.+",'
                          'workload="llm"} > 0.2')
    assert cv["for"] == "15m"
    mean = rule["spec"]["groups"][0]["rules"][0]
    assert mean["expr"] == (
        'sum by (namespace, pod) (rate(vllm:e2e_request_latency_seconds_sum{namespace="serving",'
        'pod=~"llm-.+"}[5m])) / sum by (namespace, pod) (rate(vllm:e2e_request_latency_seconds'
        '_count{namespace="serving",pod=~"llm-.+"}[5m]))')
    assert mean["labels"] == {"workload": "llm", "engine": "vLLM CPU"}


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_psi_alerts_and_no_throttling_alert_on_every_supported_version(version):
    # KubeletPSI and DisableCPUQuotaWithExclusiveCPUs are on by default in each
    rule = vllm_rule(version=version)
    assert names(rule)[3:] == ["KrmFnLatencyCVHigh", "KrmFnPinnedPodNotGuaranteed",
                               "KrmFnPinnedContainerCPUPressure",
                               "KrmFnPinnedContainerIOPressure"]
    io = rule["spec"]["groups"][1]["rules"][-1]
    assert io["expr"] == ('sum by (namespace, pod, container) (rate(container_pressure_io_'
                          'waiting_seconds_total{namespace="serving",pod=~"llm-.+",container=~'
                          '"vllm"}[5m])) > 0.1')


def test_threshold_window_and_labels_from_the_config():
    rule = vllm_rule(cvThresholdPercent=35, alertFor="1h", rateWindow="10m",
                     labels={"release": "prometheus"})
    cv = rule["spec"]["groups"][1]["rules"][0]
    assert cv["expr"].endswith(" > 0.35") and cv["for"] == "1h"
    assert "[10m]" in rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert rule["metadata"]["labels"] == {"release": "prometheus",
                                          "app.kubernetes.io/managed-by": "krm-fn",
                                          "krm-fn.dev/node-pool": "inference"}


def test_engine_without_histogram_gets_pinning_alerts_only():
    d = json.loads(json.dumps(DEPLOYMENT))
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/model:1"
    [rule] = emitted([d], config(gates=QUOTA_NO_PSI))
    assert names(rule) == ["KrmFnPinnedPodNotGuaranteed", "KrmFnPinnedContainerThrottled"]
    assert emitted([d], config(grafanaDashboard=True), "ConfigMap") == [] or all(
        c["metadata"]["name"] != "krm-fn-jitter-dashboard"
        for c in emitted([d], config(grafanaDashboard=True), "ConfigMap"))


def test_tgi_recognised_by_image():
    d = json.loads(json.dumps(DEPLOYMENT))
    d["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "ghcr.io/huggingface/text-generation-inference:3.3.7")
    [rule] = emitted([d], config())
    assert rule["spec"]["groups"][0]["rules"][0]["labels"]["engine"] == "TGI"
    assert "tgi_request_duration_bucket" in rule["spec"]["groups"][0]["rules"][1]["expr"]


def test_off_by_default_and_dashboard_when_asked():
    cfg = config()
    cfg["spec"]["output"]["monitoring"]["enabled"] = False
    assert emitted([DEPLOYMENT], cfg) == []
    [dash] = [c for c in emitted([DEPLOYMENT], config(grafanaDashboard=True), "ConfigMap")
              if c["metadata"]["name"] == "krm-fn-jitter-dashboard"]
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    doc = json.loads(dash["data"]["krm-fn-jitter.json"])
    assert [p["targets"][0]["expr"] for p in doc["panels"]] == [
        'krm_fn:inference_request_latency_seconds:mean{workload=~"llm"}',
        'krm_fn:inference_request_latency_seconds:stddev{workload=~"llm"}',
        'krm_fn:inference_request_latency:cv{workload=~"llm"}']


def test_bad_durations_are_config_errors():
    out = transform([dict(DEPLOYMENT)], config(alertFor="1.5h"))
    assert [(r.path, r.message) for r in out.results if r.severity == "error"] == [
        ("spec.output.monitoring.alertFor", "invalid function config: must be a Prometheus "
         "duration such as 5m or 1h30m, found '1.5h'")]


def test_le_regex_matches_python_and_prometheus_3_forms():
    import re
    assert rules.le_regex(1.0) == "1([.]0)?"
    assert re.fullmatch(rules.le_regex(1.0), "1.0") and re.fullmatch(rules.le_regex(1.0), "1")
    assert rules.le_regex(0.3) == "0[.]3"
    assert data.BY_ENGINE["TGI"].buckets[0] == 0.00015000000000000001
    assert len(data.BY_ENGINE["TGI"].buckets) == 35


# --- the estimator, in Python ----------------------------------------------------------------

def estimate(buckets, counts):
    """CV the classic rules compute from per-bucket counts (`counts[i]` in bucket i, the
    last one +Inf), with the exact mean from the sum of observations at the midpoints."""
    mids = [float(m) for m in rules.midpoints(tuple(buckets))]
    n = sum(counts)
    m1 = sum(c * m for c, m in zip(counts, mids)) / n
    m2 = sum(c * m * m for c, m in zip(counts, mids)) / n
    return math.sqrt(max(m2 - m1 * m1, 0)), m1


# observations per minute placed at bucket midpoints of vLLM's buckets: the estimate is exact
AT_MIDPOINTS = {0.4: 60, 1.25: 30, 3.75: 10}


def _per_bucket(obs: dict, buckets) -> list:
    counts = [0] * (len(buckets) + 1)
    for v, c in obs.items():
        counts[next((i for i, b in enumerate(buckets) if v <= b), len(buckets))] += c
    return counts


def _true_cv(obs: dict) -> float:
    n = sum(obs.values())
    mean = sum(v * c for v, c in obs.items()) / n
    var = sum(c * (v - mean) ** 2 for v, c in obs.items()) / n
    return math.sqrt(var) / mean


def test_estimate_is_exact_at_midpoints():
    sd, mean = estimate(VLLM.buckets, _per_bucket(AT_MIDPOINTS, VLLM.buckets))
    assert sd / mean == pytest.approx(_true_cv(AT_MIDPOINTS), rel=1e-12)


# --- promtool ----------------------------------------------------------------------------------

def _series(obs: dict, buckets, labels: str, minutes: int) -> list:
    counts = _per_bucket(obs, buckets)
    out, cum = [], 0
    for i, b in enumerate(list(buckets) + ["+Inf"]):
        cum += counts[i]
        le = "+Inf" if b == "+Inf" else repr(float(b))
        out.append({"series": f'vllm:e2e_request_latency_seconds_bucket{{{labels},le="{le}"}}',
                    "values": f"0+{cum}x{minutes}"})
    total = sum(v * c for v, c in obs.items())
    out.append({"series": f"vllm:e2e_request_latency_seconds_sum{{{labels}}}",
                "values": f"0+{total!r}x{minutes}"})
    out.append({"series": f"vllm:e2e_request_latency_seconds_count{{{labels}}}",
                "values": f"0+{sum(obs.values())}x{minutes}"})
    return out


@needs_promtool
def test_promtool_check_rules(tmp_path):
    for name, gates in (("defaults", None), ("quota-no-psi", QUOTA_NO_PSI)):
        f = tmp_path / f"rules-{name}.yaml"
        f.write_text(yaml.safe_dump(vllm_rule(gates=gates)["spec"]))
        p = subprocess.run([PROMTOOL, "check", "rules", str(f)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "SUCCESS: " in p.stdout


@needs_promtool
def test_promtool_test_rules_known_cv_and_alert(tmp_path):
    rule = vllm_rule()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
    labels = 'namespace="serving",pod="llm-7d9f-abcde",model_name="m",engine="0"'
    cv = _true_cv(AT_MIDPOINTS)
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": _series(AT_MIDPOINTS, VLLM.buckets, labels, 40),
        "promql_expr_test": [{
            # the recorded CV within 1e-6 of the truth (promtool compares values exactly)
            "expr": f"abs({rules.RECORD_CV} - {cv!r}) < bool 1e-6", "eval_time": "20m",
            "exp_samples": [{"labels": '{namespace="serving",pod="llm-7d9f-abcde",'
                                       'workload="llm",engine="vLLM CPU"}',
                             "value": 1}]}],
        "alert_rule_test": [
            {"alertname": "KrmFnLatencyCVHigh", "eval_time": "10m", "exp_alerts": []},
            {"alertname": "KrmFnLatencyCVHigh", "eval_time": "25m", "exp_alerts": [{
                "exp_labels": {"severity": "warning", "namespace": "serving",
                               "pod": "llm-7d9f-abcde", "workload": "llm",
                               "engine": "vLLM CPU"},
                "exp_annotations": {
                    "summary": "Deployment serving/llm: request latency CV above 0.2",
                    "description": f"Pod llm-7d9f-abcde: the coefficient of variation "
                                   f"(stddev/mean) of vllm:e2e_request_latency_seconds is "
                                   f"{cv:.2f} over 5m. Check thread affinity and NUMA "
                                   f"placement: krm-fn verify in the pod, krm-fn verify "
                                   f"--node on its node."}}]}]}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test))
    p = subprocess.run([PROMTOOL, "test", "rules", "test.yaml"], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout


def test_native_expressions_parse_with_promql_parser():
    promql_parser = pytest.importorskip("promql_parser")
    rule = vllm_rule(histograms="native")
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert exprs[0] == ('histogram_avg(sum by (namespace, pod) (rate(vllm:e2e_request_latency'
                        '_seconds{namespace="serving",pod=~"llm-.+"}[5m])))')
    classic = vllm_rule(gates=QUOTA_NO_PSI)
    for e in exprs + [r["expr"] for g in classic["spec"]["groups"] for r in g["rules"]]:
        promql_parser.parse(e)


# --- a real Prometheus -------------------------------------------------------------------------

class _Exporter:
    """Serves vLLM's histogram; every scrape adds one more batch of AT_MIDPOINTS'
    observations (so every rate is the same batch per scrape interval)."""

    def __init__(self, obs: dict):
        self.obs, self.scrapes = obs, 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.scrapes += 1
                body = outer.text(outer.scrapes).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def text(self, k: int) -> str:
        name = VLLM.metric
        lab = 'model_name="m",engine="0"'
        counts = _per_bucket(self.obs, VLLM.buckets)
        lines = [f"# TYPE {name} histogram"]
        cum = 0
        for i, b in enumerate(list(VLLM.buckets) + ["+Inf"]):
            cum += counts[i]
            le = "+Inf" if b == "+Inf" else repr(float(b))
            lines.append(f'{name}_bucket{{{lab},le="{le}"}} {cum * k}')
        total = sum(v * c for v, c in self.obs.items())
        lines.append(f"{name}_sum{{{lab}}} {total * k!r}")
        lines.append(f"{name}_count{{{lab}}} {sum(self.obs.values()) * k}")
        return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(port: int, q: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?query=" + urllib.request.quote(q)
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["data"]["result"]


@pytest.mark.skipif(PROMETHEUS is None and not CI,
                    reason="prometheus missing (.ci/run installs it)")
def test_real_prometheus_records_the_true_cv():
    obs = {0.4: 6, 1.25: 3, 3.75: 1}
    exporter = _Exporter(obs)
    rule = vllm_rule(rateWindow="10s")
    port = _free_port()
    with tempfile.TemporaryDirectory() as d:
        Path(d, "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
        Path(d, "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(Path(d, "rules.yaml"))],
            "scrape_configs": [{"job_name": "vllm", "static_configs": [{
                "targets": [f"127.0.0.1:{exporter.port}"],
                "labels": {"namespace": "serving", "pod": "llm-5c7d-x2x9k"}}]}]}))
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={d}/prometheus.yml",
                                 f"--storage.tsdb.path={d}/data",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline, got = time.monotonic() + 60, []
            while time.monotonic() < deadline:
                time.sleep(1)
                try:
                    got = _query(port, rules.RECORD_CV)
                except OSError:
                    continue
                if got and exporter.scrapes >= 12:
                    break
        finally:
            proc.terminate()
            proc.wait(10)
            exporter.server.shutdown()
    assert got, "no recorded CV within 60 s"
    assert got[0]["metric"]["workload"] == "llm"
    assert float(got[0]["value"][1]) == pytest.approx(_true_cv(obs), rel=1e-6)


def test_no_psi_alerts_with_the_gate_off():
    # KubeletPSI: beta and on in 1.35 (GA and locked from 1.36)
    rule = vllm_rule(gates={"KubeletPSI": False})
    assert "KrmFnPinnedContainerCPUPressure" not in names(rule)
    assert "KrmFnPinnedContainerThrottled" not in names(rule)


def test_throttling_alert_when_the_quota_gate_is_off():
    # DisableCPUQuotaWithExclusiveCPUs: on in every supported version, locked only in 1.37
    for version in ("1.35", "1.36"):
        rule = vllm_rule(version=version, gates={"DisableCPUQuotaWithExclusiveCPUs": False})
        assert "KrmFnPinnedContainerThrottled" in names(rule)
        assert "KrmFnPinnedContainerCPUPressure" in names(rule)


def test_kpt_paths_and_rerender_in_place():
    cfg = config()
    out = transform([dict(DEPLOYMENT)], cfg, set_path=True)
    [rule] = [o for o in out.emitted if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["annotations"] == {
        "internal.config.kubernetes.io/path": "monitoring/serving-krm-fn-jitter-llm.yaml"}
    # kpt feeds the emitted rule back in: it is not emitted twice, nor is it an error
    again = transform([dict(DEPLOYMENT), json.loads(json.dumps(rule))], cfg, set_path=True)
    assert [o for o in again.emitted if o["kind"] == "PrometheusRule"] == []
    assert not [r for r in again.results if r.severity == "error"]


def test_an_item_of_the_same_name_not_generated_by_krm_fn_is_left_alone():
    mine = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "krm-fn-jitter-llm", "namespace": "serving"},
            "spec": {"groups": []}}
    out = transform([dict(DEPLOYMENT), mine], config())
    assert [o for o in out.emitted if o["kind"] == "PrometheusRule"] == []
    [err] = [r for r in out.results if r.severity == "error"]
    assert "it was not generated by krm-fn" in err.message
