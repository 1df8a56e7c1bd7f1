"""How engines are recognised (krm_fn/rules/engines/recognition.py): the data `detect` reads
without importing an engine module, the literal each regex declares (checked with `in`
before the regex is compiled and searched), and that the filtered, lazy detection gives
what searching every regex of every engine gave."""
from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from krm_fn.pod import ContainerView
from krm_fn.rules import engines
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.recognition import Pattern
from tests.helpers import ROOT

PATTERNS = [p for r in recognition.TABLE for p in (*r.images, *r.commands, *r.needs)] + [
    s.command for s in engines.WORKER_SOURCES if s.command is not None]


def test_every_regex_is_a_pattern_with_literals():
    assert len(PATTERNS) == 32, (
        f"{len(PATTERNS)} patterns: a new engine's (or worker source's) patterns change this "
        f"count; update it (CONTRIBUTING.md, A serving engine)")
    for p in PATTERNS:
        assert isinstance(p, Pattern) and p.within, p
        assert all(isinstance(w, str) and w for w in p.within), p
        re.compile(p.regex)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.regex[:40])
def test_every_match_contains_a_declared_literal(pattern):
    """Strings hypothesis builds to match the regex (anywhere in them) all hold, in the
    match itself, one of the literals the pattern declares: the `in` pre-filter never
    skips a regex that would match."""
    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern.regex, fullmatch=False))
    def holds(s):
        m = re.search(pattern.regex, s)
        assert m is not None
        assert any(w in m.group(0) for w in pattern.within), (s, m.group(0))
    holds()


def test_each_engine_takes_its_recognition_from_the_table():
    """One definition: ENGINES is TABLE's order, and each module's ENGINE holds its TABLE
    entry itself (not a copy of the patterns)."""
    assert [e.recognition for e in engines.ENGINES] == list(recognition.TABLE)
    for r, e in zip(recognition.TABLE, engines.ENGINES):
        assert e.recognition is r and e.name == r.name
        assert sys.modules[f"krm_fn.rules.engines.{r.module}"].ENGINE is e
    assert len({r.module for r in recognition.TABLE}) == len(recognition.TABLE) == 13, (
        f"{len(recognition.TABLE)} engines (one module each): a new engine changes this "
        f"count; update it here and in tests/test_cli.py _engine_modules (CONTRIBUTING.md, "
        f"A serving engine)")
    assert [name for name, _ in engines.ALWAYS] == ["go", "glibc"]


# -- the lazy, pre-filtered detection equals searching every regex --------------------------

def _eager_detect(c: ContainerView) -> list[str]:
    """detect() as it was before recognition.py: every regex of every engine searched (a
    command regex with a literal of its match in a word in program position)."""
    from krm_fn.rules.cmdline import env_names, text, tokens
    from krm_fn.rules.engines.programs import spans
    image = str(c.data.get("image") or "").lower()
    image = image if len(image) <= engines.MAX_IMAGE_TEXT else ""
    line, names, programs = text(tokens(c)), env_names(c), spans(tokens(c))
    key = c.path[-1] if c.path and isinstance(c.path[-1], str) else None
    found = []
    for e in recognition.TABLE:
        hit = any(re.search(p.regex, image) for p in e.images) or (key is not None and key in
                                                                    e.kserve)
        if not hit and any(recognition.found(p.regex, p.within, line, programs)
                           for p in e.commands):
            hit = not e.needs or any(re.search(p.regex, line) for p in e.needs) or (
                e.or_no_accelerator and not recognition.accelerator(c.data.get("resources")))
        if not hit and names & set(e.env_names):
            hit = True
        if hit:
            found.append(e)
    return [e.name for e in found if not any(o.name in e.not_with for o in found)]


def _fragments() -> list[str]:
    """Pieces to build images and command lines from: every literal of every pattern, in
    upper case too, pieces of the regexes and the boundaries they test."""
    out = {w for p in PATTERNS for w in p.within}
    out |= {w.upper() for w in list(out)} | {w.title() for w in list(out)}
    for p in PATTERNS:
        out |= {f for f in re.split(r"[\\()\[\]|^$?*+]+", p.regex) if f}
    out |= {"/", ":", "@", " ", "  ", "\t", "-", "_", ".", "=", ";", "&&", "(", "cpu", "-cpu",
            "_cpu", ":cpu", ":0.6-cpu", ":latest", "serve", "start", "--device", "=cpu",
            "--device=cpu", "cuda", "server", "java", "/usr/bin/java", "8u191-jdk", "17-jre",
            "jdk17", "registry.example", "ghcr.io/", "-m", "python", "x", "1", "vllm",
            "--workers", "4", "intel-cpu", "2.4.0", "ray start", "vllm serve", "ollama serve",
            "--device cpu", "gunicorn -w", "python -m"}
    return sorted(out)


def _containers(n: int, seed: int):
    rnd = random.Random(seed)
    frags = _fragments()
    env_pool = sorted({v for r in recognition.TABLE for v in r.env_names}
                      | {"OMP_NUM_THREADS", "JAVA_HOME", "java_opts"})
    keys = sorted({k for r in recognition.TABLE for k in r.kserve} | {"sklearn", "ONNX"})

    def piece(k: int) -> str:
        return "".join(rnd.choice(frags) for _ in range(rnd.randint(1, k)))
    for _ in range(n):
        data: dict = {}
        if rnd.random() < 0.9:
            image = piece(6)
            if rnd.random() < 0.1:                  # around the 512-character bound
                image = "r/" + "a" * (rnd.randint(500, 515) - len(image) - 2) + image
            data["image"] = image
        for field in ("command", "args"):
            if rnd.random() < 0.7:
                data[field] = [piece(4) for _ in range(rnd.randint(1, 4))]
        if rnd.random() < 0.3:
            data["env"] = [{"name": rnd.choice(env_pool), "value": "x"}
                           for _ in range(rnd.randint(1, 3))]
        path = ("spec", "containers", 0)
        if rnd.random() < 0.2:
            path = ("spec", "predictor", rnd.choice(keys))
        yield ContainerView("c", "app", path, data)


def test_detect_equals_searching_every_regex():
    """Across many containers built from every engine's literals and regex pieces (case,
    `/`, `:` and `@` boundaries, images around 512 characters, KServe keys, env names),
    the pre-filtered detect() recognises exactly what searching every regex does, and
    every engine is recognised by some (so the comparison is not empty)."""
    seen = dict.fromkeys((r.name for r in recognition.TABLE), 0)
    for c in _containers(20000, 11):
        want = _eager_detect(c)
        assert [e.name for e in engines.detect(c)] == want, c.data
        for name in want:
            seen[name] += 1
    assert all(seen.values()), seen


def test_worker_commands_equal_searching_every_regex():
    for c in _containers(4000, 12):
        line = engines.text(engines.tokens(c))
        for src in engines.WORKER_SOURCES:
            if src.command is not None:
                assert src.command.search(line) == (re.search(src.command.regex, line)
                                                    is not None), line


def test_a_regex_is_searched_only_when_its_literal_is_there(monkeypatch):
    """No regex is searched (and so compiled) for a container whose image and command line
    hold none of the literals; for a vLLM image, only the vLLM image regexes are."""
    searched = []

    class Spy:
        @staticmethod
        def search(pattern, s):
            searched.append(pattern)
            return re.search(pattern, s)
    monkeypatch.setattr(recognition, "re", Spy)
    engines._detect.cache_clear()
    c = ContainerView("c", "app", ("spec", "containers", 0),
                      {"image": "registry.example/agent:1.0", "args": ["--model", "/m"]})
    assert engines.detect(c) == [] and searched == []
    c.data["image"] = "registry.example/vllm-cpu:0.6.1"
    assert [e.name for e in engines.detect(c)] == ["vLLM CPU"]
    assert searched == [recognition.TABLE[0].images[0].regex]
    engines._detect.cache_clear()


def test_detect_imports_only_the_engines_it_recognises():
    code = ("import sys\n"
            "from krm_fn.pod import ContainerView\n"
            "from krm_fn.rules import engines\n"
            "c = ContainerView('c', 'app', ('spec', 'containers', 0), {'image': %r})\n"
            "print([e.name for e in engines.detect(c)])\n"
            "print(sorted(m for m in sys.modules if m.startswith('krm_fn.rules.engines.')))\n")
    base = ["krm_fn.rules.engines.base", "krm_fn.rules.engines.programs",
            "krm_fn.rules.engines.ranks",
            "krm_fn.rules.engines.recognition", "krm_fn.rules.engines.workers"]
    for image, names, mods in (
            ("busybox", [], []),
            ("vllm/vllm-openai-cpu:v0.11.1", ["vLLM CPU"], ["vllm"]),
            ("eclipse-temurin:17-jre", ["JVM"], ["jvm"]),
            ("nvcr.io/nvidia/tritonserver:24.01-py3", ["Triton"], ["triton"])):
        p = subprocess.run([sys.executable, "-c", code % image], capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines() == [
            repr(names), repr(sorted(base + [f"krm_fn.rules.engines.{m}" for m in mods]))]
