"""The structure the project keeps (issue 11 part 6 and 7): no import cycles between krm_fn
modules (module-level imports; an import inside a function is a deliberate lazy import), no
module over 500 lines, no function over 80 lines, and no user-facing text that cites the
developers' notes (kubelet.md, cases.md, workloads.md, krm.md, DESIGN.md), which users do not
have."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "krm_fn"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
NOTES = re.compile(r"(?<![\w/])(kubelet|workloads|krm|cases)\.md\b|DESIGN\.md|shared/reference")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, known: dict) -> set[str]:
    """krm_fn modules that `name` imports at module level (not inside functions)."""
    tree = ast.parse(path.read_text())
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.If):        # `if TYPE_CHECKING:` blocks do not run
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
            if base in known and len(subs) < len(node.names):
                found.add(base)     # a name defined in `base` itself, not one of its modules
            found |= subs
    found.discard(name)
    return found


def test_no_import_cycles():
    known = _modules()
    graph = {n: _imports(n, p, known) for n, p in known.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(n: str, stack: list[str]) -> None:
        state[n] = 1
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycles.append(" -> ".join(stack[stack.index(m):] + [n, m]) if m in stack
                              else f"{n} -> {m}")
            elif m not in state:
                visit(m, stack + [n])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
    assert cycles == []


def test_no_module_over_500_lines():
    big = {str(p.relative_to(ROOT)): p.read_text().count("\n") for p in _modules().values()}
    assert {k: v for k, v in big.items() if v > MAX_MODULE_LINES} == {}


def test_no_function_over_80_lines():
    long = []
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n})")
    assert long == []


def test_no_citation_of_the_developers_notes():
    hits = []
    for path in list(_modules().values()) + sorted(ROOT.glob("*.md")) + sorted(
            (ROOT / "docs").glob("*.md")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if NOTES.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == []
