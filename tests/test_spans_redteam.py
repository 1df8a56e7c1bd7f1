"""Red-team case for the span editor found while fuzzing the region read-back: an item at
the end of the input without a final line break, whose last line is a one-line flow
mapping that gets a new collection (rewritten in block style, spans._flow_to_block) while
a new key goes after the mapping holding it. The new key's insertion sits at the end of
the text, which is also the flow mapping's end, so _flow_to_block takes it for an edit
inside the flow mapping and composed `{...}` plus the new key's lines: a ParserError, an
internal error for the user (`python -m krm_fn` exited 1 with "internal error:
ParserError"). Found by the red team of the region read-back."""
from __future__ import annotations

from krm_fn.resourcelist import KEY_ORDER, parse
from krm_fn.yaml import safety
from krm_fn.yaml.spans import item_edits, splice
from tests.helpers import run_cli

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


def test_a_flow_mapping_ending_the_input_takes_a_new_collection():
    doc = parse(NO_FINAL_BREAK, True)
    ops = [(C0 + ("resources", "requests"), {"cpu": "2", "memory": "4Gi"}),
           (C0 + ("env", 0), {"name": "OMP_NUM_THREADS", "value": "2"})]
    mine = item_edits(NO_FINAL_BREAK, doc.nodes[0], ops, "\n", KEY_ORDER)
    out = splice(NO_FINAL_BREAK, mine)
    assert out.endswith("      resources:\n        limits: {cpu: 1500m, memory: 4Gi}\n"
                        "        requests:\n          cpu: \"2\"\n          memory: \"4Gi\"\n"
                        "      env:\n      - name: OMP_NUM_THREADS\n        value: \"2\"\n")
    assert safety.intended(doc.items[0], ops) == parse(out, True).items[0]


def test_the_function_writes_that_input_in_place():
    p = run_cli([], stdin=NO_FINAL_BREAK)
    assert "internal error" not in p.stderr
    assert p.returncode == 0, p.stderr
