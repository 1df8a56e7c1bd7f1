#!/usr/bin/env python3
"""The larger generated run of the kubelet differential (issue #30; docs/verdict.md
"Checked against the kubelet's code"): krm-fn's admission model against the kubelet's
Topology, CPU and Memory Managers on `--examples` hypothesis cases (default 50,000) of
seed `--seed` (default: a random one, printed), by running

    KRM_FN_DIFF_SEED=<seed> KRM_FN_DIFF_EXAMPLES=<n> python -m pytest -q \\
        tests/test_kubelet_differential.py -k generated -W default

from the checkout (Go needed: the harness is built first). Exit code: pytest's. The last
lines say the seed, the count, the time and any open disagreement counted (warnings).
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    env = {**os.environ, "KRM_FN_DIFF_SEED": str(seed), "KRM_FN_DIFF_EXAMPLES": str(a.examples)}
    started = time.monotonic()
    code = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_kubelet_differential.py", "-k", "generated",
                           "-W", "default"], cwd=ROOT, env=env).returncode
    print(f"kubelet differential: {a.examples} cases, KRM_FN_DIFF_SEED={seed}, "
          f"{'passed' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
