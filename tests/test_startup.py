"""krm_fn/startup.py: the finder and loader of krm_fn's own modules decide what the standard
import machinery decides (each case in a fresh interpreter: the finder is installed once
per process, when krm_fn is first imported)."""
from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, path: Path, *flags: str, write: bool = True) -> str:
    env = dict(os.environ, PYTHONPATH=str(path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    p = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True,
                       env=env, cwd=path, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A package named krm_fn holding the real __init__.py and startup.py and a module
    `mod` (X = 1)."""
    pkg = tmp_path / "krm_fn"
    pkg.mkdir()
    for name in ("__init__.py", "startup.py"):
        shutil.copy(ROOT / "krm_fn" / name, pkg / name)
    (pkg / "mod.py").write_text("X = 1\n")
    return tmp_path


def test_the_repository_modules_load_through_it_with_the_standard_spec():
    code = ("import importlib.machinery as m, sys, krm_fn.pipeline as p, krm_fn.startup as s\n"
            "for name in ('krm_fn.pipeline', 'krm_fn.rules.threads'):\n"
            "    mod = __import__(name, fromlist=['x'])\n"
            "    parent = sys.modules[name.rpartition('.')[0]]\n"
            "    std = m.PathFinder.find_spec(name, parent.__path__)\n"
            "    got = mod.__spec__\n"
            "    assert type(got.loader) is s.Loader, got\n"
            "    assert (got.origin, got.cached, got.submodule_search_locations, got.parent,"
            " got.has_location) == (std.origin, std.cached, std.submodule_search_locations,"
            " std.parent, std.has_location), (got, std)\n"
            "    assert mod.__file__ == std.origin and mod.__cached__ == std.cached\n"
            "print(sys.meta_path[0] is s.Finder)\n")
    assert _python(code, ROOT) == "True"


def test_a_stale_pyc_is_not_used(tree: Path):
    read = "import krm_fn.mod as m, os; print(m.X, os.path.exists(m.__cached__))"
    assert _python(read, tree) == "1 True"               # compiled, pyc written
    src = tree / "krm_fn" / "mod.py"
    st = src.stat()
    src.write_text("X = 2\n")                             # same size, newer mtime
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert _python(read, tree) == "2 True"
    st = src.stat()
    src.write_text("X = 33\n")                            # same mtime, other size
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _python(read, tree) == "33 True"


@pytest.mark.parametrize("damage", ["magic", "truncated", "not code", "hash-based"])
def test_a_pyc_it_cannot_use_goes_to_the_standard_loader(tree: Path, damage: str):
    import importlib.util
    import marshal
    _python("import krm_fn.mod", tree)
    pyc = Path(importlib.util.cache_from_source(str(tree / "krm_fn" / "mod.py")))
    data = pyc.read_bytes()
    if damage == "magic":
        pyc.write_bytes(b"\0\0\0\0" + data[4:])
    elif damage == "truncated":
        pyc.write_bytes(data[:10])
    elif damage == "not code":
        pyc.write_bytes(data[:16] + marshal.dumps(42))
    else:
        (tree / "krm_fn" / "mod.py").write_text("X = 5\n")
        py_compile.compile(str(tree / "krm_fn" / "mod.py"), cfile=str(pyc),
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    if damage == "not code":     # the standard loader refuses it too, with the same error
        p = subprocess.run([sys.executable, "-c", "import krm_fn.mod"], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tree)
        assert p.returncode == 1 and "ImportError: Non-code object in" in p.stderr
        return
    assert _python("import krm_fn.mod as m; print(m.X)", tree) == (
        "5" if damage == "hash-based" else "1")


def test_a_moved_tree_names_its_own_files(tree: Path, tmp_path: Path):
    (tree / "krm_fn" / "mod.py").write_text("def f():\n    raise ValueError\n")
    _python("import krm_fn.mod", tree)
    moved = tmp_path / "moved"
    shutil.copytree(tree / "krm_fn", moved / "krm_fn")     # copy2: pyc still valid
    code = ("import krm_fn.mod as m, traceback\ntry:\n    m.f()\nexcept ValueError as e:\n"
            "    print(traceback.extract_tb(e.__traceback__)[-1].filename)")
    assert _python(code, moved) == str(moved / "krm_fn" / "mod.py")


def test_a_package_comes_before_a_module_of_the_same_name(tree: Path):
    (tree / "krm_fn" / "both").mkdir()
    (tree / "krm_fn" / "both" / "__init__.py").write_text("KIND = 'package'\n")
    (tree / "krm_fn" / "both.py").write_text("KIND = 'module'\n")
    assert _python("import krm_fn.both as b; print(b.KIND, b.__path__)", tree) == (
        f"package {[str(tree / 'krm_fn' / 'both')]}")


def test_a_missing_module_is_reported_as_without_it(tree: Path):
    code = ("try:\n    import krm_fn.nothing\nexcept ModuleNotFoundError as e:\n"
            "    print(e.name, e)")
    assert _python(code, tree) == "krm_fn.nothing No module named 'krm_fn.nothing'"


def test_not_written_when_bytecode_writing_is_off(tree: Path):
    assert _python("import krm_fn.mod as m, os; print(m.X, os.path.exists(m.__cached__))",
                   tree, write=False) == "1 False"


@pytest.mark.parametrize("flags", [("-O",), ("-X", "pycache_prefix=cache")])
def test_not_installed_where_the_bytecode_is_another_file(tree: Path, flags: tuple):
    code = "import sys, krm_fn.startup as s, krm_fn.mod as m; print(s.Finder in sys.meta_path, m.X)"
    assert _python(code, tree, *flags) == "False 1"
