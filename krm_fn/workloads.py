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
    """Where one pod spec lives in an object. Paths are tuples of mapping keys."""

    spec: tuple
    meta: tuple
    container_keys: tuple = ()
    model_container: str | None = None   # name of the default container to pin, if known
    platform: str | None = None          # "kserve": KServe injects containers at admission


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


def group_of(api_version: object) -> str:
    """`apps/v1` -> `apps`; `v1` -> `` (the core group)."""
    s = api_version if isinstance(api_version, str) else ""
    return s.rsplit("/", 1)[0] if "/" in s else ""


def locations(obj: dict) -> tuple[PodSpecAt, ...]:
    """Pod spec locations registered for the object's (group, kind); () for other kinds."""
    kind = obj.get("kind")
    return KINDS.get((group_of(obj.get("apiVersion")), kind), ()) if isinstance(kind, str) else ()


def get_path(obj: object, path: tuple) -> object:
    """Follow mapping keys; None when any step is missing or not a mapping."""
    cur = obj
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur
