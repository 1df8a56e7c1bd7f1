package main

// harness admit: pods admitted one after another on one node by the kubelet's own admit
// handlers, in the kubelet's order (pkg/kubelet/kubelet.go NewMainKubelet): the Topology
// Manager (which asks the CPU and Memory Managers for hints and allocates from them), then
// the resource predicates (pkg/kubelet/lifecycle/predicate.go) against the node's
// allocatable (pkg/kubelet/nodestatus MachineInfo). A pod reaches the kubelet only once the
// scheduler has bound it, and the scheduler's NodeResourcesFit filter is the same check as
// the kubelet's resource predicate (both call the scheduler framework's noderesources.Fits):
// so the predicate also runs first, as the scheduler's fit, and a pod that fails it is
// refused with its reason before the resource managers see it. The device manager and DRA are not
// built: no pod here asks for devices, and a provider without hints is "don't care".

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// admitInput is the document `harness admit` reads.
type admitInput struct {
	// MachineInfo: a cadvisor MachineInfo (num_cores, memory_capacity, hugepages, topology).
	MachineInfo json.RawMessage `json:"machineInfo"`
	// KubeletConfig: a kubelet.config.k8s.io/v1beta1 KubeletConfiguration.
	KubeletConfig json.RawMessage `json:"kubeletConfig"`
	// NodeLabels: the Node's labels (kubernetes.io/os=linux is added when absent).
	NodeLabels map[string]string `json:"nodeLabels"`
	// Pods: the pods in the order they arrive.
	Pods []v1.Pod `json:"pods"`
	// Repeat: after Pods, admit copies of the last pod until one is refused or Repeat
	// copies were tried (0: none).
	Repeat int `json:"repeat"`
	// Checkpoints: files put in the kubelet's state directory before it starts, by base
	// name ("cpu_manager_state", "memory_manager_state"): a node's state from an earlier
	// configuration.
	Checkpoints map[string]string `json:"checkpoints"`
}

type containerResult struct {
	Name string `json:"name"`
	// CPUs: the container's exclusive CPUs (the CPU Manager's assignment), [] when none.
	CPUs []int `json:"cpus"`
	// CPUNUMA: the NUMA nodes of those CPUs.
	CPUNUMA []int `json:"cpuNuma"`
	// MemoryNUMA: the NUMA nodes the Memory Manager gives the container's memory, [] when
	// it gives none (policy None, or not a Guaranteed pod).
	MemoryNUMA []int `json:"memoryNuma"`
}

type podResult struct {
	Name       string            `json:"name"`
	Admitted   bool              `json:"admitted"`
	Reason     string            `json:"reason,omitempty"`
	Message    string            `json:"message,omitempty"`
	Containers []containerResult `json:"containers,omitempty"`
}

type admitOutput struct {
	// StartError: the kubelet does not start with this configuration on this machine (its
	// own message); nothing is admitted then.
	StartError string      `json:"startError,omitempty"`
	Pods       []podResult `json:"pods"`
	// Copies: how many copies of the last pod were admitted after Pods (with Repeat).
	Copies int `json:"copies"`
	// StoppedBy: the refusal of the first copy that was not admitted.
	StoppedBy *podResult `json:"stoppedBy,omitempty"`
	// Allocatable: the node's allocatable as the kubelet reports it.
	Allocatable map[string]string `json:"allocatable,omitempty"`
	// Checkpoints: the files of the state directory once the pods were admitted, by base
	// name (what the next start of the node finds).
	Checkpoints map[string]string `json:"checkpoints,omitempty"`
}

func admitCommand(input []byte) (any, error) {
	var in admitInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	machine, err := readMachine(in.MachineInfo)
	if err != nil {
		return nil, err
	}
	dec, err := decodeConfig(in.KubeletConfig)
	if err != nil {
		return admitOutput{StartError: err.Error(), Pods: []podResult{}}, nil
	}
	if err := setGates(dec.config); err != nil {
		return admitOutput{StartError: err.Error(), Pods: []podResult{}}, nil
	}
	dir, cleanup, err := tempStateDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for name, content := range in.Checkpoints {
		if filepath.Base(name) != name {
			return nil, fmt.Errorf("checkpoints: %q is not a file name", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	k, err := start(dec.config, machine, dir)
	if err != nil {
		if _, ok := err.(*startError); ok {
			return admitOutput{StartError: err.Error(), Pods: []podResult{}}, nil
		}
		return nil, err
	}

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Labels: map[string]string{}}}
	for key, value := range in.NodeLabels {
		node.Labels[key] = value
	}
	if _, ok := node.Labels[v1.LabelOSStable]; !ok {
		node.Labels[v1.LabelOSStable] = "linux"
	}
	if err := machineInfoSetter(k)(k.ctx, node); err != nil {
		return nil, err
	}
	predicate := lifecycle.NewPredicateAdmitHandler(
		nodeGetter(node), lifecycle.NewAdmissionFailureHandlerStub(),
		func(*schedulerframework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil })
	handlers := []lifecycle.PodAdmitHandler{predicate, k.tm, predicate}

	out := admitOutput{Pods: []podResult{}, Allocatable: map[string]string{}}
	for name, q := range node.Status.Allocatable {
		out.Allocatable[string(name)] = q.String()
	}
	var admitted []*v1.Pod
	admit := func(pod *v1.Pod) podResult {
		res := podResult{Name: pod.Name, Admitted: true}
		// the kubelet adds a pod to its pod manager before admitting it (HandlePodAdditions),
		// so it is active while admitted, and not once refused (rejectPod marks it failed)
		k.setActive(append(append([]*v1.Pod{}, admitted...), pod))
		defer func() { k.setActive(admitted) }()
		for _, h := range handlers {
			r := admitWith(k.ctx, h, admitAttrs(pod, admitted))
			if !r.Admit {
				res.Admitted, res.Reason, res.Message = false, r.Reason, r.Message
				return res
			}
		}
		admitted = append(admitted, pod)
		for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			res.Containers = append(res.Containers, k.containerResult(pod, &c))
		}
		return res
	}
	for i := range in.Pods {
		pod := in.Pods[i].DeepCopy()
		if pod.UID == "" {
			pod.UID = types.UID(fmt.Sprintf("pod-%d", i))
		}
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("pod-%d", i)
		}
		out.Pods = append(out.Pods, admit(pod))
	}
	if in.Repeat > 0 && len(in.Pods) > 0 {
		last := in.Pods[len(in.Pods)-1]
		for i := 0; i < in.Repeat; i++ {
			pod := last.DeepCopy()
			pod.UID = types.UID(fmt.Sprintf("copy-%d", i))
			pod.Name = fmt.Sprintf("%s-copy-%d", last.Name, i)
			r := admit(pod)
			if !r.Admitted {
				out.StoppedBy = &r
				break
			}
			out.Copies++
		}
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out.Checkpoints = map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".") {
			continue // a checkpoint being written (its temporary file)
		}
		content, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Checkpoints[f.Name()] = string(content)
	}
	return out, nil
}

// containerResult reads what the CPU and Memory Managers assigned to one admitted container.
func (k *kubelet) containerResult(pod *v1.Pod, c *v1.Container) containerResult {
	res := containerResult{Name: c.Name, CPUs: []int{}, CPUNUMA: []int{}, MemoryNUMA: []int{}}
	cpus := k.cpu.GetExclusiveCPUs(string(pod.UID), c.Name)
	res.CPUs = cpus.List()
	if k.topo != nil && cpus.Size() > 0 {
		res.CPUNUMA = k.topo.CPUDetails.KeepOnly(cpus).NUMANodes().List()
	}
	if nodes := k.mem.GetMemoryNUMANodes(k.logger, pod, c); nodes != nil {
		res.MemoryNUMA = nodes.UnsortedList()
		sort.Ints(res.MemoryNUMA)
	}
	return res
}
