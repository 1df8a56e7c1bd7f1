import pytest

from krm_fn.node.options import (ALPHA, ALPHA_GATE, CPU_OPTIONS, FORBIDDEN_PAIRS, VERSIONS,
                                 check_cpu_options, maturity)

GATE = {"CPUManagerPolicyAlphaOptions": True}


def test_table_covers_exactly_the_supported_versions():
    """One column per supported minor (the generated data modules present; each column is
    checked against that release's policy_options.go in tests/node/test_kubelet_data.py)."""
    from krm_fn.node import upstream
    rows = {name: tuple(maturity(name, v) for v in VERSIONS) for name in CPU_OPTIONS}
    assert VERSIONS == upstream.VERSIONS == ((1, 35), (1, 36), (1, 37))
    assert rows == {
        "full-pcpus-only": ("ga", "ga", "ga"),
        "distribute-cpus-across-numa": ("beta", "beta", "beta"),
        "align-by-socket": ("alpha",) * 3,
        "distribute-cpus-across-cores": ("alpha",) * 3,
        "strict-cpu-reservation": ("ga", "ga", "ga"),
        "prefer-align-cpus-by-uncorecache": ("beta", "ga", "ga"),
    }
    assert len(FORBIDDEN_PAIRS) == 4
    assert ALPHA_GATE == "CPUManagerPolicyAlphaOptions"


def test_default_option_needs_no_gate():
    for v in VERSIONS:
        assert check_cpu_options({"full-pcpus-only": "true"}, v, "best-effort") == ({}, [])
    assert check_cpu_options({}, (1, 35), "none") == ({}, [])


@pytest.mark.parametrize("option,version,gates", [
    ("distribute-cpus-across-numa", (1, 35), {}),          # beta: on by default, no gate
    ("align-by-socket", (1, 36), GATE),
    ("align-by-socket", (1, 37), GATE),
    ("distribute-cpus-across-cores", (1, 35), GATE),
    ("strict-cpu-reservation", (1, 35), {}),                # GA
    ("prefer-align-cpus-by-uncorecache", (1, 35), {}),      # beta
    ("prefer-align-cpus-by-uncorecache", (1, 37), {}),      # GA
])
def test_gate_only_for_alpha(option, version, gates):
    assert check_cpu_options({option: "true"}, version, "best-effort") == (gates, [])


def test_alpha_option_set_false_still_needs_gate():
    # the kubelet checks availability of every key before parsing its value
    assert check_cpu_options({"align-by-socket": "false"}, (1, 35), "best-effort") == (GATE, [])


def test_unknown_and_unavailable_options(monkeypatch):
    gates, problems = check_cpu_options({"full-pcpu-only": "true"}, (1, 35), "none")
    assert gates == {}
    assert problems == ["unknown CPU Manager policy option 'full-pcpu-only' (known: "
                        "full-pcpus-only, distribute-cpus-across-numa, align-by-socket, "
                        "distribute-cpus-across-cores, strict-cpu-reservation, "
                        "prefer-align-cpus-by-uncorecache); the kubelet refuses to start: "
                        "\"new static policy error: unknown CPU Manager Policy option: "
                        "\"full-pcpu-only\"\" (kubernetes/kubernetes "
                        "pkg/kubelet/cm/cpumanager/policy_options.go)"]
    # every option exists in every supported version today; one new in the newest
    monkeypatch.setitem(CPU_OPTIONS, "new-option", ("KEP-0", (None, None, ALPHA)))
    gates, problems = check_cpu_options({"new-option": "true"}, (1, 35), "none")
    assert gates == {}
    assert problems == ["CPU Manager policy option 'new-option' does not exist in "
                        "Kubernetes 1.35 (added in 1.37, KEP-0); the kubelet refuses to "
                        "start with it"]
    assert check_cpu_options({"new-option": "true"}, (1, 37), "none") == (GATE, [])


@pytest.mark.parametrize("a,b", FORBIDDEN_PAIRS)
def test_forbidden_pairs(a, b):
    gates, problems = check_cpu_options({a: "true", b: "true"}, (1, 36), "best-effort")
    assert problems == [f"CPU Manager policy options {a!r} and {b!r} cannot both be \"true\": "
                        f"the kubelet refuses to start: \"new static policy error: static "
                        f"policy options {a} and {b} can not be used at the same time\" "
                        f"(kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_options.go); "
                        f"remove one of them"]
    # only options set to "true" take part
    assert check_cpu_options({a: "true", b: "false"}, (1, 36), "best-effort")[1] == []
    assert check_cpu_options({a: "false", b: "true"}, (1, 36), "best-effort")[1] == []


def test_allowed_pair():
    assert check_cpu_options({"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"},
                             (1, 35), "single-numa-node") == ({}, [])


def test_align_by_socket_with_single_numa_node():
    gates, problems = check_cpu_options({"align-by-socket": "true"}, (1, 35), "single-numa-node")
    assert gates == GATE
    assert problems == ["CPU Manager policy option 'align-by-socket' cannot be used with "
                        "topologyManagerPolicy 'single-numa-node': the kubelet refuses to "
                        "start: \"new static policy error: Topolgy manager single-numa-node "
                        "policy is incompatible with CPUManager align-by-socket policy "
                        "option\" (kubernetes/kubernetes pkg/kubelet/cm/cpumanager/"
                        "policy_options.go); remove the option or choose another policy"]
    assert check_cpu_options({"align-by-socket": "false"}, (1, 35), "single-numa-node")[1] == []
    assert check_cpu_options({"align-by-socket": "true"}, (1, 35), "restricted")[1] == []


def test_bad_value():
    _, problems = check_cpu_options({"full-pcpus-only": "yes"}, (1, 35), "none")
    assert problems == ["cpuManagerPolicyOptions.full-pcpus-only must be \"true\" or \"false\", "
                        "found 'yes'; the kubelet refuses to start: \"new static policy "
                        "error: bad value for option \"full-pcpus-only\": strconv.ParseBool: "
                        "parsing \"yes\": invalid syntax\" (kubernetes/kubernetes "
                        "pkg/kubelet/cm/cpumanager/policy_options.go)"]
    # a spelling Go's strconv.ParseBool reads: krm-fn is stricter, the kubelet is not quoted
    _, problems = check_cpu_options({"full-pcpus-only": "TRUE"}, (1, 35), "none")
    assert problems == ["cpuManagerPolicyOptions.full-pcpus-only must be \"true\" or "
                        "\"false\", found 'TRUE'"]


def test_maturity_errors():
    """No nearest version: a version without data is refused (the config never passes
    one)."""
    with pytest.raises(ValueError, match=r"no CPU Manager option data for Kubernetes 1.34 "
                                         r"\(supported: 1.35, 1.36, 1.37\)"):
        maturity("full-pcpus-only", (1, 34))
    with pytest.raises(ValueError, match="Kubernetes 1.38"):
        maturity("full-pcpus-only", (1, 38))
    with pytest.raises(KeyError):
        maturity("nope", (1, 35))
