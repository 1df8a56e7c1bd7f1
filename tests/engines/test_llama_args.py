"""krm-fn's reading of llama-server's thread flags (krm_fn/rules/engines/llama_cpp.py
read_args) against llama.cpp's own parser (common/arg.cpp common_params_parse, built by
tests/engines/llama.py from the llama.cpp that llama-cpp-python 0.3.36 vendors) on the same
argv: whether llama-server refuses to start, and the threads and batch threads it sets.

krm-fn is coarser on purpose in one way: it reads only the thread flags, so the argv here
hold nothing else (llama-server refuses any word it does not know; krm-fn does not list
them)."""
from __future__ import annotations

import random
import subprocess

import pytest

from krm_fn.rules.cmdline import Token
from krm_fn.rules.engines import llama_cpp
from tests.engines import llama

THREADS = llama_cpp.ENGINE.env[0].flags
FLAGS = THREADS + llama_cpp.BATCH_FLAGS + ("--threads_batch",)
GLUED = ("--threads=4", "-t4", "-tb=2", "-tb3", "--threads-batch=5", "--threads_batch=5",
         "-t=3")
VALUES = ("3", "0", "-1", "+5", "7x", " 6", "x", "", "99999999999", "2147483647",
          "-2147483648", "0005", "-t", "\t9", "0x10", "1e3")


def _generated(n: int, seed: int = 32) -> list[list[str]]:
    """Argvs of flag/value pairs and glued words (a flag may end the argv without value)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        argv: list[str] = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.15:
                argv.append(rng.choice(GLUED))
            else:
                argv.append(rng.choice(FLAGS))
                argv.append(rng.choice(VALUES))
        if rng.random() < 0.1:
            argv.append(rng.choice(FLAGS))
        out.append(argv)
    return out


NAMED = [["-t", "4"], ["--threads=4"], ["-t4"], ["-t", "0"], ["-t", "8x"],
         ["--threads_batch", "3"], ["-t"], ["-t", "four"], ["-t", "9", "-t", "3"],
         ["-tb", "7"], ["-t", "5", "-tb", "-1"], ["-t", "99999999999"],
         ["-t", "", "4"], ["-t", "6", "--threads", ""]]   # an empty argument is a value


def _krm_fn(argv: list[str]) -> str:
    """What krm-fn says llama-server does with `argv`, in the parser program's terms
    (`threads` / `batch` None: not set, "hw": every CPU)."""
    toks = [Token(w, ("args", i)) for i, w in enumerate(argv)]
    threads = llama_cpp.read_args(toks, THREADS)
    batch = llama_cpp.read_args(toks, llama_cpp.BATCH_FLAGS)
    if any(a.refused for a in threads + batch):
        return "refused"

    def value(args):
        return None if not args else (args[-1].threads or "hw")
    t, b = value(threads), value(batch)
    return f"threads {t} batch {b if b is not None else t}"


def _parser(exe, argv: list[str]) -> str:
    """The parser program's answer in the same terms: its hardware_concurrency() shown as
    "hw", a count left unset (no -t) as None."""
    proc = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    if out == ["refused"]:
        return "refused"
    _, t, _, b, _, hw, _, unset = out
    assert all(llama_cpp.stoi(v) != int(hw) for v in argv), \
        f"a value equal to this machine's {hw} CPUs cannot be told from <= 0"
    word = {hw: "hw", unset: None}
    return f"threads {word.get(t, t)} batch {word.get(b, b)}"


@pytest.fixture(scope="module")
def parser():
    return llama.require()


@pytest.mark.parametrize("argv", NAMED + _generated(300), ids=repr)
def test_thread_flags_are_read_as_llama_server_reads_them(parser, argv):
    assert _krm_fn(argv) == _parser(parser, argv)
