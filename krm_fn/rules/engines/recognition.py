"""How each serving engine is recognised, as data: `TABLE` holds one `Recognition` per
engine module, in the order the engines are matched and checked (ENGINES). `detect`
(krm_fn/rules/engines/__init__.py) reads it without importing any engine module and
imports an engine's module only for a container that matches it (start-up: most renders
see one or two engines; docs/performance.md). Each engine module's `ENGINE` takes its
recognition from here (`of(__name__)`), so it is written once.

Every regex is a `Pattern` with the literals one of which each of its matches contains:
the literal is looked for with `in` before the regex is searched, so a pattern that cannot
match is never compiled. tests/test_engine_recognition.py checks the literals against generated
matches (hypothesis) and the filtered detection against searching every regex.
"""
from __future__ import annotations

import bisect
import re

from collections import namedtuple


class Pattern(namedtuple("Pattern", "regex within")):
    """A regex (`regex`, searched with re.search, case-sensitive) and `within`: literals
    of which every match contains at least one."""

    __slots__ = ()

    def search(self, text: str, programs: tuple | None = None) -> bool:
        """Whether `regex` matches somewhere in `text` (the regex is compiled, by the re
        module's cache, only when a literal of `within` is in `text`); with `programs`
        (programs.spans of the command line `text`), only a match that has a literal of
        `within` in a word in program position counts (`found`)."""
        for w in self.within:
            if w in text:
                if programs is None:
                    return re.search(self.regex, text) is not None
                return found(self.regex, self.within, text, programs)
        return False


def found(regex: str, within: tuple, text: str, programs: tuple) -> bool:
    """Whether `regex` matches in `text` with a literal of `within` in the match starting
    inside one of the (start, end) spans `programs` (sorted): the words of a command line
    in program position (engines/programs.py). Every match is tried, overlapping ones too
    (`llama-server` named as an argument before the program runs it)."""
    rx = re.compile(regex)
    pos = 0
    while pos <= len(text):
        m = rx.search(text, pos)
        if m is None:
            return False
        for w in within:
            at = text.find(w, m.start(), m.end())
            while at >= 0:
                if _inside(programs, at):
                    return True
                at = text.find(w, at + 1, m.end())
        pos = m.start() + 1
    return False


def _inside(spans: tuple, at: int) -> bool:
    """Whether offset `at` is inside one of `spans` ((start, end) pairs, sorted, apart)."""
    lo = bisect.bisect_right(spans, at, key=_start)     # the first span after `at`
    return lo > 0 and at < spans[lo - 1][1]


def _start(span: tuple) -> int:
    return span[0]


def _p(regex: str, *within: str) -> Pattern:
    return Pattern(regex, within)


# what may come right before a module name that a Python launcher runs: a word boundary, or
# the module glued to an option that takes it, `-m` alone or ending a cluster of Python's
# options (`-mvllm.entrypoints...`, `-umllama_cpp.server`: Python/getopt.c reads the rest
# of the word as the value) or uv's `--module=` (program position, engines/programs.py,
# decides whether the option really runs it)
GLUED_MODULE = r"(?:-[A-Za-z?]*m|--module=)"
MODULE_AT = r"(?:\b|(?:^|\s)" + GLUED_MODULE + ")"


class Recognition(namedtuple("Recognition", "name module images commands needs kserve "
                             "env_names not_with serving or_no_accelerator",
                             defaults=((), (), (), (), (), (), True, False))):
    """How the engine of module `module` (krm_fn/rules/engines/<module>.py), named `name`,
    is recognised in a container: a Pattern of `images` matches its image (lowercased), a
    Pattern of `commands` matches command+args joined by spaces with its literal in a word
    in program position (the program a process runs, engines/programs.py, not a word that
    only names it: `pgrep -f vllm`), and when `needs` is given, one of `needs` matches
    too, or with `or_no_accelerator` the container asks for no accelerator
    (`accelerator`); or the container is the KServe framework key of
    `kserve`, or an env var of `env_names` is present — unless an engine named in
    `not_with` is recognised in it too. `serving`: the engine serves models, so a
    container running it is the one to pin (krm_fn/rules/choice.py); False for a
    general-purpose runtime (a JVM, a Python web server image), which a metrics exporter
    or a proxy runs as well."""

    __slots__ = ()

    def matches(self, image: str, line: str, programs: tuple, key: str | None,
                names: frozenset, accelerated: bool = False) -> bool:
        """Whether the container with lowercased `image`, command line `line` (whose words
        in program position are the spans `programs`, programs.spans), KServe
        framework key `key` (or None), env var names `names` and, `accelerated`, a request
        of an accelerator is this engine's (before `not_with`)."""
        for p in self.images:
            if p.search(image):
                return True
        if key is not None and key in self.kserve:
            return True
        for p in self.commands:
            if p.search(line, programs):
                if not self.needs or (self.or_no_accelerator and not accelerated):
                    return True
                for q in self.needs:
                    if q.search(line):
                        return True
                break
        return bool(self.env_names) and not names.isdisjoint(self.env_names)


# JDK/JRE image names (the tag starts with the JDK version; jvm.py reads it) and JVM
# servers (a JDK version only as jdkNN/jreNN in the tag); regex fragments
JDK_IMAGES = ("eclipse-temurin", "openjdk", "amazoncorretto", "ibm-semeru-runtimes",
              "sapmachine", r"zulu-openjdk[\w-]*", "adoptopenjdk")
SERVER_IMAGES = ("djl-serving", "tomcat", "jetty")
_JVM_IMAGES = JDK_IMAGES + SERVER_IMAGES

TABLE: tuple[Recognition, ...] = (
    Recognition("vLLM CPU", "vllm",
                images=(_p(r"vllm[\w.-]*[-_]cpu", "vllm"),
                        _p(r"vllm[\w./-]*:[\w.-]*\bcpu\b", "vllm")),
                commands=(_p(r"(^|[\s/])vllm\s+serve(\s|$)", "vllm"),
                          _p(MODULE_AT + r"vllm\.entrypoints\.", "vllm.entrypoints.")),
                # `vllm serve` is the CPU backend where the pod asks for no accelerator
                # (vLLM picks its platform from the machine; `--device` is gone from 0.10.0)
                needs=(_p(r"(^|\s)--device(=|\s+)cpu(\s|$)", "--device"),),
                or_no_accelerator=True),
    Recognition("llama.cpp", "llama_cpp",
                # :full* runs .devops/tools.sh, which execs llama-server for --server / -s
                # (and the other tools, which read the same common args, for the rest)
                images=(_p(r"(^|/)llama\.cpp:(server|full)", "llama.cpp:server",
                           "llama.cpp:full"),),
                commands=(_p(r"(^|[\s/])llama-server(\s|$)", "llama-server"),)),
    Recognition("llama-cpp-python server", "llama_cpp_python",
                images=(_p(r"(^|/)abetlen/llama-cpp-python(:|@|$)",
                           "abetlen/llama-cpp-python"),),
                # `python -m llama_cpp.server` (the module in program position whatever
                # comes before it: `python -um`, `-X dev -m`, `uv run --module`), or its app
                # factory run by uvicorn
                commands=(_p(r"(?:^|\s)" + GLUED_MODULE + r"?llama_cpp\.server(\s|$)",
                             "llama_cpp.server"),
                          _p(r"(^|[\s=])llama_cpp\.server\.app:create_app(\s|$)",
                             "llama_cpp.server.app:create_app"))),
    Recognition("Ollama", "ollama",
                images=(_p(r"(^|/)ollama/ollama(:|@|$)", "ollama/ollama"),),
                commands=(_p(r"(^|[\s/])ollama\s+serve(\s|$)", "ollama"),)),
    Recognition("Text Generation Inference (CPU)", "tgi",
                images=(_p(r"text-generation-inference:[\w.-]*\bcpu\b",
                           "text-generation-inference:"),)),
    Recognition("TorchServe", "torchserve",
                images=(_p(r"torchserve", "torchserve"),),
                commands=(_p(r"(^|[\s/])torchserve(\s|$)", "torchserve"),),
                kserve=("pytorch",)),
    Recognition("Triton", "triton",
                images=(_p(r"(^|/)tritonserver(:|@|$)", "tritonserver"),),
                commands=(_p(r"(^|[\s/])tritonserver(\s|$)", "tritonserver"),),
                kserve=("triton",)),
    Recognition("ONNX Runtime", "onnxruntime",
                images=(_p(r"onnxruntime", "onnxruntime"),),
                commands=(_p(r"onnxruntime", "onnxruntime"),),
                kserve=("onnx",), not_with=("Triton",)),
    Recognition("OpenVINO Model Server", "openvino",
                images=(_p(r"(^|/)openvino/model_server(:|@|$)", "openvino/model_server"),),
                commands=(_p(r"(^|[\s/])ovms(\s|$)", "ovms"),)),
    Recognition("Ray", "ray",
                commands=(_p(r"(^|[\s/;&|(])ray\s+start(\s|$)", "ray"),)),
    Recognition("JVM", "jvm",
                images=(Pattern(r"(^|/)(" + "|".join(_JVM_IMAGES) + r")(:|@|$)",
                                tuple(n.partition("[")[0] for n in _JVM_IMAGES)),),
                # java wherever it is the program (`exec java` in a script, `tini -- java`),
                # not only as the first word (program position, engines/programs.py)
                commands=(_p(r"(^|[\s/])java(\s|$)", "java"),),
                env_names=("JAVA_TOOL_OPTIONS", "JAVA_OPTS", "JDK_JAVA_OPTIONS"),
                serving=False),
    Recognition("uvicorn-gunicorn images", "python_web",
                images=(_p(r"(^|/)tiangolo/uvicorn-gunicorn[\w-]*(:|@|$)",
                           "tiangolo/uvicorn-gunicorn"),),
                serving=False),
    Recognition("Intel Xeon launcher (ipexrun)", "xeon_launcher",
                commands=(_p(r"(^|[\s/])ipexrun(\s|$)", "ipexrun"),
                          _p(MODULE_AT + r"intel_extension_for_pytorch\.cpu\.launch\b",
                             "intel_extension_for_pytorch.cpu.launch"),
                          _p(MODULE_AT + r"torch\.backends\.xeon\.run_cpu\b",
                             "torch.backends.xeon.run_cpu"))),
)
BY_MODULE = {r.module: r for r in TABLE}
# every literal a command pattern needs in the command line: without one, no Pattern.search
# of `commands` gets as far as reading the words in program position
COMMAND_LITERALS = frozenset(w for r in TABLE for p in r.commands for w in p.within)
# extended resources of accelerators (device plugins' resource names): a container asking
# for one runs an engine on it, not on the pinned CPUs
ACCELERATORS = ("nvidia.com/", "amd.com/gpu", "gpu.intel.com/", "habana.ai/",
                "aws.amazon.com/neuron", "google.com/tpu")


def accelerator(resources) -> bool:
    """Whether a container's `resources` (plain data) ask for an accelerator: a request or
    limit of ACCELERATORS or of an extended resource whose name says gpu, or any
    `claims` (dynamic resource allocation: the devices of a ResourceClaim, GPUs as a
    rule)."""
    if not isinstance(resources, dict):
        return False
    if resources.get("claims"):
        return True
    for part in ("limits", "requests"):
        amounts = resources.get(part)
        for name in (amounts if isinstance(amounts, dict) else ()):
            name = str(name)
            if "/" in name and (name.startswith(ACCELERATORS) or "gpu" in name.lower()):
                return True
    return False


def of(module_name: str) -> Recognition:
    """The Recognition of the engine module `module_name` (its `__name__`, such as
    "krm_fn.rules.engines.vllm"); KeyError when TABLE has none."""
    return BY_MODULE[module_name.rpartition(".")[2]]
