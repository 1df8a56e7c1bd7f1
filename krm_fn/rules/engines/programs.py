"""Program position: the words of a container's command line that name the program a
process runs, as opposed to its arguments. An engine is recognised from its program in
program position only (recognition.Pattern.search), so a container that merely names one
(`pgrep -f vllm`, a process-exporter's `-procnames llama-server`, `curl
http://llama-server:8080/health`, `until nc -z vllm 8000`) is not taken for it.

- Without a shell script the command line is one command: its first word runs (the
  container's command, or its args when command is absent: the image's entrypoint is
  unknown, and the kubelet hands it the args).
- In a shell script (cmdline.script_start: `sh -c`, `bash -ec`, ...) the first word of
  each simple command runs: after an operator (`;`, `&&`, `||`, `|`, `&`, a new line, `(`,
  `$(`), a reserved word (`if`, `then`, `do`, `!`, `{`, ...) and `NAME=value` assignments
  (POSIX Shell Command Language 2.9.1 Simple Commands, 2.4 Reserved Words:
  https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html). A script
  whose program is "$@" runs its positional parameters: in `sh -c SCRIPT NAME ARGS...`
  NAME is $0 and ARGS the command line it runs (2.5.2 Special Parameters; `sh -c 'exec
  "$@"' -- llama-server`).
- A wrapper that runs another program (`WRAPPERS`: `exec`, `env`, `nohup`, `numactl`,
  `taskset`, `tini --`, `dumb-init`, `python -m module` or a script, `uvicorn module:app`,
  `torchrun`, `deepspeed`, `accelerate launch`, the Intel Xeon launcher, ...) passes
  program position on to the word it runs, read past its own options as its documentation
  gives them (an option of `takes` takes the next word as its value, `--opt=value` and a
  glued `-Cvalue` hold theirs).
"""
from __future__ import annotations

from collections import namedtuple

from krm_fn.rules.cmdline import (PARAMETERS, QUOTED_PARAMETERS, SEPARATORS, SHELL_LONG_ARGS,
                                  SHELLS, Token, _name, script_start)
from krm_fn.rules.engines import ranks


class Runs(namedtuple("Runs", "takes flags positional stops module sub assign words known",
                      defaults=((), None, 0, (), (), (), False, False, None))):
    """How a wrapper finds the program it runs: its options of `takes` take the next word
    as their value, the others none; or, when `flags` is given, every option but those of
    `flags` takes one (a launcher whose options mostly do). Then `positional` words of its
    own (`taskset` MASK, `timeout` DURATION, `gosu` USER), then the program. An option of
    `stops` means no program runs (`command -v`, `taskset -p`, `python -c`); the value of
    an option of `module` is the program (`python -m module`). `sub`: the subcommand that
    must come first (`accelerate launch`); `assign`: `NAME=value` words may come before the
    program (`env`); `words`: a one-dash option of several letters is one option, not a
    cluster (`mpirun -np 2`); `known`, when given: the wrapper refuses any other option,
    and a long option with `=value` (its getopt reads no `=`), so that no program runs."""

    __slots__ = ()


# the launchers of a Python program (a script, or a module with -m/--module), whose
# options mostly take a value: those that take none
_TORCHRUN = Runs(flags=("--standalone", "--no-python", "--no_python", "-m", "--module",
                        "--run-path", "--run_path", "--use-env", "--use_env",
                        "--virtual-local-rank", "--virtual_local_rank", "-h", "--help"))
# the ASGI/WSGI servers: the app (`module:app`) is their program
_UVICORN = Runs(flags=("--reload", "--factory", "--use-colors", "--no-use-colors",
                       "--proxy-headers", "--no-proxy-headers", "--server-header",
                       "--no-server-header", "--date-header", "--no-date-header",
                       "--access-log", "--no-access-log", "--debug", "--version", "--help"))
_GUNICORN = Runs(flags=("--reload", "--preload", "-D", "--daemon", "--check-config",
                        "--print-config", "--spew", "--capture-output", "-R",
                        "--enable-stdio-inheritance", "--no-sendfile", "--reuse-port",
                        "--strip-header-spaces", "--proxy-protocol", "--version", "-v",
                        "-h", "--help"))
_LAUNCHER = Runs(takes=ranks.LAUNCHER_OPTIONS)
_ENV_RUN = Runs(sub=("run",), takes=("-n", "--name", "-p", "--prefix", "--cwd", "-r",
                                     "--root-prefix"))
_MPIRUN = Runs(flags=("--allow-run-as-root", "--oversubscribe", "--report-bindings",
                      "--tag-output", "--timestamp-output", "--display-map",
                      "--use-hwthread-cpus", "-v", "--verbose", "-q", "--quiet", "-h",
                      "--help", "-l", "-prepend-rank", "-print-rank-map"), words=True)
# CPython's command line (https://docs.python.org/3/using/cmdline.html; Python/getopt.c at
# v3.13.0: SHORT_OPTS "bBc:dEhiIJm:OPqRsStuvVW:xX:?", `-J` refused, the long options
# without `=`): one-letter options combine (`-um`, `-OO`), one that takes a value takes the
# rest of its word (`-mllama_cpp.server`, `-Xdev`) or else the next word; `-c` runs code,
# the help and version options exit, and any other option is refused.
_PYTHON_FLAGS = tuple("-" + ch for ch in "bBdEiIOPqRsStuvx")
_PYTHON_TAKES = ("-W", "-X", "--check-hash-based-pycs")
_PYTHON_STOPS = ("-c", "-h", "-?", "-V", "--help", "--version", "--help-env",
                 "--help-xoptions", "--help-all")
PYTHON = Runs(takes=_PYTHON_TAKES, stops=_PYTHON_STOPS, module=("-m",),
              known=(*_PYTHON_FLAGS, *_PYTHON_TAKES, *_PYTHON_STOPS, "-m"))

# name (the word's last path part, or a module run with `python -m`): how it runs another,
# with the options each documents: POSIX exec and command (Shell Command Language 2.15,
# 2.9.1), bash exec; GNU coreutils env, nice, nohup, stdbuf, timeout
# (https://www.gnu.org/software/coreutils/manual/), util-linux taskset and setsid, numactl(8),
# tini and dumb-init (their --help), gosu/su-exec USER COMMAND; torchrun
# (torch/distributed/run.py), deepspeed (deepspeed/launcher/runner.py), `accelerate launch`
# (accelerate/commands/launch.py), uvicorn (uvicorn/main.py), gunicorn (gunicorn/config.py),
# hypercorn (hypercorn/__main__.py), the Intel Xeon launcher (ranks.py)
WRAPPERS = {
    "exec": Runs(takes=("-a",)),                       # POSIX exec; bash exec [-cl] [-a name]
    "command": Runs(stops=("-v", "-V")),
    "env": Runs(takes=("-u", "--unset", "-C", "--chdir"), assign=True),   # coreutils env
    "nohup": Runs(), "setsid": Runs(), "time": Runs(takes=("-f", "--format", "-o", "--output")),
    "nice": Runs(takes=("-n", "--adjustment")),
    "stdbuf": Runs(takes=("-i", "-o", "-e", "--input", "--output", "--error")),
    "timeout": Runs(takes=("-s", "--signal", "-k", "--kill-after"), positional=1),
    "numactl": Runs(takes=("-i", "--interleave", "-w", "--weighted-interleave", "-m",
                           "--membind", "-N", "--cpunodebind", "-C", "--physcpubind", "-p",
                           "--preferred", "-P", "--preferred-many", "-L", "--length", "-o",
                           "--offset", "-M", "--shmmode", "-f", "--file", "-S", "--shm",
                           "-I", "--shmid")),
    "taskset": Runs(positional=1, stops=("-p", "--pid")),      # util-linux: MASK or LIST
    "tini": Runs(takes=("-p", "-e")),
    "dumb-init": Runs(takes=("-r", "--rewrite")),
    "gosu": Runs(positional=1), "su-exec": Runs(positional=1),
    "torchrun": _TORCHRUN, "torch.distributed.run": _TORCHRUN,
    "torch.distributed.launch": _TORCHRUN,
    "deepspeed": Runs(flags=("--module", "--no_python", "--no_local_rank", "--no_ssh_check",
                             "--no_ssh", "--force_multi", "--save_pid", "--bind_cores_to_rank",
                             "--elastic_training", "-h", "--help")),
    "accelerate": Runs(sub=("launch",), flags=(
        "--cpu", "--multi_gpu", "--multi-gpu", "--mps", "--tpu", "--use_deepspeed",
        "--use-deepspeed", "--use_fsdp", "--use-fsdp", "--use_megatron_lm",
        "--use-megatron-lm", "-m", "--module", "--no_python", "--no-python", "-q", "--quiet",
        "--debug", "-h", "--help")),
    # a project's or environment's runner: `uv run` (docs.astral.sh/uv/reference/cli/
    # #uv-run), `conda run` (docs.conda.io: commands/run), micromamba and mamba alike,
    # `poetry run`, `pipenv run`, `pdm run`, `hatch run` (each runs the command after `run`)
    "uv": Runs(sub=("run",), module=("-m", "--module"), takes=(
        "--with", "--with-editable", "--with-requirements", "-p", "--python", "--project",
        "--directory", "--package", "--extra", "--group", "--only-group", "--no-group",
        "--env-file", "--index", "--default-index", "--index-url", "--extra-index-url",
        "--find-links", "-f", "--cache-dir", "--config-file", "-w")),
    **{name: _ENV_RUN for name in ("conda", "mamba", "micromamba")},
    **{name: Runs(sub=("run",)) for name in ("poetry", "pipenv", "pdm", "hatch")},
    # Open MPI mpirun(1) and MPICH/Intel MPI mpiexec: every option but these flags takes one
    # value (coarser: `--mca KEY VALUE` and `-genv NAME VALUE` take two)
    **{name: _MPIRUN for name in ("mpirun", "mpiexec", "mpiexec.hydra", "orterun")},
    "uvicorn": _UVICORN, "gunicorn": _GUNICORN,
    "hypercorn": Runs(flags=("--debug", "--reload", "--verbose", "-h", "--help")),
    **{name: _LAUNCHER for name in ranks.LAUNCHERS},
    # a shell given a script file runs it (`bash /opt/multi-node-serving.sh leader`): bash
    # `[options] [-o option] [-O shopt_option] [file]`, dash `sh [-o option] [file]`;
    # `-c` runs the string (cmdline.script_start), `-s` reads the commands from stdin
    **{name: Runs(takes=("-o", "-O", *SHELL_LONG_ARGS), stops=("-c", "-s")) for name in SHELLS},
}
# words that open a command (a reserved word, not a program) and those after which the
# words up to the next operator are no command (`for NAME in WORDS`, `case WORD in`)
_RESERVED = frozenset(("!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done",
                       "while", "until", "esac"))
_HEADERS = frozenset(("for", "case", "select"))


# a script's word that runs its positional parameters, the words after the script and the
# $0 slot (`sh -c 'exec "$@"' NAME ARGS...`: "$@" expands to ARGS; POSIX sh: `sh -c
# command_string [command_name [argument...]]`, Special Parameters 2.5.2): `$@`, `$*`
# unquoted, "$@" and "$*" (cmdline.PARAMETERS, QUOTED_PARAMETERS; _parameters)
POSITIONAL = frozenset((*PARAMETERS, *QUOTED_PARAMETERS))
_JOINED = frozenset(w for w in QUOTED_PARAMETERS if "*" in w)


# an image's entrypoint script (`/docker-entrypoint.sh`, `/usr/local/bin/entrypoint`) that
# ends in `exec "$@"`, the convention of Docker's official images
# (https://docs.docker.com/build/building/best-practices/#entrypoint): the args' first
# word is the program it runs (`command: [/entrypoint.sh], args: [llama-server, ...]`),
# unless it is an option (of the script, which krm-fn does not know)
ENTRYPOINT = Runs()


def runs(word: str) -> Runs | None:
    """How the program named by `word` (a path's last part, or a module) runs another, when
    it is a wrapper: WRAPPERS, a Python interpreter (`python`, `python3`, `python3.12`:
    `python [options] -m module | script`, https://docs.python.org/3/using/cmdline.html),
    or an entrypoint script (a name holding `entrypoint`: ENTRYPOINT)."""
    name = word.rsplit("/", 1)[-1]
    found = WRAPPERS.get(name)
    if found is None and name.startswith("python") and \
            all(ch.isdigit() or ch == "." for ch in name[6:]):
        return PYTHON
    if found is None and "entrypoint" in name.lower():
        return ENTRYPOINT
    return found


def spans(toks: list[Token]) -> tuple[tuple[int, int], ...]:
    """The (start, end) offsets, in cmdline.text(toks), of the words (or parts of a script's
    word, `(cd` or `a;exec`) in program position (module docstring), in order. A shell a
    wrapper runs (`tini -- sh -c SCRIPT`) runs its script as one the command runs does; a
    script that runs "$@" in program position (POSITIONAL) runs the words after its $0
    slot as a command line of their own (`sh -c 'exec "$@"' -- llama-server`:
    _parameters)."""
    offsets, at = [], 0
    for t in toks:
        offsets.append(at)
        at += len(t.text) + 1
    out: list = []
    first = 0
    while first < len(toks):
        start = script_start(toks[first:])
        if start is not None:
            start += first
            if toks[start].text == "--" and start + 1 < len(toks):
                start += 1              # `bash -lc -- SCRIPT`: the script follows `--`
            path = toks[start].path
            end = start
            while end < len(toks) and toks[end].path == path:
                end += 1                # the script's words: those of its entry
            pieces = [p for i in range(start, end) for p in _pieces(toks[i].text, offsets[i])]
            positional = None
            for command in _commands(pieces):
                for i, cut in _programs(command):
                    w, at = command[i]
                    out.append((at + cut, at + len(w)))
                    positional = positional or (w if w in POSITIONAL else None)
            first = _parameters(toks, end, positional) if positional else None
            if first is None:
                break
            continue
        found = [(first + i, cut) for i, cut in _programs([(t.text, 0) for t in toks[first:]])]
        out.extend((offsets[i] + cut, offsets[i] + len(toks[i].text)) for i, cut in found)
        last = found[-1][0] if found else 0
        if len(found) < 2 or found[-1][1] or toks[last].text.rsplit("/", 1)[-1] not in SHELLS:
            break
        first = last                    # the shell a wrapper runs: its script, if any
    return tuple(sorted(set(out)))


def _parameters(toks: list[Token], end: int, word: str) -> int | None:
    """The index in `toks` of the word that a script's `word` of POSITIONAL in program
    position runs, the first of its positional parameters: the words after the $0 entry
    (that of toks[end], the entry after the script's: `sh -c SCRIPT NAME ARGS`). Unquoted,
    each parameter is split into fields and an empty one gives none (cmdline.tokens reads
    them so); "$@" makes each parameter one field, so that a first one with blanks names
    no program (_programs); "$*" makes all of them one field, a program only when they are
    one word (POSIX Shell Command Language 2.5.2, 2.6.5; dash alike). None when it runs
    none of them."""
    if end >= len(toks):
        return None
    first = end
    while first < len(toks) and toks[first].path == toks[end].path:
        first += 1                      # the $0 slot, one entry
    if word in _JOINED and len(toks) - first > 1:
        return None                     # one field of several words: no program's name
    return first if first < len(toks) else None


def named(toks: list[Token], names: tuple) -> list[int]:
    """The indices in `toks` of the words in program position (spans) whose last path part
    is one of `names` (`java`, `/opt/java/bin/java`), in order."""
    starts = {start for start, _ in spans(toks)}
    out, at = [], 0
    for i, t in enumerate(toks):
        if at in starts and t.text.rsplit("/", 1)[-1] in names:
            out.append(i)
        at += len(t.text) + 1
    return out


def _pieces(word: str, at: int) -> list[tuple[str, int]]:
    """A script's word (at offset `at`) as the shell reads it unquoted: `;`, `&&` and `||`
    inside it, a leading `(` or `$(` that it does not close and a trailing `)` that it did
    not open are operators of their own (shlex keeps `sleep 1;`, `(cd` and `$(pidof` one
    word; `A=$(nproc)` is one assignment). A word with a blank was quoted: one piece. Each
    piece is (text, offset); an operator's text is made of `;&|()$` only."""
    if not any(ch in word for ch in ";&|()") or any(ch.isspace() for ch in word):
        return [(word, at)]
    out = []
    unclosed = word.count("(") - word.count(")")
    lead = len(word) - len(word.lstrip("($"))
    if unclosed > 0 and lead and word[lead - 1] == "(":
        out.append((word[:lead], at))
    else:
        lead = 0
    end = len(word)
    if unclosed < 0:
        end = max(len(word.rstrip(")")), len(word) + unclosed)
    i = start = lead
    while i < end:
        op = 1 if word[i] == ";" else 2 if word[i:i + 2] in ("&&", "||") else 0
        if op:
            if i > start:
                out.append((word[start:i], at + start))
            out.append((word[i:i + op], at + i))
            i = start = i + op
        else:
            i += 1
    if end > start:
        out.append((word[start:end], at + start))
    if end < len(word):
        out.append((word[end:], at + end))
    return out


def _operator(text: str) -> bool:
    """Whether a script's piece (_pieces) is an operator: one of cmdline.SEPARATORS, a run
    of `;&|()`, or an opening `$(`."""
    return text in SEPARATORS or bool(text) and (all(ch in ";&|()" for ch in text) or
                                                 text.endswith("(") and not text.strip("$("))


def _commands(pieces: list) -> list[list]:
    """The script's pieces as simple commands (lists of pieces), split at the operators; the
    pieces after a `)` up to the next operator (the rest of the command a `$(...)` is in)
    belong to none."""
    out: list[list] = [[]]
    for piece in pieces:
        text = piece[0]
        if not _operator(text):
            if out[-1] is not None:
                out[-1].append(piece)
        elif text.rstrip(")") == "" and text != "":
            out.append(None)            # args of the command around a substitution
        else:
            out.append([])
    return [c for c in out if c]


def _programs(command: list) -> list[tuple[int, int]]:
    """The words in program position of `command` (a simple command's (word, offset)
    pieces) as (index, cut): the word's text from offset `cut` on names the program (0,
    or where a module glued to an option starts: `-mllama_cpp.server`). The first word
    after reserved words and assignments, unless it is an option (args without command:
    `--flag` is the image entrypoint's), then each word a wrapper runs (runs)."""
    i, n = 0, len(command)
    while i < n and command[i][0] in _RESERVED:
        i += 1
    if i < n and command[i][0] in _HEADERS:
        return []
    while i < n and _assignment(command[i][0]):
        i += 1
    out = []
    cut = 0
    while i < n and (cut or command[i][0][:1] != "-") and \
            not any(ch.isspace() for ch in command[i][0]):  # an option, a name with blanks
        #                                                      (quoted) is no program
        out.append((i, cut))
        how = runs(command[i][0][cut:])
        if how is None:
            break
        got = _runs_at(command, i, how)
        if got is None:
            break
        i, cut = got
    return out


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and _name(name)


def _runs_at(command: list, i: int, how: Runs) -> tuple[int, int] | None:
    """(index, cut) of the word the wrapper at command[i] runs (`how`), as _programs gives
    them, or None when it runs none there (an option of `stops` or one it refuses, a
    missing subcommand or program)."""
    j, n = i + 1, len(command)
    if how is ENTRYPOINT:       # its options are unknown: only a first word that is none
        return (j, 0) if j < n else None
    if how.sub:
        if j >= n or command[j][0] not in how.sub:
            return None
        j += 1
    positional, options = how.positional, True
    while j < n:
        w = command[j][0]
        if options and w == "--":
            options = False
            j += 1
        elif options and len(w) > 1 and w[0] == "-":
            step = _option(w, how)
            if step is None:
                return None
            if step == -1:
                return (j + 1, 0) if j + 1 < n else None    # `-m module`: the module
            if step < 0:
                return (j, -step) if -step < len(w) else None   # `-mmodule`
            j += step
        elif how.assign and _assignment(w):
            j += 1
        elif positional:
            positional -= 1
            j += 1
        else:
            return j, 0
    return None


def _option(word: str, how: Runs) -> int | None:
    """How many words the option `word` of a wrapper (`how`) takes up: 1, 2 with its value;
    -1 when the next word is the program (`module`), -k when it starts at offset k of this
    word (`-mmodule`, `-ummodule`, `--module=module`); None when no program runs (`stops`,
    or an option `known` leaves out).
    A one-dash word of several letters is a cluster of one-letter options (`-ac`, `-um`)
    or one with its value glued (`-C0-3`, `-Wignore`)."""
    name, eq, _ = word.partition("=")
    if word[1] == "-" or len(word) == 2 or how.words:
        if how.known is not None and (word not in how.known):
            return None
        if name in how.stops:
            return None
        if name in how.module:
            return -(len(name) + 1) if eq else -1
        takes = name not in how.flags if how.flags is not None else name in how.takes
        return 1 if eq or not takes else 2
    if how.flags is not None:
        return 1
    for k, ch in enumerate(word[1:], 2):
        short = "-" + ch
        if short in how.stops or how.known is not None and short not in how.known:
            return None
        if short in how.module:
            return -k if k < len(word) else -1
        if short in how.takes:
            return 1 if k < len(word) else 2
    return 1
