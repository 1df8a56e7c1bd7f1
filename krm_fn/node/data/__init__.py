"""Upstream kubelet facts, one generated module per Kubernetes minor: `kubelet_1_<minor>`,
each a docstring and `DATA = {...}` (written by tools/gen_kubelet_data.py from the Kubernetes
source; docs/kubelet-data.md; read by krm_fn.node.upstream.load, which imports only the
target version's module).

The modules present are the one definition of the Kubernetes minor versions krm-fn supports:
`VERSIONS` lists them, oldest first (FIRST .. LAST). Upstream maintains the three newest
minors (https://kubernetes.io/releases/), and so does krm-fn: adding a minor's module drops
the oldest one (docs/kubelet-data.md, "Adding a minor").
"""
from __future__ import annotations

import os

_PREFIX, _SUFFIX = "kubelet_1_", ".py"


def _versions(directory: str) -> tuple[tuple[int, int], ...]:
    """(1, minor) of every kubelet_1_<minor>.py in `directory`, oldest first (a listing:
    nothing is imported)."""
    return tuple(sorted((1, int(n[len(_PREFIX):-len(_SUFFIX)])) for n in os.listdir(directory)
                        if n.startswith(_PREFIX) and n.endswith(_SUFFIX)
                        and n[len(_PREFIX):-len(_SUFFIX)].isdigit()))


VERSIONS: tuple[tuple[int, int], ...] = _versions(os.path.dirname(__file__))
FIRST, LAST = VERSIONS[0], VERSIONS[-1]
