"""The definition of the function config (`spec` of a `krm-fn.dev/v1alpha1 InferenceTuning`):
every field with its type, default, documentation and ConfigMap key, built bottom-up from
the objects inside `spec`. Loading (krm_fn.config.load), the ConfigMap flat keys, `krm-fn
schema`, `krm-fn explain` and the README's flat-key table all read it.

`SPEC` is the Object of `spec`; `SCHEMA` its fields; `POOL_FIELDS` the fields of one node
pool. Loaded objects are instances of the classes in krm_fn.config.records.
"""
from __future__ import annotations

from krm_fn.config.fields import Field, Object, ObjectList
from krm_fn.config.records import (AdmissionPolicy, ExtraKind, Injection, Injector, Kubelet,
                                   Monitoring, NodePool, Output,
                                   PerformanceProfile, Reserved, Resources, Selector, Shm, Spec,
                                   Threads, Topology, Verdict, Workloads)
from krm_fn.config.types import (Bool, Cpu, Duration, Enum, Int, List, Memory, PlainData,
                                 PlainMap, Str, StrMap, Text)
from krm_fn.config.versions import Version
from krm_fn.config.threadvars import DEFAULT_THREAD_ENV, NOT_THREAD_ENV, THREAD_ENV
from krm_fn.node.data import VERSIONS as _DATA_VERSIONS
from krm_fn.node.formats import FORMATS as _FORMAT_REGISTRY

# The supported Kubernetes minors: those krm-fn has generated kubelet data for
# (krm_fn/node/data, docs/kubelet-data.md), the three upstream maintains
# (https://kubernetes.io/releases/). The default is the oldest: a KubeletConfiguration
# written for it is one every supported kubelet accepts.
VERSIONS = _DATA_VERSIONS
DEFAULT_VERSION = f"{VERSIONS[0][0]}.{VERSIONS[0][1]}"
# the image the repository's Dockerfile builds; not published to a registry yet, so a verify
# Job that keeps it is warned about (krm_fn/pipeline/emit.py)
DEFAULT_VERIFY_IMAGE = "ghcr.io/krm-fn/krm-fn:0.1.0"

# the output formats, in their documented order: the format registry's names (one module
# each under krm_fn/node/formats; listing them does not import them)
FORMATS = tuple(_FORMAT_REGISTRY)

MAX_NODE_POOLS = 100   # bounds a render's work: every pool gets a plan and its verdicts

# --- spec.nodePools[] ---------------------------------------------------------------------

TOPOLOGY = Object(Topology, (
    Field("sockets", Int(1, 64), 2, "CPU sockets per node."),
    Field("numaNodesPerSocket", Int(1, 64), 1, "NUMA nodes per socket."),
    Field("coresPerSocket", Int(1, 1024), 16, "Physical cores per socket."),
    Field("threadsPerCore", Int(1, 8), 2, "SMT siblings per core (1 = SMT off)."),
    Field("siblings", Enum("split", "adjacent"), "split",
          "CPU numbering: `split` = CPU i and i+cores are siblings (Linux x86 default); "
          "`adjacent` = CPUs 2i and 2i+1 are siblings."),
    Field("lscpu", Text(), None, "Output of `lscpu -p=CPU,CORE,SOCKET,NODE` from one node "
          "of the pool: the exact CPU numbering; when set, the counts above are ignored.",
          flat="lscpu"),
    Field("memory", Memory(), None, "Memory capacity of one node (e.g. 192Gi, the Node's "
          "status.capacity.memory: pre-allocated hugepages included), split evenly "
          "over its NUMA nodes unless numaMemory says otherwise: how many pods fit, and "
          "the Memory Manager's per-NUMA accounting. null: memory is not modelled.",
          flat="nodeMemory"),
    Field("numaMemory", StrMap(), {}, "Memory per NUMA node where they differ, by NUMA node "
          "id (e.g. {\"0\": 96Gi, \"1\": 64Gi}), hugepages included (the NUMA node's "
          "MemTotal); overrides the even split of memory.",
          flat="numaMemory"),
    Field("hugepages", StrMap(), {}, "Pre-allocated hugepages of one node by page size "
          "(e.g. {1Gi: 32Gi}), split evenly over its NUMA nodes.", flat="hugepages"),
    Field("fromNode", PlainData(), None, "A Node object (`kubectl get node NAME -o yaml`) or "
          "the name of a Node in the input: its capacity gives the CPU count (coresPerSocket "
          "is derived; sockets, numaNodesPerSocket as set, threadsPerCore from the NFD "
          "label cpu-hardware_multithreading when present), memory and hugepages (when "
          "unset here).", flat="-"),
    Field("fromNodeResourceTopology", PlainData(), None, "A NodeResourceTopology object "
          "(topology.node.k8s.io/v1alpha2) or the name of one in the input: its NUMA zones "
          "give sockets x numaNodesPerSocket NUMA nodes, the CPUs of each, numaMemory, "
          "memory and hugepages (when unset here).", flat="-"),
))

RESERVED = Object(Reserved, (
    Field("cores", Int(0, 1024), 2, "Whole physical cores reserved (all SMT siblings) as "
          "reservedSystemCPUs; the seed advice is 2-4. 0: no reservedSystemCPUs, the CPU "
          "reservation is kubeReserved.cpu + systemReserved.cpu (the static policy holds back "
          "their ceiling in CPUs, lowest cores first), as on GKE and AKS, which cannot set "
          "reservedSystemCPUs.", flat="reservedCores"),
    Field("spreadAcrossNuma", Bool(), False, "Split the reserved cores evenly across NUMA "
          "nodes instead of taking the lowest cores of NUMA node 0.",
          flat="spreadReservedAcrossNuma"),
    Field("spreadMemoryAcrossNuma", Bool(), False, "memoryManagerPolicy Static: split the "
          "computed reservedMemory evenly across NUMA nodes (whole Mi, whole hugepages) "
          "instead of reserving it all on NUMA node 0.",
          flat="spreadReservedMemoryAcrossNuma"),
))

KUBELET = Object(Kubelet, (
    Field("cpuManagerPolicyOptions", StrMap(), {"full-pcpus-only": "true"},
          "Static CPU Manager options. `full-pcpus-only` (default) allocates whole "
          "physical cores so no other pod shares an SMT sibling's L1/L2."),
    Field("cpuManagerReconcilePeriod", Duration(), "5s",
          "How often the CPU Manager's reconcile loop runs (kubelet default 10s). Only that "
          "loop moves running shared-pool containers off the CPUs a newly pinned container "
          "gets, so a new pinned pod shares its CPUs for up to one period; 5s is the Node "
          "Tuning Operator's value (docs/node-plan.md, \"CPU Manager reconcile period\")."),
    Field("topologyManagerPolicy", Enum("none", "best-effort", "restricted",
                                        "single-numa-node"), "best-effort",
          "Topology Manager policy. best-effort always admits; restricted and "
          "single-numa-node reject pods that do not fit (TopologyAffinityError)."),
    Field("topologyManagerPolicyOptions", StrMap(), {},
          "Topology Manager options, checked against kubernetesVersion: "
          "`prefer-closest-numa-nodes` (\"true\"/\"false\"; best-effort and restricted "
          "only), `max-allowable-numa-nodes` (at least 8; added automatically for pools "
          "with more than 8 NUMA nodes)."),
    Field("topologyManagerScope", Enum("container", "pod"), "pod",
          "Align each container (`container`) or the whole pod (`pod`)."),
    Field("memoryManagerPolicy", Enum("None", "Static"), "None",
          "Memory Manager policy (capitalised, as the kubelet spells it). `Static` adds "
          "reservedMemory computed from the reservations."),
    Field("reservedSystemCPUs", Str(), None,
          "Explicit cpuset for system daemons (e.g. `0-1,32-33`); overrides "
          "`reserved.cores`."),
    Field("reservedMemory", PlainData(), None, "memoryManagerPolicy Static: an explicit "
          "reservedMemory list ([{numaNode: 0, limits: {memory: 1636Mi}}], or the kubelet "
          "flag form `0:memory=836Mi;1:memory=800Mi`), checked to sum to kubeReserved + "
          "systemReserved + evictionHard[memory.available] per type. null: computed."),
    Field("kubeReserved", StrMap(), None, "kubeReserved (its cpu is dropped while the plan "
          "has reservedSystemCPUs, which replaces it; kept with reserved.cores: 0). null: "
          "{memory: 500Mi}, or the baseline's kubeReserved when output.baseline sets one; "
          "a map replaces that default whole."),
    Field("systemReserved", StrMap(), None, "systemReserved (cpu as for kubeReserved). "
          "null: {memory: 500Mi}, or the baseline's systemReserved when output.baseline sets "
          "one; a map replaces that default whole."),
    Field("evictionHard", StrMap(), {},
          "Hard eviction thresholds, merged over the kubelet defaults of kubernetesVersion "
          "(memory.available 100Mi, nodefs.available 10%, nodefs.inodesFree 5%, "
          "imagefs.available 15%, imagefs.inodesFree 5%) and the baseline's (setting one "
          "signal would otherwise zero the others)."),
    Field("podPidsLimit", Int(1, 4194304), 4096, "pids.max of every pod cgroup."),
    Field("failCgroupV1", Bool(), True, "Refuse to start on cgroup v1 nodes (the "
          "kubelet default in every supported version)."),
    Field("singleProcessOOMKill", Bool(), None, "null: not written. true: an OOM kills "
          "only the offending process instead of the whole container (cgroup v2 "
          "memory.oom.group). Never set unless asked."),
    Field("cgroupDriver", Enum("cgroupfs", "systemd"), None, "null: not written. cgroupfs "
          "or systemd (the CRI's own setting wins when it reports one, "
          "KubeletCgroupDriverFromCRI)."),
    Field("extra", PlainMap(), {}, "Any other KubeletConfiguration fields, merged last."),
))

# CRI-O pod annotations of the high-performance runtime handler, written with the value
# "disable" (cri-o/cri-o pkg/annotations/v2/annotations.go; the Node Tuning Operator's
# RuntimeClass, openshift/cluster-node-tuning-operator docs/performanceprofile/runtime-class.md)
CRIO_ANNOTATIONS = ("cpu-quota", "cpu-load-balancing", "irq-load-balancing")

PERFORMANCE_PROFILE = Object(PerformanceProfile, (
    Field("name", Str(), None, "metadata.name of the pool's PerformanceProfile (output "
          "format `performance-profile`, or the profile the cluster already has); its "
          "RuntimeClass is `performance-<name>`. null: the pool name.",
          flat="performanceProfileName"),
    Field("runtimeClass", Bool(), False, "Pods placed on the pool that get exclusive CPUs "
          "also get `runtimeClassName: performance-<name>`, the RuntimeClass the Node "
          "Tuning Operator creates for the profile (its CRI-O high-performance handler).",
          flat="performanceRuntimeClass"),
    Field("crioAnnotations", List(Enum(*CRIO_ANNOTATIONS), item="annotation"), [],
          "CRI-O annotations set to \"disable\" on those pods (needs runtimeClass): "
          "`cpu-quota` (no CFS quota), `cpu-load-balancing` (no scheduler load "
          "balancing), `irq-load-balancing` (no device interrupts) on their exclusive "
          "CPUs; see docs/platforms.md for what each does on cgroup v2.",
          flat="crioAnnotations"),
))

POOL_FIELDS = (
    Field("name", Str(), "inference", "Name of the node pool; names the emitted objects.",
          flat="nodePool"),
    Field("nodeSelector", StrMap(labels=True), {"krm-fn.dev/cpu-pinning": "true"},
          "Labels of the pool's nodes; added to the pod spec `nodeSelector` of every workload "
          "placed in the pool. A conflicting existing value is an error."),
    Field("topology", TOPOLOGY, None, "CPU topology of the pool's nodes."),
    Field("reserved", RESERVED, None, "CPUs kept for system daemons (reservedSystemCPUs)."),
    Field("kubelet", KUBELET, None, "KubeletConfiguration settings for the pool."),
    Field("emit", Enum("placed", "always"), "placed", "When the pool's node config is "
          "emitted: `placed`, only when a workload of the input lands on the pool; "
          "`always`, also without one, so a platform repository can render the pools' "
          "kubelet config from the same InferenceTuning the application repositories use.",
          flat="nodePoolEmit"),
    Field("performanceProfile", PERFORMANCE_PROFILE, None, "OpenShift Node Tuning Operator: "
          "the pool's PerformanceProfile and what pods placed on it get."),
)
NODE_POOL = Object(NodePool, POOL_FIELDS)

# --- spec.workloads -----------------------------------------------------------------------


def _injector(name: str, flat: str, doc: str) -> Field:
    """The config of one admission-time injector: proxy cpu and memory (request == limit)
    and when to write them. Flat keys `<flat>Cpu`, `<flat>Memory`, `<flat>Mode`."""
    return Field(name, Object(Injector, (
        Field("cpu", Cpu(), None, "CPU request and limit of the injected proxy "
              "(null: not configured, warn when injection is detected).", flat=f"{flat}Cpu"),
        Field("memory", Memory(), None, "Memory request and limit of the injected proxy.",
              flat=f"{flat}Memory"),
        Field("mode", Enum("auto", "always", "never"), "auto", "`auto`: when the workload "
              "opts in; `always`: also without a visible opt-in (namespace-level injection); "
              "`never`.", flat=f"{flat}Mode"),
    )), None, doc)


THREADS = Object(Threads, (
    Field("env", List(), DEFAULT_THREAD_ENV, "Variables set to the thread count: names of "
          "thread-count variables krm-fn knows (" + ", ".join(THREAD_ENV) + ") or listed "
          "in `custom`.", flat="threadsEnv"),
    Field("custom", List(), [], "Names of further thread-count variables (an in-house "
          "runtime's) that `env` may hold; a variable that holds anything but a thread count "
          "(" + ", ".join(NOT_THREAD_ENV) + ") is refused even here.", flat="threadsCustom"),
    Field("reservedCpus", Int(0, 1024), 0, "Pinned CPUs left to the runtime's own threads.",
          flat="threadsReservedCpus"),
    Field("perCore", Enum("engine-default", "physical", "logical"), "engine-default",
          "Threads per pinned core: `physical` = one per physical core (the CPUs minus "
          "reservedCpus, divided by the pool's threadsPerCore), `logical` = one per logical "
          "CPU, `engine-default` = what the recognised engine does by itself (physical for "
          "the engines whose own default is one thread per physical core, as "
          "`krm-fn explain rule engines` lists; logical otherwise).",
          flat="threadsPerCoreMode"),
    Field("bind", Bool(), False, "Also bind the threads: `OMP_PROC_BIND=close` and "
          "`OMP_PLACES` (`cores` with one thread per physical core, else `threads`) on "
          "containers that get thread env, and vLLM left to its own `auto` binding (0.9.1+); "
          "neither with more than one worker or rank process. "
          "Helps only when the container really gets an exclusive cpuset; on shared CPUs "
          "bound threads cannot move away from busy ones.", flat="threadsBind"),
    Field("existing", Enum("keep-lower", "replace"), "keep-lower", "A value already set: "
          "`keep-lower` keeps a lower one and replaces a higher one; `replace` always writes "
          "the count.", flat="threadsExisting"),
    Field("source", Enum("literal", "downwardAPI"), "literal", "`literal` writes the count "
          "as a string; `downwardAPI` writes a resourceFieldRef on limits.cpu with divisor "
          "\"1\" (whole-CPU containers only).", flat="threadsSource"),
    Field("engines", Bool(), True, "Recognise the serving engine and set what it reads "
          "(what each engine reads: `krm-fn explain rule engines`).",
          flat="threadsEngines"),
    Field("goMemLimitPercent", Int(1, 100), None, "Set GOMEMLIMIT to this percentage of the "
          "memory limit on every container that gets thread env (a Go binary cannot "
          "be told from its image; nothing else reads it) (null: off).",
          flat="goMemLimitPercent"),
    Field("mallocArenaMax", Int(1, 64), None, "Set MALLOC_ARENA_MAX on pinned containers "
          "(null: off; 2-4 suits memory-limited pods).", flat="mallocArenaMax"),
))

WORKLOADS = Object(Workloads, (
    Field("cpuRounding", Enum("up", "down", "keep", "error"), "up", "Fractional CPU on a "
          "pinned container: round `up`, round `down` (minimum 1), `keep` it (not pinned; "
          "thread vars get the value rounded down), or `error` (also for SMT rounding)."),
    Field("pinnedContainers", List(), [], "Names of the containers to pin (the "
          "`krm-fn.dev/pinned-containers` annotation wins); a container running a serving "
          "engine left out stays shared (info). Default: every app container running a "
          "serving engine krm-fn recognises (not the JVM or uvicorn-gunicorn images), else "
          "the `kubectl.kubernetes.io/default-container` annotation, else the KServe model "
          "container, else the first entry of `containers` (a warning when there are "
          "several)."),
    Field("defaultCpus", Cpu(), None, "CPU for a pinned container that declares none "
          "(null = error)."),
    Field("defaultMemory", Memory(), None, "Memory for a pinned container that declares "
          "none (null = error)."),
    Field("sidecarResources", Object(Resources, (
        Field("cpu", Cpu(), "100m", "CPU (shared pool).", flat="sidecarCpu"),
        Field("memory", Memory(), "128Mi", "Memory.", flat="sidecarMemory"),
    )), None, "Resources for non-pinned containers that declare none (kept within the "
              "min and max per container of the LimitRanges of the pod's namespace)."),
    Field("initContainerCpu", Cpu(), "500m", "CPU given to a regular init container that "
          "asks for whole CPUs, so it runs in the shared pool instead of taking exclusive "
          "CPUs (kubernetes/kubernetes#112228). List it in pinnedContainers to pin it."),
    Field("threads", THREADS, None, "Thread-count env vars on containers with exclusive "
          "CPUs."),
    Field("injection", Object(Injection, (
        _injector("istio", "istio", "Istio istio-proxy (and istio-init)."),
        _injector("linkerd", "linkerd", "Linkerd linkerd-proxy (and linkerd-init)."),
        _injector("knativeQueueProxy", "queueProxy",
                  "Knative queue-proxy (Knative Services, KServe serverless)."),
        _injector("vault", "vault", "Vault agent (vault-agent, vault-agent-init)."),
        _injector("dapr", "dapr", "Dapr daprd."),
        _injector("gcsfuse", "gcsfuse", "GKE Cloud Storage FUSE gke-gcsfuse-sidecar."),
    )), None, "Sidecars injected at admission: their request == limit annotations on the "
              "pod template."),
    Field("shm", Object(Shm, (
        Field("sizeLimitPercent", Int(1, 100), 25, "sizeLimit for a `medium: Memory` "
              "emptyDir without one, as a percentage of the pod's memory limit.",
              flat="shmSizeLimitPercent"),
    )), None, "Memory-backed emptyDir volumes."),
))

# --- spec ---------------------------------------------------------------------------------

EXTRA_KIND = Object(ExtraKind, (
    Field("group", Str(), "", "API group (\"\" for the core group)."),
    Field("kind", Str(), None, "Kind."),
    Field("podSpecs", List(), [], "Paths of PodSpecs, e.g. spec.template.spec or "
          "spec.workers[*].template.spec."),
    Field("annotations", List(), [], "For each pod spec, the path of the mapping whose "
          "annotations the pods get (default: the pod spec's parent + .metadata)."),
))

MONITORING = Object(Monitoring, (
    Field("enabled", Bool(), False, "Emit, per selected workload with a pinned container, a "
          "monitoring.coreos.com/v1 PrometheusRule `krm-fn-jitter-<workload>` in its "
          "namespace: its pods by owner (kube-state-metrics), recording rules for the "
          "mean, CV and CV error bound of the inter-token latency and time to first token "
          "when its serving engine exposes them (vLLM, TGI), alerts when the CV is above "
          "cvThresholdPercent beyond its error bound (or may be), and pinning-health alerts (QoS not "
          "Guaranteed, CFS throttling where the version still applies a quota to exclusive "
          "CPUs, CPU and I/O pressure where the version exposes PSI).",
          flat="monitoring"),
    Field("cvThresholdPercent", Int(1, 1000), 20, "The CV (stddev/mean of the "
          "inter-token latency or time to first token), in percent, above which "
          "KrmFnLatencyCVHigh fires once the CV is above it by more than its error bound.",
          flat="monitoringCvThresholdPercent"),
    Field("alertFor", Str(), "15m", "How long a condition must hold before an alert fires "
          "(a Prometheus duration: 15m, 1h).", flat="monitoringAlertFor"),
    Field("rateWindow", Str(), "5m", "The range of rate() in every expression (a "
          "Prometheus duration; at least four scrape intervals).",
          flat="monitoringRateWindow"),
    Field("histograms", Enum("classic", "native"), "classic", "`classic`: mean exact from "
          "_sum/_count, stddev estimated from the engine release's buckets with a bound on "
          "its error. `native`: histogram_avg / histogram_stddev, for a Prometheus 3 that "
          "scrapes the engine's classic histograms as native ones "
          "(convert_classic_histograms_to_nhcb); no error bound.",
          flat="monitoringHistograms"),
    Field("labels", StrMap(labels=True), {}, "Labels of the emitted PrometheusRules, e.g. the "
          "Prometheus Operator's ruleSelector (release: prometheus).", flat="-"),
    Field("grafanaDashboard", Bool(), False, "Also emit a ConfigMap "
          "`krm-fn-jitter-dashboard` (in spec.output.namespace, label grafana_dashboard: "
          "\"1\") with a Grafana dashboard of the recorded mean, CV and CV error bound.",
          flat="monitoringGrafanaDashboard"),
))

# spec.output.admissionPolicy (krm_fn/guard): the binding's validationActions, in the
# order the API accepts them (admissionregistration.k8s.io/v1 ValidationAction)
VALIDATION_ACTIONS = ("Deny", "Warn", "Audit")

ADMISSION_POLICY = Object(AdmissionPolicy, (
    Field("enabled", Bool(), False, "Emit one admissionregistration.k8s.io/v1 "
          "ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding (both named "
          "`name`) whose CEL checks, on every pod of the tuned workloads as the API server "
          "stores it (after every mutating webhook), what the render's verdict promised: "
          "requests == limits for cpu and memory in every container, the pinned "
          "containers' whole CPUs (a multiple of the threads per core on a full-pcpus-only "
          "pool), the thread variables as rendered, the pool's nodeSelector. The pods are "
          "matched by the label krm-fn.dev/guard that krm-fn adds to each tuned pod "
          "template (docs/admission-policy.md).", flat="admissionPolicy"),
    Field("name", Str(), "krm-fn-guard", "metadata.name of the policy and of its binding "
          "(cluster-scoped: give each render that enables the guard its own name).",
          flat="admissionPolicyName"),
    Field("validationActions", List(Enum(*VALIDATION_ACTIONS), min_items=1, item="action"),
          ["Warn", "Audit"], "What the API server does with a pod that fails a check: "
          "`Deny` refuses it, `Warn` returns a warning to the client, `Audit` records it in "
          "the audit log. The default, Warn and Audit, is the first rollout step (nothing "
          "is refused; pods made by controllers show up in the audit log); set [Deny] (or "
          "[Deny, Audit]) once nothing fails. Deny and Warn together are refused by the "
          "API server.", flat="admissionPolicyActions"),
    Field("namespaces", List(), [], "Namespaces the binding applies in (empty: every "
          "namespace; only labelled pods are ever matched).",
          flat="admissionPolicyNamespaces"),
    Field("namespaceLabels", StrMap(labels=True), {}, "Labels a namespace must carry for the "
          "binding to apply in it (its namespaceSelector.matchLabels); not together with "
          "namespaces.", flat="-"),
))

OUTPUT = Object(Output, (
    Field("formats", List(Enum(*FORMATS), min_items=1, item="format"), ["configmap"],
          "Formats: " + ", ".join(FORMATS) + "."),
    Field("namespace", Str(), "kube-system", "Namespace of emitted namespaced objects."),
    Field("baseline", PlainMap(), None, "The nodes' current KubeletConfiguration (as the "
          "kubelet's configz reports it; a `{kubeletconfig: ...}` wrapper is accepted): the "
          "plan is merged onto it and the result checked; unset reservations come from "
          "it; a change that needs the CPU/Memory Manager state reset gets a rollout "
          "note; what the `json6902` operations start from (typed form only).", flat="-"),
    Field("verifyJob", Bool(), False, "Also emit, per node pool that received a "
          "workload, a batch/v1 Job `krm-fn-verify-<pool>` that runs `krm-fn verify` in a "
          "pinned container on one of the pool's nodes."),
    Field("verifyImage", Str(), DEFAULT_VERIFY_IMAGE, "Image of the verify Job (runs "
          "`krm-fn verify`; entrypoint krm-fn). The default is not published to a registry "
          "yet: build the Dockerfile, push it to yours and set this (warning otherwise)."),
    Field("nodeAuditJob", Bool(), False, "Also emit, per node pool that received a "
          "workload, a batch/v1 Job `krm-fn-node-audit-<pool>` that runs `krm-fn verify "
          "--node` on one of the pool's nodes (the CPU/Memory Manager checkpoints and the CPU "
          "topology mounted read-only, as root without capabilities: the kubelet writes its "
          "checkpoints 0600 root) against the pool's plan; image verifyImage. The namespace "
          "must allow hostPath volumes (Pod Security `privileged`)."),
    Field("nodeAuditDaemonSet", Bool(), False, "Also emit, per node pool that received a "
          "workload, an apps/v1 DaemonSet `krm-fn-node-audit-<pool>` that runs the same "
          "audit on every node of the pool, as an init container: a node that fails it shows "
          "its pod in Init:Error (logs: kubectl logs POD -c node-audit); a pause container "
          "keeps the passing pods Running."),
    Field("monitoring", MONITORING, None, "Prometheus rules that watch the latency jitter "
          "and the pinning health of the selected workloads."),
    Field("admissionPolicy", ADMISSION_POLICY, None, "The drift guard: the verdict's "
          "pod checks enforced by the API server after every mutating webhook."),
    Field("stalePlans", Enum("error", "warning"), "error", "An input item krm-fn emitted on "
          "an earlier render (labels app.kubernetes.io/managed-by: krm-fn and "
          "krm-fn.dev/node-pool) that this render does not emit again: its node pool is no "
          "longer in spec.nodePools, or the pool no longer has that output. `error` fails "
          "the render until the item is deleted (a renamed pool must not leave its old "
          "kubelet configuration applied); `warning` reports it and keeps it."),
))

SCHEMA = (
    Field("kubernetesVersion", Version(VERSIONS), DEFAULT_VERSION,
          "Kubernetes minor version of the nodes (quoted, e.g. \"1.36\"); gates which kubelet "
          "fields, feature gates and options may be emitted. One of the three minor releases "
          "upstream maintains (https://kubernetes.io/releases/), whose kubelet data krm-fn "
          "carries. The default is the oldest of them, so that the emitted KubeletConfiguration "
          "is one the oldest supported kubelet accepts; set the nodes' own version."),
    Field("mode", Enum("mutate", "validate"), "mutate",
          "`mutate`: change the items and emit the node plan. `validate`: change nothing and "
          "emit nothing; report each change `mutate` would make as an error naming the item "
          "and field (exit 1), so a kpt validator or CI check fails on unpinned manifests."),
    Field("selector", Object(Selector, (
        Field("kinds", List(), [], "Workload kinds, e.g. [Deployment, InferenceService]; "
              "case-sensitive, and a kind krm-fn neither tunes nor checks is an error."),
        Field("names", List(), [], "Workload names."),
        Field("namespaces", List(), [], "Workload namespaces."),
        Field("matchLabels", StrMap(labels=True), {},
              "Labels the workload's metadata.labels must carry."),
    )), None, "Which workloads to tune; empty = every workload with a pod spec."),
    Field("workloads", WORKLOADS, None, "How pod specs are rewritten."),
    Field("extraKinds", ObjectList(EXTRA_KIND), [], "Custom workload kinds without a "
          "release, validated like the built-in ones (typed form only).", flat="-"),
    Field("nodePools", ObjectList(NODE_POOL, min_items=1, item="node pool",
                                  max_items=MAX_NODE_POOLS), None,
          "Node pools; workloads go to the pool named by their `krm-fn.dev/node-pool` "
          "annotation, else the pool whose nodeSelector they already carry, else the first "
          "pool."),
    Field("output", OUTPUT, None, "What the node plan is emitted as."),
    Field("verdict", Object(Verdict, (
        Field("onFailure", Enum("error", "warning"), "error", "A selected pod that will not "
              "get exclusive CPUs for its pinned containers (not Guaranteed after "
              "admission, refused by a webhook, never schedulable, never admitted): "
              "`error` fails the render (fail closed); `warning` reports it and renders. "
              "One workload can lower it with the annotation `krm-fn.dev/verdict: warning`.",
              flat="verdictOnFailure"),
    )), None, "What krm-fn does with its verdict on each pod after admission."),
)
SPEC = Object(Spec, SCHEMA)
