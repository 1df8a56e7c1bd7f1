"""Command line: thin. `krm-fn` with no arguments is the KRM function (ResourceList on
stdin, ResourceList on stdout); `krm-fn run` tunes plain multi-document YAML files;
`krm-fn plugin` is kustomize's legacy exec plugin protocol; `krm-fn verify` checks, inside a
pinned container, that pinning took effect on the node (krm_fn/verify/).

Exit codes: 0 success; 1 when any error result was produced (the output is still written
first) or the input is unusable (one line on stderr, no traceback); 2 for usage errors.

Start-up is most of the cost of a small render, and kustomize, kpt and Argo CD start one
process per render, so a run imports only what it uses. `main` runs the two command lines
an orchestrator gives, `krm-fn` and `krm-fn plugin CONFIG_FILE`, straight through
`render` without importing click; every other command line goes to the click group in
`commands`, whose commands import their modules (verify, schema, explain, ...) when they
run. Modules: `common` (input decoding, stderr messages, the error guard), `render` (parse,
transform, render, write), `commands` (click).
"""
from __future__ import annotations

import os
import sys

# click's shell-completion switch for prog_name "krm-fn": when set, click answers instead
COMPLETE_ENV = "_KRM_FN_COMPLETE"


def _readable_file(path: str) -> bool:
    """True when click's Path(exists=True, dir_okay=False) accepts `path` as it stands:
    it exists, is not a directory and is readable."""
    try:
        return not os.path.isdir(path) and os.path.exists(path) and os.access(path, os.R_OK)
    except (OSError, ValueError):
        return False


def without_click(args: list[str]) -> tuple | None:
    """For command-line arguments `args` (sys.argv[1:]) that the click group would run as
    the KRM function or as `plugin CONFIG_FILE` (no option, no --help, a readable
    CONFIG_FILE, no shell completion asked for): `(name, params)` with name "function" or
    "plugin" and the parameters of that function of krm_fn.cli.render. None for every
    other command line, which click then parses (and reports usage errors for)."""
    if os.environ.get(COMPLETE_ENV):
        return None
    if not args:
        return "function", ()
    if (args[0] == "plugin" and len(args) >= 2 and not any(a.startswith("-") for a in args[1:])
            and _readable_file(args[1])):
        return "plugin", (args[1],)
    return None


def main() -> None:
    """Console-script entry point (`krm-fn`, `python -m krm_fn`): runs sys.argv[1:] and
    exits with the codes above (through sys.exit, or common.end_process at the end of a
    render; returning means 0)."""
    call = without_click(sys.argv[1:])
    if call is None:
        from krm_fn.cli.commands import cli
        cli(prog_name="krm-fn")
        return
    from krm_fn.cli import common, render
    name, params = call
    common.OWN_PROCESS = True
    try:
        common.standalone(getattr(render, name), *params)
    finally:
        common.OWN_PROCESS = False


def __getattr__(name: str):
    """`krm_fn.cli.cli`, the click group (for click's CliRunner), imported on first use so
    that importing krm_fn.cli does not import click."""
    if name == "cli":
        from krm_fn.cli.commands import cli
        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
