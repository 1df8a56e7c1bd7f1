"""Every inference workload kind (workloads.md §2, §3): the registry paths, the traps of
each kind, per-workload annotations, pod-level resources, KServe cluster configuration.
Inputs live in tests/testdata/<case>/ (also checked byte for byte by test_golden.py);
these tests assert the values that matter, exactly."""
import yaml

from krm_fn.workloads import KINDS, locations
from tests.helpers import case_input, env_of, item, load, results, run_cli

QUEUE = "queue.sidecar.serving.knative.dev/"


def run_case(case: str, stdin: str | None = None):
    p = run_cli([], stdin if stdin is not None else case_input(case))
    return p, load(p.stdout)


def rl(items: str, spec: str = "") -> str:
    """A ResourceList of `items` (YAML text of the items list), with a typed config whose
    spec is `spec` (YAML text, indented by 4) when given."""
    out = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + items
    if spec:
        out += ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
                "  metadata: {name: pin}\n  spec:\n" + spec)
    return out


def res(c: dict) -> dict:
    return c["resources"]


def eq(cpu: str, memory: str) -> dict:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def messages(out: dict, severity: str | None = None) -> dict:
    """field path -> [messages] of the results."""
    got: dict = {}
    for r in results(out, severity):
        got.setdefault((r.get("field") or {}).get("path"), []).append(r["message"])
    return got


# --- registry ---------------------------------------------------------------------------

def test_every_kind_of_the_issue_is_registered():
    for key in [("serving.kserve.io", "InferenceService"), ("serving.kserve.io", "ServingRuntime"),
                ("serving.kserve.io", "ClusterServingRuntime"),
                ("serving.kserve.io", "LLMInferenceService"), ("serving.knative.dev", "Service"),
                ("serving.knative.dev", "Configuration"), ("serving.knative.dev", "Revision"),
                ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("jobset.x-k8s.io", "JobSet"),
                ("argoproj.io", "Rollout"), ("ray.io", "RayCluster"), ("ray.io", "RayService"),
                ("ray.io", "RayJob"), ("mlops.seldon.io", "Server"),
                ("mlops.seldon.io", "ServerConfig")]:
        assert key in KINDS, key


def test_isvc_locations_cover_every_component_and_every_canary():
    obj = load(case_input("kserve-isvc-components"))["items"][0]
    obj["spec"]["canary"].append(obj["spec"]["canary"][0])
    specs = [".".join(map(str, at.spec)) for at in locations(obj)]
    assert specs == ["spec.predictor", "spec.predictor.workerSpec", "spec.transformer",
                     "spec.explainer", "spec.canary.0.predictor", "spec.canary.1.predictor",
                     "spec.canary.0.predictor.workerSpec", "spec.canary.1.predictor.workerSpec"]
    metas = {".".join(map(str, at.spec)): at.meta for at in locations(obj)}
    assert metas["spec.predictor.workerSpec"] == ("spec", "predictor")
    assert metas["spec.canary.1.predictor"] == ("spec", "canary", 1, "predictor")


def test_llmisvc_has_six_optional_pod_specs_and_their_annotation_mappings():
    (ats) = KINDS[("serving.kserve.io", "LLMInferenceService")]
    assert [(at.spec, at.meta) for at in ats] == [
        (("spec", "template"), ("spec",)), (("spec", "worker"), ("spec",)),
        (("spec", "prefill", "template"), ("spec", "prefill")),
        (("spec", "prefill", "worker"), ("spec", "prefill")),
        (("spec", "router", "scheduler", "template"), ("spec", "router", "scheduler")),
        (("spec", "router", "scheduler", "tokenizer", "template"), None)]
    assert all(at.optional and at.model_container == "main" for at in ats)


# --- KServe InferenceService ------------------------------------------------------------

def test_isvc_every_component_is_guaranteed_with_whole_cpus():
    p, out = run_case("kserve-isvc-components")
    assert p.returncode == 0, p.stderr
    spec = item(out, "InferenceService", "llama-cpu")["spec"]
    assert res(spec["predictor"]["model"]) == eq("8", "24Gi")       # larger of 6 and 8
    assert env_of(spec["predictor"]["model"])["OMP_NUM_THREADS"] == "8"
    assert res(spec["predictor"]["workerSpec"]["containers"][0]) == eq("8", "24Gi")
    assert res(spec["transformer"]["containers"][0]) == eq("2", "1Gi")   # 1 -> SMT pair
    assert res(spec["explainer"]["art"]) == eq("2", "4Gi")
    assert env_of(spec["explainer"]["art"])["OMP_NUM_THREADS"] == "2"
    assert res(spec["canary"][0]["predictor"]["model"]) == eq("4", "16Gi")
    for part in (spec["predictor"], spec["predictor"]["workerSpec"], spec["transformer"],
                 spec["explainer"], spec["canary"][0]["predictor"]):
        assert part["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    warn = messages(out, "warning")
    # the config lowers the verdict to a warning: KServe's default storage-initializer
    assert warn["spec.canary[0].predictor"][0].startswith(
        "KServe storage-initializer (the pod has a storageUri) adds storage-initializer "
        "without requests == limits for cpu and memory")


def test_isvc_predictor_resources_is_pod_level_not_the_model_container():
    p, out = run_case("pod-level-resources")
    assert p.returncode == 0, p.stderr
    pred = item(out, "InferenceService", "sklearn-iris")["spec"]["predictor"]
    assert res(pred["model"]) == eq("2", "2Gi")             # the container is left as it was
    assert pred["resources"] == eq("4", "4Gi")              # pod level: larger value, equal
    (w,) = messages(out, "warning")["spec.predictor.resources"]
    assert "on Kubernetes 1.35 the static CPU Manager gives a pod with pod-level " \
           "resources no exclusive CPUs" in w
    assert "remove spec.predictor.resources" in w
    assert "In KServe this field is pod-level, not the model container's" in w


def test_pod_level_resources_cover_app_sidecars_and_the_largest_init_step():
    p, out = run_case("pod-level-resources")
    spec = item(out, "Deployment", "embedder")["spec"]["template"]["spec"]
    # app 4 + native sidecar 250m = 4250m > sidecar + warmup init 750m;
    # memory: sidecar 128Mi + warmup 6Gi = 6272Mi > app 4Gi + 128Mi
    assert spec["resources"] == eq("4250m", "6272Mi")
    assert "remove spec.template.spec.resources" in \
        messages(out, "warning")["spec.template.spec.resources"][0]


def test_kserve_logger_and_batcher_agent_is_judged_by_the_verdict():
    p, out = run_case("kserve-logger-batcher")     # its config lowers the verdict to warnings
    warn = messages(out, "warning")["spec.predictor"]
    (agent,) = [w for w in warn if w.startswith("KServe agent")]
    assert agent.startswith("KServe agent (the component sets logger and batcher) adds agent "
                            "without requests == limits for cpu and memory")
    assert "set cpuRequest == cpuLimit and memoryRequest == memoryLimit under the agent, " \
           "logger and batcher keys of ConfigMap kserve/inferenceservice-config" in agent


# --- KServe cluster configuration -------------------------------------------------------

def test_inferenceservice_config_json_values_become_equal_in_place():
    p, out = run_case("kserve-cluster-config")
    assert p.returncode == 0, p.stderr
    data = item(out, "ConfigMap", "inferenceservice-config")["data"]
    conf = {k: yaml.safe_load(data[k]) for k in ("storageInitializer", "agent", "batcher",
                                                 "logger")}
    assert {k: (v["cpuRequest"], v["cpuLimit"], v["memoryRequest"], v["memoryLimit"])
            for k, v in conf.items()} == {
        "storageInitializer": ("500m", "500m", "1Gi", "1Gi"),   # init: initContainerCpu
        "agent": ("2", "2", "1Gi", "1Gi"),       # whole cpu 1: pinned, so an SMT pair
        "batcher": ("2", "2", "1Gi", "1Gi"),
        "logger": ("500m", "500m", "1Gi", "1Gi")}
    assert data["explainers"] == "{}"
    assert conf["storageInitializer"]["cpuModelcar"] == "10m"
    # the JSON keeps its layout: only the four values change, line by line
    assert '          "cpuRequest": "500m",\n          "cpuLimit": "500m",\n' in p.stdout
    assert '          "caBundleVolumeMountPath": "/etc/ssl/custom-certs",\n' in p.stdout
    sev = {r["field"]["path"]: r["severity"] for r in results(out)
           if r.get("resourceRef", {}).get("name") == "inferenceservice-config"}
    # a shared object every InferenceService reads: each change a warning
    assert sev == {"data.storageInitializer": "warning", "data.agent": "warning",
                   "data.batcher": "warning", "data.logger": "warning"}


def test_cluster_storage_container_is_an_init_container_in_the_shared_pool():
    p, out = run_case("kserve-cluster-config")
    c = item(out, "ClusterStorageContainer", "default")["spec"]["container"]
    assert res(c) == eq("500m", "1Gi")


def test_isvc_with_the_cluster_config_in_the_input_is_guaranteed_after_admission():
    p, out = run_case("kserve-cluster-config")
    assert p.returncode == 0, p.stderr
    (line,) = [r["message"] for r in results(out, "info")
               if r.get("resourceRef", {}).get("name") == "sklearn-iris"
               and r["message"].startswith("verdict:")]
    assert line.startswith("verdict: Guaranteed after admission; exclusive CPUs "
                           "kserve-container 2, agent 2 on NUMA 0; injected "
                           "storage-initializer, agent;")


def test_without_the_storage_container_in_the_input_kserves_default_one_fails_the_pod():
    text = case_input("kserve-cluster-config")
    start = text.index("- apiVersion: serving.kserve.io/v1alpha1\n  kind: ClusterStorageContainer")
    end = text.index("- apiVersion: serving.kserve.io/v1beta1")
    p, out = run_case("", text[:start] + text[end:])
    assert p.returncode == 1
    (e,) = [m for m in messages(out, "error")["spec.predictor"]
            if m.startswith("KServe storage-initializer")]
    assert "spec.container.resources of the ClusterStorageContainer that serves this URI" in e


def test_cluster_config_not_selected_is_left_alone():
    text = case_input("kserve-cluster-config")
    p, out = run_case("", text + "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n"
                                 "  kind: InferenceTuning\n  metadata: {name: pin}\n"
                                 "  spec: {selector: {kinds: [InferenceService]}}\n")
    src = load(text)
    assert item(out, "ConfigMap", "inferenceservice-config") == src["items"][0]
    assert p.returncode == 1          # as in the cluster: the injected containers are Burstable
    assert "spec.predictor" in messages(out, "error")


# --- ServingRuntime ---------------------------------------------------------------------

def test_serving_runtimes_containers_and_workers():
    p, out = run_case("kserve-runtimes")
    assert p.returncode == 0, p.stderr
    rt = item(out, "ServingRuntime", "mlserver-cpu")["spec"]
    assert res(rt["containers"][0]) == eq("4", "2Gi")        # 3 -> SMT pair 4
    assert rt["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    crt = item(out, "ClusterServingRuntime", "kserve-huggingfaceserver-multinode")["spec"]
    assert res(crt["containers"][0]) == eq("4", "12Gi")
    assert res(crt["workerSpec"]["containers"][0]) == eq("4", "12Gi")
    assert crt["workerSpec"]["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}


def test_serving_runtime_pod_annotations_are_spec_annotations():
    text = case_input("kserve-runtimes")
    p, out = run_case("", text + "functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n"
                                 "  kind: InferenceTuning\n  metadata: {name: pin}\n  spec:\n"
                                 "    workloads:\n      injection:\n"
                                 "        knativeQueueProxy: {cpu: 200m, memory: 128Mi, "
                                 "mode: always}\n")
    rt = item(out, "ServingRuntime", "mlserver-cpu")
    assert rt["spec"]["annotations"][QUEUE + "cpu-resource-limit"] == "200m"
    assert "annotations" not in rt["metadata"]


# --- LLMInferenceService ----------------------------------------------------------------

def test_llmisvc_routing_sidecar_and_storage_initializer_are_sized_by_name():
    p, out = run_case("llmisvc-prefill-decode")
    assert p.returncode == 0, p.stderr
    spec = item(out, "LLMInferenceService", "qwen-pd")["spec"]
    assert spec["template"]["initContainers"] == [
        {"name": "llm-d-routing-sidecar", "restartPolicy": "Always",
         "resources": eq("100m", "128Mi")},
        {"name": "storage-initializer", "resources": eq("500m", "1Gi")}]
    assert spec["prefill"]["template"]["initContainers"] == [
        {"name": "storage-initializer", "resources": eq("500m", "1Gi")}]
    assert res(spec["template"]["containers"][0]) == eq("8", "32Gi")
    assert res(spec["prefill"]["template"]["containers"][0]) == eq("16", "48Gi")
    assert res(spec["router"]["scheduler"]["template"]["containers"][0]) == eq("2", "1Gi")
    warn = messages(out, "warning")
    assert warn["spec.template.initContainers[0]"][0].startswith(
        "native sidecar 'llm-d-routing-sidecar' added to spec.template.initContainers by name "
        "with cpu 100m (spec.workloads.sidecarResources.cpu) and memory 128Mi")
    assert warn["spec.template"] == [
        "spec.template is not set: the model server container 'main' comes from the "
        "LLMInferenceServiceConfig templates, which set no resources, so the pod is not "
        "Guaranteed and nothing is pinned; add spec.template.containers with an entry named "
        "main carrying resources (requests == limits, a whole number of CPUs): the "
        "controller merges it by name"]


def test_llmisvc_without_prefill_pvc_or_disabled_initializer_adds_nothing():
    base = case_input("llmisvc-prefill-decode")
    text = base[:base.index("    prefill:\n")] + base[base.index("    router:\n"):]
    text = text.replace("uri: hf://Qwen", "uri: pvc://models/Qwen")
    p, out = run_case("", text)
    assert "initContainers" not in item(out, "LLMInferenceService", "qwen-pd")["spec"]["template"]
    disabled = text.replace("uri: pvc://models/Qwen", "uri: s3://models/Qwen").replace(
        "    replicas: 1\n", "    replicas: 1\n    storageInitializer: {enabled: false}\n", 1)
    p, out = run_case("", disabled)
    assert "initContainers" not in item(out, "LLMInferenceService", "qwen-pd")["spec"]["template"]


def test_llmisvc_user_written_entries_are_sized_not_duplicated():
    text = case_input("llmisvc-prefill-decode").replace(
        "    template:\n      containers:\n      - name: main\n",
        "    template:\n      initContainers:\n      - name: storage-initializer\n"
        "        env: [{name: HF_XET_HIGH_PERFORMANCE, value: '0'}]\n"
        "        resources: {limits: {cpu: 250m, memory: 2Gi}}\n"
        "      containers:\n      - name: main\n", 1)
    p, out = run_case("", text)
    inits = item(out, "LLMInferenceService", "qwen-pd")["spec"]["template"]["initContainers"]
    assert [c["name"] for c in inits] == ["storage-initializer", "llm-d-routing-sidecar"]
    assert res(inits[0]) == eq("250m", "2Gi")


def test_llmisvc_template_without_main_is_warned_about():
    text = case_input("llmisvc-prefill-decode").replace(
        "      containers:\n      - name: main\n        image: vllm/vllm-openai-cpu:v0.11.0\n"
        "        env:", "      containers:\n      - name: vllm\n"
        "        image: vllm/vllm-openai-cpu:v0.11.0\n        env:", 1)
    p, out = run_case("", text)
    (w,) = messages(out, "warning")["spec.template.containers"]
    assert w.startswith("no container named 'main': the controller merges its 'main' container "
                        "into the pod by name from the LLMInferenceServiceConfig templates")


# --- Knative ----------------------------------------------------------------------------

def test_knative_unnamed_container_and_queue_proxy_on_every_kind():
    p, out = run_case("knative-kinds")
    assert p.returncode == 0, p.stderr
    svc = item(out, "Service", "sentiment")["spec"]["template"]
    assert res(svc["spec"]["containers"][0]) == eq("4", "4Gi")
    assert "name" not in svc["spec"]["containers"][0]        # never written
    want = {QUEUE + "cpu-resource-request": "250m", QUEUE + "cpu-resource-limit": "250m",
            QUEUE + "memory-resource-request": "256Mi", QUEUE + "memory-resource-limit": "256Mi"}
    assert {k: v for k, v in svc["metadata"]["annotations"].items() if k.startswith(QUEUE)} \
        == want
    cfg = item(out, "Configuration", "embedder")["spec"]["template"]
    assert res(cfg["spec"]["containers"][0]) == eq("2", "2Gi")        # 1500m rounded up
    assert res(cfg["spec"]["containers"][1]) == eq("100m", "128Mi")   # sidecarResources
    assert cfg["metadata"]["annotations"] == want
    rev = item(out, "Revision", "sentiment-00001")
    assert rev["metadata"]["annotations"] == want
    assert res(rev["spec"]["containers"][0]) == eq("2", "2Gi")
    infos = [r["message"] for r in results(out) if r.get("resourceRef", {}).get("name") == "sentiment"]
    assert any(m.startswith("container 'user-container': requests.cpu set to 4") for m in infos)


def test_knative_several_unnamed_containers_get_indexed_names():
    p, out = run_case("", rl(
        "- apiVersion: serving.knative.dev/v1\n  kind: Service\n  metadata: {name: two}\n"
        "  spec:\n    template:\n      spec:\n        containers:\n"
        "        - {image: a:1, ports: [{containerPort: 8080}], resources: {limits: {cpu: '2', "
        "memory: 1Gi}}}\n        - {image: b:1}\n"))
    msgs = [r["message"] for r in results(out)]
    assert any(m.startswith("container 'user-container-1' sets no cpu") for m in msgs)


# --- LeaderWorkerSet, JobSet ------------------------------------------------------------

def test_lws_leader_and_worker_templates_and_leader_optional():
    p, out = run_case("lws-vllm-cpu")
    assert p.returncode == 0, p.stderr
    lwt = item(out, "LeaderWorkerSet", "vllm")["spec"]["leaderWorkerTemplate"]
    assert res(lwt["leaderTemplate"]["spec"]["containers"][0]) == eq("16", "64Gi")
    assert res(lwt["workerTemplate"]["spec"]["containers"][0]) == eq("16", "64Gi")   # 15 -> 16
    assert lwt["leaderTemplate"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "16Gi"
    only = item(out, "LeaderWorkerSet", "llama-cpp-rpc")["spec"]["leaderWorkerTemplate"]
    assert "leaderTemplate" not in only
    assert res(only["workerTemplate"]["spec"]["containers"][0]) == eq("6", "8Gi")


def test_jobset_every_replicated_job_is_tuned():
    p, out = run_case("jobset-workers")
    jobs = item(out, "JobSet", "batch-embed")["spec"]["replicatedJobs"]
    pods = [j["template"]["spec"]["template"]["spec"] for j in jobs]
    assert res(pods[0]["containers"][0]) == eq("2", "512Mi")     # 500m -> 1 -> SMT pair
    assert res(pods[1]["containers"][0]) == eq("4", "8Gi")
    assert all(pod["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"} for pod in pods)


# --- Argo Rollouts ----------------------------------------------------------------------

ROLLOUT_WARNING = ("spec.workloadRef: the Rollout's pods use the pod template of Deployment "
                   "ranker, so that is where krm-fn must tune them")


def test_rollout_template_is_tuned_and_workload_ref_names_the_deployment():
    p, out = run_case("argo-rollouts")
    assert p.returncode == 0, p.stderr
    tpl = item(out, "Rollout", "reranker")["spec"]["template"]["spec"]
    assert res(tpl["containers"][0]) == eq("4", "6Gi")
    (w,) = messages(out, "warning")["spec.workloadRef"]
    assert w == (ROLLOUT_WARNING + "; it is in this input but not selected (spec.selector, or "
                 "a krm-fn.dev/skip annotation): select Deployment ranker instead of (or "
                 "besides) the Rollout")
    src = load(case_input("argo-rollouts"))
    assert item(out, "Deployment", "ranker") == src["items"][2]


def test_rollout_workload_ref_selected_or_absent():
    text = case_input("argo-rollouts")
    p, out = run_case("", text.replace("kinds: [Rollout]", "kinds: [Rollout, Deployment]"))
    (i,) = [r for r in results(out, "info") if (r.get("field") or {}).get("path")
            == "spec.workloadRef"]
    assert i["message"] == ROLLOUT_WARNING + "; it is tuned in this render"
    dep = item(out, "Deployment", "ranker")["spec"]["template"]["spec"]["containers"][0]
    assert res(dep) == eq("2", "2Gi")
    absent = text[:text.index("- apiVersion: apps/v1")] + text[text.index("functionConfig:"):]
    p, out = run_case("", absent)
    assert messages(out, "warning")["spec.workloadRef"] == [
        ROLLOUT_WARNING + "; it is not in this input: run krm-fn where Deployment ranker is "
        "rendered, with spec.selector selecting it"]


# --- KubeRay ----------------------------------------------------------------------------

def test_ray_num_cpus_follows_the_pinned_count_as_a_string():
    p, out = run_case("kuberay-kinds")
    assert p.returncode == 0, p.stderr
    spec = item(out, "RayCluster", "raycluster-serve")["spec"]
    assert spec["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0",     # kept: no tasks
                                                       "dashboard-host": "0.0.0.0"}
    assert spec["workerGroupSpecs"][0]["rayStartParams"] == {"num-cpus": "4"}   # 3 -> 4
    assert spec["workerGroupSpecs"][1]["rayStartParams"] == {"num-cpus": "8"}   # absent
    assert res(spec["workerGroupSpecs"][1]["template"]["spec"]["containers"][0]) == \
        eq("8", "32Gi")
    assert "num-cpus: \"4\"\n" in p.stdout and "{num-cpus: \"8\"}" in p.stdout
    sev = {r["field"]["path"]: r["severity"] for r in results(out)
           if (r.get("field") or {}).get("path", "").endswith("num-cpus")}
    assert sev == {"spec.workerGroupSpecs[0].rayStartParams.num-cpus": "warning",
                   "spec.workerGroupSpecs[1].rayStartParams.num-cpus": "info",
                   "spec.rayClusterSpec.headGroupSpec.rayStartParams.num-cpus": "info",
                   "spec.rayClusterSpec.workerGroupSpecs[0].rayStartParams.num-cpus": "info"}
    job = item(out, "RayJob", "batch-inference")["spec"]
    assert job["rayClusterSpec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": "4"}
    assert res(job["submitterPodTemplate"]["spec"]["containers"][0]) == eq("2", "1Gi")
    assert "rayStartParams" not in job["submitterPodTemplate"]


def test_ray_service_cluster_config_and_a_ray_job_on_an_existing_cluster():
    p, out = run_case("", rl(
        "- apiVersion: ray.io/v1\n  kind: RayService\n  metadata: {name: svc}\n  spec:\n"
        "    rayClusterConfig:\n      headGroupSpec:\n        rayStartParams: {num-cpus: "
        "'$(NUM_CPUS)'}\n        template:\n          spec:\n            containers:\n"
        "            - {name: ray-head, image: r:1, resources: {limits: {cpu: '2', memory: "
        "4Gi}}}\n"
        "- apiVersion: ray.io/v1\n  kind: RayJob\n  metadata: {name: onexisting}\n  spec:\n"
        "    clusterSelector: {ray.io/cluster: shared}\n    entrypoint: python x.py\n"))
    assert p.returncode == 0, p.stderr
    head = item(out, "RayService", "svc")["spec"]["rayClusterConfig"]["headGroupSpec"]
    assert head["rayStartParams"] == {"num-cpus": "$(NUM_CPUS)"}
    assert messages(out, "warning")[
        "spec.rayClusterConfig.headGroupSpec.rayStartParams.num-cpus"][0].startswith(
        "rayStartParams.num-cpus '$(NUM_CPUS)' is not a number and is left alone; it should "
        "be 2")
    assert item(out, "RayJob", "onexisting") == load(p.stdout)["items"][1]


# --- Seldon -----------------------------------------------------------------------------

def test_seldon_server_pod_spec_and_default_containers():
    p, out = run_case("seldon-server")
    assert p.returncode == 0, p.stderr
    server = item(out, "Server", "mlserver-pinned")
    assert res(server["spec"]["podSpec"]["containers"][0]) == eq("4", "8Gi")
    assert "annotations" not in server["metadata"]          # no pod annotations field
    warn = messages(out, "warning")["spec.podSpec.containers"]
    assert [w.split(" container sets")[0] for w in warn] == [
        "Seldon merges spec.podSpec over the ServerConfig by container name, and its default "
        "'rclone'", "Seldon merges spec.podSpec over the ServerConfig by container name, and "
        "its default 'agent'"]
    assert messages(out, "warning")["spec.podSpec"][0].startswith("spec.podSpec is not set")
    cfg = item(out, "ServerConfig", "mlserver")["spec"]["podSpec"]["containers"]
    assert [res(c) for c in cfg] == [eq("200m", "100M"), eq("200m", "1G"), eq("2", "1G")]


def test_seldon_with_injection_always_writes_no_annotations():
    p, out = run_case("", rl(
        "- apiVersion: mlops.seldon.io/v1alpha1\n  kind: Server\n  metadata: {name: s}\n"
        "  spec:\n    podSpec:\n      containers:\n      - name: mlserver\n"
        "        resources: {limits: {cpu: '4', memory: 8Gi}}\n",
        "    workloads:\n      injection:\n        istio: {cpu: 100m, memory: 128Mi, "
        "mode: always}\n"))
    s = item(out, "Server", "s")
    assert "annotations" not in s["metadata"] and "metadata" not in s["spec"]["podSpec"]
    # a Server's pods take no annotations from it, so the injected proxy cannot be sized:
    # the pod will be Burstable, and the verdict fails the render (fail closed)
    assert p.returncode == 1
    assert p.stderr.startswith("krm-fn: error: Server s spec.podSpec: Istio istio-proxy "
                               "(spec.workloads.injection.istio.mode is always) adds "
                               "istio-init, istio-proxy without requests == limits")


# --- pass-through kinds -----------------------------------------------------------------

def test_nim_vllm_runtime_and_legacy_kfserving_pass_through_with_warnings():
    src = case_input("nim-vllmruntime-legacy")
    p, out = run_case("nim-vllmruntime-legacy")
    assert p.returncode == 0, p.stderr
    assert out["items"] == load(src)["items"]
    assert src.split("items:\n", 1)[1] in p.stdout           # byte for byte
    warn = messages(out, "warning")
    assert warn["spec.sidecarContainers"][0].startswith(
        "NIMService spec.sidecarContainers ('log-forwarder'): the NIM Operator's "
        "NIMContainerSpec has no resources field")
    assert 'so set requests and limits both cpu: "6" and memory: 32Gi there' in \
        warn["spec.resources"][0]
    assert "set cpu to a whole number of CPUs (found '10')" in \
        warn["spec.deploymentConfig.resources"][0]
    assert warn["apiVersion"][0].startswith(
        "serving.kubeflow.org/v1beta1 InferenceService is the legacy KFServing API")
    # nothing was placed: no kubelet config is emitted
    assert [i["kind"] for i in out["items"]] == ["NIMService", "VLLMRuntime",
                                                 "InferenceService"]


def test_nim_with_guaranteed_resources_and_no_sidecars_gets_only_the_info():
    p, out = run_case("", rl(
        "- apiVersion: apps.nvidia.com/v1alpha1\n  kind: NIMService\n  metadata: {name: n}\n"
        "  spec:\n    resources: {requests: {cpu: '8', memory: 16Gi}, limits: {cpu: '8', "
        "memory: 16Gi}}\n"))
    mine = [r for r in results(out) if (r.get("resourceRef") or {}).get("name") == "n"]
    assert [r["severity"] for r in mine] == ["info"]


# --- per-workload annotations -----------------------------------------------------------

def test_cpus_and_pinned_containers_annotations():
    p, out = run_case("workload-annotations")
    assert p.returncode == 0, p.stderr
    gw, retriever, generator = item(out, "Deployment", "rag")["spec"]["template"]["spec"][
        "containers"]
    assert res(gw) == eq("250m", "256Mi") and "env" not in gw        # not pinned
    assert res(retriever) == eq("6", "4Gi") and res(generator) == eq("6", "16Gi")
    assert env_of(retriever)["OMP_NUM_THREADS"] == env_of(generator)["OMP_NUM_THREADS"] == "6"
    lwt = item(out, "LeaderWorkerSet", "sharded")["spec"]["leaderWorkerTemplate"]
    assert res(lwt["leaderTemplate"]["spec"]["containers"][0]) == eq("2", "8Gi")  # template
    assert res(lwt["workerTemplate"]["spec"]["containers"][0]) == eq("4", "8Gi")  # workload


def _annotated(ann: str, init: bool = False) -> str:
    return rl("- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: d\n"
              f"    annotations: {{{ann}}}\n  spec:\n    template:\n      spec:\n"
              + ("        initContainers:\n        - {name: prep, image: p:1, resources: "
                 "{limits: {cpu: '8', memory: 1Gi}}}\n" if init else "")
              + "        containers:\n        - {name: server, image: s:1, resources: "
                "{limits: {cpu: '4', memory: 4Gi}}}\n")


def test_annotation_values_are_validated_naming_the_annotation():
    for ann, path, start in [
            ('krm-fn.dev/cpus: "1.5"', "metadata.annotations['krm-fn.dev/cpus']",
             "annotation krm-fn.dev/cpus must be a whole number of CPUs from 1 to 9999, "
             "quoted (such as \"4\"), found '1.5'"),
            ('krm-fn.dev/cpus: "0"', "metadata.annotations['krm-fn.dev/cpus']",
             "annotation krm-fn.dev/cpus must be a whole number"),
            ('krm-fn.dev/pinned-containers: "server,Bad_Name"',
             "metadata.annotations['krm-fn.dev/pinned-containers']",
             "annotation krm-fn.dev/pinned-containers must be a comma-separated list of "
             "container names"),
            ('krm-fn.dev/pinned-containers: "sever"',
             "metadata.annotations['krm-fn.dev/pinned-containers']",
             "annotation krm-fn.dev/pinned-containers names no container of the workload "
             "(containers: server)")]:
        p, out = run_case("", _annotated(ann))
        assert p.returncode == 1, ann
        (e, *_) = results(out, "error")
        assert e["field"]["path"] == path and e["message"].startswith(start), e
        assert item(out, "Deployment", "d") == load(_annotated(ann))["items"][0]


def test_pinned_containers_annotation_can_pin_an_init_container_capped_at_the_app():
    p, out = run_case("", _annotated('krm-fn.dev/pinned-containers: "server,prep"', init=True))
    assert p.returncode == 0, p.stderr
    spec = item(out, "Deployment", "d")["spec"]["template"]["spec"]
    assert res(spec["initContainers"][0]) == eq("4", "1Gi")     # pinned, lowered to 4
    p, out = run_case("", _annotated('krm-fn.dev/cpus: "2"', init=True))
    spec = item(out, "Deployment", "d")["spec"]["template"]["spec"]
    assert res(spec["containers"][0]) == eq("2", "4Gi")
    assert res(spec["initContainers"][0]) == eq("500m", "1Gi")  # not listed: shared pool


# --- init containers and native sidecars ------------------------------------------------

def test_regular_init_containers_never_exceed_the_largest_app_container():
    p, out = run_case("init-container-cap")
    assert p.returncode == 0, p.stderr
    download, convert, proxy = item(out, "Pod", "model-server")["spec"]["initContainers"]
    assert res(download) == eq("500m", "2Gi")    # whole 8: shared pool (#112228)
    assert res(convert) == eq("500m", "4Gi")     # 3500m > app 2: initContainerCpu
    assert res(proxy) == eq("1500m", "256Mi")    # native sidecar: long-running, not capped
    (warmup,) = item(out, "Pod", "small-server")["spec"]["initContainers"]
    assert res(warmup) == eq("1200m", "1Gi")     # 1500m > app 1200m (kept fractional)
    warn = messages(out, "warning")
    assert warn["spec.initContainers[1].resources.limits.cpu"] == [
        "init container 'convert': cpu 3500m lowered to 500m: a regular init container never "
        "gets more CPU than the largest app container (2); more only raises the pod's CPU "
        "request, and a whole number would pin it (kubernetes/kubernetes#112228)",
        "container 'convert': limits.cpu 3500m -> 500m (a regular init container never gets "
        "more CPU than the largest app container; Guaranteed QoS needs requests == limits for "
        "cpu and memory in every container)"]


def test_init_container_above_the_app_with_a_larger_init_cpu_config_is_warned():
    p, out = run_case("", rl(
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n"
        "    initContainers:\n    - {name: warm, image: w:1, resources: {limits: {cpu: 3500m, "
        "memory: 1Gi}}}\n    containers:\n    - {name: s, image: s:1, resources: {limits: "
        "{cpu: '2', memory: 1Gi}}}\n", "    workloads: {initContainerCpu: 2500m}\n"))
    (init,) = item(out, "Pod", "p")["spec"]["initContainers"]
    assert res(init) == eq("3500m", "1Gi")
    assert messages(out, "warning")["spec.initContainers[0].resources.limits.cpu"][0] \
        .startswith("init container 'warm': cpu 3500m is more than the largest app container "
                    "(2)")


def test_literal_block_values_keep_their_style_header_and_trailing_lines():
    text = rl("- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: inferenceservice-config, "
              "namespace: kserve}\n  data:\n    agent: |\n      {\n          \"cpuRequest\": "
              "\"100m\",\n          \"cpuLimit\": \"500m\",\n          \"memoryRequest\": "
              "\"1Gi\",\n          \"memoryLimit\": \"1Gi\"\n      }\n\n    ingress: \"{}\"\n")
    p, out = run_case("", text)
    assert p.returncode == 0, p.stderr
    assert ("    agent: |\n      {\n          \"cpuRequest\": \"500m\",\n          \"cpuLimit\": "
            "\"500m\",\n          \"memoryRequest\": \"1Gi\",\n          \"memoryLimit\": "
            "\"1Gi\"\n      }\n\n    ingress: \"{}\"\n") in p.stdout
