"""The only module that reads YAML: ResourceList or multi-document input, and output.

Fidelity by construction: the input text is parsed once with libyaml (PyYAML's C parser)
for structure and positions; the output is the input text with only the spans of the items
that change rewritten. A changed item is re-read with ruamel.yaml's round-trip loader, the
engine's edits are replayed on it (comments, key order, quoting and flow style of every
untouched node kept) and it is written back at its original indentation. Unchanged items,
the functionConfig and everything else come out byte for byte. New objects and results are
appended as new text (krm_fn.yamlout).

Plain data handed to the engine has every scalar as a string (null stays None), so no
YAML 1.1 retyping (`on`, `0644`, `1e3`) can leak into comparisons; the functionConfig is
read with YAML 1.2 core types (int, float, bool, null) for the typed config.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import yaml

from krm_fn import yamlout
from krm_fn.pod import DELETE

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


class _Loader(_Parser, yaml.resolver.BaseResolver):
    """libyaml's parser and composer with no implicit typing: every untagged scalar gets
    the str tag and keeps its style, and _Builder types plain scalars itself (YAML 1.2
    core), so PyYAML's YAML 1.1 resolver (regexes per scalar) never runs."""

    def __init__(self, stream):
        _Parser.__init__(self, stream)
        yaml.resolver.BaseResolver.__init__(self)

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return "tag:yaml.org,2002:str"
        return "tag:yaml.org,2002:seq" if kind is yaml.SequenceNode else "tag:yaml.org,2002:map"

RESOURCE_LIST_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1",
                          "config.kubernetes.io/v1alpha1")
MAX_DEPTH = 100            # Kubernetes objects nest ~20 levels; deeper input is refused
MAX_NODES = 2_000_000  # bounds alias expansion ("billion laughs") and huge inputs


class InputError(ValueError):
    """Input that is not YAML, or not a ResourceList where one is required. The message is
    one line, for stderr."""


@dataclass
class Span:
    """Where one item stands in the input text: [start, end) character offsets and the
    column its first line starts at (its indentation)."""

    start: int
    end: int
    column: int
    flow: bool


@dataclass
class Document:
    """Parsed input. `mode` is `resourcelist` or `multidoc`; `items` are plain dicts;
    `spans[i]` and `nodes[i]` locate items[i] in the text; `function_config` is the typed
    functionConfig or None; `aliased` holds the indices of items that use YAML aliases."""

    text: str
    mode: str
    items: list
    spans: list
    function_config: dict | None = None
    nodes: list = field(default_factory=list)
    aliased: set = field(default_factory=set)
    root: object = None
    items_key: object = None
    items_node: object = None
    results_node: object = None
    existing_results: list = field(default_factory=list)
    flow: bool = False
    api_version: str = "config.kubernetes.io/v1"


# --- plain data from libyaml nodes ------------------------------------------------------

_NULL = {"", "~", "null", "Null", "NULL"}
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
         "FALSE": False}
_PLAIN_TAGS = {"tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float", "str",
                                                   "timestamp", "value", "merge")}
_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|"
                    r"^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")


MAX_INT_DIGITS = 100     # longest integer literal read with YAML 1.2 typing (configs)
# Standard tags of scalars: on a mapping or a list every YAML reader (kubectl's, PyYAML's,
# ruamel's) refuses them, so such input is refused here rather than passed through.
_SCALAR_ONLY_TAGS = {"tag:yaml.org,2002:" + t for t in ("null", "bool", "int", "float",
                                                        "str", "binary", "timestamp")}


class _Builder:
    """Plain data from libyaml nodes. Aliases are kept shared (never expanded) but their
    expanded size is counted, so a "billion laughs" input is refused before anything
    downstream (copies, str(), dumps) could expand it. `owner` records which item first
    built each node: an alias into another item is refused (kustomize splits items, so
    such an alias breaks), and items that use an alias inside themselves are listed in
    `aliased`."""

    def __init__(self, typed: bool):
        self.typed = typed
        self.expanded = 0
        self.memo: dict[int, object] = {}
        self.size: dict[int, int] = {}
        self.owner: dict[int, int] = {}
        self.item = -1
        self.aliased: set[int] = set()

    def scalar(self, node):
        v = node.value
        plain = not node.style and node.tag in _PLAIN_TAGS
        if node.tag == "tag:yaml.org,2002:null" or (plain and v in _NULL):
            return None
        if not self.typed or not plain:
            return v
        if v in _BOOL:
            return _BOOL[v]
        if _INT.match(v):
            if len(v) > MAX_INT_DIGITS:     # int() refuses > 4300 digits; no field needs 100
                raise InputError(f"a number of {len(v)} digits (line {node.start_mark.line + 1}"
                                 f"); at most {MAX_INT_DIGITS} are accepted")
            return int(v, 0) if v.startswith(("0o", "0x")) else int(v)
        if _FLOAT.match(v):
            return float(v.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                         .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
        return v

    def _count(self, n: int) -> None:
        self.expanded += n
        if self.expanded > MAX_NODES:
            raise InputError(f"input is too large or expands too far through aliases "
                             f"(more than {MAX_NODES} nodes)")

    def build(self, node, where: str, depth: int = 0):
        if depth > MAX_DEPTH:
            raise InputError(f"{where.split('.')[0]}: nested more than {MAX_DEPTH} levels deep "
                             f"(line {node.start_mark.line + 1})")
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
                             f" (line {node.start_mark.line + 1}): YAML readers refuse it")
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = []
            self.memo[key], self.owner[key] = value, self.item
            for i, child in enumerate(node.value):
                value.append(self.build(child, f"{where}[{i}]", depth + 1))
        else:
            value = {}
            self.memo[key], self.owner[key] = value, self.item
            for k, v in node.value:
                if k.tag == "tag:yaml.org,2002:merge" or (isinstance(k, yaml.ScalarNode)
                                                          and k.value == "<<" and not k.style):
                    raise InputError(f"{where}: YAML merge keys (<<) are not supported: "
                                     f"write the keys out (line {k.start_mark.line + 1})")
                kv = self.build(k, where, depth + 1)
                if isinstance(kv, (dict, list)):
                    raise InputError(f"{where}: a mapping key must be a scalar")
                kv = "" if kv is None else kv if isinstance(kv, str) else str(kv)
                if kv in value:
                    raise InputError(f"{where}: duplicate key {kv!r} (line "
                                     f"{k.start_mark.line + 1})")
                value[kv] = self.build(v, f"{where}.{kv}", depth + 1)
        self.memo[key], self.owner[key] = value, self.item
        self.size[key] = self.expanded - before
        return value

    def build_item(self, index: int, node, where: str, text: str):
        """Item `index` (the node at `where` in messages). An item whose text holds no
        anchor or alias (`&`, `*`: the usual case) takes the fast path, which builds the
        same value without the alias bookkeeping and the per-node field paths; anything the
        fast path would refuse is built again here for the exact message. Its nodes count
        towards the same MAX_NODES budget as the expanded aliases of the other items."""
        self.item = index
        if self.typed or not _alias_free(text, node):
            return self.build(node, where)
        count = [0]
        try:
            value = _build_plain(node, 0, count)
        except _Refused:
            return self.build(node, where)
        self._count(count[0])
        return value


def _alias_free(text: str, node) -> bool:
    """True when the text of `node` holds no `&` or `*`, so no anchor or alias (an anchored
    node's start mark is at its `&`, and an alias to it shows its `*`)."""
    start, end = node.start_mark.index, node.end_mark.index
    return text.find("&", start, end) < 0 and text.find("*", start, end) < 0


class _Refused(Exception):
    """The fast path met something only _Builder.build reports (with the field path)."""


_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _build_plain(node, depth: int, count: list, _scalar=yaml.ScalarNode,
                 _seq=yaml.SequenceNode, _null=_NULL, _plain=_PLAIN_TAGS):
    """_Builder(typed=False).build for a node graph without aliases: the same plain data
    (scalars as strings, null as None), its nodes added to count[0]; raises _Refused where
    build raises InputError."""
    if depth > MAX_DEPTH:
        raise _Refused
    count[0] += 1
    cls = node.__class__
    if cls is _scalar:
        tag = node.tag
        if tag == _NULL_TAG or (not node.style and node.value in _null and tag in _plain):
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
        kv, tag = k.value, k.tag
        if tag == _MERGE_TAG or (kv == "<<" and not k.style):
            raise _Refused
        if tag == _NULL_TAG or (not k.style and kv in _null and tag in _plain):
            kv = ""
        if kv in out:
            raise _Refused
        count[0] += 1                   # the key
        out[kv] = _build_plain(v, depth, count)
    return out


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
    parser = _Loader(text)
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


def _compose_all(text: str) -> list:
    if _too_many_nodes(text):
        raise InputError(f"input is too large (more than {MAX_NODES} nodes)")
    try:
        return list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"input is not valid YAML{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(f"input is not valid YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise InputError(f"input is nested too deeply (krm-fn accepts {MAX_DEPTH} levels)") \
            from None


def _is_null(node) -> bool:
    """A scalar that reads as null: explicitly tagged, or plain `~`, `null`, empty."""
    return node.tag == "tag:yaml.org,2002:null" or (
        not node.style and node.tag in _PLAIN_TAGS and node.value in _NULL)


def _is_empty_doc(node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == "" and not node.style \
        and node.tag in _PLAIN_TAGS


def _content_end(node) -> int:
    """Offset just past the last character of `node`'s own content: for block collections
    the end of their last value, not the start of whatever token follows (libyaml's end
    mark for a block collection lies after any comments that follow it)."""
    floor = 0
    while True:
        if isinstance(node, yaml.MappingNode) and node.value and node.flow_style is not True:
            # the key's end also counts: an alias value (`b: *x`) is the anchor's node and
            # carries the anchor's (earlier) position
            floor = max(floor, node.value[-1][0].end_mark.index)
            node = node.value[-1][1]
        elif isinstance(node, yaml.SequenceNode) and node.value and node.flow_style is not True:
            node = node.value[-1]
        else:
            return max(floor, node.end_mark.index)


def _line_end(text: str, pos: int) -> int:
    """Offset just past the line end at or after `pos` (len(text) at the end)."""
    if pos > 0 and text[pos - 1] == "\n":
        return pos
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def _span(text: str, node) -> Span:
    return Span(node.start_mark.index, _line_end(text, _content_end(node)),
                node.start_mark.column, getattr(node, "flow_style", False) is True)


def parse(text: str, require_resource_list: bool) -> Document:
    """Parse input text. Raises InputError (one line) when the text is not YAML, when
    `require_resource_list` and it is not a single ResourceList, or when it is malformed."""
    if "\x00" in text:
        raise InputError("input is not YAML text (it contains NUL bytes)")
    nodes = [n for n in _compose_all(text) if n is not None and not _is_empty_doc(n)]
    builder = _Builder(typed=False)
    is_rl = (len(nodes) == 1 and isinstance(nodes[0], yaml.MappingNode)
             and any(k.value == "kind" and isinstance(v, yaml.ScalarNode)
                     and v.value == "ResourceList" for k, v in nodes[0].value))
    if not is_rl:
        if require_resource_list:
            if not nodes:
                raise InputError("no input: krm-fn expects a ResourceList on stdin "
                                 "(run it through kustomize or kpt, or use `krm-fn run`)")
            raise InputError("input is not a ResourceList (kind: ResourceList, apiVersion: "
                             "config.kubernetes.io/v1); use `krm-fn run` for plain YAML")
        items = [builder.build_item(i, n, f"document {i + 1}", text)
                 for i, n in enumerate(nodes)]
        return Document(text, "multidoc", items, [_span(text, n) for n in nodes],
                        nodes=nodes, aliased=builder.aliased)
    root = nodes[0]
    fields: dict = {}
    for k, v in root.value:
        if not isinstance(k, yaml.ScalarNode):
            raise InputError(f"ResourceList: keys must be strings, found a "
                             f"{'mapping' if isinstance(k, yaml.MappingNode) else 'list'} "
                             f"key (line {k.start_mark.line + 1})")
        if k.value in fields:
            raise InputError(f"ResourceList: duplicate key {k.value!r} (line "
                             f"{k.start_mark.line + 1})")
        fields[k.value] = (k, v)
    api_version = fields.get("apiVersion", (None, None))[1]
    av = api_version.value if isinstance(api_version, yaml.ScalarNode) else None
    if av not in RESOURCE_LIST_VERSIONS:
        raise InputError(f"ResourceList apiVersion {av!r} is not one of "
                         f"{', '.join(RESOURCE_LIST_VERSIONS)}")
    if "items" not in fields:
        raise InputError("ResourceList has no items field")
    items_key, items_node = fields["items"]
    doc = Document(text, "resourcelist", [], [], api_version=av, root=root,
                   flow=root.flow_style is True)
    if isinstance(items_node, yaml.ScalarNode) and builder.scalar(items_node) is None:
        doc.items_node = None
    elif not isinstance(items_node, yaml.SequenceNode):
        raise InputError("ResourceList items must be a list")
    else:
        doc.items = [builder.build_item(i, n, f"items[{i}]", text)
                     for i, n in enumerate(items_node.value)]
        doc.spans = [_span(text, n) for n in items_node.value]
        doc.nodes = list(items_node.value)
        doc.items_node = items_node
        doc.flow = doc.flow or items_node.flow_style is True
    doc.items_key = items_key
    doc.aliased = builder.aliased
    if "functionConfig" in fields:
        fc = _Builder(typed=True).build(fields["functionConfig"][1], "functionConfig")
        doc.function_config = fc
    if "results" in fields:
        k, v = fields["results"]
        doc.results_node = v
        existing = _Builder(typed=False).build(v, "results")
        doc.existing_results = existing if isinstance(existing, list) else []
    return doc


def load_config_file(text: str, what: str = "the config file") -> dict | None:
    """A functionConfig given as its own YAML document (legacy exec plugin, `krm-fn run
    --config`; also `--baseline`), read with YAML 1.2 core types. `what` names the file in
    messages. Raises InputError."""
    nodes = [n for n in _compose_all(text) if n is not None and not _is_empty_doc(n)]
    if len(nodes) != 1:
        raise InputError(f"{what} must hold exactly one YAML document, found {len(nodes)}")
    obj = _Builder(typed=True).build(nodes[0], "config" if what == "the config file" else what)
    if not isinstance(obj, dict):
        raise InputError(f"{what} must hold a mapping")
    return obj


def has_path_annotations(doc: Document) -> bool:
    """True when the items carry kpt's path annotations (the orchestrator is kpt)."""
    for it in doc.items:
        md = it.get("metadata") if isinstance(it, dict) else None
        ann = md.get("annotations") if isinstance(md, dict) else None
        if isinstance(ann, dict) and ("internal.config.kubernetes.io/path" in ann
                                      or "config.kubernetes.io/path" in ann):
            return True
    return False


# --- span edits: replay the engine's ops on the input text --------------------------------

_KEY_OPENS_BLOCK = re.compile(r"^( *)(- +)?[^#\s][^#]*:\s*(#.*)?$")


def guess_indent(body: str) -> tuple[int, int]:
    """(mapping indent, block sequence dash offset) the text uses, from the first key that
    opens a nested mapping and the first that opens a nested sequence. Defaults (2, 0)."""
    mapping, offset = None, None
    a = None
    for b in body.split("\n"):
        stripped = b.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if a is not None:
            m = _KEY_OPENS_BLOCK.match(a.rstrip("\r"))
            if m and not a.rstrip().endswith(("|", ">", "|-", ">-", "|+", ">+")):
                base = len(m.group(1)) + (len(m.group(2)) if m.group(2) else 0)
                ind = len(b) - len(b.lstrip(" "))
                if b.lstrip(" ").startswith("- ") and offset is None:
                    offset = max(0, ind - base)
                elif not b.lstrip(" ").startswith("- ") and mapping is None and ind > base:
                    mapping = ind - base
                if mapping is not None and offset is not None:
                    break
        a = b
    return mapping or 2, offset or 0


class _Unsupported(Exception):
    """An edit the span editor cannot express; the item is then rewritten by ruamel."""


def _child(node, key):
    """(key node or None, value node) of `node` at `key`, or None when absent."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return k, v
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return None, node.value[key]
    return None


def _nest(rest: tuple, value):
    for key in reversed(rest):
        value = [value] if isinstance(key, int) else {key: value}
    return value


def _merge(into, new) -> None:
    """Deep-merge plain `new` into `into` (dicts by key, lists append)."""
    if isinstance(into, dict):
        for k, v in new.items():
            if k in into and isinstance(into[k], (dict, list)) and isinstance(v, type(into[k])):
                _merge(into[k], v)
            else:
                into[k] = v
    else:
        into.extend(new)


def _dash_column(text: str, item) -> int:
    """Column of the `-` that introduces a block sequence entry (the entry's content may
    start on a later line, after comments: `- # note` / `  kind: Pod`)."""
    i = item.start_mark.index
    line_start = _line_start(text, i)
    before = text[line_start:i]
    while True:
        head = before.rstrip(" ")
        code = head.split(" #", 1)[0].rstrip(" ") if not head.lstrip().startswith("#") else ""
        if code.endswith("-") and (len(code) == 1 or code[-2] == " "):
            return len(code) - 1
        if code.strip():
            raise _Unsupported("sequence entry not introduced by a dash")
        if line_start == 0:
            raise _Unsupported("sequence entry without a dash")
        end = line_start - 1
        line_start = _line_start(text, end)
        before = text[line_start:end].rstrip("\r")


def _after_own_comments(text: str, pos: int, column: int) -> int:
    """Move `pos` (a line start) past following blank lines and comment lines indented
    deeper than `column`: they belong to the entry above (e.g. a commented-out key)."""
    end = pos
    while end < len(text):
        nl = text.find("\n", end)
        line = text[end:len(text) if nl < 0 else nl].rstrip("\r")
        stripped = line.lstrip(" ")
        if stripped and not (stripped.startswith("#") and len(line) - len(stripped) > column):
            break
        end = len(text) if nl < 0 else nl + 1
        if stripped:
            pos = end
    return pos


def _break_before(text: str, pos: int, nl: str) -> str:
    """"" when the text before `pos` ends with a line break, else `nl` (to start a line
    there). Looks at one character: slicing the text up to `pos` copied up to the whole
    input for every insertion."""
    return "" if pos and text[pos - 1] == "\n" else nl


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _flow_close(text: str, node) -> int:
    """Offset of the closing bracket of a flow collection, and whether it is empty."""
    close = node.end_mark.index - 1
    if text[close] not in "}]":
        raise _Unsupported("flow collection end not found")
    return close


def item_edits(text: str, node, ops, nl: str) -> list[tuple[int, int, str]]:
    """Text edits (start, end, replacement) that replay `ops` — (path, value) pairs from the
    engine — on the item whose libyaml node is `node`. Only the changed scalars and the
    inserted lines are touched; everything else stays byte for byte. Raises _Unsupported
    for shapes it cannot edit in place."""
    unit, seq_offset = guess_indent(text[node.start_mark.index:_content_end(node)])
    replaces: dict[int, tuple[int, int, str]] = {}
    inserts: dict[int, list] = {}      # id(container node) -> [node, {key: value} | [items]]
    keys: dict[int, dict] = {}         # id(mapping node) -> {key: value node}, as _child
    # id(insertion node) -> its depth under `node`: insertions at the same offset go
    # deepest first (a new env entry, inside the container's last value, before a new key
    # of the container)
    depth: dict[int, int] = {}
    parents = _Parents(node)
    prev_path: tuple = ()
    prev_nodes = [node]                # prev_nodes[j]: the node at prev_path[:j]
    for path, value in ops:
        if value is DELETE:
            raise _Unsupported("delete")
        # the ops of one container share most of their path: walk on from the common prefix
        i, most = 0, min(len(path), len(prev_nodes) - 1)
        while i < most and path[i] == prev_path[i]:
            i += 1
        nodes = prev_nodes[:i + 1]
        cur = nodes[i]
        while i < len(path):
            key = path[i]
            if isinstance(cur, yaml.MappingNode) and isinstance(key, str):
                index = keys.get(id(cur))
                if index is None:
                    index = keys[id(cur)] = {}
                    for k, v in cur.value:
                        if isinstance(k, yaml.ScalarNode):
                            index.setdefault(k.value, v)
                nxt = index.get(key)
            elif isinstance(cur, yaml.SequenceNode) and isinstance(key, int) and \
                    key < len(cur.value):
                nxt = cur.value[key]
            else:
                nxt = None
            if nxt is None:
                break
            cur, i = nxt, i + 1
            nodes.append(cur)
        prev_path, prev_nodes = path, nodes
        depth.setdefault(id(cur), i)
        if i == len(path):
            if not isinstance(cur, yaml.ScalarNode) or isinstance(value, (dict, list)):
                raise _Unsupported("replace a collection")
            replaces[cur.start_mark.index] = (cur.start_mark.index, cur.end_mark.index,
                                              _scalar_text(text, cur, value))
            continue
        key, rest = path[i], path[i + 1:]
        new = _nest(rest, value)
        if isinstance(cur, yaml.SequenceNode):
            if not isinstance(key, int) or key != len(cur.value) + len(
                    inserts.get(id(cur), [None, []])[1]):
                raise _Unsupported("sequence index")
            inserts.setdefault(id(cur), [cur, []])[1].append(new)
        elif isinstance(cur, yaml.MappingNode) and isinstance(key, str):
            entry = inserts.setdefault(id(cur), [cur, {}])[1]
            if key in entry and isinstance(entry[key], (dict, list)):
                _merge(entry[key], new)
            else:
                entry[key] = new
        elif isinstance(cur, yaml.ScalarNode) and _is_null(cur):
            entry = inserts.setdefault(id(cur), [cur, [] if isinstance(key, int) else {}])[1]
            if isinstance(entry, list):
                entry.append(new)
            elif key in entry and isinstance(entry[key], (dict, list)):
                _merge(entry[key], new)
            else:
                entry[key] = new
        else:
            raise _Unsupported("insert into a scalar")
    edits = list(replaces.values())
    converted = []
    for cur, content in inserts.values():
        where = _block_context(parents, cur) if _to_block(cur, content) else None
        if where is not None:
            converted.append((cur, content, where))
        else:
            edits.extend(_insert_edits(text, parents, cur, content, unit, seq_offset, nl,
                                       -depth[id(cur)]))
    for cur, content, where in converted:
        edits = _flow_to_block(text, cur, content, where, edits, unit, seq_offset, nl)
    return edits


def _scalar_text(text: str, cur, value) -> str:
    """Replacement text for the scalar node `cur`. A literal block (`|`, `|-`) given a new
    multi-line string stays a literal block with the same header, indentation and trailing
    lines (so a JSON value in a ConfigMap keeps its layout); any other block scalar becomes
    a one-line scalar followed by the line break the block's span included."""
    span = text[cur.start_mark.index:cur.end_mark.index]
    if cur.style not in ("|", ">"):
        return yamlout.scalar(value)
    header, _, rest = span.partition("\n")
    old = cur.value
    trail_old = len(old) - len(old.rstrip("\n"))
    if (cur.style == "|" and isinstance(value, str) and "\n" in value.rstrip("\n")
            and len(value) - len(value.rstrip("\n")) == trail_old
            and not value.startswith((" ", "\n")) and "\r" not in span + value
            and not any(ch.isdigit() for ch in header)
            and all(ch.isprintable() or ch == "\t" for ch in value.replace("\n", ""))):
        raw_lines = rest.split("\n")
        count = len(old.rstrip("\n").split("\n"))
        indent = min((len(ln) - len(ln.lstrip(" ")) for ln in raw_lines[:count] if ln.strip()),
                     default=2)
        body = "".join((" " * indent + ln if ln else "") + "\n"
                       for ln in value.rstrip("\n").split("\n"))
        return header + "\n" + body + "\n".join(raw_lines[count:])
    tail = span[len(span.rstrip("\r\n")):]
    return yamlout.scalar(value) + (tail[:2] if tail.startswith("\r\n") else tail[:1])


class _Parents:
    """Where each node of one item stands: id(node) -> (parent node, key node or None,
    depth), from one walk of the item made on the first question (the editor asks several
    per item; a walk per question was a fifth of the rendering time)."""

    def __init__(self, root):
        self.root = root
        self._at: dict | None = None

    def locate(self, target):
        """(parent node, key node or None, depth) of `target`; (None, None, 0) for the root
        itself or a node not found."""
        if self._at is None:
            at: dict = {}
            stack = [(self.root, 0)]
            while stack:
                n, d = stack.pop()
                if isinstance(n, yaml.MappingNode):
                    for k, v in n.value:
                        at.setdefault(id(v), (n, k, d + 1))
                        stack.append((v, d + 1))
                elif isinstance(n, yaml.SequenceNode):
                    for v in n.value:
                        at.setdefault(id(v), (n, None, d + 1))
                        stack.append((v, d + 1))
            self._at = at
        return self._at.get(id(target), (None, None, 0))


def _key_and_parent(parents: _Parents, target):
    """(key node, mapping node) whose value is `target`; (None, None) otherwise."""
    parent, key, _ = parents.locate(target)
    return (key, parent) if isinstance(parent, yaml.MappingNode) else (None, None)


def _block_context(parents: _Parents, target):
    """("entry", None) when `target` is an entry of a block sequence, ("value", key node)
    when it is the value of a block mapping, None otherwise (inside a flow collection)."""
    parent, key, _ = parents.locate(target)
    if parent is None or parent.flow_style is True:
        return None
    return ("value", key) if isinstance(parent, yaml.MappingNode) else ("entry", None)


def _to_block(cur, content) -> bool:
    """A one-line flow mapping that receives a new collection (an env list, a requests
    mapping) is rewritten in block style, so the result stays readable."""
    return (isinstance(cur, yaml.MappingNode) and cur.flow_style is True and cur.value
            and cur.start_mark.line == cur.end_mark.line
            and any(isinstance(v, (dict, list)) for v in content.values()))


def _flow_to_block(text, cur, content, where, edits, unit, seq_offset, nl):
    """Replace the flow mapping `cur` by block lines: its keys with their (edited) value
    text kept verbatim, then the new keys of `content` in block style."""
    start, end = cur.start_mark.index, cur.end_mark.index
    inner = [e for e in edits if start <= e[0] and e[1] <= end]
    rest = [e for e in edits if not (start <= e[0] and e[1] <= end)]
    flow_text = _splice(text[start:end], [(e[0] - start, e[1] - start) + tuple(e[2:])
                                          for e in inner])
    parsed = yaml.compose(flow_text, Loader=_Loader)
    mode, key_node = where
    if mode == "entry":
        col = cur.start_mark.column
    else:
        col = key_node.start_mark.column + unit
    lines = [f"{flow_text[k.start_mark.index:k.end_mark.index]}: "
             f"{flow_text[v.start_mark.index:v.end_mark.index]}" for k, v in parsed.value]
    lines += [ln[col:] for ln in yamlout.block(content, col, unit, seq_offset)]
    pad = " " * col
    if mode == "entry":
        new = lines[0] + "".join(nl + pad + ln for ln in lines[1:])
        rest.append((start, end, new))
    else:
        colon = text.rfind(":", key_node.end_mark.index, start)
        rest.append((colon + 1, end, "".join(nl + pad + ln for ln in lines)))
    return rest


def _insert_edits(text, parents: _Parents, cur, content, unit, seq_offset, nl, rank=0):
    if isinstance(cur, yaml.ScalarNode):
        # `key:` with a null value: the new collection goes below the key line (in a flow
        # mapping it replaces the null, in flow style). A null written with a tag, an
        # anchor or quotes/block style (`!!null |`) is left to ruamel.
        if cur.style or (cur.end_mark.index > cur.start_mark.index
                         and text[cur.start_mark.index] in "!&"):
            raise _Unsupported("null with a tag, an anchor or a style")
        key_node, parent = _key_and_parent(parents, cur)
        if key_node is None:
            raise _Unsupported("null outside a mapping")
        if parent.flow_style is True:
            start, end = cur.start_mark.index, cur.end_mark.index
            if start == end:      # `{a: }`: the empty null sits right after the colon
                return [(start, end, " " + yamlout.flow(content), rank)]
            return [(start, end, yamlout.flow(content), rank)]
        col = key_node.start_mark.column + (unit if isinstance(content, dict) else seq_offset)
        lines = yamlout.block(content, col, unit, seq_offset)
        pos = _line_end(text, cur.end_mark.index)
        start = cur.start_mark.index
        while start > 0 and text[start - 1] == " " and cur.end_mark.index > start:
            start -= 1
        out = [(start, cur.end_mark.index, "")]
        prefix = _break_before(text, pos, nl)
        out.append((pos, pos, prefix + nl.join(lines) + nl, rank))
        return out
    if cur.flow_style is True:
        close = _flow_close(text, cur)
        j = close - 1
        while j > cur.start_mark.index and text[j] in " \t\r\n":
            j -= 1
        empty = not cur.value
        parts = ([f"{yamlout.key(k)}: {yamlout.flow(v)}" for k, v in content.items()]
                 if isinstance(content, dict) else [yamlout.flow(v) for v in content])
        return [(j + 1, j + 1, ("" if empty else ", ") + ", ".join(parts))]
    if isinstance(cur, yaml.MappingNode):
        if not cur.value:
            raise _Unsupported("empty block mapping")
        col = cur.value[0][0].start_mark.column
        out = []
        rest = dict(content)
        # `requests` goes before an existing `limits`, as people write it.
        for k in list(rest):
            before = _INSERT_BEFORE.get(k)
            found = _child(cur, before) if before else None
            if found is not None:
                pos = _line_start(text, found[0].start_mark.index)
                lines = yamlout.block({k: rest.pop(k)}, col, unit, seq_offset)
                out.append((pos, pos, nl.join(lines) + nl, rank))
        if rest:
            pos = _line_end(text, _content_end(cur))
            prefix = _break_before(text, pos, nl)
            lines = yamlout.block(rest, col, unit, seq_offset)
            out.append((pos, pos, prefix + nl.join(lines) + nl, rank))
        return out
    # block sequence: new entries after the last one, at its dash column
    if not cur.value:
        raise _Unsupported("empty block sequence")
    first = cur.value[0]
    dash = _dash_column(text, first)
    offset = first.start_mark.column - dash
    lines = []
    for item in content:
        body = (yamlout.block(item, dash + offset, unit, seq_offset)
                if isinstance(item, (dict, list)) and item else [" " * (dash + offset) + yamlout.flow(item)])
        lines.append(" " * dash + "-" + " " * (offset - 1) + body[0][dash + offset:])
        lines.extend(body[1:])
    pos = _line_end(text, _content_end(cur))
    prefix = _break_before(text, pos, nl)
    return [(pos, pos, prefix + nl.join(lines) + nl, rank)]


_INSERT_BEFORE = {"requests": "limits"}


# --- ruamel fallback ------------------------------------------------------------------------

def _ruamel():
    from ruamel.yaml import YAML  # imported only for the fallback paths
    return YAML


def _styled(value):
    """Plain value -> ruamel node value with krm-fn's scalar style (see yamlout)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString
    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _styled(v)
        return m
    if isinstance(value, list):
        s = CommentedSeq()
        s.extend(_styled(v) for v in value)
        return s
    if isinstance(value, str):
        if "\n" in value:
            return LiteralScalarString(value)
        return value if yamlout.is_plain_safe(value) else DoubleQuotedScalarString(value)
    return value


def _apply_ops(data, ops) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    for path, value in ops:
        cur = data
        chain = [data]
        created = False
        for i, key in enumerate(path[:-1]):
            nxt = cur[key] if isinstance(cur, list) else cur.get(key)
            if not isinstance(nxt, (dict, list)):
                nxt = CommentedSeq() if isinstance(path[i + 1], int) else CommentedMap()
                _put(cur, key, nxt)
                created = True
            cur = nxt
            chain.append(cur)
        if created or isinstance(value, (dict, list)):
            for node in chain:
                fa = getattr(node, "fa", None)
                if fa is not None and fa.flow_style():
                    fa.set_block_style()
        last = path[-1]
        if value is DELETE:
            if isinstance(cur, dict) and last in cur:
                del cur[last]
            continue
        _put(cur, last, _styled(value))


def _put(container, key, value) -> None:
    if isinstance(container, list):
        if key == len(container):
            container.append(value)
        else:
            container[key] = value
        return
    if key not in container and key in _INSERT_BEFORE and _INSERT_BEFORE[key] in container:
        container.insert(list(container).index(_INSERT_BEFORE[key]), key, value)
    else:
        container[key] = value


def _first_line(e: Exception) -> str:
    """The first line of an exception's message (ruamel's run over several), or its type."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _where(doc: Document, i: int) -> str:
    return f"items[{i}]" if doc.mode == "resourcelist" else f"document {i + 1}"


def _ruamel_item(text: str, column: int, ops, nl: str, where: str = "item") -> str:
    """Fallback: the item re-read with ruamel's round-trip loader, `ops` applied, written
    back at the same indentation. Raises InputError naming `where` when ruamel cannot."""
    from ruamel.yaml.error import YAMLError
    try:
        return _ruamel_item_text(text, column, ops, nl)
    except (YAMLError, ValueError, TypeError, KeyError, IndexError) as e:
        raise InputError(f"{where}: cannot edit it in place and ruamel.yaml cannot rewrite "
                         f"it ({_first_line(e)}); write it in plain block style") from None


def _ruamel_item_text(text: str, column: int, ops, nl: str) -> str:
    lines = text.split("\n")
    pad = " " * column
    body = "\n".join([lines[0]] + [ln[column:] if ln.startswith(pad) else ln.lstrip(" ")
                                   for ln in lines[1:]])
    unit, offset = guess_indent(body)
    y = _ruamel()(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    y.indent(mapping=unit, sequence=max(unit, offset + 2), offset=offset)
    data = y.load(body)
    _apply_ops(data, ops)
    buf = io.StringIO()
    y.dump(data, buf)
    out = buf.getvalue().rstrip("\n").split("\n")
    new = "\n".join([out[0]] + [pad + ln if ln else ln for ln in out[1:]]) + "\n"
    return new.replace("\n", nl) if nl != "\n" else new


# --- output ------------------------------------------------------------------------------

def _seq_entries(objs, dash: int, offset: int, nl: str) -> str:
    out = []
    for obj in objs:
        lines = yamlout.to_yaml(obj).rstrip("\n").split("\n")
        pad = " " * (dash + offset)
        out.append(" " * dash + "-" + " " * (offset - 1) + lines[0] + nl
                   + "".join((pad + ln if ln else ln) + nl for ln in lines[1:]))
    return "".join(out)


def render(doc: Document, ops: dict, emitted: list, results: list,
           replace: dict | None = None) -> str:
    """The output text: the input with the edits `ops[i]` replayed on item i, items in
    `replace` (index -> plain object) rewritten whole, `emitted` objects appended to the
    items and `results` (plain dicts) written (ResourceList mode only). A ResourceList
    whose items or results the span editor cannot extend (e.g. entries that are aliases)
    is rewritten whole by ruamel.yaml. Raises InputError when even that cannot write it."""
    try:
        return _render(doc, ops, emitted, results, replace)
    except _Unsupported as e:
        if doc.mode != "resourcelist":
            raise InputError(f"cannot edit this input in place ({e}); write it in block "
                             f"style without anchors and aliases") from None
        return _render_full(doc, ops, emitted, results, replace or {})


def _render(doc: Document, ops: dict, emitted: list, results: list,
            replace: dict | None = None) -> str:
    text = doc.text
    nl = "\r\n" if "\r\n" in text else "\n"
    replace = replace or {}
    if doc.mode == "resourcelist" and doc.flow:
        return _render_full(doc, ops, emitted, results, replace)
    edits: list[tuple[int, int, str]] = []
    for i, item_ops in sorted(ops.items()):
        sp = doc.spans[i]
        try:
            edits.extend(item_edits(text, doc.nodes[i], item_ops, nl))
        except _Unsupported:
            edits.append((sp.start, sp.end, _ruamel_item(text[sp.start:sp.end], sp.column,
                                                         item_ops, nl, _where(doc, i))))
    for i, obj in sorted(replace.items()):
        sp = doc.spans[i]
        body = yamlout.to_yaml(obj).rstrip("\n").split("\n")
        pad = " " * sp.column
        edits.append((sp.start, sp.end, body[0] + nl + "".join(
            (pad + ln if ln else ln) + nl for ln in body[1:])))
    if doc.mode == "multidoc":
        new_text = _splice(text, edits)
        if emitted:
            if new_text and not new_text.endswith("\n"):
                new_text += nl
            new_text += "".join(("---\n" + yamlout.to_yaml(o)).replace("\n", nl)
                                for o in emitted)
        return new_text
    root_col = doc.items_key.start_mark.column
    if emitted:
        if doc.items_node is None or not doc.items_node.value:
            # `items: []` (or null): the empty value becomes a block sequence.
            value = doc.items_node or _child(doc.root, "items")[1]
            start, end = value.start_mark.index, value.end_mark.index
            while start > 0 and text[start - 1] == " ":
                start -= 1
            block = nl + _seq_entries(emitted, root_col, 2, nl)
            edits.append((start, end, block[:-len(nl)]))
        else:
            first = doc.items_node.value[0]
            dash = _dash_column(text, first)
            pos = _after_own_comments(text, _line_end(text, _content_end(doc.items_node)),
                                      dash)
            prefix = _break_before(text, pos, nl)
            edits.append((pos, pos, prefix + _seq_entries(emitted, dash,
                                                          first.start_mark.column - dash, nl)))
    if results:
        pad = " " * root_col
        body = yamlout.to_yaml(list(results)).rstrip("\n").split("\n")
        entries = "".join((pad + ln if ln else ln) + nl for ln in body)
        rn = doc.results_node
        if rn is not None and isinstance(rn, yaml.SequenceNode) and rn.value \
                and rn.flow_style is not True:
            dash = _dash_column(text, rn.value[0])
            pos = _line_end(text, _content_end(rn))
            body = yamlout.to_yaml(list(results)).rstrip("\n").split("\n")
            entries = "".join((" " * dash + ln if ln else ln) + nl for ln in body)
            prefix = _break_before(text, pos, nl)
            edits.append((pos, pos, prefix + entries))
        elif rn is not None:
            start = rn.start_mark.index
            while start > 0 and text[start - 1] == " ":
                start -= 1
            if rn.value and isinstance(rn, yaml.SequenceNode):
                return _render_full(doc, ops, emitted, results, replace)
            end = rn.end_mark.index
            edits.append((start, end, nl + entries[:-len(nl)]))
        else:
            pos = _line_end(text, _content_end(doc.root))
            prefix = _break_before(text, pos, nl)
            edits.append((pos, pos, prefix + pad + "results:" + nl + entries))
    return _splice(text, edits)


def _splice(text: str, edits) -> str:
    out, pos = [], 0
    # At one offset: deeper insertions (larger column, smaller 4th element) come first.
    for start, end, new, *_ in sorted(edits, key=lambda e: (e[0], e[1], e[3] if len(e) > 3
                                                              else 0)):
        if start < pos:
            raise AssertionError("overlapping text edits")
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _render_full(doc: Document, ops: dict, emitted: list, results: list,
                 replace: dict) -> str:
    """Fallback for a flow-style ResourceList (JSON input): the whole document is re-read
    with ruamel and written in block style. Raises InputError (one line) when ruamel
    cannot read or write it (fields krm-fn never reads, such as `x: !!int zz`, are
    constructed there)."""
    from ruamel.yaml.error import YAMLError
    try:
        return _render_full_ruamel(doc, ops, emitted, results, replace)
    except (YAMLError, ValueError, TypeError) as e:
        raise InputError(f"cannot rewrite this ResourceList (written in flow style or with "
                         f"flow-style results, so it is rewritten whole): {_first_line(e)}; "
                         f"write it in block style") from None


def _render_full_ruamel(doc: Document, ops: dict, emitted: list, results: list,
                        replace: dict) -> str:
    y = _ruamel()(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    data = y.load(doc.text)
    data.fa.set_block_style()
    if data.get("items") is None:
        data["items"] = []
    items = data["items"]
    items.fa.set_block_style()
    for i, item_ops in ops.items():
        _apply_ops(items[i], item_ops)
    for i, obj in replace.items():
        items[i] = _styled(obj)
    for obj in emitted:
        items.append(_styled(obj))
    if results:
        existing = data.get("results") or []
        data["results"] = _styled(list(existing) + list(results))
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()
