"""Which pods become a Knative revision's pods, and so meet Knative Serving's webhook
(krm_fn/admission/knative.py: what it refuses, by feature flag).

A pod of a Knative Service, Configuration or Revision does; a KServe InferenceService's pod
does in KServe's Knative (Serverless) deployment mode, and not in Standard (RawDeployment)
or ModelMesh mode. KServe picks the mode from the InferenceService's annotation
`serving.kserve.io/deploymentMode`, else `defaultDeploymentMode` in key `deploy` of its
ConfigMap `inferenceservice-config`, else Knative, its install's default: kserve/kserve
pkg/constants/constants.go, pkg/controller/v1beta1/inferenceservice/utils/utils.go
(GetDeploymentMode), config/configmap/inferenceservice.yaml.

A module of its own so that a render with no Knative or KServe pod asks these questions
without importing the webhook's field mask and flag tables (start-up: docs/performance.md).
"""
from __future__ import annotations

KSERVE_MODE = "serving.kserve.io/deploymentMode"
# KServe deploymentMode values without a Knative revision (kserve pkg/constants/constants.go:
# RawDeployment is the deprecated spelling of Standard; ModelMesh pods come from the
# ModelMesh controller).
KSERVE_NOT_KNATIVE = ("RawDeployment", "Standard", "ModelMesh")
# `Standard` is spelled so from KServe v0.16.0 (v0.16.0-rc0); v0.15.x and older know only
# `RawDeployment` (pkg/constants/constants.go at those tags)
KSERVE_STANDARD_SINCE = "0.16"
KSERVE_RAW_MODES = (f"annotation {KSERVE_MODE}: RawDeployment (KServe before "
                    f"{KSERVE_STANDARD_SINCE}) or Standard ({KSERVE_STANDARD_SINCE} and "
                    f"later)")
KSERVE_MODES_SOURCE = "kserve/kserve pkg/constants/constants.go"
# the Knative mode's spellings (Serverless is the deprecated one of KServe v0.16+)
KSERVE_KNATIVE = ("Serverless", "Knative")
KSERVE_CONFIG = "inferenceservice-config"
# the namespace of Knative Serving and of its ConfigMaps (config-features, config-deployment)
KNATIVE_NAMESPACE = "knative-serving"


def is_isvc(pod) -> bool:
    """A KServe InferenceService component (predictor, transformer, explainer, canary) of
    PodView `pod`: its pods get the ISVC's own metadata too. A ServingRuntime's own
    metadata does not reach pods, and the runtime serves either deployment mode."""
    return pod.at.platform == "kserve" and pod.ref.kind == "InferenceService"


def serverless(pod, default_mode: str | None = None) -> tuple[bool | None, str | None]:
    """Whether PodView `pod` becomes a Knative revision's pod (`serverless_mode` on its
    platform, kind and the workload's own annotations); `default_mode`: KServe's
    `defaultDeploymentMode` when its ConfigMap is in the input (kserve_default_mode)."""
    meta = pod.edits.root.get("metadata") if isinstance(pod.edits.root, dict) else None
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return serverless_mode(pod.at.platform, pod.ref.kind, ann if isinstance(ann, dict)
                           else {}, default_mode)


def kserve_default_mode(configmaps: dict) -> str | None:
    """`defaultDeploymentMode` of key `deploy` (JSON) of KServe's ConfigMap
    `inferenceservice-config` among `configmaps` ({(namespace, name): ConfigMap}), else
    None (not in the input, or the key does not say)."""
    for (_space, name), cm in configmaps.items():
        if name != KSERVE_CONFIG or not isinstance(cm, dict):
            continue
        import json     # only for KServe's ConfigMap (start-up: a plain render has none)
        data = cm.get("data") if isinstance(cm.get("data"), dict) else {}
        try:
            deploy = json.loads(data.get("deploy") or "{}")
        except (TypeError, ValueError):
            return None
        mode = deploy.get("defaultDeploymentMode") if isinstance(deploy, dict) else None
        return str(mode) if mode else None
    return None


def serverless_mode(platform: str | None, kind: str, annotations: dict,
                    default_mode: str | None = None) -> tuple[bool | None, str | None]:
    """Whether a pod of a workload on `platform` (krm_fn.workloads) of `kind`, whose own
    metadata carries `annotations`, becomes a Knative revision's pod: (True, why) for a
    Knative Service/Configuration/Revision and for a KServe InferenceService in Knative
    mode; (False, why) for a KServe InferenceService in Standard (RawDeployment) or
    ModelMesh mode; (None, None) for every other pod.

    KServe's mode (kserve pkg/controller/v1beta1/inferenceservice/utils/utils.go
    GetDeploymentMode): the annotation `serving.kserve.io/deploymentMode` when it is one of
    Standard, RawDeployment, Knative, Serverless or ModelMesh; otherwise (absent or another
    value) `defaultDeploymentMode` of ConfigMap inferenceservice-config (`default_mode`,
    when it is in the input); otherwise Knative (Serverless) is assumed, the default of
    KServe's install (config/configmap/inferenceservice.yaml)."""
    if platform == "knative":
        return True, "every Knative revision runs a queue-proxy"
    if not (platform == "kserve" and kind == "InferenceService"):
        return None, None
    mode = annotations.get(KSERVE_MODE)
    mode = None if mode is None else str(mode)
    if mode in KSERVE_NOT_KNATIVE:
        return False, f"annotation {KSERVE_MODE}={mode}"
    if mode in KSERVE_KNATIVE:
        return True, f"KServe annotation {KSERVE_MODE}={mode}"
    said = (f"no {KSERVE_MODE} annotation" if mode is None
            else f"{KSERVE_MODE}={mode} is not a mode KServe knows")
    if default_mode is not None:
        where = (f"defaultDeploymentMode {default_mode} in ConfigMap {KSERVE_CONFIG} in "
                 f"the input")
        if default_mode in KSERVE_NOT_KNATIVE:
            return False, f"KServe: {said}, and {where}"
        return True, f"KServe: {said}, so {where} applies"
    return True, f"KServe: {said}, so Serverless is assumed"
