"""krm-fn's expansion of `$(VAR)` in command and args (krm_fn/rules/cmdline.py expand,
env_mapping), which the engine and worker checks read, against the kubelet's own code:
tests/controlplane/expand (pkg/kubelet/container ExpandContainerCommandAndArgs and
third_party/forked/golang/expansion at the release tests/controlplane/go.mod pins, the env
values expanded in order as makeEnvironmentVariables does)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from krm_fn.pod import ContainerView
from krm_fn.rules import cmdline, engines
from tests import gobuild

HERE = Path(__file__).resolve().parent / "controlplane" / "expand"
PROGRAM = gobuild.GoProgram("expand", HERE, modfile="../go.mod",
                            what="the kubelet's command and args expansion "
                                 "(tests/controlplane/expand)")

FIXED = [
    {"command": ["gunicorn", "--workers", "$(W)", "app:app"],
     "env": [{"name": "W", "value": "4"}, {"name": "WEB_CONCURRENCY", "value": "1"}]},
    {"args": ["$$(W)", "$(W", "$W", "$", "a$", "$()", "$(é)", "$$$(W)", "$(W)$(W)"],
     "env": [{"name": "W", "value": "4"}]},
    {"args": ["--tp=$(B)"], "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "$(A)"},
                                    {"name": "A", "value": "$(A)0"}]},
    {"args": ["$(A)", "$(B)"], "env": [{"name": "B", "value": "$(A)"},
                                       {"name": "A", "value": "1"}]},
    {"args": ["$(E)x"], "env": [{"name": "E", "value": ""}]},
]
_ALPHABET = ["$", "$", "(", ")", "W", "A", "x", " ", "é", "-"]


def _generated(n: int, seed: int = 35) -> list:
    rng = random.Random(seed)

    def word():
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 9)))
    out = []
    for _ in range(n):
        env = [{"name": rng.choice(["W", "A", "é"]), "value": word()}
               for _ in range(rng.randint(0, 3))]
        out.append({"command": [word() for _ in range(rng.randint(0, 3))],
                    "args": [word() for _ in range(rng.randint(0, 3))], "env": env})
    return out


def _kubelet(containers: list) -> list:
    return gobuild.run_json(PROGRAM, [{"name": "c", **c} for c in containers])


def test_command_and_args_are_expanded_as_the_kubelet_expands_them():
    containers = FIXED + _generated(400)
    got = _kubelet(containers)
    for c, (command, args) in zip(containers, got):
        mapping = cmdline.env_mapping(ContainerView("c", "app", (), c))
        mine = ([cmdline.expand(e, mapping) for e in c.get("command", [])],
                [cmdline.expand(e, mapping) for e in c.get("args", [])])
        assert mine == (command or [], args or []), c


def test_a_worker_count_given_as_a_variable_is_read():
    # gunicorn gets 4 workers from the kubelet's expansion; WEB_CONCURRENCY does not count
    c = ContainerView("web", "app", ("spec", "containers", 0), {"name": "web", **FIXED[0]})
    found = engines.workers(c)
    assert (found.count, found.what) == (4, "gunicorn --workers 4")


@pytest.mark.parametrize("env", [[], [{"name": "W", "valueFrom": {"configMapKeyRef": {
    "name": "cfg", "key": "w"}}}]])
def test_a_variable_unknown_at_render_time_stays_unread(env):
    c = ContainerView("web", "app", ("spec", "containers", 0), {
        "name": "web", "command": ["gunicorn", "--workers", "$(W)", "app:app"],
        "env": env + [{"name": "WEB_CONCURRENCY", "value": "1"}]})
    assert engines.workers(c) is None
    assert engines.unread_workers(c, tuple(engines.detect(c)))[2] == "$(W)"


@pytest.mark.parametrize("data", [
    {"command": ["llama-server", "-t", "$(E)", "4"], "env": [{"name": "E", "value": ""}]},
    {"command": ["llama-server", "-t", "", "4"]}])
def test_an_empty_argument_is_still_a_word(data):
    """The kubelet hands an entry that is (or expands to) "" to the program as an empty
    argument: llama-server's -t then takes "" (which its parser refuses,
    tests/engines/test_llama_args.py), not the 4 after it."""
    c = ContainerView("c", "app", ("spec", "containers", 0), {"name": "c", **data})
    assert [t.text for t in cmdline.tokens(c)] == ["llama-server", "-t", "", "4"]


@pytest.mark.parametrize("data, want", [
    # the kubelet hands each entry to the program as one argument: llama-server gets
    # "--threads 4", which is no -t (its parser refuses it), gunicorn `-w 4` as -w " 4"
    ({"command": ["llama-server", "--threads 4"]}, ["llama-server", "--threads 4"]),
    ({"command": ["gunicorn", "-w 4", "a:b"]}, ["gunicorn", "-w 4", "a:b"]),
    # a shell splits its script; the $0 and the parameters after it stay whole ...
    ({"command": ["sh", "-c", "exec llama-server -t 4"]},
     ["sh", "-c", "exec", "llama-server", "-t", "4"]),
    ({"command": ["tini", "--", "bash", "-ec", 'exec "$@"', "a b", "ollama serve"]},
     ["tini", "--", "bash", "-ec", "exec", '"$@"', "a b", "ollama serve"]),
    # ... unless the script expands them unquoted, when each is split into fields and an
    # empty one gives none (POSIX 2.6.5)
    ({"command": ["sh", "-c", "exec $@", "a b", "", "llama-server -t 4"]},
     ["sh", "-c", "exec", "$@", "a b", "llama-server", "-t", "4"]),
    # without command the image's entrypoint (maybe a shell) gets the args: split
    ({"args": ["exec llama-server -t 4"]}, ["exec", "llama-server", "-t", "4"]),
])
def test_each_entry_is_one_argument_unless_a_shell_splits_it(data, want):
    c = ContainerView("c", "app", ("spec", "containers", 0), {"name": "c", **data})
    assert [t.text for t in cmdline.tokens(c)] == want
