"""Karpenter on AWS: the NodePools of the input that provision a node pool's nodes, and the
reservations of the pool's plan mirrored into their EC2NodeClass's `spec.kubelet`.

Karpenter plans nodes with its own view of allocatable: capacity minus kubeReserved (by
default CPU 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above, and memory
11 x pods + 255 Mi), systemReserved and evictionHard (100Mi) as `EC2NodeClass.spec.kubelet`
gives them (aws/karpenter-provider-aws pkg/providers/instancetype/types.go
kubeReservedResources, systemReservedResources, evictionThreshold). On AL2023 it appends
its own NodeConfig after the parts of `spec.userData`, so what `spec.kubelet` sets wins on
the node (pkg/providers/amifamily/bootstrap/nodeadm.go; the `eks` format's NodeConfig goes
in the user data). Mirroring the plan's reservation into `spec.kubelet` makes Karpenter's
simulation, the kubelet and krm-fn's verdict count the same allocatable:

- kubeReserved and systemReserved with the keys Karpenter takes (cpu, memory,
  ephemeral-storage, pid); cpu and memory always written (`"0"` when the plan has none, so
  neither Karpenter's defaults nor nodeadm's apply). With reservedSystemCPUs the kubelet
  deletes kubeReserved.cpu and sets systemReserved.cpu to the number of reserved CPUs
  (cmd/kubelet/app/server.go), so those are what Karpenter gets: kubeReserved.cpu "0",
  systemReserved.cpu the count;
- evictionHard with the signals Karpenter takes (memory.available, nodefs.available,
  nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available);
- maxPods when the plan sets it (kubelet.extra.maxPods). Without it Karpenter gives each node
  the instance type's ENI-limited pod count, which krm-fn does not know (a warning when the
  EC2NodeClass names one: set kubelet.extra.maxPods to it).

A NodePool provisions a pool's nodes when every label of the pool's nodeSelector is one its
nodes can carry: a `spec.template.metadata.labels` entry with that value, or requirements on
the key that all admit the value (In, NotIn, Exists, DoesNotExist, Gt/Lt/Gte/Lte), or a
label Karpenter sets from the instance type when no requirement excludes it (karpenter.sh/v1
NodePool, kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go, labels.go WellKnownLabels).
The API versions are those of Karpenter v1 (karpenter.sh/v1, karpenter.k8s.aws/v1).
"""
from __future__ import annotations

from krm_fn.node import fields

NODEPOOL = ("karpenter.sh/v1", "NodePool")
NODECLASS = ("karpenter.k8s.aws/v1", "EC2NodeClass")
NODECLASS_GROUP = "karpenter.k8s.aws"
SOURCE = ("https://github.com/aws/karpenter-provider-aws/blob/main/pkg/providers/"
          "instancetype/types.go")
# EC2NodeClass.spec.kubelet: the keys its kubeReserved/systemReserved take, and the signals
# of evictionHard (pkg/apis/v1/ec2nodeclass.go CEL rules)
RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
SIGNALS = ("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
           "imagefs.inodesFree", "pid.available")
# labels Karpenter can put on a node from the instance type and offering without the
# NodePool naming them (kubernetes-sigs/karpenter pkg/apis/v1/labels.go WellKnownLabels and
# the AWS provider's; a requirement on the key still restricts them)
WELL_KNOWN = ("node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
              "node.kubernetes.io/windows-build", "topology.kubernetes.io/zone",
              "topology.kubernetes.io/region", "karpenter.sh/capacity-type",
              "karpenter.k8s.aws/")
# Karpenter labels every node with the name of the NodePool that made it
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# labels every NodePool's nodes can carry: a selector of only these singles out no NodePool
BROAD = ("kubernetes.io/os", "kubernetes.io/arch")


def _get(obj, *path):
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _admits(req: dict, value: str) -> bool:
    """Whether NodeSelectorRequirement `req` admits label value `value`."""
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or [] if v is not None] \
        if isinstance(req.get("values"), list) else []
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return True
    if op == "DoesNotExist":
        return False
    if op in ("Gt", "Lt", "Gte", "Lte") and values:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return {"Gt": a > b, "Lt": a < b, "Gte": a >= b, "Lte": a <= b}[op]
    return False


def _name(obj) -> str | None:
    """metadata.name of `obj` when it is a non-empty string, else None."""
    name = _get(obj, "metadata", "name")
    return name if isinstance(name, str) and name else None


def provisions(nodepool: dict, selector: dict) -> bool:
    """Whether karpenter.sh/v1 NodePool `nodepool` (plain data) can provision a node that
    carries every label of `selector` (str -> str): `karpenter.sh/nodepool` names it, and
    every other label is a template label, admitted by its requirements on the key, or one
    Karpenter sets from the instance type (WELL_KNOWN)."""
    template = _get(nodepool, "spec", "template")
    labels = _get(template, "metadata", "labels")
    labels = labels if isinstance(labels, dict) else {}
    reqs = _get(template, "spec", "requirements")
    reqs = [r for r in reqs if isinstance(r, dict)] if isinstance(reqs, list) else []
    for key, value in selector.items():
        if key == NODEPOOL_LABEL:
            if _name(nodepool) != value:
                return False
            continue
        if key in labels:
            if str(labels[key]) != value:
                return False
            continue
        on_key = [r for r in reqs if r.get("key") == key]
        if on_key:
            if not all(_admits(r, value) for r in on_key):
                return False
            continue
        if not any(key == w or (w.endswith("/") and key.startswith(w)) for w in WELL_KNOWN):
            return False
    return True


def wanted(plan) -> dict:
    """The EC2NodeClass spec.kubelet entries for `plan` (a NodePlan): {field: {key: str} or
    int}, in the order kubeReserved, systemReserved, evictionHard, maxPods."""
    merged = plan.merged or {}
    out: dict = {}
    for name in fields.RESERVATIONS:
        have = merged.get(name)
        have = have if isinstance(have, dict) else {}
        m = {k: str(have[k]) for k in RESERVED_KEYS if k in have}
        out[name] = m
    pinned = len(plan.reserved_cpus)
    kube, system = (out[n] for n in fields.RESERVATIONS)
    if pinned:
        kube["cpu"] = "0"
        system["cpu"] = str(pinned)
    for m in (kube, system):
        for key in ("cpu", "memory"):
            m.setdefault(key, "0")
        out_order = {k: m[k] for k in RESERVED_KEYS if k in m}
        m.clear()
        m.update(out_order)
    eviction = merged.get("evictionHard")
    eviction = eviction if isinstance(eviction, dict) else {}
    out["evictionHard"] = {s: str(eviction[s]) for s in SIGNALS if s in eviction}
    pods = merged.get("maxPods")
    if isinstance(pods, int) and not isinstance(pods, bool):
        out["maxPods"] = pods
    return out


def put(obj: dict, path: tuple, value) -> None:
    """Set `path` (str keys) in plain data `obj` to `value`, making the mappings on the way
    (one that is not a mapping is replaced)."""
    for key in path[:-1]:
        nxt = obj.get(key)
        if not isinstance(nxt, dict):
            nxt = obj[key] = {}
        obj = nxt
    obj[path[-1]] = value


def _is(obj, kind: tuple) -> bool:
    return isinstance(obj, dict) and (obj.get("apiVersion"), obj.get("kind")) == kind


def has_nodepools(items: list) -> bool:
    """Whether `items` hold a karpenter.sh/v1 NodePool (a cheap look before `mirror`)."""
    return any(_is(o, NODEPOOL) for o in items)


def mirror(items: list, pools: list, frozen: set, ref=None,
           paths: dict | None = None) -> tuple[dict, list]:
    """The edits that put each pool's reservation into the EC2NodeClass its NodePools use.

    `items`: the input (plain data); `pools`: [(pool name, nodeSelector, NodePlan)] of the
    pools emitted this render; `frozen`: indices of items krm-fn must not edit (YAML aliases,
    local-config objects: an error names what to set instead). Returns ({item index:
    [Change]}, [Result]): a Change per spec.kubelet entry that differs (one info result
    listing those that were unset, a warning naming each value it replaces). Errors, and no
    edit of that EC2NodeClass: it is not in the input, cannot be edited, is named twice,
    has a spec.kubelet of another shape than Karpenter's, or serves pools that want
    different values. Warnings: a pool whose nodeSelector singles out no NodePool (only
    BROAD labels), a pool no NodePool provisions (resourceRef `ref`, the function config;
    path `paths[pool name]`, its nodeSelector), an EC2NodeClass that sets maxPods when the
    plan does not."""
    classes: dict = {}
    for i, o in enumerate(items):
        if _is(o, NODECLASS) and _name(o):
            classes.setdefault(_name(o), []).append(i)
    edits = _Edits(items)
    edits.ref, edits.paths = ref, paths or {}
    nodepools = [o for o in items if _is(o, NODEPOOL) and _name(o)]
    for pool_name, selector, plan in pools:
        if all(k in BROAD for k in selector):
            edits.broad(pool_name, selector)
            continue
        want = wanted(plan)
        serving = [np for np in nodepools if provisions(np, selector)]
        if not serving:
            edits.unprovisioned(pool_name, selector)
        for np in serving:
            ref = _get(np, "spec", "template", "spec", "nodeClassRef")
            if not isinstance(ref, dict) or (ref.get("group"), ref.get("kind")) != \
                    (NODECLASS_GROUP, NODECLASS[1]):
                continue
            name = ref.get("name")
            found = classes.get(name, []) if isinstance(name, str) and name else []
            if len(found) != 1 or found[0] in frozen:
                edits.unreachable(pool_name, np, name, found, want)
            else:
                edits.nodeclass(pool_name, np, found[0], want, bool(plan.reserved_cpus))
    return edits.finish()


class _Edits:
    """The changes and results of `mirror`, and which pool set each EC2NodeClass entry."""

    def __init__(self, items: list):
        self.items = items
        self.changes: dict = {}
        self.results: list = []
        self.set_by: dict = {}          # (item index, path) -> (pool name, value)
        self.done: set = set()          # (pool name, item index) edited
        self.failed: set = set()        # item indices left unchanged because of an error
        self.ref, self.paths = None, {}  # the function config's Ref; pool -> result path

    def finish(self) -> tuple[dict, list]:
        """(changes, results), without the changes of an EC2NodeClass an error is about."""
        return ({i: c for i, c in self.changes.items() if i not in self.failed},
                self.results)

    def broad(self, pool_name: str, selector: dict) -> None:
        from krm_fn.results import WARNING, Result, value_text
        self.results.append(Result(
            f"node pool {pool_name!r}: its nodeSelector {value_text(selector)} singles out no "
            f"Karpenter NodePool (every NodePool's nodes carry it), so krm-fn edits no "
            f"EC2NodeClass for it; give the pool a label only its NodePools' nodes carry, "
            f"such as {NODEPOOL_LABEL}: <NodePool name>", WARNING, self.ref,
            self.paths.get(pool_name)))

    def unprovisioned(self, pool_name: str, selector: dict) -> None:
        from krm_fn.results import WARNING, Result, value_text
        self.results.append(Result(
            f"node pool {pool_name!r}: no karpenter.sh/v1 NodePool of the input can provision "
            f"nodes with its nodeSelector {value_text(selector)} (a template label, a "
            f"requirement admitting the value, or {NODEPOOL_LABEL}: <name>), so krm-fn edits "
            f"no EC2NodeClass for it", WARNING, self.ref, self.paths.get(pool_name)))

    def unreachable(self, pool_name: str, np: dict, name, found: list,
                    want: dict) -> None:
        """The error for an EC2NodeClass krm-fn cannot edit: not in the input (`found`
        empty), named twice, or frozen."""
        from krm_fn.pipeline.select import file_of, ref_of
        from krm_fn.results import ERROR, Result, value_text
        if not (isinstance(name, str) and name):
            self.results.append(Result(
                f"node pool {pool_name!r}: {ref_of(np)} provisions its nodes but its "
                f"spec.template.spec.nodeClassRef has no name, so krm-fn cannot find its "
                f"EC2NodeClass; name it", ERROR, ref_of(np),
                "spec.template.spec.nodeClassRef.name", None, None, file_of(np)))
            return
        missing = not found
        why = ("is not in the input" if missing else
               f"is named by {len(found)} items of the input" if len(found) > 1 else
               "cannot be edited (a YAML alias or a local-config object)")
        self.failed.update(found)
        shown = {k: v for k, v in want.items() if v != {}}
        self.results.append(Result(
            f"node pool {pool_name!r}: {ref_of(np)} provisions its nodes with EC2NodeClass "
            f"{name}, which {why}: Karpenter would plan nodes with its own reservation "
            f"defaults and its NodeConfig would set them on the node ({SOURCE}), not the "
            f"reservation krm-fn judged the pods with; set the EC2NodeClass's spec.kubelet to "
            f"{value_text(shown)}" + (" and put it in the input" if missing else ""),
            ERROR, ref_of(np), "spec.template.spec.nodeClassRef.name", name, None,
            file_of(np)))

    def nodeclass(self, pool_name: str, np: dict, i: int, want: dict, pinned: bool) -> None:
        """Edit EC2NodeClass items[i] to `want` (wanted) for node pool `pool_name` (once per
        pool, whichever of its NodePools use it; `pinned`: its plan has reservedSystemCPUs)."""
        from krm_fn.changes import path_str
        from krm_fn.pipeline.select import file_of, ref_of
        from krm_fn.results import ERROR, INFO, WARNING, Result, value_text
        if (pool_name, i) in self.done:
            return
        self.done.add((pool_name, i))
        nc = self.items[i]
        name, nc_ref, nc_file = _name(nc), ref_of(nc), file_of(nc)
        bad = _misshapen(nc, want)
        if bad:
            self.failed.add(i)
            self.results.append(Result(
                f"EC2NodeClass {name}: {bad[0]} is {bad[1]}, not a mapping as Karpenter's API "
                f"has it, so krm-fn cannot write node pool {pool_name!r}'s reservation there; "
                f"fix the object", ERROR, nc_ref, bad[0], None, None, nc_file))
            return
        kubelet = _get(nc, "spec", "kubelet")
        kubelet = kubelet if isinstance(kubelet, dict) else {}
        added = [f"{path_str(path[2:])} {v}" for path, v in
                 self._entries(pool_name, ref_of(np), i, kubelet, want, pinned)]
        if added:
            self.results.append(Result(
                f"node pool {pool_name!r} ({ref_of(np)}): spec.kubelet gets the plan's "
                f"{', '.join(added)}, so Karpenter plans nodes with the reservation the "
                f"kubelet runs and krm-fn judged (Karpenter's NodeConfig sets them on the "
                f"node after the user data)", INFO, nc_ref, "spec.kubelet", None, None,
                nc_file))
        pods = kubelet.get("maxPods")
        if "maxPods" not in want and pods is not None:
            self.results.append(Result(
                f"node pool {pool_name!r}: EC2NodeClass {name} sets maxPods {pods}, which its "
                f"nodes run, and krm-fn counted the kubelet default 110; set "
                f"kubelet.extra.maxPods: {pods}", WARNING, nc_ref, "spec.kubelet.maxPods",
                value_text(pods), None, nc_file))

    def _entries(self, pool_name: str, np_ref, i: int, kubelet: dict, want: dict,
                 pinned: bool):
        """Yield (path, value) of each entry of `want` items[i] did not have; a Change for
        each that differs; a warning for each it replaces, an error for each another pool
        set otherwise."""
        from krm_fn.changes import Change, path_str
        from krm_fn.pipeline.select import file_of, ref_of
        from krm_fn.results import ERROR, WARNING, Result, value_text
        nc = self.items[i]
        nc_ref, nc_file, name = ref_of(nc), file_of(nc), str(_get(nc, "metadata", "name"))
        for field, value in want.items():
            for key, v in (value.items() if isinstance(value, dict) else [(None, value)]):
                path = ("spec", "kubelet", field) + ((key,) if key is not None else ())
                have = kubelet.get(field)
                if key is not None:
                    have = have.get(key) if isinstance(have, dict) else None
                earlier = self.set_by.setdefault((i, path), (pool_name, v))
                if earlier != (pool_name, v):
                    if earlier[1] != v:
                        self.failed.add(i)
                        self.results.append(Result(
                            f"EC2NodeClass {name} provisions nodes of node pools "
                            f"{earlier[0]!r} and {pool_name!r}, whose plans want "
                            f"{path_str(path)} {earlier[1]} and {v}: give each pool its own "
                            f"EC2NodeClass", ERROR, nc_ref, path_str(path),
                            value_text(earlier[1]), value_text(v), nc_file))
                    continue
                if have is not None and str(have) == str(v):
                    continue
                self.changes.setdefault(i, []).append(
                    Change(i, nc_ref, path, have, v, rule="karpenter"))
                if have is None:
                    yield path, v
                    continue
                self.results.append(Result(
                    f"node pool {pool_name!r} ({np_ref}): {path_str(path)} {have} is replaced "
                    f"by the plan's {v}, so Karpenter plans nodes with the reservation the "
                    f"kubelet runs and krm-fn judged; {_keep(field, key, have, pinned)}",
                    WARNING, nc_ref, path_str(path), value_text(have), value_text(v),
                    nc_file))


def _keep(field: str, key, have, pinned: bool) -> str:
    """How to keep the value `have` a mirrored entry replaces (`pinned`: the plan reserves
    CPUs as reservedSystemCPUs)."""
    if key == "cpu" and field in fields.RESERVATIONS and pinned:
        return (f"it cannot be kept while the plan reserves CPUs as reservedSystemCPUs (the "
                f"kubelet deletes kubeReserved.cpu and sets systemReserved.cpu to their "
                f"count): reserved.cores sizes them, or reserved.cores: 0 with "
                f"kubelet.{field}.cpu: {have}")
    where = f"kubelet.extra.{field}" if key is None else f"kubelet.{field}.{key}"
    return f"to keep {have}, set {where}: {have}"


def _misshapen(nc: dict, want: dict) -> tuple[str, str] | None:
    """(path, what it is) of the first place on the way to `want`'s entries in EC2NodeClass
    `nc` that holds something other than a mapping (null and absent are fine), else None."""
    def shape(v) -> str:
        return "a list" if isinstance(v, list) else f"the {type(v).__name__} {v!r}"[:60]
    spec = nc.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return "spec", shape(spec)
    kubelet = (spec or {}).get("kubelet")
    if kubelet is not None and not isinstance(kubelet, dict):
        return "spec.kubelet", shape(kubelet)
    for field, value in want.items():
        have = (kubelet or {}).get(field)
        if isinstance(value, dict) and have is not None and not isinstance(have, dict):
            return f"spec.kubelet.{field}", shape(have)
    return None
