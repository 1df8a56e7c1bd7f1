"""The node side of krm-fn: what the kubelet on a node pool must be told so that the
rewritten pods actually get exclusive CPUs.

- `fields`: the one table of KubeletConfiguration fields krm-fn writes or checks (types,
  defaults, versions, checkpoint resets, each platform's name); everything below reads it.
- `topology`: CPU numbering of a pool's nodes, reserved-core selection, cpuset strings.
- `options`: CPU and Topology Manager policy options as data (maturity per Kubernetes minor
  version, forbidden pairs) and their check.
- `plan`: `NodePlan`, the pure per-pool KubeletConfiguration plan, and `build`.
- `reserved`: kubeReserved/systemReserved, reservedSystemCPUs and reservedMemory of a plan.
- `memory`: the Memory Manager's reservedMemory rule.
- `baseline`: the plan merged onto the node's current configuration, checked; state changes
  and rollout steps.
- `checks`: admission checks of pods against a pool's plan.
- `formats`: one module per output format, `render(plan, ctx) -> Rendered`.
- `verify_job`: the optional verify Job.

Facts are cited upstream where they are used (kubernetes.io task pages, KEPs, kubelet source
files, platform documentation).
"""
