"""Ollama (`ollama serve`, image `ollama/ollama`): it reads no thread-count env var (none
among the variables of its envconfig/config.go); each model runner takes `num_thread`
from the request's options or the Modelfile (`PARAMETER num_thread N`, api/types.go
`Options.NumThread`), and 0, the default, lets the runner decide (llama.cpp's count of the
node's physical cores, not the pinned CPUs). So: a warning naming the setting, never
reported as bound.
"""
from __future__ import annotations

from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine

_SRC = "https://github.com/ollama/ollama/blob/v0.32.15/"


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Warn that the thread count must be set per model."""
    want = f.count.count
    pod.warn(c.path, f"container {c.name!r} runs Ollama, which reads no thread-count env var: "
                     f"each model runner uses num_thread from the request options or the "
                     f"Modelfile, and its default 0 lets the runner count the node's physical "
                     f"cores, not the pinned CPUs; set PARAMETER num_thread {want} in the "
                     f"Modelfile (or \"options\": {{\"num_thread\": {want}}} in each request)")


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    recognised="image `ollama/ollama`; `ollama serve` in command/args",
    sets="the thread vars (harmless; no Ollama setting is an env var)",
    warns="always: Ollama reads no thread-count env var; `num_thread` (Modelfile `PARAMETER "
          "num_thread N` or request options) defaults to the node's physical cores",
    sources=(("ollama envconfig/config.go", _SRC + "envconfig/config.go"),
             ("ollama api/types.go (Options.NumThread)", _SRC + "api/types.go")),
)
