"""The tune step's rewrites for speed (issue 11 part 10) give what the code before them gave:
each property runs the code as it was (quoted here) and the code as it is on generated
inputs and compares every write, every result and the data left behind."""
from __future__ import annotations

import copy
import importlib
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from krm_fn import config
from krm_fn.changes import Change
from krm_fn.pod import ContainerView, Edits, Findings, PodView
from krm_fn.results import INFO, Ref
from krm_fn.rules import envvars
from krm_fn.workloads import PodSpecAt

# KRM_FN_PROPERTY_EXAMPLES=5000 for a longer search (as tests/test_properties.py)
_EXAMPLES = int(os.environ.get("KRM_FN_PROPERTY_EXAMPLES", "0")) or 300
_SETTINGS = settings(max_examples=_EXAMPLES, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
REF = Ref("apps/v1", "Deployment", "d", "ns")
# the module (engines.workers is the function of krm_fn/rules/engines/__init__.py)
workers = importlib.import_module("krm_fn.rules.engines.workers")
AT = PodSpecAt(("spec", "template", "spec"), ("spec", "template", "metadata"))


# -- Edits.set --------------------------------------------------------------------------


def _old_set(edits: Edits, path: tuple, value: object, message=None, severity=INFO):
    """Edits.set as it was before the walk took exact dict and list first."""
    path = tuple(path)
    cur = edits.root
    for i in range(len(path) - 1):
        key = path[i]
        nxt = cur[key] if isinstance(cur, list) else cur.get(key)
        if not isinstance(nxt, (dict, list)):
            nxt = cur[key] = [] if isinstance(path[i + 1], int) else {}
        cur = nxt
    last = path[-1]
    if isinstance(cur, list):
        old = cur[last] if last < len(cur) else None
        if last == len(cur):
            cur.append(value)
        else:
            cur[last] = value
    else:
        old = cur.get(last)
        cur[last] = value
    change = Change(edits.index, edits.ref, path, old, value, edits.rule, severity, message)
    edits.changes.append(change)
    return change


class _Dict(dict):
    """A mapping of another type than dict (the walk must treat it as a mapping)."""


_leaf = st.one_of(st.none(), st.text("ab1", max_size=2))
_tree = st.recursive(_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=2).map(_Dict)), max_leaves=12)


def _walk_path(root: object, seeds: list) -> tuple:
    path, cur = [], root
    for n, seed in enumerate(seeds):
        if isinstance(cur, list):
            key = seed % (len(cur) + 1)
            nxt = cur[key] if key < len(cur) else None
        elif isinstance(cur, dict):
            key = "abc"[seed % 3]
            nxt = cur.get(key)
        else:                           # created by the write: a mapping or a list
            key = seed % 2 if seed % 4 < 2 else "abc"[seed % 3]
            nxt = None
            if isinstance(key, int):
                key = 0                 # a new list: the only index is 0
        path.append(key)
        cur = nxt
    return tuple(path)


@_SETTINGS
@given(st.dictionaries(st.sampled_from("abc"), _tree, max_size=3),
       st.lists(st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=5), min_size=1,
                max_size=4),
       st.text("xyz", max_size=2))
def test_edits_set_writes_what_it_wrote(root, seed_lists, value):
    old, new = Edits(copy.deepcopy(root), index=2, ref=REF, rule="r"), \
        Edits(copy.deepcopy(root), index=2, ref=REF, rule="r")
    for seeds in seed_lists:
        path = _walk_path(old.root, seeds)
        try:
            want = _old_set(old, path, value, "m")
        except (TypeError, IndexError, AttributeError) as e:
            want = type(e)
        try:
            got = new.set(list(path) if len(path) % 2 else path, value, "m")
        except (TypeError, IndexError, AttributeError) as e:
            got = type(e)
        assert repr(got) == repr(want)
        assert new.root == old.root and type(new.root) is type(old.root)
        if isinstance(want, type):
            break
    assert repr(new.changes) == repr(old.changes)


@_SETTINGS
@given(st.dictionaries(st.sampled_from("abc"), _tree, max_size=3),
       st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.text("xyz", max_size=2)), max_size=4),
       st.booleans())
def test_set_all_is_set_for_each_item(root, seeds, writes, appending):
    """Edits.set_all(base, items) makes the Changes and data of set(base + (key,), value)
    for each item (list indices from the list's length on, or mapping keys)."""
    old, new = Edits(copy.deepcopy(root), index=1, ref=REF, rule="r"), \
        Edits(copy.deepcopy(root), index=1, ref=REF, rule="r")
    base = _walk_path(old.root, seeds)
    from krm_fn.workloads import get_path
    node = get_path(old.root, base)
    start = len(node) if isinstance(node, list) else 0
    items = [((start + k) if appending else "abc"[n % 3], v) for k, (n, v) in enumerate(writes)]
    try:
        for key, value in items:
            _old_set(old, base + (key,), value)
        want = None
    except (TypeError, IndexError, AttributeError) as e:
        want = type(e)
    try:
        new.set_all(base, items)
        got = None
    except (TypeError, IndexError, AttributeError) as e:
        got = type(e)
    assert got == want
    if want is None:
        assert new.root == old.root
        assert repr(new.changes) == repr(old.changes)


# -- set_envs ---------------------------------------------------------------------------

_NAMES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "GOMAXPROCS", "X")
_entry = st.one_of(
    st.tuples(st.sampled_from(_NAMES), st.sampled_from(["1", "4", "9", " 4 ", "x", "", None]))
    .map(lambda t: {"name": t[0], "value": t[1]} if t[1] is not None else {"name": t[0]}),
    st.sampled_from(_NAMES).map(lambda n: {"name": n, "valueFrom": copy.deepcopy(
        envvars.DOWNWARD)}),
    st.sampled_from(_NAMES).map(lambda n: {"name": n, "valueFrom": {"secretKeyRef": {}}}))


def _pod(env, cpu: str):
    data: dict = {"name": "server", "resources": {"limits": {"cpu": cpu}}}
    if env is not None:
        data["env"] = env
    root = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [data]}}}}
    edits = Edits(root, index=0, ref=REF, rule="threads",
                  retyped=lambda i, path: len(path) % 3 == 0)
    c = ContainerView("server", "app", ("spec", "template", "spec", "containers", 0), data)
    pod = PodView(REF, AT, root["spec"]["template"]["spec"], None, [c], edits,
                  Findings(edits))
    return pod, c


@_SETTINGS
@given(st.one_of(st.none(), st.lists(_entry, max_size=5)),
       st.lists(st.sampled_from(_NAMES), min_size=1, max_size=6),
       st.sampled_from(["1", "4", "8"]), st.sampled_from(["keep-lower", "replace"]),
       st.booleans(), st.booleans(), st.sampled_from(["4", "3500m", "8"]))
def test_set_envs_is_set_env_for_each_var(env, names, want, existing, downward, combined,
                                          cpu):
    """One env index for every var of a container (threads) gives the writes, results and
    env of one set_env call per var, each reading the env again."""
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "t"},
                       "spec": {"workloads": {"threads": {"existing": existing}}}})
    old_pod, old_c = _pod(copy.deepcopy(env), cpu)
    new_pod, new_c = _pod(copy.deepcopy(env), cpu)
    old_added = [] if combined else None
    new_added = [] if combined else None
    for var in names:
        envvars.set_env(old_pod, old_c, var, want, "why", cfg, old_added, downward)
    found = envvars.env_index(new_pod, new_c)
    assert found is not None
    envvars.set_envs(new_pod, new_c, found[1], names, want, "why", cfg, new_added, downward)
    assert new_pod.edits.root == old_pod.edits.root
    assert repr(new_pod.edits.changes) == repr(old_pod.edits.changes)
    assert repr(list(new_pod.results)) == repr(list(old_pod.results))
    assert new_added == old_added


# -- the worker counts read once ----------------------------------------------------------

_WORDS = ("gunicorn", "uvicorn", "hypercorn", "--workers", "-w", "--workers=3", "4", "x",
          "2.5", "app:main", "serve", "torchserve")


@_SETTINGS
@given(st.lists(st.sampled_from(_WORDS), max_size=8),
       st.lists(st.tuples(st.sampled_from(["WEB_CONCURRENCY", "GUNICORN_CMD_ARGS",
                                           "TS_DEFAULT_WORKERS_PER_MODEL", "OTHER"]),
                          st.sampled_from(["2", "x", "-w 3", "--workers x", ""])),
                max_size=3),
       st.sets(st.sampled_from(["uvicorn-gunicorn images", "TorchServe", "vLLM CPU"])))
def test_scan_is_find_then_unreadable(args, env, engine_names):
    from types import SimpleNamespace
    data = {"name": "c", "args": args, "env": [{"name": n, "value": v} for n, v in env]}
    c = ContainerView("c", "app", ("spec", "containers", 0), data)
    engines = tuple(SimpleNamespace(name=n) for n in sorted(engine_names))
    want_workers = workers.find(c, engines)
    want = (want_workers, workers.unreadable(c, engines) if want_workers is None else None)
    assert repr(workers.scan(c, engines)) == repr(want)
