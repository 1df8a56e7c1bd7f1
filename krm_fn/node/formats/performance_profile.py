"""Format `performance-profile`: an OpenShift Node Tuning Operator (NTO)
`performance.openshift.io/v2` PerformanceProfile per node pool, built from the same plan as
every other format (openshift/cluster-node-tuning-operator
pkg/apis/performanceprofile/v2/performanceprofile_types.go, validation in
performanceprofile_validation.go).

- `metadata.name`: `spec.nodePools[].performanceProfile.name`, else the pool name
  (cluster-scoped). The NTO names what it creates after it: KubeletConfig, Tuned and the
  RuntimeClass `performance-<name>` (pkg/performanceprofile/controller/performanceprofile/
  components/consts.go ComponentNamePrefix, utils.go GetComponentName).
- `spec.cpu.reserved`: the plan's reservedSystemCPUs; `spec.cpu.isolated`: every other CPU
  of the node (the API asks for the complement; both must be non-empty and disjoint).
- `spec.hugepages`: the pool's `topology.hugepages`, one page entry per size with the
  node's total count (no `node`: the NTO splits them evenly over the NUMA nodes) and
  `defaultHugepagesSize` the smallest size (the API requires it with pages; a 1G default
  removes the 2M pool from the node).
- `spec.machineConfigLabel` `machineconfiguration.openshift.io/role: <pool>` and
  `spec.machineConfigPoolSelector` `pools.operator.machineconfiguration.openshift.io/<pool>:
  ""` (the label every MachineConfigPool carries for its own name): both set, so the
  `nodeSelector` need not be of the `<domain>/<role>: ""` form the defaults are computed
  from. The pool's MachineConfigPool must select MachineConfigs with that role label.
- `spec.nodeSelector`: the pool's nodeSelector; the API takes exactly one label (error).
- `spec.numa.topologyPolicy`: the plan's topologyManagerPolicy.
- every other KubeletConfiguration field of the plan goes into the annotation
  `kubeletconfig.experimental` (JSON), which the NTO unmarshals before it sets its own
  fields (components/kubeletconfig/kubeletconfig.go): cpuManagerPolicy `static`,
  cpuManagerReconcilePeriod `5s` (a warning when the plan asks for another period),
  topologyManagerPolicy and reservedSystemCPUs from the spec, and for `restricted` /
  `single-numa-node` memoryManagerPolicy `Static` (an error when the plan has another: the
  verdict would judge a kubelet the node does not run); for `single-numa-node` the NTO also
  turns `full-pcpus-only` on unless the annotation names it, so a plan without it writes
  `full-pcpus-only: "false"` there.
  Fields the Machine Config Operator refuses in any KubeletConfig (krm_fn.node.fields, as
  for format `openshift`) are removed with a warning: the profile's KubeletConfig goes
  through the MCO too.

Pods placed on the pool get the profile's RuntimeClass and the CRI-O annotations when the
config asks for them: rule `openshift` (krm_fn/rules/openshift.py).
"""
from __future__ import annotations

import json

from krm_fn.node import fields, platform_reserved
from krm_fn.node.formats._common import (Rendered, Report, body, metadata, path_of,
                                         refused_gates, text)
from krm_fn.node.topology import format_cpuset
from krm_fn.quantity import parse_memory
from krm_fn.results import ERROR, WARNING

API_VERSION = "performance.openshift.io/v2"
KIND = "PerformanceProfile"
FORMAT = "performance-profile"
RUNTIME_CLASS_PREFIX = "performance-"
EXPERIMENTAL_ANNOTATION = "kubeletconfig.experimental"
ROLE_LABEL = "machineconfiguration.openshift.io/role"
POOL_LABEL_PREFIX = "pools.operator.machineconfiguration.openshift.io/"
# topologyPolicy values for which the NTO sets memoryManagerPolicy Static
# (setKubeletConfigForCPUAndMemoryManagers in NTO_SOURCE)
NTO_STATIC_MEMORY_POLICIES = ("restricted", "single-numa-node")
NTO_SOURCE = ("https://github.com/openshift/cluster-node-tuning-operator/blob/master/pkg/"
              "performanceprofile/controller/performanceprofile/components/kubeletconfig/"
              "kubeletconfig.go")
# the field table's entries for this format: plan fields carried at a spec path, and the
# fields the NTO writes itself whatever the annotation says (On.platform_default)
NAMES = fields.platform_names(FORMAT)
SPEC_FIELDS = {k: on.name for k, on in NAMES.items() if not on.owner}
NTO_SETS = {k: on.platform_default for k, on in NAMES.items() if on.owner}
REJECTED = fields.refused_by("openshift")


def profile_name(pool) -> str:
    """The PerformanceProfile's name for a config node pool (`performanceProfile.name`, else
    the pool name)."""
    conf = getattr(pool, "performanceProfile", None)
    return (getattr(conf, "name", None) or str(pool.name))


def runtime_class(name: str) -> str:
    """The RuntimeClass the NTO creates for profile `name`: `performance-<name>`."""
    return RUNTIME_CLASS_PREFIX + name


def nto_runtime_class(pool, plan) -> dict:
    """The RuntimeClass object (plain) the NTO creates for the PerformanceProfile of config
    node pool `pool` (its node plan `plan`): `performance-<profile>`, handler
    `high-performance`, `scheduling.nodeSelector` the profile's nodeSelector, no overhead
    (openshift/cluster-node-tuning-operator pkg/performanceprofile/controller/
    performanceprofile/components/runtimeclass/runtimeclass.go `New`, components/consts.go
    `HighPerformanceRuntime`)."""
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": runtime_class(profile_name(pool))},
            "handler": "high-performance",
            "scheduling": {"nodeSelector": dict(plan.node_selector)}}


def page_size(text_: str) -> str:
    """A hugepage size as the PerformanceProfile spells it (`1Gi` -> `1G`, `2Mi` -> `2M`,
    `64Ki` -> `64k`). Raises ValueError for a size that is not whole KiB."""
    size = parse_memory(text_).whole
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "k")):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    raise ValueError(f"hugepage size {text_!r} is not a whole number of KiB")


def hugepages(pool) -> dict | None:
    """`spec.hugepages` from the pool's `topology.hugepages` ({page size: total per node}),
    or None when it has none."""
    configured = getattr(getattr(pool, "topology", None), "hugepages", None) or {}
    pages = []
    for size, total in configured.items():
        page = parse_memory(size).whole
        pages.append((page, {"size": page_size(size),
                             "count": parse_memory(total).whole // page}))
    if not pages:
        return None
    pages.sort(key=lambda p: p[0])
    return {"defaultHugepagesSize": pages[0][1]["size"], "pages": [p for _, p in pages]}


def _snippet(kubelet: dict, policy: str, name: str, rep: Report, ctx) -> dict:
    """The annotation's KubeletConfiguration fields: the plan's fields except the spec
    fields and the ones the MCO refuses (warned), with a warning for each value the NTO
    overrides."""
    for key, forced in NTO_SETS.items():
        value = kubelet.get(key)
        if value is not None and value != forced:
            rep.add(WARNING, key, f"{key} {text(value)} is not carried by PerformanceProfile "
                    f"{name}: the Node Tuning Operator sets {forced} in the profile's "
                    f"KubeletConfig", current=value)
    memory = kubelet.get("memoryManagerPolicy", "None")
    if policy in NTO_STATIC_MEMORY_POLICIES and memory != "Static":
        rep.add(ERROR, "memoryManagerPolicy", f"memoryManagerPolicy {memory} would be "
                f"overridden by PerformanceProfile {name}: with topologyPolicy {policy} the "
                f"Node Tuning Operator sets Static (reservedMemory on NUMA node 0 when none "
                f"is given; {NTO_SOURCE}), whose kubelet admits a Guaranteed pod only where "
                f"its memory fits the NUMA nodes it is aligned to, and krm-fn judged "
                f"admission with {memory}: set kubelet.memoryManagerPolicy: Static, and krm-fn "
                f"computes reservedMemory and judges memory admission as that kubelet will",
                current=memory, proposed="Static")
    out: dict = {}
    for key, value in kubelet.items():
        if key in SPEC_FIELDS or key in NTO_SETS:
            continue
        off = REJECTED.get(key)
        if off is not None and not (off.unless_empty and isinstance(value, dict)
                                    and not value.get(off.unless_empty)):
            if refused_gates(rep, key, value, f"PerformanceProfile {name}", ctx):
                continue
            rep.add(WARNING, key, f"{key} {text(value)} is removed from PerformanceProfile "
                    f"{name}: its KubeletConfig goes through the Machine Config Operator, "
                    f"which refuses {key}; {off.reason}", current=value)
            continue
        out[key] = value
    return _smt_option(out, policy)


# topologyPolicy values for which the NTO turns full-pcpus-only on unless the annotation
# names it (NTO_SOURCE New: CPUManagerPolicyOptions["full-pcpus-only"] = "true")
NTO_FULL_PCPUS_POLICIES = ("single-numa-node",)


def _smt_option(out: dict, policy: str) -> dict:
    """`out` with cpuManagerPolicyOptions full-pcpus-only "false" written when the plan
    leaves it off and the NTO would turn it on for `policy` (it keeps a value the
    annotation names: the kubelet krm-fn judged then runs; the NTO's own tests cancel SMT
    alignment so)."""
    opts = out.get("cpuManagerPolicyOptions")
    if policy not in NTO_FULL_PCPUS_POLICIES or (isinstance(opts, dict)
                                                and "full-pcpus-only" in opts):
        return out
    return {**out, "cpuManagerPolicyOptions": {**(opts if isinstance(opts, dict) else {}),
                                               "full-pcpus-only": "false"}}


def _refuse(plan, rep: Report) -> bool:
    """Error results for what the PerformanceProfile API refuses; True when there is any."""
    sel_path = f"spec.nodePools[{rep.index}].nodeSelector"
    if len(plan.node_selector) != 1:
        rep.add(ERROR, None, f"format {FORMAT} needs exactly one nodeSelector label (the "
                f"PerformanceProfile API refuses {len(plan.node_selector)}); give the pool "
                f"one label, such as node-role.kubernetes.io/<pool>: \"\"", path=sel_path)
        return True
    if not plan.reserved_cpus or plan.exclusive_cpus <= 0:
        rep.add(ERROR, "reservedSystemCPUs", f"format {FORMAT} needs non-empty reserved and "
                f"isolated CPU sets (the PerformanceProfile API refuses an empty one)")
        return True
    return False


def render(plan, ctx) -> Rendered:
    """[PerformanceProfile] for `plan` (see the module docstring), or no object and an error
    result when the API would refuse it; warnings for fields it cannot carry."""
    rep = Report(ctx)
    if _refuse(plan, rep):
        return Rendered([], rep.results)
    pool = ctx.pool
    name = profile_name(pool) if pool is not None else str(plan.pool)
    kubelet = body(plan)
    policy = str(kubelet.get("topologyManagerPolicy", "none"))
    annotation = _snippet(kubelet, policy, name, rep, ctx)
    merged = plan.merged or kubelet
    platform_reserved.nto_defaults(annotation, merged, rep, name, NTO_SOURCE)
    carried = dict(annotation)
    carried["systemReserved"] = {"memory": platform_reserved.NTO_DEFAULTS[1][2],
                                 **(annotation.get("systemReserved") or {})}
    platform_reserved.mco_system_reserved(carried, {**merged, "reservedSystemCPUs": "x"},
                                          rep, f"PerformanceProfile {name}")
    platform_reserved.mco_cleared({**carried, "reservedSystemCPUs": "x"}, rep,
                                  f"PerformanceProfile {name}")
    reserved = set(plan.reserved_cpus)
    spec: dict = {"cpu": {
        "reserved": format_cpuset(sorted(reserved)),
        "isolated": format_cpuset(c.cpu for c in plan.topology.cpus() if c.cpu not in reserved),
    }}
    pages = hugepages(pool) if pool is not None else None
    if pages:
        spec["hugepages"] = pages
    spec["machineConfigLabel"] = {ROLE_LABEL: str(plan.pool)}
    spec["machineConfigPoolSelector"] = {POOL_LABEL_PREFIX + str(plan.pool): ""}
    spec["nodeSelector"] = dict(plan.node_selector)
    spec["numa"] = {"topologyPolicy": policy}
    md = metadata(plan, ctx, name, path_of(plan, FORMAT), namespaced=False)
    if annotation:
        md["annotations"] = {**md.get("annotations", {}),
                             EXPERIMENTAL_ANNOTATION: json.dumps(annotation,
                                                                 separators=(",", ":"))}
    return Rendered([{"apiVersion": API_VERSION, "kind": KIND, "metadata": md, "spec": spec}],
                    rep.results)
