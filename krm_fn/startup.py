"""Start-up: a faster way in for krm-fn's own modules, installed by `krm_fn/__init__.py`.

Argo CD, kustomize and kpt start one process per render, and a small render's time is
mostly start-up (docs/performance.md, P4): a plain render imports about 90 krm_fn modules.
Python's source loader reads each module's cached bytecode with nine system calls (a stat of
the source, then open, fstat, ioctl, two lseeks, two reads and a close, through a buffered
file object) and about 0.1M instructions of importlib's Python code. `Loader` reads it with
open, fstat, read and close; `Finder` answers for `krm_fn.*` submodules as the standard
path finder would, from the same directory listing, with the spec's pyc path filled in and
a module that already has `__file__` and `__cached__` (importlib would look each up on the
empty module first, formatting an AttributeError per miss). Together: 10.5M fewer
instructions (269.0M -> 258.5M) and 466 fewer system calls on the 10-item render, about
4 % of its CPU time (docs/performance.md, "Where it stands").

What the standard machinery (importlib.machinery.PathFinder, FileFinder, SourceFileLoader)
decides is decided the same way, and every case the finder does not answer goes to it:

- `Finder.find_spec` answers only for a source module (`NAME.py`) or a source package
  (`NAME/__init__.py`) that FileFinder would pick in the first `__path__` entry holding
  anything for NAME: in each entry, in FileFinder's order, a package's `__init__` with an
  extension-module suffix, `.py` or `.pyc`, then `NAME` with those suffixes, from the
  directories' listings (refreshed when a directory's modification time changes, as
  FileFinder's; `importlib.invalidate_caches()` clears them) and `stat` for regular files.
  (FileFinder stats a package's `__init__` names without listing the package: where the
  package cannot be listed, or a listing is older than its directory's timestamp
  resolution, the finder finds no `__init__` and leaves the decision to it.)
  Anything else FileFinder would pick first (an extension module, a bytecode-only file), a
  namespace package, a relative `__path__` entry (FileFinder resolves it once, against
  the working directory of that moment), a case-insensitive import (`PYTHONCASEOK`), or
  nothing found: None, and the next finder of `sys.meta_path` decides;
- `Loader.get_code` uses `__pycache__/NAME.<cache tag>.pyc` beside the source
  (importlib.util.cache_from_source) only when its header has the interpreter's magic
  number, is timestamp-based, and names the source's modification time and size as the
  source is now (importlib._bootstrap_external._validate_timestamp_pyc); the code
  object's file names are set to the source path (`_imp._fix_co_filename`, for a moved
  tree). Every other case is SourceFileLoader.get_code's (a missing, stale, hash-based,
  truncated or damaged pyc: compiled from source, the pyc written unless
  `sys.dont_write_bytecode`);
- the spec, the module attributes (`__file__`, `__cached__`, `__path__`, `__loader__`),
  `python -X importtime`, `python -v`, `importlib.reload`, `importlib.resources`,
  `inspect` and tracebacks (the loader is a SourceFileLoader) are the standard ones.

One difference remains: the bytecode is opened with `os.open` rather than `io.open_code`,
so an application embedding Python that verifies imported code with
`PyFile_SetOpenCodeHook` (PEP 578) does not see krm_fn's pyc files (audit hooks see the
`open` event, with mode None). Not installed (`install` returns False) where the bytecode
would not be the file named above or the listing not FileFinder's: `python -O`/`-OO`
(`.opt-N.pyc`), a pycache prefix, no cache tag, a non-POSIX path separator, source suffixes
other than `.py`. Python's import system: https://docs.python.org/3/reference/import.html
(finders, loaders, cached bytecode invalidation: PEP 552).
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
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_TAG = sys.implementation.cache_tag
_SPEC = _EXTERNAL.spec_from_file_location
# FileFinder's suffixes in its order (importlib._bootstrap_external._get_supported_file_loaders)
_EXTENSIONS = tuple(_imp.extension_suffixes())
_BYTECODE = tuple(_EXTERNAL.BYTECODE_SUFFIXES)


def _is_file(path: str) -> bool:
    """importlib's _path_isfile: a regular file (following symlinks)."""
    try:
        return os.stat(path).st_mode & _FILE_TYPE == _REGULAR
    except (OSError, ValueError):
        return False


_CODE = type(_is_file.__code__)
_MODULE = type(sys)


class Loader(_EXTERNAL.SourceFileLoader):
    """importlib.machinery.SourceFileLoader for one krm_fn module (`name`, `path`: its
    .py file) whose `get_code` reads a valid cached pyc with four system calls (module
    docstring) and otherwise is the standard one."""

    def create_module(self, spec):
        """For a module (not a package) of this loader's file: a new module with
        `__file__` and `__cached__` already set to the spec's, as
        importlib._bootstrap._init_module_attrs then leaves them (so it does not look
        them up on an empty module first: each miss formats an AttributeError). None (the
        default module) otherwise."""
        if spec.submodule_search_locations is not None or spec.origin != self.path \
                or not spec.has_location:
            return None
        module = _MODULE(spec.name)
        module.__file__ = spec.origin
        module.__cached__ = spec.cached
        return module

    def get_code(self, fullname: str):
        """The module's code object: from `__pycache__/<stem>.<tag>.pyc` when it matches
        the source (magic number, timestamp-based, source mtime and size), else from
        SourceFileLoader.get_code (which compiles and writes the pyc). Raises what that
        raises (ImportError for another module's name or a non-code pyc, OSError for a
        missing source, SyntaxError)."""
        code = self._cached(fullname)
        return super().get_code(fullname) if code is None else code

    def _cached(self, fullname: str):
        """The code object of a valid pyc, or None (SourceFileLoader.get_code decides)."""
        path = self.path
        if fullname != self.name or sys.pycache_prefix is not None:
            return None
        head, _, tail = path.rpartition("/")
        pyc = f"{head}/__pycache__/{tail[:-3]}.{_TAG}.pyc"
        try:
            st = os.stat(path)
            fd = os.open(pyc, os.O_RDONLY | _CLOEXEC)
            try:
                data = os.read(fd, os.fstat(fd).st_size)
            finally:
                os.close(fd)
        except OSError:
            return None
        if (len(data) < 16 or data[:4] != _EXTERNAL.MAGIC_NUMBER or data[4:8] != b"\0\0\0\0"
                or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
            return None
        try:
            code = marshal.loads(memoryview(data)[16:])
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(code, _CODE):
            return None
        if sys.flags.verbose:                   # python -v: the standard loader's lines
            say = sys.modules["_frozen_importlib"]._verbose_message
            say("{} matches {}", pyc, path)
            say("code object from {!r}", pyc)
        _imp._fix_co_filename(code, path)
        return code


class Finder:
    """A sys.meta_path finder for the submodules of krm_fn (`krm_fn.X`, `krm_fn.X.Y`):
    the spec, with a `Loader`, of the source module or package the standard path finder
    would pick in the parent package's `__path__`; None whenever it would pick anything
    else or nothing (module docstring)."""

    _krm_fn_finder = True            # install() replaces an earlier copy of this class
    _listings: dict = {}             # directory -> (its st_mtime, the names in it)

    @classmethod
    def find_spec(cls, name: str, path=None, target=None):
        """The ModuleSpec of krm_fn submodule `name` in the package directories `path`
        (its parent's `__path__`), or None (the next finder decides)."""
        if path is None or not name.startswith(_PREFIX) or _EXTERNAL._relax_case():
            return None
        base = name.rpartition(".")[2]
        for entry in path:
            if not isinstance(entry, str) or not entry.startswith("/"):
                return None
            d = entry.rstrip("/")
            names = cls._names(d or "/")
            if base in names:                   # FileFinder: a package first
                pkg = f"{d}/{base}"
                inits = cls._names(pkg)         # (FileFinder stats each __init__ name)
                for suffix in _EXTENSIONS:
                    if "__init__" + suffix in inits and _is_file(f"{pkg}/__init__{suffix}"):
                        return None
                init = f"{pkg}/__init__.py"
                if "__init__.py" in inits and _is_file(init):
                    return _spec(name, init, [pkg])
                for suffix in _BYTECODE:
                    if "__init__" + suffix in inits and _is_file(f"{pkg}/__init__{suffix}"):
                        return None
            for suffix in _EXTENSIONS:
                if base + suffix in names and _is_file(f"{d}/{base}{suffix}"):
                    return None
            if base + ".py" in names:
                module = f"{d}/{base}.py"
                if _is_file(module):
                    return _spec(name, module, None)
            for suffix in _BYTECODE:
                if base + suffix in names and _is_file(f"{d}/{base}{suffix}"):
                    return None
        return None

    @classmethod
    def _names(cls, d: str) -> frozenset:
        """The names in directory `d`, listed again when its modification time changes
        (FileFinder._fill_cache: a missing, unreadable or non-directory `d` lists none)."""
        try:
            mtime = os.stat(d).st_mtime
        except OSError:
            mtime = -1
        got = cls._listings.get(d)
        if got is None or got[0] != mtime:
            try:
                names = frozenset(os.listdir(d))
            except (FileNotFoundError, PermissionError, NotADirectoryError):
                names = frozenset()
            got = cls._listings[d] = (mtime, names)
        return got[1]

    @classmethod
    def invalidate_caches(cls) -> None:
        """importlib.invalidate_caches(): list every directory again."""
        cls._listings.clear()


def _spec(name: str, path: str, search: list | None):
    """The spec FileFinder makes for source `path` (spec_from_file_location with the
    package's directory as `search`, None for a module), its `cached` set to the pyc path
    as importlib.util.cache_from_source names it (left to it when a pycache prefix was set
    after start-up)."""
    spec = _SPEC(name, path, loader=Loader(name, path), submodule_search_locations=search)
    if sys.pycache_prefix is None:
        head, _, tail = path.rpartition("/")
        spec.cached = f"{head}/__pycache__/{tail[:-3]}.{_TAG}.pyc"
    return spec


def install() -> bool:
    """Put Finder first on sys.meta_path, in place of any earlier copy (krm_fn imported
    again after its modules were dropped from sys.modules); False, and nothing installed,
    where its answers could differ from the standard machinery's (module docstring)."""
    if (sys.flags.optimize or sys.pycache_prefix is not None or _TAG is None
            or os.sep != "/" or os.altsep is not None
            or list(_EXTERNAL.SOURCE_SUFFIXES) != [".py"]
            or not callable(getattr(_EXTERNAL, "_relax_case", None))):
        return False
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_krm_fn_finder", False)]
    sys.meta_path.insert(0, Finder)
    return True
