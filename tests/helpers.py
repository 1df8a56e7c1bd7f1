"""Shared test helpers: run the CLI (in a subprocess, or in this process for the golden
cases), split ResourceList output, and the one golden checker (tests/testdata/README.md).
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = Path(__file__).resolve().parent / "testdata"
UPDATE = os.environ.get("KRM_FN_UPDATE_GOLDEN") == "1"

# The files of a golden case (tests/testdata/README.md describes each).
CONFIG, INPUT, EXPECTED, RESULTS = "config.yaml", "input.yaml", "expected.yaml", "results.yaml"
EXIT, STDERR = "expected-exit", "expected-stderr.txt"
_CONFIG_KEY = "functionConfig:\n"
_RESULTS_KEY = "results:\n"


def run_cli(args: list[str], stdin: str | bytes = b"", cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m krm_fn ARGS` with `stdin`; returns the CompletedProcess (text)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "krm_fn", *args], input=data, capture_output=True,
                       cwd=cwd, env=env, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(),
                                       p.stderr.decode())


def run_fn(args: list[str], stdin: str | bytes = b"") -> subprocess.CompletedProcess:
    """Run krm-fn's console entry point (krm_fn.cli:main, what `krm-fn ARGS` and `python -m
    krm_fn ARGS` run) in this process, with sys.argv, stdin, stdout and stderr replaced by
    in-memory UTF-8 streams; returns what run_cli returns (args, exit code, stdout and stderr
    text). SystemExit becomes the exit code as the interpreter would make it; any other
    exception propagates (a subprocess would print its traceback and exit 1)."""
    from krm_fn.cli import main
    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", newline="\n", write_through=True))
    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["krm-fn", *args]
    sys.stdin, sys.stdout, sys.stderr = streams
    code = 0
    try:
        main()
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    finally:
        for s in streams[1:]:
            s.flush()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
    result = subprocess.CompletedProcess(["krm-fn", *args], code, out.getvalue().decode(),
                                         err.getvalue().decode())
    for s in streams:
        s.detach()                          # closing a wrapper would close its buffer
    return result


def without_results(text: str) -> str:
    """ResourceList text up to its top-level `results:` key (krm-fn writes it last)."""
    m = re.search(r"\n *results:\r?\n", text)
    return text if m is None else text[: m.start() + 1]


def load(text: str) -> dict:
    return yaml.safe_load(text)


def item(out: dict, kind: str, name: str) -> dict:
    for it in out["items"]:
        if it["kind"] == kind and it["metadata"]["name"] == name:
            return it
    raise AssertionError(f"no {kind} {name} in output")


# the warning of a node pool whose nodeSelector the config leaves out (krm_fn/pipeline/
# load.py): many test configs rely on that default; tests/test_default_selector.py asserts
# the warning itself, the other tests leave it out
DEFAULT_SELECTOR = "nodeSelector is not set, so the default "


def default_selector(message: str) -> bool:
    """Whether `message` is the default-nodeSelector warning."""
    return DEFAULT_SELECTOR in message


def results(out: dict, severity: str | None = None) -> list[dict]:
    """The results of a rendered ResourceList `out` (of `severity`), without the
    default-nodeSelector warning."""
    return [r for r in out.get("results") or [] if (severity is None or r["severity"] == severity)
            and not default_selector(r["message"])]


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def check_golden(path: Path, actual: str | bytes, update: bool = UPDATE) -> None:
    """Compare `actual` with the golden file at `path`, exactly (bytes, or text read as
    UTF-8); a difference fails with a unified diff. `update` (KRM_FN_UPDATE_GOLDEN=1)
    rewrites the file instead, creating its directory; `update=False` for a second route
    that must match a golden file another test owns. Raises AssertionError."""
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(actual, bytes):
            path.write_bytes(actual)
        else:
            path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with KRM_FN_UPDATE_GOLDEN=1"
    expected = path.read_bytes() if isinstance(actual, bytes) else path.read_text("utf-8")
    if actual != expected:
        import difflib
        want = expected.decode(errors="replace") if isinstance(expected, bytes) else expected
        got = actual.decode(errors="replace") if isinstance(actual, bytes) else actual
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            str(path), "actual"))
        raise AssertionError(f"output differs from {path} (KRM_FN_UPDATE_GOLDEN=1 rewrites "
                             f"it):\n{diff}")


# Golden cases: tests/testdata/<case>/ (layout: tests/testdata/README.md).

def _case_dir(case: str | Path) -> Path:
    return case if isinstance(case, Path) else TESTDATA / case


def config_section(config: str) -> str:
    """The `functionConfig:` entry of a ResourceList holding the config document `config`
    (text of config.yaml): the key, then every non-empty line indented by two spaces."""
    return _CONFIG_KEY + "".join(line if line == "\n" else "  " + line
                                 for line in config.splitlines(True))


def case_input(case: str | Path) -> str:
    """The ResourceList text the function reads for a golden case (a name under
    tests/testdata/ or a directory): input.yaml, followed by config.yaml as its
    functionConfig when the case has one."""
    d = _case_dir(case)
    text = (d / INPUT).read_text("utf-8")
    if (d / CONFIG).exists():
        assert text.endswith("\n"), f"{d / INPUT} must end with a newline"
        text += config_section((d / CONFIG).read_text("utf-8"))
    return text


def case_output(case: str | Path) -> str:
    """The whole stdout expected for a golden case: expected.yaml (the output items),
    the functionConfig as given, then `results:` and results.yaml (when present)."""
    d = _case_dir(case)
    out = (d / EXPECTED).read_text("utf-8") if (d / EXPECTED).exists() else ""
    if out and (d / CONFIG).exists():
        out += config_section((d / CONFIG).read_text("utf-8"))
    if (d / RESULTS).exists():
        out += _RESULTS_KEY + (d / RESULTS).read_text("utf-8")
    return out


def split_output(stdout: str, config: str | None) -> tuple[str, str | None]:
    """(output items, results) of a function's stdout: the text before the functionConfig
    given as `config` (config.yaml text; None: the case has none, so any functionConfig
    stays in the items part) and the text after the top-level `results:` key (None when
    there is none). Raises AssertionError when the functionConfig did not come back
    verbatim just before the results, which this layout cannot store."""
    body, res = stdout, None
    i = stdout.rfind("\n" + _RESULTS_KEY)
    if i >= 0:
        body, res = stdout[:i + 1], stdout[i + 1 + len(_RESULTS_KEY):]
    if config is not None and body:
        section = config_section(config)
        assert body.endswith(section), (
            "the functionConfig did not come back verbatim before the results: store this "
            "case as a raw ResourceList (input.yaml with its functionConfig, no config.yaml)")
        body = body[:-len(section)]
    return body, res


def _check_optional(path: Path, actual: str | None) -> None:
    """check_golden for a file that is absent when `actual` is None (updating deletes it)."""
    if actual is None:
        if UPDATE:
            path.unlink(missing_ok=True)
        assert not path.exists(), f"{path} is not produced any more; remove it " \
                                  f"(KRM_FN_UPDATE_GOLDEN=1 does)"
    else:
        check_golden(path, actual)


def check_case(case: str | Path) -> subprocess.CompletedProcess:
    """Run golden case `case` (a name under tests/testdata/ or a directory) in this process
    (run_fn) and compare its output items, results, exit code and stderr exactly with
    expected.yaml, results.yaml, expected-exit (absent: 0) and expected-stderr.txt (absent:
    empty); KRM_FN_UPDATE_GOLDEN=1 rewrites those files (removing the ones now absent).
    Returns the run. Raises AssertionError on any difference."""
    d = _case_dir(case)
    p = run_fn([], case_input(d))
    config = (d / CONFIG).read_text("utf-8") if (d / CONFIG).exists() else None
    body, res = split_output(p.stdout, config)
    _check_optional(d / EXPECTED, body or None)
    _check_optional(d / RESULTS, res)
    _check_optional(d / EXIT, f"{p.returncode}\n" if p.returncode else None)
    _check_optional(d / STDERR, p.stderr or None)
    assert p.stdout == case_output(d)       # the split lost nothing
    return p


def cases() -> list[str]:
    """Names of the golden cases: the directories under tests/testdata/ with an input.yaml."""
    return sorted(p.name for p in TESTDATA.iterdir() if (p / INPUT).exists())
