"""Threads per rank (krm_fn/rules/engines/ranks.py, vllm.py, tgi.py, workers.py): every rank
of vLLM (tp × pp × local dp), TGI (`--num-shard`) or torchrun (`--nproc-per-node`) is a
process with its own OpenMP pool, so the thread vars are the pinned cores divided among
them. Through the real CLI. The engines' own binding code is run in
tests/engines/test_vllm_binding.py; golden case: tests/testdata/engine-ranks."""
import pytest

from tests.helpers import env_of
from tests.test_engines import messages, res, run

REPO = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:"
V091_SRC = "https://github.com/vllm-project/vllm/blob/v0.9.1/vllm/envs.py"


def vllm(version: str, args: list, cpu: str = "8", env: list | None = None) -> dict:
    c = {"name": "vllm", "image": REPO + version, "args": ["serve", "m", *args],
         "resources": res(cpu)}
    if env is not None:
        c["env"] = env
    return c


@pytest.mark.parametrize("version, args, cpu, threads, bind", [
    # 0.9.1: nothing kept; `all` once per rank
    ("v0.9.1", ["-tp", "2"], "8", "4", "all|all"),
    ("v0.9.1", ["--tensor-parallel-size=2"], "8", "4", "all|all"),
    ("v0.9.1", ["--tensor_parallel_size", "2"], "8", "4", "all|all"),  # FlexibleArgumentParser
    ("v0.9.1", ["-tp", "2", "-pp", "2"], "8", "2", "all|all|all|all"),
    # 0.10.0 keeps 1 core when tp × pp > 1, not for data parallel alone
    ("v0.10.1", ["-tp", "2"], "8", "3", "all|all"),
    ("v0.10.1", ["-dp", "2"], "8", "4", "all|all"),
    # 0.10.2 also for more than one local data-parallel rank
    ("v0.10.2", ["-dp", "2"], "8", "3", "all|all"),
    # 0.11.1: nobind is read whole
    ("v0.11.1", ["-tp", "2", "-pp", "2"], "16", "3", "nobind"),
    ("v0.11.1", ["-dp", "4", "-dpl", "2"], "8", "3", "nobind"),      # the local ranks
    ("v0.11.1", ["-tp", "1"], "8", "8", "nobind"),                   # one process: none kept
    # 0.20.0 keeps 1 core per engine whatever the ranks (0.21.0: nobind works again);
    # 0.31.0 one per rank
    ("v0.21.0", [], "8", "7", "nobind"),
    ("v0.21.0", ["-tp", "2"], "8", "3", "nobind"),
    ("v0.21.0", ["-dp", "2"], "8", "3", "nobind"),
    ("v0.31.0", ["-dp", "2"], "8", "3", "nobind"),
    ("v0.31.0", ["-tp", "2", "-dp", "2"], "12", "2", "nobind"),
    # external load balancing (one pod per data-parallel rank): one local rank whatever
    # -dp says (hostile testing: -dp 4 -dpn 0 was counted as 4 processes)
    ("v0.11.1", ["-dp", "4", "-dpn", "0"], "8", "8", "nobind"),
    ("v0.11.1", ["--data-parallel-size", "4", "--data_parallel_rank=2"], "8", "8", "nobind"),
    ("v0.11.1", ["-dp", "4", "-dpe", "--nnodes", "4", "--node-rank", "1"], "8", "8",
     "nobind"),
    ("v0.31.0", ["-tp", "2", "-dp", "4", "-dpn", "3"], "12", "5", "nobind"),
    ("v0.31.0", ["-dp", "2", "-dpe", "--no-data-parallel-external-lb"], "8", "3", "nobind"),
    # before 0.9.1 `all` is tested whole: one value for every rank
    ("v0.8.5", ["-tp", "2"], "8", "4", None),
])
def test_vllm_threads_and_bind_per_rank(version, args, cpu, threads, bind):
    p, out, after = run(vllm(version, args, cpu))
    assert p.returncode == 0, messages(out, "error")
    env = env_of(after)
    assert env["OMP_NUM_THREADS"] == threads
    assert env.get("VLLM_CPU_OMP_THREADS_BIND") == bind


def test_the_info_says_the_division():
    p, out, after = run(vllm("v0.10.1", ["-tp", "2"]))
    assert [m for m in messages(out, "info") if m.startswith("container 'vllm': OMP_")] == [
        "container 'vllm': OMP_NUM_THREADS set to 3 (the 8 pinned CPUs minus 2 kept by vLLM "
        "0.10.1 for its other processes (what its own binding keeps: "
        "https://github.com/vllm-project/vllm/blob/v0.10.0/vllm/v1/worker/cpu_worker.py), "
        "divided by 2 worker processes (vLLM -tp 2); runtimes size thread pools from the host "
        "CPU count otherwise)"]


def test_a_single_all_is_one_entry_per_rank_from_0_9_1():
    p, out, after = run(vllm("v0.9.1", ["-tp", "2"], env=[
        {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "all"}]))
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == "all|all"
    assert [m for m in messages(out, "warning") if "IndexError" in m] == [
        "container 'vllm': VLLM_CPU_OMP_THREADS_BIND all -> all|all: vLLM 0.9.1 splits it on "
        "| and rank i reads entry i, so 1 entry for 2 rank processes stops rank 1 with an "
        f"IndexError; all|all is its value for no binding ({V091_SRC})"]


@pytest.mark.parametrize("version, have", [
    ("v0.9.1", "all|all"), ("v0.9.1", "all|all|all"), ("v0.11.1", "nobind"), ("v0.8.5", "all")])
def test_a_no_binding_value_every_rank_reads_is_kept(version, have):
    p, out, after = run(vllm(version, ["-tp", "2"], env=[
        {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": have}]))
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == have
    assert not [m for m in messages(out, "warning") if "VLLM_CPU_OMP_THREADS_BIND" in m]


def test_nobind_per_rank_is_one_nobind_from_0_21():
    """0.21.0 tests `nobind` whole and parses anything else as CPU lists."""
    p, out, after = run(vllm("v0.21.0", ["-tp", "2"], env=[
        {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "nobind|nobind"}]))
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"


def test_a_cpu_list_with_fewer_entries_than_ranks_is_an_error():
    p, out, after = run(vllm("v0.11.1", ["-tp", "2"], env=[
        {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "0-3"}]))
    assert p.returncode == 1
    assert messages(out, "error")[0] == (
        "container 'vllm': VLLM_CPU_OMP_THREADS_BIND=0-3 has 1 CPU list (split on |, one per "
        "rank) for 2 rank processes: rank 1 stops (IndexError; from vLLM 0.20.0 an "
        "assertion); give one list per rank, or set it to nobind")


def test_more_ranks_than_cpus_is_an_error():
    p, out, after = run(vllm("v0.21.0", ["-tp", "2"], cpu="2"))
    assert p.returncode == 1
    assert messages(out, "error")[0] == (
        "container 'vllm' runs 2 processes (vLLM -tp 2), each with its own thread pool, on 1 "
        "CPUs (2 minus 1 kept): at least 1 thread each oversubscribes the CPUs for certain; "
        "give it at least 3 CPUs or run fewer processes")


def test_as_many_ranks_as_cpus_is_not_an_error():
    p, out, after = run(vllm("v0.9.1", ["-tp", "4"], cpu="4"))
    assert p.returncode == 0
    assert env_of(after)["OMP_NUM_THREADS"] == "1"


def test_web_workers_above_the_cpus_are_no_error():
    c = {"name": "api", "image": "api:1", "command": ["gunicorn", "-w", "8", "app:app"],
         "resources": res()}
    p, out, after = run(c)
    assert p.returncode == 0
    assert env_of(after)["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize("args", [
    ["-tp", "2", "--distributed-executor-backend", "ray"],
    ["-tp", "2", "--distributed-executor-backend=ray"],
    ["-tp", "2", "--nnodes", "2"],
    ["-tp", "2", "--headless"],
])
def test_vllm_ranks_on_other_pods_are_not_read(args):
    p, out, after = run(vllm("v0.11.1", args))
    assert env_of(after)["OMP_NUM_THREADS"] == "8"


def test_unreadable_size_is_left_alone_with_a_warning():
    p, out, after = run(vllm("v0.11.1", ["-tp", "two"]))
    assert env_of(after)["OMP_NUM_THREADS"] == "8"
    assert "container 'vllm': the worker count vLLM -tp two is not a whole number (ASCII " \
           "digits): left alone, and the thread vars are not divided by it (8 per worker); " \
           "set a whole number of workers" in messages(out, "warning")


def test_bind_is_not_applied_to_ranks():
    """threads.bind: no `auto` (one NUMA node per rank) and no OMP_PROC_BIND/OMP_PLACES
    (every process would bind to the same first CPUs) with more than one rank."""
    p, out, after = run(vllm("v0.11.1", ["-tp", "2"]), {"threadsBind": "true"})
    env = env_of(after)
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert "OMP_PROC_BIND" not in env and "OMP_PLACES" not in env
    assert [m for m in messages(out, "info") if "threads.bind not applied" in m] == [
        "container 'vllm': spec.workloads.threads.bind not applied: its 2 processes (vLLM -tp "
        "2) share one cpuset, and OMP_PROC_BIND/OMP_PLACES would bind the threads of every "
        "process to the same first 3 places",
        "container 'vllm': spec.workloads.threads.bind not applied to vLLM's 2 rank processes: "
        "its auto binding puts each rank on a NUMA node of its own and stops when the "
        "container's CPUs span fewer than 2 nodes, which the kubelet does not promise; "
        "VLLM_CPU_OMP_THREADS_BIND is set to no binding instead"]


def test_bind_with_one_rank_still_leaves_vllm_to_auto():
    p, out, after = run(vllm("v0.11.1", []), {"threadsBind": "true"})
    env = env_of(after)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env
    assert env["OMP_PROC_BIND"] == "close"


TGI = "ghcr.io/huggingface/text-generation-inference:3.3.7-intel-cpu"


@pytest.mark.parametrize("args, env, threads", [
    (["--num-shard", "2"], [], "4"),
    (["--num-shard=4"], [], "2"),
    ([], [{"name": "NUM_SHARD", "value": "2"}], "4"),
    (["--num-shard", "4"], [{"name": "NUM_SHARD", "value": "2"}], "2"),   # the flag wins
    ([], [], "8"),
])
def test_tgi_threads_per_shard(args, env, threads):
    """TGI's launcher reads `--num-shard` / NUM_SHARD (launcher/src/main.rs:611-612 at
    v3.3.7, `#[clap(long, env)] num_shard`) and starts one shard per rank (main.rs:1596);
    each sets torch's threads from OMP_NUM_THREADS (server/text_generation_server/models/
    flash_causal_lm.py:90-96 at v2.3.0). TGI's server is not on PyPI, so its code is not run
    here as vLLM's is (tests/engines/test_vllm_binding.py)."""
    c = {"name": "tgi", "image": TGI, "args": ["--model-id", "m", *args], "env": env,
         "resources": res("8")}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == threads


@pytest.mark.parametrize("command, env, threads", [
    (["torchrun", "--nproc-per-node", "4", "serve.py"], [], "2"),
    (["torchrun", "--nproc_per_node=2", "serve.py"], [], "4"),
    (["python", "-m", "torch.distributed.run", "--nproc-per-node=8", "s.py"], [], "1"),
    (["torchrun", "serve.py"], [{"name": "PET_NPROC_PER_NODE", "value": "2"}], "4"),
    (["python", "serve.py", "--nproc-per-node", "4"], [], "8"),    # not torchrun
])
def test_torchrun_threads_per_process(command, env, threads):
    c = {"name": "t", "image": "python:3.12", "command": command, "env": env,
         "resources": res("8")}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == threads


def test_torchrun_processes_win_over_the_engine_sizes():
    c = vllm("v0.9.1", ["-tp", "4"])
    c["command"] = ["torchrun", "--nproc-per-node", "2", "-m", "vllm.entrypoints.api_server"]
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == "4"
    assert env_of(after)["VLLM_CPU_OMP_THREADS_BIND"] == "all|all"   # one rank each


V020_SRC = "https://github.com/vllm-project/vllm/blob/v0.20.0/vllm/utils/ompmultiprocessing.py"


def test_0_20_has_no_no_binding_value_one_rank_is_left_to_auto():
    p, out, after = run(vllm("v0.20.2", []))
    assert p.returncode == 0
    env = env_of(after)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env and env["OMP_NUM_THREADS"] == "7"
    assert [m for m in messages(out, "warning") if "VLLM_CPU" in m] == [
        "container 'vllm': vLLM 0.20.2 has no value that turns its binding off (nobind stops "
        f"it at start with an IndexError: {V020_SRC}), so VLLM_CPU_OMP_THREADS_BIND is left to "
        "auto: one OpenMP thread per physical core of the CPUs the container may use, less 1 "
        "for the scheduler, right only if the kubelet really pins it; OMP_NUM_THREADS=7 is not "
        "read; use vLLM 0.21.0 or later to set nobind"]


def test_0_20_with_ranks_is_an_error():
    p, out, after = run(vllm("v0.20.0", ["-tp", "2"]))
    assert p.returncode == 1
    assert messages(out, "error")[0] == (
        "container 'vllm': vLLM 0.20.0 has no value that turns its binding off (nobind stops "
        f"it at start with an IndexError: {V020_SRC}), so VLLM_CPU_OMP_THREADS_BIND is left to "
        "auto, which puts each of its 2 rank processes on a NUMA node of its own and stops when "
        "the container's CPUs span fewer, which the kubelet does not promise; use vLLM 0.21.0 "
        "or later (nobind), or one rank")


def test_nobind_set_by_hand_on_0_20_is_an_error():
    p, out, after = run(vllm("v0.20.1", [], env=[
        {"name": "VLLM_CPU_OMP_THREADS_BIND", "value": "nobind"}]))
    assert p.returncode == 1
    assert messages(out, "error")[0] == (
        "container 'vllm': VLLM_CPU_OMP_THREADS_BIND=nobind stops vLLM 0.20.1 at start: it has "
        f"no no-binding value ({V020_SRC}: with nobind its log loop indexes the empty CPU lists, "
        "IndexError, and anything else is read as CPU lists); remove it (auto) or use vLLM "
        "0.21.0 or later")


def _vllm_command(command: list, cpu: str = "8") -> dict:
    return {"name": "vllm", "image": REPO + "v0.11.1", "command": command,
            "resources": res(cpu)}


@pytest.mark.parametrize("command, threads", [
    # 8 CPUs, vLLM 0.11.1 keeps 1 per rank of 2: 3 threads each; 8 when not divided.
    # what only names --headless or the multi-node script runs no rank elsewhere
    (["sh", "-c", "echo --headless; exec vllm serve m -tp 2"], "3"),
    (["sh", "-c", "echo multi-node-serving.sh; exec vllm serve m -tp 2"], "3"),
    (["vllm", "serve", "org/m--headless", "-tp", "2"], "3"),
    # vLLM's own --headless (argparse also takes a prefix), the script run as a program
    (["vllm", "serve", "m", "-tp", "2", "--headless"], "8"),
    (["vllm", "serve", "m", "-tp", "2", "--headl"], "8"),
    (["sh", "-c", "bash /opt/multi-node-serving.sh leader --ray_cluster_size=2; "
                  "vllm serve m -pp 2"], "8"),
    # the sizes are those of vLLM's own command, not of a command before it
    (["sh", "-c", "echo -tp 8; exec vllm serve m -tp 2"], "3"),
    (["sh", "-c", "echo -tp 8; exec /start.sh -tp 2"], "3"),
    (["python3", "-mvllm.entrypoints.openai.api_server", "-tp", "2"], "3"),
])
def test_vllm_ranks_follow_program_position(command, threads):
    """ranks._elsewhere and the vLLM sizes read vLLM's words where vLLM reads them (its own
    command, engines/programs.py), not any word of the command line."""
    p, out, after = run(_vllm_command(command))
    assert p.returncode == 0, messages(out, "error")
    assert env_of(after)["OMP_NUM_THREADS"] == threads


def test_vllm_device_is_read_in_its_own_command():
    p, out, after = run(_vllm_command(["sh", "-c", "echo --device cpu; exec vllm serve m"]))
    assert p.returncode == 0, messages(out, "error")


@pytest.mark.parametrize("command, threads", [
    (["sh", "-c", "echo --num-shard 8; exec text-generation-launcher --num-shard 2"], "4"),
    (["sh", "-c", "exec text-generation-launcher --model-id m"], "8"),
])
def test_tgi_num_shard_of_its_own_command(command, threads):
    c = {"name": "tgi", "image": TGI, "command": command, "resources": res("8")}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == threads


@pytest.mark.parametrize("args", [["--num-shard", "2", "--num-shard", "4"],
                                  ["--num-shard=2", "--num-shard", "2"]])
def test_tgi_refuses_num_shard_given_twice(args):
    """clap 4 (the launcher's parser, launcher/Cargo.toml) refuses a `#[clap(long, env)]`
    option given more than once: the launcher stops, so the render is an error."""
    c = {"name": "tgi", "image": TGI, "args": ["--model-id", "m", *args], "resources": res("8")}
    p, out, after = run(c)
    assert p.returncode == 1
    assert messages(out, "error")[0] == (
        "container 'tgi': TGI --num-shard given 2 times: text-generation-launcher (clap 4) "
        "refuses an option it sets once given again and stops at start-up; give --num-shard "
        "once")


@pytest.mark.parametrize("command", [
    ["torchrun", "--nproc-per-node", "2", "serve.py", "--nproc-per-node", "8"],
    ["sh", "-c", "cd /a;torchrun --nproc-per-node 2 -m serve --nproc-per-node 8"],
    ["python3", "-mtorch.distributed.run", "--nproc_per_node=2", "serve.py",
     "--nproc_per_node=8"],
])
def test_torchrun_reads_its_options_up_to_the_program_it_runs(command):
    """torchrun's argparse leaves every word from the training script on to the script
    (torch/distributed/run.py: training_script_args, nargs=REMAINDER): 2 ranks here."""
    c = {"name": "t", "image": "app:1", "command": command, "resources": res("8")}
    p, out, after = run(c)
    assert env_of(after)["OMP_NUM_THREADS"] == "4"
