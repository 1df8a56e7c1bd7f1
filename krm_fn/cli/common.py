"""What every command shares, without click: decoding input bytes, one-line messages on
stderr, the guard that turns an exception into such a line (no traceback), and the
standalone wrapper `krm_fn.cli.main` uses for the command lines it runs without click.

Importing this module imports nothing beyond the standard library's `os` and `sys`.
"""
from __future__ import annotations

import os
import sys

DEBUG_ENV = "KRM_FN_DEBUG"
# True while krm_fn.cli.main runs a render in a process of its own (see end_process)
OWN_PROCESS = False


BOM = "\ufeff"


def decode(data: bytes, source: str, keep_bom: bool = False) -> str:
    """`data` as text: UTF-8, a leading byte-order mark dropped unless `keep_bom` (the
    render strips it itself and writes it back). `source` names the input in the message
    ("stdin", a file name). Raises resourcelist.InputError when `data` is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        from krm_fn.resourcelist import InputError
        raise InputError(f"{source} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start})") from None
    return text[1:] if text.startswith(BOM) and not keep_bom else text


def echo_err(message: str, nl: bool = True) -> None:
    """Write `message` (and a newline unless `nl` is False) to stderr and flush: exactly
    what `click.echo(message, err=True, nl=nl)` writes. Written directly when click would
    write it unchanged (a UTF-8 text stream, no ANSI escape in the message, not Windows);
    otherwise handed to click.echo, which then strips escapes or re-encodes as it does."""
    stream = sys.stderr
    encoding = getattr(stream, "encoding", None)
    if ("\x1b" in message or sys.platform == "win32" or getattr(stream, "errors", None) is None
            or not isinstance(encoding, str)
            or encoding.lower().replace("_", "-") not in ("utf-8", "utf8")):
        import click
        click.echo(message, err=True, nl=nl)
        return
    stream.write(message + "\n" if nl else message)
    stream.flush()


def end_process(code: int) -> None:
    """End the process now with exit status `code` when krm-fn's entry point runs it
    (OWN_PROCESS, set by krm_fn.cli.main) and writes to the process's own stdout and stderr:
    both are flushed, then `os._exit(code)`, so the interpreter neither frees the parsed
    input nor tears down its ~200 modules (~45 ms of a 2,000-item render, ~8 ms of a small
    one; docs/performance.md). Nothing else is pending then: no atexit handler, no open
    file. Returns (the caller exits as usual) in every other case: a test calling the
    entry point in-process, click's CliRunner, a flush that fails (the usual exit then
    reports it as before)."""
    if not OWN_PROCESS or sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def fail(message: str, code: int = 1) -> None:
    """`krm-fn: MESSAGE` on stderr, then exit with `code` (raises SystemExit)."""
    echo_err(f"krm-fn: {message}")
    sys.exit(code)


def guard(fn, *args) -> None:
    """Call `fn(*args)`; an InputError becomes its one-line message and exit 1, a broken
    pipe exit 1, any other exception `internal error: ...` and exit 1 (with the traceback
    instead when KRM_FN_DEBUG is set). SystemExit passes through."""
    try:
        fn(*args)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as e:  # no traceback for users; KRM_FN_DEBUG=1 shows it
        # InputError is resourcelist's: only a run that imported resourcelist can raise
        # it, so a command that never reads YAML (verify) does not import it for this test
        rl = sys.modules.get("krm_fn.resourcelist")
        if rl is not None and isinstance(e, rl.InputError):
            fail(str(e))
        if os.environ.get(DEBUG_ENV):
            raise
        fail(f"internal error: {type(e).__name__}: {e} (set {DEBUG_ENV}=1 for the "
             f"traceback, and please report it)")


class _QuietFlush:
    """A stream whose flush() ignores a broken pipe (what click puts on stdout and stderr
    after one, so the interpreter's final flush prints no 'Exception ignored')."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        """Flush the wrapped stream; a broken pipe is ignored, other OSErrors raise."""
        import errno
        try:
            self.wrapped.flush()
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str):
        return getattr(self.wrapped, attr)


def standalone(fn, *args) -> None:
    """Call `fn(*args)` as click's standalone mode calls a command, for the command lines
    krm_fn.cli.main runs without click: Ctrl-C prints an empty line and `Aborted!` on
    stderr and exits 1; a broken pipe that escapes `fn` exits 1 quietly. Returns normally
    (exit 0) when `fn` does; SystemExit passes through."""
    try:
        fn(*args)
    except KeyboardInterrupt:
        echo_err("")
        echo_err("Aborted!")
        sys.exit(1)
    except OSError as e:
        import errno
        if e.errno != errno.EPIPE:
            raise
        sys.stdout = _QuietFlush(sys.stdout)
        sys.stderr = _QuietFlush(sys.stderr)
        sys.exit(1)
