// Command sysctl prints the kubelet's admission of pods by their sysctls (k8s.io/kubernetes
// pkg/kubelet/sysctl: the safe sysctls of SafeSysctlAllowlist for this machine's kernel plus
// a node's allowedUnsafeSysctls, NewAllowlist, Admit). Input on stdin: a JSON list of
// {"allowed": [pattern, ...], "pod": v1.Pod}; output: a list of {"start": error or "",
// "admit": bool, "reason": string, "message": string}.
package main

import (
	"context"
	"encoding/json"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/sysctl"
)

type request struct {
	Allowed []string `json:"allowed"`
	Pod     v1.Pod   `json:"pod"`
}

type result struct {
	Start   string `json:"start"`
	Admit   bool   `json:"admit"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func main() {
	var requests []request
	if err := json.NewDecoder(os.Stdin).Decode(&requests); err != nil {
		panic(err)
	}
	ctx := context.Background()
	out := make([]result, 0, len(requests))
	for i := range requests {
		r := &requests[i]
		al, err := sysctl.NewAllowlist(append(sysctl.SafeSysctlAllowlist(ctx), r.Allowed...))
		if err != nil {
			out = append(out, result{Start: err.Error()})
			continue
		}
		got := al.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: &r.Pod})
		out = append(out, result{Admit: got.Admit, Reason: got.Reason, Message: got.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
