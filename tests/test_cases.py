"""The public problem reports of ../shared/reference/cases.md, one test each, named after
the case. Inputs live in tests/testdata/<case>/ (also checked byte for byte by
test_golden.py); these tests assert the values that matter for each report."""
from tests.helpers import TESTDATA, env_of, item, load, results, run_cli

THREAD_VARS = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS",
               "BLIS_NUM_THREADS", "TORCH_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
               "RAYON_NUM_THREADS", "GOMAXPROCS", "PYTHON_CPU_COUNT"]


def run_case(case: str, stdin: str | None = None):
    p = run_cli([], stdin if stdin is not None else (TESTDATA / case / "input.yaml").read_text())
    return p, load(p.stdout)


def res(c: dict) -> dict:
    return c["resources"]


def test_c01_smt_alignment_rounds_to_threads_per_core():
    p, out = run_case("c01-smt-alignment")
    assert p.returncode == 0
    c = item(out, "Pod", "dpdk-app")["spec"]["containers"][0]
    assert res(c) == {"requests": {"cpu": "2", "memory": "1Gi"},
                      "limits": {"cpu": "2", "memory": "1Gi"}}
    assert env_of(c) == {v: "2" for v in THREAD_VARS}
    warn = results(out, "warning")
    assert [w["message"] for w in warn] == [
        "container 'app': cpu 1 raised to 2: node pool 'inference' uses full-pcpus-only with 2 "
        "threads per core, so the CPUs of a pinned container must be a multiple of 2 (else the "
        "kubelet fails the pod with SMTAlignmentError)"]
    assert warn[0]["field"]["path"] == "spec.containers[0].resources.limits.cpu"


def test_c01_threads_per_core_comes_from_the_pool_not_a_constant():
    text = (TESTDATA / "c01-smt-alignment" / "input.yaml").read_text()
    text = text.replace('threadsPerCore: "2"', 'threadsPerCore: "4"')
    p, out = run_case("", text)
    c = item(out, "Pod", "dpdk-app")["spec"]["containers"][0]
    assert res(c)["limits"]["cpu"] == "4"


def test_c01_strict_mode_is_an_error_and_leaves_the_pod_unchanged():
    text = (TESTDATA / "c01-smt-alignment" / "input.yaml").read_text()
    text = text.replace('threadsPerCore: "2"}', 'threadsPerCore: "2", cpuRounding: error}')
    p, out = run_case("", text)
    assert p.returncode == 1
    assert "SMTAlignmentError; set 2 (spec.workloads.cpuRounding is error)" in p.stderr
    pod = item(out, "Pod", "dpdk-app")
    assert res(pod["spec"]["containers"][0])["limits"]["cpu"] == "1"
    assert "env" not in pod["spec"]["containers"][0]
    assert "nodeSelector" not in pod["spec"]


def test_c02_integer_init_container_moves_to_the_shared_pool():
    p, out = run_case("c02-integer-init-container")
    assert p.returncode == 0
    spec = item(out, "Pod", "server")["spec"]
    fetch = spec["initContainers"][0]
    assert res(fetch) == {"requests": {"cpu": "500m", "memory": "1Gi"},
                          "limits": {"cpu": "500m", "memory": "1Gi"}}
    assert "env" not in fetch
    assert res(spec["containers"][0]) == {"requests": {"cpu": "14", "memory": "8Gi"},
                                          "limits": {"cpu": "14", "memory": "8Gi"}}
    infos = [r for r in results(out, "info")
             if (r.get("field") or {}).get("path", "").startswith("spec.initContainers[0]")]
    assert {r["field"]["path"] for r in infos} == {
        "spec.initContainers[0].resources.requests.cpu",
        "spec.initContainers[0].resources.limits.cpu"}
    assert "kubernetes/kubernetes#112228" in infos[0]["message"]


def test_c02_opted_in_init_container_is_pinned_but_never_above_the_largest_app():
    text = (TESTDATA / "c02-integer-init-container" / "input.yaml").read_text()
    text = text.replace('{name: fetch, image: fetch:1, resources: {requests: {cpu: "1"',
                        '{name: fetch, image: fetch:1, resources: {requests: {cpu: "20"')
    text = text.replace('limits: {cpu: "1", memory: 1Gi}}}', 'limits: {cpu: "20", memory: 1Gi}}}')
    text = text.replace('reservedSystemCPUs: "0-2"}', 'reservedSystemCPUs: "0-2", '
                                                     'pinnedContainers: "server,fetch"}')
    p, out = run_case("", text)
    fetch = item(out, "Pod", "server")["spec"]["initContainers"][0]
    assert res(fetch)["limits"]["cpu"] == "14"
    assert env_of(fetch)["OMP_NUM_THREADS"] == "14"


def test_c03_native_sidecar_is_long_running_and_pinned():
    p, out = run_case("c03-native-sidecar")
    assert p.returncode == 0
    spec = item(out, "Pod", "mesh-app")["spec"]
    proxy, server = spec["initContainers"][0], spec["containers"][0]
    assert res(proxy) == {"requests": {"cpu": "4", "memory": "200Mi"},
                          "limits": {"cpu": "4", "memory": "200Mi"}}
    assert res(server) == {"requests": {"cpu": "8", "memory": "4Gi"},
                           "limits": {"cpu": "8", "memory": "4Gi"}}
    assert env_of(proxy)["OMP_NUM_THREADS"] == "4"
    assert env_of(server)["OMP_NUM_THREADS"] == "8"
    warn = [r["message"] for r in results(out, "warning")]
    assert any("before Kubernetes 1.29" in m and "PR #119447" in m for m in warn)


def test_c03_no_sidecar_warning_on_current_versions():
    text = (TESTDATA / "c03-native-sidecar" / "input.yaml").read_text()
    text = text.replace('kubernetesVersion: "1.27"', 'kubernetesVersion: "1.34"')
    p, out = run_case("", text)
    assert not [r for r in results(out, "warning") if "native sidecar" in r["message"]]


def test_c10_memory_missing_is_an_error_naming_container_and_field():
    p, out = run_case("c10-memory-missing")
    assert p.returncode == 1
    errors = results(out, "error")
    assert errors[0]["field"]["path"] == "spec.containers[0].resources.limits.memory"
    assert errors[0]["message"].startswith("container 'a' is pinned but sets no memory")
    assert errors[0]["resourceRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "mixed"}
    assert "krm-fn: error: Pod mixed spec.containers[0].resources.limits.memory" in p.stderr
    # the object is unchanged
    original = load((TESTDATA / "c10-memory-missing" / "input.yaml").read_text())
    assert item(out, "Pod", "mixed") == original["items"][0]


def test_c10_memory_default_and_copies():
    p, out = run_case("c10-memory-default")
    assert p.returncode == 0
    a, b, c = item(out, "Pod", "mixed")["spec"]["containers"]
    assert res(a) == {"requests": {"cpu": "2", "memory": "1Gi"},
                      "limits": {"cpu": "2", "memory": "1Gi"}}
    assert res(b) == {"requests": {"cpu": "2", "memory": "2Gi"},
                      "limits": {"cpu": "2", "memory": "2Gi"}}
    assert res(c) == {"requests": {"cpu": "2", "memory": "2Gi"},
                      "limits": {"cpu": "2", "memory": "2Gi"}}


def test_c11_fractional_cpu_rounds_up_with_warning():
    p, out = run_case("c11-fractional-cpu")
    c = item(out, "Pod", "frac")["spec"]["containers"][0]
    assert res(c)["requests"]["cpu"] == res(c)["limits"]["cpu"] == "2"
    assert env_of(c)["OMP_NUM_THREADS"] == "2"
    assert results(out, "warning")[0]["message"] == (
        "container 'server': cpu 1500m rounded up to 2: the static CPU Manager gives exclusive "
        "CPUs only to whole-number requests")


def test_c11_keep_mode_writes_floor_literals_never_resource_field_ref():
    p, out = run_case("c11-fractional-keep")
    c = item(out, "Pod", "frac")["spec"]["containers"][0]
    assert res(c)["limits"]["cpu"] == "1500m"
    assert all(e["value"] == "1" and "valueFrom" not in e for e in c["env"])


def test_c12_kserve_framework_container_gets_thread_env():
    p, out = run_case("c12-kserve-threads")
    assert p.returncode == 0
    pred = item(out, "InferenceService", "torchscript")["spec"]["predictor"]
    env = env_of(pred["pytorch"])
    assert env["OMP_NUM_THREADS"] == "2"        # lower value kept
    assert env["MKL_NUM_THREADS"] == "4"        # higher value replaced, warned
    for v in ("OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "PYTHON_CPU_COUNT"):
        assert env[v] == "4"
    assert pred["nodeSelector"] == {"krm-fn.dev/cpu-pinning": "true"}
    warn = {r["field"]["path"]: r["message"] for r in results(out, "warning")}
    assert warn["spec.predictor.pytorch.env[1].value"].startswith(
        "container 'kserve-container': MKL_NUM_THREADS 40 -> 4")
    assert "KServe injects a storage-initializer" in warn["spec.predictor"]


def test_c13_gomaxprocs_on_every_pinned_container_only():
    p, out = run_case("c13-go-sidecar")
    server, exporter, logs = item(out, "Pod", "go-sidecar")["spec"]["containers"]
    assert env_of(server) == {"GOMAXPROCS": "8", "OMP_NUM_THREADS": "8"}
    assert env_of(exporter) == {"GOMAXPROCS": "2", "OMP_NUM_THREADS": "2"}
    assert "env" not in logs
    assert results(out, "warning")[0]["message"] == (
        "container 'exporter': GOMAXPROCS 16 -> 2: 16 is more threads than the 2 pinned CPUs "
        "and would oversubscribe them")


def test_c17_comments_order_and_quoting_kept():
    src = (TESTDATA / "c17-comments-order" / "input.yaml").read_text()
    p, _ = run_case("c17-comments-order")
    out = p.stdout
    # the ConfigMap comes out byte for byte, YAML 1.1 look-alikes untouched
    cm_in = src[src.index("- apiVersion: v1\n  kind: ConfigMap"):src.index("- apiVersion: v1\n  kind: Pod")]
    assert cm_in in out
    # in the Pod only owned fields change; comments stay on their lines
    assert "    name: server  # the model server\n" in out
    assert "      image: 'srv:1'\n" in out
    assert ("      resources:\n        # sized for 4 cores\n        requests:\n          cpu: \"4\"\n"
            "          memory: \"8Gi\"\n        limits: {cpu: \"4\", memory: 8Gi}\n") in out
    assert "    # keep nodes fixed\n    nodeSelector:\n      zone: a\n" in out


def test_c18_no_resource_list_on_stdin_is_a_usage_error():
    p = run_cli([], b"")
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("krm-fn: no input: krm-fn expects a ResourceList on stdin")
    assert "Traceback" not in p.stderr


def test_c18_config_is_never_read_from_files_relative_to_cwd(tmp_path):
    (tmp_path / "fn-config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                             "data: {threadsEnv: BOGUS}\n")
    src = (TESTDATA / "c11-fractional-cpu" / "input.yaml").read_text()
    p = run_cli([], src, cwd=tmp_path)
    assert "BOGUS" not in p.stdout
    assert p.stdout == run_cli([], src).stdout


def test_c19_companion_carries_no_function_config_annotations():
    p, out = run_case("c19-companion-annotations")
    assert p.returncode == 0
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert "annotations" not in cm["metadata"]
    assert cm["metadata"]["namespace"] == "kube-system"
    # input items' orchestrator annotations are untouched
    dep = item(out, "Deployment", "infer")
    assert dep["metadata"]["annotations"]["internal.config.kubernetes.io/index"] == "0"
    assert dep["metadata"]["annotations"]["config.kubernetes.io/index"] == "0"


def test_c19_under_kpt_the_companion_gets_its_own_path():
    text = (TESTDATA / "c19-companion-annotations" / "input.yaml").read_text()
    text = text.replace('      internal.config.kubernetes.io/index: "0"\n',
                        '      internal.config.kubernetes.io/index: "0"\n'
                        '      internal.config.kubernetes.io/path: deploy.yaml\n')
    p, out = run_case("", text)
    cm = item(out, "ConfigMap", "kubelet-config-inference")
    assert cm["metadata"]["annotations"] == {
        "internal.config.kubernetes.io/path": "node/kubelet-inference.yaml"}
