"""`krm-fn verify --node`: read what the kubelet decided on a node, below a root directory
(the only I/O of the node audit; the checks are krm_fn.verify.node_checks).

| node path | what |
|---|---|
| `/var/lib/kubelet/cpu_manager_state` | the CPU Manager checkpoint: `policyName`, `defaultCpuSet` (the shared pool), `entries` pod UID -> container -> exclusive cpuset (a string; `{"original": ...}` in the newer format) |
| `/var/lib/kubelet/memory_manager_state` | the Memory Manager checkpoint: `policyName`, `entries` pod UID -> container -> [{numaAffinity, type, size}] |
| `/var/lib/kubelet/config.yaml` (or --kubelet-config) | the kubelet's configuration file: `reservedSystemCPUs`, `cpuManagerPolicy` |
| `/sys/devices/system/cpu/cpuN/topology/thread_siblings_list` | the SMT siblings of each CPU (the physical cores) |
| `/sys/devices/system/node/nodeN/cpulist` | the CPUs of each NUMA node |

Sources: pkg/kubelet/cm/cpumanager/state/checkpoint.go and
pkg/kubelet/cm/memorymanager/state/checkpoint.go
(https://github.com/kubernetes/kubernetes/tree/master/pkg/kubelet/cm), kernel
Documentation/admin-guide/cputopology.rst.

Read-only and bounded: every file is opened non-blocking and must be a regular file of at
most 1 MiB (krm_fn.verify.read.read_regular); a path whose real location (after symlinks)
leaves the root is not read; at most MAX_CPUS CPU and MAX_NODES NUMA entries are listed.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from krm_fn.verify.read import read_regular

CPU_STATE = "/var/lib/kubelet/cpu_manager_state"
MEMORY_STATE = "/var/lib/kubelet/memory_manager_state"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
MAX_CPUS = 16384
MAX_NODES = 1024
_CPU = re.compile(r"cpu([0-9]{1,5})")
_NODE = re.compile(r"node([0-9]{1,4})")


@dataclass
class NodeState:
    """Raw texts and parsed JSON of a node, None when unreadable (`unreadable`: node path ->
    reason). `cpu_state` / `memory_state`: the decoded checkpoints (dict) or None;
    `kubelet`: the kubelet config mapping or None; `siblings`: CPU -> sibling list text;
    `numa`: node -> cpulist text."""

    cpu_state: dict | None = None
    memory_state: dict | None = None
    kubelet: dict | None = None
    siblings: dict = field(default_factory=dict)
    numa: dict = field(default_factory=dict)
    unreadable: dict = field(default_factory=dict)


class _Root:
    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self.unreadable: dict[str, str] = {}

    def host(self, path: str) -> str | None:
        """The file for node path `path`, or None (noted) when its real location leaves the
        root."""
        p = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if os.path.commonpath([self.root, p]) != self.root:
            self.unreadable[path] = "a symbolic link out of the root"
            return None
        return p

    def text(self, path: str, note: bool = True) -> str | None:
        p = self.host(path)
        if p is None:
            return None
        try:
            return read_regular(p).decode("utf-8", "replace").strip()
        except OSError as e:
            if note:
                self.unreadable[path] = e.strerror or type(e).__name__
            return None

    def entries(self, path: str, pattern, limit: int) -> list[tuple[int, str]]:
        p = self.host(path)
        if p is None:
            return []
        try:
            names = os.listdir(p)
        except OSError as e:
            self.unreadable[path] = e.strerror or type(e).__name__
            return []
        found = [(int(m.group(1)), n) for n in names if (m := pattern.fullmatch(n))]
        return sorted(found)[:limit]


def _json(r: _Root, path: str) -> dict | None:
    text = r.text(path)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError as e:
        r.unreadable[path] = f"not JSON ({e})"
        return None
    except RecursionError:
        r.unreadable[path] = "not a checkpoint: nested too deeply to read"
        return None
    if not isinstance(doc, dict):
        r.unreadable[path] = "not a JSON object"
        return None
    return doc


def _yaml(r: _Root, path: str) -> dict | None:
    text = r.text(path)
    if text is None:
        return None
    import yaml
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        r.unreadable[path] = f"not YAML ({type(e).__name__})"
        return None
    except RecursionError:
        r.unreadable[path] = "not a kubelet config: nested too deeply to read"
        return None
    if not isinstance(doc, dict):
        r.unreadable[path] = "not a mapping"
        return None
    return doc


def read(root: str = "/", kubelet_config: str = KUBELET_CONFIG) -> NodeState:
    """The NodeState below `root`; `kubelet_config` is the node path of the kubelet's config
    file. Never raises for missing, unreadable or malformed files (each is noted)."""
    r = _Root(root)
    st = NodeState(cpu_state=_json(r, CPU_STATE), memory_state=_json(r, MEMORY_STATE),
                   kubelet=_yaml(r, kubelet_config))
    for n, name in r.entries(CPU_DIR, _CPU, MAX_CPUS):
        text = r.text(f"{CPU_DIR}/{name}/topology/thread_siblings_list", note=False)
        if text is None:
            text = r.text(f"{CPU_DIR}/{name}/topology/core_cpus_list", note=False)
        if text is not None:
            st.siblings[n] = text
    for n, name in r.entries(NODE_DIR, _NODE, MAX_NODES):
        text = r.text(f"{NODE_DIR}/{name}/cpulist")
        if text:
            st.numa[n] = text
    st.unreadable = dict(sorted(r.unreadable.items()))
    return st
