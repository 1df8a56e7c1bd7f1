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
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml missing: same results, slower
    from yaml import SafeLoader as _Loader

RESOURCE_LIST_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1",
                          "config.kubernetes.io/v1alpha1")
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
    `spans[i]` locates items[i] (None when it cannot be spliced); `function_config` is the
    typed functionConfig or None."""

    text: str
    mode: str
    items: list
    spans: list
    function_config: dict | None = None
    items_span: tuple | None = None        # (start, end, column, flow) of the items value
    results_span: tuple | None = None      # (key start, value end) of an existing results
    existing_results: list = field(default_factory=list)
    api_version: str = "config.kubernetes.io/v1"


# --- plain data from libyaml nodes ------------------------------------------------------

_NULL = {"", "~", "null", "Null", "NULL"}
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
         "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|"
                    r"^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")


class _Builder:
    def __init__(self, typed: bool):
        self.typed = typed
        self.count = 0
        self.memo: dict[int, object] = {}

    def scalar(self, node):
        v = node.value
        plain = not node.style and node.tag in ("tag:yaml.org,2002:null",
                                                    "tag:yaml.org,2002:bool",
                                                    "tag:yaml.org,2002:int",
                                                    "tag:yaml.org,2002:float",
                                                    "tag:yaml.org,2002:str",
                                                    "tag:yaml.org,2002:timestamp",
                                                    "tag:yaml.org,2002:value",
                                                    "tag:yaml.org,2002:merge")
        if node.tag == "tag:yaml.org,2002:null" or (plain and v in _NULL):
            return None
        if not self.typed or not plain:
            return v
        if v in _BOOL:
            return _BOOL[v]
        if _INT.match(v):
            return int(v, 0) if v.startswith(("0o", "0x")) else int(v)
        if _FLOAT.match(v):
            return float(v.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                         .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
        return v

    def build(self, node, where: str):
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        self.count += 1
        if self.count > MAX_NODES:
            raise InputError(f"input is too large or expands too far through aliases "
                             f"(more than {MAX_NODES} nodes)")
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if isinstance(node, yaml.SequenceNode):
            out: list = []
            self.memo[key] = out
            for i, child in enumerate(node.value):
                out.append(self.build(child, f"{where}[{i}]"))
            return out
        mapping: dict = {}
        self.memo[key] = mapping
        for k, v in node.value:
            if k.tag == "tag:yaml.org,2002:merge":
                raise InputError(f"{where}: YAML merge keys (<<) are not supported")
            kv = self.build(k, where)
            if isinstance(kv, (dict, list)):
                raise InputError(f"{where}: a mapping key must be a scalar")
            kv = "" if kv is None else kv if isinstance(kv, str) else str(kv)
            if kv in mapping:
                raise InputError(f"{where}: duplicate key {kv!r} (line {k.start_mark.line + 1})")
            mapping[kv] = self.build(v, f"{where}.{kv}")
        return mapping


def _compose_all(text: str) -> list:
    try:
        return list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"input is not valid YAML{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(f"input is not valid YAML: {str(e).splitlines()[0]}") from None


def _span(node) -> Span:
    return Span(node.start_mark.index, node.end_mark.index, node.start_mark.column,
                getattr(node, "flow_style", False) is True)


def parse(text: str, require_resource_list: bool) -> Document:
    """Parse input text. Raises InputError (one line) when the text is not YAML, when
    `require_resource_list` and it is not a single ResourceList, or when it is malformed."""
    if "\x00" in text:
        raise InputError("input is not YAML text (it contains NUL bytes)")
    nodes = [n for n in _compose_all(text) if n is not None]
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
        items = [builder.build(n, f"document {i + 1}") for i, n in enumerate(nodes)]
        return Document(text, "multidoc", items, [_span(n) for n in nodes])
    root = nodes[0]
    fields = {k.value: (k, v) for k, v in root.value}
    api_version = fields.get("apiVersion", (None, None))[1]
    av = api_version.value if isinstance(api_version, yaml.ScalarNode) else None
    if av not in RESOURCE_LIST_VERSIONS:
        raise InputError(f"ResourceList apiVersion {av!r} is not one of "
                         f"{', '.join(RESOURCE_LIST_VERSIONS)}")
    if "items" not in fields:
        raise InputError("ResourceList has no items field")
    items_node = fields["items"][1]
    doc = Document(text, "resourcelist", [], [], api_version=av)
    if isinstance(items_node, yaml.ScalarNode) and builder.scalar(items_node) is None:
        doc.items_span = (items_node.start_mark.index, items_node.end_mark.index,
                          fields["items"][0].start_mark.column, True)
    elif not isinstance(items_node, yaml.SequenceNode):
        raise InputError("ResourceList items must be a list")
    else:
        doc.items = [builder.build(n, f"items[{i}]") for i, n in enumerate(items_node.value)]
        doc.spans = [_span(n) for n in items_node.value]
        flow = items_node.flow_style is True or not items_node.value
        column = (items_node.value[0].start_mark.column - 2 if items_node.value
                  else fields["items"][0].start_mark.column)
        doc.items_span = (items_node.start_mark.index, items_node.end_mark.index, column, flow)
    if "functionConfig" in fields:
        fc = _Builder(typed=True).build(fields["functionConfig"][1], "functionConfig")
        if fc is not None and not isinstance(fc, dict):
            raise InputError("ResourceList functionConfig must be a mapping")
        doc.function_config = fc
    if "results" in fields:
        k, v = fields["results"]
        existing = _Builder(typed=False).build(v, "results")
        doc.existing_results = existing if isinstance(existing, list) else []
        doc.results_span = (k.start_mark.index, v.end_mark.index)
    return doc


def load_config_file(text: str) -> dict | None:
    """A functionConfig given as its own YAML document (legacy exec plugin, `krm-fn run
    --config`), read with YAML 1.2 core types. Raises InputError."""
    nodes = [n for n in _compose_all(text) if n is not None]
    if len(nodes) != 1:
        raise InputError(f"the config file must hold exactly one YAML document, found "
                         f"{len(nodes)}")
    obj = _Builder(typed=True).build(nodes[0], "config")
    if not isinstance(obj, dict):
        raise InputError("the config file must hold a mapping")
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


# --- round-trip editing of changed items ------------------------------------------------

def _ruamel():
    from ruamel.yaml import YAML  # imported only when an item changes
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


_INSERT_BEFORE = {"requests": "limits"}


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
            # A new collection goes in block style; flow containers on its path become
            # block (from the root down, so no block node ends up inside a flow one).
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


def _dedent(text: str, column: int) -> str:
    lines = text.split("\n")
    out = [lines[0]]
    pad = " " * column
    for line in lines[1:]:
        if line.startswith(pad):
            out.append(line[column:])
        else:
            out.append(line.lstrip(" "))
    return "\n".join(out)


def _indent(text: str, column: int) -> str:
    pad = " " * column
    lines = text.split("\n")
    return "\n".join([lines[0]] + [pad + line if line else line for line in lines[1:]])


_KEY_OPENS_BLOCK = re.compile(r"^( *)(- )?[^#\s][^#]*:\s*(#.*)?$")


def guess_indent(body: str) -> tuple[int, int]:
    """(mapping indent, block sequence dash offset) used by the text, as ruamel's
    load_yaml_guess_indent finds them, without parsing: from the first key that opens a
    nested mapping and the first that opens a nested sequence. Defaults (2, 0)."""
    lines = [ln for ln in body.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
    mapping, offset = None, None
    for a, b in zip(lines, lines[1:]):
        m = _KEY_OPENS_BLOCK.match(a)
        if not m or a.rstrip().endswith("|") or a.rstrip().endswith(">"):
            continue
        base = len(m.group(1)) + (2 if m.group(2) else 0)
        ind = len(b) - len(b.lstrip(" "))
        if b.lstrip(" ").startswith("- ") and offset is None:
            offset = max(0, ind - base)
        elif not b.lstrip(" ").startswith("- ") and mapping is None and ind > base:
            mapping = ind - base
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def rewrite_item(text: str, column: int, ops) -> str:
    """Replay `ops` on one item's YAML text (its first line starting at `column`) and
    return the new text at the same indentation, ending like the original span."""
    body = _dedent(text, column)
    trailing = body[len(body.rstrip()):]
    indent, offset = guess_indent(body)
    y = _ruamel()(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    y.indent(mapping=indent, sequence=max(indent, offset + 2), offset=offset)
    data = y.load(body)
    _apply_ops(data, ops)
    buf = io.StringIO()
    y.dump(data, buf)
    new = buf.getvalue().rstrip() + (trailing if trailing else "\n")
    return _indent(new, column)


# --- output ------------------------------------------------------------------------------

def _seq_block(objs, column: int) -> str:
    out = []
    for obj in objs:
        body = yamlout.to_yaml(obj).rstrip("\n")
        out.append(" " * column + "- " + _indent(body, column + 2) + "\n")
    return "".join(out)


def render(doc: Document, ops: dict, emitted: list, results: list) -> str:
    """The output text: the input with changed items rewritten, `emitted` objects appended
    to the items and `results` (plain dicts) written (ResourceList mode only)."""
    text = doc.text
    edits: list[tuple[int, int, str]] = []
    for i, item_ops in sorted(ops.items()):
        sp = doc.spans[i]
        edits.append((sp.start, sp.end, rewrite_item(text[sp.start:sp.end], sp.column,
                                                     item_ops)))
    if doc.mode == "multidoc":
        new_text = _splice(text, edits)
        if emitted:
            if new_text and not new_text.endswith("\n"):
                new_text += "\n"
            new_text += "".join("---\n" + yamlout.to_yaml(o) for o in emitted)
        return new_text
    start, end, column, flow = doc.items_span
    if emitted:
        if flow and not doc.items:
            # `items: []` (or null): replace the empty value with a block sequence.
            block = "\n" + _seq_block(emitted, column)
            while start > 0 and text[start - 1] == " ":
                start -= 1
            edits.append((start, end, block.rstrip("\n")))
        elif flow:
            return _render_full(doc, ops, emitted, results)
        else:
            insert_at = end
            prefix = "" if text[:insert_at].endswith("\n") else "\n"
            edits.append((insert_at, insert_at, prefix + _seq_block(emitted, column)))
    all_results = list(doc.existing_results) + list(results)
    if all_results:
        block = "results:\n" + _indent(yamlout.to_yaml(all_results).rstrip("\n"), 0) + "\n"
        if doc.results_span:
            rs, re_ = doc.results_span
            edits.append((rs, re_, block.rstrip("\n")))
        else:
            edits.append((len(text), len(text), ("" if text.endswith("\n") or not text
                                                  else "\n") + block))
    return _splice(text, edits)


def _splice(text: str, edits) -> str:
    out, pos = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _render_full(doc: Document, ops: dict, emitted: list, results: list) -> str:
    """Fallback for a ResourceList whose items are a non-empty flow sequence (JSON input):
    the whole document is re-read with ruamel and written in block style."""
    y = _ruamel()(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    data = y.load(doc.text)
    for i, item_ops in ops.items():
        _apply_ops(data["items"][i], item_ops)
    data.fa.set_block_style()
    data["items"].fa.set_block_style()
    for obj in emitted:
        data["items"].append(_styled(obj))
    if results:
        existing = data.get("results") or []
        data["results"] = _styled(list(existing) + list(results))
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()
