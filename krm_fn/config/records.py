"""The loaded function config: one class per object of the definition (krm_fn.config.spec),
with the checks across its fields. `config.load` returns a `Spec`.

Attribute names are the field names of the config (`cfg.nodePools[0].kubelet.
cpuManagerPolicyOptions`); values are converted by the field types: cpu/memory as
`krm_fn.quantity.Quantity`, `kubernetesVersion` as `(1, minor)`, lists as lists of
strings, maps as dicts of strings. Each `check*(path)` method raises `ConfigError` naming
a field under `path`, the object's own field path.
"""
from __future__ import annotations

import re

from krm_fn import workloads
from krm_fn.config import checks
from krm_fn.config.checks import (KIND_NAME, check_labels, check_names, is_dns_label,
                                  is_dns_subdomain, is_identifier, is_image, is_prom_duration,
                                  prom_duration_ns)
from krm_fn.config.fields import Record
from krm_fn.config.threadvars import NOT_THREAD_ENV, THREAD_ENV
from krm_fn.config.values import ConfigError, parse_quantity, short
from krm_fn.node import topology
from krm_fn.node.topology import MAX_CPUS

# Linux MAX_NUMNODES with the largest CONFIG_NODES_SHIFT (10).
MAX_NUMA_NODES = 1024


class Spec(Record):
    """`spec` of an InferenceTuning: kubernetesVersion ((1, minor)), mode (str),
    selector (Selector), workloads (Workloads), extraKinds (list[ExtraKind]), nodePools
    (list[NodePool], at least one), output (Output)."""

    def check(self, path: str = "spec") -> None:
        """The checks across fields of the whole config, run once its shape is right. They
        run in this fixed order and the first problem found is raised."""
        pools = self.nodePools
        if self.output.baseline is not None:
            from krm_fn.config.baseline import check_baseline
            check_baseline(self.output.baseline)
        seen: set = set()
        for i, k in enumerate(self.extraKinds):
            k.check(f"{path}.extraKinds[{i}]", seen)
        for i, p in enumerate(pools):
            p.topology.check_lscpu(f"{path}.nodePools[{i}].topology")
            p.topology.check_memory(f"{path}.nodePools[{i}].topology")
        names = [p.name for p in pools]
        for i, p in enumerate(pools):
            p.check_name(f"{path}.nodePools[{i}]", names[:i])
        for i, p in enumerate(pools):
            p.check(f"{path}.nodePools[{i}]")
        self.workloads.check(f"{path}.workloads")
        for i, p in enumerate(pools):
            check_labels(p.nodeSelector, f"{path}.nodePools[{i}].nodeSelector")
        checks.check_pool_selectors(pools, path)
        check_labels(self.selector.matchLabels, f"{path}.selector.matchLabels")
        self.output.check(f"{path}.output")
        self.output.admissionPolicy.check(f"{path}.output.admissionPolicy",
                                          self.kubernetesVersion)
        self.workloads.check_names(f"{path}.workloads")
        self.selector.check(f"{path}.selector")


class Selector(Record):
    """`spec.selector`, which workloads are tuned: kinds, names, namespaces (list[str];
    empty: any), matchLabels (dict[str, str])."""

    def check(self, path: str) -> None:
        """Kinds, names and namespaces are spelled as the API server requires."""
        check_names(self.kinds, f"{path}.kinds", KIND_NAME.fullmatch, 63,
                    "a kind name such as Deployment")
        check_names(self.names, f"{path}.names", is_dns_subdomain, 253,
                    "an object name (DNS subdomain)")
        check_names(self.namespaces, f"{path}.namespaces", is_dns_label, 63,
                    "a namespace name (DNS label)", allow_empty=True)


class Workloads(Record):
    """`spec.workloads`, how pod specs are rewritten: cpuRounding (str), pinnedContainers
    (list[str]), defaultCpus / defaultMemory (Quantity or None), sidecarResources
    (Resources), initContainerCpu (Quantity, fractional), threads (Threads), injection
    (Injection), shm (Shm)."""

    def check(self, path: str) -> None:
        """initContainerCpu is fractional, so the init container stays in the shared pool
        (https://github.com/kubernetes/kubernetes/issues/112228)."""
        if self.initContainerCpu.is_integer:
            raise ConfigError(f"{path}.initContainerCpu", f"must be a fractional CPU such as "
                              f"500m so the init container runs in the shared pool, found "
                              f"{self.initContainerCpu.text!r} (whole CPUs would be pinned)")

    def check_names(self, path: str) -> None:
        """Thread variable names and pinned container names are valid names."""
        check_names(self.threads.env, f"{path}.threads.env", is_identifier, 256,
                    "an environment variable name (letters, digits and '_', not starting "
                    "with a digit)")
        check_names(self.pinnedContainers, f"{path}.pinnedContainers", is_dns_label, 63,
                    "a container name (DNS label)")
        self.threads.check(f"{path}.threads")


class Resources(Record):
    """`spec.workloads.sidecarResources`: cpu and memory (Quantity) for non-pinned
    containers that declare none."""


class Threads(Record):
    """`spec.workloads.threads`, the thread-count variables: env and custom (list[str]),
    reservedCpus (int), existing (str), source (str), engines (bool), goMemLimitPercent
    and mallocArenaMax (int or None)."""

    def check(self, path: str) -> None:
        """Every name of `env` is a thread-count variable krm-fn knows (threadvars.THREAD_ENV) or
        one listed in `custom`; none of either holds something else (threadvars.NOT_THREAD_ENV):
        krm-fn writes a thread count into each, and a count in GOMEMLIMIT or PATH breaks
        the container."""
        check_names(self.custom, f"{path}.custom", is_identifier, 256,
                    "an environment variable name (letters, digits and '_', not starting "
                    "with a digit)")
        for key, names in (("custom", self.custom), ("env", self.env)):
            for i, name in enumerate(names):
                if name in NOT_THREAD_ENV:
                    raise ConfigError(f"{path}.{key}[{i}]", f"{name} is not a thread-count "
                                      f"variable: it holds {NOT_THREAD_ENV[name]}, and krm-fn "
                                      f"would write a thread count into it; remove it")
        for i, name in enumerate(self.env):
            if name not in THREAD_ENV and name not in self.custom:
                raise ConfigError(f"{path}.env[{i}]", f"{name} is not a thread-count variable "
                                  f"krm-fn knows ({', '.join(THREAD_ENV)}); if your runtime "
                                  f"reads it as a thread count, list it in {path}.custom too")


class Injection(Record):
    """`spec.workloads.injection`: one Injector per admission-time injector (istio,
    linkerd, knativeQueueProxy, vault, dapr, gcsfuse)."""


class Injector(Record):
    """The proxy of one admission-time injector: cpu, memory (Quantity or None; request ==
    limit) and mode (auto, always or never)."""


class Shm(Record):
    """`spec.workloads.shm`: sizeLimitPercent (int), the sizeLimit of a memory-backed
    emptyDir as a percentage of the pod's memory limit."""


class ExtraKind(Record):
    """One entry of `spec.extraKinds`, a custom workload kind: group and kind (str),
    podSpecs and annotations (list[str] of paths such as spec.template.spec)."""

    def check(self, path: str, seen: set) -> None:
        """Kind and group names, (group, kind) not in `seen` (then added to it), at least
        one pod spec path, no more annotation paths than pod spec paths, every path
        parses (krm_fn.workloads.parse_path)."""
        if not self.kind or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", self.kind):
            raise ConfigError(f"{path}.kind", f"must be a Kind name such as InferenceJob, found "
                                              f"{short(self.kind)}")
        if self.group and not is_dns_subdomain(self.group):
            raise ConfigError(f"{path}.group", f"must be an API group such as example.com, "
                                               f"found {short(self.group)}")
        if (self.group, self.kind) in seen:
            raise ConfigError(f"{path}.kind", f"{self.kind} is declared twice")
        seen.add((self.group, self.kind))
        if not self.podSpecs:
            raise ConfigError(f"{path}.podSpecs", "must list at least one pod spec path")
        if len(self.annotations) > len(self.podSpecs):
            raise ConfigError(f"{path}.annotations", "has more entries than podSpecs")
        for key in ("podSpecs", "annotations"):
            for j, text in enumerate(getattr(self, key)):
                try:
                    workloads.parse_path(text)
                except ValueError as e:
                    raise ConfigError(f"{path}.{key}[{j}]", str(e)) from None


class NodePool(Record):
    """One entry of `spec.nodePools`: name (str, a DNS label), nodeSelector
    (dict[str, str]), topology (Topology), reserved (Reserved), kubelet (Kubelet), emit
    ("placed" or "always": whether the pool is emitted without a workload placed on it),
    performanceProfile (PerformanceProfile)."""

    def check_name(self, path: str, before: list[str]) -> None:
        """The name is a DNS label of at most 40 characters, not in `before` (the names of
        the pools listed before this one)."""
        n = self.name
        if not is_dns_label(n or "") or len(n) > 40:
            raise ConfigError(f"{path}.name", f"must be a DNS label of at most 40 "
                                              f"characters, found {short(n)}")
        if n in before:
            raise ConfigError(f"{path}.name", f"duplicate pool name {n!r}")

    def check(self, path: str) -> None:
        """The CPU Manager options, the topology counts, the kubelet reservations and the
        PerformanceProfile settings."""
        self.kubelet.check_cpu_manager_options(f"{path}.kubelet")
        self.topology.check(f"{path}.topology")
        self.kubelet.check(f"{path}.kubelet")
        self.performanceProfile.check(f"{path}.performanceProfile")


class PerformanceProfile(Record):
    """`spec.nodePools[].performanceProfile` (OpenShift Node Tuning Operator): name (str or
    None: the pool name), runtimeClass (bool), crioAnnotations (list[str] of
    cpu-quota, cpu-load-balancing, irq-load-balancing)."""

    def check(self, path: str) -> None:
        """The name is a DNS subdomain short enough for the RuntimeClass
        `performance-<name>` (253 characters); CRI-O annotations need the runtime class
        (CRI-O acts on them only in its high-performance runtime handler)."""
        n = self.name
        if n is not None and (not is_dns_subdomain(n) or len(n) > 253 - 12):
            raise ConfigError(f"{path}.name", f"must be a DNS subdomain of at most 241 "
                                              f"characters, found {short(n)}")
        if self.crioAnnotations and not self.runtimeClass:
            raise ConfigError(f"{path}.crioAnnotations", "needs runtimeClass: true: CRI-O "
                              "reads these annotations only for pods of the profile's "
                              "RuntimeClass (its high-performance runtime handler)")


class Topology(Record):
    """`spec.nodePools[].topology`, the CPU topology of one node: sockets,
    numaNodesPerSocket, coresPerSocket, threadsPerCore (int), siblings (split or
    adjacent), lscpu (str or None: `lscpu -p` output that replaces the counts), memory
    (Quantity or None: bytes per node), numaMemory ({NUMA id: memory text}), hugepages
    ({page size: total text}), fromNode / fromNodeResourceTopology (an object, the name of
    an input item, or None: krm_fn.node.from_node fills the fields above from it)."""

    def check_memory(self, path: str) -> None:
        """numaMemory keys are NUMA node ids of this topology and values memory
        quantities; hugepages keys are page sizes and totals whole pages per NUMA node."""
        numa = (len({c.numa for c in topology.from_lscpu(self.lscpu).cpus()}) if self.lscpu
                else self.sockets * self.numaNodesPerSocket)
        for key, value in self.numaMemory.items():
            if not key.isdigit() or int(key) >= numa:
                raise ConfigError(f"{path}.numaMemory.{key}", f"must be a NUMA node id from 0 "
                                  f"to {numa - 1}, found {short(key)}")
            parse_quantity(value, "memory", f"{path}.numaMemory.{key}")
        for key, value in self.hugepages.items():
            sub = f"{path}.hugepages.{key}"
            page = parse_quantity(key, "memory", sub).whole
            total = parse_quantity(value, "memory", sub).whole
            if page <= 0 or total % (page * numa):
                raise ConfigError(sub, f"{short(value)} is not a whole number of {key} pages "
                                  f"on each of the {numa} NUMA nodes")

    def check_lscpu(self, path: str) -> None:
        """An lscpu paste parses (krm_fn.node.topology.from_lscpu)."""
        if self.lscpu:
            try:
                topology.from_lscpu(self.lscpu)
            except ValueError as e:
                raise ConfigError(f"{path}.lscpu", str(e)) from None

    def check(self, path: str) -> None:
        """Cores divide into NUMA nodes; at most MAX_CPUS logical CPUs and MAX_NUMA_NODES
        NUMA nodes per node."""
        if self.coresPerSocket % self.numaNodesPerSocket:
            raise ConfigError(f"{path}.coresPerSocket",
                              f"{self.coresPerSocket} cores do not divide evenly into "
                              f"{self.numaNodesPerSocket} NUMA nodes per socket")
        cpus = self.sockets * self.coresPerSocket * self.threadsPerCore
        if cpus > MAX_CPUS:
            raise ConfigError(path, f"{self.sockets} sockets x {self.coresPerSocket} cores x "
                              f"{self.threadsPerCore} threads is {cpus} logical CPUs per "
                              f"node; at most {MAX_CPUS} are supported (Linux supports at "
                              f"most 8192)")
        numa = self.sockets * self.numaNodesPerSocket
        if numa > MAX_NUMA_NODES:
            raise ConfigError(f"{path}.numaNodesPerSocket",
                              f"{self.sockets} sockets x {self.numaNodesPerSocket} NUMA nodes "
                              f"is {numa} NUMA nodes per node; Linux supports at most "
                              f"{MAX_NUMA_NODES}")


class Reserved(Record):
    """`spec.nodePools[].reserved`, the CPUs kept for system daemons: cores (int),
    spreadAcrossNuma and spreadMemoryAcrossNuma (bool)."""


class Kubelet(Record):
    """`spec.nodePools[].kubelet`, KubeletConfiguration settings of the pool: option maps
    (dict[str, str]), policies and scope (str), reservedSystemCPUs (str or None),
    reservedMemory (plain data or None), kubeReserved / systemReserved (dict[str, str] or
    None), evictionHard (dict[str, str]), podPidsLimit (int), booleans, extra (dict)."""

    def check_cpu_manager_options(self, path: str) -> None:
        """Every cpuManagerPolicyOptions value is "true" or "false"."""
        for k, v in self.cpuManagerPolicyOptions.items():
            if v not in ("true", "false"):
                raise ConfigError(f"{path}.cpuManagerPolicyOptions.{k}",
                                  f"must be \"true\" or \"false\", found {short(v)}")

    def check(self, path: str) -> None:
        """Reservations name known resources, eviction thresholds known signals
        (krm_fn.config.checks)."""
        checks.check_reserved(self.kubeReserved or {}, f"{path}.kubeReserved")
        checks.check_reserved(self.systemReserved or {}, f"{path}.systemReserved")
        checks.check_eviction(self.evictionHard, f"{path}.evictionHard")


class Verdict(Record):
    """`spec.verdict`: onFailure ("error" or "warning"), the severity of a verdict that a
    selected pod will not get exclusive CPUs."""


class Monitoring(Record):
    """`spec.output.monitoring`: enabled (bool), cvThresholdPercent (int), alertFor and
    rateWindow (Prometheus durations, str), histograms ("classic" or "native"), labels
    (dict), grafanaDashboard (bool)."""

    def check(self, path: str) -> None:
        """alertFor and rateWindow are Prometheus durations
        (https://prometheus.io/docs/prometheus/latest/querying/basics/#time-durations),
        rateWindow above zero (a range selector of 0s is a PromQL error)."""
        for name in ("alertFor", "rateWindow"):
            value = getattr(self, name)
            if len(value) > 32 or not is_prom_duration(value):
                raise ConfigError(f"{path}.{name}", f"must be a Prometheus duration such as "
                                                    f"5m or 1h30m, found {short(value)}")
            if prom_duration_ns(value) > 2**63 - 1:
                raise ConfigError(f"{path}.{name}", f"must be at most 292y (Prometheus "
                                                    f"holds durations in int64 nanoseconds: "
                                                    f"\"duration out of range\"), found "
                                                    f"{short(value)}")
        if not self.rateWindow.strip("0ywdhms"):
            raise ConfigError(f"{path}.rateWindow", f"must be longer than zero (rate() needs "
                                                    f"a range), found {short(self.rateWindow)}")
        check_labels(self.labels, f"{path}.labels")


# The oldest Kubernetes minor whose API server takes the admission policy krm-fn emits:
# admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is stable (served by default)
# from 1.30 (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/),
# and its CEL uses the Kubernetes quantity library, in the API server's CEL environment from
# 1.28 (https://kubernetes.io/docs/reference/using-api/cel/#kubernetes-quantity-library;
# IntroducedVersion 1.28 in k8s.io/apiserver pkg/cel/environment/base.go).
ADMISSION_POLICY_MIN_VERSION = (1, 30)


class AdmissionPolicy(Record):
    """`spec.output.admissionPolicy`, the drift guard (krm_fn/guard): enabled (bool), name
    (str), validationActions (list of Deny, Warn, Audit), namespaces (list[str]),
    namespaceLabels (dict[str, str])."""

    def check(self, path: str, version: tuple) -> None:
        """When enabled: `version` ((1, minor), spec.kubernetesVersion) is at least
        ADMISSION_POLICY_MIN_VERSION; the name is a DNS subdomain; validationActions do not
        hold both Deny and Warn (the API server refuses that pair:
        https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/#validation-actions);
        namespaces are namespace names; namespaces and namespaceLabels are not both set."""
        if not self.enabled:
            return
        if tuple(version) < ADMISSION_POLICY_MIN_VERSION:
            low = "%d.%d" % ADMISSION_POLICY_MIN_VERSION
            raise ConfigError(f"{path}.enabled", f"needs kubernetesVersion {low} or later: "
                              f"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy "
                              f"is served from {low} (GA), found %d.%d" % tuple(version))
        if not is_dns_subdomain(self.name or "") or len(self.name) > 253:
            raise ConfigError(f"{path}.name", f"must be an object name (DNS subdomain), "
                                              f"found {short(self.name)}")
        if "Deny" in self.validationActions and "Warn" in self.validationActions:
            raise ConfigError(f"{path}.validationActions", "must not hold both Deny and Warn "
                              "(the API server refuses the binding: a denied request "
                              "already carries the message); use [Deny] or [Deny, Audit]")
        check_names(self.namespaces, f"{path}.namespaces", is_dns_label, 63,
                    "a namespace name (DNS label)")
        if self.namespaces and self.namespaceLabels:
            raise ConfigError(f"{path}.namespaceLabels", "set namespaces or namespaceLabels, "
                              "not both")
        check_labels(self.namespaceLabels, f"{path}.namespaceLabels")


class Output(Record):
    """`spec.output`, what the node plan is emitted as: formats (list[str]), namespace
    (str), baseline (a KubeletConfiguration mapping or None), verifyJob (bool),
    verifyImage (str), nodeAuditJob and nodeAuditDaemonSet (bool), monitoring (Monitoring),
    stalePlans (str)."""

    def check(self, path: str) -> None:
        """The namespace is a DNS label, verifyImage an image reference."""
        if not is_dns_label(self.namespace) or len(self.namespace) > 63:
            raise ConfigError(f"{path}.namespace", f"must be a DNS label (lowercase letters, "
                                                   f"digits, '-'), found "
                                                   f"{short(self.namespace)}")
        if len(self.verifyImage) > 1024 or not is_image(self.verifyImage):
            raise ConfigError(f"{path}.verifyImage", f"must be a container image reference "
                                                     f"such as ghcr.io/krm-fn/krm-fn:0.1.0, "
                                                     f"found {short(self.verifyImage)}")
        self.monitoring.check(f"{path}.monitoring")
