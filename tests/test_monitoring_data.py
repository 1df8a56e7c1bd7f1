"""The histogram layouts of krm_fn/monitoring/data.py are the engines' own: for every vLLM
release whose sdist tests/engines pins, the metric names and bucket bounds its source
defines for each jitter signal are exactly the layouts data.py says that release has. The
bounds are read from the Histogram(...) calls of vllm/engine/metrics.py and
vllm/v1/metrics/loggers.py; where a release takes them from vllm/v1/metrics/buckets.py,
that module runs in-process and its own histogram_buckets() answers."""
from __future__ import annotations

import ast
import types

import pytest

from krm_fn.monitoring import data
from tests.engines import fetch

VLLM = data.BY_ENGINE["vLLM CPU"]
RELEASES = sorted((v for p, v in fetch.PINNED if p == "vllm"),
                  key=lambda v: tuple(map(int, v.split("."))))
FILES = ("vllm/engine/metrics.py", "vllm/v1/metrics/loggers.py")


def _text(version: str, path: str) -> str | None:
    try:
        return fetch.source("vllm", version, path)
    except KeyError:
        return None
    except fetch.Unavailable:
        fetch.require("vllm", version, path)     # skips, or fails under CI=true
        raise


def _buckets_module(version: str):
    """vllm/v1/metrics/buckets.py of `version` as a module (None when the release has
    none): plain Python on the standard library, run as the release ships it."""
    text = _text(version, "vllm/v1/metrics/buckets.py")
    if text is None:
        return None
    module = types.ModuleType(f"vllm_{version.replace('.', '_')}_buckets")
    exec(compile(text, "buckets.py", "exec"), module.__dict__)
    return module


def defined(version: str, metrics: set) -> set:
    """{(metric, buckets)} of the Histogram(name=..., buckets=...) calls of `version` whose
    name is one of `metrics`."""
    out = set()
    buckets_mod = _buckets_module(version)
    for path in FILES:
        text = _text(version, path)
        if text is None:
            continue
        tree = ast.parse(text)
        assigned = {n.targets[0].id: n.value for n in ast.walk(tree)
                    if isinstance(n, ast.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], ast.Name)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            name = kw.get("name")
            if not (isinstance(name, ast.Constant) and name.value in metrics):
                continue
            out.add((name.value, _bounds(kw.get("buckets"), assigned, buckets_mod)))
    return out


def _bounds(node, assigned: dict, buckets_mod) -> tuple:
    if isinstance(node, ast.Name):
        node = assigned[node.id]
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "histogram_buckets":
        family = ast.literal_eval(node.args[0])
        return tuple(float(b) for b in buckets_mod.histogram_buckets(family))
    return tuple(float(b) for b in ast.literal_eval(node))


def claimed(version: str, signal) -> set:
    v = tuple(map(int, version.split(".")))
    return {(lay.metric, tuple(lay.buckets)) for lay in signal.layouts
            if lay.since <= v and (lay.until is None or v <= lay.until)}


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("signal", VLLM.signals, ids=lambda s: s.name)
def test_each_pinned_release_defines_exactly_the_layouts_claimed(version, signal):
    metrics = {lay.metric for lay in signal.layouts}
    assert defined(version, metrics) == claimed(version, signal)


def test_every_layout_names_pinned_releases():
    for signal in VLLM.signals:
        for lay in signal.layouts:
            assert ".".join(map(str, lay.since)) in RELEASES
            assert lay.until is None or ".".join(map(str, lay.until)) in RELEASES

