"""KubeRay: the containers the KubeRay operator adds to the pods of a Ray cluster.

**When it fires** (ray-project/kuberay ray-operator/controllers/ray/common/pod.go
`DefaultHeadPodTemplate`, `DefaultWorkerPodTemplate`): for every RayCluster (also the
cluster of a RayService `spec.rayClusterConfig` and of a RayJob `spec.rayClusterSpec`):

- the head pod gets the Ray autoscaler sidecar when the cluster spec sets
  `enableInTreeAutoscaling: true` (utils.go `IsAutoscalingEnabled`);
- every worker pod gets the init container `wait-gcs-ready`, unless the operator runs with
  `ENABLE_INIT_CONTAINER_INJECTION=false` (not visible in the manifests: krm-fn assumes the
  default, on).

Not modelled: the `wait-for-tls-ip-san` init container of clusters with TLS (50m / 64Mi,
request == limit) and the history-server collector of the alpha `RayClusterHistoryServer`
feature.

**What it adds.** Head: the app container `autoscaler`. Worker: the init container
`wait-gcs-ready`.

**Resources.** `autoscaler`: requests and limits cpu 500m, memory 512Mi
(`BuildAutoscalerContainer`), replaced as a whole by the cluster spec's
`autoscalerOptions.resources` when it is set (`mergeAutoscalerOverrides`), which makes the
head pod Burstable unless its requests equal its limits for cpu and memory.
`wait-gcs-ready`: requests and limits cpu 200m, memory 256Mi, fixed (request == limit).
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import base
from krm_fn.numbers import yaml11_bool
from krm_fn.workloads import get_path

ID = "kuberay"
TITLE = "KubeRay autoscaler"
AUTOSCALER, WAIT = "autoscaler", "wait-gcs-ready"
AUTOSCALER_DEFAULT = {"cpu": "500m", "memory": "512Mi"}
WAIT_DEFAULT = {"cpu": "200m", "memory": "256Mi"}


def _autoscaling(meta: base.Meta) -> bool:
    return yaml11_bool(meta.ray_cluster.get("enableInTreeAutoscaling")) is True


def trigger(meta: base.Meta):
    """(True, why) for a Ray head pod with in-tree autoscaling and for every Ray worker
    pod, else (None, None)."""
    if meta.ray_group == "head" and _autoscaling(meta):
        return True, f"{meta.ray_cluster_path}.enableInTreeAutoscaling is true"
    if meta.ray_group == "worker":
        return True, "KubeRay adds wait-gcs-ready to every worker pod"
    return None, None


def _options_resources(meta: base.Meta) -> dict | None:
    res = get_path(meta.ray_cluster, ("autoscalerOptions", "resources"))
    return res if isinstance(res, dict) else None


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """`autoscaler` (APP) for the head, `wait-gcs-ready` (INIT) for a worker."""
    if meta.ray_group == "worker":
        return (base.container(WAIT, model.INIT, ID, WAIT_DEFAULT, WAIT_DEFAULT),)
    res = _options_resources(meta)
    if res is None:
        req = lim = AUTOSCALER_DEFAULT
    else:
        req = res.get("requests") if isinstance(res.get("requests"), dict) else {}
        lim = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    return (base.container(AUTOSCALER, model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so the autoscaler gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    return (f"set {meta.ray_cluster_path}.autoscalerOptions.resources with requests == "
            f"limits for cpu and memory (it replaces KubeRay's default 500m / 512Mi as a "
            f"whole), or remove it")
