"""platform-containers: containers a platform adds to the pod, which the manifest cannot size.

Injected containers never appear in the input, yet one with requests != limits makes the
whole pod Burstable and no container gets exclusive CPUs (Guaranteed needs requests ==
limits in every container: kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go;
https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/). krm-fn warns, naming what to
change and where.

- KServe's storage-initializer and agent, and the sidecars of service meshes, secret agents
  and the rest of krm_fn/admission/injectors, are judged by the verdict on each pod after
  admission (docs/verdict.md), sized from the cluster objects in the input or the
  injector's defaults; the annotations that size sidecars per pod are written by the
  `injector-annotations` rule.
- Seldon Core v2 Server: `spec.podSpec` is merged by container name over the ServerConfig,
  whose default containers `rclone`, `agent` and `mlserver` (or `triton`) set a cpu request
  and no cpu limit (k8s/helm-charts/seldon-core-v2-setup/templates/
  _components-statefulsets.tpl): each one the Server does not list by name is warned about,
  with the entry to add. The Server has no pod annotations field, so sidecar injectors
  cannot be sized either.
"""
from __future__ import annotations

from krm_fn.pod import PodView

ID = "platform-containers"
OPTIONS = ()

_SELDON_DEFAULTS = (("rclone",), ("agent",), ("mlserver", "triton"))


def _seldon(pod: PodView) -> None:
    names = {c.name for c in pod.containers}
    missing = [group for group in _SELDON_DEFAULTS if not names & set(group)]
    for group in missing:
        shown = " or ".join(repr(n) for n in group)
        pod.warn(pod.spec_path("containers"),
                 f"Seldon merges spec.podSpec over the ServerConfig by container name, and "
                 f"its default {shown} container sets a cpu request and no cpu limit, which "
                 f"keeps the pod Burstable: add an entry named {group[0]!r} to "
                 f"spec.podSpec.containers with resources requests == limits for cpu and "
                 f"memory" + (f" (the ServerConfig's own name, {' or '.join(group)}, per "
                              f"spec.serverConfig)" if len(group) > 1 else ""))


def apply(pod: PodView, ctx) -> None:
    """Warn about platform containers that keep the pod Burstable."""
    if pod.at.platform == "seldon":
        _seldon(pod)
