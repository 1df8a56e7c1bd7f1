"""The Priority admission plugin: a pod that writes `spec.priority` or
`spec.preemptionPolicy` other than what its PriorityClass gives is refused.

plugin/pkg/admission/priority/admission.go (admitPod) computes the pod's priority and
preemption policy from its PriorityClass (`priorityClassName`, else the cluster's
globalDefault one, the lowest `value` among several; with none, 0 and
PreemptLowerPriority) and forbids a pod whose spec already holds other values: "the integer
value of priority (5) must not be provided in pod spec; priority admission controller
computed 1000 from the given PriorityClass name". A workload's API object is accepted (the
plugin checks pods only), so its controller's pods fail to be created (FailedCreate) and
never run.

Judged from the PriorityClasses of the input: an error when the class the plugin uses is
there; a class named but not in the input is the cluster's, whose value krm-fn does not
know (an info that the plugin refuses the pod unless the cluster has it: cluster_class);
with no class named and no globalDefault one in the input, a priority other than 0 is
refused unless the cluster has a globalDefault class of that value (a warning).
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.admission.model import DEPENDS, ERROR, WARNING, Finding

SOURCE = ("https://github.com/kubernetes/kubernetes/blob/master/plugin/pkg/admission/priority/"
          "admission.go")
PREEMPT_LOWER = "PreemptLowerPriority"      # PriorityClass.preemptionPolicy's default


def cluster_class(spec: dict, classes: dict, at: str) -> tuple:
    """(DEPENDS Finding,) when the pod spec `spec` (at `at`) names a PriorityClass that is
    neither in `classes` (the input's, {name: PriorityClass}) nor one the API server
    creates itself (SYSTEM), else (): the Priority admission plugin refuses the
    pod unless the cluster has it (resolvePriorityClass: "no PriorityClass with name %v
    was found"), and its value is not known here."""
    name = spec.get("priorityClassName") if isinstance(spec, dict) else None
    if not name or str(name) in SYSTEM or isinstance(classes.get(str(name)), dict):
        return ()
    return (Finding(DEPENDS, f"PriorityClass {name} is not in the input: the API server "
                             f"refuses the pod unless the cluster has it (no PriorityClass "
                             f"with name {name} was found), and krm-fn does not know its "
                             f"value (which pods preempt which, the quotas whose "
                             f"scopeSelector names it); add it to the input to have it "
                             f"judged ({SOURCE})", "validation", f"{at}.priorityClassName"),)


# pkg/apis/scheduling/types.go HighestUserDefinablePriority, and the system classes every
# API server creates at start-up (SystemPriorityClasses: name, value; neither is
# globalDefault; pkg/registry/scheduling/rest storage_scheduling.go)
HIGHEST_USER = 1000000000
SYSTEM = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
VALIDATION = ("kubernetes/kubernetes pkg/apis/scheduling/validation/validation.go "
              "ValidatePriorityClass")


def class_errors(name: str, pc: dict) -> list[str]:
    """The API server's errors for PriorityClass `name` (`pc`, plain data), as
    ValidatePriorityClass writes them: a `system-` name that is not one of the system
    classes with its value (and no globalDefault), a `value` above HIGHEST_USER for any
    other name, a `preemptionPolicy` other than PreemptLowerPriority or Never. [] when it
    accepts the object (its metadata is not checked here)."""
    out = []
    value = numbers.api_int(pc.get("value", 0))[0] or 0
    if name.startswith("system-"):
        default = str(pc.get("globalDefault")).lower() == "true"
        if SYSTEM.get(name) != value or default:
            why = (f"{name} is not a known system priority class" if name not in SYSTEM
                   else f"{name} is a known system priority class, but its value or "
                        f"globalDefault differs")
            out.append("metadata.name: Forbidden: priority class names with 'system-' "
                       f"prefix are reserved for system use only. error: {why}")
    elif value > HIGHEST_USER:
        out.append(f"value: Forbidden: maximum allowed value of a user defined priority is "
                   f"{HIGHEST_USER}")
    policy = pc.get("preemptionPolicy")
    if policy is not None and str(policy) not in (PREEMPT_LOWER, "Never"):
        out.append(f'preemptionPolicy: Unsupported value: "{policy}": supported values: '
                   f'"PreemptLowerPriority", "Never"')
    return out


def default_class(classes: dict) -> tuple[str, dict] | None:
    """(name, PriorityClass) of the globalDefault PriorityClass of `classes` ({name:
    PriorityClass, plain data}), the lowest `value` among several (getDefaultPriorityClass);
    None when there is none. A class the API server refuses to create (class_errors) is
    none."""
    best = None
    for name, pc in classes.items():
        if not isinstance(pc, dict) or str(pc.get("globalDefault")).lower() != "true" or \
                class_errors(str(name), pc):
            continue
        value = numbers.api_int(pc.get("value", 0))[0] or 0
        if best is None or value < best[0]:
            best = (value, name, pc)
    return None if best is None else (best[1], best[2])


def refusals(spec: dict, classes: dict, at: str) -> tuple:
    """Findings for the pod spec `spec` (plain data) whose `priority` or `preemptionPolicy`
    the Priority admission plugin refuses, given the input's PriorityClasses `classes`
    ({name: PriorityClass}); `at` is the pod spec's field path. A class of the input the
    pod names that the API server refuses to create (class_errors) does not exist, so the
    plugin refuses the pod ("no PriorityClass with name high was found")."""
    if not isinstance(spec, dict):
        return ()
    name = spec.get("priorityClassName")
    named = classes.get(str(name)) if name else None
    bad = class_errors(str(name), named) if isinstance(named, dict) else []
    if bad:
        said = bad[0] if len(bad) == 1 else "[" + ", ".join(bad) + "]"
        return (Finding(ERROR, f"the API server refuses PriorityClass {name} "
                               f"(PriorityClass.scheduling.k8s.io \"{name}\" is invalid: "
                               f"{said}): it is never created, so the Priority admission "
                               f"plugin refuses the pod (no PriorityClass with name {name} was "
                               f"found) unless the cluster holds one of that name already; fix "
                               f"the PriorityClass ({VALIDATION}; {SOURCE})", "validation",
                        f"{at}.priorityClassName"),)
    if spec.get("priority") is None and spec.get("preemptionPolicy") is None:
        return ()
    if name:
        pc = classes.get(str(name))
        if not isinstance(pc, dict):
            return ()                   # the cluster's class: its value is not known here
        how = f"PriorityClass {name}"
    else:
        found = default_class(classes)
        pc = found[1] if found else None
        how = (f"the globalDefault PriorityClass {found[0]}" if found else
               "no PriorityClass (none is named, and the input holds no globalDefault one)")
    value = numbers.api_int(pc.get("value", 0))[0] if pc is not None else 0
    policy = str(pc.get("preemptionPolicy") or PREEMPT_LOWER) if pc is not None \
        else PREEMPT_LOWER
    out = []
    given = numbers.api_int(spec.get("priority"))[0] if spec.get("priority") is not None \
        else None
    if given is not None and value is not None and given != value:
        out.append(_refused(pc is not None, f"the integer value of priority ({given})", value,
                            "computes it", how, f"value {given}", "priority", at))
    own = spec.get("preemptionPolicy")
    if own is not None and str(own) != policy:
        out.append(_refused(pc is not None, f"the string value of PreemptionPolicy ({own})",
                            policy, "takes it", how, f"preemptionPolicy {own}",
                            "preemptionPolicy", at))
    return tuple(out)


def _refused(known: bool, given: str, computed, verb: str, how: str, unless: str,
             field: str, at: str) -> Finding:
    """The plugin's refusal of pod spec field `field` (`given`: its value as the plugin
    names it; `computed`: what the plugin computes from `how`); an ERROR when the class is
    `known` (in the input), else a WARNING: the cluster may have a globalDefault class with
    the pod's value (`unless`)."""
    return Finding(
        ERROR if known else WARNING,
        f"{given} must not be provided in pod spec; priority admission controller computed "
        f"{computed} from the given PriorityClass name: the Priority admission plugin refuses "
        f"every pod of the workload, which {verb} from {how}"
        + ("" if known else f" unless the cluster has a globalDefault class of {unless}")
        + f" ({SOURCE}); remove spec.{field}", "validation", f"{at}.{field}")
