"""The input's objects the API server refuses to create whose fields the verdict would
read (admission/apiobjects.py: a ResourceQuota, a HorizontalPodAutoscaler, a Namespace):
an error on each, naming the object and the first field refused, with every error in the
API server's words. InjectionContext.from_items leaves them out, so none counts, scales or
labels a pod of the render.
"""
from __future__ import annotations

from krm_fn.admission import apiobjects
from krm_fn.pipeline.select import ref_of
from krm_fn.results import ERROR, Result

TAGS = (("rule", "verdict"), ("part", "refused-object"))


def check(items: list, cfg) -> list:
    """ERROR Results for each object of `items` (plain objects) that
    apiobjects.errors refuses on a cluster of the loaded config `cfg`'s
    spec.kubernetesVersion ((1, minor)), in input order."""
    minor = cfg.kubernetesVersion[1]
    out = []
    for obj in items:
        if obj.__class__ is not dict or obj.get("kind") not in apiobjects.KINDS:
            continue
        bad = apiobjects.errors(obj, minor)
        if bad:
            out.append(_result(obj, bad))
    return out


def _result(obj: dict, bad: list) -> Result:
    """The error for `obj`, refused with the errors `bad`, as `kubectl apply` says it
    (`ResourceQuota "q" is invalid: [...]`)."""
    ref = ref_of(obj)
    kind = ref.kind
    said = bad[0] if len(bad) == 1 else "[" + ", ".join(bad) + "]"
    where = f" of namespace {ref.namespace}" if ref.namespace else ""
    return Result(f"the API server refuses {kind} {ref.name}{where} ({kind} \"{ref.name}\" "
                  f"is invalid: {said}): it is never created, so {apiobjects.WHAT[kind]}; "
                  f"fix the {kind} ({apiobjects.SOURCES[kind]})", ERROR, ref,
                  bad[0].partition(":")[0], tags=TAGS)
