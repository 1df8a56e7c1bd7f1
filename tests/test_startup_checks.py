"""Start-up seams of the config checks (issue 11 part 10): a plain render compiles no
regular expression, builds no flat-key table and imports neither the baseline check nor the
reservedMemory module; a config that needs one of them still gets it, with the exact error
text it always had."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from krm_fn import config
from krm_fn.config import ConfigError
from tests.helpers import ROOT
from tests.test_cli import _ten_items

# what a render of `python -m krm_fn` ends with (os._exit) reports the seams first
_PROBE = """
import os, sys
real_exit = os._exit
def report(code=0):
    from krm_fn import matching
    from krm_fn.config import flat
    compiled = [p.pattern for p in matching.PATTERNS if p.compiled is not None]
    lazy = [m for m in ("krm_fn.config.baseline", "krm_fn.node.memory") if m in sys.modules]
    sys.stderr.write(f"SEAMS {compiled!r} {flat.spec_keys.cache_info().currsize} {lazy}\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = report
sys.argv = ["krm-fn"]
from krm_fn.cli import main
main()
report(0)
"""

_MATCH_LABELS = ("functionConfig:\n  apiVersion: krm-fn.dev/v1alpha1\n  kind: InferenceTuning\n"
                 "  metadata: {name: bench}\n  spec:\n    selector:\n"
                 "      matchLabels: {tier: inference}\n")


def _seams(stdin: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _PROBE], input=stdin.encode(),
                       capture_output=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return [line for line in p.stderr.decode().splitlines() if line.startswith("SEAMS ")][-1]


@pytest.mark.parametrize("function_config", ["", _MATCH_LABELS], ids=["defaults", "matchLabels"])
def test_a_plain_render_compiles_no_pattern_and_builds_no_flat_keys(function_config):
    assert _seams(_ten_items() + function_config) == "SEAMS [] 0 []"


def test_a_configmap_config_builds_the_flat_keys_and_a_percentage_compiles_its_pattern():
    cm = ("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fn}\n"
          "  data: {evictionHard: 'memory.available=5%'}\n")
    assert _seams(_ten_items() + cm) == \
        "SEAMS ['([0-9]{1,3}(?:\\\\.[0-9]{1,6})?)%'] 1 []"


def test_a_static_memory_manager_pool_imports_the_reserved_memory_module():
    cm = ("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fn}\n"
          "  data: {memoryManagerPolicy: Static}\n")
    assert _seams(_ten_items() + cm) == "SEAMS [] 1 ['krm_fn.node.memory']"


def _typed(spec: dict) -> dict:
    return {"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning", "spec": spec}


def _pool(**fields) -> dict:
    return {"nodePools": [fields]}


# each value is refused by a check that is now lazy or a character test; the texts are the
# ones the regular expressions compiled at import gave
REFUSED = [
    ({"selector": {"kinds": ["deploy-ment"]}},
     "spec.selector.kinds[0]: must be a kind name such as Deployment of at most 63 "
     "characters, found 'deploy-ment'"),
    ({"selector": {"names": ["a..b"]}},
     "spec.selector.names[0]: must be an object name (DNS subdomain) of at most 253 "
     "characters, found 'a..b'"),
    ({"selector": {"namespaces": ["Prod"]}},
     "spec.selector.namespaces[0]: must be a namespace name (DNS label) of at most 63 "
     "characters, found 'Prod'"),
    ({"selector": {"matchLabels": {"tier/": "x"}}},
     "spec.selector.matchLabels.tier/: 'tier/' is not a valid label key"),
    ({"selector": {"matchLabels": {"tier": "-x"}}},
     "spec.selector.matchLabels.tier: '-x' is not a valid label value"),
    ({"selector": {"names": ["a\u2028b"]}},
     "spec.selector.names[0]: must not contain control characters, found '\\u2028' in "
     "'a\\u2028b'"),
    ({"workloads": {"threads": {"env": ["1THREADS"]}}},
     "spec.workloads.threads.env[0]: must be an environment variable name (letters, digits "
     "and '_', not starting with a digit) of at most 256 characters, found '1THREADS'"),
    ({"workloads": {"pinnedContainers": ["Server"]}},
     "spec.workloads.pinnedContainers[0]: must be a container name (DNS label) of at most 63 "
     "characters, found 'Server'"),
    ({"kubernetesVersion": "1.x"},
     "spec.kubernetesVersion: expected a Kubernetes minor version such as \"1.35\", found "
     "'1.x'"),
    ({"kubernetesVersion": "1.35\n"},
     "spec.kubernetesVersion: expected a Kubernetes minor version such as \"1.35\", found "
     "'1.35\\n'"),
    ({"kubernetesVersion": "v1.21.3"},
     "spec.kubernetesVersion: Kubernetes v1.21.3 is not supported: krm-fn supports Kubernetes "
     "1.35, 1.36 and 1.37, as upstream maintains the three most recent minor releases "
     "(https://kubernetes.io/releases/)"),
    (_pool(name="Pool_1"),
     "spec.nodePools[0].name: must be a DNS label of at most 40 characters, found 'Pool_1'"),
    (_pool(kubelet={"cpuManagerReconcilePeriod": "30 s"}),
     "spec.nodePools[0].kubelet.cpuManagerReconcilePeriod: expected a duration such as 30s "
     "or 1m30s, found '30 s'"),
    (_pool(kubelet={"evictionHard": {"memory.available": "101%"}}),
     "spec.nodePools[0].kubelet.evictionHard.memory.available: a percentage threshold must "
     "be from 0% to 100%, found '101%'"),
    (_pool(kubelet={"extra": {"max pods": 1}}),
     "spec.nodePools[0].kubelet.extra: 'max pods' is not a KubeletConfiguration field name "
     "(letters and digits, starting with a letter)"),
    (_pool(kubelet={"kubeReserved": {"memory": "1ki"}}),
     "spec.nodePools[0].kubelet.kubeReserved.memory: '1ki' has an unknown suffix 'ki' (use "
     "one of n u m k M G T P E Ki Mi Gi Ti Pi Ei, or e<exponent>)"),
    (_pool(kubelet={"kubeReserved": {"memory": "1.2.3"}}),
     "spec.nodePools[0].kubelet.kubeReserved.memory: '1.2.3' is not a quantity (expected a "
     "number and an optional suffix such as 500m, 4, 1Gi, 1e3)"),
    (_pool(performanceProfile={"name": "A"}),
     "spec.nodePools[0].performanceProfile.name: must be a DNS subdomain of at most 241 "
     "characters, found 'A'"),
    ({"output": {"namespace": "kube_system"}},
     "spec.output.namespace: must be a DNS label (lowercase letters, digits, '-'), found "
     "'kube_system'"),
    ({"output": {"verifyImage": "ghcr.io/Krm/krm-fn:0.1.0"}},
     "spec.output.verifyImage: must be a container image reference such as "
     "ghcr.io/krm-fn/krm-fn:0.1.0, found 'ghcr.io/Krm/krm-fn:0.1.0'"),
    ({"output": {"monitoring": {"alertFor": "1h30"}}},
     "spec.output.monitoring.alertFor: must be a Prometheus duration such as 5m or 1h30m, "
     "found '1h30'"),
    ({"extraKinds": [{"group": "Example.com", "kind": "Job", "podSpecs": ["spec"]}]},
     "spec.extraKinds[0].group: must be an API group such as example.com, found "
     "'Example.com'"),
]


@pytest.mark.parametrize("spec,message", REFUSED, ids=[m.split(":")[0] for _, m in REFUSED])
def test_a_lazy_or_character_check_refuses_with_the_text_it_always_had(spec, message):
    with pytest.raises(ConfigError) as e:
        config.load(_typed(spec))
    assert str(e.value) == message


def test_the_accepted_spellings_still_load():
    cfg = config.load(_typed({
        "kubernetesVersion": "v1.36.2",
        "selector": {"kinds": ["Deployment"], "names": ["a.b-c"], "namespaces": ["", "prod"],
                     "matchLabels": {"example.com/tier": "a_b.c-D"}},
        "workloads": {"threads": {"env": ["OMP_NUM_THREADS", "_MY_THREADS"],
                                  "custom": ["_MY_THREADS"]}},
        "nodePools": [{"name": "pool-1", "kubelet": {
            "cpuManagerReconcilePeriod": "1m30.5s",
            "evictionHard": {"memory.available": "7.5%"}}}],
        "output": {"verifyImage": "localhost:5000/a__b/c--d:v1.2_3@sha256:" + "ab" * 32,
                   "monitoring": {"alertFor": "1h30m", "rateWindow": "90s"}},
    }))
    assert cfg.kubernetesVersion == (1, 36)
    assert cfg.nodePools[0].kubelet.evictionHard == {"memory.available": "7.5%"}
