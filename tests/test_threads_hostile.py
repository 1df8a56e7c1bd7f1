"""Thread and worker counts from hostile testing against the engines' own code (the
fault, the engine source that decides it, and the value krm-fn must write), one test per
kind of fault. Inputs are one 8-CPU Pod with the defaults (2 threads per core)."""
from __future__ import annotations

import json

from tests.helpers import item, load, results, run_cli

RES8 = {"requests": {"cpu": "8", "memory": "16Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}}


def _run(container: dict):
    """(exit code, the container as written, the messages by severity)."""
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "s", "resources": RES8, **container}]}}]}
    p = run_cli([], json.dumps(rl))
    out = load(p.stdout)
    said = {sev: [r["message"] for r in results(out, sev)] for sev in ("error", "warning")}
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
