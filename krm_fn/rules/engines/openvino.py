"""OpenVINO Model Server (`ovms`, image `openvino/model_server`): OpenVINO reads no
thread-count env var (its CPU plugin sizes its pool itself); the count is the plugin
property `INFERENCE_NUM_THREADS` (`CPU_THREADS_NUM` in the 2021 API), passed to OVMS as
`--plugin_config '{"INFERENCE_NUM_THREADS": N}'` (or the model's `plugin_config` in
config.json). A warning when args do not set it or set more than N; the image tag names
the release (`:2024.4`). A model whose plugin config sets neither `NUM_STREAMS` nor
`PERFORMANCE_HINT` gets `PERFORMANCE_HINT: LATENCY` from OVMS (src/modelinstance.cpp
`prepareDefaultPluginConfig`), under which the CPU plugin uses one logical processor per
physical core (`enable_hyper_threading` off), so `threads.perCore: engine-default` counts
physical cores.
"""
from __future__ import annotations

import json

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import flag, image_version, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, Release, release_for, version_text

_DOCS = "https://docs.openvino.ai/"
RELEASES = (
    Release((2021, 4, 0), {"key": "CPU_THREADS_NUM"},
            _DOCS + "2021.4/namespaceInferenceEngine_1_1PluginConfigParams.html",
            "plugin key `CPU_THREADS_NUM`"),
    Release((2023, 1, 0), {"key": "INFERENCE_NUM_THREADS"},
            _DOCS + "2023.1/groupov_property_c_api.html",
            "property `INFERENCE_NUM_THREADS` (ov::inference_num_threads)"),
)
_KEYS = tuple(r.facts["key"] for r in RELEASES)


def _key_for(c: ContainerView) -> str:
    """The thread key of the image's release, or both spellings when it is unknown."""
    v = image_version(c) if "model_server" in str(c.data.get("image") or "") else None
    rel = release_for(RELEASES, v)
    if rel is None:
        return (f"{_KEYS[1]} (OpenVINO 2023.1 and later; {_KEYS[0]} before)" if v is None
                else f"{_KEYS[0]} (OpenVINO {version_text(v)})")
    return rel.facts["key"]


def _plugin_config(c: ContainerView) -> tuple | None:
    """(the JSON text, its field path) of --plugin_config in command/args, read from the
    entries as written (JSON is no shell words), else from a shell script's words; or
    None."""
    found = None
    for key in ("command", "args"):
        entries = c.data.get(key)
        if not isinstance(entries, list):
            continue
        for i, e in enumerate(entries):
            if not isinstance(e, str):
                continue
            if e == "--plugin_config" and i + 1 < len(entries) and isinstance(entries[i + 1],
                                                                             str):
                found = (entries[i + 1], c.path + (key, i + 1))
            elif e.startswith("--plugin_config="):
                found = (e[len("--plugin_config="):], c.path + (key, i))
    if found is None:       # a shell script's words (`sh -c "exec ovms ... --plugin_config
        # '{...}'"`), with $(VAR) expanded as the kubelet does (cmdline.tokens)
        got = flag(tokens(c), ("--plugin_config",))
        if got is not None:
            found = (got[0], got[1].path)
    return found


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn when --plugin_config sets no thread count, or one above the count."""
    want = f.count.count
    found = _plugin_config(c)
    config = None
    if found is not None:
        try:
            config = json.loads(found[0]) if len(found[0]) <= 65536 else None
        except (ValueError, RecursionError):     # not JSON, or nested past the parser
            config = None
    have = next((k for k in _KEYS if isinstance(config, dict) and k in config), None)
    if have is None:
        pod.warn(found[1] if found else c.path + ("args",),
                 f"container {c.name!r} runs OpenVINO Model Server, which reads no thread-count "
                 f"env var: its CPU plugin sizes its thread pool itself; add the plugin "
                 f"property {_key_for(c)} = {want} to --plugin_config (e.g. --plugin_config "
                 f"'{{\"{_key_for(c).split()[0]}\": \"{want}\"}}')")
        return
    n = numbers.count(config[have] if isinstance(config[have], (str, int)) else None)
    if n is None or n > want:
        pod.warn(found[1], f"container {c.name!r}: OpenVINO Model Server --plugin_config "
                           f"{have}={numbers.shown(config[have])} is "
                           + ("not a whole number" if n is None else
                              f"more threads than {f.count.why}")
                           + f"; set it to {want}")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_DOCS + "2024/openvino-workflow/running-inference/inference-devices-and-"
                            "modes/cpu-device/performance-hint-and-thread-scheduling.html",
    recognised="image `openvino/model_server`; `ovms` in command/args",
    sets="the thread vars (OpenVINO reads none of them)",
    warns="`--plugin_config` without `INFERENCE_NUM_THREADS` (`CPU_THREADS_NUM` in the 2021 "
          "API), or with more than N",
    sources=(("OVMS performance tuning (--plugin_config)",
              _DOCS + "2024/ovms_docs_performance_tuning.html"),
             ("OVMS src/modelinstance.cpp (default PERFORMANCE_HINT LATENCY)",
              "https://github.com/openvinotoolkit/model_server/blob/v2026.3/src/"
              "modelinstance.cpp"),
             ("openvino properties.hpp (inference_num_threads)",
              "https://github.com/openvinotoolkit/openvino/blob/"
              "dd9eda0c28d0ad1e9f26bf4490b23213a86137db/src/inference/include/openvino/runtime/"
              "properties.hpp")),
)
