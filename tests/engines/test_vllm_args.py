"""krm-fn's reading of vLLM's tensor and pipeline parallel sizes (krm_fn/rules/engines/
ranks.py vllm_sizes, flexible) against vLLM's own FlexibleArgumentParser, the class of
vllm/utils.py at 0.5.4 taken out of the sdist with `ast` and run in-process, with the two
arguments as vllm/engine/arg_utils.py adds them (`--tensor-parallel-size`/`-tp`,
`--pipeline-parallel-size`/`-pp`, type int): vLLM accepts `_` for `-` in any `--` name."""
from __future__ import annotations

import argparse
import ast
import sys

import pytest

from krm_fn.rules.cmdline import Token
from krm_fn.rules.engines import ranks
from tests.engines import fetch

ARGVS = [
    ["--tensor-parallel-size", "2"],
    ["--tensor_parallel_size", "2"],
    ["--tensor_parallel-size", "2"],
    ["--tensor-parallel_size=2"],
    ["-tp", "2", "--pipeline_parallel_size=2"],
    ["--tensor-parallel-size", "2", "--tensor_parallel_size", "4"],
    ["--pipeline-parallel_size", "3", "-tp=2"],
    ["--model", "m", "--tensor_parallel_size=4", "--pipeline-parallel-size", "2"],
    [],
]


def _parser_class():
    text = fetch.require("vllm", "0.5.4", "vllm/utils.py")
    tree = ast.parse(text)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)
              and n.name == "FlexibleArgumentParser"]
    scope = {"argparse": argparse, "sys": sys}
    exec(compile(ast.Module([cls], []), "vllm/utils.py", "exec"), scope)
    return scope["FlexibleArgumentParser"]


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) or "none" for a in ARGVS])
def test_parallel_sizes_as_vllms_parser_reads_them(argv):
    parser = _parser_class()()
    parser.add_argument("--model")
    parser.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    got = parser.parse_args(argv)
    world, _ = ranks.vllm_sizes([Token(w, ("args", i)) for i, w in enumerate(argv)])
    assert world == got.tensor_parallel_size * got.pipeline_parallel_size
