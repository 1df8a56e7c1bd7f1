"""krm-fn's placement verdict on the golden renders, judged by the real kube-scheduler
(issue #31 part 3; docs/verdict.md "Checked against a real control plane").

For each golden case (tests/testdata/*) krm-fn is run in-process; for each node pool the
render judges pods on, a Node is made as the pool's kubelet would register it:

- allocatable as the kubelet computes it from the pool's merged KubeletConfiguration and
  machine (the kubelet harness's nodestatus setter, tests/harness; pools of a
  kubernetesVersion older than the harness's oldest minor use that minor:
  `allocatable-release` below);
- labels: the pool's nodeSelector and `kubernetes.io/os: linux` (the kubelet's own label:
  krm-fn's node configs are Linux ones);
- taints: the pool's taints (`registerWithTaints` of the merged KubeletConfiguration and
  a `fromNode` Node's own, as krm-fn reads them: NodeModel.taints), and the
  ephemeral-storage and extended resources of a `fromNode` Node's status.allocatable
  (NodeModel.allocatable).

On that Node, the DaemonSets of the render (as rendered: tuned or not) get their pod first
(bound or not, as the scheduler decides), then, for each pod krm-fn judged on the pool,
one more copy than krm-fn's verdict says fit on one node (`N per node`), one by one, each
waited for until the scheduler binds it or marks it Unschedulable. The pod is the one the
kubelet receives as krm-fn models it after admission (containers as tuned, injected ones
included: the control plane runs no injector webhook) with the scheduling fields of the
rendered pod template (nodeSelector, affinity, tolerations, runtimeClassName,
priorityClassName, os, hostNetwork). Compared, per pod:

- `fit` when what stops one more replica is something the scheduler checks (allocatable
  cpu, memory, huge pages, maxPods): the scheduler binds exactly `N` and the first
  resource it finds short is that one;
- a pod krm-fn says can never be scheduled on its pool (an error of the verdict's
  `scheduling` part) is not bound;
- every other pod: at least `N` are bound (`kubelet-admission`).

Coarser on purpose, by name (COARSER): `kubelet-admission` (the Topology, CPU and Memory
Managers refuse pods on the node, after the scheduler bound them: judged by the kubelet's
own code in tests/test_kubelet_differential.py, not here), `allocatable-release` (above),
`volumes` (the pod's volumes are left out: a render does not know the cluster's storage,
and the scheduler's volume plugins need it), `platform-runtimeclass` (a RuntimeClass the
pod names that the input does not hold is created with no overhead: the platform creates
it, e.g. the Node Tuning Operator's `performance-<profile>`), `cluster-priorityclass` (the
same for a PriorityClass), `unknown-labels` (a pod whose nodeSelector asks for labels the
pool does not list, which krm-fn says in an info, is judged on a node that carries them),
`undescribed-devices` (a pool not described by a `fromNode` Node gets ample of each
extended resource and ephemeral-storage its pods ask for: krm-fn cannot know them and says
so in an info).
"""
from __future__ import annotations

import copy
import re

import pytest
import yaml


from krm_fn import pipeline, resourcelist
from krm_fn.admission.model import DEPENDS
from krm_fn.pipeline import load, select
from tests.controlplane import placement
from tests.harness import convert
from tests.helpers import TESTDATA, case_input, cases

COARSER = {
    "kubelet-admission": "the kubelet's resource managers refuse a bound pod: judged by "
                         "tests/test_kubelet_differential.py",
    "allocatable-release": "a pool older than the kubelet harness's oldest minor gets "
                           "that minor's allocatable",
    "volumes": "the pod's volumes are left out",
    "platform-runtimeclass": "a RuntimeClass the input does not hold is created without "
                             "overhead",
    "cluster-priorityclass": "a PriorityClass the input does not hold is created",
    "undescribed-devices": "a pool not described by a Node (no topology.fromNode) has "
                           "ample of each extended resource and ephemeral-storage the pod "
                           "asks for (krm-fn: an info)",
    "unknown-labels": "a pod whose nodeSelector asks for labels the pool does not list "
                      "(krm-fn: DEPENDS, an info) is judged on a node that carries them",
}
CAP = 120                      # copies at most per pod (maxPods defaults to 110)
SCHEDULING_FIELDS = ("nodeSelector", "affinity", "tolerations", "runtimeClassName",
                     "priorityClassName", "os", "hostNetwork")


def _harness(harnesses: dict, version: tuple):
    """The kubelet harness of `version` ((major, minor)), else the oldest one
    (`allocatable-release`)."""
    return harnesses.get(tuple(version)) or harnesses[min(harnesses)]


def _at(obj, path: str):
    """The value at krm-fn's field path `path` ("spec.template.spec", "a[0].b") in `obj`,
    None when absent."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            i = int(part[1:-1])
            obj = obj[i] if isinstance(obj, list) and i < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def _render(case: str):
    """(input items, pipeline Output, load.Run) of golden case `case`, in-process."""
    doc = resourcelist.parse(case_input(case), require_resource_list=True)
    out = pipeline.transform(doc.items, doc.function_config, keep_tuned=True,
                             retyped=resourcelist.retyped(doc))
    run = load.prepare(doc.items, doc.function_config, [])     # for select.picks
    return doc.items, out, run


def _rendered(items: list, out, i: int):
    return out.tuned.get(i, items[i]) if out.tuned else items[i]


def _pod_spec(admitted, template) -> dict:
    """The pod the kubelet receives for AdmittedPod `admitted` (convert.pod: containers as
    modelled) with the scheduling fields of the rendered pod spec `template`."""
    spec = convert.pod(admitted, "x")["spec"]
    spec.pop("overhead", None)          # the RuntimeClass admission sets it
    for key in SCHEDULING_FIELDS:
        if isinstance(template, dict) and template.get(key) is not None:
            spec[key] = copy.deepcopy(template[key])
    return spec


def _daemon_specs(items: list, out) -> list:
    """(name, pod spec) of every apps/v1 DaemonSet of the render, as rendered, with the
    containers' names and resources only. (The tolerations the DaemonSet controller adds,
    pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations, are for
    the node-condition taints, which these Nodes never have.)"""
    found = []
    for i, obj in enumerate(items):
        if not (isinstance(obj, dict) and obj.get("kind") == "DaemonSet"
                and str(obj.get("apiVersion", "")).startswith("apps/")):
            continue
        tpl = _at(_rendered(items, out, i), "spec.template.spec") or {}
        spec = {k: copy.deepcopy(tpl[k]) for k in SCHEDULING_FIELDS if k in tpl}
        for key in ("initContainers", "containers"):
            if tpl.get(key):
                spec[key] = [{k: v for k, v in c.items()
                              if k in ("name", "resources", "restartPolicy")}
                             | {"image": "registry.example/x:1"} for c in tpl[key]]
        found.append((f"daemon-{obj['metadata']['name']}", spec))
    return found


def _cluster_objects(cp, items: list, specs: list) -> list:
    """Create the input's RuntimeClasses and PriorityClasses, and those the pod specs name
    that it does not hold (`platform-runtimeclass`, `cluster-priorityclass`); returns the
    API paths to delete afterwards."""
    made = []
    have = {("RuntimeClass", o["metadata"]["name"]): o for o in items
            if isinstance(o, dict) and o.get("kind") in ("RuntimeClass", "PriorityClass")
            and isinstance(o.get("metadata"), dict)}
    have |= {("PriorityClass", o["metadata"]["name"]): o for o in items
             if isinstance(o, dict) and o.get("kind") == "PriorityClass"
             and isinstance(o.get("metadata"), dict)}
    for spec in specs:
        rc, pc = spec.get("runtimeClassName"), spec.get("priorityClassName")
        if rc and ("RuntimeClass", rc) not in have:
            have[("RuntimeClass", rc)] = {"apiVersion": "node.k8s.io/v1",
                                          "kind": "RuntimeClass", "metadata": {"name": rc},
                                          "handler": "high-performance"}
        if pc and not pc.startswith("system-") and ("PriorityClass", pc) not in have:
            have[("PriorityClass", pc)] = {"apiVersion": "scheduling.k8s.io/v1",
                                           "kind": "PriorityClass", "metadata": {"name": pc},
                                           "value": 0}
    for (kind, name), obj in have.items():
        base = ("/apis/node.k8s.io/v1/runtimeclasses" if kind == "RuntimeClass"
                else "/apis/scheduling.k8s.io/v1/priorityclasses")
        if obj.get("kind") != kind:
            continue
        status, got = cp.request("POST", base, obj)
        assert status in (201, 409), got
        made.append(f"{base}/{name}")
    return made


def _asked_labels(spec: dict) -> dict:
    """Labels that satisfy the pod's nodeSelector and the first term of its required node
    affinity (`In`: the first value, `Exists`: "x", `Gt` / `Lt`: one past the bound): what
    a node of the pool that the pod lands on carries besides the pool's labels."""
    out = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    terms = _at(spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                      ".nodeSelectorTerms") or []
    for e in (terms[0].get("matchExpressions") or []) if terms else []:
        op, vals = e.get("operator"), e.get("values") or []
        value = {"In": vals[0] if vals else None, "Exists": "x"}.get(op)
        if op in ("Gt", "Lt") and vals:
            value = str(int(vals[0]) + (1 if op == "Gt" else -1))
        if value is not None:
            out.setdefault(e["key"], value)
    return out


def _requests(spec: dict) -> dict:
    """{resource: the largest amount one container asks for} of the extended resources and
    ephemeral-storage of pod spec `spec` (ints)."""
    from krm_fn import quantity
    out: dict = {}
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for res, text in ((c.get("resources") or {}).get("requests") or {}).items():
            if res in ("cpu", "memory") or res.startswith("hugepages-"):
                continue
            amount = quantity.parse_memory(str(text)).whole
            out[res] = out.get(res, 0) + amount
    return out


def _expected_short(limit: str) -> str | None:
    """The resource the scheduler names for krm-fn's fit limit (Packer.limit), None when
    the limit is the kubelet's (`kubelet-admission`)."""
    if limit.startswith("maxPods"):
        return "pods"
    m = re.match(r"allocatable (\S+) ", limit)
    return m.group(1) if m else None


def _golden_placements() -> list:
    return [c for c in cases() if (TESTDATA / c / "config.yaml").exists()]


COUNTER = [0]


def _never_scheduled(v) -> bool:
    """krm-fn's verdict says the pod can never be scheduled on its pool."""
    return any(f.rule == "scheduling" and f.severity == "error" for f in v.findings)


@pytest.mark.parametrize("case", _golden_placements())
def test_golden_placement(controlplane, harnesses, case):
    items, out, run = _render(case)
    if run is None:
        pytest.skip("the function config is refused")
    pool_of = {p.index: p.pool_index for p in select.picks(items, run)}
    judged = []             # (NodeModel, AdmittedPod, PodVerdict, pod spec)
    for i, verdicts in out.verdicts.items():
        if pool_of.get(i) is None:
            continue
        placed = out.tuned is not None and i in out.tuned
        for admitted, v in verdicts:
            if placed:
                template = _at(out.tuned[i], admitted.path)
            else:           # left unchanged: the pod as krm-fn would have written it
                template = {"nodeSelector": dict(admitted.node_selector),
                            "affinity": admitted.affinity,
                            "tolerations": list(admitted.tolerations) or None}
            judged.append((out.nodes[pool_of[i]], admitted, v, _pod_spec(admitted, template)))
    if not judged:
        pytest.skip("no pod of this render is judged on a node pool")
    daemons = _daemon_specs(items, out)
    typed = (yaml.safe_load(case_input(case)) or {}).get("items") or []   # ints as ints
    made = _cluster_objects(controlplane, typed,
                            [j[3] for j in judged] + [s for _, s in daemons])
    try:
        for node, admitted, v, spec in judged:
            _compare(controlplane, harnesses, node, daemons, admitted, v, spec)
    finally:
        for path in made:
            controlplane.request("DELETE", path)


def _compare(cp, harnesses, node, daemons, admitted, v, spec) -> None:
    got = _harness(harnesses, node.version).call(
        "admit", convert.admit_input(node._replace(daemons=()), [], 0))
    assert not got.get("startError"), got["startError"]
    # the taints and the devices and disk of a fromNode Node as krm-fn reads them
    taints = [{k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect))
               if v} for t in node.taints]
    # (the harness's kubelet has no disk or devices: the Node's own figures for those)
    alloc = {**got["allocatable"], **{r: str(v) for r, v in (node.allocatable or {}).items()
                                      if v is not None and r not in ("cpu", "memory", "pods")
                                      and not r.startswith("hugepages-")}}
    labels = {**node.labels, "kubernetes.io/os": "linux"}
    if any(f.rule == "scheduling" and f.severity == DEPENDS for f in v.findings):
        labels = {**_asked_labels(spec), **labels}              # `unknown-labels`
    if not node.from_node:                                      # `undescribed-devices`
        for res, amount in _requests(spec).items():
            if res not in alloc:
                alloc[res] = str(amount * CAP)
    COUNTER[0] += 1
    one = placement.OneNode(cp, f"golden-{COUNTER[0]}", alloc, labels, taints)
    try:
        for name, dspec in daemons:
            if name != f"daemon-{admitted.ref.name}" or admitted.ref.kind != "DaemonSet":
                one.place(dspec, name)      # a DaemonSet's own count is without itself
        if _never_scheduled(v):
            res = one.place(spec, "pod-0")
            assert res is not True and not res.startswith("invalid: "), \
                f"{admitted.ref}: krm-fn says it never schedules on pool {node.pool}: {res}"
            return
        if v.fit is None:
            return
        want = v.fit
        short = _expected_short(v.fit_limit or "")
        bound, stopped = 0, None
        for n in range(min(want + 1, CAP)):
            res = one.place(spec, f"pod-{n}")
            assert res is True or not str(res).startswith("invalid: "), \
                f"{admitted.ref}: {res}"
            if res is not True:
                stopped = res
                break
            bound += 1
        what = f"{admitted.ref} on pool {node.pool}: krm-fn says {want} per node " \
               f"({v.fit_limit}); the scheduler bound {bound} ({stopped})"
        if want + 1 > CAP:
            assert bound == CAP, what
        elif short is not None:
            assert bound == want and placement.first_short(stopped or "") == short, what
        else:
            assert bound >= want, what              # kubelet-admission
    finally:
        one.close()
