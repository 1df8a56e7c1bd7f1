"""Writing env vars of a container: append an entry, or make an existing one hold a
thread count under `spec.workloads.threads.existing` (a lower value kept, a higher one or
0 replaced with a warning; `valueFrom` and non-numbers left alone with a warning).

Shared by the threads rule and the serving-engine checks (krm_fn/rules/engines/); not a
rule. A `resourceFieldRef` resolves to `ceil(quantity / divisor)`
(kubernetes/kubernetes pkg/api/v1/resource/helpers.go `ExtractContainerResourceValue`;
https://kubernetes.io/docs/tasks/inject-data-application/environment-variable-expose-pod-information/).
"""
from __future__ import annotations


from krm_fn import numbers, quantity
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.rules import cmdline
from krm_fn.results import INFO, WARNING, Result

DOWNWARD = {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}


def _downward() -> dict:
    """A new copy of DOWNWARD (`copy` is imported when a render needs it)."""
    import copy
    return copy.deepcopy(DOWNWARD)


def env_index(pod: PodView, c: ContainerView) -> tuple[list, dict] | None:
    """(env list, {name: last index}) of the container, or None after an error result
    (env not a list, an entry without a name)."""
    env = c.data.get("env")
    if env is not None and not isinstance(env, list):
        pod.error(c.path + ("env",), f"container {c.name!r}: env must be a list")
        return None
    env = env or []
    by_name: dict[str, int] = {}
    for i, e in enumerate(env):
        name = e.get("name") if isinstance(e, dict) else None
        if not isinstance(name, str) or not name:
            pod.error(c.path + ("env", i), f"container {c.name!r}: env[{i}] must be a "
                                           f"mapping with a name")
            return None
        by_name[name] = i  # the last entry wins, as in the kubelet
    return env, by_name


def field_ref_value(c: ContainerView, value_from: object) -> int | None:
    """What a `valueFrom` resolves to when it is a resourceFieldRef on this container's
    cpu (ceil(cpu / divisor), see the module docstring); None for anything else."""
    if not isinstance(value_from, dict) or set(value_from) != {"resourceFieldRef"}:
        return None
    ref = value_from["resourceFieldRef"]
    if not isinstance(ref, dict) or ref.get("containerName") not in (None, "", c.name):
        return None
    resource = ref.get("resource")
    if resource not in ("limits.cpu", "requests.cpu"):
        return None
    try:
        cpu = quantity.parse_cpu(c.get("resources", resource.split(".")[0], "cpu"))
        divisor = quantity.parse_cpu(ref.get("divisor", "1"))
    except quantity.QuantityError:
        return None
    if divisor.nanos <= 0:
        return None
    return quantity.ceil_div(cpu.nanos, divisor.nanos)


def add_env(pod: PodView, c: ContainerView, entry: dict, message: str,
            shown: str | None = None) -> None:
    """Append the env `entry` to container `c` with an info result whose field path is the
    new entry and whose proposed value is `shown` (default: the entry's value)."""
    env = c.data.get("env") or []
    path = c.path + ("env", len(env))
    pod.edits.set(path, entry)
    pod.results.append(Result(message, INFO, pod.ref, path_str(path), None,
                              shown if shown is not None else entry.get("value")))


def set_env(pod: PodView, c: ContainerView, var: str, want: str, why: str, cfg,
            added: list | None = None, downward: bool = False,
            higher: str | None = None) -> None:
    """Make env `var` of `c` hold the whole number `want`, with the rules of the module
    docstring (`threads.existing`, valueFrom, non-numbers). A new entry is appended (as a
    resourceFieldRef when `downward`); its name goes to `added` for one combined info
    result, or, when `added` is None, gets its own info result. `higher`: why a higher
    existing value is replaced (default: more threads than `why`). An env that is not a
    list of named entries gets an error result (env_index) and nothing else."""
    found = env_index(pod, c)
    if found is not None:
        _set_one(pod, c, found[1], var, want, why, cfg, added, downward, higher)
        _overridden(pod, c, var, want, why, cfg)


def _overridden(pod: PodView, c: ContainerView, var: str, want: str, why: str, cfg) -> None:
    """A warning when the container's command line assigns `var` itself
    (cmdline.assignments: `export OMP_NUM_THREADS=32` in a script, `env VAR=32 program`):
    the program gets that value, not the env's `want`, unless it is `want` (or lower, with
    `threads.existing: keep-lower`)."""
    got = cmdline.assignments(c).get(var)
    if got is None:
        return
    value, tok = got
    n, count = numbers.count(value), int(want)
    if n == count or (n is not None and 0 < n < count
                      and cfg.workloads.threads.existing == "keep-lower"):
        return
    pod.warn(tok.path, f"container {c.name!r}: the command line sets {var}="
                       f"{numbers.shown(value)} itself, which the program gets instead of the "
                       f"env's {want} ({why}): a shell's assignment or `env` replaces the "
                       f"container's env of that name (POSIX Shell Command Language 2.9.1); "
                       f"remove it there, or write {var}={want}")


def set_envs(pod: PodView, c: ContainerView, by_name: dict, names, want: str, why: str,
             cfg, added: list | None = None, downward: bool = False) -> None:
    """set_env for each var of `names` in order, the same writes and results as one call
    each, reading the env once: `by_name` is the {name: last index} of env_index(pod, c)
    (which must not have failed), kept up to date as entries are appended (nothing else
    writes to the env meanwhile). With `added`, the new entries in a row are written in
    one Edits.set_all (each still its own Change)."""
    if added is None:
        for var in names:
            _set_one(pod, c, by_name, var, want, why, cfg, added, downward, None)
    else:
        new: list = []          # (index, entry) of new entries not written yet
        for var in names:
            if var in by_name:
                pod.edits.set_all(c.path + ("env",), new)
                new = []
                _set_one(pod, c, by_name, var, want, why, cfg, added, downward, None)
                continue
            index = len(c.data.get("env") or []) + len(new)
            by_name[var] = index
            new.append((index, _entry(var, want, downward)))
            added.append(var)
        pod.edits.set_all(c.path + ("env",), new)
    for var in names:
        _overridden(pod, c, var, want, why, cfg)


def _entry(var: str, want: str, downward: bool) -> dict:
    """A new env entry: `var` = `want`, or a resourceFieldRef on limits.cpu (DOWNWARD)."""
    return {"name": var, "valueFrom": _downward()} if downward else {"name": var,
                                                                      "value": want}


def _set_one(pod: PodView, c: ContainerView, by_name: dict, var: str, want: str, why: str,
             cfg, added: list | None, downward: bool, higher: str | None) -> None:
    """set_env on an env whose {name: last index} is `by_name` (updated when an entry is
    appended: the new entry is the last of its name)."""
    env = c.data.get("env") or []
    count = int(want)
    if var not in by_name:
        entry = _entry(var, want, downward)
        by_name[var] = len(env)
        if added is not None:
            pod.edits.set(c.path + ("env", len(env)), entry)
            added.append(var)
        else:
            add_env(pod, c, entry, f"container {c.name!r}: {var} set to "
                                   + (f'resourceFieldRef limits.cpu (divisor "1") = {want}'
                                      if downward else want) + f" ({why})", want)
        return
    i = by_name[var]
    e = env[i]
    if "valueFrom" in e:
        resolved = field_ref_value(c, e["valueFrom"])
        if resolved is not None and resolved <= count:
            return
        how = (f"resolves to {resolved} (a resourceFieldRef is rounded up)"
               if resolved is not None else "is left alone")
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: {var} comes from valueFrom and {how}; make sure "
                 f"it resolves to at most {want} ({why}), e.g. value: \"{want}\"")
        return
    raw = e.get("value")
    text = "" if raw is None else str(raw).strip(numbers.BLANKS)
    if "$" in text:          # `$(T)`: the kubelet expands it against the entries before it
        from krm_fn.rules import cmdline
        expanded = cmdline.env_mapping(c).get(var)
        if expanded is not None and expanded != text:
            text = f"{text} (= {expanded.strip(numbers.BLANKS)})"
            n = numbers.count(expanded.strip(numbers.BLANKS))
        else:
            n = None
    else:
        n = numbers.count(text)
    if n is None:
        found = numbers.shown("" if raw is None else str(raw))
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: {var}={found} is not a whole number (ASCII digits) "
                 f"and is left alone; set it to {want} ({why})")
        return
    if n == count or (cfg.workloads.threads.existing == "keep-lower" and 0 < n < count):
        if pod.edits.unquoted(c.path + ("env", i, "value")):
            pod.set(c.path + ("env", i, "value"), str(raw),
                    f"container {c.name!r}: {var} {text} was unquoted, which YAML reads as a "
                    f"number: the API server refuses an env value that is not a string "
                    f"(EnvVar.value is a string), so the workload would not be applied; "
                    f"written quoted (https://kubernetes.io/docs/tasks/inject-data-application/"
                    f"define-environment-variable-container/)", raw)
        return
    if n == 0:
        reason = (f"0 is no thread count: the runtime picks its own then (llama.cpp every CPU "
                  f"of the node, std::thread::hardware_concurrency(); an OpenMP runtime "
                  f"ignores 0 as invalid), not {why}")
    elif n > count:
        reason = higher or f"{text} is more threads than {why} and would oversubscribe them"
    else:
        reason = "threads.existing is replace"
    pod.set(c.path + ("env", i, "value"), want,
            f"container {c.name!r}: {var} {text} -> {want}: {reason}", raw,
            severity=WARNING if n > count or n == 0 else INFO)


def downward_ok(count, cfg) -> bool:
    """True when a resourceFieldRef on limits.cpu with divisor 1 resolves to the thread
    count `count` (a facts.Count): `threads.source` is downwardAPI, the cpu limit is whole
    and nothing (reservedCpus, workers) lowers the count below it."""
    return (cfg.workloads.threads.source == "downwardAPI" and count.whole
            and count.count == count.cpus)


def downward_refused(pod: PodView, ctx) -> str | None:
    """Why a resourceFieldRef cannot be written into `pod` (Knative's webhook refuses it
    while `kubernetes.podspec-fieldref` is disabled), or None when it can."""
    from krm_fn.admission import serving_mode
    ictx = getattr(ctx, "ictx", None)
    on, _why = serving_mode.serverless(pod, ictx.kserve_default_mode() if ictx is not None
                                       else None)
    if not on:
        return None
    from krm_fn.admission import knative
    feats = ctx.knative_features if ctx.knative_features is not None else knative.defaults()
    if feats.allows(knative.FIELD_REF):
        return None
    return (f"Knative's webhook refuses env valueFrom.resourceFieldRef in a Knative pod "
            f"(\"must not set the field(s)\"): {knative.fix(knative.FIELD_REF, feats)}, "
            f"then krm-fn writes the resourceFieldRef (knative/serving "
            f"pkg/apis/config/features.go, pkg/apis/serving/fieldmask.go EnvVarSourceMask)")
