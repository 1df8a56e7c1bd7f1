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
# the PriorityClasses every API server creates itself (pkg/apis/scheduling/types.go
# SystemClusterCritical, SystemNodeCritical; pkg/registry/scheduling/rest
# storage_scheduling.go adds them at start-up)
SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")


def cluster_class(spec: dict, classes: dict, at: str) -> tuple:
    """(DEPENDS Finding,) when the pod spec `spec` (at `at`) names a PriorityClass that is
    neither in `classes` (the input's, {name: PriorityClass}) nor one the API server
    creates itself (SYSTEM_CLASSES), else (): the Priority admission plugin refuses the
    pod unless the cluster has it (resolvePriorityClass: "no PriorityClass with name %v
    was found"), and its value is not known here."""
    name = spec.get("priorityClassName") if isinstance(spec, dict) else None
    if not name or str(name) in SYSTEM_CLASSES or isinstance(classes.get(str(name)), dict):
        return ()
    return (Finding(DEPENDS, f"PriorityClass {name} is not in the input: the API server "
                             f"refuses the pod unless the cluster has it (no PriorityClass "
                             f"with name {name} was found), and krm-fn does not know its "
                             f"value (which pods preempt which, the quotas whose "
                             f"scopeSelector names it); add it to the input to have it "
                             f"judged ({SOURCE})", "validation", f"{at}.priorityClassName"),)


def default_class(classes: dict) -> tuple[str, dict] | None:
    """(name, PriorityClass) of the globalDefault PriorityClass of `classes` ({name:
    PriorityClass, plain data}), the lowest `value` among several (getDefaultPriorityClass);
    None when there is none."""
    best = None
    for name, pc in classes.items():
        if not isinstance(pc, dict) or str(pc.get("globalDefault")).lower() != "true":
            continue
        value = numbers.api_int(pc.get("value", 0))[0] or 0
        if best is None or value < best[0]:
            best = (value, name, pc)
    return None if best is None else (best[1], best[2])


def refusals(spec: dict, classes: dict, at: str) -> tuple:
    """Findings for the pod spec `spec` (plain data) whose `priority` or `preemptionPolicy`
    the Priority admission plugin refuses, given the input's PriorityClasses `classes`
    ({name: PriorityClass}); `at` is the pod spec's field path."""
    if not isinstance(spec, dict) or (spec.get("priority") is None
                                      and spec.get("preemptionPolicy") is None):
        return ()
    name = spec.get("priorityClassName")
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
