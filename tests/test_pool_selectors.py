"""Node pools whose nodeSelectors overlap (red team 2): a pod's nodeSelector matches every
node carrying all its labels, so a pool whose labels are a subset of another pool's (equal,
empty, or both left at the default) selects that pool's nodes too: those nodes would get two
kubelet configurations and the wider pool's pods could run on them. An error, fail closed."""
import pytest

from krm_fn import config
from krm_fn.config import ConfigError

HINT = ("those nodes would get both pools' kubelet configurations, and pods placed in {w!r} "
        "could be scheduled on them; give each pool a label the other lacks, such as "
        "krm-fn.dev/node-pool: <pool> (https://kubernetes.io/docs/concepts/"
        "scheduling-eviction/assign-pod-node/#nodeselector)")


def _load(*pools):
    return config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                        "metadata": {"name": "x"}, "spec": {"nodePools": list(pools)}})


@pytest.mark.parametrize("first, second, wide, narrow, sel", [
    ({"name": "a", "nodeSelector": {"k": "v"}}, {"name": "b", "nodeSelector": {"k": "v"}},
     "a", "b", "k=v"),
    ({"name": "a", "nodeSelector": {"k": "v"}},
     {"name": "b", "nodeSelector": {"k": "v", "zone": "z1"}}, "a", "b", "k=v"),
    ({"name": "a", "nodeSelector": {"k": "v", "zone": "z1"}},
     {"name": "b", "nodeSelector": {"k": "v"}}, "b", "a", "k=v"),
    ({"name": "a", "nodeSelector": {}}, {"name": "b", "nodeSelector": {"k": "v"}},
     "a", "b", "empty"),
    ({"name": "a"}, {"name": "b"}, "a", "b", "krm-fn.dev/cpu-pinning=true"),
])
def test_a_pool_whose_selector_covers_another_pools_nodes_is_an_error(first, second, wide,
                                                                      narrow, sel):
    with pytest.raises(ConfigError) as e:
        _load(first, second)
    assert e.value.path == "spec.nodePools[1].nodeSelector"
    assert e.value.message == (f"node pool {wide!r} nodeSelector ({sel}) matches every node "
                               f"of node pool {narrow!r}: " + HINT.format(w=wide))


def test_pools_with_disjoint_selectors_load():
    cfg = _load({"name": "a", "nodeSelector": {"k": "v"}},
                {"name": "b", "nodeSelector": {"k": "w"}},
                {"name": "c", "nodeSelector": {"other": "x"}})
    assert [p.nodeSelector for p in cfg.nodePools] == [{"k": "v"}, {"k": "w"}, {"other": "x"}]


def test_one_pool_with_an_empty_selector_is_every_node():
    assert _load({"name": "a", "nodeSelector": {}}).nodePools[0].nodeSelector == {}
