"""The rollout krm-fn's edit starts, against the namespace's ResourceQuotas: a changed pod
template makes the workload's controller replace every pod, and some strategies create
the new pods before they delete the old ones. A quota the old and the new pods each fit at
steady state (quotatotal judges that) may have no room for both during the transition;
the new pods are then refused ("exceeded quota") and the cluster keeps the old, unpinned
pods.

Sources: https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment
(maxSurge, maxUnavailable: 25% each by default, surge rounded up, unavailable down);
kubernetes/kubernetes pkg/controller/deployment/rolling.go (rolloutRolling,
reconcileNewReplicaSet, reconcileOldReplicaSets, cleanupUnhealthyReplicas,
scaleDownOldReplicaSetsForRollingUpdate), pkg/controller/deployment/util/deployment_util.go
(ResolveFenceposts, NewRSNewReplicas, MaxUnavailable), pkg/apis/apps/v1/defaults.go
(SetDefaults_Deployment); Argo Rollouts' blue-green strategy
(https://argoproj.github.io/argo-rollouts/features/bluegreen/).

Per workload kind, when krm-fn changes its pod template:

- Deployment, RollingUpdate: `simulate` runs the controller's loop (the new ReplicaSet
  scaled up within replicas + maxSurge, its pods created while the quotas admit them, the
  old ReplicaSet scaled down as far as maxUnavailable allows, counting the new pods
  available as soon as they exist: the most favourable case, so a rollout it finds stuck
  is stuck). With maxUnavailable 0 it needs room for the old pods plus one new pod at
  every step; with maxUnavailable >= 1 the old pods go first, and a quota both steady
  states fit always has room.
- Deployment, Recreate; StatefulSet (RollingUpdate deletes a pod before it creates its
  replacement, OnDelete waits for the user); DaemonSet (maxSurge 0 by default, and its
  pods are not counted: resourcequota.UNCOUNTED): nothing beyond the steady state.
- Argo Rollout, blueGreen: the new ReplicaSet's pods all run beside the old ones before the
  switch (`fits_beside`); canary: its steps are not modelled (an info).
"""
from __future__ import annotations

from krm_fn.admission import resourcequota as rq

SOURCE = ("https://kubernetes.io/docs/concepts/workloads/controllers/deployment/"
          "#rolling-update-deployment; kubernetes/kubernetes pkg/controller/deployment/"
          "rolling.go, pkg/controller/deployment/util/deployment_util.go ResolveFenceposts")
ARGO_SOURCE = "https://argoproj.github.io/argo-rollouts/features/bluegreen/"
DEFAULT = "25%"     # pkg/apis/apps/v1/defaults.go SetDefaults_Deployment


def _scaled(value, replicas: int, round_up: bool) -> tuple:
    """(intstr GetScaledValueFromIntOrPercent of `value` for `replicas`, None) or (None,
    why krm-fn cannot read it): a whole number, or "<digits>%" of replicas rounded up or
    down."""
    from krm_fn import numbers
    text = str(value).strip()
    if isinstance(value, str) and text.endswith("%"):
        digits = text[:-1]
        if digits.isdigit() and digits.isascii():
            part = int(digits) * replicas
            return (-(-part // 100) if round_up else part // 100), None
        return None, f"{text} is no percentage"
    got, why = numbers.api_int(value)
    if got is None or got < 0:
        return None, why or f"{text} is negative"
    return got, None


def strategy(obj: dict, replicas: int) -> tuple:
    """(kind, maxSurge, maxUnavailable, how they are written) of Deployment `obj` (plain
    data) with `replicas`: ("Recreate", 0, 0, ""), ("RollingUpdate", surge, unavailable,
    "maxSurge 1 and maxUnavailable 0 (25% of 2 replicas, rounded up / down)") as
    ResolveFenceposts resolves them (both 0: unavailable 1); (None, 0, 0, why) when krm-fn
    cannot read them."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    strat = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
    kind = strat.get("type") or "RollingUpdate"
    if kind == "Recreate":
        return "Recreate", 0, 0, ""
    if kind != "RollingUpdate":
        return None, 0, 0, f"spec.strategy.type {kind} is no Deployment strategy"
    ru = strat.get("rollingUpdate") if isinstance(strat.get("rollingUpdate"), dict) else {}
    got = []
    for name, up in (("maxSurge", True), ("maxUnavailable", False)):
        value = ru.get(name)
        value = DEFAULT if value is None else value
        n, why = _scaled(value, replicas, up)
        if n is None:
            return None, 0, 0, f"spec.strategy.rollingUpdate.{name}: {why}"
        shown = f"{name} {n}"
        if str(value).strip().endswith("%"):
            shown += (f" ({str(value).strip()} of {replicas} replica"
                      f"{'' if replicas == 1 else 's'}, rounded "
                      f"{'up' if up else 'down'}{', the default' if ru.get(name) is None else ''})")
        got.append((n, shown))
    (surge, s_text), (unavailable, u_text) = got
    if surge == 0 and unavailable == 0:
        unavailable, u_text = 1, u_text + " (1: both are 0)"
    return "RollingUpdate", surge, min(unavailable, replicas), f"{s_text} and {u_text}"


def _fits(room: list, use: dict, add: int = 1) -> int | None:
    """The index of the first quota of `room` ([{resource: room left}] per quota counting the
    pod; None where it does not) with no room for `add` pods of usage `use`, or None."""
    for i, left in enumerate(room):
        if left is not None and any(rq.used(use, k) * add > v for k, v in left.items()):
            return i
    return None


def simulate(replicas: int, surge: int, unavailable: int, old_pods: int, fits) -> tuple:
    """(whether the rollout completes, (old pods, new pods) where it stops) of a Deployment
    of `replicas` whose old ReplicaSet runs `old_pods` pods (its spec.replicas is
    `replicas`: the rest were refused), the rolling.go loop run to its fixed point;
    `fits(old, new)`: whether a new pod may be created beside `old` old and `new` new
    pods. New pods count as available as soon as they exist."""
    old_rs, old, new_rs, new = replicas, old_pods, 0, 0
    min_available = replicas - unavailable
    for _ in range(4 * replicas + 8):
        before = (old_rs, old, new_rs, new)
        # reconcileNewReplicaSet / NewRSNewReplicas
        if new_rs < replicas and old_rs + new_rs < replicas + surge:
            new_rs += min(replicas + surge - old_rs - new_rs, replicas - new_rs)
        # the ReplicaSet controller creates the pods the quotas admit
        while new < new_rs and fits(old, new):
            new += 1
        # reconcileOldReplicaSets: cleanupUnhealthyReplicas, then the available ones
        most = old_rs + new_rs - min_available - (new_rs - new)
        if most > 0:
            old_rs -= min(most, old_rs - old)
            available = old + new
            if available > min_available:
                old_rs -= min(old_rs, available - min_available)
            old = min(old, old_rs)
        if (old_rs, old, new_rs, new) == before:
            break
    return old == 0 and new == replicas, (old, new)


def need(replicas: int, old_pods: int, old_use: dict, new_use: dict, keys) -> dict:
    """{quota resource: the largest usage of the workload's pods at a pod creation} along
    a rollout with maxUnavailable 0 and one new pod at a time (the least any rolling update
    needs): before new pod k+1, the old pods left and k new ones."""
    out = {k: 0 for k in keys}
    old = old_pods
    for k in range(replicas):
        for key in keys:
            out[key] = max(out[key], old * rq.used(old_use, key)
                           + (k + 1) * rq.used(new_use, key))
        old = min(old, replicas - (k + 1))
    return out


def _in(name: str, counted) -> bool:
    return counted is None or name in counted


def _base(pairs: list, shares: list, index: int, pick, counts: tuple) -> list:
    """[{resource: usage}] per quota of `pairs` of the render's other workloads of the
    namespace at pick(their usage as the input writes them, as rendered): `min`, the least
    they use on either side of their own rollouts, or `max`; `counts`: ([pods admitted
    with the input's usage], [as rendered], [whether krm-fn's edit rolls it out]) per share
    (quotatotal.admitted): one that does not roll out keeps the pods it runs."""
    out = []
    for name, hard in pairs:
        used = {k: 0 for k in hard}
        for j, x in enumerate(shares):
            if j == index:
                continue
            for k in hard:
                a = (rq.used(x.before, k) * counts[0][j] if _in(name, x.counted_before)
                     else 0)
                b = rq.used(x.use, k) * counts[1][j] if _in(name, x.counted) else 0
                used[k] += pick(a, b) if counts[2][j] else a
        out.append(used)
    return out


def _blocking(pairs: list, base: list, share, old: int, new: int) -> tuple | None:
    """(quota index, {resource: usage with one more new pod} above its hard) of the first
    quota that refuses a new pod of `share` beside `old` old and `new` new pods, or None."""
    for i, (name, hard) in enumerate(pairs):
        if not _in(name, share.counted):
            continue
        old_n = old if _in(name, share.counted_before) else 0
        total = {k: base[i][k] + old_n * rq.used(share.before, k)
                 + (new + 1) * rq.used(share.use, k) for k in hard}
        over = {k: v for k, v in total.items() if v > hard[k]}
        if over:
            return i, over
    return None


def check(obj: dict, namespace: str, pairs: list, shares: list, index: int,
          counts: tuple) -> tuple | None:
    """(certain: True for an error, False for an info; message) about the rollout of the
    workload `obj` (plain data; shares[index], quotatotal.Share, in the namespace's
    `pairs` [(quota name, {resource: hard})]) that krm-fn's edit starts; `counts`: ([pods
    each share runs at steady state as the input writes it], [as rendered], [whether
    krm-fn's edit rolls it out]): its old ReplicaSet runs counts[0][index] pods; None when
    it has room or starts no surge."""
    from krm_fn.workloads import group_of
    s = shares[index]
    old_pods = counts[0][index]
    key = (group_of(obj.get("apiVersion")), obj.get("kind"))
    if s.count == 0 or not pairs:
        return None
    name = (obj.get("metadata") or {}).get("name")
    who = f"{key[1]} {name}"
    if key == ("apps", "Deployment"):
        kind, surge, unavailable, text = strategy(obj, s.count)
        if kind is None:
            return False, (f"krm-fn cannot tell whether the ResourceQuotas of namespace "
                           f"{namespace or 'default'} have room for the rollout of {who} that "
                           f"krm-fn's edit starts: {text} ({SOURCE})")
        if kind == "Recreate":
            return None
        for pick in (min, max):
            base = _base(pairs, shares, index, pick, counts)
            done, (old, new) = simulate(
                s.count, surge, unavailable, old_pods,
                lambda o, n: _blocking(pairs, base, s, o, n) is None)
            if not done:
                return pick is min, _stuck(who, namespace, pairs, base, shares, index,
                                           old_pods, old, new, text, pick is min)
        return None
    if key == ("argoproj.io", "Rollout"):
        return _argo(obj, who, namespace, pairs, shares, index, counts)
    return None


def _stuck(who: str, namespace: str, pairs: list, base: list, shares: list, index: int,
           old_pods: int, old: int, new: int, text: str, certain: bool) -> str:
    s = shares[index]
    qi, over = _blocking(pairs, base, s, old, new)
    qname, hard = pairs[qi]
    keys = sorted(over)
    where = f"ResourceQuota {qname} of namespace {namespace or 'default'}"
    others = {k: base[qi][k] for k in keys if base[qi][k]}
    beside = f"{_pods(old, 'old')}" + (f" and {_pods(new, 'new')}" if new else "")
    lead = "" if certain else (", with the render's other workloads of the namespace at the "
                               "larger of their usages before and after their own rollouts,")
    msg = (f"{where} {'has' if certain else 'may have'} no room for the rollout of {who} "
           f"that krm-fn's edit starts (it changes the pod template): with RollingUpdate "
           f"{text} the Deployment controller creates a new pod before it deletes an old one, "
           f"and beside {beside}{lead} the next new pod makes {rq._list(keys, over)}, above "
           f"its hard {rq._list(keys, hard)}")
    if others:
        msg += (f" (the render's other pods in the namespace use {rq._list(sorted(others), others)}"
                f" of it{'' if certain else ' there'})")
    need_all = need(s.count, old_pods, s.before, s.use, keys)
    raise_by = {k: base[qi][k] + need_all[k] - hard[k] for k in keys}
    grow = " and ".join(f"{k} by {rq._show(k, raise_by[k])} (to "
                        f"{rq._show(k, hard[k] + raise_by[k])})"
                        for k in keys if raise_by[k] > 0)
    if certain:
        msg += (f": the API server refuses it (\"exceeded quota: {qname}\"), the rollout "
                f"stops there for good (the Deployment reports ProgressDeadlineExceeded) and "
                f"the cluster keeps running the old pods, which krm-fn's changes do not pin")
    else:
        msg += (": whether the rollout stalls there depends on the order the workloads "
                "roll out, which krm-fn does not know")
    msg += (f"; {'raise its hard ' + grow + ', or ' if grow else ''}set "
            f"spec.strategy.rollingUpdate.maxUnavailable to 1 or more (old pods go first), or "
            f"spec.strategy.type: Recreate; other pods of "
            f"the namespace, which krm-fn does not see, count too ({SOURCE})")
    return msg


def _pods(n: int, what: str) -> str:
    return f"{n} {what} pod" if n == 1 else f"{n} {what} pods"


def _argo(obj: dict, who: str, namespace: str, pairs: list, shares: list, index: int,
          counts: tuple) -> tuple | None:
    """A blue-green Rollout runs all its new pods beside the old ones until the switch
    (previewReplicaCount pods first, then every replica before the active Service moves;
    the old ones go scaleDownDelaySeconds later): an error when a quota has no room for
    them. A canary's steps are not modelled: an info when a first new pod does not fit
    beside the old ones."""
    s, old_pods = shares[index], counts[0][index]
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    strat = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
    base = _base(pairs, shares, index, min, counts)
    if "blueGreen" in strat:
        for n in range(s.count):
            hit = _blocking(pairs, base, s, old_pods, n)
            if hit is None:
                continue
            qname, hard = pairs[hit[0]]
            keys = sorted(hit[1])
            total = {k: base[hit[0]][k] + old_pods * rq.used(s.before, k)
                     + s.count * rq.used(s.use, k) for k in keys}
            grow = " and ".join(f"{k} by {rq._show(k, total[k] - hard[k])} (to "
                                f"{rq._show(k, total[k])})" for k in keys)
            return True, (
                f"ResourceQuota {qname} of namespace {namespace or 'default'} has no room for "
                f"the blue-green rollout of {who} that krm-fn's edit starts (it changes the "
                f"pod template): it runs the {s.count} new pods beside the {old_pods} old "
                f"ones until it switches, and the quota has room for {n} of them: the API "
                f"server refuses the rest (\"exceeded quota: {qname}\"), the Rollout never "
                f"switches and the cluster keeps running the old pods, which krm-fn's "
                f"changes do not pin; raise its hard {grow}; other pods of the namespace, "
                f"which krm-fn does not see, count too ({ARGO_SOURCE})")
        return None
    if "canary" in strat and _blocking(pairs, base, s, old_pods, 0) is not None:
        qname = pairs[_blocking(pairs, base, s, old_pods, 0)[0]][0]
        return False, (f"ResourceQuota {qname} of namespace {namespace or 'default'} has no "
                       f"room for a new pod of {who} beside its {old_pods} old ones, and "
                       f"krm-fn's edit starts a canary rollout; krm-fn does not model a "
                       f"canary's steps (maxSurge, setWeight), so it cannot tell whether the "
                       f"rollout stalls (https://argoproj.github.io/argo-rollouts/features/canary/)")
    return None
