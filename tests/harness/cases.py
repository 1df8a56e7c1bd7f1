"""Generated cases for the differential tests (hypothesis strategies): nodes of 1 to 8 NUMA
nodes with SMT on and off, every CPU Manager policy option krm-fn knows (the alpha ones with
the CPUManagerPolicyAlphaOptions gate on), every Topology Manager policy, scope and option,
Memory Manager None and Static with per-NUMA memory and hugepages, reservations, maxPods and
podsPerCore; and pods with init containers, native sidecars, pod-level resources, several
containers, fractional, integer and burstable CPUs, memory that spans NUMA nodes and
hugepages, in sequences.

`case()` draws (node: NodeModel, pods: [AdmittedPod], repeat: int).
"""
from __future__ import annotations

from hypothesis import strategies as st

from krm_fn.admission.model import APP, INIT, SIDECAR, AdmittedPod, Container, NodeModel
from krm_fn.node.topology import Topology
from krm_fn.quantity import MILLI, NANO
from krm_fn.results import Ref
from tests.harness import runner

GI, MI = 2**30, 2**20
# the minors the harness is built for (its module files: runner.releases)
MINORS = tuple(tuple(map(int, m.split("."))) for m in runner.releases())
CPU_OPTIONS = ("full-pcpus-only", "distribute-cpus-across-numa", "align-by-socket",
               "distribute-cpus-across-cores", "strict-cpu-reservation",
               "prefer-align-cpus-by-uncorecache")
# options behind the CPUManagerPolicyAlphaOptions gate at every minor of MINORS
# (cpumanager/policy_options.go alphaOptions): the generator turns the gate on with them, so
# that the kubelet starts and they are compared
ALPHA_OPTIONS = ("align-by-socket", "distribute-cpus-across-cores")
TM_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


@st.composite
def topology(draw) -> Topology:
    sockets = draw(st.sampled_from((1, 1, 2, 2, 4)))
    numa = draw(st.sampled_from((1, 1, 2, 4) if sockets < 4 else (1, 2)))
    per_numa = draw(st.integers(1, 6))
    threads = draw(st.sampled_from((1, 2, 2)))
    return Topology(sockets, numa, per_numa * numa, threads,
                    draw(st.sampled_from(("split", "adjacent"))))


def _quantity_mi(mi: int) -> str:
    return f"{mi}Mi"


@st.composite
def node(draw) -> NodeModel:
    topo = draw(topology())
    cpus = tuple(topo.cpus())
    numas = sorted({c.numa for c in cpus})
    cores = sorted({(c.socket, c.core) for c in cpus})
    kubelet: dict = {"cpuManagerPolicy": draw(st.sampled_from(("static",) * 5 + ("none",)))}
    # reserved CPUs: whole cores, single CPUs, or kubeReserved cpu alone
    how = draw(st.sampled_from(("cores", "cores", "cpus", "kubeReserved")))
    reserved: frozenset = frozenset()
    if how == "cores":
        n = draw(st.integers(1, max(1, min(4, len(cores) - 1))))
        picked = draw(st.permutations(cores))[:n]
        reserved = frozenset(c.cpu for c in cpus if (c.socket, c.core) in picked)
    elif how == "cpus":
        n = draw(st.integers(1, max(1, min(3, len(cpus) - 1))))
        reserved = frozenset(draw(st.permutations([c.cpu for c in cpus]))[:n])
    if reserved:
        kubelet["reservedSystemCPUs"] = ",".join(str(c) for c in sorted(reserved))
    kube_reserved: dict = {}
    if how == "kubeReserved" or draw(st.booleans()):
        kube_reserved["cpu"] = draw(st.sampled_from(("500m", "1", "2", "1500m")))
    options = draw(st.lists(st.sampled_from(CPU_OPTIONS), max_size=2, unique=True))
    if options:
        kubelet["cpuManagerPolicyOptions"] = {o: "true" for o in options}
        if any(o in ALPHA_OPTIONS for o in options):
            kubelet["featureGates"] = {"CPUManagerPolicyAlphaOptions": True}
    kubelet["topologyManagerPolicy"] = draw(st.sampled_from(TM_POLICIES))
    kubelet["topologyManagerScope"] = draw(st.sampled_from(("container", "pod")))
    if draw(st.booleans()):
        kubelet["topologyManagerPolicyOptions"] = {"prefer-closest-numa-nodes": "true"}
    # memory: described per NUMA node or not; hugepages; Memory Manager None/Static
    numa_memory: dict = {}
    if draw(st.booleans()):
        for n in numas:
            mem = draw(st.sampled_from((8, 16, 32, 64))) * GI
            numa_memory[n] = {"memory": mem}
            pages = draw(st.sampled_from((0, 0, 256, 1024)))
            if pages:
                numa_memory[n]["hugepages-2Mi"] = pages * 2 * MI
            if draw(st.integers(0, 3)) == 0:
                numa_memory[n]["hugepages-1Gi"] = draw(st.integers(1, 2)) * GI
    kube_reserved["memory"] = _quantity_mi(draw(st.sampled_from((256, 500, 1024))))
    kubelet["systemReserved"] = {"memory": _quantity_mi(draw(st.sampled_from((256, 500))))}
    kubelet["evictionHard"] = {"memory.available": "100Mi"}
    kubelet["kubeReserved"] = kube_reserved
    if draw(st.booleans()):
        kubelet["memoryManagerPolicy"] = "Static"
        total = (int(kube_reserved["memory"][:-2]) + int(kubelet["systemReserved"]["memory"][:-2])
                 + 100)
        first = draw(st.integers(0, total))
        rows = [(numas[0], first)] + ([(numas[-1], total - first)] if len(numas) > 1 else [])
        if len(numas) == 1:
            rows = [(numas[0], total)]
        kubelet["reservedMemory"] = [{"numaNode": n, "limits": {"memory": f"{mi}Mi"}}
                                     for n, mi in rows if mi]
    if kubelet.get("memoryManagerPolicy") != "Static" and draw(st.integers(0, 3)) == 0:
        # a percentage of capacity, which the kubelet reads as a float32
        kubelet["evictionHard"] = {"memory.available": draw(st.sampled_from(
            ("10%", "7.5%", "33.3%")))}
    if draw(st.integers(0, 4)) == 0:
        kubelet["maxPods"] = draw(st.integers(1, 12))
    if draw(st.integers(0, 5)) == 0:     # min(logical CPUs x podsPerCore, maxPods) pods
        kubelet["podsPerCore"] = draw(st.integers(1, 2))
    minor = draw(st.sampled_from(MINORS))
    return NodeModel("pool", {}, kubelet, minor, cpus, reserved, numa_memory, {})


@st.composite
def container(draw, name: str, role: str, guaranteed: bool) -> Container:
    kind = draw(st.sampled_from(("int", "int", "int", "milli", "none")))
    cpu = (draw(st.integers(1, 6)) * NANO if kind == "int" else        # nanocores
           draw(st.sampled_from((100, 250, 500, 1500))) * MILLI if kind == "milli"
           else None)
    mem = draw(st.sampled_from((64 * MI, 512 * MI, 1 * GI, 4 * GI, 12 * GI, 40 * GI)))
    req = {"memory": mem}
    if cpu is not None:
        req["cpu"] = cpu
    if draw(st.integers(0, 5)) == 0:
        req["hugepages-2Mi"] = draw(st.sampled_from((2, 64, 512))) * 2 * MI
    lim = dict(req)
    if not guaranteed and draw(st.booleans()):
        lim["cpu"] = (cpu or NANO) * 2
        if cpu is None:
            req.pop("cpu", None)
    if not guaranteed and draw(st.booleans()):
        lim.pop("memory")
    # as the API server stores it (SetDefaults_Pod: a limit without a request gives
    # request = limit), which is what the kubelet and the scheduler see and what krm-fn's
    # model takes (admission/build.py requests_limits)
    for res, amount in lim.items():
        req.setdefault(res, amount)
    return Container(name, role, req, lim)


@st.composite
def pod(draw, index: int) -> AdmittedPod:
    guaranteed = draw(st.integers(0, 4)) > 0
    conts = []
    for i in range(draw(st.integers(0, 2))):
        role = draw(st.sampled_from((INIT, SIDECAR)))
        conts.append(draw(container(f"init{i}", role, guaranteed)))
    for i in range(draw(st.integers(1, 3))):
        conts.append(draw(container(f"app{i}", APP, guaranteed)))
    pod_requests = pod_limits = None
    if draw(st.integers(0, 6)) == 0:
        cpu = draw(st.integers(1, 12)) * NANO
        mem = draw(st.sampled_from((2 * GI, 16 * GI, 64 * GI)))
        pod_requests = {"cpu": cpu, "memory": mem}
        pod_limits = dict(pod_requests)
    return AdmittedPod(Ref("v1", "Pod", f"p{index}", "default"), "spec", tuple(conts),
                       pod_requests, pod_limits)


@st.composite
def case(draw) -> tuple:
    n = draw(node())
    pods = [draw(pod(i)) for i in range(draw(st.integers(1, 3)))]
    repeat = draw(st.sampled_from((0, 0, 8, 64, 200)))
    return n, pods, repeat
