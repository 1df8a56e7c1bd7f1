"""Thread and worker counts from hostile testing against the engines' own code (the
fault, the engine source that decides it, and the value krm-fn must write), one test per
kind of fault. Inputs are one 8-CPU Pod with the defaults (2 threads per core)."""
from __future__ import annotations

import json

import pytest

from tests.helpers import item, load, results, run_cli

RES8 = {"requests": {"cpu": "8", "memory": "16Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}}


def _run(container: dict):
    """(exit code, the container as written, the messages by severity)."""
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "s", "resources": RES8, **container}]}}]}
    p = run_cli([], json.dumps(rl))
    out = load(p.stdout)
    said = {sev: [r["message"] for r in results(out, sev)]
            for sev in ("error", "warning", "info")}
    return p.returncode, item(out, "Pod", "p")["spec"]["containers"][0], said


def _env(c: dict) -> dict:
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def test_a_zero_thread_count_is_replaced_not_kept_as_lower():
    # llama.cpp's -t handler maps a value <= 0 to std::thread::hardware_concurrency()
    # (common/arg.cpp), and the env var goes through the same handler; an OpenMP runtime
    # ignores 0 as invalid: neither is a lower count
    code, c, said = _run({"image": "ghcr.io/ggml-org/llama.cpp:server-b6000",
                          "args": ["-m", "/m.gguf"],
                          "env": [{"name": "LLAMA_ARG_THREADS", "value": "0"},
                                  {"name": "OMP_NUM_THREADS", "value": "0"}]})
    assert code == 0
    assert _env(c)["LLAMA_ARG_THREADS"] == "4" and _env(c)["OMP_NUM_THREADS"] == "4"
    assert [m for m in said["warning"] if "0 is no thread count" in m] == [
        "container 's': OMP_NUM_THREADS 0 -> 4: 0 is no thread count: the runtime picks its "
        "own then (llama.cpp every CPU of the node, std::thread::hardware_concurrency(); an "
        "OpenMP runtime ignores 0 as invalid), not the 8 pinned CPUs as 4 physical cores (2 "
        "threads per core), since llama.cpp runs one thread per physical core by itself",
        "container 's': LLAMA_ARG_THREADS 0 -> 4: 0 is no thread count: the runtime picks "
        "its own then (llama.cpp every CPU of the node, std::thread::hardware_concurrency(); "
        "an OpenMP runtime ignores 0 as invalid), not llama.cpp: the 8 pinned CPUs as 4 "
        "physical cores (2 threads per core), since llama.cpp runs one thread per physical "
        "core by itself"]


def test_java_options_env_wins_over_java_tool_options_and_is_warned():
    # HotSpot reads _JAVA_OPTIONS after JAVA_TOOL_OPTIONS and the command line
    # (arguments.cpp parse_vm_init_args): its count is the JVM's
    code, c, said = _run({"image": "eclipse-temurin:21-jre", "command": ["java", "-jar", "/a"],
                          "env": [{"name": "_JAVA_OPTIONS",
                                   "value": "-XX:ActiveProcessorCount=64"}]})
    assert code == 0
    assert _env(c)["JAVA_TOOL_OPTIONS"] == "-XX:ActiveProcessorCount=8"
    assert ("container 's': -XX:ActiveProcessorCount=64 in env _JAVA_OPTIONS comes after "
            "JAVA_TOOL_OPTIONS on the JVM command line and wins; set it to 8 or remove it"
            in said["warning"])


LLAMA = "ghcr.io/ggml-org/llama.cpp:server-b6000"


def test_llama_threads_from_a_downward_api_variable_are_its_value():
    # the kubelet expands $(CPUS) from the resourceFieldRef (ceil(limits.cpu / divisor) = 8)
    # before llama-server reads it: 8 threads, above the 4 physical cores, not a start-up
    # failure
    code, c, said = _run({"image": LLAMA, "args": ["-m", "/m.gguf", "--threads", "$(CPUS)"],
                          "env": [{"name": "CPUS", "valueFrom": {"resourceFieldRef": {
                              "resource": "limits.cpu", "divisor": "1"}}}]})
    assert code == 0 and said["error"] == []
    assert "LLAMA_ARG_THREADS" not in _env(c)           # the arg wins over it
    assert [m for m in said["warning"] if "llama.cpp --threads" in m] == [
        "container 's': llama.cpp --threads 8 asks for more threads than the 8 pinned CPUs "
        "as 4 physical cores (2 threads per core), since llama.cpp runs one thread per "
        "physical core by itself and wins over LLAMA_ARG_THREADS; set it to 4"]


def test_llama_threads_the_shell_expands_are_read_or_said_unknown():
    # the shell expands $THREADS from the env (4: as many as the physical cores) and
    # $(nproc) when the container starts: neither stops llama-server
    code, _, said = _run({"image": LLAMA, "command": ["sh", "-c"],
                          "args": ["exec llama-server -m /m.gguf --threads $THREADS"],
                          "env": [{"name": "THREADS", "value": "4"}]})
    assert code == 0 and said["error"] == []
    assert not [m for m in said["warning"] if "llama.cpp" in m]
    code, _, said = _run({"image": LLAMA, "command": [
        "sh", "-c", "exec llama-server -m /m.gguf -t $(nproc)"]})
    assert code == 0 and said["error"] == []
    assert [m for m in said["warning"] if "llama.cpp -t" in m] == [
        "container 's': llama.cpp -t $(nproc) is only known when the container starts, so "
        "krm-fn cannot check it against the 8 pinned CPUs as 4 physical cores (2 threads per "
        "core), since llama.cpp runs one thread per physical core by itself; it wins over "
        "LLAMA_ARG_THREADS: make sure it is at most 4"]


def test_another_commands_flags_in_a_script_are_not_the_servers():
    # `ls -t` and `curl -w` are not llama-server's -t or gunicorn's -w
    code, c, said = _run({"image": LLAMA, "command": [
        "sh", "-c", 'M=$(ls -t /models/*.gguf | head -n1); exec llama-server -m "$M"']})
    assert code == 0 and said["error"] == [] and _env(c)["LLAMA_ARG_THREADS"] == "4"
    code, c, said = _run({"image": "python:3.12", "command": [
        "sh", "-c", 'until curl -s -o /dev/null -w "%{http_code}" http://store/ready | grep '
                    '-q 200; do sleep 2; done; exec gunicorn -b 0.0.0.0:8000 app:app'],
        "env": [{"name": "WEB_CONCURRENCY", "value": "2"}]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "4"      # 8 CPUs / 2 workers
    assert not [m for m in said["warning"] if "http_code" in m]


def _omp_why(said_info: list) -> str:
    return next(m for m in said_info if m.startswith("container 's': OMP_NUM_THREADS, MKL"))


def test_vllm_abbreviated_tensor_parallel_flag_is_read():
    # argparse takes `--tensor-parallel` for --tensor-parallel-size (allow_abbrev); on
    # 0.10.2 rank 1 reads the second entry of VLLM_CPU_OMP_THREADS_BIND (cpu_worker.py)
    _, c, said = _run({"image": "vllm/vllm-openai-cpu:v0.10.2",
                       "args": ["serve", "m", "--tensor-parallel", "2"]})
    info = said["info"]
    assert _env(c)["VLLM_CPU_OMP_THREADS_BIND"] == "all|all"
    assert _env(c)["OMP_NUM_THREADS"] == "1"
    assert "divided by 2 worker processes (vLLM --tensor-parallel-size 2)" in _omp_why(info)


def test_vllm_ranks_over_nnodes():
    # ParallelConfig.local_world_size = world_size // nnodes (v0.11.1, one data-parallel
    # rank): --nnodes 1 runs every rank here, -n 2 half of them
    _, _, said = _run({"image": "vllm/vllm-openai-cpu:v0.11.1",
                       "args": ["serve", "m", "-tp", "2", "--nnodes", "1"]})
    assert "divided by 2 worker processes (vLLM -tp 2)" in _omp_why(said["info"])
    _, _, said = _run({"image": "vllm/vllm-openai-cpu:v0.11.1",
                       "args": ["serve", "m", "-tp", "4", "-n", "2", "--node-rank", "0"]})
    assert "divided by 2 worker processes (vLLM -tp 4 on one of 2 nodes)" in _omp_why(
        said["info"])


def test_fastapi_run_workers_from_web_concurrency():
    # fastapi-cli 0.0.16 cli.py `run` passes workers=None to uvicorn.run; uvicorn 0.38.0
    # Config then takes WEB_CONCURRENCY: 4 processes share the 8 CPUs
    code, c, _ = _run({"image": "python:3.12", "command": [
        "fastapi", "run", "app/main.py", "--port", "8000"],
        "env": [{"name": "WEB_CONCURRENCY", "value": "4"}]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "2"
    code, c, _ = _run({"image": "python:3.12", "command": [
        "fastapi", "run", "app/main.py", "--workers", "2"],
        "env": [{"name": "WEB_CONCURRENCY", "value": "4"}]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "4"     # --workers wins


def test_uvicorn_gunicorn_image_workers_from_gunicorn_cmd_args():
    # the image runs `gunicorn -c gunicorn_conf.py` (docker-images/start.sh); gunicorn reads
    # GUNICORN_CMD_ARGS after the config file that reads WEB_CONCURRENCY (app/base.py)
    code, c, said = _run({"image": "tiangolo/uvicorn-gunicorn-fastapi:python3.11",
                          "env": [{"name": "GUNICORN_CMD_ARGS", "value": "--workers 4"},
                                  {"name": "WEB_CONCURRENCY", "value": "1"}]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "2"
    assert not [m for m in said["warning"] if "set env WEB_CONCURRENCY" in m]


def test_llama_cpp_full_image_is_llama_server():
    # the :full image's entrypoint .devops/tools.sh execs llama-server for --server
    code, c, _ = _run({"image": "ghcr.io/ggml-org/llama.cpp:full-b6000",
                       "args": ["--server", "-m", "/models/m.gguf", "--host", "0.0.0.0"]})
    assert code == 0 and _env(c)["LLAMA_ARG_THREADS"] == "4"


def test_xeon_launcher_instances_share_the_cores():
    # run_cpu.py launch starts --ninstances processes, each keeping the OMP_NUM_THREADS set
    code, c, _ = _run({"image": "intel/intel-extension-for-pytorch:2.5.0-pip-base",
                       "command": ["ipexrun", "--ninstances", "2", "--disable-numactl",
                                   "--disable-taskset", "serve.py"]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "2"     # 4 physical cores / 2


_XEON = "intel/intel-extension-for-pytorch:2.5.0-pip-base"
_OFF = ["--disable-numactl", "--disable-taskset"]


@pytest.mark.parametrize("launcher, threads", [
    # --rank launches that one instance only (run_cpu.py launch: `if args.rank != -1: break`)
    (["--ninstances", "2", "--rank", "0"], "4"),
    # argparse takes an unambiguous prefix of a long option (allow_abbrev)
    (["--ninst", "2"], "2"),
    # --core-list with --ncores-per-instance: one instance per that many listed cores
    (["--core-list", "0,1,2,3", "--ncores-per-instance", "2"], "2"),
    # the program's own --ninstances is not the launcher's
    (["--ninstances=2"] + _OFF + ["serve.py", "--ninstances", "8"], "2"),
])
def test_xeon_launcher_instances_as_its_parser_reads_them(launcher, threads):
    cmd = ["ipexrun", *launcher] + ([] if "serve.py" in launcher else _OFF + ["serve.py"])
    code, c, _ = _run({"image": _XEON, "command": cmd})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == threads


@pytest.mark.parametrize("launcher, what", [
    (["--ncores-per-instance", "2"], "--ncores-per-instance 2"),
    (["--latency-mode"], "--latency-mode"),
    (["--throughput-mode"], "--throughput-mode"),
    (["--multi-instance"], "--multi-instance"),
])
def test_xeon_launcher_instances_counted_from_the_node_are_warned(launcher, what):
    # hostile testing: the launcher counts these from the node's physical cores (or NUMA
    # nodes), not the container's cpuset (run_cpu.py launch: get_all_physical_cores,
    # node_nums), and each instance keeps the OMP_NUM_THREADS set: nothing was said
    code, c, said = _run({"image": _XEON, "command": ["ipexrun", *launcher, *_OFF,
                                                      "serve.py"]})
    assert code == 0 and _env(c)["OMP_NUM_THREADS"] == "4"
    assert [m for m in said["warning"] if "counts its instances" in m] == [
        f"container 's': Intel Xeon launcher {what} counts its instances from the node's "
        f"cores, not the container's 8 CPUs, so their number is not known from the manifest "
        f"and the thread vars are not divided by it (4 per instance, each keeps it): write "
        f"--ninstances N (with --ncores-per-instance), N × threads within the pinned CPUs "
        f"(torch/backends/xeon/run_cpu.py launch)"]


@pytest.mark.parametrize("written", ["-1", "0"])
def test_jvm_active_processor_count_of_0_or_less_means_detect(written):
    # hostile testing: -XX:ActiveProcessorCount is an int flag whose default -1 (and any
    # value <= 0) makes the JVM detect the count (hotspot globals.hpp; os::active_processor_
    # count uses it only when > 0); it was called "not a whole number: the JVM refuses"
    code, c, said = _run({"image": "eclipse-temurin:21-jre", "env": [
        {"name": "JAVA_TOOL_OPTIONS", "value": f"-Xmx1g -XX:ActiveProcessorCount={written}"}]})
    assert code == 0 and _env(c)["JAVA_TOOL_OPTIONS"] == "-Xmx1g -XX:ActiveProcessorCount=8"
    assert not [m for m in said["warning"] if "refuses to start" in m]
    code, c, said = _run({"image": "eclipse-temurin:21-jre", "command": [
        "java", f"-XX:ActiveProcessorCount={written}", "-jar", "app.jar"]})
    assert [m for m in said["warning"] if "ActiveProcessorCount" in m] == [
        f"container 's': -XX:ActiveProcessorCount={written} in the command line comes after "
        f"JAVA_TOOL_OPTIONS on the JVM command line and wins (a count of 0 or less: the JVM "
        f"detects the processors itself); set it to 8 or remove it"]


def test_openvino_plugin_config_in_a_shell_script_is_read():
    # hostile testing: --plugin_config was read from exec-form entries only, so the 64 in a
    # `sh -c` script was not seen and the warning asked to add the property it already set
    code, c, said = _run({"image": "openvino/model_server:2024.4", "command": [
        "sh", "-c", "exec /ovms/bin/ovms --model_path /m --model_name m --port 9000 "
                    "--plugin_config '{\"INFERENCE_NUM_THREADS\": 64}'"]})
    assert [m for m in said["warning"] if "OpenVINO" in m] == [
        "container 's': OpenVINO Model Server --plugin_config INFERENCE_NUM_THREADS=64 is more "
        "threads than the 8 pinned CPUs as 4 physical cores (2 threads per core), since "
        "OpenVINO Model Server runs one thread per physical core by itself; set it to 4"]


def test_the_worker_oom_warning_says_not_set_for_a_missing_memory_limit():
    # newcomer trial: "make resources.limits.memory (None) cover all 2 workers"
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "s", "image": "x:1",
                                              "args": ["--workers", "2"],
                                              "resources": {"requests": {"cpu": "8"}}}]}}]}
    p = run_cli([], json.dumps(rl))
    said = [r["message"] for r in results(load(p.stdout), "warning")]
    assert not [m for m in said if "(None)" in m], said
    assert [m for m in said if "memory (not set) cover all 2" in m], said


@pytest.mark.parametrize("command, warned", [
    (["java", "-jar", "/app.jar", "-XX:ActiveProcessorCount=16"], False),
    (["java", "-cp", "/app", "Main", "-XX:ActiveProcessorCount=16"], False),
    (["java", "-m", "app/app.Main", "-XX:ActiveProcessorCount=16"], False),
    (["java", "-cp", "/app", "-XX:ActiveProcessorCount=16", "Main"], True),
    (["/opt/java/bin/java", "-XX:ActiveProcessorCount=16", "-jar", "/app.jar"], True),
    (["sh", "-c", "exec java -jar /app.jar -XX:ActiveProcessorCount=16"], False),
    # the second java of a script runs the server; an argfile is read in place
    (["sh", "-c", "java -version && exec java -XX:ActiveProcessorCount=16 -jar /app.jar"],
     True),
    (["java", "@/etc/jvm.opts", "-XX:ActiveProcessorCount=16", "-jar", "/app.jar"], True),
])
def test_jvm_options_end_at_the_main_class_or_jar(command, warned):
    """Hostile test: `java -jar /app.jar -XX:ActiveProcessorCount=16` was warned about,
    though after -jar <file> (or the main class, or -m <module>) the words are the
    application's arguments, not the JVM's options (java -help)."""
    code, c, said = _run({"image": "eclipse-temurin:21-jre", "command": command})
    assert bool([m for m in said["warning"] if "ActiveProcessorCount=16" in m]) == warned
