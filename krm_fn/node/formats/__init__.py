"""Output formats of the node plan: one module per format, each with
`render(plan, ctx) -> list[dict]` (plain dicts, plain str values, insertion-ordered).

`FORMATS` maps the format name used in `spec.output.formats` to its module.
Emitted objects carry `internal.config.kubernetes.io/path` only when `ctx.set_path` (kpt
writes new items to that file, krm.md §4), and never carry `config.kubernetes.io/local-config`
or `config.kubernetes.io/function` unless the format itself is a local-config object
(krm.md §5: kustomize drops local-config objects from its output).
"""
from __future__ import annotations

from dataclasses import dataclass

from krm_fn.node.formats import configmap, kubelet_config

PATH_ANNOTATION = "internal.config.kubernetes.io/path"
LOCAL_CONFIG_ANNOTATION = "config.kubernetes.io/local-config"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
POOL_LABEL = "krm-fn.dev/node-pool"


@dataclass(frozen=True)
class RenderContext:
    """How to render: `namespace` of emitted namespaced objects; `set_path` True when the
    function runs under kpt and every emitted object must carry PATH_ANNOTATION."""

    namespace: str
    set_path: bool = False


FORMATS = {
    "configmap": configmap,
    "kubelet-config": kubelet_config,
}


def render(name: str, plan, ctx: RenderContext) -> list[dict]:
    """Render `plan` (a krm_fn.node.plan.NodePlan) in format `name`; returns the emitted
    objects. Raises ValueError for a format name not in FORMATS."""
    try:
        module = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown output format {name!r} (known: {', '.join(FORMATS)})") from None
    return module.render(plan, ctx)
