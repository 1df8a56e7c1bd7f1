"""The verify Job (`spec.output.verifyJob: true`): per node pool that received a workload, a
batch/v1 Job `<namespace>/krm-fn-verify-<pool>` whose one container runs `krm-fn verify` on
a node of the pool, pinned the way krm-fn pins workloads, with the values to expect as args.
Pure: `render(plan, ctx, ...)` returns a plain dict.

The pod (sources: https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/
and https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/):
- `nodeSelector`: the pool's, so it lands on a tuned node.
- one container, `requests == limits`: cpu = the pool's threadsPerCore (a whole number and a
  multiple of the SMT threads, so full-pcpus-only admits it), memory
  `MEMORY` (the pod is Guaranteed).
- every `spec.workloads.threads.env` variable = the CPU count, as krm-fn's threads rule
  writes it (the default list when that is empty: verify fails when no thread variable is
  set).
- args: `--cpus`, `--memory` (bytes), `--kubernetes-version`, `--topology-policy`,
  `--full-pcpus-only`/`--no-full-pcpus-only` from the plan's cpuManagerPolicyOptions,
  `--pids` when podPidsLimit > 0, `--cpu-quota` when the plan keeps the CFS quota on
  exclusive CPUs (gate DisableCPUQuotaWithExclusiveCPUs false in featureGates,
  kubernetes/kubernetes#127525; the plan never writes `cpuCFSQuota: false`), `--thread-env`
  for configured names outside the verify registry.
- `restartPolicy: Never`, `backoffLimit: 0`: a mismatch fails the Job once, visibly.
- non-root (65534, the image's user), read-only root filesystem, no privilege escalation,
  all capabilities dropped, RuntimeDefault seccomp, no service account token: verify only
  reads /proc and /sys.
- annotation `krm-fn.dev/skip: "true"`: when the Job comes back as input (kpt), krm-fn does
  not tune it as a workload; it is replaced by the plan like the other emitted objects.
"""
from __future__ import annotations

from krm_fn.node.formats._common import PATH_ANNOTATION, labels

# Enough for the Python interpreter and krm-fn's imports (about 40 MB resident).
MEMORY = "256Mi"
SKIP_ANNOTATION = "krm-fn.dev/skip"
QUOTA_GATE = "DisableCPUQuotaWithExclusiveCPUs"


def name_of(plan) -> str:
    """metadata.name of the pool's Job: `krm-fn-verify-<pool>` (pool names are at most 40
    characters, so the name stays a 63-character label value for the job-name label)."""
    return f"krm-fn-verify-{plan.pool}"


def path_of(plan) -> str:
    """File the Job goes to under kpt: `node/verify-<pool>.yaml`."""
    return f"node/verify-{plan.pool}.yaml"


def _cpu_quota_arg(plan, version: tuple) -> list[str]:
    """`--cpu-quota` when the plan keeps the quota on a version whose kubelet drops it by
    default (the gate turned off; the default per version from krm_fn.node.fields)."""
    from krm_fn.node import fields
    gates = plan.kubelet.get("featureGates") or {}
    if gates.get(QUOTA_GATE) is False and fields.gate_on_by_default(QUOTA_GATE, version):
        return ["--cpu-quota"]
    return []


def args(plan, version: tuple, thread_env: list, registry: tuple) -> list[str]:
    """The `krm-fn verify` arguments for `plan` (NodePlan) on Kubernetes `version` (major,
    minor); `thread_env`: the configured thread env names, `registry`: the names verify
    checks anyway (krm_fn.verify.checks.thread_env_names())."""
    k = plan.kubelet
    cpus = plan.topology.threads_per_core
    opts = k.get("cpuManagerPolicyOptions") or {}
    full = str(opts.get("full-pcpus-only", "false")).lower() == "true"
    out = ["verify", "--cpus", str(cpus), "--memory", MEMORY,
           "--kubernetes-version", f"{version[0]}.{version[1]}",
           "--topology-policy", str(k.get("topologyManagerPolicy", "none")),
           "--full-pcpus-only" if full else "--no-full-pcpus-only"]
    pids = k.get("podPidsLimit")
    if isinstance(pids, int) and not isinstance(pids, bool) and pids > 0:
        out += ["--pids", str(pids)]
    out += _cpu_quota_arg(plan, version)
    extra = [n for n in thread_env if n not in registry]
    if extra:
        out += ["--thread-env", ",".join(extra)]
    return out


def render(plan, ctx, image: str, version: tuple, thread_env: list) -> dict:
    """The batch/v1 Job for `plan` (NodePlan) in `ctx.namespace` (RenderContext; the kpt path
    annotation when `ctx.set_path`), running `image` (`spec.output.verifyImage`) with
    `args(...)`; `version`: spec.kubernetesVersion as (major, minor); `thread_env`:
    spec.workloads.threads.env."""
    from krm_fn.config import DEFAULT_THREAD_ENV
    from krm_fn.verify.checks import thread_env_names
    cpus = str(plan.topology.threads_per_core)
    thread_env = list(thread_env) or list(DEFAULT_THREAD_ENV)
    annotations = {SKIP_ANNOTATION: "true"}
    if ctx.set_path:
        annotations[PATH_ANNOTATION] = path_of(plan)
    pod_labels = labels(plan)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name_of(plan),
            "namespace": str(ctx.namespace),
            "labels": labels(plan),
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "nodeSelector": {str(a): str(b) for a, b in plan.node_selector.items()},
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "runAsGroup": 65534,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "verify",
                        "image": str(image),
                        "args": args(plan, version, list(thread_env), thread_env_names()),
                        "env": [{"name": str(n), "value": cpus} for n in thread_env],
                        "resources": {
                            "requests": {"cpu": cpus, "memory": MEMORY},
                            "limits": {"cpu": cpus, "memory": MEMORY},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }],
                },
            },
        },
    }


def audit_name_of(plan) -> str:
    """metadata.name of the pool's node-audit Job: `krm-fn-node-audit-<pool>`."""
    return f"krm-fn-node-audit-{plan.pool}"


def audit_args(plan) -> list[str]:
    """The `krm-fn verify --node` arguments for `plan`: the policy, reserved CPUs, memory
    manager and topology policies and full-pcpus-only the plan sets."""
    k = plan.kubelet
    opts = k.get("cpuManagerPolicyOptions") or {}
    full = str(opts.get("full-pcpus-only", "false")).lower() == "true"
    out = ["verify", "--node", "--root", "/host",
           "--cpu-manager-policy", str(k.get("cpuManagerPolicy", "none")),
           "--topology-policy", str(k.get("topologyManagerPolicy", "none")),
           "--full-pcpus-only" if full else "--no-full-pcpus-only"]
    if k.get("reservedSystemCPUs"):
        out += ["--reserved-cpus", str(k["reservedSystemCPUs"])]
    if k.get("memoryManagerPolicy"):
        out += ["--memory-manager-policy", str(k["memoryManagerPolicy"])]
    return out


def render_node_audit(plan, ctx, image: str) -> dict:
    """The batch/v1 Job (`spec.output.nodeAuditJob`) that runs `krm-fn verify --node` on a
    node of the pool: the CPU (and, with memoryManagerPolicy Static, the Memory) Manager
    checkpoint and /sys/devices/system mounted read-only below /host (hostPath type File /
    Directory: a missing file fails the pod instead of being created,
    https://kubernetes.io/docs/concepts/storage/volumes/#hostpath), non-root, no token.
    The kubelet config file is not mounted (its path differs per platform): the reserved
    set is checked against the plan's."""
    mounts = [("cpu-manager-state", "/var/lib/kubelet/cpu_manager_state", "File"),
              ("cpu-topology", "/sys/devices/system", "Directory")]
    if str(plan.kubelet.get("memoryManagerPolicy", "")) == "Static":
        mounts.insert(1, ("memory-manager-state", "/var/lib/kubelet/memory_manager_state",
                          "File"))
    annotations = {SKIP_ANNOTATION: "true"}
    if ctx.set_path:
        annotations[PATH_ANNOTATION] = f"node/node-audit-{plan.pool}.yaml"
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": audit_name_of(plan), "namespace": str(ctx.namespace),
                     "labels": labels(plan), "annotations": annotations},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels(plan)}, "spec": {
            "restartPolicy": "Never", "automountServiceAccountToken": False,
            "nodeSelector": {str(a): str(b) for a, b in plan.node_selector.items()},
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "node-audit", "image": str(image), "args": audit_args(plan),
                "resources": {"requests": {"cpu": "100m", "memory": MEMORY},
                              "limits": {"cpu": "100m", "memory": MEMORY}},
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": n, "mountPath": "/host" + p, "readOnly": True}
                                 for n, p, _ in mounts]}],
            "volumes": [{"name": n, "hostPath": {"path": p, "type": t}} for n, p, t in mounts],
        }}},
    }
