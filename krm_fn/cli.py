"""Command line: thin. `krm-fn` with no arguments is the KRM function (ResourceList on
stdin, ResourceList on stdout); `krm-fn run` tunes plain multi-document YAML files;
`krm-fn plugin` is kustomize's legacy exec plugin protocol.

Exit codes: 0 success; 1 when any error result was produced (the output is still written
first) or the input is unusable (one line on stderr, no traceback); 2 for usage errors.
"""
from __future__ import annotations

import os
import sys

import click

from krm_fn import __version__

_DEBUG_ENV = "KRM_FN_DEBUG"


def _decode(data: bytes, source: str) -> str:
    from krm_fn.resourcelist import InputError
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{source} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"krm-fn: {message}", err=True)
    sys.exit(code)


def _run(text: str, function_config, require_rl: bool, echo_warnings: bool) -> None:
    """Parse, transform, render, write; exit 1 on error results."""
    from krm_fn import engine, resourcelist
    doc = resourcelist.parse(text, require_resource_list=require_rl)
    fc = doc.function_config if function_config is None else function_config
    out = engine.transform(doc.items, fc, set_path=resourcelist.has_path_annotations(doc),
                           aliased=doc.aliased)
    results = [r.as_dict() for r in out.results] if doc.mode == "resourcelist" else []
    sys.stdout.write(resourcelist.render(doc, out.ops, out.emitted, results, out.replace))
    sys.stdout.flush()
    shown = [r for r in out.results
             if r.severity == "error" or (echo_warnings and r.severity == "warning")]
    for r in shown:
        click.echo(f"krm-fn: {r.line()}", err=True)
    if out.has_errors:
        sys.exit(1)


def _guard(fn, *args) -> None:
    from krm_fn.resourcelist import InputError
    try:
        fn(*args)
    except InputError as e:
        _fail(str(e))
    except BrokenPipeError:
        sys.exit(1)
    except Exception as e:  # no traceback for users; KRM_FN_DEBUG=1 shows it
        if os.environ.get(_DEBUG_ENV):
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set {_DEBUG_ENV}=1 for the "
              f"traceback, and please report it)")


def _krm() -> None:
    if sys.stdin is None or sys.stdin.isatty():
        _fail("no ResourceList on stdin. krm-fn is a KRM function: run it through "
              "kustomize or kpt, pipe a ResourceList into it, or use `krm-fn run --config "
              "CONFIG FILE...` for plain YAML (see `krm-fn --help`)")
    text = _decode(sys.stdin.buffer.read(), "stdin")
    _run(text, None, True, False)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="krm-fn")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """KRM function: pin inference workloads to exclusive CPUs and emit the kubelet config.

    With no command, reads a ResourceList on stdin and writes one on stdout (the KRM
    function protocol used by kustomize and kpt).
    """
    if ctx.invoked_subcommand is None:
        _guard(_krm)


def _read_inputs(files) -> str:
    texts = []
    for f in files:
        if f == "-":
            texts.append(_decode(sys.stdin.buffer.read(), "stdin"))
        else:
            with open(f, "rb") as fh:
                texts.append(_decode(fh.read(), f))
    out = ""
    for t in texts:
        if out and not out.endswith("\n"):
            out += "\n"
        if out and not t.lstrip().startswith("---"):
            out += "---\n"
        out += t
    return out


@cli.command()
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="InferenceTuning (or ConfigMap) file; defaults when omitted.")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def run(config_file, files) -> None:
    """Tune plain multi-document YAML FILES (or - for stdin) and print the result.

    For CI render steps without kustomize plugins (Flux). Errors and warnings go to
    stderr; exit 1 on any error.
    """
    def go():
        from krm_fn import resourcelist
        fc = None
        if config_file:
            with open(config_file, "rb") as fh:
                fc = resourcelist.load_config_file(_decode(fh.read(), config_file))
        _run(_read_inputs(files), fc, False, True)
    _guard(go)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def plugin(config_file, args) -> None:
    """kustomize legacy exec plugin: CONFIG_FILE is the transformer config kustomize
    writes to a temp file; resources come as multi-document YAML on stdin."""
    def go():
        from krm_fn import resourcelist
        with open(config_file, "rb") as fh:
            fc = resourcelist.load_config_file(_decode(fh.read(), config_file))
        _run(_decode(sys.stdin.buffer.read(), "stdin"), fc, False, True)
    _guard(go)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="krm-fn")
