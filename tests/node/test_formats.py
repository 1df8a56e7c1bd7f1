import pytest

from krm_fn import config, yamlout
from krm_fn.node import formats
from krm_fn.node import plan as node_plan
from krm_fn.node.formats import FORMATS, RenderContext, render
from krm_fn.results import Ref

REF = Ref("krm-fn.dev/v1alpha1", "InferenceTuning", "pin-inference")

KUBELET_YAML = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
cpuManagerReconcilePeriod: "30s"
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
      cpuManagerReconcilePeriod: "30s"
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
      7. Put kubelet-config.yaml in place (e.g. as a *.conf file in the kubelet --config-dir drop-in directory, or as a kubeadm kubeletconfiguration patch)
      8. Start the kubelet
      9. Uncordon the node: kubectl uncordon <node>
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
    annotations:
      config.kubernetes.io/local-config: "true"
  cpuManagerPolicy: static
  cpuManagerPolicyOptions:
    full-pcpus-only: "true"
  cpuManagerReconcilePeriod: "30s"
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
  podPidsLimit: 4096
  failCgroupV1: true
"""


@pytest.fixture
def plan():
    p, results = node_plan.build(config.load(None).nodePools[0], (1, 34), REF)
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
    assert yamlout.to_yaml(plan.kubelet) == KUBELET_YAML


def test_configmap_yaml(plan):
    objs = render("configmap", plan, RenderContext("kube-system", False))
    assert yamlout.to_yaml(objs) == CONFIGMAP_YAML
    assert objs[0]["data"]["kubelet-config.yaml"] == KUBELET_YAML


def test_configmap_under_kpt_has_path(plan):
    text = yamlout.to_yaml(render("configmap", plan, RenderContext("kube-system", True)))
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
    assert yamlout.to_yaml(objs) == KUBELET_CONFIG_YAML


def test_kubelet_config_under_kpt_has_path(plan):
    objs = render("kubelet-config", plan, RenderContext("kube-system", True))
    assert objs[0]["metadata"]["annotations"] == {
        "config.kubernetes.io/local-config": "true",
        "internal.config.kubernetes.io/path": "node/kubelet-config-inference.yaml"}
    assert yamlout.to_yaml(objs) == KUBELET_CONFIG_YAML.replace(
        '      config.kubernetes.io/local-config: "true"\n',
        '      config.kubernetes.io/local-config: "true"\n'
        '      internal.config.kubernetes.io/path: node/kubelet-config-inference.yaml\n')


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("set_path", [False, True])
def test_emitted_objects_invariants(plan, name, set_path):
    objs = render(name, plan, RenderContext("kube-system", set_path))
    for obj in objs:
        ann = obj["metadata"].get("annotations", {})
        assert "config.kubernetes.io/function" not in ann
        assert ("config.kubernetes.io/local-config" in ann) == (name == "kubelet-config")
        assert ("internal.config.kubernetes.io/path" in ann) == set_path
        assert all(type(s) is str for s in _strings(obj))


def test_unknown_format(plan):
    with pytest.raises(ValueError, match="unknown output format 'helm'"):
        render("helm", plan, RenderContext("kube-system", False))
