"""Start-up: a faster way in for krm-fn's own modules, installed by `krm_fn/__init__.py`.

Argo CD, kustomize and kpt start one process per render, and a small render's time is
mostly start-up (docs/performance.md, P4): a plain render imports about 90 krm_fn modules.
Python's path finder and source loader spend about 0.3M instructions and 10 system calls on
each (a directory stat, two file stats, then open, fstat, ioctl, two lseeks, two reads and
a close for the bytecode): about a tenth of the instructions of a 10-item render.
`Finder` finds `krm_fn.*` submodules in their package's `__path__` with one or two stats,
and `Loader` reads the cached bytecode with open, fstat, read and close: 3 % fewer CPU
seconds on the 10-item render (docs/performance.md, "Start-up: krm-fn's own finder").

Nothing else changes. What the standard machinery decides is decided the same way:

- a package (`NAME/__init__.py`) before a module (`NAME.py`), both only as regular files;
- the bytecode is `__pycache__/NAME.<cache tag>.pyc` beside the source
  (importlib.util.cache_from_source), used only when its header has the interpreter's magic
  number, is timestamp-based, and names the source's modification time and size as the
  source is now (importlib._bootstrap_external._validate_timestamp_pyc); the code
  object's file names are set to the source path (`_imp._fix_co_filename`, for modules
  whose tree was moved);
- every other case goes to `importlib.machinery.SourceFileLoader.get_code` unchanged (a
  missing, stale, hash-based or truncated pyc: compiled from source, and the pyc written
  unless `sys.dont_write_bytecode`); a name the finder does not find (not on disk as
  above: a zip import, a namespace package, a module that does not exist) goes on to the
  next finder of `sys.meta_path`;
- the spec, the module attributes (`__file__`, `__cached__`, `__path__`, `__loader__`),
  `python -X importtime`, `importlib.reload`, `importlib.resources` and `inspect`/
  tracebacks (the loader is a SourceFileLoader) are the standard ones.

Not installed (`install` returns False) where the bytecode would not be the one named
above: `python -O`/`-OO` (`.opt-N.pyc`), `PYTHONPYCACHEPREFIX`, no cache tag, a
non-POSIX path separator. Python's import system: https://docs.python.org/3/reference/
import.html (finders and loaders, cached bytecode invalidation: PEP 552).
"""
from __future__ import annotations

import marshal
import os
import sys

import _imp


def _external():
    """importlib._bootstrap_external, without importing the importlib package where the
    interpreter has it already (CPython: frozen, loaded at start-up)."""
    found = sys.modules.get("_frozen_importlib_external")
    if found is None:                                    # pragma: no cover (not CPython)
        from importlib import _bootstrap_external as found
    return found


_EXTERNAL = _external()
_PREFIX = "krm_fn."
_REGULAR = 0o100000          # stat.S_IFREG
_FILE_TYPE = 0o170000        # stat.S_IFMT mask


class Loader(_EXTERNAL.SourceFileLoader):
    """importlib.machinery.SourceFileLoader for one krm_fn module (`name`, `path`: its
    .py file) whose `get_code` reads a valid cached pyc with four system calls (module
    docstring) and otherwise is the standard one."""

    def get_code(self, fullname: str):
        """The module's code object: from `__pycache__/<stem>.<tag>.pyc` when it matches
        the source (magic number, timestamp-based, source mtime and size), else from
        SourceFileLoader.get_code (compiles, writes the pyc). Raises what that raises
        (OSError for a missing source, SyntaxError, ImportError for a non-code pyc)."""
        path = self.path
        head, _, tail = path.rpartition("/")
        pyc = f"{head}/__pycache__/{tail[:-3]}.{_TAG}.pyc"
        try:
            st = os.stat(path)
            fd = os.open(pyc, os.O_RDONLY | os.O_CLOEXEC)
            try:
                data = os.read(fd, os.fstat(fd).st_size)
            finally:
                os.close(fd)
        except OSError:
            return super().get_code(fullname)
        if (len(data) < 16 or data[:4] != _EXTERNAL.MAGIC_NUMBER or data[4:8] != b"\0\0\0\0"
                or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
            return super().get_code(fullname)
        try:
            code = marshal.loads(memoryview(data)[16:])
        except (EOFError, ValueError, TypeError):
            return super().get_code(fullname)
        if not isinstance(code, _CODE):
            return super().get_code(fullname)
        _imp._fix_co_filename(code, path)
        return code


class Finder:
    """A sys.meta_path finder for the submodules of krm_fn (`krm_fn.X`, `krm_fn.X.Y`):
    looks in the parent package's `__path__` for `NAME/__init__.py`, then `NAME.py`
    (regular files), and returns their spec with a `Loader`; None for everything else."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        """The ModuleSpec of krm_fn submodule `name` in the package directories `path`, or
        None (not a krm_fn submodule, or not found there as a source file)."""
        if path is None or not name.startswith(_PREFIX):
            return None
        base = name.rpartition(".")[2]
        for entry in path:
            if not isinstance(entry, str):
                return None
            init = f"{entry}/{base}/__init__.py"
            if _is_file(init):
                return _SPEC(name, init, loader=Loader(name, init),
                             submodule_search_locations=[f"{entry}/{base}"])
            module = f"{entry}/{base}.py"
            if _is_file(module):
                return _SPEC(name, module, loader=Loader(name, module))
        return None


def _is_file(path: str) -> bool:
    try:
        return os.stat(path).st_mode & _FILE_TYPE == _REGULAR
    except (OSError, ValueError):
        return False


_TAG = sys.implementation.cache_tag
_SPEC = _EXTERNAL.spec_from_file_location
_CODE = type(_is_file.__code__)


def install() -> bool:
    """Put Finder first on sys.meta_path (once); False, and nothing installed, where the
    bytecode it reads would not be the interpreter's (module docstring)."""
    if (sys.flags.optimize or sys.pycache_prefix is not None or _TAG is None
            or os.sep != "/" or os.altsep is not None):
        return False
    if Finder not in sys.meta_path:
        sys.meta_path.insert(0, Finder)
    return True
