"""spec.output.monitoring (krm_fn/monitoring/): the emitted PrometheusRule, checked and
unit-tested with the real promtool on synthetic series of known CV for every layout of
every engine release (the recorded CV within its error bound of the truth, the bound
rigorous, the alert only where the CV is certainly above the line), the pods found by
owner, expressions Prometheus 2.42 cannot parse checked with promql-parser, and an
end-to-end run of a real Prometheus on 127.0.0.1 scraping a stub exporter of vLLM's
inter-token latency histogram and kube-state-metrics' owner series."""
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
ITL, TTFT = VLLM.signals
TGI = data.BY_ENGINE["TGI"]
OWN = 'and on (namespace, pod) krm_fn:workload_pod:info{namespace="serving",workload="llm"}'

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

def _records(signal, layouts: int) -> list:
    out = []
    for _ in range(layouts):
        out += [rules.record(signal, w) for w in ("mean", "stddev", "bucket_halfwidth")]
    return out + [rules.record(signal, w) for w in ("cv", "cv_error_bound", "cv_resolved")]


def test_vllm_workload_gets_its_pods_by_owner_jitter_signals_and_pinning_alerts():
    rule = vllm_rule(gates=QUOTA_NO_PSI)
    assert rule["metadata"]["name"] == "krm-fn-jitter-llm"
    assert rule["metadata"]["namespace"] == "serving"
    assert names(rule) == (
        ["krm_fn:workload_pod:info"] + _records("inter_token_latency", 3)
        + _records("time_to_first_token", 2)
        + ["KrmFnLatencyCVHigh", "KrmFnLatencyCVUnresolved"] * 2
        + ["KrmFnPinnedPodNotGuaranteed", "KrmFnPinnedContainerThrottled"])
    pods = rule["spec"]["groups"][0]["rules"][0]
    assert pods["expr"] == (
        'max by (namespace, pod) (kube_pod_owner{namespace="serving",owner_kind="ReplicaSet"} '
        '* on (namespace, owner_name) group_left () max by (namespace, owner_name) '
        '(label_replace(kube_replicaset_owner{namespace="serving",owner_kind="Deployment",'
        'owner_name="llm"}, "owner_name", "$1", "replicaset", "(.+)")))')
    assert pods["labels"] == {"workload": "llm"}
    mean = rule["spec"]["groups"][0]["rules"][1]
    assert mean["expr"].startswith(
        '(sum by (namespace, pod) (rate(vllm:inter_token_latency_seconds_sum{namespace='
        f'"serving"}}[5m]) {OWN}) / sum by (namespace, pod) (rate(vllm:inter_token_latency_'
        f'seconds_count{{namespace="serving"}}[5m]) {OWN})) and on (namespace, pod) (count '
        'by (namespace, pod) (count by (namespace, pod, le) (vllm:inter_token_latency_'
        'seconds_bucket{namespace="serving",le=~"0[.]01|0[.]025|')
    assert mean["labels"] == {"workload": "llm", "engine": "vLLM CPU", "layout":
                              "vllm:inter_token_latency_seconds 0.10.2 and later"}
    high = rule["spec"]["groups"][1]["rules"][0]
    assert high["expr"] == (
        'krm_fn:inference_inter_token_latency:cv{namespace="serving",workload="llm"} > '
        'krm_fn:inference_inter_token_latency:cv_error_bound{namespace="serving",'
        'workload="llm"} + 0.2')
    assert high["for"] == "15m"
    assert "e2e_request_latency" not in json.dumps(rule)


@pytest.mark.parametrize("kind,name,want", [
    ("StatefulSet", "db", 'max by (namespace, pod) (kube_pod_owner{namespace="ns",'
                          'owner_kind="StatefulSet",owner_name="db"})'),
    ("CronJob", "nightly", 'max by (namespace, pod) (kube_pod_owner{namespace="ns",owner_kind='
                           '"Job"} * on (namespace, owner_name) group_left () max by '
                           '(namespace, owner_name) (label_replace(kube_job_owner{namespace='
                           '"ns",owner_kind="CronJob",owner_name="nightly"}, "owner_name", '
                           '"$1", "job_name", "(.+)")))'),
    ("Pod", "solo", 'max by (namespace, pod) (kube_pod_info{namespace="ns",pod="solo"})'),
    ("InferenceService", "llm.v2", 'max by (namespace, pod) (kube_pod_info{namespace="ns",'
                                   'pod=~"llm[.]v2-.+"})'),
])
def test_pods_are_found_by_owner_per_kind(kind, name, want):
    from krm_fn.monitoring.targets import Target
    assert rules.pods_of(Target(kind, name, "ns", ("c",), None, 0)) == want


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_psi_alerts_and_no_throttling_alert_on_every_supported_version(version):
    # KubeletPSI and DisableCPUQuotaWithExclusiveCPUs are on by default in each
    rule = vllm_rule(version=version)
    assert names(rule)[-3:] == ["KrmFnPinnedPodNotGuaranteed",
                                "KrmFnPinnedContainerCPUPressure",
                                "KrmFnPinnedContainerIOPressure"]
    io = rule["spec"]["groups"][1]["rules"][-1]
    assert io["expr"] == ('sum by (namespace, pod, container) (rate(container_pressure_io_'
                          'waiting_seconds_total{namespace="serving",container=~"vllm"}[5m]) '
                          f'{OWN}) > 0.1')


def test_threshold_window_and_labels_from_the_config():
    rule = vllm_rule(cvThresholdPercent=35, alertFor="1h", rateWindow="10m",
                     labels={"release": "prometheus"})
    cv = rule["spec"]["groups"][1]["rules"][0]
    assert cv["expr"].endswith(" + 0.35") and cv["for"] == "1h"
    assert "[10m]" in rule["spec"]["groups"][0]["rules"][1]["expr"]
    assert rule["metadata"]["labels"] == {"release": "prometheus",
                                          "app.kubernetes.io/managed-by": "krm-fn",
                                          "krm-fn.dev/node-pool": "inference"}


def test_engine_without_histogram_gets_pinning_alerts_only():
    d = json.loads(json.dumps(DEPLOYMENT))
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/model:1"
    [rule] = emitted([d], config(gates=QUOTA_NO_PSI))
    assert names(rule) == ["krm_fn:workload_pod:info", "KrmFnPinnedPodNotGuaranteed",
                           "KrmFnPinnedContainerThrottled"]
    assert all(c["metadata"]["name"] != "krm-fn-jitter-dashboard"
               for c in emitted([d], config(grafanaDashboard=True), "ConfigMap"))


def test_tgi_recognised_by_image_watches_its_time_per_output_token():
    d = json.loads(json.dumps(DEPLOYMENT))
    d["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "ghcr.io/huggingface/text-generation-inference:3.3.7")
    [rule] = emitted([d], config())
    recs = rule["spec"]["groups"][0]["rules"]
    assert recs[1]["labels"]["engine"] == "TGI"
    assert [r["record"] for r in recs[1:]] == _records("time_per_output_token", 1)
    assert "tgi_request_mean_time_per_token_duration_bucket" in recs[2]["expr"]


def test_off_by_default_and_dashboard_when_asked():
    cfg = config()
    cfg["spec"]["output"]["monitoring"]["enabled"] = False
    assert emitted([DEPLOYMENT], cfg) == []
    [dash] = [c for c in emitted([DEPLOYMENT], config(grafanaDashboard=True), "ConfigMap")
              if c["metadata"]["name"] == "krm-fn-jitter-dashboard"]
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    doc = json.loads(dash["data"]["krm-fn-jitter.json"])
    assert [p["targets"][0]["expr"] for p in doc["panels"]] == [
        f'{rules.record(sig, what)}{{workload=~"llm"}}'
        for sig in ("inter_token_latency", "time_to_first_token")
        for what in ("mean", "cv", "cv_error_bound")]


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
    assert TGI.signals[0].layouts[0].buckets[0] == 0.00015000000000000001
    assert len(TGI.signals[0].layouts[0].buckets) == 35


# --- the estimator and its bound, in Python -----------------------------------------------

def estimate(buckets, obs: dict) -> tuple:
    """(CV, CV error bound) as the classic rules compute them from observations `obs`
    ({seconds: count}): the exact mean, the stddev with every observation at its bucket's
    midpoint, the bound from the buckets' half widths (and 10^9 x the share above the
    last bound)."""
    mids = [float(m) for m in rules.midpoints(tuple(buckets))]
    edges = [0.0] + list(buckets)
    counts = _per_bucket(obs, buckets)
    n = sum(counts)
    mean = sum(v * c for v, c in obs.items()) / n
    m1 = sum(c * m for c, m in zip(counts, mids)) / n
    m2 = sum(c * m * m for c, m in zip(counts, mids)) / n
    half = sum(c * ((hi - lo) / 2) ** 2 for c, lo, hi in zip(counts, edges, edges[1:])) / n
    over = counts[-1] / n
    return math.sqrt(max(m2 - m1 * m1, 0)) / mean, (math.sqrt(half) + 1e9 * over) / mean


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


def lognormal(mean: float, cv: float, n: int = 400) -> dict:
    """`n` latencies at the quantiles (i + 0.5) / n of a lognormal of that mean and CV,
    rounded to the microsecond (one observation each)."""
    from statistics import NormalDist
    s = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - s * s / 2
    out: dict = {}
    for i in range(n):
        v = round(math.exp(mu + s * NormalDist().inv_cdf((i + 0.5) / n)), 6)
        out[v] = out.get(v, 0) + 1
    return out


# typical CPU serving values per signal (seconds): the mean the synthetic series center on
TYPICAL = {"inter_token_latency": 0.08, "time_to_first_token": 0.4,
           "time_per_output_token": 0.08}
LAYOUTS = [(e, s, lay) for e in data.ENGINES for s in e.signals for lay in s.layouts]


def test_the_bound_holds_for_every_layout_whatever_the_distribution():
    import random
    rng = random.Random(34)
    for _, sig, lay in LAYOUTS:
        for _ in range(300):
            mean = TYPICAL[sig.name] * math.exp(rng.uniform(-2.5, 2.5))
            kind = rng.choice(["lognormal", "uniform", "two points", "bimodal"])
            if kind == "lognormal":
                obs = lognormal(mean, rng.choice([0.02, 0.05, 0.2, 0.5, 1.0]), 100)
            elif kind == "uniform":
                obs = {round(rng.uniform(0.2 * mean, 1.8 * mean), 6): 1 for _ in range(100)}
            elif kind == "two points":   # both at bucket edges: the bound's worst case
                i = rng.randrange(len(lay.buckets) - 1)
                obs = {lay.buckets[i]: 50, lay.buckets[i] + 1e-9: 50}
            else:
                obs = {round(mean, 6): 80, round(mean * rng.uniform(2, 6), 6): 20}
            cv, bound = estimate(lay.buckets, obs)
            assert abs(cv - _true_cv(obs)) <= bound + 1e-12, (lay.metric, kind, obs)


def test_engine_buckets_are_too_wide_to_resolve_a_cv_to_five_hundredths():
    # what docs/jitter.md states: at their typical values the buckets of every supported
    # release leave an error bound above 0.05, so the rules record no cv_resolved
    for _, sig, lay in LAYOUTS:
        for cv in (0.05, 0.2, 0.5):
            assert estimate(lay.buckets, lognormal(TYPICAL[sig.name], cv))[1] > 0.05


# --- promtool ----------------------------------------------------------------------------------

POD = {"namespace": "serving", "pod": "llm-7d9f-abcde"}
CANARY = {"namespace": "serving", "pod": "llm-canary-5b6c-zzzzz"}


def _labels(d: dict) -> str:
    return ",".join(f'{k}="{v}"' for k, v in d.items())


def _owners(pod: dict, rs: str, deployment: str, minutes: int) -> list:
    """kube-state-metrics' series saying that `pod` belongs to ReplicaSet `rs` of
    Deployment `deployment`."""
    ns = pod["namespace"]
    return [{"series": f'kube_pod_owner{{{_labels(pod)},owner_kind="ReplicaSet",'
                       f'owner_name="{rs}",owner_is_controller="true"}}',
             "values": f"1x{minutes}"},
            {"series": f'kube_replicaset_owner{{namespace="{ns}",replicaset="{rs}",'
                       f'owner_kind="Deployment",owner_name="{deployment}",'
                       f'owner_is_controller="true"}}', "values": f"1x{minutes}"}]


def _series(metric: str, obs: dict, buckets, pod: dict, minutes: int) -> list:
    """The `_bucket`, `_sum` and `_count` series of `metric` for `pod`, growing by the
    observations `obs` every minute (le as the engines write it: Python's shortest repr)."""
    counts = _per_bucket(obs, buckets)
    lab = _labels({**pod, "model_name": "m", "engine": "0"})
    out, cum = [], 0
    for i, b in enumerate(list(buckets) + ["+Inf"]):
        cum += counts[i]
        le = "+Inf" if b == "+Inf" else repr(float(b))
        out.append({"series": f'{metric}_bucket{{{lab},le="{le}"}}',
                    "values": f"0+{cum}x{minutes}"})
    total = sum(v * c for v, c in obs.items())
    out.append({"series": f"{metric}_sum{{{lab}}}", "values": f"0+{total!r}x{minutes}"})
    out.append({"series": f"{metric}_count{{{lab}}}",
                "values": f"0+{sum(obs.values())}x{minutes}"})
    return out


def _expect(expr: str, samples: list) -> dict:
    return {"expr": expr, "eval_time": "30m", "exp_samples": samples}


def _case(engine, sig, lay, cv: float, both: bool = False) -> dict:
    """A promtool test of one layout at one CV: the recorded CV and bound equal the Python
    estimate's (within 1e-4 and 1e-6: in float64 the variance E[M^2] - E[M]^2 of latencies
    all in one bucket cancels to about 1e-10 of E[M^2], a CV of about 1e-5), the true CV lies within the bound, no cv_resolved (the
    bound is over 0.05), and the alerts as the estimate and bound decide."""
    obs = lognormal(TYPICAL[sig.name], cv)
    est, bound = estimate(lay.buckets, obs)
    assert abs(est - _true_cv(obs)) <= bound and bound > rules.RESOLVED
    series = _owners(POD, "llm-7d9f", "llm", 40) + _series(lay.metric, obs, lay.buckets, POD, 40)
    records = lay
    if both:             # a release that exposes the newer metric too: the newer records
        [records] = [x for x in sig.layouts if x.metric in lay.unless]
        series += _series(records.metric, obs, records.buckets, POD, 40)
    want = {**POD, "workload": "llm", "engine": engine.engine,
            "layout": rules.layout_name(records)}
    one = [{"labels": "{" + _labels(want) + "}", "value": 1}]
    threshold = 0.2
    high, unresolved = est > bound + threshold, threshold < est <= bound + threshold
    where = "Deployment serving/llm"
    alerts = []
    for name, fires, text in (("KrmFnLatencyCVHigh", high, "CV above 0.2"),
                              ("KrmFnLatencyCVUnresolved", unresolved, "CV may be above 0.2")):
        exp = []
        if fires:
            metrics = " or ".join(dict.fromkeys(x.metric for x in sig.layouts))
            desc = (f"Pod {POD['pod']}: the coefficient of variation (stddev/mean) of the "
                    f"{sig.title} ({metrics}) is {est:.2f} over 5m, above 0.2 beyond the "
                    f"error of its buckets. Check thread affinity and NUMA placement: krm-fn "
                    f"verify in the pod, krm-fn verify --node on its node.")
            if name == "KrmFnLatencyCVUnresolved":
                desc = (f"Pod {POD['pod']}: the {sig.title} buckets put its coefficient of "
                        f"variation at {est:.2f}, but they are too wide to tell whether it "
                        f"is above 0.2 (krm_fn:inference_{sig.name}:cv_error_bound): "
                        f"measure it with krm-fn probe.")
            exp = [{"exp_labels": {"severity": "warning" if name.endswith("High")
                                   else "info", "signal": sig.name, **want},
                    "exp_annotations": {"summary": f"{where}: {sig.title} {text}",
                                        "description": desc}}]
        alerts.append({"alertname": name, "eval_time": "30m", "exp_alerts": exp,
                       "_sig": sig.name})
    return {"interval": "1m", "input_series": series,
            "promql_expr_test": [
                _expect(f"abs({rules.record(sig.name, 'cv')} - {est!r}) < bool 1e-4", one),
                _expect(f"abs({rules.record(sig.name, 'cv_error_bound')} - {bound!r}) "
                        f"< bool 1e-6", one),
                _expect(f"{rules.record(sig.name, 'cv_resolved')}", [])],
            "alert_rule_test": alerts}


def _promtool(tmp_path, rule: dict, tests: list) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    p = subprocess.run([PROMTOOL, "test", "rules", "test.yaml"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    assert "SUCCESS" in p.stdout


def _engine_rule(engine) -> dict:
    if engine.engine == "TGI":
        d = json.loads(json.dumps(DEPLOYMENT))
        d["spec"]["template"]["spec"]["containers"][0]["image"] = (
            "ghcr.io/huggingface/text-generation-inference:3.3.7")
        [rule] = emitted([d], config())
        return rule
    return vllm_rule()


@needs_promtool
def test_promtool_check_rules(tmp_path):
    # native expressions use functions Debian's promtool 2.42 lacks: promql-parser below
    for name, rule in (("defaults", vllm_rule()), ("quota-no-psi", vllm_rule(gates=QUOTA_NO_PSI)),
                       ("tgi", _engine_rule(TGI))):
        f = tmp_path / f"rules-{name}.yaml"
        f.write_text(yaml.safe_dump(rule["spec"]))
        p = subprocess.run([PROMTOOL, "check", "rules", str(f)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "SUCCESS: " in p.stdout


@needs_promtool
@pytest.mark.parametrize("engine", data.ENGINES, ids=lambda e: e.engine)
def test_promtool_records_every_layout_within_its_bound_at_known_cvs(tmp_path, engine):
    tests = []
    for sig in engine.signals:
        for lay in sig.layouts:
            for cv, both in ((0.05, False), (0.2, False), (0.5, False), (1.0, False),
                             (0.2, True)):
                if both and not lay.unless:
                    continue
                case = _case(engine, sig, lay, cv, both)
                # the other signal's alerts of the same name stay silent: no series
                case["alert_rule_test"] = [
                    {k: v for k, v in a.items() if k != "_sig"}
                    for a in case["alert_rule_test"]]
                tests.append(case)
    _promtool(tmp_path, _engine_rule(engine), tests)


@needs_promtool
def test_promtool_alerts_on_inter_token_jitter_not_on_output_length(tmp_path):
    # the same pod: steady inter-token latency (CV 0.05), end-to-end latency spread over
    # 0.5 s to 60 s by output length (CV > 1), and a canary Deployment's pod (llm-canary,
    # whose name starts with llm-) with a jittery inter-token latency: nothing fires for llm
    lay = ITL.layouts[0]
    steady, jitter = lognormal(0.08, 0.05), lognormal(0.08, 1.5)
    e2e = {0.5: 30, 5.0: 30, 60.0: 40}
    series = (_owners(POD, "llm-7d9f", "llm", 40) + _owners(CANARY, "llm-canary-5b6c",
                                                            "llm-canary", 40)
              + _series(lay.metric, steady, lay.buckets, POD, 40)
              + _series("vllm:e2e_request_latency_seconds", e2e, (1.0, 10.0, 100.0), POD, 40)
              + _series(lay.metric, jitter, lay.buckets, CANARY, 40))
    est, bound = estimate(lay.buckets, jitter)
    assert est > bound + 0.2          # the canary's jitter would fire, were it selected
    want = {**POD, "workload": "llm", "engine": "vLLM CPU", "layout": rules.layout_name(lay)}
    tests = [{"interval": "1m", "input_series": series,
              "promql_expr_test": [
                  _expect("krm_fn:workload_pod:info",
                          [{"labels": "{__name__=\"krm_fn:workload_pod:info\"," +
                            _labels({**POD, "workload": "llm"}) + "}", "value": 1}]),
                  _expect("count(krm_fn:inference_inter_token_latency:cv)",
                          [{"labels": "{}", "value": 1}]),
                  _expect("krm_fn:inference_inter_token_latency:cv > bool 0",
                          [{"labels": "{" + _labels(want) + "}", "value": 1}])],
              "alert_rule_test": [{"alertname": a, "eval_time": "30m", "exp_alerts": []}
                                  for a in ("KrmFnLatencyCVHigh", "KrmFnLatencyCVUnresolved")]}]
    _promtool(tmp_path, vllm_rule(), tests)


@needs_promtool
def test_promtool_fires_on_certain_jitter(tmp_path):
    lay = ITL.layouts[0]
    obs = lognormal(0.08, 1.5)
    est, bound = estimate(lay.buckets, obs)
    case = _case(VLLM, ITL, lay, 1.5)
    [high, unresolved] = [a for a in case["alert_rule_test"]]
    assert high["exp_alerts"] and not unresolved["exp_alerts"]
    case["alert_rule_test"] = [{k: v for k, v in a.items() if k != "_sig"}
                               for a in (high, unresolved)]
    _promtool(tmp_path, vllm_rule(), [case])


def test_native_expressions_parse_with_promql_parser():
    promql_parser = pytest.importorskip("promql_parser")
    rule = vllm_rule(histograms="native")
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert exprs[1] == ('histogram_avg(sum by (namespace, pod) (rate(vllm:inter_token_latency'
                        f'_seconds{{namespace="serving"}}[5m]) {OWN}))')
    classic = vllm_rule(gates=QUOTA_NO_PSI)
    for e in exprs + [r["expr"] for g in classic["spec"]["groups"] for r in g["rules"]]:
        promql_parser.parse(e)


def test_native_records_once_per_metric():
    # hostile testing: layouts that share a metric recorded the same series twice, each
    # labelled with a release, so the CV alert fired once per layout
    rule = vllm_rule(histograms="native")
    recs = [(r["record"], r["expr"]) for g in rule["spec"]["groups"] for r in g["rules"]
            if "record" in r]
    assert len(recs) == len(set(recs)), recs
    layouts = [r["labels"]["layout"] for g in rule["spec"]["groups"] for r in g["rules"]
               if "layout" in r.get("labels", {})]
    assert all(" " not in name for name in layouts), layouts      # the metric alone
    [high] = [r for g in rule["spec"]["groups"] for r in g["rules"]
              if r.get("alert") == "KrmFnLatencyCVHigh"][:1]
    assert "beyond the error of its buckets" not in high["annotations"]["description"]


# --- a real Prometheus -------------------------------------------------------------------------

class _Exporter:
    """Serves vLLM's inter-token latency histogram and kube-state-metrics' owner series for
    one pod (labels written out: scraped with honor_labels); every scrape adds one more
    batch of `obs` (so every rate is the same batch per scrape interval)."""

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
        lay = ITL.layouts[0]
        name = lay.metric
        pod = 'namespace="serving",pod="llm-5c7d-x2x9k"'
        lab = pod + ',model_name="m",engine="0"'
        counts = _per_bucket(self.obs, lay.buckets)
        lines = [f"# TYPE {name} histogram"]
        cum = 0
        for i, b in enumerate(list(lay.buckets) + ["+Inf"]):
            cum += counts[i]
            le = "+Inf" if b == "+Inf" else repr(float(b))
            lines.append(f'{name}_bucket{{{lab},le="{le}"}} {cum * k}')
        total = sum(v * c for v, c in self.obs.items())
        lines.append(f"{name}_sum{{{lab}}} {total * k!r}")
        lines.append(f"{name}_count{{{lab}}} {sum(self.obs.values()) * k}")
        lines.append(f'kube_pod_owner{{{pod},owner_kind="ReplicaSet",owner_name="llm-5c7d",'
                     f'owner_is_controller="true"}} 1')
        lines.append('kube_replicaset_owner{namespace="serving",replicaset="llm-5c7d",'
                     'owner_kind="Deployment",owner_name="llm",owner_is_controller="true"} 1')
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
def test_real_prometheus_records_the_estimate_and_its_bound():
    obs = lognormal(0.08, 0.5, 40)
    exporter = _Exporter(obs)
    rule = vllm_rule(rateWindow="10s")
    port = _free_port()
    with tempfile.TemporaryDirectory() as d:
        Path(d, "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
        Path(d, "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(Path(d, "rules.yaml"))],
            "scrape_configs": [{"job_name": "vllm", "honor_labels": True, "static_configs": [{
                "targets": [f"127.0.0.1:{exporter.port}"]}]}]}))
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={d}/prometheus.yml",
                                 f"--storage.tsdb.path={d}/data",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline, got, bound = time.monotonic() + 60, [], []
            while time.monotonic() < deadline:
                time.sleep(1)
                try:
                    got = _query(port, rules.record("inter_token_latency", "cv"))
                    bound = _query(port, rules.record("inter_token_latency", "cv_error_bound"))
                except OSError:
                    continue
                if got and bound and exporter.scrapes >= 12:
                    break
        finally:
            proc.terminate()
            proc.wait(10)
            exporter.server.shutdown()
    assert got and bound, "no recorded CV within 60 s"
    assert got[0]["metric"]["workload"] == "llm" and got[0]["metric"]["pod"] == "llm-5c7d-x2x9k"
    est, b = estimate(ITL.layouts[0].buckets, obs)
    assert float(got[0]["value"][1]) == pytest.approx(est, rel=1e-6)
    assert float(bound[0]["value"][1]) == pytest.approx(b, rel=1e-6)
    assert abs(est - _true_cv(obs)) <= b


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


# --- from a hostile round -------------------------------------------------------------------

def test_a_rollout_finds_its_pods_through_its_replicasets():
    from krm_fn.monitoring.targets import Target
    assert rules.pods_of(Target("Rollout", "ro", "ns", ("c",), None, 0)) == (
        'max by (namespace, pod) (kube_pod_owner{namespace="ns",owner_kind="ReplicaSet"} * on '
        '(namespace, owner_name) group_left () max by (namespace, owner_name) (label_replace('
        'kube_replicaset_owner{namespace="ns",owner_kind="Rollout",owner_name="ro"}, '
        '"owner_name", "$1", "replicaset", "(.+)")))')


def test_a_deployment_and_a_statefulset_of_one_name_get_a_rule_each():
    sts = json.loads(json.dumps(DEPLOYMENT))
    sts["kind"] = "StatefulSet"
    rules_ = emitted([DEPLOYMENT, sts], config())
    assert [r["metadata"]["name"] for r in rules_] == ["krm-fn-jitter-llm",
                                                       "krm-fn-jitter-statefulset-llm"]
    assert rules_[1]["spec"]["groups"][0]["rules"][0]["labels"] == {
        "workload": "StatefulSet/llm"}
    assert 'workload="StatefulSet/llm"' in rules_[1]["spec"]["groups"][1]["rules"][0]["expr"]


def test_rule_names_stay_names_the_api_server_takes_and_distinct():
    # hostile testing: a 253-character workload name was cut to a name ending in "-" (the
    # API server refuses it), two long names were cut to one, and Deployment
    # "statefulset-llm" met StatefulSet "llm" (an error that asked to rename a pool)
    def named(kind, name):
        obj = json.loads(json.dumps(DEPLOYMENT))
        obj["kind"], obj["metadata"]["name"] = kind, name
        return obj
    long_a, long_b = "a" * 238 + "-" + "a" * 14, "a" * 240 + "x"
    got = [r["metadata"]["name"] for r in emitted(
        [named("Deployment", long_a), named("Deployment", long_b),
         named("Deployment", "statefulset-llm"), named("StatefulSet", "llm")], config())]
    assert len(set(got)) == 4 and all(len(n) <= 253 and n[-1].isalnum() for n in got), got
    assert got[2:] == ["krm-fn-jitter-statefulset-llm",
                       "krm-fn-jitter-statefulset-llm-" + __import__("hashlib").sha256(
                           b"StatefulSet/llm").hexdigest()[:10]]
    from krm_fn.apivalidation import _dns_subdomain
    assert all(_dns_subdomain(n) for n in got)


def test_names_that_are_not_kubernetes_names_cannot_break_out_of_promql_strings():
    from krm_fn.monitoring.targets import Target
    t = Target("InferenceService", 'x*(y|a"b\\', 'ser"ving', ("c|d",), None, 0)
    assert rules.pods_of(t) == (
        'max by (namespace, pod) (kube_pod_info{namespace="ser\\"ving",'
        'pod=~"x\\\\*\\\\(y\\\\|a\\"b\\\\\\\\-.+"})')
    import re
    assert re.fullmatch(rules.literal('x*(y|a"b\\') + "-.+", 'x*(y|a"b\\-0')


@needs_promtool
def test_promtool_accepts_rules_of_hostile_names(tmp_path):
    from types import SimpleNamespace
    from krm_fn.monitoring.targets import Target
    mon = SimpleNamespace(rateWindow="5m", histograms="classic", cvThresholdPercent=20,
                          alertFor="15m", labels={})
    t = Target("StatefulSet", 'x*(y|a"b\\', 'ser"ving', ('c|"d',), VLLM, 0)
    rule = rules.prometheus_rule(t, mon, (1, 35), {}, {}, {})
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump(rule["spec"]))
    p = subprocess.run([PROMTOOL, "check", "rules", str(f)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_zero_rate_window_is_a_config_error():
    out = transform([dict(DEPLOYMENT)], config(rateWindow="0s"))
    assert [(r.path, r.message) for r in out.results if r.severity == "error"] == [
        ("spec.output.monitoring.rateWindow", "invalid function config: must be longer than "
         "zero (rate() needs a range), found '0s'")]


@pytest.mark.parametrize("field", ["rateWindow", "alertFor"])
def test_a_duration_prometheus_cannot_hold_is_a_config_error(field):
    # hostile testing: 300y passed the syntax check, and promtool refused every rule
    # ("duration out of range": model.ParseDuration holds at most 2^63-1 ns, about 292y)
    out = transform([dict(DEPLOYMENT)], config(**{field: "300y"}))
    [err] = [r for r in out.results if r.severity == "error"]
    assert err.path == f"spec.output.monitoring.{field}" and "300y" in err.message
    out = transform([dict(DEPLOYMENT)], config(**{field: "292y"}))
    assert not [r for r in out.results if r.severity == "error"]
