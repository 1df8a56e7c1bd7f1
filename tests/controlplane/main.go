// Command controlplane runs the Kubernetes control plane in the tests, built from the
// upstream modules at the release go.mod pins (k8s.io/kubernetes, go.etcd.io/etcd/server/v3):
//
//	controlplane etcd --data-dir DIR --client-port N --peer-port M
//	controlplane kube-apiserver <kube-apiserver flags>
//	controlplane kube-scheduler <kube-scheduler flags>
//	controlplane kube-controller-manager <kube-controller-manager flags>
//	controlplane service-account-key FILE
//	controlplane version
//
// The three Kubernetes components are their own commands (cmd/kube-apiserver/app,
// cmd/kube-scheduler/app, cmd/kube-controller-manager/app: the code of their release's
// binaries, main() included), etcd is go.etcd.io/etcd/server/v3/embed; one binary keeps
// one link of the shared code. tests/controlplane/cluster.py starts them on 127.0.0.1.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // as cmd/kube-apiserver: CronJob time zones

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "kube-apiserver":
		cmd := apiserver.NewAPIServerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-scheduler":
		cmd := scheduler.NewSchedulerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-controller-manager":
		cmd := controllermanager.NewControllerManagerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "etcd":
		if err := runEtcd(args); err != nil {
			fmt.Fprintln(os.Stderr, "etcd:", err)
			os.Exit(1)
		}
	case "service-account-key":
		if len(args) != 1 {
			usage()
		}
		if err := writeKey(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "version":
		out := map[string]string{}
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, dep := range info.Deps {
				switch dep.Path {
				case "k8s.io/kubernetes":
					out["kubernetes"] = dep.Version
				case "go.etcd.io/etcd/server/v3":
					out["etcd"] = dep.Version
				}
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(out)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: controlplane etcd|kube-apiserver|kube-scheduler|"+
		"kube-controller-manager|service-account-key|version [args]")
	os.Exit(2)
}

// runEtcd serves one etcd member on 127.0.0.1 (plain HTTP, which only the API server on
// the same host talks to) until SIGTERM or SIGINT.
func runEtcd(args []string) error {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dir := fs.String("data-dir", "", "data directory")
	client := fs.Int("client-port", 0, "client port on 127.0.0.1")
	peer := fs.Int("peer-port", 0, "peer port on 127.0.0.1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *client == 0 || *peer == 0 {
		return fmt.Errorf("--data-dir, --client-port and --peer-port are required")
	}
	cfg := embed.NewConfig()
	cfg.Name = "krm-fn-test"
	cfg.Dir = *dir
	cfg.LogLevel = "error"
	clientURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *client))
	peerURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *peer))
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peerURL)
	cfg.ListenMetricsUrls = nil
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintln(os.Stderr, "etcd ready")
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	}
	select {
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	}
}

// writeKey writes a new 2048-bit RSA key (PKCS#1 PEM) for service-account tokens.
func writeKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}
