"""injected: containers a platform adds to the pod, which the manifest cannot size.

Injected containers never appear in the input, yet one with requests != limits makes the
whole pod Burstable and no container gets exclusive CPUs (Guaranteed needs requests ==
limits in every container: kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go;
https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/). krm-fn warns, naming what to
change and where.

- KServe (InferenceService components, ServingRuntimes): a component with a `storageUri`
  (on the framework/model container) or a `STORAGE_URI` env var gets a
  `storage-initializer` init container whose resources come only from the cluster:
  ConfigMap `inferenceservice-config` (KServe's namespace, key `storageInitializer`) and
  the ClusterStorageContainer merged on top (`spec.container.resources`), default 100m/1
  cpu and 100Mi/1Gi memory (kserve/kserve pkg/webhook/admission/pod/
  storage_initializer_injector.go, config/configmap/inferenceservice.yaml). KServe skips
  the injection when the pod already has an init container named `storage-initializer`
  (which must then be a complete container).
- KServe: a component with `logger` or `batcher` gets the `agent` container
  (pkg/webhook/admission/pod/agent_injector.go), sized from the `agent` key of the same
  ConfigMap (default requests 100m/100Mi, limits 1/1Gi); the `logger` and `batcher` keys
  carry the same four values (older releases sized the batcher from its own key).
- When those cluster objects are in the input (and selected), krm-fn makes them
  request == limit in the same render (objects.py): the warning becomes an info naming
  them; a ConfigMap without the ClusterStorageContainer still warns about the latter.
- Seldon Core v2 Server: `spec.podSpec` is merged by container name over the ServerConfig,
  whose default containers `rclone`, `agent` and `mlserver` (or `triton`) set a cpu request
  and no cpu limit (k8s/helm-charts/seldon-core-v2-setup/templates/
  _components-statefulsets.tpl): each one the Server does not list by name is warned about,
  with the entry to add. The Server has no pod annotations field, so sidecar injectors
  cannot be sized either.
"""
from __future__ import annotations

from krm_fn.pod import PodView, path_str
from krm_fn.results import INFO, Result

ID = "injected"
OPTIONS = ()

KSERVE_CONFIG = "inferenceservice-config"
STORAGE_CONTAINER = "ClusterStorageContainer"
_SELDON_DEFAULTS = (("rclone",), ("agent",), ("mlserver", "triton"))


def _uses_storage_uri(pod: PodView) -> bool:
    for c in pod.containers:
        if c.path[-1] in pod.at.container_keys and c.data.get("storageUri"):
            return True
        for e in c.data.get("env") or []:
            if isinstance(e, dict) and e.get("name") == "STORAGE_URI":
                return True
    if pod.spec.get("storageUri") or pod.spec.get("storageUris"):
        return True         # transformer storageUris, explainer storageUri
    return False


def _info(pod: PodView, path: tuple, message: str) -> None:
    pod.results.append(Result(message, INFO, pod.ref, path_str(path)))


def _storage_initializer(pod: PodView, cluster: frozenset) -> None:
    if not _uses_storage_uri(pod):
        return
    if any(c.role != "app" and c.name == "storage-initializer" for c in pod.containers):
        return
    head = ("KServe injects a storage-initializer init container for the storageUri, sized "
            "from the cluster (default requests 100m cpu/100Mi memory, limits 1 cpu/1Gi)")
    if KSERVE_CONFIG in cluster and STORAGE_CONTAINER in cluster:
        _info(pod, pod.spec_path(), f"{head}: ConfigMap {KSERVE_CONFIG} (key "
                                    f"storageInitializer) and the ClusterStorageContainer(s) "
                                    f"in this input are made request == limit; make sure the "
                                    f"ClusterStorageContainer that serves this URI is one of "
                                    f"them")
        return
    missing = []
    if KSERVE_CONFIG not in cluster:
        missing.append(f"storageInitializer (cpuRequest == cpuLimit, memoryRequest == "
                       f"memoryLimit) in ConfigMap kserve/{KSERVE_CONFIG}")
    if STORAGE_CONTAINER not in cluster:
        missing.append("spec.container.resources in the ClusterStorageContainer that serves "
                       "this URI, which is merged on top")
    pod.warn(pod.spec_path(),
             f"{head}, which makes the pod Burstable so no container gets exclusive CPUs: "
             f"set equal requests and limits under " + " and ".join(missing)
             + "; or add those objects to the input and krm-fn fixes them")


def _agent(pod: PodView, cluster: frozenset) -> None:
    keys = [k for k in ("logger", "batcher") if pod.spec.get(k) is not None]
    if not keys:
        return
    path = pod.spec_path(keys[0])
    head = (f"KServe injects an agent container for {' and '.join(keys)}, sized from the "
            f"agent key of ConfigMap {KSERVE_CONFIG} (default requests 100m cpu/100Mi "
            f"memory, limits 1 cpu/1Gi)")
    if KSERVE_CONFIG in cluster:
        _info(pod, path, f"{head}: the ConfigMap in this input is made request == limit "
                         f"(keys agent, logger, batcher)")
        return
    pod.warn(path, f"{head}, which makes the pod Burstable so no container gets exclusive "
                   f"CPUs; the {' and '.join(keys)} block has no resources field: set "
                   f"cpuRequest == cpuLimit and memoryRequest == memoryLimit under the agent, "
                   f"logger and batcher keys of ConfigMap kserve/{KSERVE_CONFIG}; or add it "
                   f"to the input and krm-fn fixes it")


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
    cluster = ctx.cluster
    if pod.at.platform == "kserve":
        _storage_initializer(pod, cluster)
        _agent(pod, cluster)
    elif pod.at.platform == "seldon":
        _seldon(pod)
