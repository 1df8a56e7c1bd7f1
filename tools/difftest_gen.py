"""Differential test driver (not part of the package): seeded hostile ResourceLists run
through two source trees of krm-fn, stdout/stderr/exit compared byte for byte.

usage: python tools/difftest_gen.py OLD_TREE NEW_TREE N SEED OUTDIR [category...]

Each case runs `python -m krm_fn` with the ResourceList on stdin under PYTHONPATH=OLD_TREE
and PYTHONPATH=NEW_TREE (cwd /tmp/difftest_cwd, so neither tree shadows the other);
DIFFTEST_FILES=1 runs `krm-fn run [--report] [--mode validate]` on files instead;
DIFFTEST_WORKERS (default 1) processes at a time. Every difference is written to
OUTDIR/diff-SEED-I-CATEGORY.json (input, old and new exit/stdout/stderr); the counts per
category to OUTDIR/summary-SEED.json.
"""
from __future__ import annotations

import glob
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

QCHARS = "0123456789.+-eEinumkKMGTP%"
ODD_Q = ["", " ", "1", "+1", "-1", ".5", "5.", "1e3", "1E-3", "1e+3", "+.5", "-.5", "0.", ".",
         "1Ki", "1k", "1K", "500m", "1u", "1n", "1E", "1Ei", "1P", "1Pi", "1Gi\n", " 1Gi",
         "1Gi ", "\u0661", "\uff11", "\uff11Gi", "1\u0660", "1e", "1e-", "1E+", "m", "Ki",
         "1.5.5", "1..5", "--1", "+-1", "1mm", "1Mi5", "9" * 20, "9" * 64, "9" * 65,
         "1" + "0" * 19 + "Ei", "0", "0.0", "-0", "1e308", "1e-308", "0.0001m", "1e-9",
         "12%", "12.5%", "100%", "101%", "0.0000001%", "1.1234567%", "1234%", "%", "1.%",
         "5%\n", "\u0665%", "1 %", "1Gi%", "1e3Ki", "1Mie3", "0x10", "1_000", "∞", "NaN",
         "inf", "1\t", "1\r", "1\x00", "١٢٣", "1.0e3m", "2.5Gi", "256Mi", "4", "8", "7.5",
         "1000000", "1048576", "3Ti", "100M", "64Mi", "1e18", "9223372036854775807",
         "9223372036854775808", "1e-18n"]
NAME_ODD = ["", "a", "A", "a.b", "a_b", "a-b", "-a", "a-", "a.", ".a", "a..b", "a\n",
            "a\n\n", "\na", "ünï", "x" * 63, "x" * 64, "x" * 40, "x" * 41, "x" * 253,
            "x" * 254, "a/b", "example.com/a", "Example.com/a", "a/", "/a", "a b", "a\t",
            "OMP_NUM_THREADS", "_X", "1X", "X1", "X-1", "X.1", "Ω", "a\u2028b", "a\x85",
            "\uff41", "a" * 300, "kube-system", "default", "q" + "\u0661", "0", "00",
            "a_", "_", "a.b.c", "a-.b", "a.-b", "1.2.3.4", "node-role.kubernetes.io/worker",
            "k8s.io/", "a/b/c", "ǅ", "\u00b5", "İ", "ß", "ﬁ"]
DUR_ODD = ["", "0", "5s", "5m", "1h30m", "1h30m5s", "1.5s", ".5s", "5.s", "1s.5s", "-1s",
           "+1s", "-0", "+0", "1ms", "1µs", "1μs", "1us", "1ns", "\u0661s", "\uff11s", "5",
           "5m\n", " 5m", "1y", "1w", "1d", "1y2w3d4h5m6s7ms", "1m1h", "1s1s", "1ms1s",
           "1sm", "1mms", "5ms5", "1.5m", "10M", "1H", "5mm", "2562047h47m16.854775807s",
           "2562047h47m16.854775808s", "9" * 33 + "s", "1h-1m", "1e3s", "0s", "0.0s", "00",
           "1m0s", "5m0s0ms", "ms", "s", "1 s", "1s ", "1..5s", "1.5.5s", "\u0967s"]
IMAGE_ODD = ["ghcr.io/krm-fn/krm-fn:0.1.0", "a", "A", "a:b", "a:5000", "a:5000/b",
             "localhost:5000/a/b:tag", "registry.example.com:443/ns/img:v1@sha256:" + "a" * 64,
             "img@sha256:" + "a" * 31, "img@sha256:" + "A" * 32, "img@sha256+b64u:" + "f" * 32,
             "img@sha256.x:" + "0" * 40, "img@256:" + "0" * 32, "img@s-:" + "0" * 32,
             "img@s--a:" + "0" * 32, "Img", "img:TAG", "img:_t", "img:.t", "img:-t",
             "img:t" * 2, "img:" + "t" * 128, "img:" + "t" * 129, "img:ü", "img:\u0661",
             "img:ǅ", "ü/img", "host_name/img", "-host/img", "host-/img", "ho-st/img",
             "a.b.c/d/e/f:g", "a__b", "a___b", "a._b", "a--b", "a-_b", "a..b", "a/b/",
             "/a", "a//b", "a\n", "a:b\n", "a:b:c", "a@b", "a@", "@sha256:" + "0" * 32,
             "x" * 600, "r.io/" + "p/" * 300 + "x", "HOST:5000/img", "host:port/img",
             "host:/img", "a:1:2/b", "a/B", "a/b:c/d", "img:t@sha256:" + "0" * 32 + "\n",
             "ｉｍｇ", "img:ｔ", "img:t²", "img:½"]
VERSIONS = ["1.34", "v1.34", "1.34.0", " 1.34", "1.034", "1.34 ", "1.34\n", "1.29", "1.22",
            "1.21", "1.36", "1.37", "1.99", "1.100", "v1.34.0", "vv1.34", "V1.34", "1.34.",
            "1.", "1", "2.0", "1.3a", "1.\u0663\u0664", "1.\uff13\uff14", "1.34.0.1", "1.34.x",
            "1.34.00", "1.28", "1.23", "v1.22", "01.34", "1,34", "1.3", "1.35", "1.30"]
CMDS = [
    (["vllm", "serve", "m"], ["--device", "cpu"]),
    (["python", "-m", "vllm.entrypoints.openai.api_server"], ["--model=/m", "--device=cpu"]),
    (["/app/llama-server"], ["-m", "/m.gguf", "-t", "8", "--threads-batch", "4"]),
    (["llama-server", "--threads", "16"], []),
    (["./server"], ["-m", "x.gguf"]),
    (["ollama", "serve"], []),
    (["/bin/ollama"], ["serve"]),
    (["text-generation-launcher"], ["--model-id", "x"]),
    (["torchserve", "--start"], ["--ts-config", "/c"]),
    (["tritonserver"], ["--model-repository=/m"]),
    (["/opt/tritonserver/bin/tritonserver"], []),
    (["onnxruntime_server"], ["--num_threads", "4"]),
    (["python", "serve.py"], []),
    (["/ovms/bin/ovms"], ["--cpu_extension", "x", "--rest_port", "8000"]),
    (["ovms"], ["--config_path", "/c"]),
    (["ray", "start", "--head"], ["--num-cpus=4"]),
    (["ray", "start"], ["--num-cpus", "4", "--block"]),
    (["java", "-jar", "app.jar"], []),
    (["java", "-XX:ActiveProcessorCount=4", "-jar", "a.jar"], []),
    (["gunicorn", "app:app"], ["-w", "4", "--threads", "2"]),
    (["uvicorn", "app:app"], ["--workers", "4"]),
    (["hypercorn", "app:app"], ["--workers", "3"]),
    (["ipexrun", "--ninstances", "2", "serve.py"], []),
    (["sh", "-c", "exec vllm serve m --device cpu"], []),
    (["bash", "-c", "ollama serve & sleep 5"], []),
    (["/usr/bin/env", "java", "-jar", "a.jar"], []),
    (["python3", "-m", "torch.distributed.run", "x.py"], []),
    ([], []),
]
IMAGES = ["vllm/vllm-openai:v0.9.1", "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.1",
          "ghcr.io/ggerganov/llama.cpp:server", "ghcr.io/ggml-org/llama.cpp:server-b4000",
          "ollama/ollama:0.5.7", "ghcr.io/huggingface/text-generation-inference:3.0-intel-cpu",
          "pytorch/torchserve:0.12.0-cpu", "nvcr.io/nvidia/tritonserver:24.08-py3",
          "mcr.microsoft.com/onnxruntime/server", "openvino/model_server:2024.4",
          "rayproject/ray:2.9.0-cpu", "eclipse-temurin:21", "python:3.12",
          "intel/intel-extension-for-pytorch:2.3.0", "golang:1.22", "busybox",
          "VLLM/VLLM-OPENAI:V1", "ｖｌｌｍ/vllm", "vllm@sha256:" + "a" * 64,
          "registry:5000/vllm/vllm-openai:latest@sha256:" + "b" * 64, "x" * 600,
          "ollama", "ollama/ollama\n", "localhost:5000/llama.cpp:server", ""]
ENVS = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "JAVA_OPTS", "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS", "GOMAXPROCS", "GOMEMLIMIT", "OLLAMA_NUM_PARALLEL", "OLLAMA_NUM_THREADS",
        "LLAMA_ARG_THREADS", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_KVCACHE_SPACE",
        "VLLM_CPU_NUM_OF_RESERVED_CPU", "WEB_CONCURRENCY", "GUNICORN_CMD_ARGS",
        "TS_NUMBER_OF_NETTY_THREADS", "OMP_NUM_THREADS\n", "omp_num_threads", "MALLOC_ARENA_MAX",
        "RAY_NUM_CPUS", "UVICORN_WORKERS", "MAX_JOBS", "TORCH_NUM_THREADS", "X\u00b5"]
ENV_VALUES = ["4", "8", "0-7", "auto", "-XX:ActiveProcessorCount=2 -Xmx1g", "", " 4", "4\n",
              "\u0664", "1e3", "-1", "all", "-w 4", "--workers=3", "1Gi", "90%", "0.5",
              "2GiB", "4000MiB", "nobind", "0-3|4-7", "x" * 300]


def rnd_q(r: random.Random) -> object:
    c = r.random()
    if c < 0.45:
        return r.choice(ODD_Q)
    if c < 0.75:
        n = r.randint(1, 8)
        return "".join(r.choice(QCHARS) for _ in range(n))
    if c < 0.85:
        return r.choice([1, 2, 0, -1, 1.5, 0.5, 1e3, 1e-3, 10 ** 20, True, None, [], {}])
    base = r.choice(["", "+", "-"]) + r.choice(["1", "12", ".5", "5.", "0.25", "2.50", "7"])
    base += r.choice(["", "e3", "E-3", "e+2", ""]) + r.choice(
        ["", "m", "Ki", "Mi", "Gi", "k", "M", "G", "u", "n", "E", "Ei", "T", "P", "%"])
    return base


def rnd_name(r: random.Random) -> object:
    c = r.random()
    if c < 0.5:
        return r.choice(NAME_ODD)
    if c < 0.9:
        alpha = "abcz019-._A/\n é١"
        return "".join(r.choice(alpha) for _ in range(r.randint(1, 12)))
    return r.choice([1, True, None, 1.5])


def rnd_str(r, pool, chars="abc019.:/-_@ Aü\n"):
    if r.random() < 0.7:
        return r.choice(pool)
    s = r.choice(pool)
    if s and r.random() < 0.5:
        i = r.randrange(len(s))
        return s[:i] + r.choice(chars) + s[i + 1:]
    return s + r.choice(chars)


# --- seeds ---------------------------------------------------------------------------

def load_seeds():
    items, configs = [], []
    for d in sorted(glob.glob(os.path.join(ROOT, "tests/testdata/*/"))):
        p = os.path.join(d, "input.yaml")
        if os.path.exists(p):
            try:
                rl = yaml.safe_load(open(p))
                items.extend(x for x in (rl or {}).get("items") or [] if isinstance(x, dict))
            except Exception:
                pass
        c = os.path.join(d, "config.yaml")
        if os.path.exists(c):
            try:
                configs.append(yaml.safe_load(open(c)))
            except Exception:
                pass
    for p in sorted(glob.glob(os.path.join(ROOT, "../shared/corpus/public/*/*.yaml"))):
        try:
            items.extend(x for x in yaml.safe_load_all(open(p)) if isinstance(x, dict))
        except Exception:
            pass
    return items, [c for c in configs if isinstance(c, dict)]


def deployment(r, name="app", containers=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "serving"},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"containers": containers or [container(r)]}}}}


def container(r, name="server"):
    cmd, args = r.choice(CMDS)
    c = {"name": name, "image": r.choice(IMAGES[:16])}
    if cmd:
        c["command"] = list(cmd)
    if args:
        c["args"] = list(args)
    c["resources"] = {"requests": {"cpu": "4", "memory": "8Gi"},
                      "limits": {"cpu": "4", "memory": "8Gi"}}
    return c


def pod_containers(item):
    """Every container list of an item (Deployment-like pod templates, Pods)."""
    out = []

    def walk(x, depth=0):
        if depth > 12:
            return
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("containers", "initContainers") and isinstance(v, list):
                    out.append(v)
                walk(v, depth + 1)
        elif isinstance(x, list):
            for v in x:
                walk(v, depth + 1)
    walk(item)
    return out


def typed_config(spec):
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
            "metadata": {"name": "t"}, "spec": spec}


def flat_config(data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"},
            "data": data}


def pool(r, **kw):
    p = {"name": "inference", "topology": {"sockets": 1, "coresPerSocket": 8,
                                           "threadsPerCore": 2}}
    p.update(kw)
    return p


# --- categories ----------------------------------------------------------------------

def cat_quantity(r, seeds):
    items = [deployment(r)]
    c = items[0]["spec"]["template"]["spec"]["containers"][0]
    which = r.randrange(6)
    if which <= 2:
        for side in ("requests", "limits"):
            for res in ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi"):
                if r.random() < 0.5:
                    c["resources"][side][res] = rnd_q(r)
        if r.random() < 0.3:
            del c["resources"]["requests"]
        return items, None
    flat = r.random() < 0.4
    if flat:
        data = {}
        for k in r.sample(["defaultCpus", "defaultMemory", "sidecarCpu", "sidecarMemory",
                           "initContainerCpu", "nodeMemory", "goMemLimitPercent",
                           "shmSizeLimitPercent", "istioCpu", "istioMemory", "cpuRounding",
                           "hugepages", "kubeReserved", "systemReserved", "evictionHard",
                           "reservedMemory", "numaMemory", "threadsReservedCpus",
                           "mallocArenaMax", "queueProxyCpu", "monitoringCvThresholdPercent"],
                          r.randint(1, 3)):
            v = rnd_q(r)
            if k in ("hugepages", "kubeReserved", "systemReserved", "evictionHard",
                     "numaMemory"):
                key = r.choice({"hugepages": ["1Gi", "2Mi", "1G", "x"],
                                "kubeReserved": ["cpu", "memory", "pid", "ephemeral-storage"],
                                "systemReserved": ["cpu", "memory"],
                                "evictionHard": ["memory.available", "nodefs.available",
                                                 "imagefs.inodesFree", "pid.available"],
                                "numaMemory": ["0", "1", "x"]}[k])
                v = f"{key}={v}" if r.random() < 0.7 else json.dumps({key: v})
            elif k == "cpuRounding":
                v = r.choice(["up", "down", "nearest", "keep", "Up", "up\n", "", "1", "round"])
            elif k == "reservedMemory":
                v = r.choice(["0:memory=1Gi", f"0:memory={rnd_q(r)}", "x", "0:memory=1Gi;1:memory=2Gi"])
            data[k] = v if isinstance(v, str) or r.random() < 0.3 else str(v)
        if any(k in data for k in ("kubeReserved", "evictionHard", "reservedMemory")):
            data.setdefault("memoryManagerPolicy", r.choice(["Static", "None"]))
        return items, flat_config(data)
    spec = {}
    w = {}
    for k in r.sample(["defaultCpus", "defaultMemory", "initContainerCpu", "cpuRounding"],
                      r.randint(0, 2)):
        w[k] = rnd_q(r) if k != "cpuRounding" else r.choice(["up", "down", "nearest", "up\n", "x", 1])
    if r.random() < 0.3:
        w["sidecarResources"] = {"cpu": rnd_q(r), "memory": rnd_q(r)}
    if r.random() < 0.3:
        w["threads"] = {"goMemLimitPercent": rnd_q(r), "reservedCpus": rnd_q(r)}
    if r.random() < 0.2:
        w["shm"] = {"sizeLimitPercent": rnd_q(r)}
    if w:
        spec["workloads"] = w
    kub = {}
    for k in r.sample(["kubeReserved", "systemReserved", "evictionHard", "evictionSoft",
                       "reservedMemory"], r.randint(0, 3)):
        if k == "reservedMemory":
            kub[k] = [{"numaNode": r.choice([0, 1, "0"]),
                       "limits": {r.choice(["memory", "hugepages-1Gi", "cpu"]): rnd_q(r)}}]
        elif k.startswith("eviction"):
            if k == "evictionSoft":
                kub.setdefault("extra", {})["evictionSoft"] = {"memory.available": rnd_q(r)}
                kub["extra"]["evictionSoftGracePeriod"] = {"memory.available": r.choice(DUR_ODD)}
            else:
                kub[k] = {r.choice(["memory.available", "nodefs.available", "nodefs.inodesFree",
                                    "imagefs.available", "pid.available", "x.available"]): rnd_q(r)}
        else:
            kub[k] = {r.choice(["cpu", "memory", "ephemeral-storage", "pid", "hugepages-2Mi"]):
                      rnd_q(r)}
    if kub and r.random() < 0.5:
        kub["memoryManagerPolicy"] = "Static"
    topo = {"sockets": 1, "coresPerSocket": 8, "threadsPerCore": 2}
    if r.random() < 0.5:
        topo["memory"] = rnd_q(r)
    if r.random() < 0.4:
        topo["hugepages"] = {r.choice(["1Gi", "2Mi", "1G", "2M", "x"]): rnd_q(r)}
    if r.random() < 0.2:
        topo["numaMemory"] = {"0": rnd_q(r)}
    spec["nodePools"] = [pool(r, topology=topo, kubelet=kub)]
    return items, typed_config(spec)


def cat_names(r, seeds):
    c = container(r, name=rnd_name(r) if r.random() < 0.4 else "server")
    d = deployment(r, name=rnd_name(r) if r.random() < 0.3 else "app", containers=[c])
    if r.random() < 0.4:
        c.setdefault("env", []).append({"name": rnd_name(r), "value": "4"})
    if r.random() < 0.3:
        d["metadata"]["labels"] = {rnd_name(r): rnd_name(r)}
    if r.random() < 0.3:
        d["metadata"]["annotations"] = {"krm-fn.dev/pinned-containers": rnd_str(
            r, ["server", "server,tokenizer", "Server", "a" * 64, "a,,b", " server ", "server\n"])}
    if r.random() < 0.3:
        d["spec"]["template"]["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/default-container": rnd_name(r)}
    flat = r.random() < 0.35
    if flat:
        data = {}
        for k in r.sample(["kinds", "names", "namespaces", "matchLabels", "pinnedContainers",
                           "threadsEnv", "threadsCustom", "nodePool", "nodeSelector",
                           "performanceProfileName", "namespace"], r.randint(1, 3)):
            v = rnd_name(r)
            v = v if isinstance(v, str) else str(v)
            if k in ("matchLabels", "nodeSelector"):
                v = f"{v}={rnd_name(r)}" if r.random() < 0.6 else json.dumps({v: str(rnd_name(r))})
            data[k] = v
        if "performanceProfileName" in data:
            data["formats"] = "performance-profile"
        return [d], flat_config(data)
    spec = {}
    sel = {}
    for k in r.sample(["kinds", "names", "namespaces", "matchLabels"], r.randint(0, 2)):
        sel[k] = {rnd_name(r): rnd_name(r)} if k == "matchLabels" else [rnd_name(r)]
    if sel:
        spec["selector"] = sel
    w = {}
    if r.random() < 0.4:
        w["threads"] = {r.choice(["env", "custom"]): [rnd_name(r)]}
    if r.random() < 0.3:
        w["pinnedContainers"] = [rnd_name(r)]
    if w:
        spec["workloads"] = w
    if r.random() < 0.5:
        p = pool(r, name=rnd_name(r) if r.random() < 0.6 else "inference")
        if r.random() < 0.4:
            p["nodeSelector"] = {rnd_name(r): rnd_name(r)}
        if r.random() < 0.3:
            p["performanceProfile"] = {"name": rnd_name(r)}
            spec["output"] = {"formats": ["performance-profile"]}
        spec["nodePools"] = [p]
    if r.random() < 0.25:
        spec.setdefault("output", {})["namespace"] = rnd_name(r)
    if r.random() < 0.25:
        spec.setdefault("output", {})["monitoring"] = {"enabled": True,
                                                       "labels": {rnd_name(r): rnd_name(r)}}
    if r.random() < 0.15:
        spec["extraKinds"] = [{"group": rnd_name(r), "version": "v1",
                               "kind": r.choice(["InferenceJob", "x", "X1"]),
                               "podTemplatePath": "spec.template"}]
    return [d], typed_config(spec)


def cat_durations(r, seeds):
    d = deployment(r)
    flat = r.random() < 0.35
    if flat:
        data = {}
        for k in r.sample(["cpuManagerReconcilePeriod", "monitoringAlertFor",
                           "monitoringRateWindow", "extra"], r.randint(1, 2)):
            v = rnd_str(r, DUR_ODD, "0159smhµ.")
            if k == "extra":
                v = json.dumps({r.choice(["evictionSoftGracePeriod", "evictionPressureTransitionPeriod",
                                          "syncFrequency", "imageMinimumGCAge",
                                          "shutdownGracePeriod"]):
                                {"memory.available": v} if r.random() < 0.5 else v})
            if k.startswith("monitoring"):
                data["monitoring"] = "true"
            data[k] = v
        return [d], flat_config(data)
    kub = {}
    if r.random() < 0.5:
        kub["cpuManagerReconcilePeriod"] = rnd_str(r, DUR_ODD, "0159smhµ.")
    extra = {}
    for k in r.sample(["evictionSoftGracePeriod", "evictionPressureTransitionPeriod",
                       "syncFrequency", "shutdownGracePeriod", "nodeStatusUpdateFrequency",
                       "imageMinimumGCAge", "cpuCFSQuotaPeriod"], r.randint(0, 3)):
        v = rnd_str(r, DUR_ODD, "0159smhµ.")
        extra[k] = {"memory.available": v} if k == "evictionSoftGracePeriod" else v
        if k == "evictionSoftGracePeriod" and r.random() < 0.7:
            extra["evictionSoft"] = {"memory.available": r.choice(["500Mi", "10%", "1Gi"])}
    if extra:
        kub["extra"] = extra
    spec = {"nodePools": [pool(r, kubelet=kub)]}
    if r.random() < 0.5:
        spec["output"] = {"monitoring": {"enabled": True,
                                         r.choice(["alertFor", "rateWindow"]):
                                             rnd_str(r, DUR_ODD, "0159smhwdy")}}
    if r.random() < 0.3:
        spec["kubernetesVersion"] = r.choice(["1.35", "1.36", "1.37", "1.36"])   # supported minors
    return [d], typed_config(spec)


def cat_images(r, seeds):
    c = container(r)
    c["image"] = rnd_str(r, IMAGE_ODD + IMAGES, "aA:@/._-ü\n0")
    d = deployment(r, containers=[c])
    if r.random() < 0.5:
        if r.random() < 0.4:
            return [d], flat_config({"verifyJob": "true",
                                     "verifyImage": rnd_str(r, IMAGE_ODD, "aA:@/._-ü\n0")})
        return [d], typed_config({"output": {"verifyJob": True, "verifyImage": rnd_str(
            r, IMAGE_ODD, "aA:@/._-ü\n0")}})
    return [d], None


def cat_engines(r, seeds):
    cs = []
    for i in range(r.randint(1, 2)):
        c = container(r, name=f"c{i}")
        if r.random() < 0.5:
            c["image"] = rnd_str(r, IMAGES, "aA:/._-ü0")
        if r.random() < 0.3:
            c["command"] = [rnd_str(r, [x for cm, _ in CMDS for x in cm] or ["x"], "aA/._- ")
                            for _ in range(r.randint(0, 3))]
        if r.random() < 0.4:
            c["args"] = list(c.get("args", [])) + [rnd_str(
                r, ["--threads", "-t", "8", "--workers=4", "-w", "--num-cpus=2", "--device=cpu",
                    "--cpu", "-XX:ActiveProcessorCount=3", "--ninstances", "serve", "--port",
                    "--threads=\u0664", "-t=8", "--threads-http", "--ts-config",
                    "--model-control-mode=none", "--num-cpus", "1.5", "all"], "0-=a ")
                for _ in range(r.randint(1, 3))]
        if r.random() < 0.6:
            c["env"] = [{"name": rnd_str(r, ENVS, "_A1"), "value": rnd_str(r, ENV_VALUES, "0 -=")}
                        for _ in range(r.randint(1, 3))]
        if r.random() < 0.2:
            c["resources"]["requests"]["cpu"] = c["resources"]["limits"]["cpu"] = r.choice(
                ["1", "2", "7", "16", "1500m", "3.5"])
        cs.append(c)
    d = deployment(r, containers=cs)
    cfg = None
    if r.random() < 0.3:
        cfg = flat_config({"threadsEngines": r.choice(["true", "false"]),
                           "threadsPerCoreMode": r.choice(["engine-default", "physical", "logical"]),
                           "threadsBind": r.choice(["true", "false"])})
    return [d], cfg


def cat_version(r, seeds):
    v = rnd_str(r, VERSIONS, "0123456789v. \u0661")
    if r.random() < 0.1:
        v = r.choice([1.34, 1.3, 134, True, None])
    d = deployment(r)
    if r.random() < 0.4:
        return [d], flat_config({"kubernetesVersion": v if isinstance(v, str) else str(v)})
    spec = {"kubernetesVersion": v}
    if r.random() < 0.4:
        spec["nodePools"] = [pool(r, kubelet={"extra": {"evictionSoftGracePeriod": {
            "memory.available": "1m"}, "evictionSoft": {"memory.available": "1Gi"}}})]
    return [d], typed_config(spec)


def mutate_scalar(r, v):
    if isinstance(v, str):
        ops = [lambda s: s + "\n", lambda s: " " + s, lambda s: s.upper(),
               lambda s: s + "\u0661", lambda s: s.replace("1", "\uff11"),
               lambda s: s + "e3", lambda s: "+" + s, lambda s: s + ".", lambda s: "." + s,
               lambda s: s * 3, lambda s: s[:-1], lambda s: s + "Ki", lambda s: s + "_x",
               lambda s: s.replace("-", "_"), lambda s: s + "%"]
        return r.choice(ops)(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return r.choice([str(v), v * 1000, -v, v + 0.5, str(v) + "m"])
    return v


def mutate(r, x, rate):
    if isinstance(x, dict):
        return {k: mutate(r, v, rate) for k, v in x.items()}
    if isinstance(x, list):
        return [mutate(r, v, rate) for v in x]
    return mutate_scalar(r, x) if r.random() < rate else x


def cat_seed(r, seeds):
    items, configs = seeds
    its = [json.loads(json.dumps(x)) for x in r.sample(items, r.randint(1, 3))]
    cfg = json.loads(json.dumps(r.choice(configs))) if r.random() < 0.7 else None
    rate = r.choice([0.02, 0.05, 0.1])
    its = [mutate(r, x, rate) for x in its]
    if cfg is not None and r.random() < 0.7:
        cfg = mutate(r, cfg, rate)
        cfg["apiVersion"] = cfg.get("apiVersion") if r.random() < 0.9 else "x"
    return its, cfg


def cat_emit(r, seeds):
    """Values that go into generated output (kubelet extra keys/values, env values,
    nodeSelector) spelled to hit YAML plain-scalar quoting."""
    pool_strs = ["yes", "Yes", "on", "y", "n", "null", "~", "1e3", "0x1", "a b", "a:b", "a: b",
                 "-a", "a-", "_a", "a_", "a.b", "a/b", "./a", "A", "Z9", "é", "a\n", "a\nb",
                 "a \nb", "a\tb", "#a", "a#b", "a\r\nb", "", " ", "true", "True", "FALSE",
                 "2001:db8::1", "12:30", "a\u2028b", "NO", "Off", "OFF", "ñ", "a" * 200]
    kub = {"extra": {}}
    for _ in range(r.randint(1, 3)):
        k = r.choice(["featureGates", "evictionSoft", "systemReservedCgroup", "providerID",
                      "staticPodPath", "podCIDR", "resolvConf", "allowedUnsafeSysctls"])
        if k == "featureGates":
            kub["extra"][k] = {rnd_str(r, ["MemoryQoS", "yes", "a.b", "_x", "A"], "a_.-\n"): True}
        elif k == "evictionSoft":
            kub["extra"][k] = {"memory.available": "1Gi"}
            kub["extra"]["evictionSoftGracePeriod"] = {"memory.available": "1m"}
        elif k == "allowedUnsafeSysctls":
            kub["extra"][k] = [rnd_str(r, pool_strs, "a:#\n ")]
        else:
            kub["extra"][k] = rnd_str(r, pool_strs, "a:#\n -")
    p = pool(r, kubelet=kub)
    if r.random() < 0.5:
        p["nodeSelector"] = {rnd_str(r, ["a", "yes", "a.b/c", "_x"], "a"): rnd_str(
            r, ["yes", "on", "1e3", "a", "", "true"], "a")}
    c = container(r)
    c["env"] = [{"name": "OMP_NUM_THREADS", "value": rnd_str(r, pool_strs, "a:#\n -")}]
    spec = {"nodePools": [p], "output": {"formats": r.sample(
        ["configmap", "kubelet-config", "json6902", "eks", "gke", "openshift",
         "performance-profile", "aks"], r.randint(1, 2))}}
    return [deployment(r, containers=[c])], typed_config(spec)


RAW_TOKENS = ["1e3", "1E-3", ".5", "5.", "+1", "-1", "0x10", "1_000", "yes", "on", "~", "null",
              "1Ki", "1k", "500m", "1u", "1n", "1E", "'\u0661'", "\"\\u0661\"", "\"\\uff11Gi\"",
              "\"1Gi\\n\"", "\" 1\"", "''", "\"\"", "1.5Gi", "2.", "007", "0o7", "1:30",
              "\"1e3\"", "'+.5'", "\"Ki\"", "A", "a.b", "a_b", "\"a\\nb\"", "ünï", "v1.34",
              "1.34", "'1.034'", "\"x@sha256:" + "0" * 32 + "\"", "VLLM/VLLM:CPU", "llama.cpp:server"]
RAW_KEYS = ("cpu", "memory", "name", "image", "value", "kubernetesVersion", "hugepages-2Mi",
            "ephemeral-storage", "threadsEnv", "defaultCpus", "sidecarCpu", "memory.available")
_SEED_TEXTS: list = []


def cat_rawtext(r, seeds):
    """A testdata case's input.yaml and config.yaml as text, with some values after
    `key: ` replaced by raw (often unquoted) hostile tokens: YAML typing as well."""
    import re
    if not _SEED_TEXTS:
        for d in sorted(glob.glob(os.path.join(ROOT, "tests/testdata/*/"))):
            p = os.path.join(d, "input.yaml")
            if os.path.exists(p):
                c = os.path.join(d, "config.yaml")
                _SEED_TEXTS.append((open(p).read(), open(c).read() if os.path.exists(c) else None))
    inp, cfg = r.choice(_SEED_TEXTS)
    text = inp.rstrip("\n") + "\n"
    if cfg is not None:
        text += "functionConfig:\n" + "".join("  " + ln + "\n" for ln in cfg.splitlines())
    keys = "|".join(re.escape(k) for k in RAW_KEYS)
    rate = r.choice([0.1, 0.3, 0.6])

    def sub(m):
        if r.random() > rate:
            return m.group(0)
        return m.group(1) + r.choice(RAW_TOKENS)
    return re.sub(r"((?:^|[\s{,])(?:" + keys + r"): )([^,}\n#]+)", sub, text), None


CATEGORIES = {"quantity": cat_quantity, "names": cat_names, "durations": cat_durations,
              "images": cat_images, "engines": cat_engines, "version": cat_version,
              "seed": cat_seed, "emit": cat_emit, "rawtext": cat_rawtext}


def dump(items, cfg, r):
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    if cfg is not None:
        rl["functionConfig"] = cfg
    if r.random() < 0.5:
        return json.dumps(rl, ensure_ascii=r.random() < 0.5) + "\n"
    return yaml.safe_dump(rl, sort_keys=False, allow_unicode=r.random() < 0.5)


def run_one(tree, text, timeout=30):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": tree, "LANG": "C.UTF-8",
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        p = subprocess.run([PY, "-m", "krm_fn"], input=text.encode(), capture_output=True,
                           timeout=timeout, env=env, cwd="/tmp/difftest_cwd")
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def run_files(tree, items, cfg, r, timeout=30):
    """`krm-fn run` on files: items as multi-document YAML, the config as its own file."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="difftest-", dir="/tmp/difftest_cwd")
    try:
        with open(os.path.join(d, "items.yaml"), "w") as f:
            f.write(yaml.safe_dump_all(items, sort_keys=False, allow_unicode=True))
        args = [PY, "-m", "krm_fn", "run"]
        if cfg is not None:
            with open(os.path.join(d, "config.yaml"), "w") as f:
                f.write(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
            args += ["--config", "config.yaml"]
        args += r + ["items.yaml"]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": tree, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            p = subprocess.run(args, capture_output=True, timeout=timeout, env=env, cwd=d)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return "timeout", b"", b""
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    old, new, n, seed, outdir = sys.argv[1:6]
    cats = sys.argv[6:] or list(CATEGORIES)
    os.makedirs(outdir, exist_ok=True)
    os.makedirs("/tmp/difftest_cwd", exist_ok=True)
    seeds = load_seeds()
    r = random.Random(int(seed))
    counts, diffs = {}, {}
    pool_ = ThreadPoolExecutor(max_workers=int(os.environ.get("DIFFTEST_WORKERS", "1")))
    t0 = time.time()
    for i in range(int(n)):
        cat = cats[i % len(cats)]
        items, cfg = CATEGORIES[cat](r, seeds)
        if os.environ.get("DIFFTEST_FILES"):
            extra = r.choice([[], ["--report"], ["--mode", "validate"], ["--report", "--mode", "validate"]])
            text = json.dumps({"items": items, "cfg": cfg, "args": extra})
            fo = pool_.submit(run_files, old, items, cfg, extra)
            fn = pool_.submit(run_files, new, items, cfg, extra)
        elif isinstance(items, str):
            text = items
            fo, fn = pool_.submit(run_one, old, text), pool_.submit(run_one, new, text)
        else:
            text = dump(items, cfg, r)
            fo, fn = pool_.submit(run_one, old, text), pool_.submit(run_one, new, text)
        a, b = fo.result(), fn.result()
        counts[cat] = counts.get(cat, 0) + 1
        if a != b:
            diffs[cat] = diffs.get(cat, 0) + 1
            with open(os.path.join(outdir, f"diff-{seed}-{i}-{cat}.json"), "w") as f:
                json.dump({"input": text, "old": [a[0], a[1].decode("utf-8", "replace"),
                                                  a[2].decode("utf-8", "replace")],
                           "new": [b[0], b[1].decode("utf-8", "replace"),
                                   b[2].decode("utf-8", "replace")]}, f)
        if i % 100 == 0:
            print(i, round(time.time() - t0), counts, diffs, flush=True)
    print("DONE", counts, diffs, flush=True)
    json.dump({"counts": counts, "diffs": diffs},
              open(os.path.join(outdir, f"summary-{seed}.json"), "w"))


if __name__ == "__main__":
    main()
