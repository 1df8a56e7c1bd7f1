"""What a container's shell script gives the program it runs, as krm-fn reads it
(krm_fn/rules/cmdline.py: script_start, assignments, the field splitting of `$NAME` in
tokens), against the real shells: each case's command line runs under dash and bash with
the container's env, and a stub of the program on PATH prints the argv and the env it got.

From hostile tests: `export OMP_NUM_THREADS=32; exec llama-server` (the script's value
replaces the env krm-fn writes), `exec llama-server $EXTRA_ARGS` (the shell splits the
value into `-t 32`), `bash -euo pipefail -c` (options before -c: a script, not a program).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import cmdline
from krm_fn.rules.engines.programs import spans
from tests.helpers import load, results, run_fn

SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]
if os.environ.get("CI") == "true":
    assert SHELLS == ["dash", "bash"], "CI needs dash and bash for the shell differential"

NAMES = ("OMP_NUM_THREADS", "LLAMA_ARG_THREADS")
STUB = ("#!{python}\nimport json, os, sys\n"
        "print(json.dumps({{'argv': sys.argv[1:], 'env': {{n: os.environ.get(n) for n in "
        "{names!r}}}}}))\n")

# (command, args, env): what the stub `prog` gets is what krm-fn predicts
CASES = [
    (["sh", "-c", "export OMP_NUM_THREADS=32 LLAMA_ARG_THREADS=16; exec prog -m /m"], None,
     {"OMP_NUM_THREADS": "4"}),
    (["sh", "-c", "OMP_NUM_THREADS=32 exec prog -t 2"], None, {"OMP_NUM_THREADS": "4"}),
    (["sh", "-c", "echo OMP_NUM_THREADS=3 >/dev/null; exec prog"], None,
     {"OMP_NUM_THREADS": "4"}),
    (["sh", "-c", "X=1 && export Y OMP_NUM_THREADS=7\nexec env -u Y LLAMA_ARG_THREADS=9 prog"],
     None, {"OMP_NUM_THREADS": "4", "LLAMA_ARG_THREADS": "4"}),
    (["env", "-u", "X", "LLAMA_ARG_THREADS=32", "prog", "OMP_NUM_THREADS=1"], None,
     {"LLAMA_ARG_THREADS": "4"}),
    (["/bin/bash", "-euo", "pipefail", "-c"], ["exec prog -m /m -t $T"], {"T": "4"}),
    (["bash", "-o", "pipefail", "-c", "exec prog $EXTRA_ARGS"], None,
     {"EXTRA_ARGS": "-t 32  --port 8080", "OMP_NUM_THREADS": "4"}),
    (["sh", "-xc", "exec prog ${EXTRA_ARGS} -v"], None,
     {"EXTRA_ARGS": " --tensor-parallel-size 2"}),
    (["sh", "-c", "EXTRA_ARGS=-q; exec prog $EXTRA_ARGS"], None, {"EXTRA_ARGS": "-t 32"}),
]


def _view(command, args, env) -> ContainerView:
    data = {"name": "c", "image": "x:1",
            "env": [{"name": k, "value": v} for k, v in env.items()]}
    if command is not None:
        data["command"] = command
    if args is not None:
        data["args"] = args
    return ContainerView("c", "app", ("spec", "containers", 0), data)


def _predicted(command, args, env) -> dict:
    """What krm-fn says `prog` gets: its words (own_command after the program's name, when
    every word is known) and the env of NAMES (the container's, replaced by the command
    line's assignments)."""
    c = _view(command, args, env)
    toks = cmdline.own_command(cmdline.tokens(c), ("prog",), spans(cmdline.tokens(c)))
    words = [t.text for t in toks]
    got = {n: env.get(n) for n in NAMES}
    for n, (value, _) in cmdline.assignments(c).items():
        if n in got:
            got[n] = value
    argv = words[words.index("prog") + 1:] if "prog" in words else None
    script = cmdline.shell_script(cmdline.tokens(c))
    if script and argv is not None:
        argv = [cmdline.shell_value(c, True, w) or w if w.startswith("$") else w
                for w in argv]
    return {"argv": argv, "env": got}


def _real(shell: str, command, args, env, tmp_path) -> dict:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    stub = bindir / "prog"
    stub.write_text(STUB.format(python=sys.executable, names=NAMES))
    stub.chmod(0o755)
    for name in ("sh", "bash"):       # the command's shell, as the shell under test
        link = bindir / name
        if not link.exists():
            link.symlink_to(shutil.which(shell))
    argv = list(command or []) + list(args or [])
    if argv[0].startswith("/bin/"):
        argv[0] = argv[0].rsplit("/", 1)[-1]
    p = subprocess.run(argv, env={"PATH": f"{bindir}:/usr/bin:/bin", **env},
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


# each case under each shell, but a `bash` command line (bash's own -o pipefail) under dash
@pytest.mark.parametrize("shell,command,args,env", [
    (shell, *case) for shell in SHELLS for case in CASES
    if shell == "bash" or not case[0][0].endswith("bash")])
def test_what_the_program_gets_is_what_the_shell_gives(shell, command, args, env, tmp_path):
    assert _predicted(command, args, env) == _real(shell, command, args, env, tmp_path)


@pytest.mark.parametrize("command,script", [
    (["bash", "-euo", "pipefail", "-c", "x"], True),
    (["bash", "-o", "pipefail", "-c", "x"], True),
    (["bash", "+o", "pipefail", "-ec", "x"], True),
    (["bash", "--norc", "--rcfile", "f", "-lc", "x"], True),
    (["sh", "-e", "script.sh", "-c"], False),
    (["sh", "script.sh"], False),
    (["sh", "--", "-c"], False),
    (["python", "-c", "x"], False),
])
def test_shell_options_before_the_script(command, script):
    assert cmdline.shell_script(cmdline.tokens(_view(command, None, {}))) is script


def _render(container: dict) -> dict:
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [{
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm"},
        "spec": {"selector": {"matchLabels": {"app": "llm"}}, "template": {
            "metadata": {"labels": {"app": "llm"}}, "spec": {"containers": [{
                "name": "llm", "image": "ghcr.io/ggml-org/llama.cpp:server-b5000",
                "resources": {"requests": {"cpu": "8", "memory": "16Gi"},
                              "limits": {"cpu": "8", "memory": "16Gi"}}, **container}]}}}}],
        "functionConfig": {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                           "metadata": {"name": "t"}, "spec": {}}}
    p = run_fn([], json.dumps(doc))
    assert p.returncode == 0, p.stderr
    return load(p.stdout)


def test_a_script_that_sets_the_thread_count_itself_is_warned_of():
    out = _render({"command": ["/bin/sh", "-c", "export LLAMA_ARG_THREADS=32 "
                               "OMP_NUM_THREADS=32; exec llama-server -m /models/m.gguf"]})
    warned = [(r["message"].split(" itself")[0], r["field"]["path"])
              for r in results(out, "warning")]
    assert warned == [
        ("container 'llm': the command line sets OMP_NUM_THREADS='32'",
         "spec.template.spec.containers[0].command[2]"),
        ("container 'llm': the command line sets LLAMA_ARG_THREADS='32'",
         "spec.template.spec.containers[0].command[2]")]
    assert results(out, "warning")[1]["message"] == (
        "container 'llm': the command line sets LLAMA_ARG_THREADS='32' itself, which the "
        "program gets instead of the env's 4 (llama.cpp: the 8 pinned CPUs as 4 physical "
        "cores (2 threads per core), since llama.cpp runs one thread per physical core by "
        "itself): a shell's assignment or `env` replaces the container's env of that name "
        "(POSIX Shell Command Language 2.9.1); remove it there, or write LLAMA_ARG_THREADS=4")


def test_a_lower_count_set_by_env_is_kept_as_a_lower_env_value_is():
    out = _render({"command": ["env", "OMP_NUM_THREADS=2", "llama-server", "-m", "/m"]})
    assert results(out, "warning") == []


def test_flags_in_an_unquoted_variable_are_the_programs():
    out = _render({"command": ["sh", "-c", "exec llama-server -m /m.gguf $EXTRA_ARGS"],
                   "env": [{"name": "EXTRA_ARGS", "value": "-t 32 --port 8080"}]})
    assert [r["message"] for r in results(out, "warning")] == [
        "container 'llm': llama.cpp -t 32 asks for more threads than the 8 pinned CPUs as 4 "
        "physical cores (2 threads per core), since llama.cpp runs one thread per physical "
        "core by itself and wins over LLAMA_ARG_THREADS; set it to 4"]


def test_bash_options_before_c_make_a_script():
    # was: `-t $THREADS` read as a literal, an error, the item left unchanged
    out = _render({"command": ["/bin/bash", "-euo", "pipefail", "-c"],
                   "args": ["M=$(ls -t /models | head -1); exec llama-server -m $M -t $T"],
                   "env": [{"name": "T", "value": "4"}]})
    assert results(out, "error") == []
    assert results(out, "warning") == []
