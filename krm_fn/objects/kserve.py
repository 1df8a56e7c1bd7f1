"""KServe's cluster configuration, fixed when it is in the input (and selected).

- ConfigMap `inferenceservice-config` (KServe's namespace, `kserve` by default): the JSON
  values of `storageInitializer`, `agent`, `logger` and `batcher` get `cpuRequest ==
  cpuLimit` and `memoryRequest == memoryLimit` (the larger of the two), edited in place in
  the JSON text (parsed: only the top-level member's value is replaced, the rest kept as
  written). The storage initializer is an init container: a whole-number cpu becomes
  `spec.workloads.initContainerCpu` (kubernetes/kubernetes#112228). The agent runs beside
  the model server: a whole-number cpu is pinned by the kubelet, so it is raised to a
  multiple of the node pools' threads per core when `full-pcpus-only` is on (warning; a
  fractional value keeps it in the shared pool).
- `ClusterStorageContainer` (`serving.kserve.io`): `spec.container.resources` gets
  requests == limits, as the resources rule sizes a container.

Both are checked through krm_fn.objects (`check(obj, ref, ctx)`, ctx an ObjectContext),
which imports this module only for them.
"""
from __future__ import annotations

import math

from krm_fn import quantity
from krm_fn.quantity import NANO
from krm_fn.changes import Change
from krm_fn.pod import ContainerView, Edits, PodView
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.rules import RuleContext, resources
from krm_fn.workloads import PodSpecAt

_CONFIG_KEYS = ("storageInitializer", "agent", "logger", "batcher")


def _smt_multiple(ctx) -> int:
    """The threads per core a whole-CPU container must be a multiple of, over every pool
    that uses full-pcpus-only (1 when none does)."""
    return max((p.threads_per_core for p in ctx.pools if p.full_pcpus_only), default=1)


def _top_level_spans(text: str) -> dict | None:
    """{decoded key: (start, end) of its value's text} for the top-level members of the
    JSON object `text` (escaped keys decoded, nested objects skipped whole, so a nested key
    of the same name is never taken for it); None when `text` is not one JSON object or
    repeats a top-level key."""
    import json
    decoder = json.JSONDecoder()
    ws = " \t\n\r"
    i = len(text) - len(text.lstrip(ws))
    if not text.startswith("{", i):
        return None
    spans: dict = {}
    i += 1
    try:
        while True:
            while i < len(text) and text[i] in ws:
                i += 1
            if text.startswith("}", i) and not spans:
                i += 1
                break
            if not text.startswith('"', i):
                return None
            key, i = json.decoder.scanstring(text, i + 1)
            while i < len(text) and text[i] in ws:
                i += 1
            if not text.startswith(":", i):
                return None
            i += 1
            while i < len(text) and text[i] in ws:
                i += 1
            _, end = decoder.raw_decode(text, i)
            if key in spans:
                return None
            spans[key] = (i, end)
            i = end
            while i < len(text) and text[i] in ws:
                i += 1
            if text.startswith(",", i):
                i += 1
                continue
            if text.startswith("}", i):
                i += 1
                break
            return None
    except ValueError:
        return None
    return spans if not text[i:].strip(ws) else None


def _json_edit(text: str, field: str, value: str) -> str | None:
    """`text` (a JSON object) with the value of its top-level member `field` replaced by the
    JSON string `value`, every other character kept; None when the text is not one JSON
    object, repeats a top-level key, lacks `field`, or has it as something other than a
    string. The result is parsed again and must differ from the old object in `field`
    only, so no fix is reported that did not happen."""
    import json
    spans = _top_level_spans(text)
    if spans is None or field not in spans:
        return None
    start, end = spans[field]
    if not text.startswith('"', start):
        return None
    new = text[:start] + json.dumps(value) + text[end:]
    before, after = json.loads(text), json.loads(new)
    before[field] = value
    return new if after == before else None


def _equalize(key: str, raw: str, conf: dict, cfg, t: int):
    """Make request == limit for cpu and memory in the JSON text `raw` of config key `key`
    (parsed: `conf`); `t`: threads per core a whole cpu must be a multiple of. Returns
    (new text, [what changed], raised: a cpu was raised to a multiple of `t`, problem or
    None: why the key cannot be fixed)."""
    text = raw
    changes: list[str] = []
    raised = False
    problem = None
    for res, parse in (("cpu", quantity.parse_cpu), ("memory", quantity.parse_memory)):
        fields = (f"{res}Request", f"{res}Limit")
        vals = {}
        for f in fields:
            v = conf.get(f)
            if v is None or v == "":
                continue
            try:
                vals[f] = parse(str(v))
            except quantity.QuantityError as e:
                problem = f"{f}: {e}"
                break
        if problem:
            break
        if not vals:
            problem = (f"sets neither {fields[0]} nor {fields[1]}: KServe requires both; "
                       f"set them to equal values")
            break
        big = max(vals.values(), key=lambda q: q.nanos)
        value = big.nanos           # nano-units (nanocores for cpu)
        new = quantity.format_cpu(value) if res == "cpu" else big.text
        note = ""
        if res == "cpu" and quantity.kubelet_cpus(value):
            if key == "storageInitializer":
                ic = cfg.workloads.initContainerCpu
                value, new = ic.nanos, ic.text
                note = (f" (a whole-number cpu would give the init container exclusive "
                        f"CPUs, kubernetes/kubernetes#112228: spec.workloads."
                        f"initContainerCpu {ic.text} instead)")
            elif (n := quantity.kubelet_cpus(value)) % t:
                m = math.ceil(n / t) * t
                note = (f" (raised from {n} to {m}: a whole-number cpu is pinned "
                        f"by the kubelet, and with full-pcpus-only and {t} threads per "
                        f"core anything else fails the pod with SMTAlignmentError; set a "
                        f"fractional value such as 500m to keep it in the shared pool)")
                value, new = m * NANO, str(m)
                raised = True
        for f in fields:
            old = conf.get(f)
            if old is None or old == "":
                problem = (f"{f} is not set: KServe needs {fields[0]} and {fields[1]}; "
                           f"set both to {new}")
                break
            if parse(str(old)).nanos == value:
                continue
            edited = _json_edit(text, f, new)
            if edited is None:
                problem = (f"{f} is not a JSON string of the top-level object, or a "
                           f"top-level key appears twice; set {fields[0]} == {fields[1]} by "
                           f"hand")
                break
            text = edited
            changes.append(f"{f} {old} -> {new}" + note)
            note = ""
        if problem:
            break
    return text, changes, raised, problem


def config(obj: dict, ref: Ref, ctx) -> tuple[list, list]:
    """(changes, findings) for KServe's inferenceservice-config ConfigMap (module docstring)."""
    import json
    data = obj.get("data")
    results: list[Result] = []
    writes: list = []
    if data is None:
        return writes, results
    if not isinstance(data, dict):
        return writes, [Result("data must be a mapping", ERROR, ref, "data")]
    t = _smt_multiple(ctx)
    for key in _CONFIG_KEYS:
        raw = data.get(key)
        if raw is None:
            continue
        path = f"data.{key}"
        try:
            conf = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            conf = None
        if not isinstance(conf, dict):
            results.append(Result(f"{key} is not a JSON object, so krm-fn cannot make its "
                                  f"cpuRequest/cpuLimit and memoryRequest/memoryLimit equal; "
                                  f"fix the JSON", WARNING, ref, path))
            continue
        text, changes, raised, problem = _equalize(key, raw, conf, ctx.cfg, t)
        if problem:
            results.append(Result(f"{key}: {problem}", WARNING, ref, path))
            continue
        if text != raw:
            writes.append(Change(None, ref, ("data", key), raw, text))
            results.append(Result(
                f"{key}: " + "; ".join(changes) + ": KServe sizes the container it injects "
                "from these values, and request != limit makes every pod that gets it "
                "Burstable, so no container is pinned",
                WARNING if raised else INFO, ref, path))
    return writes, results


def storage_container(obj: dict, ref: Ref, ctx) -> tuple[list, list]:
    import copy
    work = copy.deepcopy(obj)
    edits = Edits(work, ref=ref)
    results: list = []
    spec = work.get("spec")
    c = spec.get("container") if isinstance(spec, dict) else None
    if not isinstance(c, dict):
        return [], [Result("spec.container must be a mapping (the storage-initializer "
                           "container)", ERROR, ref, "spec.container")]
    at = PodSpecAt(spec=("spec",), meta=None, container_keys=("container",))
    cv = ContainerView(str(c.get("name") or "storage-initializer"), "init",
                       ("spec", "container"), c)
    pod = PodView(ref, at, spec, None, [cv], edits, results)
    rctx = RuleContext(ctx.cfg, None, frozenset())
    if resources._check_shape(pod, cv):
        target = resources._cpu_target(pod, cv, False, rctx, None)
        if target is not None:
            text, value, reason = target
            resources._write(pod, cv, "cpu", text, value,
                             reason + " (the ClusterStorageContainer sizes the "
                                      "storage-initializer init container KServe injects)")
        resources._memory(pod, cv, False, ctx.cfg)
    if any(r.severity == ERROR for r in results):
        return [], results
    return edits.changes, results
