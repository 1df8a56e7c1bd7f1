"""KServe agent: the `agent` container for request logging and batching.

**When it fires** (kserve/kserve pkg/webhook/admission/pod/agent_injector.go): an
InferenceService component with `logger` or `batcher` set.

**What it adds.** The app container `agent` (pkg/constants/constants.go
`AgentContainerName`).

**Resources.** Key `agent` of ConfigMap `inferenceservice-config` (KServe's namespace):
JSON `cpuRequest`, `cpuLimit`, `memoryRequest`, `memoryLimit`, default requests 100m cpu
and 100Mi memory, limits 1 cpu and 1Gi (config/configmap/inferenceservice.yaml). The
`logger` and `batcher` blocks have no resources field and no annotation sizes it. When
the ConfigMap is in the input krm-fn makes it request == limit (krm_fn/objects/).
"""
from __future__ import annotations

from krm_fn.admission import model
from krm_fn.admission.injectors import base
from krm_fn.admission.injectors.storage_initializer import (CONFIG, config_resources,
                                                            kserve_config, let_krm_fn)

ID = "kserve_agent"
TITLE = "KServe agent"
NAME = "agent"
CONFIG_KEY = "agent"
DEFAULTS = {"cpuRequest": "100m", "cpuLimit": "1", "memoryRequest": "100Mi",
            "memoryLimit": "1Gi"}


def uses(meta: base.Meta) -> list[str]:
    """The component keys (`logger`, `batcher`) that call for the agent."""
    spec = meta.spec or {}
    return [k for k in ("logger", "batcher") if spec.get(k) is not None]


def trigger(meta: base.Meta):
    """(True, why) for a KServe component with logger or batcher, else (None, None)."""
    if meta.platform != "kserve":
        return None, None
    keys = uses(meta)
    if not keys:
        return None, None
    return True, f"the component sets {' and '.join(keys)}"


def containers(meta: base.Meta, ctx: base.InjectionContext) -> tuple:
    """The `agent` app container, from the ConfigMap's agent key or the defaults."""
    req, lim = config_resources(kserve_config(ctx, CONFIG_KEY), DEFAULTS)
    return (base.container(NAME, model.APP, ID, req, lim),)


def fix(meta: base.Meta, ctx: base.InjectionContext, added: tuple) -> str:
    """What to change so the agent gets request == limit ("" when it does)."""
    if base.guaranteed(added):
        return ""
    cm = ctx.configmap(CONFIG)
    obj = (cm, True) if cm is not None else (
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": CONFIG, "namespace": "kserve"}}, False)
    return (f"set cpuRequest == cpuLimit and memoryRequest == memoryLimit under the agent, "
            f"logger and batcher keys of ConfigMap kserve/{CONFIG}" + let_krm_fn(ctx, [obj]))
