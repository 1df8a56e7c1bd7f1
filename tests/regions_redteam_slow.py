"""Slow red-team case for the region read-back (not collected by pytest: about 2 minutes
and 2 GB; run `python tests/regions_redteam_slow.py`). Prints the two answers.

An item of MAX_NODES - 7 nodes (the ResourceList's own 7 nodes bring the input to exactly
MAX_NODES, which load.documents accepts) that gets a new key with a 4-entry mapping (10 new
nodes): safety.as_intended builds the new item with a fresh Builder, whose MAX_NODES budget
it now exceeds (InputError: False); regions.read_back parsed only the edited region and
said True, so the output held more nodes than krm-fn accepts as input. Fixed: read_back
refuses a text that could hold more than MAX_NODES nodes (3n + 1 for n characters);
tests/test_regions.py::test_a_text_that_could_pass_max_nodes_is_read_back_whole checks it
fast. This script should print False for both."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
    from krm_fn.yaml.load import MAX_NODES
    from tests.test_regions import _answers
    head = ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            "- apiVersion: v1\n  kind: Thing\n  metadata:\n    name: t\n"
            "  spec:\n    x: \"1\"\n  big: [")
    # nodes besides the list's entries: the item mapping, its 5 keys and 5 values (the
    # list itself one of them), metadata's and spec's inner key and value: 15
    entries = MAX_NODES - 7 - 15
    text = head + ",".join(["1"] * entries) + "]\n"
    ops = [(("spec", "y"), {"a": "1", "b": "2", "c": "3", "d": "4"})]
    fast, full, _ = _answers(text, ops)
    print("read_back:", fast, "as_intended:", full)
