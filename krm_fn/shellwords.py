"""The shell words of one line of a container's command or args, as a shell splits them
(https://docs.python.org/3/library/shlex.html, POSIX Shell Command Language 2.3): what
krm_fn/rules/cmdline.py reads a command line with, and where a shell's script starts in
them. Not a rule.
"""
from __future__ import annotations

import functools


def words(text: str) -> tuple[str, ...]:
    """The shell words of one line. Short lines (flags, a model path) repeat across the
    containers of a render and are cached; long ones (a script) are not kept."""
    return _short_words(text) if len(text) <= 256 else _split_words(text)


@functools.lru_cache(maxsize=4096)
def _short_words(text: str) -> tuple[str, ...]:
    return _split_words(text)


def _split_words(text: str) -> tuple[str, ...]:
    if not any(ch in text for ch in "'\"\\"):
        return tuple(text.split())        # what shlex gives, without its cost
    import shlex                          # only for quoted words (start-up)
    if '"$' in text:
        text = _mark_parameters(text)
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


# the special parameters that expand to the positional parameters (POSIX Shell Command
# Language 2.5.2): unquoted, each parameter is split into fields; "$@" makes each one field,
# "$*" all of them one field joined by a space
PARAMETERS = ("$@", "${@}", "$*", "${*}")
QUOTED_PARAMETERS = tuple(f'"{p}"' for p in PARAMETERS)


def _mark_parameters(text: str) -> str:
    """`text` with each word that is a double-quoted parameter of PARAMETERS (`"$@"`,
    `"$*"`) outside other quotes put in single quotes, so that its word keeps its double
    quotes (QUOTED_PARAMETERS): a shell expands it otherwise than the unquoted one."""
    out, quote, start, i, n = [], "", True, 0, len(text)
    while i < n:
        ch = text[i]
        if not quote and start and ch == '"':
            p = next((p for p in QUOTED_PARAMETERS if text.startswith(p, i) and
                      (i + len(p) == n or text[i + len(p)] in " \t;&|)")), None)
            if p is not None:
                out.append(f"'{p}'")
                i += len(p)
                start = False
                continue
        step = 2 if ch == "\\" and quote != "'" else 1
        out.append(text[i:i + step])
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        start = not quote and (ch.isspace() or ch in ";&|(")
        i += step
    return "".join(out)


SHELLS = ("sh", "bash", "dash", "ash", "zsh", "ksh")


# a shell's long options that take the next word as their argument (bash: --rcfile FILE)
SHELL_LONG_ARGS = ("--rcfile", "--init-file")


def script_start(toks: list) -> int | None:
    """The index in `toks` (words with a `text`: cmdline.Token) of the first word of the
    script a shell runs (cmdline.shell_script), or None when the command line is no shell
    running a script."""
    if not toks or toks[0].text.rsplit("/", 1)[-1] not in SHELLS:
        return None
    i = 1
    while i < min(len(toks), 32):
        w = toks[i].text
        if len(w) < 2 or w[0] not in "-+" or w == "--":
            return None             # the script file, or the end of the options
        if w.startswith("--"):
            i += 2 if w in SHELL_LONG_ARGS else 1
            continue
        i += 1 + w.count("o") + w.count("O")
        if w[0] == "-" and "c" in w[1:]:
            return i if i < len(toks) else None
    return None


def unquoted_parameters(script: str) -> bool:
    """Whether the shell script `script` expands the positional parameters unquoted (a word
    `$@` or `$*`, PARAMETERS): the shell then splits each parameter into fields at blanks
    and an empty one gives none (POSIX Shell Command Language 2.6.5), so the words after the
    script's $0 slot are read split (`sh -c 'exec $@' -- 'llama-server -t 4'`)."""
    return any(p in script for p in PARAMETERS) and any(
        w.rstrip(";") in PARAMETERS for line in script.splitlines() for w in words(line))
