"""The `kubernetesVersion` config type: a quoted Kubernetes minor version, one of the minors
krm-fn supports (the generated kubelet data modules present, krm_fn.node.data: the three
upstream maintains, https://kubernetes.io/releases/), and the message that refuses any other
(the config and `krm-fn verify --kubernetes-version` give the same).
"""
from __future__ import annotations

from krm_fn.config.types import Type
from krm_fn.config.values import ConfigError, short
from krm_fn.matching import digits


def version_minor(s: str) -> int | None:
    """The MINOR of `s` spelled `v?1.MINOR(.PATCH)?` (MINOR one or two ASCII digits, PATCH
    any number of them: the regular expression `v?1\\.([0-9]{1,2})(\\.[0-9]+)?`), else None."""
    body = s[1:] if s.startswith("v") else s
    if not body.startswith("1."):
        return None
    minor, dot, patch = body[2:].partition(".")
    if not (len(minor) <= 2 and digits(minor)) or (dot and not digits(patch)):
        return None
    return int(minor)


def unquoted_hint(v: int | float) -> str:
    """Why an unquoted version is wrong, for the number YAML read: `YAML reads an unquoted
    version as a number`, plus `, so 1.30 and 1.3 are the same number` when `v` has one
    decimal digit (a trailing zero may have been dropped: YAML 1.2 core schema floats,
    https://yaml.org/spec/1.2.2/#1032-tag-resolution)."""
    hint = "YAML reads an unquoted version as a number"
    text = repr(v)
    if isinstance(v, float) and "." in text and len(text.partition(".")[2]) == 1:
        hint += f", so {text}0 and {text} are the same number"
    return hint


# Upstream maintains the three most recent minor releases; krm-fn supports the same window.
RELEASES_DOC = "https://kubernetes.io/releases/"


def and_list(items: list[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def unsupported_version(v: str, minor: int, supported: tuple) -> str:
    """Why Kubernetes 1.`minor` (spelled `v`) is refused: outside the `supported` minors
    ((1, minor) tuples, oldest first), or newer than the newest minor krm-fn has kubelet
    data for."""
    names = and_list([f"{a}.{b}" for a, b in supported])
    window = (f"krm-fn supports Kubernetes {names}, as upstream maintains the three most "
              f"recent minor releases ({RELEASES_DOC})")
    if minor > supported[-1][1]:
        return (f"Kubernetes {v} is not supported yet: krm-fn has no kubelet data for "
                f"1.{minor} yet; {window}")
    return f"Kubernetes {v} is not supported: {window}"


class Version(Type):
    """A quoted Kubernetes minor version ("1.35", "v1.35.2"), one of the minors krm-fn
    supports (`supported`, (1, minor) tuples oldest first: krm_fn.node.upstream.VERSIONS),
    as the tuple (1, minor)."""

    kind, nullable = "version", False

    def __init__(self, supported: tuple):
        self.supported = tuple(supported)
        self.label = f"Kubernetes minor version, quoted (\"{self.names()[0]}\")"

    def names(self) -> list[str]:
        """The supported minors as "1.35", oldest first."""
        return [f"{major}.{minor}" for major, minor in self.supported]

    def convert(self, v, path, flat):
        example = self.names()[0]
        if not isinstance(v, str):
            found = (f"the number {v!r} ({unquoted_hint(v)}): write the version in quotes"
                     if isinstance(v, (int, float)) and not isinstance(v, bool) else short(v))
            raise ConfigError(path, f"must be a quoted string such as \"{example}\", found "
                                    f"{found}")
        minor = version_minor(v)
        if minor is None:
            raise ConfigError(path, f"expected a Kubernetes minor version such as "
                                    f"\"{example}\", found {short(v)}")
        if (1, minor) not in self.supported:
            raise ConfigError(path, unsupported_version(v, minor, self.supported))
        return (1, minor)

    def default_value(self, default):
        return self.convert(default, "", False)

    def facts(self):
        return [("VALUES", ", ".join(self.names()))]

    def json_schema(self, flat=False):
        from krm_fn.config.patterns import version_pattern
        return {"type": "string", "pattern": version_pattern([m for _, m in self.supported])}


def supported(text: str, version: tuple) -> tuple:
    """`version` ((1, minor), spelled `text`) when krm-fn supports it, else ValueError with
    the message that names the supported minors (krm_fn.node.upstream.VERSIONS)."""
    from krm_fn.node.upstream import VERSIONS
    if tuple(version) not in VERSIONS:
        raise ValueError(unsupported_version(text, version[1], VERSIONS))
    return tuple(version)
