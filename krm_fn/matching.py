"""String matching without start-up cost, for the checks that run on every render (config
names, quantities, YAML scalars) and the ones that run only on some.

Compiling a regular expression costs 20-300 microseconds (`re.compile`, the sre parser and
compiler), and a module that compiles one at import pays that on every run, also on the
plain render that never checks the value it is for (start-up time: docs/performance.md). So
a check every render makes is a character test (`only`, `span` over the ASCII classes
below: `[0-9]`, `[a-z]` in a regular expression are ASCII only, while `str.isdigit` and
`str.isalnum` also accept other scripts' digits and letters), and a pattern only some runs
need is a `LazyPattern`, compiled the first time it matches; every instance is listed in
`PATTERNS`, so a test can see which ones a run compiled.
"""
from __future__ import annotations

DIGITS = "0123456789"
LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
LETTERS = LOWER + UPPER
ALNUM = LETTERS + DIGITS


def only(s: str, chars: str) -> bool:
    """True when every character of `s` is one of `chars` (also for "")."""
    return not s.strip(chars)


def span(s: str, i: int, chars: str) -> int:
    """The index of the first character of `s` at or after `i` that is not one of `chars`
    (len(s) when there is none)."""
    return len(s) - len(s[i:].lstrip(chars))


def digits(s: str) -> bool:
    """True when `s` is one or more ASCII digits (the regular expression `[0-9]+`)."""
    return s != "" and only(s, DIGITS)


PATTERNS: list[LazyPattern] = []


class LazyPattern:
    """`re.compile(pattern, flags)` on first use: `fullmatch`, `match`, `search` and
    `findall` are those of the compiled `re.Pattern`; `pattern` and `flags` are readable
    without compiling. `compiled` is None until the first match."""

    __slots__ = ("pattern", "flags", "compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags, self.compiled = pattern, flags, None
        PATTERNS.append(self)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"

    def get(self):
        """The compiled `re.Pattern` (compiled now when it is the first use)."""
        if self.compiled is None:
            import re
            self.compiled = re.compile(self.pattern, self.flags)
        return self.compiled

    def fullmatch(self, s: str):
        """`re.Pattern.fullmatch(s)`: a Match or None."""
        return self.get().fullmatch(s)

    def match(self, s: str):
        """`re.Pattern.match(s)`: a Match or None."""
        return self.get().match(s)

    def search(self, s: str):
        """`re.Pattern.search(s)`: a Match or None."""
        return self.get().search(s)

    def findall(self, s: str) -> list:
        """`re.Pattern.findall(s)`."""
        return self.get().findall(s)
