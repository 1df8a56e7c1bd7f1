//go:build k8s_1_37

package main

// The calls whose signatures differ between the built releases (one compat_<minor>.go per
// minor, chosen with -tags k8s_<minor>; tests/harness/runner.py passes it).

import (
	"context"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/nodestatus"
)

// machineInfo is cadvisor's MachineInfo as the kubelet of this release imports it.
type machineInfo = cadvisorapi.MachineInfo

func newTopologyManager(logger klog.Logger, topo []cadvisorapi.Node, policy, scope string, options map[string]string) (topologymanager.Manager, error) {
	return topologymanager.NewManager(logger, topo, policy, scope, options)
}

func admitAttrs(pod *v1.Pod, others []*v1.Pod) *lifecycle.PodAdmitAttributes {
	return &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: others, Operation: lifecycle.AddOperation}
}

func admitWith(ctx context.Context, h lifecycle.PodAdmitHandler, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return h.Admit(ctx, attrs)
}

func machineInfoSetter(k *kubelet) nodestatus.Setter {
	return nodestatus.MachineInfo("node", int(k.config.MaxPods), int(k.config.PodsPerCore),
		func() (*cadvisorapi.MachineInfo, error) { return k.machine, nil },
		func(klog.Logger, bool) v1.ResourceList { return k.capacity },
		func(klog.Logger) (v1.ResourceList, v1.ResourceList, []string) { return nil, nil, nil },
		func() v1.ResourceList { return k.reservation },
		func(string, string, string) {},
		func() *bool { return nil },
		true)
}
