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


def tolerations(taints) -> list:
    """The tolerations of a pod that must run on the pool's nodes despite their taints
    (admission.taints.Taint: the kubelet's registerWithTaints and the fromNode Node's
    spec.taints): one per taint, `Equal` to its value (`Exists` when it has none), for its
    effect."""
    out = []
    for t in taints or ():
        tol = {"key": t.key, "operator": "Equal" if t.value else "Exists"}
        if t.value:
            tol["value"] = t.value
        if t.effect:
            tol["effect"] = t.effect
        out.append(tol)
    return out


def render(plan, ctx, image: str, version: tuple, thread_env: list, taints=()) -> dict:
    """The batch/v1 Job for `plan` (NodePlan) in `ctx.namespace` (RenderContext; the kpt path
    annotation when `ctx.set_path`), running `image` (`spec.output.verifyImage`) with
    `args(...)`; `version`: spec.kubernetesVersion as (major, minor); `thread_env`:
    spec.workloads.threads.env; `taints`: the pool's (tolerated, so the pod can land)."""
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
                    **({"tolerations": tolerations(taints)} if taints else {}),
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
    """The `krm-fn verify --node` arguments for `plan`: the policy, reserved CPUs, topology
    policy and full-pcpus-only the plan sets, and the memory manager policy only with
    `Static` (the only case whose checkpoint the pod mounts: it checks what it can read)."""
    k = plan.kubelet
    opts = k.get("cpuManagerPolicyOptions") or {}
    full = str(opts.get("full-pcpus-only", "false")).lower() == "true"
    out = ["verify", "--node", "--root", "/host",
           "--cpu-manager-policy", str(k.get("cpuManagerPolicy", "none")),
           "--topology-policy", str(k.get("topologyManagerPolicy", "none")),
           "--full-pcpus-only" if full else "--no-full-pcpus-only"]
    if k.get("reservedSystemCPUs"):
        out += ["--reserved-cpus", str(k["reservedSystemCPUs"])]
    if _static_memory(plan):
        out += ["--memory-manager-policy", "Static"]
    return out


def _static_memory(plan) -> bool:
    return str(plan.kubelet.get("memoryManagerPolicy", "")) == "Static"


# The audit pod reads the kubelet's checkpoints, which the kubelet writes mode 0600 owned by
# root (pkg/kubelet/checkpointmanager: the files are created by the kubelet, running as root):
# it runs as root, the file's owner, with every capability dropped (no CAP_DAC_OVERRIDE is
# needed to read a file one owns), a read-only root filesystem and read-only mounts.
AUDIT_POD_SECURITY = {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                      "seccompProfile": {"type": "RuntimeDefault"}}
AUDIT_CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": False, "capabilities": {"drop": ["ALL"]}}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
def namespace_refusal(namespace: dict | None, fmt: str, ref) -> list:
    """[the result] when the input's Namespace `namespace` (plain data, None when it is not
    in the input) has a Pod Security level that refuses the audit pod's hostPath volumes
    and root user: `enforce` is an error (the API server refuses the pod), `warn` and
    `audit` a warning; else []."""
    from krm_fn.admission import podsecurity
    from krm_fn.results import ERROR, WARNING, Result
    if not isinstance(namespace, dict):
        return []
    md = namespace.get("metadata") if isinstance(namespace.get("metadata"), dict) else {}
    labels_ = md.get("labels") if isinstance(md.get("labels"), dict) else {}
    out = []
    what = "Job" if fmt == "node-audit-job" else "DaemonSet"
    for mode, level in podsecurity.strict_modes(labels_):
        sev = ERROR if mode == "enforce" else WARNING
        out.append(Result(
            f"Namespace {md.get('name')} has {podsecurity.LABEL}{mode}: {level}, which "
            f"{'refuses' if mode == 'enforce' else 'flags'} the node audit {what}'s pod: "
            f"it mounts the kubelet's checkpoints as hostPath volumes and runs as root to "
            f"read them (0600 root), which only the privileged level allows "
            f"(https://kubernetes.io/docs/concepts/security/pod-security-standards/); "
            f"set spec.output.namespace to a namespace labelled "
            f"{podsecurity.LABEL}enforce: privileged for the audit", sev, ref,
            "spec.output.namespace", str(level)))
    return out


def _audit_pod(plan, image: str, init: bool, taints=()) -> tuple[list, dict]:
    """(volumeMounts-bearing container, pod spec fields) of the audit pod."""
    mounts = [("cpu-manager-state", "/var/lib/kubelet/cpu_manager_state", "File"),
              ("cpu-topology", "/sys/devices/system", "Directory")]
    if _static_memory(plan):
        mounts.insert(1, ("memory-manager-state", "/var/lib/kubelet/memory_manager_state",
                          "File"))
    audit = {
        "name": "node-audit", "image": str(image), "args": audit_args(plan),
        "resources": {"requests": {"cpu": "100m", "memory": MEMORY},
                      "limits": {"cpu": "100m", "memory": MEMORY}},
        "securityContext": dict(AUDIT_CONTAINER_SECURITY),
        "volumeMounts": [{"name": n, "mountPath": "/host" + p, "readOnly": True}
                         for n, p, _ in mounts]}
    spec = {"automountServiceAccountToken": False,
            "nodeSelector": {str(a): str(b) for a, b in plan.node_selector.items()}}
    if taints:
        spec["tolerations"] = tolerations(taints)
    spec["securityContext"] = dict(AUDIT_POD_SECURITY)
    if init:
        spec["initContainers"] = [audit]
        spec["containers"] = [{
            "name": "pause", "image": PAUSE_IMAGE,
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                          "limits": {"cpu": "10m", "memory": "16Mi"}},
            "securityContext": dict(AUDIT_CONTAINER_SECURITY)}]
    else:
        spec["restartPolicy"] = "Never"
        spec["containers"] = [audit]
    spec["volumes"] = [{"name": n, "hostPath": {"path": p, "type": t}} for n, p, t in mounts]
    return audit, spec


def _audit_metadata(plan, ctx, kind: str) -> dict:
    annotations = {SKIP_ANNOTATION: "true"}
    if ctx.set_path:
        suffix = "" if kind == "Job" else "-daemonset"
        annotations[PATH_ANNOTATION] = f"node/node-audit-{plan.pool}{suffix}.yaml"
    return {"name": audit_name_of(plan), "namespace": str(ctx.namespace),
            "labels": labels(plan), "annotations": annotations}


def render_node_audit(plan, ctx, image: str, taints=()) -> dict:
    """The batch/v1 Job (`spec.output.nodeAuditJob`) that runs `krm-fn verify --node` on a
    node of the pool: the CPU (and, with memoryManagerPolicy Static, the Memory) Manager
    checkpoint and /sys/devices/system mounted read-only below /host (hostPath type File /
    Directory: a missing file fails the pod instead of being created,
    https://kubernetes.io/docs/concepts/storage/volumes/#hostpath), as root without
    capabilities (AUDIT_POD_SECURITY), no token, tolerating the pool's `taints`. The kubelet
    config file is not mounted (its path differs per platform): the reserved set is checked
    against the plan's."""
    _, spec = _audit_pod(plan, image, init=False, taints=taints)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": _audit_metadata(plan, ctx, "Job"),
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels(plan)},
                                                 "spec": spec}},
    }


def render_node_audit_daemonset(plan, ctx, image: str, taints=()) -> dict:
    """The apps/v1 DaemonSet (`spec.output.nodeAuditDaemonSet`) that runs the same audit on
    every node of the pool as an init container (a node that fails shows its pod in
    Init:Error; the logs of container node-audit give the table), with a pause container
    keeping the passing pods Running; selector and template labelled like every emitted
    object."""
    _, spec = _audit_pod(plan, image, init=True, taints=taints)
    lab = labels(plan)
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": _audit_metadata(plan, ctx, "DaemonSet"),
        "spec": {"selector": {"matchLabels": dict(lab)},
                 "template": {"metadata": {"labels": dict(lab)}, "spec": spec}},
    }
