// Command harness runs the kubelet's own code on inputs that krm-fn's tests send it, so
// that krm-fn's model of the kubelet is judged by the real thing (docs/verdict.md, "Checked
// against the kubelet's code").
//
// It is built once per Kubernetes minor, from k8s.io/kubernetes at one exact release
// (go.mod, go.<minor>.mod; tests/harness/modfiles.py writes them). Subcommands read one JSON
// document on standard input and write one JSON document on standard output:
//
//	harness admit     the Topology, CPU and Memory Managers and the kubelet's resource
//	                  predicates admitting pods one after another on one node
//	harness kubeletconfig  whether the kubelet starts with a configuration file: decoding,
//	                  feature gates, validation and, on a machine, the start-up of its
//	                  resource managers (kubeletconfig.go)
//	harness defaults  what v1beta1 defaulting writes into an empty configuration
//	harness version   the k8s.io/kubernetes release it was built from
//	harness serve     many requests, one JSON object a line: {"command": "admit", "input":
//	                  {...}} in, {"output": {...}} or {"error": "..."} out; the feature
//	                  gates are reset before each request, as in a fresh kubelet
//
// Exit status 0 whenever a result was written (a rejection is a result); 2 for input the
// harness cannot read.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
)

type command func(input []byte) (any, error)

var commands = map[string]command{
	"admit":         admitCommand,
	"kubeletconfig": kubeletConfigCommand,
	"defaults":      defaultsCommand,
	"version":       func([]byte) (any, error) { return map[string]string{"kubernetes": release()}, nil },
}

// release is the k8s.io/kubernetes version the binary was built with.
func release() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	// KRM_FN_HARNESS_V=<level> shows the kubelet's own log on stderr (klog -v), to see
	// why a manager decided as it did; quiet otherwise.
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	if v := os.Getenv("KRM_FN_HARNESS_V"); v != "" {
		_ = flags.Set("v", v)
	} else {
		_ = flags.Set("logtostderr", "false")
		_ = flags.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		serve()
		return
	}
	if len(os.Args) != 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: harness admit|kubeletconfig|defaults|version|serve < input.json")
		os.Exit(2)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out, err := commands[os.Args[1]](input)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

type request struct {
	Command string          `json:"command"`
	Input   json.RawMessage `json:"input"`
}

type response struct {
	Output any    `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// serve answers requests until standard input ends. Each runs on feature gates copied from
// the pristine ones this process started with, so one request's featureGates never leak
// into the next.
func serve() {
	pristine := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var resp response
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			resp.Error = "request: " + err.Error()
		} else if cmd := commands[req.Command]; cmd == nil {
			resp.Error = fmt.Sprintf("unknown command %q", req.Command)
		} else {
			utilfeature.DefaultMutableFeatureGate = pristine.DeepCopy()
			utilfeature.DefaultFeatureGate = utilfeature.DefaultMutableFeatureGate
			resp = run(cmd, req.Input)
		}
		if err := out.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// run answers one request; a panic (in the kubelet's code or here) is answered as an error
// with its stack, and the process goes on.
func run(cmd command, input json.RawMessage) (resp response) {
	defer func() {
		if r := recover(); r != nil {
			resp = response{Error: fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	output, err := cmd(input)
	if err != nil {
		return response{Error: err.Error()}
	}
	return response{Output: output}
}
