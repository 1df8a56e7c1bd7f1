"""Which container krm-fn pins (krm_fn/rules/choice.py, issue #32): each step of the order
with its exact results, the serving-engine flag of the recognition table, and the advice
every error that asks a pinned container for whole CPUs or memory ends with."""
from __future__ import annotations

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from krm_fn.rules.engines import recognition
from tests.helpers import item, load, results, run_fn

VLLM = ('{name: vllm, image: "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.1", '
        'resources: {limits: {cpu: "4", memory: 8Gi}}}')
VLLM_SHARED = VLLM.replace('cpu: "4"', "cpu: 3500m")
EXPORTER = ('{name: exporter, image: "quay.io/prometheus/statsd-exporter:v0.28.0", '
            'resources: {limits: {cpu: 250m, memory: 64Mi}}}')
OTHER = '{name: other, image: "registry.example/other:1", resources: {limits: {cpu: "2", memory: 1Gi}}}'

ANOTHER = ("or pin another container instead: annotate the workload or its pod template with "
           "krm-fn.dev/pinned-containers: \"NAME\" (or list it in "
           "spec.workloads.pinnedContainers)")


def _render(containers: list, annotations: str = "", spec: str = "", init: list = (),
            kind: str = "Deployment"):
    """Render a Deployment `d` (pod template annotations `annotations`, YAML flow text)
    with `containers` (and `init` as initContainers), under a typed config whose
    spec is `spec` (YAML text indented by 4); returns (exit code, output)."""
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n  spec:\n"
            "    template:\n      metadata:\n        annotations: {" + annotations + "}\n"
            "      spec:\n"
            + ("        initContainers:\n" + "".join(f"        - {c}\n" for c in init)
               if init else "")
            + "        containers:\n" + "".join(f"        - {c}\n" for c in containers))
    if spec:
        text += ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
                 "  metadata: {name: pin}\n  spec:\n" + spec)
    p = run_fn([], text)
    return p.returncode, load(p.stdout)


def _containers(out: dict) -> dict:
    spec = item(out, "Deployment", "d")["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"]}


def _cpu(c: dict) -> str:
    return c["resources"]["limits"]["cpu"]


def _resources_results(out: dict) -> list:
    """(severity, field path, message) of the resources rule's results."""
    return [(r["severity"], (r.get("field") or {}).get("path"), r["message"])
            for r in results(out) if (r.get("tags") or {}).get("rule") == "resources"]


def _about_choice(out: dict) -> list:
    """The results about the choice itself (not the resource writes)."""
    return [r for r in _resources_results(out)
            if "is pinned because" in r[2] or "shared pool" in r[2]]


# --- the recognition table ----------------------------------------------------------------

def test_only_the_general_purpose_runtimes_are_not_serving_engines():
    assert [r.name for r in recognition.TABLE if not r.serving] == [
        "JVM", "uvicorn-gunicorn images"]


def _view(data: dict, name: str = "c") -> ContainerView:
    return ContainerView(name, "app", ("spec", "containers", 0), data)


def test_serving_names_reads_image_command_and_args():
    assert engines.serving_names(_view({"image": "ollama/ollama:0.5.7"})) == ("Ollama",)
    assert engines.serving_names(_view({"image": "x:1", "command": ["llama-server"]})) == (
        "llama.cpp",)
    assert engines.serving_names(_view({"image": "x:1", "args": ["vllm", "serve", "m",
                                                               "--device", "cpu"]})) == (
        "vLLM CPU",)
    assert engines.serving_names(_view({"image": "eclipse-temurin:21-jre"})) == ()
    assert engines.serving_names(_view({"image": "tiangolo/uvicorn-gunicorn:python3.11"})) == ()
    assert engines.serving_names(_view({"image": "registry.example/other:1"})) == ()


# --- each step of the order ---------------------------------------------------------------

def test_the_annotation_comes_first_and_an_engine_it_leaves_out_is_an_info():
    code, out = _render([EXPORTER, VLLM_SHARED], 'krm-fn.dev/pinned-containers: "exporter"')
    assert code == 0
    cs = _containers(out)
    assert _cpu(cs["exporter"]) == "2" and _cpu(cs["vllm"]) == "3500m"  # 250m up, then SMT
    assert "env" not in cs["vllm"]                  # not pinned: no thread vars
    assert _about_choice(out) == [
        ("info", "spec.template.spec.containers[1]",
         "container 'vllm' runs vLLM CPU and stays in the shared pool: annotation "
         "krm-fn.dev/pinned-containers names exporter to pin")]


def test_pinned_containers_comes_next_and_an_engine_it_leaves_out_is_an_info():
    code, out = _render([EXPORTER, VLLM_SHARED], spec="    workloads: {pinnedContainers: [exporter]}\n")
    assert code == 0
    assert _cpu(_containers(out)["exporter"]) == "2"
    assert _about_choice(out) == [
        ("info", "spec.template.spec.containers[1]",
         "container 'vllm' runs vLLM CPU and stays in the shared pool: "
         "spec.workloads.pinnedContainers names exporter to pin")]


def test_the_serving_engine_is_pinned_before_the_first_container():
    code, out = _render([EXPORTER, VLLM])
    assert code == 0
    cs = _containers(out)
    assert _cpu(cs["vllm"]) == "4" and _cpu(cs["exporter"]) == "250m"
    assert {e["name"] for e in cs["vllm"]["env"]} >= {"OMP_NUM_THREADS"}
    assert "env" not in cs["exporter"]
    assert _about_choice(out) == []
    assert results(out, "error") == []


def test_every_serving_engine_container_is_pinned():
    ollama = ('{name: ollama, image: "ollama/ollama:0.5.7", '
              'resources: {limits: {cpu: "2", memory: 4Gi}}}')
    code, out = _render([EXPORTER, VLLM, ollama])
    assert code == 0
    cs = _containers(out)
    assert (_cpu(cs["exporter"]), _cpu(cs["vllm"]), _cpu(cs["ollama"])) == ("250m", "4", "2")
    assert "OMP_NUM_THREADS" in {e["name"] for e in cs["ollama"]["env"]}


def test_the_serving_engine_wins_over_the_default_container_annotation():
    code, out = _render([EXPORTER, VLLM],
                        "kubectl.kubernetes.io/default-container: exporter")
    assert code == 0
    cs = _containers(out)
    assert _cpu(cs["vllm"]) == "4" and _cpu(cs["exporter"]) == "250m"


def test_without_an_engine_the_default_container_annotation_chooses():
    jvm = ('{name: jmx, image: "eclipse-temurin:21-jre", '
           'resources: {limits: {cpu: 500m, memory: 256Mi}}}')
    code, out = _render([jvm, OTHER], "kubectl.kubernetes.io/default-container: other")
    assert code == 0
    cs = _containers(out)
    assert _cpu(cs["other"]) == "2" and _cpu(cs["jmx"]) == "500m"   # the JVM is no engine
    assert _about_choice(out) == []


def test_without_an_engine_or_default_the_kind_s_model_container_is_pinned():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- apiVersion: serving.kserve.io/v1beta1\n  kind: InferenceService\n"
            "  metadata: {name: isvc, annotations: "
            "{serving.kserve.io/deploymentMode: Standard}}\n  spec:\n    predictor:\n"
            "      containers:\n"
            "      - {name: proxy, image: p:1, resources: {limits: {cpu: 500m, memory: 1Gi}}}\n"
            "      - {name: kserve-container, image: m:1, resources: {limits: {cpu: 1500m, "
            "memory: 2Gi}}}\n")
    p = run_fn([], text)
    out = load(p.stdout)
    proxy, model = item(out, "InferenceService", "isvc")["spec"]["predictor"]["containers"]
    assert _cpu(model) == "2" and _cpu(proxy) == "500m"
    assert not [r for r in results(out) if "is pinned because" in r["message"]]


def _first_exporter(why: str = "") -> tuple:
    """The warning of container 'exporter' pinned as the first of exporter, other."""
    return ("warning", "spec.template.spec.containers[0]",
            "container 'exporter' is pinned because it is the first container: no container "
            "runs a serving engine krm-fn recognises, and neither krm-fn.dev/pinned-containers, "
            "spec.workloads.pinnedContainers nor kubectl.kubernetes.io/default-container names "
            f"one{why}; to pin another, annotate the workload or its pod template with "
            "krm-fn.dev/pinned-containers: \"NAME\" (one or more of exporter, other, "
            "comma-separated) or list it in spec.workloads.pinnedContainers")


def test_else_the_first_container_with_a_warning_naming_how_to_choose_another():
    code, out = _render([EXPORTER, OTHER])
    assert code == 0
    assert _cpu(_containers(out)["exporter"]) == "2"
    assert _about_choice(out) == [_first_exporter()]


def test_a_default_container_naming_an_init_container_is_passed_over_and_said():
    """Hostile review: kubectl.kubernetes.io/default-container naming an init container
    pinned nothing, silently; it is passed over (rule 3 reads app containers, as rules 2
    and 5 do) and the first-container warning says what it named."""
    fetch = '{name: fetch, image: "registry.example/fetch:1", resources: {limits: {cpu: 500m, memory: 64Mi}}}'
    code, out = _render([EXPORTER, OTHER], "kubectl.kubernetes.io/default-container: fetch",
                        init=[fetch])
    assert code == 0
    assert _cpu(_containers(out)["exporter"]) == "2"
    assert _about_choice(out) == [_first_exporter(
        " (kubectl.kubernetes.io/default-container names 'fetch', which is no app container)")]


def test_a_single_app_container_gets_no_warning():
    code, out = _render([OTHER])
    assert code == 0 and _cpu(_containers(out)["other"]) == "2"
    assert _about_choice(out) == []


def test_a_native_sidecar_running_an_engine_left_shared_is_an_error():
    sidecar = ('{name: llm, image: "ollama/ollama:0.5.7", restartPolicy: Always, '
               'resources: {limits: {cpu: 1500m, memory: 4Gi}}}')
    code, out = _render([OTHER], init=[sidecar])
    assert code == 1
    assert _about_choice(out) == [
        ("error", "spec.template.spec.initContainers[0]",
         "container 'llm' runs Ollama but would stay in the shared pool (krm-fn pins "
         "'other'): its threads would share CPUs with every other pod's; to pin it, annotate "
         "the workload or its pod template with krm-fn.dev/pinned-containers: \"other,llm\"")]
    # named, it is pinned
    code, out = _render([OTHER], 'krm-fn.dev/pinned-containers: "llm,other"', init=[sidecar])
    assert code == 0
    assert _cpu(_containers(out)["llm"]) == "2" and _about_choice(out) == []


# --- the advice in every error asking a pinned container for whole CPUs or memory --------

def test_cpu_rounding_error_names_how_to_pin_another_container():
    code, out = _render([EXPORTER, OTHER], spec="    workloads: {cpuRounding: error}\n")
    assert code == 1
    (err,) = [r for r in _resources_results(out) if r[0] == "error"]
    assert err == ("error", "spec.template.spec.containers[0].resources.limits.cpu",
                   "container 'exporter' is pinned but asks for 250m CPUs; the static CPU "
                   "Manager pins only whole CPUs: set a whole number "
                   f"(spec.workloads.cpuRounding is error); {ANOTHER}")


def test_missing_cpu_and_memory_name_how_to_pin_another_container():
    bare = '{name: sidecar, image: "registry.example/s:1"}'
    code, out = _render([bare, OTHER])
    assert code == 1
    errors = [r for r in _resources_results(out) if r[0] == "error"]
    assert errors == [
        ("error", "spec.template.spec.containers[0].resources.limits.cpu",
         "container 'sidecar' is pinned but sets no cpu; set resources.limits.cpu to a whole "
         f"number of CPUs (or spec.workloads.defaultCpus); {ANOTHER}"),
        ("error", "spec.template.spec.containers[0].resources.limits.memory",
         "container 'sidecar' is pinned but sets no memory; set resources.limits.memory (or "
         "spec.workloads.defaultMemory): Guaranteed QoS needs requests == limits for cpu and "
         "memory in every container, and krm-fn never invents memory for a pinned container; "
         f"{ANOTHER}")]


def test_more_cpus_than_the_pool_has_names_how_to_pin_another_container():
    big = ('{name: big, image: "registry.example/b:1", '
           'resources: {limits: {cpu: "500", memory: 1Gi}}}')
    code, out = _render([big, OTHER])
    assert code == 1
    errors = [r[2] for r in _resources_results(out) if r[0] == "error"]
    assert len(errors) == 1 and errors[0].startswith(
        "container 'big' would need 500 exclusive CPUs but node pool 'inference' has ")
    assert errors[0].endswith(": the kubelet could never admit the pod; ask for at most 60, "
                              "or give the pool more cores (topology) or fewer reserved.cores; "
                              f"{ANOTHER}")


def test_an_engine_left_out_with_whole_cpus_is_pinned_by_the_kubelet_and_not_reported():
    code, out = _render([EXPORTER, VLLM], 'krm-fn.dev/pinned-containers: "exporter"')
    assert code == 0
    cs = _containers(out)
    assert _cpu(cs["exporter"]) == "2" and _cpu(cs["vllm"]) == "4"
    assert "OMP_NUM_THREADS" in {e["name"] for e in cs["vllm"]["env"]}   # exclusive anyway
    assert _about_choice(out) == []
