"""Hostile spellings of the values the start-up changes touched (quantities, counts, YAML
scalars, Go and Prometheus durations, names, labels, images, Kubernetes versions):
the inputs of tests/difftest/pins.json (tests/test_difftest_pins.py)."""
Q = ["", " ", "1", "+1", "-1", ".5", "5.", "1e3", "1E-3", "1e+3", "+.5", "-.5", "0.", ".",
     "1Ki", "1k", "1K", "500m", "1u", "1n", "1E", "1Ei", "1P", "1Pi", "1Gi\n", " 1Gi", "1Gi ",
     "\u0661", "\uff11", "\uff11Gi", "1\u0660", "1e", "1e-", "1E+", "m", "Ki", "1.5.5", "1..5",
     "--1", "+-1", "-+1", "1mm", "1Mi5", "9" * 20, "9" * 64, "9" * 65, "1" + "0" * 19 + "Ei",
     "0", "0.0", "-0", "1e308", "1e-308", "0.0001m", "1e-9", "1e3Ki", "1Mie3", "0x10", "1_000",
     "inf", "NaN", "1\t", "1\r", "1\x00", "1.0e3m", "2.5Gi", "3Ti", "100M", "1e18",
     "9223372036854775807", "9223372036854775808", "1e-18n", "+", "-", "e3", "1ee3", "1e3e3",
     "1mi", "1MI", "1Kii", "1.5m", ".5Gi", "5.Gi", "1e03", "1e-0", "+1e+1", "1\u00a0", "\u20071"]
QUANTITIES = Q
NUMBERS = ["4", " 4", "4\n", "\t4 ", "04", "0", "9" * 16, "9" * 17, "1048576", "1048577", "",
           "+4", "-4", "4.0", "4.", ".4", "4.5", "4.000", "\u0664", "\uff14", "4 4", "1e3",
           "4" + "\u00a0", "1." + "0" * 16, "1." + "0" * 17, "1.2.3", "4\x00"]
SCALARS = ["a", "A", "_a", "a_", "a.b", "a/b", "a-b", "-a", "1a", "yes", "Yes", "no", "on",
           "Off", "null", "~", "true", "y", "n", "", " ", "a b", "a:b", "a\n", "a\nb", "a \nb",
           "a\tb", "é", "ǅ", "a\u2028b", "#a", "0x1", "1e3", "a" * 100, "./a", ".a", "a.",
           "key with: colon", "\ufeffa", "a\r\nb"]
GO_DURATIONS = ["", "0", "-0", "+0", "5s", "5m", "1h30m", "1.5s", ".5s", "5.s", "1s.5s", "-1s",
                "+1s", "1ms", "1\u00b5s", "1\u03bcs", "1us", "1ns", "\u0661s", "\uff11s", "5",
                "5m\n", " 5m", "1d", "1m1h", "1s1s", "1sm", "5ms5", "1H", ".", ".s", "1..5s",
                "1.5.5s", "\u0967s", "0s", "1h-1m", "1e3s", "2562047h47m16.854775807s"]
DUR = ["", "0", "5s", "5m", "1h30m", "1h30m5s", "1.5m", "1y", "1w", "1d",
       "1y2w3d4h5m6s7ms", "1m1h", "1s1s", "1ms1s", "1sm", "1mms", "5ms5", "10M", "5mm", "ms",
       "5m\n", " 5m", "\u0661m", "0s", "00", "9" * 33 + "s", "1m0s"]
NAMES = ["", "a", "A", "a.b", "a_b", "a-b", "-a", "a-", "a.", ".a", "a..b", "a\n", "\u00fcn",
         "x" * 40, "x" * 41, "x" * 63, "x" * 64, "x" * 241, "x" * 242, "x" * 253, "x" * 254,
         "a/b", "0", "a-.b", "1.2.3.4", "\uff41", "a b", "kube-system"]
LABELS = ["a", "A", "a.b", "a_b", "_a", "a_", "-a", "x" * 63, "x" * 64, "example.com/a",
          "Example.com/a", "a/", "/a", "a/b/c", "a.b/c-d", "k8s.io/" + "x" * 63, "\u00fc",
          "a\n", "", "x" * 250 + ".io/a", "x" * 254 + "/a"]
IMAGES = ["ghcr.io/krm-fn/krm-fn:0.1.0", "a", "A", "a:b", "a:5000", "a:5000/b",
          "localhost:5000/a/b:tag", "r.example.com:443/ns/img:v1@sha256:" + "a" * 64,
          "img@sha256:" + "a" * 31, "img@sha256:" + "A" * 32, "img@sha256+b64u:" + "f" * 32,
          "img@256:" + "0" * 32, "img@s--a:" + "0" * 32, "Img", "img:TAG", "img:_t", "img:.t",
          "img:-t", "img:" + "t" * 128, "img:" + "t" * 129, "img:\u00fc", "img:\u0661",
          "img:\u00b2", "img:\u00bd", "\u00fc/img", "host_name/img", "-host/img", "host-/img",
          "a__b", "a___b", "a._b", "a--b", "a-_b", "a..b", "a/b/", "/a", "a//b", "a\n", "a:b:c",
          "a@b", "HOST:5000/img", "host:/img", "a:1:2/b", "a/B", "a/b:c/d", "x" * 1024,
          "x" * 1025, "img:t@sha256:" + "0" * 32]
VERSIONS = ["1.34", "v1.34", "1.34.0", " 1.34", "1.034", "1.34 ", "1.34\n", "1.29", "1.22",
            "1.21", "1.36", "1.37", "1.99", "1.100", "v1.34.0", "vv1.34", "V1.34", "1.34.",
            "1.", "1", "2.0", "1.3a", "1.\u0663\u0664", "1.\uff13\uff14", "1.34.0.1", "1.34.00",
            "01.34", "1,34", "1.3", 1.34, 134, True]
ENV = ["OMP_NUM_THREADS", "_X", "1X", "X1", "X-1", "X.1", "", "\u00c9", "a" * 256, "a" * 257,
       "X\n"]
CONFIG_FIELDS = [
    ("kubernetesVersion", VERSIONS),
    ("selector.names", [[n] for n in NAMES]),
    ("selector.namespaces", [[n] for n in NAMES]),
    ("selector.kinds", [[k] for k in ["Deployment", "deployment", "D1", "1D", "D-x", "x" * 64]]),
    ("selector.matchLabels", [{k: "v"} for k in LABELS] + [{"k": v} for v in LABELS]),
    ("workloads.pinnedContainers", [[n] for n in NAMES]),
    ("workloads.threads.env", [[n] for n in ENV]),
    ("workloads.threads.custom", [[n] for n in ENV]),
    ("workloads.defaultCpus", Q[:60]),
    ("workloads.defaultMemory", Q[:60]),
    ("nodePools.[0].name", NAMES),
    ("nodePools.[0].kubelet.kubeReserved", [{"cpu": q} for q in Q[:50]] + [{"memory": q} for q in Q[:50]]),
    ("nodePools.[0].kubelet.evictionHard", [{"memory.available": q} for q in Q[:50]]
     + [{"memory.available": p} for p in ["10%", "10.5%", "100%", "101%", "1.1234567%", "%", "1.%", "5%\n", "\u0665%", "0%", "0.0000001%"]]),
    ("nodePools.[0].topology.memory", Q[:50]),
    ("nodePools.[0].topology.hugepages", [{"1Gi": q} for q in Q[:40]]),
    ("output.namespace", NAMES),
    ("output.verifyImage", IMAGES),
    ("output.monitoring.alertFor", DUR),
    ("output.monitoring.rateWindow", DUR),
    ("output.monitoring.labels", [{k: "v"} for k in LABELS] + [{"k": v} for v in LABELS]),
    ("nodePools.[0].kubelet.cpuManagerReconcilePeriod", GO_DURATIONS),
]
FLAT_KEYS = [
    ("kubernetesVersion", [v for v in VERSIONS if isinstance(v, str)]),
    ("names", NAMES), ("namespaces", NAMES), ("threadsEnv", ENV), ("nodePool", NAMES),
    ("cpuRounding", ["up", "down", "nearest", "Up", "up\n", "", "1"]),
    ("defaultCpus", Q[:40]), ("kubeReserved", ["cpu=" + q for q in Q[:30]]),
    ("evictionHard", ["memory.available=" + q for q in Q[:30] + ["10%", "101%", "1.5%"]]),
    ("verifyImage", IMAGES[:20]), ("monitoringAlertFor", DUR), ("matchLabels", ["a=b", "A_=b", "a=b\n", "x/y/z=1"]),
]
