"""ONNX Runtime: it reads no thread env var (OMP_NUM_THREADS only in OpenMP builds), so the
pod template gets the annotation `krm-fn.dev/threads: "N"` for the app to pass to
`SessionOptions.intra_op_num_threads`, and a warning: never reported as bound.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.engines.base import Engine

THREADS_ANNOTATION = "krm-fn.dev/threads"


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
    key = THREADS_ANNOTATION
    if pod.at.meta is None:       # a pod spec whose pods get no annotations from the object
        _warning(pod, c, want, annotated=False)
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
    _warning(pod, c, want)


def _warning(pod: PodView, c: ContainerView, want: str, annotated: bool = True) -> None:
    key = THREADS_ANNOTATION
    source = (f", e.g. from annotation {key} via the downward API (env valueFrom fieldRef "
              f"metadata.annotations['{key}'])" if annotated else "")
    pod.warn(c.path, f"container {c.name!r} runs ONNX Runtime, which reads no thread env "
                     f"var: its intra-op pool defaults to the physical cores (OMP_NUM_THREADS "
                     f"reaches only OpenMP builds), so the variables krm-fn sets do not bound "
                     f"it; pass {want} to SessionOptions.intra_op_num_threads in the app"
                     f"{source}; under Triton add "
                     f"--backend-config=onnxruntime,intra_op_thread_count={want} to args")


ENGINE = Engine(
    "ONNX Runtime",
    images=(r"onnxruntime",),
    commands=(r"onnxruntime",),
    kserve=("onnx",),
    not_with=("Triton",),
    check=check,
    recognised="image or args mention `onnxruntime`; KServe `onnx`",
    sets="pod-template annotation `krm-fn.dev/threads: \"N\"`, for the app to pass to "
         "`SessionOptions.intra_op_num_threads` (downward API `fieldRef: "
         "metadata.annotations['krm-fn.dev/threads']`)",
    warns="always: ORT reads no thread env var (OMP only in OpenMP builds), so it is never "
          "reported as bound",
    sources=(("ONNX Runtime thread management",
              "https://onnxruntime.ai/docs/performance/tune-performance/threading.html"),),
)
