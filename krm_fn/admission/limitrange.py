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
from krm_fn.admission.containerresources import CONTAINER_RESOURCES, extended
from krm_fn.admission.cpumanager import aggregate
from krm_fn.admission.model import ERROR, HUGEPAGES, AdmittedPod, Finding
from krm_fn.admission.podresources import overcommit_allowed
from krm_fn.admission.quotascope import standard_quota
from krm_fn.apivalidation import go_quote, label_key_errors
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
    bounds = {key: _signed(item.get(key)) for key in ("min", "max", "maxLimitRequestRatio")}
    for res in _named(item):
        # each bound as the model reads it, and as the API server shows it (enforced.String())
        low, high = _amount(res, (item.get("min") or {}).get(res)), \
            _amount(res, (item.get("max") or {}).get(res))
        low_, high_, ratio_ = (bounds[key].get(res, (None, ""))[1]
                               for key in ("min", "max", "maxLimitRequestRatio"))
        # the ratio read as a cpu quantity: nano-units (ratio * NANO)
        ratio = _amount("cpu", (item.get("maxLimitRequestRatio") or {}).get(res))
        r, li = req.get(res), lim.get(res)
        if low is not None:     # minConstraint: the first failing check
            if r is None:
                out.append(f"minimum {res} usage per {kind} is {low_}.  No request "
                           f"is specified")
            elif r < low:
                out.append(f"minimum {res} usage per {kind} is {low_}, but "
                           f"request is {_show(res, r)}")
            elif li is not None and li < low:
                out.append(f"minimum {res} usage per {kind} is {low_}, but "
                           f"limit is {_show(res, li)}")
        if high is not None:    # maxConstraint: the first failing check
            if li is None:
                out.append(f"maximum {res} usage per {kind} is {high_}.  No limit "
                           f"is specified")
            elif li > high:
                out.append(f"maximum {res} usage per {kind} is {high_}, but limit "
                           f"is {_show(res, li)}")
            elif r is not None and r > high:
                out.append(f"maximum {res} usage per {kind} is {high_}, but "
                           f"request is {_show(res, r)}")
        if ratio is not None:   # limitRequestRatioConstraint
            said = f"{res} max limit to request ratio per {kind} is {ratio_}"
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


# pkg/apis/core/helper/helpers.go standardLimitRangeTypes
LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
OBJECT_SRC = "kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateLimitRange"


def object_errors(lr) -> list[str]:
    """The API server's field errors for LimitRange `lr` (plain data), as it validates the
    object after defaulting it (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem,
    then validation.go ValidateLimitRange, v1.37.2): a limit type that is neither standard
    nor qualified, a type twice, a resource name the type may not bound, `default` or
    `defaultRequest` on a `type: Pod` item, a PersistentVolumeClaim item without storage,
    and the comparisons of `min`, `max`, `default`, `defaultRequest` and
    `maxLimitRequestRatio`. [] when it accepts the object: such a LimitRange is never
    created, so none of it applies to a pod. Each error as the API server writes it
    (`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value
    1`), item by item; within an item the API server's order is a Go map's, krm-fn's
    sorted by resource. Amounts that are no quantity are left to the quantity checks
    (pipeline/quantities.py); each amount is shown as the API server stores it
    (quantity.stored: `1e3` stays `1e3`, `1000m` is `1`)."""
    spec = lr.get("spec") if isinstance(lr, dict) else None
    items = spec.get("limits") if isinstance(spec, dict) else None
    out: list = []
    seen: set = set()
    for i, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict):
            out += _item_errors(item, f"spec.limits[{i}]", seen)
    return out


def accepted(limit_ranges) -> tuple:
    """The LimitRanges of `limit_ranges` the API server creates (object_errors finds
    nothing), in order."""
    return tuple(lr for lr in limit_ranges or () if not object_errors(lr))


def _item_errors(item: dict, at: str, seen: set) -> list[str]:
    kind = str(item.get("type") or "")
    out = [f"{at}.type: Invalid value: {go_quote(kind)}: {m}" for m in _type_errors(kind)]
    if kind in seen:
        out.append(f"{at}.type: Duplicate value: {go_quote(kind)}")
    seen.add(kind)
    parts = {key: _signed(item.get(key)) for key in
             ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")}
    if kind == "Container":        # SetDefaults_LimitRangeItem, before validation
        parts["default"] = {**parts["max"], **parts["default"]}
        parts["defaultRequest"] = {**parts["min"], **parts["default"],
                                   **parts["defaultRequest"]}
    for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
        if kind == "Pod" and key in ("default", "defaultRequest"):
            if parts[key]:
                out.append(f"{at}.{key}: Forbidden: may not be specified when `type` is 'Pod'")
            parts[key] = {}
            continue
        for res in parts[key]:
            out += [f"{at}.{key}[{res}]: Invalid value: {go_quote(res)}: {m}"
                    for m in _name_errors(kind, res)]
    if kind == "PersistentVolumeClaim" and "storage" not in parts["min"] and \
            "storage" not in parts["max"]:
        out.append(f"{at}.limits: Required value: either minimum or maximum storage value "
                   f"is required, but neither was provided")
    for res in sorted(set().union(*parts.values())):
        out += [f"{at}.{key}[{res}]: Invalid value: \"{shown}\": {m}"
                for key, shown, m in _comparisons(res, *(parts[k].get(res) for k in (
                    "min", "max", "default", "defaultRequest", "maxLimitRequestRatio")))]
    return out


def _signed(part) -> dict:
    """{resource: (signed nano-units, the amount as the API server shows it)} of a
    mapping of quantities; entries that are no quantity are left out."""
    out = {}
    for res, text in (part.items() if isinstance(part, dict) else ()):
        got = quantity.parse_signed(text)
        if got is not None:
            out[str(res)] = got
    return out


def _type_errors(kind: str) -> list[str]:
    """validateLimitRangeTypeName: a qualified name, and a standard type unless it has a
    domain."""
    errs = label_key_errors(kind)
    if not errs and "/" not in kind and kind not in LIMIT_TYPES:
        errs = ["must be a standard limit type or fully qualified"]
    return errs


def _name_errors(kind: str, res: str) -> list[str]:
    """validateLimitRangeResourceName: validateResourceName for every type, and for Pod
    and Container items ValidateContainerResourceName's own test after it."""
    errs = label_key_errors(res)
    if errs:
        return errs
    if "/" not in res and not standard_quota(res) and res != "storage":
        errs.append("must be a standard resource type or fully qualified")
    if kind in ("Pod", "Container"):
        if "/" not in res:
            if res not in CONTAINER_RESOURCES and not res.startswith(HUGEPAGES):
                errs.append("must be a standard resource for containers")
        elif "kubernetes.io/" not in res and not extended(res):
            errs.append("doesn't follow extended resource name standard")
    return errs


def _comparisons(res: str, low, high, default, request, ratio) -> list[tuple]:
    """ValidateLimitRange's checks of one resource of an item: (field key, the value the
    error shows, message), in the API server's order. Each argument is (signed nano-units,
    shown) or None."""
    out = []
    if low and high and low[0] > high[0]:
        out.append(("min", low[1], f"min value {low[1]} is greater than max value {high[1]}"))
    if request and low and low[0] > request[0]:
        out.append(("defaultRequest", request[1], f"min value {low[1]} is greater than "
                                                  f"default request value {request[1]}"))
    if request and high and request[0] > high[0]:
        out.append(("defaultRequest", request[1], f"default request value {request[1]} is "
                                                  f"greater than max value {high[1]}"))
    if request and default and request[0] > default[0]:
        out.append(("defaultRequest", request[1], f"default request value {request[1]} is "
                                                  f"greater than default limit value "
                                                  f"{default[1]}"))
    if default and low and low[0] > default[0]:
        out.append(("default", low[1], f"min value {low[1]} is greater than default value "
                                       f"{default[1]}"))
    if default and high and default[0] > high[0]:
        out.append(("default", high[1], f"default value {default[1]} is greater than max "
                                        f"value {high[1]}"))
    if ratio and ratio[0] < NANO:
        out.append(("maxLimitRequestRatio", ratio[1], f"ratio {ratio[1]} is less than 1"))
    if ratio and low and high:
        bound = _max_over_min(ratio[0], low[0], high[0])
        if bound is not None and bound[0] > bound[1]:
            out.append(("maxLimitRequestRatio", ratio[1], f"ratio {ratio[1]} is greater than "
                                                          f"max/min = {bound[1]:f}"))
    if not overcommit_allowed(res) and default and request and default[0] != request[0]:
        out.append(("defaultRequest", request[1], f"default value {default[1]} must equal to "
                                                  f"defaultRequest value {request[1]} in {res}"))
    return out


def _max_over_min(ratio: int, low: int, high: int) -> tuple | None:
    """(the ratio, max / min) as ValidateLimitRange compares them, float64 from milli-units
    (Quantity.MilliValue, rounded up) when all three are below MaxMilliValue, else from
    whole units (Value); None when min is 0 (max / min is +Inf or NaN, never below)."""
    def scaled(nanos: int, unit: int) -> int:
        return quantity.ceil_div(nanos, unit)
    limit = (2**63 - 1) // 1000                     # resource.MaxMilliValue
    if all(scaled(v, NANO) < limit for v in (ratio, low, high)):
        r, lo, hi = scaled(ratio, NANO // 1000) / 1000, scaled(low, NANO // 1000), \
            scaled(high, NANO // 1000)
    else:
        r, lo, hi = float(scaled(ratio, NANO)), scaled(low, NANO), scaled(high, NANO)
    return None if lo == 0 else (r, float(hi) / float(lo))


def _items(lr) -> list:
    """The mapping entries of the LimitRange `lr`'s `spec.limits` (plain data), in order."""
    spec = lr.get("spec") if isinstance(lr, dict) else None
    items = spec.get("limits") if isinstance(spec, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


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
    for lr in accepted(limit_ranges):
        requests, limits = {}, {}
        for item in _items(lr):
            if item.get("type") != "Container":
                continue
            default = {**resource_map(item.get("max")), **resource_map(item.get("default"))}
            request = {**resource_map(item.get("min")), **default,
                       **resource_map(item.get("defaultRequest"))}
            limits.update(default)
            requests.update(request)
        if requests or limits:
            out.append((requests, limits))
    return tuple(out)


def container_bounds(limit_ranges) -> dict:
    """{(resource, "min" or "max"): (quantity.Quantity, LimitRange name)} for cpu and
    memory: the largest `min` and the smallest `max` of the `type: Container` items of the
    LimitRanges of `limit_ranges` (plain objects that may sit in the pod's namespace:
    InjectionContext.limit_ranges_for) that the API server creates (`accepted`), each with
    the text the API server stores (quantity.stored: `0.3` is `300m`). Every
    container's request must be at least each `min` and its limit at most each `max`
    (plugin/pkg/admission/limitranger/admission.go minConstraint, maxConstraint); an amount
    krm-fn cannot read is left out (`refused` reports the pod). {} for no LimitRange."""
    out: dict = {}
    for lr in accepted(limit_ranges) if limit_ranges else ():
        md = lr.get("metadata")
        name = str(md.get("name")) if isinstance(md, dict) else "?"
        for item in _items(lr):
            if item.get("type") != "Container":
                continue
            for key, sign in (("min", 1), ("max", -1)):
                amounts = item.get(key)
                for res in RESOURCES:
                    text = amounts.get(res) if isinstance(amounts, dict) else None
                    try:
                        q = (quantity.parse_cpu if res == "cpu" else quantity.parse_memory)(
                            text)
                        q = q._replace(text=quantity.stored(text)[1])   # as the API shows it
                    except (quantity.QuantityError, TypeError):
                        continue
                    old = out.get((res, key))
                    if old is None or sign * (q.nanos - old[0].nanos) > 0:
                        out[(res, key)] = (q, name)
    return out


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
             for i, lr in enumerate(accepted(limit_ranges)) if isinstance(lr, dict)
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
        bad = object_errors(lr)
        if bad:
            out.append(_object_refused(name, _namespace(md, pod), bad, pod.path))
            continue
        for item in _items(lr):
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
                    ns = _namespace(md, pod)
                    out.append(Finding(ERROR, f"LimitRange {name} of namespace {ns} refuses "
                                              f"{who}: \"{msg}\"; the API server refuses the "
                                              f"pod: change the container's resources or the "
                                              f"LimitRange ({SOURCE})", "limitrange", pod.path))
    return tuple(out)


def _namespace(md: dict, pod: AdmittedPod) -> str:
    """The namespace a LimitRange (its metadata `md`) and `pod` share, for a message."""
    ns = md.get("namespace") or pod.namespace or "default"
    if bool(md.get("namespace")) != bool(pod.namespace):
        ns += (" (when the render is applied there: "
               f"{'the workload' if md.get('namespace') else 'it'} names no namespace)")
    return ns


def _object_refused(name, ns: str, errors: list, path: str) -> Finding:
    """The ERROR Finding for a LimitRange the API server refuses to create (object_errors),
    in the API server's words (`LimitRange "lr" is invalid: [...]`)."""
    said = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return Finding(ERROR, f"the API server refuses LimitRange {name} of namespace {ns} "
                          f"(LimitRange \"{name}\" is invalid: {said}): it is never created, "
                          f"so its defaults and limits do not apply to the pod; fix the "
                          f"LimitRange ({OBJECT_SRC}, "
                          f"https://kubernetes.io/docs/concepts/policy/limit-range/)",
                   "limitrange", path)


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
