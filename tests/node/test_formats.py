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
from krm_fn.results import ERROR, WARNING, Ref
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
    """{field.path: result} of warnings (each path once)."""
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
    assert "spec.nodePools[2].kubelet.cpuManagerPolicyOptions" in by_path(results)


# openshift

def test_openshift_yaml(plan):
    objs, results = run("openshift", plan)
    assert emit.to_yaml(objs) == OPENSHIFT_YAML
    assert "namespace" not in objs[0]["metadata"]          # KubeletConfig is cluster-scoped
    [nto] = results
    assert (nto.severity, nto.ref, nto.path) == (WARNING, REF, "spec.nodePools[0].kubelet")
    assert "PerformanceProfile" in nto.message and "performance-<profile>" in nto.message
    assert "OpenShift" in nto.message and "reservedSystemCPUs" in nto.message


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

GKE_UNSUPPORTED = ["cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "reservedSystemCPUs",
                   "kubeReserved", "systemReserved", "evictionHard"]


def test_gke_yaml(plan):
    objs, results = run("gke", plan)
    assert emit.to_yaml(objs) == GKE_YAML
    assert list(by_path(results)) == [P + k for k in GKE_UNSUPPORTED]


@pytest.mark.parametrize("key", GKE_UNSUPPORTED)
def test_gke_warns_each_field_it_cannot_set(plan, key):
    r = by_path(run("gke", plan)[1])[P + key]
    assert r.message.startswith(f"{key} ")
    assert "left out of the GKE output: GKE cannot set it" in r.message
    assert r.current == (plan.kubelet[key] if isinstance(plan.kubelet[key], str)
                         else json.dumps(plan.kubelet[key], separators=(",", ":")))


@pytest.mark.parametrize("pids", [1, 1023, 4194304])
def test_gke_pod_pids_limit_out_of_bounds(pids):
    objs, results = run("gke", make_plan({"podPidsLimit": pids}))
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert "podPidsLimit" not in gke
    r = by_path(results)[P + "podPidsLimit"]
    assert "from 1024 to 4194303" in r.message and r.current == str(pids)


@pytest.mark.parametrize("pids", [1024, 4194303])
def test_gke_pod_pids_limit_bounds_are_inclusive(pids):
    objs, results = run("gke", make_plan({"podPidsLimit": pids}))
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert gke["podPidsLimit"] == pids
    assert P + "podPidsLimit" not in by_path(results)


def test_gke_memory_manager_static_and_renamed_fields():
    # 1.36: CustomCPUCFSQuotaPeriod is on (the kubelet of 1.35 refuses 50ms without it);
    # the low threshold below the high one (the kubelet refuses 80 over the default 80)
    p = make_plan({"memoryManagerPolicy": "Static", "singleProcessOOMKill": True, "extra": {
        "cpuCFSQuotaPeriod": "50ms", "imageGCHighThresholdPercent": 80,
        "imageGCLowThresholdPercent": 70,
        "evictionMaxPodGracePeriod": 60,
        "evictionSoft": {"memory.available": "200Mi", "nodefs.available": "15%"},
        "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "2m"}}},
        version=(1, 36))
    objs, results = run("gke", p)
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
    p = make_plan({"extra": {"evictionSoft": {"allocatableMemory.available": "1Gi"},
                             "evictionSoftGracePeriod": {"allocatableMemory.available": "1m"}}})
    objs, results = run("gke", p)
    gke = yaml.safe_load(file_of(objs, "system-config.yaml"))["kubeletConfig"]
    assert "evictionSoft" not in gke
    assert "allocatableMemory.available" in by_path(results)[P + "extra.evictionSoft"].message


def test_gke_fail_cgroup_v1_false_is_warned():
    objs, results = run("gke", make_plan({"failCgroupV1": False}))
    assert "linuxConfig" not in yaml.safe_load(file_of(objs, "system-config.yaml"))
    assert "cgroup v2" in by_path(results)[P + "failCgroupV1"].message


# aks

AKS_UNSUPPORTED = ["cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "topologyManagerScope",
                   "reservedSystemCPUs", "kubeReserved", "systemReserved", "evictionHard",
                   "failCgroupV1"]


def test_aks_yaml(plan):
    objs, results = run("aks", plan)
    assert emit.to_yaml(objs) == AKS_YAML
    assert list(by_path(results)) == [P + k for k in AKS_UNSUPPORTED]


@pytest.mark.parametrize("key", AKS_UNSUPPORTED)
def test_aks_warns_each_field_it_cannot_set(plan, key):
    r = by_path(run("aks", plan)[1])[P + key]
    assert r.message.startswith(f"{key} ")
    assert "left out of the AKS output: AKS cannot set it" in r.message


def test_aks_renames_and_defaults():
    p = make_plan({"topologyManagerScope": "container", "extra": {
        "cpuCFSQuota": True, "imageGCLowThresholdPercent": 70, "containerLogMaxSize": "20Mi",
        "containerLogMaxFiles": 3, "failSwapOn": False, "allowedUnsafeSysctls": ["net.*"]}})
    objs, results = run("aks", p)
    assert json.loads(file_of(objs, "kubelet-config.json")) == {
        "cpuManagerPolicy": "static", "topologyManagerPolicy": "best-effort", "podMaxPids": 4096,
        "cpuCfsQuota": True, "imageGcLowThreshold": 70, "containerLogMaxSizeMB": 20,
        "containerLogMaxFiles": 3, "failSwapOn": False, "allowedUnsafeSysctls": ["net.*"]}
    assert P + "topologyManagerScope" not in by_path(results)    # the kubelet default


# (containerLogMaxFiles 1, which AKS would not take either, is refused by the kubelet itself:
# "containerLogMaxFiles must be greater than 1", validation.go)
@pytest.mark.parametrize("extra,key,text", [
    ({"containerLogMaxSize": "1500Ki"}, "containerLogMaxSize", "whole number of MiB"),
])
def test_aks_values_it_cannot_take(extra, key, text):
    objs, results = run("aks", make_plan({"extra": extra}))
    assert text in by_path(results)[P + "extra." + key].message
    assert len(json.loads(file_of(objs, "kubelet-config.json"))) == 3


def test_aks_memory_manager_static_is_warned():
    _, results = run("aks", make_plan({"memoryManagerPolicy": "Static"}))
    mine = [r.message.split(" ")[0] for r in results if r.path == P + "memoryManagerPolicy"]
    assert mine == ["memoryManagerPolicy", "reservedMemory"]


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
    r = by_path(results)[P + "kubeReserved.memory"]
    assert "reservedMemory" in r.message and "11 * maxPods + 255 Mi" in r.message
    assert "refuses to start" in r.message
    config_ = yaml.safe_load(file_of(objs, "nodeconfig.yaml"))["spec"]["kubelet"]["config"]
    assert config_["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "600Mi"}}]


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
    r = by_path(results)[P + "systemReserved"]
    assert "reservedMemory" in r.message and "384Mi" in r.message


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
def test_topology_manager_options_a_platform_cannot_take_are_warned(fmt, platform):
    p = make_plan({"topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"}})
    _, results = run(fmt, p)
    r = by_path(results)[P + "topologyManagerPolicyOptions"]
    assert (r.severity, r.current) == (WARNING, '{"prefer-closest-numa-nodes":"true"}')
    assert r.message == (
        f'topologyManagerPolicyOptions {{"prefer-closest-numa-nodes":"true"}} is left out of '
        f"the {platform} output: {platform} cannot set it; the Topology Manager runs without "
        f"these options (on nodes with more than 8 NUMA nodes a policy other than none then "
        f"stops the kubelet)")


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
