"""Registry of workload kinds: where each kind keeps its pod specs (data, not code).

Source: ../shared/reference/workloads.md §2 (core kinds: Kubernetes API reference; KServe:
kserve/kserve pkg/apis/serving/v1beta1 predictor.go, component.go, podspec.go).

A `PodSpecAt` names, relative to the object root:
  - `spec`: the PodSpec-shaped mapping (containers[], initContainers[], volumes[],
    nodeSelector, resources) — for KServe the predictor itself is an inline PodSpec;
  - `meta`: the mapping whose `annotations` the pod gets (pod template metadata);
  - `container_keys`: keys of `spec` that each hold ONE container (KServe framework keys).
Adding a kind is one line in `KINDS`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodSpecAt:
    """Where one pod spec lives in an object. Paths are tuples of mapping keys; `"*"`
    stands for every entry of a list (`spec.workerGroupSpecs[*].template.spec`).

    `optional`: the object may lack this pod spec (else a missing one is an error);
    `model_container`: name of the container to pin when the config names none;
    `platform`: who adds containers at admission (`kserve`), for the injected rule.
    """

    spec: tuple
    meta: tuple
    container_keys: tuple = ()
    model_container: str | None = None
    platform: str | None = None
    optional: bool = False


def _t(*path: str) -> PodSpecAt:
    """A PodTemplateSpec at `path`: spec at path+spec, metadata at path+metadata."""
    return PodSpecAt(spec=tuple(path) + ("spec",), meta=tuple(path) + ("metadata",))


# KServe v1beta1 predictor framework keys: each is one inline corev1.Container
# (predictor.go PredictorSpec; exactly one is set). The container is named
# `kserve-container` by the controller.
KSERVE_FRAMEWORKS = ("sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx",
                     "huggingface", "pmml", "lightgbm", "paddle", "model")

KINDS: dict[tuple[str, str], tuple[PodSpecAt, ...]] = {
    ("", "Pod"): (PodSpecAt(spec=("spec",), meta=("metadata",)),),
    ("", "PodTemplate"): (_t("template"),),
    ("", "ReplicationController"): (_t("spec", "template"),),
    ("apps", "Deployment"): (_t("spec", "template"),),
    ("apps", "StatefulSet"): (_t("spec", "template"),),
    ("apps", "DaemonSet"): (_t("spec", "template"),),
    ("apps", "ReplicaSet"): (_t("spec", "template"),),
    ("batch", "Job"): (_t("spec", "template"),),
    ("batch", "CronJob"): (_t("spec", "jobTemplate", "spec", "template"),),
    ("serving.kserve.io", "InferenceService"): (
        PodSpecAt(spec=("spec", "predictor"), meta=("spec", "predictor"),
                  container_keys=KSERVE_FRAMEWORKS, model_container="kserve-container",
                  platform="kserve"),),
}


def parse_path(text: str) -> tuple:
    """`spec.workers[*].template` -> ("spec", "workers", "*", "template"). Raises
    ValueError for an empty segment."""
    out: list = []
    for part in text.split("."):
        name, _, rest = part.partition("[")
        if not name:
            raise ValueError(f"empty segment in path {text!r}")
        out.append(name)
        while rest:
            idx, _, rest = rest.partition("]")
            if idx != "*":
                raise ValueError(f"only [*] is allowed in path {text!r}")
            out.append("*")
            rest = rest[1:] if rest.startswith("[") else rest
            if rest:
                raise ValueError(f"unexpected {rest!r} in path {text!r}")
    return tuple(out)


def expand(obj: dict, at: PodSpecAt) -> list[PodSpecAt]:
    """Concrete locations of `at` in `obj`: each `"*"` replaced by every index of the list
    found there (a missing or non-list value there gives no location)."""
    results: list[tuple[tuple, tuple]] = [((), ())]
    for key in at.spec:
        nxt = []
        for prefix, indices in results:
            if key != "*":
                nxt.append((prefix + (key,), indices))
                continue
            lst = get_path(obj, prefix)
            if isinstance(lst, list):
                nxt.extend((prefix + (i,), indices + (i,)) for i in range(len(lst)))
        results = nxt
    out = []
    for spec, indices in results:
        it = iter(indices)
        meta = tuple(next(it, 0) if k == "*" else k for k in at.meta)
        out.append(PodSpecAt(spec, meta, at.container_keys, at.model_container, at.platform,
                             at.optional or bool(indices)))
    return out


def group_of(api_version: object) -> str:
    """`apps/v1` -> `apps`; `v1` -> `` (the core group)."""
    s = api_version if isinstance(api_version, str) else ""
    return s.rsplit("/", 1)[0] if "/" in s else ""


def registered(obj: dict, extra: dict | None = None) -> tuple[PodSpecAt, ...]:
    """Pod spec patterns registered for the object's (group, kind) in KINDS or `extra`
    (the config's extraKinds); () for other kinds."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return ()
    key = (group_of(obj.get("apiVersion")), kind)
    return (extra or {}).get(key) or KINDS.get(key, ())


def locations(obj: dict, extra: dict | None = None) -> list[PodSpecAt]:
    """Concrete pod spec locations of `obj` (patterns expanded); [] for other kinds."""
    return [c for at in registered(obj, extra) for c in expand(obj, at)]


def get_path(obj: object, path: tuple) -> object:
    """Follow mapping keys; None when any step is missing or not a mapping."""
    cur = obj
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur
