"""`krm-fn probe`: measure the latency distribution of an inference endpoint (issue #15).

Pinning exists to make latency stable; the probe measures whether it is. The coefficient of
variation (CV = stddev / mean of the request latencies) is the number to watch: above 0.20,
check thread affinity and NUMA placement (`krm-fn verify`, `krm-fn verify --node`).

- `target.build(...)` turns the command-line choice of API (OpenAI completions / chat,
  KServe v1 `:predict`, Open Inference Protocol v2 `/infer`, any HTTP POST) into a `Target`:
  URL, body bytes, headers (pure).
- `load.run(target, plan, ...)` sends the requests with aiohttp (the optional extra
  `krm-fn[probe]`, imported only here) at a fixed rate (open loop) or a fixed concurrency
  and returns the latencies, timed with `time.perf_counter` (a monotonic clock).
- `stats.summarise(latencies, errors, ...)` computes count, errors, percentiles, mean,
  stddev and CV (pure); `report` prints the text report, the histogram, `--json` and the
  `--compare` table.

Nothing here is imported by a render.
"""
