// Command expand prints what the kubelet runs as a container's command and args: the
// `$(VAR)` references expanded by the kubelet's own code (k8s.io/kubernetes
// pkg/kubelet/container ExpandContainerCommandAndArgs, third_party/forked/golang/expansion)
// against the container's env, whose literal values are expanded in order first as
// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables does (step 1a; no service links,
// no valueFrom). Input on stdin: a JSON list of containers; output: [[command, args], ...].
package main

import (
	"encoding/json"
	"os"

	v1 "k8s.io/api/core/v1"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

func main() {
	var containers []v1.Container
	if err := json.NewDecoder(os.Stdin).Decode(&containers); err != nil {
		panic(err)
	}
	out := make([][2][]string, 0, len(containers))
	for i := range containers {
		c := &containers[i]
		tmpEnv := map[string]string{}
		mapping := expansion.MappingFuncFor(tmpEnv)
		var envs []kubecontainer.EnvVar
		for _, e := range c.Env {
			value := e.Value
			if value != "" {
				value = expansion.Expand(value, mapping)
			}
			tmpEnv[e.Name] = value
			envs = append(envs, kubecontainer.EnvVar{Name: e.Name, Value: value})
		}
		command, args := kubecontainer.ExpandContainerCommandAndArgs(c, envs)
		out = append(out, [2][]string{command, args})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
