"""Triton Inference Server (image `nvcr.io/nvidia/tritonserver`, `tritonserver`, KServe
`triton`): the thread env vars reach its PyTorch and Python backends. Its ONNX Runtime
backend reads none of them: each ONNX model gets its own pool of ONNX Runtime's default
size (one thread per physical core) unless the model's config.pbtxt sets `parameters {
key: "intra_op_thread_count" value: { string_value: "N" } }`. From 21.12 the command line
can size one pool shared by every ONNX model instead, but only with both
`--backend-config=onnxruntime,enable-global-threadpool=1` and
`--backend-config=onnxruntime,intra_op_thread_count=N`: the loader reads the count only
when the global pool is on (then the models' own counts are ignored), so a count without it
does nothing (onnxruntime_backend src/onnxruntime_loader.cc and src/onnxruntime.cc). The
model repository is not in the manifest, so krm-fn writes neither: it warns, naming the
two args (or, before 21.12 where the command line has no thread setting, the config.pbtxt
parameter), and warns about a count above N or a value Triton cannot read
(`enable-global-threadpool` takes true/on/1 or false/off/0; anything else fails the
backend). Its default being one thread per physical core, `threads.perCore:
engine-default` counts physical cores.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, image_version, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, Release, release_for

_ORT = "https://github.com/triton-inference-server/onnxruntime_backend/blob/"
_R2112 = "7509e0e1683844b3888deed09207640c4b76bb7e"       # branch r21.12
_R2606 = "7db253463603b8169afa4274b3265689aa6a263e"       # branch r26.06
_BACKEND = ("https://github.com/triton-inference-server/backend/blob/"
            "3f57fb90bee16b86232ee79c45eb4ce69c9ad489/src/backend_common.cc")   # r26.02
GLOBAL, INTRA = "enable-global-threadpool", "intra_op_thread_count"
RELEASES = (
    Release((21, 12, 0), {"global": True}, _ORT + _R2112 + "/src/onnxruntime_loader.cc",
            f"`--backend-config=onnxruntime,{GLOBAL}=1` with `onnxruntime,{INTRA}=N` sizes "
            f"one pool shared by the ONNX models (the count is read only with the global "
            f"pool on); before, only each model's config.pbtxt `{INTRA}`", label="21.12"),
)
_TRUE, _FALSE = ("true", "on", "1"), ("false", "off", "0")


def version(c: ContainerView) -> tuple | None:
    """The Triton release (21, 12, 0) a `tritonserver:21.12-py3` image names, else None."""
    image = str(c.data.get("image") or "")
    return image_version(c) if "tritonserver" in image.rsplit(":", 1)[0].lower() else None


def label(v: tuple) -> str:
    """(21, 11, 0) -> "21.11", as Triton names its releases (YY.MM)."""
    return f"{v[0]}.{v[1]:02d}"


def settings(c: ContainerView) -> dict:
    """{setting: (value text, Token)} of the `--backend-config=onnxruntime,SETTING=VALUE`
    (or `--backend-config onnxruntime,SETTING=VALUE`) entries of command/args; the last
    one of a setting wins, as Triton's own parsing keeps it."""
    toks = tokens(c)
    found: dict = {}
    for i, t in enumerate(toks):
        body = t.text
        if body.startswith("--backend-config="):
            body = body[len("--backend-config="):]
        elif not (i and toks[i - 1].text == "--backend-config"):
            continue
        backend, _, rest = body.partition(",")
        key, eq, value = rest.partition("=")
        if backend == "onnxruntime" and eq:
            found[key] = (value, t)
    return found


def _model_param(want: str) -> str:
    return (f"parameters {{ key: \"{INTRA}\" value: {{ string_value: \"{want}\" }} }} in "
            f"each ONNX model's config.pbtxt")


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn about what the ONNX Runtime backend's pool is sized by (module docstring)."""
    cnt, want = f.count, str(f.count.count)
    found = settings(c)
    v = version(c)
    old = v is not None and release_for(RELEASES, v) is None
    flag = None if old else found.get(GLOBAL)      # before 21.12 the setting is not read
    on = flag is not None and flag[0].lower() in _TRUE
    if flag is not None and not on and flag[0].lower() not in _FALSE:
        pod.warn(flag[1].path, f"container {c.name!r}: Triton onnxruntime,{GLOBAL}="
                               f"{numbers.brief(flag[0])} is not a boolean (true/on/1, "
                               f"false/off/0), so the ONNX Runtime backend fails to load; set "
                               f"it to 1 (with onnxruntime,{INTRA}={want})")
        return
    intra = found.get(INTRA)
    if on:
        _global_count(pod, c, cnt, intra, flag, want)
        return
    if intra is not None:
        n = count_text(intra[0])
        fix = ("" if n is not None and n <= cnt.count else
               f", and set onnxruntime,{INTRA} to {want}")
        if old:
            pod.warn(intra[1].path, f"container {c.name!r}: Triton {label(v)} reads no "
                                    f"ONNX Runtime thread count from the command line "
                                    f"({GLOBAL} came with 21.12), so onnxruntime,{INTRA} is "
                                    f"ignored; set {_model_param(want)}")
        else:
            pod.warn(intra[1].path, f"container {c.name!r}: Triton reads onnxruntime,{INTRA} "
                                    f"from the command line only with onnxruntime,{GLOBAL}=1, "
                                    f"so it is ignored here; add --backend-config=onnxruntime,"
                                    f"{GLOBAL}=1 to args{fix}")
        return
    where = c.path + ("args",)
    lead = (f"container {c.name!r} runs Triton: the thread env vars reach its PyTorch and "
            f"Python backends, but its ONNX Runtime backend gives each ONNX model its own "
            f"pool of one thread per physical core unless told; if it serves ONNX models ")
    if old:
        pod.warn(where, lead + f"set {_model_param(want)} (Triton {label(v)} has no "
                               f"command-line thread setting)")
        return
    pod.warn(where, lead + f"add --backend-config=onnxruntime,{GLOBAL}=1 and "
                           f"--backend-config=onnxruntime,{INTRA}={want} to args (one pool of "
                           f"{want} threads shared by those models; {INTRA} without {GLOBAL} "
                           f"is ignored), or set {_model_param(want)} (the model repository, "
                           f"which krm-fn does not see)")


def _global_count(pod: PodView, c: ContainerView, cnt, intra, flag, want: str) -> None:
    """The global pool is on: its count must be given and at most the thread count."""
    if intra is None:
        pod.warn(flag[1].path, f"container {c.name!r}: Triton onnxruntime,{GLOBAL}={flag[0]} "
                               f"shares one ONNX Runtime pool among the ONNX models and "
                               f"ignores their config.pbtxt {INTRA}, but without onnxruntime,"
                               f"{INTRA} that pool is one thread per physical core; add "
                               f"--backend-config=onnxruntime,{INTRA}={want} to args")
        return
    n = count_text(intra[0])
    if n is None:
        pod.warn(intra[1].path, f"container {c.name!r}: Triton onnxruntime,{INTRA}="
                                f"{numbers.brief(intra[0])} is not a whole number (ASCII "
                                f"digits) and is left alone; set it to {want}")
    elif n > cnt.count:
        pod.warn(intra[1].path, f"container {c.name!r}: Triton onnxruntime,{INTRA}={n} is "
                                f"more threads than {cnt.why}; set it to {want}")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_ORT + _R2606 + "/README.md",
    recognised="image `nvcr.io/nvidia/tritonserver`; `tritonserver`; KServe `triton`",
    sets="thread vars (reach the PyTorch and Python backends)",
    warns=f"ONNX Runtime backend: from 21.12 `--backend-config=onnxruntime,{GLOBAL}=1` and "
          f"`--backend-config=onnxruntime,{INTRA}=N` missing from args (the count alone is "
          f"ignored), or the count above N; before 21.12 the models' config.pbtxt `{INTRA}`",
    sources=(("onnxruntime_backend README (model config and command-line thread options)",
              _ORT + _R2606 + "/README.md"),
             ("onnxruntime_backend src/onnxruntime_loader.cc (the global pool)",
              _ORT + _R2606 + "/src/onnxruntime_loader.cc"),
             ("onnxruntime_backend src/onnxruntime.cc (per-model intra_op_thread_count)",
              _ORT + _R2606 + "/src/onnxruntime.cc"),
             ("backend_common.cc (ParseBoolValue)", _BACKEND),
             ("pytorch_backend README (INTRA_OP_THREAD_COUNT: default the CPU cores)",
              "https://github.com/triton-inference-server/pytorch_backend/blob/"
              "55bbe27ff7b6be1642dbd0d2737c148d0684c3a7/README.md")),     # r26.05
)
