"""Triton Inference Server: the thread env vars reach its PyTorch and Python backends; its
ONNX Runtime backend takes `--backend-config=onnxruntime,intra_op_thread_count=N`: a
warning unless args have it.
"""
from __future__ import annotations

import re

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_ORT_ARG = re.compile(r"^(?:--backend-config=)?onnxruntime,intra_op_thread_count=(\S+)$")


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn when the ONNX Runtime backend's intra_op_thread_count is missing or above the
    thread count."""
    cnt = f.count
    toks = tokens(c)
    want = str(cnt.count)
    for i, t in enumerate(toks):
        m = _ORT_ARG.match(t.text)
        if m and (t.text.startswith("--") or (i and toks[i - 1].text == "--backend-config")):
            n = count_text(m.group(1))
            if n is None:
                pod.warn(t.path, f"container {c.name!r}: Triton onnxruntime,"
                                 f"intra_op_thread_count={numbers.brief(m.group(1))} is not a "
                                 f"whole number (ASCII digits) and is left alone; set it to "
                                 f"{want}")
            elif n > cnt.count:
                pod.warn(t.path, f"container {c.name!r}: Triton "
                                 f"onnxruntime,intra_op_thread_count={n} is more threads "
                                 f"than {cnt.why}; set it to {want}")
            return
    where = c.path + ("args",)
    pod.warn(where, f"container {c.name!r} runs Triton: the thread env vars reach its "
                    f"PyTorch and Python backends, but the ONNX Runtime backend sizes its "
                    f"pools from the cores; if it serves ONNX models add "
                    f"--backend-config=onnxruntime,intra_op_thread_count={want} to args")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    recognised="image `nvcr.io/nvidia/tritonserver`; `tritonserver`; KServe `triton`",
    sets="thread vars (reach the PyTorch and Python backends)",
    warns="ONNX Runtime backend: `--backend-config=onnxruntime,intra_op_thread_count=N` "
          "missing from args, or above N",
    sources=(("onnxruntime_backend README",
              "https://github.com/triton-inference-server/onnxruntime_backend"),
             ("pytorch_backend README",
              "https://github.com/triton-inference-server/pytorch_backend")),
)
