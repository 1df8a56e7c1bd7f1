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
    `samples` the run's Recorder (for the histogram; not written to --json)."""

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
    samples: object = field(default=None, repr=False)

    def histogram(self, bins: int = 12) -> list[tuple[float, float, int]]:
        """`bins` equal-width bins of the run's latencies (Recorder.histogram)."""
        return self.samples.histogram(bins) if self.samples is not None else []

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def stable(self) -> bool:
        """True when there were samples and the CV is at most the threshold."""
        return self.cv is not None and self.cv <= self.threshold


def summarise(latencies, errors: dict, threshold: float = DEFAULT_THRESHOLD,
              elapsed: float = 0.0) -> Summary:
    """The Summary of `latencies` (a Recorder, or seconds in any order) and `errors`
    (kind -> count). Mean and variance by Welford's update (numerically stable for long
    runs); percentiles exact up to EXACT_MAX samples, then within RELATIVE."""
    rec = latencies if isinstance(latencies, Recorder) else Recorder.of(latencies)
    n = rec.n
    if not n:
        return Summary(0, dict(errors), {}, None, None, None, None, None, threshold, elapsed,
                       rec)
    stddev = math.sqrt(rec.m2 / n)
    cv = stddev / rec.mean if rec.mean > 0 else None
    return Summary(n, dict(errors), rec.percentiles(PERCENTILES), rec.mean, stddev,
                   rec.minimum, rec.maximum, cv, threshold, elapsed, rec)


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


# Long runs: the latencies are kept exactly up to EXACT_MAX samples (the percentiles are then
# exact), then in logarithmic buckets RELATIVE wide (a percentile is then within RELATIVE of
# the exact one), so a run of any length holds at most EXACT_MAX floats or one bucket per
# RELATIVE step between its fastest and slowest latency. Count, mean, stddev (Welford's
# update), minimum and maximum stay exact.
EXACT_MAX = 200_000
RELATIVE = 0.001


class Recorder:
    """Latencies (seconds) of one run, in bounded memory (EXACT_MAX, RELATIVE)."""

    def __init__(self, exact_max: int = EXACT_MAX):
        from array import array
        self.exact_max = exact_max
        self.samples = array("d")
        self.buckets: dict[int, int] | None = None     # bucket index -> count, once switched
        self.zeros = 0
        self.n = 0
        self.mean = self.m2 = 0.0
        self.minimum = self.maximum = None

    @classmethod
    def of(cls, latencies) -> "Recorder":
        """A Recorder of `latencies` (seconds), added in increasing order."""
        rec = cls()
        for x in sorted(latencies):
            rec.add(x)
        return rec

    def add(self, x: float) -> None:
        """Record one latency `x` >= 0 (seconds)."""
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)
        self.minimum = x if self.minimum is None or x < self.minimum else self.minimum
        self.maximum = x if self.maximum is None or x > self.maximum else self.maximum
        if self.buckets is None:
            self.samples.append(x)
            if len(self.samples) > self.exact_max:
                self.buckets = {}
                for s in self.samples:
                    self._bucket(s)
                self.samples = type(self.samples)("d")
        else:
            self._bucket(x)

    def _bucket(self, x: float) -> None:
        if x <= 0:
            self.zeros += 1
            return
        i = math.floor(math.log(x) / math.log1p(RELATIVE))
        self.buckets[i] = self.buckets.get(i, 0) + 1

    @property
    def exact(self) -> bool:
        return self.buckets is None

    def _values(self):
        """(value, count) in increasing order: each sample, or each bucket's geometric
        middle (within RELATIVE / 2 of every latency in it)."""
        if self.buckets is None:
            for x in sorted(self.samples):
                yield x, 1
            return
        if self.zeros:
            yield 0.0, self.zeros
        g = 1 + RELATIVE
        for i in sorted(self.buckets):
            yield g ** (i + 0.5), self.buckets[i]

    def percentiles(self, ps) -> dict:
        """{p: latency} for each p of `ps` (0-100), R-7 on the exact samples, else on the
        buckets (within RELATIVE)."""
        if not self.n:
            return {}
        if self.buckets is None:
            ordered = sorted(self.samples)
            return {p: percentile(ordered, p) for p in ps}
        import bisect
        ends, middles, seen = [], [], 0
        for value, count in self._values():
            seen += count
            ends.append(seen)
            middles.append(value)

        def at(rank: int) -> float:         # the bucket value of the rank-th latency
            return middles[min(bisect.bisect_right(ends, rank), len(middles) - 1)]
        out = {}
        for p in ps:        # R-7 as `percentile`, between the bucket values of two ranks
            h = (self.n - 1) * p / 100.0
            f = math.floor(h)
            lo, hi = at(f), at(min(f + 1, self.n - 1))
            out[p] = min(max(lo + (h - f) * (hi - lo), self.minimum), self.maximum)
        return out

    def histogram(self, bins: int = 12) -> list[tuple[float, float, int]]:
        """`bins` equal-width bins from the minimum to the maximum: [(low s, high s,
        count)], as `histogram` of the sorted samples (bucket middles once switched)."""
        if not self.n:
            return []
        lo, hi = self.minimum, self.maximum
        if hi <= lo:
            return [(lo, hi, self.n)]
        width = (hi - lo) / bins
        counts = [0] * bins
        for value, count in self._values():
            counts[min(max(int((value - lo) / width), 0), bins - 1)] += count
        return [(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(counts)]
