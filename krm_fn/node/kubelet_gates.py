"""Feature gates as the kubelet sets them from its configuration file: which are on
(`enabled_gates`, AllAlpha / AllBeta included), which an enabled gate needs
(`dependency_problems`, from the generated dependencies of krm_fn.node.upstream), the CPU
and Topology Manager options whose gate is off (`option_problems`), and the
words of the panic v1beta1 defaulting raises when SetFromMap refuses the map
(`gate_refusal`; pkg/kubelet/apis/config/v1beta1/defaults.go,
k8s.io/component-base/featuregate/feature_gate.go).
"""
from __future__ import annotations

from krm_fn.node import kubelet_says, upstream
from krm_fn.node import options as cpu_options

GATES_DOC = "https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/"


def gate_refusal(version, error: str) -> str:
    """The quote for a featureGates entry the kubelet cannot set: v1beta1 defaulting sets
    the gates on a copy and panics when that fails (SetDefaults_KubeletConfiguration), so
    the kubelet crashes before its own SetFromMap; `error` is SetFromMap's
    (k8s.io/component-base/featuregate/feature_gate.go)."""
    return kubelet_says.says(version, "failed to merge global and in-flight "
                             "KubeletConfiguration while setting defaults, error: " + error,
                             kubelet_says.DEFAULTS)


SPECIAL_GATES = {"AllAlpha": "ALPHA", "AllBeta": "BETA"}


def enabled_gates(data, gates: dict) -> dict[str, bool]:
    """Every gate of `data` -> whether it is on with the `featureGates` map `gates`, as
    SetFromMap leaves them: the explicit value, else AllAlpha / AllBeta's for a gate of that
    stage (featuregate setUnsetAlphaGates / setUnsetBetaGates), else the default."""
    explicit = {str(g): v for g, v in gates.items() if isinstance(v, bool) and g in data.gates}
    out = {g: bool(spec["default"]) for g, spec in data.gates.items()}
    for special, stage in SPECIAL_GATES.items():
        if special in explicit:
            for g, spec in data.gates.items():
                if spec["stage"] == stage and g not in SPECIAL_GATES:
                    out[g] = explicit[special]
    out.update(explicit)
    return out


def dependency_problems(gates, enabled: dict, version) -> list[tuple[str, str]]:
    """Enabled gates whose dependencies are off (generated from pkg/features/kube_features.go
    for the versions krm_fn.node.upstream.gate_dependencies covers): the kubelet refuses
    the featureGates map ("X is enabled, but depends on features that are disabled: [Y]",
    k8s.io/component-base/featuregate/feature_gate.go), in defaulting, which panics:
    [(field, message)]."""
    deps = upstream.gate_dependencies(tuple(version))
    if not deps or not isinstance(gates, dict):
        return []
    out = []
    for gate, needs in deps.items():
        if not enabled.get(gate):
            continue
        off = [d for d in needs if not enabled.get(d)]
        if not off:
            continue
        named = gate if gate in gates else next((d for d in off if d in gates), None)
        why = f"{gate} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
        out.append((f"featureGates.{named}" if named else "featureGates",
                    f"feature gate {gate} is on but needs {', '.join(off)}, which "
                    f"{'is' if len(off) == 1 else 'are'} off: the kubelet of Kubernetes "
                    f"{upstream.version_str(version)} refuses to start"
                    f"{gate_refusal(version, why)}; set "
                    + " and ".join(f"{d}: true" for d in off) + f" or {gate}: false "
                    f"in featureGates ({GATES_DOC})"))
    return out


# option-group gates: (CPU or Topology Manager, field, alpha gate, beta gate, whole gate)
_OPTION_GATES = (
    ("cpuManagerPolicyOptions", "CPUManagerPolicyAlphaOptions", "CPUManagerPolicyBetaOptions",
     "CPUManagerPolicyOptions"),
    ("topologyManagerPolicyOptions", "TopologyManagerPolicyAlphaOptions",
     "TopologyManagerPolicyBetaOptions", "TopologyManagerPolicyOptions"),
)


def _option_stage(field: str, option: str, version) -> str | None:
    if field == "cpuManagerPolicyOptions":
        if option not in cpu_options.CPU_OPTIONS:
            return None
        return cpu_options.maturity(option, version)
    if option not in cpu_options.TOPOLOGY_OPTIONS:
        return None
    return cpu_options.topology_maturity(option, version)


def option_problems(config: dict, version, data, enabled: dict) -> list[tuple[str, str]]:
    """Options whose group gate is off on `version` (explicitly, by AllAlpha / AllBeta, or
    by default; `enabled`: enabled_gates): [(field, message)]."""
    out = []
    for field, alpha, beta, whole in _OPTION_GATES:
        opts = config.get(field)
        if not isinstance(opts, dict):
            continue
        cpu = field == "cpuManagerPolicyOptions"
        if opts and whole in data.gates and not enabled.get(whole):
            # cmd/kubelet/app/server.go run(): `%v` of a map prints its keys sorted
            said = "" if cpu else kubelet_says.says(
                version, "topology manager policy options map["
                + " ".join(f"{k}:{opts[k]}" for k in sorted(opts, key=str))
                + f"] require feature gates \"{whole}\" enabled", kubelet_says.SERVER)
            out.append((f"featureGates.{whole}", f"{field} is set but the {whole} feature "
                        f"gate is off: the kubelet of Kubernetes "
                        f"{upstream.version_str(version)} refuses every option{said}; "
                        f"remove featureGates.{whole}: false"))
            continue
        for option in opts:
            stage = _option_stage(field, str(option), version)
            gate = {cpu_options.ALPHA: alpha, cpu_options.BETA: beta}.get(stage)
            if gate and gate in data.gates and not enabled.get(gate):
                level = {cpu_options.ALPHA: "Alpha", cpu_options.BETA: "Beta"}[stage]
                quoted = kubelet_says.go_quote(str(option))
                said = kubelet_says.says(
                    version, f"new static policy error: CPU Manager Policy {level}-level "
                    f"Options not enabled, but option {quoted} provided",
                    kubelet_says.CPU_POLICY_OPTIONS) if cpu else kubelet_says.says(
                    version, f"topology manager policy {level.lower()}-level options not "
                    f"enabled, but option {quoted} provided",
                    kubelet_says.TOPOLOGY_POLICY_OPTIONS)
                out.append((f"featureGates.{gate}", f"{field} {option} is {stage} in "
                            f"Kubernetes {upstream.version_str(version)} and needs the {gate} "
                            f"feature gate, which is off: the kubelet refuses to start{said}; set "
                            f"featureGates.{gate}: true or remove the option"))
    return out
