package main

// harness kubeletconfig: does a kubelet of this release start with a configuration file?
// The steps of cmd/kubelet/app/server.go (NewKubeletCommand, then run) that read the
// configuration, each with the kubelet's own code, in its order; the first that refuses
// ends the run with the kubelet's own message:
//
//	decode    configfiles.NewFsLoader(...).Load: strict decoding, on a strict-decoding
//	          error (an unknown or duplicate field) lenient decoding, as the kubelet does
//	          (it logs the strict error and starts: strictError); v1beta1 defaulting;
//	          then loadConfigFile's evictionHard default (unexported upstream: followed
//	          here). Defaulting sets the featureGates on a copy of the gates and panics
//	          when that fails (v1beta1/defaults.go SetDefaults_KubeletConfiguration:
//	          "failed to merge global and in-flight KubeletConfiguration while setting
//	          defaults, error: unrecognized feature gate: X"): the kubelet crashes there,
//	          before its own SetFromMap; the panic's message is the error (panic: true)
//	gates     utilfeature.DefaultMutableFeatureGate.SetFromMap(featureGates): unknown
//	          gates, gates locked to their default, gates whose dependencies are off
//	validate  validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate)
//	          (pkg/kubelet/apis/config/validation), on a node running cgroup v2 unless
//	          the input says cgroupV1
//	start     with a machine only: what run() and cm.NewContainerManager refuse
//	          (reservedSystemCPUs on the machine, the reservation maps, hard eviction,
//	          qosReserved, Topology Manager options and their gate, the CPU Manager's
//	          policy and options (NewStaticPolicy), the Memory Manager's reservedMemory
//	          against the reservations, Node Allocatable capacity >= reservation):
//	          start() in kubelet.go; then what NewMainKubelet refuses in the file alone
//	          (mainKubelet: sync frequency, configmap and secret strategy, container log
//	          limits, every eviction threshold). The machine's root filesystem is
//	          ephemeralStorageCapacity.
//
// Not run: what depends on the host rather than the file (cgroup roots, swap, the CRI,
// certificates, the lock file), logging's Apply (once per process; its Validate is part
// of ValidateKubeletConfiguration), and flags.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	_ "unsafe" // go:linkname

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletconfigv1beta1conversion "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	"k8s.io/kubernetes/pkg/kubelet/logs"
	"k8s.io/kubernetes/pkg/kubelet/sysctl"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
	"sigs.k8s.io/yaml"
)

// The cgroup mode the kubelet's code sees (github.com/opencontainers/cgroups
// IsCgroup2UnifiedMode, which statfs's /sys/fs/cgroup once per process): set per request
// so that the answer is the modelled node's, not the machine the tests run on.
//
//go:linkname cgroupIsUnified github.com/opencontainers/cgroups.isUnified
var cgroupIsUnified bool

//go:linkname cgroupIsUnifiedOnce github.com/opencontainers/cgroups.isUnifiedOnce
var cgroupIsUnifiedOnce sync.Once

func setCgroupV2(v2 bool) {
	cgroupIsUnifiedOnce.Do(func() {})
	cgroupIsUnified = v2
}

// kubeletConfigInput is the document `harness kubeletconfig` reads.
type kubeletConfigInput struct {
	// KubeletConfig: the configuration file, a kubelet.config.k8s.io/v1beta1
	// KubeletConfiguration: a JSON object, or a JSON string holding the file's text (YAML
	// or JSON), read as the kubelet reads its file (YAML is converted to JSON with its
	// keys sorted, so a type error the kubelet reports first is the first in key order).
	KubeletConfig json.RawMessage `json:"kubeletConfig"`
	// MachineInfo: a cadvisor MachineInfo; without it the start stage is not run.
	MachineInfo json.RawMessage `json:"machineInfo,omitempty"`
	// CgroupV1: the node runs cgroup v1 (default: cgroup v2, which krm-fn's nodes need).
	CgroupV1 bool `json:"cgroupV1,omitempty"`
	// EphemeralStorageCapacity: the root filesystem's size, a quantity (default 100Gi).
	EphemeralStorageCapacity string `json:"ephemeralStorageCapacity,omitempty"`
}

// kubeletConfigOutput is what it writes.
type kubeletConfigOutput struct {
	// StrictError: what strict decoding refused (the kubelet logs it, decodes leniently
	// and goes on: unknown fields are ignored); "" when strict decoding succeeded.
	StrictError string `json:"strictError"`
	// Error: the kubelet's message at the first stage that refuses; "" when none does.
	Error string `json:"error"`
	// Errors: Error split into the kubelet's messages when it is an aggregate of several
	// (ValidateKubeletConfiguration, SetFromMap: utilerrors.Aggregate), else [Error].
	Errors []string `json:"errors,omitempty"`
	// Stage: decode, gates, validate or start: where it refused; "" when it did not.
	Stage string `json:"stage"`
	// OK: the kubelet starts with this configuration (on this machine, when given).
	OK bool `json:"ok"`
	// Panic: the kubelet crashed at that stage (a panic) rather than returning an error.
	Panic bool `json:"panic,omitempty"`
}

func kubeletConfigCommand(input []byte) (any, error) {
	var in kubeletConfigInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if len(in.KubeletConfig) == 0 {
		return nil, fmt.Errorf("input: kubeletConfig is missing")
	}
	var machine *machineInfo
	if len(in.MachineInfo) > 0 && string(in.MachineInfo) != "null" {
		m, err := readMachine(in.MachineInfo)
		if err != nil {
			return nil, err
		}
		machine = m
	}
	file := []byte(in.KubeletConfig)
	if strings.HasPrefix(strings.TrimSpace(string(file)), `"`) {
		var text string
		if err := json.Unmarshal(in.KubeletConfig, &text); err != nil {
			return nil, fmt.Errorf("input: kubeletConfig: %w", err)
		}
		file = []byte(text)
	}
	setCgroupV2(!in.CgroupV1)
	ctx := context.Background()
	out := kubeletConfigOutput{}
	refused := func(stage string, err error) (any, error) {
		out.Stage, out.Error = stage, err.Error()
		for _, e := range utilerrors.Flatten(utilerrors.NewAggregate([]error{err})).Errors() {
			out.Errors = append(out.Errors, e.Error())
		}
		return out, nil
	}

	dir, cleanup, err := tempStateDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	out.StrictError = strictDecodingError(file)
	kc, crash, err := loadConfigFile(ctx, filepath.Join(dir, "kubelet.conf"), file)
	if crash != "" {
		out.Panic = true
		out.Stage, out.Error, out.Errors = "decode", crash, panicMessages(crash, file)
		return out, nil
	}
	if err != nil {
		return refused("decode", err)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		return refused("gates", err)
	}
	if err := validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		return refused("validate", err)
	}
	if machine != nil {
		state := filepath.Join(dir, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			return nil, err
		}
		if in.EphemeralStorageCapacity != "" {
			q, err := resource.ParseQuantity(in.EphemeralStorageCapacity)
			if err != nil {
				return nil, fmt.Errorf("input: ephemeralStorageCapacity: %w", err)
			}
			saved := ephemeralStorageCapacity
			ephemeralStorageCapacity = q
			defer func() { ephemeralStorageCapacity = saved }()
		}
		if _, err := start(kc, machine, state); err != nil {
			if _, ok := err.(*startError); ok {
				return refused("start", err)
			}
			return nil, err
		}
		if err := mainKubelet(kc); err != nil {
			return refused("start", err)
		}
	}
	out.OK = true
	return out, nil
}

// panicMessages splits the message of defaulting's panic on featureGates ("failed to merge
// global and in-flight KubeletConfiguration while setting defaults, error: <SetFromMap's
// error>", where that error may aggregate several gates' in Go's map order) into one
// message per gate: the same SetFromMap on a copy of the gates, each of its errors after
// the panic's own prefix. [crash] when it cannot be split.
func panicMessages(crash string, data []byte) []string {
	const sep = ", error: "
	i := strings.Index(crash, sep)
	var doc struct {
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if i < 0 || yaml.Unmarshal(data, &doc) != nil {
		return []string{crash}
	}
	err := utilfeature.DefaultMutableFeatureGate.DeepCopy().SetFromMap(doc.FeatureGates)
	if err == nil {
		return []string{crash}
	}
	var out []string
	for _, e := range utilerrors.Flatten(utilerrors.NewAggregate([]error{err})).Errors() {
		out = append(out, crash[:i+len(sep)]+e.Error())
	}
	return out
}

// strictDecodingError is the error the kubelet logs before it falls back to lenient
// decoding (pkg/kubelet/kubeletconfig/util/codec DecodeKubeletConfiguration, with the
// strict codecs configfiles.NewFsLoader makes), or "" (also when defaulting panics:
// loadConfigFile reports that).
func strictDecodingError(data []byte) (msg string) {
	defer func() {
		if recover() != nil {
			msg = ""
		}
	}()
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	if err != nil {
		return ""
	}
	if _, _, err := codecs.UniversalDecoder().Decode(data, nil, nil); err != nil &&
		runtime.IsStrictDecodingError(err) {
		return err.Error()
	}
	return ""
}

// loadConfigFile follows cmd/kubelet/app/server.go loadConfigFile: the file is read by
// configfiles.NewFsLoader(...).Load (decoding, defaulting, relative paths resolved), then
// evictionHard gets the kubelet's default when the file has none, or the defaults it does
// not set with mergeDefaultEvictionSettings. Its errors are the loader's, without the
// "failed to load Kubelet config file <path>" wrapper (the path is a temporary file);
// `crash` is the message of a panic in decoding or defaulting ("" when none).
func loadConfigFile(ctx context.Context, path string, data []byte) (kc *kubeletconfig.KubeletConfiguration, crash string, err error) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, "", err
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, path)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if r := recover(); r != nil {
			kc, crash, err = nil, fmt.Sprint(r), nil
		}
	}()
	kc, err = loader.Load(ctx)
	if err != nil {
		return nil, "", err
	}
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	} else if kc.MergeDefaultEvictionSettings {
		for k, v := range eviction.DefaultEvictionHard {
			if _, exists := kc.EvictionHard[k]; !exists {
				kc.EvictionHard[k] = v
			}
		}
	}
	return kc, "", nil
}

// mainKubelet follows the refusals of pkg/kubelet/kubelet.go NewMainKubelet that depend on
// the configuration file alone, in its order, for a node with an API server (the
// configmap and secret managers exist): the sync frequency, the configmap and secret
// change detection strategy, the container log manager's limits
// (logs.NewContainerLogManager), every eviction threshold (eviction.ParseThresholdConfig
// with enforceNodeAllocatable: soft thresholds, their grace periods, minimum reclaims) and
// the sysctl allowlist (sysctl.NewAllowlist of the safe sysctls and allowedUnsafeSysctls).
func mainKubelet(kc *kubeletconfig.KubeletConfiguration) error {
	if kc.SyncFrequency.Duration <= 0 {
		return fmt.Errorf("invalid sync frequency %d", kc.SyncFrequency.Duration)
	}
	switch kc.ConfigMapAndSecretChangeDetectionStrategy {
	case kubeletconfig.WatchChangeDetectionStrategy, kubeletconfig.TTLCacheChangeDetectionStrategy,
		kubeletconfig.GetChangeDetectionStrategy:
	default:
		return fmt.Errorf("unknown configmap and secret manager mode: %v", kc.ConfigMapAndSecretChangeDetectionStrategy)
	}
	if _, err := logs.NewContainerLogManager(nil, nil, kc.ContainerLogMaxSize,
		int(kc.ContainerLogMaxFiles), int(kc.ContainerLogMaxWorkers), kc.ContainerLogMonitorInterval); err != nil {
		return fmt.Errorf("failed to initialize container log manager: %v", err)
	}
	if _, err := eviction.ParseThresholdConfig(kc.EnforceNodeAllocatable, kc.EvictionHard, kc.EvictionSoft,
		kc.EvictionSoftGracePeriod, kc.EvictionMinimumReclaim); err != nil {
		return err
	}
	// the safe sysctls and allowedUnsafeSysctls, each known to be namespaced
	safeAndUnsafe := append(sysctl.SafeSysctlAllowlist(context.Background()), kc.AllowedUnsafeSysctls...)
	if _, err := sysctl.NewAllowlist(safeAndUnsafe); err != nil {
		return err
	}
	return nil
}

// defaultsCommand is `harness defaults`: what v1beta1 defaulting
// (pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration, with the
// release's default feature gates) writes into an empty KubeletConfiguration, as JSON, and
// which fields are pointers (a pointer is defaulted only when absent; a field of a value
// type also when it holds its zero value). tools/gen_kubelet_defaults.py writes it into
// krm_fn/node/data/defaults.py.
func defaultsCommand([]byte) (any, error) {
	obj := &kubeletconfigv1beta1.KubeletConfiguration{}
	kubeletconfigv1beta1conversion.SetDefaults_KubeletConfiguration(obj)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var defaults map[string]any
	if err := json.Unmarshal(data, &defaults); err != nil {
		return nil, err
	}
	pointers := []string{}
	t := reflect.TypeOf(*obj)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		if k := f.Type.Kind(); k == reflect.Pointer || k == reflect.Slice || k == reflect.Map {
			pointers = append(pointers, name)
		}
	}
	return map[string]any{"release": release(), "defaults": defaults, "nilable": pointers,
		"fields": fieldTree(t, 0)}, nil
}

// fieldTree is the JSON field names of struct type t, each with the tree of its own
// struct type (through pointers, slices and maps) or nil for a value decoded as a whole
// (a scalar, or a type with its own UnmarshalJSON such as metav1.Duration): what strict
// decoding knows, nested fields of other packages' types included.
func fieldTree(t reflect.Type, depth int) map[string]any {
	out := map[string]any{}
	unmarshaler := reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		var sub map[string]any
		if ft.Kind() == reflect.Struct && depth < 6 && !reflect.PointerTo(ft).Implements(unmarshaler) {
			sub = fieldTree(ft, depth+1)
		}
		if name == "-" {
			continue
		}
		if name == "" && f.Anonymous { // an embedded struct's fields are inlined
			for k, v := range sub {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if sub != nil {
			out[name] = sub
		} else {
			out[name] = nil
		}
	}
	return out
}
