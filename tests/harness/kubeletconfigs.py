"""The KubeletConfiguration a kubelet reads, from each object krm-fn emits, for the
harness's `kubeletconfig` command (tests/harness/kubeletconfig.go).

`payloads(obj, baseline)` returns [(format, config)] for one emitted object: `config` is
the whole file the kubelet of that node would read with `--config`, apiVersion and kind
included. What each format carries and how it reaches the kubelet (krm_fn/node/formats/):

- configmap: `data["kubelet-config.yaml"]`, a KubeletConfiguration used as a `--config-dir`
  drop-in (or a kubeadm patch): merged onto the node's configuration;
- kubelet-config: the object itself, without the `metadata` kpt needs (the format's
  documentation says to remove it before copying the file to a node; `with_metadata`
  keeps it, to check what the kubelet says then);
- openshift: the KubeletConfig's `spec.kubeletConfig`, which the Machine Config Operator
  merges onto the pool's configuration;
- kubeadm: `data["kubeletconfiguration-merge.yaml"]`, a JSON merge patch (RFC 7386) onto
  the node's configuration;
- eks: the NodeConfig's `spec.kubelet.config`, which nodeadm writes as a drop-in over its
  own config.json;
- talos: `machine.kubelet.extraConfig`, merged by Talos onto the configuration it
  generates;
- json6902: `data["kubelet-config.patch.json"]`, RFC 6902 operations applied to the
  baseline document exactly as given;
- performance-profile: the `kubeletconfig.experimental` annotation (a KubeletConfiguration
  fragment the Node Tuning Operator starts from), with the fields the operator sets from
  the profile's spec: cpuManagerPolicy static, reservedSystemCPUs = spec.cpu.reserved,
  topologyManagerPolicy = spec.numa.topologyPolicy. What the operator adds beyond that
  (its own reservedMemory, cpuManagerReconcilePeriod 5s) is not modelled.

The node's configuration is `spec.output.baseline` when the config gives one (unwrapped
from configz's `{"kubeletconfig": {...}}`), else nothing: the payload alone, which the
kubelet defaults. Merges are RFC 7386 JSON merge patches, as the kubelet merges drop-ins
(cmd/kubelet/app/server.go mergeKubeletConfigurations: jsonpatch.MergePatch).

Not KubeletConfigurations, so not checked here (NOT_KUBELET): gke's `system-config.yaml`
(GKE's own field names, converted by gcloud) and aks's `kubelet-config.json` (ARM names).
"""
from __future__ import annotations

import copy
import json

import yaml

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"
HEADER = {"apiVersion": API_VERSION, "kind": KIND}

NOT_KUBELET = {
    "gke": "system-config.yaml holds GKE's node system configuration (its own field names, "
           "converted by gcloud), not a KubeletConfiguration",
    "aks": "kubelet-config.json holds AKS's ARM kubeletConfig (its own field names), not a "
           "KubeletConfiguration",
}
# every format whose payload is a KubeletConfiguration or a merge onto one
FORMATS = ("configmap", "kubelet-config", "openshift", "kubeadm", "eks", "talos", "json6902",
           "performance-profile")

_DATA_KEYS = {
    "kubelet-config.yaml": "configmap",
    "kubeletconfiguration-merge.yaml": "kubeadm",
    "nodeconfig.yaml": "eks",
    "kubelet-patch.yaml": "talos",
    "kubelet-config.patch.json": "json6902",
    "system-config.yaml": "gke",
    "kubelet-config.json": "aks",
}


def unwrap(baseline) -> dict:
    """The node's KubeletConfiguration fields of `spec.output.baseline` (configz's
    `kubeletconfig` wrapper removed, apiVersion/kind dropped); {} for None."""
    if not isinstance(baseline, dict):
        return {}
    if list(baseline) == ["kubeletconfig"] and isinstance(baseline["kubeletconfig"], dict):
        baseline = baseline["kubeletconfig"]
    return {k: copy.deepcopy(v) for k, v in baseline.items() if k not in HEADER}


def merge(base, patch):
    """RFC 7386 JSON merge patch: `patch` onto `base` (maps per key, null deletes, anything
    else replaced). Written here again rather than taken from krm_fn.node.baseline.merge:
    the test's oracle of what the node runs does not lean on the code it judges."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def onto(baseline, fragment: dict) -> dict:
    """The file the kubelet reads: `fragment` merged onto the node's configuration, with
    apiVersion and kind first."""
    body = merge(unwrap(baseline), {k: v for k, v in fragment.items() if k not in HEADER})
    return {**HEADER, **body}


def format_of(obj: dict) -> str | None:
    """The output format that emitted `obj`, or None for another object."""
    kind = obj.get("kind")
    if kind == KIND:
        return "kubelet-config"
    if kind == "KubeletConfig" and str(obj.get("apiVersion", "")).startswith(
            "machineconfiguration.openshift.io/"):
        return "openshift"
    if kind == "PerformanceProfile":
        return "performance-profile"
    if kind == "ConfigMap":
        for key in obj.get("data") or {}:
            if key in _DATA_KEYS:
                return _DATA_KEYS[key]
    return None


def payloads(obj: dict, baseline=None, with_metadata: bool = False) -> list[tuple[str, dict]]:
    """[(format, the KubeletConfiguration the kubelet reads)] for one emitted object; []
    for an object that carries none (gke, aks, anything else)."""
    fmt = format_of(obj)
    data = obj.get("data") or {}
    if fmt == "configmap":
        return [(fmt, onto(baseline, yaml.safe_load(data["kubelet-config.yaml"])))]
    if fmt == "kubelet-config":
        doc = {k: copy.deepcopy(v) for k, v in obj.items()
               if with_metadata or k != "metadata"}
        return [(fmt, onto(baseline, doc) if not with_metadata else doc)]
    if fmt == "openshift":
        return [(fmt, onto(baseline, obj["spec"]["kubeletConfig"]))]
    if fmt == "kubeadm":
        return [(fmt, onto(baseline, yaml.safe_load(data["kubeletconfiguration-merge.yaml"])))]
    if fmt == "eks":
        node_config = yaml.safe_load(data["nodeconfig.yaml"])
        return [(fmt, onto(baseline, node_config["spec"]["kubelet"]["config"]))]
    if fmt == "talos":
        patch = yaml.safe_load(data["kubelet-patch.yaml"])
        return [(fmt, onto(baseline, patch["machine"]["kubelet"]["extraConfig"]))]
    if fmt == "json6902":
        import jsonpatch
        ops = json.loads(data["kubelet-config.patch.json"])
        return [(fmt, jsonpatch.apply_patch(copy.deepcopy(baseline), ops))]
    if fmt == "performance-profile":
        spec = obj["spec"]
        annotation = (obj["metadata"].get("annotations") or {}).get(
            "kubeletconfig.experimental")
        fragment = json.loads(annotation) if annotation else {}
        fragment.update({"cpuManagerPolicy": "static",
                         "reservedSystemCPUs": spec["cpu"]["reserved"],
                         "topologyManagerPolicy": spec["numa"]["topologyPolicy"]})
        return [(fmt, onto(baseline, fragment))]
    return []


def file_of(obj: dict) -> str | None:
    """The text of a whole KubeletConfiguration file an emitted object carries (configmap,
    kubeadm), as krm-fn wrote it, or None: sent as is, the kubelet's own YAML reader judges
    krm-fn's quoting (payloads are read by PyYAML, which reads some scalars differently)."""
    key = {"configmap": "kubelet-config.yaml",
           "kubeadm": "kubeletconfiguration-merge.yaml"}.get(format_of(obj))
    return (obj.get("data") or {}).get(key) if key else None


LOCAL_DISTANCE, REMOTE_DISTANCE = 10, 20
# The root filesystem's size: krm-fn models no disk, so an ephemeral-storage reservation is
# never checked against one (docs/kubelet-data.md, what is not checked); the harness's node
# gets a disk no reservation reaches.
UNDESCRIBED_DISK = "1Ei"
# The memory of a node whose pool does not describe it (topology.memory): krm-fn then does
# not check the reservations against memory, so the harness's node has more than any
# reservation (tests/harness/convert.py's 4 TiB is less than a generated kubeReserved can
# ask for).
UNDESCRIBED_MEMORY = 2 ** 60


def machine(node) -> dict:
    """The cadvisor MachineInfo of a NodeModel (tests/harness/convert.machine; a node whose
    memory is not described gets UNDESCRIBED_MEMORY) with the NUMA distances cadvisor reads
    from sysfs (/sys/devices/system/node/nodeN/distance), which the Topology Manager needs
    for prefer-closest-numa-nodes ("error getting NUMA distances from cadvisor" without
    them): krm-fn does not model distances, so every remote node is at the ACPI SLIT's
    usual 20, the local one at 10."""
    from tests.harness import convert
    info = convert.machine(node)
    if not node.numa_memory:        # undescribed: no reservation reaches it
        per = UNDESCRIBED_MEMORY // len(info["topology"])
        for n in info["topology"]:
            n["memory"] = per
        info["memory_capacity"] = per * len(info["topology"])
    ids = [n["node_id"] for n in info["topology"]]
    for n in info["topology"]:
        n["distances"] = [LOCAL_DISTANCE if i == n["node_id"] else REMOTE_DISTANCE
                          for i in range(max(ids) + 1)]
    return info


def file_text(config: dict) -> str:
    """`config` as the file a node would hold: JSON (which the kubelet's YAML reader reads
    as such), so that each value reaches the kubelet with the type it has here; a YAML
    dump would leave strings such as 1e9 unquoted, which PyYAML reads as a string and the
    kubelet's sigs.k8s.io/yaml as a number (the text krm-fn emits quotes them: send that
    text itself, a str, to check how the kubelet reads it)."""
    return json.dumps(config)


def check(harness, config: dict | str, machine: dict | None) -> dict:
    """The harness's `kubeletconfig` answer for `config` (a KubeletConfiguration, or the
    text of its file) on `machine` (a cadvisor MachineInfo, `machine`; None: no start-up
    stage)."""
    data = {"kubeletConfig": config if isinstance(config, str) else file_text(config)}
    if machine is not None:
        data["machineInfo"] = machine
        data["ephemeralStorageCapacity"] = UNDESCRIBED_DISK
    return harness.call("kubeletconfig", data)
