"""Run under the tree whose behaviour is specified (before the start-up changes, commit
5873913): `PYTHONPATH=<that tree> python tests/difftest/mkpins.py tests/difftest/pins.json`
writes the table tests/test_difftest_pins.py checks the current code against."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from krm_fn import quantity, numbers, config
from krm_fn.yaml import emit
from krm_fn.node import kubelet_check

def R(f, *a):
    try:
        v = f(*a)
    except Exception as e:
        return ["error", type(e).__name__, str(e)]
    if isinstance(v, quantity.Quantity):
        return ["ok", str(v.value), v.fmt, v.text]
    return ["ok", repr(v)]

import difftest_lists as L
out = {}
out["quantity"] = [[s, R(quantity.parse, s), R(quantity.parse_cpu, s), R(quantity.parse_memory, s)] for s in L.QUANTITIES]
out["numbers"] = [[s, R(numbers.count, s), R(numbers.decimal, s)] for s in L.NUMBERS]
out["emit"] = [[s, R(emit.scalar, s), R(emit.key, s), R(emit.to_yaml, {s: [s]})] for s in L.SCALARS]
out["go_duration"] = [[s, R(kubelet_check._scalar_ok, "duration", s)] for s in L.GO_DURATIONS]

def cfg(path, value):
    spec = {}
    node = spec
    for k in path[:-1]:
        if k == "[0]":
            continue
        node = node.setdefault(k, [{}] if k == "nodePools" else {})
        if isinstance(node, list):
            node = node[0]
    node[path[-1]] = value
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "metadata": {"name": "t"}, "spec": spec}

def load(obj):
    try:
        config.load(obj)
        return ["ok"]
    except Exception as e:
        return ["error", type(e).__name__, str(e)]

rows = []
for path, values in L.CONFIG_FIELDS:
    for v in values:
        rows.append([path, v, load(cfg(path.split("."), v))])
for key, values in L.FLAT_KEYS:
    for v in values:
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": {key: v}}
        if key.startswith("monitoring") and key != "monitoring":
            obj["data"]["monitoring"] = "true"
        rows.append(["data." + key, v, load(obj)])
out["config"] = rows
json.dump(out, open(sys.argv[1], "w"), ensure_ascii=True, indent=0)
print({k: len(v) for k, v in out.items()})
