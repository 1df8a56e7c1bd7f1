"""placement: the node pool's nodeSelector is added to the pod spec.

Pinned pods must land on nodes whose kubelet runs the static CPU Manager; the pool's
`nodeSelector` (default `krm-fn.dev/cpu-pinning: "true"`) is merged into the pod spec's
`nodeSelector`. A key the pod already sets to another value is an error, never an
overwrite: the workload was meant for other nodes. A key the pod already sets to the pool's
value as an unquoted scalar a YAML reader types (`true`, `yes`, `1`) is written quoted: the
API server refuses a nodeSelector value that is not a string. (A required node affinity none of whose
terms can match the pool's labels is found by the verdict: the pod would never schedule.)

A workload is placed in the pool named by its `krm-fn.dev/node-pool` annotation (on the
workload or its pod template), else the first pool whose whole nodeSelector the pod already
carries, else the first pool.

Knative pods (Knative Service, Configuration, Revision; a KServe InferenceService in
Serverless mode, which becomes a Knative Service: its `serving.kserve.io/deploymentMode`
is not RawDeployment, Standard or ModelMesh, absent counts as Serverless): Knative's webhook
refuses `nodeSelector` and `affinity` unless its feature flags allow them, and both are
disabled by default in every release (ConfigMap `knative-serving/config-features`, keys
`kubernetes.podspec-nodeselector` and `kubernetes.podspec-affinity`: knative/serving
pkg/apis/config/features.go, pkg/apis/serving/fieldmask.go `PodSpecMask`). krm-fn reads the
flags from that ConfigMap when it is in the input (local-config or not), or from a Knative
Operator `KnativeServing`'s `spec.config.features`, and then:

- `kubernetes.podspec-nodeselector` enabled (or allowed): the nodeSelector is added as for
  any pod;
- else `kubernetes.podspec-affinity` enabled (or allowed): the pool's labels are added as
  `In` expressions to every term of the required node affinity (one new term when there
  is none), which reaches the same nodes;
- else nothing is written, and an error names the flag to enable and where. Nothing needs
  writing when the required node affinity already requires the pool's labels.

A nodeSelector or affinity the Knative pod already has, while its flag is off, is an error
of the verdict: Knative refuses the Service as written. krm-fn never turns a flag on itself, not even
in a `config-features` it is given and selects: the flags are the Knative installation's
policy for every Service of the cluster (which may choose its nodes once they are on), a
decision for whoever runs Knative, not a side effect of pinning one workload.
"""
from __future__ import annotations

from krm_fn.admission import scheduling, serving_mode
from krm_fn.pod import PodView

ID = "placement"
OPTIONS = ("nodePools.nodeSelector",)


def apply(pod: PodView, ctx) -> None:
    """Merge the pool's nodeSelector into the pod spec; see the module docstring."""
    if ctx.pool is None:
        return
    current = pod.spec.get("nodeSelector")
    if current is not None and not isinstance(current, dict):
        pod.error(pod.spec_path("nodeSelector"), "nodeSelector must be a mapping")
        return
    current = current or {}
    missing = {}
    for key, value in ctx.pool.node_selector.items():
        path = pod.spec_path("nodeSelector", key)
        if key not in current:
            missing[key] = value
        elif str(current[key]) != value:
            have = "null" if current[key] is None else current[key]
            pod.error(path, f"nodeSelector {key}={have} conflicts with node pool "
                            f"{ctx.pool.name!r}, which needs {key}={value}; remove it, or "
                            f"place the workload in another pool with the "
                            f"krm-fn.dev/node-pool annotation")
        elif pod.edits.unquoted(path):
            pod.set(path, value, f"nodeSelector {key}: {value} was unquoted, which YAML "
                                 f"reads as a {pod.edits.yaml_type(path)}: the API server "
                                 f"refuses a nodeSelector value that is not a string (cannot "
                                 f"unmarshal into map[string]string), so the pod would "
                                 f"never reach node pool {ctx.pool.name!r}; written quoted "
                                 f"(https://kubernetes.io/docs/concepts/overview/"
                                 f"working-with-objects/labels/#syntax-and-character-set)")
    affinity = pod.spec.get("affinity")
    ictx = getattr(ctx, "ictx", None)
    on, why = serving_mode.serverless(pod, ictx.kserve_default_mode() if ictx is not None
                                      else None)
    if not on:
        for key, value in missing.items():
            _set_selector(pod, ctx, key, value)
        return
    from krm_fn.admission import knative      # a Knative pod: its webhook's flags
    feats = ctx.knative_features
    if feats is None:
        feats = knative.defaults()
    _knative(pod, ctx, feats, _why(pod, why), current, affinity, missing)


def _set_selector(pod: PodView, ctx, key: str, value: str, note: str = "") -> None:
    pod.set(pod.spec_path("nodeSelector", key), value,
            f"nodeSelector {key}={value}: node pool {ctx.pool.name!r} runs the static CPU "
            f"Manager{note}")


def _why(pod: PodView, why: str) -> str:
    if pod.at.platform == "knative":
        return f"a Knative {pod.ref.kind}'s pod"
    return f"the pod of a Serverless InferenceService ({why}; it becomes a Knative Service)"


def _knative(pod: PodView, ctx, feats, why: str, current: dict, affinity: object,
             missing: dict) -> None:
    """Place a Knative pod as its feature flags allow; see the module docstring. (What
    the pod already sets and Knative refuses is the verdict's: admission/knative.py.)"""
    from krm_fn.admission import knative
    if not missing or scheduling.requires(affinity, missing):
        return
    if feats.allows(knative.NODE_SELECTOR):
        for key, value in missing.items():
            _set_selector(pod, ctx, key, value,
                          f" (Knative allows nodeSelector: {knative.NODE_SELECTOR} is "
                          f"{feats[knative.NODE_SELECTOR].lower()} in {feats.source})")
        return
    if feats.allows(knative.AFFINITY):
        _set_affinity(pod, ctx, feats, affinity, missing)
        return
    sel = ", ".join(f"{k}={v}" for k, v in missing.items())
    mode, source = "", ""
    if serving_mode.is_isvc(pod):
        mode = ("; or, if this InferenceService is not Serverless, say so with "
                f"{serving_mode.KSERVE_RAW_MODES}")
        source = f"; {serving_mode.KSERVE_MODES_SOURCE}"
    pod.error(pod.spec_path("nodeSelector"),
              f"{why} cannot be placed in node pool {ctx.pool.name!r} (nodeSelector {sel}): "
              f"Knative's webhook refuses nodeSelector and affinity unless its feature "
              f"flags allow them, so krm-fn writes neither; "
              f"{knative.fix(knative.NODE_SELECTOR, feats)}, then krm-fn adds the "
              f"nodeSelector{mode} (knative/serving pkg/apis/config/features.go, "
              f"pkg/apis/serving/fieldmask.go PodSpecMask{source})")


def _set_affinity(pod: PodView, ctx, feats, affinity: object, missing: dict) -> None:
    """Add the pool's labels as In expressions to every required node affinity term."""
    from krm_fn.admission import knative
    base = pod.spec_path(*scheduling.REQUIRED)
    new = [{"key": k, "operator": "In", "values": [v]} for k, v in missing.items()]
    note = (f"node pool {ctx.pool.name!r} runs the static CPU Manager; required node "
            f"affinity instead of nodeSelector, since Knative allows affinity "
            f"({knative.AFFINITY} is {feats[knative.AFFINITY].lower()} in {feats.source}) "
            f"but not nodeSelector")
    required = scheduling.required_affinity(affinity)
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    if not isinstance(terms, list) or not terms:
        pod.set(base + ("nodeSelectorTerms",), [{"matchExpressions": new}],
                f"required node affinity {_text(new)}: {note}")
        return
    for i, term in enumerate(terms):
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        exprs = exprs if isinstance(exprs, list) else []
        add = [e for e in new if e not in exprs]
        for k, e in enumerate(add):
            pod.set(base + ("nodeSelectorTerms", i, "matchExpressions", len(exprs) + k), e,
                    f"required node affinity term {i}: {_text([e])} added: {note}")


def _text(exprs: list) -> str:
    return ", ".join(f"{e['key']} In [{e['values'][0]}]" for e in exprs)
