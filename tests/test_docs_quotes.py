"""Every quote of krm-fn's output in README.md, overlays/README.md and docs/*.md is checked
against the output it quotes, so the documentation cannot drift from what krm-fn writes.

The convention (an HTML comment, which GitHub does not show):

- `<!-- from: PATH [PATH ...] -->` on the line just before a fenced block, or as the first
  line of a paragraph (or list) for the inline code quotes of output in it, names the files (from the
  repository root) the quote is taken from: golden cases (`tests/testdata/<case>/
  expected.yaml`, `results.yaml`, `expected-stderr.txt`), the examples' expected output
  (`overlays/*/expected*`) or a test that checks the real output of a tool
  (`tests/e2e/*.py`, its string literals).
- `<!-- not output: WHY -->` at the same places says that a block or paragraph that looks
  like output is not (a function config, an input spelling).

A YAML block (and an inline quote that reads as a YAML mapping) must be a subset of one
mapping or list of a source: each key with a subset of its value, each list entry matching
an entry of the source's list in order, scalars equal with their type (`"4"` is not `4`);
comments are ignored, and a YAML document held in a string of a source (a ConfigMap's
`kubelet-config.yaml`) counts. Any other block or quote is text: each line, cut at `...`
or `…`, must have its pieces, in order, in one line or one string of a source.

A block or inline quote that looks like krm-fn output (`OUTPUT`: thread variables with a
value, cpu quantities, `reservedSystemCPUs`, verdict and result lines) and has neither
marker fails, so a new page cannot quote output without naming where it comes from.
"""
from __future__ import annotations

import ast
import re

import pytest
import yaml

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", ROOT / "overlays" / "README.md",
         *sorted((ROOT / "docs").glob("*.md"))]

MARK = re.compile(r"^\s*<!-- (from|not output): *(.*?) *-->\s*$")
FENCE = re.compile(r"^\s*```")
OUTPUT = re.compile(
    r"(_THREADS|GOMAXPROCS|PYTHON_CPU_COUNT)[\"']?(\s*,\s*value:|=\d|\s*\n\s*value:)"
    r"|\bcpu: *[\"'\w]|reservedSystemCPUs: *\S|\bverdict: [A-Z]|^\[(error|warning|info)\]"
    r"|\bseverity: |proposedValue: |exclusive CPUs \w|sizeLimit: *\d|never schedules"
    r"|per node \(|allocatable (cpu|memory) \d|\d+ exclusive, ",
    re.M)
SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def units(text: str) -> list[tuple]:
    """The quotes of a markdown page: (line, kind, marker, lang, content) per fenced block
    (kind "block", its language and body) and per inline code span of the prose (kind
    "inline", lang ""); `marker` is (what, argument) of the marker that applies, or None."""
    lines = text.split("\n")
    out: list[tuple] = []
    para: list[tuple[int, str]] = []

    def flush() -> None:
        if not para:
            return
        m = MARK.match(para[0][1])
        marker = m.groups() if m else None
        body = [(n, ln) for n, ln in para if not MARK.match(ln)]
        if body:
            joined = "\n".join(ln for _, ln in body).replace("\\`", "\0")
            for s in SPAN.finditer(joined):
                line = body[0][0] + joined.count("\n", 0, s.start()) + 1
                out.append((line, "inline", marker, "",
                            re.sub(r"\s*\n\s*", " ", s.group(2)).strip().replace("\0", "`")))
        para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            marker = None
            if para and MARK.match(para[-1][1]):
                marker = MARK.match(para.pop()[1]).groups()
            flush()
            j = i + 1
            while j < len(lines) and not FENCE.match(lines[j]):
                j += 1
            indent = len(line) - len(line.lstrip())
            body = "\n".join(ln[indent:] for ln in lines[i + 1:j])
            out.append((i + 1, "block", marker, line.strip()[3:].strip(), body))
            i = j + 1
            continue
        if line.strip():
            para.append((i, line))
        else:
            flush()
        i += 1
    flush()
    return out


# --- the sources ---------------------------------------------------------------------------

def _walk(value, nodes: list, strings: list) -> None:
    if isinstance(value, dict):
        nodes.append(value)
        for v in value.values():
            _walk(v, nodes, strings)
    elif isinstance(value, list):
        nodes.append(value)
        for v in value:
            _walk(v, nodes, strings)
    elif isinstance(value, str):
        strings.append(value)
        if "\n" in value:
            try:
                inner = list(yaml.safe_load_all(value))
            except yaml.YAMLError:
                return
            for doc in inner:
                if isinstance(doc, (dict, list)):
                    _walk(doc, nodes, strings)


_SOURCES: dict = {}


def source(rel: str) -> tuple[list, list]:
    """(nodes, strings) of the file `rel`: every mapping and list of its YAML documents (and
    of YAML held in its strings); every line of its text and every string in it (a Python
    file: its string literals, adjacent ones joined as Python joins them)."""
    if rel in _SOURCES:
        return _SOURCES[rel]
    path = ROOT / rel
    assert path.is_file(), f"{rel} is not a file of the repository"
    text = path.read_text()
    nodes: list = []
    strings: list = text.split("\n")
    if path.suffix == ".py":
        strings += [n.value for n in ast.walk(ast.parse(text))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    elif path.suffix != ".txt":
        try:
            for doc in yaml.safe_load_all(text):
                _walk(doc, nodes, strings)
        except yaml.YAMLError:
            pass
    _SOURCES[rel] = (nodes, strings)
    return nodes, strings


# --- the checks ----------------------------------------------------------------------------

def subset(a, b) -> bool:
    """True when `a` (a quote's YAML) is contained in `b` (a source's): see the module
    docstring."""
    if isinstance(a, dict):
        return isinstance(b, dict) and all(k in b and subset(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        if not isinstance(b, list):
            return False
        it = iter(b)
        return all(any(subset(x, y) for y in it) for x in a)
    return type(a) is type(b) and a == b


def _pieces_in(line: str, strings: list) -> bool:
    pieces = [p.strip() for p in re.split(r"\.\.\.|…", line) if p.strip()]
    for s in strings:
        pos = 0
        for p in pieces:
            pos = s.find(p, pos)
            if pos < 0:
                break
            pos += len(p)
        else:
            return True
    return False


def problem(kind: str, marker, lang: str, content: str) -> str | None:
    """Why the quote `content` does not hold (None when it does): no marker although it looks
    like output, a source it is not found in, a marker without a reason or a source."""
    if marker is None:
        return "looks like krm-fn output but names no source" if OUTPUT.search(content) \
            else None
    what, arg = marker
    if kind == "inline" and not OUTPUT.search(content):
        return None     # a paragraph's marker covers its quotes of output, not its names
    if what == "not output":
        return None if arg else "<!-- not output: --> needs a reason"
    rels = arg.split()
    if not rels:
        return "<!-- from: --> names no file"
    nodes, strings = [], []
    for rel in rels:
        n, s = source(rel)
        nodes += n
        strings += s
    if kind == "block" and lang in ("yaml", "yml"):
        docs = [d for d in yaml.safe_load_all(content) if d is not None]
        missing = [d for d in docs if not any(subset(d, n) for n in nodes)]
        return f"not found in {arg}: {missing[0]!r}"[:400] if missing else None
    if kind == "inline":
        try:
            value = yaml.safe_load(content)
        except yaml.YAMLError:
            value = None
        if isinstance(value, dict) and any(subset(value, n) for n in nodes):
            return None
    for line in content.split("\n"):
        if line.strip() and not _pieces_in(line, strings):
            return f"not found in {arg}: {line.strip()!r}"[:400]
    return None


QUOTES = [(page, *u) for page in PAGES for u in units(page.read_text())]


@pytest.mark.parametrize("page,line,kind,marker,lang,content", [
    pytest.param(*q, id=f"{q[0].relative_to(ROOT)}:{q[1]}") for q in QUOTES
    if q[3] is not None or OUTPUT.search(q[5])])
def test_each_quote_of_output_comes_from_the_output(page, line, kind, marker, lang, content):
    assert problem(kind, marker, lang, content) is None, \
        f"{page.relative_to(ROOT)}:{line}: {problem(kind, marker, lang, content)}"


def test_the_pages_quote_output_under_markers():
    marked = [q for q in QUOTES if q[3] is not None and q[3][0] == "from"]
    assert len(marked) >= 10
    assert {q[0].name for q in marked} >= {"README.md", "verdict.md", "jitter.md"}


# --- the checker itself --------------------------------------------------------------------

PAGE = """\
Intro with `OMP_NUM_THREADS=2` unmarked.

<!-- from: overlays/legacy-plugin/expected.yaml -->
The vLLM container gets `{name: OMP_NUM_THREADS, value: "2"}` and
`cpu: "4"`.

<!-- from: overlays/legacy-plugin/expected.yaml -->
```yaml
containers:
- name: vllm
  env:
  - {name: OMP_NUM_THREADS, value: "4"}
```

<!-- not output: the function config -->
```yaml
istio: {cpu: 500m}
```

```
verdict: Guaranteed after admission; exclusive CPUs vllm 4 on NUMA 0
```
"""


def test_units_find_blocks_inline_quotes_and_their_markers():
    got = [(line, kind, marker, lang, content[:24]) for line, kind, marker, lang, content
           in units(PAGE)]
    src = ("from", "overlays/legacy-plugin/expected.yaml")
    assert got == [
        (1, "inline", None, "", "OMP_NUM_THREADS=2"),
        (4, "inline", src, "", '{name: OMP_NUM_THREADS, '),
        (5, "inline", src, "", 'cpu: "4"'),
        (8, "block", src, "yaml", "containers:\n- name: vllm"),
        (16, "block", ("not output", "the function config"), "yaml", "istio: {cpu: 500m}"),
        (20, "block", None, "", "verdict: Guaranteed afte"),
    ]


def test_a_quote_that_disagrees_or_has_no_source_fails():
    results = [problem(kind, marker, lang, content) for _, kind, marker, lang, content
               in units(PAGE)]
    assert results == [
        "looks like krm-fn output but names no source",
        None,
        None,
        "not found in overlays/legacy-plugin/expected.yaml: {'containers': [{'name': "
        "'vllm', 'env': [{'name': 'OMP_NUM_THREADS', 'value': '4'}]}]}",
        None,
        "looks like krm-fn output but names no source",
    ]


def test_text_quotes_match_pieces_in_order_within_one_string():
    strings = ["verdict: Guaranteed after admission; exclusive CPUs vllm 4 on NUMA 0"]
    assert _pieces_in("verdict: Guaranteed ... vllm 4 on NUMA 0", strings)
    assert _pieces_in("verdict: Guaranteed … NUMA 0", strings)
    assert not _pieces_in("vllm 4 ... verdict: Guaranteed", strings)
    assert not _pieces_in("verdict: Guaranteed ... vllm 2", strings)


def test_subset_keeps_types_and_list_order():
    assert subset({"a": [1, 3]}, {"a": [1, 2, 3], "b": 0})
    assert not subset({"a": [3, 1]}, {"a": [1, 2, 3]})
    assert not subset({"cpu": 4}, {"cpu": "4"})
    assert not subset({"a": {"b": 1}}, {"a": 1})
