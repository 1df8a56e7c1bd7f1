"""Whole-object checks and fixes, for kinds that are not (only) pod specs.

Pod specs go through the rules (krm_fn/rules); this module handles what sits outside them:

- KServe cluster configuration, fixed when it is in the input (and selected): ConfigMap
  `inferenceservice-config` (KServe's namespace, `kserve` by default): the JSON values of
  `storageInitializer`, `agent`, `logger` and `batcher` get `cpuRequest == cpuLimit` and
  `memoryRequest == memoryLimit` (the larger of the two), edited in place in the JSON text
  (parsed: only the top-level member's value is replaced, the rest kept as written);
  `ClusterStorageContainer` (`serving.kserve.io`): `spec.container.resources` gets
  requests == limits. The storage initializer is an init container: a whole-number cpu
  becomes `spec.workloads.initContainerCpu` (kubernetes/kubernetes#112228). The agent runs
  beside the model server: a whole-number cpu is pinned by the kubelet, so it is raised to a
  multiple of the node pools' threads per core when `full-pcpus-only` is on (warning; a
  fractional value keeps it in the shared pool).
- Knative Serving's ConfigMap `knative-serving/config-deployment`: the queue-proxy sizes
  (krm_fn/knative_config.py).
- Kinds whose pods cannot be made Guaranteed from the manifest, passed through with a
  warning saying what to change and where: NVIDIA NIM Operator `NIMService`
  (`apps.nvidia.com`: `spec.resources` is the NIM container's; `spec.initContainers` and
  `spec.sidecarContainers` have no resources field), production-stack `VLLMRuntime`
  (`production-stack.vllm.ai`: `spec.deploymentConfig.resources` is plain strings), and the
  legacy KFServing `serving.kubeflow.org` InferenceService.
- Argo Rollouts `Rollout` with `spec.workloadRef`: the pods come from the referenced
  Deployment: a warning names it, and says when it is in the input but not selected.
- KServe `LLMInferenceService` without `spec.template`, Seldon `Server` without
  `spec.podSpec`: nothing in the manifest sizes the model server: warning.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from krm_fn.rational import Fraction

from krm_fn import knative_config, quantity
from krm_fn.record import dataclass
from krm_fn.changes import Change
from krm_fn.pod import ContainerView, Edits, PodView
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.rules import RuleContext, resources
from krm_fn.workloads import PodSpecAt, get_path, group_of

KSERVE_CONFIG = "inferenceservice-config"
STORAGE_CONTAINER = "ClusterStorageContainer"
_CONFIG_KEYS = ("storageInitializer", "agent", "logger", "batcher")


@dataclass
class ObjectContext:
    """What the object checks need: the loaded config, the node pools as PoolInfo, the
    input items, and `selected(obj)`: whether krm-fn tunes that item in this render."""

    cfg: object
    pools: list
    items: list
    selected: Callable[[dict], bool]


def _key(obj: dict) -> tuple[str, str]:
    return group_of(obj.get("apiVersion")), str(obj.get("kind") or "")


def cluster_tag(obj: dict) -> str | None:
    """`inferenceservice-config` or `ClusterStorageContainer` for the KServe cluster objects
    krm-fn fixes, `config-deployment` for Knative's (krm_fn/knative_config.py), else None."""
    if knative_config.is_config(obj):
        return knative_config.NAME
    key = _key(obj)
    if key == ("", "ConfigMap") and get_path(obj, ("metadata", "name")) == KSERVE_CONFIG:
        return KSERVE_CONFIG
    if key == ("serving.kserve.io", STORAGE_CONTAINER):
        return STORAGE_CONTAINER
    return None


def kinds() -> set:
    """The kinds this module checks (for spec.selector.kinds): the KServe cluster objects'
    and every handler's."""
    return {"ConfigMap", STORAGE_CONTAINER} | {kind for _, kind in _HANDLERS}


def handles(obj: dict) -> bool:
    """True when this module checks `obj`."""
    return cluster_tag(obj) is not None or _key(obj) in _HANDLERS


def check(obj: dict, ref: Ref, ctx: ObjectContext) -> tuple[list, list]:
    """(changes, findings) for one selected object: the Changes (krm_fn/changes.py) it
    makes, and its findings in order (Changes with a message and plain Results)."""
    tag = cluster_tag(obj)
    if tag == KSERVE_CONFIG:
        return _kserve_config(obj, ref, ctx)
    if tag == STORAGE_CONTAINER:
        return _storage_container(obj, ref, ctx)
    if tag == knative_config.NAME:
        return knative_config.check(obj, ref, ctx.cfg)
    handler = _HANDLERS.get(_key(obj))
    return ([], handler(obj, ref, ctx)) if handler else ([], [])


# --- KServe cluster configuration ---------------------------------------------------------

def _smt_multiple(ctx: ObjectContext) -> int:
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
        big = max(vals.values(), key=lambda q: q.value)
        value = big.value
        new = quantity.format_cpu(value) if res == "cpu" else big.text
        note = ""
        if res == "cpu" and value.denominator == 1:
            if key == "storageInitializer":
                ic = cfg.workloads.initContainerCpu
                value, new = ic.value, ic.text
                note = (f" (a whole-number cpu would give the init container exclusive "
                        f"CPUs, kubernetes/kubernetes#112228: spec.workloads."
                        f"initContainerCpu {ic.text} instead)")
            elif int(value) % t:
                m = math.ceil(int(value) / t) * t
                note = (f" (raised from {int(value)} to {m}: a whole-number cpu is pinned "
                        f"by the kubelet, and with full-pcpus-only and {t} threads per "
                        f"core anything else fails the pod with SMTAlignmentError; set a "
                        f"fractional value such as 500m to keep it in the shared pool)")
                value, new = Fraction(m), str(m)
                raised = True
        for f in fields:
            old = conf.get(f)
            if old is None or old == "":
                problem = (f"{f} is not set: KServe needs {fields[0]} and {fields[1]}; "
                           f"set both to {new}")
                break
            if parse(str(old)).value == value:
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


def _kserve_config(obj: dict, ref: Ref, ctx: ObjectContext) -> tuple[list, list]:
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


def _storage_container(obj: dict, ref: Ref, ctx: ObjectContext) -> tuple[list, list]:
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


# --- pass-through kinds -------------------------------------------------------------------

def _suggest(res: dict, ctx: ObjectContext) -> tuple[str | None, str | None, bool]:
    """(cpu, memory) a ResourceRequirements should hold for a pinned container (None when
    it cannot be derived) and whether it already does."""
    vals = {}
    for r, parse in (("cpu", quantity.parse_cpu), ("memory", quantity.parse_memory)):
        got = []
        for part in ("requests", "limits"):
            raw = get_path(res, (part, r))
            if raw is None:
                continue
            try:
                got.append(parse(raw))
            except quantity.QuantityError:
                return None, None, False
        vals[r] = got
    ok = all(len(v) == 2 and v[0].value == v[1].value for v in vals.values())
    cpu = mem = None
    if vals["cpu"]:
        n = math.ceil(max(q.value for q in vals["cpu"]))
        t = ctx.pools[0].threads_per_core if ctx.pools and ctx.pools[0].full_pcpus_only else 1
        n = math.ceil(n / t) * t
        cpu = str(n)
        ok = ok and vals["cpu"][0].value == n
    if vals["memory"]:
        mem = max(vals["memory"], key=lambda q: q.value).text
    return cpu, mem, ok


def _nim(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    out: list[Result] = []
    for key in ("initContainers", "sidecarContainers"):
        lst = spec.get(key)
        if not isinstance(lst, list) or not lst:
            continue
        names = ", ".join(repr(c.get("name")) for c in lst if isinstance(c, dict))
        out.append(Result(
            f"NIMService spec.{key} ({names}): the NIM Operator's NIMContainerSpec has no "
            f"resources field, so these containers run without limits and the pod can never "
            f"be Guaranteed — no container gets exclusive CPUs; remove spec.{key} (run that "
            f"work in another pod) to pin the NIM container", WARNING, ref, f"spec.{key}"))
    res = spec.get("resources") if isinstance(spec.get("resources"), dict) else {}
    cpu, mem, ok = _suggest(res, ctx)
    if not ok:
        want = (f"requests and limits both cpu: \"{cpu or 'N'}\"" + ("" if cpu else
                " (a whole number of CPUs)") + f" and memory: {mem or '<the memory it needs>'}")
        out.append(Result(
            f"NIMService spec.resources is the NIM container's: krm-fn does not rewrite "
            f"NIMService (the NIM Operator renders the pod), so set {want} there; requests "
            f"== limits with whole CPUs is what the static CPU Manager pins", WARNING, ref,
            "spec.resources"))
    out.append(Result(
        "NIMService is passed through unchanged: set spec.nodeSelector to the node pool's "
        "labels and the thread variables (OMP_NUM_THREADS and the others of "
        "spec.workloads.threads.env) in spec.env to the pinned CPU count yourself",
        INFO, ref, "spec"))
    return out


def _vllm_runtime(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    cpu = get_path(obj, ("spec", "deploymentConfig", "resources", "cpu"))
    found = f" (found {cpu!r})" if cpu is not None else ""
    return [Result(
        f"VLLMRuntime (production-stack) is passed through unchanged: "
        f"spec.deploymentConfig.resources holds plain cpu, memory and gpu strings that the "
        f"operator turns into the vLLM container's resources, so krm-fn cannot make the pod "
        f"Guaranteed; set cpu to a whole number of CPUs{found} and memory, give "
        f"spec.sidecarConfig.resources equal values too, then check that the rendered pod's "
        f"status.qosClass is Guaranteed (or render the Deployment and run krm-fn on it)",
        WARNING, ref, "spec.deploymentConfig.resources")]


def _legacy_kfserving(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    return [Result(
        f"{obj.get('apiVersion')} InferenceService is the legacy KFServing API, which "
        f"krm-fn does not tune (and current KServe does not serve): move it to "
        f"serving.kserve.io/v1beta1 InferenceService and run krm-fn again", WARNING, ref,
        "apiVersion")]


def _rollout(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    wref = get_path(obj, ("spec", "workloadRef"))
    if wref is None:
        if get_path(obj, ("spec", "template")) is None:
            return [Result("Rollout has neither spec.template nor spec.workloadRef: there is "
                           "no pod spec to tune", WARNING, ref, "spec")]
        return []
    if not isinstance(wref, dict) or not wref.get("name"):
        return [Result("spec.workloadRef must name the Deployment whose pod template the "
                       "Rollout uses", ERROR, ref, "spec.workloadRef")]
    kind = str(wref.get("kind") or "Deployment")
    name = str(wref["name"])
    ns = ref.namespace or "default"
    target = None
    for it in ctx.items:
        if (isinstance(it, dict) and it.get("kind") == kind
                and get_path(it, ("metadata", "name")) == name
                and (get_path(it, ("metadata", "namespace")) or "default") == ns):
            target = it
            break
    head = (f"spec.workloadRef: the Rollout's pods use the pod template of {kind} {name}, so "
            f"that is where krm-fn must tune them")
    if target is None:
        return [Result(f"{head}; it is not in this input: run krm-fn where {kind} {name} is "
                       f"rendered, with spec.selector selecting it", WARNING, ref,
                       "spec.workloadRef")]
    if not ctx.selected(target):
        return [Result(f"{head}; it is in this input but not selected (spec.selector, or a "
                       f"krm-fn.dev/skip annotation): select {kind} {name} instead of (or "
                       f"besides) the Rollout", WARNING, ref, "spec.workloadRef")]
    return [Result(f"{head}; it is tuned in this render", INFO, ref, "spec.workloadRef")]


def _llmisvc(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    if get_path(obj, ("spec", "template")) is not None:
        return []
    return [Result(
        "spec.template is not set: the model server container 'main' comes from the "
        "LLMInferenceServiceConfig templates, which set no resources, so the pod is not "
        "Guaranteed and nothing is pinned; add spec.template.containers with an entry named "
        "main carrying resources (requests == limits, a whole number of CPUs): the "
        "controller merges it by name", WARNING, ref, "spec.template")]


def _seldon_server(obj: dict, ref: Ref, ctx: ObjectContext) -> list:
    if get_path(obj, ("spec", "podSpec")) is not None:
        return []
    return [Result(
        "spec.podSpec is not set: the pod is the ServerConfig's, whose default containers "
        "rclone, agent and mlserver (or triton) set a cpu request and no cpu limit, so it is "
        "Burstable and nothing is pinned; add spec.podSpec.containers with an entry per "
        "container name carrying resources (requests == limits; whole CPUs for the model "
        "server): Seldon merges them by name", WARNING, ref, "spec.podSpec")]


_HANDLERS = {
    ("apps.nvidia.com", "NIMService"): _nim,
    ("production-stack.vllm.ai", "VLLMRuntime"): _vllm_runtime,
    ("serving.kubeflow.org", "InferenceService"): _legacy_kfserving,
    ("argoproj.io", "Rollout"): _rollout,
    ("serving.kserve.io", "LLMInferenceService"): _llmisvc,
    ("mlops.seldon.io", "Server"): _seldon_server,
}
