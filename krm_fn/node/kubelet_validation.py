"""The kubelet's validation of its configuration file, ported with its messages:
`validate(config, version, enabled)` returns [(field, message)] for what
`ValidateKubeletConfiguration` (kubernetes/kubernetes
pkg/kubelet/apis/config/validation/validation.go, with validation_linux.go and
validation_reserved_memory.go) refuses in `config` after v1beta1 defaulting
(pkg/kubelet/apis/config/v1beta1/defaults.go), for Kubernetes 1.35, 1.36 and 1.37 (the
releases the port is checked against by running the kubelet's own code on it:
tests/harness, `harness kubeletconfig`; docs/kubelet-data.md). Each message is the
kubelet's, verbatim; a rule added in a later release says from which.

Not ported (the kubelet's own validation of other packages' types, which a render rarely
sets; krm-fn checks their types only): the tracing configuration, logging's options,
vmodule and flush frequency, the image patterns of preloadedImagesVerificationAllowlist.
The node is taken to run cgroup v2 (the failCgroupV1 check of validation_linux.go passes).

`config` is plain data that decodes (krm_fn.node.kubelet_check runs this only then);
`enabled` maps every gate to its state (kubelet_check.enabled_gates).
"""
from __future__ import annotations

from krm_fn.node import go_quantity as gq
from krm_fn.node import kubelet_names
from krm_fn.node import kubelet_says as ks

_S = 10 ** 9
ENFORCE = ("pods", "system-reserved", "system-reserved-compressible", "kube-reserved",
           "kube-reserved-compressible", "none")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
HAIRPIN = ("promiscuous-bridge", "hairpin-veth", "none")
PULL_POLICIES = ("NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages",
                 "AlwaysVerify")
LOG_FORMATS = {"text": None, "json": "LoggingBetaOptions"}   # the kubelet's registry
MAX_CONTAINER_BACKOFF = 300 * _S
LOGS = "k8s.io/component-base/logs/api/v1/options.go"
METRICS = "k8s.io/component-base/metrics/api/v1/config.go"


class _Config:
    """The configuration as validation sees it, after v1beta1 defaulting: the kubelet's
    defaults of `version` (krm_fn.node.upstream.kubelet_defaults, generated from its own
    defaulting), which replace an absent field, and also a field's zero value unless the
    field is nilable (a pointer, slice or map). Durations in nanoseconds."""

    def __init__(self, config: dict, version, enabled: dict, defaults: dict):
        self.config, self.version, self.on = config, tuple(version), enabled
        self.defaults, self.nilable = defaults["defaults"], set(defaults["nilable"])

    def _get(self, name: str, zero, parse=None):
        raw, default = self.config.get(name), self.defaults.get(name)
        if parse is not None:
            raw = None if raw is None else parse(raw)
            default = None if default is None else parse(default)
        default = zero if default is None else default
        if raw is None or (raw == zero and name not in self.nilable):
            return default
        return raw

    def int(self, name: str) -> int:
        return self._get(name, 0)

    def str(self, name: str) -> str:
        return self._get(name, "")

    def bool(self, name: str) -> bool:
        return self._get(name, False)

    def dur(self, name: str) -> int:
        return self._get(name, 0, lambda text: ks.parse_duration(text)[0])


def _dur(ns: int) -> str:
    """%v of a metav1.Duration value: its time.Duration in braces."""
    return "{" + ks.duration_string(ns) + "}"


def _q(values) -> str:
    """%q of a []string: ["a" "b"]."""
    return "[" + " ".join(ks.go_quote(v) for v in values) + "]"


def _float(f: float) -> str:
    """%v of a float64 (strconv 'g', shortest, exponent from 1e21)."""
    return ks._json_number(f) if f == int(f) else repr(f)


def validate(config: dict, version, enabled: dict, defaults: dict
             ) -> list[tuple[str, str, str]]:
    """[(field, the kubelet's message, the upstream file it comes from)] of what
    ValidateKubeletConfiguration refuses in `config` on Kubernetes `version` (1.35 or
    later), every rule in its order; `defaults`: upstream.kubelet_defaults(version)."""
    c = _Config(config, version, enabled, defaults)
    out: list[tuple[str, str, str]] = []

    def bad(field: str, message: str, source: str = ks.VALIDATION) -> None:
        out.append((field, "invalid configuration: " + message, source))
    for section in (_limits, _images, _ports_and_pulls, _managers, _reservations, _runtime):
        section(c, config, enabled.get, bad, out)
    return list(dict.fromkeys(out))         # a message the kubelet repeats, once


# the counts validation.go refuses below zero, with their flags
_NOT_NEGATIVE = (("eventBurst", "event-burst"), ("eventRecordQPS", "event-qps"))
_NOT_NEGATIVE_LATER = (("kubeAPIBurst", "kube-api-burst"), ("kubeAPIQPS", "kube-api-qps"))
_NOT_NEGATIVE_LAST = (("maxOpenFiles", "max-open-files"), ("maxPods", "max-pods"))


def _negative(c: _Config, names, bad) -> None:
    for name, flag in names:
        if c.int(name) < 0:
            bad(name, f"{name} (--{flag}) {c.int(name)} must not be a negative number")


def _limits(c: _Config, config: dict, on, bad, out: list) -> None:
    """nodeLeaseDurationSeconds, systemCgroups, the event limits, healthzPort, the CFS quota
    period."""
    if c.int("nodeLeaseDurationSeconds") <= 0:
        bad("nodeLeaseDurationSeconds", "nodeLeaseDurationSeconds must be greater than 0")
    if c.str("systemCgroups") != "" and c.str("cgroupRoot") == "":
        bad("systemCgroups", "systemCgroups (--system-cgroups) was specified and cgroupRoot "
            "(--cgroup-root) was not specified")
    _negative(c, _NOT_NEGATIVE, bad)
    if c.int("healthzPort") != 0 and not 1 <= c.int("healthzPort") <= 65535:
        bad("healthzPort", f"healthzPort (--healthz-port) {c.int('healthzPort')} must be between "
            f"1 and 65535, inclusive")
    quota = c.dur("cpuCFSQuotaPeriod")
    if not on("CustomCPUCFSQuotaPeriod") and quota != 100 * 10 ** 6:
        bad("cpuCFSQuotaPeriod", f"cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {_dur(quota)} "
            f"requires feature gate CustomCPUCFSQuotaPeriod")
    if on("CustomCPUCFSQuotaPeriod") and not 10 ** 6 <= quota <= _S:
        bad("cpuCFSQuotaPeriod", f"cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {_dur(quota)} "
            f"must be between 1ms and 1sec, inclusive")


def _images(c: _Config, config: dict, on, bad, out: list) -> None:
    """Image garbage collection (thresholds, ages), defaultPodSysctls between them."""
    high, low = c.int("imageGCHighThresholdPercent"), c.int("imageGCLowThresholdPercent")
    if not 0 <= high <= 100:
        bad("imageGCHighThresholdPercent", f"imageGCHighThresholdPercent "
            f"(--image-gc-high-threshold) {high} must be between 0 and 100, inclusive")
    if not 0 <= low <= 100:
        bad("imageGCLowThresholdPercent", f"imageGCLowThresholdPercent "
            f"(--image-gc-low-threshold) {low} must be between 0 and 100, inclusive")
    if low >= high:
        bad("imageGCLowThresholdPercent", f"imageGCLowThresholdPercent "
            f"(--image-gc-low-threshold) {low} must be less than imageGCHighThresholdPercent "
            f"(--image-gc-high-threshold) {high}")
    minimum, maximum = c.dur("imageMinimumGCAge"), c.dur("imageMaximumGCAge")
    if maximum != 0 and not on("ImageMaximumGCAge"):
        bad("imageMaximumGCAge", "ImageMaximumGCAge feature gate is required for Kubelet "
            "configuration option imageMaximumGCAge")
    if c.version >= (1, 37):                # validation.go from v1.37
        kubelet_names.sysctls(config.get("defaultPodSysctls"), on, bad)
    if c.version >= (1, 36) and minimum < 0:    # validation.go from v1.36
        bad("imageMinimumGCAge", f"imageMinimumGCAge {ks.duration_string(minimum)} must not "
            f"be negative")
    if maximum < 0:
        bad("imageMaximumGCAge", f"imageMaximumGCAge {ks.duration_string(maximum)} must not "
            f"be negative")
    if 0 < maximum <= minimum:
        bad("imageMaximumGCAge", f"imageMaximumGCAge {ks.duration_string(maximum)} must be "
            f"greater than imageMinimumGCAge {ks.duration_string(minimum)}")


def _ports_and_pulls(c: _Config, config: dict, on, bad, out: list) -> None:
    """iptables bits, API and registry limits, ports, image pulls, serverTLSBootstrap,
    runOnce, registerWithTaints."""
    for name, flag in (("iptablesDropBit", "iptables-drop-bit"),
                       ("iptablesMasqueradeBit", "iptables-masquerade-bit")):
        if not 0 <= c.int(name) <= 31:
            bad(name, f"{name} (--{flag}) {c.int(name)} must be between 0 and 31, inclusive")
    _negative(c, _NOT_NEGATIVE_LATER, bad)
    if c.int("nodeStatusMaxImages") < -1:
        bad("nodeStatusMaxImages", f"nodeStatusMaxImages (--node-status-max-images) "
            f"{c.int('nodeStatusMaxImages')} must be -1 or greater")
    _negative(c, _NOT_NEGATIVE_LAST, bad)
    if not -1000 <= c.int("oomScoreAdj") <= 1000:
        bad("oomScoreAdj", f"oomScoreAdj (--oom-score-adj) {c.int('oomScoreAdj')} must be between "
            f"-1000 and 1000, inclusive")
    if c.int("podsPerCore") < 0:
        bad("podsPerCore", f"podsPerCore (--pods-per-core) {c.int('podsPerCore')} must not be a "
            f"negative number")
    if not 1 <= c.int("port") <= 65535:
        bad("port", f"port (--port) {c.int('port')} must be between 1 and 65535, inclusive")
    if c.int("readOnlyPort") != 0 and not 1 <= c.int("readOnlyPort") <= 65535:
        bad("readOnlyPort", f"readOnlyPort (--read-only-port) {c.int('readOnlyPort')} must be "
            f"between 0 and 65535, inclusive")
    _negative(c, (("registryBurst", "registry-burst"), ("registryPullQPS", "registry-qps")), bad)
    pulls = config.get("maxParallelImagePulls")
    serialize = config.get("serializeImagePulls")
    if serialize is None:           # defaults.go: true unless maxParallelImagePulls >= 2
        serialize = pulls is None or pulls < 2
    if pulls is not None and pulls < 1:
        bad("maxParallelImagePulls", f"maxParallelImagePulls {pulls} must be a positive number")
    if serialize and pulls is not None and pulls > 1:
        bad("maxParallelImagePulls", "maxParallelImagePulls cannot be larger than 1 unless "
            "SerializeImagePulls (--serialize-image-pulls) is set to false")
    if c.bool("serverTLSBootstrap") and not on("RotateKubeletServerCertificate"):
        bad("serverTLSBootstrap", "serverTLSBootstrap true requires feature gate "
            "RotateKubeletServerCertificate")
    if c.bool("runOnce"):
        bad("runOnce", "runOnce (--runOnce) true, Runonce mode has been deprecated and should "
            "not be set")
    for taint in config.get("registerWithTaints") or []:
        out.extend(kubelet_names.taint(taint))


def _managers(c: _Config, config: dict, on, bad, out: list) -> None:
    """The Topology Manager's policy and scope, shutdown, swap, crash-loop back-off,
    enforceNodeAllocatable, hairpinMode, image pull credentials."""
    policy, scope = c.str("topologyManagerPolicy"), c.str("topologyManagerScope")
    if policy not in TOPOLOGY_POLICIES:
        bad("topologyManagerPolicy", f"topologyManagerPolicy (--topology-manager-policy) "
            f"{ks.go_quote(policy)} must be one of: {_q(TOPOLOGY_POLICIES)}")
    if scope not in ("container", "pod"):
        bad("topologyManagerScope", f"topologyManagerScope (--topology-manager-scope) "
            f"{ks.go_quote(scope)} must be one of: \"container\", or \"pod\"")
    _shutdown(c, config, on, bad)
    _swap(config.get("memorySwap"), on, bad)
    _crash_loop(config.get("crashLoopBackOff"), on, bad)
    _enforcement(c, config, bad)
    if c.str("hairpinMode") not in HAIRPIN:
        bad("hairpinMode", f"option {ks.go_quote(c.str('hairpinMode'))} specified for hairpinMode "
            f"(--hairpin-mode). Valid options are \"none\", \"hairpin-veth\" or "
            f"\"promiscuous-bridge\"")
    _pull_credentials(c, config, on, bad)


def _reservations(c: _Config, config: dict, on, bad, out: list) -> None:
    """reservedSystemCPUs (cgroups, parse), reservedMemory, the Linux checks,
    showHiddenMetricsForVersion, logging."""
    cpus = c.str("reservedSystemCPUs")
    if cpus != "":
        if c.str("systemReservedCgroup") != "" or c.str("kubeReservedCgroup") != "":
            bad("systemReservedCgroup" if c.str("systemReservedCgroup") else "kubeReservedCgroup",
                "can't use reservedSystemCPUs (--reserved-cpus) with "
                "systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup "
                "(--kube-reserved-cgroup)")
        error = ks.cpuset_error(cpus)
        if error:
            bad("reservedSystemCPUs", f"unable to parse reservedSystemCPUs (--reserved-cpus) "
                f"{cpus}, error: {error}")
    _reserved_memory(config.get("reservedMemory"), out)
    _linux(config, out)
    hidden, v = c.str("showHiddenMetricsForVersion"), c.version
    previous = f"{v[0]}.{v[1] - 1}"
    if hidden not in ("", previous) and v >= (1, 36):     # metrics/api/v1 from v0.36
        out.append(("showHiddenMetricsForVersion", f"invalid showHiddenMetricsForVersion: "
                    f"showHiddenMetricsForVersion: Invalid value: {ks.go_quote(hidden)}: must "
                    f"be omitted or have the value '{previous}'; only the previous minor "
                    f"version is allowed", METRICS))
    elif hidden not in ("", previous):
        out.append(("showHiddenMetricsForVersion", f"--show-hidden-metrics-for-version must "
                    f"be omitted or have the value '{previous}'. Only the previous minor "
                    f"version is allowed", "k8s.io/component-base/metrics/options.go"))
    _logging(config.get("logging"), on, out)


def _runtime(c: _Config, config: dict, on, bad, out: list) -> None:
    """Memory QoS, the runtime endpoint, system log query, container logs, podLogsDir."""
    _memory_qos(c, config, on, bad)
    if c.str("containerRuntimeEndpoint") == "":
        bad("containerRuntimeEndpoint", "the containerRuntimeEndpoint was not specified or empty")
    if c.bool("enableSystemLogQuery") and not on("NodeLogQuery"):
        bad("enableSystemLogQuery", "NodeLogQuery feature gate is required for "
            "enableSystemLogQuery")
    if c.bool("enableSystemLogQuery") and not c.bool("enableSystemLogHandler"):
        bad("enableSystemLogQuery", "enableSystemLogHandler is required for enableSystemLogQuery")
    if c.int("containerLogMaxWorkers") < 1:
        bad("containerLogMaxWorkers", "containerLogMaxWorkers must be greater than or equal to 1")
    if c.dur("containerLogMonitorInterval") < 3 * _S:
        bad("containerLogMonitorInterval", "containerLogMonitorInterval must be a positive time "
            "duration greater than or equal to 3s")
    if c.int("containerLogMaxFiles") <= 1:
        bad("containerLogMaxFiles", "containerLogMaxFiles must be greater than 1")
    _pod_logs_dir(c.str("podLogsDir"), bad)


def _shutdown(c: _Config, config: dict, on, bad) -> None:
    grace, critical = c.dur("shutdownGracePeriod"), c.dur("shutdownGracePeriodCriticalPods")
    if on("GracefulNodeShutdown"):
        if critical > grace:
            bad("shutdownGracePeriodCriticalPods", f"shutdownGracePeriodCriticalPods "
                f"{_dur(critical)} must be <= shutdownGracePeriod {_dur(grace)}")
        for name, value in (("shutdownGracePeriod", grace),
                            ("shutdownGracePeriodCriticalPods", critical)):
            if value < 0 or 0 < value < _S:
                bad(name, f"{name} {_dur(value)} must be either zero or otherwise >= 1 sec")
    elif grace > 0 or critical > 0:
        bad("shutdownGracePeriod", "specifying shutdownGracePeriod or "
            "shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown")
    by_priority = config.get("shutdownGracePeriodByPodPriority") or []
    if on("GracefulNodeShutdownBasedOnPodPriority"):
        if by_priority and (grace > 0 or critical > 0):
            bad("shutdownGracePeriodByPodPriority", "Cannot specify both "
                "shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
    elif by_priority:
        bad("shutdownGracePeriodByPodPriority", "Specifying shutdownGracePeriodByPodPriority "
            "requires feature gate GracefulNodeShutdownBasedOnPodPriority")


def _swap(swap, on, bad) -> None:
    behavior = (swap or {}).get("swapBehavior") or ""
    if on("NodeSwap"):
        if behavior not in ("", "NoSwap", "LimitedSwap"):
            bad("memorySwap.swapBehavior", f"memorySwap.swapBehavior {ks.go_quote(behavior)} "
                f"must be one of: \"\", \"LimitedSwap\" or \"NoSwap\"")
    elif behavior:
        bad("memorySwap.swapBehavior", "memorySwap.swapBehavior cannot be set when NodeSwap "
            "feature flag is disabled")


def _crash_loop(crash, on, bad) -> None:
    period = (crash or {}).get("maxContainerRestartPeriod")
    ns = ks.parse_duration(period)[0] if period is not None else None
    if on("KubeletCrashLoopBackOffMax"):
        if ns is None:
            ns = MAX_CONTAINER_BACKOFF          # defaults.go sets it with the gate on
        millis = abs(ns) // 10 ** 6 * (1 if ns >= 0 else -1)    # Duration.Milliseconds
        if not 1000 <= millis <= 300000:
            bad("crashLoopBackOff.maxContainerRestartPeriod", f"CrashLoopBackOff."
                f"MaxContainerRestartPeriod (got: {_float(ns / _S)} seconds) must be set "
                f"between 1s and 300s")
    elif ns is not None:
        bad("crashLoopBackOff.maxContainerRestartPeriod", "FeatureGate "
            "KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod "
            "must not be set")


def _enforcement(c: _Config, config: dict, bad) -> None:
    given = config.get("enforceNodeAllocatable")
    keys = ["pods"] if given is None else [str(e) for e in given if e is not None]
    for full, compressible in (("system-reserved", "system-reserved-compressible"),
                               ("kube-reserved", "kube-reserved-compressible")):
        if full in keys and compressible in keys:
            bad("enforceNodeAllocatable", f"both {ks.go_quote(full)} and "
                f"{ks.go_quote(compressible)} cannot be specified together in "
                f"enforceNodeAllocatable (--enforce-node-allocatable)")
    seen: set = set()
    for key in keys:
        if key in seen:
            bad("enforceNodeAllocatable", f"duplicated enforcements {ks.go_quote(key)} in "
                f"enforceNodeAllocatable (--enforce-node-allocatable)")
            continue
        seen.add(key)
        if key in ("system-reserved", "system-reserved-compressible"):
            if c.str("systemReservedCgroup") == "":
                bad("enforceNodeAllocatable", "systemReservedCgroup (--system-reserved-cgroup) "
                    "must be specified when \"system-reserved\" or "
                    "\"system-reserved-compressible\" included in enforceNodeAllocatable "
                    "(--enforce-node-allocatable)")
        elif key in ("kube-reserved", "kube-reserved-compressible"):
            if c.str("kubeReservedCgroup") == "":
                bad("enforceNodeAllocatable", "kubeReservedCgroup (--kube-reserved-cgroup) must "
                    "be specified when \"kube-reserved\" or \"kube-reserved-compressible\" "
                    "included in enforceNodeAllocatable (--enforce-node-allocatable)")
        elif key == "none":
            if len(keys) > 1:
                bad("enforceNodeAllocatable", "enforceNodeAllocatable (--enforce-node-"
                    "allocatable) may not contain additional enforcements when \"none\" is "
                    "specified")
            continue
        elif key != "pods":
            bad("enforceNodeAllocatable", f"option {ks.go_quote(key)} specified for "
                f"enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "
                f"\"pods\", \"system-reserved\", \"system-reserved-compressible\", "
                f"\"kube-reserved\", \"kube-reserved-compressible\" or \"none\"")
            continue
        if not c.bool("cgroupsPerQOS"):
            bad("enforceNodeAllocatable", f"cgroupsPerQOS (--cgroups-per-qos) must be set to "
                f"true when {ks.go_quote(key)} contained in enforceNodeAllocatable "
                f"(--enforce-node-allocatable)")


def _pull_credentials(c: _Config, config: dict, on, bad) -> None:
    policy = config.get("imagePullCredentialsVerificationPolicy") or ""    # its default
    # follows the gate (defaults.go): not the generated one
    allowlist = config.get("preloadedImagesVerificationAllowlist") or []
    if on("KubeletEnsureSecretPulledImages"):
        policy = policy or "NeverVerifyPreloadedImages"      # defaults.go with the gate on
        if policy not in PULL_POLICIES:
            bad("imagePullCredentialsVerificationPolicy", f"option {ks.go_quote(policy)} "
                f"specified for imagePullCredentialsVerificationPolicy. Valid options are "
                + ", ".join(ks.go_quote(p) for p in PULL_POLICIES[:3]) + " or "
                + ks.go_quote(PULL_POLICIES[3]))
        if allowlist and policy != "NeverVerifyAllowlistedImages":
            bad("preloadedImagesVerificationAllowlist", "can't set "
                "`preloadedImagesVerificationAllowlist` if "
                "`imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\"")
    else:
        if policy:
            bad("imagePullCredentialsVerificationPolicy", "`imagePullCredentialsVerification"
                "Policy` must not be set if KubeletEnsureSecretPulledImages feature gate is not "
                "enabled")
        if allowlist:
            bad("preloadedImagesVerificationAllowlist", "`preloadedImagesVerificationAllowlist` "
                "must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled")


def _reserved_memory(entries, out: list) -> None:
    """validation_reserved_memory.go: each limit's type (memory or hugepages-*), not zero,
    no NUMA node and type twice."""
    if not isinstance(entries, list):
        return
    seen: set = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        node = entry.get("numaNode") or 0
        for kind, amount in (entry.get("limits") or {}).items():
            kind = str(kind)
            if not (kind == "memory" or kind.startswith("hugepages-")):
                out.append(("reservedMemory", f"invalid configuration: the limit type "
                            f"{ks.go_quote(kind)} for NUMA node {node} is not supported, only "
                            f"[memory hugepages-<HugePageSize>] is accepted",
                            ks.RESERVED_MEMORY_VALIDATION))
            q = gq.parse_quantity(str(amount))
            if q is not None and q.value == 0:
                out.append(("reservedMemory", f"invalid configuration: reserved memory may "
                            f"not be zero for NUMA node {node} and resource "
                            f"{ks.go_quote(kind)}", ks.RESERVED_MEMORY_VALIDATION))
            if (node, kind) in seen:
                out.append(("reservedMemory", f"invalid configuration: the reserved memory "
                            f"has a duplicate value for NUMA node {node} and resource "
                            f"{ks.go_quote(kind)}", ks.RESERVED_MEMORY_VALIDATION))
            seen.add((node, kind))


def _linux(config: dict, out: list) -> None:
    """validation_linux.go on a cgroup v2 node: userNamespaces.idsPerPod (the first problem
    only, as the function returns it)."""
    ids = (config.get("userNamespaces") or {}).get("idsPerPod")
    if ids is None:
        return
    unit = 65536
    why = (f"must not be less than {unit}" if ids < unit else
           f"must be a multiple of {unit}" if ids % unit else
           f"must not be more than {2 ** 32 - 1}" if ids > 2 ** 32 - 1 else None)
    if why:
        out.append(("userNamespaces.idsPerPod", f"invalid configuration: "
                    f"userNamespaces.idsPerPod {why}", ks.VALIDATION_LINUX))


def _logging(logging, on, out: list) -> None:
    """k8s.io/component-base/logs/api/v1 Validate, for the format: one the kubelet has
    registered (text, json), json only with its feature gate."""
    fmt = (logging or {}).get("format") or "text"
    if fmt not in LOG_FORMATS:
        out.append(("logging.format", f"logging.format: Invalid value: {ks.go_quote(fmt)}: "
                    f"Unsupported log format", LOGS))
    elif LOG_FORMATS[fmt] and not on(LOG_FORMATS[fmt]):
        out.append(("logging.format", f"logging.format: Forbidden: Log format {fmt} is "
                    f"disabled, see {LOG_FORMATS[fmt]} feature", LOGS))


def _memory_qos(c: _Config, config: dict, on, bad) -> None:
    v = c.version
    factor = config.get("memoryThrottlingFactor")
    if v < (1, 37):         # before v1.37 defaulting sets it, and the rule is this one
        factor = c.defaults.get("memoryThrottlingFactor") if factor is None else factor
        if on("MemoryQoS") and factor is None:
            bad("memoryThrottlingFactor", "memoryThrottlingFactor is required when MemoryQoS "
                "feature flag is enabled")
    elif not on("MemoryQoS") and factor is not None and factor != 0.9:
        bad("memoryThrottlingFactor", "memoryThrottlingFactor must not be set when MemoryQoS "
            "feature gate is disabled")
    if factor is not None and not 0 < factor <= 1.0:
        bad("memoryThrottlingFactor", f"memoryThrottlingFactor {_float(factor)} must be greater "
            f"than 0 and less than or equal to 1.0")
    if v >= (1, 36):                        # validation.go from v1.36
        policy = config.get("memoryReservationPolicy") or "None"
        if not on("MemoryQoS") and policy == "TieredReservation":
            bad("memoryReservationPolicy", f"memoryReservationPolicy {ks.go_quote(policy)} "
                f"requires MemoryQoS feature gate to be enabled")
        if policy not in ("None", "TieredReservation"):
            bad("memoryReservationPolicy", f"option {ks.go_quote(policy)} specified for "
                f"memoryReservationPolicy. Valid options are \"None\" or \"TieredReservation\"")


def _pod_logs_dir(path: str, bad) -> None:
    import posixpath
    if path == "":
        bad("podLogsDir", "podLogsDir was not specified")
    if not path.startswith("/"):
        bad("podLogsDir", f"pod logs path {ks.go_quote(path)} must be absolute path")
    if posixpath.normpath(path) != path or path.startswith("//"):
        bad("podLogsDir", f"pod logs path {ks.go_quote(path)} must be normalized")
    if any(ord(ch) > 127 for ch in path):
        bad("podLogsDir", f"pod logs path {ks.go_quote(path)} mut contains ASCII characters only")
