"""The render pipeline every rendering command shares, without click: read the input,
parse, transform, render, write, report. `function` is the KRM function (`krm-fn` with no
arguments), `plugin` kustomize's legacy exec plugin, `run_files` `krm-fn run`.

Importing this module is cheap; the parser and the pipeline are imported when a render
starts, and the human report (`--report`) only when asked for.
"""
from __future__ import annotations

import os
import sys

from krm_fn.cli.common import BOM, DEBUG_ENV, decode, echo_err, end_process, fail, guard


def _cyclic_gc_paused(fn):
    """Run `fn` with Python's cyclic garbage collector paused (reference counting still frees
    everything; the previous state is restored, also on sys.exit). The parsed input holds no
    reference cycles, so the collector frees next to nothing (~300 objects on the 2,000-item
    benchmark input, the same peak RSS), but its repeated full passes over the growing node
    graph took ~40% of the run (2.08 s -> 1.24 s; docs/performance.md)."""
    import functools
    import gc

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return wrapper


@_cyclic_gc_paused
def render(text: str, function_config, require_rl: bool, echo_warnings: bool,
           report: bool = False, mode: str | None = None, output: str | None = None,
           run_cmd: bool = False, fail_on_change: bool = False,
           drop_local_config: bool = False) -> None:
    """Parse, transform, render, write; exit 1 on error results. `report`: the progress
    line and the human report (krm_fn/report.py) on stderr; stdout is the same. `mode`
    overrides spec.mode. `run_cmd` (krm-fn run): in validate mode no manifests are written,
    only the findings on stderr. `output`: write to that file instead of stdout, only when
    its content changes and never after an error (the file is left as it was). A UTF-8
    byte-order mark that starts `text` starts the output too;
    `fail_on_change`: exit 1 when it was created or rewritten (pre-commit);
    `drop_local_config` (krm-fn run --drop-local-config): the local-config items are left
    out of the output, as kustomize and kpt leave them out of theirs."""
    from krm_fn import pipeline, resourcelist
    bom = BOM if text.startswith(BOM) else ""
    doc = resourcelist.parse(text[len(bom):], require_resource_list=require_rl)
    fc = doc.function_config if function_config is None else function_config
    progress = None
    if report:
        from krm_fn import report as report_mod
        progress = report_mod.Progress(sys.stderr, sys.stderr.isatty())
    out = pipeline.transform(doc.items, fc, set_path=resourcelist.has_path_annotations(doc),
                             aliased=doc.aliased, progress=progress, mode=mode,
                             retyped=resourcelist.retyped(doc),
                             keep_tuned=report)
    if progress is not None:
        progress.done()
    results = [r.as_dict() for r in out.results] if doc.mode == "resourcelist" else []
    if drop_local_config and doc.mode != "multidoc":
        raise resourcelist.InputError("--drop-local-config: the input is a ResourceList, "
                                      "whose items krm-fn keeps (kustomize and kpt leave "
                                      "local-config items out of their own output)")
    drop = frozenset(i for i, o in enumerate(doc.items) if isinstance(o, dict)
                     and pipeline.is_local_config(o)) if drop_local_config else frozenset()
    rendered = bom + resourcelist.render(doc, out.ops, out.emitted, results,
                                         out.replaced_items, drop)
    changed = False
    if run_cmd:
        _warn_local_config(doc.items, drop)
    if run_cmd and out.mode == "validate":
        pass                      # a check: the findings below are the whole output
    elif output is not None:
        if not out.has_errors and _write_if_changed(output, rendered) and fail_on_change:
            echo_err(f"krm-fn: {output} was out of date and has been rewritten: review and "
                     f"stage it")
            changed = True
    else:
        sys.stdout.write(rendered)
        sys.stdout.flush()
    shown = [r for r in out.results
             if r.severity == "error" or (echo_warnings and r.severity == "warning")]
    for r in shown:
        echo_err(f"krm-fn: {r.line()}")
    if report:
        try:
            text = report_mod.render(out.flat or doc.items, out, fc)
        except Exception as e:  # the report is an aid: it never changes a run's outcome
            if os.environ.get(DEBUG_ENV):
                raise
            text = (f"krm-fn: the report could not be built ({type(e).__name__}: {e}); the "
                    f"output above is complete (set {DEBUG_ENV}=1 for the traceback, and "
                    f"please report it)\n")
        echo_err(text, nl=False)
    code = 1 if out.has_errors or changed else 0
    end_process(code)       # krm-fn's own process: exit without freeing doc, out, rendered
    if code:
        sys.exit(code)


def with_baseline(fc, baseline: dict, source: str) -> dict:
    """A copy of the function config `fc` (typed dict, or None for defaults) with
    spec.output.baseline = `baseline` (read from `source`). Raises InputError for the
    ConfigMap form, which has no baseline key."""
    import copy
    from krm_fn.resourcelist import InputError
    from krm_fn import config as config_mod
    if config_mod.is_flat(fc):
        raise InputError(f"--baseline {source}: the config is a ConfigMap, which cannot hold "
                         f"a baseline; write it as an InferenceTuning")
    fc = copy.deepcopy(fc) if isinstance(fc, dict) else {
        "apiVersion": config_mod.API_VERSION, "kind": config_mod.KIND,
        "metadata": {"name": "krm-fn"}}
    spec = fc.get("spec")
    if spec is None:
        spec = fc["spec"] = {}
    output = spec.get("output") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and output is None:
        output = spec["output"] = {}
    if not isinstance(output, dict):     # a malformed config: its own error says where
        return fc
    output["baseline"] = baseline
    return fc


def _warn_local_config(items: list, dropped: frozenset) -> None:
    """`krm-fn run` writes every input document back (but those in `dropped`, with
    --drop-local-config): say on stderr what would happen to a local-config object or a
    function config. kustomize and kpt leave local-config objects out of their output
    (KustTarget.IgnoreLocal, kubernetes-sigs/kustomize#4124; kpt's local-config
    annotation, https://kpt.dev/reference/annotations/local-config/), but `kubectl apply -f`
    sends every object it reads to the API server: the annotation marks an object "that
    should not be submitted to the Kubernetes API" for the client-side tools that read it
    (https://kubernetes.io/docs/reference/labels-annotations-taints/
    #config-kubernetes-io-local-config). A function config that is not local-config is
    refused by `kubectl apply` (no InferenceTuning resource in the cluster)."""
    from krm_fn.pipeline import is_local_config, ref_of
    for i, obj in enumerate(items):
        if not isinstance(obj, dict) or i in dropped:
            continue
        ref = ref_of(obj)
        where = f"krm-fn: warning: document {i + 1} ({ref.kind} {ref.name}): "
        unused = ("; it is not this run's function config (a config among FILES is only "
                  "an item): pass it with --config" if obj.get("kind") == "InferenceTuning"
                  else "")
        if is_local_config(obj):
            echo_err(f"{where}local-config, written back unchanged: kustomize and kpt leave "
                     f"it out of their output, but kubectl apply -f of this output would "
                     f"create or update it in the cluster; --drop-local-config leaves it "
                     f"out{unused}")
        elif unused:
            echo_err(f"{where}a krm-fn function config, written back unchanged; kubectl "
                     f"apply would reject it (the cluster has no InferenceTuning kind){unused}")


def _write_if_changed(path: str, text: str) -> bool:
    """Write `text` to `path` unless it already holds exactly that (pre-commit treats a
    rewritten file as a failed hook, so an up-to-date file must not be touched); missing
    parent directories are created. Returns True when the file was created or rewritten.
    Raises InputError naming the path when it cannot be written."""
    from krm_fn.resourcelist import InputError
    data = text.encode("utf-8")
    try:
        with open(path, "rb") as fh:
            if fh.read() == data:
                return False
    except FileNotFoundError:
        pass
    except OSError as e:
        raise InputError(f"--output {path}: cannot read it ({e.strerror or e})") from None
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        _replace_atomically(path, data)
    except OSError as e:
        raise InputError(f"--output {path}: cannot write it ({e.strerror or e})") from None
    return True


def _replace_atomically(path: str, data: bytes) -> None:
    """Write `data` to a new file in `path`'s directory, flush it to disk (fsync), then
    rename it over `path` (os.replace, atomic on POSIX), so a full disk, an error or a kill
    midway leaves the old file whole, never a truncated render. The new file keeps the old
    one's permission bits (a new one gets 0666 less the umask, as open() would give it).
    Raises OSError; the temporary file is removed when the write fails."""
    import tempfile
    directory = os.path.dirname(path) or "."
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                               suffix=".krm-fn-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:                                    # the rename itself, on disk
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def read_inputs(files, restriction: str = "LoadRestrictionsRootOnly") -> str:
    """The texts of `files` (paths, `-` for stdin) joined into one multi-document YAML
    stream (a `---` line between documents that do not start with one), read by
    krm_fn.cli.files (regular files only, within the tree per `restriction`, at most
    files.MAX_INPUT_BYTES together). Raises InputError for input that is not UTF-8 or that
    files refuses, OSError when a file cannot be read."""
    from krm_fn.cli import files as files_mod
    texts, left = [], files_mod.MAX_INPUT_BYTES
    for f in files:
        if f == "-":
            data = files_mod.read_stdin("stdin", left)
        else:
            data = files_mod.read_file(f, f, left, restriction)
        left -= len(data)
        # the first input's byte-order mark is kept (render writes it back); a later
        # file's would land inside the stream
        texts.append(decode(data, "stdin" if f == "-" else f, keep_bom=not texts))
    from krm_fn.yaml.documents import end_safely
    out = ""
    for i, t in enumerate(texts):
        if i + 1 < len(texts):
            t = end_safely(t)       # a block scalar it ends with keeps its value
        if out and not out.endswith("\n"):
            out += "\n"
        if out and not t.lstrip().startswith("---"):
            out += "---\n"
        out += t
    return out


def _read_config(path: str, what: str | None = None, restriction: str = "LoadRestrictionsNone"):
    from krm_fn import resourcelist
    from krm_fn.cli import files
    data = files.read_file(path, what or path, files.MAX_CONFIG_BYTES, restriction)
    text = decode(data, path)
    try:
        return (resourcelist.load_config_file(text) if what is None
                else resourcelist.load_config_file(text, what))
    except resourcelist.InputError as e:
        raise _in_file(path, e) from None


def _in_file(name: str, e: Exception) -> Exception:
    """InputError `e` about the text of file `name`, with the file named ("input is not
    valid YAML at line 2" is then that file's line 2)."""
    from krm_fn.resourcelist import InputError
    msg = str(e)
    if name in msg:
        return e                # it names the file already
    return InputError(f"{name}: " + ("it" + msg[len("input"):] if msg.startswith("input is ")
                                     else msg))


def _stdin() -> str:
    from krm_fn.cli import files
    return decode(files.read_stdin(), "stdin", keep_bom=True)


def _function() -> None:
    if sys.stdin is None or sys.stdin.isatty():
        fail("no ResourceList on stdin. krm-fn is a KRM function: run it through "
             "kustomize or kpt, pipe a ResourceList into it, or use `krm-fn run --config "
             "CONFIG FILE...` for plain YAML (see `krm-fn --help`)")
    render(_stdin(), None, True, False)


def function() -> None:
    """`krm-fn` with no command: the KRM function (ResourceList on stdin, ResourceList on
    stdout). Exits 1 (one line on stderr) without a ResourceList on stdin, on unusable
    input, or when a result is an error (after writing the output)."""
    guard(_function)


def _plugin(config_file: str) -> None:
    fc = _read_config(config_file)
    render(_stdin(), fc, False, True)


def plugin(config_file: str) -> None:
    """kustomize's legacy exec plugin: the function config in `config_file` (a path),
    multi-document YAML on stdin and stdout; warnings and errors on stderr. Exits 1 on
    unusable input or an error result."""
    guard(_plugin, config_file)


def _run_files(config_file, baseline_file, files, report, mode, output, fail_on_change,
               restriction, drop_local_config=False):
    fc = _read_config(config_file, None, restriction) if config_file else None
    if baseline_file:
        fc = with_baseline(fc, _read_config(baseline_file, f"--baseline {baseline_file}",
                                            restriction), baseline_file)
    from krm_fn.resourcelist import InputError
    text = read_inputs(files, restriction)
    try:
        render(text, fc, False, True, report, mode, output, run_cmd=True,
               fail_on_change=fail_on_change, drop_local_config=drop_local_config)
    except InputError as e:
        if "input is not valid YAML" not in str(e):
            raise
        raise _bad_file(files, restriction, e) from None


def _bad_file(files, restriction: str, e: Exception) -> Exception:
    """The InputError `e` (a YAML syntax error in the joined stream of `files`, whose
    line counts the stream's) said of the first file that is not valid YAML by itself,
    with its own line; `e` when every file is."""
    from krm_fn.yaml.load import InputError, documents
    for f in files:
        try:
            documents(read_inputs([f], restriction))
        except InputError as mine:
            return _in_file("stdin" if f == "-" else f, mine)
    return e


def run_files(config_file: str | None, baseline_file: str | None, files, report: bool,
              mode: str | None, output: str | None, fail_on_change: bool,
              restriction: str = "LoadRestrictionsRootOnly",
              drop_local_config: bool = False) -> None:
    """`krm-fn run` once its options are checked: the config (None: defaults) and baseline
    files, then `files` (paths, `-` for stdin) rendered as by `render`; every file read by
    krm_fn.cli.files under `restriction` (its load restriction); `drop_local_config`: the
    local-config documents left out of the output. Exits 1 on unusable input, an error
    result, or (with `fail_on_change`) a rewritten `output`."""
    guard(_run_files, config_file, baseline_file, files, report, mode, output,
          fail_on_change, restriction, drop_local_config)
