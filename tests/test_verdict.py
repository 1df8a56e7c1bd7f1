"""The verdict through the whole function (krm_fn/pipeline/verdict.py): what a render says of
each pod after admission, and when it fails closed. Each test gives a small input and
asserts the exact verdict line or finding."""
from __future__ import annotations

import pytest
import yaml

from tests.helpers import run_fn

POOL = {"name": "p", "nodeSelector": {"pool": "p"},
        "topology": {"sockets": 2, "numaNodesPerSocket": 1, "coresPerSocket": 8,
                     "threadsPerCore": 2, "memory": "64Gi"},
        "reserved": {"cores": 1}}
GUARANTEED_4 = {"requests": {"cpu": "4", "memory": "8Gi"},
                "limits": {"cpu": "4", "memory": "8Gi"}}


def config(version="1.35", pool=None, **spec) -> dict:
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "pin"},
            "spec": {"kubernetesVersion": version, "nodePools": [pool or POOL], **spec}}


def deployment(name="srv", annotations=None, labels=None, spec=None, meta=None,
               namespace="ai") -> dict:
    """A Deployment `name` in `namespace` (none when empty) whose one container `server`
    asks for 4 CPUs and 8Gi as requests and limits, unless `spec` gives the pod spec."""
    pod_spec = spec or {"containers": [{"name": "server", "image": "srv:1",
                                        "resources": GUARANTEED_4}]}
    template_meta = {k: v for k, v in (("annotations", annotations), ("labels", labels)) if v}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {}),
                         **(meta or {})},
            "spec": {"template": {"metadata": template_meta, "spec": pod_spec}}}


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def render(cfg: dict, *items: dict) -> tuple[int, list, list]:
    """(exit code, results as (severity, message), output items) of one function run."""
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": list(items), "functionConfig": cfg}
    p = run_fn([], yaml.dump(rl, Dumper=_NoAliases, sort_keys=False))
    out = yaml.safe_load(p.stdout) or {}
    return (p.returncode, [(r["severity"], r["message"]) for r in out.get("results") or []],
            out.get("items") or [])


def verdicts(results: list) -> list:
    return [m for _, m in results if m.startswith("verdict:")]


def errors(results: list) -> list:
    return [m for s, m in results if s == "error"]


# --- capacity: the bugs of the issue ---------------------------------------------------------

def test_seven_not_fourteen_24gi_pods_fit_a_192gi_node():
    pool = {**POOL, "reserved": {"cores": 2},
            "topology": {"sockets": 1, "numaNodesPerSocket": 1, "coresPerSocket": 24,
                         "threadsPerCore": 2, "memory": "192Gi"}}
    big = {"requests": {"cpu": "4", "memory": "24Gi"}, "limits": {"cpu": "4", "memory": "24Gi"}}
    code, results, _ = render(config(pool=pool), deployment(spec={"containers": [
        {"name": "server", "image": "srv:1", "resources": big}]}))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "7 per node (allocatable memory 190.9Gi: 24Gi each)"]
    # 192Gi - 500Mi kubeReserved - 500Mi systemReserved - 100Mi evictionHard = 190.9Gi
    assert ("node pool 'p': 44 exclusive CPUs per node (NUMA 0: 44), 190.9Gi allocatable "
            "memory; Deployment srv needs 4 exclusive CPUs (7 per node, limited by "
            "allocatable memory 190.9Gi: 24Gi each (OutOfmemory))") in [m for _, m in results]


def test_ten_not_eleven_pods_fit_when_a_shared_sidecar_uses_the_last_cpus():
    # 44 allocatable CPUs: 11 x 4 exclusive would fit, but each pod also asks 100m for its
    # exporter, and 11 x 4.1 > 44 (the scheduler's OutOfcpu)
    pool = {**POOL, "reserved": {"cores": 2},
            "topology": {"sockets": 1, "numaNodesPerSocket": 1, "coresPerSocket": 24,
                         "threadsPerCore": 2, "memory": "192Gi"}}
    code, results, _ = render(config(pool=pool), deployment(spec={"containers": [
        {"name": "server", "image": "srv:1", "resources": GUARANTEED_4},
        {"name": "exporter", "image": "exp:1",
         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                       "limits": {"cpu": "100m", "memory": "64Mi"}}}]}))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "10 per node (allocatable cpu 44: 4 + 100m each)"]


# --- fail closed, and lowering it ------------------------------------------------------------

DAPR = {"dapr.io/enabled": "true"}
DAPR_ERROR = ("Dapr daprd (annotation dapr.io/enabled=true) adds daprd without requests == "
              "limits for cpu and memory, so the pod will be Burstable and no container gets "
              "exclusive CPUs: set the pod template annotations dapr.io/sidecar-cpu-request, "
              "dapr.io/sidecar-cpu-limit, dapr.io/sidecar-memory-request, "
              "dapr.io/sidecar-memory-limit with request == limit (or "
              "spec.workloads.injection.dapr cpu and memory, which krm-fn writes there)")


def test_a_pod_burstable_after_admission_fails_the_render_and_is_left_unchanged():
    item = deployment(annotations=DAPR)
    code, results, items = render(config(), item)
    assert code == 1
    assert DAPR_ERROR in errors(results)
    assert errors(results)[-1] == "left unchanged because of the errors above"
    assert items == [item]


def test_verdict_annotation_on_the_workload_lowers_the_failure_to_a_warning():
    code, results, items = render(config(), deployment(
        annotations=DAPR, meta={"annotations": {"krm-fn.dev/verdict": "warning"}}))
    assert code == 0
    assert ("warning", DAPR_ERROR) in results
    assert errors(results) == []
    assert items[0]["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "p"}


def test_the_verdict_line_points_at_the_warnings_when_the_failure_is_lowered():
    """Under spec.verdict.onFailure: warning there are no errors to see: the summary line
    points at the warnings; a rule's error beside it keeps "(see the errors)"."""
    def line(cfg, *items):
        return [m for s, m in render(cfg, *items)[1] if m.startswith("verdict:")]
    lowered = line(config(verdict={"onFailure": "warning"}), deployment(annotations=DAPR))
    assert lowered == ["verdict: Burstable after admission; no exclusive CPUs; injected "
                       "daprd; 7 per node (allocatable cpu 30: 4 each); will not run pinned "
                       "(see the warnings)"]
    strict = line(config(), deployment(annotations=DAPR))
    assert strict == [lowered[0].replace("(see the warnings)", "(see the errors)")]


def test_verdict_annotation_on_the_pod_template_lowers_the_failure_to_a_warning():
    code, results, _ = render(config(), deployment(
        annotations={**DAPR, "krm-fn.dev/verdict": "warning"}))
    assert code == 0
    assert ("warning", DAPR_ERROR) in results


def test_verdict_annotation_error_keeps_one_workload_strict_under_a_global_warning():
    cfg = config(verdict={"onFailure": "warning"})
    code, results, _ = render(cfg, deployment("lenient", annotations=DAPR),
                              deployment("strict", annotations=DAPR,
                                         meta={"annotations": {"krm-fn.dev/verdict": "error"}}))
    assert code == 1
    assert errors(results) == [DAPR_ERROR, "pod is Burstable after admission, so no container "
                               "gets exclusive CPUs, not even 'server' (the static CPU Manager "
                               "pins only Guaranteed pods); not Guaranteed: 'daprd'; set cpu "
                               "and memory requests equal to limits in every container, init, "
                               "sidecar and injected ones included (kubernetes/kubernetes "
                               "pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS); "
                               "kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static.go"
                               " guaranteedCPUs)",
                               "left unchanged because of the errors above"]
    assert ("warning", DAPR_ERROR) in results


def test_validate_mode_gives_the_same_verdict_errors():
    cfg = config(mode="validate")
    code, results, _ = render(cfg, deployment(annotations=DAPR))
    assert code == 1
    assert DAPR_ERROR in errors(results)


# --- injectors sized from the config ---------------------------------------------------------

def test_gcsfuse_sidecar_is_sized_from_spec_workloads_injection_gcsfuse():
    cfg = config(workloads={"injection": {"gcsfuse": {"cpu": "500m", "memory": "512Mi"}}})
    code, results, items = render(cfg, deployment(annotations={"gke-gcsfuse/volumes": "true"}))
    assert code == 0
    assert items[0]["spec"]["template"]["metadata"]["annotations"] == {
        "gke-gcsfuse/volumes": "true", "gke-gcsfuse/cpu-request": "500m",
        "gke-gcsfuse/cpu-limit": "500m", "gke-gcsfuse/memory-request": "512Mi",
        "gke-gcsfuse/memory-limit": "512Mi"}
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "gke-gcsfuse-sidecar; 6 per node (allocatable cpu 30: 4 + 500m each)"]


# --- pod-level resources and injected containers ---------------------------------------------

def test_pod_level_requests_cover_the_sidecars_krm_fn_sizes():
    # PodLevelResources turned off in the pool's kubelet, so the pod is pinned; the pod-level
    # values krm-fn writes include istio-proxy, which krm-fn itself sizes at 500m / 256Mi
    cfg = config("1.35", {**POOL, "kubelet": GATE_OFF},
                 workloads={"injection": {"istio": {"cpu": "500m", "memory": "256Mi"}}})
    spec = {"resources": GUARANTEED_4,
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    code, results, items = render(cfg, deployment(labels={"sidecar.istio.io/inject": "true"},
                                                  spec=spec))
    assert code == 0
    assert items[0]["spec"]["template"]["spec"]["resources"] == {
        "requests": {"cpu": "4500m", "memory": "8448Mi"},
        "limits": {"cpu": "4500m", "memory": "8448Mi"}}
    assert ("info", "pod-level requests.cpu 4 -> 4500m (the containers need 4500m, injected "
            "istio-init, istio-proxy included): with pod-level resources the pod's QoS comes "
            "from them alone, and Guaranteed needs requests == limits") in results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "istio-init, istio-proxy; 6 per node (allocatable cpu 30: 4 + 500m each)"]


# --- KServe's deployment mode from the cluster config in the input ---------------------------

ISVC = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "qwen", "namespace": "serving"},
        "spec": {"predictor": {"model": {
            "modelFormat": {"name": "huggingface"},
            "resources": GUARANTEED_4}}}}


def _kserve_config(mode: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "inferenceservice-config", "namespace": "kserve"},
            "data": {"deploy": '{"defaultDeploymentMode": "%s"}' % mode}}


def test_kserve_default_deployment_mode_standard_in_the_input_means_no_queue_proxy():
    code, results, items = render(config(), ISVC, _kserve_config("Standard"))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs kserve-container 4 on NUMA 0; "
        "7 per node (allocatable cpu 30: 4 each)"]
    assert items[0]["spec"]["predictor"]["nodeSelector"] == {"pool": "p"}


def test_kserve_unknown_deployment_mode_falls_back_to_the_default_in_the_input():
    isvc = {**ISVC, "metadata": {**ISVC["metadata"], "annotations": {
        "serving.kserve.io/deploymentMode": "raw"}}}
    code, results, _ = render(config(), isvc, _kserve_config("Standard"))
    assert code == 0
    assert "injected" not in verdicts(results)[0]


def test_kserve_without_deployment_mode_or_config_is_judged_serverless():
    code, results, _ = render(config(), ISVC)
    assert code == 1
    assert verdicts(results) == [
        "verdict: Burstable after admission; no exclusive CPUs; injected queue-proxy; 7 per "
        "node (allocatable cpu 30: 4025m each); will not run pinned (see the errors)"]


# --- Knative's config-deployment in the input ------------------------------------------------

FEATURES = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "config-features", "namespace": "knative-serving"},
            "data": {"kubernetes.podspec-nodeselector": "enabled"}}
KSVC = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
        "metadata": {"name": "ks", "namespace": "ai"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}}}}


def _config_deployment(**data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "config-deployment", "namespace": "knative-serving"},
            "data": {"queue-sidecar-image": "queue:1", **data}}


def test_knative_config_deployment_in_the_input_gets_the_configured_queue_proxy_sizes():
    cfg = config(workloads={"injection": {"knativeQueueProxy": {"cpu": "250m",
                                                                 "memory": "256Mi"}}})
    cm = _config_deployment(**{"queue-sidecar-cpu-request": "25m",
                               "queue-sidecar-memory-limit": "800Mi"})
    code, results, items = render(cfg, cm, KSVC, FEATURES)
    assert code == 0
    assert items[0]["data"] == {
        "queue-sidecar-image": "queue:1", "queue-sidecar-cpu-request": "250m",
        "queue-sidecar-memory-limit": "256Mi", "queue-sidecar-cpu-limit": "250m",
        "queue-sidecar-memory-request": "256Mi"}
    assert ("warning", "queue-sidecar-cpu-request 25m -> 250m (spec.workloads.injection."
            "knativeQueueProxy.cpu is 250m): Knative sizes every revision's queue-proxy from "
            "this key when its pod template has no queue.sidecar.serving.knative.dev "
            "annotation (and always before knative-v1.11.0); request != limit makes the pod "
            "Burstable (knative/serving pkg/reconciler/revision/resources/queue.go "
            "createQueueResources, pkg/deployment/config.go)") in results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "queue-proxy; 7 per node (allocatable cpu 30: 4 + 250m each)"]


def test_knative_config_deployment_unequal_values_are_made_equal_to_the_larger():
    cm = _config_deployment(**{"queue-sidecar-cpu-request": "100m",
                               "queue-sidecar-cpu-limit": "500m",
                               "queue-sidecar-memory-request": "128Mi",
                               "queue-sidecar-memory-limit": "256Mi"})
    code, results, items = render(config(), cm, KSVC, FEATURES)
    assert code == 0
    assert {k: v for k, v in items[0]["data"].items() if k != "queue-sidecar-image"} == {
        "queue-sidecar-cpu-request": "500m", "queue-sidecar-cpu-limit": "500m",
        "queue-sidecar-memory-request": "256Mi", "queue-sidecar-memory-limit": "256Mi"}
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "queue-proxy; 6 per node (allocatable cpu 30: 4 + 500m each)"]


def test_knative_config_deployment_whole_cpu_is_not_written_and_the_pod_fails_closed():
    cm = _config_deployment(**{"queue-sidecar-cpu-request": "25m",
                               "queue-sidecar-cpu-limit": "1000m",
                               "queue-sidecar-memory-request": "400Mi",
                               "queue-sidecar-memory-limit": "800Mi"})
    code, results, items = render(config(), cm, KSVC, FEATURES)
    assert code == 1
    assert items[0]["data"]["queue-sidecar-cpu-request"] == "25m"
    assert ("warning", "queue-sidecar-cpu-request 25m and queue-sidecar-cpu-limit 1000m "
            "differ, so queue-proxy gets request != limit and every Knative pod that reads "
            "this ConfigMap is Burstable; krm-fn does not make both 1: a whole-number cpu "
            "would give queue-proxy exclusive CPUs (and fail pods with SMTAlignmentError "
            "under full-pcpus-only); set both to a fractional value such as 900m, or "
            "spec.workloads.injection.knativeQueueProxy.cpu (knative/serving "
            "pkg/reconciler/revision/resources/queue.go createQueueResources, "
            "pkg/deployment/config.go)") in results
    assert verdicts(results) == [
        "verdict: Burstable after admission; no exclusive CPUs; injected queue-proxy; 7 per "
        "node (allocatable cpu 30: 4025m each); will not run pinned (see the errors)"]


# --- hostile inputs: looks pinned in the manifest, is not on the node ------------------------

def test_injected_sidecar_with_a_whole_cpu_fails_with_smt_alignment_and_names_a_fractional_cpu():
    # the user's own Istio annotations give istio-init and istio-proxy 1 whole CPU: the
    # kubelet pins them too, and with full-pcpus-only and 2 threads per core refuses the pod
    ann = {"sidecar.istio.io/proxyCPU": "1", "sidecar.istio.io/proxyCPULimit": "1",
           "sidecar.istio.io/proxyMemory": "1Gi", "sidecar.istio.io/proxyMemoryLimit": "1Gi"}
    code, results, _ = render(config(), deployment(
        annotations=ann, labels={"sidecar.istio.io/inject": "true"}))
    assert code == 1
    assert errors(results) == [
        "container 'istio-init' fails with SMTAlignmentError on pool 'p' (full-pcpus-only): "
        "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2; container "
        "'istio-init' is not one krm-fn pins, added by istio: give it a fractional cpu with "
        "requests == limits (e.g. 900m instead of 1) so it runs in the shared pool, or "
        "request a multiple of 2 CPUs that whole free cores can hold (kubernetes/kubernetes "
        "pkg/kubelet/cm/cpumanager/policy_static.go Allocate; "
        "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/)",
        "left unchanged because of the errors above"]


def test_runtime_class_pod_overhead_counts_in_the_fit_per_node():
    # 30 allocatable CPUs hold 5 pods of 6 CPUs, but the RuntimeClass adds 250m of pod
    # overhead to each (KEP-688): 5 x 6.25 > 30
    kata = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "kata"}, "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}}}
    six = {"requests": {"cpu": "6", "memory": "8Gi"}, "limits": {"cpu": "6", "memory": "8Gi"}}
    spec = {"runtimeClassName": "kata",
            "containers": [{"name": "server", "image": "srv:1", "resources": six}]}
    code, results, _ = render(config(), kata, deployment(spec=spec))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 6 on NUMA 0; "
        "4 per node (allocatable cpu 30: 6 + 250m each)"]
    code, results, _ = render(config(), deployment(spec=spec))    # RuntimeClass unknown
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 6 on NUMA 0; "
        "5 per node (allocatable cpu 30: 6 each)"]


def test_a_rule_error_does_not_hide_the_injection_errors_of_the_verdict():
    # the placement rule refuses (Knative's nodeSelector flag is off) and queue-proxy would
    # keep the pod Burstable: one render names both fixes
    code, results, _ = render(config(), ISVC)
    assert code == 1
    found = errors(results)
    assert len(found) == 3
    assert found[0].startswith("the pod of a Serverless InferenceService (KServe: no "
                               "serving.kserve.io/deploymentMode annotation, so Serverless "
                               "is assumed; it becomes a Knative Service) cannot be placed")
    assert found[1] == (
        "Knative queue-proxy (KServe: no serving.kserve.io/deploymentMode annotation, so "
        "Serverless is assumed) adds queue-proxy without requests == limits for cpu and "
        "memory, so the pod will be Burstable and no container gets exclusive CPUs: set the "
        "pod template annotations queue.sidecar.serving.knative.dev/cpu-resource-request, "
        "queue.sidecar.serving.knative.dev/cpu-resource-limit, "
        "queue.sidecar.serving.knative.dev/memory-resource-request, "
        "queue.sidecar.serving.knative.dev/memory-resource-limit with request == limit (or "
        "spec.workloads.injection.knativeQueueProxy cpu and memory, which krm-fn writes "
        "there; Knative 1.11 or newer), or the keys queue-sidecar-cpu-request, "
        "queue-sidecar-cpu-limit, queue-sidecar-memory-request, queue-sidecar-memory-limit "
        "with request == limit in ConfigMap knative-serving/config-deployment")
    assert found[2] == "left unchanged because of the errors above"


def test_knative_before_1_11_ignores_the_queue_proxy_annotations_krm_fn_writes():
    # config-features says knative 1.10: the revision annotations are not read there, so
    # queue-proxy gets Knative's 25m request only, whatever the annotations say
    old = {**FEATURES, "metadata": {**FEATURES["metadata"],
                                    "labels": {"app.kubernetes.io/version": "1.10.2"}}}
    cfg = config(workloads={"injection": {"knativeQueueProxy": {"cpu": "250m",
                                                                 "memory": "256Mi"}}})
    code, results, _ = render(cfg, KSVC, old)
    assert code == 1
    assert errors(results)[0] == (
        "Knative queue-proxy (every Knative revision runs a queue-proxy) adds queue-proxy "
        "without requests == limits for cpu and memory, so the pod will be Burstable and no "
        "container gets exclusive CPUs: Knative knative-v1.10 (the release label in this "
        "input) does not read the queue.sidecar.serving.knative.dev resource annotations: "
        "set the keys queue-sidecar-cpu-request, queue-sidecar-cpu-limit, "
        "queue-sidecar-memory-request, queue-sidecar-memory-limit with request == limit in "
        "ConfigMap knative-serving/config-deployment (with "
        "spec.workloads.injection.knativeQueueProxy cpu and memory krm-fn writes them when "
        "the ConfigMap is in the input)")
    code, results, _ = render(cfg, KSVC, old, _config_deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; injected "
        "queue-proxy; 7 per node (allocatable cpu 30: 4 + 250m each)"]


def test_container_scope_gives_each_container_its_own_numa_node_in_order():
    # single-numa-node, scope container: 'a' takes 10 of NUMA 0's 14 free CPUs, then 'b'
    # no longer fits there and gets NUMA 1; scope pod would refuse the 20-CPU pod
    pool = {**POOL, "kubelet": {"topologyManagerPolicy": "single-numa-node",
                                "topologyManagerScope": "container"}}
    ten = {"requests": {"cpu": "10", "memory": "4Gi"}, "limits": {"cpu": "10", "memory": "4Gi"}}
    spec = {"containers": [{"name": "a", "image": "a:1", "resources": ten},
                           {"name": "b", "image": "b:1", "resources": ten}]}
    cfg = config(pool=pool, workloads={"pinnedContainers": ["a", "b"]})
    code, results, _ = render(cfg, deployment(spec=spec))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs a 10 on NUMA 0, b 10 on NUMA 1; "
        "1 per node (allocatable cpu 30: 20 each)"]


def test_a_limit_range_of_the_namespace_refuses_a_pinned_container_above_its_max():
    lr = {"apiVersion": "v1", "kind": "LimitRange",
          "metadata": {"name": "small-containers", "namespace": "ai"},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}
    code, results, _ = render(config(), lr, deployment())
    assert code == 1
    assert errors(results) == [
        "LimitRange small-containers of namespace ai refuses container 'server': \"maximum "
        "cpu usage per Container is 2, but limit is 4\"; the API server refuses the pod: "
        "change the container's resources or the LimitRange (kubernetes/kubernetes "
        "plugin/pkg/admission/limitranger/admission.go, "
        "https://kubernetes.io/docs/concepts/policy/limit-range/)",
        "left unchanged because of the errors above"]
    other = {**lr, "metadata": {"name": "small-containers", "namespace": "elsewhere"}}
    assert render(config(), other, deployment())[0] == 0


def test_a_limit_range_counts_the_injected_containers():
    # the LimitRanger validates after the mutating webhooks: daprd asking for less memory
    # than the min breaks the constraint even though the manifest's container meets it
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "floor",
                                                                 "namespace": "ai"},
          "spec": {"limits": [{"type": "Container", "min": {"memory": "64Mi"}}]}}
    cfg = config(verdict={"onFailure": "warning"})
    low = {**DAPR, "dapr.io/sidecar-memory-request": "32Mi"}
    code, results, _ = render(cfg, lr, deployment(annotations=low))
    refusal = ("warning", "LimitRange floor of namespace ai refuses container 'daprd' (added "
               "by dapr): \"minimum memory usage per Container is 64Mi, but request is 32Mi\"; "
               "the API server refuses the pod: change the container's resources or the "
               "LimitRange (kubernetes/kubernetes plugin/pkg/admission/limitranger/admission.go, "
               "https://kubernetes.io/docs/concepts/policy/limit-range/)")
    assert refusal in results
    # without a memory request of its own, daprd gets the LimitRange's default request
    # (the min): the LimitRanger runs again after the webhook changed the pod
    # (tests/test_limit_range_reinvocation.py checks that against the API server)
    code, results, _ = render(cfg, lr, deployment(annotations=DAPR))
    assert not [m for _, m in results if "LimitRange floor" in m], results


VPA = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
       "metadata": {"name": "srv-vpa", "namespace": "ai"},
       "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "srv"}}}


def test_a_vertical_pod_autoscaler_on_the_workload_rewrites_the_pinned_cpus():
    code, results, _ = render(config(), VPA, deployment())
    assert code == 1
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; no exclusive CPUs; 7 per node (allocatable cpu "
        "30: 4 each); will not run pinned (see the errors)"]
    assert errors(results) == [
        "VerticalPodAutoscaler srv-vpa (updateMode Recreate) sets pinned container 'server''s "
        "cpu request and limit to its recommendation (controlledValues RequestsAndLimits; no "
        "containerPolicies entry, so the defaults) instead of the 4 krm-fn wrote: a value "
        "that is almost never a whole number, so the static CPU Manager gives it no "
        "exclusive CPUs; keep it as written: spec.resourcePolicy.containerPolicies entry "
        "{containerName: server, mode: \"Off\"}, or {containerName: server, "
        "controlledResources: [memory], controlledValues: RequestsAndLimits}, or "
        "minAllowed.cpu and maxAllowed.cpu both 4, or updateMode: \"Off\" "
        "(https://github.com/kubernetes/autoscaler/tree/vertical-pod-autoscaler/v1.7.1/"
        "vertical-pod-autoscaler/pkg/utils/vpa capping.go, limit_and_request_scaling.go)",
        "left unchanged because of the errors above"]


def test_a_vertical_pod_autoscaler_requests_only_on_a_shared_pool_container_fails_closed():
    sidecar = {**VPA, "spec": {**VPA["spec"], "resourcePolicy": {"containerPolicies": [
        {"containerName": "server", "mode": "Off"},
        {"containerName": "*", "controlledValues": "RequestsOnly"}]}}}
    spec = {"containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4},
                           {"name": "metrics", "image": "m:1", "resources": {
                               "requests": {"cpu": "100m", "memory": "64Mi"},
                               "limits": {"cpu": "100m", "memory": "64Mi"}}}]}
    code, results, _ = render(config(), sidecar, deployment(spec=spec))
    assert code == 1
    assert errors(results)[0].startswith(
        "VerticalPodAutoscaler srv-vpa (updateMode Recreate) sets container 'metrics''s cpu "
        "and memory request to its recommendation and keeps the limit (controlledValues "
        "RequestsOnly; its containerPolicies entry '*'): a recommendation below the limit "
        "(cpu 100m, memory 64Mi) makes request != limit, so the pod is Burstable")
    assert len(errors(results)) == 2
    assert verdicts(results)[0].startswith("verdict: Burstable after admission; no exclusive "
                                           "CPUs; ")


def test_a_vertical_pod_autoscaler_that_leaves_cpu_alone_keeps_the_pin():
    memory_only = {**VPA, "spec": {**VPA["spec"], "resourcePolicy": {"containerPolicies": [
        {"containerName": "*", "controlledResources": ["memory"]}]}}}
    off = {**VPA, "spec": {**VPA["spec"], "updatePolicy": {"updateMode": "Off"}}}
    other = {**VPA, "spec": {"targetRef": {"kind": "Deployment", "name": "another"}}}
    for vpa in (memory_only, off, other):
        assert render(config(), vpa, deployment())[0] == 0


def test_knative_config_deployment_with_a_request_and_no_limit_names_the_key_to_add():
    cm = _config_deployment(**{"queue-sidecar-memory-request": "400Mi"})
    code, results, items = render(config(), cm, KSVC, FEATURES)
    assert code == 1
    assert items[0]["data"] == cm["data"]
    assert ("warning", "queue-sidecar-memory-request is 400Mi but queue-sidecar-memory-limit "
            "is not set, so queue-proxy gets request != limit and every Knative pod that "
            "reads this ConfigMap is Burstable; set queue-sidecar-memory-limit: \"400Mi\" (or "
            "spec.workloads.injection.knativeQueueProxy.memory, which krm-fn writes to both) "
            "(knative/serving pkg/reconciler/revision/resources/queue.go "
            "createQueueResources, pkg/deployment/config.go)") in results


def test_daemonset_pods_take_their_share_of_every_node_before_the_fit():
    # 44 allocatable CPUs fit 11 pods of 4, but node-exporter runs on every node of the pool
    # (it is not tuned: the selector takes Deployments only) and takes 250m of them
    pool = {**POOL, "reserved": {"cores": 2},
            "topology": {"sockets": 1, "numaNodesPerSocket": 1, "coresPerSocket": 24,
                         "threadsPerCore": 2, "memory": "192Gi"}}
    exporter = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "node-exporter", "namespace": "monitoring"},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node-exporter", "image": "prom/node-exporter:v1.8.2",
                     "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                   "limits": {"cpu": "250m", "memory": "64Mi"}}}]}}}}
    elsewhere = {**exporter, "metadata": {"name": "gpu-agent", "namespace": "monitoring"},
                 "spec": {"template": {"spec": {
                     "nodeSelector": {"pool": "gpu"},
                     "containers": exporter["spec"]["template"]["spec"]["containers"]}}}}
    cfg = config(pool=pool, selector={"kinds": ["Deployment"]})
    code, results, _ = render(cfg, exporter, elsewhere, deployment())
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "10 per node (allocatable cpu 44, 250m of it taken by DaemonSet pods: 4 each)"]
    assert ("node pool 'p': 44 exclusive CPUs per node (NUMA 0: 44), 190.9Gi allocatable "
            "memory, less the pods of DaemonSet node-exporter on every node; Deployment srv "
            "needs 4 exclusive CPUs (10 per node, limited by allocatable cpu 44, 250m of it "
            "taken by DaemonSet pods: 4 each (OutOfcpu))") in [m for _, m in results]


def test_a_daemonset_on_a_label_the_pool_does_not_list_is_named_in_the_summary():
    # it may run on the pool's nodes or not: not counted, and the summary says so
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": "agent", "namespace": "monitoring"},
             "spec": {"template": {"spec": {
                 "nodeSelector": {"node-role.kubernetes.io/worker": ""},
                 "containers": [{"name": "a", "image": "a:1", "resources": {
                     "requests": {"cpu": "500m", "memory": "64Mi"}}}]}}}}
    code, results, _ = render(config(selector={"kinds": ["Deployment"]}), agent, deployment())
    assert code == 0
    [summary] = [m for _, m in results if m.startswith("node pool 'p': 30 exclusive")]
    assert summary.endswith(
        "; DaemonSet agent may run on its nodes too (nodeSelector "
        "node-role.kubernetes.io/worker=: a label the pool does not list), and its pods are "
        "not counted")
    assert "less the pods of DaemonSet" not in summary


def test_a_runtime_class_whose_node_selector_conflicts_with_the_pool_refuses_the_pod():
    kata = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "kata"}, "handler": "kata",
            "scheduling": {"nodeSelector": {"pool": "kata-nodes"}}}
    spec = {"runtimeClassName": "kata",
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    code, results, _ = render(config(), kata, deployment(spec=spec))
    assert code == 1
    assert errors(results)[0] == (
        "RuntimeClass kata requires nodeSelector pool=kata-nodes but the pod sets pool=p: the "
        "RuntimeClass admission controller refuses the pod (conflict); use a RuntimeClass "
        "whose scheduling.nodeSelector matches the node pool, or another pool "
        "(https://kubernetes.io/docs/concepts/containers/runtime-class/#scheduling)")


def _unseen(results) -> list:
    return [m for _, m in results if "is not in the input, so injection" in m]


NS_DEP = {"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "srv", "namespace": "serving"},
          "spec": {"template": {"spec": {"containers": [
              {"name": "server", "image": "s:1",
               "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}}}}


def _ns_config(injection: dict) -> dict:
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "pin"},
            "spec": {"workloads": {"injection": injection},
                     "nodePools": [{"name": "p", "nodeSelector": {"a": "b"}}]}}


def test_namespace_not_in_the_input_is_an_info_naming_mode_always_per_configured_injector():
    import copy
    cfg = _ns_config({"istio": {"cpu": "500m", "memory": "256Mi"},
                      "linkerd": {"cpu": "100m", "memory": "64Mi"}})
    _, results, _ = render(cfg, copy.deepcopy(NS_DEP))
    assert _unseen(results) == [
        "Namespace serving is not in the input, so injection turned on for the whole "
        "namespace cannot be seen: Istio istio-proxy (Namespace label istio-injection=enabled "
        "or istio.io/rev; istio/istio manifests/charts/istio-control/istio-discovery/"
        "templates/mutatingwebhook.yaml); Linkerd linkerd-proxy (Namespace annotation "
        "linkerd.io/inject: enabled; linkerd/linkerd2 pkg/inject/report.go); this verdict "
        "counts no such sidecar. If the namespace has it, set "
        "spec.workloads.injection.istio.mode: always or spec.workloads.injection.linkerd.mode: "
        "always (krm-fn then sizes the sidecar and counts it), or add the Namespace to the "
        "input (marked config.kubernetes.io/local-config: \"true\" if this render must not "
        "apply it) so krm-fn reads it"]


def test_namespace_info_only_for_configured_auto_injectors_the_pod_leaves_open():
    import copy
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}}
    # no injector configured (the defaults): nothing
    assert _unseen(render(_ns_config({}), copy.deepcopy(NS_DEP))[1]) == []
    sized = {"cpu": "500m", "memory": "256Mi"}
    # the Namespace is in the input: it is read, nothing to say
    assert _unseen(render(_ns_config({"istio": sized}), copy.deepcopy(NS_DEP), ns)[1]) == []
    # mode always / never: the config already says what the cluster does
    for mode in ("always", "never"):
        cfg = _ns_config({"istio": dict(sized, mode=mode)})
        assert _unseen(render(cfg, copy.deepcopy(NS_DEP))[1]) == []
    # the pod opts out itself: the Namespace cannot turn it on
    dep = copy.deepcopy(NS_DEP)
    dep["spec"]["template"]["metadata"] = {"labels": {"sidecar.istio.io/inject": "false"}}
    assert _unseen(render(_ns_config({"istio": sized}), dep)[1]) == []
    # one result per pod, naming only the injector left open
    cfg = _ns_config({"istio": sized, "linkerd": sized})
    dep = copy.deepcopy(NS_DEP)
    dep["spec"]["template"]["metadata"] = {"annotations": {"linkerd.io/inject": "disabled"}}
    (msg,) = _unseen(render(cfg, dep)[1])
    assert "Istio istio-proxy" in msg and "Linkerd" not in msg


def test_namespace_info_names_the_flat_mode_key_in_the_configmap_form():
    import copy
    from krm_fn.pipeline import transform
    fc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pin"},
          "data": {"istioCpu": "500m", "istioMemory": "256Mi", "nodeSelector": "a=b"}}
    out = transform([copy.deepcopy(NS_DEP)], fc)
    (msg,) = [r.message for r in out.results if "is not in the input, so injection" in r.message]
    assert "If the namespace has it, set istioMode: always (krm-fn then" in msg


def test_unselected_cluster_storage_container_in_the_input_says_what_the_selector_lacks():
    # the newcomer case: KServe's `default` ClusterStorageContainer (100m/1, 100Mi/1Gi) is in
    # the input but spec.selector lists only the workload kinds and their namespace
    from tests.helpers import ROOT
    from krm_fn.pipeline import transform
    kpt = ROOT / "overlays" / "kpt"
    items = [yaml.safe_load((kpt / f).read_text())
             for f in ("deployment.yaml", "inferenceservice.yaml", "storage-container.yaml")]
    res = items[2]["spec"]["container"]["resources"]
    res["requests"], res["limits"] = {"cpu": "100m", "memory": "100Mi"}, {"cpu": "1",
                                                                         "memory": "1Gi"}
    fc = yaml.safe_load((kpt / "pin.yaml").read_text())
    out = transform(items, fc)
    (msg,) = [r.message for r in out.results if r.message.startswith(
        "KServe storage-initializer (the pod has a storageUri)")]
    assert msg.endswith(
        "(merged on top); or let krm-fn make them request == limit (it changes only the "
        "objects of the input that spec.selector selects): ConfigMap "
        "kserve/inferenceservice-config: put it in the input, add ConfigMap to "
        "spec.selector.kinds, add kserve to spec.selector.namespaces; "
        "ClusterStorageContainer default: add ClusterStorageContainer to "
        "spec.selector.kinds, add \"\" to spec.selector.namespaces (it is cluster-scoped, "
        "which counts as namespace default there)")
    # doing what it says for the ClusterStorageContainer is enough (its resources win)
    fc["spec"]["selector"] = {"kinds": ["Deployment", "InferenceService",
                                        "ClusterStorageContainer"],
                              "namespaces": ["serving", ""]}
    out = transform(items, fc)
    assert not out.has_errors
    assert [(".".join(c.path), c.new) for c in out.changes[2]] == [
        ("spec.container.resources.requests.cpu", "500m"),
        ("spec.container.resources.limits.cpu", "500m"),
        ("spec.container.resources.requests.memory", "1Gi")]


# --- pod-level resources by version (KEP-2837; gate defaults from the generated data) -------

def _pod_level_note(version: str) -> str:
    spec = {"resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                          "limits": {"cpu": "4", "memory": "8Gi"}},
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    _, results, _ = render(config(version), deployment(spec=spec))
    return [m for s, m in results if s == "warning" and "sets pod-level resources" in m][0]


def test_pod_level_resources_warning_says_what_each_version_does():
    """PodLevelResources is on by default in every supported version; the
    PodLevelResourceManagers gate is new in 1.36 (alpha) and beta in 1.37, off by default in
    both (pkg/features/kube_features.go of each release)."""
    head = "spec.template.spec.resources sets pod-level resources: "
    tail = "; remove spec.template.spec.resources and keep the container resources."
    assert _pod_level_note("1.35") == (
        head + "on Kubernetes 1.35 the static CPU Manager gives a pod with pod-level resources "
        "no exclusive CPUs (KEP-2837), so no container is pinned" + tail)
    assert _pod_level_note("1.36") == (
        head + "on Kubernetes 1.36 the static CPU Manager gives a pod with pod-level resources "
        "no exclusive CPUs (KEP-2837; unless the PodLevelResourceManagers gate (alpha, off by "
        "default in Kubernetes 1.36) is on), so no container is pinned" + tail)
    assert _pod_level_note("1.37") == (
        head + "on Kubernetes 1.37 the static CPU Manager gives a pod with pod-level resources "
        "no exclusive CPUs (KEP-2837; unless the PodLevelResourceManagers gate (beta, off by "
        "default in Kubernetes 1.37) is on), so no container is pinned" + tail)


GATE_OFF = {"extra": {"featureGates": {"PodLevelResources": False}}}


def test_pod_level_resources_with_the_gate_off_leave_the_pod_pinned():
    """With PodLevelResources off in the pool's 1.35 kubelet, its static CPU Manager does
    not skip spec.resources (pkg/kubelet/cm/cpumanager/policy_static.go of v1.35.4 checks
    the gate), and the pod-level resources the API server classifies the pod by
    (status.qosClass) are Guaranteed: exclusive CPUs for the server."""
    spec = {"resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                          "limits": {"cpu": "4", "memory": "8Gi"}},
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    code, results, _ = render(config("1.35", {**POOL, "kubelet": GATE_OFF}),
                              deployment(spec=spec))
    assert code == 0
    assert verdicts(results)[0].startswith(
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0")


GATES_OFF_1_37 = {"extra": {"featureGates": {
    "PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False,
    "PodLevelResourcesFixDefaulting": False, "PodLevelResourcesFixKubeletQOSClass": False}}}


def test_pod_level_resources_with_the_gate_off_are_skipped_from_1_36():
    """From 1.36 the static CPU Manager skips a pod with pod-level resources unless
    PodLevelResources and PodLevelResourceManagers are both on (policy_static.go of v1.36.3
    and v1.37.2), and the API server keeps spec.resources by its own gate: the kubelet's
    gate off pins nothing, so the render fails instead of calling the pod pinned."""
    spec = {"resources": GUARANTEED_4,
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    code, results, _ = render(config("1.37", {**POOL, "kubelet": GATES_OFF_1_37}),
                              deployment(spec=spec))
    assert code == 1
    assert verdicts(results)[0].startswith(
        "verdict: Guaranteed after admission; no exclusive CPUs")
    assert any("the pool's kubelet runs with PodLevelResources off, and on Kubernetes 1.37 "
               "its static CPU and Memory Managers skip such a pod" in m
               for m in errors(results))


GATE_OFF_1_36 = {"extra": {"featureGates": {
    "PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False}}}


@pytest.mark.parametrize("version, kubelet, notes", [
    # v1.35.4 policy_static.go skips a pod with pod-level resources only while the kubelet's
    # PodLevelResources is on: off, the containers are pinned one by one (no warning)
    ("1.35", GATE_OFF, []),
    # v1.36.3 and v1.37.2: skipped unless PodLevelResources and PodLevelResourceManagers
    # are both on, so also with PodLevelResources off
    ("1.36", GATE_OFF_1_36, [
        "on Kubernetes 1.36 the static CPU Manager gives a pod with pod-level resources no "
        "exclusive CPUs (KEP-2837; the pool's kubelet runs with the PodLevelResources gate "
        "off, and from Kubernetes 1.36 skips such a pod unless PodLevelResources and "
        "PodLevelResourceManagers are both on), so no container is pinned"]),
    ("1.37", GATES_OFF_1_37, [
        "on Kubernetes 1.37 the static CPU Manager gives a pod with pod-level resources no "
        "exclusive CPUs (KEP-2837; the pool's kubelet runs with the PodLevelResources gate "
        "off, and from Kubernetes 1.36 skips such a pod unless PodLevelResources and "
        "PodLevelResourceManagers are both on), so no container is pinned"]),
    # both gates on, the Topology Manager's container scope: pinned container by container
    ("1.37", {"topologyManagerScope": "container",
              "extra": {"featureGates": {"PodLevelResourceManagers": True}}}, []),
])
def test_the_pod_level_warning_follows_each_releases_cpu_manager(version, kubelet, notes):
    spec = {"resources": GUARANTEED_4,
            "containers": [{"name": "server", "image": "srv:1", "resources": GUARANTEED_4}]}
    _, results, _ = render(config(version, {**POOL, "kubelet": kubelet}), deployment(spec=spec))
    head = "spec.template.spec.resources sets pod-level resources: "
    tail = "; remove spec.template.spec.resources and keep the container resources."
    assert [m for s, m in results if s == "warning" and m.startswith(head)] == [
        head + n + tail for n in notes]
    pinned = verdicts(results)[0].startswith(
        "verdict: Guaranteed after admission; exclusive CPUs server 4")
    assert pinned == (not notes)


def test_an_empty_pod_level_resources_is_best_effort_before_1_37_and_ignored_from_it():
    # ComputePodQOS takes the pod-level branch whenever spec.resources is present before
    # 1.37 (kubernetes/kubernetes#135082); PodLevelResourcesFixKubeletQOSClass (1.37, on)
    # ignores an empty one; krm-fn leaves it as written (tests/test_kubelet_differential.py
    # empty-pod-level-resources-* check both against the kubelet)
    spec = {"resources": {}, "containers": [{"name": "server", "image": "srv:1",
                                             "resources": GUARANTEED_4}]}
    code, results, items = render(config(version="1.35"), deployment(spec=spec))
    assert code == 1
    assert verdicts(results)[0].startswith("verdict: BestEffort after admission; no exclusive "
                                           "CPUs")
    assert ("an empty pod-level spec.resources decides the class on Kubernetes 1.35"
            in errors(results)[0])
    code, results, items = render(config(version="1.37"), deployment(spec=spec))
    assert code == 0, errors(results)
    assert verdicts(results)[0].startswith("verdict: Guaranteed after admission; exclusive "
                                           "CPUs server 4")
    assert items[0]["spec"]["template"]["spec"]["resources"] == {}


def test_an_empty_pod_level_resources_from_1_37_leaves_the_class_to_the_containers():
    # the fix needed is the containers' (daprd, injected without requests == limits), not
    # the ignored pod-level field
    spec = {"resources": {}, "containers": [{"name": "server", "image": "srv:1",
                                             "resources": GUARANTEED_4}]}
    code, results, _ = render(config(version="1.37", verdict={"onFailure": "warning"}),
                              deployment(annotations=DAPR, spec=spec))
    said = [m for _, m in results if m.startswith("pod is Burstable after admission")]
    assert len(said) == 1 and "not Guaranteed: 'daprd'" in said[0], said


# --- an item left unchanged: its verdict describes the pod as written -----------------------

BURSTABLE_2_4 = {"containers": [{"name": "server", "image": "srv:1", "resources": {
    "requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}]}


def test_the_verdict_of_an_item_left_unchanged_describes_the_pod_as_written():
    # the annotation's error leaves the item as written (requests.cpu 2, limits.cpu 4:
    # Burstable), not as krm-fn would have written it (4 and 4, 4 exclusive CPUs)
    code, results, items = render(config(), deployment(spec=BURSTABLE_2_4,
                                                       annotations={"krm-fn.dev/cpus": "abc"}))
    assert code == 1
    assert items[0]["spec"]["template"]["spec"] == BURSTABLE_2_4
    assert verdicts(results) == [
        "verdict: Burstable after admission; no exclusive CPUs; 7 per node (allocatable "
        "memory 62.93Gi: 8Gi each); will not run pinned (see the errors)"]


def test_the_verdict_of_a_tuned_item_describes_the_pod_krm_fn_writes():
    code, results, _ = render(config(), deployment(spec=BURSTABLE_2_4))
    assert code == 0
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; 7 per node "
        "(allocatable cpu 30: 4 each)"]
