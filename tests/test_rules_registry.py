"""The rule registry (krm_fn/rules/__init__.py): every rule module declares ID, OPTIONS and
apply, with its docstring as documentation; no rule module imports another (what several
need is in krm_fn/rules/facts.py, computed once per pod before the rules run)."""
import ast
import inspect
from pathlib import Path

import pytest

from krm_fn import rules
from krm_fn.config import explain
from krm_fn.rules import RULES, merged, rule_id
from tests.helpers import ROOT

RULES_DIR = ROOT / "krm_fn" / "rules"
ALL = (merged, *RULES)
RULE_MODULES = {m.__name__ for m in ALL}
# Shared helpers that are not rules: any rule may import them.
HELPERS = {"krm_fn.rules.facts", "krm_fn.rules.choice", "krm_fn.rules.cmdline",
           "krm_fn.rules.envvars",
           "krm_fn.rules.engines", "krm_fn.rules.engines.base",
           "krm_fn.rules.engines.recognition", "krm_fn.rules.engines.ranks",
           "krm_fn.rules.engines.programs"}      # which words are in program position


def _imports(path: Path, package: str) -> set[str]:
    """The krm_fn.rules modules `path` imports (`from krm_fn.rules import x` counts as
    krm_fn.rules.x)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{mod}" if mod else base
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m.startswith("krm_fn.rules")}


def _module(path: Path) -> tuple[str, str]:
    """(module name, its package) of a file under krm_fn/."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def test_every_rule_declares_id_options_apply_and_documentation():
    ids = [rule_id(m) for m in ALL]
    assert len(set(ids)) == len(ids)
    for m in ALL:
        assert isinstance(m.ID, str) and m.ID, m.__name__
        assert isinstance(m.OPTIONS, tuple), m.__name__
        assert callable(m.apply), m.__name__
        first = inspect.cleandoc(m.__doc__).split("\n", 1)[0]
        assert first.startswith(m.ID) and ": " in first, (m.__name__, first)
        assert explain.explain_rule(m.ID).startswith(f"RULE: {m.ID} (")


@pytest.mark.parametrize("module", ALL, ids=lambda m: m.ID)
def test_options_are_config_fields(module):
    """OPTIONS name fields of the function config (their defaults live there)."""
    for path in module.OPTIONS:
        assert explain.lookup(path) is not None, (module.ID, path)


def test_no_rule_imports_another_rule():
    for path in sorted(RULES_DIR.glob("*.py")):
        name, package = _module(path)
        imported = _imports(path, package) - {name}
        if name == "krm_fn.rules":
            continue            # the registry imports every rule
        bad = imported & RULE_MODULES
        assert not bad, f"{name} imports the rule(s) {sorted(bad)}"


def test_engine_modules_import_only_shared_helpers():
    for path in sorted((RULES_DIR / "engines").glob("*.py")):
        name, package = _module(path)
        imported = _imports(path, package) - {name}
        if name == "krm_fn.rules.engines":     # the registry imports its engines
            imported = {m for m in imported if not m.startswith("krm_fn.rules.engines.")}
        allowed = HELPERS | {"krm_fn.rules"}
        bad = {m for m in imported if m not in allowed
               and not any(m.startswith(h + ".") for h in ("krm_fn.rules.cmdline",
                                                           "krm_fn.rules.envvars",
                                                           "krm_fn.rules.facts",
                                                           "krm_fn.rules.engines.base",
                                                           "krm_fn.rules.engines.recognition"))}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_helpers_import_no_rule():
    for path in sorted(RULES_DIR.glob("*.py")):
        name, package = _module(path)
        if name not in HELPERS:
            continue
        assert not (_imports(path, package) & RULE_MODULES), name


def test_facts_are_computed_once_per_pod(monkeypatch):
    """run() computes the facts once, before the rules; engines are detected once per
    container with thread env (not once per rule that asks)."""
    from krm_fn import pipeline as engine
    from krm_fn.rules import engines, facts
    calls = {"compute": 0, "detect": 0}
    compute, detect = facts.compute, engines.detect

    def counted_compute(pod, ctx):
        calls["compute"] += 1
        return compute(pod, ctx)

    def counted_detect(c):
        calls["detect"] += 1
        return detect(c)

    monkeypatch.setattr(facts, "compute", counted_compute)
    monkeypatch.setattr(facts.serving, "detect", counted_detect)
    res = {"limits": {"cpu": "4", "memory": "8Gi"}}
    items = [{"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "d", "labels": {"tier": "inference"}},
              "spec": {"template": {"spec": {"containers": [
                  {"name": "a", "image": "pytorch/torchserve:0.9.0-cpu", "resources": res},
                  {"name": "b", "image": "vllm/vllm-openai-cpu:v1", "resources": res}]}}}}]
    fc = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
          "metadata": {"name": "t"}, "spec": {"selector": {"matchLabels": {"tier": "inference"}}}}
    out = engine.transform(items, fc)
    assert out.ops and not out.has_errors
    assert calls == {"compute": 1, "detect": 2}
    assert rules.facts is facts
