"""Upstream kubelet facts, one generated module per Kubernetes minor: `kubelet_1_29` ...
`kubelet_1_36`, each a docstring and `DATA = {...}` (written by tools/gen_kubelet_data.py
from the Kubernetes source; docs/kubelet-data.md; read by krm_fn.node.upstream.load, which
imports only the target version's module)."""
