"""The kubelet's Topology Manager: hint merging, admission per policy and scope.

Source: kubernetes/kubernetes pkg/kubelet/cm/topologymanager: policy.go
(filterProvidersHints, mergePermutation, HintMerger.compare / Merge, maxOfMinAffinityCounts),
policy_best_effort.go (always admits), policy_restricted.go (admits only a preferred merged
hint), policy_single_numa_node.go (keeps only preferred single-NUMA hints; admits only a
preferred result), bitmask/bitmask.go (IterateBitMasks, IsNarrowerThan), numa_info.go
(Narrowest), scope_container.go (each container in order: init containers, then app
containers; hints against what the earlier ones took), scope_pod.go (one hint for the pod
from the pod's peak, then every container allocated with it), topology_manager.go
(more than `max-allowable-numa-nodes`, default 8, NUMA nodes: the kubelet does not start);
https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/.

`prefer-closest-numa-nodes` picks the closest of equally wide hints by NUMA distance; the
model has no distances and treats them as equal, which is the narrowest choice.
"""
from __future__ import annotations

from krm_fn.admission import cpumanager, memorymanager, wide
from krm_fn.admission.model import INIT, AdmittedPod, NodeModel

TM_SRC = "kubernetes/kubernetes pkg/kubelet/cm/topologymanager"
TM_DOCS = "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/"
NONE, BEST_EFFORT, RESTRICTED, SINGLE = "none", "best-effort", "restricted", "single-numa-node"
TAE, SMT, UAE = "TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError"
BEYOND = wide.BEYOND


def policy(node: NodeModel) -> str:
    """`topologyManagerPolicy` (default none)."""
    return (node.kubelet or {}).get("topologyManagerPolicy", NONE)


def scope(node: NodeModel) -> str:
    """`topologyManagerScope` (default container)."""
    return (node.kubelet or {}).get("topologyManagerScope", "container")


def max_numa(node: NodeModel) -> int:
    """`topologyManagerPolicyOptions.max-allowable-numa-nodes` (default
    wide.KUBELET_BOUND, 8)."""
    opts = (node.kubelet or {}).get("topologyManagerPolicyOptions") or {}
    try:
        return int(opts.get("max-allowable-numa-nodes", wide.KUBELET_BOUND))
    except (TypeError, ValueError):
        return wide.KUBELET_BOUND


def _value(mask) -> int:
    return sum(1 << n for n in mask)


def _narrowest(a, b):
    """numa_info.go Narrowest with bitmask IsNarrowerThan: fewer NUMA nodes, then the
    lower bitmask value; `a` (the current best) when equal."""
    if a == b:
        return a
    if len(b) < len(a) or (len(b) == len(a) and _value(b) < _value(a)):
        return b
    return a


def _compare(cur, cand, best_np: int):
    """HintMerger.compare: the better of the current best and a candidate (mask, pref)."""
    if not cand[0]:
        return cur
    if cur is None or (not cur[1] and cand[1]):
        return cand
    if cur[1] and not cand[1]:
        return cur
    pick = cand if _narrowest(cur[0], cand[0]) == cand[0] and cand[0] != cur[0] else cur
    if cur[1]:
        return pick
    n, c = len(cur[0]), len(cand[0])
    if n > best_np:
        return pick
    if n == best_np:
        return pick if c == best_np else cur
    if c > best_np:
        return cur
    if c == best_np or c > n:
        return cand
    return cur if c < n else pick


def filter_hints(providers: list) -> list:
    """policy.go filterProvidersHints: one hint list per provider resource. A provider with
    no hints at all (None or {}) or a resource with hints None is "don't care" [(None,
    True)]; a resource with an empty list cannot be satisfied [(None, False)]."""
    out = []
    for prov in providers:
        if not prov:
            out.append([(None, True)])
            continue
        for hints in prov.values():
            out.append([(None, True)] if hints is None else
                       list(hints) if hints else [(None, False)])
    return out


def _merged(lists: list, default: frozenset):
    """The merged hints (mask, preferred) of every permutation of one hint per list
    (policy.go mergePermutation: the AND of the masks, None = all NUMA nodes; preferred
    only when every hint is preferred and every hint that has a mask has the same one), as
    a set: a list of only "don't care" changes no permutation and is left out; the others
    are folded list by list, dropping duplicates, and the last one's products are yielded
    as they come. HintMerger.compare ranks any two distinct hints the same way whichever
    comes first (preferred before not; among preferred the narrower; among the others by
    their width against the best non-preferred width, then narrower) and keeps the current
    one on a tie, so the best of the set is the best of the permutations.

    The fold's state is (mask, preferred, a mask seen): while preferred, every mask seen
    equals the first, so the AND so far is that mask."""
    lists = [hs for hs in lists
             if not (len(hs) == 1 and hs[0][0] is None and hs[0][1] is True)]
    merged = {(default, True, False): None}
    for hints in lists:
        merged = dict.fromkeys(_step(state, m, p) for state in merged for m, p in hints)
    for mask, pref, _ in merged:
        yield mask, pref


def _step(state: tuple, m, p: bool) -> tuple:
    mask, pref, seen = state
    if m is None:
        return mask, pref and p, seen
    same = not seen or m == mask
    pref = pref and p and same
    return mask & m, pref, True


def merge(providers: list, numas: list, pol: str) -> tuple:
    """The merged hint and admission: (mask frozenset or None, preferred, admit) for
    provider hints [{resource: [(mask, preferred)] | None} | None] on a machine with NUMA
    nodes `numas`, under policy `pol` (best-effort, restricted, single-numa-node)."""
    default = frozenset(numas)
    lists = filter_hints(providers)
    if pol == SINGLE:
        lists = [[h for h in hs if h[1] and (h[0] is None or len(h[0]) == 1)] for hs in lists]
    narrow = [min(len(h[0]) for h in hs if h[0] is not None)
              for hs in lists if any(h[0] is not None for h in hs)]
    best_np = max(narrow, default=0)
    best = None
    for cand in _merged(lists, default):
        best = _compare(best, cand, best_np)
    if best is None:
        best = (default, False)
    if pol == SINGLE and best[0] == default:
        best = (None, best[1])
    return best[0], best[1], pol == BEST_EFFORT or best[1]


class NodeState:
    """What the kubelet's resource managers hold on one node: `cpu` (CpuState) and `mem`
    (MemState, None when the Memory Manager's policy is not Static)."""

    def __init__(self, node: NodeModel):
        self.cpu = cpumanager.CpuState(node)
        self.mem = memorymanager.MemState(node) if memorymanager.is_static(node) else None

    def copy(self) -> "NodeState":
        """An independent copy."""
        new = object.__new__(NodeState)
        new.cpu = self.cpu.copy()
        new.mem = self.mem.copy() if self.mem is not None else None
        return new


class Admission:
    """Outcome of admitting one pod on a node state: `admitted`; `reason` ("" or the pod
    status reason: TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError);
    `message` the kubelet's message, as the pod's status shows it; `container` the container it failed on ("" for the
    pod scope); `exclusive` ((name, cpus), ...); `numa` sorted NUMA ids of exclusive CPUs and
    Static memory; `hints` [(what, cpus, mask)] merged hints of the CPU-pinned steps;
    `numa_of` {container name: sorted NUMA ids of its exclusive CPUs}."""

    __slots__ = ("admitted", "reason", "message", "container", "exclusive", "numa", "hints",
                 "numa_of")

    def __init__(self, admitted: bool = True, reason: str = "", message: str = "",
                 container: str = "", exclusive: tuple = (), numa: tuple = (),
                 hints: list | None = None, numa_of: dict | None = None) -> None:
        self.admitted = admitted
        self.reason = reason
        self.message = message
        self.container = container
        self.exclusive = exclusive
        self.numa = numa
        self.hints = [] if hints is None else hints
        self.numa_of = {} if numa_of is None else numa_of


class AdmitPlan:
    """What admitting `pod` on a node of `node`'s pool needs that depends only on the pod,
    its QoS class and the node, not on what the node holds: the policy and scope, `ncpu`
    {container name: exclusive CPUs} (cpumanager.exclusive_requests), `pod_cpus` and
    `pod_mem` (the pod's peak {resource: bytes}, for the pod scope), `mem_ok` (the Memory
    Manager handles the pod when the node models it: Guaranteed, not skipped for pod-level
    resources) and `steps` [(Container, exclusive CPUs, {resource: bytes} it asks the
    Memory Manager for)] in allocation order. Built once per pod by the callers that admit
    the same pod many times (capacity.pod_plan).
    """

    def __init__(self, pod: AdmittedPod, node: NodeModel, qos: str):
        self.pol, self.scp = policy(node), scope(node)
        skip = cpumanager.skips_pod_level(pod, node)
        self.ncpu = dict(cpumanager.exclusive_requests(pod, node, qos))
        self.mem_ok = qos == "Guaranteed" and not skip
        self.pod_cpus = cpumanager.pod_guaranteed_cpus(pod, qos) if self.ncpu else 0
        self.pod_mem = memorymanager.pod_requested(pod) if self.mem_ok else {}
        self.steps = [(c, self.ncpu.get(c.name, 0),
                       memorymanager.requested(c) if self.mem_ok else {})
                      for c in pod.containers]


def _providers(st: NodeState, ncpu: int, mreq: dict, reuse_cpu: set, reuse_mem: dict,
               use_mem: bool) -> list:
    cpu = {"cpu": st.cpu.hints(ncpu, reuse_cpu)} if ncpu else None
    mem = st.mem.hints(mreq, reuse_mem) if (use_mem and st.mem is not None) else None
    return [cpu, mem or None]


def _merge(st: NodeState, providers: list, pol: str) -> tuple:
    """merge(providers, st.cpu.numas, pol), memoised per node (the CpuState's node-wide
    cache) on the policy and the providers' hints: a node's successive admissions mostly
    see the same hint lists (a NUMA combination stays a hint while it has enough free
    CPUs), and the merge is a function of those lists alone."""
    key = ("merge", pol, tuple(p if p is None else tuple(
        (r, h if h is None else tuple(h)) for r, h in p.items()) for p in providers))
    cache = st.cpu.cache
    got = cache.get(key)
    if got is None:
        got = cache[key] = merge(providers, st.cpu.numas, pol)
    return got


def _hint(st: NodeState, ncpu: int, mreq: dict, reuse_cpu: set, reuse_mem: dict,
          use_mem: bool, pol: str):
    """The merged hint (mask, preferred, admit) of one Topology Manager step: every hint
    merged (_merge) up to wide.FULL NUMA nodes, wide.merge beyond (wide.BEYOND where that
    is not modelled)."""
    if wide.is_wide(st.cpu.numas):
        return wide.merge(st, pol, ncpu, reuse_cpu, mreq, reuse_mem, use_mem)
    return _merge(st, _providers(st, ncpu, mreq, reuse_cpu, reuse_mem, use_mem), pol)


def _beyond(pol: str, numas: int, container: str, exclusive: list, out,
            why: str = "") -> Admission:
    return Admission(False, BEYOND, why or (
        f"with topologyManagerPolicy {pol} on {numas} NUMA nodes and no preferred NUMA set, "
        f"the Topology Manager picks among about 2^{numas} x 2^{numas} merged CPU and "
        f"memory hints; krm-fn does not model that choice"), container, tuple(exclusive), (),
        out.hints)


def _refused(reason: str, message: str, container: str, exclusive: list, out) -> Admission:
    if reason == UAE:       # pkg/kubelet/cm/admission/errors.go unexpectedAdmissionError
        message = f"Allocate failed due to {message}, which is unexpected"
    return Admission(False, reason, message, container, tuple(exclusive), (), out.hints)


def admit(pod: AdmittedPod, node: NodeModel, st: NodeState, qos: str,
          plan: AdmitPlan | None = None) -> Admission:
    """Admit `pod` on `st` as the kubelet does (Topology Manager scope, then the CPU and
    Memory Managers' Allocate per container). Mutates `st` (pass a copy when the outcome
    may be thrown away). `plan`: AdmitPlan(pod, node, qos) when the caller keeps one. On a
    wide node an admission krm-fn does not model is refused with reason BEYOND."""
    plan = plan or AdmitPlan(pod, node, qos)
    try:
        return _admit(pod, node, st, qos, plan)
    except wide.Beyond as e:
        return _beyond(plan.pol, len(st.cpu.numas), "", [], Admission(), f"{e}")


def _admit(pod: AdmittedPod, node: NodeModel, st: NodeState, qos: str,
           plan: AdmitPlan) -> Admission:
    pol, scp = plan.pol, plan.scp
    use_mem = st.mem is not None and plan.mem_ok
    out, reuse_cpu, reuse_mem, numa = Admission(), set(), {}, set()
    pod_hint = (None, False)
    if pol != NONE and scp == "pod":
        got = _hint(st, plan.pod_cpus, plan.pod_mem if use_mem else {}, set(), {},
                    use_mem, pol)
        if got is BEYOND:
            return _beyond(pol, len(st.cpu.numas), "", [], out)
        mask, pref, ok = got
        out.hints.append(("pod", plan.pod_cpus, mask))
        if not ok:
            return _refused(TAE, "Resources cannot be allocated with Topology locality", "",
                            [], out)
        pod_hint = (mask, pref)
    exclusive = []
    for c, n, mreq in plan.steps:
        mreq = mreq if use_mem else {}
        hint = pod_hint
        if pol != NONE and scp != "pod":
            got = _hint(st, n, mreq, reuse_cpu, reuse_mem, use_mem, pol)
            if got is BEYOND:
                return _beyond(pol, len(st.cpu.numas), c.name, exclusive, out)
            mask, pref, ok = got
            out.hints.append((c.name, n, mask))
            if not ok:
                return _refused(TAE, "Resources cannot be allocated with Topology locality",
                                c.name, exclusive, out)
            hint = (mask, pref)
        if n:
            err = st.cpu.smt_error(n)
            if err:
                return _refused(SMT, err, c.name, exclusive, out)
            got, err = st.cpu.allocate(n, hint[0], reuse_cpu)
            if got is None:
                return _refused(UAE, err, c.name, exclusive, out)
            exclusive.append((c.name, n))
            numa_of = st.cpu.numa_of
            mine = {numa_of[x] for x in got}
            out.numa_of[c.name] = tuple(sorted(mine))
            numa |= mine
            reuse_cpu = reuse_cpu | got if c.role == INIT else reuse_cpu - got
        if mreq:
            nodes, err = st.mem.allocate(mreq, hint[0], hint[1], reuse_mem)
            if nodes is None:
                return _refused(UAE, err, c.name, exclusive, out)
            numa |= nodes
            memorymanager.note_reuse(reuse_mem, nodes, mreq, c.role == INIT)
    out.exclusive, out.numa = tuple(exclusive), tuple(sorted(numa))
    return out
