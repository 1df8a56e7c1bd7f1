"""What the API server refuses in a container's `resources` (validateResourceRequirements in
kubernetes/kubernetes pkg/apis/core/validation/validation.go), beyond the cpu and memory
amounts the resources rule reads and what the kubelet's model judges:

- a resource name that is no container resource (ValidateContainerResourceName: a name
  without a domain must be cpu, memory, ephemeral-storage or hugepages-<size>; a name with
  a domain must be a qualified name and, outside kubernetes.io, an extended resource name):
  `Memory`, `storage`, `requests.cpu`, `gpu`;
- an amount that is no quantity (apimachinery quantity.go ParseQuantity, run when the API
  server decodes the object: `10GB`, `1Gb`, `one`), or one krm-fn does not read (above
  2^63-1: Kubernetes caps it or keeps more than Value() holds; one finer than 1m is read as
  stored, rounded up: quantity.stored), for every resource but cpu and memory;
- a negative amount, an extended resource that is no integer, huge pages that are no whole
  number of pages, a request above its limit, huge pages without cpu or memory.

The verdict (krm_fn/admission/verdict.py) turns each into an ERROR: a render that says a pod
is pinned while the API server refuses it is the worst failure krm-fn can have.
"""
from __future__ import annotations

import functools

from krm_fn import apivalidation, numbers, quantity
from krm_fn.admission.model import ERROR, HUGEPAGES, Finding
from krm_fn.admission.podresources import amount_refusal, overcommit_allowed
from krm_fn.admission.quotascope import standard_quota
from krm_fn.quantity import NANO

RESOURCES_SRC = ("kubernetes/kubernetes pkg/apis/core/validation/validation.go "
                 "validateResourceRequirements, ValidateResourceQuantityValue")
DOCS = "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"
NAME_SRC = ("kubernetes/kubernetes pkg/apis/core/validation/validation.go "
            "ValidateContainerResourceName")
# helpers.go standardContainerResources (and IsHugePageResourceName: hugepages-<size>)
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# the resources the resources rule reads (and reports when they are no quantity)
_RULE_READS = ("cpu", "memory")


def extended(res: str) -> bool:
    """helper.IsExtendedResourceName: a resource outside the kubernetes.io namespace (a name
    with a "/" that does not contain "kubernetes.io/"), not `requests.`-prefixed, a label
    key once `requests.` is put before it; its quantities must be integers."""
    if "/" not in res or "kubernetes.io/" in res or res.startswith("requests."):
        return False
    return not apivalidation.label_key_errors("requests." + res)


def name_error(res: str) -> str | None:
    """What ValidateContainerResourceName says of the resource name `res` (its first
    message), None when a container may request it."""
    if res in CONTAINER_RESOURCES:
        return None             # cpu, memory, ephemeral-storage: nearly every name
    return _name_error(res)


@functools.lru_cache(maxsize=1024)
def _name_error(res: str) -> str | None:
    errs = apivalidation.label_key_errors(res)      # validation.IsQualifiedName
    if errs:
        return errs[0]
    if "/" not in res:
        # helpers.go IsStandardResourceName: standardResources (the standard quota
        # resources and "storage") or a quota's huge page name
        if not standard_quota(res) and res != "storage":
            return "must be a standard resource type or fully qualified"
        if res not in CONTAINER_RESOURCES and not res.startswith(HUGEPAGES):
            return "must be a standard resource for containers"
    elif "kubernetes.io/" not in res and not extended(res):
        return "doesn't follow extended resource name standard"
    return None


def resource_refusals(spec: dict | None, at: str) -> list:
    """An ERROR Finding per refusal (module docstring) in the `resources` of each container
    of pod spec `spec` (as tuned, plain data, at field path `at`), in container order."""
    out: list = []
    for key in ("initContainers", "containers"):
        lst = spec.get(key) if isinstance(spec, dict) else None
        for i, c in enumerate(lst if isinstance(lst, list) else ()):
            res = c.get("resources") if isinstance(c, dict) else None
            if isinstance(res, dict):
                out += _container_refusals(c.get("name"), res, f"{at}.{key}[{i}].resources")
    return out


def requirement_errors(res: dict, at: str) -> list[str]:
    """The API server's errors (`overhead.limits[cpu]: Invalid value: "-1": must be greater
    than or equal to 0`) for a ResourceRequirements `res` (plain data) at field path `at`
    that is no container's, as ValidateContainerResourceRequirements checks it (a
    RuntimeClass's `overhead.podFixed` as `{"limits": podFixed}`: node/validation
    validation.go validateOverhead): the checks of `_container_refusals`, negative cpu and
    memory included; a resource name's first error only."""
    return [f"{path}: {words}" for path, words, *_ in _said(None, res, at, ())]


def _container_refusals(name, res: dict, at: str) -> list:
    said = _said(name, res, at, _RULE_READS)
    out = []
    for path, words, fix, *more in said:
        who, src = (more + [None, None])[:2]
        who = who or f"the API server refuses the pod's container {name!r}"
        out.append(Finding(ERROR, f"{path}: {words}: {who}; {fix} ({src or RESOURCES_SRC}; "
                                  f"{DOCS})", "validation", path))
    return out


def _said(name, res: dict, at: str, rule_reads: tuple) -> list:
    """(path, words, fix[, who, source]) of each refusal in `res` at `at`; `rule_reads`:
    the resources a rule reads and reports itself (left out here)."""
    said = []
    parsed: dict = {}
    for part in ("limits", "requests"):
        amounts = res.get(part)
        for r, text in (amounts.items() if isinstance(amounts, dict) else ()):
            r = str(r)
            bad = name_error(r)
            if bad is not None:
                said.append((f"{at}.{part}[{r}]", f"Invalid value: \"{r}\": {bad}",
                             _rename(r), None, NAME_SRC))
                continue
            if r not in rule_reads:        # the resources rule reads cpu and memory
                bad = _read_otherwise(r, text, f"{at}.{part}[{r}]", name)
                if bad is not None:
                    said.append(bad)
                    continue
            got = quantity.parse_signed(text)
            if got is None:
                if isinstance(text, str) and r not in rule_reads:
                    said.append(_unread(r, text, f"{at}.{part}[{r}]", name))
                continue
            nanos, shown = got
            if nanos < 0 and r in rule_reads:
                pass            # the resources rule reports a negative cpu or memory
            elif (found := amount_refusal(r, nanos, shown, f"{at}.{part}")) is not None:
                said.append(found)
            elif extended(r) and quantity.milli_ceil(nanos) % NANO:     # MilliValue()%1000
                said.append((f"{at}.{part}[{r}]", f"Invalid value: \"{shown}\": must be an "
                             f"integer", f"an extended resource is counted in whole units: "
                             f"request a whole number of {r}"))
            parsed.setdefault(part, {})[r] = got
    limits, requests = parsed.get("limits", {}), parsed.get("requests", {})
    for r, (want, shown) in requests.items():
        if overcommit_allowed(r) and r in limits and want > limits[r][0]:
            said.append((f"{at}.requests", f"Invalid value: \"{shown}\": must be less than "
                         f"or equal to {r} limit of {limits[r][1]}",
                         f"lower requests.{r} to at most its limit, or raise the limit"))
    names = set(limits) | set(requests)
    if any(r.startswith(HUGEPAGES) for r in names) and not names & {"cpu", "memory"}:
        said.append((at, "Forbidden: HugePages require cpu or memory",
                     "request cpu or memory with the huge pages"))
    return said


def _rename(r: str) -> str:
    """The fix for a resource name no container may request."""
    known = r.lower() if r.lower() in CONTAINER_RESOURCES else None
    return (f"did you mean {known}?" if known else
            "name cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource "
            "such as example.com/device")


def _read_otherwise(r: str, value, path: str, name) -> tuple | None:
    """(path, words, fix, who) for an amount the API server cannot decode as a quantity (a
    list, a mapping, a boolean: Quantity.UnmarshalJSON parses the raw JSON text), or one
    kubectl and the API server read as another amount than its text (numbers.api_quantity:
    an unquoted `010` is 8 to them); None otherwise."""
    if isinstance(value, (dict, list, bool)):
        return (path, f"Invalid value: {quantity.FORMAT_WRONG}",
                f"write {r} as one quantity such as 1 or 10Gi",
                f"the API server cannot decode {r} of container {name!r} (a "
                f"{type(value).__name__.replace('dict', 'mapping')} is no quantity)")
    _, why = numbers.api_quantity(value)
    if why is None:
        return None
    return (path, f"Invalid value: \"{value}\": {why}", "quote the amount you mean",
            f"krm-fn cannot tell which amount the API server keeps for container {name!r}")


def _unread(r: str, text: str, path: str, name) -> tuple:
    """(path, words, fix[, who]) for an amount of `r` that parse() refuses: the API
    server's own error when ParseQuantity refuses it too, else what krm-fn does not read
    (`who`: whose verdict the message gives, container `name`'s)."""
    error = quantity.api_error(text)
    if error is not None:
        return (path, f"Invalid value: \"{text}\": {error}",
                f"write {r} as a Kubernetes quantity such as 10Gi, 10G or 1 (suffixes n u m "
                f"k M G T P E Ki Mi Gi Ti Pi Ei, or e<exponent>)")
    try:
        quantity.parse(text.strip())
        why = "krm-fn cannot read it"        # not reached: parse_signed refused it
    except quantity.QuantityError as e:
        why = str(e)
    return (path, f"Invalid value: \"{text}\": {why}",
            f"write {r} as a plain quantity such as 10Gi or 1",
            f"krm-fn does not read the amount, so it cannot tell what the API server and the "
            f"kubelet make of container {name!r} (Kubernetes caps an amount above 2^63-1 "
            f"or keeps more than the kubelet's int64 holds)")
