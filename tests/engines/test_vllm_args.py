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


def _option_strings(version: str) -> set:
    """Every option string vLLM `version` registers for `vllm serve` / the OpenAI server:
    the string arguments starting with `-` of each add_argument call in
    vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py."""
    found = set()
    for path in ("vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py"):
        for node in ast.walk(ast.parse(fetch.require("vllm", version, path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == \
                    "add_argument":
                found |= {a.value for a in node.args if isinstance(a, ast.Constant)
                          and isinstance(a.value, str) and a.value.startswith("-")}
    return found


# abbreviated long options: argparse takes an unambiguous prefix (allow_abbrev, left on by
# FlexibleArgumentParser); an ambiguous one stops vLLM ("ambiguous option")
ABBREVIATED = [
    ["--tensor-parallel", "2"],
    ["--tensor-parallel=2", "--pipeline-parallel", "2"],
    ["--tensor_parallel", "2"],
    ["--pipeline-par", "3", "-tp", "2"],
    ["--tensor-parallel-size", "2", "--tensor-par", "4"],
]


@pytest.mark.parametrize("argv", ABBREVIATED, ids=[" ".join(a) for a in ABBREVIATED])
def test_abbreviated_sizes_as_vllms_parser_reads_them(argv):
    parser = _parser_class()(conflict_handler="resolve")
    sizes = {"--tensor-parallel-size", "--pipeline-parallel-size", "-tp", "-pp"}
    options = _option_strings("0.5.4")
    assert sizes - {"-tp", "-pp"} <= options
    for opt in sorted(options - sizes):
        parser.add_argument(opt)
    parser.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    got = parser.parse_args(argv)           # accepted: the prefixes are unambiguous there
    world, _ = ranks.vllm_sizes([Token(w, ("args", i)) for i, w in enumerate(argv)])
    assert world == got.tensor_parallel_size * got.pipeline_parallel_size
