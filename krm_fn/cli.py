"""Command line: thin. `krm-fn` with no arguments is the KRM function (ResourceList on
stdin, ResourceList on stdout); `krm-fn run` tunes plain multi-document YAML files;
`krm-fn plugin` is kustomize's legacy exec plugin protocol; `krm-fn verify` checks, inside a
pinned container, that pinning took effect on the node (krm_fn/verify/).

Exit codes: 0 success; 1 when any error result was produced (the output is still written
first) or the input is unusable (one line on stderr, no traceback); 2 for usage errors.
"""
from __future__ import annotations

import os
import sys

import click

from krm_fn import __version__

_DEBUG_ENV = "KRM_FN_DEBUG"


def _decode(data: bytes, source: str) -> str:
    from krm_fn.resourcelist import InputError
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{source} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"krm-fn: {message}", err=True)
    sys.exit(code)


def _cyclic_gc_paused(fn):
    """Run `fn` with Python's cyclic garbage collector paused (reference counting still frees
    everything; the previous state is restored, also on sys.exit). The parsed input holds no
    reference cycles, so the collector frees next to nothing (~300 objects on the 2,000-item
    benchmark input, the same peak RSS), but its repeated full passes over the growing node
    graph took ~40% of the run (2.08 s -> 1.24 s; README, Performance)."""
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
def _run(text: str, function_config, require_rl: bool, echo_warnings: bool,
         report: bool = False, mode: str | None = None, output: str | None = None,
         run_cmd: bool = False, fail_on_change: bool = False) -> None:
    """Parse, transform, render, write; exit 1 on error results. `report`: the progress
    line and the human report (krm_fn/report.py) on stderr; stdout is the same. `mode`
    overrides spec.mode. `run_cmd` (krm-fn run): in validate mode no manifests are written,
    only the findings on stderr. `output`: write to that file instead of stdout, only when
    its content changes and never after an error (the file is left as it was);
    `fail_on_change`: exit 1 when it was created or rewritten (pre-commit)."""
    from krm_fn import pipeline, resourcelist
    doc = resourcelist.parse(text, require_resource_list=require_rl)
    fc = doc.function_config if function_config is None else function_config
    progress = None
    if report:
        from krm_fn import report as report_mod
        progress = report_mod.Progress(sys.stderr, sys.stderr.isatty())
    out = pipeline.transform(doc.items, fc, set_path=resourcelist.has_path_annotations(doc),
                           aliased=doc.aliased, progress=progress, mode=mode,
                           keep_tuned=report)
    if progress is not None:
        progress.done()
    results = [r.as_dict() for r in out.results] if doc.mode == "resourcelist" else []
    rendered = resourcelist.render(doc, out.ops, out.emitted, results, out.replace)
    changed = False
    if run_cmd:
        _warn_local_config(doc.items)
    if run_cmd and out.mode == "validate":
        pass                      # a check: the findings below are the whole output
    elif output is not None:
        if not out.has_errors and _write_if_changed(output, rendered) and fail_on_change:
            click.echo(f"krm-fn: {output} was out of date and has been rewritten: review and "
                       f"stage it", err=True)
            changed = True
    else:
        sys.stdout.write(rendered)
        sys.stdout.flush()
    shown = [r for r in out.results
             if r.severity == "error" or (echo_warnings and r.severity == "warning")]
    for r in shown:
        click.echo(f"krm-fn: {r.line()}", err=True)
    if report:
        try:
            text = report_mod.render(doc.items, out, fc)
        except Exception as e:  # the report is an aid: it never changes a run's outcome
            if os.environ.get(_DEBUG_ENV):
                raise
            text = (f"krm-fn: the report could not be built ({type(e).__name__}: {e}); the "
                    f"output above is complete (set {_DEBUG_ENV}=1 for the traceback, and "
                    f"please report it)\n")
        click.echo(text, err=True, nl=False)
    if out.has_errors or changed:
        sys.exit(1)


def _check_output(output: str, inputs: list) -> None:
    """--output must name a regular file (or a new one) that is none of the inputs.
    Raises click.UsageError (exit 2)."""
    if output.endswith(os.sep) or os.path.isdir(output):
        raise click.UsageError(f"--output {output} is a directory; name a file")
    if os.path.exists(output) and not os.path.isfile(output):
        raise click.UsageError(f"--output {output} is not a regular file")
    real = os.path.realpath(output)
    for f in inputs:
        if f and f != "-" and os.path.realpath(f) == real:
            raise click.UsageError(f"--output {output} is also an input ({f}); write the "
                                   f"result to another file")


def _with_baseline(fc, baseline: dict, source: str) -> dict:
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


def _warn_local_config(items: list) -> None:
    """`krm-fn run` writes every input document back; kustomize would drop local-config
    objects (krm.md §3), and `kubectl apply` rejects a function config: say so on stderr."""
    from krm_fn.pipeline import is_local_config, ref_of
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            continue
        local = is_local_config(obj)
        if local or obj.get("kind") == "InferenceTuning":
            what = "a local-config object" if local else "a krm-fn function config"
            ref = ref_of(obj)
            click.echo(f"krm-fn: document {i + 1} ({ref.kind} {ref.name}): "
                       f"{what}, written back unchanged; kustomize would drop it and kubectl "
                       f"apply would reject it: leave it out of FILES", err=True)


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
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as e:
        raise InputError(f"--output {path}: cannot write it ({e.strerror or e})") from None
    return True


def _guard(fn, *args) -> None:
    from krm_fn.resourcelist import InputError
    try:
        fn(*args)
    except InputError as e:
        _fail(str(e))
    except BrokenPipeError:
        sys.exit(1)
    except Exception as e:  # no traceback for users; KRM_FN_DEBUG=1 shows it
        if os.environ.get(_DEBUG_ENV):
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set {_DEBUG_ENV}=1 for the "
              f"traceback, and please report it)")


def _krm() -> None:
    if sys.stdin is None or sys.stdin.isatty():
        _fail("no ResourceList on stdin. krm-fn is a KRM function: run it through "
              "kustomize or kpt, pipe a ResourceList into it, or use `krm-fn run --config "
              "CONFIG FILE...` for plain YAML (see `krm-fn --help`)")
    text = _decode(sys.stdin.buffer.read(), "stdin")
    _run(text, None, True, False)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="krm-fn")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """KRM function: pin inference workloads to exclusive CPUs and emit the kubelet config.

    With no command, reads a ResourceList on stdin and writes one on stdout (the KRM
    function protocol used by kustomize and kpt).
    """
    if ctx.invoked_subcommand is None:
        _guard(_krm)


def _read_inputs(files) -> str:
    texts = []
    for f in files:
        if f == "-":
            texts.append(_decode(sys.stdin.buffer.read(), "stdin"))
        else:
            with open(f, "rb") as fh:
                texts.append(_decode(fh.read(), f))
    out = ""
    for t in texts:
        if out and not out.endswith("\n"):
            out += "\n"
        if out and not t.lstrip().startswith("---"):
            out += "---\n"
        out += t
    return out


@cli.command()
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="InferenceTuning (or ConfigMap) file; defaults when omitted.")
@click.option("--report", is_flag=True,
              help="Also print a readable report on stderr: per workload cpu, memory and "
                   "threads before -> after, per node pool the kubelet settings and fit "
                   "(and a progress line for inputs of more than 500 items).")
@click.option("--mode", type=click.Choice(["mutate", "validate"]), default=None,
              help="Override spec.mode. validate: print no manifests, report each change "
                   "mutate mode would make as an error on stderr, exit 1 if there is any "
                   "(a CI or pre-commit check that manifests are pinned).")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, writable=True),
              help="Write the manifests to FILE instead of stdout; the file is rewritten "
                   "only when its content changes, and left alone on an error.")
@click.option("--fail-on-change", is_flag=True,
              help="With --output: exit 1 when the file was created or rewritten (a "
                   "pre-commit hook: the new file must be reviewed and staged).")
@click.option("--baseline", "baseline_file", type=click.Path(exists=True, dir_okay=False),
              help="The nodes' current KubeletConfiguration (YAML or JSON, e.g. saved from "
                   "`kubectl get --raw /api/v1/nodes/NODE/proxy/configz`): sets "
                   "spec.output.baseline of the config.")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def run(config_file, report, mode, output, fail_on_change, baseline_file, files) -> None:
    """Tune plain multi-document YAML FILES (or - for stdin) and print the result.

    For CI render steps without kustomize plugins (Flux). Errors and warnings go to
    stderr; exit 1 on any error.
    """
    if output == "-":
        output = None                       # stdout, as for FILES
    if fail_on_change and output is None:
        raise click.UsageError("--fail-on-change needs --output")
    if output is not None:
        _check_output(output, [config_file, baseline_file, *files])
    def go():
        from krm_fn import resourcelist
        fc = None
        if config_file:
            with open(config_file, "rb") as fh:
                fc = resourcelist.load_config_file(_decode(fh.read(), config_file))
        if baseline_file:
            with open(baseline_file, "rb") as fh:
                fc = _with_baseline(
                    fc, resourcelist.load_config_file(_decode(fh.read(), baseline_file),
                                                      f"--baseline {baseline_file}"),
                    baseline_file)
        _run(_read_inputs(files), fc, False, True, report, mode, output, run_cmd=True,
             fail_on_change=fail_on_change)
    _guard(go)


@cli.command()
def selfcheck() -> None:
    """Check that this installation can run the function: import every module a render
    needs. Prints one line and exits 0, or names each missing module on stderr and exits
    1. For image builds and CI setup steps (and the Argo CD plugin's init command)."""
    from krm_fn import selfcheck as check
    problems = check.problems()
    for p in problems:
        click.echo(f"krm-fn: {p}", err=True)
    if problems:
        sys.exit(1)
    click.echo(check.summary())


@cli.command()
@click.option("--configmap", is_flag=True,
              help="The schema of the ConfigMap form (flat keys under data) instead.")
def schema(configmap) -> None:
    """Print the JSON Schema (draft 2020-12) of the function config, for editors:
    `# yaml-language-server: $schema=FILE` at the top of the config file."""
    from krm_fn.config import schema as schema_mod
    doc = schema_mod.configmap() if configmap else schema_mod.inference_tuning()
    sys.stdout.write(schema_mod.dumps(doc))


@cli.command()
@click.argument("name", nargs=-1)
def explain(name) -> None:
    """Print the documentation of a config field or a rule.

    NAME: a field path from spec (`nodePools.kubelet.topologyManagerPolicy`; `spec.` and
    `[]`/`[0]` after a list optional), a ConfigMap key (`threadsPerCore`), or `rule NAME`
    (`rule resources`; `rule` alone lists the rules). Without NAME: the top-level fields.
    Exit 2 for an unknown name, with suggestions.
    """
    from krm_fn.config import explain as explain_mod
    words = list(name)
    try:
        if words[:1] == ["rule"] and len(words) <= 2:
            text = explain_mod.explain_rule(words[1] if len(words) == 2 else None)
        elif len(words) <= 1:
            text = explain_mod.explain_field(words[0] if words else "")
        else:
            raise click.UsageError("give one field name, or `rule NAME`")
    except explain_mod.UnknownName as e:
        hint = f"; did you mean: {', '.join(e.suggestions)}" if e.suggestions else ""
        _fail(f"{e}{hint}", 2)
    sys.stdout.write(text)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def plugin(config_file, args) -> None:
    """kustomize legacy exec plugin: CONFIG_FILE is the transformer config kustomize
    writes to a temp file; resources come as multi-document YAML on stdin."""
    def go():
        from krm_fn import resourcelist
        with open(config_file, "rb") as fh:
            fc = resourcelist.load_config_file(_decode(fh.read(), config_file))
        _run(_decode(sys.stdin.buffer.read(), "stdin"), fc, False, True)
    _guard(go)


def _memory_option(ctx, param, value):
    if value is None:
        return None
    from krm_fn import quantity
    try:
        q = quantity.parse_memory(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    if q.value <= 0:
        raise click.BadParameter(f"{value!r} must be greater than zero")
    return int(q.value)


def _version_option(ctx, param, value):
    if value is None:
        return None
    from krm_fn.verify.checks import parse_version
    try:
        return parse_version(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _names_option(ctx, param, value):
    import re
    names = [n.strip() for v in value or () for n in v.split(",") if n.strip()]
    for n in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,255}", n):
            raise click.BadParameter(f"{n!r} is not an environment variable name")
    return tuple(names)


@cli.command()
@click.option("--root", default="/", show_default=True,
              type=click.Path(exists=True, file_okay=False),
              help="Read /proc and /sys below DIR (a fixture tree); the environment then "
                   "comes from DIR/proc/self/environ.")
@click.option("--cpus", type=click.IntRange(1, 16384), envvar="KRM_FN_CPUS",
              help="Pinned CPUs expected (default: from a cpu.max quota, else not checked).")
@click.option("--memory", callback=_memory_option, envvar="KRM_FN_MEMORY",
              help="Memory limit expected, a quantity (12Gi) or bytes.")
@click.option("--pids", type=click.IntRange(1, 2 ** 62), envvar="KRM_FN_PIDS",
              help="The pool's podPidsLimit.")
@click.option("--threads", type=click.IntRange(1, 16384), envvar="KRM_FN_THREADS",
              help="Value expected in every thread env var (default: the CPU count).")
@click.option("--full-pcpus-only/--no-full-pcpus-only", default=None,
              envvar="KRM_FN_FULL_PCPUS_ONLY",
              help="The pool runs cpuManagerPolicyOptions full-pcpus-only: require whole cores.")
@click.option("--topology-policy", envvar="KRM_FN_TOPOLOGY_POLICY",
              type=click.Choice(["none", "best-effort", "restricted", "single-numa-node"]),
              help="The pool's topologyManagerPolicy (single-numa-node: require one NUMA node).")
@click.option("--kubernetes-version", callback=_version_option,
              envvar="KRM_FN_KUBERNETES_VERSION",
              help="The node's Kubernetes version (CFS quota is off for exclusive CPUs from "
                   "1.33).")
@click.option("--cpu-quota/--no-cpu-quota", default=None, envvar="KRM_FN_CPU_QUOTA",
              help="Whether the pinned container keeps a CFS quota (default: from "
                   "--kubernetes-version).")
@click.option("--thread-env", multiple=True, callback=_names_option, envvar="KRM_FN_THREAD_ENV",
              help="More thread env var names to check, comma-separated.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the table.")
def verify(root, cpus, memory, pids, threads, full_pcpus_only, topology_policy,
           kubernetes_version, cpu_quota, thread_env, as_json) -> None:
    """Check, inside a pinned container, that pinning took effect on this node.

    Reads /proc/self/status, the container's cgroup v2 files (cpuset.cpus.effective,
    cpu.max, memory.max, pids.max), /sys/devices/system CPU and NUMA topology and the
    environment. Exit 0 when every check passes, 1 on a mismatch (the table is still
    printed), 2 for a usage error.
    """
    def go():
        from krm_fn.verify import checks, probe, report
        real = os.path.realpath(root) == "/"
        p = probe.read(root, environ=os.environ if real else None)
        exp = checks.Expected(cpus=cpus, memory=memory, pids=pids, threads=threads,
                              full_pcpus_only=full_pcpus_only, topology_policy=topology_policy,
                              kubernetes_version=kubernetes_version, cpu_quota=cpu_quota,
                              thread_env=thread_env)
        rows = checks.run(p, exp)
        if as_json:
            _, source = checks.expected_cpus(p, exp)
            sys.stdout.write(report.as_json(rows, exp, root, {
                "cpus_source": source, "cgroup_dir": p.cgroup_dir,
                "unreadable": dict(sorted(p.unreadable.items()))}))
        else:
            sys.stdout.write(report.table(rows))
        sys.stdout.flush()
        if report.failed(rows):
            sys.exit(1)
    _guard(go)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="krm-fn")
