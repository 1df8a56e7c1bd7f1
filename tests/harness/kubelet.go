package main

// What the kubelet does with its configuration file before it admits a pod: decode it
// (strictly, then leniently as the kubelet falls back to), default it, set the feature gates
// from it, and build the Topology, CPU and Memory Managers exactly as
// cmd/kubelet/app/server.go and pkg/kubelet/cm/container_manager_linux.go do at the release
// this binary is built from. Only the steps that are unexported upstream are written here
// (reservedSystemCPUs overriding the cpu reservations, parsing the reservation maps, the
// hard-eviction reservation); each names the function it follows.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"k8s.io/kubernetes/pkg/kubelet/cadvisor"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/kubernetes/pkg/kubelet/stats/pidlimit"
	kubelettypes "k8s.io/kubernetes/pkg/kubelet/types"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/utils/cpuset"
)

// decoded is a KubeletConfiguration as the kubelet reads its file.
type decoded struct {
	config *kubeletconfig.KubeletConfiguration
	// strictError: what strict decoding refused (unknown or duplicate fields); the kubelet
	// then decodes leniently and starts, logging it. "" when strict decoding succeeded.
	strictError string
}

// decodeConfig decodes a kubelet.config.k8s.io KubeletConfiguration (JSON or YAML) the way
// pkg/kubelet/kubeletconfig/util/codec.DecodeKubeletConfiguration does: strict first, on a
// strict-decoding error the lenient codecs; defaulting applied; internal type returned.
// The kubelet's defaulting panics on a featureGates map it cannot set (a gate enabled whose
// dependency is off, an unknown gate); the kubelet then does not start, so that is an error
// here too.
func decodeConfig(data []byte) (_ *decoded, rerr error) {
	defer func() {
		if r := recover(); r != nil {
			rerr = fmt.Errorf("%v", r)
		}
	}()
	_, strict, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	if err != nil {
		return nil, err
	}
	obj, _, err := strict.UniversalDecoder().Decode(data, nil, nil)
	out := &decoded{}
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, fmt.Errorf("failed to decode: %w", err)
		}
		out.strictError = err.Error()
		_, lenient, lerr := kubeletscheme.NewSchemeAndCodecs()
		if lerr != nil {
			return nil, lerr
		}
		obj, _, lerr = lenient.UniversalDecoder().Decode(data, nil, nil)
		if lerr != nil {
			return nil, fmt.Errorf("failed lenient decoding: %v", err)
		}
	}
	kc, ok := obj.(*kubeletconfig.KubeletConfiguration)
	if !ok {
		return nil, fmt.Errorf("not a KubeletConfiguration: %T", obj)
	}
	out.config = kc
	return out, nil
}

// setGates sets the process's feature gates from the configuration's featureGates, as the
// kubelet does before validating it (cmd/kubelet/app/server.go).
func setGates(kc *kubeletconfig.KubeletConfiguration) error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates)
}

// parseResourceList follows cmd/kubelet/app/server.go parseResourceList: cpu, memory,
// ephemeral-storage and pid only, no negative amounts, cpu rounded to millicores.
func parseResourceList(m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	rl := make(v1.ResourceList)
	for k, v := range m {
		switch v1.ResourceName(k) {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, pidlimit.PIDs:
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("failed to parse quantity %q for %q resource: %w", v, k, err)
			}
			if q.Sign() == -1 {
				return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", k, v)
			}
			if v1.ResourceName(k) == v1.ResourceCPU {
				q.SetMilli((q.ScaledValue(resource.Micro) + 500) / 1000)
			}
			rl[v1.ResourceName(k)] = q
		default:
			return nil, fmt.Errorf("cannot reserve %q resource", k)
		}
	}
	return rl, nil
}

// hardEvictionReservation follows pkg/kubelet/cm/helpers.go hardEvictionReservation.
func hardEvictionReservation(thresholds []evictionapi.Threshold, capacity v1.ResourceList) v1.ResourceList {
	if len(thresholds) == 0 {
		return nil
	}
	ret := v1.ResourceList{}
	for _, threshold := range thresholds {
		if threshold.Operator != evictionapi.OpLessThan {
			continue
		}
		switch threshold.Signal {
		case evictionapi.SignalMemoryAvailable:
			c := capacity[v1.ResourceMemory]
			ret[v1.ResourceMemory] = *evictionapi.GetThresholdQuantity(threshold.Value, &c)
		case evictionapi.SignalNodeFsAvailable:
			c := capacity[v1.ResourceEphemeralStorage]
			ret[v1.ResourceEphemeralStorage] = *evictionapi.GetThresholdQuantity(threshold.Value, &c)
		}
	}
	return ret
}

// ephemeralStorageCapacity is the node's root filesystem as cadvisor reports it (the
// machine info carries no disk): 100Gi unless a command sets another for its request.
var ephemeralStorageCapacity = resource.MustParse("100Gi")

// kubelet is the part of a started kubelet that admits pods.
type kubelet struct {
	config      *kubeletconfig.KubeletConfiguration
	machine     *machineInfo
	capacity    v1.ResourceList
	reservation v1.ResourceList // GetNodeAllocatableReservation
	topo        *topology.CPUTopology
	tm          topologymanager.Manager
	cpu         cpumanager.Manager
	mem         memorymanager.Manager
	logger      klog.Logger
	ctx         context.Context
	// active: the pods admitted so far and the one being admitted, what the managers'
	// activePods returns; a refused pod is not active, so what its earlier containers were
	// given is released when the managers next look (removeStaleState), as in a running
	// kubelet.
	active []*v1.Pod
	// mu guards active: the CPU Manager's reconcile loop reads it from its own goroutine.
	mu sync.Mutex
}

// setActive sets the active pods.
func (k *kubelet) setActive(pods []*v1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.active = pods
}

// activePods is the managers' ActivePodsFunc: a copy of the active pods.
func (k *kubelet) activePods() []*v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*v1.Pod(nil), k.active...)
}

// startError is a configuration the kubelet refuses at start-up, with its own message.
type startError struct{ msg string }

func (e *startError) Error() string { return e.msg }

func refuse(format string, args ...any) error {
	return &startError{fmt.Sprintf(format, args...)}
}

// start builds the kubelet's resource managers from a decoded configuration on a machine,
// in the order and with the arguments of cmd/kubelet/app/server.go run() and
// cm.NewContainerManager: a *startError is what stops the kubelet.
func start(kc *kubeletconfig.KubeletConfiguration, machine *machineInfo, stateDir string) (*kubelet, error) {
	ctx := context.Background()
	logger := klog.Background()
	k := &kubelet{config: kc, machine: machine, logger: logger, ctx: ctx}

	// server.go getReservedCPUs
	reservedCPUs := cpuset.New()
	if kc.ReservedSystemCPUs != "" {
		topo, err := topology.Discover(logger, machine)
		if err != nil {
			return nil, refuse("unable to discover CPU topology info: %s", err)
		}
		set, err := cpuset.Parse(kc.ReservedSystemCPUs)
		if err != nil {
			return nil, refuse("unable to parse reserved-cpus list: %s", err)
		}
		if !set.IsSubsetOf(topo.CPUDetails.CPUs()) {
			return nil, refuse("reserved-cpus: %s is not a subset of online-cpus: %s", kc.ReservedSystemCPUs, topo.CPUDetails.CPUs().String())
		}
		reservedCPUs = set
	}
	kubeReservedMap := copyMap(kc.KubeReserved)
	systemReservedMap := copyMap(kc.SystemReserved)
	if reservedCPUs.Size() > 0 {
		delete(kubeReservedMap, "cpu")
		if systemReservedMap == nil {
			systemReservedMap = map[string]string{}
		}
		systemReservedMap["cpu"] = strconv.Itoa(reservedCPUs.Size())
	}
	kubeReserved, err := parseResourceList(kubeReservedMap)
	if err != nil {
		return nil, refuse("--kube-reserved value failed to parse: %s", err)
	}
	systemReserved, err := parseResourceList(systemReservedMap)
	if err != nil {
		return nil, refuse("--system-reserved value failed to parse: %s", err)
	}
	hard, err := eviction.ParseThresholdConfig([]string{}, kc.EvictionHard, nil, nil, nil)
	if err != nil {
		return nil, refuse("%s", err)
	}
	if _, err := cm.ParseQOSReserved(kc.QOSReserved); err != nil {
		return nil, refuse("--qos-reserved value failed to parse: %s", err)
	}
	var tmOptions map[string]string
	if utilfeature.DefaultFeatureGate.Enabled(features.TopologyManagerPolicyOptions) {
		tmOptions = kc.TopologyManagerPolicyOptions
	} else if kc.TopologyManagerPolicyOptions != nil {
		return nil, refuse("topology manager policy options %v require feature gates %q enabled", kc.TopologyManagerPolicyOptions, "TopologyManagerPolicyOptions")
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.NodeSwap) && !kubeletutil.IsCgroup2UnifiedMode() &&
		kc.MemorySwap.SwapBehavior == string(kubelettypes.LimitedSwap) {
		return nil, refuse("swap feature is enabled and LimitedSwap but it is only supported with cgroupv2")
	}

	// cm.containerManagerImpl: capacity (cadvisor.CapacityFromMachineInfo) and
	// GetNodeAllocatableReservation.
	k.capacity = cadvisor.CapacityFromMachineInfo(machine)
	k.capacity[v1.ResourceEphemeralStorage] = ephemeralStorageCapacity.DeepCopy()
	evictionReservation := hardEvictionReservation(hard, k.capacity)
	k.reservation = v1.ResourceList{}
	for name := range k.capacity {
		value := resource.NewQuantity(0, resource.DecimalSI)
		value.Add(systemReserved[name])
		value.Add(kubeReserved[name])
		if evictionReservation != nil {
			value.Add(evictionReservation[name])
		}
		if !value.IsZero() {
			k.reservation[name] = *value
		}
	}

	k.tm, err = newTopologyManager(logger, machine.Topology, kc.TopologyManagerPolicy, kc.TopologyManagerScope, tmOptions)
	if err != nil {
		return nil, refuse("%s", err)
	}
	// The reconcile period only paces the loop that writes cpusets to running containers
	// (none here): a day keeps that loop asleep.
	k.cpu, err = cpumanager.NewManager(logger, kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions,
		24*time.Hour, machine, reservedCPUs, k.reservation, stateDir, k.tm)
	if err != nil {
		return nil, refuse("%s", err)
	}
	k.tm.AddHintProvider(logger, k.cpu)
	k.mem, err = memorymanager.NewManager(logger, kc.MemoryManagerPolicy, machine, k.reservation,
		kc.ReservedMemory, stateDir, k.tm)
	if err != nil {
		return nil, refuse("%s", err)
	}
	k.tm.AddHintProvider(logger, k.mem)

	// containerManagerImpl.validateNodeAllocatable (at Start).
	var problems []string
	for name, v := range k.reservation {
		value := k.capacity[name].DeepCopy()
		value.Sub(v)
		if value.Sign() < 0 {
			problems = append(problems, fmt.Sprintf("Resource %q has a reservation of %v but capacity of %v. Expected capacity >= reservation.", name, v, k.capacity[name]))
		}
	}
	if len(problems) > 0 {
		return nil, refuse("invalid Node Allocatable configuration. %s", strings.Join(problems, " "))
	}

	// The managers' Start: checkpoints in stateDir, the sources ready (the kubelet has
	// synced with the API server), the admitted pods active; no pod status is known, so
	// the CPU Manager's reconcile loop (asleep: see the reconcile period above) skips them.
	if err := k.cpu.Start(ctx, k.activePods, ready{}, noStatus{}, nil, containermap.NewContainerMap()); err != nil {
		return nil, refuse("%s", err)
	}
	if err := k.mem.Start(ctx, k.activePods, ready{}, noStatus{}, nil, containermap.NewContainerMap()); err != nil {
		return nil, refuse("%s", err)
	}
	if kc.CPUManagerPolicy == "static" {
		k.topo, _ = topology.Discover(logger, machine)
	}
	return k, nil
}

type ready struct{}

func (ready) AddSource(string) {}
func (ready) AllReady() bool   { return true }

type noStatus struct{}

func (noStatus) GetPodStatus(types.UID) (v1.PodStatus, bool) { return v1.PodStatus{}, false }

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// readMachine decodes a cadvisor MachineInfo (its JSON field names: num_cores, topology, ...).
func readMachine(raw json.RawMessage) (*machineInfo, error) {
	var m machineInfo
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("machineInfo: %w", err)
	}
	return &m, nil
}

func tempStateDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "krm-fn-harness-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// nodeGetter is the kubelet's GetCachedNode for one fixed Node.
func nodeGetter(node *v1.Node) func(context.Context, bool) (*v1.Node, error) {
	return func(context.Context, bool) (*v1.Node, error) { return node, nil }
}
