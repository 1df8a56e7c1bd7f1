"""What the API server refuses in a pod's pod-level `spec.resources` (KEP-2837), beyond
the cpu and memory requests below the containers' aggregate (verdict._podlevel_findings).

The API server first fills in the pod-level amounts the pod leaves out (`defaulted`), then
validates them with validatePodResources (kubernetes/kubernetes pkg/apis/core/validation/
validation.go, the same in 1.35 to 1.37) on the pod after the mutating webhooks, so the
containers they inject count. It refuses:

- any resource but cpu, memory and hugepages-<size> (validatePodResourceName,
  k8s.io/component-helpers resource.IsSupportedPodLevelResource): `ephemeral-storage`,
  an extended resource, ... ("Unsupported value");
- a negative amount; a request above its limit; a request of a resource that cannot be
  overcommitted (huge pages, an extended resource) that is not its limit, or without a
  limit; a huge page amount that is not a multiple of the page size; huge pages without
  cpu or memory (validateResourceRequirements);
- `claims` ("claims may not be set for Resources at pod-level"), and the field on a pod
  with `spec.os.name: windows`;
- a pod-level request below the containers' aggregate request of that resource, a
  pod-level huge page limit below their aggregate limit, and a limit of one of the pod's
  `containers` above the pod-level limit of that resource (validatePodResourceConsistency).

A pod refused there never exists, pinned or not: each is an ERROR. Without the
PodLevelResources gate the API server drops the field and validates nothing of it.
Checked against the real API server of 1.37 (tests/test_pod_level_validation.py); the
defaulting of 1.35 and 1.36 is read from their source, not run.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.admission.model import APP, ERROR, HUGEPAGES, SIDECAR, AdmittedPod, Finding
from krm_fn.quantity import NANO

SOURCE = ("pkg/apis/core/validation/validation.go validatePodResources; "
          "https://kubernetes.io/docs/tasks/configure-pod-container/"
          "assign-pod-level-resources/")
# k8s.io/component-helpers/resource supportedPodLevelResources, plus the hugepages- prefix
SUPPORTED = ("cpu", "memory")


def supported(name: str) -> bool:
    """resource.IsSupportedPodLevelResource: cpu, memory or a hugepages-<size> name."""
    return name in SUPPORTED or name.startswith(HUGEPAGES)


def refusals(spec: dict | None, pod: AdmittedPod, version: tuple) -> list:
    """An ERROR Finding (rule "podlevel") per refusal of the module docstring for the pod
    spec `spec` (plain, as tuned) whose model after admission is `pod` (cpu in nanocores,
    everything else in bytes), on an API server of `version` ((1, minor)); [] when it has
    no pod-level `resources` mapping. The amounts are judged after `defaulted`."""
    res = spec.get("resources") if isinstance(spec, dict) else None
    if not isinstance(res, dict):
        return []
    at = f"{pod.path}.resources"
    os_ = spec.get("os")
    if isinstance(os_, dict) and os_.get("name") == "windows":
        return [_finding(at, "Forbidden: may not be set for a windows pod",
                         "remove spec.resources (a Windows pod has no pod-level resources)")]
    said = []
    if res.get("claims") is not None:
        said.append((f"{at}.claims", "Forbidden: claims may not be set for Resources at "
                     "pod-level", "move the claims to the containers' resources.claims"))
    given = {part: _amounts(res.get(part)) for part in ("requests", "limits")}
    for part, amounts in given.items():
        said += [(f"{at}.{part}[{r}]", f"Unsupported value: \"{r}\": supported values: "
                  f"\"cpu\", \"hugepages-\", \"memory\"",
                  f"remove {r} from the pod-level resources (only cpu, memory and huge pages "
                  f"can be set for the whole pod; keep {r} on the containers)")
                 for r in amounts if not supported(r)]
    requests, limits = defaulted(given["requests"], given["limits"], pod, version)
    for part, amounts in (("limits", limits), ("requests", requests)):
        said += _values(amounts, f"{at}.{part}")
    said += _requirements(requests, limits, at)
    said += _consistency(pod, requests, limits, at)
    return [_finding(path, words, fix) for path, words, fix in said]


def requests_after_defaults(spec: dict | None, pod: AdmittedPod, version: tuple) -> dict | None:
    """{resource: amount} (cpu in nanocores, the rest in whole bytes, rounded up) of the
    pod-level requests of `spec` once `defaulted` filled them in; None when `spec` has no
    pod-level `resources` mapping."""
    res = spec.get("resources") if isinstance(spec, dict) else None
    if not isinstance(res, dict):
        return None
    requests, _ = defaulted(_amounts(res.get("requests")), _amounts(res.get("limits")), pod,
                            version)
    return {r: n if r == "cpu" else quantity.ceil_div(n, NANO)
            for r, (n, _) in requests.items()}


def defaulted(requests: dict, limits: dict, pod: AdmittedPod,
              version: tuple) -> tuple[dict, dict]:
    """(requests, limits) {resource: (signed nano-units, text)} of the pod-level resources
    after the API server fills in what they leave out, given as `requests` and `limits`
    in the same form; nothing when both are empty. Up to 1.36 (pkg/apis/core/v1/
    defaults.go SetDefaults_Pod: defaultHugePagePodLimits, defaultPodRequests) this runs
    when the pod is decoded, on its own containers; from 1.37 (PodLevelResourcesFixDefaulting,
    on by default: pkg/api/pod/util.go DefaultPodLevelResources, from the pod strategy's
    PrepareForCreate) after the webhooks, on all of them:

    - a huge page size the containers limit gets their aggregate limit, when the pod
      level has neither a request nor a limit of it;
    - cpu and memory the containers request get their aggregate request (up to 1.36 only
      when the pod level has limits), then every supported resource with a limit and no
      request gets the limit as its request;
    - from 1.37, a supported resource with a request and no limit, that every container
      limits, gets the larger of the request and the containers' aggregate limit."""
    requests, limits = dict(requests), dict(limits)
    if not requests and not limits:
        return requests, limits
    fix = version >= (1, 37)
    containers = [c for c in pod.containers if fix or c.source == "manifest"]
    for r, v in _aggregates(containers, "limits").items():
        if r.startswith(HUGEPAGES) and r not in requests and r not in limits:
            limits[r] = _pair(r, v)
    if fix or limits:
        for r, v in _aggregates(containers, "requests").items():
            if r in SUPPORTED and r not in requests:
                requests[r] = _pair(r, v)
        for r, v in limits.items():
            if supported(r) and r not in requests:
                requests[r] = v
    if fix:
        top = _aggregates(containers, "limits")
        for r, v in list(requests.items()):
            if supported(r) and r not in limits and r in top and \
                    all(r in c.limits for c in containers):
                limits[r] = max(v, _pair(r, top[r]))
    return requests, limits


def _pair(resource: str, amount: int) -> tuple:
    """(nano-units, text) of a model amount (cpu in nanocores, the rest in bytes)."""
    return _nanos(resource, amount), _show(resource, amount)


def _finding(path: str, words: str, fix: str) -> Finding:
    return Finding(ERROR, f"{path}: {words}: the API server refuses the pod; {fix} "
                          f"({SOURCE})", "podlevel", path)


def _amounts(amounts) -> dict:
    """{resource: (signed nano-units, text as shown)} of a requests or limits mapping (an
    amount that is no quantity is left out: the resources rule reports it)."""
    out: dict = {}
    for r, text in (amounts.items() if isinstance(amounts, dict) else ()):
        s = text.strip() if isinstance(text, str) else text
        negative = isinstance(s, str) and s.startswith("-")
        try:
            q = quantity.parse(s[1:] if negative else s)
        except (quantity.QuantityError, TypeError):
            continue
        shown = ("-" if negative and q.nanos else "") + quantity.format_like(q.nanos, q)
        out[str(r)] = (-q.nanos if negative else q.nanos, shown)
    return out


def _values(amounts: dict, at: str) -> list:
    """ValidateResourceQuantityValue and the huge page size check of each amount."""
    said = []
    for r, (nanos, shown) in amounts.items():
        if nanos < 0:
            said.append((f"{at}[{r}]", f"Invalid value: \"{shown}\": must be greater than "
                         f"or equal to 0", f"{r} cannot be negative"))
        elif r.startswith(HUGEPAGES) and not divisible(r, nanos):
            said.append((f"{at}[{r}]", f"Invalid value: \"{shown}\": {shown} is not positive "
                         f"integer multiple of {r}", f"give {r} in whole pages"))
    return said


def divisible(name: str, nanos: int) -> bool:
    """helper.IsHugePageResourceValueDivisible: the amount (rounded up to whole bytes, as
    Quantity.Value) is a multiple of the page size the name gives (a name without a page
    size is never divisible)."""
    try:
        size = quantity.parse(name[len(HUGEPAGES):]).nanos
    except (quantity.QuantityError, TypeError):
        return False
    if size <= 0 or size % NANO:
        return False
    return quantity.ceil_div(nanos, NANO) % (size // NANO) == 0


def _overcommitted(resource: str) -> bool:
    """helper.IsOvercommitAllowed: a native resource (no "/", or a kubernetes.io/ one)
    that is no huge page size."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith(HUGEPAGES)


def _requirements(requests: dict, limits: dict, at: str) -> list:
    """validateResourceRequirements' comparisons: request <= limit (== for a resource that
    cannot be overcommitted, whose request needs a limit), huge pages only with cpu or
    memory."""
    said = []
    for r, (want, shown) in requests.items():
        if r in limits:
            if not _overcommitted(r) and want != limits[r][0]:
                said.append((f"{at}.requests", f"Invalid value: \"{shown}\": must be equal "
                             f"to {r} limit of {limits[r][1]}", f"set requests.{r} to its "
                             f"limit ({r} cannot be overcommitted)"))
            elif want > limits[r][0]:
                said.append((f"{at}.requests", f"Invalid value: \"{shown}\": must be less "
                             f"than or equal to {r} limit of {limits[r][1]}",
                             f"lower requests.{r} to at most its limit, or raise the limit"))
        elif not _overcommitted(r):
            said.append((f"{at}.limits", "Required value: Limit must be set for non "
                         "overcommitable resources", f"set limits.{r} to the request"))
    names = set(requests) | set(limits)
    if any(r.startswith(HUGEPAGES) for r in names) and not names & set(SUPPORTED):
        said.append((at, "Forbidden: HugePages require cpu or memory",
                     "set cpu or memory with the huge pages"))
    return said


def _aggregates(containers, part: str) -> dict:
    """{resource: amount} of AggregateContainerRequests (part "requests") or
    AggregateContainerLimits ("limits") over model Containers (cpu in nanocores, the rest
    in bytes): per resource any of them sets, max(app containers + sidecars, each init
    container + the sidecars before it)."""
    apps: dict = {}
    sidecars: dict = {}
    peak: dict = {}
    for c in containers:
        for r, v in getattr(c, part).items():
            if c.role == APP:
                apps[r] = apps.get(r, 0) + v
            elif c.role == SIDECAR:
                sidecars[r] = sidecars.get(r, 0) + v
        if c.role not in (APP, SIDECAR):
            for r, v in getattr(c, part).items():
                peak[r] = max(peak.get(r, 0), sidecars.get(r, 0) + v)
    names = set(apps) | set(sidecars) | set(peak)
    return {r: max(apps.get(r, 0) + sidecars.get(r, 0), peak.get(r, 0)) for r in names}


def _show(resource: str, amount: int) -> str:
    return quantity.format_cpu(amount) if resource == "cpu" else quantity.format_bytes(amount)


def _consistency(pod: AdmittedPod, requests: dict, limits: dict, at: str) -> list:
    """validatePodResourceConsistency of the pod-level (defaulted) `requests` and `limits`
    against the pod's containers after admission, injected ones included, except cpu and
    memory requests (verdict._podlevel_findings says those)."""
    said = []
    need_req = _aggregates(pod.containers, "requests")
    for r, (have, shown) in requests.items():
        need = need_req.get(r)
        if r not in SUPPORTED and need is not None and _nanos(r, need) > have:
            said.append((f"{at}.requests[{r}]", f"Invalid value: \"{shown}\": must be "
                         f"greater than or equal to aggregate container requests of "
                         f"{_show(r, need)}", f"raise it to at least {_show(r, need)}"))
    need_lim = _aggregates(pod.containers, "limits")
    for r, (have, shown) in limits.items():
        need = need_lim.get(r)
        if r.startswith(HUGEPAGES) and need is not None and _nanos(r, need) > have:
            said.append((f"{at}.limits[{r}]", f"Invalid value: \"{shown}\": must be "
                         f"greater than or equal to aggregate container limits of "
                         f"{_show(r, need)}", f"raise it to at least {_show(r, need)}"))
    apps = [c for c in pod.containers if c.role == APP]
    for i, c in enumerate(apps):
        for r, lim in c.limits.items():
            if r in limits and _nanos(r, lim) > limits[r][0]:
                said.append((f"{at}.containers[{i}][{r}].limits", f"Invalid value: "
                             f"\"{_show(r, lim)}\": must be less than or equal to pod "
                             f"limits of {limits[r][1]}", f"lower container {c.name!r}'s "
                             f"limits.{r}, or raise the pod-level limit"))
    return said


def _nanos(resource: str, amount: int) -> int:
    """A model amount (cpu in nanocores, the rest in bytes) in nano-units."""
    return amount if resource == "cpu" else amount * NANO
