//go:build k8s_1_35 || k8s_1_36

package main

// See compat_1_37.go: the calls 1.35 and 1.36 make alike.

import (
	"context"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/nodestatus"
)

// machineInfo is cadvisor's MachineInfo as the kubelet of this release imports it.
type machineInfo = cadvisorapi.MachineInfo

func newTopologyManager(_ klog.Logger, topo []cadvisorapi.Node, policy, scope string, options map[string]string) (topologymanager.Manager, error) {
	return topologymanager.NewManager(topo, policy, scope, options)
}

func admitWith(_ context.Context, h lifecycle.PodAdmitHandler, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return h.Admit(attrs)
}

func machineInfoSetter(k *kubelet) nodestatus.Setter {
	return nodestatus.MachineInfo("node", int(k.config.MaxPods), int(k.config.PodsPerCore),
		func() (*cadvisorapi.MachineInfo, error) { return k.machine, nil },
		func(bool) v1.ResourceList { return k.capacity },
		func() (v1.ResourceList, v1.ResourceList, []string) { return nil, nil, nil },
		func() v1.ResourceList { return k.reservation },
		func(string, string, string) {},
		true)
}
