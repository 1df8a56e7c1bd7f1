"""CPU amounts finer than a millicore (`3999999999n`, `1500000001n`, `0.0000000001`): the API
server reads them (apimachinery quantity.go ParseQuantity, rounding finer than 1n up) and
stores them rounded up to a millicore (pkg/apis/core/v1/defaults.go SetDefaults_ResourceList,
RoundUp(-3)): `3999999999n` is stored as `4`, so requests and limits are compared, for the
QoS class too, at that scale, and the kubelet and the scheduler read the stored amount: the
static CPU Manager pins Value() CPUs when Value()*1000 == MilliValue()
(pkg/kubelet/cm/cpumanager/policy_static.go isIntegralCPUAmount, guaranteedCPUs).
tests/test_quantity_apiserver.py checks the stored amounts against the real API server."""
from __future__ import annotations

import pytest

from krm_fn import quantity
from krm_fn.quantity import MILLI, NANO
from tests.test_verdict import config, deployment, errors, render, verdicts


def _pod(req: str, lim: str):
    res = {"requests": {"cpu": req, "memory": "8Gi"}, "limits": {"cpu": lim, "memory": "8Gi"}}
    return deployment(spec={"containers": [{"name": "server", "image": "srv:1",
                                            "resources": res}]})


def _cpu(items) -> tuple:
    r = items[0]["spec"]["template"]["spec"]["containers"][0]["resources"]
    return r["requests"]["cpu"], r["limits"]["cpu"]


@pytest.mark.parametrize("text, nanos, milli, cpus", [
    ("3999999999n", 4 * NANO, 4 * NANO, 4),            # stored as 4: pinned
    ("1500000001n", 1501 * MILLI, 1501 * MILLI, 0),    # stored as 1501m: not integral
    ("0.0001m", MILLI, MILLI, 0),                      # stored as 1m: not integral
    ("0.0000000001", MILLI, MILLI, 0),                 # finer than 1n: 1n, then 1m
    ("1e-12", MILLI, MILLI, 0),
    ("4000000000n", 4 * NANO, 4 * NANO, 4),
    ("3001m", 3001 * MILLI, 3001 * MILLI, 0),
])
def test_fine_cpu_reads_as_kubernetes_reads_it(text, nanos, milli, cpus):
    q = quantity.parse_cpu(text)
    assert q.nanos == nanos
    assert quantity.milli_ceil(q.nanos) == milli
    assert quantity.kubelet_cpus(q.nanos) == cpus
    assert q.is_integer == bool(cpus)


def test_format_cpu_of_a_fine_amount_is_its_canonical_form():
    assert quantity.format_cpu(4 * NANO - 1) == "3999999999n"
    assert quantity.format_cpu(100) == "100n"
    assert quantity.format_cpu(1500 * MILLI + 1000) == "1500001u"


def test_krm_fn_config_cpu_keeps_millicores():
    with pytest.raises(quantity.QuantityError, match="finer than 1m"):
        quantity.parse_milli_cpu("0.0001")


_STORED = ("(the canonical form the API server stores it in, so GitOps tools show no "
           "difference)")


def test_3999999999n_is_four_pinned_cpus():
    code, results, items = render(config(), _pod("3999999999n", "3999999999n"))
    assert (code, errors(results)) == (0, [])
    assert _cpu(items) == ("4", "4")
    assert ("info", f"container 'server': requests.cpu 3999999999n -> 4 {_STORED}") in results
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "7 per node (allocatable cpu 30: 4 each)"]


def test_fine_request_below_a_whole_limit_becomes_guaranteed():
    # as written the pod is Burstable (3999999999n is not Equal to 4); krm-fn writes 4 and 4
    code, results, items = render(config(), _pod("3999999999n", "4"))
    assert (code, errors(results)) == (0, [])
    assert _cpu(items) == ("4", "4")
    assert verdicts(results)[0].startswith("verdict: Guaranteed after admission; exclusive "
                                           "CPUs server 4 on NUMA 0")


def test_fine_non_integral_cpu_is_rounded_up_to_whole_cpus():
    code, results, items = render(config(), _pod("1500000001n", "1500000001n"))
    assert (code, errors(results)) == (0, [])
    assert _cpu(items) == ("2", "2")
    # the amount as the API server stores and kubectl shows it: 1501m
    assert ("warning", "container 'server': cpu 1501m rounded up to 2: the static CPU "
            "Manager gives exclusive CPUs only to whole-number requests") in results


def test_request_above_a_fine_limit_is_written_as_the_whole_limit():
    # the API server stores the limit as 4 before validating (4 <= 4); krm-fn writes it so
    code, results, items = render(config(), _pod("4", "3999999999n"))
    assert (code, errors(results)) == (0, [])
    assert _cpu(items) == ("4", "4")
    assert ("info", f"container 'server': limits.cpu 3999999999n -> 4 {_STORED}") in results


def test_a_fine_sidecar_cpu_is_kept_and_counted_in_millicores():
    side = {"requests": {"cpu": "100000001n", "memory": "64Mi"},
            "limits": {"cpu": "100000001n", "memory": "64Mi"}}
    spec = {"containers": [
        {"name": "server", "image": "srv:1", "resources": {
            "requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}},
        {"name": "side", "image": "side:1", "resources": side}]}
    code, results, items = render(config(), deployment(spec=spec))
    assert (code, errors(results)) == (0, [])
    assert items[0]["spec"]["template"]["spec"]["containers"][1]["resources"] == side
    # the scheduler's MilliCPU: 4100000001n is 4101m; 30 / 4.101 = 7
    assert verdicts(results) == [
        "verdict: Guaranteed after admission; exclusive CPUs server 4 on NUMA 0; "
        "7 per node (allocatable cpu 30: 4 + 101m each)"]


def test_the_written_pod_is_guaranteed_when_a_fine_request_is_stored_as_its_limit():
    # the API server stores 3999999999n as 4, so Quantity.Equal holds and the pod is
    # Guaranteed; 1500000001n is stored as 1501m, which is not 1500m
    from krm_fn.admission import build, qos
    req, lim = build.requests_limits({"requests": {"cpu": "3999999999n", "memory": "1Gi"},
                                      "limits": {"cpu": "4", "memory": "1Gi"}})
    assert (req["cpu"], lim["cpu"]) == (4 * NANO, 4 * NANO)
    assert qos.resource_qos(req, lim) == qos.GUARANTEED
    req, lim = build.requests_limits({"requests": {"cpu": "1500000001n", "memory": "1Gi"},
                                      "limits": {"cpu": "1500m", "memory": "1Gi"}})
    assert qos.resource_qos(req, lim) == qos.BURSTABLE
    req, lim = build.requests_limits({"limits": {"cpu": "3999999999n", "memory": "1Gi"}})
    assert qos.resource_qos(req, lim) == qos.GUARANTEED


def test_a_tenth_of_a_microcore_pins_like_any_fractional_cpu():
    # 0.0001m (100n) is stored as 1m and no whole CPU; so is 0.0000000001 (finer than 1n)
    for text in ("0.0001m", "0.0000000001"):
        code, results, items = render(config(), _pod(text, text))
        assert (code, errors(results)) == (0, [])
        assert _cpu(items) == ("2", "2")
        assert ("warning", "container 'server': cpu 1m rounded up to 1: the static CPU "
                "Manager gives exclusive CPUs only to whole-number requests") in results


@pytest.mark.parametrize("amount, refused", [("1999999999n", None), ("1500000001n", "1501m"),
                                             ("1e-12", "1e-3")])
def test_an_extended_resource_is_an_integer_at_milli_scale(amount, refused):
    # validation.go ValidateResourceQuantityValue: MilliValue()%1000 != 0 is "must be an
    # integer", said of the amount as stored (rounded up to 1m) in its own form
    res = {part: {"cpu": "4", "memory": "8Gi", "example.com/dev": amount}
           for part in ("requests", "limits")}
    code, results, _ = render(config(), deployment(spec={"containers": [
        {"name": "server", "image": "srv:1", "resources": res}]}))
    said = [m for m in errors(results) if f'Invalid value: "{refused}": must be an integer' in m]
    assert (code, len(said)) == ((1, 2) if refused else (0, 0))
