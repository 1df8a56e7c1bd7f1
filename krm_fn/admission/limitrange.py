"""LimitRange validation: the API server refuses a pod whose containers (injected ones
included: the LimitRanger plugin validates after the mutating webhooks) break a
LimitRange of its namespace.

Source: kubernetes/kubernetes plugin/pkg/admission/limitranger/admission.go
(`PodValidateLimitFunc`, `minConstraint`, `maxConstraint`, `limitRequestRatioConstraint`),
https://kubernetes.io/docs/concepts/policy/limit-range/. Per item of
`spec.limits`:

- `type: Container`: each container's (init containers included) request of a resource in
  `min` must be set and at least `min`; its limit (and request) of a resource in `max`
  must be set and at most `max`; with `maxLimitRequestRatio`, limit / request must be at
  most the ratio;
- `type: Pod`: the same on the pod's effective requests and limits (podRequests,
  podLimits: the containers' aggregate, with the pod-level `spec.resources` cpu and memory
  in its place where the pod sets them).

Every resource an item names is checked (cpu, memory, ephemeral-storage, huge pages, an
extended resource), as PodValidateLimitFunc loops over the item's keys. Messages quote the
API server's ("maximum cpu usage per Container is 2, but limit is 4").

Before that, the LimitRanger's mutating admission sets each LimitRange's `default` and
`defaultRequest` (after the API server's defaulting of the LimitRange) on the pod's own
containers that lack them (`defaults`, `with_defaults`; admission.build.admitted_pod
applies them), which can change a container's QoS and what a quota counts.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.admission.cpumanager import aggregate
from krm_fn.admission.model import ERROR, AdmittedPod, Finding
from krm_fn.quantity import NANO

SOURCE = ("kubernetes/kubernetes plugin/pkg/admission/limitranger/admission.go, "
          "https://kubernetes.io/docs/concepts/policy/limit-range/")
RESOURCES = ("cpu", "memory")
# limitranger supportedPodLevelResources: what a pod-level spec.resources replaces in the
# pod's totals
POD_LEVEL = ("cpu", "memory")


def _amount(res: str, text) -> int | None:
    """`text` as an amount of the admission model (cpu nanocores, memory bytes), or None."""
    try:
        q = (quantity.parse_cpu if res == "cpu" else quantity.parse_memory)(text)
    except (quantity.QuantityError, TypeError):
        return None
    return q.nanos if res == "cpu" else q.whole


_show = quantity.format_amount     # a model amount of a resource, for a message


def _violations(kind: str, req: dict, lim: dict, item: dict) -> list[str]:
    """The API server's messages for one set of requests / limits against one
    `spec.limits` item of `kind` (Container or Pod), for every resource the item names
    (cpu and memory first)."""
    out = []
    for res in _named(item):
        low = _amount(res, (item.get("min") or {}).get(res))
        high = _amount(res, (item.get("max") or {}).get(res))
        # the ratio read as a cpu quantity: nano-units (ratio * NANO)
        ratio = _amount("cpu", (item.get("maxLimitRequestRatio") or {}).get(res))
        r, li = req.get(res), lim.get(res)
        if low is not None:     # minConstraint: the first failing check
            if r is None:
                out.append(f"minimum {res} usage per {kind} is {_show(res, low)}.  No request "
                           f"is specified")
            elif r < low:
                out.append(f"minimum {res} usage per {kind} is {_show(res, low)}, but "
                           f"request is {_show(res, r)}")
            elif li is not None and li < low:
                out.append(f"minimum {res} usage per {kind} is {_show(res, low)}, but "
                           f"limit is {_show(res, li)}")
        if high is not None:    # maxConstraint: the first failing check
            if li is None:
                out.append(f"maximum {res} usage per {kind} is {_show(res, high)}.  No limit "
                           f"is specified")
            elif li > high:
                out.append(f"maximum {res} usage per {kind} is {_show(res, high)}, but limit "
                           f"is {_show(res, li)}")
            elif r is not None and r > high:
                out.append(f"maximum {res} usage per {kind} is {_show(res, high)}, but "
                           f"request is {_show(res, r)}")
        if ratio is not None:   # limitRequestRatioConstraint
            said = f"{res} max limit to request ratio per {kind} is {quantity.format_cpu(ratio)}"
            if not r:
                out.append(f"{said}, but no request is specified or request is 0")
            elif not li:
                out.append(f"{said}, but no limit is specified or limit is 0")
            elif li * NANO > ratio * r:
                out.append(f"{said}, but provided ratio is {li / r:f}")
    return out


def _named(item: dict) -> list:
    """The resources a `spec.limits` item bounds (in min, max or maxLimitRequestRatio): cpu
    and memory first, then the others by name."""
    names: set = set()
    for key in ("min", "max", "maxLimitRequestRatio"):
        if isinstance(item.get(key), dict):
            names |= {str(k) for k in item[key]}
    return [r for r in RESOURCES if r in names] + sorted(names - set(RESOURCES))


def defaults(limit_ranges) -> tuple:
    """((default requests, default limits), ...) per LimitRange of `limit_ranges` (plain
    objects, in the order the LimitRanger sees them), each {resource: amount} as
    admission.build.resource_map reads it: its `type: Container` items after the API
    server's defaulting (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem: a `max`
    without a `default` is the default limit; a default limit without a `defaultRequest`
    is the default request, else `min`), a later item's amount over an earlier one's
    (plugin/pkg/admission/limitranger/admission.go defaultContainerResourceRequirements).
    LimitRanges without a Container default are left out."""
    from krm_fn.admission.build import resource_map
    out = []
    for lr in limit_ranges or ():
        spec = lr.get("spec") if isinstance(lr, dict) and isinstance(lr.get("spec"), dict) \
            else {}
        requests, limits = {}, {}
        for item in spec.get("limits") or []:
            if not isinstance(item, dict) or item.get("type") != "Container":
                continue
            default = {**resource_map(item.get("max")), **resource_map(item.get("default"))}
            request = {**resource_map(item.get("min")), **default,
                       **resource_map(item.get("defaultRequest"))}
            limits.update(default)
            requests.update(request)
        if requests or limits:
            out.append((requests, limits))
    return tuple(out)


def with_defaults(containers, defaults_: tuple) -> list:
    """`containers` (model.Container: the pod's own, and the injected ones, which the
    LimitRanger sees when it runs again after the webhooks: build._limit_range_defaults)
    with each LimitRange's defaults (defaults)
    set where the container does not set that request or limit, the first LimitRange's
    first (mergeContainerResources fills only what is missing; app and init containers
    alike). The real order is not fixed: where it matters, `undetermined` says so."""
    if not defaults_:
        return list(containers)
    out = []
    for c in containers:
        requests, limits = dict(c.requests), dict(c.limits)
        for d_requests, d_limits in defaults_:
            for res, v in d_limits.items():
                limits.setdefault(res, v)
            for res, v in d_requests.items():
                requests.setdefault(res, v)
        out.append(c if (requests, limits) == (c.requests, c.limits)
                   else c._replace(requests=requests, limits=limits))
    return out


def undetermined(containers, limit_ranges, where: str | None = None) -> tuple:
    """ERROR Findings (rule `limitrange`) where two LimitRanges of `limit_ranges` (plain
    objects of the pod's namespace) give a container of `containers` (model.Container, as
    written, before defaults) different defaults for a request or limit it does not set:
    the LimitRanger takes the LimitRanges in its informer's order, the iteration order of
    a Go map (plugin/pkg/admission/limitranger/admission.go GetLimitRanges, client-go
    tools/cache thread_safe_store.go ByIndex, v1.37.2), which is not fixed, and the first
    default wins (mergeContainerResources), so the container gets either one. `where`: the
    pod spec's field path, for the findings."""
    named = [(str((lr.get("metadata") or {}).get("name") or f"#{i}"), d)
             for i, lr in enumerate(limit_ranges or ()) if isinstance(lr, dict)
             for d in defaults([lr])]
    if len(named) < 2:
        return ()
    out = []
    for c in containers:
        for kind, own, at in (("request", c.requests, 0), ("limit", c.limits, 1)):
            seen: dict = {}
            for name, d in named:
                for res, v in d[at].items():
                    if res not in own:
                        seen.setdefault(res, {}).setdefault(v, name)
            for res, values in sorted(seen.items()):
                if len(values) > 1:
                    shown = " or ".join(f"{_show(res, v)} (LimitRange {n})"
                                        for v, n in values.items())
                    out.append(Finding(ERROR, f"container {c.name!r} sets no {res} {kind}, "
                                              f"and the LimitRanges of its namespace default "
                                              f"it to {shown}: the LimitRanger takes them in "
                                              f"an order that is not fixed (a Go map's), so "
                                              f"the pod gets either; set the {res} {kind} on "
                                              f"the container, or keep one default per "
                                              f"resource (kubernetes/kubernetes "
                                              f"plugin/pkg/admission/limitranger/admission.go "
                                              f"GetLimitRanges, staging/src/k8s.io/client-go/"
                                              f"tools/cache/thread_safe_store.go ByIndex)",
                                       "limitrange", where))
    return tuple(out)


def refused(pod: AdmittedPod, limit_ranges: list) -> tuple:
    """ERROR Findings (rule `limitrange`) for each LimitRange of `limit_ranges` (plain
    objects that may sit in the pod's namespace: InjectionContext.limit_ranges_for) the pod
    breaks, naming the container, the LimitRange and the API server's message."""
    out = []
    for lr in limit_ranges:
        md = lr.get("metadata") if isinstance(lr.get("metadata"), dict) else {}
        name = md.get("name")
        spec = lr.get("spec") if isinstance(lr.get("spec"), dict) else {}
        for item in spec.get("limits") or []:
            if not isinstance(item, dict):
                continue
            kind = str(item.get("type") or "")
            if kind == "Container":
                pairs = [(f"container {c.name!r}" + ("" if c.source == "manifest"
                                                    else f" (added by {c.source})"),
                          c.requests, c.limits) for c in pod.containers]
            elif kind == "Pod":
                pairs = [("the pod", _sum(pod, "requests"), _sum(pod, "limits"))]
            else:
                continue
            for who, req, lim in pairs:
                for msg in _violations(kind, req, lim, item):
                    ns = md.get("namespace") or pod.namespace or "default"
                    if bool(md.get("namespace")) != bool(pod.namespace):
                        ns += (" (when the render is applied there: "
                               f"{'the workload' if md.get('namespace') else 'it'} names no "
                               f"namespace)")
                    out.append(Finding(ERROR, f"LimitRange {name} of namespace {ns} refuses "
                                              f"{who}: \"{msg}\"; the API server refuses the "
                                              f"pod: change the container's resources or the "
                                              f"LimitRange ({SOURCE})", "limitrange", pod.path))
    return tuple(out)


def _sum(pod: AdmittedPod, part: str) -> dict:
    """{resource: the pod's effective amount} of `part` (requests or limits) as the
    LimitRanger counts pod totals (podRequests / podLimits: app containers plus sidecars,
    or the largest init container plus the sidecars before it, whichever is larger; then
    the pod-level cpu and memory of `spec.resources` in their place where the pod sets
    them); a resource nothing sets is left out."""
    out = aggregate(pod.containers, part)
    level = pod.pod_requests if part == "requests" else pod.pod_limits
    for res in POD_LEVEL:
        if level and res in level:
            out[res] = level[res]
    return out
