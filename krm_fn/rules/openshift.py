"""openshift: pods with exclusive CPUs on a PerformanceProfile pool get its RuntimeClass
and, when asked, the CRI-O annotations that go with exclusive CPUs.

Applies only when the pod's node pool sets `performanceProfile.runtimeClass: true` and at
least one of its containers is pinned (whole CPUs, Guaranteed): CRI-O's high-performance
hooks skip Burstable and BestEffort pods and containers with a fractional CPU
(cri-o/cri-o internal/runtimehandlerhooks/high_performance_hooks_linux.go shouldRunHooks).

- `spec.runtimeClassName: performance-<profile>`: the RuntimeClass the Node Tuning Operator
  creates for the profile (`performanceProfile.name`, else the pool name), whose CRI-O
  runtime handler runs the hooks (openshift/cluster-node-tuning-operator
  docs/performanceprofile/runtime-class.md). A pod that already names another RuntimeClass
  is an error, never an overwrite.
- each of `performanceProfile.crioAnnotations` as `<name>.crio.io: "disable"` on the pod
  template (cri-o/cri-o pkg/annotations/v2/annotations.go). A value the workload already
  sets is kept (a warning when it is not "disable"):
  - `cpu-quota.crio.io`: no CFS quota on the pod and container cgroups (cgroup v1
    `cpu.cfs_quota_us` -1, cgroup v2 `cpu.max` "max"). cgroup v2: CRI-O releases before
    cgroup v2 support in the hooks fail the container instead ("not implemented for cgroup
    v2 unified hierarchy", cri-o/cri-o#5736); from the Kubernetes version where
    DisableCPUQuotaWithExclusiveCPUs is on by default the kubelet drops the quota of
    exclusive CPUs itself (kubernetes/kubernetes#70585).
  - `cpu-load-balancing.crio.io`: the scheduler stops load balancing on the container's
    CPUs. cgroup v1: `cpuset.sched_load_balance` 0. cgroup v2 has no such file: CRI-O (1.29
    and later) makes the container cgroup an isolated remote partition
    (`cpuset.cpus.exclusive` on its parents, `cpuset.cpus.partition` isolated), which needs
    Linux 6.7 or a kernel with that backport (torvalds/linux 181c8e091aae "cgroup/cpuset:
    Introduce remote partition"); OpenShift documented it as unsupported on cgroup v2 before
    that (openshift/openshift-docs#57369).
  - `irq-load-balancing.crio.io`: device interrupts are kept off the container's CPUs
    (`/proc/irq/*/smp_affinity` and irqbalance's banned CPUs): not a cgroup setting, the
    same on cgroup v1 and v2; redundant when the profile sets
    `globallyDisableIrqLoadBalancing: true`.
"""
from __future__ import annotations

from krm_fn.pod import PodView
from krm_fn.quantity import kubelet_cpus

ID = "openshift"
OPTIONS = ("nodePools.performanceProfile.runtimeClass",
           "nodePools.performanceProfile.crioAnnotations",
           "nodePools.performanceProfile.name")
ANNOTATION_SUFFIX = ".crio.io"
DISABLE = "disable"
# why each annotation is set, for the change message
# and what it needs on cgroup v2 (module docstring)
WHY = {
    "cpu-quota": "no CFS quota on its exclusive CPUs (cgroup v2: cpu.max max; a CRI-O "
                 "without cgroup v2 support in its hooks fails the container, "
                 "cri-o/cri-o#5736)",
    "cpu-load-balancing": "no scheduler load balancing on its exclusive CPUs (cgroup v2: "
                          "an isolated cpuset partition, Linux 6.7+)",
    "irq-load-balancing": "no device interrupts on its exclusive CPUs (not a cgroup "
                          "setting: the same on cgroup v1 and v2)",
}


def _conf(ctx):
    """The placed pool's `performanceProfile` config and its profile name, or (None, "")."""
    if ctx.pool is None:
        return None, ""
    pool = next((p for p in ctx.cfg.nodePools if p.name == ctx.pool.name), None)
    conf = getattr(pool, "performanceProfile", None)
    if conf is None or not conf.runtimeClass:
        return None, ""
    # the profile's naming lives with its format; imported only for pools that ask for it
    from krm_fn.node.formats.performance_profile import profile_name
    return conf, profile_name(pool)


def _pinned(ctx) -> bool:
    """At least one container of the pod gets exclusive CPUs: pinned by the resources rule,
    with a whole-number cpu limit once it has written (a kept fractional cpu is shared)."""
    return any(f.cpu is not None and f.cpu.pinned and f.limit is not None
               and f.limit > 0 and kubelet_cpus(f.limit) for f in ctx.facts.values())


def apply(pod: PodView, ctx) -> None:
    """Set the RuntimeClass and the asked CRI-O annotations; see the module docstring."""
    conf, name = _conf(ctx)
    if conf is None or not _pinned(ctx):
        return
    from krm_fn.node.formats.performance_profile import runtime_class
    want = runtime_class(name)
    path = pod.spec_path("runtimeClassName")
    have = pod.spec.get("runtimeClassName")
    if have is not None and str(have) != want:
        pod.error(path, f"runtimeClassName {have} conflicts with node pool "
                        f"{ctx.pool.name!r}, whose PerformanceProfile {name!r} runs pods with "
                        f"exclusive CPUs in RuntimeClass {want}; remove it, or set "
                        f"performanceProfile.runtimeClass: false")
        return
    if have is None:
        pod.set(path, want, f"runtimeClassName {want}: the RuntimeClass of PerformanceProfile "
                            f"{name!r} (its CRI-O high-performance runtime handler)")
    if conf.crioAnnotations and pod.at.meta is None:
        pod.warn(None, "no pod template metadata to carry the CRI-O annotations "
                       + ", ".join(a + ANNOTATION_SUFFIX for a in conf.crioAnnotations))
        return
    current = pod.annotations
    for short in conf.crioAnnotations:
        key = short + ANNOTATION_SUFFIX
        apath = pod.at.meta + ("annotations", key)
        if key in current:
            if str(current[key]) != DISABLE:
                pod.warn(apath, f"{key} is {current[key]!r}, kept: the workload sets it; "
                                f"node pool {ctx.pool.name!r} asks for {DISABLE!r}")
            continue
        pod.set(apath, DISABLE, f"{key}: {DISABLE}: {WHY[short]} (CRI-O, RuntimeClass {want})")
