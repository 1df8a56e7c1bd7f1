"""The region read-back (krm_fn/yaml/regions.py) against the whole-item read-back.

The region read-back may only say yes where reading the whole edited item back would: a
yes it gives wrongly would let a render print text that means something other than its
change. Where it says no, the caller reads the whole item back, so a no is never wrong,
only slower."""
from __future__ import annotations

import yaml

from krm_fn.resourcelist import KEY_ORDER, parse
from krm_fn.yaml import regions, safety
from krm_fn.yaml.spans import content_end, item_edits, line_end, splice_in
from tests import regions_fuzz

SEEDS = range(6000)

ITEM = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: llm  # model server
  spec:
    template:
      spec:
        containers:
        - name: server
          env:
          - name: LOG_LEVEL
            value: "info"
          ports:
          - containerPort: 8000
          resources:
            requests: {cpu: 3500m, memory: 16Gi}
            limits: {memory: 16Gi}
        - name: agent
          resources:
            requests: {cpu: 50m, memory: 64Mi}
        volumes:
        - name: shm
          emptyDir: {medium: Memory}
"""

C0 = ("spec", "template", "spec", "containers", 0)
C1 = ("spec", "template", "spec", "containers", 1)
OPS = [(C0 + ("resources", "requests", "cpu"), "4"), (C0 + ("resources", "limits", "cpu"), "4"),
       (C1 + ("resources", "limits", "cpu"), "50m"),
       (C1 + ("resources", "limits", "memory"), "64Mi"),
       (C0 + ("env", 1), {"name": "OMP_NUM_THREADS", "value": "4"}),
       (("spec", "template", "spec", "nodeSelector", "pool"), "pinned")]


def _read_back(text: str, doc, mine: list, ops: list, memo: dict) -> bool:
    """regions.read_back of the first item of `doc` (parsed from `text`) with the span
    editor's edits `mine` for `ops`."""
    sp = doc.spans[0]
    return regions.read_back(text, doc.nodes[0], sp.start, sp.end, mine,
                             splice_in(text, sp.start, sp.end, mine), doc.items[0], ops, memo)


def _answers(text: str, ops: list):
    """(region read-back, whole read-back, the regions) for the first item of `text`, as
    resourcelist._item_edits asks them."""
    doc = parse(text, True)
    node, sp = doc.nodes[0], doc.spans[0]
    mine = item_edits(text, node, ops, "\n", KEY_ORDER)
    new = splice_in(text, sp.start, sp.end, mine)
    memo: dict = {} if regions.no_directives(text) else {"off": True}
    prefix, tail = safety.surroundings(text, sp.start, sp.end, sp.column,
                                       not regions.no_directives(text))
    fast = not tail and _read_back(text, doc, mine, ops, memo)
    found = regions._regions(text, node, mine, sp.end)
    full = safety.as_intended(new + tail, sp.column, doc.items[0], ops, prefix)
    return fast, full, found


def test_a_usual_item_is_read_back_by_five_regions():
    fast, full, found = _answers(ITEM, OPS)
    assert (fast, full) == (True, True)
    assert [(r.path, r.i, r.j, r.col) for r in found] == [
        (C0 + ("env",), 0, 1, 10),                       # LOG_LEVEL and the new entry
        (C0 + ("resources",), 0, 1, 12),                 # requests (flow)
        (C0 + ("resources",), 1, 2, 12),                 # limits (flow)
        (C1 + ("resources",), 0, 1, 12),
        (("spec", "template", "spec"), 1, 2, 8),         # volumes, then the new nodeSelector
    ]


def test_a_region_text_is_parsed_once_per_render():
    doc = parse(ITEM, True)
    node = doc.nodes[0]
    mine = item_edits(ITEM, node, OPS, "\n", KEY_ORDER)
    memo: dict = {}
    assert _read_back(ITEM, doc, mine, OPS, memo)
    assert len(memo) == 5
    assert _read_back(ITEM, doc, mine, OPS, memo)
    assert len(memo) == 5


def test_a_wrong_change_is_not_read_back_as_intended():
    # the text says cpu "4"; the ops claim 5: neither check may say yes
    ops = [(C0 + ("resources", "requests", "cpu"), "5")] + OPS[1:]
    doc = parse(ITEM, True)
    node = doc.nodes[0]
    mine = item_edits(ITEM, node, OPS, "\n", KEY_ORDER)
    assert _read_back(ITEM, doc, mine, ops, {}) is False


def _swap(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_layouts_it_leaves_to_the_whole_read_back():
    cases = {
        "keep chomping": _swap(ITEM, '            value: "info"\n',
                               "            value: |+\n              info\n\n"),
        "a tab": _swap(ITEM, "ports:", "ports:\t"),
        "an anchor": _swap(ITEM, "- name: LOG_LEVEL", "- name: &l LOG_LEVEL"),
        "CR LF": ITEM.replace("\n", "\r\n"),
        "a directive": "%YAML 1.1\n---\n" + ITEM,
        "comment left of a region": _swap(ITEM, "          ports:", "  # x\n          ports:"),
        "line left of the item": _swap(ITEM, '            value: "info"',
                                       '            value: "in\n fo"'),
    }
    for name, text in cases.items():
        ops = OPS if "\r" not in text else OPS[:4]
        fast, full, _ = _answers(text, ops) if "\r" not in text else (None, None, None)
        if "\r" in text:
            doc = parse(text, True)
            node = doc.nodes[0]
            mine = item_edits(text, node, ops, "\r\n", KEY_ORDER)
            fast = _read_back(text, doc, mine, ops, {})
        assert fast is False, name


def test_region_yes_implies_whole_yes_on_random_layouts():
    counts = {}
    for seed in SEEDS:
        got = regions_fuzz.check(seed)
        counts[got] = counts.get(got, 0) + 1
        if got is not None and got[0]:
            assert got[1] is True, f"seed {seed}: the region read-back said yes wrongly"
    # the cases exercise both answers
    assert counts.get((True, True), 0) > len(SEEDS) // 10, counts
    assert counts.get((False, True), 0) > len(SEEDS) // 10, counts
    assert counts.get((False, False), 0) > 0, counts


def test_the_fuzz_cases_are_parsed_items():
    text, node, original, ops = regions_fuzz.case(7)
    assert isinstance(node, yaml.MappingNode) and original["kind"].startswith("Thing") and ops
    assert text[node.start_mark.index:line_end(text, content_end(node))].startswith("apiVersion")


def test_two_regions_of_one_list_put_from_the_last():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- kind: Thing\n  spec:\n    args:\n    - a\n    - b\n    other: x\n")
    text = text.replace("    other: x\n", "  other: x\n")
    ops = [(("spec", "args", 0), "A"), (("spec", "args", 2), "c")]
    fast, full, found = _answers(text, ops)
    assert (fast, full) == (True, True)
    assert [(r.path, r.i, r.j) for r in found] == [(("spec", "args"), 0, 1),
                                                   (("spec", "args"), 1, 2)]


def test_a_flow_item_is_read_back_whole():
    text = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- {kind: Thing,\n  spec: {a: 1,\n    b: 2}}\n")
    fast, full, found = _answers(text, [(("spec", "b"), "3")])
    assert (fast, full, found) == (False, True, None)


def test_an_item_with_a_line_left_of_it_is_read_back_whole():
    item = "kind: T\n  spec:\n    a: 1\n"
    for extra, ok in [("# note\n", True), (" # note\n", True), ("\n", True), (" \n", True),
                      ("x: 1\n", False), (" y\n", False), ("  z: 2\n", True)]:
        text = "- " + item + extra
        new = text[2:]
        assert regions._plain_text(text, 2, len(text), 2, new) is ok, extra


def test_a_text_that_could_pass_max_nodes_is_read_back_whole(monkeypatch):
    # the whole read-back counts the new item's nodes against MAX_NODES; the regions do not
    # see the whole item, so they refuse any text that could hold more (3n + 1 nodes)
    doc = parse(ITEM, True)
    node, sp = doc.nodes[0], doc.spans[0]
    mine = item_edits(ITEM, node, OPS, "\n", KEY_ORDER)
    new = splice_in(ITEM, sp.start, sp.end, mine)
    monkeypatch.setattr(regions, "MAX_NODES", 3 * len(new) + 1)
    assert _read_back(ITEM, doc, mine, OPS, {})
    monkeypatch.setattr(regions, "MAX_NODES", 3 * len(new))
    assert not _read_back(ITEM, doc, mine, OPS, {})
