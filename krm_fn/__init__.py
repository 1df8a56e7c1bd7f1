"""krm-fn: a KRM function that pins inference workloads to exclusive CPUs.

It rewrites pod specs so every container is Guaranteed QoS with integer CPUs where the
static CPU Manager should pin, sets thread-count env vars, cgroup v2 safety limits and a
node selector, and emits the companion KubeletConfiguration for each node pool.
See README.md and docs/.
"""

__version__ = "0.1.0"

