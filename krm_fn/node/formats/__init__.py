"""Output formats of the node plan: one module per format, each with
`render(plan, ctx) -> Rendered` (`objects`: plain dicts, plain str values, insertion-ordered;
`results`: krm_fn.results.Result about what the platform cannot take).

`FORMATS` maps the format name used in `spec.output.formats` to its module; a format's
module is imported the first time it is looked up, so a render imports only the formats
its config selects.
Emitted objects carry `internal.config.kubernetes.io/path` only when `ctx.set_path` (kpt
writes new items to that file, the KRM functions specification,
https://github.com/kubernetes-sigs/kustomize/blob/master/cmd/config/docs/api-conventions/functions-spec.md),
and never carry `config.kubernetes.io/local-config`
or `config.kubernetes.io/function` unless the format itself is a local-config object
(kustomize drops local-config objects from its output, same specification).

Entry points: `render_with_results(name, plan, ctx, ref, index)` -> (objects, results), and
`render(name, plan, ctx)` -> objects only.
"""
from __future__ import annotations

from krm_fn import lazy
from collections.abc import Mapping
from collections import namedtuple

from krm_fn.node.formats._common import (LOCAL_CONFIG_ANNOTATION, MANAGED_BY_LABEL,
                                         PATH_ANNOTATION, POOL_LABEL, Rendered)

__all__ = ["FORMATS", "LOCAL_CONFIG_ANNOTATION", "MANAGED_BY_LABEL", "PATH_ANNOTATION",
           "POOL_LABEL", "RenderContext", "Rendered", "render", "render_with_results"]


class RenderContext(namedtuple("RenderContext", "namespace set_path baseline ref index pool "
                               "version cluster_gates",
                               defaults=(False, None, None, 0, None, None, frozenset()))):
    """How to render: `namespace` of emitted namespaced objects; `set_path` True when the
    function runs under kpt and every emitted object must carry PATH_ANNOTATION;
    `baseline` the node's current KubeletConfiguration (`spec.output.baseline`, plain
    data, or None); `ref` the resourceRef of format results (the function config) and
    `index` the pool's index in `spec.nodePools` (result paths), both set by
    render_with_results; `pool` the config's node pool (`spec.nodePools[index]`, a
    krm_fn.config NodePool) for formats that need more of it than the plan holds (the
    PerformanceProfile's name and hugepages), None when rendered without a config;
    `version` the nodes' Kubernetes (major, minor) (spec.kubernetesVersion; None: the oldest
    supported); `cluster_gates` the feature gates the input's OpenShift FeatureGate
    `cluster` enables for every node (krm_fn.node.formats._common.cluster_gates), empty
    without one."""

    __slots__ = ()


# format name -> module name under krm_fn.node.formats, in the documented order
_MODULES = {
    "configmap": "configmap",
    "kubelet-config": "kubelet_config",
    "openshift": "openshift",
    "kubeadm": "kubeadm",
    "gke": "gke",
    "aks": "aks",
    "eks": "eks",
    "talos": "talos",
    "json6902": "json6902",
    "performance-profile": "performance_profile",
}


class _Formats(Mapping):
    """A read-only mapping format name -> format module that imports each module the first
    time it is looked up. Iterates the names in _MODULES order; raises KeyError for an
    unknown name."""

    def __getitem__(self, name: str):
        return lazy.submodule(__name__, _MODULES[name])

    def __contains__(self, name) -> bool:
        return name in _MODULES            # without importing the module

    def __iter__(self):
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS = _Formats()


def __getattr__(name: str):
    """`formats.configmap` etc.: the format module, imported on first use."""
    if name in _MODULES.values():
        return lazy.submodule(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _module(name: str):
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown output format {name!r} (known: {', '.join(FORMATS)})") from None


def render_with_results(name: str, plan, ctx: RenderContext, ref=None, index: int = 0
                        ) -> tuple[list[dict], list]:
    """Render `plan` (a krm_fn.node.plan.NodePlan) in format `name`; returns
    `(objects, results)`. `ref` (krm_fn.results.Ref of the function config) is the
    resourceRef of every result and `index` the pool's index in spec.nodePools (result
    paths such as `spec.nodePools[0].kubelet.cpuManagerPolicyOptions`). Raises ValueError
    for a format name not in FORMATS."""
    module = _module(name)
    out: Rendered = module.render(plan, ctx._replace(ref=ref, index=index))
    return list(out.objects), list(out.results)


def render(name: str, plan, ctx: RenderContext) -> list[dict]:
    """Render `plan` in format `name`; returns the emitted objects only (results are
    dropped: use render_with_results). Raises ValueError for a format name not in FORMATS."""
    return list(_module(name).render(plan, ctx).objects)
