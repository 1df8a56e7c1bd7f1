"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager
(its service-account and resource-quota controllers only) and kube-scheduler, from
tests/controlplane (one Go binary built from k8s.io/kubernetes and go.etcd.io/etcd/server/v3
at the releases its go.mod pins, tests/gobuild.py).

Everything listens on 127.0.0.1 only, on ports the OS hands out; the API server serves the
certificate it generates in its --cert-dir, clients authenticate with a random bearer token
of a `system:masters` user (--token-auth-file). `ControlPlane.start()` waits until each
component says it is ready (etcd on its standard error, the controller manager's /healthz,
the others' /readyz) and raises
ControlPlaneError with the component's log when one does not start within `timeout`
seconds; `stop()` ends them all (SIGTERM, then SIGKILL after 10 s) and removes the
directory. `kubeconfig` is a file for kubectl and the components.

Why the controller manager: the API server's ResourceQuota admission refuses pods in a
namespace whose quota has no status yet ("status unknown for quota"), and its ServiceAccount
admission refuses pods of a namespace without its `default` ServiceAccount; the
resourcequota and serviceaccount controllers are what fills both in a cluster. No other
controller runs by default (`controllers`): the tests create the pods a workload would
create themselves; tests/test_quota_rollout_apiserver.py starts one with the deployment and
replicaset controllers too.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tests import gobuild

HERE = Path(__file__).resolve().parent


def release() -> str:
    """The k8s.io/kubernetes release go.mod pins ("v1.37.2")."""
    return gobuild.required(HERE / "go.mod", "k8s.io/kubernetes")


def _version_ldflags() -> str:
    """The version the release's own build stamps into the binaries (hack/lib/version.sh
    kube::version::ldflags: gitVersion, gitMajor, gitMinor of component-base and
    client-go), so /version says the release rather than v0.0.0-master."""
    rel = release()
    major, minor = rel.lstrip("v").split(".")[:2]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={rel}", f"-X {pkg}.gitMajor={major}",
                  f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitTreeState=clean"]
    return " ".join(flags)


PROGRAM = gobuild.GoProgram("controlplane", HERE, ldflags=_version_ldflags(),
                            what="the control plane (etcd, kube-apiserver, "
                                 "kube-controller-manager, kube-scheduler) for the tests")


def crd_files() -> list:
    """The vendored CustomResourceDefinition files (tests/controlplane/crds/**/*.yaml)."""
    return sorted((HERE / "crds").glob("**/*.yaml"))


def require_go() -> str:
    """The `go` command; skip without it, fail under CI=true."""
    return gobuild.require_go("to build the control plane (tests/controlplane)")


def binary() -> Path:
    """The control plane binary (built when its sources or module files changed).
    Raises gobuild.BuildError with Go's output when the build fails."""
    return gobuild.build(PROGRAM)


def wait(what: str, probe, timeout: float = 60):
    """probe() until it returns something true, which is returned; AssertionError naming
    `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} ({timeout:.0f} s)")
        time.sleep(0.02)


class ControlPlaneError(RuntimeError):
    """A component did not start or stopped; the message holds its log's end."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControlPlane:
    """One control plane on 127.0.0.1: `server` (https URL), `token`, `ca` (the API
    server's certificate file), `kubeconfig` (file), `dir` (its working directory);
    `controllers`: the kube-controller-manager controllers it runs; `extra_args`:
    {component name: more flags}, e.g. {"kube-apiserver": ("--emulated-version=1.35",)}
    (KEP-4330 compatibility versions); `scheduler`: whether kube-scheduler runs (a 1.37
    scheduler waits forever for the APIs of its release, which an API server emulating an
    older minor does not serve)."""

    def __init__(self, exe: Path | None = None, timeout: float = 60,
                 controllers: tuple = ("serviceaccount", "resourcequota"),
                 extra_args: dict | None = None, scheduler: bool = True):
        self.exe = exe or binary()
        self.controllers = controllers
        self.scheduler = scheduler
        self.extra_args = dict(extra_args or {})
        self.timeout = timeout
        self.dir = Path(tempfile.mkdtemp(prefix="krm-fn-controlplane."))
        self.procs: list[tuple[str, subprocess.Popen, Path]] = []
        self.token = secrets.token_hex(16)
        self.server = ""
        self.ca = self.dir / "certs" / "apiserver.crt"
        self.kubeconfig = self.dir / "kubeconfig"
        self._namespaces: set = set()

    # -- processes --------------------------------------------------------------------
    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        log = self.dir / f"{name}.log"
        args += tuple(self.extra_args.get(name, ()))
        proc = subprocess.Popen([str(self.exe), name, *args], stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=self.dir, start_new_session=True)
        self.procs.append((name, proc, log))
        return proc

    def log(self, name: str, tail: int = 4000) -> str:
        """The end of component `name`'s log."""
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def _failed(self, name: str, why: str) -> ControlPlaneError:
        return ControlPlaneError(f"{name} {why}; its log ends:\n{self.log(name)}")

    def _wait(self, name: str, proc: subprocess.Popen, ready) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise self._failed(name, f"stopped with exit code {proc.returncode}")
            if ready():
                return
            time.sleep(0.2)
        raise self._failed(name, f"was not ready within {self.timeout:.0f} s")

    def _ready(self, port: int, verify: bool, path: str = "/readyz") -> bool:
        req = urllib.request.Request(f"https://127.0.0.1:{port}{path}",
                                     headers={"Authorization": f"Bearer {self.token}"})
        try:
            # inside the try: the API server may still be writing its certificate (the file
            # exists, empty or partial: ssl.SSLError "no certificate or crl found", an OSError)
            ctx = ssl.create_default_context(cafile=str(self.ca)) if verify else \
                ssl._create_unverified_context()     # a component's self-signed serving cert
            with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> "ControlPlane":
        """Start etcd, the API server, the controller manager and the scheduler; wait for
        each. Raises ControlPlaneError (the others are stopped then)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        d = self.dir
        (d / "certs").mkdir()
        subprocess.run([str(self.exe), "service-account-key", str(d / "sa.key")], check=True)
        (d / "tokens.csv").write_text(f'{self.token},krm-fn-admin,krm-fn-admin,'
                                      f'"system:masters"\n')
        etcd_port, api_port = _free_port(), _free_port()
        etcd = self._spawn("etcd", "--data-dir", str(d / "etcd"), "--client-port",
                           str(etcd_port), "--peer-port", str(_free_port()))
        self._wait("etcd", etcd, lambda: "etcd ready" in self.log("etcd"))
        api = self._spawn(
            "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}", f"--cert-dir={d / 'certs'}",
            f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--service-account-key-file={d / 'sa.key'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/24",
            "--enable-priority-and-fairness=false", "--endpoint-reconciler-type=none",
            "--profiling=false")
        self.server = f"https://127.0.0.1:{api_port}"
        self._wait("kube-apiserver", api,
                   lambda: self.ca.exists() and self._ready(api_port, verify=True))
        self._write_kubeconfig()
        kcm_port = _free_port()
        kcm = self._spawn(
            "kube-controller-manager", f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--authentication-skip-lookup=true",      # no client CA to look up
            "--bind-address=127.0.0.1", f"--secure-port={kcm_port}",
            f"--controllers={','.join(self.controllers)}", "--leader-elect=false",
            "--use-service-account-credentials=false", "--profiling=false")
        # the controller manager serves /healthz, no /readyz
        self._wait("kube-controller-manager", kcm,
                   lambda: self._ready(kcm_port, False, "/healthz"))
        if not self.scheduler:
            return
        sched_port = _free_port()
        sched = self._spawn(
            "kube-scheduler", f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--authentication-skip-lookup=true",
            "--bind-address=127.0.0.1", f"--secure-port={sched_port}",
            "--leader-elect=false", "--profiling=false")
        self._wait("kube-scheduler", sched, lambda: self._ready(sched_port, False))

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "krm-fn-test",
            "clusters": [{"name": "krm-fn-test", "cluster": {
                "server": self.server, "certificate-authority": str(self.ca)}}],
            "users": [{"name": "krm-fn-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "krm-fn-test", "context": {
                "cluster": "krm-fn-test", "user": "krm-fn-admin"}}],
        }
        self.kubeconfig.write_text(json.dumps(config))

    def stop(self) -> None:
        """Stop every component (SIGTERM, SIGKILL after 10 s) and remove the directory."""
        for _, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _, proc, _ in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    def check_running(self) -> None:
        """Raise ControlPlaneError when a component has stopped."""
        for name, proc, _ in self.procs:
            if proc.poll() is not None:
                raise self._failed(name, f"stopped with exit code {proc.returncode}")

    # -- client -----------------------------------------------------------------------
    def kubectl(self, *args: str, input: str | None = None,
                check: bool = False) -> subprocess.CompletedProcess:
        """Run kubectl against this control plane (text in and out)."""
        return subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}",
                               f"--cache-dir={self.dir / 'kubectl-cache'}", *args],
                              input=input, capture_output=True, text=True, check=check,
                              timeout=120)

    def request(self, method: str, path: str, body: object | None = None) -> tuple:
        """(HTTP status, decoded JSON body) of one API request; `path` from the root
        ("/api/v1/namespaces")."""
        return self.request_warned(method, path, body)[:2]

    def request_warned(self, method: str, path: str, body: object | None = None) -> tuple:
        """`request`, and the values of the response's Warning headers (what admission
        warnings, such as a ValidatingAdmissionPolicy's under Warn, come back as):
        (HTTP status, decoded JSON body, [str])."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        ctx = ssl.create_default_context(cafile=str(self.ca))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
                return (r.status, json.loads(r.read() or b"null"),
                        r.headers.get_all("Warning") or [])
        except urllib.error.HTTPError as e:
            raw, warnings = e.read(), e.headers.get_all("Warning") or []
            try:
                return e.code, json.loads(raw), warnings
            except ValueError:
                return e.code, raw.decode(errors="replace"), warnings

    def pod_namespace(self, name: str) -> str:
        """Create Namespace `name` unless it exists and wait until its default
        ServiceAccount exists (the serviceaccount controller makes it; the API server's
        ServiceAccount admission refuses pods until then); returns `name`."""
        self.ensure_namespace(name)
        wait(f"the default ServiceAccount of {name}", lambda: self.request(
            "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200)
        return name

    def ensure_namespace(self, name: str) -> None:
        """Create Namespace `name` unless it exists. Raises ControlPlaneError when the API
        server refuses it."""
        if name in self._namespaces:
            return
        status, body = self.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status not in (201, 409):
            raise ControlPlaneError(f"creating namespace {name}: {status} {body}")
        self._namespaces.add(name)

    def install_crds(self, files: list) -> None:
        """Create the CustomResourceDefinitions in `files` (YAML paths) and wait until each
        is Established. Raises ControlPlaneError with kubectl's message."""
        if not files:
            return
        args = ["apply", "--server-side", "--field-manager=krm-fn-test"]
        for f in files:
            args += ["-f", str(f)]
        p = self.kubectl(*args)
        if p.returncode:
            raise ControlPlaneError(f"installing the CRDs failed:\n{p.stderr}")
        # (kubectl wait --for=condition fails on a CRD whose status has no conditions yet)
        deadline = time.monotonic() + 120
        while True:
            _, crds = self.request("GET", "/apis/apiextensions.k8s.io/v1/"
                                          "customresourcedefinitions")
            waiting = [c["metadata"]["name"] for c in crds["items"]
                       if not any(cond["type"] == "Established" and cond["status"] == "True"
                                  for cond in (c.get("status") or {}).get("conditions")
                                  or [])]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CRDs not Established within 120 s: {waiting}")
            time.sleep(0.2)

    def create_node(self, node: dict) -> dict:
        """Create Node `node` (a dict with its status: capacity, allocatable, conditions)
        as a joined, Ready node: the API server's TaintNodesByCondition admission gives a
        new Node the `node.kubernetes.io/not-ready:NoSchedule` taint, which the node
        lifecycle controller removes once the kubelet reports Ready; no kubelet runs
        here, so this removes it (and keeps the node's own taints). Returns the Node.
        Raises ControlPlaneError when the API server refuses it."""
        status, body = self.request("POST", "/api/v1/nodes", node)
        if status != 201:
            raise ControlPlaneError(f"creating node: {status} {body}")
        own = (node.get("spec") or {}).get("taints") or []
        taints = [t for t in body["spec"].get("taints") or []
                  if t["key"] != "node.kubernetes.io/not-ready" or t in own]
        body["spec"]["taints"] = taints
        status, body = self.request("PUT", f"/api/v1/nodes/{body['metadata']['name']}",
                                    body)
        if status != 200:
            raise ControlPlaneError(f"updating node taints: {status} {body}")
        return body
