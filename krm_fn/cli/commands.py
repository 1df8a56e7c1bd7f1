"""The click commands: `krm-fn --help`, `--version`, `run`, `plugin`, `plugin-home`,
`selfcheck`, `schema`, `explain`, `verify`, `probe`. Thin: each parses its options and calls
the module that does the work, imported when the command runs (a render never imports
verify, probe, schema or explain).

krm_fn.cli.main runs `krm-fn` with no arguments and kustomize's `krm-fn plugin CONFIG_FILE`
without importing this module; `cli` here runs them the same way (krm_fn.cli.render) for
every other caller (click's CliRunner, a command line main hands over).
"""
from __future__ import annotations

import os
import sys

import click

from krm_fn import __version__
from krm_fn.cli.common import fail, guard


def _check_output(output: str, inputs: list) -> None:
    """--output must name a regular file (or a new one) that is none of the inputs.
    Raises click.UsageError (exit 2)."""
    if output.endswith(os.sep) or os.path.isdir(output):
        raise click.UsageError(f"--output {output} is a directory; name a file")
    if os.path.exists(output) and not os.path.isfile(output):
        raise click.UsageError(f"--output {output} is not a regular file")
    real = os.path.realpath(output)
    for f in inputs:
        if f and f != "-" and (os.path.realpath(f) == real or _same_file(f, output)):
            raise click.UsageError(f"--output {output} is also an input ({f}); write the "
                                   f"result to another file")


def _same_file(a: str, b: str) -> bool:
    """True when paths `a` and `b` are one file (same st_dev and st_ino: a hard link or a
    symbolic link to it counts); False when either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="krm-fn")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """KRM function: pin inference workloads to exclusive CPUs and emit the kubelet config.

    With no command, reads a ResourceList on stdin and writes one on stdout (the KRM
    function protocol used by kustomize and kpt).
    """
    if ctx.invoked_subcommand is None:
        from krm_fn.cli import render
        render.function()


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
@click.option("--load-restrictor", "restriction", default="LoadRestrictionsRootOnly",
              show_default=True,
              type=click.Choice(["LoadRestrictionsRootOnly", "LoadRestrictionsNone"]),
              help="As kustomize's: LoadRestrictionsRootOnly refuses a file inside the "
                   "current directory that is a symbolic link to one outside it; "
                   "LoadRestrictionsNone follows links anywhere.")
@click.option("--drop-local-config", is_flag=True,
              help="Leave the documents annotated config.kubernetes.io/local-config (any "
                   "value but \"false\") out of the output, as kustomize and kpt do: "
                   "`kubectl apply -f` would create them (e.g. the Node that "
                   "topology.fromNode reads).")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def run(config_file, report, mode, output, fail_on_change, baseline_file, restriction,
        drop_local_config, files) -> None:
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
    from krm_fn.cli import render
    render.run_files(config_file, baseline_file, files, report, mode, output, fail_on_change,
                     restriction, drop_local_config)


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
        fail(f"{e}{hint}", 2)
    sys.stdout.write(text)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def plugin(config_file, args) -> None:
    """kustomize legacy exec plugin: CONFIG_FILE is the transformer config kustomize
    writes to a temp file; resources come as multi-document YAML on stdin."""
    from krm_fn.cli import render
    render.plugin(config_file)


@cli.command("plugin-home")
def plugin_home() -> None:
    """Print the directory to set KUSTOMIZE_PLUGIN_HOME to for kustomize's legacy exec
    plugin route: the plugin tree (krm-fn.dev/v1alpha1/inferencetuning/InferenceTuning)
    installed with krm-fn, e.g.
    KUSTOMIZE_PLUGIN_HOME="$(krm-fn plugin-home)" kubectl kustomize --enable-alpha-plugins DIR
    """
    import krm_fn
    click.echo(os.path.join(os.path.dirname(os.path.abspath(krm_fn.__file__)), "plugin_home"))


def _memory_option(ctx, param, value):
    if value is None:
        return None
    from krm_fn import quantity
    try:
        q = quantity.parse_memory(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    if q.nanos <= 0:
        raise click.BadParameter(f"{value!r} must be greater than zero")
    return q.whole


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
              help="The node's Kubernetes version, one of the supported minors (the CFS "
                   "quota on exclusive CPUs follows its DisableCPUQuotaWithExclusiveCPUs "
                   "default).")
@click.option("--cpu-quota/--no-cpu-quota", default=None, envvar="KRM_FN_CPU_QUOTA",
              help="Whether the pinned container keeps a CFS quota (default: from "
                   "--kubernetes-version).")
@click.option("--thread-env", multiple=True, callback=_names_option, envvar="KRM_FN_THREAD_ENV",
              help="More thread env var names to check, comma-separated.")
@click.option("--pid", type=click.IntRange(1, 2 ** 22), default=1, show_default=True,
              envvar="KRM_FN_PID",
              help="The serving process whose threads must stay on the pinned CPUs.")
@click.option("--node", "node_audit", is_flag=True,
              help="Audit the node instead (run on the node, or with the host's / as "
                   "--root): cpu_manager_state, memory_manager_state, kubelet config and "
                   "CPU topology against the plan.")
@click.option("--reserved-cpus", help="--node: the plan's reservedSystemCPUs (a cpuset).")
@click.option("--cpu-manager-policy", default="static", show_default=True,
              type=click.Choice(["none", "static"]), help="--node: the plan's policy.")
@click.option("--memory-manager-policy", type=click.Choice(["None", "Static"]),
              help="--node: the plan's memoryManagerPolicy (default: not checked).")
@click.option("--kubelet-config", default="/var/lib/kubelet/config.yaml", show_default=True,
              help="--node: node path of the kubelet's config file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the table.")
def verify(root, cpus, memory, pids, threads, full_pcpus_only, topology_policy,
           kubernetes_version, cpu_quota, thread_env, pid, node_audit, reserved_cpus,
           cpu_manager_policy, memory_manager_policy, kubelet_config, as_json) -> None:
    """Check, inside a pinned container, that pinning took effect on this node.

    Reads /proc/self/status, the container's cgroup v2 files (cpuset.cpus.effective,
    cpu.max, memory.max, pids.max), /sys/devices/system CPU and NUMA topology, the
    environment and the threads of --pid. With --node, audits the node's CPU and Memory
    Manager state instead. Exit 0 when every check passes, 1 on a mismatch (the table is
    still printed), 2 for a usage error.
    """
    if node_audit:
        from krm_fn.verify.node_checks import NodeExpected
        exp = NodeExpected(cpu_manager_policy, memory_manager_policy, reserved_cpus,
                           topology_policy, full_pcpus_only, kubelet_config)
        guard(_verify_node, root, exp, as_json)
        return

    def go():
        from krm_fn.verify import checks, read, report, threads as threads_mod
        real = os.path.realpath(root) == "/"
        p = read.read(root, environ=os.environ if real else None)
        exp = checks.Expected(cpus=cpus, memory=memory, pids=pids, threads=threads,
                              full_pcpus_only=full_pcpus_only, topology_policy=topology_policy,
                              kubernetes_version=kubernetes_version, cpu_quota=cpu_quota,
                              thread_env=thread_env)
        rows = checks.run(p, exp)
        tasks, problem = threads_mod.read_tasks(root, pid)
        rows += threads_mod.rows(tasks, problem, checks.cpuset_of(p), pid)
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
    guard(go)



def _verify_node(root: str, exp, as_json: bool) -> None:
    """`krm-fn verify --node`: read, check, print; exit 1 on a mismatch."""
    from krm_fn.verify import node, node_checks, report
    if exp.reserved is not None:
        from krm_fn.node.topology import parse_cpuset
        try:
            parse_cpuset(exp.reserved)
        except ValueError as e:
            fail(f"--reserved-cpus {exp.reserved!r}: {e}", 2)
    st = node.read(root, exp.kubelet_config)
    rows = node_checks.run(st, exp)
    if as_json:
        sys.stdout.write(report.as_json(rows, exp, root, {"unreadable": st.unreadable}))
    else:
        sys.stdout.write(report.table(rows))
    sys.stdout.flush()
    if report.failed(rows):
        sys.exit(1)


class _Finite(click.FloatRange):
    """click.FloatRange that also refuses NaN (which compares false with both bounds, so
    FloatRange lets it through; JSON cannot carry it)."""

    def convert(self, value, param, ctx):
        got = super().convert(value, param, ctx)
        if got != got:
            self.fail(f"{value!r} is not a number.", param, ctx)
        return got


def _probe_duration(ctx, param, value):
    if value is None:
        return None
    from krm_fn.probe.command import UsageError, parse_duration
    try:
        return parse_duration(value, "--" + param.name.replace("_", "-"))
    except UsageError as e:
        raise click.BadParameter(str(e)) from None


@cli.command()
@click.option("--api", required=True, type=click.Choice(
    ["openai-completions", "openai-chat", "kserve-v1", "kserve-v2", "http"]),
    help="The request: OpenAI completions or chat, KServe v1 :predict, Open Inference "
         "Protocol v2 /infer, or any HTTP POST of --body.")
@click.option("--url", required=True,
              help="The server's base URL (http://HOST:PORT); the full URL for --api http.")
@click.option("--model", help="Model name (OpenAI `model`, KServe MODEL in the path).")
@click.option("--prompt", default="Hello", show_default=True, help="OpenAI prompt text.")
@click.option("--max-tokens", type=click.IntRange(1, 1 << 20), default=16, show_default=True,
              help="OpenAI max_tokens.")
@click.option("--body", type=click.Path(dir_okay=False, allow_dash=True),
              help="Request body FILE (JSON for KServe; replaces the generated OpenAI body).")
@click.option("--header", "-H", multiple=True, help="Extra request header `Name: value`.")
@click.option("--rate", type=_Finite(0.01, 100000, min_open=False),
              help="Open loop: requests per second, sent on schedule whatever the responses.")
@click.option("--concurrency", "-c", type=click.IntRange(1, 4096),
              help="Closed loop: N requests outstanding (default 1 without --rate).")
@click.option("--duration", callback=_probe_duration,
              help="Measure for this long (90s, 5m, 1h); default 60s without --requests.")
@click.option("--requests", "-n", "requests_", type=click.IntRange(1, 10 ** 8),
              help="Measure this many requests.")
@click.option("--warmup", default="10", show_default=True,
              help="Requests (N) or time (5s) sent first and excluded from the results.")
@click.option("--timeout", callback=_probe_duration, default="30s", show_default=True,
              help="Per request, in total (connect, headers, body).")
@click.option("--max-inflight", type=click.IntRange(1, 65536), default=256, show_default=True,
              help="With --rate: requests outstanding at most; a send beyond is an error.")
@click.option("--threshold", type=_Finite(0, 100), default=0.20, show_default=True,
              help="Highest CV (stddev/mean) that counts as stable.")
@click.option("--max-error-rate", type=_Finite(0, 1), default=0.01, show_default=True,
              help="Exit 1 when more than this fraction of requests failed.")
@click.option("--compare", type=click.Path(dir_okay=False),
              help="A --json result of an earlier run: print before, after and the change.")
@click.option("--json", "as_json", is_flag=True, help="Print the ProbeResult JSON instead.")
@click.option("--save", type=click.Path(dir_okay=False, writable=True),
              help="Also write the ProbeResult JSON to FILE (for a later --compare).")
@click.option("--quiet", "-q", is_flag=True, help="No progress line on stderr.")
def probe(**opts) -> None:
    """Measure the latency distribution of an inference endpoint.

    Prints count, errors, P50, P90, P99, P99.9, mean, stddev and CV (stddev/mean) with the
    verdict against --threshold, and a histogram. Exit 0 when the CV is at most the
    threshold, 1 when it is above (or no request succeeded, or more than --max-error-rate
    failed), 2 for a usage error. Needs the extra: pip install 'krm-fn[probe]'.
    """
    from krm_fn.probe import command
    from krm_fn.probe.load import Plan
    if opts["rate"] and opts["concurrency"]:
        raise click.UsageError("give --rate or --concurrency, not both")
    try:
        warm_n, warm_s = command.parse_warmup(opts["warmup"])
    except command.UsageError as e:
        raise click.BadParameter(str(e), param_hint="--warmup") from None
    duration = opts["duration"]
    if duration is None and opts["requests_"] is None:
        duration = 60.0
    opts["plan"] = Plan(rate=opts["rate"], concurrency=None if opts["rate"] else
                        (opts["concurrency"] or 1), duration=duration,
                        requests=opts["requests_"], timeout=opts["timeout"],
                        warmup_requests=warm_n, warmup_seconds=warm_s,
                        max_inflight=opts["max_inflight"])

    def go():
        try:
            code = command.probe(opts)
        except command.UsageError as e:
            fail(str(e), 2)
        sys.exit(code)
    guard(go)
