"""Whole-object checks and fixes, for kinds that are not (only) pod specs: a registry.

Pod specs go through the rules (krm_fn/rules); what sits outside them is checked here, one
module per family, imported the first time an item of its kinds is checked (a render
without such objects imports none of them; start-up: docs/performance.md):

- `kserve.py`: KServe's cluster configuration, fixed when it is in the input (and
  selected): ConfigMap `inferenceservice-config` (its JSON values' cpu and memory requests
  made equal to their limits) and `ClusterStorageContainer` (`serving.kserve.io`);
- `knative_config.py`: Knative Serving's ConfigMap `config-deployment` (in
  `knative-serving`, or without a namespace): the queue-proxy sizes;
- `passthrough.py`: kinds whose pods cannot be made Guaranteed from the manifest, passed
  through with a finding that says what to change and where: NVIDIA NIM Operator
  `NIMService`, production-stack `VLLMRuntime`, the legacy KFServing InferenceService, an
  Argo Rollouts `Rollout` with `spec.workloadRef`, KServe `LLMInferenceService` without
  `spec.template`, Seldon `Server` without `spec.podSpec`, a KServe `InferenceService`
  whose predictor has other than one implementation.

`CLUSTER` lists the cluster objects (recognised by kind, name and namespace: `cluster_tag`)
and `HANDLERS` the pass-through kinds (by API group and kind); each entry names its module
and function, `f(obj, ref, ctx)` with `ctx` an ObjectContext.
"""
from __future__ import annotations

from collections.abc import Callable

from krm_fn.admission.serving_mode import KNATIVE_NAMESPACE, KSERVE_CONFIG
from krm_fn.lazy import submodule
from collections import namedtuple
from krm_fn.results import Ref
from krm_fn.workloads import get_path, group_of


class ObjectContext:
    """What the object checks need: the loaded config, the node pools as PoolInfo, the
    input items, and `selected(obj)`: whether krm-fn tunes that item in this render."""

    __slots__ = ("cfg", "pools", "items", "selected")

    def __init__(self, cfg: object, pools: list, items: list, selected: Callable[[dict],
                 bool]) -> None:
        self.cfg = cfg
        self.pools = pools
        self.items = items
        self.selected = selected


class ClusterObject(namedtuple("ClusterObject", "tag key name namespaces module check")):
    """A cluster object krm-fn fixes when it is in the input: `tag` (what
    `cluster_tag` returns for it), `key` (API group, kind), `name` (its metadata.name;
    None: any), `namespaces` (those it may be in, None standing for no namespace; None:
    any), `module` under krm_fn/objects and its `check` function, `(obj, ref, ctx) ->
    (changes, findings)`."""

    __slots__ = ()


STORAGE_CONTAINER = "ClusterStorageContainer"
KNATIVE_CONFIG = "config-deployment"

# in the order they are recognised (the first match names an object)
CLUSTER = (
    ClusterObject(KNATIVE_CONFIG, ("", "ConfigMap"), KNATIVE_CONFIG, (KNATIVE_NAMESPACE, None),
                  "knative_config", "check"),
    ClusterObject(KSERVE_CONFIG, ("", "ConfigMap"), KSERVE_CONFIG, None, "kserve", "config"),
    ClusterObject(STORAGE_CONTAINER, ("serving.kserve.io", STORAGE_CONTAINER), None, None,
                  "kserve", "storage_container"),
)
_CLUSTER_BY_TAG = {c.tag: c for c in CLUSTER}
_CLUSTER_KEYS = frozenset(c.key for c in CLUSTER)
CLUSTER_KINDS = frozenset(kind for _, kind in _CLUSTER_KEYS)

# (API group, kind) -> the function of passthrough.py that checks it (findings only)
HANDLERS = {
    ("apps.nvidia.com", "NIMService"): "nim",
    ("production-stack.vllm.ai", "VLLMRuntime"): "vllm_runtime",
    ("serving.kubeflow.org", "InferenceService"): "legacy_kfserving",
    ("argoproj.io", "Rollout"): "rollout",
    ("serving.kserve.io", "LLMInferenceService"): "llmisvc",
    ("serving.kserve.io", "InferenceService"): "inference_service",
    ("mlops.seldon.io", "Server"): "seldon_server",
}


def _key(obj: dict) -> tuple[str, str]:
    return group_of(obj.get("apiVersion")), str(obj.get("kind") or "")


def cluster_tag(obj: dict) -> str | None:
    """The tag of the CLUSTER entry `obj` is (`config-deployment`,
    `inferenceservice-config` or `ClusterStorageContainer`), else None."""
    key = _key(obj)
    if key not in _CLUSTER_KEYS:
        return None
    for c in CLUSTER:
        if c.key != key:
            continue
        if c.name is not None and get_path(obj, ("metadata", "name")) != c.name:
            continue
        if c.namespaces is not None and get_path(obj, ("metadata", "namespace")) \
                not in c.namespaces:
            continue
        return c.tag
    return None


def kinds() -> set:
    """The kinds this registry checks (for spec.selector.kinds): the cluster objects' and
    every handler's."""
    return {kind for _, kind in _CLUSTER_KEYS} | {kind for _, kind in HANDLERS}


def handles(obj: dict) -> bool:
    """True when this registry checks `obj`."""
    return cluster_tag(obj) is not None or _key(obj) in HANDLERS


def check(obj: dict, ref: Ref, ctx: ObjectContext) -> tuple[list, list]:
    """(changes, findings) for one selected object: the Changes (krm_fn/changes.py) it
    makes, and its findings in order (Changes with a message and plain Results); ([], [])
    for an object no entry checks."""
    tag = cluster_tag(obj)
    if tag is not None:
        c = _CLUSTER_BY_TAG[tag]
        return getattr(submodule("krm_fn.objects", c.module), c.check)(obj, ref, ctx)
    name = HANDLERS.get(_key(obj))
    if name is None:
        return [], []
    return [], getattr(submodule("krm_fn.objects", "passthrough"), name)(obj, ref, ctx)
