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
from krm_fn.admission.cpumanager import aggregate
from krm_fn.admission.model import APP, ERROR, HUGEPAGES, AdmittedPod, Finding
from krm_fn.quantity import NANO

SOURCE = ("pkg/apis/core/validation/validation.go validatePodResources; "
          "https://kubernetes.io/docs/tasks/configure-pod-container/"
          "assign-pod-level-resources/")
# k8s.io/component-helpers/resource supportedPodLevelResources, plus the hugepages- prefix
SUPPORTED = ("cpu", "memory")


def supported(name: str) -> bool:
    """resource.IsSupportedPodLevelResource: cpu, memory or a hugepages-<size> name."""
    return name in SUPPORTED or name.startswith(HUGEPAGES)


def check(spec: dict | None, pod: AdmittedPod, version: tuple) -> tuple[list, dict | None]:
    """(an ERROR Finding (rule "podlevel") per refusal of the module docstring, the
    pod-level requests after `defaulted` as {resource: amount} (cpu in nanocores, the rest
    in whole bytes, rounded up)) for the pod spec `spec` (plain, as tuned) whose model after
    admission is `pod` (cpu in nanocores, everything else in bytes), on an API server of
    `version` ((1, minor)); ([], None) when it has no pod-level `resources` mapping."""
    res = spec.get("resources") if isinstance(spec, dict) else None
    if not isinstance(res, dict):
        return [], None
    given = {part: _amounts(res.get(part)) for part in ("requests", "limits")}
    requests, limits = defaulted(given["requests"], given["limits"], pod, version)
    after = {r: n if r == "cpu" else quantity.ceil_div(n, NANO)
             for r, (n, _) in requests.items()}
    at = f"{pod.path}.resources"
    os_ = spec.get("os")
    if isinstance(os_, dict) and os_.get("name") == "windows":
        return [_finding(at, "Forbidden: may not be set for a windows pod",
                         "remove spec.resources (a Windows pod has no pod-level "
                         "resources)")], after
    said = []
    if res.get("claims") is not None:
        said.append((f"{at}.claims", "Forbidden: claims may not be set for Resources at "
                     "pod-level", "move the claims to the containers' resources.claims"))
    for part, amounts in given.items():
        said += [(f"{at}.{part}[{r}]", f"Unsupported value: \"{r}\": supported values: "
                  f"\"cpu\", \"hugepages-\", \"memory\"",
                  f"remove {r} from the pod-level resources (only cpu, memory and huge pages "
                  f"can be set for the whole pod; keep {r} on the containers)")
                 for r in amounts if not supported(r)]
    for part, amounts in (("limits", limits), ("requests", requests)):
        said += [found for r, (nanos, shown) in amounts.items()
                 if (found := amount_refusal(r, nanos, shown, f"{at}.{part}")) is not None]
    said += _requirements(requests, limits, at)
    said += _consistency(pod, requests, limits, at)
    return [_finding(path, words, fix) for path, words, fix in said], after


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
    top = aggregate(containers, "limits")
    for r, v in top.items():
        if r.startswith(HUGEPAGES) and r not in requests and r not in limits:
            limits[r] = _pair(r, v)
    if fix or limits:
        for r, v in aggregate(containers, "requests").items():
            if r in SUPPORTED and r not in requests:
                requests[r] = _pair(r, v)
        for r, v in limits.items():
            if supported(r) and r not in requests:
                requests[r] = v
    if fix:
        for r, v in list(requests.items()):
            if supported(r) and r not in limits and r in top and \
                    all(r in c.limits for c in containers):
                limits[r] = max(v, _pair(r, top[r]))
    return requests, limits


def _pair(resource: str, amount: int) -> tuple:
    """(nano-units, text) of a model amount (cpu in nanocores, the rest in bytes)."""
    return _nanos(resource, amount), quantity.format_amount(resource, amount)


def _finding(path: str, words: str, fix: str) -> Finding:
    return Finding(ERROR, f"{path}: {words}: the API server refuses the pod; {fix} "
                          f"({SOURCE})", "podlevel", path)


def _amounts(amounts) -> dict:
    """{resource: (signed nano-units, text as shown)} of a requests or limits mapping (an
    amount that is no quantity is left out: the resources rule reports it)."""
    out: dict = {}
    for r, text in (amounts.items() if isinstance(amounts, dict) else ()):
        got = quantity.parse_signed(text)
        if got is not None:
            out[str(r)] = got
    return out


def amount_refusal(resource: str, nanos: int, shown: str, at: str) -> tuple | None:
    """(path, words, fix) of what ValidateResourceQuantityValue and the huge page size
    check refuse in one amount of `resource` (signed nano-units `nanos`, written `shown`,
    in the requests or limits at field path `at`): a negative amount, huge pages in no
    whole number of pages; None when neither. Container and pod-level resources alike."""
    if nanos < 0:
        return (f"{at}[{resource}]", f"Invalid value: \"{shown}\": must be greater than or "
                f"equal to 0", f"{resource} cannot be negative")
    if resource.startswith(HUGEPAGES) and not divisible(resource, nanos):
        return (f"{at}[{resource}]", f"Invalid value: \"{shown}\": {shown} is not positive "
                f"integer multiple of {resource}", f"give {resource} in whole pages")
    return None


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


def overcommit_allowed(resource: str) -> bool:
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
            if not overcommit_allowed(r) and want != limits[r][0]:
                said.append((f"{at}.requests", f"Invalid value: \"{shown}\": must be equal "
                             f"to {r} limit of {limits[r][1]}", f"set requests.{r} to its "
                             f"limit ({r} cannot be overcommitted)"))
            elif want > limits[r][0]:
                said.append((f"{at}.requests", f"Invalid value: \"{shown}\": must be less "
                             f"than or equal to {r} limit of {limits[r][1]}",
                             f"lower requests.{r} to at most its limit, or raise the limit"))
        elif not overcommit_allowed(r):
            said.append((f"{at}.limits", "Required value: Limit must be set for non "
                         "overcommitable resources", f"set limits.{r} to the request"))
    names = set(requests) | set(limits)
    if any(r.startswith(HUGEPAGES) for r in names) and not names & set(SUPPORTED):
        said.append((at, "Forbidden: HugePages require cpu or memory",
                     "set cpu or memory with the huge pages"))
    return said


def _consistency(pod: AdmittedPod, requests: dict, limits: dict, at: str) -> list:
    """validatePodResourceConsistency of the pod-level (defaulted) `requests` and `limits`
    against the pod's containers after admission, injected ones included, except cpu and
    memory requests (verdict._podlevel_findings says those)."""
    said = []
    for part, amounts, need_of in (("requests", requests, aggregate(pod.containers, "requests")),
                                   ("limits", limits, aggregate(pod.containers, "limits"))):
        for r, (have, shown) in amounts.items():
            need = need_of.get(r)
            judged = r not in SUPPORTED if part == "requests" else r.startswith(HUGEPAGES)
            if judged and need is not None and _nanos(r, need) > have:
                text = quantity.format_amount(r, need)
                said.append((f"{at}.{part}[{r}]", f"Invalid value: \"{shown}\": must be "
                             f"greater than or equal to aggregate container {part} of {text}",
                             f"raise it to at least {text}"))
    apps = [c for c in pod.containers if c.role == APP]
    for i, c in enumerate(apps):
        for r, lim in c.limits.items():
            if r in limits and _nanos(r, lim) > limits[r][0]:
                said.append((f"{at}.containers[{i}][{r}].limits", f"Invalid value: "
                             f"\"{quantity.format_amount(r, lim)}\": must be less than or "
                             f"equal to pod limits of {limits[r][1]}", f"lower container "
                             f"{c.name!r}'s limits.{r}, or raise the pod-level limit"))
    return said


def _nanos(resource: str, amount: int) -> int:
    """A model amount (cpu in nanocores, the rest in bytes) in nano-units."""
    return amount if resource == "cpu" else amount * NANO
