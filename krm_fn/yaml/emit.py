"""Writing new YAML text for plain data (dict, list, str, int, float, bool, None).

Style rules: block style, keys in insertion order, string values double-quoted unless
they are words no YAML reader could retype (so `"4"`, `"true"`, `"0644"`, `"500m"` are
quoted, `static` is not), multi-line strings as literal blocks, numbers and booleans plain,
never anchors or aliases (a consumer that splits the documents, as kustomize does, fails
on an alias into another document with `unknown anchor`).

`to_yaml` writes a whole document; `block` and `flow` write a value at a given column or
inline (for insertion into existing text, krm_fn.yaml.spans), `block_maps` a list of
mappings such as KRM results; `scalar`, `key` and `quote` write one scalar; `is_plain_safe`
tells whether a string may be written plain.
"""
from __future__ import annotations

import functools
import marshal

import yaml

try:  # libyaml when present; the pure-Python emitter gives the same text
    from yaml import CSafeDumper as _Base
except ImportError:  # pragma: no cover
    from yaml import SafeDumper as _Base

# A key is written plain when it is `[A-Za-z_][A-Za-z0-9_./-]*` (plain_key_chars). A value is
# written plain only when it starts with a letter and holds no character that could make any
# YAML 1.1 or 1.2 reader retype it or read it as syntax (`[A-Za-z][A-Za-z0-9_./-]*`,
# plain_value_chars); else double-quoted.
# (ASCII character tests, not regular expressions compiled at import: start-up time; the
# yaml package imports nothing else from krm_fn, so not krm_fn.matching's classes)
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PLAIN_CHARS = _LETTERS + "0123456789_./-"
_RESERVED_KEYS = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
                  "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
                  "null", "Null", "NULL"}


class _Dumper(_Base):
    def ignore_aliases(self, data):  # never anchors
        return True


def plain_key_chars(s: str) -> bool:
    """True when `s` is `[A-Za-z_][A-Za-z0-9_./-]*` (ASCII only)."""
    return s != "" and (s[0] in _LETTERS or s[0] == "_") and not s.strip(_PLAIN_CHARS)


def plain_value_chars(s: str) -> bool:
    """True when `s` is `[A-Za-z][A-Za-z0-9_./-]*` (ASCII only)."""
    return s != "" and s[0] in _LETTERS and not s.strip(_PLAIN_CHARS)


def is_plain_safe(s: str) -> bool:
    """True when `s` can be written as a plain scalar without any YAML reader retyping it."""
    return plain_value_chars(s) and s not in _RESERVED_KEYS


def _repr_str(dumper, s: str):
    if "\n" in s and not any(c in s for c in "\t\r") and s == s.rstrip(" ") \
            and " \n" not in s:
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", s,
                                   style=None if is_plain_safe(s) else '"')


def _repr_dict(dumper, d: dict):
    value = []
    node = yaml.MappingNode("tag:yaml.org,2002:map", value, flow_style=False)
    for k, v in d.items():
        ks = str(k)
        style = None if plain_key_chars(ks) and ks not in _RESERVED_KEYS else '"'
        value.append((dumper.represent_scalar("tag:yaml.org,2002:str", ks, style=style),
                      dumper.represent_data(v)))
    return node


_Dumper.add_representer(str, _repr_str)
_Dumper.add_representer(dict, _repr_dict)


def to_yaml(obj) -> str:
    """Serialise plain data (dict/list/str/int/bool/None) to a YAML document (no `---`),
    in the style of the module docstring. Reads back as the same data as
    `to_yaml_pyyaml` (tested), several times faster."""
    if isinstance(obj, (dict, list)) and obj:
        return "\n".join(block(obj, 0)) + "\n"
    return to_yaml_pyyaml(obj)


def to_yaml_pyyaml(obj) -> str:
    """The reference serialiser (PyYAML with this module's representers); used for scalars and
    empty collections at the top level, and by the tests as the reference for `to_yaml`."""
    return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=False,
                     allow_unicode=True, width=10_000)


def _literal_ok(s: str) -> bool:
    """A multi-line string that a `|` literal block keeps exactly: one final newline (clip
    chomping), no leading space or blank first line (no indentation indicator needed), no
    trailing spaces and only printable characters."""
    body = s[:-1]
    return (s.endswith("\n") and not body.endswith("\n") and not s.startswith((" ", "\n"))
            and " \n" not in s and body.replace("\n", "").isprintable())


_ESCAPES = {"\"": '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r",
            "\0": "\\0"}


def quote(s: str) -> str:
    """A YAML double-quoted scalar: printable characters as they are, everything else
    escaped (\\xXX, \\uXXXX, \\UXXXXXXXX), so any reader gets the same string back."""
    if s.isprintable() and '"' not in s and "\\" not in s and "\ufeff" not in s:
        return '"' + s + '"'
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable() and ch not in "\ufeff":
            out.append(ch)
        else:
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000
                       else f"\\U{n:08x}")
    return '"' + "".join(out) + '"'


def scalar(value) -> str:
    """One scalar as single-line YAML text: plain when safe, else double-quoted (JSON
    escapes are valid YAML double-quoted escapes). Numbers and booleans plain."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return _scalar_text(str(value))


@functools.lru_cache(maxsize=8192)
def _scalar_text(s: str) -> str:
    """scalar() of a string, cached: the strings written repeat across documents."""
    return s if is_plain_safe(s) else quote(s)


def key(k) -> str:
    """A mapping key as YAML text."""
    return _key_text(str(k))


@functools.lru_cache(maxsize=8192)
def _key_text(ks: str) -> str:
    return ks if plain_key_chars(ks) and ks not in _RESERVED_KEYS else quote(ks)


def flow(value) -> str:
    """A value in flow style (for insertion inside `{...}` / `[...]`)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalar(value)


def block(value, col: int, unit: int = 2, seq_offset: int = 0) -> list[str]:
    """Block-style lines (no line ends) for a mapping or list at column `col`, with
    `unit` spaces per nesting level and sequences' dashes `seq_offset` columns right of
    their key (the style of the document being edited). Cached on the value's marshal
    bytes: the same env list or resources block is inserted into many items."""
    try:
        data = marshal.dumps(value)
    except ValueError:          # not plain data: render without the cache
        return _block(value, col, unit, seq_offset)
    return list(_block_cached(data, col, unit, seq_offset))


@functools.lru_cache(maxsize=1024)
def _block_cached(data: bytes, col: int, unit: int, seq_offset: int) -> tuple:
    return tuple(_block(marshal.loads(data), col, unit, seq_offset))


def block_maps(items: list) -> list[str]:
    """`block(items, 0)` for a non-empty list of non-empty mappings (e.g. a ResourceList's
    results), without the whole-value cache: a nested mapping whose keys and values are all
    strings is rendered once per content (results repeat their resourceRef and tags), and
    single-line string values take the cached scalar text. Same lines as `block`."""
    out: list[str] = []
    memo: dict = {}
    for item in items:
        if not (isinstance(item, dict) and item):
            out.extend(_block([item], 0))
            continue
        lines: list[str] = []
        for k, v in item.items():
            if v.__class__ is str and "\n" not in v:
                lines.append(f"  {key(k)}: {_scalar_text(v)}")
            elif v.__class__ is dict and v:
                lines.extend(_memo_block(memo, k, v))
            else:
                lines.extend(_block({k: v}, 2))
        out.append(f"- {lines[0][2:]}")
        out.extend(lines[1:])
    return out


def _memo_block(memo: dict, k, v: dict) -> list[str]:
    """`_block({k: v}, 2)`, kept in `memo` by content when every key and value of `v` is a
    string. A lookup needs no type check: a key equal to a kept one holds strings equal to
    strings, so strings (1, 1.0 and True are equal to each other, never to "1")."""
    try:
        memo_key = (k, tuple(v.items()))
        sub = memo.get(memo_key)
    except TypeError:           # an unhashable value: a nested collection
        return _block({k: v}, 2)
    if sub is None:
        sub = _block({k: v}, 2)
        if all(a.__class__ is str and b.__class__ is str for a, b in v.items()):
            memo[memo_key] = sub
    return sub


def _block(value, col: int, unit: int = 2, seq_offset: int = 0) -> list[str]:
    pad = " " * col
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict) and v:
                out.append(f"{pad}{key(k)}:")
                out.extend(_block(v, col + unit, unit, seq_offset))
            elif isinstance(v, list) and v:
                out.append(f"{pad}{key(k)}:")
                out.extend(_block(v, col + seq_offset, unit, seq_offset))
            elif isinstance(v, str) and "\n" in v and _literal_ok(v):
                inner = " " * (col + unit)
                out.append(f"{pad}{key(k)}: |")
                out.extend(inner + ln if ln else "" for ln in v[:-1].split("\n"))
            else:
                out.append(f"{pad}{key(k)}: {flow(v)}")
        return out
    for item in value:
        if isinstance(item, (dict, list)) and item:
            inner = _block(item, col + 2, unit, seq_offset)
            out.append(f"{pad}- {inner[0][col + 2:]}")
            out.extend(inner[1:])
        else:
            out.append(f"{pad}- {flow(item)}")
    return out
