"""`krm-fn verify`: prove on a live node, from inside a pinned container, that pinning took
effect (issue #6).

- `read.read(root, environ)` reads `/proc/self/status`, the container's cgroup v2 files, the
  CPU and NUMA topology under `/sys/devices/system` and the environment into a plain
  `Probe` (the only module that does I/O; `root` is "/" on a node, a fixture tree in tests).
- `checks.run(probe, expected)` compares it with an `Expected` and returns `Row`s (pure).
- `report.table(rows)` / `report.as_json(...)` format them.

The CLI (`krm_fn.cli verify`) wires the three together: exit 0 when every check passes, 1 on
a mismatch (the table is still printed), 2 for a usage error.
"""
