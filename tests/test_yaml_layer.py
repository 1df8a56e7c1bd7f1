"""The YAML layer (krm_fn/yaml/) stands alone: it imports nothing else from krm_fn, it does
not shadow PyYAML's `yaml`, and the round-trip fallback (ruamel.yaml) loads only when used."""
import ast
import subprocess
import sys
from pathlib import Path

import yaml

from krm_fn.yaml import emit, load, spans

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "krm_fn" / "yaml"


def test_the_yaml_package_imports_nothing_else_from_krm_fn():
    modules = sorted(PACKAGE.glob("*.py"))
    assert {p.name for p in modules} >= {"__init__.py", "load.py", "spans.py", "emit.py",
                                          "ruamel.py"}
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not (isinstance(node, ast.ImportFrom) and node.level), path.name
            for name in names:
                if name.startswith("krm_fn"):
                    assert name.startswith("krm_fn.yaml"), (path.name, name)


def test_import_yaml_is_still_pyyaml():
    assert hasattr(yaml, "safe_load") and hasattr(yaml, "compose_all")
    assert load.yaml is yaml and spans.yaml is yaml and emit.yaml is yaml


def test_ruamel_is_imported_only_for_the_fallback():
    code = ("import sys\nfrom krm_fn import resourcelist\n"
            "doc = resourcelist.parse('a: 1\\n', False)\n"
            "resourcelist.render(doc, {0: [(('a',), '2')]}, [], [])\n"
            "print(any(m.split('.')[0] == 'ruamel' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


def test_plain_key_is_the_key_the_fast_builder_makes():
    import yaml
    from krm_fn.yaml.load import Loader, _build_plain, _Refused, plain_key
    keys = ["a", "~", "null", "Null", "NULL", '""', "''", "!!null x", "!!str ~", "<<",
            '"<<"', "!!merge x", "1", "true", "'a b'", "[a]", "{a: b}", "? x\n"]
    for key in keys:
        text = f"{key}: v\n"
        node = yaml.compose(text, Loader=Loader)
        k = node.value[0][0]
        try:
            built = _build_plain(node, 0, [0])
        except _Refused:
            built = None
        assert plain_key(k) == (None if built is None else next(iter(built))), key
