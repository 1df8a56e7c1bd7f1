"""Reading YAML text into plain data, within bounds.

`documents(text)` composes the text with libyaml (PyYAML's C parser) into one node graph per
non-empty document; `Builder.build` turns a node into plain data (dict, list, str, None; with
`typed=True` also int, float and bool, YAML 1.2 core). Untyped data has every scalar as a
string (null stays None), so no YAML 1.1 retyping (`on`, `0644`, `1e3`) can reach the
caller. The bounds: MAX_DEPTH levels of nesting, MAX_NODES nodes in the text and in what its
aliases expand to, MAX_INT_DIGITS digits in a typed integer; merge keys (`<<`), duplicate
keys, non-scalar keys, recursive aliases and aliases from one built item into another are
refused. Every refusal is an InputError with a one-line message.

The library is `import yaml` (PyYAML): imports are absolute, so this package never shadows
it; none of its modules is meant to run as a script.
"""
from __future__ import annotations

import functools
import re

import yaml

try:
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover - libyaml missing: same results, slower
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


_NOTHING: dict = {}    # stays empty (Loader's no-op path-resolver hooks)
# the tag of an untagged node, by node class: no implicit typing (Loader)
_TAGS = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq",
         yaml.MappingNode: "tag:yaml.org,2002:map"}


class Loader(_Parser, yaml.resolver.BaseResolver):
    """libyaml's parser and composer with no implicit typing: every untagged scalar gets
    the str tag and keeps its style, and Builder types plain scalars itself (YAML 1.2
    core), so PyYAML's YAML 1.1 resolver (regexes per scalar) never runs. For
    `yaml.compose(text, Loader=Loader)`; `documents` adds the bounds."""

    def __init__(self, stream):
        _Parser.__init__(self, stream)
        yaml.resolver.BaseResolver.__init__(self)
        # The parser calls these two for every node; with no path resolvers (none is ever
        # added) BaseResolver's do nothing. C callables that do nothing either skip ~2 Python
        # calls per node (~30 ms of a 2,000-item render, its read-back included).
        if not self.yaml_path_resolvers:
            self.descend_resolver = _NOTHING.get    # (parent, index) -> index, stores nothing
            self.ascend_resolver = tuple            # () -> ()

    def resolve(self, kind, value, implicit, _tags=_TAGS):
        # libyaml's composer calls this for every untagged node: one lookup (~20 ms of the
        # 2,000-item render less than two class comparisons through the module)
        return _tags[kind]


MAX_DEPTH = 100        # manifests nest about 20 levels; deeper input is refused
MAX_NODES = 2_000_000  # bounds alias expansion ("billion laughs") and huge inputs


class InputError(ValueError):
    """Input that cannot be read (not YAML, beyond a bound, a shape the reader refuses).
    The message is one line, for stderr. Callers raise it too for input that is YAML but
    not what they expect."""


_NULL = {"", "~", "null", "Null", "NULL"}
_STR_TAG = "tag:yaml.org,2002:str"      # what the loader gives an untagged node too
_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
         "FALSE": False}
_PLAIN_TAGS = {"tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float", "str",
                                                   "timestamp", "value", "merge")}
# YAML 1.2 core int and float (typed scalars: the function config); compiled on first use
# (start-up), and only for a scalar that starts with a character both patterns need
_NUMBER_START = frozenset("+-.0123456789")


@functools.lru_cache(maxsize=None)
def _numbers() -> tuple:
    """(int pattern, float pattern), compiled once."""
    return (re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$"),
            re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|"
                       r"^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$"))


MAX_INT_DIGITS = 100     # longest integer literal read with YAML 1.2 typing (configs)
# Standard tags of scalars: on a mapping or a list every YAML reader (kubectl's, PyYAML's,
# ruamel's) refuses them, so such input is refused here rather than passed through.
_SCALAR_ONLY_TAGS = {"tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float",
                                                        "str", "binary", "timestamp")}


# explicit tags that type a quoted scalar in a typed document (Builder._tagged)
_TYPED_TAGS = {"tag:yaml.org,2002:" + t for t in ("bool", "int", "float")}


def _str_tagged(text: str, node) -> bool:
    """Whether the str-tagged plain scalar `node` of `text` carries its tag explicitly
    (`!!str 1.35`, `&a !!str 1.35`): the loader gives an untagged scalar the same tag, but
    only the explicit one makes `1.35` a string to a YAML reader. A plain scalar cannot
    start with `!`, so a word of the node's text that does, before its value, is a tag."""
    if node.tag != "tag:yaml.org,2002:str":
        return False
    words = text[node.start_mark.index:node.end_mark.index].split(None, 2)
    return bool(words) and (words[0][:1] == "!" or (
        words[0][:1] == "&" and len(words) > 1 and words[1][:1] == "!"))


def _property_before(node) -> bool:
    """Whether the plain scalar `node`, whose value reads as null untagged (`null`, `~`,
    empty: one line, nothing escaped), is written with a property before it (`!!str null`,
    `! ~`, `&a null`): its text is longer than its value. False for a node built without
    marks (not read from text: nothing is written before it)."""
    start, end = node.start_mark, node.end_mark
    return start is not None and end is not None and end.index - start.index != len(node.value)


class WrittenInt(int):
    """An int YAML 1.2 reads from a plain scalar that str() does not write back (`07`,
    `0x0A`, `+5`): `text` is the scalar as written, for a reader that wants text (a label
    value in the function config, krm_fn/config/values.py scalar_str)."""

    def __new__(cls, value: int, text: str):
        obj = super().__new__(cls, value)
        obj.text = text
        return obj


class Builder:
    """Plain data from libyaml nodes, one item per `build` call, all calls sharing one
    MAX_NODES budget. Aliases are kept shared (never expanded) but their expanded size is
    counted, so a "billion laughs" input is refused before anything downstream (copies,
    str(), dumps) could expand it. An alias to a node that an earlier call built is refused
    (each item must stand alone: a consumer that splits the items, as kustomize does,
    could not resolve it); `aliased` holds the indices (call numbers, from 0) of the items
    that use an alias inside themselves. `expanded` is the count of nodes so far."""

    def __init__(self, typed: bool = False, number_check=None, text: str | None = None,
                 tag_check=None):
        self.typed = typed
        self.text = text        # the text the nodes come from: explicit tags are seen in it
        self.number_check = number_check
        # (value, tag) -> why a scalar with that explicit standard tag (other than !!str)
        # cannot be read, or None: the caller's judgement (resourcelist.tag_refusal)
        self.tag_check = tag_check
        self.expanded = 0
        self.memo: dict[int, object] = {}
        self.size: dict[int, int] = {}
        self.owner: dict[int, int] = {}
        self.item = -1
        self.aliased: set[int] = set()

    def build(self, node, where: str, text: str | None = None):
        """The plain data of `node` as the next item; `where` names it in messages (the
        field path is appended). Given the `text` the node was composed from, an item
        whose text holds no anchor or alias (`&`, `*`: the usual case) takes the fast path,
        which builds the same value without the alias bookkeeping and the per-node field
        paths; anything the fast path would refuse is built again by the full builder for
        the exact message. Raises InputError."""
        self.item += 1
        if text is not None:
            self.text = text
        if text is None or self.typed or not _alias_free(text, node):
            return self._build(node, where)
        count = [0]
        try:
            value = _build_plain(node, 0, count)
        except _Refused:
            return self._build(node, where)
        self._count(count[0])
        return value

    def scalar(self, node, where: str = ""):
        """A scalar node's value: None for null, a string, or with `typed` the YAML 1.2
        core bool/int/float of a plain scalar. Raises InputError for an integer literal of
        more than MAX_INT_DIGITS digits, and for a number spelling `number_check` refuses
        (`_check_number`), and for an explicit tag `tag_check` refuses. A plain scalar
        explicitly tagged `!!str` (or `!`) is the string written, `!!str null` too; with
        `typed`, a quoted one tagged `!!bool`, `!!int` or `!!float` is read as that type
        (`_tagged`)."""
        v = node.value
        tag = node.tag
        if tag != _STR_TAG and self.tag_check is not None and tag in _SCALAR_ONLY_TAGS:
            why = self.tag_check(v, tag)
            if why:
                raise InputError(f"{where} (line {_line(node)}): {why}")
        plain = not node.style and tag in _PLAIN_TAGS
        if is_null(node, self.text):
            return None
        if self.typed and node.style and tag in _TYPED_TAGS:
            return self._tagged(v, node, where)
        if not self.typed or not plain or (self.text is not None and _str_tagged(self.text,
                                                                               node)):
            return v
        return self._typed(v, node, where)

    def _tagged(self, v: str, node, where: str):
        """The value of the quoted or block scalar `v` (`node`) of a typed document with the
        explicit tag !!bool, !!int or !!float: its text read as a plain scalar is (`!!int
        "3"` is 3, `!!float "3"` 3.0, as go-yaml reads an explicitly tagged scalar:
        resolve.go `resolve`). Raises InputError when that reading is of another type
        (`!!bool "yes"`: `yes` is no YAML 1.2 boolean)."""
        got = self._typed(v, node, where)
        kind = node.tag.rsplit(":", 1)[1]
        if kind == "float" and got.__class__ in (int, WrittenInt):
            return float(got)
        if {"bool": bool, "int": int, "float": float}[kind] is got.__class__ or (
                kind == "int" and got.__class__ is WrittenInt):
            return got
        raise InputError(f"{where} (line {_line(node)}): !!{kind} {v!r}: a YAML 1.2 reader "
                         f"(kyaml, go-yaml v3, as kustomize and kpt read the function config) "
                         f"refuses it: {v!r} is no {kind}; write a value of that type, or "
                         f"drop the tag")

    def _typed(self, v: str, node, where: str):
        """The YAML 1.2 core value of the plain scalar `v` (`node`): a bool, an int, a
        float, else the string."""
        if v in _BOOL:
            return _BOOL[v]
        if v[:1] not in _NUMBER_START:      # neither pattern can match
            return v
        int_re, float_re = _numbers()
        if int_re.match(v):
            if (v[0] == "0" or v[0] in "+-" and v[1:2] == "0") and len(v) > 2 - (v[0] == "0"):
                self._check_number(v, node, where, True)
            if len(v) > MAX_INT_DIGITS:     # int() refuses > 4300 digits; no field needs 100
                raise InputError(f"a number of {len(v)} digits (line {node.start_mark.line + 1}"
                                 f"); at most {MAX_INT_DIGITS} are accepted")
            n = int(v, 0) if v.startswith(("0o", "0x")) else int(v)
            return n if str(n) == v else WrittenInt(n, v)
        if float_re.match(v):
            return float(v.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                         .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
        self._check_number(v, node, where, False)   # a YAML 1.1-only number (`1_000`)?
        return v

    def _check_number(self, v: str, node, where: str, yaml12_number: bool) -> None:
        """Raise InputError with `number_check(v, yaml12_number)`'s reason, when it gives
        one, for the plain scalar `v` of a typed document that YAML 1.2 (this reader)
        reads as a number (`yaml12_number`) or as a string: the caller's judgement of
        spellings other YAML readers take otherwise (krm_fn.numbers.yaml_disagreement:
        the kubelet's and kubectl's YAML 1.1 reads `010` as 8)."""
        if self.number_check is not None:
            why = self.number_check(v, yaml12_number)
            if why:
                raise InputError(f"{where} (line {_line(node)}): {why}")

    def _count(self, n: int) -> None:
        self.expanded += n
        if self.expanded > MAX_NODES:
            raise InputError(f"input is too large or expands too far through aliases "
                             f"(more than {MAX_NODES} nodes)")

    def _build(self, node, where: str, depth: int = 0):
        """The full builder: every node checked, with its field path in messages."""
        if depth > MAX_DEPTH:
            raise InputError(f"{where.split('.')[0]}: nested more than {MAX_DEPTH} levels deep "
                             f"(line {_line(node)})")
        key = id(node)
        if key in self.memo:
            if key not in self.size:         # still being built: the alias points into itself
                raise InputError(f"{where}: an alias refers to a node that contains it (line "
                                 f"{node.start_mark.line + 1}); such a recursive structure has "
                                 f"no YAML-independent form")
            if self.owner.get(key, self.item) != self.item:
                raise InputError(f"{where}: alias to an anchor in another item (line "
                                 f"{node.start_mark.line + 1}); kustomize splits items, so "
                                 f"aliases cannot cross them: expand the alias")
            self.aliased.add(self.item)
            self._count(self.size[key])
            return self.memo[key]
        before = self.expanded
        self._count(1)
        if not isinstance(node, yaml.ScalarNode) and node.tag in _SCALAR_ONLY_TAGS:
            raise InputError(f"{where}: tag !!{node.tag.rsplit(':', 1)[1]} on a "
                             f"{'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}"
                             f" (line {_line(node)}): YAML readers refuse it")
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node, where)
        elif isinstance(node, yaml.SequenceNode):
            value = []
            self.memo[key], self.owner[key] = value, self.item
            for i, child in enumerate(node.value):
                value.append(self._build(child, f"{where}[{i}]", depth + 1))
        else:
            value = {}
            self.memo[key], self.owner[key] = value, self.item
            for k, v in node.value:
                if k.tag == "tag:yaml.org,2002:merge" or (isinstance(k, yaml.ScalarNode)
                                                          and k.value == "<<" and not k.style):
                    raise InputError(f"{where}: YAML merge keys (<<) are not supported: "
                                     f"write the keys out (line {k.start_mark.line + 1})")
                kv = self._build(k, where, depth + 1)
                if isinstance(kv, (dict, list)):
                    raise InputError(f"{where}: a mapping key must be a scalar")
                kv = "" if kv is None else kv if isinstance(kv, str) else str(kv)
                if kv in value:
                    raise InputError(f"{where}: duplicate key {kv!r} (line "
                                     f"{k.start_mark.line + 1})")
                value[kv] = self._build(v, f"{where}.{kv}", depth + 1)
        self.memo[key], self.owner[key] = value, self.item
        self.size[key] = self.expanded - before
        return value


def _alias_free(text: str, node) -> bool:
    """True when the text of `node` holds no `&` or `*`, so no anchor or alias (an anchored
    node's start mark is at its `&`, and an alias to it shows its `*`)."""
    start, end = node.start_mark.index, node.end_mark.index
    return text.find("&", start, end) < 0 and text.find("*", start, end) < 0


class _Refused(Exception):
    """The fast path met something only the full builder reports (with the field path)."""




def _line(node) -> str:
    """The 1-based line of `node`, "?" when it has no position (a node built in code)."""
    mark = getattr(node, "start_mark", None)
    return str(mark.line + 1) if mark is not None else "?"


def _build_plain(node, depth: int, count: list, _scalar=yaml.ScalarNode,
                 _seq=yaml.SequenceNode, _null=_NULL):
    """Builder(typed=False)._build for a node graph without aliases: the same plain data
    (scalars as strings, null as None), its nodes added to count[0]; raises _Refused where
    build raises InputError, and for a scalar with an explicit tag other than !!str (the
    full builder judges it). With no anchor in the text, a plain null spelling with a
    property before it is explicitly tagged !!str (or !): a string."""
    if depth > MAX_DEPTH:
        raise _Refused
    count[0] += 1
    cls = node.__class__
    if cls is _scalar:
        if node.tag != _STR_TAG:
            raise _Refused
        if not node.style and node.value in _null and not _property_before(node):
            return None
        return node.value
    if node.tag in _SCALAR_ONLY_TAGS:
        raise _Refused
    depth += 1
    if cls is _seq:
        return [_build_plain(child, depth, count) for child in node.value]
    out: dict = {}
    for k, v in node.value:
        if k.__class__ is not _scalar:
            raise _Refused
        kv = k.value
        if k.tag != _STR_TAG or (kv == "<<" and not k.style):
            raise _Refused
        if not k.style and kv in _null and not _property_before(k):
            kv = ""
        if kv in out:
            raise _Refused
        count[0] += 1                   # the key
        out[kv] = _build_plain(v, depth, count)
    return out


def plain_key(k):
    """The plain key `_build_plain` makes of the key node `k` (its value; "" for a null
    key), or None where it refuses the key (a collection, a merge key, an explicit tag
    other than !!str). _build_plain inlines the same rule (a call per key would cost ~20 ms
    of a 2,000-item render); tests/test_yaml_layer.py compares the two."""
    if k.__class__ is not yaml.ScalarNode:
        return None
    kv = k.value
    if k.tag != _STR_TAG or (kv == "<<" and not k.style):
        return None
    if not k.style and kv in _NULL and not _property_before(k):
        return ""
    return kv


# Every node is introduced by one of these characters or starts the first document: a
# block sequence and its entries by `-`, a mapping with its keys and values by `:` or `?`,
# a flow collection and its entries by `[`, `{` and `,` (an implicit single-pair mapping
# in a flow sequence with its key too), an alias by `*`, a document by `-`, `.` or a line
# break; none introduces more than three.
_NODE_INDICATORS = ":?-,[{*.\n"


def _node_bound(text: str) -> int:
    """An upper bound on the nodes in `text` (three per indicator character, plus the first
    document's root)."""
    return 3 * sum(text.count(ch) for ch in _NODE_INDICATORS) + 1


def _too_many_nodes(text: str) -> bool:
    """True when the text holds more than MAX_NODES nodes, found by counting parser events
    (no node graph is built). Only run when the cheap upper bound _node_bound is above the
    limit, so ordinary inputs pay nothing."""
    if _node_bound(text) <= MAX_NODES:
        return False
    parser = Loader(text)
    n = 0
    try:
        while parser.check_event():
            ev = parser.get_event()
            if isinstance(ev, (yaml.ScalarEvent, yaml.MappingStartEvent,
                               yaml.SequenceStartEvent, yaml.AliasEvent)):
                n += 1
                if n > MAX_NODES:
                    return True
    except yaml.YAMLError:
        return False      # compose reports the syntax error with its position
    finally:
        parser.dispose()
    return False


def documents(text: str) -> list:
    """The root node of every non-empty document of `text`, composed by Loader (an empty
    document: nothing, or only a plain empty scalar). Refuses text of more than MAX_NODES
    nodes before composing it. Raises InputError naming the line and column of a syntax
    error."""
    if _too_many_nodes(text):
        raise InputError(f"input is too large (more than {MAX_NODES} nodes)")
    try:
        nodes = list(yaml.compose_all(text, Loader=Loader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"input is not valid YAML{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(f"input is not valid YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise InputError(f"input is nested too deeply (krm-fn accepts {MAX_DEPTH} levels)") \
            from None
    return [n for n in nodes if n is not None and not _is_empty_doc(n)]


def is_null(node, text: str | None = None) -> bool:
    """True for a scalar node that reads as null (https://yaml.org/type/null.html): tagged
    `!!null`, or plain `~`, `null`, empty and not explicitly tagged `!!str` (or `!`):
    `!!str null` is the string "null" to every YAML reader. `text`: the text the node was
    composed from, to tell `!!str null` from `&a null` (both carry the str tag here);
    without it a plain null with any property before it is not null."""
    tag = node.tag
    if tag == _NULL_TAG:
        return True
    if node.style or tag not in _PLAIN_TAGS or node.value not in _NULL:
        return False
    return not (tag == _STR_TAG and _property_before(node)
                and (text is None or _str_tagged(text, node)))


def _is_empty_doc(node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == "" and not node.style \
        and node.tag in _PLAIN_TAGS
