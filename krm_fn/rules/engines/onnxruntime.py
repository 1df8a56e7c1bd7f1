"""ONNX Runtime: from 1.29 a session whose intra-op pool size is not set in code sizes it
from `ORT_INTRA_OP_NUM_THREADS` (microsoft/onnxruntime#29688; a value that is not a whole
number fails the session), which krm-fn sets on every ONNX Runtime container (older
releases ignore it). Before 1.29, or when the image tag names no ONNX Runtime version, ORT
reads no thread env var (OMP_NUM_THREADS only in OpenMP builds): the pod template also
gets the annotation `krm-fn.dev/threads: "N"` for the app to pass to
`SessionOptions.intra_op_num_threads`, and a warning. Its own default is one thread per
physical core.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import image_version
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, Release, release_for, version_text
from krm_fn.rules.envvars import set_env

THREADS_ANNOTATION = "krm-fn.dev/threads"
INTRA = "ORT_INTRA_OP_NUM_THREADS"
RELEASES = (
    Release((1, 29, 0), {"env": INTRA}, "https://github.com/microsoft/onnxruntime/pull/29688",
            f"default pools sized from `{INTRA}` / `ORT_INTER_OP_NUM_THREADS`"),
)


def version(c: ContainerView) -> tuple | None:
    """The ONNX Runtime version an image whose name mentions onnxruntime carries in its
    tag, else None (unknown)."""
    image = str(c.data.get("image") or "")
    return image_version(c) if "onnxruntime" in image.rsplit(":", 1)[0].lower() else None


def _get(root: object, path: tuple) -> object:
    """The value at `path` (mapping keys and list indices), None when absent."""
    cur = root
    for key in path:
        if isinstance(cur, dict):
            cur = cur.get(key)
        elif isinstance(cur, list) and isinstance(key, int) and 0 <= key < len(cur):
            cur = cur[key]
        else:
            return None
    return cur


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Annotate the pod template with the thread count (once per pod: `seen` holds the
    value already written) and warn that the app must pass it to ONNX Runtime."""
    cnt = f.count
    want = str(cnt.count)
    set_env(pod, c, INTRA, want, f"ONNX Runtime 1.29+: {cnt.why}", ctx.cfg)
    v = version(c)
    if release_for(RELEASES, v) is not None:
        return                    # the release reads ORT_INTRA_OP_NUM_THREADS: bound
    key = THREADS_ANNOTATION
    if pod.at.meta is None:       # a pod spec whose pods get no annotations from the object
        _warning(pod, c, want, v, annotated=False)
        return
    path = pod.at.meta + ("annotations", key)
    ann = _get(pod.edits.root, pod.at.meta + ("annotations",))
    if ann is not None and not isinstance(ann, dict):
        pod.error(pod.at.meta + ("annotations",), "annotations must be a mapping")
        return
    current = (ann or {}).get(key)
    if key in seen and seen[key] != want:
        pod.warn(path, f"container {c.name!r}: annotation {key} already holds {seen[key]} "
                       f"for another ONNX Runtime container; pass {want} to this one's "
                       f"intra_op_num_threads directly")
    elif current is None or str(current) != want:
        pod.set(path, want, f"annotation {key}={want}: the thread count of container "
                            f"{c.name!r} ({cnt.why}), for the app to pass to ONNX Runtime",
                current)
    seen.setdefault(key, want)
    _warning(pod, c, want, v)


def _warning(pod: PodView, c: ContainerView, want: str, v: tuple | None,
             annotated: bool = True) -> None:
    key = THREADS_ANNOTATION
    source = (f", e.g. from annotation {key} via the downward API (env valueFrom fieldRef "
              f"metadata.annotations['{key}'])" if annotated else "")
    which = (f"ONNX Runtime {version_text(v)}, which reads no thread env var" if v else
             "ONNX Runtime of a version its image tag does not name, which before 1.29 "
             "reads no thread env var")
    pod.warn(c.path, f"container {c.name!r} runs {which}: its intra-op pool defaults to the "
                     f"physical cores (OMP_NUM_THREADS reaches only OpenMP builds; {INTRA}, "
                     f"set, is read from 1.29 on), so the variables krm-fn sets may not bound "
                     f"it; pass {want} to SessionOptions.intra_op_num_threads in the app"
                     f"{source}; under Triton add "
                     f"--backend-config=onnxruntime,enable-global-threadpool=1 and "
                     f"--backend-config=onnxruntime,intra_op_thread_count={want} to args")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source="https://onnxruntime.ai/docs/performance/tune-performance/threading.html",
    recognised="image or args mention `onnxruntime`; KServe `onnx`",
    sets="`ORT_INTRA_OP_NUM_THREADS` = N (read from 1.29, ignored before); below 1.29 or "
         "with no version in the tag also the pod-template annotation `krm-fn.dev/threads: "
         "\"N\"`, for the app to pass to `SessionOptions.intra_op_num_threads` (downward API "
         "`fieldRef: metadata.annotations['krm-fn.dev/threads']`)",
    warns="below 1.29 or an unversioned image: ORT reads no thread env var (OMP only in "
          "OpenMP builds), so it is not reported as bound",
    sources=(("ONNX Runtime thread management",
              "https://onnxruntime.ai/docs/performance/tune-performance/threading.html"),),
)
