"""The public problem reports of ../shared/reference/cases.md, one test each, named after
the case. Inputs live in tests/testdata/<case>/ (also checked byte for byte by
test_golden.py); these tests assert the values that matter for each report."""
import pytest

from tests.helpers import TESTDATA, case_input, env_of, item, load, results, run_cli

THREAD_VARS = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS",
               "BLIS_NUM_THREADS", "TORCH_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
               "RAYON_NUM_THREADS", "GOMAXPROCS", "PYTHON_CPU_COUNT"]


def run_case(case: str, stdin: str | None = None):
    p = run_cli([], stdin if stdin is not None else case_input(case))
    return p, load(p.stdout)


def res(c: dict) -> dict:
    return c["resources"]


def test_c01_smt_alignment_rounds_to_threads_per_core():
    p, out = run_case("c01-smt-alignment")
    assert p.returncode == 0
    c = item(out, "Pod", "dpdk-app")["spec"]["containers"][0]
    assert res(c) == {"requests": {"cpu": "2", "memory": "1Gi"},
                      "limits": {"cpu": "2", "memory": "1Gi"}}
    assert env_of(c) == {v: "2" for v in THREAD_VARS}
    warn = results(out, "warning")
    assert [w["message"] for w in warn] == [
        "container 'app': cpu 1 raised to 2: node pool 'inference' uses full-pcpus-only with 2 "
        "threads per core, so the CPUs of a pinned container must be a multiple of 2 (else the "
        "kubelet fails the pod with SMTAlignmentError)"]
    assert warn[0]["field"]["path"] == "spec.containers[0].resources.limits.cpu"


def test_c01_threads_per_core_comes_from_the_pool_not_a_constant():
    text = case_input("c01-smt-alignment")
    text = text.replace('threadsPerCore: "2"', 'threadsPerCore: "4"')
    p, out = run_case("", text)
    c = item(out, "Pod", "dpdk-app")["spec"]["containers"][0]
    assert res(c)["limits"]["cpu"] == "4"


def test_c01_strict_mode_is_an_error_and_leaves_the_pod_unchanged():
    text = case_input("c01-smt-alignment")
    text = text.replace('threadsPerCore: "2"}', 'threadsPerCore: "2", cpuRounding: error}')
    p, out = run_case("", text)
    assert p.returncode == 1
    assert "SMTAlignmentError; set 2 (spec.workloads.cpuRounding is error)" in p.stderr
    pod = item(out, "Pod", "dpdk-app")
    assert res(pod["spec"]["containers"][0])["limits"]["cpu"] == "1"
    assert "env" not in pod["spec"]["containers"][0]
    assert "nodeSelector" not in pod["spec"]


def test_c02_integer_init_container_moves_to_the_shared_pool():
    p, out = run_case("c02-integer-init-container")
    assert p.returncode == 0
    spec = item(out, "Pod", "server")["spec"]
    fetch = spec["initContainers"][0]
    assert res(fetch) == {"requests": {"cpu": "500m", "memory": "1Gi"},
                          "limits": {"cpu": "500m", "memory": "1Gi"}}
    assert "env" not in fetch
    assert res(spec["containers"][0]) == {"requests": {"cpu": "14", "memory": "8Gi"},
                                          "limits": {"cpu": "14", "memory": "8Gi"}}
    # cpu 1 -> 500m lowers it: a warning (kustomize shows no info result)
    warns = [r for r in results(out, "warning")
             if (r.get("field") or {}).get("path", "").startswith("spec.initContainers[0]")]
    assert {r["field"]["path"] for r in warns} == {
        "spec.initContainers[0].resources.requests.cpu",
        "spec.initContainers[0].resources.limits.cpu"}
    assert "kubernetes/kubernetes#112228" in warns[0]["message"]
    assert not [r for r in results(out, "info")
                if (r.get("field") or {}).get("path", "").startswith("spec.initContainers[0]")]


def test_c02_opted_in_init_container_is_pinned_but_never_above_the_largest_app():
    text = case_input("c02-integer-init-container")
    text = text.replace('{name: fetch, image: fetch:1, resources: {requests: {cpu: "1"',
                        '{name: fetch, image: fetch:1, resources: {requests: {cpu: "20"')
    text = text.replace('limits: {cpu: "1", memory: 1Gi}}}', 'limits: {cpu: "20", memory: 1Gi}}}')
    text = text.replace('reservedSystemCPUs: "0-2"}', 'reservedSystemCPUs: "0-2", '
                                                     'pinnedContainers: "server,fetch"}')
    p, out = run_case("", text)
    fetch = item(out, "Pod", "server")["spec"]["initContainers"][0]
    assert res(fetch)["limits"]["cpu"] == "14"
    assert env_of(fetch)["OMP_NUM_THREADS"] == "14"


def test_c03_native_sidecar_is_long_running_and_pinned():
    p, out = run_case("c03-native-sidecar")
    assert p.returncode == 0
    spec = item(out, "Pod", "mesh-app")["spec"]
    proxy, server = spec["initContainers"][0], spec["containers"][0]
    assert res(proxy) == {"requests": {"cpu": "4", "memory": "200Mi"},
                          "limits": {"cpu": "4", "memory": "200Mi"}}
    assert res(server) == {"requests": {"cpu": "8", "memory": "4Gi"},
                           "limits": {"cpu": "8", "memory": "4Gi"}}
    assert env_of(proxy)["OMP_NUM_THREADS"] == "4"
    assert env_of(server)["OMP_NUM_THREADS"] == "8"


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_c03_no_sidecar_warning_on_supported_versions(version):
    """Every supported version pins a native sidecar on its own CPUs (the fix of
    kubernetes/kubernetes#119442 is in 1.29): no warning about it."""
    text = case_input("c03-native-sidecar")
    text = text.replace('kubernetesVersion: "1.35"', f'kubernetesVersion: "{version}"')
    assert f'kubernetesVersion: "{version}"' in text
    p, out = run_case("", text)
    assert p.returncode == 0
    assert not [r for r in results(out, "warning") if "native sidecar" in r["message"]]


@pytest.mark.parametrize("version", ["1.27", "1.28"])
def test_c03_versions_before_native_sidecars_are_refused(version):
    text = case_input("c03-native-sidecar").replace('kubernetesVersion: "1.35"',
                                                    f'kubernetesVersion: "{version}"')
    p, out = run_case("", text)
    assert p.returncode == 1
    assert [r["message"] for r in results(out, "error")] == [
        f"invalid function config: Kubernetes {version} is not supported: krm-fn supports "
        f"Kubernetes 1.35, 1.36 and 1.37, as upstream maintains the three most recent minor "
        f"releases (https://kubernetes.io/releases/)"]


ISTIO_INIT_WARNING = (
    "Istio: older injection templates size istio-init from the cluster-wide "
    "global.proxy_init.resources, not from these annotations, unless Istio CNI is used; on "
    "such a release set equal requests and limits there, or istio-init keeps the pod Burstable")
LINKERD_INIT_WARNING = (
    "Linkerd: releases before linkerd/linkerd2#12741 (merged 2024-06) size linkerd-init from "
    "the install-time Helm value proxyInit.resources, not from these annotations; on such a "
    "release set equal requests and limits there, or linkerd-init keeps the pod Burstable")
KNATIVE_WARNING = (
    "Knative: the queue.sidecar.serving.knative.dev resource annotations are honoured from "
    "knative-v1.11.0; older Knative sizes queue-proxy only from ConfigMap "
    "knative-serving/config-deployment (queue-sidecar-* keys): set equal requests and limits "
    "there, or queue-proxy keeps the pod Burstable")
QUEUE = "queue.sidecar.serving.knative.dev/"


def template_annotations(out: dict, kind: str = "Deployment", name: str = "infer") -> dict:
    return item(out, kind, name)["spec"]["template"]["metadata"].get("annotations") or {}


def test_c07_istio_sidecar_gets_equal_request_and_limit_annotations():
    p, out = run_case("c07-istio-sidecar")
    assert p.returncode == 0
    md = item(out, "Deployment", "infer")["spec"]["template"]["metadata"]
    assert md["labels"] == {"app": "infer", "sidecar.istio.io/inject": "true"}
    assert md["annotations"] == {"sidecar.istio.io/proxyCPU": "500m",
                                 "sidecar.istio.io/proxyCPULimit": "500m",
                                 "sidecar.istio.io/proxyMemory": "256Mi",
                                 "sidecar.istio.io/proxyMemoryLimit": "256Mi"}
    infos = [r for r in results(out, "info") if "Istio" in r["message"]]
    assert [r["field"]["path"] for r in infos] == [
        f"spec.template.metadata.annotations['sidecar.istio.io/{k}']"
        for k in ("proxyCPU", "proxyCPULimit", "proxyMemory", "proxyMemoryLimit")]
    assert infos[0]["message"] == (
        "Istio istio-proxy (label sidecar.istio.io/inject=true): annotation "
        "sidecar.istio.io/proxyCPU set to 500m from spec.workloads.injection.istio.cpu: the "
        "injected container needs request == limit for the pod to stay Guaranteed")
    assert [w["message"] for w in results(out, "warning")] == [ISTIO_INIT_WARNING]
    assert results(out, "warning")[0]["field"]["path"] == "spec.template.metadata.annotations"


def test_c07_user_value_is_kept_and_mirrored_to_its_pair():
    text = case_input("c07-istio-sidecar")
    text = text.replace('metadata: {labels: {app: infer, sidecar.istio.io/inject: "true"}}',
                        'metadata: {labels: {app: infer, sidecar.istio.io/inject: "true"}, '
                        'annotations: '
                        '{sidecar.istio.io/proxyCPU: 750m, sidecar.istio.io/proxyMemoryLimit: '
                        '300Mi}}')
    p, out = run_case("", text)
    assert p.returncode == 0
    assert template_annotations(out) == {"sidecar.istio.io/proxyCPU": "750m",
                                         "sidecar.istio.io/proxyMemoryLimit": "300Mi",
                                         "sidecar.istio.io/proxyCPULimit": "750m",
                                         "sidecar.istio.io/proxyMemory": "300Mi"}
    infos = {r["field"]["path"]: r["message"] for r in results(out, "info")
             if "Istio" in r["message"]}
    assert infos == {
        "spec.template.metadata.annotations['sidecar.istio.io/proxyCPULimit']":
            "Istio istio-proxy (label sidecar.istio.io/inject=true): annotation "
            "sidecar.istio.io/proxyCPULimit set to 750m, equal to sidecar.istio.io/proxyCPU "
            "(your value is kept over spec.workloads.injection.istio.cpu 500m): the injected "
            "container needs request == limit for the pod to stay Guaranteed",
        "spec.template.metadata.annotations['sidecar.istio.io/proxyMemory']":
            "Istio istio-proxy (label sidecar.istio.io/inject=true): annotation "
            "sidecar.istio.io/proxyMemory set to 300Mi, equal to "
            "sidecar.istio.io/proxyMemoryLimit (your value is kept over "
            "spec.workloads.injection.istio.memory 256Mi): the injected container needs "
            "request == limit for the pod to stay Guaranteed"}


def test_c07_whole_cpu_proxy_value_fails_closed_with_smt_alignment():
    """A user's proxyCPU "1" is kept and mirrored, but then istio-init and istio-proxy each
    ask for one whole CPU: the static CPU Manager pins them, and under full-pcpus-only with
    2 threads per core the kubelet rejects the pod (SMTAlignmentError). The verdict says so
    and the render fails."""
    text = case_input("c07-istio-sidecar")
    text = text.replace('metadata: {labels: {app: infer, sidecar.istio.io/inject: "true"}}',
                        'metadata: {labels: {app: infer, sidecar.istio.io/inject: "true"}, '
                        'annotations: '
                        '{sidecar.istio.io/proxyCPU: "1"}}')
    p, out = run_case("", text)
    assert p.returncode == 1
    errors = [r["message"] for r in results(out, "error")]
    assert errors[0].startswith("container 'istio-init' fails with SMTAlignmentError on pool "
                                "'inference' (full-pcpus-only): SMT Alignment Error: requested "
                                "1 cpus not multiple cpus per core = 2")
    assert errors[-1] == "left unchanged because of the errors above"


def test_c07_injection_false_adds_nothing_even_in_always_mode():
    text = case_input("c07-istio-sidecar")
    text = text.replace('sidecar.istio.io/inject: "true"', 'sidecar.istio.io/inject: "false"')
    for mode in ("auto", "always"):
        p, out = run_case("", text.replace("istio: {cpu: 500m, memory: 256Mi}",
                                           f"istio: {{cpu: 500m, memory: 256Mi, mode: {mode}}}"))
        assert p.returncode == 0
        assert template_annotations(out) == {}
        assert not [r for r in results(out) if "Istio" in r["message"]]


def test_c07_annotation_opt_in_and_mode_never():
    text = case_input("c07-istio-sidecar")
    text = text.replace('metadata: {labels: {app: infer, sidecar.istio.io/inject: "true"}}',
                        'metadata: {labels: {app: infer}, '
                        'annotations: {sidecar.istio.io/inject: "true"}}')
    p, out = run_case("", text)
    assert template_annotations(out)["sidecar.istio.io/proxyMemoryLimit"] == "256Mi"
    p, out = run_case("", text.replace("istio: {cpu: 500m, memory: 256Mi}",
                                       "istio: {cpu: 500m, memory: 256Mi, mode: never}"))
    assert template_annotations(out) == {"sidecar.istio.io/inject": "true"}
    assert not [r for r in results(out) if "Istio" in r["message"]]


def test_c08_linkerd_proxy_gets_equal_request_and_limit_annotations():
    p, out = run_case("c08-linkerd-sidecar")
    assert p.returncode == 0
    assert template_annotations(out) == {"linkerd.io/inject": "enabled",
                                         "config.linkerd.io/proxy-cpu-request": "250m",
                                         "config.linkerd.io/proxy-cpu-limit": "250m",
                                         "config.linkerd.io/proxy-memory-request": "64Mi",
                                         "config.linkerd.io/proxy-memory-limit": "64Mi"}
    assert [w["message"] for w in results(out, "warning")] == [LINKERD_INIT_WARNING]


def test_c08_always_mode_covers_namespace_level_injection():
    text = case_input("c08-linkerd-sidecar")
    text = text.replace("      metadata: {labels: {app: infer}, "
                        "annotations: {linkerd.io/inject: enabled}}\n", "")
    p, out = run_case("", text)
    assert "metadata" not in item(out, "Deployment", "infer")["spec"]["template"]
    # nothing sized; only the info that the Namespace is not there to say otherwise
    assert [(r["severity"], r["message"][:145]) for r in results(out)
            if "Linkerd" in r["message"]] == [
        ("info", "Namespace default is not in the input, so injection turned on for the whole "
                 "namespace cannot be seen: Linkerd linkerd-proxy (Namespace annotation")]
    p, out = run_case("", text.replace('linkerd: {cpu: "0.25", memory: 64Mi}',
                                       'linkerd: {cpu: "0.25", memory: 64Mi, mode: always}'))
    assert p.returncode == 0
    assert template_annotations(out) == {"config.linkerd.io/proxy-cpu-request": "250m",
                                         "config.linkerd.io/proxy-cpu-limit": "250m",
                                         "config.linkerd.io/proxy-memory-request": "64Mi",
                                         "config.linkerd.io/proxy-memory-limit": "64Mi"}
    assert results(out, "info")[0]["message"].startswith(
        "Linkerd linkerd-proxy (spec.workloads.injection.linkerd.mode is always): annotation "
        "config.linkerd.io/proxy-cpu-request set to 250m")
    # an explicit opt-out wins over always
    p, out = run_case("", text.replace('linkerd: {cpu: "0.25", memory: 64Mi}',
                                       'linkerd: {cpu: "0.25", memory: 64Mi, mode: always}')
                      .replace("    template:\n", "    template:\n      metadata: {annotations: "
                                                    "{linkerd.io/inject: disabled}}\n"))
    assert template_annotations(out) == {"linkerd.io/inject": "disabled"}


def test_c09_kserve_serverless_gets_queue_proxy_annotations():
    p, out = run_case("c09-knative-queue-proxy")
    assert p.returncode == 0
    predictor = item(out, "InferenceService", "predictor")["spec"]["predictor"]
    assert predictor["annotations"] == {QUEUE + "cpu-resource-request": "100m",
                                        QUEUE + "cpu-resource-limit": "100m",
                                        QUEUE + "memory-resource-request": "128Mi",
                                        QUEUE + "memory-resource-limit": "128Mi"}
    assert [w["message"] for w in results(out, "warning")] == [KNATIVE_WARNING]
    assert results(out, "info")[0]["field"]["path"] == \
        f"spec.predictor.annotations['{QUEUE}cpu-resource-request']"


def test_c09_kserve_raw_deployment_gets_no_queue_proxy_annotations():
    text = case_input("c09-knative-queue-proxy")
    for mode in ("RawDeployment", "Standard"):
        p, out = run_case("", text.replace("deploymentMode: Serverless",
                                           f"deploymentMode: {mode}"))
        assert p.returncode == 0
        assert "annotations" not in item(out, "InferenceService", "predictor")["spec"][
            "predictor"]
        assert not [r for r in results(out) if "queue" in r["message"]]


def test_c09_knative_service_gets_queue_proxy_annotations():
    import pytest

    from krm_fn.workloads import KINDS
    if ("serving.knative.dev", "Service") not in KINDS:
        pytest.skip("the Knative Service kind is not registered yet")
    p, out = run_case("", (TESTDATA / "c09-knative-queue-proxy" /
                           "knative-service.yaml").read_text())
    assert p.returncode == 0, p.stderr
    assert template_annotations(out, "Service", "predictor") == {
        QUEUE + "cpu-resource-request": "100m", QUEUE + "cpu-resource-limit": "100m",
        QUEUE + "memory-resource-request": "128Mi", QUEUE + "memory-resource-limit": "128Mi"}
    assert KNATIVE_WARNING in [w["message"] for w in results(out, "warning")]
    from tests.helpers import without_results
    again = run_cli([], without_results(p.stdout))
    assert without_results(again.stdout) == without_results(p.stdout)


def test_c10_memory_missing_is_an_error_naming_container_and_field():
    p, out = run_case("c10-memory-missing")
    assert p.returncode == 1
    errors = results(out, "error")
    assert errors[0]["field"]["path"] == "spec.containers[0].resources.limits.memory"
    assert errors[0]["message"].startswith("container 'a' is pinned but sets no memory")
    assert errors[0]["resourceRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "mixed"}
    assert "krm-fn: error: Pod mixed spec.containers[0].resources.limits.memory" in p.stderr
    # the object is unchanged
    original = load(case_input("c10-memory-missing"))
    assert item(out, "Pod", "mixed") == original["items"][0]


def test_c10_memory_default_and_copies():
    p, out = run_case("c10-memory-default")
    assert p.returncode == 0
    a, b, c = item(out, "Pod", "mixed")["spec"]["containers"]
    assert res(a) == {"requests": {"cpu": "2", "memory": "1Gi"},
                      "limits": {"cpu": "2", "memory": "1Gi"}}
    assert res(b) == {"requests": {"cpu": "2", "memory": "2Gi"},
                      "limits": {"cpu": "2", "memory": "2Gi"}}
    assert res(c) == {"requests": {"cpu": "2", "memory": "2Gi"},
                      "limits": {"cpu": "2", "memory": "2Gi"}}


def test_c11_fractional_cpu_rounds_up_with_warning():
    p, out = run_case("c11-fractional-cpu")
    c = item(out, "Pod", "frac")["spec"]["containers"][0]
    assert res(c)["requests"]["cpu"] == res(c)["limits"]["cpu"] == "2"
    assert env_of(c)["OMP_NUM_THREADS"] == "2"
    assert results(out, "warning")[0]["message"] == (
        "container 'server': cpu 1500m rounded up to 2: the static CPU Manager gives exclusive "
        "CPUs only to whole-number requests")


def test_c11_keep_mode_writes_floor_literals_never_resource_field_ref():
    p, out = run_case("c11-fractional-keep")
    c = item(out, "Pod", "frac")["spec"]["containers"][0]
    assert res(c)["limits"]["cpu"] == "1500m"
    assert all(e["value"] == "1" and "valueFrom" not in e for e in c["env"])


def test_c12_kserve_framework_container_gets_thread_env():
    p, out = run_case("c12-kserve-threads")
    assert p.returncode == 0
    pred = item(out, "InferenceService", "torchscript")["spec"]["predictor"]
    env = env_of(pred["pytorch"])
    # KServe pytorch is TorchServe, whose workers' torch pools default to one thread per
    # physical core: 4 CPUs with 2 threads per core -> 2 (threads.perCore engine-default)
    assert env["OMP_NUM_THREADS"] == "2"        # the value already there, kept
    assert env["MKL_NUM_THREADS"] == "2"        # higher value replaced, warned
    for v in ("OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "PYTHON_CPU_COUNT"):
        assert env[v] == "2"
    assert pred["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning") if "field" in r}
    assert warn["spec.predictor.pytorch.env[1].value"].startswith(
        "container 'kserve-container': MKL_NUM_THREADS 40 -> 2")
    # the ClusterStorageContainer in the input sizes the storage-initializer, the config the
    # queue-proxy: the pod stays Guaranteed after admission
    (line,) = [r["message"] for r in results(out, "info") if r["message"].startswith("verdict:")]
    assert line.startswith("verdict: Guaranteed after admission; exclusive CPUs "
                           "kserve-container 4 on NUMA 0; injected storage-initializer, "
                           "queue-proxy;")


def test_c13_gomaxprocs_on_every_pinned_container_only():
    p, out = run_case("c13-go-sidecar")
    server, exporter, logs = item(out, "Pod", "go-sidecar")["spec"]["containers"]
    assert env_of(server) == {"GOMAXPROCS": "8", "OMP_NUM_THREADS": "8"}
    assert env_of(exporter) == {"GOMAXPROCS": "2", "OMP_NUM_THREADS": "2"}
    assert "env" not in logs
    first, gomaxprocs, _exclusive = [r["message"] for r in results(out, "warning")]
    assert first.startswith("container 'server' is pinned because it is the first container")
    assert gomaxprocs == (
        "container 'exporter': GOMAXPROCS 16 -> 2: 16 is more threads than the 2 pinned CPUs "
        "and would oversubscribe them")


ORT_WARNING = (
    "container 'ort' runs ONNX Runtime of a version its image tag does not name, which before "
    "1.29 reads no thread env var: its intra-op pool defaults to the physical cores "
    "(OMP_NUM_THREADS reaches only OpenMP builds; ORT_INTRA_OP_NUM_THREADS, set, is read from "
    "1.29 on), so the variables krm-fn sets may not bound it; pass 2 to "
    "SessionOptions.intra_op_num_threads in the app, e.g. from annotation krm-fn.dev/threads "
    "via the downward API (env valueFrom fieldRef metadata.annotations['krm-fn.dev/threads']); "
    "under Triton add --backend-config=onnxruntime,enable-global-threadpool=1 and "
    "--backend-config=onnxruntime,intra_op_thread_count=2 to args")


def test_c14_onnxruntime_gets_an_annotation_and_a_warning_never_a_bound_claim():
    p, out = run_case("c14-onnxruntime")
    assert p.returncode == 0
    pod = item(out, "Pod", "ort")
    # ONNX Runtime's own default is one thread per physical core: 4 CPUs, 2 per core -> 2
    assert pod["metadata"]["annotations"] == {"krm-fn.dev/threads": "2"}
    env = env_of(pod["spec"]["containers"][0])
    assert env == {**{v: "2" for v in THREAD_VARS}, "ORT_INTRA_OP_NUM_THREADS": "2"}
    warnings = results(out, "warning")
    assert [r["message"] for r in warnings][1:] == [ORT_WARNING]
    assert warnings[0]["field"]["path"] == "spec.containers[0].env[0].value"   # OMP 4 -> 2
    assert warnings[1]["field"]["path"] == "spec.containers[0]"
    ann = [r for r in results(out, "info") if "krm-fn.dev/threads" in r["message"]]
    assert ann[0]["field"] == {"path": "metadata.annotations['krm-fn.dev/threads']",
                               "proposedValue": "2"}
    # krm-fn never reports an ONNX Runtime of unknown version as bound by the env vars
    assert not [r for r in results(out) if "ONNX Runtime" in r["message"]
                and "bound" in r["message"] and "may not bound" not in r["message"]]


def test_c14_triton_serving_onnx_gets_the_backend_config_advice():
    text = case_input("c14-onnxruntime")
    text = text.replace("image: onnxruntime-server:1", "image: nvcr.io/nvidia/tritonserver:24.05-py3")
    p, out = run_case("", text)
    pod = item(out, "Pod", "ort")
    assert "annotations" not in pod["metadata"]
    # Triton's backends (ONNX Runtime, PyTorch) default to one thread per physical core:
    # 4 CPUs, 2 per core -> 2 under threads.perCore engine-default
    assert env_of(pod["spec"]["containers"][0])["OMP_NUM_THREADS"] == "2"
    assert [r["message"] for r in results(out, "warning")] == [
        "container 'ort': OMP_NUM_THREADS 4 -> 2: 4 is more threads than the 4 pinned CPUs as "
        "2 physical cores (2 threads per core), since Triton runs one thread per physical core "
        "by itself and would oversubscribe them",
        "container 'ort' runs Triton: the thread env vars reach its PyTorch and Python "
        "backends, but its ONNX Runtime backend gives each ONNX model its own pool of one "
        "thread per physical core unless told; if it serves ONNX models add "
        "--backend-config=onnxruntime,enable-global-threadpool=1 and "
        "--backend-config=onnxruntime,intra_op_thread_count=2 to args (one pool of 2 threads "
        "shared by those models; intra_op_thread_count without enable-global-threadpool is "
        "ignored), or set parameters { key: \"intra_op_thread_count\" value: { string_value: "
        "\"2\" } } in each ONNX model's config.pbtxt (the model repository, which krm-fn does "
        "not see)"]


def test_c16_multi_worker_divides_threads_and_warns_about_the_oom_group():
    p, out = run_case("c16-multi-worker")
    assert p.returncode == 0
    c = item(out, "Pod", "gunicorn")["spec"]["containers"][0]
    assert env_of(c) == {v: "1" for v in THREAD_VARS}     # 4 CPUs / 4 workers
    assert res(c)["limits"] == {"cpu": "4", "memory": "8Gi"}
    warn = results(out, "warning")
    assert [w["message"] for w in warn] == [
        "container 'api' runs 4 worker processes (--workers 4): since Kubernetes 1.28 on cgroup "
        "v2 the kubelet sets memory.oom.group, so one worker going over the memory limit kills "
        "the whole container, all 4 workers; make resources.limits.memory (8Gi) cover all 4 "
        "workers at their peak, or set spec.nodePools[].kubelet.singleProcessOOMKill: true "
        "for node pool 'inference'; thread vars are 1 per worker"]
    assert warn[0]["field"]["path"] == "spec.containers[0].args[1]"
    info = [r for r in results(out, "info")
            if (r.get("field") or {}).get("path") == "spec.containers[0].env"]
    assert "divided by 4 worker processes (--workers 4)" in info[0]["message"]
    # singleProcessOOMKill is never written to the kubelet config unless requested
    assert "singleProcessOOMKill" not in p.stdout.split("results:")[0]


def test_c16_gunicorn_short_flag_and_uneven_division():
    text = case_input("c16-multi-worker")
    text = text.replace('args: ["--workers", "4"]', 'command: [gunicorn, -w, "3", "app:app"]')
    p, out = run_case("", text)
    c = item(out, "Pod", "gunicorn")["spec"]["containers"][0]
    assert env_of(c)["OMP_NUM_THREADS"] == "1"            # 4 // 3
    assert results(out, "warning")[0]["message"].startswith(
        "container 'api' runs 3 worker processes (gunicorn -w 3)")


def test_c17_comments_order_and_quoting_kept():
    src = case_input("c17-comments-order")
    p, _ = run_case("c17-comments-order")
    out = p.stdout
    # the ConfigMap comes out byte for byte, YAML 1.1 look-alikes untouched
    cm_in = src[src.index("- apiVersion: v1\n  kind: ConfigMap"):src.index("- apiVersion: v1\n  kind: Pod")]
    assert cm_in in out
    # in the Pod only owned fields change; comments stay on their lines
    assert "    name: server  # the model server\n" in out
    assert "      image: 'srv:1'\n" in out
    assert ("      resources:\n        # sized for 4 cores\n        requests:\n          cpu: \"4\"\n"
            "          memory: \"8Gi\"\n        limits: {cpu: \"4\", memory: 8Gi}\n") in out
    assert "    # keep nodes fixed\n    nodeSelector:\n      zone: a\n" in out


def test_c18_no_resource_list_on_stdin_is_a_usage_error():
    p = run_cli([], b"")
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("krm-fn: no input: krm-fn expects a ResourceList on stdin")
    assert "Traceback" not in p.stderr


def test_c18_config_is_never_read_from_files_relative_to_cwd(tmp_path):
    (tmp_path / "fn-config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                             "data: {threadsEnv: BOGUS}\n")
    src = case_input("c11-fractional-cpu")
    p = run_cli([], src, cwd=tmp_path)
    assert "BOGUS" not in p.stdout
    assert p.stdout == run_cli([], src).stdout


def test_c19_companion_carries_no_function_config_annotations():
    p, out = run_case("c19-companion-annotations")
    assert p.returncode == 0
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert "annotations" not in cm["metadata"]
    assert cm["metadata"]["namespace"] == "kube-system"
    # input items' orchestrator annotations are untouched
    dep = item(out, "Deployment", "infer")
    assert dep["metadata"]["annotations"]["internal.config.kubernetes.io/index"] == "0"
    assert dep["metadata"]["annotations"]["config.kubernetes.io/index"] == "0"


def test_c19_under_kpt_the_companion_gets_its_own_path():
    text = case_input("c19-companion-annotations")
    text = text.replace('      internal.config.kubernetes.io/index: "0"\n',
                        '      internal.config.kubernetes.io/index: "0"\n'
                        '      internal.config.kubernetes.io/path: deploy.yaml\n')
    p, out = run_case("", text)
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert cm["metadata"]["annotations"] == {
        "internal.config.kubernetes.io/path": "node/kubelet-inference.yaml"}


C06 = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: infer}
  spec:
    containers:
    - {name: server, image: srv:1, resources: {requests: {cpu: "2", memory: 2Gi}, limits: {cpu: "2", memory: 2Gi}}}
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: function-input}
  data: {kubernetesVersion: "VERSION"}
"""


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_c06_no_cfs_quota_warning_and_never_cpu_cfs_quota_false(version):
    """DisableCPUQuotaWithExclusiveCPUs is on by default in every supported version (locked
    in 1.37): pinned containers keep no CFS quota, so no warning, and krm-fn writes neither
    cpuCFSQuota nor the gate."""
    p, out = run_case("", C06.replace("VERSION", version))
    assert p.returncode == 0
    assert not [r for r in results(out, "warning") if "CFS quota" in r["message"]]
    kubelet = item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"]
    assert "cpuCFSQuota" not in kubelet and "DisableCPUQuotaWithExclusiveCPUs" not in kubelet


def test_c06_versions_whose_kubelet_keeps_the_quota_are_refused():
    p, out = run_case("", C06.replace("VERSION", "1.32"))
    assert p.returncode == 1
    assert [r["field"]["path"] for r in results(out, "error")] == ["data.kubernetesVersion"]


def test_c16_single_process_oom_kill_only_when_requested():
    text = case_input("c16-multi-worker")
    p, out = run_case("", text)
    kubelet = item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"]
    assert "singleProcessOOMKill" not in kubelet
    cfg = ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
           "  metadata: {name: pin}\n  spec:\n    nodePools:\n    - name: inference\n"
           "      kubelet: {singleProcessOOMKill: true}\n")
    base = text.split("functionConfig:")[0]
    p, out = run_case("", base + cfg)
    kubelet = item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"]
    assert "singleProcessOOMKill: true" in kubelet


C04 = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: infer}
  spec:
    containers:
    - {name: server, image: srv:1, resources: {limits: {cpu: "4", memory: 2Gi}}}
functionConfig:
  apiVersion: krm-fn.dev/v1alpha1
  kind: InferenceTuning
  metadata: {name: pin}
  spec:
    nodePools:
    - name: inference
      kubelet:
        reservedSystemCPUs: "0-4"
        kubeReserved: {cpu: "2", memory: 500Mi}
        systemReserved: {cpu: "1", memory: 500Mi}
"""


def test_c04_reserved_cpus_exact_field_cpu_dropped_and_arithmetic_warned():
    p, out = run_case("", C04)
    assert p.returncode == 0, p.stderr
    cfg = load(item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"])
    assert cfg["reservedSystemCPUs"] == "0-4"
    assert cfg["kubeReserved"] == {"memory": "500Mi"}
    assert cfg["systemReserved"] == {"memory": "500Mi"}
    assert "strict-cpu-reservation" not in cfg["cpuManagerPolicyOptions"]
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning") if "field" in r}
    assert warn["spec.nodePools[0].kubelet.reservedSystemCPUs"].startswith(
        "kubeReserved.cpu 2 + systemReserved.cpu 1 = 3 CPUs, but reservedSystemCPUs '0-4' "
        "holds 5: the kubelet reserves exactly the listed CPUs (allocatable cpu = capacity - 5)"
        "; without the strict-cpu-reservation option, Burstable and BestEffort pods still "
        "run on them")
    assert "kubelet.kubeReserved.cpu" in " ".join(warn)


def test_c05_policy_change_against_the_baseline_gets_a_rollout_note_and_steps():
    p, out = run_case("c05-policy-change")
    assert p.returncode == 0, p.stderr
    note = ("drain the node and delete /var/lib/kubelet/cpu_manager_state and "
            "/var/lib/kubelet/memory_manager_state while the kubelet is stopped "
            "(cpuManagerPolicy none -> static; reservedSystemCPUs (unset) -> 0,8; "
            "memoryManagerPolicy None -> Static; reservedMemory (unset) -> 0:memory=1084Mi)")
    for name in ("kubelet-config-inference", "kubelet-config-inference-talos"):
        cm = item(out, "ConfigMap", name)
        assert cm["metadata"]["annotations"] == {"krm-fn.dev/rollout-note": note}
    [warn] = [r for r in results(out, "warning") if "checkpoint" in r["message"]]
    assert warn["field"] == {"path": "spec.output.baseline.kubeletconfig.cpuManagerPolicy",
                             "currentValue": "none", "proposedValue": "static"}
    assert warn["message"] == (
        "the node's resource-manager checkpoint was written under other settings "
        "(cpuManagerPolicy none -> static; reservedSystemCPUs (unset) -> 0,8; "
        "memoryManagerPolicy None -> Static; reservedMemory (unset) -> 0:memory=1084Mi): the "
        "kubelet refuses to start with the new config until the state is reset. krm-fn does "
        "not reconfigure nodes; on each node of the pool: 1. Cordon the node: kubectl cordon "
        "<node>; 2. Drain the node: kubectl drain <node> --ignore-daemonsets "
        "--delete-emptydir-data; 3. Stop the kubelet; 4. Delete "
        "/var/lib/kubelet/cpu_manager_state; 5. Delete /var/lib/kubelet/memory_manager_state; "
        "6. Put kubelet-config.yaml in place as a *.conf file in the kubelet's --config-dir "
        "drop-in directory (read after --config, files in alphanumeric order; maps merge per "
        "key, lists replace), or as a kubeadm kubeletconfiguration patch; 7. Start the kubelet; "
        "8. Uncordon the node: kubectl uncordon <node>")
    # reservedMemory counts what the node runs with: kubeReserved 500Mi (krm-fn default, the
    # baseline has none) + the baseline's systemReserved 384Mi (Talos) + its eviction 200Mi
    cfg = load(item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"])
    assert cfg["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1084Mi"}}]
    assert "systemReserved" not in cfg
    assert cfg["evictionHard"]["memory.available"] == "200Mi"
    assert not [r for r in results(out, "warning") if r["message"].startswith("Talos")]


def test_c05_reserved_cpus_change_alone_resets_only_the_cpu_state():
    text = case_input("c05-policy-change")
    text = text.replace("kubelet: {memoryManagerPolicy: Static}", "kubelet: {}").replace(
        "cpuManagerPolicy: none", "cpuManagerPolicy: static\n          reservedSystemCPUs: 0-1")
    p, out = run_case("", text)
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert cm["metadata"]["annotations"]["krm-fn.dev/rollout-note"] == (
        "drain the node and delete /var/lib/kubelet/cpu_manager_state while the kubelet is "
        "stopped (reservedSystemCPUs 0-1 -> 0,8)")
    assert "memory_manager_state" not in cm["data"]["rollout.txt"]


def test_c05_same_settings_spelled_differently_need_no_state_reset():
    text = case_input("c05-policy-change")
    text = text.replace("kubelet: {memoryManagerPolicy: Static}", "kubelet: {}").replace(
        "cpuManagerPolicy: none", "cpuManagerPolicy: static\n          reservedSystemCPUs: 8,0")
    p, out = run_case("", text)
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert "annotations" not in cm["metadata"]
    assert not [r for r in results(out, "warning") if "checkpoint" in r["message"]]
    assert cm["data"]["rollout.txt"].splitlines()[3] == (
        "3. Restart the kubelet (the CPU and Memory Manager settings are unchanged: no drain, "
        "the state files stay)")
    assert cm["data"]["rollout.txt"].splitlines()[4].startswith(
        "4. Keep the node's own processes on the reserved CPUs 0,8: ")


def test_c15_memory_qos_never_enabled_request_raised_and_warned():
    p, out = run_case("c15-memory-qos")
    assert p.returncode == 0, p.stderr
    pod = item(out, "Pod", "mem")
    assert res(pod["spec"]["containers"][0]) == {
        "requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    cfg = load(item(out, "ConfigMap", "kubelet-config-inference")["data"]["kubelet-config.yaml"])
    assert "MemoryQoS" not in str(cfg) and "cpuCFSQuota" not in cfg
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning") if "field" in r}
    assert list(warn) == ["spec.nodePools[0].kubelet.extra.featureGates.MemoryQoS",
                          "spec.output.baseline.featureGates.MemoryQoS",
                          "spec.output.baseline.cpuCFSQuota"]
    assert warn["spec.output.baseline.featureGates.MemoryQoS"].startswith(
        "the baseline enables the MemoryQoS feature gate (alpha, off by default in Kubernetes "
        "1.35, KEP-2570): on cgroup v2 it "
        "sets memory.high on containers whose memory request is below the limit and throttles "
        "them early (memory.high at memoryThrottlingFactor 0.6 of the way from request to "
        "limit; kubernetes/enhancements#3818), and it can livelock on kernels before 5.9")
