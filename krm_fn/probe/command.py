"""`krm-fn probe` end to end, without click: read the files, build the target, run the load,
print, and return the exit code.

Exit codes: 0 when the CV is at most the threshold and the error rate at most
`max_error_rate`; 1 when the CV is above the threshold, no request succeeded, or too many
failed (the report is still printed); 2 for a usage error (raised as UsageError by the
caller's option parsing, or here for files and targets).
"""
from __future__ import annotations

import os
import re
import sys

from krm_fn.probe import target as target_mod

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
MAX_DURATION = 7 * 24 * 3600.0


class UsageError(ValueError):
    """A bad option value: exit 2 with this message."""


def parse_duration(text: str, option: str) -> float:
    """`90`, `90s`, `1.5m`, `1h`, `250ms` -> seconds (> 0, at most a week). Raises
    UsageError naming `option`."""
    m = _DURATION.fullmatch(text.strip())
    if not m:
        raise UsageError(f"{option} {text!r} is not a duration (90s, 5m, 1h)")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if not 0 < value <= MAX_DURATION:
        raise UsageError(f"{option} {text!r} must be above 0 and at most 168h")
    return value


def parse_warmup(text: str) -> tuple[int, float]:
    """--warmup: `N` requests or a duration (`5s`) -> (requests, seconds); `0` = none."""
    t = text.strip()
    if t.isdigit():
        return int(t), 0.0
    return 0, parse_duration(t, "--warmup")


def _read_body(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        if path == "-":
            data = sys.stdin.buffer.read(target_mod.MAX_BODY + 1)
        else:
            if os.path.getsize(path) > target_mod.MAX_BODY:
                raise UsageError(f"--body {path} is larger than 64 MiB")
            with open(path, "rb") as fh:
                data = fh.read(target_mod.MAX_BODY + 1)
    except OSError as e:
        raise UsageError(f"--body {path}: {e.strerror or e}") from None
    if len(data) > target_mod.MAX_BODY:
        raise UsageError(f"--body {path} is larger than 64 MiB")
    return data


def _read_before(path: str | None):
    if path is None:
        return None
    from krm_fn.probe import report
    try:
        with open(path, "rb") as fh:
            data = fh.read(16 << 20)
    except OSError as e:
        raise UsageError(f"--compare {path}: {e.strerror or e}") from None
    try:
        return report.load_before(data.decode("utf-8", "replace"), path)
    except report.CompareError as e:
        raise UsageError(str(e)) from None


def mode_text(plan) -> str:
    """`rate 50/s for 60 s` / `concurrency 4 for 1000 requests` (+ warm-up)."""
    how = f"rate {plan.rate:g}/s" if plan.rate else f"concurrency {plan.concurrency}"
    ends = []
    if plan.requests is not None:
        ends.append(f"{plan.requests} requests")
    if plan.duration is not None:
        ends.append(f"{plan.duration:g} s")
    warm = []
    if plan.warmup_requests:
        warm.append(f"{plan.warmup_requests} requests")
    if plan.warmup_seconds:
        warm.append(f"{plan.warmup_seconds:g} s")
    return (f"{how} for {' or '.join(ends)}, open loop" if plan.rate else
            f"{how} for {' or '.join(ends)}") + (f", warm-up {' and '.join(warm)} excluded"
                                                  if warm else ", no warm-up")


def probe(opts: dict) -> int:
    """Run the probe for the parsed options `opts` (the click command's parameters) and
    return the exit code. Raises UsageError for bad files and targets."""
    from krm_fn.probe import load, report, stats
    body = _read_body(opts.get("body"))
    headers = tuple(target_mod.parse_header(h) for h in opts.get("header") or ())
    try:
        tgt = target_mod.build(opts["api"], opts["url"], opts.get("model"),
                               opts.get("prompt") or "Hello", opts.get("max_tokens") or 16,
                               body, headers)
    except target_mod.TargetError as e:
        raise UsageError(str(e)) from None
    before = _read_before(opts.get("compare"))
    plan = opts["plan"]
    show = None
    if not opts.get("quiet"):
        tty = sys.stderr.isatty()

        def show(p, _last=[0.0]):
            line = report.progress_line(p)
            if tty:
                sys.stderr.write("\r\x1b[K" + line)
            elif p.phase == "done" or p.phase == "measure" and p.elapsed - _last[0] >= 10:
                _last[0] = p.elapsed
                sys.stderr.write(line + "\n")
            sys.stderr.flush()
    try:
        out = load.run(tgt, plan, show, interval=0.5 if show else 1.0)
    except ImportError:
        raise UsageError("krm-fn probe needs aiohttp: pip install 'krm-fn[probe]'") from None
    if show and sys.stderr.isatty():
        sys.stderr.write("\n")
    summary = stats.summarise(out.latencies, out.errors, opts["threshold"], out.elapsed)
    lag = out.send_lag.percentiles((99.0,)).get(99.0)
    mode = mode_text(plan)
    where = target_mod.shown(tgt.url)       # never the URL's credentials
    doc = report.as_dict(summary, where, mode, lag)
    if opts.get("save"):
        try:
            with open(opts["save"], "w", encoding="utf-8") as fh:
                fh.write(report.as_json(doc))
        except OSError as e:
            raise UsageError(f"--save {opts['save']}: {e.strerror or e}") from None
    if opts.get("as_json"):
        sys.stdout.write(report.as_json(doc))
    else:
        sys.stdout.write(report.text(summary, where, mode, send_lag_p99=lag))
        if before is not None:
            sys.stdout.write(report.compare(before, doc, opts["compare"]))
    sys.stdout.flush()
    total = summary.count + summary.error_count
    too_many = total and summary.error_count / total > opts["max_error_rate"]
    return 0 if summary.stable and not too_many and not report.behind(summary, lag) else 1
