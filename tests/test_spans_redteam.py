"""Red-team case for the span editor found while fuzzing the region read-back: an item at
the end of the input without a final line break, whose last line is a one-line flow
mapping that gets a new collection (rewritten in block style, spans._flow_to_block) while
a new key goes after the mapping holding it. The new key's insertion sits at the end of
the text, which is also the flow mapping's end, so _flow_to_block takes it for an edit
inside the flow mapping and composes `{...}` plus the new key's lines: a ParserError, an
internal error for the user (`python -m krm_fn` exits 1 with "internal error:
ParserError"). Marked xfail(strict=True) until the span editor keeps that edit out."""
from __future__ import annotations

import pytest

from krm_fn.resourcelist import KEY_ORDER, parse
from krm_fn.yaml.spans import Unsupported, item_edits

NO_FINAL_BREAK = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: p
  spec:
    containers:
    - name: server
      image: srv:1
      resources: {limits: {cpu: 1500m, memory: 4Gi}}"""

C0 = ("spec", "containers", 0)


@pytest.mark.xfail(strict=True, reason="_flow_to_block composes an insertion that lies "
                                       "after the flow mapping")
def test_a_flow_mapping_ending_the_input_takes_a_new_collection():
    doc = parse(NO_FINAL_BREAK, True)
    ops = [(C0 + ("resources", "requests"), {"cpu": "2", "memory": "4Gi"}),
           (C0 + ("env", 0), {"name": "OMP_NUM_THREADS", "value": "2"})]
    try:
        item_edits(NO_FINAL_BREAK, doc.nodes[0], ops, "\n", KEY_ORDER)
    except Unsupported:
        pass                    # refusing it is fine: the caller rewrites the item
