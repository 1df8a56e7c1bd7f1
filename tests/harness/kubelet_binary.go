package main

// What the kubelet binary has besides the packages the harness calls.
//
// The packages cmd/kubelet/kubelet.go links, for what their init functions register:
// cmd/kubelet/app adds the logging feature gates (logsapi.AddFeatureGates:
// ContextualLogging, LoggingAlphaOptions, LoggingBetaOptions) and, through
// pkg/kubelet/server, the metrics gates; logs/json/register the json logging format that
// logging.format may name. Without them the harness's kubelet would refuse gates and
// formats the real one accepts.
//
// The version a release build stamps into k8s.io/component-base/version with -ldflags
// (hack/lib/version.sh: gitVersion, gitMajor, gitMinor): the kubelet checks
// showHiddenMetricsForVersion against it (component-base/metrics ValidateShowHiddenMetricsVersion).

import (
	"strings"
	"sync/atomic"
	_ "unsafe" // go:linkname

	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)

//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

// Get() reads this copy of gitVersion, which the package's init took before ours ran.
//
//go:linkname dynamicGitVersion k8s.io/component-base/version.dynamicGitVersion
var dynamicGitVersion atomic.Value

func init() {
	if v := release(); strings.HasPrefix(v, "v") {
		gitVersion = v
		dynamicGitVersion.Store(v)
		parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
		if len(parts) >= 2 {
			gitMajor, gitMinor = parts[0], parts[1]
		}
	}
}
