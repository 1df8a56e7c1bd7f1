"""Engines are recognised from the program a container runs (krm_fn/rules/engines/programs.py,
recognition.Pattern.search), not from a word that only names one: a sidecar that watches,
probes or waits for an engine is no engine and is left as it is, while every wrapper that
runs the engine (exec, env, numactl, taskset, tini, python -m, uvicorn, torchrun, ...)
still leads to it."""
from __future__ import annotations

import json

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import cmdline, engines
from krm_fn.rules.cmdline import text, tokens
from krm_fn.rules.engines import programs
from tests.helpers import item, load, results, run_fn
from tests.test_engines import pod_list, res


def _view(data: dict, path: tuple = ("spec", "containers", 1)) -> ContainerView:
    return ContainerView("c", "side", path, {"image": "registry.example/side:1", **data})


def _sh(script: str) -> dict:
    return {"command": ["sh", "-c", script]}


# containers that name an engine's program without running it
NAMES_ONLY = {
    "process-exporter -procnames": {"args": ["-procnames", "llama-server"]},
    "process-exporter --procnames=": {"args": ["--procnames=llama-server,vllm"]},
    "grep": {"command": ["grep", "llama-server", "/proc/1/cmdline"]},
    "pgrep -f": {"command": ["pgrep", "-f", "vllm"]},
    "pgrep -f 'vllm serve'": _sh("pgrep -f 'vllm serve' || exit 1"),
    "curl probe": {"command": ["curl", "-fsS", "http://llama-server:8080/health"]},
    "echo quoted": _sh('echo "starting llama-server"; sleep infinity'),
    "echo words": _sh("echo starting ollama serve"),
    "--model-server=tgi": {"command": ["/proxy"], "args": ["--model-server=tgi"]},
    "wait-for script": _sh("until nc -z vllm 8000; do sleep 1; done"),
    "kill $(pidof)": _sh("kill $(pidof ollama)"),
    "ps | grep": _sh("ps aux | grep 'tritonserver' | grep -v grep"),
    "watch a command line": {"command": ["/exporter", "--watch", "ollama serve"]},
    "torchserve as a host name": {"command": ["wget", "-qO-", "http://torchserve:8080/ping"]},
    "a wrapped shell's pgrep": {"command": ["tini", "--", "sh", "-c", "pgrep llama-server"]},
    "uv without run": {"command": ["uv", "pip", "show", "vllm"]},
    "conda list": {"command": ["conda", "list", "llama-cpp-python"]},
    "an entrypoint's option": {"command": ["/entrypoint.sh"],
                               "args": ["--procnames", "llama-server"]},
    "pgrep -f java": {"command": ["pgrep", "-f", "java"]},
    "echo python -um": _sh("echo python -um llama_cpp.server"),
    'echo "$@"': {"command": ["sh", "-c", 'echo "$@"', "--", "llama-server"]},
    'exec "$@" with llama-server as $0': {"command": ["sh", "-c", 'exec "$@"', "llama-server"]},
    "echo gunicorn -w, torchrun": _sh("echo gunicorn -w 4 torchrun --nproc-per-node 2"),
    "pgrep text-generation-launcher": {"command": ["pgrep", "text-generation-launcher"]},
}


@pytest.mark.parametrize("data", NAMES_ONLY.values(), ids=NAMES_ONLY.keys())
def test_a_container_that_only_names_an_engine_is_none(data):
    assert engines.detect(_view(data)) == []


def _deployment(sidecar: dict, init: bool) -> str:
    engine = {"name": "llm", "image": "registry.example/llm:1",
              "command": ["/app/llama-server", "-m", "/models/m.gguf"],
              "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}
    side = {"name": "side", "image": "registry.example/side:1",
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                          "limits": {"cpu": "250m", "memory": "64Mi"}}, **sidecar}
    spec = {"containers": [engine] if init else [engine, side]}
    if init:
        spec["initContainers"] = [side]
    return json.dumps({
        "apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
        "items": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"template": {"spec": spec}}}]}), side


@pytest.mark.parametrize("data", NAMES_ONLY.values(), ids=NAMES_ONLY.keys())
def test_the_container_that_only_names_an_engine_is_left_unchanged(data):
    """Beside a llama-server container (pinned, tuned), the sidecar (or, running a
    wait-for script, the init container) is written back as it came: not pinned, no
    thread env, no result about it."""
    init = "until" in json.dumps(data)
    text_in, side = _deployment(data, init)
    p = run_fn([], text_in)
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    spec = item(out, "Deployment", "d")["spec"]["template"]["spec"]
    got = (spec["initContainers"] if init else spec["containers"])[-1]
    assert got == side
    assert "LLAMA_ARG_THREADS" in {e["name"] for e in spec["containers"][0]["env"]}
    assert not [r for r in results(out) if "'side'" in r["message"]]


# wrappers that run the engine: each still leads to it
RUNS = {
    "exec in a script": (_sh("set -e; exec llama-server --port 8080"), "llama.cpp"),
    "assignments first": (_sh("A=1 B=2 exec /app/llama-server"), "llama.cpp"),
    "after a wait loop": (_sh("until curl -s http://db:5432; do sleep 1; done; "
                              "exec vllm serve m"), "vLLM CPU"),
    "if/then": (_sh("if [ -f /m ]; then exec tritonserver --model-repository=/m; fi"),
                "Triton"),
    "subshell": (_sh("(cd /app && exec ./llama-server -m m)"), "llama.cpp"),
    "glued ;": (_sh("cd /app;exec ollama serve"), "Ollama"),
    "bash -lc --": ({"command": ["/bin/bash", "-lc", "--"],
                     "args": ["ulimit -n 65536; ray start --head --block"]}, "Ray"),
    "tini -- sh -c": ({"command": ["tini", "--", "sh", "-c", "exec llama-server"]},
                      "llama.cpp"),
    "dumb-init -- bash -ec": ({"command": ["/usr/bin/dumb-init", "--", "/bin/bash", "-ec"],
                               "args": ["cd /srv; exec vllm serve m"]}, "vLLM CPU"),
    "args only": ({"args": ["llama-server", "--port", "8080"]}, "llama.cpp"),
    "env": ({"command": ["env", "-u", "X", "OMP_PROC_BIND=close", "llama-server"]},
            "llama.cpp"),
    "numactl": ({"command": ["numactl", "--cpunodebind=0", "--membind", "0",
                             "llama-server"]}, "llama.cpp"),
    "numactl -C": ({"command": ["numactl", "-C", "0-3", "ovms", "--port", "9000"]},
                   "OpenVINO Model Server"),
    "taskset -c": ({"command": ["taskset", "-c", "0-3", "llama-server"]}, "llama.cpp"),
    "tini --": ({"command": ["tini", "--", "llama-server"]}, "llama.cpp"),
    "dumb-init": ({"command": ["dumb-init", "--single-child", "vllm", "serve", "m"]},
                  "vLLM CPU"),
    "nohup": ({"command": ["nohup", "ollama", "serve"]}, "Ollama"),
    "timeout": ({"command": ["timeout", "3600", "torchserve", "--start"]}, "TorchServe"),
    "gosu": ({"command": ["gosu", "app", "/opt/tritonserver/bin/tritonserver"]}, "Triton"),
    "python -m": ({"command": ["python3", "-u", "-m", "vllm.entrypoints.openai.api_server"]},
                  "vLLM CPU"),
    "python -m uvicorn": ({"command": ["python", "-m", "uvicorn", "--host", "0.0.0.0",
                                       "--factory", "llama_cpp.server.app:create_app"]},
                          "llama-cpp-python server"),
    "uvicorn": ({"command": ["uvicorn", "--port", "8000", "--factory",
                             "llama_cpp.server.app:create_app"]}, "llama-cpp-python server"),
    "python script.py": ({"command": ["python", "/opt/bin/torchserve", "--start"]},
                         "TorchServe"),
    "torchrun -m": ({"command": ["torchrun", "--nproc-per-node", "2", "-m",
                                 "vllm.entrypoints.openai.api_server"]}, "vLLM CPU"),
    "python -m torch.distributed.run": (
        {"command": ["python", "-m", "torch.distributed.run", "--nnodes=1", "-m",
                     "llama_cpp.server"]}, "llama-cpp-python server"),
    "deepspeed --module": ({"command": ["deepspeed", "--num_gpus", "1", "--module",
                                        "vllm.entrypoints.openai.api_server"]}, "vLLM CPU"),
    "accelerate launch": ({"command": ["accelerate", "launch", "--num_processes", "2", "-m",
                                       "vllm.entrypoints.openai.api_server"]}, "vLLM CPU"),
    "entrypoint script": ({"command": ["/docker-entrypoint.sh"],
                           "args": ["llama-server", "-m", "m.gguf"]}, "llama.cpp"),
    "entrypoint, no extension": ({"command": ["/usr/local/bin/entrypoint"],
                                  "args": ["ollama", "serve"]}, "Ollama"),
    "uv run": ({"command": ["uv", "run", "--with", "x", "vllm", "serve", "m"]}, "vLLM CPU"),
    "uv run -m": ({"command": ["uv", "run", "--frozen", "-m", "llama_cpp.server"]},
                  "llama-cpp-python server"),
    "conda run -n": ({"command": ["conda", "run", "--no-capture-output", "-n", "env",
                                  "python", "-m", "vllm.entrypoints.openai.api_server"]},
                     "vLLM CPU"),
    "micromamba run": ({"command": ["micromamba", "run", "-n", "base", "ollama", "serve"]},
                       "Ollama"),
    "poetry run": ({"command": ["poetry", "run", "vllm", "serve", "m"]}, "vLLM CPU"),
    "mpirun": ({"command": ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "none",
                            "llama-server", "-m", "x"]}, "llama.cpp"),
    "ipexrun": ({"command": ["ipexrun", "--ninstances", "2", "serve.py"]},
                "Intel Xeon launcher (ipexrun)"),
}


@pytest.mark.parametrize("data,name", RUNS.values(), ids=RUNS.keys())
def test_a_wrapper_leads_to_the_engine_it_runs(data, name):
    assert [e.name for e in engines.detect(_view(data, ("spec", "containers", 0)))] == [name]


def _positioned(data: dict) -> list[str]:
    c = _view(data)
    line = text(tokens(c))
    return [line[a:b] for a, b in programs.spans(tokens(c))]


def test_the_words_in_program_position():
    assert _positioned({"command": ["numactl", "-C", "0-3", "--", "llama-server", "-m",
                                    "x"]}) == ["numactl", "llama-server"]
    assert _positioned(_sh("until nc -z vllm 8000; do sleep 1; done; exec vllm serve")) == [
        "nc", "sleep", "exec", "vllm"]
    assert _positioned(_sh("kill $(pidof ollama) && X=1 env -i Y=2 python -m a.b c")) == [
        "kill", "pidof", "env", "python", "a.b"]
    # no program runs: `command -v` looks it up, `taskset -p` changes a running process,
    # `python -c` runs code, an option first is the unknown entrypoint's
    assert _positioned(_sh("command -v llama-server; taskset -p 3 1; python -c 'x'")) == [
        "command", "taskset", "python"]
    assert _positioned({"args": ["--procnames", "llama-server"]}) == []


# -- a program's own command (cmdline.own_command): from the program in program position

@pytest.mark.parametrize("named", [
    "echo gunicorn -w 4", "echo hypercorn -w 2", "echo torchrun --nproc-per-node 4",
    "echo python -m torch.distributed.run --nproc-per-node=2", "echo java -XX:+UseG1GC",
])
def test_a_script_naming_a_server_is_tuned_as_one_naming_none(named):
    """Exactly: the same env and warnings as the same script echoing something else."""
    script = named + "; exec python app.py"
    assert _pinned(_sh(script)) == _pinned(_sh("echo hello; exec python app.py"))
    assert _tuned(_sh(script)) == _tuned(_sh("echo hello; exec python app.py"))


def _own(data: dict, names: tuple) -> list[str]:
    toks = tokens(_view(data))
    return [t.text for t in cmdline.own_command(toks, names, programs.spans(toks))]


def test_own_command_is_the_command_of_the_program_in_program_position():
    assert _own(_sh("exec gunicorn -w 2 app:app; echo gunicorn -w 9"), ("gunicorn",)) == [
        "gunicorn", "-w", "2", "app:app"]
    assert _own({"command": ["tini", "--", "sh", "-c",
                             "curl -w 5 http://db/; exec gunicorn a:b"]}, ("gunicorn",)) == [
        "gunicorn", "a:b"]
    assert _own(_sh("cd /app;gunicorn -w 2 a:b"), ("gunicorn",)) == ["gunicorn", "-w", "2", "a:b"]
    assert _own(_sh("gunicorn --check-config a:b && exec /usr/bin/gunicorn -w 2 a:b"),
                ("gunicorn",)) == ["/usr/bin/gunicorn", "-w", "2", "a:b"]
    assert _own({"command": ["numactl", "-C", "0-3", "llama-server", "-t", "4"]},
                ("llama-server",)) == ["llama-server", "-t", "4"]
    # no such program in program position: the command of the last program run, which may
    # run it with its words (a script file, the image's entrypoint given the args), not
    # the words of the commands a script runs before it; every word when none is a program
    # (args starting with an option: the image's entrypoint gets them all)
    assert _own(_sh("echo -t 8; exec /start.sh -t 4"), ("llama-server",)) == [
        "/start.sh", "-t", "4"]
    assert _own({"command": ["numactl", "-C", "0-3", "/start.sh", "-t", "4"]},
                ("llama-server",)) == ["/start.sh", "-t", "4"]
    assert _own({"args": ["serve", "m", "-tp", "2"]}, ("vllm",)) == ["serve", "m", "-tp", "2"]
    assert _own({"args": ["-t", "4"]}, ("llama-server",)) == ["-t", "4"]
    # a shell given a script file runs it
    assert _positioned({"command": ["bash", "-eo", "pipefail", "/opt/run.sh", "leader"]}) == [
        "bash", "/opt/run.sh"]


# -- worker and rank counts (engines/workers.py, ranks.py): a server's or torchrun's flags
# and env count only when it is the program in program position ---------------------------

def _env(**kv) -> list:
    return [{"name": k, "value": v} for k, v in kv.items()]


# each names a multi-worker server or torchrun (with a worker or rank count) without running it
NAMES_A_SERVER = {
    "echo gunicorn -w": _sh("echo gunicorn -w 4; exec python app.py"),
    "echo hypercorn -w": _sh("echo hypercorn -w 2; exec python app.py"),
    "pgrep -f gunicorn, WEB_CONCURRENCY": {"command": ["pgrep", "-f", "gunicorn"],
                                          "env": _env(WEB_CONCURRENCY="4")},
    "wait for uvicorn, UVICORN_WORKERS": {
        **_sh("until nc -z uvicorn 8000; do sleep 1; done; exec python app.py"),
        "env": _env(UVICORN_WORKERS="4")},
    "echo torchrun --nproc-per-node": _sh("echo torchrun --nproc-per-node 4; "
                                          "exec python serve.py"),
    "pgrep torchrun, PET_NPROC_PER_NODE": {"command": ["pgrep", "-f", "torchrun"],
                                           "env": _env(PET_NPROC_PER_NODE="2")},
    "echo python -m torch.distributed.run": _sh(
        "echo python -m torch.distributed.run --nproc-per-node=2; exec python s.py"),
}


def _workers(data: dict) -> tuple:
    """(count, server, what) of the worker count engines.workers_read finds, or None; and
    the unreadable one it reports."""
    c = _view(data, ("spec", "containers", 0))
    found, bad = engines.workers_read(c, tuple(engines.detect(c)))
    return (None if found is None else (found.count, found.server, found.what)), bad


@pytest.mark.parametrize("data", NAMES_A_SERVER.values(), ids=NAMES_A_SERVER.keys())
def test_a_server_only_named_gives_no_worker_count(data):
    assert _workers(data) == (None, None)


# the server in program position: counted as before
RUNS_A_SERVER = {
    "exec gunicorn -w": (_sh("echo start; exec gunicorn -w 2 app:app"),
                         (2, "gunicorn", "gunicorn -w 2")),
    "numactl gunicorn": ({"command": ["numactl", "-C", "0-3", "gunicorn", "-w", "2", "a:b"]},
                         (2, "gunicorn", "gunicorn -w 2")),
    "python -m gunicorn": ({"command": ["python", "-m", "gunicorn", "--workers=3", "a:b"]},
                           (3, "gunicorn", "gunicorn --workers=3")),
    "glued ; gunicorn": (_sh("cd /app;gunicorn -w 2 app:app"), (2, "gunicorn", "gunicorn -w 2")),
    "uvicorn, UVICORN_WORKERS": ({"command": ["uvicorn", "a:b"], "env": _env(UVICORN_WORKERS="2")},
                                 (2, "uvicorn", "uvicorn UVICORN_WORKERS=2")),
    "exec hypercorn -w": (_sh("exec hypercorn -w 2 a:b"), (2, "hypercorn", "hypercorn -w 2")),
    "exec torchrun": (_sh("exec torchrun --nproc-per-node 4 serve.py"),
                      (4, "torchrun", "torchrun --nproc-per-node 4")),
    "env python -m torch.distributed.run": (
        {"command": ["env", "X=1", "python", "-m", "torch.distributed.run",
                     "--nproc-per-node=2", "s.py"]},
        (2, "torchrun", "torchrun --nproc-per-node=2")),
    "numactl torchrun, PET_NPROC_PER_NODE": (
        {"command": ["numactl", "-C", "0-7", "torchrun", "s.py"],
         "env": _env(PET_NPROC_PER_NODE="2")},
        (2, "torchrun", "torchrun PET_NPROC_PER_NODE=2")),
    # the flags of the server's own command, not another command's
    "curl -w before a wrapped shell's gunicorn": (
        {"command": ["tini", "--", "sh", "-c", "curl -w 5 http://db/; exec gunicorn a:b"]},
        None),
    "a later command's gunicorn -w": (
        _sh("exec gunicorn -w 2 app:app; echo gunicorn -w 9"), (2, "gunicorn", "gunicorn -w 2")),
    "a later command's --nproc-per-node": (
        _sh("torchrun --nproc-per-node 2 serve.py; python report.py --nproc-per-node 8"),
        (2, "torchrun", "torchrun --nproc-per-node 2")),
}


@pytest.mark.parametrize("data,want", RUNS_A_SERVER.values(), ids=RUNS_A_SERVER.keys())
def test_the_server_in_program_position_gives_its_count(data, want):
    assert _workers(data) == (want, None)


def _pinned(data: dict) -> tuple:
    """(the thread env, the warnings) of a pinned container (4 CPUs) holding `data`."""
    c = {"name": "api", "image": "api:1", "resources": res(), **data}
    p = run_fn([], pod_list(c))
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    got = item(out, "Pod", "p")["spec"]["containers"][0]
    return ({e["name"]: e.get("value") for e in got.get("env") or []
             if e["name"] in ("OMP_NUM_THREADS", "WEB_CONCURRENCY")},
            [r["message"] for r in results(out, "warning")])


def test_a_named_server_does_not_divide_the_thread_vars():
    """A script that only echoes gunicorn's `-w 4` (torchrun's `--nproc-per-node 4`)
    keeps its 4 threads and gets no worker warning; the same script running it is divided
    as before."""
    env, warnings = _pinned(_sh("echo gunicorn -w 4; exec python app.py"))
    assert env == {"OMP_NUM_THREADS": "4"}
    assert [m for m in warnings if "worker" in m] == []
    env, warnings = _pinned(_sh("echo start; exec gunicorn -w 4 app:app"))
    assert env == {"OMP_NUM_THREADS": "1"}
    assert [m for m in warnings if "memory.oom.group" in m and "(gunicorn -w 4)" in m]
    env, _ = _pinned(_sh("echo torchrun --nproc-per-node 4; exec python serve.py"))
    assert env == {"OMP_NUM_THREADS": "4"}
    env, _ = _pinned(_sh("exec torchrun --nproc-per-node 4 serve.py"))
    assert env == {"OMP_NUM_THREADS": "1"}


# -- monitoring (krm_fn/monitoring/targets.py): an engine seen only for its metrics ----------

@pytest.mark.parametrize("data,engine", [
    ({"command": ["pgrep", "-f", "text-generation-launcher"]}, None),
    (_sh("echo text-generation-launcher; exec python app.py"), None),
    ({"command": ["/exporter", "--watch", "text-generation-router"]}, None),
    ({"command": ["text-generation-launcher", "--model-id", "m"]}, "TGI"),
    ({"command": ["tini", "--", "/usr/local/bin/text-generation-launcher"]}, "TGI"),
    (_sh("echo start; exec text-generation-router --port 80"), "TGI"),
    ({"command": ["/entrypoint.sh"], "args": ["text-generation-launcher"]}, "TGI"),
])
def test_monitoring_reads_the_engine_in_program_position(data, engine):
    from krm_fn.monitoring import targets
    found = targets._metrics_of(_view(data, ("spec", "containers", 0)))
    assert (found and found.engine) == engine


# -- in program position wherever it is: java, `python -um`, `sh -c 'exec "$@"' NAME ARGS` --

def _run_args(script: str, name: str, *args: str) -> dict:
    return {"command": ["sh", "-c", script, name, *args]}


PROGRAM_POSITION = {
    "exec java in a script": (_sh("cd /app && exec java -jar /app.jar"), ["JVM"]),
    "tini -- java": ({"command": ["tini", "--", "java", "-jar", "a.jar"]}, ["JVM"]),
    "numactl /opt/java/bin/java": ({"command": ["numactl", "-C", "0-3", "/opt/java/bin/java",
                                                "-jar", "a.jar"]}, ["JVM"]),
    "java": ({"command": ["java", "-jar", "a.jar"]}, ["JVM"]),
    "pgrep -f java": ({"command": ["pgrep", "-f", "java"]}, []),
    "echo java": (_sh("echo java; exec python app.py"), []),
    "python -um": ({"command": ["python3", "-um", "llama_cpp.server", "--model", "m"]},
                   ["llama-cpp-python server"]),
    "python -X dev -m": ({"command": ["python3", "-X", "dev", "-m", "llama_cpp.server"]},
                         ["llama-cpp-python server"]),
    "uv run --module": ({"command": ["uv", "run", "--module", "llama_cpp.server"]},
                        ["llama-cpp-python server"]),
    # Python's getopt reads the rest of a word as the value of -m (Python/getopt.c)
    "python -mMODULE": ({"command": ["python", "-mllama_cpp.server"]},
                        ["llama-cpp-python server"]),
    "python -OOmMODULE": ({"command": ["python3", "-OOmllama_cpp.server"]},
                          ["llama-cpp-python server"]),
    "python -Xfoo -mMODULE": ({"command": ["python3", "-Xfoo",
                                           "-mvllm.entrypoints.openai.api_server"]},
                              ["vLLM CPU"]),
    "python -mMODULE in a script": (_sh("exec python -umllama_cpp.server --port 1"),
                                    ["llama-cpp-python server"]),
    "uv run --module=": ({"command": ["uv", "run", "--module=llama_cpp.server"]},
                         ["llama-cpp-python server"]),
    # ... but not when the m is the value of -X or -W, nor after an option Python refuses
    # or one after which it exits
    "python -Xm...": ({"command": ["python3", "-Xmllama_cpp.server"]}, []),
    "python -Wm...": ({"command": ["python3", "-Wmllama_cpp.server", "app.py"]}, []),
    "python -V -m": ({"command": ["python3", "-V", "-m", "llama_cpp.server"]}, []),
    "python -J -m": ({"command": ["python3", "-J", "-m", "llama_cpp.server"]}, []),
    "python --check-hash-based-pycs=": ({"command": [
        "python3", "--check-hash-based-pycs=always", "-m", "llama_cpp.server"]}, []),
    "echo -mMODULE": ({"command": ["echo", "-mllama_cpp.server"]}, []),
    "echo python -m": (_sh("echo python -m llama_cpp.server; exec python app.py"), []),
    "a script's target": ({"command": ["python3", "/app/bench.py", "--target",
                                       "llama_cpp.server"]}, []),
    'exec "$@" --': ({"command": ["sh", "-c", 'exec "$@"', "--"],
                      "args": ["llama-server", "--threads", "4"]}, ["llama.cpp"]),
    'exec "${@}" NAME': (_run_args('set -e; exec "${@}"', "bash", "numactl", "-C", "0-3",
                                   "vllm", "serve", "m"), ["vLLM CPU"]),
    '"$@" alone': (_run_args('"$@"', "sh", "ollama", "serve"), ["Ollama"]),
    'tini -- sh -c exec "$@"': ({"command": ["tini", "--", "sh", "-c", 'exec "$@"', "x",
                                             "tritonserver"]}, ["Triton"]),
    'echo "$@"': (_run_args('echo "$@"', "--", "llama-server"), []),
    "the $0 slot only": (_run_args('exec "$@"', "llama-server"), []),
    'exec "$@" of an option': (_run_args('exec "$@"', "--", "--procnames", "llama-server"), []),
    # how the positional parameters expand (POSIX 2.5.2, 2.6.5; what dash runs): unquoted
    # $@ and $* split each into fields, "$@" makes each one field, "$*" all one field
    "exec $*": (_run_args("exec $*", "--", "llama-server", "-t", "4"), ["llama.cpp"]),
    "exec ${*}": (_run_args("exec ${*}", "x", "ollama", "serve"), ["Ollama"]),
    'exec "$*" of one word': (_run_args('exec "$*"', "--", "llama-server"), ["llama.cpp"]),
    'exec "$*" of several: one name with blanks': (
        _run_args('exec "$*"', "--", "llama-server", "-t", "4"), []),
    'exec "$@", an empty $0': (_run_args('exec "$@"', "", "llama-server"), ["llama.cpp"]),
    'exec "$@", an empty $1': (_run_args('exec "$@"', "x", "", "llama-server"), []),
    "exec $@, an empty $1": (_run_args("exec $@", "x", "", "llama-server"), ["llama.cpp"]),
    'exec "$@", a $1 with blanks': (_run_args('exec "$@"', "x", "ollama serve"), []),
    "exec $@, a $1 with blanks": (_run_args("exec $@", "x", "ollama serve"), ["Ollama"]),
    '"$@" inside a quoted word': (_run_args('echo "a "$@" b"', "x", "ollama", "serve"), []),
    # a variable the shell expands to the program's name (the env's known value)
    "exec $SERVER": ({**_sh("exec $SERVER -t 4"),
                      "env": [{"name": "SERVER", "value": "llama-server"}]}, ["llama.cpp"]),
    "cd; ${SERVER}": ({**_sh("cd /a; ${SERVER}"),
                       "env": [{"name": "SERVER", "value": "/app/llama-server"}]},
                      ["llama.cpp"]),
    "echo $SERVER": ({**_sh("echo $SERVER"),
                      "env": [{"name": "SERVER", "value": "llama-server"}]}, []),
    "exec $SERVER the script sets": ({**_sh("SERVER=/bin/true; exec $SERVER"),
                                      "env": [{"name": "SERVER", "value": "llama-server"}]},
                                     []),
}


@pytest.mark.parametrize("data,names", PROGRAM_POSITION.values(), ids=PROGRAM_POSITION.keys())
def test_recognised_in_program_position(data, names):
    assert [e.name for e in engines.detect(_view(data, ("spec", "containers", 0)))] == names


def test_the_positional_args_of_a_script_are_its_programs():
    assert _positioned(_run_args('exec "$@"', "--", "numactl", "-C", "0", "llama-server")) == [
        "exec", '"$@"', "numactl", "llama-server"]
    assert _positioned(_run_args('echo "$@"', "--", "llama-server")) == ["echo"]
    assert _own(_run_args('exec "$@"', "--", "gunicorn", "-w", "2", "a:b"), ("gunicorn",)) == [
        "gunicorn", "-w", "2", "a:b"]


def _tuned(data: dict) -> tuple:
    """(the env, the warnings) of a pinned container (4 CPUs, image `app:1` unless `data`
    names one) of `data`."""
    c = {"name": "api", "image": "app:1", "resources": res(), **data}
    p = run_fn([], pod_list(c))
    assert p.returncode == 0, p.stderr
    out = load(p.stdout)
    got = item(out, "Pod", "p")["spec"]["containers"][0]
    return got.get("env"), sorted(r["message"] for r in results(out, "warning"))


@pytest.mark.parametrize("data,same,mark", [
    (_sh("exec java -jar /app.jar"), {"command": ["java", "-jar", "/app.jar"]},
     "-XX:ActiveProcessorCount=4 not added"),
    ({"command": ["python3", "-um", "llama_cpp.server", "--n_threads", "8"]},
     {"command": ["python3", "-u", "-m", "llama_cpp.server", "--n_threads", "8"]},
     "N_THREADS_BATCH"),
    ({"command": ["python3", "-umllama_cpp.server", "--n_threads", "8"]},
     {"command": ["python3", "-u", "-m", "llama_cpp.server", "--n_threads", "8"]},
     "N_THREADS_BATCH"),
    ({"command": ["python3", "-mtorch.distributed.run", "--nproc-per-node=2", "serve.py"]},
     {"command": ["torchrun", "--nproc-per-node=2", "serve.py"]}, "2 worker processes"),
    ({"command": ["sh", "-c", 'exec "$@"', "--"], "args": ["llama-server", "-t", "8"]},
     {"command": ["llama-server", "-t", "8"]}, "llama.cpp -t 8 asks for more threads"),
    ({"command": ["sh", "-c", "exec $*", ""], "args": ["llama-server", "-t", "8"]},
     {"command": ["llama-server", "-t", "8"]}, "llama.cpp -t 8 asks for more threads"),
])
def test_tuned_as_the_program_run_directly(data, same, mark):
    """The program in program position through a script, combined flags or "$@" is tuned
    as the same program run directly: the same env, the same warnings (`mark` among them:
    the engine's own)."""
    got = _tuned(data)
    assert got == _tuned(same)
    assert mark in repr(got)


@pytest.mark.parametrize("command,warned", [
    (["sh", "-c", "echo java -XX:ActiveProcessorCount=16 && exec java -jar /app.jar"], False),
    (["sh", "-c", "pgrep -f java -XX:ActiveProcessorCount=16 || exec java -jar /a.jar"],
     False),
    (["sh", "-c", "echo starting; exec java -XX:ActiveProcessorCount=16 -jar /app.jar"], True),
    (["tini", "--", "java", "-XX:ActiveProcessorCount=16", "-jar", "/app.jar"], True),
    # no java in program position: the image's entrypoint may run it with these words
    (["/app/start.sh", "-XX:ActiveProcessorCount=16"], True),
])
def test_the_jvm_options_are_those_of_a_java_in_program_position(command, warned):
    env, warnings = _tuned({"image": "eclipse-temurin:21-jre", "command": command})
    assert {e["name"]: e["value"] for e in env}["JAVA_TOOL_OPTIONS"] == \
        "-XX:ActiveProcessorCount=4"
    assert [m for m in warnings if "ActiveProcessorCount=16 in the command line" in m] == ([
        "container 'api': -XX:ActiveProcessorCount=16 in the command line comes after "
        "JAVA_TOOL_OPTIONS on the JVM command line and wins; set it to 4 or remove it"]
        if warned else [])
