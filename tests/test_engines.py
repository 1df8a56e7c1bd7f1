"""Engine-aware threads (the engines rule, krm_fn/rules/serving_engines.py, over the registry
krm_fn/rules/engines/) and threads.source: downwardAPI: what each
engine gets, through the real CLI. Golden cases: tests/testdata/engine-*, c14, c16,
threads-downward-api."""
import json

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from tests.helpers import TESTDATA, env_of, item, load, results, run_cli


def pod_list(container: dict, data: dict | None = None, kind: str = "Pod") -> str:
    """A ResourceList with one Pod holding `container`, and a ConfigMap function config."""
    return json.dumps({
        "apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
        "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [container]}}],
        "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "fn"},
                           "data": {"threadsEnv": "OMP_NUM_THREADS",
                                    # one thread per logical CPU unless a test says otherwise
                                    "threadsPerCoreMode": "logical", **(data or {})}}})


def res(cpu: str = "4", memory: str = "8Gi") -> dict:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def run(container: dict, data: dict | None = None):
    p = run_cli([], pod_list(container, data))
    out = load(p.stdout)
    return p, out, item(out, "Pod", "p")["spec"]["containers"][0]


def messages(out: dict, severity: str) -> list[str]:
    return [r["message"] for r in results(out, severity)]


def view(c: dict, path=("spec", "containers", 0)) -> ContainerView:
    return ContainerView(c.get("name", "c"), "app", path, c)


# -- recognition (the registry is data) -------------------------------------------------------


@pytest.mark.parametrize("container, engine", [
    ({"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.8.5"}, "vLLM CPU"),
    ({"image": "public.ecr.aws/q9t5s3a7/vllm-arm64-cpu-release-repo:latest"}, "vLLM CPU"),
    ({"image": "vllm/vllm-openai-cpu:latest"}, "vLLM CPU"),
    ({"image": "vllm/vllm-openai:v0.9.0-cpu"}, "vLLM CPU"),
    ({"image": "x:1", "command": ["vllm", "serve", "m"], "args": ["--device", "cpu"]},
     "vLLM CPU"),
    ({"image": "ghcr.io/ggml-org/llama.cpp:server"}, "llama.cpp"),
    ({"image": "x:1", "command": ["/app/llama-server"]}, "llama.cpp"),
    ({"image": "pytorch/torchserve:0.9.0-cpu"}, "TorchServe"),
    ({"image": "nvcr.io/nvidia/tritonserver:22.01-py3"}, "Triton"),
    ({"image": "mcr.microsoft.com/onnxruntime/server:latest"}, "ONNX Runtime"),
    ({"image": "rayproject/ray:2.52.0", "command": ["bash", "-c",
                                                    "ray start --head --block"]}, "Ray"),
    ({"image": "eclipse-temurin:21-jre"}, "JVM"),
    ({"image": "x:1", "command": ["/usr/bin/java", "-jar", "a.jar"]}, "JVM"),
    ({"image": "x:1", "env": [{"name": "JAVA_TOOL_OPTIONS", "value": ""}]}, "JVM"),
    ({"image": "ollama/ollama:0.12.3"}, "Ollama"),
    ({"image": "x:1", "command": ["/bin/ollama", "serve"]}, "Ollama"),
    ({"image": "openvino/model_server:2024.4"}, "OpenVINO Model Server"),
    ({"image": "x:1", "command": ["/ovms/bin/ovms", "--model_path", "/m"]},
     "OpenVINO Model Server"),
    ({"image": "tiangolo/uvicorn-gunicorn-fastapi:python3.11"}, "uvicorn-gunicorn images"),
    ({"image": "ghcr.io/huggingface/text-generation-inference:3.3.5-intel-cpu"},
     "Text Generation Inference (CPU)"),
    ({"image": "x:1", "command": ["ipexrun", "serve.py"]}, "Intel Xeon launcher (ipexrun)"),
    # hostile test: `vllm serve` without --device cpu (vLLM 0.10.0 has no --device) on no
    # accelerator is the CPU backend
    ({"image": "registry.example.com/ml/vllm-openai:v0.11.1",
      "command": ["vllm", "serve", "m", "-tp", "2"]}, "vLLM CPU"),
    ({"image": "x:1", "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
      "resources": {"limits": {"cpu": "4", "example.com/foo": "1"}}}, "vLLM CPU"),
    ({"image": "x:1", "command": ["python", "-m", "torch.backends.xeon.run_cpu", "s.py"]},
     "Intel Xeon launcher (ipexrun)"),
])
def test_detect(container, engine):
    assert engine in [e.name for e in engines.detect(view(container))]


@pytest.mark.parametrize("image, severity", [
    ("registry.example.com/ml/vllm-openai:v0.11.1", "error"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.0", "error"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.1", None),
    ("registry.example.com/ml/vllm-cpu:latest", "warning"),
])
def test_vllm_device_flag_is_gone_from_0_10_0(image, severity):
    """Hostile test: `--device cpu`, which krm-fn needed to recognise `vllm serve`, stops
    vLLM 0.10.0 and later at start-up (the option is gone from engine/arg_utils.py)."""
    c = {"name": "llm", "image": image, "command": ["vllm", "serve", "m", "--device", "cpu"],
         "resources": res()}
    p, out, after = run(c)
    said = [(r["severity"], r["field"]["path"]) for r in out["results"]
            if "--device" in r["message"]]
    assert said == ([] if severity is None else [(severity, "spec.containers[0].command[3]")])
    assert p.returncode == (1 if severity == "error" else 0)


@pytest.mark.parametrize("container", [
    {"image": "vllm/vllm-openai:v0.8.5"},                       # the GPU image
    {"image": "x:1", "command": ["vllm", "serve", "m"],          # on a GPU
     "resources": {"limits": {"nvidia.com/gpu": "1"}}},
    {"image": "x:1", "command": ["vllm", "serve", "m"],
     "resources": {"requests": {"amd.com/gpu": "1"}}},
    {"image": "x:1", "command": ["vllm", "serve", "m"],                # a DRA GPU
     "resources": {"limits": {"cpu": "4"}, "claims": [{"name": "gpu"}]}},
    {"image": "srv:1", "args": ["--threads", "4"]},
    {"image": "llamacpp-worker:latest", "args": ["--host", "0.0.0.0", "--mem", "4192"]},
])
def test_not_detected(container):
    assert engines.detect(view(container)) == []


def test_kserve_framework_keys_are_recognised():
    path = ("spec", "predictor", "onnx")
    assert [e.name for e in engines.detect(view({}, path))] == ["ONNX Runtime"]
    path = ("spec", "predictor", "triton")
    assert [e.name for e in engines.detect(view({}, path))] == ["Triton"]


def test_triton_args_naming_onnxruntime_are_not_an_ort_container():
    c = {"image": "nvcr.io/nvidia/tritonserver:24.01-py3",
         "args": ["--backend-config=onnxruntime,intra_op_thread_count=4"]}
    assert [e.name for e in engines.detect(view(c))] == ["Triton"]


def test_every_engine_is_in_the_docs_table():
    from tests.helpers import ROOT
    page = (ROOT / "docs" / "workloads.md").read_text()
    section = page[page.index("## Engine-aware threads"):]
    for e in engines.ENGINES:
        assert f"| {e.name} |" in section, (
            f"engine {e.name!r} has no row in docs/workloads.md (Engine-aware threads): "
            f"replace the table there with engines.table() (CONTRIBUTING.md, A serving engine)")


def test_the_readme_rule_table_names_every_engine_in_registry_order():
    """The README's `threads` row lists the engines by their registry names, in order,
    then the multi-worker row (one list of engines: the registry)."""
    from tests.helpers import ROOT
    row = next(ln for ln in (ROOT / "README.md").read_text().splitlines()
               if ln.startswith("| `threads` |"))
    names = ", ".join([e.name for e in engines.ENGINES] + [engines.WORKERS.name])
    assert f"({names}: [docs/workloads.md]" in row, (
        f"README.md's `threads` row must list the engines as the registry names them, in "
        f"its order: ({names}: ...)")


def test_docs_engine_table_is_generated_from_the_registry():
    """The docs/workloads.md table is engines.table(): edit an engine's data, then paste the
    table."""
    from tests.helpers import ROOT
    page = (ROOT / "docs" / "workloads.md").read_text()
    section = page[page.index("## Engine-aware threads"):]
    table = engines.table()
    assert table in section, (
        "the table in docs/workloads.md (Engine-aware threads) is not engines.table(): replace "
        "it with the output of python -c \"from krm_fn.rules import engines; "
        "print(engines.table())\"")
    assert len(table.splitlines()) == 2 + len(engines.ENGINES) + 1


_GITHUB = "https://github.com/"


def _pinned(url: str) -> bool:
    """A GitHub link names the file at a tag or a commit (`/blob/v0.30.0/...`,
    `/blob/b3683/...`, `/blob/<40 hex digits>/...`), or is a pull request, issue or
    release; never a branch (`master`, `main`, `r26.02`) or a repository's front page,
    which change after the claim was read."""
    import re
    parts = url[len(_GITHUB):].split("/")
    if len(parts) >= 4 and parts[2] in ("pull", "issues", "releases", "commit"):
        return True
    if len(parts) < 5 or parts[2] not in ("blob", "tree"):
        return False
    ref = parts[3]
    return bool(re.fullmatch(r"[0-9a-f]{40}|v?[0-9]+(\.[0-9]+)+[0-9a-z.+-]*|b[0-9]+", ref))


@pytest.mark.parametrize("url, pinned", [
    ("https://github.com/ollama/ollama/blob/v0.30.0/llm/llama_server.go", True),
    ("https://github.com/ggml-org/llama.cpp/blob/b3683/common/arg.cpp", True),
    ("https://github.com/x/y/blob/" + "ab" * 20 + "/a.cc", True),
    ("https://github.com/openvinotoolkit/model_server/blob/v2026.3/src/modelinstance.cpp", True),
    ("https://github.com/ggml-org/llama.cpp/pull/9105", True),
    ("https://github.com/ggml-org/llama.cpp/blob/master/common/common.cpp", False),
    ("https://github.com/pytorch/pytorch/blob/main/torch/backends/xeon/run_cpu.py", False),
    ("https://github.com/triton-inference-server/backend/blob/r26.02/src/a.cc", False),
    ("https://github.com/triton-inference-server/onnxruntime_backend", False),
])
def test_pinned_link(url, pinned):
    assert _pinned(url) is pinned


def test_every_engine_claim_cites_its_source_at_a_tag_or_commit():
    """Each engine's sources, Release sources, per_core_source and the GitHub links of its
    module docstring name the upstream file at the tag or commit it was read from."""
    import importlib
    import re
    for e in engines.ENGINES:
        urls = [url for _, url in e.sources] + [r.source for r in e.releases]
        urls += [e.per_core_source] if e.per_core_source else []
        doc = importlib.import_module(e.check.__module__).__doc__
        urls += re.findall(r"https://github\.com/[^\s)`'\"]+", doc)
        bad = [u for u in urls if u.startswith(_GITHUB) and not _pinned(u)]
        assert bad == [], f"{e.name}: {bad}"
        if e.per_core == "physical":
            assert e.per_core_source.startswith("https://"), e.name


def test_the_docs_name_each_engine_that_counts_physical_cores_with_its_source():
    """docs/workloads.md (Threads per core) names every engine whose Engine.per_core is
    physical, with the source it comes from, and no other."""
    import re
    from tests.helpers import ROOT
    page = (ROOT / "docs" / "workloads.md").read_text()
    start = page.index("**Threads per core.**")
    para = page[start:page.index("\n\n", start)]
    for e in engines.ENGINES:
        named = re.search(re.escape(e.name) + r"\s\(", para) is not None
        assert named is (e.per_core == "physical"), e.name
        if e.per_core == "physical":
            assert f"({e.per_core_source})" in para, e.name


def test_every_engine_is_data_with_its_check_and_upstream_sources():
    """One module per engine under krm_fn/rules/engines/, each with its ENGINE (recognition
    patterns, documentation row, at least one upstream https source) and its check."""
    import importlib
    import re
    from krm_fn import config
    from krm_fn.rules.engines.base import Engine
    names = [e.name for e in engines.ENGINES]
    assert len(set(names)) == len(names)
    for e in (*engines.ENGINES, engines.WORKERS):
        assert isinstance(e, Engine) and callable(e.check), e.name
        assert e.recognised and e.sets and e.warns, e.name
        assert e.sources and all(url.startswith("https://") for _, url in e.sources), e.name
        mod = importlib.import_module(e.check.__module__)
        assert mod.__name__.startswith("krm_fn.rules.engines.") and mod.__doc__, e.name
        r = e.recognition
        assert mod.__name__ == f"krm_fn.rules.engines.{r.module}", e.name
        for pattern in (*r.images, *r.commands, *r.needs):
            re.compile(pattern.regex)
    threads = config.load({"apiVersion": "krm-fn.dev/v1alpha1",
                           "kind": "InferenceTuning"}).workloads.threads
    for name, option in engines.ALWAYS:
        assert engines.module(name).check.__module__ == f"krm_fn.rules.engines.{name}"
        assert getattr(threads, option) is None, option      # off by default


def test_an_always_check_does_nothing_without_its_option():
    """engines.always() leaves out (and does not import) a check of ALWAYS whose
    spec.workloads.threads option is unset: the check itself then touches neither the pod
    nor the container."""
    from types import SimpleNamespace

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"read {name}")
    threads = SimpleNamespace(**{option: None for _, option in engines.ALWAYS})
    ctx = SimpleNamespace(cfg=SimpleNamespace(workloads=SimpleNamespace(threads=threads)))
    for name, _ in engines.ALWAYS:
        assert engines.module(name).check(Untouchable(), Untouchable(), None, ctx, {}) is None
    assert engines.always(threads) == ()
    threads.mallocArenaMax = 2
    assert engines.always(threads) == (engines.module("glibc").check,)


# -- vLLM ---------------------------------------------------------------------------------


def test_vllm_kvcache_above_the_memory_limit_is_an_error_and_changes_nothing():
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.9.1",
         "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "16"}], "resources": res("4", "12Gi")}
    p, out, after = run(c)
    assert p.returncode == 1
    err = results(out, "error")[0]
    assert err["field"]["path"] == "spec.containers[0].env[0].value"
    assert err["message"] == (
        "container 'vllm': VLLM_CPU_KVCACHE_SPACE=16 GiB is more than the memory limit 12Gi: "
        "vLLM reserves that much memory for the KV cache and the container is OOM-killed; "
        "lower it to at most 11 or raise resources.limits.memory")
    assert after == c


def test_vllm_bind_auto_is_left_alone_with_a_warning():
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.9.1",
         "env": [{"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "auto"},
                 {"name": "VLLM_CPU_NUM_OF_RESERVED_CPU", "value": "1"}], "resources": res()}
    p, out, after = run(c)
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning")}
    assert "set it to all so that OMP_NUM_THREADS=4 decides the count" in \
        warn["spec.containers[0].env[0].value"]
    # the reserved CPU is meaningful with auto: no warning about it
    assert "spec.containers[0].env[1]" not in warn


@pytest.mark.parametrize("image, want", [
    ("vllm/vllm-openai-cpu:v0.5.3", None),          # no VLLM_CPU_OMP_THREADS_BIND yet
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.8.5", None),   # default all: no bind
    ("vllm/vllm-openai:v0.9.0-cpu", None),
    ("vllm/vllm-openai-cpu:v0.9.1", "all"),         # default auto from 0.9.1
    ("vllm/vllm-openai-cpu:v0.11.0", "all"),
    ("vllm/vllm-openai-cpu:v0.11.1", "nobind"),     # nobind replaces all
    ("vllm/vllm-openai-cpu:v0.33.0", "nobind"),
    ("vllm/vllm-openai-cpu:latest", None),          # unknown: only the default is safe
    ("vllm/vllm-openai-cpu@sha256:" + "a" * 64, None),
])
def test_vllm_bind_value_follows_the_release(image, want):
    c = {"name": "vllm", "image": image, "resources": res()}
    p, out, after = run(c)
    assert env_of(after).get("VLLM_CPU_OMP_THREADS_BIND") == want


def test_vllm_unknown_version_warns_naming_the_better_value():
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:latest", "resources": res()}
    p, out, after = run(c)
    assert messages(out, "warning") == [
        "container 'vllm': the image 'vllm/vllm-openai-cpu:latest' names no vLLM version, so "
        "VLLM_CPU_OMP_THREADS_BIND is left unset: no value but the default is accepted by "
        "every release (the default is `all`, no binding, before 0.9.1 and `auto` from 0.9.1, "
        "one OpenMP thread per physical core of a NUMA node, right only when the kubelet "
        "really pins the container); better: VLLM_CPU_OMP_THREADS_BIND=nobind for vLLM 0.11.1 "
        "to 0.19 and from 0.21.0, or all for 0.9.1 to 0.11.0, so that OMP_NUM_THREADS=4 decides "
        "the count — or use a versioned image tag"]


@pytest.mark.parametrize("image, have, want, source", [
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.8.5", "nobind", "all",
     "v0.5.4/vllm/worker/cpu_worker.py"),
    ("vllm/vllm-openai-cpu:v0.8.5", "auto", "all",      # no auto before 0.9.1
     "v0.5.4/vllm/worker/cpu_worker.py"),
    ("vllm/vllm-openai-cpu:v0.10.0", "nobind", "all", "v0.10.0/vllm/v1/worker/cpu_worker.py"),
    ("vllm/vllm-openai-cpu:v0.12.0", "all", "nobind", "v0.11.1/vllm/v1/worker/cpu_worker.py"),
])
def test_vllm_spelling_the_release_does_not_accept_is_replaced(image, have, want, source):
    c = {"name": "vllm", "image": image, "resources": res(),
         "env": [{"name": "VLLM_CPU_OMP_THREADS_BIND", "value": have}]}
    p, out, after = run(c)
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == want
    version = image.rsplit(":v", 1)[1]
    assert messages(out, "warning") == [
        f"container 'vllm': VLLM_CPU_OMP_THREADS_BIND {have} -> {want}: vLLM {version} does "
        f"not accept {have} (it reads it as a CPU list and the worker fails to start); {want} "
        f"is its value for no binding (https://github.com/vllm-project/vllm/blob/{source})"]


def test_vllm_reserved_cpus_before_0_9_1_are_not_read():
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.8.5", "resources": res(),
         "env": [{"name": "VLLM_CPU_NUM_OF_RESERVED_CPU", "value": "1"}]}
    p, out, after = run(c)
    assert messages(out, "warning") == [
        "container 'vllm': vLLM 0.8.5 does not read VLLM_CPU_NUM_OF_RESERVED_CPU (it appeared "
        "in 0.9.1); remove it, and set spec.workloads.threads.reservedCpus to leave pinned "
        "CPUs to vLLM's own threads"]


def test_image_version_from_the_tag():
    from krm_fn.rules.cmdline import image_version
    got = [image_version(view({"image": i})) for i in (
        "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.8.5", "vllm/vllm-openai:v0.9.0-cpu",
        "reg:5000/x:0.10.1.1", "x:v0.9.1@sha256:ab", "x:latest", "x@sha256:ab", "reg:5000/x",
        "x:cpu-0.9", "x:2", "x:٢.1")]
    assert got == [(0, 8, 5), (0, 9, 0), (0, 10, 1, 1), (0, 9, 1), None, None, None, None,
                   None, None]


# -- llama.cpp ------------------------------------------------------------------------------


def test_llama_threads_arg_at_most_the_count_is_kept_and_batch_follows_it():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server",
         "args": ["-m", "/models/m.gguf", "-t", "2"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after) == {"OMP_NUM_THREADS": "4"}
    assert messages(out, "warning") == []


def test_llama_batch_threads_arg_only():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b4321",
         "args": ["-m", "/models/m.gguf", "-tb", "16"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after) == {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"}
    assert messages(out, "warning") == [
        "container 'llama': llama.cpp -tb 16 asks for more threads than the 4 pinned CPUs "
        "and wins over LLAMA_ARG_THREADS, which -tb otherwise follows; set it to 4"]


@pytest.mark.parametrize("args, path, refused, name", [
    (["--threads=4"], "args[2]", "error: invalid argument: --threads=4", "--threads"),
    (["-t4"], "args[2]", "error: invalid argument: -t4", "--threads"),
    (["-tb=4"], "args[2]", "error: invalid argument: -tb=4", "--threads-batch"),
    (["--threads_batch=4"], "args[2]", "error: invalid argument: --threads-batch=4",
     "--threads-batch"),
    (["-t", "four"], "args[3]", "std::stoi refuses 'four'", "--threads"),
    (["-t", "99999999999"], "args[3]", "std::stoi refuses '99999999999'", "--threads"),
    (["-t"], "args[2]", "expected value for argument", "--threads"),
])
def test_llama_thread_flags_llama_server_refuses_are_errors(args, path, refused, name):
    """llama-server's parser (common/arg.cpp) takes a flag's value as the next word only:
    the glued forms stop the server at start-up, so the render fails closed."""
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b4321",
         "args": ["-m", "/models/m.gguf"] + args, "resources": res()}
    p, out, after = run(c)
    written = " ".join(args[-2:]) if len(args) == 2 else args[0]
    assert [(r["field"]["path"], r["message"]) for r in results(out, "error")
            if "field" in r] == [(
        f"spec.containers[0].{path}",
        f"container 'llama': llama-server stops at start-up on {written} ({refused}; its "
        f"parser, common/arg.cpp, takes the value as the next word, read by std::stoi): "
        f"write {name} 4 (https://github.com/ggml-org/llama.cpp/blob/b3683/common/arg.cpp)")]


_EVERY = ("is <= 0, which llama.cpp reads as std::thread::hardware_concurrency(), every CPU "
          "of the node rather than the 4 pinned CPUs; it wins over LLAMA_ARG_THREADS: set "
          "it to 4")


@pytest.mark.parametrize("args, warned", [
    (["-t", "8x"], "-t 8x asks for more threads than the 4 pinned CPUs and wins over "
                   "LLAMA_ARG_THREADS; set it to 4"),                     # std::stoi: 8
    (["-t", "0"], "-t 0 " + _EVERY),
    (["-t", "-1"], "-t -1 " + _EVERY),
    (["-t", "9", "-t", "3"], None),                    # the last one wins
    (["-t", "+4"], None),
    (["-t", " 4"], None),
])
def test_llama_thread_values_are_read_as_std_stoi_reads_them(args, warned):
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b4321",
         "args": ["-m", "/models/m.gguf"] + args, "resources": res()}
    p, out, after = run(c)
    assert results(out, "error") == []
    assert messages(out, "warning") == ([] if warned is None else
                                        ["container 'llama': llama.cpp " + warned])


def test_llama_underscored_long_flags_are_read_with_dashes():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b4321",
         "args": ["-m", "/models/m.gguf", "--threads_batch", "9"], "resources": res()}
    p, out, after = run(c)
    assert messages(out, "warning") == [
        "container 'llama': llama.cpp --threads_batch 9 asks for more threads than the 4 "
        "pinned CPUs and wins over LLAMA_ARG_THREADS, which -tb otherwise follows; set it "
        "to 4"]


@pytest.mark.parametrize("image, want", [
    ("ghcr.io/ggml-org/llama.cpp:server-b4321", (4321,)),
    ("ghcr.io/ggml-org/llama.cpp:full-cuda-b3683", (3683,)),
    ("ghcr.io/ggerganov/llama.cpp:server-b3600", (3600,)),
    ("ghcr.io/ggml-org/llama.cpp:server-b4321@sha256:" + "a" * 64, (4321,)),
    ("ghcr.io/ggml-org/llama.cpp:server", None),
    ("ghcr.io/ggml-org/llama.cpp:server-cuda", None),
    ("ghcr.io/ggml-org/llama.cpp@sha256:" + "a" * 64, None),
    ("ghcr.io/ggml-org/llama.cpp:server-b٣٦٨٣", None),         # Arabic-Indic digits
    ("ghcr.io/ggml-org/llama.cpp:server-b" + "9" * 5000, None),
    ("registry.example.com/llamacpp:server-b4321", None),       # not a llama.cpp image
])
def test_llama_build_is_the_bNNNN_of_a_llama_cpp_image_tag(image, want):
    from krm_fn.rules.engines import llama_cpp
    assert llama_cpp.build(view({"image": image})) == want


@pytest.mark.parametrize("image, want", [
    ("ghcr.io/ggml-org/llama.cpp:server-b3600", None),
    ("ghcr.io/ggml-org/llama.cpp:server-b3682", None),          # before b3683: not known
    ("ghcr.io/ggml-org/llama.cpp:server-b3683", "4"),
    ("ghcr.io/ggml-org/llama.cpp:server-b6000", "4"),
    ("ghcr.io/ggml-org/llama.cpp:server", "4"),                 # unknown: env var, warned
])
def test_llama_threads_env_var_follows_the_build(image, want):
    c = {"name": "llama", "image": image, "args": ["-m", "/models/m.gguf"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after).get("LLAMA_ARG_THREADS") == want
    assert "LLAMA_ARG_THREADS_BATCH" not in env_of(after)   # llama-server reads no such var


def test_llama_build_before_b3683_gets_nothing_and_a_warning_naming_threads():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b3600",
         "args": ["-m", "/models/m.gguf"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after) == {"OMP_NUM_THREADS": "4"}
    assert [(r["field"]["path"], r["message"]) for r in results(out, "warning")] == [(
        "spec.containers[0].args",
        "container 'llama': llama.cpp build b3600 (image "
        "'ghcr.io/ggml-org/llama.cpp:server-b3600') is older than b3683, the first build "
        "krm-fn knows to read LLAMA_ARG_THREADS (llama-server's LLAMA_ARG_* env vars came with "
        "PR #9105, August 2024), so nothing is set and llama.cpp picks its own thread count; "
        "add --threads 4 to args (every build reads it) or use a build >= b3683 "
        "(https://github.com/ggml-org/llama.cpp/blob/b3683/common/arg.cpp)")]


def test_llama_build_before_b3683_with_threads_in_args_needs_nothing():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b3000",
         "args": ["-m", "/models/m.gguf", "--threads", "4"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after) == {"OMP_NUM_THREADS": "4"}
    assert messages(out, "warning") == []


def test_llama_unknown_build_sets_the_env_var_and_names_threads_as_better():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server",
         "args": ["-m", "/models/m.gguf"], "resources": res()}
    p, out, after = run(c)
    assert env_of(after) == {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"}
    assert [(r["field"]["path"], r["message"]) for r in results(out, "warning")] == [(
        "spec.containers[0].env",
        "container 'llama': the image 'ghcr.io/ggml-org/llama.cpp:server' names no llama.cpp "
        "build (a -bNNNN tag), so LLAMA_ARG_THREADS is set, which builds before b3683 may not "
        "read (they ignore it); better: --threads 4 in args, which every build reads — or use "
        "a tag such as server-b3683 or later")]


def test_llama_env_above_the_count_is_lowered():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server",
         "args": ["-m", "/models/m.gguf"],
         "env": [{"name": "LLAMA_ARG_THREADS", "value": "32"}], "resources": res()}
    p, out, after = run(c)
    assert env_of(after)["LLAMA_ARG_THREADS"] == "4"
    assert results(out, "warning")[0]["message"] == (
        "container 'llama': LLAMA_ARG_THREADS 32 -> 4: 32 is more threads than llama.cpp: "
        "the 4 pinned CPUs and would oversubscribe them")


@pytest.mark.parametrize("args, warned", [
    (["-td", "16"], ["container 'llama': llama.cpp -td 16 asks for more threads than the 4 "
                     "pinned CPUs and wins over -t, which the draft model's threads "
                     "otherwise follow; set it to 4"]),
    (["--spec-draft-threads-batch", "0"],
     ["container 'llama': llama.cpp --spec-draft-threads-batch 0 is <= 0, which llama.cpp "
      "reads as std::thread::hardware_concurrency(), every CPU of the node rather than "
      "the 4 pinned CPUs; it wins over -td, which the draft model's threads "
      "otherwise follow: set it to 4"]),
    (["--threads-draft", "2", "-tbd", "4"], []),
])
def test_llama_draft_model_threads_are_read_like_threads(args, warned):
    """Hostile test: -td/-tbd (speculative decoding's draft model, common/arg.cpp) were not
    read; -td 16 ran 16 threads on 4 CPUs unwarned."""
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b7400",
         "args": ["-m", "/m.gguf", "-md", "/d.gguf", *args], "resources": res()}
    p, out, after = run(c)
    assert env_of(after)["LLAMA_ARG_THREADS"] == "4"
    assert messages(out, "warning") == warned


_ROUTER = ("container 'llama': llama-server names no model (-m, -hf, "
           "--docker-repo or their LLAMA_ARG_* env vars), so it runs as a router that loads "
           "each requested model in a child llama-server with the same environment and args, "
           "4 threads each; {what} lets {many} models run at once, each pool on the same "
           "pinned CPUs; set --models-max 1 (or LLAMA_ARG_MODELS_MAX=1), or serve one model "
           "per Deployment with -m (https://github.com/ggml-org/llama.cpp/blob/0c1e57098/"
           "tools/server/server.cpp)")


@pytest.mark.parametrize("args, env, warning", [
    (["--models-dir", "/models"], [],
     _ROUTER.format(what="--models-max 4 (the default)", many="up to 4")),
    (["--models-dir", "/models", "--models-max", "2"], [],
     _ROUTER.format(what="--models-max 2", many="up to 2")),
    (["--models-max", "0"], [], _ROUTER.format(what="--models-max 0", many="any number of")),
    ([], [{"name": "LLAMA_ARG_MODELS_MAX", "value": "3"}],
     _ROUTER.format(what="LLAMA_ARG_MODELS_MAX=3", many="up to 3")),
    (["--models-max", "1"], [], None),
    ([], [{"name": "LLAMA_ARG_MODELS_MAX", "value": "1"}], None),
    (["-m", "/models/m.gguf"], [], None),
    (["--model", "/models/m.gguf"], [], None),
    (["-hf", "ggml-org/gemma-3-1b-it-GGUF"], [], None),
    # --model-url alone leaves the server's model path empty: a router (server.cpp)
    (["-mu", "https://example.com/m.gguf"], [],
     _ROUTER.format(what="--models-max 4 (the default)", many="up to 4")),
    (["--docker-repo", "ai/gemma3"], [], None),
    ([], [{"name": "LLAMA_ARG_HF_REPO", "value": "ggml-org/gemma-3-1b-it-GGUF"}], None),
])
def test_llama_server_without_a_model_is_a_router_of_several_thread_pools(args, env, warning):
    """Hostile test: llama-server without -m/-hf (tools/server/server.cpp is_router_server)
    starts a child llama-server per loaded model, each inheriting LLAMA_ARG_THREADS, up to
    --models-max (default 4, common/common.h) at once."""
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server-b7400", "args": args,
         "env": env, "resources": res()}
    p, out, after = run(c)
    assert env_of(after)["LLAMA_ARG_THREADS"] == "4"
    assert [m for m in messages(out, "warning") if "router" in m] == (
        [warning] if warning else [])


# -- workers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("container, count", [
    ({"command": ["gunicorn", "-w", "2", "app:app"]}, "2"),
    ({"command": ["gunicorn", "--workers=4", "app:app"]}, "1"),
    ({"command": ["sh", "-c", "exec gunicorn -k uvicorn.workers.UvicornWorker -w 2 main:app"]},
     "2"),
    ({"command": ["uvicorn", "main:app"], "env": [{"name": "WEB_CONCURRENCY", "value": "4"}]},
     "1"),
    ({"command": ["gunicorn", "app:app"],
      "env": [{"name": "GUNICORN_CMD_ARGS", "value": "--bind=0.0.0.0 --workers=2"}]}, "2"),
    ({"command": ["python", "serve.py"], "env": [{"name": "WEB_CONCURRENCY", "value": "4"}]},
     "4"),                                      # not gunicorn/uvicorn: not a worker count
    ({"command": ["gunicorn", "-w", "8", "app:app"]}, "1"),      # floor, at least 1
])
def test_worker_count_divides_the_thread_vars(container, count):
    c = {"name": "api", "image": "api:1", "resources": res(), **container}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == count


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_oom_group_warning_on_every_supported_version(version):
    """memory.oom.group is set from 1.28 on cgroup v2: every supported version warns."""
    c = {"name": "api", "image": "api:1", "args": ["--workers", "2"], "resources": res()}
    _, out, _ = run(c, {"kubernetesVersion": version})
    assert [m for m in messages(out, "warning") if "memory.oom.group" in m]


def test_oom_group_warning_versions_before_1_28_are_refused():
    c = {"name": "api", "image": "api:1", "args": ["--workers", "2"], "resources": res()}
    p, out, _ = run(c, {"kubernetesVersion": "1.27"})
    assert p.returncode == 1
    assert [r["field"]["path"] for r in results(out, "error")] == ["data.kubernetesVersion"]


# -- Ray --------------------------------------------------------------------------------------


def test_ray_start_gets_no_pod_wide_thread_vars_and_needs_num_cpus():
    script = ("export RAY_ADDRESS=${POD_IP}:${RAY_PORT}\n"
              "ray start --head --disable-usage-stats --include-dashboard false\n"
              "python -m huggingfaceserver --model_dir=/mnt/models\n")
    c = {"name": "kserve-container", "image": "huggingfaceserver:latest",
         "command": ["bash", "-c", script],
         "env": [{"name": "OMP_NUM_THREADS", "value": "4"}], "resources": res()}
    p, out, after = run(c, {"threadsEnv": "OMP_NUM_THREADS,MKL_NUM_THREADS"})
    assert p.returncode == 0
    assert env_of(after) == {"OMP_NUM_THREADS": "4"}      # nothing added, nothing changed
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning")}
    assert warn["spec.containers[0].command[2]"] == (
        "container 'kserve-container': ray start has no --num-cpus, so Ray detects the CPU "
        "count itself and may schedule more tasks than the 4 pinned CPUs; add --num-cpus=4")
    assert warn["spec.containers[0].env[0]"].startswith(
        "container 'kserve-container': OMP_NUM_THREADS is set for the whole container and "
        "overrides the per-worker value Ray derives from num_cpus")


def test_ray_num_cpus_above_the_cpus_is_warned():
    c = {"name": "ray-head", "image": "rayproject/ray:2.52.0",
         "command": ["ray", "start", "--head", "--num-cpus=16", "--block"], "resources": res()}
    p, out, after = run(c)
    assert "env" not in after
    assert messages(out, "warning") == [
        "container 'ray-head': ray start --num-cpus 16 is more than the 4 pinned CPUs; set "
        "--num-cpus=4"]


# -- JVM, Go, malloc --------------------------------------------------------------------------


def test_jvm_active_processor_count_keeps_lower_and_lowers_higher():
    base = {"name": "app", "image": "eclipse-temurin:21-jre", "resources": res()}
    _, _, after = run({**base, "env": [{"name": "JAVA_TOOL_OPTIONS",
                                        "value": "-XX:ActiveProcessorCount=2 -Xss1m"}]})
    assert env_of(after)["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=2 -Xss1m"
    _, out, after = run({**base, "env": [{"name": "JAVA_TOOL_OPTIONS",
                                          "value": "-XX:ActiveProcessorCount=64 -Xss1m"}]})
    assert env_of(after)["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=4 -Xss1m"
    assert results(out, "warning")[0]["field"]["path"] == "spec.containers[0].env[0].value"


def test_jvm_count_is_not_divided_by_workers_but_keeps_reserved_cpus():
    c = {"name": "app", "image": "eclipse-temurin:21-jre", "args": ["--workers", "4"],
         "resources": res("8")}
    _, _, after = run(c, {"threadsReservedCpus": "2"})
    env = env_of(after)
    assert env["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=6"
    assert env["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize("image, want", [
    ("eclipse-temurin:17-jre", ((17, 0), "17")),
    ("eclipse-temurin:17.0.9_9-jre-jammy", ((17, 9), "17")),
    ("openjdk:8u181-jdk", ((8, 181), "8u181")),
    ("openjdk:8u191-jre", ((8, 191), "8u191")),
    ("openjdk:8-jre", (None, "8")),                         # 8 without an update number
    ("amazoncorretto:8", (None, "8")),
    ("amazoncorretto:8u392-al2", ((8, 392), "8u392")),
    ("ibm-semeru-runtimes:open-17-jre", ((17, 0), "17")),
    ("tomcat:10-jdk17", ((17, 0), "17")),                   # a server: jdkNN in the tag
    ("jetty:9.4-jre8", (None, "8")),
    ("deepjavalibrary/djl-serving:0.29.0", (None, None)),   # the server's own version
    ("eclipse-temurin@sha256:" + "a" * 64, (None, None)),
    ("openjdk:٨u191", (None, None)),                        # Arabic-Indic eight
    ("openjdk:" + "9" * 5000, (None, None)),
])
def test_jdk_version_from_the_image_tag(image, want):
    from krm_fn.rules.engines import jvm
    assert jvm.jdk_version(view({"image": image}))[:2] == want


@pytest.mark.parametrize("image, added", [
    ("openjdk:8u181-jdk", False),           # before the 8u191 backport
    ("openjdk:8u191-jre", True),
    ("openjdk:9-jdk", False),               # JDK-8146115 is fixed in 10, not in 9
    ("openjdk:10-jdk", True),
    ("amazoncorretto:21", True),
    ("openjdk:8-jre", False),               # unknown update: not known to have it
    ("eclipse-temurin:8-jre", True),        # every Temurin JDK has it
    ("eclipse-temurin:latest", True),
    ("deepjavalibrary/djl-serving:0.29.0", False),
])
def test_jvm_option_is_added_only_when_the_jdk_is_known_to_have_it(image, added):
    c = {"name": "app", "image": image, "resources": res()}
    p, out, after = run(c)
    assert env_of(after).get("JAVA_TOOL_OPTIONS") == ("-XX:ActiveProcessorCount=4" if added
                                                      else None)


def test_jvm_jdk_without_the_option_gets_nothing_and_a_warning():
    c = {"name": "app", "image": "openjdk:8u181-jdk", "resources": res(),
         "env": [{"name": "JAVA_TOOL_OPTIONS", "value": "-Xss1m"}]}
    p, out, after = run(c)
    assert env_of(after)["JAVA_TOOL_OPTIONS"] == "-Xss1m"
    assert [(r["field"]["path"], r["message"]) for r in results(out, "warning")] == [(
        "spec.containers[0].env[0].value",
        "container 'app': -XX:ActiveProcessorCount=4 not added to JAVA_TOOL_OPTIONS: the image "
        "'openjdk:8u181-jdk' runs JDK 8u181, which does not know the option (it came with JDK "
        "10 and 8u191: JDK-8146115) and refuses to start with it (\"Unrecognized VM option\"), "
        "so the JVM sizes its thread pools from the CPUs it detects; use a JDK 8u191+ or 10+ "
        "image to get it (https://bugs.openjdk.org/browse/JDK-8146115)")]


def test_jvm_unknown_jdk_gets_nothing_and_a_warning_naming_the_option():
    c = {"name": "app", "image": "amazoncorretto:8", "command": ["java", "-jar", "a.jar"],
         "resources": res()}
    p, out, after = run(c)
    assert "JAVA_TOOL_OPTIONS" not in env_of(after)
    assert [(r["field"]["path"], r["message"]) for r in results(out, "warning")] == [(
        "spec.containers[0].env",
        "container 'app': -XX:ActiveProcessorCount=4 not added to JAVA_TOOL_OPTIONS: the image "
        "'amazoncorretto:8' names no JDK version krm-fn can read (8 without an update number), "
        "and a JDK before 8u191, or 9, refuses to start with an option it does not know "
        "(\"Unrecognized VM option\"); better: add it yourself when the JDK is 8u191+ or 10+, "
        "or use a tag that names the JDK (eclipse-temurin:21-jre, openjdk:8u392-jre, "
        "tomcat:10-jdk17) (https://bugs.openjdk.org/browse/JDK-8146115)")]


def test_jvm_count_already_there_is_lowered_whatever_the_jdk_version():
    """A count in JAVA_TOOL_OPTIONS is the JVM's own (it starts with it): lowering it is safe
    on an image of unknown JDK version."""
    c = {"name": "app", "image": "registry.example/app:3", "resources": res(),
         "env": [{"name": "JAVA_TOOL_OPTIONS", "value": "-XX:ActiveProcessorCount=64"}]}
    p, out, after = run(c)
    assert env_of(after)["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=4"


def test_gomemlimit_keeps_a_lower_value_and_reads_go_units():
    c = {"name": "srv", "image": "srv:1", "resources": res("2", "1Gi"),
         "env": [{"name": "GOMEMLIMIT", "value": "512MiB"}]}
    p, out, after = run(c, {"goMemLimitPercent": "90"})
    assert env_of(after)["GOMEMLIMIT"] == "512MiB"
    assert messages(out, "warning") == []


def test_gomemlimit_and_malloc_arena_max_apply_without_engine_recognition():
    c = {"name": "srv", "image": "srv:1", "resources": res("2", "1000Mi")}
    _, _, after = run(c, {"goMemLimitPercent": "50", "mallocArenaMax": "4",
                          "threadsEngines": "false"})
    assert env_of(after) == {"OMP_NUM_THREADS": "2", "GOMEMLIMIT": "524288000",
                             "MALLOC_ARENA_MAX": "4"}


def test_engines_off_sets_nothing_engine_specific():
    c = {"name": "llama", "image": "ghcr.io/ggml-org/llama.cpp:server",
         "args": ["--workers", "4"], "resources": res()}
    _, out, after = run(c, {"threadsEngines": "false"})
    assert env_of(after) == {"OMP_NUM_THREADS": "4"}
    assert messages(out, "warning") == []


def test_fractional_containers_outside_the_pinned_set_get_nothing():
    c = {"name": "a", "image": "a:1", "resources": res()}
    side = {"name": "jvm", "image": "eclipse-temurin:21-jre", "resources": res("500m", "1Gi")}
    text = pod_list(c, {"goMemLimitPercent": "90"})
    doc = json.loads(text)
    doc["items"][0]["spec"]["containers"].append(side)
    out = load(run_cli([], json.dumps(doc)).stdout)
    assert "env" not in item(out, "Pod", "p")["spec"]["containers"][1]


# -- threads.source: downwardAPI --------------------------------------------------------------


def test_downward_api_with_reserved_cpus_writes_literals_with_a_warning():
    c = {"name": "srv", "image": "srv:1", "resources": res()}
    p, out, after = run(c, {"threadsSource": "downwardAPI", "threadsReservedCpus": "1"})
    assert after["env"] == [{"name": "OMP_NUM_THREADS", "value": "3"}]
    assert messages(out, "warning") == [
        "container 'srv': threads.source is downwardAPI but the thread vars are written as the "
        "literal 3: a resourceFieldRef on limits.cpu gives 4, not 3 (the 4 pinned CPUs minus 1 "
        "reserved); set threads.source to literal to silence this, or drop "
        "threads.reservedCpus / the worker count / one thread per physical core to get a "
        "resourceFieldRef"]


def test_downward_api_whole_cpus():
    c = {"name": "srv", "image": "ghcr.io/ggml-org/llama.cpp:server-b4321", "resources": res(),
         "env": [{"name": "LLAMA_ARG_MODEL", "value": "/models/m.gguf"}]}
    p, out, after = run(c, {"threadsSource": "downwardAPI"})
    ref = {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}
    assert after["env"] == [{"name": "LLAMA_ARG_MODEL", "value": "/models/m.gguf"},
                            {"name": "OMP_NUM_THREADS", "valueFrom": ref},
                            {"name": "LLAMA_ARG_THREADS", "valueFrom": ref}]
    assert messages(out, "warning") == []


def test_existing_resource_field_ref_that_resolves_to_the_count_is_silent_in_literal_mode():
    ref = {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1"}}
    c = {"name": "srv", "image": "srv:1", "resources": res(),
         "env": [{"name": "OMP_NUM_THREADS", "valueFrom": ref}]}
    p, out, after = run(c)
    assert after["env"] == c["env"]
    assert messages(out, "warning") == []


def test_golden_inputs_exist():
    for case in ("c14-onnxruntime", "c16-multi-worker", "engine-vllm-cpu", "engine-llama-cpp",
                 "engine-torchserve", "engine-triton", "engine-jvm", "engine-go-memlimit",
                 "threads-downward-api"):
        assert (TESTDATA / case / "input.yaml").exists(), case


def test_ray_num_cpus_is_read_from_the_ray_start_line_only():
    script = "ray start --head\npython serve.py --num-cpus 2\n"
    c = {"name": "head", "image": "x:1", "command": ["bash", "-c", script], "resources": res()}
    _, out, _ = run(c)
    assert any("ray start has no --num-cpus" in m for m in messages(out, "warning"))


# -- threads per core (threads.perCore) -----------------------------------------------------


@pytest.mark.parametrize("image, mode, want", [
    ("ghcr.io/ggml-org/llama.cpp:server", "engine-default", "4"),   # llama.cpp: physical
    ("vllm/vllm-openai-cpu:v0.11.1", "engine-default", "4"),        # vLLM: physical
    ("registry.example/api:1", "engine-default", "8"),              # anything else: logical
    ("registry.example/api:1", "physical", "4"),
    ("ghcr.io/ggml-org/llama.cpp:server", "logical", "8"),
])
def test_threads_per_core_mode(image, mode, want):
    c = {"name": "c", "image": image, "resources": res("8")}
    p, out, after = run(c, {"threadsPerCoreMode": mode})
    assert env_of(after)["OMP_NUM_THREADS"] == want


def test_physical_cores_then_workers_and_the_jvm_stays_logical():
    c = {"name": "c", "image": "eclipse-temurin:21", "command": ["gunicorn", "-w", "2", "a:b"],
         "resources": res("8")}
    p, out, after = run(c, {"threadsPerCoreMode": "physical"})
    assert env_of(after)["OMP_NUM_THREADS"] == "2"                   # 8 / 2 per core / 2
    assert env_of(after)["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=8"


def test_bind_writes_omp_places_and_keeps_a_value_already_set():
    c = {"name": "c", "image": "x:1", "resources": res("8"),
         "env": [{"name": "OMP_PLACES", "value": "threads"}]}
    p, out, after = run(c, {"threadsPerCoreMode": "physical", "threadsBind": "true"})
    assert env_of(after) == {"OMP_PLACES": "threads", "OMP_NUM_THREADS": "4",
                             "OMP_PROC_BIND": "close"}


# -- Ollama, OpenVINO Model Server, the uvicorn-gunicorn images ------------------------------


_NUM_THREAD = ('set PARAMETER num_thread {n} in the Modelfile (or "options": '
               '{{"num_thread": {n}}} in each request)')


@pytest.mark.parametrize("image, mode, env, warning", [
    # up to 0.12: the server counts the node's physical cores (discover/types.go, v0.12.0)
    ("ollama/ollama:0.12.3", "logical", {"OMP_NUM_THREADS": "4"},
     "container 'o' runs Ollama 0.12.3, which reads no thread-count env var: each model "
     "runner uses num_thread from the request options or the Modelfile, and its default 0 "
     "lets the server count the node's physical cores, not the pinned CPUs; "
     + _NUM_THREAD.format(n=4)),
    # 0.13 to 0.24: the CPU quota, the pinned CPUs (discover/cpu_linux.go, v0.13.0)
    ("ollama/ollama:0.13.0", "logical", {"OMP_NUM_THREADS": "4"}, None),
    ("ollama/ollama:0.24.0", "logical", {"OMP_NUM_THREADS": "4"}, None),
    ("ollama/ollama:0.24.0", "physical", {"OMP_NUM_THREADS": "2"},
     "container 'o' runs Ollama 0.24.0, which reads no thread-count env var: a model runner "
     "without num_thread uses the container's CPU quota, 4 threads, not 2 (the 4 pinned CPUs "
     "as 2 physical cores (2 threads per core), since spec.workloads.threads.perCore is "
     "physical); " + _NUM_THREAD.format(n=2)),
    # from 0.30: llama-server children inherit the env (llm/llama_server.go, v0.30.0)
    ("ollama/ollama:0.30.0", "logical", {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"},
     None),
    ("ollama/ollama:0.32.15-rocm", "physical",
     {"OMP_NUM_THREADS": "2", "LLAMA_ARG_THREADS": "2"}, None),
    ("ollama/ollama:latest", "logical", {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"},
     "container 'o' runs Ollama of a version its image tag does not name: from 0.30 its "
     "llama-server runners read LLAMA_ARG_THREADS (set), but before 0.30 no thread-count env "
     "var is read and a runner without num_thread uses the node's physical cores or the CPU "
     "quota, not 4; on those " + _NUM_THREAD.format(n=4)),
    ("ollama/ollama:0.11.0", "logical", {"OMP_NUM_THREADS": "4"},
     "container 'o' runs Ollama 0.11.0, older than 0.12, the first release krm-fn has read: "
     "it reads no thread-count env var and a model runner without num_thread sizes itself, "
     "not to the pinned CPUs; " + _NUM_THREAD.format(n=4)),
])
def test_ollama_threads_by_release(image, mode, env, warning):
    c = {"name": "o", "image": image, "resources": res()}
    p, out, after = run(c, {"threadsPerCoreMode": mode})
    assert env_of(after) == env
    assert messages(out, "warning") == ([warning] if warning else [])


@pytest.mark.parametrize("value, many", [
    ("1", None), (" '1' ", None),
    ("2", "2"), ("0", "3 (the CPU default its value 0 stands for)"),
    ("-1", "3 (Ollama does not read '-1' as a count)"),
])
def test_ollama_several_loaded_models_are_warned(value, many):
    """server/sched.go: each loaded model is its own runner; OLLAMA_MAX_LOADED_MODELS
    unset or 0 allows 3 on a CPU node, a value envconfig.Uint cannot parse too."""
    c = {"name": "o", "image": "ollama/ollama:0.30.0", "resources": res(),
         "env": [{"name": "OLLAMA_MAX_LOADED_MODELS", "value": value}]}
    p, out, after = run(c)
    want = [] if many is None else [
        f"container 'o': OLLAMA_MAX_LOADED_MODELS={value} lets Ollama keep {many} models "
        f"loaded at once, each in its own runner process with 4 threads: requests to "
        f"different models at once run that many thread pools on the 4 pinned CPUs and "
        f"queue for them; set OLLAMA_MAX_LOADED_MODELS=1 to serve one model at a time, or "
        f"give each model its own Deployment (https://github.com/ollama/ollama/blob/"
        f"000ce02098f6bfea486601b5cae35ba38f8824fc/server/sched.go)"]
    assert messages(out, "warning") == want


def test_ollama_counts_physical_cores_under_engine_default():
    c = {"name": "o", "image": "ollama/ollama:0.30.0", "resources": res("8")}
    p, out, after = run(c, {"threadsPerCoreMode": "engine-default"})
    assert env_of(after) == {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"}


_TRITON = "nvcr.io/nvidia/tritonserver:24.05-py3"
_GLOBAL = "--backend-config=onnxruntime,enable-global-threadpool="
_INTRA = "--backend-config=onnxruntime,intra_op_thread_count="
_PBTXT = ('set parameters { key: "intra_op_thread_count" value: { string_value: "4" } } in '
          "each ONNX model's config.pbtxt")


@pytest.mark.parametrize("image, args, path, warning", [
    (_TRITON, [], "spec.containers[0].args",
     "container 't' runs Triton: the thread env vars reach its PyTorch and Python backends, "
     "but its ONNX Runtime backend gives each ONNX model its own pool of one thread per "
     "physical core unless told; if it serves ONNX models add " + _GLOBAL + "1 and " + _INTRA
     + "4 to args (one pool of 4 threads shared by those models; intra_op_thread_count "
     "without enable-global-threadpool is ignored), or " + _PBTXT + " (the model repository, "
     "which krm-fn does not see)"),
    # the count alone is ignored: onnxruntime_loader.cc reads it with the global pool only
    (_TRITON, [_INTRA + "4"], "spec.containers[0].args[0]",
     "container 't': Triton reads onnxruntime,intra_op_thread_count from the command line "
     "only with onnxruntime,enable-global-threadpool=1, so it is ignored here; add "
     + _GLOBAL + "1 to args"),
    (_TRITON, [_INTRA + "8", _GLOBAL + "0"], "spec.containers[0].args[0]",
     "container 't': Triton reads onnxruntime,intra_op_thread_count from the command line "
     "only with onnxruntime,enable-global-threadpool=1, so it is ignored here; add "
     + _GLOBAL + "1 to args, and set onnxruntime,intra_op_thread_count to 4"),
    (_TRITON, [_GLOBAL + "1"], "spec.containers[0].args[0]",
     "container 't': Triton onnxruntime,enable-global-threadpool=1 shares one ONNX Runtime "
     "pool among the ONNX models and ignores their config.pbtxt intra_op_thread_count, but "
     "without onnxruntime,intra_op_thread_count that pool is one thread per physical core; "
     "add " + _INTRA + "4 to args"),
    (_TRITON, [_GLOBAL + "On", _INTRA + "4"], None, None),
    (_TRITON, ["--backend-config", "onnxruntime,enable-global-threadpool=true",
               "--backend-config", "onnxruntime,intra_op_thread_count=3"], None, None),
    (_TRITON, [_GLOBAL + "1", _INTRA + "8"], "spec.containers[0].args[1]",
     "container 't': Triton onnxruntime,intra_op_thread_count=8 is more threads than the 4 "
     "pinned CPUs; set it to 4"),
    (_TRITON, [_GLOBAL + "yes", _INTRA + "4"], "spec.containers[0].args[0]",
     "container 't': Triton onnxruntime,enable-global-threadpool=yes is not a boolean "
     "(true/on/1, false/off/0), so the ONNX Runtime backend fails to load; set it to 1 (with "
     "onnxruntime,intra_op_thread_count=4)"),
    # before 21.12 (branch r21.11) only the models' config.pbtxt sizes the pools
    ("nvcr.io/nvidia/tritonserver:21.11-py3", [], "spec.containers[0].args",
     "container 't' runs Triton: the thread env vars reach its PyTorch and Python backends, "
     "but its ONNX Runtime backend gives each ONNX model its own pool of one thread per "
     "physical core unless told; if it serves ONNX models " + _PBTXT + " (Triton 21.11 has "
     "no command-line thread setting)"),
    ("nvcr.io/nvidia/tritonserver:21.11-py3", [_GLOBAL + "1", _INTRA + "4"],
     "spec.containers[0].args[1]",
     "container 't': Triton 21.11 reads no ONNX Runtime thread count from the command line "
     "(enable-global-threadpool came with 21.12), so onnxruntime,intra_op_thread_count is "
     "ignored; " + _PBTXT),
    ("nvcr.io/nvidia/tritonserver:21.12-py3", [_GLOBAL + "1", _INTRA + "4"], None, None),
])
def test_triton_onnxruntime_backend_thread_settings(image, args, path, warning):
    c = {"name": "t", "image": image, "args": args, "resources": res()}
    p, out, after = run(c)
    warns = results(out, "warning")
    assert [r["message"] for r in warns] == ([warning] if warning else [])
    if warning:
        assert warns[0]["field"]["path"] == path


@pytest.mark.parametrize("image, args, want", [
    ("openvino/model_server:2024.4", [], "INFERENCE_NUM_THREADS"),
    ("openvino/model_server:2021.4", [], "CPU_THREADS_NUM = 4"),
    ("openvino/model_server:2024.4", ["--plugin_config", '{"INFERENCE_NUM_THREADS": "4"}'],
     None),
    ("openvino/model_server:2024.4", ["--plugin_config=" + "[" * 3000 + "]" * 3000],
     "INFERENCE_NUM_THREADS"),
])
def test_openvino_plugin_config_thread_key(image, args, want):
    c = {"name": "ov", "image": image, "args": args, "resources": res()}
    p, out, after = run(c)
    warns = messages(out, "warning")
    if want is None:
        assert warns == []
    else:
        assert len(warns) == 1 and f"add the plugin property {want}" in warns[0]


@pytest.mark.parametrize("image, env, part", [
    ("tiangolo/uvicorn-gunicorn-fastapi:python3.11", [],
     "Python 3.11 ignores PYTHON_CPU_COUNT (read from 3.13 on)"),
    ("tiangolo/uvicorn-gunicorn-fastapi:python3.13", [],
     "so with PYTHON_CPU_COUNT=4 (Python 3.13) it starts 4 workers, each with 4 threads"),
    ("tiangolo/uvicorn-gunicorn-fastapi:python3.13", [{"name": "WORKERS_PER_CORE",
                                                       "value": "2"}],
     "so with PYTHON_CPU_COUNT=4 (Python 3.13) it starts 8 workers"),
    ("tiangolo/uvicorn-gunicorn-fastapi:latest", [], "(the tag names no Python version)"),
])
def test_uvicorn_gunicorn_image_workers_from_the_cpu_count(image, env, part):
    c = {"name": "api", "image": image, "env": env, "resources": res()}
    p, out, after = run(c, {"threadsEnv": "OMP_NUM_THREADS,PYTHON_CPU_COUNT"})
    warns = [m for m in messages(out, "warning") if "gunicorn_conf.py" in m]
    assert len(warns) == 1 and part in warns[0], warns


@pytest.mark.parametrize("image, warned", [
    ("mcr.microsoft.com/onnxruntime/server:v1.28.0", True),     # reads no thread env var
    ("registry.example/onnxruntime-app:1.29.0", False),          # ORT_INTRA_OP_NUM_THREADS
    ("mcr.microsoft.com/onnxruntime/server:latest", True),       # unknown version
])
def test_onnxruntime_intra_op_env_by_release(image, warned):
    c = {"name": "ort", "image": image, "resources": res()}
    p, out, after = run(c)
    assert env_of(after)["ORT_INTRA_OP_NUM_THREADS"] == "4"
    assert bool([m for m in messages(out, "warning") if "runs ONNX Runtime" in m]) == warned


@pytest.mark.parametrize("args, warned", [
    (["serve.py"], True),
    (["--disable-numactl", "--disable_taskset", "serve.py"], False),
])
def test_xeon_launcher_binding_to_node_core_ids_is_warned(args, warned):
    c = {"name": "c", "image": "x:1", "command": ["ipexrun", *args], "resources": res("8")}
    p, out, after = run(c, {"threadsPerCoreMode": "engine-default"})
    assert env_of(after)["OMP_NUM_THREADS"] == "4"          # physical cores by default
    assert bool([m for m in messages(out, "warning") if "Xeon launcher" in m]) == warned


# -- vLLM --config (hostile test): options from a file the manifest does not hold -----------


def test_vllm_config_file_leaves_the_rank_count_unknown():
    """FlexibleArgumentParser reads `--config FILE` (the command line wins): a size it may
    set is not known, so the thread vars are not divided, with a warning at the flag."""
    p, out, c = run({"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.12.0",
                     "args": ["vllm", "serve", "m", "--config", "/cfg/v.yaml"],
                     "resources": res("8", "16Gi")})
    assert p.returncode == 0
    assert env_of(c)["OMP_NUM_THREADS"] == "8"
    [w] = [r for r in results(out, "warning") if "--config" in r["message"]]
    assert w["field"]["path"] == "spec.containers[0].args[4]"
    assert w["message"] == (
        "container 'vllm': vLLM --config /cfg/v.yaml: vLLM reads its options from that file "
        "too (FlexibleArgumentParser; the command line wins), so its tensor, pipeline and "
        "data-parallel sizes, the rank processes that share the pinned CPUs, are not known "
        "from the manifest and the thread vars are not divided by them (8 per rank, each "
        "keeps it): write the sizes on the command line (--tensor-parallel-size, "
        "--pipeline-parallel-size, --data-parallel-size)")


def test_vllm_config_file_with_every_size_on_the_command_line_is_read():
    sizes = ["-tp", "2", "-pp", "1", "-dp", "1"]
    p, out, c = run({"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.12.0",
                     "args": ["vllm", "serve", "m", "--config=/cfg/v.yaml", *sizes],
                     "resources": res("8", "16Gi")})
    _, _, alone = run({"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.12.0",
                       "args": ["vllm", "serve", "m", *sizes], "resources": res("8", "16Gi")})
    assert p.returncode == 0
    assert env_of(c)["OMP_NUM_THREADS"] == env_of(alone)["OMP_NUM_THREADS"] == "3"
    assert not [m for m in messages(out, "warning") if "--config" in m]


# -- envFrom: the env a ConfigMap of the input gives (hostile test) --------------------------


def _tgi_with_env_from(env_from: list, env: list | None = None, cm_namespace: str = "s"):
    tgi = {"name": "tgi",
           "image": "ghcr.io/huggingface/text-generation-inference:3.3.4-intel-cpu",
           "args": ["--model-id", "m"], "envFrom": env_from, "resources": res("8", "16Gi")}
    if env is not None:
        tgi["env"] = env
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "tgi", "namespace": cm_namespace},
         "data": {"NUM_SHARD": "2", "LOG_LEVEL": "info"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "s"},
         "spec": {"containers": [tgi]}}],
        "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"},
                           "data": {"threadsEnv": "OMP_NUM_THREADS",
                                    "threadsPerCoreMode": "logical"}}}
    p = run_cli([], json.dumps(doc))
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    return out, item(out, "Pod", "p")["spec"]["containers"][0]


@pytest.mark.parametrize("env_from, env, cm_namespace, threads, path", [
    # NUM_SHARD from the ConfigMap: 2 shard processes share the 8 CPUs
    ([{"configMapRef": {"name": "tgi"}}], None, "s", "4", "spec.containers[0].envFrom[0]"),
    ([{"configMapRef": {"name": "x"}}, {"configMapRef": {"name": "tgi"}}], None, "s", "4",
     "spec.containers[0].envFrom[1]"),
    # env wins over envFrom (makeEnvironmentVariables)
    ([{"configMapRef": {"name": "tgi"}}], [{"name": "NUM_SHARD", "value": "1"}], "s", "8",
     None),
    # a prefix renames the key; a ConfigMap of another namespace is not the pod's
    ([{"configMapRef": {"name": "tgi"}, "prefix": "TGI_"}], None, "s", "8", None),
    ([{"configMapRef": {"name": "tgi"}}], None, "other", "8", None),
])
def test_worker_counts_from_env_from_a_configmap_of_the_input(env_from, env, cm_namespace,
                                                             threads, path):
    out, c = _tgi_with_env_from(env_from, env, cm_namespace)
    assert env_of(c)["OMP_NUM_THREADS"] == threads
    workers = [r["field"]["path"] for r in results(out, "warning")
               if "runs 2 worker processes (TGI NUM_SHARD=2)" in r["message"]]
    assert workers == ([path] if path else [])


def test_a_thread_var_that_refers_to_another_env_var_is_read_as_the_kubelet_expands_it():
    """`value: $(T)` is the value of T before it (makeEnvironmentVariables expands env
    values): 64 is replaced with a warning, 2 is kept (keep-lower), an unknown reference
    stays literal to the kubelet and is left alone (hostile test: `$(T)` was called not a
    whole number)."""
    p, out, c = run({"name": "app", "image": "x:1", "resources": res("8", "16Gi"), "env": [
        {"name": "T", "value": "64"}, {"name": "OMP_NUM_THREADS", "value": "$(T)"}]})
    assert env_of(c)["OMP_NUM_THREADS"] == "8"
    assert messages(out, "warning") == [
        "container 'app': OMP_NUM_THREADS $(T) (= 64) -> 8: $(T) (= 64) is more threads than "
        "the 8 pinned CPUs and would oversubscribe them"]
    p, out, c = run({"name": "app", "image": "x:1", "resources": res("8", "16Gi"), "env": [
        {"name": "T", "value": "2"}, {"name": "OMP_NUM_THREADS", "value": "$(T)"}]})
    assert env_of(c)["OMP_NUM_THREADS"] == "$(T)" and messages(out, "warning") == []
    p, out, c = run({"name": "app", "image": "x:1", "resources": res("8", "16Gi"), "env": [
        {"name": "OMP_NUM_THREADS", "value": "$(T)"}, {"name": "T", "value": "2"}]})
    assert env_of(c)["OMP_NUM_THREADS"] == "$(T)"
    assert [m.split(" is not")[0] for m in messages(out, "warning")] == [
        "container 'app': OMP_NUM_THREADS='$(T)'"]


@pytest.mark.parametrize("script, env", [
    ("exec vllm serve m --tensor-parallel-size $TP", [{"name": "TP", "value": "2"}]),
    ("TP=2; exec vllm serve m --tensor-parallel-size ${TP}", []),
])
def test_a_rank_count_the_script_expands_is_read_as_its_value(script, env):
    """Hostile test: `-tp $TP` with env TP=2 in a `bash -c` script was "not a whole number":
    the thread vars were not divided among the 2 ranks."""
    literal = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.11.1", "resources": res("8"),
               "command": ["bash", "-c", "exec vllm serve m --tensor-parallel-size 2"]}
    c = dict(literal, command=["bash", "-c", script], env=env)
    want = env_of(run(literal)[2])["OMP_NUM_THREADS"]
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == want == "3"     # (8 - 2 kept) / 2 ranks
    assert not [m for m in messages(out, "warning") if "not a whole number" in m]


def test_a_worker_count_the_script_expands_is_read_as_its_value():
    c = {"name": "web", "image": "python:3.12", "resources": res("8"),
         "command": ["sh", "-c", "exec gunicorn -w $WORKERS app:app"],
         "env": [{"name": "WORKERS", "value": "4"}]}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == "2"
    assert not [m for m in messages(out, "warning") if "not a whole number" in m]


# -- llama-cpp-python's server -----------------------------------------------------------------

_LCP = "registry.example.com/llama-cpp-python:0.3.36"


@pytest.mark.parametrize("container", [
    {"image": _LCP, "command": ["python3", "-m", "llama_cpp.server", "--model", "/m.gguf"]},
    {"image": _LCP, "command": ["uvicorn", "--factory", "llama_cpp.server.app:create_app"]},
    {"image": "ghcr.io/abetlen/llama-cpp-python:v0.3.36"},
    {"image": _LCP, "command": ["sh", "-c", "exec python -m llama_cpp.server --model /m"]},
])
def test_llama_cpp_python_is_recognised(container):
    assert "llama-cpp-python server" in [e.name for e in engines.detect(view(container))]


@pytest.mark.parametrize("args, env, warned", [
    # its defaults are the node's CPUs / 2 and all of them: both env vars set
    ([], {"N_THREADS": "4", "N_THREADS_BATCH": "4"}, []),
    # an option wins over its env var: kept, the other var set
    (["--n_threads", "2"], {"N_THREADS_BATCH": "4"}, []),
    (["--n_threads=16"], {"N_THREADS_BATCH": "4"},
     ["container 'llm': llama-cpp-python server --n_threads=16 asks for more threads than "
      "the 4 pinned CPUs and wins over N_THREADS; set it to 4"]),
    (["--n_threads_batch", "-1"], {"N_THREADS": "4"},
     ["container 'llm': llama-cpp-python server --n_threads_batch -1 means multiprocessing."
      "cpu_count(), every CPU of the node (on Python 3.13 and later PYTHON_CPU_COUNT when "
      "set) rather than the 4 pinned CPUs; it wins over N_THREADS_BATCH: set it to 4 "
      "(https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/server/"
      "settings.py)"]),
])
def test_llama_cpp_python_threads(args, env, warned):
    c = {"name": "llm", "image": _LCP, "resources": res(),
         "command": ["python3", "-m", "llama_cpp.server", "--model", "/m.gguf", *args]}
    p, out, after = run(c)
    assert p.returncode == 0
    got = env_of(after)
    assert {k: got[k] for k in ("N_THREADS", "N_THREADS_BATCH") if k in got} == env
    assert messages(out, "warning") == warned


@pytest.mark.parametrize("args, written, refused", [
    (["--n_thread", "4"], "--n_thread",
     "ambiguous option: --n_thread could match --n_threads, --n_threads_batch"),
    (["--n-threads", "4"], "--n-threads", "unrecognized arguments: --n-threads (its options "
                                          "are written with `_`, as the settings' fields)"),
    (["--n_threads", "0"], "--n_threads 0",
     "the settings refuse n_threads=0 (it must be at least 1, or -1)"),
    (["--n_threads", "4.0"], "--n_threads 4.0", "argument --n_threads: invalid int value: '4.0'"),
    (["--n_threads"], "--n_threads", "argument --n_threads: expected one argument"),
])
def test_llama_cpp_python_thread_options_it_stops_on_are_errors(args, written, refused):
    c = {"name": "llm", "image": _LCP, "resources": res(),
         "command": ["python3", "-m", "llama_cpp.server", "--model", "/m.gguf", *args]}
    p, out, after = run(c)
    assert p.returncode == 1
    assert [m for m in messages(out, "error") if "stops at start-up" in m] == [
        f"container 'llm': llama-cpp-python's server stops at start-up on {written} "
        f"({refused}; its argparse options are read by cli.py add_args_from_model): write "
        f"--n_threads 4 (https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/"
        f"server/cli.py)"]


def test_llama_cpp_python_config_file_is_warned_and_env_still_set():
    c = {"name": "llm", "image": _LCP, "resources": res(),
         "command": ["python3", "-m", "llama_cpp.server", "--config_file", "/etc/m.json",
                     "--n_threads", "2"]}
    p, out, after = run(c)
    assert {k: v for k, v in env_of(after).items() if k.startswith("N_")} == {
        "N_THREADS": "4", "N_THREADS_BATCH": "4"}
    assert [m for m in messages(out, "warning") if "config file" in m] == [
        "container 'llm': llama-cpp-python's server reads its models' settings from a config "
        "file (--config_file or CONFIG_FILE): the command line's thread options are then not "
        "read, and a model's n_threads or n_threads_batch in the file wins over N_THREADS and "
        "N_THREADS_BATCH (set to 4); leave them out of the file or set them to 4 "
        "(https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/server/"
        "__main__.py)"]


@pytest.mark.parametrize("word", ["--config", "--co", "--config_file=/etc/m.yaml"])
def test_llama_cpp_python_config_file_abbreviated_is_a_config_file(word):
    """Hostile test: argparse reads `--config` as --config_file (allow_abbrev), so the
    command line's --n_threads is not read: N_THREADS must be set and the file warned."""
    args = [word] if "=" in word else [word, "/etc/m.yaml"]
    c = {"name": "llm", "image": _LCP, "resources": res(),
         "command": ["python3", "-m", "llama_cpp.server", *args, "--n_threads", "2"]}
    p, out, after = run(c)
    assert env_of(after)["N_THREADS"] == "4"
    assert [m for m in messages(out, "warning") if "config file" in m]


@pytest.mark.parametrize("env, path, message", [
    ([{"name": "N_THREADS", "value": "-1"}], "spec.containers[0].env[0].value",
     "container 'llm': llama-cpp-python's server stops at start-up on N_THREADS=-1 (its "
     "settings need a whole number of at least 1; -1 is read only on the command line): "
     "set it to 4 (https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/"
     "server/settings.py)"),
    ([{"name": "N_THREADS_BATCH", "value": ""}], "spec.containers[0].env[0].value",
     "container 'llm': llama-cpp-python's server stops at start-up on N_THREADS_BATCH='' "
     "(its settings need a whole number of at least 0; -1 is read only on the command "
     "line): set it to 4 (https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/"
     "llama_cpp/server/settings.py)"),
    ([{"name": "n_threads", "value": "16"}], "spec.containers[0].env[0].name",
     "container 'llm': n_threads and N_THREADS are one setting to llama-cpp-python's server "
     "(pydantic-settings reads env names without case), and which value it takes depends "
     "on the order of the process environment: remove n_threads (https://github.com/"
     "abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/server/settings.py)"),
])
def test_llama_cpp_python_env_it_cannot_read_alike_is_an_error(env, path, message):
    """Hostile test: N_THREADS=-1 (a string, which the settings' -1 check does not see)
    stops the server, and a lower-case n_threads beside krm-fn's N_THREADS made the count
    depend on the environment's order; both passed with exit 0."""
    c = {"name": "llm", "image": _LCP, "resources": res(), "env": env,
         "command": ["python3", "-m", "llama_cpp.server", "--model", "/m.gguf"]}
    p, out, after = run(c)
    assert p.returncode == 1
    assert [(r["field"]["path"], r["message"]) for r in out["results"]
            if r["severity"] == "error" and "left unchanged" not in r["message"]] == [
        (path, message)]


@pytest.mark.parametrize("container", [
    {"image": "registry.example.com/bench-client:1",
     "command": ["python3", "/app/bench.py", "--target", "llama_cpp.server"]},
    {"image": "x:1", "command": ["sh", "-c", "pip show llama_cpp.server; exec python3 -m "
                                             "http.server"]},
])
def test_llama_cpp_python_is_not_recognised_from_a_mention(container):
    assert "llama-cpp-python server" not in [e.name for e in engines.detect(view(container))]
