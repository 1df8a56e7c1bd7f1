"""The probe's output (pure): the text report, the histogram, `--json`, the `--compare`
table and the progress line. Latencies are shown in milliseconds.

The JSON document (`kind: ProbeResult`) keeps seconds, with the field names below; `--compare
BEFORE.json` reads one back. Reading it is strict: a file that is not a ProbeResult is an
error naming the file and the field.
"""
from __future__ import annotations

import json
import math

from krm_fn.probe.stats import PERCENTILES, Summary

API_VERSION = "krm-fn.dev/v1alpha1"
KIND = "ProbeResult"
_NAMES = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p99.9"}
METRICS = ("p50", "p90", "p99", "p99.9", "mean", "stddev")


class CompareError(ValueError):
    """--compare FILE is not a ProbeResult (the message names the file and the field)."""


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1000:.2f} ms"


# The client is behind its schedule (rate mode) when the p99 of its send lag is more than
# this share of the median latency and more than LAG_FLOOR seconds: the latencies then
# measure the client's own delays as much as the server (coordinated omission, wrk2's
# README, https://github.com/giltene/wrk2#readme).
LAG_SHARE = 0.10
LAG_FLOOR = 0.001


def behind(s: Summary, send_lag_p99: float | None) -> bool:
    """Whether the probe fell behind its schedule (see LAG_SHARE)."""
    p50 = s.percentiles.get(50.0)
    return send_lag_p99 is not None and p50 is not None and \
        send_lag_p99 > max(LAG_FLOOR, LAG_SHARE * p50)


def verdict(s: Summary, send_lag_p99: float | None = None) -> str:
    """`stable (CV 0.05 <= 0.20)`, `UNSTABLE (CV 0.31 > 0.20): check thread affinity and
    NUMA placement (krm-fn verify, krm-fn verify --node)`, `no successful request`, or
    `CLIENT BEHIND SCHEDULE (...)` when the probe itself fell behind (`behind`): then the
    run says nothing about the server."""
    if s.cv is None:
        return "no successful request"
    if behind(s, send_lag_p99):
        return (f"CLIENT BEHIND SCHEDULE (send lag p99 {_ms(send_lag_p99)} > "
                f"{LAG_SHARE:.0%} of p50 {_ms(s.percentiles.get(50.0))}): the probe could not "
                f"send at its rate, so these latencies measure it as much as the server; "
                f"lower --rate, raise --max-inflight, or run it on a less loaded machine")
    if s.stable:
        return f"stable (CV {s.cv:.3f} <= {s.threshold:.2f})"
    return (f"UNSTABLE (CV {s.cv:.3f} > {s.threshold:.2f}): check thread affinity and NUMA "
            f"placement (krm-fn verify, krm-fn verify --node)")


def text(s: Summary, target: str, mode: str, bins: int = 12, width: int = 40,
         send_lag_p99: float | None = None) -> str:
    """The report: target and mode, count and errors, percentiles, mean, stddev, CV, the
    send lag (rate mode) and the verdict, then the histogram (`bins` rows, bars up to
    `width` characters)."""
    rate = s.count / s.elapsed if s.elapsed > 0 else 0.0
    lines = [f"target    {target}", f"load      {mode}",
             f"requests  {s.count + s.error_count} measured in {s.elapsed:.1f} s "
             f"({rate:.1f} ok/s)", f"ok        {s.count}",
             f"errors    {s.error_count}" + (" (" + ", ".join(
                 f"{k}: {v}" for k, v in sorted(s.errors.items())) + ")" if s.errors else "")]
    for p in PERCENTILES:
        lines.append(f"{_NAMES[p]:<9} {_ms(s.percentiles.get(p))}")
    lines += [f"{'mean':<9} {_ms(s.mean)}", f"{'stddev':<9} {_ms(s.stddev)}",
              f"{'CV':<9} {'-' if s.cv is None else f'{s.cv:.3f}'}"]
    if send_lag_p99 is not None:
        lines.append(f"{'send lag':<9} p99 {_ms(send_lag_p99)}")
    lines.append(f"verdict   {verdict(s, send_lag_p99)}")
    rows = s.histogram(bins)
    if rows:
        top = max(c for _, _, c in rows) or 1
        lines.append("histogram (ms)")
        for lo, hi, c in rows:
            bar = "#" * max(1 if c else 0, round(c * width / top))
            lines.append(f"  {lo * 1000:9.2f} - {hi * 1000:9.2f} | {bar:<{width}} {c}")
    return "\n".join(lines) + "\n"


def as_dict(s: Summary, target: str, mode: str, send_lag_p99: float | None = None) -> dict:
    """The ProbeResult document (seconds)."""
    lat = {_NAMES[p]: s.percentiles.get(p) for p in PERCENTILES}
    lat.update(mean=s.mean, stddev=s.stddev, min=s.minimum, max=s.maximum)
    return {"apiVersion": API_VERSION, "kind": KIND, "target": target, "load": mode,
            "count": s.count, "errors": dict(sorted(s.errors.items())),
            "elapsedSeconds": s.elapsed, "latencySeconds": lat, "cv": s.cv,
            "threshold": s.threshold, "stable": s.stable, "sendLagP99Seconds": send_lag_p99,
            "clientBehind": behind(s, send_lag_p99),
            "histogram": [{"fromSeconds": lo, "toSeconds": hi, "count": c}
                          for lo, hi, c in s.histogram()]}


def as_json(doc: dict) -> str:
    """`doc` as indented JSON with a final newline."""
    return json.dumps(doc, indent=2) + "\n"


def load_before(text_: str, name: str) -> dict:
    """The ProbeResult in `text_` (the content of --compare file `name`). Raises
    CompareError naming the file and the field."""
    try:
        doc = json.loads(text_)
    except ValueError as e:
        raise CompareError(f"--compare {name}: not JSON ({e})") from None
    except RecursionError:
        raise CompareError(f"--compare {name}: nested too deeply to be a {KIND}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise CompareError(f"--compare {name}: not a {KIND} (write one with krm-fn probe --json)")
    lat = doc.get("latencySeconds")
    if not isinstance(lat, dict):
        raise CompareError(f"--compare {name}: latencySeconds is missing")
    for key in METRICS:
        _number(lat.get(key), f"--compare {name}: latencySeconds.{key}")
    _number(doc.get("cv"), f"--compare {name}: cv")
    errors = doc.get("errors")
    if errors is not None:
        if not isinstance(errors, dict):
            raise CompareError(f"--compare {name}: errors is not an object of counts")
        for kind, count in errors.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise CompareError(f"--compare {name}: errors.{kind} is not a whole number "
                                   f">= 0")
    return doc


def _number(value, what: str) -> None:
    """Raise CompareError (`what` is not ...) unless `value` is None or a finite number >= 0
    that converts to a float (a 400-digit integer does not)."""
    if value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise CompareError(f"{what} is not a number")
    try:
        f = float(value)
    except OverflowError:
        raise CompareError(f"{what} is too large to be a latency or a ratio") from None
    if not math.isfinite(f) or f < 0:
        raise CompareError(f"{what} is {value}: not a finite number >= 0")


def _change(before, after) -> str:
    if before is None or after is None:
        return "-"
    if before == 0:
        return "-" if after == 0 else "new"
    return f"{(after - before) / before * 100:+.1f} %"


def compare(before: dict, after: dict, name: str) -> str:
    """The table `metric  before  after  change` of two ProbeResult documents."""
    lines = [f"compare   before = {name}", f"{'':<9} {'before':>12} {'after':>12} {'change':>9}"]
    b, a = before["latencySeconds"], after["latencySeconds"]
    for key in METRICS:
        lines.append(f"{key:<9} {_ms(b.get(key)):>12} {_ms(a.get(key)):>12} "
                     f"{_change(b.get(key), a.get(key)):>9}")
    cv_b, cv_a = before.get("cv"), after.get("cv")
    fmt = (lambda v: "-" if v is None else f"{v:.3f}")
    lines.append(f"{'CV':<9} {fmt(cv_b):>12} {fmt(cv_a):>12} {_change(cv_b, cv_a):>9}")
    errs = (lambda d: sum((d.get("errors") or {}).values()))
    lines.append(f"{'errors':<9} {errs(before):>12} {errs(after):>12}")
    return "\n".join(lines) + "\n"


def progress_line(p) -> str:
    """One progress line for krm_fn.probe.load.Progress `p`: phase, sent/ok/failed, the
    median of the latest latencies and the time or requests left."""
    if p.phase == "warm-up":
        return "probe: warming up"
    last = sorted(p.last)
    med = f", p50 {last[len(last) // 2] * 1000:.1f} ms" if last else ""
    if p.requests is not None:
        left = f", {max(0, p.requests - p.sent)} left"
    else:
        left = f", {max(0.0, (p.duration or 0) - p.elapsed):.0f} s left"
    if p.phase == "done":
        left = ", done"
    return f"probe: {p.elapsed:.0f} s, {p.sent} sent, {p.ok} ok, {p.failed} failed{med}{left}"
