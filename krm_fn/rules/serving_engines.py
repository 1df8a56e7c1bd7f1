"""engines: what each serving engine really reads, set from the pinned CPU count.

The generic thread variables (threads rule) do not bound every runtime: vLLM's CPU backend
binds its own OpenMP threads, llama.cpp and Triton's ONNX Runtime backend take flags, ONNX
Runtime reads no env var at all, TorchServe and gunicorn/uvicorn run one pool per worker
process, Ray sets the count per worker, a JVM sizes its pools from `availableProcessors()`.
With `threads.engines` on (the default) each container that gets thread env (whole CPUs,
or pinned and kept fractional) is matched against the engine registry — data, one module
per engine in krm_fn/rules/engines/: engine -> image / command+args patterns -> what is
set, with the upstream documentation each follows — and gets what its engine reads. N is
the container's thread count (threads rule: CPUs minus `threads.reservedCpus`, divided by
the worker count).

- **vLLM CPU backend** (image `*vllm*-cpu*` such as
  `public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo`, `vllm/vllm-openai-cpu`, a vLLM image
  with a `cpu` tag; or `vllm serve` / `python -m vllm.entrypoints...` with `--device cpu`),
  by the release its image tag names (vLLM's source at each tag):
  `VLLM_CPU_OMP_THREADS_BIND` = the release's no-binding value unless set, so that
  `OMP_NUM_THREADS` decides the count whether or not the container ends up pinned (node
  policy not rolled out yet, pod not Guaranteed after admission-time injection): `nobind`
  from 0.11.1, `all` for 0.9.1 to 0.11.0 (their default `auto` binds one OpenMP thread per
  physical core of a whole NUMA node, filtered by the affinity mask), nothing before 0.9.1
  (the default `all` does not bind; before 0.5.4 the variable does not exist). A no-binding
  spelling the release does not accept (`nobind` before 0.11.1, `all` from 0.11.1, `auto`
  before 0.9.1: read as a CPU list, the worker fails to start) is replaced, with a warning.
  An image without a version tag (`latest`, a digest) gets nothing — no value but the
  default is accepted by every release — and a warning naming the better one. `auto` or a
  CPU list already set is left alone with a warning (a fixed list cannot match the cpuset
  the kubelet picks); `VLLM_CPU_NUM_OF_RESERVED_CPU` only works with `auto` and from 0.9.1
  (warning otherwise). `VLLM_CPU_KVCACHE_SPACE` (GiB) larger than the memory limit is an
  error; leaving less than 1Gi for weights, Python and `/dev/shm` a warning.
- **llama.cpp** (`llama-server` in command/args, image `ghcr.io/ggml-org/llama.cpp:server*`):
  `LLAMA_ARG_THREADS` = N, unless `--threads`/`-t` is in args, which wins over the env var
  (`--threads-batch`/`-tb` defaults to `-t` and has no env var); an arg above N is warned.
  By the build of the image tag (`server-b4321`): nothing before b3683 (the first build
  known to read the env var; warning naming `--threads N`), the env var and a warning when
  the tag names no build (krm_fn/rules/engines/llama_cpp.py).
- **TorchServe** (`torchserve` in command/args or image, KServe `pytorch`): each worker
  is a Python process with its own torch pool; with `TS_DEFAULT_WORKERS_PER_MODEL` = W the
  thread vars are N / W (threads rule), else a warning (TorchServe's default is one worker
  per CPU the JVM sees).
- **Triton** (`nvcr.io/nvidia/tritonserver`, `tritonserver`, KServe `triton`): the env
  vars reach the PyTorch and Python backends; warning that the ONNX Runtime backend needs
  `--backend-config=onnxruntime,intra_op_thread_count=N` unless args have it.
- **ONNX Runtime** (image or args mention `onnxruntime`, KServe `onnx`): ORT reads no
  thread env var (OMP only in OpenMP builds): the pod template gets the annotation
  `krm-fn.dev/threads: "N"` for the app to pass to `intra_op_num_threads` (downward API
  `metadata.annotations['krm-fn.dev/threads']`), and a warning — never reported as bound.
- **Ray** (`ray start` in command/args): no pod-wide thread vars (Ray sets
  `OMP_NUM_THREADS` per worker from its `num_cpus` when unset; a pod-wide value would give
  every worker the whole count); `ray start` must carry `--num-cpus` <= the CPUs (warning
  otherwise). KubeRay `rayStartParams` are not handled here.
- **JVM** (image of a JDK/JRE or a JVM server such as djl-serving, command `java`,
  `JAVA_TOOL_OPTIONS`/`JAVA_OPTS` present): `-XX:ActiveProcessorCount=N` appended to
  `JAVA_TOOL_OPTIONS` (never replacing its other options; an existing lower count is
  kept, a higher one lowered with a warning). N here is CPUs minus reservedCpus (a JVM is
  one process). A higher count in `JAVA_OPTS`, `JDK_JAVA_OPTIONS` or the command line wins
  over `JAVA_TOOL_OPTIONS`: warning. The option is added only when the image's JDK is known
  to have it (8u191+ or 10+ in the tag, or an `eclipse-temurin` image): an unknown -XX
  option stops the JVM ("Unrecognized VM option"), so an older or unknown JDK gets nothing
  and a warning (krm_fn/rules/engines/jvm.py).
- **Text Generation Inference** on CPU (`text-generation-inference:*-intel-cpu`): from
  2.3.0 its CPU path reads `OMP_NUM_THREADS` (default: the node's physical cores per
  rank); a warning when it is not among the thread vars. One thread per physical core is
  its default (`threads.perCore: engine-default`).
- **Intel Xeon launcher** (`ipexrun`, `intel_extension_for_pytorch.cpu.launch`,
  `torch.backends.xeon.run_cpu`): an `OMP_NUM_THREADS` already set wins over its count
  (by default the node's physical cores); it binds instances with numactl/taskset to the
  node's core ids: a warning unless `--disable-numactl --disable-taskset`.
- **Ollama** (image `ollama/ollama`, `ollama serve`): it reads no thread-count env var;
  `num_thread` (Modelfile `PARAMETER num_thread N` or request options) defaults to the
  node's physical cores: a warning naming it.
- **OpenVINO Model Server** (image `openvino/model_server`, `ovms`): OpenVINO reads no
  thread env var; `--plugin_config` must carry `INFERENCE_NUM_THREADS` (`CPU_THREADS_NUM`
  in the 2021 API, by the image tag's release) <= N: a warning otherwise.
- **uvicorn-gunicorn images** (`tiangolo/uvicorn-gunicorn*`): without `WEB_CONCURRENCY`
  their gunicorn_conf.py starts max(2, `WORKERS_PER_CORE` x `cpu_count()`) workers; the
  warning says whether `PYTHON_CPU_COUNT` can bound that for the image's Python (3.13+;
  the tag `python3.11` names an older one that ignores it).
- **Multi-worker servers** (gunicorn `--workers N`/`-w N`, uvicorn `--workers N`, their
  `WEB_CONCURRENCY`, hypercorn `--workers N`/`-w N`, any `--workers N` argument): thread vars divided by N (threads rule)
  and, from Kubernetes 1.28, a warning that on cgroup v2 one OOM kills the whole container
  (`memory.oom.group`), so the memory limit must cover every worker.

Without engine recognition, on every container that gets thread env:

- `GOMEMLIMIT` (when `threads.goMemLimitPercent` is set) = that percentage of the memory
  limit in bytes, never above it. Set on every such container, not only "Go" ones: a Go
  binary cannot be told from its image (distroless, any name), and nothing else reads
  the variable — the same reason `GOMAXPROCS` is in the default env list.
- `MALLOC_ARENA_MAX` (when `threads.mallocArenaMax` is set): glibc's default is 8 arenas
  per host CPU on 64-bit.

Existing values follow `threads.existing` (a lower one kept, a higher one replaced with a
warning); `valueFrom` and non-numbers are left alone with a warning. Every change is an
info result with its field path.
"""
from __future__ import annotations

from krm_fn.pod import PodView
from krm_fn.rules import engines
from krm_fn.rules.cmdline import env_ok

ID = "engines"
OPTIONS = ("workloads.threads.engines", "workloads.threads.perCore", "workloads.threads.bind",
           "workloads.threads.goMemLimitPercent",
           "workloads.threads.mallocArenaMax", "workloads.threads.existing",
           "workloads.threads.source", "kubernetesVersion")


def apply(pod: PodView, ctx) -> None:
    """Set what each recognised engine reads; see the module docstring. Engines and
    thread counts come from `ctx.facts` (krm_fn/rules/facts.py)."""
    on = ctx.cfg.workloads.threads.engines
    seen: dict = {}
    always = engines.always(ctx.cfg.workloads.threads)
    for c in pod.containers:
        f = ctx.facts[c.path]
        if f.count is None or not env_ok(c):
            continue  # a malformed env was reported by the threads rule
        if on:
            for engine in f.engines:
                if engine.check is not None:
                    engine.check(pod, c, f, ctx, seen)
            engines.WORKERS.check(pod, c, f, ctx, seen)
        for check in always:
            check(pod, c, f, ctx, seen)
