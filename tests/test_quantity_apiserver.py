"""Resource amounts as the real kube-apiserver stores them (tests/controlplane): krm-fn's
quantity.stored (ParseQuantity, rounding finer than 1n up; SetDefaults_ResourceList's
RoundUp(-3); Quantity.String()) against the amounts a dry-run create of a pod returns, for
the hostile spellings of one kind: signs, bare dots, exponents, huge exponents that wrap at
32 bits, binary suffixes below 1, amounts finer than 1n."""
from __future__ import annotations

import pytest

from krm_fn import quantity

# every spelling the API server accepts; quantity.stored must give its stored text
ACCEPTED = ["0.0000000001", "1e-12", "0.5", "1e3", "1E3", "1e+3", "+1", ".5", "5.", " 1 ",
            "1Ki", "-0", "0.0000000001Ei", "0.0000000001Ki", "1e4294967296", "1e-400",
            "2e18", "1.5e3", "1500e0", "010", "+.5", "1.0000000001", "1.5Gi", "0.5Ki",
            "100e-3", "1000m", "1.000", "0e5", "000", "8Ki", "10e2", "2E", "1.", "1.G",
            "3999999999n", "1500000001n", "1E-3", "+0.0000000001"]


def _stored(controlplane, amount: str) -> tuple:
    """(HTTP status, the stored requests or the refusal's message) of a dry-run pod whose
    container asks for `amount` of cpu and memory."""
    ns = controlplane.pod_namespace("quantities")
    res = {"cpu": amount, "memory": amount}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": ns},
           "spec": {"containers": [{"name": "a", "image": "a:1", "resources": {
               "requests": res, "limits": res}}]}}
    code, body = controlplane.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
    if code >= 300:
        return code, body.get("message") if isinstance(body, dict) else body
    return code, body["spec"]["containers"][0]["resources"]["requests"]


def test_stored_amounts_are_the_api_servers(controlplane):
    for amount in ACCEPTED:
        code, got = _stored(controlplane, amount)
        assert code == 201, (amount, got)
        assert got == {"cpu": quantity.stored(amount)[1]} | {"memory": got["memory"]}, amount
        assert got["cpu"] == got["memory"], amount


@pytest.mark.parametrize("amount", ["-0.0000000001", "-1e-12"])
def test_a_negative_amount_finer_than_1n_is_refused_as_the_stored_minus_1m(controlplane,
                                                                          amount):
    code, message = _stored(controlplane, amount)
    shown = quantity.stored(amount)[1]
    assert code == 422 and f'Invalid value: "{shown}": must be greater than or equal to 0' \
        in message, message


@pytest.mark.parametrize("amount", ["0x10", "1ki", "1e-10Ki", "1 Gi"])
def test_a_refused_spelling_is_refused_in_api_errors_words(controlplane, amount):
    code, message = _stored(controlplane, amount)
    assert code == 400 and message.endswith(quantity.api_error(amount)), message
    with pytest.raises(quantity.QuantityError):
        quantity.stored(amount)


def test_the_canonical_rule_writes_the_stored_text():
    # rule canonical rewrites a changed container's cpu and memory as the API server
    # stores them: checked above against the real API server
    from krm_fn.rules.canonical import canonical
    assert [canonical("cpu", a) for a in ("+1", "10e2", "1.5Gi", "3999999999n", "5.")] == [
        "+1", "1e3", "1536Mi", "4", "5."]
    assert [canonical("memory", a) for a in ("1E3", "1.5e3", "1024Mi")] == [
        "1E3", "1500", "1Gi"]
    assert canonical("memory", "1e-12") is None      # stored as 1e-3: no whole byte
