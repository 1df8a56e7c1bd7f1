import pytest

from krm_fn.node.options import (ALPHA_GATE, CPU_OPTIONS, FORBIDDEN_PAIRS, VERSIONS,
                                 check_cpu_options, maturity)

GATE = {"CPUManagerPolicyAlphaOptions": True}


def test_table_matches_kubelet_md_section_3():
    rows = {name: tuple(maturity(name, v) for v in VERSIONS) for name in CPU_OPTIONS}
    assert VERSIONS == ((1, 31), (1, 32), (1, 33), (1, 34), (1, 35), (1, 36))
    assert rows == {
        "full-pcpus-only": ("beta", "beta", "ga", "ga", "ga", "ga"),
        "distribute-cpus-across-numa": ("alpha", "alpha", "beta", "beta", "beta", "beta"),
        "align-by-socket": ("alpha",) * 6,
        "distribute-cpus-across-cores": ("alpha",) * 6,
        "strict-cpu-reservation": (None, "alpha", "beta", "beta", "ga", "ga"),
        "prefer-align-cpus-by-uncorecache": (None, "alpha", "alpha", "beta", "beta", "ga"),
    }
    assert len(FORBIDDEN_PAIRS) == 4
    assert ALPHA_GATE == "CPUManagerPolicyAlphaOptions"


def test_default_option_needs_no_gate():
    for v in VERSIONS:
        assert check_cpu_options({"full-pcpus-only": "true"}, v, "best-effort") == ({}, [])
    assert check_cpu_options({}, (1, 34), "none") == ({}, [])


@pytest.mark.parametrize("option,version,gates", [
    ("distribute-cpus-across-numa", (1, 32), GATE),
    ("distribute-cpus-across-numa", (1, 33), {}),          # beta: on by default, no gate
    ("align-by-socket", (1, 36), GATE),
    ("distribute-cpus-across-cores", (1, 34), GATE),
    ("strict-cpu-reservation", (1, 32), GATE),
    ("strict-cpu-reservation", (1, 35), {}),                # GA
    ("prefer-align-cpus-by-uncorecache", (1, 33), GATE),
    ("prefer-align-cpus-by-uncorecache", (1, 34), {}),
])
def test_gate_only_for_alpha(option, version, gates):
    assert check_cpu_options({option: "true"}, version, "best-effort") == (gates, [])


def test_alpha_option_set_false_still_needs_gate():
    # the kubelet checks availability of every key before parsing its value
    assert check_cpu_options({"align-by-socket": "false"}, (1, 34), "best-effort") == (GATE, [])


def test_unknown_and_unavailable_options():
    gates, problems = check_cpu_options({"full-pcpu-only": "true"}, (1, 34), "none")
    assert gates == {}
    assert problems == ["unknown CPU Manager policy option 'full-pcpu-only' (known: "
                        "full-pcpus-only, distribute-cpus-across-numa, align-by-socket, "
                        "distribute-cpus-across-cores, strict-cpu-reservation, "
                        "prefer-align-cpus-by-uncorecache); the kubelet refuses to start"]
    gates, problems = check_cpu_options({"strict-cpu-reservation": "true"}, (1, 31), "none")
    assert gates == {}
    assert problems == ["CPU Manager policy option 'strict-cpu-reservation' does not exist in "
                        "Kubernetes 1.31 (added in 1.32, KEP-4540); the kubelet refuses to "
                        "start with it"]


def test_version_outside_table():
    gates, problems = check_cpu_options({"full-pcpus-only": "true"}, (1, 30), "none")
    assert gates == {}
    assert len(problems) == 1 and "Kubernetes 1.30" in problems[0]
    assert check_cpu_options({}, (1, 37), "none") == ({}, [])


@pytest.mark.parametrize("a,b", FORBIDDEN_PAIRS)
def test_forbidden_pairs(a, b):
    gates, problems = check_cpu_options({a: "true", b: "true"}, (1, 36), "best-effort")
    assert problems == [f"CPU Manager policy options {a!r} and {b!r} cannot both be \"true\": "
                        f"the kubelet refuses to start; remove one of them"]
    # only options set to "true" take part
    assert check_cpu_options({a: "true", b: "false"}, (1, 36), "best-effort")[1] == []
    assert check_cpu_options({a: "false", b: "true"}, (1, 36), "best-effort")[1] == []


def test_allowed_pair():
    assert check_cpu_options({"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"},
                             (1, 34), "single-numa-node") == ({}, [])


def test_align_by_socket_with_single_numa_node():
    gates, problems = check_cpu_options({"align-by-socket": "true"}, (1, 34), "single-numa-node")
    assert gates == GATE
    assert problems == ["CPU Manager policy option 'align-by-socket' cannot be used with "
                        "topologyManagerPolicy 'single-numa-node': the kubelet refuses to "
                        "start; remove the option or choose another policy"]
    assert check_cpu_options({"align-by-socket": "false"}, (1, 34), "single-numa-node")[1] == []
    assert check_cpu_options({"align-by-socket": "true"}, (1, 34), "restricted")[1] == []


def test_bad_value():
    _, problems = check_cpu_options({"full-pcpus-only": "yes"}, (1, 34), "none")
    assert problems == ["cpuManagerPolicyOptions.full-pcpus-only must be \"true\" or \"false\", "
                        "found 'yes'"]


def test_maturity_errors():
    with pytest.raises(ValueError, match="1.30"):
        maturity("full-pcpus-only", (1, 30))
    with pytest.raises(KeyError):
        maturity("nope", (1, 34))
