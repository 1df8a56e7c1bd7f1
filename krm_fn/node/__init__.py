"""The node side of krm-fn: what the kubelet on a node pool must be told so that the
rewritten pods actually get exclusive CPUs.

- `topology`: CPU numbering of a pool's nodes, reserved-core selection, cpuset strings.
- `options`: static CPU Manager policy options as data (maturity per Kubernetes minor
  version, forbidden pairs) and their check.
- `plan`: `NodePlan`, the pure per-pool KubeletConfiguration plan, and `build`.
- `formats`: one module per output format, `render(plan, ctx) -> [objects]`.

Facts come from /work/shared/reference/kubelet.md (section numbers are cited as `kubelet.md §N`).
"""
