"""Knative Serving's ConfigMap `knative-serving/config-deployment`, fixed when it is in the
input (and selected): the queue-proxy sizes it holds.

Knative sizes the `queue-proxy` container of every revision from, per resource, the
revision's `queue.sidecar.serving.knative.dev/*-resource-{request,limit}` annotations
(from knative-v1.11.0), else this ConfigMap's keys `queue-sidecar-cpu-request`,
`queue-sidecar-cpu-limit`, `queue-sidecar-memory-request`, `queue-sidecar-memory-limit`,
else its defaults (cpu request 25m; no limits unless `queueproxy.resource-defaults` is
enabled): knative/serving pkg/reconciler/revision/resources/queue.go
(`createQueueResources`), pkg/deployment/config.go. Releases before 1.11 read only the
ConfigMap, and a queue-proxy with request != limit makes every Knative pod Burstable.

So, when the ConfigMap is in the input:

- with `spec.workloads.injection.knativeQueueProxy` cpu and memory configured, the four
  keys are set to them (request == limit), the values krm-fn also writes as annotations;
- otherwise, a resource whose request and limit keys are both set but differ gets both set
  to the larger, unless that is a whole-number cpu (the kubelet would pin queue-proxy, and
  fail the pod with SMTAlignmentError under `full-pcpus-only`): then, and when one key is
  set without the other, a warning names what to set (krm-fn invents no sidecar
  resources).

A configured whole-number cpu is written, with a warning that names a fractional value.
"""
from __future__ import annotations

from krm_fn import quantity
from krm_fn.pod import Edits
from krm_fn.results import INFO, WARNING, Ref, Result

KEYS = {"cpu": ("queue-sidecar-cpu-request", "queue-sidecar-cpu-limit"),
        "memory": ("queue-sidecar-memory-request", "queue-sidecar-memory-limit")}
SOURCE = ("knative/serving pkg/reconciler/revision/resources/queue.go "
          "createQueueResources, pkg/deployment/config.go")


def _parse(res: str, text) -> object | None:
    try:
        return (quantity.parse_cpu if res == "cpu" else quantity.parse_memory)(str(text))
    except quantity.QuantityError:
        return None


def check(obj: dict, ref: Ref, ctx) -> tuple[list, list]:
    """(changes, findings) for the ConfigMap (module docstring); `ctx`: the
    krm_fn.objects.ObjectContext (its `cfg`, the loaded config). Each finding names the
    key, the values and why."""
    cfg = ctx.cfg
    data = obj.get("data")
    if not isinstance(data, dict):
        return [], []
    work = {"data": dict(data)}
    edits = Edits(work, ref=ref)
    found: list = []
    conf = getattr(cfg.workloads.injection, "knativeQueueProxy", None)
    for res, (req_key, lim_key) in KEYS.items():
        target = getattr(conf, res, None) if conf is not None else None
        have = {k: data.get(k) for k in (req_key, lim_key) if data.get(k) not in (None, "")}
        if target is not None:
            value, why = target.text, (f"spec.workloads.injection.knativeQueueProxy.{res} "
                                       f"is {target.text}")
        elif len(have) == 2:
            parsed = {k: _parse(res, v) for k, v in have.items()}
            if any(q is None for q in parsed.values()):
                continue
            big = max(parsed.values(), key=lambda q: q.nanos)
            if all(q.nanos == big.nanos for q in parsed.values()):
                continue
            if res == "cpu" and big.is_integer:
                found.append(Result(
                    f"{req_key} {have[req_key]} and {lim_key} {have[lim_key]} differ, so "
                    f"queue-proxy gets request != limit and every Knative pod that reads "
                    f"this ConfigMap is Burstable; krm-fn does not make both "
                    f"{quantity.format_cpu(big.nanos)}: a whole-number cpu would give "
                    f"queue-proxy exclusive CPUs (and fail pods with SMTAlignmentError under "
                    f"full-pcpus-only); set both to a fractional value such as "
                    f"{big.nanos // quantity.NANO * 1000 - 100}m, or spec.workloads.injection."
                    f"knativeQueueProxy.cpu ({SOURCE})", WARNING, ref, f"data.{req_key}"))
                continue
            value, why = (quantity.format_cpu(big.nanos) if res == "cpu" else big.text,
                          "the larger of the two")
        else:
            if len(have) == 1:
                (k, v), = have.items()
                missing = lim_key if k == req_key else req_key
                found.append(Result(
                    f"{k} is {v} but {missing} is not set, so queue-proxy gets request != "
                    f"limit and every Knative pod that reads this ConfigMap is Burstable; set "
                    f"{missing}: \"{v}\" (or spec.workloads.injection.knativeQueueProxy.{res},"
                    f" which krm-fn writes to both) ({SOURCE})", WARNING, ref,
                    f"data.{missing}"))
            continue
        for key in (req_key, lim_key):
            old = data.get(key)
            parsed = _parse(res, old) if old not in (None, "") else None
            if parsed is not None and parsed.nanos == _parse(res, value).nanos:
                continue
            what = f"{old} -> {value}" if old not in (None, "") else f"set to {value}"
            found.append(edits.set(("data", key), value,
                                   f"{key} {what} ({why}): Knative sizes every revision's "
                                   f"queue-proxy from this key when its pod template has no "
                                   f"queue.sidecar.serving.knative.dev annotation (and "
                                   f"always before knative-v1.11.0); request != limit makes "
                                   f"the pod Burstable ({SOURCE})", INFO))
        whole = _parse(res, value)
        if res == "cpu" and whole is not None and whole.is_integer:
            found.append(Result(
                f"queue-proxy cpu {value} is a whole number: the static CPU Manager gives it "
                f"exclusive CPUs in every Guaranteed Knative pod; set a fractional value "
                f"such as {whole.nanos // quantity.NANO * 1000 - 100}m to keep it in the shared "
                f"pool "
                f"(https://kubernetes.io/docs/tasks/administer-cluster/"
                f"cpu-management-policies/)", WARNING, ref, f"data.{req_key}"))
    return edits.changes, found
