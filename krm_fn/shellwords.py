"""The shell words of one line of a container's command or args, as a shell splits them
(https://docs.python.org/3/library/shlex.html, POSIX Shell Command Language 2.3): what
krm_fn/rules/cmdline.py reads a command line with. Not a rule.
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
