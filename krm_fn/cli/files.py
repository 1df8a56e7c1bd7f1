"""Reading the files a render is given, within bounds: manifests (`krm-fn run FILE...`,
stdin), the function config (`--config`, the legacy plugin's config file) and `--baseline`.

Every file must be a regular file (a FIFO, a device such as /dev/zero, or a link to one, is
refused before a byte is read: opened non-blocking, checked with fstat) and no larger than
its bound: MAX_INPUT_BYTES for the manifests of one run together (stdin included),
MAX_CONFIG_BYTES for a config or baseline. The bounds are far above any repository's
manifests (the 10,000-item benchmark list is about 20 MB) and far below what the YAML
reader's own node bound would let through first.

Load restriction, after kustomize's `--load-restrictor` (LoadRestrictionsRootOnly, its
default, refuses files outside the kustomization root; LoadRestrictionsNone lifts it;
https://kubectl.docs.kubernetes.io/references/kustomize/cmd/build/): a file named by a
path inside the current directory (the repository, where CI, Flux and pre-commit run) must
resolve, symbolic links followed, inside it too, so a link committed to the repository
cannot make the render read (and copy into its output) a file from elsewhere on the
machine. A path named outside the current directory is read as named. ROOT_ONLY is the
default; NONE reads links wherever they lead.

Importing this module imports only the standard library.
"""
from __future__ import annotations

import os
import stat
import sys

MAX_INPUT_BYTES = 256 * 1024 * 1024     # manifests of one run, stdin included
MAX_CONFIG_BYTES = 16 * 1024 * 1024     # one function config or baseline file
ROOT_ONLY, NONE = "LoadRestrictionsRootOnly", "LoadRestrictionsNone"
RESTRICTIONS = (ROOT_ONLY, NONE)

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def _error(message: str):
    from krm_fn.resourcelist import InputError
    return InputError(message)


def _too_large(what: str, limit: int) -> Exception:
    return _error(f"{what} is larger than {limit} bytes ({limit // (1024 * 1024)} MiB), the "
                  f"most krm-fn reads from it; split the input")


def read_stdin(what: str = "stdin", limit: int = MAX_INPUT_BYTES) -> bytes:
    """At most `limit` bytes of stdin; raises InputError when there are more."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise _too_large(what, limit)
    return data


def check_tree(path: str, what: str, restriction: str = ROOT_ONLY) -> None:
    """Raise InputError when `path` lies inside the current directory but resolves
    (symbolic links followed) outside it, unless `restriction` is NONE. `what` names the
    file in the message (e.g. "--config c.yaml")."""
    if restriction == NONE:
        return
    cwd = os.getcwd()
    named = os.path.abspath(path)
    if os.path.commonpath([cwd, named]) != cwd:
        return
    real, root = os.path.realpath(path), os.path.realpath(cwd)
    if os.path.commonpath([root, real]) != root:
        raise _error(f"{what}: a symbolic link to {real}, outside the current directory "
                     f"{root}: krm-fn does not read files a link leads out of the tree to "
                     f"(as kustomize's load restrictor); pass --load-restrictor {NONE} to "
                     f"allow it")


def read_file(path: str, what: str, limit: int, restriction: str = ROOT_ONLY) -> bytes:
    """The bytes of the regular file `path` (at most `limit`), after check_tree. Raises
    InputError naming `what` for a file that is not regular, larger than `limit`, or
    leaves the tree; OSError when it cannot be opened or read."""
    check_tree(path, what, restriction)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
            raise _error(f"{what} is {kind}, not a regular file; krm-fn reads only regular "
                         f"files")
        if st.st_size > limit:
            raise _too_large(what, limit)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:                 # it grew while being read
            raise _too_large(what, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)
