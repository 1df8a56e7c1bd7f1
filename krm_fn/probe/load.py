"""Send the probe's requests and time them (the only network I/O of `krm-fn probe`).

Two ways to load the server (see wrk2's README on coordinated omission,
https://github.com/giltene/wrk2#readme):

- **rate** (open loop): request i is sent at `start + i / rate` whether or not earlier
  responses came back, so a slow response cannot delay the next send and hide latency.
  At most `max_inflight` requests are outstanding; a send beyond that is counted as the
  error `client limit: max in-flight reached` instead of being queued.
- **concurrency** (closed loop): N workers, each sends its next request when its last one
  finished; like `hey -c N`.

Latency is `time.perf_counter()` (monotonic) from just before the request is handed to the
HTTP client to the last byte of the response body. `send lag` (actual send time minus the
scheduled one, rate mode) tells whether the client kept its schedule. The first
`warmup_requests` requests, or those started in the first `warmup_seconds`, are sent and
discarded. A response is a success when its status is 2xx and its body has the API's shape
(target.check_body); a redirect is an error, never followed (an auth proxy answering 302 to
a login page has served nothing); every request is bounded by
`timeout` seconds in total (connect, headers and body: a slow-loris server is a timeout).

Uses aiohttp (https://docs.aiohttp.org/), the optional extra `krm-fn[probe]`.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

MAX_RESPONSE = 64 << 20      # bytes read of one response body at most


@dataclass(frozen=True)
class Plan:
    """How to load: exactly one of `rate` (requests/s) and `concurrency` (workers); at
    least one of `duration` (s) and `requests` (count), both after warm-up; `timeout` s
    per request; `warmup_requests` / `warmup_seconds` excluded from the results;
    `max_inflight` bound in rate mode."""

    rate: float | None = None
    concurrency: int | None = None
    duration: float | None = None
    requests: int | None = None
    timeout: float = 10.0
    warmup_requests: int = 0
    warmup_seconds: float = 0.0
    max_inflight: int = 256


@dataclass
class Progress:
    """Live counters handed to the progress callback: `phase` "warm-up" | "measure" | "done";
    `sent`, `ok`, `failed` in the measured phase; `elapsed` s since it started;
    `duration` / `requests` the planned end; `last` the latest latencies (s)."""

    phase: str = "warm-up"
    sent: int = 0
    ok: int = 0
    failed: int = 0
    elapsed: float = 0.0
    duration: float | None = None
    requests: int | None = None
    last: list = field(default_factory=list)


@dataclass
class Outcome:
    """What `run` measured: `latencies` (stats.Recorder of seconds, successes of the
    measured phase: memory bounded however long the run), `errors` kind -> count,
    `elapsed` s of the measured phase, `send_lag` (Recorder of seconds, rate mode),
    `warmup` requests discarded."""

    latencies: object = field(default_factory=lambda: _recorder())
    errors: dict = field(default_factory=dict)
    elapsed: float = 0.0
    send_lag: object = field(default_factory=lambda: _recorder())
    warmup: int = 0


def _recorder():
    from krm_fn.probe.stats import Recorder
    return Recorder()


def _error_kind(e: BaseException) -> str:
    import aiohttp
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(e, aiohttp.ClientConnectorError):
        os_error = getattr(e, "os_error", None)
        if isinstance(os_error, ConnectionRefusedError):
            return "connection refused"
        return f"cannot connect ({getattr(os_error, 'strerror', None) or type(os_error).__name__})"
    if isinstance(e, aiohttp.ServerDisconnectedError):
        return "server disconnected"
    if isinstance(e, aiohttp.ClientPayloadError):
        return "bad response body"
    if isinstance(e, aiohttp.ClientResponseError):
        return f"bad response ({e.message})" if getattr(e, "message", "") else "bad response"
    if isinstance(e, (aiohttp.ClientError, OSError)):
        return type(e).__name__
    raise e


class _Runner:
    def __init__(self, target, plan: Plan, progress):
        self.target, self.plan, self.on_progress = target, plan, progress
        self.out = Outcome()
        self.state = Progress(duration=plan.duration, requests=plan.requests)
        self.measure_start: float | None = None
        self.issued = 0

    def _warm(self, index: int, now: float, start: float) -> bool:
        p = self.plan
        return index < p.warmup_requests or now - start < p.warmup_seconds

    async def _one(self, session, measured: bool) -> None:
        t = self.target
        begin = time.perf_counter()
        try:
            async with asyncio.timeout(self.plan.timeout):
                async with session.post(t.url, data=t.body, headers=list(t.headers),
                                        allow_redirects=False) as resp:
                    data = bytearray()
                    async for chunk in resp.content.iter_any():
                        data += chunk
                        if len(data) > MAX_RESPONSE:
                            raise OSError("response larger than 64 MiB")
                    status = resp.status
        except Exception as e:  # every failure is counted by kind, none is raised
            kind, status = _error_kind(e), None
        elapsed = time.perf_counter() - begin
        if not measured:
            return
        if status is not None and 300 <= status < 400:
            kind, status = f"redirect (HTTP {status}, not followed)", None
        elif status is not None and not 200 <= status < 300:
            kind = f"HTTP {status}"
        elif status is not None:
            from krm_fn.probe.target import check_body
            bad = check_body(t.api, bytes(data))
            if bad is not None:
                kind, status = bad, None
        if status is not None and 200 <= status < 300:
            self.out.latencies.add(elapsed)
            self.state.ok += 1
            self.state.last.append(elapsed)
            del self.state.last[:-200]
        else:
            self.out.errors[kind] = self.out.errors.get(kind, 0) + 1
            self.state.failed += 1

    def _begin_measure(self, now: float) -> None:
        if self.measure_start is None:
            self.measure_start = now
            self.state.phase = "measure"

    def _done(self, now: float) -> bool:
        p = self.plan
        if self.measure_start is None:
            return False
        if p.requests is not None and self.state.sent >= p.requests:
            return True
        return p.duration is not None and now - self.measure_start >= p.duration

    async def rate(self, session) -> None:
        p = self.plan
        start = time.perf_counter()
        inflight: set = set()
        i = 0
        while True:
            due = start + i / p.rate
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            now = time.perf_counter()
            warm = self._warm(i, due, start)
            if not warm:
                self._begin_measure(due)
                if self._done(due):
                    break
                self.state.sent += 1
                self.out.send_lag.add(max(0.0, now - due))
            else:
                self.out.warmup += 1
            i += 1
            if len(inflight) >= p.max_inflight:
                if not warm:
                    key = "client limit: max in-flight reached"
                    self.out.errors[key] = self.out.errors.get(key, 0) + 1
                    self.state.failed += 1
                continue
            task = asyncio.create_task(self._one(session, not warm))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
        if inflight:
            await asyncio.gather(*inflight)

    async def closed(self, session) -> None:
        start = time.perf_counter()

        async def worker():
            while True:
                now = time.perf_counter()
                warm = self._warm(self.issued, now, start)
                if not warm:
                    self._begin_measure(now)
                    if self._done(now):
                        return
                    self.state.sent += 1
                else:
                    self.out.warmup += 1
                self.issued += 1
                await self._one(session, not warm)
        await asyncio.gather(*(worker() for _ in range(self.plan.concurrency)))

    async def ticker(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if self.measure_start is not None:
                self.state.elapsed = time.perf_counter() - self.measure_start
            self.on_progress(self.state)

    async def main(self, interval: float) -> Outcome:
        import aiohttp
        p = self.plan
        limit = p.max_inflight if p.rate else p.concurrency
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit)
        tick = asyncio.create_task(self.ticker(interval)) if self.on_progress else None
        try:
            async with aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                             timeout=aiohttp.ClientTimeout(total=None)) as s:
                await (self.rate(s) if p.rate else self.closed(s))
        finally:
            if tick:
                tick.cancel()
        end = time.perf_counter()
        self.out.elapsed = end - self.measure_start if self.measure_start else 0.0
        if self.on_progress:
            self.state.elapsed, self.state.phase = self.out.elapsed, "done"
            self.on_progress(self.state)
        return self.out


def run(target, plan: Plan, progress=None, interval: float = 1.0) -> Outcome:
    """Load `target` (krm_fn.probe.target.Target) as `plan` says and return the Outcome.
    `progress(Progress)` is called every `interval` seconds and once at the end. Network
    failures are counted in Outcome.errors, never raised. Raises ImportError when aiohttp
    is not installed."""
    import aiohttp  # noqa: F401  (fail before any request when the extra is missing)
    return asyncio.run(_Runner(target, plan, progress).main(interval))
