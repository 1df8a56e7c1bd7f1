import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonpatch
import pytest
import yaml

from krm_fn import config
from krm_fn.node import formats
from krm_fn.node import plan as node_plan
from krm_fn.node.formats import FORMATS, RenderContext, render, render_with_results
from krm_fn.results import ERROR, INFO, WARNING, Ref
from krm_fn.yaml import emit

ROOT = Path(__file__).resolve().parents[2]

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")

KUBELET_YAML = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
cpuManagerReconcilePeriod: "5s"
topologyManagerPolicy: best-effort
topologyManagerScope: pod
memoryManagerPolicy: None
reservedSystemCPUs: "0-1,32-33"
kubeReserved:
  memory: "500Mi"
systemReserved:
  memory: "500Mi"
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "10%"
  nodefs.inodesFree: "5%"
  imagefs.available: "15%"
  imagefs.inodesFree: "5%"
podPidsLimit: 4096
failCgroupV1: true
"""

CONFIGMAP_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    kubelet-config.yaml: |
      apiVersion: kubelet.config.k8s.io/v1beta1
      kind: KubeletConfiguration
      cpuManagerPolicy: static
      cpuManagerPolicyOptions:
        full-pcpus-only: "true"
      cpuManagerReconcilePeriod: "5s"
      topologyManagerPolicy: best-effort
      topologyManagerScope: pod
      memoryManagerPolicy: None
      reservedSystemCPUs: "0-1,32-33"
      kubeReserved:
        memory: "500Mi"
      systemReserved:
        memory: "500Mi"
      evictionHard:
        memory.available: "100Mi"
        nodefs.available: "10%"
        nodefs.inodesFree: "5%"
        imagefs.available: "15%"
        imagefs.inodesFree: "5%"
      podPidsLimit: 4096
      failCgroupV1: true
    rollout.txt: |
      Node pool inference (nodeSelector krm-fn.dev/cpu-pinning=true): apply on each node, one node at a time:
      1. Check the node runs cgroup v2 (`stat -fc %T /sys/fs/cgroup` prints cgroup2fs): failCgroupV1 is true, so the kubelet refuses to start on cgroup v1
      2. Cordon the node: kubectl cordon <node>
      3. Drain the node: kubectl drain <node> --ignore-daemonsets --delete-emptydir-data
      4. Stop the kubelet
      5. Delete /var/lib/kubelet/cpu_manager_state
      6. Delete /var/lib/kubelet/memory_manager_state when memoryManagerPolicy changes
      7. Put kubelet-config.yaml in place as a *.conf file in the kubelet's --config-dir drop-in directory (read after --config, files in alphanumeric order; maps merge per key, lists replace), or as a kubeadm kubeletconfiguration patch
      8. Start the kubelet
      9. Uncordon the node: kubectl uncordon <node>
      10. Keep the node's own processes on the reserved CPUs 0-1,32-33: reservedSystemCPUs keeps pinned containers off them, but the kubelet, the container runtime, other system services and interrupts still run on any CPU until a mechanism outside Kubernetes moves them: CPUAffinity=0-1,32-33 in /etc/systemd/system.conf (every service systemd starts inherits it; reboot to apply) or the tuned profile cpu-partitioning, which moves interrupts too (https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/#explicitly-reserved-cpu-list); Burstable and BestEffort pods also run on them unless cpuManagerPolicyOptions strict-cpu-reservation is "true" (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#strict-cpu-reservation)
"""

CONFIGMAP_KPT_METADATA = """\
  metadata:
    name: kubelet-config-inference
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
    annotations:
      internal.config.kubernetes.io/path: node/kubelet-inference.yaml
  data:
"""

KUBELET_CONFIG_YAML = """\
- apiVersion: kubelet.config.k8s.io/v1beta1
  kind: KubeletConfiguration
  metadata:
    name: kubelet-config-inference
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
    annotations:
      config.kubernetes.io/local-config: "true"
  cpuManagerPolicy: static
  cpuManagerPolicyOptions:
    full-pcpus-only: "true"
  cpuManagerReconcilePeriod: "5s"
  topologyManagerPolicy: best-effort
  topologyManagerScope: pod
  memoryManagerPolicy: None
  reservedSystemCPUs: "0-1,32-33"
  kubeReserved:
    memory: "500Mi"
  systemReserved:
    memory: "500Mi"
  evictionHard:
    memory.available: "100Mi"
    nodefs.available: "10%"
    nodefs.inodesFree: "5%"
    imagefs.available: "15%"
    imagefs.inodesFree: "5%"
  podPidsLimit: 4096
  failCgroupV1: true
"""


OPENSHIFT_YAML = """\
- apiVersion: machineconfiguration.openshift.io/v1
  kind: KubeletConfig
  metadata:
    name: krm-fn-inference
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  spec:
    machineConfigPoolSelector:
      matchLabels:
        pools.operator.machineconfiguration.openshift.io/inference: ""
    kubeletConfig:
      cpuManagerPolicy: static
      cpuManagerPolicyOptions:
        full-pcpus-only: "true"
      cpuManagerReconcilePeriod: "5s"
      topologyManagerPolicy: best-effort
      topologyManagerScope: pod
      memoryManagerPolicy: None
      reservedSystemCPUs: "0-1,32-33"
      kubeReserved:
        memory: "500Mi"
      systemReserved:
        memory: "500Mi"
      evictionHard:
        memory.available: "100Mi"
        nodefs.available: "10%"
        nodefs.inodesFree: "5%"
        imagefs.available: "15%"
        imagefs.inodesFree: "5%"
      podPidsLimit: 4096
      failCgroupV1: true
"""

KUBEADM_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-kubeadm
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    kubeletconfiguration-merge.yaml: |
      apiVersion: kubelet.config.k8s.io/v1beta1
      kind: KubeletConfiguration
      cpuManagerPolicy: static
      cpuManagerPolicyOptions:
        full-pcpus-only: "true"
      cpuManagerReconcilePeriod: "5s"
      topologyManagerPolicy: best-effort
      topologyManagerScope: pod
      memoryManagerPolicy: None
      reservedSystemCPUs: "0-1,32-33"
      kubeReserved:
        memory: "500Mi"
      systemReserved:
        memory: "500Mi"
      evictionHard:
        memory.available: "100Mi"
        nodefs.available: "10%"
        nodefs.inodesFree: "5%"
        imagefs.available: "15%"
        imagefs.inodesFree: "5%"
      podPidsLimit: 4096
      failCgroupV1: true
"""

GKE_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-gke
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    system-config.yaml: |
      kubeletConfig:
        cpuManagerPolicy: static
        topologyManager:
          policy: best-effort
          scope: pod
        podPidsLimit: 4096
      linuxConfig:
        cgroupMode: CGROUP_MODE_V2
"""

AKS_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-aks
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    kubelet-config.json: |
      {
        "cpuManagerPolicy": "static",
        "topologyManagerPolicy": "best-effort",
        "podMaxPids": 4096
      }
"""

EKS_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-eks
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    nodeconfig.yaml: |
      apiVersion: node.eks.aws/v1alpha1
      kind: NodeConfig
      spec:
        kubelet:
          config:
            cpuManagerPolicy: static
            cpuManagerPolicyOptions:
              full-pcpus-only: "true"
            cpuManagerReconcilePeriod: "5s"
            topologyManagerPolicy: best-effort
            topologyManagerScope: pod
            memoryManagerPolicy: None
            reservedSystemCPUs: "0-1,32-33"
            kubeReserved:
              memory: "500Mi"
            systemReserved:
              memory: "500Mi"
            evictionHard:
              memory.available: "100Mi"
              nodefs.available: "10%"
              nodefs.inodesFree: "5%"
              imagefs.available: "15%"
              imagefs.inodesFree: "5%"
            podPidsLimit: 4096
            failCgroupV1: true
            systemReservedCgroup: ""
            kubeReservedCgroup: ""
"""

TALOS_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-talos
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    kubelet-patch.yaml: |
      machine:
        kubelet:
          extraConfig:
            cpuManagerPolicy: static
            cpuManagerPolicyOptions:
              full-pcpus-only: "true"
            cpuManagerReconcilePeriod: "5s"
            topologyManagerPolicy: best-effort
            topologyManagerScope: pod
            memoryManagerPolicy: None
            reservedSystemCPUs: "0-1,32-33"
            kubeReserved:
              memory: "500Mi"
            systemReserved:
              memory: "500Mi"
            evictionHard:
              memory.available: "100Mi"
              nodefs.available: "10%"
              nodefs.inodesFree: "5%"
              imagefs.available: "15%"
              imagefs.inodesFree: "5%"
            podPidsLimit: 4096
            failCgroupV1: true
"""

JSON6902_BASELINE = {"kubeletconfig": {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "cpuManagerPolicy": "none", "cpuManagerReconcilePeriod": "10s",
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%",
                     "nodefs.inodesFree": "5%", "imagefs.available": "15%"},
    "podPidsLimit": -1, "clusterDNS": ["10.96.0.10"], "maxPods": 110}}

JSON6902_YAML = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kubelet-config-inference-json6902
    namespace: kube-system
    labels:
      app.kubernetes.io/managed-by: krm-fn
      krm-fn.dev/node-pool: inference
  data:
    kubelet-config.patch.json: |
      [
        {"op": "move", "from": "/kubeletconfig/apiVersion", "path": "/apiVersion"},
        {"op": "move", "from": "/kubeletconfig/kind", "path": "/kind"},
        {"op": "move", "from": "/kubeletconfig/cpuManagerPolicy", "path": "/cpuManagerPolicy"},
        {"op": "move", "from": "/kubeletconfig/cpuManagerReconcilePeriod", "path": "/cpuManagerReconcilePeriod"},
        {"op": "move", "from": "/kubeletconfig/evictionHard", "path": "/evictionHard"},
        {"op": "move", "from": "/kubeletconfig/podPidsLimit", "path": "/podPidsLimit"},
        {"op": "move", "from": "/kubeletconfig/clusterDNS", "path": "/clusterDNS"},
        {"op": "move", "from": "/kubeletconfig/maxPods", "path": "/maxPods"},
        {"op": "remove", "path": "/kubeletconfig"},
        {"op": "replace", "path": "/cpuManagerPolicy", "value": "static"},
        {"op": "replace", "path": "/cpuManagerReconcilePeriod", "value": "5s"},
        {"op": "add", "path": "/evictionHard/imagefs.inodesFree", "value": "5%"},
        {"op": "replace", "path": "/podPidsLimit", "value": 4096},
        {"op": "add", "path": "/cpuManagerPolicyOptions", "value": {"full-pcpus-only": "true"}},
        {"op": "add", "path": "/topologyManagerPolicy", "value": "best-effort"},
        {"op": "add", "path": "/topologyManagerScope", "value": "pod"},
        {"op": "add", "path": "/memoryManagerPolicy", "value": "None"},
        {"op": "add", "path": "/reservedSystemCPUs", "value": "0-1,32-33"},
        {"op": "add", "path": "/kubeReserved", "value": {"memory": "500Mi"}},
        {"op": "add", "path": "/systemReserved", "value": {"memory": "500Mi"}},
        {"op": "add", "path": "/failCgroupV1", "value": true}
      ]
"""

@pytest.fixture
def plan():
    p, results = node_plan.build(config.load(None).nodePools[0], (1, 35), REF)
    assert results == []
    return p


def _strings(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


def test_registry_matches_config():
    assert set(FORMATS) == set(config.FORMATS)
    assert FORMATS["configmap"] is formats.configmap
    assert FORMATS["kubelet-config"] is formats.kubelet_config


def test_kubelet_yaml(plan):
    assert emit.to_yaml(plan.kubelet) == KUBELET_YAML


def test_configmap_yaml(plan):
    objs = render("configmap", plan, RenderContext("kube-system", False))
    assert emit.to_yaml(objs) == CONFIGMAP_YAML
    assert objs[0]["data"]["kubelet-config.yaml"] == KUBELET_YAML


def test_configmap_under_kpt_has_path(plan):
    text = emit.to_yaml(render("configmap", plan, RenderContext("kube-system", True)))
    expected = CONFIGMAP_YAML.replace(CONFIGMAP_YAML[CONFIGMAP_YAML.index("  metadata:"):
                                                     CONFIGMAP_YAML.index("  data:\n") + 8],
                                      CONFIGMAP_KPT_METADATA)
    assert text == expected
    assert "internal.config.kubernetes.io/path: node/kubelet-inference.yaml" in text


def test_configmap_namespace_and_empty_selector(plan):
    plan.node_selector = {}
    obj = render("configmap", plan, RenderContext("infra", False))[0]
    assert obj["metadata"]["namespace"] == "infra"
    assert obj["data"]["rollout.txt"].splitlines()[0] == (
        "Node pool inference (no nodeSelector): apply on each node, one node at a time:")


def test_kubelet_config_yaml(plan):
    objs = render("kubelet-config", plan, RenderContext("kube-system", False))
    assert emit.to_yaml(objs) == KUBELET_CONFIG_YAML


def test_kubelet_config_under_kpt_has_path(plan):
    objs = render("kubelet-config", plan, RenderContext("kube-system", True))
    assert objs[0]["metadata"]["annotations"] == {
        "config.kubernetes.io/local-config": "true",
        "internal.config.kubernetes.io/path": "node/kubelet-config-inference.yaml"}
    assert emit.to_yaml(objs) == KUBELET_CONFIG_YAML.replace(
        '      config.kubernetes.io/local-config: "true"\n',
        '      config.kubernetes.io/local-config: "true"\n'
        '      internal.config.kubernetes.io/path: node/kubelet-config-inference.yaml\n')


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("set_path", [False, True])
def test_emitted_objects_invariants(plan, name, set_path):
    objs = render(name, plan, RenderContext("kube-system", set_path, baseline=JSON6902_BASELINE))
    assert len(objs) == 1
    for obj in objs:
        ann = obj["metadata"].get("annotations", {})
        assert "config.kubernetes.io/function" not in ann
        assert ("config.kubernetes.io/local-config" in ann) == (name == "kubelet-config")
        assert ("internal.config.kubernetes.io/path" in ann) == set_path
        assert all(type(s) is str for s in _strings(obj))
        if obj["kind"] == "ConfigMap":   # keys the API server accepts (IsConfigMapKey)
            assert all(re.fullmatch(r"[-._a-zA-Z0-9]+", k) for k in obj["data"])
            assert all(v.endswith("\n") for v in obj["data"].values())


def test_unknown_format(plan):
    with pytest.raises(ValueError, match="unknown output format 'helm'"):
        render("helm", plan, RenderContext("kube-system", False))


# --- platform formats: exact output for the default pool, then one test per result --------

def make_plan(kubelet=None, version=(1, 35), **pool):
    """The plan of one pool from a typed config (kubelet settings and other pool fields)."""
    spec = {"nodePools": [{"name": "inference", **pool, "kubelet": kubelet or {}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    p, results = node_plan.build(cfg.nodePools[0], version, REF)
    assert [r for r in results if r.severity == ERROR] == []
    return p


def run(name, plan, baseline=None, set_path=False, index=0):
    return render_with_results(name, plan, RenderContext("kube-system", set_path, baseline),
                               REF, index)


def file_of(objs, key):
    """The text of ConfigMap data key `key`."""
    assert [o["kind"] for o in objs] == ["ConfigMap"]
    return objs[0]["data"][key]


def by_path(results):
    """{field.path: result} of warnings (each path once; no other result)."""
    out = {}
    for r in results:
        assert r.severity == WARNING and r.ref == REF, r
        assert r.path not in out, r.path
        out[r.path] = r
    return out


P = "spec.nodePools[0].kubelet."


@pytest.mark.parametrize("name", ["configmap", "kubelet-config", "kubeadm"])
def test_formats_without_results(plan, name):
    objs, results = run(name, plan)
    assert results == []
    assert objs == render(name, plan, RenderContext("kube-system", False))


def test_emitted_names_are_distinct(plan):
    ids = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
           for name in FORMATS for o in run(name, plan, JSON6902_BASELINE)[0]]
    assert len(ids) == len(set(ids)) == len(FORMATS)


def test_render_with_results_unknown_format(plan):
    with pytest.raises(ValueError, match="unknown output format 'helm'"):
        run("helm", plan)


def test_result_paths_use_the_pool_index(plan):
    _, results = run("gke", plan, index=2)
    assert {"spec.nodePools[2].kubelet.cpuManagerPolicyOptions",
            "spec.nodePools[2].reserved.cores"} <= {r.path for r in results}


# openshift

def test_openshift_yaml(plan):
    objs, results = run("openshift", plan)
    assert emit.to_yaml(objs) == OPENSHIFT_YAML
    assert "namespace" not in objs[0]["metadata"]          # KubeletConfig is cluster-scoped
    [nto] = results
    assert (nto.severity, nto.ref, nto.path) == (WARNING, REF, "spec.nodePools[0].kubelet")
    assert "PerformanceProfile" in nto.message and "performance-<profile>" in nto.message
    assert "OpenShift" in nto.message and "reservedSystemCPUs" in nto.message


MCO = "https://github.com/openshift/machine-config-operator/blob/main/pkg/controller/" \
      "kubelet-config/helpers.go"


def test_openshift_kubelet_config_without_system_reserved_keeps_the_node_s_sizing():
    # the MCO moves systemReserved cpu/memory/ephemeral-storage to node-sizing-enabled.env;
    # with none of them the node keeps its own (auto-)sizing, which krm-fn cannot know
    objs, results = platform_run("openshift", {"systemReserved": {}})
    [r] = [r for r in results if r.severity == ERROR]
    assert r.path == P + "systemReserved.memory"
    assert r.message == (
        "OpenShift KubeletConfig krm-fn-inference sets no systemReserved cpu, memory or "
        "ephemeral-storage, so the Machine Config Operator leaves the node's own sizing in "
        f"place ({MCO}: SYSTEM_RESERVED_* in /etc/node-sizing.env, auto-sized from the node's "
        "memory and CPUs on workers from OpenShift 4.21, else memory 1Gi and cpu 500m), which "
        "krm-fn cannot know; set kubelet.systemReserved.memory (the MCO then writes it with "
        "NODE_SIZING_ENABLED=false), or give spec.output.baseline from a node's configz so "
        "krm-fn judges what the node runs")
    assert "systemReserved" not in objs[0]["spec"]["kubeletConfig"]


def test_openshift_system_reserved_from_the_baseline_is_the_node_s_own():
    spec = {"nodePools": [{"name": "inference", "kubelet": {"systemReserved": {}}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    base = {"systemReserved": {"cpu": "500m", "memory": "1Gi"}}
    p, _ = node_plan.build(cfg.nodePools[0], (1, 35), REF, baseline=base)
    _, results = run("openshift", p, baseline=base)
    assert [r for r in results if r.severity == ERROR] == []


def test_openshift_system_reserved_without_cpu_gets_the_mco_s_500m():
    objs, results = platform_run("openshift", {"systemReserved": {"memory": "1Gi"},
                                               "kubeReserved": {"cpu": "1"}},
                                 reserved={"cores": 0})
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.proposed) == (P + "systemReserved.cpu", "500m")
    assert "SYSTEM_RESERVED_CPU=500m" in r.message
    # with reservedSystemCPUs the kubelet replaces the cpu: nothing to say
    _, results = platform_run("openshift", {"systemReserved": {"memory": "1Gi"}})
    assert [r for r in results if r.severity == ERROR] == []


def test_openshift_system_reserved_without_memory_gets_the_mco_s_1gi():
    _, results = platform_run("openshift", {"systemReserved": {"ephemeral-storage": "2Gi"}})
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.proposed) == (P + "systemReserved.memory", "1Gi")
    assert "SYSTEM_RESERVED_MEMORY=1Gi" in r.message


@pytest.mark.parametrize("kubelet, path", [
    ({"kubeReserved": {}}, "kubeReserved.memory"),
    ({"systemReserved": {"pid": "100"}}, "systemReserved.memory"),
])
def test_performance_profile_nto_memory_defaults_the_plan_lacks(kubelet, path):
    _, results = platform_run("performance-profile", kubelet,
                              nodeSelector={"node-role.kubernetes.io/inference": ""})
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.current, r.proposed) == (P + path, None, "500Mi")
    assert "PerformanceProfile inference's KubeletConfig sets 500Mi" in r.message


def test_openshift_under_kpt_has_path(plan):
    objs, _ = run("openshift", plan, set_path=True)
    assert objs[0]["metadata"]["annotations"] == {
        "internal.config.kubernetes.io/path": "node/kubelet-inference-openshift.yaml"}


@pytest.mark.parametrize("key,value", [
    ("featureGates", {"InPlacePodVerticalScaling": True}),
    ("cgroupDriver", "systemd"),
    ("clusterDNS", ["172.30.0.10"]),
    ("clusterDomain", "cluster.local"),
    ("staticPodPath", "/etc/kubernetes/manifests"),
    ("failSwapOn", False),
    ("memorySwap", {"swapBehavior": "LimitedSwap"}),
])
def test_openshift_removes_what_the_mco_rejects(key, value):
    typed = key == "cgroupDriver"          # a typed pool field, not kubelet.extra
    objs, results = run("openshift", make_plan({key: value} if typed else
                                               {"extra": {key: value}}))
    assert key not in objs[0]["spec"]["kubeletConfig"]
    r = by_path(results)[P + ("" if typed else "extra.") + key]
    assert f"{key} " in r.message and "OpenShift" in r.message
    assert "Machine Config Operator" in r.message
    assert r.current == (value if isinstance(value, str)
                         else json.dumps(value, separators=(",", ":")))
    if key == "featureGates":
        assert "FeatureGate CR" in r.message and "CustomNoUpgrade" in r.message


def test_openshift_keeps_memory_swap_without_behavior():
    objs, results = run("openshift", make_plan({"extra": {"memorySwap": {}}}))
    assert objs[0]["spec"]["kubeletConfig"]["memorySwap"] == {}
    assert list(by_path(results)) == ["spec.nodePools[0].kubelet"]


def test_openshift_without_cpu_fields_has_no_ownership_warning(plan):
    for key in ("cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod",
                "topologyManagerPolicy", "reservedSystemCPUs", "memoryManagerPolicy"):
        plan.kubelet.pop(key)
    assert run("openshift", plan)[1] == []


# kubeadm

def test_kubeadm_yaml(plan):
    objs, results = run("kubeadm", plan)
    assert emit.to_yaml(objs) == KUBEADM_YAML
    assert file_of(objs, "kubeletconfiguration-merge.yaml") == KUBELET_YAML
    assert results == []


# gke

def platform_run(fmt, kubelet=None, version=(1, 35), **pool):
    """Render `fmt` for a pool built from typed settings, with the pool in the context (its
    topology.memory sizes the platform's reservation)."""
    spec = {"nodePools": [{"name": "inference", **pool, "kubelet": kubelet or {}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    p, results = node_plan.build(cfg.nodePools[0], version, REF)
    assert [r for r in results if r.severity == ERROR] == []
    return render_with_results(fmt, p, RenderContext("kube-system", pool=cfg.nodePools[0],
                                                     version=version), REF, 0)


def kinds(results):
    """[(severity, path)] of `results`, in order."""
    return [(r.severity, r.path) for r in results]


# a 64-CPU, 64Gi pool as GKE sizes it: 6% + 1% + 2 x 0.5% + 60 x 0.25% of a core = 230m;
# 25% of 4Gi + 20% of 4Gi + 10% of 8Gi + 6% of 48Gi = 5.48Gi = 5611Mi (rounded down)
GKE_POOL = {"reserved": {"cores": 0}, "topology": {"memory": "64Gi"}}
GKE_KUBELET = {"cpuManagerPolicyOptions": {}, "systemReserved": {},
               "kubeReserved": {"cpu": "230m", "memory": "5611Mi"}}


def test_gke_yaml(plan):
    objs, results = run("gke", plan)
    assert emit.to_yaml(objs) == GKE_YAML
    # krm-fn's own reservation and full-pcpus-only are not what GKE's kubelet runs: errors;
    # the memory reservations cannot be judged without the pool's memory: warnings
    assert kinds(results) == [
        (ERROR, "spec.nodePools[0].reserved.cores"),
        (ERROR, P + "cpuManagerPolicyOptions"),
        (WARNING, P + "cpuManagerReconcilePeriod"),
        (WARNING, P + "kubeReserved"),
        (WARNING, P + "systemReserved")]
    cpus, options = results[:2]
    assert cpus.message == (
        "reservedSystemCPUs 0-1,32-33 cannot be set on GKE: its kubelet reserves CPU as "
        "kubeReserved.cpu 230m on a 64-CPU node "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes), so the "
        "static CPU Manager holds back 1 CPU of its own choosing (the lowest cores) and leaves "
        "every other CPU to pods, and krm-fn judged exclusive CPUs and NUMA admission with "
        "these CPUs reserved instead; set reserved.cores: 0 (no kubelet.reservedSystemCPUs) "
        "and kubelet.kubeReserved.cpu: 230m so krm-fn judges what GKE runs")
    assert (cpus.current, cpus.proposed) == ("0-1,32-33", "230m")
    assert options.message == (
        'cpuManagerPolicyOptions {"full-pcpus-only":"true"} cannot be set on GKE: its kubelet '
        "runs cpuManagerPolicyOptions {} (the static CPU Manager runs without these options "
        "(without full-pcpus-only a pinned container can get half a physical core and share "
        "its L1/L2 with another pod)), and krm-fn judged the pods with "
        '{"full-pcpus-only":"true"}; set kubelet.cpuManagerPolicyOptions: {} so krm-fn judges '
        "what GKE runs")
    assert (options.current, options.proposed) == ('{"full-pcpus-only":"true"}', "{}")
    assert "GKE cannot set it; the kubelet default (10s) applies" in results[2].message


def test_gke_plan_with_gke_reservation_is_clean():
    objs, results = platform_run("gke", GKE_KUBELET, **GKE_POOL)
    assert file_of(objs, "system-config.yaml") == """\
kubeletConfig:
  cpuManagerPolicy: static
  topologyManager:
    policy: best-effort
    scope: pod
  podPidsLimit: 4096
linuxConfig:
  cgroupMode: CGROUP_MODE_V2
"""
    assert kinds(results) == [(WARNING, P + "cpuManagerReconcilePeriod")]


@pytest.mark.parametrize("kubelet, path, current, proposed", [
    ({"kubeReserved": {"cpu": "1", "memory": "5611Mi"}}, "kubeReserved.cpu", "1000m", "230m"),
    ({"kubeReserved": {"cpu": "200m", "memory": "5611Mi"}, "systemReserved": {"cpu": "30m"}},
     "kubeReserved.cpu", "230m", "230m"),
    ({"kubeReserved": {"cpu": "230m", "memory": "5Gi"}}, "kubeReserved.memory", "5120Mi",
     "5611Mi"),
    ({"kubeReserved": {"cpu": "230m", "memory": "5111Mi"}, "systemReserved": {"memory": "500Mi"}},
     "kubeReserved.memory", "5611Mi", "5611Mi"),
    ({"kubeReserved": {"cpu": "230m", "memory": "5611Mi"},
      "evictionHard": {"memory.available": "200Mi"}},
     "evictionHard.memory.available", "200Mi", "100Mi"),
])
def test_gke_reservation_that_is_not_gke_s_is_an_error(kubelet, path, current, proposed):
    objs, results = platform_run("gke", {**GKE_KUBELET, "systemReserved": {}, **kubelet},
                                 **GKE_POOL)
    errors = [r for r in results if r.severity == ERROR]
    if current == proposed:         # split between kube and system: the sum is GKE's
        assert errors == []
        return
    [r] = errors
    assert (r.path, r.current, r.proposed) == (P + path, current, proposed)
    assert "GKE" in r.message and "plan-node-sizes" in r.message
    assert "kubeReserved" not in yaml.safe_load(file_of(objs, "system-config.yaml"))


def test_gke_pool_with_more_than_110_pods_reserves_400m_more():
    objs, results = platform_run("gke", {**GKE_KUBELET, "extra": {"maxPods": 256}},
                                 **GKE_POOL)
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.current, r.proposed) == (P + "kubeReserved.cpu", "230m", "630m")


@pytest.mark.parametrize("pids", [1, 1023, 4194304])
def test_gke_pod_pids_limit_out_of_bounds(pids):
    objs, results = platform_run("gke", {**GKE_KUBELET, "podPidsLimit": pids}, **GKE_POOL)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert "podPidsLimit" not in gke
    r = by_path(results)[P + "podPidsLimit"]
    assert "from 1024 to 4194303" in r.message and r.current == str(pids)


@pytest.mark.parametrize("pids", [1024, 4194303])
def test_gke_pod_pids_limit_bounds_are_inclusive(pids):
    objs, results = platform_run("gke", {**GKE_KUBELET, "podPidsLimit": pids}, **GKE_POOL)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert gke["podPidsLimit"] == pids
    assert P + "podPidsLimit" not in by_path(results)


def test_gke_memory_manager_static_and_renamed_fields():
    # 1.36: CustomCPUCFSQuotaPeriod is on (the kubelet of 1.35 refuses 50ms without it);
    # the low threshold below the high one (the kubelet refuses 80 over the default 80)
    objs, results = platform_run("gke", {
        **GKE_KUBELET, "memoryManagerPolicy": "Static", "singleProcessOOMKill": True, "extra": {
            "cpuCFSQuotaPeriod": "50ms", "imageGCHighThresholdPercent": 80,
            "imageGCLowThresholdPercent": 70,
            "evictionMaxPodGracePeriod": 60,
            "evictionSoft": {"memory.available": "200Mi", "nodefs.available": "15%"},
            "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "2m"}}},
        version=(1, 36), **GKE_POOL)
    assert file_of(objs, "system-config.yaml") == """\
kubeletConfig:
  cpuManagerPolicy: static
  topologyManager:
    policy: best-effort
    scope: pod
  memoryManager:
    policy: Static
  podPidsLimit: 4096
  singleProcessOomKill: true
  cpuCFSQuotaPeriod: "50ms"
  imageGcHighThresholdPercent: 80
  imageGcLowThresholdPercent: 70
  evictionMaxPodGracePeriodSeconds: 60
  evictionSoft:
    memoryAvailable: "200Mi"
    nodefsAvailable: "15%"
  evictionSoftGracePeriod:
    memoryAvailable: "1m"
    nodefsAvailable: "2m"
linuxConfig:
  cgroupMode: CGROUP_MODE_V2
"""
    r = by_path(results)[P + "memoryManagerPolicy"]           # reservedMemory
    assert r.message.startswith("reservedMemory ")


def test_gke_eviction_map_with_a_signal_gke_lacks():
    objs, results = platform_run("gke", {**GKE_KUBELET, "extra": {
        "evictionSoft": {"allocatableMemory.available": "1Gi"},
        "evictionSoftGracePeriod": {"allocatableMemory.available": "1m"}}}, **GKE_POOL)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert "evictionSoft" not in gke
    assert "allocatableMemory.available" in by_path(results)[P + "extra.evictionSoft"].message


# hostile testing: values the GKE API refuses (NodeKubeletConfig, https://cloud.google.com/
# kubernetes-engine/docs/reference/rest/v1/NodeConfig#nodekubeletconfig) were emitted
@pytest.mark.parametrize("field, gke_name, bad, good, takes", [
    ("containerLogMaxSize", "containerLogMaxSize", "1Gi", "500Mi",
     "a quantity in Ki, Mi or Gi from 10Mi to 500Mi"),
    ("containerLogMaxSize", "containerLogMaxSize", "20M", "10Mi",
     "a quantity in Ki, Mi or Gi from 10Mi to 500Mi"),
    ("containerLogMaxFiles", "containerLogMaxFiles", 50, 10, "a whole number from 2 to 10"),
    ("imageGCHighThresholdPercent", "imageGcHighThresholdPercent", 95, 85,
     "a whole number from 10 to 85"),
    ("imageMinimumGCAge", "imageMinimumGcAge", "10m", "2m",
     "a positive duration of at most 2m"),
    ("evictionMaxPodGracePeriod", "evictionMaxPodGracePeriodSeconds", 1000, 300,
     "a whole number from 0 to 300"),
])
def test_gke_fields_outside_what_the_gke_api_takes_are_left_out(field, gke_name, bad, good,
                                                                takes):
    objs, results = platform_run("gke", {**GKE_KUBELET, "extra": {field: bad}}, **GKE_POOL)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert gke_name not in gke
    assert by_path(results)[P + "extra." + field].message == (
        f"{field} {bad} is left out of the GKE output: the GKE API takes {takes} there, and "
        f"refuses the node pool's system config otherwise")
    objs, results = platform_run("gke", {**GKE_KUBELET, "extra": {field: good}}, **GKE_POOL)
    assert yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"][gke_name] == good


def test_gke_soft_threshold_left_out_takes_its_grace_period_and_the_new_ranges_hold():
    objs, results = platform_run("gke", {**GKE_KUBELET, "extra": {
        "evictionSoft": {"nodefs.inodesFree": "1%", "pid.available": "60%",
                         "memory.available": "200Mi"},
        "evictionSoftGracePeriod": {"nodefs.inodesFree": "1m", "pid.available": "1m",
                                    "memory.available": "1m"}}}, **GKE_POOL)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert gke["evictionSoft"] == {"memoryAvailable": "200Mi"}
    assert gke["evictionSoftGracePeriod"] == {"memoryAvailable": "1m"}
    said = [r.message for r in results if "evictionSoft" in r.message]
    assert "evictionSoft nodefs.inodesFree 1% is left out of the GKE output: the GKE API takes " \
           "a percentage from 5% to 50% there, and refuses the node pool's system config " \
           "otherwise" in said
    assert "evictionSoftGracePeriod pid.available is left out of the GKE output with its soft " \
           "threshold" in said


def test_gke_fail_cgroup_v1_false_is_warned():
    objs, results = platform_run("gke", {**GKE_KUBELET, "failCgroupV1": False}, **GKE_POOL)
    assert "linuxConfig" not in yaml.safe_load(file_of(objs, "system-config.yaml"))
    assert "cgroup v2" in by_path(results)[P + "failCgroupV1"].message


# aks

# a 64-CPU, 64Gi pool as AKS sizes it from 1.29: 6% + 4% + 2 x 2% + 60 x 1% of a core = 740m
# (the documented 740m for 64 cores); memory the lesser of 20Mi x 110 pods + 50Mi and 16Gi
# (the node pool's maxPods, which AKS sets per node pool: an info)
AKS_KUBELET = {"cpuManagerPolicyOptions": {}, "topologyManagerScope": "container",
               "systemReserved": {}, "kubeReserved": {"cpu": "740m", "memory": "2250Mi"},
               "extra": {"maxPods": 110}}
AKS_PODS = (INFO, P + "extra.maxPods")


def test_aks_yaml(plan):
    objs, results = run("aks", plan)
    assert emit.to_yaml(objs) == AKS_YAML
    assert kinds(results) == [
        (ERROR, "spec.nodePools[0].reserved.cores"),
        (ERROR, P + "cpuManagerPolicyOptions"),
        (WARNING, P + "cpuManagerReconcilePeriod"),
        (ERROR, P + "topologyManagerScope"),
        (WARNING, P + "kubeReserved"),
        (WARNING, P + "systemReserved")]     # failCgroupV1 true: the kubelet's default
    scope = results[3]
    assert scope.message == (
        "topologyManagerScope pod cannot be set on AKS: its kubelet runs topologyManagerScope "
        "container (the kubelet default scope `container` applies: the containers of a pod "
        "can be aligned to different NUMA nodes), and krm-fn judged the pods with pod; set "
        "kubelet.topologyManagerScope: container so krm-fn judges what AKS runs")
    assert "740m" in results[0].message


def test_aks_plan_with_aks_reservation_is_clean():
    objs, results = platform_run("aks", AKS_KUBELET, **GKE_POOL)
    assert json.loads(file_of(objs, "kubelet-config.json")) == {
        "cpuManagerPolicy": "static", "topologyManagerPolicy": "best-effort", "podMaxPids": 4096}
    assert kinds(results) == [(WARNING, P + "cpuManagerReconcilePeriod"), AKS_PODS]
    assert results[1].message == (
        "maxPods 110 is not in the AKS output: AKS sets it per node pool (`az aks nodepool add "
        "--max-pods`), not in its kubelet config; krm-fn judged the pods and AKS's memory "
        "reservation with it: give the node pool the same")


@pytest.mark.parametrize("fmt", ["gke", "aks"])
def test_a_value_a_closed_platform_drops_is_silent_at_the_kubelets_default(fmt):
    # the node runs the kubelet's default anyway (docs/platforms.md): 10s is the reconcile
    # period's default, so a GKE or AKS render can be free of warnings
    kubelet = GKE_KUBELET if fmt == "gke" else AKS_KUBELET
    _, results = platform_run(fmt, {**kubelet, "cpuManagerReconcilePeriod": "10s"}, **GKE_POOL)
    assert kinds(results) == ([] if fmt == "gke" else [AKS_PODS])


def test_aks_before_1_29_sizes_memory_by_brackets_and_evicts_at_750mi():
    # 1.28 is older than every supported version: the sizer itself
    from krm_fn.node import platform_reserved as pr
    r = pr.aks(64, 64 * pr.GIB, 110, (1, 28))
    assert (r.kube, r.eviction_memory) == ({"cpu": 740, "memory": 5611 * pr.MIB}, "750Mi")


def test_aks_renames_and_defaults():
    objs, results = platform_run("aks", {**AKS_KUBELET, "extra": {
        **AKS_KUBELET["extra"], "cpuCFSQuota": True, "imageGCLowThresholdPercent": 70,
        "containerLogMaxSize": "20Mi",
        "containerLogMaxFiles": 3, "failSwapOn": False, "allowedUnsafeSysctls": ["net.*"]}},
        **GKE_POOL)
    assert json.loads(file_of(objs, "kubelet-config.json")) == {
        "cpuManagerPolicy": "static", "topologyManagerPolicy": "best-effort", "podMaxPids": 4096,
        "cpuCfsQuota": True, "imageGcLowThreshold": 70, "containerLogMaxSizeMB": 20,
        "containerLogMaxFiles": 3, "failSwapOn": False, "allowedUnsafeSysctls": ["net.*"]}
    assert P + "topologyManagerScope" not in by_path(
        [r for r in results if r.severity != INFO])      # the kubelet default


# (containerLogMaxFiles 1, which AKS would not take either, is refused by the kubelet itself:
# "containerLogMaxFiles must be greater than 1", validation.go)
@pytest.mark.parametrize("extra,key,text", [
    ({"containerLogMaxSize": "1500Ki"}, "containerLogMaxSize", "whole number of MiB"),
])
def test_aks_values_it_cannot_take(extra, key, text):
    objs, results = platform_run("aks", {**AKS_KUBELET, "extra": {**AKS_KUBELET["extra"],
                                                                   **extra}}, **GKE_POOL)
    assert text in by_path([r for r in results if r.severity != INFO])[
        P + "extra." + key].message
    assert AKS_PODS in kinds(results)
    assert len(json.loads(file_of(objs, "kubelet-config.json"))) == 3


def test_aks_memory_manager_static_is_an_error():
    _, results = platform_run("aks", {**AKS_KUBELET, "memoryManagerPolicy": "Static"},
                              **GKE_POOL)
    mine = [(r.severity, r.message.split(" ")[0]) for r in results
            if r.path == P + "memoryManagerPolicy"]
    assert mine == [(ERROR, "memoryManagerPolicy"), (WARNING, "reservedMemory")]


# The platforms' own numbers: GKE's page gives the brackets; AKS's gives these CPU points
# (1, 2, 4, 8, 16, 32, 64 cores) and the 1.29+ memory rule with worked examples.
@pytest.mark.parametrize("cpus, millis", [(1, 60), (2, 100), (4, 140), (8, 180), (16, 260),
                                          (32, 420), (64, 740)])
def test_aks_cpu_reservation_is_the_documented_table(cpus, millis):
    from krm_fn.node import platform_reserved as pr
    assert pr.aks(cpus, None).kube == {"cpu": millis}


@pytest.mark.parametrize("memory, pods, mib", [(8, 30, 650), (4, 70, 1024), (64, 250, 5050),
                                              (0.5, None, 128)])    # 25% < 10 pods' worth
def test_aks_memory_reservation_from_1_29(memory, pods, mib):
    from krm_fn.node import platform_reserved as pr
    r = pr.aks(8, int(memory * pr.GIB), pods, (1, 29))
    assert (r.kube["memory"], r.eviction_memory, r.pods_unknown) == (mib * pr.MIB, "100Mi",
                                                                     False)


def test_aks_memory_by_a_max_pods_not_given_is_an_error():
    """AKS reserves 20 MiB per pod of the node pool's maxPods (default 30, 250 or 110 by
    network plugin), which its kubelet config cannot set: without kubelet.extra.maxPods the
    memory AKS leaves to pods is unknown, and the render fails closed (hostile test: 110
    was assumed, 2.8Gi more than an Azure CNI Overlay node has)."""
    kubelet = {k: v for k, v in AKS_KUBELET.items() if k != "extra"}
    _, results = platform_run("aks", kubelet, **GKE_POOL)
    assert kinds(results) == [(ERROR, P + "extra.maxPods"),
                              (WARNING, P + "cpuManagerReconcilePeriod")]
    assert results[0].message == (
        "AKS's kubelet reserves memory by the node pool's maximum pods (20 MiB per pod + 50 "
        "MiB, at most 25 % of the node's memory; https://learn.microsoft.com/azure/aks/"
        "node-resource-reservations), which its kubelet config cannot set and krm-fn is not "
        "told: by default 30 with Azure CNI, 250 with Azure CNI Overlay, 110 with kubenet "
        "(https://learn.microsoft.com/azure/aks/node-auto-provisioning-aksnodeclass), so the "
        "allocatable memory krm-fn would judge may not be the node's; set "
        "kubelet.extra.maxPods to the node pool's maxPods (`az aks nodepool show --query "
        "maxPods`)")
    # 250 pods: 5050Mi, which the plan's 2250Mi is not
    _, results = platform_run("aks", {**kubelet, "extra": {"maxPods": 250}}, **GKE_POOL)
    assert [(r.severity, r.path, r.proposed) for r in results if r.severity == ERROR] == [
        (ERROR, P + "kubeReserved.memory", "5050Mi")]


@pytest.mark.parametrize("cpus, memory, pods, millis, mib", [
    (1, 0.5, 110, 60, 255),                  # below 1 GiB: 255 MiB
    (2, 4, 110, 70, 1024),                   # 25% of 4 GiB
    (4, 16, 110, 80, 2662),                  # 1 + 0.8 + 0.8 GiB
    (64, 64, 110, 230, 5611),
    (96, 256, 110, 310, 12165),              # 2% above 128 GiB
    (64, 64, 111, 630, 5611),                # more than 110 pods: 400m more
])
def test_gke_reservation_brackets(cpus, memory, pods, millis, mib):
    from krm_fn.node import platform_reserved as pr
    r = pr.gke(cpus, int(memory * pr.GIB), pods)
    assert (r.kube, r.system, r.eviction_memory) == (
        {"cpu": millis, "memory": mib * pr.MIB}, {}, "100Mi")


# eks

def test_eks_yaml(plan):
    objs, results = run("eks", plan)
    assert emit.to_yaml(objs) == EKS_YAML
    assert list(by_path(results)) == [P + "reservedSystemCPUs", P + "kubeReserved.memory"]


def test_eks_reserved_cgroups_overridden(plan):
    r = by_path(run("eks", plan)[1])[P + "reservedSystemCPUs"]
    assert "systemReservedCgroup: /system, kubeReservedCgroup: /runtime" in r.message
    assert "to \"\"" in r.message and r.current == "0-1,32-33"


def test_eks_kube_reserved_memory_replaces_nodeadm_default(plan):
    r = by_path(run("eks", plan)[1])[P + "kubeReserved.memory"]
    assert "11 * maxPods + 255 Mi" in r.message and r.current == "500Mi"


def test_eks_static_memory_manager_without_kube_reserved_memory():
    objs, results = run("eks", make_plan({"memoryManagerPolicy": "Static", "kubeReserved": {}}))
    [r] = [r for r in results if r.path == P + "kubeReserved.memory"]
    assert r.severity == ERROR
    assert "reservedMemory" in r.message and "11 * maxPods + 255 Mi" in r.message
    assert "refuses to start" in r.message
    config_ = yaml.safe_load(file_of(objs, "nodeconfig.yaml"))["spec"]["kubelet"]["config"]
    assert config_["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "600Mi"}}]


def test_eks_without_reserved_system_cpus_or_kube_reserved_cpu_gets_nodeadm_s_cpu():
    _, results = platform_run("eks", {"kubeReserved": {"memory": "1Gi"},
                                      "systemReserved": {"cpu": "1"}}, reserved={"cores": 0})
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.proposed) == (P + "kubeReserved.cpu", "230m")
    assert r.message.startswith("EKS: nodeadm sets kubeReserved.cpu to 230m on a 64-CPU node")
    _, results = platform_run("eks", {"kubeReserved": {"memory": "1Gi", "cpu": "0"},
                                      "systemReserved": {"cpu": "1"}}, reserved={"cores": 0})
    assert [r for r in results if r.severity == ERROR] == []


# talos

def test_talos_yaml(plan):
    objs, results = run("talos", plan)
    assert emit.to_yaml(objs) == TALOS_YAML
    assert list(by_path(results)) == [P + "systemReserved"]


def test_talos_system_reserved_replaces_the_default(plan):
    r = by_path(run("talos", plan)[1])[P + "systemReserved"]
    assert "384Mi" in r.message and "512Mi" in r.message and "pid" in r.message


def test_talos_static_memory_manager_without_system_reserved():
    _, results = run("talos", make_plan({"memoryManagerPolicy": "Static", "systemReserved": {}}))
    [r] = [r for r in results if r.path == P + "systemReserved"]
    assert r.severity == ERROR
    assert "reservedMemory" in r.message and "384Mi" in r.message
    assert "refuses to start" in r.message


def test_talos_without_system_reserved_adds_its_default_unjudged():
    _, results = run("talos", make_plan({"systemReserved": {}}))
    [r] = [r for r in results if r.path == P + "systemReserved"]
    assert r.severity == ERROR and "refuses to start" not in r.message
    assert r.message.startswith("Talos: the plan has no systemReserved, so Talos adds its "
                                "default systemReserved {cpu: 50m, memory: 384Mi")
    # the node's own, from its configz: nothing to say
    base = {"systemReserved": {"cpu": "50m", "memory": "384Mi"}}
    spec = {"nodePools": [{"name": "inference", "kubelet": {"systemReserved": {}}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    p, _ = node_plan.build(cfg.nodePools[0], (1, 35), REF, baseline=base)
    assert [r for r in run("talos", p, baseline=base)[1] if r.severity == ERROR] == []


@pytest.mark.parametrize("key,value", [("seccompDefault", True),
                                       ("protectKernelDefaults", True),
                                       ("staticPodPath", "/etc/kubernetes/manifests")])
def test_talos_protected_fields_removed(key, value):
    objs, results = run("talos", make_plan({"extra": {key: value}}))
    patch = yaml.safe_load(file_of(objs, "kubelet-patch.yaml"))
    extra = patch["machine"]["kubelet"]["extraConfig"]
    assert key not in extra and "apiVersion" not in extra
    assert "Talos manages" in by_path(results)[P + "extra." + key].message


# json6902

def test_json6902_yaml(plan):
    objs, results = run("json6902", plan, JSON6902_BASELINE)
    assert emit.to_yaml(objs) == JSON6902_YAML
    assert results == []


@pytest.mark.parametrize("wrapped", [True, False])
def test_json6902_applies_to_the_baseline(plan, wrapped):
    base = JSON6902_BASELINE["kubeletconfig"]
    given = JSON6902_BASELINE if wrapped else base
    objs, _ = run("json6902", plan, given)
    ops = json.loads(file_of(objs, "kubelet-config.patch.json"))
    patched = jsonpatch.apply_patch(given, ops)     # the document exactly as given
    expected = dict(base)
    expected.update(plan.kubelet)
    assert patched == expected
    assert patched["clusterDNS"] == ["10.96.0.10"] and patched["maxPods"] == 110


def test_json6902_merges_maps_like_a_drop_in(plan):
    base = {"evictionHard": {"pid.available": "5%"}, "featureGates": {"A": True}}
    plan.kubelet["featureGates"] = {"B": False}
    objs, _ = run("json6902", plan, base)
    patched = jsonpatch.apply_patch(base, json.loads(file_of(objs, "kubelet-config.patch.json")))
    assert patched["evictionHard"]["pid.available"] == "5%"
    assert patched["evictionHard"]["nodefs.available"] == "10%"
    assert patched["featureGates"] == {"A": True, "B": False}


def test_json6902_baseline_already_desired(plan):
    base = {k: v for k, v in plan.kubelet.items()}
    objs, results = run("json6902", plan, base)
    assert file_of(objs, "kubelet-config.patch.json") == "[]\n" and results == []


@pytest.mark.parametrize("baseline", [None, {}, {"kubeletconfig": {}}])
def test_json6902_without_baseline_is_an_error(plan, baseline):
    objs, [r] = run("json6902", plan, baseline)
    assert objs == []
    assert (r.severity, r.ref, r.path) == (ERROR, REF, "spec.output.baseline")
    assert "spec.output.baseline" in r.message and "json6902" in r.message


def test_json6902_reserved_cgroups_of_the_baseline():
    base = {"kubeletconfig": {"systemReservedCgroup": "/system.slice",
                              "kubeReservedCgroup": "/runtime.slice",
                              "enforceNodeAllocatable": ["pods", "system-reserved",
                                                         "kube-reserved"]}}
    # the plan is built against the baseline (as the engine does): it carries the fixes
    plan, results = node_plan.build(config.load(None).nodePools[0], (1, 35), REF, 0, base)
    paths = by_path(results)
    prefix = "spec.output.baseline.kubeletconfig."
    assert list(paths) == [prefix + "systemReservedCgroup", prefix + "kubeReservedCgroup",
                           prefix + "enforceNodeAllocatable", prefix + "cpuManagerPolicy"]
    assert paths[prefix + "systemReservedCgroup"].current == "/system.slice"
    assert paths[prefix + "enforceNodeAllocatable"].proposed == '["pods"]'
    objs, format_results = run("json6902", plan, base)
    assert format_results == []
    patched = jsonpatch.apply_patch(base, json.loads(file_of(objs, "kubelet-config.patch.json")))
    assert (patched["systemReservedCgroup"], patched["kubeReservedCgroup"],
            patched["enforceNodeAllocatable"]) == ("", "", ["pods"])


def test_config_baseline_field():
    typed = {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning"}
    assert config.load(None).output.baseline is None
    assert config.load({**typed, "spec": {"output": {"baseline": None}}}).output.baseline is None
    cfg = config.load({**typed, "spec": {"output": {"formats": list(FORMATS),
                                                    "baseline": JSON6902_BASELINE}}})
    assert cfg.output.baseline == JSON6902_BASELINE and cfg.output.formats == list(FORMATS)
    with pytest.raises(config.ConfigError) as e:
        config.load({**typed, "spec": {"output": {"baseline": ["x"]}}})
    assert e.value.path == "spec.output.baseline"
    with pytest.raises(config.ConfigError, match="unknown key 'baseline'"):
        config.load({"kind": "ConfigMap", "data": {"baseline": "{}"}})


@pytest.mark.parametrize("fmt, platform", [("gke", "GKE"), ("aks", "AKS")])
def test_topology_manager_options_a_platform_cannot_take_are_errors(fmt, platform):
    kubelet = GKE_KUBELET if fmt == "gke" else AKS_KUBELET
    _, results = platform_run(fmt, {**kubelet, "topologyManagerPolicyOptions": {
        "prefer-closest-numa-nodes": "true"}}, **GKE_POOL)
    [r] = [r for r in results if r.severity == ERROR]
    assert (r.path, r.current, r.proposed) == (
        P + "topologyManagerPolicyOptions", '{"prefer-closest-numa-nodes":"true"}', "{}")
    assert r.message == (
        f'topologyManagerPolicyOptions {{"prefer-closest-numa-nodes":"true"}} cannot be set '
        f"on {platform}: its kubelet runs topologyManagerPolicyOptions {{}} (the Topology "
        f"Manager runs without these options (on nodes with more than 8 NUMA nodes a policy "
        f"other than none then stops the kubelet)), and krm-fn judged the pods with "
        f'{{"prefer-closest-numa-nodes":"true"}}; set kubelet.topologyManagerPolicyOptions: '
        f"{{}} so krm-fn judges what {platform} runs")


def test_json6902_text_is_the_same_in_every_process():
    # a GitOps render must not change between syncs; Python's string hashing (and so set
    # order) changes per process, so render in processes with different hash seeds
    code = ("import sys; sys.path[:0] = ['.']\n"
            "import tests.node.test_formats as t\n"
            "from krm_fn import config\nfrom krm_fn.node import plan as node_plan\n"
            "p, _ = node_plan.build(config.load(None).nodePools[0], (1, 35), t.REF)\n"
            "objs, _ = t.run('json6902', p, t.JSON6902_BASELINE)\n"
            "print(t.emit.to_yaml(objs), end='')\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": str(seed)},
                           check=True).stdout for seed in (0, 1, 2, 3)}
    assert outs == {JSON6902_YAML}


def test_eks_without_kube_reserved_memory_gets_nodeadm_s_memory():
    _, results = platform_run("eks", {"kubeReserved": {"cpu": "230m"}}, reserved={"cores": 0})
    [r] = [r for r in results if r.severity == ERROR]
    assert r.path == P + "kubeReserved.memory"
    assert r.message.startswith("EKS: nodeadm sets kubeReserved.memory to 11 * maxPods + 255 "
                                "Mi and the plan has no kubeReserved.memory to replace it")


def test_closed_platform_without_node_memory_warns_only_of_the_memory_reservations():
    # kubeReserved holds only AKS's cpu: accepted silently; systemReserved's memory cannot
    # be checked without topology.memory: warned
    _, results = platform_run("aks", {**AKS_KUBELET, "kubeReserved": {"cpu": "740m"},
                                      "systemReserved": {"memory": "500Mi"}},
                              reserved={"cores": 0})
    assert [(r.severity, r.path) for r in results if "Reserved" in r.path] == [
        (WARNING, P + "systemReserved")]


@pytest.mark.parametrize("fmt", ["openshift", "performance-profile"])
def test_openshift_cannot_clear_a_baseline_kube_reserved_cgroup(fmt):
    # krm-fn writes kubeReservedCgroup "" to clear the node's next to reservedSystemCPUs;
    # the MCO's mergo.Merge(..., WithOverride) never applies an empty value, so the node's
    # /kubelet.slice stays and the kubelet refuses to start. systemReservedCgroup is not an
    # error (hostile testing): the MCO clears it itself next to reservedSystemCPUs
    # (generateKubeletIgnFiles: "disabling systemReservedCgroup enforcement")
    spec = {"nodePools": [{"name": "inference",
                           "nodeSelector": {"node-role.kubernetes.io/inference": ""}}]}
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin-inference"}, "spec": spec})
    base = {"enforceNodeAllocatable": ["pods", "system-reserved-compressible"],
            "systemReservedCgroup": "/system.slice", "kubeReservedCgroup": "/kubelet.slice",
            "systemReserved": {"cpu": "500m", "memory": "1Gi"}, "cgroupDriver": "systemd"}
    p, _ = node_plan.build(cfg.nodePools[0], (1, 36), REF, baseline=base)
    _, results = run(fmt, p, baseline=base)
    cleared = [r for r in results if r.severity == ERROR and "never applies" in r.message]
    assert [r.message.split(" \"\" ")[0].rsplit(" ", 1)[1] for r in cleared] == [
        "kubeReservedCgroup"]
    [r] = cleared
    assert r.path == "spec.output.baseline"
    assert "never applies an empty value" in r.message
    base.pop("kubeReservedCgroup")
    p, _ = node_plan.build(cfg.nodePools[0], (1, 36), REF, baseline=base)
    _, results = run(fmt, p, baseline=base)
    assert [r for r in results if "never applies an empty value" in r.message] == []
    _, results = run(fmt, node_plan.build(cfg.nodePools[0], (1, 36), REF)[0])
    assert [r for r in results if "never applies an empty value" in r.message] == []


def test_gke_leaves_out_values_its_api_refuses():
    # google.container.v1: EvictionSignals.memoryAvailable a quantity >= 100Mi (no %),
    # EvictionMinimumReclaim a percentage <= 10%, maxParallelImagePulls 2 to 5
    objs, results = platform_run("gke", {"extra": {
        "evictionSoft": {"memory.available": "5%", "nodefs.available": "20%"},
        "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "1m"},
        "evictionMinimumReclaim": {"memory.available": "500Mi", "nodefs.available": "5%"},
        "maxParallelImagePulls": 20}})
    config_ = yaml.safe_load(objs[0]["data"]["system-config.yaml"])["kubeletConfig"]
    assert config_["evictionSoft"] == {"nodefsAvailable": "20%"}
    assert config_["evictionMinimumReclaim"] == {"nodefsAvailable": "5%"}
    assert "maxParallelImagePulls" not in config_
    said = [r.message for r in results if r.severity == WARNING and "GKE" in r.message]
    assert ("evictionSoft memory.available 5% is left out of the GKE output: the GKE API takes "
            "a quantity in Ki, Mi or Gi of at least 100Mi there, and refuses the node pool's "
            "system config otherwise") in said
    assert ("maxParallelImagePulls 20 is left out of the GKE output: the GKE API takes a "
            "whole number from 2 to 5 there, and refuses the node pool's system config "
            "otherwise") in said
    objs, _ = platform_run("gke", {"extra": {"maxParallelImagePulls": 3}})
    assert yaml.safe_load(objs[0]["data"]["system-config.yaml"])["kubeletConfig"][
        "maxParallelImagePulls"] == 3
