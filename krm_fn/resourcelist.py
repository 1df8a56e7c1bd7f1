"""The input and output envelope: a ResourceList (or multi-document YAML) in, the same text
with the items' edits, the emitted objects and the results out.

Fidelity by construction: the input text is parsed once (krm_fn.yaml.load, libyaml) for
structure and positions; the output is the input text with only the spans of the items
that change rewritten. A changed item gets the span editor's edits (krm_fn.yaml.spans:
only the changed scalars and the inserted lines are touched); an item the span editor
cannot edit in place is rewritten by ruamel.yaml's round-trip loader at its original
indentation (krm_fn.yaml.ruamel), and a ResourceList in flow style (JSON) is rewritten
whole by it. Unchanged items, the functionConfig and everything else come out byte for
byte. New objects and results are appended as new text (krm_fn.yaml.emit).

Plain data handed to the engine has every scalar as a string (null stays None), so no
YAML 1.1 retyping (`on`, `0644`, `1e3`) can leak into comparisons; the functionConfig is
read with YAML 1.2 core types (int, float, bool, null) for the typed config.
"""
from __future__ import annotations

import yaml

from krm_fn.yaml import documents as doc_text
from krm_fn.yaml.documents import Span, item_span
from krm_fn.yaml import emit, regions
from krm_fn.yaml.load import Builder, InputError, documents, is_null
from krm_fn import numbers
from krm_fn.yaml.safety import as_intended, check_editable, surroundings
from krm_fn.yaml.spans import (Unsupported, after_own_comments, break_before, child, is_json,
                               content_end, dash_column, item_edits, line_end, splice,
                               splice_in)

__all__ = ["Document", "InputError", "RESOURCE_LIST_VERSIONS", "Span", "has_path_annotations",
           "load_config_file", "parse", "render"]

RESOURCE_LIST_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1",
                          "config.kubernetes.io/v1alpha1")
# A new `requests` goes before an existing `limits` of the same resources, as people write it.
KEY_ORDER = {"requests": "limits"}


class Document:
    """Parsed input. `mode` is `resourcelist` or `multidoc`; `items` are plain dicts;
    `spans[i]` and `nodes[i]` locate items[i] in the text; `function_config` is the typed
    functionConfig or None; `aliased` holds the indices of items that use YAML aliases.
    `root`, `items_key`, `items_node` (None for `items: null`) and `results_node` are the
    ResourceList's nodes; `flow` is True when the list or its items are in flow style."""

    __slots__ = ("text", "mode", "items", "spans", "function_config", "nodes", "aliased", "root",
                 "items_key", "items_node", "results_node", "flow", "api_version")

    def __init__(self, text: str, mode: str, items: list, spans: list,
                 function_config: dict | None = None, nodes: list | None = None,
                 aliased: set | None = None, root: object = None, items_key: object = None,
                 items_node: object = None, results_node: object = None, flow: bool = False,
                 api_version: str = "config.kubernetes.io/v1") -> None:
        self.text = text
        self.mode = mode
        self.items = items
        self.spans = spans
        self.function_config = function_config
        self.nodes = [] if nodes is None else nodes
        self.aliased = set() if aliased is None else aliased
        self.root = root
        self.items_key = items_key
        self.items_node = items_node
        self.results_node = results_node
        self.flow = flow
        self.api_version = api_version


def _typed(text: str) -> Builder:
    """The Builder of typed documents (the function config, a config file) composed from
    `text`: YAML 1.2 core scalars (a plain scalar with an explicit `!!str` tag stays a
    string; a quoted one tagged `!!bool`, `!!int` or `!!float` is read as that type), with
    the number spellings other readers take otherwise refused (numbers.yaml_disagreement)."""
    return Builder(typed=True, number_check=numbers.yaml_disagreement, text=text,
                   tag_check=tag_refusal)


def parse(text: str, require_resource_list: bool) -> Document:
    """Parse input text. Raises InputError (one line) when the text is not YAML, when
    `require_resource_list` and it is not a single ResourceList, or when it is malformed."""
    if "\x00" in text:
        raise InputError("input is not YAML text (it contains NUL bytes)")
    nodes = documents(text)
    is_rl = (len(nodes) == 1 and isinstance(nodes[0], yaml.MappingNode)
             and any(k.value == "kind" and isinstance(v, yaml.ScalarNode)
                     and v.value == "ResourceList" for k, v in nodes[0].value))
    if is_rl:
        return _parse_resource_list(text, nodes[0])
    if require_resource_list:
        if not nodes:
            raise InputError("no input: krm-fn expects a ResourceList on stdin "
                             "(run it through kustomize or kpt, or use `krm-fn run`)")
        raise InputError("input is not a ResourceList (kind: ResourceList, apiVersion: "
                         "config.kubernetes.io/v1); use `krm-fn run` for plain YAML")
    builder = Builder(typed=False, tag_check=tag_refusal)
    items = [builder.build(n, f"document {i + 1}", text) for i, n in enumerate(nodes)]
    return Document(text, "multidoc", items, [item_span(text, n) for n in nodes],
                    nodes=nodes, aliased=builder.aliased)


def _parse_resource_list(text: str, root) -> Document:
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
                   flow=root.flow_style is True, items_key=items_key)
    builder = Builder(typed=False, tag_check=tag_refusal)
    if isinstance(items_node, yaml.ScalarNode) and is_null(items_node, text):
        doc.items_node = None
    elif not isinstance(items_node, yaml.SequenceNode):
        raise InputError("ResourceList items must be a list")
    else:
        doc.items = [builder.build(n, f"items[{i}]", text)
                     for i, n in enumerate(items_node.value)]
        doc.spans = [item_span(text, n) for n in items_node.value]
        doc.nodes = list(items_node.value)
        doc.items_node = items_node
        # an empty `items: []` is replaced in place (_emitted_edit); ruamel would move a
        # comment after it (`items: [] # c`) before the `[]`, which then reads otherwise
        doc.flow = doc.flow or (items_node.flow_style is True and bool(items_node.value))
    doc.aliased = builder.aliased
    if "functionConfig" in fields:
        doc.function_config = _typed(text).build(fields["functionConfig"][1],
                                                 "functionConfig")
    if "results" in fields:
        doc.results_node = fields["results"][1]
        if not isinstance(doc.results_node, yaml.SequenceNode) and not (
                isinstance(doc.results_node, yaml.ScalarNode) and is_null(doc.results_node,
                                                                        text)):
            raise InputError(f"ResourceList results must be a list (line "
                             f"{doc.results_node.start_mark.line + 1}); krm-fn appends its "
                             f"own to them")
        # Nothing reads the input's results, but they are written back: building them
        # (value dropped) refuses what the items' bounds refuse, e.g. an alias bomb.
        Builder(typed=False).build(doc.results_node, "results")
    return doc


def load_config_file(text: str, what: str = "the config file") -> dict | None:
    """A functionConfig given as its own YAML document (legacy exec plugin, `krm-fn run
    --config`; also `--baseline`), read with YAML 1.2 core types. `what` names the file in
    messages. Raises InputError."""
    nodes = documents(text)
    if len(nodes) != 1:
        raise InputError(f"{what} must hold exactly one YAML document, found {len(nodes)}")
    obj = _typed(text).build(nodes[0], "config" if what == "the config file" else what)
    if not isinstance(obj, dict):
        raise InputError(f"{what} must hold a mapping")
    return obj


def retyped(doc: Document):
    """`f(i, path) -> bool`: True when the value of items[i] at `path` (keys and list
    indices) is written as a plain (unquoted) scalar that a YAML reader types as something
    other than a string (`true`, `yes`, `on`, `8`, `1e3`, `~`...): krm-fn reads items with
    every scalar as a string, but kubectl and the API server's YAML decoder
    (sigs.k8s.io/yaml) type it, and a string field given a boolean or a number is refused
    ("cannot unmarshal bool into Go struct field ... of type string"). `f.type_of(i, path)`:
    that scalar's JSON type as kubectl sends it (yaml_type)."""
    return Retyped(doc)


class Retyped:
    """resourcelist.retyped: the YAML types of the items' scalars, read from their nodes."""

    def __init__(self, doc: Document):
        self.doc = doc
        self._parents: dict = {}        # (i, path) -> node, for the parents of those asked

    def _node(self, i: int, path: tuple):
        """The node of items[i] at `path`, None when absent; the nodes on the way are
        cached (the fields type_of is asked about share their parents)."""
        if not path:
            return self.doc.nodes[i] if i < len(self.doc.nodes) else None
        key = (i, path[:-1])
        parent = self._parents.get(key, self)
        if parent is self:
            parent = self._parents[key] = self._node(i, path[:-1])
        found = child(parent, path[-1]) if parent is not None else None
        return None if found is None else found[1]

    def __call__(self, i: int, path: tuple) -> bool:
        node = self._node(i, path)
        if not isinstance(node, yaml.ScalarNode) or node.style:
            return False
        if self._tagged(node):      # `!!int 0x4` is 4 to a YAML reader, `!!str 016` "016"
            return node.tag in _TAGGED and _TAGGED[node.tag] != "string"
        return node.tag == "tag:yaml.org,2002:str" and not emit.is_plain_safe(node.value)

    def type_of(self, i: int, path: tuple) -> str | None:
        """yaml_type of the scalar of items[i] at `path` (the JSON type its explicit tag
        names, when it has one); None when there is none."""
        node = self._node(i, path)
        if not isinstance(node, yaml.ScalarNode):
            return None
        if self._tagged(node):
            return _TAGGED.get(node.tag)
        return yaml_type(node.value, node.style, node.tag)

    def _tagged(self, node) -> bool:
        """Whether the scalar `node` is written with an explicit tag (`!!str 016`): its text
        starts with the tag, or with an anchor and then the tag (a plain scalar's value
        never starts with `!`)."""
        text = self.doc.text
        start = node.start_mark.index
        if text[start:start + 1] not in ("!", "&"):
            return False
        words = text[start:node.end_mark.index].split(None, 2)
        return any(w.startswith("!") for w in words[:2])


_YAML11_BOOLS = frozenset("y Y yes Yes YES n N no No NO true True TRUE false False FALSE "
                          "on On ON off Off OFF".split())
_YAML11_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
# the plain scalars go-yaml types as no string without reading them as numbers
BOOLS_NULLS = _YAML11_BOOLS | _YAML11_NULLS
_TAGGED = {"tag:yaml.org,2002:int": "number", "tag:yaml.org,2002:float": "number",
           "tag:yaml.org,2002:bool": "boolean", "tag:yaml.org,2002:null": "null",
           "tag:yaml.org,2002:str": "string"}


def yaml_type(value: str, style: str | None, tag: str) -> str | None:
    """The JSON type ("string", "number", "boolean", "null") kubectl and the API server's
    YAML decoder (sigs.k8s.io/yaml: go-yaml v2 resolve.go, YAML 1.1) give a scalar written
    as `value` in `style` (None: plain) with `tag` (the loader tags every untagged scalar
    str); None for another explicit tag. A quoted or block scalar is a string; a plain one
    is a boolean (`yes`, `on`, `N`, ...), null (`~`, `null`, empty), a number
    (numbers.yaml11: `8`, `0x0A`, `1e3`, `.inf`) or else a string."""
    if tag != "tag:yaml.org,2002:str":
        return _TAGGED.get(tag)
    if style:
        return "string"
    if value in _YAML11_BOOLS:
        return "boolean"
    if value in _YAML11_NULLS:
        return "null"
    return "number" if numbers.yaml11(value) is not None else "string"


_GO_YAML = ("the API server's YAML reader (sigs.k8s.io/yaml, go-yaml resolve.go) refuses "
            "it")


def tag_refusal(value: str, tag: str) -> str | None:
    """Why a scalar written `value` with the explicit standard tag `tag` (other than !!str)
    cannot be read as written, or None: go-yaml v2 (sigs.k8s.io/yaml, what kubectl and the
    API server read YAML with; resolve.go `resolve`) refuses a !!null, !!bool, !!int or
    !!float whose value it reads as another type ("cannot decode !!str `foo` as a !!null";
    a !!float takes an int), and reads !!binary (the decoded bytes) and !!timestamp (a time,
    as JSON) as another string than written, which krm-fn cannot keep. A message for
    InputError (the loader names the item, the field and the line)."""
    short = "!!" + tag.rsplit(":", 1)[1]
    shown = f"{short} {numbers.brief(value)}".rstrip()
    if short in ("!!binary", "!!timestamp"):
        return (f"{shown}: the API server's YAML reader (sigs.k8s.io/yaml) reads another "
                f"string than written ({'the decoded bytes' if short == '!!binary' else 'a time'}"
                f"); krm-fn cannot keep it: write the string it stands for, quoted")
    got = yaml_type(value, None, "tag:yaml.org,2002:str")      # as go-yaml reads it untagged
    number = numbers.yaml11(value) if got == "number" else None
    read = {"string": "!!str", "boolean": "!!bool", "null": "!!null"}.get(
        got, "!!int" if isinstance(number, int) else "!!float")
    if read == short or (short == "!!float" and read == "!!int"):
        return None
    return (f"{shown}: {_GO_YAML}: \"cannot decode {read} `{numbers.brief(value)}` as a "
            f"{short}\"; write a value of that type, or drop the tag")


def has_path_annotations(doc: Document) -> bool:
    """True when the items carry kpt's path annotations (the orchestrator is kpt)."""
    for it in doc.items:
        md = it.get("metadata") if isinstance(it, dict) else None
        ann = md.get("annotations") if isinstance(md, dict) else None
        if isinstance(ann, dict) and ("internal.config.kubernetes.io/path" in ann
                                      or "config.kubernetes.io/path" in ann):
            return True
    return False


# --- output ------------------------------------------------------------------------------

def render(doc: Document, ops: dict, emitted: list, results: list,
           replace: dict | None = None, drop: frozenset = frozenset()) -> str:
    """The output text: the input with the changes `ops[i]` ((path, value) pairs) applied to
    item i, items in `replace` (index -> plain object) rewritten whole, `emitted` objects
    appended to the items and `results` (plain dicts) written (ResourceList mode only). A
    ResourceList whose items or results the span editor cannot extend (e.g. entries that
    are aliases) is rewritten whole by ruamel.yaml. `drop`: indices of items left out of a
    multi-document output, each with the `---` line before it (`drop_edits`). Raises
    InputError when even that cannot write it, or when `drop` is given for a ResourceList."""
    replace = replace or {}
    if drop:
        if doc.mode != "multidoc":
            raise InputError("only plain multi-document YAML can have items left out; a "
                             "ResourceList keeps its items")
        ops = {i: v for i, v in ops.items() if i not in drop}
        replace = {i: v for i, v in replace.items() if i not in drop}
    try:
        return _render(doc, ops, emitted, results, replace, drop)
    except Unsupported as e:
        if doc.mode != "resourcelist":
            raise InputError(f"cannot edit this input in place ({e}); write it in block "
                             f"style without anchors and aliases") from None
        return _render_full(doc, ops, emitted, results, replace)


def _render(doc: Document, ops: dict, emitted: list, results: list, replace: dict,
            drop: frozenset = frozenset()) -> str:
    text = doc.text
    nl = doc_text.line_break(text[doc.spans[-1].start:] if doc.mode == "multidoc"
                             and doc.spans else text)
    if doc.mode == "resourcelist" and doc.flow:
        return _render_full(doc, ops, emitted, results, replace)
    edits = _item_edits(doc, ops, replace) + drop_edits(doc, drop)
    if doc.mode == "multidoc":
        new_text = splice(text, edits)
        if emitted:
            new_text = doc_text.append_documents(new_text, emitted, nl, bool(doc.nodes) and all(
                is_json(text, n) for n in doc.nodes))
        return doc_text.json_first(new_text, len(doc.nodes) + len(emitted), nl)
    if emitted or results:
        doc_text.keep_final_block(text, doc.root, edits)
    if emitted:
        edits.append(_emitted_edit(doc, emitted, nl))
    if results:
        edit = _results_edit(doc, results, nl)
        if edit is None:
            return _render_full(doc, ops, emitted, results, replace)
        edits.append(edit)
    return splice(text, edits)


def drop_edits(doc: Document, drop) -> list:
    """Text edits that delete the multi-document items `drop` (indices): see
    krm_fn.yaml.documents.drop_edits."""
    return doc_text.drop_edits(doc.text, doc.spans, drop)


def _where(doc: Document, i: int) -> str:
    return f"items[{i}]" if doc.mode == "resourcelist" else f"document {i + 1}"


def _item_edits(doc: Document, ops: dict, replace: dict) -> list:
    """The text edits of the changed items: the span editor's, or one edit per item that
    ruamel rewrites (shapes the span editor cannot express) or that is replaced whole;
    inserted lines end with the line break most of the item's lines end with."""
    text = doc.text
    edits: list = []
    plain = regions.no_directives(text)
    memo: dict = {} if plain else {"off": True}
    crlf = "\r\n" in text
    for i, item_ops in sorted(ops.items()):
        sp = doc.spans[i]
        inl = doc_text.line_break(text[sp.start:sp.end]) if crlf else "\n"   # its own
        try:
            check_editable(text, doc.nodes[i])
            mine = item_edits(text, doc.nodes[i], item_ops, inl, KEY_ORDER)
            if any(e[0] < sp.start or e[1] > sp.end for e in mine):
                raise Unsupported("edit outside the item")
            new = splice_in(text, sp.start, sp.end, mine)
            prefix, tail = surroundings(text, sp.start, sp.end, sp.column, not plain)
            if not ((not tail and regions.read_back(text, doc.nodes[i], sp.start, sp.end,
                                                    mine, new, doc.items[i], item_ops,
                                                    memo))
                    or as_intended(new + tail, sp.column, doc.items[i], item_ops, prefix)):
                raise Unsupported("the edited text does not read back as the change")
        except Unsupported:
            new = _rewrite_item(doc, i, item_ops, inl, not plain)
        edits.append((sp.start, sp.end, new))
    for i, obj in sorted(replace.items()):
        sp = doc.spans[i]
        nl = doc_text.line_break(text[sp.start:sp.end]) if crlf else "\n"
        body = emit.to_yaml(obj).rstrip("\n").split("\n")
        pad = " " * sp.column
        edits.append((sp.start, sp.end, body[0] + nl + "".join(
            (pad + ln if ln else ln) + nl for ln in body[1:])))
    return edits


def _rewrite_item(doc: Document, i: int, item_ops, nl: str, directives: bool) -> str:
    """Item i rewritten by ruamel.yaml with `item_ops` applied, checked to read back as the
    change (`directives`: the text holds `%` lines, safety.surroundings). Raises InputError
    when ruamel cannot write it (a plain multi-document input), Unsupported when it cannot
    or what it wrote does not read back as the change (a ResourceList is then rewritten
    whole, and checked again)."""
    from krm_fn.yaml import ruamel
    sp = doc.spans[i]
    try:
        new = ruamel.rewrite_item(doc.text[sp.start:sp.end], sp.column, item_ops, nl,
                                  _where(doc, i), KEY_ORDER)
    except InputError:
        if doc.mode != "resourcelist":
            raise
        raise Unsupported(f"{_where(doc, i)}: ruamel.yaml cannot rewrite it alone") from None
    prefix, tail = surroundings(doc.text, sp.start, sp.end, sp.column, directives)
    if not as_intended(new + tail, sp.column, doc.items[i], item_ops, prefix):
        raise Unsupported(f"{_where(doc, i)}: neither the span editor's text nor ruamel.yaml's "
                          f"reads back as the change")
    return new


def _seq_entries(objs, dash: int, offset: int, nl: str) -> str:
    out = []
    for obj in objs:
        lines = emit.to_yaml(obj).rstrip("\n").split("\n")
        pad = " " * (dash + offset)
        out.append(" " * dash + "-" + " " * (offset - 1) + lines[0] + nl
                   + "".join((pad + ln if ln else ln) + nl for ln in lines[1:]))
    return "".join(out)


def _emitted_edit(doc: Document, emitted: list, nl: str) -> tuple:
    """The edit that appends `emitted` to the ResourceList's items, in the style of its
    first entry (an empty or null `items` becomes a block sequence)."""
    text = doc.text
    if doc.items_node is None or not doc.items_node.value:
        value = doc.items_node or child(doc.root, "items")[1]
        block = nl + _seq_entries(emitted, doc.items_key.start_mark.column, 2, nl)
        return _in_place_of(text, value, block[:-len(nl)])
    first = doc.items_node.value[0]
    dash = dash_column(text, first)
    pos = after_own_comments(text, line_end(text, content_end(doc.items_node)), dash)
    prefix = break_before(text, pos, nl)
    return (pos, pos, prefix + _seq_entries(emitted, dash, first.start_mark.column - dash, nl))


def _in_place_of(text: str, value, block: str) -> tuple:
    """The edit that writes `block` (new lines, each after a line break) in place of the
    empty or null `value` node of a key (`items: []`, `results:`), from the key's colon.
    A comment after the value (`items: [] # c`) stays on the key's line: after the new
    lines it would run on into their last one (inside a block scalar, as its text)."""
    start, end = value.start_mark.index, value.end_mark.index
    while start > 0 and text[start - 1] == " ":
        start -= 1
    rest = text[end:line_end(text, end)].rstrip("\r\n")
    comment = ""
    if rest.strip().startswith("#"):
        comment, end = " " + rest.strip(), end + len(rest)
    return (start, end, comment + block)


def _results_edit(doc: Document, results: list, nl: str) -> tuple | None:
    """The edit that writes `results`: after the input's block-style results, in place of
    empty ones, or as a new `results:` key at the end; None when the input's results are a
    non-empty flow sequence (the list is then rewritten whole)."""
    text = doc.text
    body = emit.block_maps(results)
    rn = doc.results_node
    if rn is not None and isinstance(rn, yaml.SequenceNode) and rn.value \
            and rn.flow_style is not True:
        dash = dash_column(text, rn.value[0])
        pos = line_end(text, content_end(rn))
        entries = _indented(body, " " * dash, nl)
        return (pos, pos, break_before(text, pos, nl) + entries)
    pad = " " * doc.items_key.start_mark.column
    entries = _indented(body, pad, nl)
    if rn is not None:
        if rn.value and isinstance(rn, yaml.SequenceNode):
            return None
        return _in_place_of(text, rn, nl + entries[:-len(nl)])
    # after the comment lines indented under the last entry, as the emitted items are
    # (_emitted_edit): the new key must not come between the items and those
    pos = after_own_comments(text, line_end(text, content_end(doc.root)), len(pad))
    return (pos, pos, break_before(text, pos, nl) + pad + "results:" + nl + entries)


def _indented(lines: list, pad: str, nl: str) -> str:
    """`lines` each ended by `nl`, the non-empty ones after `pad` (the results of a large
    render are ~100,000 lines: at column 0 one join)."""
    if not pad and lines:
        return nl.join(lines) + nl
    return "".join((pad + ln if ln else ln) + nl for ln in lines)


def _render_full(doc: Document, ops: dict, emitted: list, results: list,
                 replace: dict) -> str:
    """Fallback for a flow-style ResourceList (JSON input): krm_fn.yaml.whole rewrites the
    whole document with ruamel.yaml in block style. Raises InputError (one line)."""
    from krm_fn.yaml import whole
    return whole.rewrite(doc.text, doc.items, ops, emitted, results, replace,
                         lambda i: _where(doc, i), KEY_ORDER)
