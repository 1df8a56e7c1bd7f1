"""Red-team cases for the region read-back (krm_fn/yaml/regions.py): inputs where
`regions.read_back` said yes and `safety.as_intended` (the whole-item read-back it skips)
said no, or where both said yes to output that reads otherwise in its document. Each
asserts the property; the fixes: read_back refuses a line at the item's column that
starts with `---` or `...` (as as_intended reads it), a text too large for MAX_NODES, a
directive after any line break, and a flow item; both read-backs see the document's
directives (safety.surroundings' prefix) and a deeper comment line after the item (its
tail; read_back is then skipped).

Causes found:
- as_intended shifts the item's lines left by the item's column, so a line standing at
  exactly the item's column (possible inside a quoted scalar or a flow collection, which
  libyaml lets continue at any column) reaches column 0 there; a `... ` or `--- ` at
  column 0 is a document marker, so the whole read-back fails on text that is fine in the
  input. The item's first line (the first key, after `- `) is at column 0 there too.
  read_back never reads those lines when no edit is in their entry.
- regions.no_directives looks for `%` after a line feed only; libyaml also ends a line at
  CR, NEL (U+0085) and LS/PS (U+2028/9), so `# c\r%TAG ...` is a directive it misses and
  the region read-back stays on. as_intended parses the item without the document's
  directives, so a tag handle they define (`!e!str`) is undefined there.
- both read-backs parse the item without the document's directives: with `%TAG !
  tag:yaml.org,2002:` a literal block `!null |` is null in the document, and the span
  editor keeps a literal block's header (tag included) when it writes a new multi-line
  value, so the output reads back as null while both checks say it holds the new value.
- both read-backs stop at the item's end (read_back's _ends_cleanly accepts a region that
  ends there without looking at the next line): a new literal block written as the item's
  last key takes in a comment line after the item that stands deeper than the block's
  indentation, so the output document holds the comment in the new value.
- read_back does not check that the item's root is a block mapping: for a flow mapping
  root written over several lines its regions are flow entries, which read as block text
  alone (`spec: q,` is the plain scalar `q,` in block context, `q` in the flow mapping)."""
from __future__ import annotations

import pytest

from krm_fn.resourcelist import KEY_ORDER, parse
from krm_fn.yaml import regions, safety
from krm_fn.yaml.spans import item_edits, splice
from tests.test_regions import _answers

HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
SPEC_X = [(("spec", "x"), "2")]

QUOTED_AT_ITEM_COLUMN = HEAD + """\
- apiVersion: v1
  kind: Thing
  metadata:
    name: t
    note: "a
  ... b"
  spec:
    x: "1"
"""

FLOW_AT_ITEM_COLUMN = HEAD + """\
- apiVersion: v1
  kind: Thing
  metadata:
    name: t
    finalizers: [a,
  --- b]
  spec:
    x: "1"
"""

FIRST_KEY_LIKE_A_MARKER = HEAD + """\
- ... x: 1
  apiVersion: v1
  kind: Thing
  spec:
    x: "1"
"""


@pytest.mark.parametrize("text", [QUOTED_AT_ITEM_COLUMN, FLOW_AT_ITEM_COLUMN,
                                  FIRST_KEY_LIKE_A_MARKER,
                                  FIRST_KEY_LIKE_A_MARKER.replace("- ... x", "- --- x")],
                         ids=["quoted", "flow", "first-key-dots", "first-key-dashes"])
def test_a_line_at_the_item_column_read_back_alike(text):
    # today: fast is True (the regions prove it; the input's layout is fine) and full is
    # False; either may change with the fix, but a region yes needs a whole yes
    fast, full, _ = _answers(text, SPEC_X)
    assert not (fast is True and full is not True), (fast, full)


def test_the_cases_parse_as_the_input_says():
    # the inputs are valid YAML with the data the cases claim (not a parse error)
    doc = parse(QUOTED_AT_ITEM_COLUMN, True)
    assert doc.items[0]["metadata"]["note"] == "a ... b"
    doc = parse(FLOW_AT_ITEM_COLUMN, True)
    assert doc.items[0]["metadata"]["finalizers"] == ["a", "--- b"]
    doc = parse(FIRST_KEY_LIKE_A_MARKER, True)
    assert doc.items[0]["... x"] == "1"


FLOW_ROOT = HEAD + """\
- {apiVersion: v1, kind: Thing,
  spec: x,
  z: "1"}
"""


def test_a_flow_root_is_not_read_back_by_regions():
    # a hand-made edit (x -> q) with ops that claim spec == "q,": the region `spec: q,`
    # alone is the block mapping {spec: "q,"}; in the item it is {spec: "q"}
    doc = parse(FLOW_ROOT, True)
    node, sp = doc.nodes[0], doc.spans[0]
    p = FLOW_ROOT.index("spec: x") + len("spec: ")
    edits = [(p, p + 1, "q")]
    ops = [(("spec",), "q,")]
    new = splice(FLOW_ROOT[sp.start:sp.end], [(p - sp.start, p + 1 - sp.start, "q")])
    assert safety.as_intended(new, sp.column, doc.items[0], ops) is False
    assert regions.read_back(FLOW_ROOT, node, sp.start, sp.end, edits, new, doc.items[0],
                             ops, {}) is False


HIDDEN_DIRECTIVE = "# c\r%TAG !e! tag:yaml.org,2002:\r---\n" + HEAD + """\
- apiVersion: v1
  kind: Thing
  metadata:
    name: !e!str t
  spec:
    x: "1"
"""


@pytest.mark.parametrize("brk", ["\r", "\x85", "\u2028"], ids=["CR", "NEL", "LS"])
def test_a_directive_after_another_line_break_turns_the_regions_off(brk):
    text = HIDDEN_DIRECTIVE.replace("\r", brk)
    assert parse(text, True).items[0]["metadata"]["name"] == "t"
    assert regions.no_directives(text) is False


def test_a_kept_literal_header_reads_in_the_document_as_both_checks_say():
    text = "%TAG ! tag:yaml.org,2002:\n---\n" + HEAD + """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: t
  data:
    conf: !null |-
      null
"""
    # (`!!null` on content go-yaml reads as null: on other content the input is refused,
    # tests/test_yaml_tags.py)
    ops = [(("data", "conf"), "x\ny\n")]
    doc = parse(text, True)
    assert doc.items[0]["data"]["conf"] is None            # `!null` is !!null here
    _, full, _ = _answers(text, ops)          # today: yes (read_back is off: a directive)
    mine = item_edits(text, doc.nodes[0], ops, "\n", KEY_ORDER)
    if full:
        got = parse(splice(text, mine), True).items[0]["data"]["conf"]
        assert got == "x\ny\n", (full, got)


def test_a_new_literal_block_at_the_item_end_keeps_the_comment_after_it_out():
    text = HEAD + """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: t
  data:
    a: b
      # a note, deeper than the keys
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: u
"""
    ops = [(("data", "c"), "x\ny\n")]
    fast, full, _ = _answers(text, ops)      # today both say yes
    doc = parse(text, True)
    mine = item_edits(text, doc.nodes[0], ops, "\n", KEY_ORDER)
    got = parse(splice(text, mine), True).items[0]["data"]["c"]
    assert not (fast or full) or got == "x\ny\n", (fast, full, got)


def test_the_directives_of_an_item_are_those_above_its_document():
    text = ("%YAML 1.1\n---\na: 1\n...\n%TAG !e! tag:example.com,2000:\n# note\n\n"
            "---\nb: !e!x 2\n")
    first, second = text.index("a: 1"), text.index("b: !e!x")
    assert safety.surroundings(text, first, first + 5, 0, True) == ("%YAML 1.1\n---\n", "")
    assert safety.surroundings(text, second, len(text), 0, True) == (
        "%TAG !e! tag:example.com,2000:\n---\n", "")
    assert safety.surroundings(text, second, len(text), 0, False) == ("", "")
