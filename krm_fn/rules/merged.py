"""merged: containers a controller merges into the pod by name, sized in the manifest.

Some controllers build the pod from their own template and strategic-merge the user's pod
spec onto it, containers by name (KServe LLMInferenceService:
pkg/controller/v1alpha2/llmisvc/config_merge.go). A container the user never wrote still
ends up in the pod, with the template's resources — and one without equal requests and
limits keeps the whole pod Burstable. The only way to size it from the manifest is an
entry with the same name. krm-fn writes that entry (warning), for the containers the
registry lists for the pod spec (`workloads.MergedContainer`):

- LLMInferenceService `spec.template` of a prefill/decode deployment (`spec.prefill` set):
  the native sidecar `llm-d-routing-sidecar` (template `kserve-config-llm-decode-template`,
  `resources: {}`), with `spec.workloads.sidecarResources` as request == limit;
- LLMInferenceService `spec.template` and `spec.prefill.template` with an `hf://` or `s3://`
  model URI (unless `spec.storageInitializer.enabled: false`): the init container
  `storage-initializer` (default requests 100m/100Mi, limits 1/1Gi), with
  `spec.workloads.initContainerCpu` and 1Gi as request == limit (users may set its
  `resources` and `env`; name, args and command stay the controller's).

- LLMInferenceService `spec.template`, `spec.worker`, `spec.prefill.template` and
  `spec.prefill.worker` without a container named `main` (the model server, which the
  templates give no resources): warning, since only the user knows its size.

Only `name`, `restartPolicy` (native sidecars) and `resources` are written: the controller
supplies the rest. An entry the user already wrote is left to the resources rule. This
runs before every other rule, so the added containers are sized and counted like the
others.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.results import WARNING
from krm_fn.rules import facts
from krm_fn.workloads import MergedContainer, get_path

ID = "merged"
OPTIONS = ("workloads.sidecarResources", "workloads.initContainerCpu")


def _applies(root: dict, m: MergedContainer) -> bool:
    if m.when and get_path(root, m.when) is None:
        return False
    if m.uri:
        uri = get_path(root, m.uri)
        if not isinstance(uri, str) or not uri.startswith(m.schemes):
            return False
    if m.unless_false and str(get_path(root, m.unless_false)).lower() == "false":
        return False
    return True


def apply(pod: PodView, cfg, bounds: dict) -> None:
    """Add a by-name entry, with equal requests and limits, for every merged container of
    the pod spec that applies and is not written yet; see the module docstring. `bounds`:
    the LimitRange bounds per container of the pod's namespace (RuleContext.bounds), which
    the sizes taken from sidecarResources are kept within (facts.bounded)."""
    names = {c.name for c in pod.containers}
    for m in pod.at.merged:
        if m.name in names or not _applies(pod.edits.root, m):
            continue
        if m.app:
            pod.warn(pod.spec_path("containers"),
                     f"no container named {m.name!r}: the controller merges its {m.name!r} "
                     f"container into the pod by name from {m.source}, so the pod is not "
                     f"Guaranteed and the model server is not pinned; add an entry named "
                     f"{m.name!r} to {'.'.join(pod.at.spec)}.containers with resources "
                     f"(requests == limits, a whole number of CPUs)")
            continue
        lst = pod.spec.get("initContainers")
        if lst is not None and not isinstance(lst, list):
            return      # the resources rule reports the shape
        index = len(lst or [])
        side = cfg.workloads.sidecarResources
        if m.sidecar:
            cpu, why_cpu = facts.bounded(side.cpu, "spec.workloads.sidecarResources.cpu",
                                         "cpu", bounds)
            cpu = cpu.text
        else:
            cpu, why_cpu = (cfg.workloads.initContainerCpu.text,
                            "spec.workloads.initContainerCpu")
        if m.memory:
            memory, why_mem = m.memory, "the controller's default limit"
        else:
            memory, why_mem = facts.bounded(side.memory,
                                            "spec.workloads.sidecarResources.memory",
                                            "memory", bounds)
            memory = memory.text
        entry: dict = {"name": m.name}
        if m.sidecar:
            entry["restartPolicy"] = "Always"
        entry["resources"] = {"requests": {"cpu": cpu, "memory": memory},
                              "limits": {"cpu": cpu, "memory": memory}}
        path = pod.spec_path("initContainers", index)
        kind = "native sidecar" if m.sidecar else "init container"
        pod.set(path, entry,
                f"{kind} {m.name!r} added to {'.'.join(pod.at.spec)}.initContainers by name "
                f"with cpu {cpu} ({why_cpu}) and memory {memory} ({why_mem}), requests == "
                f"limits: the controller merges it into the pod by name from {m.source}, "
                f"which keeps the pod Burstable unless it is sized here; adjust the values "
                f"if it needs more", severity=WARNING)
        pod.containers.append(ContainerView(m.name, "sidecar" if m.sidecar else "init", path,
                                            entry))
        names.add(m.name)
