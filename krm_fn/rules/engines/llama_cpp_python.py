"""llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, or uvicorn with
the factory `llama_cpp.server.app:create_app`; image `ghcr.io/abetlen/llama-cpp-python`),
as its own code reads its settings at v0.3.36 (llama_cpp/server/settings.py, cli.py,
__main__.py, app.py; tests/engines/test_llama_cpp_python_args.py runs that code on the same
argv and env):

- `n_threads` and `n_threads_batch` come from the command line, else from the env vars
  `N_THREADS` and `N_THREADS_BATCH` (pydantic-settings, names matched without case), else
  from defaults made of `multiprocessing.cpu_count()`, the node's CPUs, not the pinned
  ones: `cpu_count() // 2` threads for generation, `cpu_count()` for prompt batches. So
  krm-fn sets both env vars to the thread count.
- `python -m llama_cpp.server` reads its argv with argparse, one `--<field>` option per
  setting: `--n_threads V` or `--n_threads=V`, the last one winning over the env var; the
  value read by Python's `int()` (blanks, a sign and `_` between digits allowed); a unique
  prefix names an option (`--n_threads_b`), one shared by both (`--n_thread`) is ambiguous.
  An ambiguous or unknown option (`--n-threads`), a missing value or one `int()` refuses
  stop the server at start-up (argparse exits 2): an error.
- `-1` (from 0.2.64; on the command line only: the env var's text "-1" is not the int the
  check compares with) means `cpu_count()`, as does `n_threads_batch` 0 (the Llama
  constructor's `n_threads_batch or cpu_count()`): warned. `n_threads` 0 or below -1 and
  `n_threads_batch` below -1 fail the settings' validation (`ge=1`, `ge=0`) and the server
  exits: an error. A value above the count is warned about.
- An `N_THREADS` of `-1`, empty or 0 stops the server (the env var's text is not the int
  `-1` the settings compare with; `ge=1` refuses the rest): an error; so is `n_threads`
  (or another case) beside `N_THREADS`: pydantic-settings reads the names without case and
  takes the last in the process environment, whose order the kubelet does not fix.
- A config file (`--config_file`, a prefix such as `--config`, or env `CONFIG_FILE`) holds
  the models' settings: the command line's `--n_threads` is then not read, and a model's
  `n_threads` in the file wins over the env vars, which fill what it leaves out: a warning
  naming both settings.
- The uvicorn factory form builds its settings from the environment only.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import (Token, env_entry, own_command, runtime_only, shell_script,
                                  shell_value, tokens)
from krm_fn.rules.engines import programs, recognition
from krm_fn.rules.engines.base import Engine, EnvSpec
from krm_fn.rules.envvars import downward_ok, downward_refused, set_env

_SRC = "https://github.com/abetlen/llama-cpp-python/blob/v0.3.36/llama_cpp/server/"
MODULE = "llama_cpp.server"       # the word after `python -m`
CONFIG_FLAG, CONFIG_ENV = "--config_file", "CONFIG_FILE"
# the shortest prefix of --config_file no other option shares (--cache*, --chat_*, --clip_*)
_CONFIG_SHORTEST = "--co"
# the options read here, by their field (cli.py add_args_from_model: `--<field name>`)
OPTIONS = ("--n_threads", "--n_threads_batch")
# the shortest prefix only these two options share (no other setting starts with `n_t`)
_SHARED = "--n_t"
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")      # argparse's _negative_number_matcher
# the thread options spelled with `-`, as llama-server writes them: no option of this server
_DASHED = "--n-thread"


class Arg(NamedTuple):
    """One thread option as the server's argparse reads it: `option` (OPTIONS), `value`
    (the int, or None), `refused` (why the server stops at start-up, or None), `token`
    (the word to point at), `written` (the option as written), `unknown` (the value is
    only known when the container starts)."""

    option: str
    value: int | None
    refused: str | None
    token: Token
    written: str
    unknown: bool = False


def _option(word: str) -> str | None:
    """The option of OPTIONS that the long-option word `word` (its part before any `=`)
    names as argparse does (exactly, or as a unique prefix), "ambiguous" for a prefix of
    both, None for another option."""
    if word in OPTIONS:
        return word
    if len(word) >= len(_SHARED) and OPTIONS[0].startswith(word):
        return "ambiguous"
    if word.startswith(OPTIONS[0] + "_") and OPTIONS[1].startswith(word):
        return OPTIONS[1]
    return None


def read_args(argv: list, c: ContainerView | None = None, script: bool = False) -> list[Arg]:
    """Every thread option in the server's `argv` (the words after `llama_cpp.server`), in
    order, read as argparse and the settings read them (module docstring)."""
    out: list[Arg] = []
    i = 0
    while i < len(argv):
        t = argv[i]
        word = t.text
        if word in ("--", ";"):
            break
        opt, eq, value = word.partition("=")
        name = _option(opt) if word.startswith("--") else None
        if name is None and opt.startswith(_DASHED):
            out.append(Arg(OPTIONS[0] if "batch" not in opt else OPTIONS[1], None,
                           f"unrecognized arguments: {opt} (its options are written with "
                           f"`_`, as the settings' fields)", t, word))
        if name is None:
            i += 1
            continue
        if name == "ambiguous":
            out.append(Arg(OPTIONS[0], None, f"ambiguous option: {opt} could match "
                           f"{', '.join(OPTIONS)}", t, word))
            i += 1
            continue
        vt = t
        if not eq:
            nxt = argv[i + 1].text if i + 1 < len(argv) else None
            if nxt is None or nxt in ("--", ";") or (
                    nxt.startswith("-") and nxt != "-" and not _NEGATIVE.match(nxt)):
                out.append(Arg(name, None, f"argument {name}: expected one argument", t, word))
                i += 1
                continue
            value, vt, word = nxt, argv[i + 1], f"{word} {nxt}"
            i += 1
        out.append(_value(name, value, vt, word, c, script))
        i += 1
    return out


def _value(name: str, value: str, vt: Token, written: str, c, script: bool) -> Arg:
    """The Arg of option `name` with the value text `value` (its word `vt`)."""
    if c is not None and "$" in value:
        value = shell_value(c, script, value) or value
        if "$" in value and runtime_only(c, script, value):
            return Arg(name, None, None, vt, written, unknown=True)
    try:
        n = int(value)
    except ValueError:
        shown = repr(value) if len(value) <= 40 else numbers.shown(value, 40)
        return Arg(name, None, f"argument {name}: invalid int value: {shown}", vt, written)
    low = 1 if name == OPTIONS[0] else 0
    if n < low and n != -1:
        return Arg(name, n, f"the settings refuse {name[2:]}={n} (it must be at least {low}, "
                            f"or -1)", vt, written)
    return Arg(name, n, None, vt, written)


def argv_of(c: ContainerView) -> tuple[list, bool, bool]:
    """(the server's argv: the words after `llama_cpp.server`, [] when no word runs that
    module, as for the uvicorn factory or an image's own command; whether the command line
    is a shell script; whether the module's argparse runs at all). The module in program
    position starts the server's own command, also glued to its option
    (`-mllama_cpp.server`: own_command gives the module as its first word)."""
    whole = tokens(c)
    script = shell_script(whole)
    toks = own_command(whole, (MODULE,), programs.spans(whole))
    for i, t in enumerate(toks):
        if t.text == MODULE:
            return toks[i + 1:], script, True
    return [], script, False


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set N_THREADS and N_THREADS_BATCH to the count unless the command line sets the
    setting; an error for a thread option the server stops on, a warning for one above the
    count or meaning every node CPU, and for a config file (module docstring)."""
    cnt, cfg = f.count, ctx.cfg
    want = str(cnt.count)
    argv, script, parsed = argv_of(c)
    args = read_args(argv, c, script) if parsed else []
    config = (parsed and any(_is_config(t.text) for t in argv)) or \
        env_entry(c, CONFIG_ENV) is not None
    for a in args:
        if a.refused is not None:
            pod.error(a.token.path,
                      f"container {c.name!r}: llama-cpp-python's server stops at start-up on "
                      f"{numbers.brief(a.written)} ({a.refused}; its argparse options are "
                      f"read by cli.py add_args_from_model): write {a.option} {want} "
                      f"({_SRC}cli.py)")
    # per env var, the last option that sets it and wins over it (none with a config file)
    given = {spec.name: [a for a in args if a.option == spec.flags[0] and a.refused is None]
             for spec in ENGINE.env} if not config else {}
    _env_refused(pod, c, want, {name for name, got in given.items() if got})
    down = downward_ok(cnt, cfg) and downward_refused(pod, ctx) is None
    for spec in ENGINE.env:
        if given.get(spec.name):
            _above(pod, c, cnt, given[spec.name][-1], spec, want)
            continue
        set_env(pod, c, spec.name, want, f"{ENGINE.name}: {cnt.why}", cfg, downward=down)
    if config:
        pod.warn(c.path, f"container {c.name!r}: llama-cpp-python's server reads its models' "
                         f"settings from a config file ({CONFIG_FLAG} or {CONFIG_ENV}): the "
                         f"command line's thread options are then not read, and a model's "
                         f"n_threads or n_threads_batch in the file wins over N_THREADS and "
                         f"N_THREADS_BATCH (set to {want}); leave them out of the file or set "
                         f"them to {want} ({_SRC}__main__.py)")


def _is_config(word: str) -> bool:
    """Whether `word` is the --config_file option as argparse reads it: the whole name or
    a prefix no other option shares (`--config`, `--co`), with or without `=value`."""
    name = word.partition("=")[0]
    return len(name) >= len(_CONFIG_SHORTEST) and CONFIG_FLAG.startswith(name)


def _env_refused(pod: PodView, c: ContainerView, want: str, flagged: set) -> None:
    """Errors for the thread env vars the server's settings refuse or cannot read alike
    every time: a value pydantic refuses (empty, 0 for N_THREADS, negative: the text "-1"
    is not the int the settings compare with, settings.py), and the name written in
    other cases beside the one krm-fn sets (pydantic-settings reads names without case,
    and the one it takes depends on the order of the process environment, which the
    kubelet does not fix); nothing for a var whose option is on the command line
    (`flagged`: it wins over both)."""
    entries = [(i, e) for i, e in enumerate(c.data.get("env") or [])
               if isinstance(e, dict) and isinstance(e.get("name"), str)]
    for spec in ENGINE.env:
        if spec.name in flagged:
            continue
        same = [(i, e) for i, e in entries if e["name"].upper() == spec.name]
        other = [(i, e) for i, e in same if e["name"] != spec.name]
        if other:
            i, e = other[0]
            pod.error(c.path + ("env", i, "name"),
                      f"container {c.name!r}: {e['name']} and {spec.name} are one setting to "
                      f"llama-cpp-python's server (pydantic-settings reads env names "
                      f"without case), and which value it takes depends on the order of the "
                      f"process environment: remove {e['name']} ({_SRC}settings.py)")
        exact = [(i, e) for i, e in same if e["name"] == spec.name and "value" in e]
        if not exact or "valueFrom" in exact[-1][1]:
            continue
        i, e = exact[-1]
        text = str(e.get("value") or "").strip()
        low = 1 if spec.name == "N_THREADS" else 0
        if text == "" or text.startswith("-") or (text.isdigit() and int(text) < low):
            pod.error(c.path + ("env", i, "value"),
                      f"container {c.name!r}: llama-cpp-python's server stops at start-up on "
                      f"{spec.name}={numbers.brief(e.get('value'))} (its settings need a "
                      f"whole number of at least {low}; -1 is read only on the command line)"
                      f": set it to {want} ({_SRC}settings.py)")


def _above(pod: PodView, c: ContainerView, cnt, a: Arg, spec: EnvSpec, want: str) -> None:
    """Warn when the option `a` asks for more threads than the count, for every CPU of the
    node (-1, or 0 for the batch threads), or is only known when the container starts."""
    what = f"{ENGINE.name} {numbers.brief(a.written)}"
    if a.unknown:
        pod.warn(a.token.path, f"container {c.name!r}: {what} is only known when the container "
                               f"starts, so krm-fn cannot check it against {cnt.why}; it wins "
                               f"over {spec.name}: make sure it is at most {want}")
    elif a.value is not None and a.value <= 0:
        pod.warn(a.token.path, f"container {c.name!r}: {what} means multiprocessing."
                               f"cpu_count(), every CPU of the node (on Python 3.13 and later "
                               f"PYTHON_CPU_COUNT when set) rather than {cnt.why}; it wins "
                               f"over {spec.name}: set it to {want} ({_SRC}settings.py)")
    elif a.value is not None and a.value > cnt.count:
        pod.warn(a.token.path, f"container {c.name!r}: {what} asks for more threads than "
                               f"{cnt.why} and wins over {spec.name}; set it to {want}")


ENGINE = Engine(
    recognition.of(__name__),
    env=(EnvSpec("N_THREADS", flags=("--n_threads",)),
         EnvSpec("N_THREADS_BATCH", flags=("--n_threads_batch",))),
    check=check,
    per_core="physical",
    per_core_source=_SRC + "settings.py",
    recognised="`llama_cpp.server` in command/args (`python -m llama_cpp.server`, uvicorn "
               "`llama_cpp.server.app:create_app`); image `ghcr.io/abetlen/llama-cpp-python`",
    sets="`N_THREADS` and `N_THREADS_BATCH` = N (its defaults are the node's CPUs ÷ 2 and "
         "all of them), each unless `--n_threads` / `--n_threads_batch` is in args (the "
         "option wins)",
    warns="`--n_threads` / `--n_threads_batch` above N, `-1` (every node CPU; 0 too for the "
          "batch threads) or only known when the container starts; a config file "
          "(`--config_file`, `CONFIG_FILE`: its models' settings win and the options are not "
          "read); an ambiguous prefix (`--n_thread`), an unknown spelling (`--n-threads`), a "
          "missing value, one `int()` refuses, 0 or below -1 stop the server at start-up, as "
          "do an `N_THREADS` of `-1` (read only on the command line), empty or 0: an "
          "**error** (argv read as its argparse reads it); so is an `n_threads` in other "
          "cases beside `N_THREADS` (names are read without case, the order decides)",
    sources=(("llama-cpp-python server settings.py",
              _SRC + "settings.py"),
             ("llama-cpp-python server cli.py (argparse options)", _SRC + "cli.py"),
             ("llama-cpp-python server docs",
              "https://llama-cpp-python.readthedocs.io/en/latest/server/")),
)
