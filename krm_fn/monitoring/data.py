"""The latency histograms of serving engines that measure jitter, as data: per engine the
signals (inter-token latency, time to first token), and per signal the layouts its
releases exposed (metric name, the bucket upper bounds `le` in seconds, the releases),
read from each engine's source at the releases cited.

End-to-end request latency is not a signal: it grows with the number of tokens generated,
so its spread mostly measures the spread of output lengths, not jitter. A pod's series are
matched to the layout whose metric and exact set of `le` values it exposes (rules.py), so
the right bounds apply whichever release a pod runs, and a release with other buckets
(vLLM 0.34's `--custom-histogram-buckets`, an unknown release) records nothing instead of
a wrong value.

Neither engine below exposes native histograms (prometheus_client's and the Rust
metrics-exporter-prometheus text formats are classic), so the rules estimate the stddev
from the classic buckets with a bound on the error (rules.py); a Prometheus 3 that converts
classic histograms to native ones with custom buckets (`convert_classic_histograms_to_nhcb`,
https://prometheus.io/docs/prometheus/latest/configuration/configuration/#scrape_config)
keeps the same buckets, so the same bound applies.

Engines with no such histogram get no latency rules (pinning-health alerts only).
"""
from __future__ import annotations

from dataclasses import dataclass

from krm_fn.rules.engines import vllm
from krm_fn.rules.engines.recognition import Pattern

VLLM_SRC = "https://github.com/vllm-project/vllm/blob/v{v}/{path}"


@dataclass(frozen=True)
class Layout:
    """One histogram as a range of releases exposes it: `metric` (the base name of its
    `_bucket`, `_sum`, `_count` series), `buckets` (finite upper bounds in seconds,
    ascending; `+Inf` follows), `since` and `until` (the first and last release checked
    to define it so, (major, minor, patch); `until` None: every later one), `source`
    ((title, URL) of the code that defines them), `unless` (metric names whose presence on
    the same pod means a newer layout records the same observations)."""

    metric: str
    buckets: tuple
    since: tuple
    until: tuple | None
    source: tuple
    unless: tuple = ()

    @property
    def releases(self) -> str:
        """The releases for people: `0.9.1 to 0.11.1`, `0.10.2 and later`, `0.5.4`."""
        first = ".".join(map(str, self.since))
        if self.until is None:
            return f"{first} and later"
        last = ".".join(map(str, self.until))
        return first if last == first else f"{first} to {last}"


@dataclass(frozen=True)
class Signal:
    """A jitter signal of an engine: `name` (in record names: `inter_token_latency`),
    `title` (for people), `layouts` (Layout, newest first)."""

    name: str
    title: str
    layouts: tuple


@dataclass(frozen=True)
class EngineMetrics:
    """`engine`: the engine's name (krm_fn.rules.engines ENGINE.name, or the name here for
    an engine recognised only by `images` / `commands`); `signals` (Signal); `images`
    (regexes of the lowercased image) and `commands` (recognition.Pattern, matched as the
    registry's are: in a word in program position, engines/programs.py) recognise an engine
    that is not in the thread-tuning registry."""

    engine: str
    signals: tuple
    images: tuple = ()
    commands: tuple = ()


_ITL = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
        10.0, 20.0, 40.0, 80.0)
_ITL_054 = _ITL[:13]
_TTFT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
         7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_TTFT_054 = _TTFT[:16]


def _vllm(version: str, path: str, what: str) -> tuple:
    return (f"vLLM v{version}, {path} ({what})", VLLM_SRC.format(v=version, path=path))


def _tgi_buckets() -> tuple:
    """35 bounds, 0.0001 s times 1.5^k for k = 1..35, computed the way the router does
    (repeated multiplication, so the `le` strings match to the last digit)."""
    out, value = [], 0.0001
    for _ in range(35):
        value *= 1.5
        out.append(value)
    return tuple(out)


ENGINES: tuple[EngineMetrics, ...] = (
    EngineMetrics(vllm.ENGINE.name, (
        Signal("inter_token_latency", "inter-token latency", (
            Layout("vllm:inter_token_latency_seconds", _ITL, (0, 10, 2), None,
                   _vllm("0.34.0", "vllm/v1/metrics/buckets.py", "INTER_TOKEN_LATENCY_BUCKETS")),
            Layout("vllm:time_per_output_token_seconds", _ITL, (0, 9, 1), (0, 11, 1),
                   _vllm("0.9.1", "vllm/v1/metrics/loggers.py", "time_per_output_token"),
                   unless=("vllm:inter_token_latency_seconds",)),
            Layout("vllm:time_per_output_token_seconds", _ITL_054, (0, 5, 4), (0, 5, 4),
                   _vllm("0.5.4", "vllm/engine/metrics.py", "time_per_output_token")))),
        Signal("time_to_first_token", "time to first token", (
            Layout("vllm:time_to_first_token_seconds", _TTFT, (0, 9, 1), None,
                   _vllm("0.34.0", "vllm/v1/metrics/buckets.py", "TIME_TO_FIRST_TOKEN_BUCKETS")),
            Layout("vllm:time_to_first_token_seconds", _TTFT_054, (0, 5, 4), (0, 5, 4),
                   _vllm("0.5.4", "vllm/engine/metrics.py", "time_to_first_token")))))),
    EngineMetrics("TGI", (
        Signal("time_per_output_token", "mean time per output token of a request", (
            Layout("tgi_request_mean_time_per_token_duration", _tgi_buckets(), (3, 3, 7),
                   (3, 3, 7),
                   ("text-generation-inference v3.3.7, router/src/server.rs (duration "
                    "buckets, every *duration histogram)",
                    "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/"
                    "router/src/server.rs")),)),),
        images=(r"(^|/)text-generation-inference(:|@|$)",),
        commands=(Pattern(r"(^|[\s/])text-generation-(launcher|router)(\s|$)",
                          ("text-generation-launcher", "text-generation-router")),)),
)

BY_ENGINE = {e.engine: e for e in ENGINES}

