"""The node side of krm-fn: what the kubelet on a node pool must be told so that the
rewritten pods actually get exclusive CPUs.

- `topology`: CPU numbering of a pool's nodes, reserved-core selection, cpuset strings.
- `options`: static CPU Manager policy options as data (maturity per Kubernetes minor
  version, forbidden pairs) and their check.
- `plan`: `NodePlan`, the pure per-pool KubeletConfiguration plan, and `build`.
- `formats`: one module per output format, `render(plan, ctx) -> [objects]`.

- `fields`: the one table of KubeletConfiguration fields krm-fn writes or checks (types,
  defaults, versions, checkpoint resets, platform names).

Facts are cited upstream where they are used (kubernetes.io task pages, KEPs, kubelet source
files, platform documentation).
"""
