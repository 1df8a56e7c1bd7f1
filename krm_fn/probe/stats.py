"""Latency statistics of one probe run (pure).

Percentiles are linearly interpolated between the closest ranks (the "R-7" definition, the
default of numpy.percentile and of Python's statistics.quantiles(method="inclusive")); the
standard deviation is the population one (divide by n), so the CV of a run of identical
latencies is exactly 0. Units: seconds in, seconds out (reports convert to ms).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
DEFAULT_THRESHOLD = 0.20


def percentile(ordered: list[float], p: float) -> float:
    """The `p`-th percentile (0-100) of the sorted, non-empty list `ordered` (R-7 linear
    interpolation). Raises ValueError for an empty list or p outside 0-100."""
    if not ordered:
        raise ValueError("no samples")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile {p} is outside 0-100")
    h = (len(ordered) - 1) * p / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


@dataclass(frozen=True)
class Summary:
    """One run. `count`: successful requests measured (warm-up excluded); `errors`: kind ->
    count (`timeout`, `connection refused`, `HTTP 503`, ...); latencies in seconds:
    `percentiles` {50.0: s, ...}, `mean`, `stddev`, `minimum`, `maximum`; `cv` = stddev/mean
    (None without samples); `threshold`; `elapsed` seconds of the measured phase;
    `samples` the sorted latencies (for the histogram; not written to --json)."""

    count: int
    errors: dict
    percentiles: dict
    mean: float | None
    stddev: float | None
    minimum: float | None
    maximum: float | None
    cv: float | None
    threshold: float
    elapsed: float
    samples: list = field(default_factory=list, repr=False)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def stable(self) -> bool:
        """True when there were samples and the CV is at most the threshold."""
        return self.cv is not None and self.cv <= self.threshold


def summarise(latencies: list[float], errors: dict, threshold: float = DEFAULT_THRESHOLD,
              elapsed: float = 0.0) -> Summary:
    """The Summary of `latencies` (seconds, any order) and `errors` (kind -> count).
    Mean and variance by Welford's update (numerically stable for long runs)."""
    ordered = sorted(latencies)
    n = len(ordered)
    if not n:
        return Summary(0, dict(errors), {}, None, None, None, None, None, threshold, elapsed)
    mean = m2 = 0.0
    for i, x in enumerate(ordered, 1):
        d = x - mean
        mean += d / i
        m2 += d * (x - mean)
    stddev = math.sqrt(m2 / n)
    cv = stddev / mean if mean > 0 else None
    pct = {p: percentile(ordered, p) for p in PERCENTILES}
    return Summary(n, dict(errors), pct, mean, stddev, ordered[0], ordered[-1], cv, threshold,
                   elapsed, ordered)


def histogram(ordered: list[float], bins: int = 12) -> list[tuple[float, float, int]]:
    """`bins` equal-width bins from the smallest to the largest latency of the sorted list
    `ordered`: [(low s, high s, count), ...]; the last bin includes its upper edge. One bin
    when every sample is equal; [] without samples."""
    if not ordered:
        return []
    lo, hi = ordered[0], ordered[-1]
    if hi <= lo:
        return [(lo, hi, len(ordered))]
    width = (hi - lo) / bins
    counts = [0] * bins
    for x in ordered:
        counts[min(int((x - lo) / width), bins - 1)] += 1
    return [(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(counts)]
