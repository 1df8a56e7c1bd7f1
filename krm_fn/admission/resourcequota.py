"""ResourceQuota: the API server's ResourceQuota admission refuses a pod whose usage would
take its namespace above a quota's `spec.hard` ("exceeded quota").

Source: https://kubernetes.io/docs/concepts/policy/resource-quotas/ and kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go (CheckRequest),
pkg/quota/v1/evaluator/core/pods.go (PodUsageFunc and podComputeUsageHelper: `pods` and
`count/pods` (1 per pod); `requests.cpu` and its alias `cpu`, `limits.cpu`,
`requests.memory` / `memory`, `limits.memory`, `requests.ephemeral-storage` /
`ephemeral-storage`, `limits.ephemeral-storage`; `requests.hugepages-<size>` /
`hugepages-<size>`; an extended resource as `requests.<name>` only (isExtendedResourceNameForQuota,
the quota docs' "Resource quota for extended resources"); the pod's effective requests and
limits, init containers and sidecars counted as the scheduler counts them, plus the
RuntimeClass's pod overhead). Every other name of `spec.hard` is not counted for pods
(MatchingResources): `quota_names` tells a name about other objects (ignored) from one a
pod's author may mean for pods (an info).

Modelled, per ResourceQuota of the pod's namespace in the input: those resources, after
admission (injected containers included: quota admission runs after the mutating webhooks),
against `spec.hard`:

- one pod above a hard limit can never be admitted: an error;
- the workload's replicas together above it (a Deployment with N replicas needs N times one
  pod; its ReplicaSet gets FailedCreate for the rest): an error;
- when they fit, an info: other pods of the namespace use the same quota, and the render
  does not see them.

A quota counts the pod only when the pod, after admission, is in every one of its `scopes`
and matches every expression of its `scopeSelector` (quotascope.matches): a quota that does
not count it gets an info saying which scope it is not in; one whose scopes krm-fn cannot
evaluate (quotascope.problem) is said once per quota by pipeline/quota.py.
"""
from __future__ import annotations

from krm_fn import numbers, quantity
from krm_fn.admission import quotascope
from krm_fn.admission.cpumanager import peak
from krm_fn.admission.model import ERROR, INFO, AdmittedPod, Finding
from krm_fn.quantity import NANO, trunc_div

SOURCE = ("https://kubernetes.io/docs/concepts/policy/resource-quotas/; kubernetes/kubernetes "
          "staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go")
# quota resource name -> (part of the pod, resource): pods.go podResources
RESOURCES = {"requests.cpu": ("requests", "cpu"), "cpu": ("requests", "cpu"),
             "limits.cpu": ("limits", "cpu"), "requests.memory": ("requests", "memory"),
             "memory": ("requests", "memory"), "limits.memory": ("limits", "memory"),
             "requests.ephemeral-storage": ("requests", "ephemeral-storage"),
             "ephemeral-storage": ("requests", "ephemeral-storage"),
             "limits.ephemeral-storage": ("limits", "ephemeral-storage"),
             "pods": (None, "pods"), "count/pods": (None, "count/pods")}
_NATIVE = "kubernetes.io/"
# k8s.io/api resource.ResourceDeviceClassPrefix: DRA's implicit extended resources
_DEVICE_CLASS = "deviceclass.resource.kubernetes.io/"
# quota names about other objects than pods: helpers.go standardQuotaResources, the object
# counts (count/<resource>[.<group>]) and storage classes' <class>.storageclass.storage.k8s.io/
_OTHER = ("requests.storage", "resourcequotas", "services", "replicationcontrollers",
          "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
          "services.loadbalancers")


def counted(key: str) -> tuple | None:
    """(part of the pod, resource) that pods.go counts for quota resource `key`
    (MatchingResources, podComputeUsageHelper), None when the pod evaluator does not count
    it: RESOURCES; `hugepages-<size>` and `requests.hugepages-<size>` (podResourcePrefixes);
    `requests.<extended resource>` (isExtendedResourceNameForQuota: a name with a domain
    outside kubernetes.io; the pod's requests of it, helper.IsExtendedResourceName)."""
    if key in RESOURCES:
        return RESOURCES[key]
    if key.startswith("hugepages-"):
        return "requests", key
    if key.startswith("requests.hugepages-"):
        return "requests", key[len("requests."):]
    if key.startswith("requests.") and "/" in key:
        res = key[len("requests."):]
        if _NATIVE not in res:
            return "requests", res
    return None


def quota_names(quota: dict) -> tuple:
    """([names of `quota`'s `spec.hard` the API server does not count pods against but a
    pod's author may mean for them (an extended resource without `requests.`, a limits.
    of hugepages), [names krm-fn cannot tell for (DRA's
    requests.deviceclass.resource.kubernetes.io/<class>)]); names about other objects
    (_OTHER, count/<resource> but count/pods, storage classes) are in neither."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), dict) else {}
    hard = spec.get("hard") if isinstance(spec.get("hard"), dict) else {}
    missed, unknown = [], []
    for key in map(str, hard):
        if key.startswith("requests." + _DEVICE_CLASS):
            unknown.append(key)
        elif (counted(key) is not None or key in _OTHER or key.startswith("count/")
              or ".storageclass.storage.k8s.io/" in key):
            continue
        else:
            missed.append(key)
    return missed, unknown


def replicas(obj: dict, path: str) -> int:
    """Replicas of the pod at field path `path` of workload `obj` (plain data):
    `spec.replicas` (default 1; read as the API server reads it, numbers.api_int; 1 where
    it cannot be used: count_problem says why) for a pod template at `spec.template.spec`,
    else 1."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if path != "spec.template.spec" or not isinstance(spec, dict):
        return 1
    return _count(spec.get("replicas"), 1)


def _usage(pod: AdmittedPod) -> dict:
    """{quota resource: one pod's usage} in nano-units (int: nanocores for cpu, NANO per
    byte, pod or device otherwise, as `_hard` reads `spec.hard`, which may be fractional:
    `pods: 1500m`), as pods.go PodUsageFunc counts it (component-helpers resource
    PodRequests / PodLimits): the containers' peak (init containers and sidecars as the
    scheduler counts them), the pod-level `spec.resources` in its place where set
    (PodLevelResources), plus the pod overhead: on every request, on a limit only where the
    pod has one (a non-zero limit). RESOURCES, and the hugepages and extended resources the
    pod requests (`counted`); a quota resource not in it is 0 (`used`)."""
    over = pod.overhead or {}
    keys = dict(RESOURCES)
    for level in [c.requests for c in pod.containers] + [pod.pod_requests or {}, over]:
        for res in level:
            if res.startswith("hugepages-"):
                keys[res] = keys["requests." + res] = ("requests", res)
            elif "/" in res and _NATIVE not in res and not res.startswith("requests."):
                keys["requests." + res] = ("requests", res)
    out = {}
    for key, (part, res) in keys.items():
        if part is None:
            out[key] = NANO
            continue
        level = pod.pod_requests if part == "requests" else pod.pod_limits
        if level and res in level:
            amount = level[res]
        else:
            amount = peak([(c.role, getattr(c, part).get(res, 0)) for c in pod.containers])
        extra = over.get(res, 0) if part == "requests" or amount else 0
        out[key] = (amount + extra if res == "cpu"
                    else (int(amount) + int(extra)) * NANO)
    return out


# Kinds whose pod count krm-fn knows from the manifest: {(group, kind): count field}
# (spec.replicas, default 1; a Job's spec.parallelism, default 1, at most its completions)
COUNTED = {("", "Pod"): None, ("", "ReplicationController"): "replicas",
           ("apps", "Deployment"): "replicas", ("apps", "ReplicaSet"): "replicas",
           ("apps", "StatefulSet"): "replicas", ("argoproj.io", "Rollout"): "replicas",
           ("batch", "Job"): "parallelism"}
# Kinds whose pod count the manifest does not give: why (for the info that says so)
UNCOUNTED = {("apps", "DaemonSet"): "a DaemonSet runs one pod on every node it selects, "
                                    "and the render does not list the nodes",
             ("batch", "CronJob"): "a CronJob's pods exist only while a Job it started runs",
             ("", "PodTemplate"): None}


def pod_count(obj: dict) -> tuple:
    """(pods the workload `obj` (plain data) keeps in its namespace at once, None when the
    manifest does not say; why not, or None): COUNTED kinds from their count field;
    PodTemplate (0, None): it creates no pod; others (None, why)."""
    from krm_fn.workloads import group_of
    key = (group_of(obj.get("apiVersion")), obj.get("kind"))
    if key in UNCOUNTED and UNCOUNTED[key] is None:
        return 0, None
    if key not in COUNTED:
        return None, UNCOUNTED.get(key, f"its controller decides how many pods a "
                                        f"{key[1]} runs")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    field_name = COUNTED[key]
    if field_name is None:
        return 1, None
    n = _count(spec.get(field_name), 1)
    if field_name == "parallelism" and spec.get("completions") is not None:
        n = min(n, _count(spec.get("completions"), n))
    return n, None


def _count(value, default: int) -> int:
    """The count field's value as the API server reads it (numbers.api_int), `default`
    when it is absent or cannot be used (count_problem reports that)."""
    if value is None:
        return default
    got, _ = numbers.api_int(value)
    return got if got is not None and got >= 0 else default


def count_problem(obj: dict) -> tuple[str, str] | None:
    """(field path, message) of the first count field of a COUNTED workload `obj` whose
    value krm-fn cannot take as the API server reads it (numbers.api_int: `replicas: 010`,
    8 to the API server and 10 in YAML 1.2; `1.5`; a negative count); None when every one
    reads as one whole number."""
    from krm_fn.workloads import group_of
    field_name = COUNTED.get((group_of(obj.get("apiVersion")), obj.get("kind")))
    spec = obj.get("spec")
    if field_name is None or not isinstance(spec, dict):
        return None
    for name in (field_name, "completions") if field_name == "parallelism" else (field_name,):
        value = spec.get(name)
        if value is None:
            continue
        got, why = numbers.api_int(value)
        if why is None and got < 0:
            why = f"{got} is negative: the API server refuses it"
        if why is not None:
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            return (f"spec.{name}", f"{obj.get('kind')} {meta.get('name')} spec.{name}: {why}")
    return None


def _hard(quota: dict) -> dict:
    """{quota resource: hard amount in nano-units (Quantity.nanos, as `_usage`)} of the
    modelled resources of `quota`."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), dict) else {}
    hard = spec.get("hard") if isinstance(spec.get("hard"), dict) else {}
    out = {}
    for key, text in hard.items():
        if not isinstance(key, str) or counted(key) is None:
            continue
        try:
            if key in ("pods", "count/pods"):
                q = quantity.parse_cpu(str(text)).nanos
            elif counted(key)[1] == "cpu":
                q = quantity.parse_cpu(str(text)).nanos
            else:
                q = quantity.parse_memory(str(text)).nanos
        except (quantity.QuantityError, TypeError):
            continue
        out[key] = q
    return out


def modelled(quota: dict) -> bool:
    """Whether krm-fn counts pods against `quota` (plain data): a `spec.hard` of the
    resources it models (RESOURCES) and scopes it can evaluate (quotascope.problem)."""
    return bool(_hard(quota)) and quotascope.problem(quota) is None


# pods.go validationSet: the quota resources every container must state when a quota
# that counts the pod limits them
_EXPLICIT = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
             "limits.memory")


def unstated(pod: AdmittedPod, quota: dict) -> str | None:
    """pods.go podEvaluator.Constraints for `quota` (which counts `pod`): "requests.cpu for:
    app,setup; limits.memory for: app" for each resource of its `spec.hard` among
    `_EXPLICIT` that a container (init containers and injected ones included) does not
    state (a request of cpu gives cpu and requests.cpu, a limit limits.cpu; a limit without
    a request gives the request too); None when every container states them, or the pod
    sets pod-level cpu or memory resources (PodLevelResources)."""
    spec = quota.get("spec") if isinstance(quota.get("spec"), dict) else {}
    hard = spec.get("hard") if isinstance(spec.get("hard"), dict) else {}
    required = sorted(str(k) for k in hard if str(k) in _EXPLICIT)
    if not required or any(r in (pod.pod_requests or {}) or r in (pod.pod_limits or {})
                           for r in ("cpu", "memory")):
        return None
    missing: dict = {}
    for c in pod.containers:
        have = {"pods"}
        for res in ("cpu", "memory"):
            if res in c.requests:
                have.update((res, f"requests.{res}"))
            if res in c.limits:
                have.add(f"limits.{res}")
        for r in required:
            if r not in have:
                missing.setdefault(r, set()).add(c.name)
    if not missing:
        return None
    return "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


def unstated_message(name: str, namespace: str, what: str) -> str:
    """The error of a pod `unstated` finds for ResourceQuota `name`."""
    return (f"ResourceQuota {name} of namespace {namespace or 'default'}: every pod is "
            f"refused (\"failed quota: {name}: must specify {what}\"): a quota that counts the "
            f"pod and limits cpu or memory needs every container to state them; set the "
            f"requests and limits, or pod-level resources ({SOURCE}, "
            f"pkg/quota/v1/evaluator/core/pods.go Constraints)")


def _show(key: str, v: int) -> str:
    """Amount `v` (nano-units, as `_usage`) of quota resource `key`, for a message."""
    res = counted(key)[1]
    if res == "cpu":
        return quantity.format_cpu_rounded(v)
    if res in ("memory", "ephemeral-storage") or res.startswith("hugepages-"):
        return quantity.format_bytes(trunc_div(v, NANO))
    return str(trunc_div(v, NANO))      # pods, count/pods, extended resources: whole numbers


def used(use: dict, key: str):
    """One pod's usage (`_usage`) of quota resource `key`: 0 when the pod has none."""
    return use.get(key, 0)


def _list(keys: list, values: dict) -> str:
    return ",".join(f"{k}={_show(k, used(values, k))}" for k in keys)


def refused(pod: AdmittedPod, quotas: list, count: int = 1) -> tuple:
    """Findings (rule `resourcequota`) for each ResourceQuota of `quotas` (plain objects
    of the pod's namespace) that counts the pod (quotascope.matches): ERROR when one pod,
    or `count` replicas of it, use more than its `spec.hard`; INFO when they fit (other
    pods of the namespace count too). INFO for a quota that does not count the pod, and
    for one krm-fn cannot tell it for (the pod is not checked against it)."""
    out: list = []
    if not quotas:
        return tuple(out)
    use = _usage(pod)
    for quota in quotas:
        if not modelled(quota):
            continue        # pipeline/quota.py says why, once per quota
        hard = _hard(quota)
        name = (quota.get("metadata") or {}).get("name")
        where = f"ResourceQuota {name} of namespace {pod.namespace or 'default'}"
        counts, why = quotascope.matches(quota, pod)
        if counts is None:
            out.append(Finding(INFO, f"{where}: krm-fn cannot tell whether it counts this "
                               f"pod ({why}), so it does not check the pod against it; the "
                               f"API server does ({quotascope.SOURCE})", "resourcequota",
                               pod.path))
            continue
        if why:
            out.append(Finding(INFO, f"{where} {'counts' if counts else 'does not count'} "
                               f"this pod: {why} ({quotascope.SOURCE})", "resourcequota",
                               pod.path))
        if not counts:
            continue
        what = unstated(pod, quota)
        if what is not None:
            out.append(Finding(ERROR, unstated_message(str(name), pod.namespace, what),
                               "resourcequota", pod.path))
            continue
        keys = sorted(hard)
        over = [k for k in keys if used(use, k) > hard[k]]
        total = {k: used(use, k) * count for k in keys}
        if over:
            out.append(Finding(ERROR, f"{where}: one pod needs {_list(over, use)}, above its "
                               f"hard {_list(over, hard)}: the API server refuses every pod "
                               f"(\"exceeded quota: {name}, requested: {_list(over, use)}, "
                               f"..., limited: {_list(over, hard)}\"), whatever else runs in "
                               f"the namespace; raise the quota or lower the resources "
                               f"({SOURCE})", "resourcequota", pod.path))
            continue
        many = [k for k in keys if total[k] > hard[k]]
        if many:
            fit = min((int(hard[k] // used(use, k)) for k in keys if used(use, k)),
                      default=0)
            out.append(Finding(ERROR, f"{where}: {count} replicas need {_list(many, total)}, "
                               f"above its hard {_list(many, hard)}: the API server refuses "
                               f"the pods after the first {fit} (\"exceeded quota\"; the "
                               f"ReplicaSet reports FailedCreate), before counting the other "
                               f"pods of the namespace; raise the quota, lower the replicas "
                               f"or the resources ({SOURCE})", "resourcequota", pod.path))
            continue
        out.append(Finding(INFO, f"{where}: {count} replica{'s' if count != 1 else ''} use "
                           f"{_list(keys, total)} of its hard {_list(keys, hard)}; the other "
                           f"pods of the namespace count against it too, and krm-fn does not "
                           f"see them ({SOURCE})", "resourcequota", pod.path))
    return tuple(out)
