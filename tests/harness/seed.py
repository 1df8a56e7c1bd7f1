"""The generated differential run's seed and size, from the environment, one definition:
`KRM_FN_DIFF_SEED` (default: random, printed in pytest's report header and in every
failure, so any run can be repeated) and `KRM_FN_DIFF_EXAMPLES` (default 2000)."""
from __future__ import annotations

import os
import random

SEED = int(os.environ.get("KRM_FN_DIFF_SEED") or random.SystemRandom().randrange(2**32))
EXAMPLES = int(os.environ.get("KRM_FN_DIFF_EXAMPLES") or 2000)
