"""Request-latency histograms of serving engines, as data: metric name, the engine's labels,
the bucket upper bounds (`le`, seconds) of the version cited, and whether the engine can be
scraped as a native histogram. Read from each engine's source at the version in `source`.

Neither engine below exposes native histograms (prometheus_client's and the Rust
metrics-exporter-prometheus text formats are classic), so the recording rules estimate the
stddev from the classic buckets; a Prometheus 3 that converts classic histograms to native
ones with custom buckets (`convert_classic_histograms_to_nhcb`,
https://prometheus.io/docs/prometheus/latest/configuration/configuration/#scrape_config)
can use `spec.output.monitoring.histograms: native` instead (histogram_avg / histogram_stddev).

Engines with no request-latency histogram get no latency rules (pinning-health alerts only).
"""
from __future__ import annotations

from dataclasses import dataclass

from krm_fn.rules.engines import vllm


@dataclass(frozen=True)
class Histogram:
    """`engine`: the name of the engine (krm_fn.rules.engines ENGINE.name, or the name
    here for an engine recognised only by `images`/`commands`); `metric`: the histogram's
    base name (`_bucket`, `_sum`, `_count` series); `buckets`: finite upper bounds in
    seconds, ascending (the `+Inf` bucket follows); `source`: (title, URL) of the code that
    defines them; `images` / `commands`: regexes recognising an engine that is not in the
    thread-tuning registry."""

    engine: str
    metric: str
    buckets: tuple
    source: tuple
    images: tuple = ()
    commands: tuple = ()


_VLLM_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)


def _tgi_buckets() -> tuple:
    """35 bounds, 0.0001 s times 1.5^k for k = 1..35, computed the way the router does
    (repeated multiplication, so the `le` strings match to the last digit)."""
    out, value = [], 0.0001
    for _ in range(35):
        value *= 1.5
        out.append(value)
    return tuple(out)


HISTOGRAMS: tuple[Histogram, ...] = (
    Histogram(vllm.ENGINE.name, "vllm:e2e_request_latency_seconds", _VLLM_BUCKETS,
              ("vLLM v1 engine metrics, vllm/v1/metrics/loggers.py (request_latency_buckets)",
               "https://github.com/vllm-project/vllm/blob/005a810bc40faa25b8870fbc8559c3462581eee3/vllm/v1/metrics/loggers.py")),
    Histogram("TGI", "tgi_request_duration", _tgi_buckets(),
              ("text-generation-inference v3.3.7, router/src/server.rs (duration buckets)",
               "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/router/src/server.rs"),
              images=(r"(^|/)text-generation-inference(:|@|$)",),
              commands=(r"(^|[\s/])text-generation-(launcher|router)(\s|$)",)),
)

BY_ENGINE = {h.engine: h for h in HISTOGRAMS}
