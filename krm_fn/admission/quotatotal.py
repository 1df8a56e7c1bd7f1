"""The namespace total against its ResourceQuotas: every pod the render's workloads keep in
one namespace, counted together, as the API server's ResourceQuota admission counts them.

Source: https://kubernetes.io/docs/concepts/policy/resource-quotas/ and kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go (CheckRequest:
a pod is refused when the quota's used plus the pod's usage is above `spec.hard` for one of
the resources; the usage of each admitted pod is added to `status.used` at once),
pkg/quota/v1/evaluator/core/pods.go (PodUsageFunc, one pod's usage: resourcequota._usage).

resourcequota.refused judges one workload alone; this module judges them together. The pods
are created in render order, each workload's replicas in turn (a Deployment's ReplicaSet
creates its pods one after another; the controllers of two workloads run side by side, so
in a cluster the order across workloads is a race: coarser on purpose, `render-order`). A
pod that does not fit is refused and uses nothing, so a later, smaller pod may still fit.
Pods of the namespace that are not in the render count too and krm-fn does not see them
(`other-pods`): the total is a lower bound.
"""
from __future__ import annotations

from dataclasses import dataclass

from krm_fn.admission import quotascope
from krm_fn.admission import resourcequota as rq
from krm_fn.admission.resourcequota import SOURCE

TOTAL_SOURCE = (SOURCE + ", pkg/quota/v1/evaluator/core/pods.go")


@dataclass(frozen=True)
class Share:
    """One workload of the namespace: `ref` (results.Ref); `count`: its pods at once;
    `use`: one pod's usage as rendered ({quota resource: amount}, resourcequota._usage);
    `before`: one pod's usage as the input wrote it; `tuned`: krm-fn judged it (its own
    check, resourcequota.refused, has already named what it exceeds alone); `counted` /
    `counted_before`: the names of the quotas whose scopes count the pod as rendered / as
    the input wrote it (quotascope.matches), None: every quota; `refused`: the names of
    the quotas that count it and refuse every pod as rendered, whatever the amounts
    (resourcequota.unstated: said on its own)."""

    ref: object
    count: int
    use: dict
    before: dict
    tuned: bool = False
    counted: frozenset | None = None
    counted_before: frozenset | None = None
    refused: frozenset = frozenset()


def _in(name: str, counted) -> bool:
    return counted is None or name in counted


@dataclass(frozen=True)
class Refusal:
    """Share `index` (of the list given to `judge`) loses pods to ResourceQuota `quota`:
    `message`; `broken`: the input's own amounts fit and krm-fn's edits are what breaks it."""

    index: int
    quota: str
    message: str
    broken: bool


def _fits(used: dict, hard: dict, use: dict, count: int) -> int:
    """How many more pods of usage `use` (up to `count`) fit between `used` and `hard`."""
    n = count
    for k, h in hard.items():
        if rq.used(use, k):
            room = h - used[k]
            n = min(n, max(0, int(room // rq.used(use, k))))
    return n


def admitted(quotas: list, shares: list, usage: str = "use") -> list:
    """[(pods admitted, {quota index: True} of the quotas that refused one)] per share, the
    pods created in render order against `quotas` ((name, {resource: hard})) starting
    from nothing used: each pod is admitted when it fits every quota that counts it
    (Share.counted, or Share.counted_before with `usage` "before")."""
    used = [{k: 0 for k in hard} for _, hard in quotas]
    out = []
    for s in shares:
        use = getattr(s, usage)
        counted = s.counted if usage == "use" else s.counted_before
        mine = [i for i, (name, _) in enumerate(quotas) if _in(name, counted)]
        n = min((_fits(used[i], quotas[i][1], use, s.count) for i in mine), default=s.count)
        if usage == "use" and any(quotas[i][0] in s.refused for i in mine):
            out.append((0, {}))
            continue
        for i in mine:
            for k in quotas[i][1]:
                used[i][k] += rq.used(use, k) * n
        stop = {}
        if n < s.count:
            stop = {i: True for i in mine
                    if any(used[i][k] + rq.used(use, k) > quotas[i][1][k]
                           for k in quotas[i][1])}
        out.append((n, stop))
    return out


def judge(namespace: str, quotas: list, shares: list, order: str = "") -> list:
    """The Refusals of `shares` (Share, in render order) against `quotas` (the namespace's
    ResourceQuota objects, plain data; the ones resourcequota does not model are left to
    `unmodelled`); a quota counts only the shares whose scopes it selects (Share.counted);
    `order`: how the shares' order is said, when it is not the render's."""
    modelled = [q for q in quotas if rq.modelled(q)]
    pairs = [(str((q.get("metadata") or {}).get("name")), rq._hard(q)) for q in modelled]
    if not pairs or not shares:
        return []
    got = admitted(pairs, shares)
    out = []
    for i, (s, (n, stop)) in enumerate(zip(shares, got)):
        if n == s.count or s.refused:
            continue
        alone = admitted(pairs, [s])[0][0]
        for qi in stop:
            name, hard = pairs[qi]
            r = _refusal(i, namespace, name, hard, shares, n, order)
            if s.tuned and alone == n and not r.broken:
                continue    # resourcequota.refused already says it, with this count
            out.append(r)
    return out


def _total(shares: list, keys: list, usage: str) -> dict:
    return {k: sum(rq.used(getattr(s, usage), k) * s.count for s in shares) for k in keys}


def _refusal(i: int, namespace: str, name: str, hard: dict, shares: list,
             fit: int, order: str = "") -> Refusal:
    s = shares[i]
    mine = [x for x in shares if _in(name, x.counted)]
    total = _total(mine, list(hard), "use")
    keys = [k for k in sorted(hard) if total[k] > hard[k]]
    before = _total([x for x in shares if _in(name, x.counted_before)], keys, "before")
    broken = all(before[k] <= hard[k] for k in keys)
    where = f"ResourceQuota {name} of namespace {namespace or 'default'}"
    of = ", ".join(f"{x.ref.kind} {x.ref.name} {x.count} × {rq._list(keys, x.use)}"
                   for x in mine if x.count)
    text = (f"{where}: the render's pods in the namespace need {rq._list(keys, total)} "
            f"together ({of}), above its hard {rq._list(keys, hard)}: "
            f"{order or 'created in render order'}, the API server admits {fit} of the {_pods(s.count)} of {s.ref.kind} "
            f"{s.ref.name} and refuses the rest (\"exceeded quota: {name}\"; its controller "
            f"reports FailedCreate); the controllers of the workloads create their pods side "
            f"by side, so which workload loses pods is a race, and other pods of the "
            f"namespace, which krm-fn does not see, count too")
    if broken:
        text += (f"; the input's own amounts fit ({rq._list(keys, before)}): krm-fn raised "
                 f"{_raised(mine, keys)}, and that is what breaks it")
    grow = " and ".join(f"{k} by {rq._show(k, total[k] - hard[k])} (to "
                        f"{rq._show(k, total[k])})" for k in keys)
    text += (f"; raise its hard {grow}, or lower the replicas or the resources"
             + (" (krm-fn.dev/cpus: N on a workload pins N whole CPUs per pod)"
                if broken else "") + f" ({TOTAL_SOURCE})")
    return Refusal(i, name, text, broken)


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


def _raised(shares: list, keys: list) -> str:
    """`Deployment a's cpu from 3500m to 4 per pod (limits.cpu, requests.cpu)`, for each
    workload and resource whose usage per pod krm-fn's edits raised."""
    out = []
    for x in shares:
        seen: dict = {}
        for k in keys:
            a, b = rq.used(x.before, k), rq.used(x.use, k)
            if b > a:
                seen.setdefault((rq.counted(k)[1], a, b), []).append(k)
        for (res, a, b), ks in seen.items():
            out.append(f"{x.ref.kind} {x.ref.name}'s {res} from {rq._show(ks[0], a)} to "
                       f"{rq._show(ks[0], b)} per pod ({', '.join(ks)})")
    return ", ".join(out)


def unmodelled(quota: dict) -> str | None:
    """The info for a ResourceQuota krm-fn does not count against: one with a `spec.hard`
    krm-fn models whose scopes it cannot evaluate (quotascope.problem), else None."""
    if not rq._hard(quota):
        return None
    why = quotascope.problem(quota)
    if why is None:
        return None
    name = (quota.get("metadata") or {}).get("name")
    ns = (quota.get("metadata") or {}).get("namespace") or "default"
    return (f"ResourceQuota {name} of namespace {ns}: krm-fn cannot evaluate its scopes "
            f"({why}), so it counts no pod of the render against it ({quotascope.SOURCE}; "
            f"pkg/apis/core/validation/validation.go validateResourceQuotaScopes, "
            f"validateScopedResourceSelectorRequirement)")


def unmodelled_names(quota: dict) -> list:
    """The infos for the names of `quota`'s `spec.hard` krm-fn does not count the render's
    pods against (resourcequota.quota_names): one the API server counts no pod against
    (an extended resource without `requests.`; a name without a domain it does not know,
    which its validation refuses), one krm-fn cannot tell for (DRA's device classes)."""
    missed, unknown = rq.quota_names(quota)
    name = (quota.get("metadata") or {}).get("name")
    ns = (quota.get("metadata") or {}).get("namespace") or "default"
    where = f"ResourceQuota {name} of namespace {ns}"
    out = []
    plain = [k for k in missed if "/" not in k]
    domain = [k for k in missed if "/" in k]
    if domain:
        out.append(f"{where}: the API server counts no pod against {', '.join(domain)}: a "
                   f"quota limits an extended resource only as requests.<name> (and "
                   f"counts no name of the kubernetes.io domain), so krm-fn does not check the render's pods against "
                   f"{'it' if len(domain) == 1 else 'them'} ({EXTENDED_SOURCE})")
    if plain:
        out.append(f"{where}: {', '.join(plain)} is no resource the API server knows for a "
                   f"quota: its validation refuses the quota (\"must be a standard resource "
                   f"type or fully qualified\"), and pods are counted against none of it "
                   f"(pkg/apis/core/validation/validation.go ValidateResourceQuotaResourceName)")
    if unknown:
        out.append(f"{where}: krm-fn does not count the render's pods against "
                   f"{', '.join(unknown)}: DRA's extended resources are counted from the "
                   f"ResourceClaims the scheduler makes for a pod, which the render does not "
                   f"hold; the API server counts them ({EXTENDED_SOURCE})")
    return out


EXTENDED_SOURCE = ("https://kubernetes.io/docs/concepts/policy/resource-quotas/"
                   "#resource-quota-for-extended-resources; kubernetes/kubernetes "
                   "pkg/quota/v1/evaluator/core/pods.go MatchingResources, "
                   "isExtendedResourceNameForQuota")
