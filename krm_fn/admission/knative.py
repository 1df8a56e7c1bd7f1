"""Knative Serving's webhook: which pod spec fields its feature flags let through.

Knative validates the pod template of every Service, Configuration and Revision (and so of
every KServe InferenceService in Serverless mode, whose controller creates a Knative
Service) against a field mask: a field outside it is refused with "must not set the
field(s)". The optional fields are gated by flags in ConfigMap `config-features` of
Knative's namespace (`knative-serving`), each `enabled`, `disabled` or `allowed`
(case-insensitive; any other value keeps the default). `allowed` lets the field through the
mask like `enabled`, except for init containers, which need `enabled`.

| flag (ConfigMap key) | pod spec field | default |
|---|---|---|
| `kubernetes.podspec-nodeselector` | `nodeSelector` | disabled |
| `kubernetes.podspec-affinity` | `affinity` | disabled |
| `kubernetes.podspec-tolerations` | `tolerations` | disabled |
| `kubernetes.podspec-init-containers` | `initContainers` (must be `enabled`) | disabled |
| `kubernetes.podspec-securitycontext` | `securityContext` (also let through from knative-v1.9.0 when `secure-pod-defaults` is not disabled) | disabled |
| `kubernetes.podspec-volumes-emptydir` | `volumes[].emptyDir` | enabled from knative-v1.8.0 (#13405), disabled before |
| `kubernetes.podspec-persistent-volume-claim` | `volumes[].persistentVolumeClaim` | disabled (flag from knative-v1.2.0) |
| `kubernetes.podspec-fieldref` | a container's `env[].valueFrom.fieldRef` and `.resourceFieldRef` (the downward API; `EnvVarSourceMask`) | disabled |
| others in FLAGS below | runtimeClassName, priorityClassName, schedulerName, hostAliases, topologySpreadConstraints, dnsPolicy, dnsConfig, shareProcessNamespace, hostIPC, hostPID, hostNetwork, hostPath / csi / ephemeral / image volumes | disabled |

A field whose flag a release does not have yet is refused by that release whatever the
ConfigMap says. Never in the mask, in any release: pod-level `resources` (KEP-2837) and a
container's `restartPolicy` (native sidecar init containers).

The flags are read from `config-features` when it is in the input, else from the
`spec.config.features` of a Knative Operator `KnativeServing` in the input (the operator
writes them into the ConfigMap), else the defaults of the Knative release (the newest known
when the release is unknown).

Sources (knative/serving, at each release tag): `pkg/apis/config/features.go`
(`defaultFeaturesConfig`, `NewFeaturesConfigFromMap`, `asFlag`),
`pkg/apis/serving/fieldmask.go` (`PodSpecMask`, `VolumeSourceMask`, `ContainerMask`),
`pkg/apis/serving/k8s_validation.go` (`ValidatePodSpec`, `validateInitContainers`),
`config/core/configmaps/features.yaml`; https://knative.dev/docs/serving/configuration/feature-flags/
"""
from __future__ import annotations

import re

from krm_fn.admission.model import ERROR, SIDECAR, AdmittedPod, Finding
from krm_fn.admission.serving_mode import KNATIVE_NAMESPACE as NAMESPACE

CONFIG_NAME = "config-features"
ENABLED, DISABLED, ALLOWED = "Enabled", "Disabled", "Allowed"

NODE_SELECTOR = "kubernetes.podspec-nodeselector"
AFFINITY = "kubernetes.podspec-affinity"
TOLERATIONS = "kubernetes.podspec-tolerations"
INIT_CONTAINERS = "kubernetes.podspec-init-containers"
SECURITY_CONTEXT = "kubernetes.podspec-securitycontext"
EMPTY_DIR = "kubernetes.podspec-volumes-emptydir"
FIELD_REF = "kubernetes.podspec-fieldref"
ENV_FIELD = "env.valueFrom"     # FLAGS' marker for the containers' env valueFrom refs
# not a field gate of its own: from knative-v1.9.0, when it is not disabled, PodSpecMask lets
# securityContext through too (values also AllowRootBounded from knative-v1.20.0)
SECURE_POD_DEFAULTS = "secure-pod-defaults"

# flag -> (pod spec field, or "volumes.<source>", first release (minor of knative-v1.x)
# that has the flag). Before its first release the field is outside the mask.
FLAGS = {
    AFFINITY: ("affinity", 0),
    NODE_SELECTOR: ("nodeSelector", 0),
    TOLERATIONS: ("tolerations", 0),
    INIT_CONTAINERS: ("initContainers", 0),
    SECURITY_CONTEXT: ("securityContext", 0),
    "kubernetes.podspec-hostaliases": ("hostAliases", 0),
    "kubernetes.podspec-runtimeclassname": ("runtimeClassName", 0),
    "kubernetes.podspec-priorityclassname": ("priorityClassName", 0),
    "kubernetes.podspec-schedulername": ("schedulerName", 0),
    "kubernetes.podspec-topologyspreadconstraints": ("topologySpreadConstraints", 4),
    "kubernetes.podspec-dnspolicy": ("dnsPolicy", 5),
    "kubernetes.podspec-dnsconfig": ("dnsConfig", 5),
    "kubernetes.podspec-shareprocessnamespace": ("shareProcessNamespace", 12),
    "kubernetes.podspec-hostipc": ("hostIPC", 16),
    "kubernetes.podspec-hostpid": ("hostPID", 16),
    "kubernetes.podspec-hostnetwork": ("hostNetwork", 16),
    FIELD_REF: (ENV_FIELD, 0),
    EMPTY_DIR: ("volumes.emptyDir", 0),
    "kubernetes.podspec-persistent-volume-claim": ("volumes.persistentVolumeClaim", 2),
    "kubernetes.podspec-volumes-hostpath": ("volumes.hostPath", 17),
    "kubernetes.podspec-volumes-csi": ("volumes.csi", 18),
    "kubernetes.podspec-volumes-image": ("volumes.image", 19),
    "kubernetes.podspec-volumes-ephemeral": ("volumes.ephemeral", 23),
}
LATEST = (1, 23)          # the newest release whose defaults are tabled here (knative-v1.23.0)
_EMPTY_DIR_DEFAULT_ON = (1, 8)   # knative/serving#13405

_SOURCE = ("knative/serving pkg/apis/serving/fieldmask.go (PodSpecMask) and "
           "pkg/apis/config/features.go")


class Features(dict):
    """Knative's feature flags as the webhook will use them: {flag key: ENABLED, DISABLED
    or ALLOWED} for every key of FLAGS and `secure-pod-defaults` (which may also be
    AllowRootBounded). `source`: where they come from, for messages
    ("ConfigMap knative-serving/config-features in the input", "KnativeServing
    knative-serving/knative-serving in the input", "the defaults of knative-v1.23");
    `version`: (1, minor) of the Knative release when known, else None; `in_input`: the
    flags were read from an object of the input."""

    source: str = ""
    version: tuple | None = None
    in_input: bool = False

    def allows(self, key: str) -> bool:
        """The webhook's mask lets the field of flag `key` through: the flag is not
        disabled and the release has it (fieldmask.go: `!= config.Disabled`)."""
        first = FLAGS[key][1]
        if self.version is not None and self.version < (1, first):
            return False
        if key == SECURITY_CONTEXT and self.get(SECURE_POD_DEFAULTS, DISABLED) != DISABLED \
                and (self.version is None or self.version >= (1, 9)):
            return True
        return self.get(key, DISABLED) != DISABLED


def defaults(version: tuple | None = None) -> Features:
    """The flags' defaults of Knative release `version` ((1, minor); None: the newest known,
    LATEST): every flag disabled except `kubernetes.podspec-volumes-emptydir`, enabled from
    knative-v1.8.0 (features.go `defaultFeaturesConfig`)."""
    f = Features({key: DISABLED for key in (*FLAGS, SECURE_POD_DEFAULTS)})
    v = version or LATEST
    if v >= _EMPTY_DIR_DEFAULT_ON:
        f[EMPTY_DIR] = ENABLED
    f.version = version
    f.source = f"the defaults of knative-v{v[0]}.{v[1]}"
    return f


def _flag(raw: object, extra: tuple = ()) -> str | None:
    """features.go `asFlag`: Enabled, Allowed or Disabled (and `extra`), case-insensitive;
    else None."""
    text = str(raw).strip() if raw is not None else ""
    for flag in (ENABLED, ALLOWED, DISABLED, *extra):
        if text.lower() == flag.lower():
            return flag
    return None


def release(labels: object) -> tuple | None:
    """(1, minor) of a Knative ConfigMap's release labels (`_version`), else None."""
    return _version(labels)


def _version(labels: object) -> tuple | None:
    """(1, minor) from the release labels Knative puts on its ConfigMaps
    (`app.kubernetes.io/version: "1.15.2"`, older `serving.knative.dev/release:
    "v0.26.0"`), else None."""
    if not isinstance(labels, dict):
        return None
    for key in ("app.kubernetes.io/version", "serving.knative.dev/release"):
        m = re.match(r"v?(\d+)\.(\d+)", str(labels.get(key) or ""))
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def _is_config(obj: dict) -> bool:
    """Knative Serving's `config-features` ConfigMap (not Knative Eventing's namesake): in
    namespace knative-serving, labelled as knative-serving, or without a namespace and with
    a `kubernetes.podspec-*` key."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if obj.get("kind") != "ConfigMap" or meta.get("name") != CONFIG_NAME:
        return False
    if str(obj.get("apiVersion") or "") != "v1":
        return False
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    ns = meta.get("namespace")
    if ns == NAMESPACE or labels.get("app.kubernetes.io/name") == "knative-serving":
        return True
    data = obj.get("data")
    return not ns and isinstance(data, dict) and any(
        str(k).startswith("kubernetes.podspec-") for k in data)


def _operator_features(obj: dict) -> dict | None:
    """`spec.config.features` (or `config-features`) of a Knative Operator KnativeServing,
    else None."""
    if obj.get("kind") != "KnativeServing" or not str(
            obj.get("apiVersion") or "").startswith("operator.knative.dev/"):
        return None
    spec = obj.get("spec")
    config = spec.get("config") if isinstance(spec, dict) else None
    if not isinstance(config, dict):
        return None
    for key in ("features", CONFIG_NAME):
        if isinstance(config.get(key), dict):
            return config[key]
    return None


def features(objects, version: tuple | None = None) -> Features:
    """The Knative feature flags for the pods of this input (`objects`: the input items,
    local-config ones included). From Knative Serving's ConfigMap `config-features` when it
    is among them (its release label gives the version), else from a `KnativeServing`'s
    `spec.config.features`, else `defaults(version)`. Keys absent from the data, and values
    other than enabled/disabled/allowed, keep the release's default (features.go
    `NewFeaturesConfigFromMap`)."""
    found = None
    for obj in objects or ():
        if not isinstance(obj, dict):
            continue
        if _is_config(obj):
            found = (obj.get("data"), obj)
            break
        if found is None and _operator_features(obj) is not None:
            found = (_operator_features(obj), obj)
    if found is None:
        return defaults(version)
    data, obj = found
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    v = _version(meta.get("labels")) or version
    f = defaults(v)
    for key in (*FLAGS, SECURE_POD_DEFAULTS):
        extra = ("AllowRootBounded",) if key == SECURE_POD_DEFAULTS else ()
        flag = _flag(data.get(key), extra) if isinstance(data, dict) else None
        if flag is not None:
            f[key] = flag
    ns = meta.get("namespace")
    f.source = f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')} in the input"
    f.in_input = True
    return f


def fix(key: str, feats: Features) -> str:
    """Where to enable flag `key`: the ConfigMap key and value."""
    where = (f"(read from {feats.source})" if feats.in_input else
             f"(not in the input, so krm-fn assumes {feats.source}; add the ConfigMap to "
             f"the input, marked config.kubernetes.io/local-config: \"true\" if this render "
             f"must not apply it, so krm-fn reads it)")
    first = FLAGS[key][1]
    newer = f" (Knative knative-v1.{first}.0 or newer)" if first else ""
    return (f"set {key}: \"enabled\" in ConfigMap {NAMESPACE}/{CONFIG_NAME}{newer} "
            f"{where}")


def spec_refusals(spec: dict, feats: Features) -> list[tuple[str, str | None, str]]:
    """What the webhook refuses in plain pod spec `spec`: [(field path relative to the pod
    spec, flag key or None when no flag allows it, message)], in field order."""
    if not isinstance(spec, dict):
        return []
    out = []
    for key, (fld, _first) in FLAGS.items():
        if fld.startswith("volumes.") or fld == ENV_FIELD or feats.allows(key):
            continue
        if key == INIT_CONTAINERS:
            continue
        if spec.get(fld) not in (None, {}, [], "", False, "false", "False", "FALSE"):
            out.append((fld, key, f"Knative's webhook refuses {fld} (\"must not set the "
                                  f"field(s)\"): {fix(key, feats)}"))
    inits = spec.get("initContainers")
    if isinstance(inits, list) and inits and feats.get(INIT_CONTAINERS) != ENABLED:
        out.append(("initContainers", INIT_CONTAINERS,
                    f"Knative's webhook refuses initContainers (\"pod spec support for "
                    f"init-containers is off\"): {fix(INIT_CONTAINERS, feats)}"))
    out += _volume_refusals(spec, feats) + _env_refusals(spec, feats)
    if spec.get("resources") not in (None, {}):
        out.append(("resources", None, "Knative's webhook refuses pod-level resources "
                                       "(\"must not set the field(s)\"; no feature flag "
                                       "allows them): remove the pod spec's resources and "
                                       "size the containers"))
    for i, c in enumerate(inits if isinstance(inits, list) else ()):
        if isinstance(c, dict) and c.get("restartPolicy") is not None:
            out.append((f"initContainers[{i}].restartPolicy", None,
                        "Knative's webhook refuses an init container's restartPolicy (native "
                        "sidecars; no feature flag allows it): run the sidecar as a "
                        "container of spec containers"))
    return out


def _env_refusals(spec: dict, feats: Features) -> list:
    """A container env entry whose valueFrom is a fieldRef or resourceFieldRef while
    `kubernetes.podspec-fieldref` is disabled (fieldmask.go EnvVarSourceMask)."""
    if feats.allows(FIELD_REF):
        return []
    out = []
    for key in ("initContainers", "containers"):
        lst = spec.get(key)
        for i, c in enumerate(lst if isinstance(lst, list) else ()):
            env = c.get("env") if isinstance(c, dict) else None
            for k, e in enumerate(env if isinstance(env, list) else ()):
                src = e.get("valueFrom") if isinstance(e, dict) else None
                for ref in ("fieldRef", "resourceFieldRef"):
                    if isinstance(src, dict) and src.get(ref) is not None:
                        out.append((f"{key}[{i}].env[{k}].valueFrom.{ref}", FIELD_REF,
                                    f"Knative's webhook refuses {ref} in env valueFrom "
                                    f"(\"must not set the field(s)\"): "
                                    f"{fix(FIELD_REF, feats)}"))
    return out


def _volume_refusals(spec: dict, feats: Features) -> list:
    out = []
    volumes = spec.get("volumes")
    for i, vol in enumerate(volumes if isinstance(volumes, list) else ()):
        if not isinstance(vol, dict):
            continue
        for key, (fld, _first) in FLAGS.items():
            source = fld.partition("volumes.")[2]
            if source and source in vol and not feats.allows(key):
                out.append((f"volumes[{i}].{source}", key,
                            f"Knative's webhook refuses {source} volumes (\"must not set "
                            f"the field(s)\"): {fix(key, feats)}"))
    return out


def refused(pod: AdmittedPod, feats: Features, spec: dict | None = None) -> tuple:
    """Findings (ERROR, rule `webhook`) for what Knative's webhook refuses in a Knative
    pod (call it only for a pod of a Knative Service/Configuration/Revision or a Serverless
    InferenceService: `serving_mode.serverless(view)[0]` is True): nodeSelector, affinity,
    tolerations and manifest init containers from the model, and when `spec` (the plain pod spec
    after krm-fn's edits) is given every other field of FLAGS, pod-level resources and
    native sidecars. Each message names the flag and value to set and where, and cites
    the Knative source."""
    if spec is None:
        spec = {"nodeSelector": pod.node_selector, "affinity": pod.affinity,
                "tolerations": list(pod.tolerations)}
        inits = [c for c in pod.containers
                 if c.source == "manifest" and c.role != "app"]
        if inits:
            spec["initContainers"] = [
                {"name": c.name, **({"restartPolicy": "Always"} if c.role == SIDECAR
                                    else {})} for c in inits]
        if pod.pod_requests is not None or pod.pod_limits is not None:
            spec["resources"] = {"requests": pod.pod_requests, "limits": pod.pod_limits}
    return tuple(Finding(ERROR, f"{msg} ({_SOURCE})", "webhook",
                         f"{pod.path}.{fld}" if pod.path else fld)
                 for fld, _key, msg in spec_refusals(spec, feats))
