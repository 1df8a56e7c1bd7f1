package main

// The packages the kubelet binary links besides the ones the harness calls, for what their
// init functions register, as cmd/kubelet/kubelet.go imports them: cmd/kubelet/app adds
// the logging feature gates (logsapi.AddFeatureGates: ContextualLogging,
// LoggingAlphaOptions, LoggingBetaOptions) and, through pkg/kubelet/server, the metrics
// gates; logs/json/register the json logging format that logging.format may name. Without
// them the harness's kubelet would refuse gates and formats the real one accepts.

import (
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)
