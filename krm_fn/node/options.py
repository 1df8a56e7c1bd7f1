"""Static CPU Manager policy options (`cpuManagerPolicyOptions`) as data, and their check.

Source:
https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/
(KEPs 2625, 2902, 3327, 4176, 4540, 4800; kubelet
pkg/kubelet/cm/cpumanager/policy_options.go). The kubelet checks every key it is given
against the alpha/beta/stable sets of its version *before* parsing the value, so an alpha
option needs the `CPUManagerPolicyAlphaOptions` gate even when set to "false"; beta options
need `CPUManagerPolicyBetaOptions`, which is on by default in every supported version and is
never written; stable options skip the gate check. Incompatible combinations are checked on
the parsed values, so only options set to "true" take part in them. The maturity table covers
exactly the supported Kubernetes minors (krm_fn.node.upstream.VERSIONS: the generated data
modules present) and is tested against the option sets generated from each one's
policy_options.go (krm_fn.node.upstream, `policy_options`).
"""
from __future__ import annotations

from krm_fn.node.upstream import VERSIONS, version_str

ALPHA, BETA, GA = "alpha", "beta", "ga"

ALPHA_GATE = "CPUManagerPolicyAlphaOptions"

# option -> (source, maturity on each supported minor, in VERSIONS order (oldest first);
# None = the option does not exist there). Adding a minor's data and dropping the oldest
# (docs/kubelet-data.md) adds a column here and drops the first:
# tests/node/test_kubelet_data.py checks every column against that minor's policy_options.go.
CPU_OPTIONS: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "full-pcpus-only": ("KEP-2625", (GA, GA, GA)),
    "distribute-cpus-across-numa": ("KEP-2902", (BETA, BETA, BETA)),
    "align-by-socket": ("KEP-3327", (ALPHA, ALPHA, ALPHA)),
    "distribute-cpus-across-cores": ("KEP-4176", (ALPHA, ALPHA, ALPHA)),
    "strict-cpu-reservation": ("KEP-4540", (GA, GA, GA)),
    "prefer-align-cpus-by-uncorecache": ("KEP-4800", (BETA, GA, GA)),
}


# Pairs of options that stop the kubelet at start-up when both are "true" (kubelet
# pkg/kubelet/cm/cpumanager/policy_options.go).
FORBIDDEN_PAIRS: tuple[tuple[str, str], ...] = (
    ("full-pcpus-only", "distribute-cpus-across-cores"),
    ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
)

# option -> topologyManagerPolicy values it cannot be combined with (policy_options.go).
FORBIDDEN_WITH_TOPOLOGY_POLICY: dict[str, tuple[str, ...]] = {
    "align-by-socket": ("single-numa-node",),
}


def maturity(option: str, version: tuple[int, int]) -> str | None:
    """Maturity of `option` on Kubernetes `version` (major, minor): "alpha", "beta", "ga",
    or None when the option does not exist there. Raises KeyError for an option not in
    CPU_OPTIONS and ValueError for a version outside VERSIONS (the config refuses those)."""
    if tuple(version) not in VERSIONS:
        raise ValueError(f"no CPU Manager option data for Kubernetes {version_str(version)} "
                         f"(supported: {', '.join(map(version_str, VERSIONS))})")
    return CPU_OPTIONS[option][1][VERSIONS.index(tuple(version))]


def check_cpu_options(options: dict[str, str], version: tuple[int, int],
                      topology_policy: str) -> tuple[dict[str, bool], list[str]]:
    """Check `cpuManagerPolicyOptions` for a static-policy kubelet of `version`.

    `options` maps option name -> "true"/"false"; `version` is (major, minor);
    `topology_policy` is the `topologyManagerPolicy` value. Returns `(gates, problems)`:
    `gates` is the `featureGates` map to emit (`{"CPUManagerPolicyAlphaOptions": True}` when
    any listed option is alpha on `version`, else empty; beta/GA gates are never written,
    https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/);
    `problems` are error messages, one per problem: an unknown
    option, an option that does not exist on `version`, a value that is not "true"/"false",
    a forbidden pair of options set to "true", or an option set to "true" with a forbidden
    topology policy. `version` is one of VERSIONS. Never raises for bad input.
    """
    gates: dict[str, bool] = {}
    problems: list[str] = []
    vs = version_str(version)
    from krm_fn.node import kubelet_says as ks

    def said(message: str) -> str:        # NewStaticPolicy's error, as NewManager wraps it
        return ks.says(version, f"new static policy error: {message}", ks.CPU_POLICY_OPTIONS)
    for name, value in options.items():
        if value not in ("true", "false"):
            error = ks.parse_bool(value)[1] if name in CPU_OPTIONS else None
            quote = said(f"bad value for option {ks.go_quote(name)}: {error}") if error else ""
            problems.append(f"cpuManagerPolicyOptions.{name} must be \"true\" or \"false\", "
                            f"found {value!r}"
                            + (f"; the kubelet refuses to start{quote}" if quote else ""))
        if name not in CPU_OPTIONS:
            problems.append(f"unknown CPU Manager policy option {name!r} (known: "
                            f"{', '.join(CPU_OPTIONS)}); the kubelet refuses to start"
                            + said(f"unknown CPU Manager Policy option: {ks.go_quote(name)}"))
            continue
        m = maturity(name, version)
        if m is None:
            first = next(v for v in VERSIONS if maturity(name, v) is not None)
            problems.append(f"CPU Manager policy option {name!r} does not exist in Kubernetes "
                            f"{vs} (added in {version_str(first)}, {CPU_OPTIONS[name][0]}); the "
                            f"kubelet refuses to start with it")
        elif m == ALPHA:
            gates[ALPHA_GATE] = True
    on = {k for k, v in options.items() if v == "true"}
    for a, b in FORBIDDEN_PAIRS:
        if a in on and b in on:
            problems.append(f"CPU Manager policy options {a!r} and {b!r} cannot both be "
                            f"\"true\": the kubelet refuses to start" + said(
                                f"static policy options {a} and {b} can not be used at the "
                                f"same time") + "; remove one of them")
    for name, policies in FORBIDDEN_WITH_TOPOLOGY_POLICY.items():
        if name in on and topology_policy in policies:
            problems.append(f"CPU Manager policy option {name!r} cannot be used with "
                            f"topologyManagerPolicy {topology_policy!r}: the kubelet refuses "
                            f"to start" + said(f"Topolgy manager {topology_policy} policy is "
                                               f"incompatible with CPUManager {name} policy "
                                               f"option") +
                            "; remove the option or choose another policy")
    return gates, problems


# Topology Manager policy options (`topologyManagerPolicyOptions`,
# https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/; kubelet
# pkg/kubelet/cm/topologymanager/policy_options.go). Maturity by release, from the KEPs'
# milestones: option -> (source, alpha since, beta since, GA since; None = skipped stage).
# Beta options need `TopologyManagerPolicyBetaOptions` (on by default, never written);
# alpha ones need `TopologyManagerPolicyAlphaOptions: true`.
TOPOLOGY_ALPHA_GATE = "TopologyManagerPolicyAlphaOptions"
TOPOLOGY_OPTIONS: dict[str, tuple[str, tuple[int, int] | None, tuple[int, int] | None,
                                  tuple[int, int] | None]] = {
    "prefer-closest-numa-nodes": ("KEP-3545", (1, 26), (1, 28), (1, 32)),
    "max-allowable-numa-nodes": ("KEP-4622", None, (1, 31), (1, 35)),
}
# prefer-closest-numa-nodes only changes how best-effort and restricted pick among
# multi-NUMA hints (KEP-3545).
PREFER_CLOSEST_POLICIES = ("best-effort", "restricted")
# max-allowable-numa-nodes: the kubelet rejects values below its built-in limit (KEP-4622).
MAX_ALLOWABLE_NUMA_MIN = 8


def topology_maturity(option: str, version: tuple[int, int]) -> str | None:
    """Maturity of Topology Manager policy option `option` on Kubernetes `version`
    (major, minor): "alpha", "beta", "ga", or None when the option does not exist there.
    Raises KeyError for an option not in TOPOLOGY_OPTIONS."""
    _, alpha, beta, ga = TOPOLOGY_OPTIONS[option]
    v = tuple(version)
    for since, stage in ((ga, GA), (beta, BETA), (alpha, ALPHA)):
        if since is not None and v >= since:
            return stage
    return None


def check_topology_options(options: dict[str, str], version: tuple[int, int],
                           policy: str) -> tuple[dict[str, bool], list[str], list[str]]:
    """Check `topologyManagerPolicyOptions` for a kubelet of `version`.

    `options` maps option name -> value (strings); `policy` is `topologyManagerPolicy`.
    Returns `(gates, problems, notes)`: `gates` the featureGates to emit
    (`{"TopologyManagerPolicyAlphaOptions": True}` when a listed option is alpha on
    `version`); `problems` error messages (unknown option, option not in this release,
    `prefer-closest-numa-nodes` not "true"/"false", `max-allowable-numa-nodes` not a whole
    number >= 8); `notes` warning messages (an option that has no effect with `policy`).
    Source:
    https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/,
    KEP-3545, KEP-4622. Never raises for bad input."""
    gates: dict[str, bool] = {}
    problems: list[str] = []
    notes: list[str] = []
    vs = version_str(version)
    from krm_fn.node import kubelet_says as ks

    def said(message: str) -> str:     # NewPolicyOptions runs only for a policy but none
        return ks.says(version, message, ks.TOPOLOGY_POLICY_OPTIONS) if policy != "none" \
            else ""
    for name, value in options.items():
        if name not in TOPOLOGY_OPTIONS:
            problems.append(f"unknown Topology Manager policy option {name!r} (known: "
                            f"{', '.join(TOPOLOGY_OPTIONS)}); the kubelet refuses to start"
                            + said(f"unknown Topology Manager Policy option: "
                                   f"{ks.go_quote(name)}"))
            continue
        source, alpha, beta, _ = TOPOLOGY_OPTIONS[name]
        stage = topology_maturity(name, version)
        if stage is None:
            first = alpha or beta
            problems.append(f"Topology Manager policy option {name!r} does not exist in "
                            f"Kubernetes {vs} (added in {version_str(first)}, {source}); the "
                            f"kubelet refuses to start with it")
        elif stage == ALPHA:
            gates[TOPOLOGY_ALPHA_GATE] = True
        if name == "prefer-closest-numa-nodes":
            if value not in ("true", "false"):
                error = ks.parse_bool(value)[1]
                quote = said(f"bad value for option {ks.go_quote(name)}: {error}") \
                    if error else ""
                problems.append(f"topologyManagerPolicyOptions.{name} must be \"true\" or "
                                f"\"false\", found {value!r}"
                                + (f"; the kubelet refuses to start{quote}" if quote else ""))
            elif value == "true" and policy not in PREFER_CLOSEST_POLICIES:
                notes.append(f"topologyManagerPolicyOptions.{name} has no effect with "
                             f"topologyManagerPolicy {policy!r}: it only changes how "
                             f"best-effort and restricted choose among NUMA nodes")
        elif name == "max-allowable-numa-nodes":
            if not (value.isascii() and value.isdigit() and len(value) <= 5) \
                    or int(value) < MAX_ALLOWABLE_NUMA_MIN:
                number, error = ks.atoi(value)
                quote = (said(f"unable to convert policy option to integer "
                              f"{ks.go_quote(name)}: {error}") if error else
                         said(f"the minimum value of {ks.go_quote(name)} should not be less "
                              f"than {MAX_ALLOWABLE_NUMA_MIN}")
                         if number < MAX_ALLOWABLE_NUMA_MIN else "")
                problems.append(f"topologyManagerPolicyOptions.{name} must be a whole number "
                                f"from {MAX_ALLOWABLE_NUMA_MIN} to 99999, found {value[:20]!r}; "
                                f"the kubelet refuses values below {MAX_ALLOWABLE_NUMA_MIN}"
                                + quote)
    return gates, problems, notes
