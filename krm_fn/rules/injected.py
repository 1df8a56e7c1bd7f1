"""injected: containers a platform adds at admission, which the manifest cannot size.

Injected containers never appear in the input, yet one with requests != limits makes the
whole pod Burstable and no container gets exclusive CPUs (workloads.md §1, §3).

- KServe: a predictor with a `storageUri` (on the framework/model container) or a
  `STORAGE_URI` env var gets a `storage-initializer` init container whose resources come
  only from the cluster: ConfigMap `inferenceservice-config` (namespace kserve, key
  `storageInitializer`) and the ClusterStorageContainer, default 100m/1 cpu and
  100Mi/1Gi memory (kserve/kserve pkg/webhook/admission/pod/storage_initializer_injector.go,
  config/configmap/inferenceservice.yaml). krm-fn warns, naming what to change; KServe
  skips the injection when the pod already has an init container named
  `storage-initializer`.
"""
from __future__ import annotations

from krm_fn.pod import PodView


def _uses_storage_uri(pod: PodView) -> bool:
    for c in pod.containers:
        if c.path[-1] in pod.at.container_keys and c.data.get("storageUri"):
            return True
        for e in c.data.get("env") or []:
            if isinstance(e, dict) and e.get("name") == "STORAGE_URI":
                return True
    return False


def apply(pod: PodView, ctx) -> None:
    """Warn about admission-time containers that keep the pod Burstable."""
    if pod.at.platform != "kserve" or not _uses_storage_uri(pod):
        return
    if any(c.role != "app" and c.name == "storage-initializer" for c in pod.containers):
        return
    pod.warn(pod.spec_path(),
             "KServe injects a storage-initializer init container for the storageUri, sized "
             "from the cluster (default requests 100m cpu/100Mi memory, limits 1 cpu/1Gi), "
             "which makes the pod Burstable so no container gets exclusive CPUs: set equal "
             "requests and limits under storageInitializer.resources in ConfigMap "
             "kserve/inferenceservice-config and in the ClusterStorageContainer "
             "spec.container.resources")
