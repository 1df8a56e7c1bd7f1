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


def _run(code: str, path: Path, *flags: str, write: bool = True):
    """`python FLAGS -c CODE` in a fresh interpreter with `path` on PYTHONPATH and as the
    working directory, writing bytecode unless `write` is False."""
    env = dict(os.environ, PYTHONPATH=str(path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True,
                          text=True, env=env, cwd=path, timeout=60)


def _python(code: str, path: Path, *flags: str, write: bool = True) -> str:
    p = _run(code, path, *flags, write=write)
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
        p = _run("import krm_fn.mod", tree)
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


def _both(tree: Path, code: str) -> tuple[str, str]:
    """`code`'s output (stdout, then the last line of stderr and the exit status) with the
    finder (F) and with the standard machinery alone (S: the finder taken off
    sys.meta_path right after `import krm_fn`), each in a fresh interpreter."""
    out = []
    for standard in (False, True):
        pre = "import sys, krm_fn\n"
        if standard:
            pre += ("import krm_fn.startup as s\n"
                    "sys.meta_path[:] = [f for f in sys.meta_path if f is not s.Finder]\n")
        p = _run(pre + code, tree)
        err = p.stderr.strip().splitlines()
        out.append(f"{p.stdout.strip()} | {err[-1] if err else ''} | {p.returncode}")
    return out[0], out[1]


_SHOW = ("import importlib\n"
         "try:\n    m = importlib.import_module(NAME)\n"
         "    print(m.__file__, getattr(m, '__path__', None), getattr(m, 'KIND', None))\n"
         "except Exception as e:\n    print(type(e).__name__, e)\n")


@pytest.mark.parametrize("case", [
    "extension module beside the source", "extension package init", "bytecode-only package",
    "bytecode-only module in an earlier entry", "a name with a slash", "an empty name",
    "trailing slash in __path__", "relative __path__ entry, then chdir", "namespace package",
])
def test_it_picks_what_the_standard_finder_picks(tree: Path, case: str):
    import _imp
    pkg = tree / "krm_fn"
    ext = _imp.extension_suffixes()[0]
    name, pre = "krm_fn.both", ""
    (pkg / "both.py").write_text("KIND = 'source module'\n")
    if case == "extension module beside the source":
        (pkg / f"both{ext}").write_bytes(b"not an ELF file")      # the standard tries it
    elif case == "extension package init":
        (pkg / "both").mkdir()
        (pkg / "both" / f"__init__{ext}").write_bytes(b"not an ELF file")
        (pkg / "both" / "__init__.py").write_text("KIND = 'source package'\n")
    elif case == "bytecode-only package":
        (pkg / "both").mkdir()
        py_compile.compile(str(pkg / "both.py"), cfile=str(pkg / "both" / "__init__.pyc"))
    elif case == "bytecode-only module in an earlier entry":
        (tree / "first").mkdir()
        py_compile.compile(str(pkg / "both.py"), cfile=str(tree / "first" / "both.pyc"))
        pre = f"krm_fn.__path__.insert(0, {str(tree / 'first')!r})\n"
    elif case == "a name with a slash":
        (pkg / "sub").mkdir()
        (pkg / "sub" / "x.py").write_text("KIND = 'x'\n")
        name = "krm_fn.sub/x"
    elif case == "an empty name":
        name = "krm_fn."
    elif case == "trailing slash in __path__":
        pre = "krm_fn.__path__[0] += '/'\n"
    elif case == "relative __path__ entry, then chdir":
        (tree / "elsewhere" / "krm_fn").mkdir(parents=True)
        (tree / "elsewhere" / "krm_fn" / "both.py").write_text("KIND = 'elsewhere'\n")
        (pkg / "first.py").write_text("")
        pre = ("import os\nkrm_fn.__path__[:] = ['krm_fn']\nimport krm_fn.first\n"
               "os.chdir('elsewhere')\n")
    else:
        (pkg / "ns").mkdir()
        (pkg / "ns" / "mod.py").write_text("KIND = 'in a namespace package'\n")
        name = "krm_fn.ns.mod"
    f, s = _both(tree, pre + f"NAME = {name!r}\n" + _SHOW)
    assert f == s


def test_its_loader_refuses_another_modules_name_as_the_standard_one(tree: Path):
    code = ("import krm_fn.mod as m\ntry:\n    m.__loader__.get_code('krm_fn.other')\n"
            "except ImportError as e:\n    print(e)\n")
    f, s = _both(tree, code)
    assert f == s and f.startswith("loader for krm_fn.mod cannot handle krm_fn.other")


def test_importing_krm_fn_again_keeps_one_finder(tree: Path):
    code = ("import sys, krm_fn.mod\nfor k in [k for k in sys.modules if k.startswith('krm_fn')]:\n"
            "    del sys.modules[k]\nimport krm_fn.mod\n"
            "print([f.__module__ for f in sys.meta_path if getattr(f, '_krm_fn_finder', 0)])")
    assert _python(code, tree) == "['krm_fn.startup']"


def test_python_v_prints_the_standard_loaders_lines(tree: Path):
    _python("import krm_fn.mod", tree)
    p = _run("import krm_fn.mod", tree, "-v")
    pyc = tree / "krm_fn" / "__pycache__" / f"mod.{sys.implementation.cache_tag}.pyc"
    assert f"# {pyc} matches {tree / 'krm_fn' / 'mod.py'}" in p.stderr
    assert f"# code object from '{pyc}'" in p.stderr


def test_a_pycache_prefix_set_after_start_up_is_the_standard_loaders(tree: Path):
    code = ("import sys, krm_fn\nsys.pycache_prefix = {p!r}\nimport krm_fn.mod as m, os\n"
            "print(m.__cached__, os.path.exists(m.__cached__))")
    f, s = _both(tree, code.format(p=str(tree / "prefix")))
    assert f == s and f.startswith(str(tree / "prefix")), (f, s)


def test_module_attributes_are_set_in_the_standard_order(tree: Path):
    (tree / "krm_fn" / "pkg").mkdir()
    (tree / "krm_fn" / "pkg" / "__init__.py").write_text("")
    code = ("import krm_fn.mod as m, krm_fn.pkg as p\n"
            "print(list(vars(m)), list(vars(p)), m.__spec__.cached, p.__spec__.cached)")
    f, s = _both(tree, code)
    assert f == s and "'__file__', '__cached__', '__builtins__'" in f
