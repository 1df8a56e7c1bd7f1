"""Never crash on a value (issue #14, part 4): every number krm-fn reads from env, args and
annotations goes through krm_fn/numbers.py (ASCII digits, bounded). A table of hostile
values for every variable and argument the engines read, each with the exact result: the
value left alone and one warning naming it; and a property test: any string in any env
value of any container never produces an internal error."""
from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from krm_fn import numbers
from tests.helpers import results, run_fn

# Unicode digits of several scripts (superscript two, Arabic-Indic two, Devanagari four,
# fullwidth five), a 5,000-digit number, signs, fractions, hex and exponent forms
HOSTILE = ["²", "٢", "४", "５", "9" * 5000, "-1", "-0", "+4", "4.0", "0x4", "1e3", "4_0"]
# blanks: only in env values (an args entry is split into shell words)
BLANK = ["", "   ", "4 4", "\u00a04", "\t"]


def res(cpu: str = "4", memory: str = "8Gi") -> dict:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def run(container: dict, data: dict | None = None, items: list | None = None):
    """Render one Pod holding `container` (or `items`); returns (exit code, stderr, the
    output items, {field path: [warning messages]})."""
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
           "items": items or [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [container]}}],
           "functionConfig": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"},
                              "data": {"threadsEnv": "OMP_NUM_THREADS",
                                       "threadsPerCoreMode": "logical", **(data or {})}}}
    p = run_fn([], json.dumps(doc, ensure_ascii=False))
    out = yaml.safe_load(p.stdout) or {}
    warns: dict = {}
    for r in results(out):
        if r["severity"] == "warning":
            warns.setdefault(r["field"]["path"], []).append(r["message"])
    return p.returncode, p.stderr, out.get("items"), warns


def env(name: str, value: str) -> dict:
    return {"env": [{"name": name, "value": value}]}


def _not_whole(var: str, why: str):
    return lambda v: (f"container 'c': {var}={numbers.shown(v)} is not a whole number (ASCII "
                      f"digits) and is left alone; set it to 4 ({why})")


def _workers(what: str):
    return lambda v: (f"container 'c': the worker count {what}{numbers.brief(v)} is not a "
                      f"whole number (ASCII digits): left alone, and the thread vars are not "
                      f"divided by it (4 per worker); set a whole number of workers")


# name: (container fields, the value written in, path of the field holding it,
#        the exact warning for a value v, extra config)
ENV_CASES = {
    "OMP_NUM_THREADS": ({}, lambda v: env("OMP_NUM_THREADS", v), "env[0].value",
                        _not_whole("OMP_NUM_THREADS", "the 4 pinned CPUs"), None),
    "LLAMA_ARG_THREADS": ({"image": "ghcr.io/ggml-org/llama.cpp:server"},
                          lambda v: env("LLAMA_ARG_THREADS", v), "env[0].value",
                          _not_whole("LLAMA_ARG_THREADS", "llama.cpp: the 4 pinned CPUs"), None),
    "ORT_INTRA_OP_NUM_THREADS": ({"image": "registry.example/onnxruntime-app:1.29.0"},
                                 lambda v: env("ORT_INTRA_OP_NUM_THREADS", v), "env[0].value",
                                 _not_whole("ORT_INTRA_OP_NUM_THREADS",
                                            "ONNX Runtime 1.29+: the 4 pinned CPUs"), None),
    "MALLOC_ARENA_MAX": ({}, lambda v: env("MALLOC_ARENA_MAX", v), "env[0].value",
                         lambda v: (f"container 'c': MALLOC_ARENA_MAX={numbers.shown(v)} is not "
                                    f"a whole number (ASCII digits) and is left alone; set it "
                                    f"to 2 (spec.workloads.threads.mallocArenaMax; glibc's "
                                    f"default is 8 arenas per host CPU on 64-bit, each growing "
                                    f"its own heap)"), {"mallocArenaMax": "2"}),
    "WEB_CONCURRENCY": ({"command": ["uvicorn", "m:app"]}, lambda v: env("WEB_CONCURRENCY", v),
                        "env[0]", _workers("uvicorn WEB_CONCURRENCY="), None),
    "TS_DEFAULT_WORKERS_PER_MODEL": (
        {"image": "pytorch/torchserve:0.9.0-cpu"},
        lambda v: env("TS_DEFAULT_WORKERS_PER_MODEL", v), "env[0]",
        _workers("TorchServe TS_DEFAULT_WORKERS_PER_MODEL="), None),
    "NUM_SHARD": ({"image": "ghcr.io/huggingface/text-generation-inference:3.3.7-intel-cpu"},
                  lambda v: env("NUM_SHARD", v), "env[0]", _workers("TGI NUM_SHARD="), None),
    "PET_NPROC_PER_NODE": ({"command": ["torchrun", "s.py"]},
                           lambda v: env("PET_NPROC_PER_NODE", v), "env[0]",
                           _workers("torchrun PET_NPROC_PER_NODE="), None),
    "VLLM_CPU_KVCACHE_SPACE": (
        {"image": "vllm/vllm-openai-cpu:v0.9.1"}, lambda v: env("VLLM_CPU_KVCACHE_SPACE", v),
        "env[0].value",
        lambda v: (f"container 'c': VLLM_CPU_KVCACHE_SPACE={numbers.shown(v)} is not a whole "
                   f"number of GiB (ASCII digits), which vLLM reads it as, and is left alone; "
                   f"set a whole number"), None),
    "GOMEMLIMIT": ({}, lambda v: env("GOMEMLIMIT", v), "env[0].value",
                   lambda v: (f"container 'c': GOMEMLIMIT={numbers.shown(v)} is not a byte "
                              f"count krm-fn reads and is left alone; set it to 7730941132 "
                              f"(90% of the memory limit 8Gi)"), {"goMemLimitPercent": "90"}),
}

TOKEN_CASES = {
    "GUNICORN_CMD_ARGS --workers": (
        {"command": ["gunicorn", "a:b"]}, lambda v: env("GUNICORN_CMD_ARGS", "--workers=" + v),
        "env[0]", lambda v: _workers("gunicorn GUNICORN_CMD_ARGS=")("--workers=" + v), None),
    "gunicorn -w": ({}, lambda v: {"command": ["gunicorn", "-w", v, "a:b"]}, "command[2]",
                    lambda v: _workers("gunicorn ")("-w " + v), None),
    "hypercorn -w": ({}, lambda v: {"command": ["hypercorn", "-w", v, "m:app"]}, "command[2]",
                     lambda v: _workers("hypercorn ")("-w " + v), None),
    "uvicorn --workers": ({}, lambda v: {"command": ["uvicorn", "m:app", f"--workers={v}"]},
                          "command[2]", lambda v: _workers("uvicorn ")("--workers=" + v), None),
    "vLLM -tp": ({"image": "vllm/vllm-openai-cpu:v0.11.1"}, lambda v: {"args": ["-tp", v]},
                 "args[1]", lambda v: _workers("vLLM ")("-tp " + v), None),
    "TGI --num-shard": ({"image": "ghcr.io/huggingface/text-generation-inference:3.3.7-intel-cpu"},
                        lambda v: {"args": ["--num-shard", v]}, "args[1]",
                        lambda v: _workers("TGI ")("--num-shard " + v), None),
    "torchrun --nproc-per-node": ({}, lambda v: {"command": ["torchrun", f"--nproc-per-node={v}",
                                                             "s.py"]}, "command[1]",
                                  lambda v: _workers("torchrun ")("--nproc-per-node=" + v), None),
    "JAVA_TOOL_OPTIONS -XX:ActiveProcessorCount": (
        {"image": "eclipse-temurin:21"},
        lambda v: env("JAVA_TOOL_OPTIONS", "-XX:ActiveProcessorCount=" + v), "env[0].value",
        lambda v: (f"container 'c': JAVA_TOOL_OPTIONS -XX:ActiveProcessorCount="
                   f"{numbers.brief(v)} is not a whole number (ASCII digits) and is left "
                   f"alone; the JVM refuses to start with it: set -XX:ActiveProcessorCount=4"),
        None),
    "JAVA_OPTS -XX:ActiveProcessorCount": (
        {"image": "eclipse-temurin:21"},
        lambda v: env("JAVA_OPTS", "-XX:ActiveProcessorCount=" + v), "env[0].value",
        lambda v: (f"container 'c': -XX:ActiveProcessorCount={numbers.brief(v)} in env "
                   f"JAVA_OPTS comes after JAVA_TOOL_OPTIONS on the JVM command line and wins "
                   f"(and is not a whole number: the JVM refuses to start); set it to 4 or "
                   f"remove it"), None),
    "OVMS --plugin_config INFERENCE_NUM_THREADS": (
        {"image": "openvino/model_server:2024.4"},
        lambda v: {"args": ["--plugin_config", json.dumps({"INFERENCE_NUM_THREADS": v})]},
        "args[1]",
        lambda v: (f"container 'c': OpenVINO Model Server --plugin_config "
                   f"INFERENCE_NUM_THREADS={numbers.shown(v)} is not a whole number; set it "
                   f"to 4"), None),
    "ray start --num-cpus": (
        {}, lambda v: {"command": ["ray", "start", "--num-cpus", v]}, "command[3]",
        lambda v: (f"container 'c': ray start --num-cpus {numbers.brief(v)} is not a whole "
                   f"number (ASCII digits) and is left alone; set --num-cpus=4"), None),
    "Triton intra_op_thread_count": (
        {"image": "nvcr.io/nvidia/tritonserver:24.01-py3"},
        lambda v: {"args": ["--backend-config=onnxruntime,enable-global-threadpool=1",
                            f"--backend-config=onnxruntime,intra_op_thread_count={v}"]},
        "args[1]",
        lambda v: (f"container 'c': Triton onnxruntime,intra_op_thread_count="
                   f"{numbers.brief(v)} is not a whole number (ASCII digits) and is left "
                   f"alone; set it to 4"), None),
}

# -1 and -0 are whole numbers to the JVM's int flag: 0 or less means it detects the count
# (tests/test_threads_hostile.py test_jvm_active_processor_count_of_0_or_less_means_detect)
_JVM_INTS = {"-1", "-0"}
TABLE = ([(name, v) for name in ENV_CASES for v in HOSTILE + BLANK
          if not (name.endswith("-XX:ActiveProcessorCount") and v in _JVM_INTS)]
         + [("OVMS --plugin_config INFERENCE_NUM_THREADS", v) for v in BLANK]
         + [(name, v) for name in TOKEN_CASES for v in HOSTILE
            if not (name.endswith("-XX:ActiveProcessorCount") and v in _JVM_INTS)])


def _short(v: str) -> str:
    return numbers.shown(v, 12)


@pytest.mark.parametrize("name, value", TABLE, ids=[f"{n}={_short(v)}" for n, v in TABLE])
def test_hostile_value_is_left_alone_with_one_warning_naming_it(name, value):
    base, written, field, message, data = {**ENV_CASES, **TOKEN_CASES}[name]
    c = {"name": "c", "image": "x:1", "resources": res(), **base, **written(value)}
    code, stderr, items, warns = run(c, data)
    assert stderr == "" and code == 0
    after = items[0]["spec"]["containers"][0]
    for key in ("command", "args"):
        assert after.get(key) == c.get(key)
    if name == "JAVA_OPTS -XX:ActiveProcessorCount":   # JAVA_TOOL_OPTIONS gets the count
        c["env"] = c["env"][:1]
    for e in c.get("env", []):
        assert e in after["env"], e           # the entry is still there, value unchanged
    assert warns[f"spec.containers[0].{field}"] == [message(value)]


# llama.cpp -t is read as llama-server's parser reads it (common/arg.cpp: std::stoi on the
# next word; tests/engines/test_llama_args.py runs that parser): what it refuses stops the
# server (an error), what it reads in part is named with the number it reads
_LLAMA_STOP = ("container 'c': llama-server stops at start-up on {w} (std::stoi refuses {v!r}; "
               "its parser, common/arg.cpp, takes the value as the next word, read by "
               "std::stoi): write --threads 4 "
               "(https://github.com/ggml-org/llama.cpp/blob/b3683/common/arg.cpp)")
_LLAMA_ALL = ("container 'c': llama.cpp -t {v} is <= 0, which llama.cpp reads as "
              "std::thread::hardware_concurrency(), every CPU of the node rather than the 4 "
              "pinned CPUs; it wins over LLAMA_ARG_THREADS: set it to 4")
_LLAMA_PART = ("container 'c': llama.cpp -t {v} is read as {n}: std::stoi stops at {rest!r}; "
               "it wins over LLAMA_ARG_THREADS: set it to 4")
LLAMA_T = {"²": ("error", _LLAMA_STOP), "٢": ("error", _LLAMA_STOP),
           "४": ("error", _LLAMA_STOP), "５": ("error", _LLAMA_STOP),
           "9" * 5000: ("error", _LLAMA_STOP),
           "-1": ("warning", _LLAMA_ALL), "-0": ("warning", _LLAMA_ALL),
           "+4": (None, None),       # std::stoi takes the sign: 4, the pinned count
           "4.0": ("warning", _LLAMA_PART.replace("{n}", "4").replace("{rest!r}", "'.0'")),
           "0x4": ("warning", _LLAMA_PART.replace("{n}", "<= 0, every CPU of the node,")
                   .replace("{rest!r}", "'x4'")),
           "1e3": ("warning", _LLAMA_PART.replace("{n}", "1").replace("{rest!r}", "'e3'")),
           "4_0": ("warning", _LLAMA_PART.replace("{n}", "4").replace("{rest!r}", "'_0'"))}


def test_llama_cpp_table_covers_every_hostile_value():
    assert list(LLAMA_T) == HOSTILE


@pytest.mark.parametrize("value", HOSTILE, ids=_short)
def test_hostile_llama_cpp_threads_read_as_llama_server_reads_them(value):
    c = {"name": "c", "image": "ghcr.io/ggml-org/llama.cpp:server", "resources": res(),
         "args": ["-t", value, "-m", "/models/m.gguf"]}
    code, stderr, items, warns = run(c)
    kind, text = LLAMA_T[value]
    if kind == "error":
        w = numbers.brief("-t " + value)
        assert code == 1 and items[0]["spec"]["containers"][0] == c
        assert stderr == (f"krm-fn: error: Pod p spec.containers[0].args[1]: "
                          f"{text.format(w=w, v=value)}\n"
                          f"krm-fn: error: Pod p: left unchanged because of the errors above\n")
        return
    assert stderr == "" and code == 0
    after = items[0]["spec"]["containers"][0]
    assert after["args"] == ["-t", value, "-m", "/models/m.gguf"]
    assert "LLAMA_ARG_THREADS" not in [e["name"] for e in after["env"]]   # -t wins over it
    assert warns == ({} if kind is None else
                     {"spec.containers[0].args[1]": [text.format(v=value)]})


@pytest.mark.parametrize("value", HOSTILE + BLANK, ids=_short)
def test_hostile_ray_start_params_num_cpus_is_left_alone(value):
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
               "spec": {"headGroupSpec": {"rayStartParams": {"num-cpus": value}, "template": {
                   "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.9",
                                            "resources": res()}]}}}}}
    code, stderr, items, warns = run({}, items=[cluster])
    assert stderr == "" and code == 0
    path = "spec.headGroupSpec.rayStartParams.num-cpus"
    if value == "4.0":      # a number Ray reads: made the pinned count
        assert items[0]["spec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": "4"}
        return
    assert items[0]["spec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": value}
    assert warns[path] == [
        f"rayStartParams.num-cpus {numbers.shown(value.strip(numbers.BLANKS))} is not a "
        f"number and is left "
        f"alone; it should be 4 (the Ray container 'ray-head' has 4 pinned CPUs; Ray schedules "
        f"tasks and sizes each worker's OMP_NUM_THREADS by num-cpus)"]


def test_ray_start_params_num_cpus_4_0_becomes_4_with_one_warning():
    """"4.0" is a number Ray reads (a float), not a whole-number string: the ray rule
    rewrites it to the pinned count "4" and says so as a warning naming the old value."""
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
               "spec": {"headGroupSpec": {"rayStartParams": {"num-cpus": "4.0",
                                                              "block": "true"}, "template": {
                   "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.9",
                                            "resources": res()}]}}}}}
    code, stderr, items, warns = run({}, items=[cluster])
    assert (code, stderr) == (0, "")
    assert items[0]["spec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": "4",
                                                                   "block": "true"}
    assert warns == {"spec.headGroupSpec.rayStartParams.num-cpus": [
        "rayStartParams.num-cpus 4.0 -> 4: the Ray container 'ray-head' has 4 pinned CPUs; "
        "Ray schedules tasks and sizes each worker's OMP_NUM_THREADS by num-cpus"]}


@pytest.mark.parametrize("value", HOSTILE + BLANK, ids=_short)
def test_hostile_cpus_annotation_is_an_error_naming_it(value):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "annotations": {"krm-fn.dev/cpus": value}},
           "spec": {"containers": [{"name": "c", "image": "x:1", "resources": res()}]}}
    p = run_fn([], json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                               "items": [pod]}))
    out = yaml.safe_load(p.stdout)
    assert p.returncode == 1 and "internal error" not in p.stderr
    assert [r["message"] for r in out["results"] if r["severity"] == "error"] == [
        f"annotation krm-fn.dev/cpus must be a whole number of CPUs from 1 to 9999, quoted "
        f"(such as \"4\"), found {numbers.shown(value, 80)}",
        "left unchanged because of the errors above"]


@pytest.mark.parametrize("value", HOSTILE + BLANK, ids=_short)
def test_hostile_index_annotation_is_read_as_no_index(value):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "annotations": {"config.kubernetes.io/path": "p.yaml",
                                                      "config.kubernetes.io/index": value}},
           "spec": {"containers": [{"name": "c", "image": "x:1", "resources": res()}]}}
    p = run_fn([], json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                               "items": [pod]}))
    assert p.returncode == 0 and p.stderr == ""
    files = [r.get("file") for r in yaml.safe_load(p.stdout)["results"]
             if r.get("resourceRef", {}).get("name") == "p"]
    assert files and all(f == {"path": "p.yaml"} for f in files)


@pytest.mark.parametrize("text, want", [
    ("4", 4), (" 4\t", 4), ("0", 0), ("1048576", 1048576), ("1048577", None),
    ("9" * 5000, None), ("²", None), ("٢", None), ("-1", None), ("+4", None), ("", None),
    ("4 4", None), ("\u00a04", None), (4, 4), (True, None), (None, None), (-1, None)])
def test_numbers_count(text, want):
    assert numbers.count(text) == want


# -- the property: any string in any env value never produces an internal error ------------

_ENGINE_IMAGES = ["x:1", "vllm/vllm-openai-cpu:v0.9.1", "ghcr.io/ggml-org/llama.cpp:server",
                  "pytorch/torchserve:0.9.0-cpu", "nvcr.io/nvidia/tritonserver:24.01-py3",
                  "eclipse-temurin:21", "mcr.microsoft.com/onnxruntime/server:latest",
                  "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.8.5", "ollama/ollama:0.12.3",
                  "openvino/model_server:2024.4",
                  "tiangolo/uvicorn-gunicorn-fastapi:python3.13"]
_NAMES = sorted({*ENV_CASES, "GUNICORN_CMD_ARGS", "JAVA_TOOL_OPTIONS", "JAVA_OPTS",
                 "JDK_JAVA_OPTIONS", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU",
                 "LLAMA_ARG_THREADS_BATCH", "MKL_NUM_THREADS", "PYTHON_CPU_COUNT",
                 "WORKERS_PER_CORE"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image=st.sampled_from(_ENGINE_IMAGES),
       command=st.sampled_from([[], ["gunicorn", "a:b"], ["uvicorn", "m:app"],
                                ["ray", "start"], ["vllm", "serve", "m", "--device", "cpu"]]),
       entries=st.lists(st.tuples(st.sampled_from(_NAMES), st.text(max_size=40)), max_size=6),
       cpu=st.sampled_from(["1", "4", "1500m"]))
def test_any_string_in_any_env_value_never_crashes(image, command, entries, cpu):
    c = {"name": "c", "image": image, "resources": res(cpu),
         "env": [{"name": n, "value": v} for n, v in entries]}
    if command:
        c["command"] = command
    code, stderr, items, _ = run(c, {"goMemLimitPercent": "90", "mallocArenaMax": "2"})
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert code in (0, 1)
    if items is None:   # text YAML itself refuses (a control character): one clear line
        assert stderr.startswith("krm-fn: input is not valid YAML") and stderr.count("\n") == 1
