"""The two speed-ups behind P2 (README, Performance) change nothing observable: the cyclic
garbage collector is paused only while a run works (and restored, also after exit 1), and
cached quantities behave exactly like fresh ones."""
from __future__ import annotations

import gc

import pytest
from click.testing import CliRunner

from krm_fn import quantity
from krm_fn.cli import cli

_RL = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: a, labels: {tier: inference}}
  spec:
    template:
      spec:
        containers:
        - name: c
          resources: {requests: {cpu: "2", memory: 1Gi}}
functionConfig:
  apiVersion: krm-fn.dev/v1alpha1
  kind: InferenceTuning
  metadata: {name: t}
  spec: {selector: {matchLabels: {tier: inference}}}
"""


@pytest.mark.parametrize("text, code", [(_RL, 0), ("kind: ResourceList\n", 1)])
def test_gc_state_restored_after_a_run(text, code):
    assert gc.isenabled()
    r = CliRunner().invoke(cli, [], input=text)
    assert r.exit_code == code, r.output
    assert gc.isenabled()
    gc.disable()
    try:
        CliRunner().invoke(cli, [], input=text)
        assert not gc.isenabled()       # a caller's own choice is left alone
    finally:
        gc.enable()


def test_quantity_cache_is_transparent():
    for _ in range(2):
        assert quantity.parse("500m") == quantity.parse("500m")
        assert quantity.parse(4).value == quantity.parse("4").value == 4
        assert quantity.parse(1.5).text == "1.5"
        with pytest.raises(quantity.QuantityError):
            quantity.parse("12x")
        with pytest.raises(quantity.QuantityError):
            quantity.parse(True)
