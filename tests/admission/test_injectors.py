"""The injector registry (krm_fn/admission/injectors): for each injector, every trigger
(fires, explicit opt-out, nothing visible, Namespace-triggered), the exact containers and
resources it adds (defaults, from annotations, from a controlling object in the input),
and the fix text."""
from krm_fn.quantity import MILLI, NANO
from types import SimpleNamespace

import pytest

from krm_fn.admission import model
from krm_fn.admission import injectors as inj
from krm_fn.admission.injectors import (dapr, gcsfuse, istio, kserve_agent, kuberay, linkerd,
                                        otel_collector, otel_instrumentation, queue_proxy,
                                        storage_initializer, vault)
from krm_fn.admission.injectors.base import InjectionContext, Meta

MI, GI = 1 << 20, 1 << 30
EMPTY = InjectionContext()


def C(name, role, req, lim, source):
    """A model.Container with cpu in millicores and memory in MiB for brevity."""
    conv = {"cpu": lambda v: v * MILLI, "memory": lambda v: v * MI}
    return model.Container(name, role, {k: conv[k](v) for k, v in req.items()},
                           {k: conv[k](v) for k, v in lim.items()}, source)


def ns(name="ml", labels=None, annotations=None) -> dict:
    md = {"name": name}
    if labels is not None:
        md["labels"] = labels
    if annotations is not None:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}


def meta(ann=None, labels=None, ns_labels=None, ns_ann=None, **kw) -> Meta:
    return Meta(dict(ann or {}), dict(labels or {}), ns_labels=ns_labels, ns_annotations=ns_ann,
                namespace="ml", **kw)


def cm(name, namespace, data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": data}


# --- registry -----------------------------------------------------------------------------

def test_registry_order_and_annotated_injectors():
    assert [m.ID for m in inj.INJECTORS] == [
        "istio", "linkerd", "queue_proxy", "vault", "dapr", "storage_initializer",
        "kserve_agent", "otel_instrumentation", "otel_collector", "gcsfuse", "kuberay"]
    assert [m.KEY for m in inj.ANNOTATED] == [
        "istio", "linkerd", "knativeQueueProxy", "vault", "dapr", "gcsfuse"]
    assert inj.by_id("gcsfuse") is gcsfuse


def test_injector_names_are_their_module_names_and_ids():
    assert inj.NAMES == tuple(inj.WHEN)
    assert [m.__name__.rsplit(".", 1)[1] for m in inj.INJECTORS] == list(inj.NAMES)
    assert [m.ID for m in inj.INJECTORS] == list(inj.NAMES)
    with pytest.raises(KeyError):
        inj.by_id("base")


def _key_like(module) -> list:
    """The annotation and label names a module spells out (its str constants with a `/`, a
    `.` or a `-`), tuples and prefixes included."""
    out = []
    for v in vars(module).values():
        for s in (v if isinstance(v, tuple) else (v,)):
            if isinstance(s, str) and " " not in s and any(c in s for c in "/.-"):
                out.append(s)
    return out


def _metas(seed: int, count: int):
    """Metas built at random from every key the injector modules spell out, the WHEN
    keys and prefixes (with suffixes for the prefixes), values that turn injectors on or
    off, platforms, kinds and KubeRay groups."""
    import random
    rnd = random.Random(seed)
    keys = sorted({k for m in inj.INJECTORS for k in _key_like(m)}
                  | {k + s for w in inj.WHEN.values() for k in w.annotations + w.ns_annotations
                     for s in ("", "java", "python", "go")})
    values = ["true", "True", "false", "enabled", "disabled", "ingress", "yes", "y", "on", "1",
              "0", "", "ambient", "default", "canary", "ml/inst", "Knative", "Standard",
              "gs://b/m", "pvc://c/m"]

    def pick():
        return {rnd.choice(keys): rnd.choice(values) for _ in range(rnd.randint(0, 3))}

    for _ in range(count):
        spec = rnd.choice([{}, {"storageUri": "gs://b/m"}, {"logger": {"mode": "all"}},
                           {"batcher": {}}, {"model": {"storageUri": "s3://b/m"}}])
        group = rnd.choice([None, None, "head", "worker"])
        yield meta(pick(), pick(), rnd.choice([None, {}, pick()]), rnd.choice([None, {}, pick()]),
                   platform=rnd.choice([None, None, "kserve", "knative", "seldon"]),
                   kind=rnd.choice(["Deployment", "InferenceService", "Service", "RayCluster"]),
                   host_network=rnd.random() < 0.1, spec=spec, owner_annotations=pick(),
                   ray_group=group, ray_cluster={"enableInTreeAutoscaling": "true"}
                   if group else {}, ray_cluster_path="spec" if group else "")


def test_no_injector_fires_without_what_WHEN_says_it_needs():
    """WHEN, the data a render checks before it imports an injector, must hold every way
    the injector's own trigger can fire: across many metadata built from every key the
    modules spell out, a trigger returns True only when may_fire says it may, and each
    injector fires for some (so the check is not empty)."""
    fired = dict.fromkeys(inj.NAMES, 0)
    for m in _metas(11, 6000):
        for name in inj.NAMES:
            on, _ = inj.module(name).trigger(m)
            if on is True:
                assert inj.may_fire(name, m), (name, m)
                fired[name] += 1
    assert all(fired.values()), fired


def test_may_any_is_may_fire_of_some_injector():
    """may_any (one check of every injector's WHEN at once) is True exactly when may_fire
    is for some injector, on metadata built from every key the modules spell out."""
    seen = {True: 0, False: 0}
    for m in _metas(11, 3000):
        some = any(inj.may_fire(name, m) for name in inj.NAMES)
        assert inj.may_any(m) == some, m
        seen[some] += 1
    assert seen[True] and seen[False], seen


def test_injections_skip_only_what_cannot_fire():
    """candidates() leaves out an injector only when it cannot fire: injections() equals
    the same loop over every injector, for auto, never and always modes."""
    from krm_fn import config
    for mode in ("auto", "always", "never"):
        cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                           "spec": {"workloads": {"injection": {
            "istio": {"mode": mode}, "dapr": {"mode": "always" if mode == "never" else "auto"}}}}})
        ctx = InjectionContext(injection=cfg.workloads.injection)
        for m in _metas(5, 400):
            full = []
            for mod in inj.INJECTORS:
                conf = getattr(ctx.injection, getattr(mod, "KEY", ""), None)
                if conf is not None and conf.mode == "never":
                    continue
                on, _ = mod.trigger(m)
                if on or (on is None and conf is not None and conf.mode == "always"):
                    if mod.containers(m, ctx):
                        full.append(mod.ID)
            assert [i.injector for i in inj.injections(m, ctx)] == full, (mode, m)


def test_every_injector_module_documents_itself():
    for m in inj.INJECTORS:
        assert all(h in (m.__doc__ or "") for h in ("**When it fires", "**What it adds", "**Resources"))
        assert m.TITLE and callable(m.trigger) and callable(m.containers) and callable(m.fix)


def test_injections_istio_defaults_not_guaranteed_with_fix():
    got = inj.injections(meta(labels={"sidecar.istio.io/inject": "true"}), EMPTY)
    assert len(got) == 1
    i = got[0]
    assert (i.injector, i.title, i.why, i.guaranteed) == (
        "istio", "Istio istio-proxy", "label sidecar.istio.io/inject=true", False)
    assert i.containers == (
        C("istio-init", model.INIT, {"cpu": 100, "memory": 128}, {"cpu": 2000, "memory": 1024},
          "istio"),
        C("istio-proxy", model.SIDECAR, {"cpu": 100, "memory": 128},
          {"cpu": 2000, "memory": 1024}, "istio"))
    assert i.fix == (
        "set the pod template annotations sidecar.istio.io/proxyCPU, "
        "sidecar.istio.io/proxyCPULimit, sidecar.istio.io/proxyMemory, "
        "sidecar.istio.io/proxyMemoryLimit with sidecar.istio.io/proxyCPU == "
        "sidecar.istio.io/proxyCPULimit and sidecar.istio.io/proxyMemory == "
        "sidecar.istio.io/proxyMemoryLimit (or spec.workloads.injection.istio cpu and "
        "memory, which krm-fn writes there); istio-init and istio-proxy both take them")


def test_injections_modes_never_and_always():
    never = SimpleNamespace(istio=SimpleNamespace(mode="never"))
    assert inj.injections(meta(labels={"sidecar.istio.io/inject": "true"}),
                          InjectionContext(injection=never)) == ()
    always = SimpleNamespace(dapr=SimpleNamespace(mode="always"))
    got = inj.injections(meta(), InjectionContext(injection=always))
    assert [(i.injector, i.why) for i in got] == [
        ("dapr", "spec.workloads.injection.dapr.mode is always")]
    # an explicit opt-out wins over always
    assert inj.injections(meta({"dapr.io/enabled": "false"}),
                          InjectionContext(injection=always)) == ()


def test_injections_nothing_visible_is_empty():
    assert inj.injections(meta(), EMPTY) == ()


def test_context_from_items_collects_controlling_objects():
    items = [ns("ml"), cm("config-deployment", "knative-serving", {}),
             {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
              "metadata": {"name": "s3"}},
             {"apiVersion": "opentelemetry.io/v1alpha1", "kind": "Instrumentation",
              "metadata": {"name": "i", "namespace": "ml"}},
             {"apiVersion": "opentelemetry.io/v1beta1", "kind": "OpenTelemetryCollector",
              "metadata": {"name": "c", "namespace": "ml"}},
             {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}]
    ctx = InjectionContext.from_items(items)
    assert list(ctx.namespaces) == ["ml"]
    assert list(ctx.configmaps) == [("knative-serving", "config-deployment")]
    assert [s["metadata"]["name"] for s in ctx.storage_containers] == ["s3"]
    assert list(ctx.instrumentations) == [("ml", "i")]
    assert list(ctx.collectors) == [("ml", "c")]
    assert ctx.namespace_meta("ml") == ({}, {})
    assert ctx.namespace_meta("other") == (None, None)


# --- istio --------------------------------------------------------------------------------

@pytest.mark.parametrize("m, want", [
    (meta(labels={"sidecar.istio.io/inject": "true"}),
     (True, "label sidecar.istio.io/inject=true")),
    (meta({"sidecar.istio.io/inject": "true"}), (True, "annotation sidecar.istio.io/inject=true")),
    # hostile testing: only `true` and `false` decide (inject.go injectRequired from 1.27);
    # any other value falls back to the policy: in an injected namespace, a sidecar
    (meta({"sidecar.istio.io/inject": "yes"}), (None, None)),
    (meta(labels={"sidecar.istio.io/inject": "no"}, ns_labels={"istio-injection": "enabled"}),
     (True, "namespace ml label istio-injection=enabled")),
    (meta({"sidecar.istio.io/inject": "False"}, ns_labels={"istio-injection": "enabled"}),
     (True, "namespace ml label istio-injection=enabled")),
    # the object webhook's selector is `In ["true"]`, case-sensitive: "True" calls nothing
    (meta(labels={"sidecar.istio.io/inject": "True"}, ns_labels={"team": "a"}), (None, None)),
    (meta({"sidecar.istio.io/inject": "true"}, {"sidecar.istio.io/inject": "false"}),
     (False, "label sidecar.istio.io/inject=false")),
    (meta(), (None, None)),
    (meta(ns_labels={"istio-injection": "enabled"}),
     (True, "namespace ml label istio-injection=enabled")),
    (meta({"sidecar.istio.io/inject": "false"}, ns_labels={"istio-injection": "enabled"}),
     (False, "annotation sidecar.istio.io/inject=false")),
    (meta(labels={"sidecar.istio.io/inject": "true"}, ns_labels={"istio-injection": "disabled"}),
     (False, "namespace ml label istio-injection=disabled")),
    (meta(ns_labels={"istio.io/rev": "canary"}), (True, "namespace ml label istio.io/rev=canary")),
    (meta(labels={"istio.io/rev": "canary"}), (True, "label istio.io/rev=canary")),
    (meta(ns_labels={"istio.io/dataplane-mode": "ambient"}),
     (False, "namespace ml label istio.io/dataplane-mode=ambient (ambient mode: no sidecar)")),
    (meta(labels={"sidecar.istio.io/inject": "true"}, host_network=True),
     (False, "hostNetwork: true (Istio never injects such pods)")),
    (meta(labels={"sidecar.istio.io/inject": "true"}, ns_labels={}),
     (True, "label sidecar.istio.io/inject=true")),
    (meta({"sidecar.istio.io/inject": "true"}, ns_labels={}),
     (False, "annotation sidecar.istio.io/inject=true, but namespace ml has no "
             "istio-injection or istio.io/rev label and the pod no sidecar.istio.io/inject "
             "label, so Istio's webhook is not called")),
], ids=["label", "annotation", "annotation-yes", "label-no-in-enabled-namespace",
        "annotation-False-in-enabled-namespace", "label-True-in-unlabelled-namespace",
        "label-over-annotation", "nothing", "namespace-label",
        "pod-opt-out-in-enabled-namespace", "namespace-disabled", "namespace-revision",
        "pod-revision", "ambient", "host-network", "label-in-unlabelled-namespace",
        "annotation-alone-in-unlabelled-namespace"])
def test_istio_triggers(m, want):
    assert istio.trigger(m) == want


def test_istio_annotations_alone_size_both_containers_native_sidecar():
    a = {"sidecar.istio.io/proxyCPU": "500m", "sidecar.istio.io/proxyCPULimit": "500m",
         "sidecar.istio.io/proxyMemory": "256Mi", "sidecar.istio.io/proxyMemoryLimit": "256Mi",
         "sidecar.istio.io/nativeSidecar": "true"}
    got = istio.containers(meta(a), EMPTY)
    assert got == (C("istio-init", model.INIT, {"cpu": 500, "memory": 256},
                     {"cpu": 500, "memory": 256}, "istio"),
                   C("istio-proxy", model.SIDECAR, {"cpu": 500, "memory": 256},
                     {"cpu": 500, "memory": 256}, "istio"))
    assert istio.fix(meta(a), EMPTY, got) == ""


def test_istio_one_annotation_leaves_the_others_unset():
    got = istio.containers(meta({"sidecar.istio.io/proxyCPU": "1"}), EMPTY)
    assert got[1] == C("istio-proxy", model.SIDECAR, {"cpu": 1000}, {}, "istio")


def test_istio_native_sidecar_unless_the_annotation_turns_it_off():
    """ENABLE_NATIVE_SIDECARS `auto` turns native sidecars on where every kubelet is 1.33 or
    newer, as every supported one is; the pod annotation wins."""
    assert istio.containers(meta(), EMPTY)[1].role == model.SIDECAR
    off = meta({"sidecar.istio.io/nativeSidecar": "false"})
    assert istio.containers(off, EMPTY)[1].role == model.APP
    on = meta({"sidecar.istio.io/nativeSidecar": "true"})
    assert istio.containers(on, EMPTY)[1].role == model.SIDECAR


def test_istio_interception_mode_none_adds_no_init_container():
    got = istio.containers(meta({"sidecar.istio.io/interceptionMode": "NONE"}), EMPTY)
    assert [(c.name, c.role) for c in got] == [("istio-proxy", model.SIDECAR)]


# --- knative queue-proxy ------------------------------------------------------------------

def test_queue_proxy_triggers():
    assert queue_proxy.trigger(meta(platform="knative", kind="Service")) == (
        True, "every Knative revision runs a queue-proxy")
    isvc = dict(platform="kserve", kind="InferenceService")
    assert queue_proxy.trigger(meta(**isvc)) == (
        True, "KServe: no serving.kserve.io/deploymentMode annotation, so Serverless is "
              "assumed")
    raw = Meta(owner_annotations={"serving.kserve.io/deploymentMode": "RawDeployment"}, **isvc)
    assert queue_proxy.trigger(raw) == (
        False, "annotation serving.kserve.io/deploymentMode=RawDeployment")
    assert queue_proxy.trigger(meta(platform="kserve", kind="ServingRuntime")) == (None, None)
    assert queue_proxy.trigger(meta()) == (None, None)


def test_queue_proxy_defaults_cpu_request_only():
    m = meta(platform="knative")
    got = queue_proxy.containers(m, EMPTY)
    assert got == (C("queue-proxy", model.APP, {"cpu": 25}, {}, "queue_proxy"),)
    assert queue_proxy.fix(m, EMPTY, got) == (
        "set the pod template annotations "
        "queue.sidecar.serving.knative.dev/cpu-resource-request, "
        "queue.sidecar.serving.knative.dev/cpu-resource-limit, "
        "queue.sidecar.serving.knative.dev/memory-resource-request, "
        "queue.sidecar.serving.knative.dev/memory-resource-limit with request == limit (or "
        "spec.workloads.injection.knativeQueueProxy cpu and memory, which krm-fn writes "
        "there; Knative 1.11 or newer), or the keys queue-sidecar-cpu-request, "
        "queue-sidecar-cpu-limit, queue-sidecar-memory-request, queue-sidecar-memory-limit "
        "with request == limit in ConfigMap knative-serving/config-deployment")


def test_queue_proxy_feature_defaults():
    ctx = InjectionContext.from_items(
        [cm("config-features", "knative-serving", {"queueproxy.resource-defaults": "enabled"})])
    assert queue_proxy.containers(meta(platform="knative"), ctx) == (
        C("queue-proxy", model.APP, {"cpu": 25, "memory": 400},
          {"cpu": 1000, "memory": 800}, "queue_proxy"),)


def test_queue_proxy_configmap_then_annotations_win():
    ctx = InjectionContext.from_items([cm("config-deployment", "knative-serving", {
        "queue-sidecar-cpu-request": "250m", "queue-sidecar-cpu-limit": "250m",
        "queue-sidecar-memory-request": "64Mi", "queue-sidecar-memory-limit": "64Mi"})])
    m = meta(platform="knative")
    got = queue_proxy.containers(m, ctx)
    assert got == (C("queue-proxy", model.APP, {"cpu": 250, "memory": 64},
                     {"cpu": 250, "memory": 64}, "queue_proxy"),)
    assert queue_proxy.fix(m, ctx, got) == ""
    m2 = meta({"queue.sidecar.serving.knative.dev/cpu-resource-limit": "1"}, platform="knative")
    got2 = queue_proxy.containers(m2, ctx)
    assert got2[0].limits["cpu"] == NANO and got2[0].requests["cpu"] == 250 * MILLI
    assert queue_proxy.fix(m2, ctx, got2).endswith(
        "in ConfigMap knative-serving/config-deployment in this input")


_USER = {"containers": [{"name": "sidecar", "image": "s:1"},
                        {"name": "server", "image": "m:1", "ports": [{"containerPort": 8080}],
                         "resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                                       "limits": {"cpu": "4", "memory": "8Gi"}}}]}
_PCT = "queue.sidecar.serving.knative.dev/resource-percentage"


def test_queue_proxy_resource_percentage_scales_and_clamps_the_user_containers():
    # hostile testing: the percentage was not modelled, so a pod whose queue-proxy gets
    # request != limit from it was judged by the ConfigMap's equal values
    # (queue.go createQueueResources: the ConfigMap, then the percentage of the user
    # container's, the one with ports, clamped by resourceboundary.go, then the annotations)
    ctx = InjectionContext.from_items([cm("config-deployment", "knative-serving", {
        "queue-sidecar-cpu-request": "100m", "queue-sidecar-cpu-limit": "100m",
        "queue-sidecar-memory-request": "128Mi", "queue-sidecar-memory-limit": "128Mi"})])
    got = queue_proxy.containers(meta({_PCT: "10"}, platform="knative", spec=_USER), ctx)
    assert got == (C("queue-proxy", model.APP, {"cpu": 100, "memory": 200},
                     {"cpu": 400, "memory": 500}, "queue_proxy"),)
    got = queue_proxy.containers(meta({_PCT: "0.5"}, platform="knative", spec=_USER), ctx)
    assert got == (C("queue-proxy", model.APP, {"cpu": 25, "memory": 50},
                     {"cpu": 40, "memory": 200}, "queue_proxy"),)
    # NaN and Inf are numbers to strconv.ParseFloat: every amount goes to its maximum
    # (hostile testing: they were not read, so the ConfigMap's equal values were)
    for odd in ("NaN", "Inf", "+infinity"):
        got = queue_proxy.containers(meta({_PCT: odd}, platform="knative", spec=_USER), ctx)
        assert got == (C("queue-proxy", model.APP, {"cpu": 100, "memory": 200},
                         {"cpu": 500, "memory": 500}, "queue_proxy"),), odd
    # a request a fraction of a byte below 200Mi is not the 200Mi limit (Knative keeps
    # milli-units: 209715199980m against 200Mi)
    odd_user = {"containers": [{"name": "server", "image": "m:1", "resources": {
        "requests": {"cpu": "4", "memory": "10485759999"},
        "limits": {"cpu": "4", "memory": "10485759999"}}}]}
    [qp] = queue_proxy.containers(meta({_PCT: "2"}, platform="knative", spec=odd_user), ctx)
    assert qp.requests["memory"] == 200 * MI - 1 and qp.limits["memory"] == 200 * MI
    # the four annotations win over the percentage; a percentage that is no number is not
    # read, nor one over a user container without resources
    four = {_PCT: "10", **{f"queue.sidecar.serving.knative.dev/{r}-resource-{p}": v
                           for r, v in (("cpu", "250m"), ("memory", "64Mi"))
                           for p in ("request", "limit")}}
    assert queue_proxy.containers(meta(four, platform="knative", spec=_USER), ctx) == (
        C("queue-proxy", model.APP, {"cpu": 250, "memory": 64}, {"cpu": 250, "memory": 64},
          "queue_proxy"),)
    for m in (meta({_PCT: "ten"}, platform="knative", spec=_USER),
              meta({_PCT: "10"}, platform="knative", spec={"containers": [{"name": "x"}]})):
        assert queue_proxy.containers(m, ctx) == (
            C("queue-proxy", model.APP, {"cpu": 100, "memory": 128},
              {"cpu": 100, "memory": 128}, "queue_proxy"),)


# --- KServe -------------------------------------------------------------------------------

def kmeta(spec, **kw) -> Meta:
    return Meta(platform="kserve", kind="InferenceService", namespace="ml", spec=spec,
                container_keys=("model",), **kw)


def test_storage_initializer_triggers():
    assert storage_initializer.trigger(kmeta({"model": {"storageUri": "s3://b/m"}})) == (
        True, "the pod has a storageUri")
    env = {"containers": [{"name": "c", "env": [{"name": "STORAGE_URI", "value": "gs://x"}]}]}
    assert storage_initializer.trigger(kmeta(env))[0] is True
    own = {"model": {"storageUri": "s3://b/m"},
           "initContainers": [{"name": "storage-initializer"}]}
    assert storage_initializer.trigger(kmeta(own)) == (
        False, "the pod has its own init container storage-initializer")
    assert storage_initializer.trigger(kmeta({"model": {}})) == (None, None)
    assert storage_initializer.trigger(meta(spec={"storageUri": "s3://x"})) == (None, None)


def test_storage_initializer_defaults_and_fix():
    m = kmeta({"model": {"storageUri": "s3://b/m"}})
    got = storage_initializer.containers(m, EMPTY)
    assert got == (C("storage-initializer", model.INIT, {"cpu": 100, "memory": 100},
                     {"cpu": 1000, "memory": 1024}, "storage_initializer"),)
    assert storage_initializer.fix(m, EMPTY, got) == (
        "set cpuRequest == cpuLimit and memoryRequest == memoryLimit under key "
        "storageInitializer of ConfigMap kserve/inferenceservice-config, and equal requests "
        "and limits in spec.container.resources of the ClusterStorageContainer that serves "
        "this URI (merged on top); or let krm-fn make them request == limit (it changes "
        "only the objects of the input that spec.selector selects): ConfigMap "
        "kserve/inferenceservice-config: put it in the input; ClusterStorageContainer "
        "default: put it in the input (KServe's install creates it)")


def _selector(**parts):
    from krm_fn import config
    return config.load({"apiVersion": config.API_VERSION, "kind": config.KIND,
                        "metadata": {"name": "p"}, "spec": {"selector": parts}}).selector


def test_storage_initializer_fix_names_what_spec_selector_must_add():
    from krm_fn.pipeline.select import untuned_because
    m = kmeta({"model": {"storageUri": "s3://b/m"}})
    csc = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
           "metadata": {"name": "default"},
           "spec": {"container": {"name": "storage-initializer", "resources": {
               "requests": {"cpu": "100m", "memory": "100Mi"},
               "limits": {"cpu": "1", "memory": "1Gi"}}},
               "supportedUriFormats": [{"prefix": "s3://"}]}}
    sel = _selector(kinds=["Deployment", "InferenceService"], namespaces=["serving"])
    ctx = InjectionContext.from_items([csc])._replace(untuned=lambda o: untuned_because(o, sel))
    got = storage_initializer.containers(m, ctx)
    assert storage_initializer.fix(m, ctx, got).endswith(
        "(merged on top); or let krm-fn make them request == limit (it changes only the "
        "objects of the input that spec.selector selects): ConfigMap "
        "kserve/inferenceservice-config: put it in the input, add ConfigMap to "
        "spec.selector.kinds, add kserve to spec.selector.namespaces; "
        "ClusterStorageContainer default: add ClusterStorageContainer to "
        "spec.selector.kinds, add \"\" to spec.selector.namespaces (it is cluster-scoped, "
        "which counts as namespace default there)")
    # an empty selector selects the ClusterStorageContainer: only the ConfigMap is left
    ctx = ctx._replace(untuned=lambda o: untuned_because(o, _selector()))
    assert storage_initializer.fix(m, ctx, got).endswith(
        "spec.selector selects): ConfigMap kserve/inferenceservice-config: put it in the "
        "input")


def test_untuned_because_asks_each_part_of_the_selector():
    from krm_fn.pipeline.select import untuned_because
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "inferenceservice-config", "namespace": "kserve",
                       "annotations": {"krm-fn.dev/skip": "true"}}}
    sel = _selector(kinds=["Deployment"], names=["x"], namespaces=["kserve"],
                    matchLabels={"a": "b"})
    assert untuned_because(cm, sel) == [
        "add ConfigMap to spec.selector.kinds", "add inferenceservice-config to "
        "spec.selector.names", "give it the labels of spec.selector.matchLabels",
        "remove its krm-fn.dev/skip annotation"]
    assert untuned_because({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "c"}}, _selector()) == []
    local = {**cm, "metadata": {**cm["metadata"], "annotations": {
        "config.kubernetes.io/local-config": "true"}}}
    assert untuned_because(local, sel) == [
        "it is local-config (config.kubernetes.io/local-config), which krm-fn leaves "
        "unchanged and kustomize and kpt leave out of their output: drop that annotation"]


def test_storage_initializer_configmap_and_storage_container_on_top():
    conf = ('{"cpuRequest": "500m", "cpuLimit": "500m", "memoryRequest": "1Gi", '
            '"memoryLimit": "1Gi"}')
    csc = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
           "metadata": {"name": "s3"},
           "spec": {"container": {"name": "storage-initializer", "resources": {
               "requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}},
               "supportedUriFormats": [{"prefix": "s3://"}]}}
    # KServe's own `default` (it serves s3:// too) is in the input, fixed: else KServe may
    # take it instead of `s3` (test_storage_initializer_any_serving_storage_container_may_be_used)
    default = {**csc, "metadata": {"name": "default"}}
    ctx = InjectionContext.from_items(
        [cm("inferenceservice-config", "kserve", {"storageInitializer": conf}), csc, default])
    m = kmeta({"model": {"storageUri": "s3://b/m"}})
    got = storage_initializer.containers(m, ctx)
    assert got == (C("storage-initializer", model.INIT, {"cpu": 500, "memory": 2048},
                     {"cpu": 500, "memory": 2048}, "storage_initializer"),)
    assert storage_initializer.fix(m, ctx, got) == ""
    gs = kmeta({"model": {"storageUri": "gs://b/m"}})    # the CSC does not serve gs://
    assert storage_initializer.containers(gs, ctx)[0].limits["memory"] == GI


def test_storage_initializer_any_serving_storage_container_may_be_used():
    # KServe takes the first ClusterStorageContainer of an unordered list that serves the
    # URI: its install's `default` serves hf:// too, with 100m/1 cpu and 100Mi/1Gi
    hf = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
          "metadata": {"name": "hf-hub"},
          "spec": {"container": {"name": "storage-initializer", "resources": {
              "requests": {"cpu": "500m", "memory": "1Gi"},
              "limits": {"cpu": "500m", "memory": "1Gi"}}},
              "supportedUriFormats": [{"prefix": "hf://"}]}}
    m = kmeta({"model": {"storageUri": "hf://Qwen/Qwen2.5"}})
    ctx = InjectionContext.from_items([hf])
    got = storage_initializer.containers(m, ctx)
    assert got == (C("storage-initializer", model.INIT, {"cpu": 100, "memory": 100},
                     {"cpu": 1000, "memory": 1024}, "storage_initializer"),)
    assert storage_initializer.fix(m, ctx, got) == (
        "the ClusterStorageContainers hf-hub, default all serve this URI and KServe uses "
        "whichever it lists first (no fixed order), so give every one of them requests == "
        "limits in spec.container.resources, or set spec.disabled: true on the ones that "
        "should not serve it; or let krm-fn make it request == limit (it changes only the "
        "objects of the input that spec.selector selects): ClusterStorageContainer default: "
        "put it in the input (KServe's install creates it)")
    disabled = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterStorageContainer",
                "metadata": {"name": "default"}, "spec": {"disabled": "true"}}
    got = storage_initializer.containers(m, InjectionContext.from_items([hf, disabled]))
    assert got == (C("storage-initializer", model.INIT, {"cpu": 500, "memory": 1024},
                     {"cpu": 500, "memory": 1024}, "storage_initializer"),)


def test_kserve_agent():
    m = kmeta({"model": {}, "logger": {"mode": "all"}, "batcher": {}})
    assert kserve_agent.trigger(m) == (True, "the component sets logger and batcher")
    assert kserve_agent.trigger(kmeta({"model": {}})) == (None, None)
    got = kserve_agent.containers(m, EMPTY)
    assert got == (C("agent", model.APP, {"cpu": 100, "memory": 100},
                     {"cpu": 1000, "memory": 1024}, "kserve_agent"),)
    assert kserve_agent.fix(m, EMPTY, got) == (
        "set cpuRequest == cpuLimit and memoryRequest == memoryLimit under the agent, "
        "logger and batcher keys of ConfigMap kserve/inferenceservice-config; or let krm-fn "
        "make it request == limit (it changes only the objects of the input that "
        "spec.selector selects): ConfigMap kserve/inferenceservice-config: put it in the "
        "input")
    ctx = InjectionContext.from_items([cm("inferenceservice-config", "kserve", {
        "agent": '{"cpuRequest": "1", "cpuLimit": "1", "memoryRequest": "1Gi", '
                 '"memoryLimit": "1Gi"}'})])
    assert kserve_agent.containers(m, ctx)[0].requests == {"cpu": NANO, "memory": GI}
    assert kserve_agent.fix(m, ctx, kserve_agent.containers(m, ctx)) == ""


# --- linkerd ------------------------------------------------------------------------------

@pytest.mark.parametrize("m, want", [
    (meta({"linkerd.io/inject": "enabled"}), (True, "annotation linkerd.io/inject=enabled")),
    (meta({"linkerd.io/inject": "ingress"}), (True, "annotation linkerd.io/inject=ingress")),
    (meta({"linkerd.io/inject": "disabled"}), (False, "annotation linkerd.io/inject=disabled")),
    (meta(), (None, None)),
    (meta(ns_ann={"linkerd.io/inject": "enabled"}),
     (True, "namespace ml annotation linkerd.io/inject=enabled")),
    (meta({"linkerd.io/inject": "disabled"}, ns_ann={"linkerd.io/inject": "enabled"}),
     (False, "annotation linkerd.io/inject=disabled")),
    (meta({"linkerd.io/inject": "enabled"}, ns_ann={"linkerd.io/inject": "disabled"}),
     (True, "annotation linkerd.io/inject=enabled")),
    (meta(ns_ann={"linkerd.io/inject": "disabled"}),
     (False, "namespace ml annotation linkerd.io/inject=disabled")),
    (meta(labels={"linkerd.io/inject": "enabled"}), (None, None)),
    # hostile testing: an invalid value anywhere disables injection (report.go
    # disabledByAnnotation), even with the pod's enabled
    (meta({"linkerd.io/inject": "enabled"}, ns_ann={"linkerd.io/inject": "true"}),
     (False, "namespace ml annotation linkerd.io/inject=true, which is not enabled, "
             "disabled or ingress: Linkerd injects nothing")),
    (meta({"linkerd.io/inject": "yes"}, ns_ann={"linkerd.io/inject": "enabled"}),
     (False, "annotation linkerd.io/inject=yes, which is not enabled, disabled or ingress: "
             "Linkerd injects nothing")),
], ids=["pod", "ingress", "pod-disabled", "nothing", "namespace", "pod-opt-out-in-namespace",
        "pod-over-disabled-namespace", "namespace-disabled", "label-is-not-a-trigger",
        "invalid-namespace-value", "invalid-pod-value"])
def test_linkerd_triggers(m, want):
    assert linkerd.trigger(m) == want


def test_linkerd_defaults_are_empty_and_fix():
    m = meta({"linkerd.io/inject": "enabled"})
    got = linkerd.containers(m, EMPTY)
    assert got == (C("linkerd-init", model.INIT, {}, {}, "linkerd"),
                   C("linkerd-proxy", model.APP, {}, {}, "linkerd"))
    assert linkerd.fix(m, EMPTY, got) == (
        "set the pod template annotations config.linkerd.io/proxy-cpu-request, "
        "config.linkerd.io/proxy-cpu-limit, config.linkerd.io/proxy-memory-request, "
        "config.linkerd.io/proxy-memory-limit with request == limit (or "
        "spec.workloads.injection.linkerd cpu and memory, which krm-fn writes there), or the "
        "same annotations on the Namespace")


def test_linkerd_pod_annotations_over_namespace_annotations_native():
    p = "config.linkerd.io/"
    m = meta({p + "proxy-cpu-request": "200m", p + "proxy-cpu-limit": "200m",
              "config.alpha.linkerd.io/proxy-enable-native-sidecar": "true"},
             ns_ann={p + "proxy-cpu-request": "1", p + "proxy-memory-request": "64Mi",
                     p + "proxy-memory-limit": "64Mi"})
    got = linkerd.containers(m, EMPTY)
    assert got == (C("linkerd-init", model.INIT, {"cpu": 200, "memory": 64},
                     {"cpu": 200, "memory": 64}, "linkerd"),
                   C("linkerd-proxy", model.SIDECAR, {"cpu": 200, "memory": 64},
                     {"cpu": 200, "memory": 64}, "linkerd"))
    assert linkerd.fix(m, EMPTY, got) == ""


# --- vault --------------------------------------------------------------------------------

def test_vault_triggers():
    assert vault.trigger(meta({"vault.hashicorp.com/agent-inject": "true"})) == (
        True, "annotation vault.hashicorp.com/agent-inject=true")
    assert vault.trigger(meta({"vault.hashicorp.com/agent-inject": "no"})) == (
        False, "annotation vault.hashicorp.com/agent-inject=no")
    assert vault.trigger(meta()) == (None, None)
    assert vault.trigger(meta(ns_ann={"vault.hashicorp.com/agent-inject": "true"})) == (
        None, None)


def test_vault_defaults_init_and_agent():
    m = meta({"vault.hashicorp.com/agent-inject": "true"})
    got = vault.containers(m, EMPTY)
    want = ({"cpu": 250, "memory": 64}, {"cpu": 500, "memory": 128})
    assert got == (C("vault-agent-init", model.INIT, *want, "vault"),
                   C("vault-agent", model.APP, *want, "vault"))
    assert vault.fix(m, EMPTY, got) == (
        "set the pod template annotations vault.hashicorp.com/agent-requests-cpu, "
        "vault.hashicorp.com/agent-limits-cpu, vault.hashicorp.com/agent-requests-mem, "
        "vault.hashicorp.com/agent-limits-mem with request == limit (or "
        "spec.workloads.injection.vault cpu and memory, which krm-fn writes there)")


def test_vault_annotations_and_pre_populate():
    v = "vault.hashicorp.com/"
    a = {v + "agent-inject": "true", v + "agent-requests-cpu": "250m",
         v + "agent-limits-cpu": "250m", v + "agent-requests-mem": "64Mi",
         v + "agent-limits-mem": "64Mi", v + "agent-pre-populate": "false"}
    got = vault.containers(meta(a), EMPTY)
    assert got == (C("vault-agent", model.APP, {"cpu": 250, "memory": 64},
                     {"cpu": 250, "memory": 64}, "vault"),)
    assert vault.fix(meta(a), EMPTY, got) == ""
    only = vault.containers(meta({v + "agent-pre-populate-only": "true"}), EMPTY)
    assert [c.name for c in only] == ["vault-agent-init"]


_V = "vault.hashicorp.com/"
_VAULT_EQUAL = {_V + "agent-inject": "true", _V + "agent-requests-cpu": "250m",
                _V + "agent-limits-cpu": "250m", _V + "agent-requests-mem": "64Mi",
                _V + "agent-limits-mem": "64Mi"}


def test_vault_json_patch_of_the_resources_is_applied():
    # hostile testing: agent-json-patch (container_sidecar.go, applied after the resources)
    # was ignored, so removing the limits still read as Guaranteed
    gone = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-json-patch":
                                  '[{"op":"remove","path":"/resources/limits"}]'}), EMPTY)
    assert gone == (C("vault-agent-init", model.INIT, {"cpu": 250, "memory": 64},
                      {"cpu": 250, "memory": 64}, "vault"),
                    C("vault-agent", model.APP, {"cpu": 250, "memory": 64}, {}, "vault"))
    init = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-init-json-patch":
                                  '[{"op":"replace","path":"/resources/limits/cpu",'
                                  '"value":"1"}]'}), EMPTY)
    assert init[0] == C("vault-agent-init", model.INIT, {"cpu": 250, "memory": 64},
                        {"cpu": 1000, "memory": 64}, "vault")
    same = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-json-patch":
                                  '[{"op":"add","path":"/env/-","value":{"name":"A"}}]'}),
                            EMPTY)
    assert vault.fix(meta(_VAULT_EQUAL), EMPTY, same) == ""
    moved = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-json-patch":
                                   '[{"op":"move","from":"/x","path":"/resources/limits"}]'}),
                             EMPTY)
    assert moved[1] == C("vault-agent", model.APP, {}, {}, "vault")
    # a move or copy whose `from` is under /resources (hostile testing: only `path` was
    # read, so moving the limits away still read as Guaranteed)
    away = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-json-patch":
                                  '[{"op":"move","from":"/resources/limits","path":"/x"}]'}),
                            EMPTY)
    assert away[1] == C("vault-agent", model.APP, {"cpu": 250, "memory": 64}, {}, "vault")
    copied = vault.containers(meta({**_VAULT_EQUAL, _V + "agent-requests-cpu": "100m",
                                    _V + "agent-json-patch":
                                    '[{"op":"copy","from":"/resources/limits",'
                                    '"path":"/resources/requests"}]'}), EMPTY)
    assert copied[1] == C("vault-agent", model.APP, {"cpu": 250, "memory": 64},
                          {"cpu": 250, "memory": 64}, "vault")


def test_vault_pod_already_injected_gets_nothing():
    assert vault.trigger(meta({**_VAULT_EQUAL, _V + "agent-inject-status": "injected"})) == (
        False, "annotation vault.hashicorp.com/agent-inject-status=injected (already "
               "injected: nothing more)")


# --- dapr ---------------------------------------------------------------------------------

def test_dapr():
    assert dapr.trigger(meta({"dapr.io/enabled": "True"})) == (
        True, "annotation dapr.io/enabled=True")
    assert dapr.trigger(meta({"dapr.io/enabled": "false"})) == (
        False, "annotation dapr.io/enabled=false")
    assert dapr.trigger(meta()) == (None, None)
    m = meta({"dapr.io/enabled": "true"})
    got = dapr.containers(m, EMPTY)
    assert got == (C("daprd", model.APP, {}, {}, "dapr"),)
    assert dapr.fix(m, EMPTY, got) == (
        "set the pod template annotations dapr.io/sidecar-cpu-request, "
        "dapr.io/sidecar-cpu-limit, dapr.io/sidecar-memory-request, "
        "dapr.io/sidecar-memory-limit with request == limit (or "
        "spec.workloads.injection.dapr cpu and memory, which krm-fn writes there)")
    a = {"dapr.io/enabled": "true", "dapr.io/sidecar-cpu-limit": "300m",
         "dapr.io/sidecar-memory-limit": "128Mi"}
    got = dapr.containers(meta(a), EMPTY)      # limits alone: requests default to them
    assert got == (C("daprd", model.APP, {"cpu": 300, "memory": 128},
                     {"cpu": 300, "memory": 128}, "dapr"),)
    assert dapr.fix(meta(a), EMPTY, got) == ""


# --- OpenTelemetry ------------------------------------------------------------------------

J = "instrumentation.opentelemetry.io/inject-java"


def inst(name, spec) -> dict:
    return {"apiVersion": "opentelemetry.io/v1alpha1", "kind": "Instrumentation",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


@pytest.mark.parametrize("m, want", [
    (meta({J: "true"}), (True, f"annotation {J}=true")),
    (meta({J: "false"}), (False, f"annotation {J}=false")),
    (meta(), (None, None)),
    (meta(ns_ann={J: "my-inst"}), (True, f"namespace ml annotation {J}=my-inst")),
    (meta({J: "true"}, ns_ann={J: "my-inst"}), (True, f"namespace ml annotation {J}=my-inst")),
    (meta({J: "false"}, ns_ann={J: "true"}), (False, f"annotation {J}=false")),
], ids=["pod", "pod-false", "nothing", "namespace", "pod-true-takes-namespace-name",
        "pod-opt-out"])
def test_otel_instrumentation_triggers(m, want):
    assert otel_instrumentation.trigger(m) == want


def test_otel_instrumentation_operator_defaults_per_language():
    m = meta({J: "true", "instrumentation.opentelemetry.io/inject-nodejs": "true",
              "instrumentation.opentelemetry.io/inject-go": "true"})
    got = otel_instrumentation.containers(m, EMPTY)
    assert got == (
        C("opentelemetry-auto-instrumentation-java", model.INIT, {"cpu": 50, "memory": 64},
          {"cpu": 500, "memory": 256}, "otel_instrumentation"),
        C("opentelemetry-auto-instrumentation-nodejs", model.INIT, {"cpu": 50, "memory": 128},
          {"cpu": 500, "memory": 256}, "otel_instrumentation"),
        C("opentelemetry-auto-instrumentation", model.APP, {"cpu": 50, "memory": 64},
          {"cpu": 500, "memory": 256}, "otel_instrumentation"))
    assert otel_instrumentation.fix(meta({J: "true"}), EMPTY, got[:1]) == (
        "set spec.java.resources (requests == limits for cpu and memory) in the "
        "Instrumentation of namespace ml; no pod annotation sizes these containers")


def test_otel_instrumentation_from_the_instrumentation_in_the_input():
    res = {"requests": {"cpu": "100m", "memory": "128Mi"},
           "limits": {"cpu": "100m", "memory": "128Mi"}}
    ctx = InjectionContext.from_items([inst("my-inst", {"java": {"resources": res}})])
    m = meta({J: "my-inst"})
    got = otel_instrumentation.containers(m, ctx)
    assert got == (C("opentelemetry-auto-instrumentation-java", model.INIT,
                     {"cpu": 100, "memory": 128}, {"cpu": 100, "memory": 128},
                     "otel_instrumentation"),)
    assert otel_instrumentation.fix(m, ctx, got) == ""
    other = meta({J: "ml/other"})
    assert otel_instrumentation.fix(other, ctx, otel_instrumentation.containers(other, ctx)) \
        == ("set spec.java.resources (requests == limits for cpu and memory) in the "
            "Instrumentation 'ml/other'; no pod annotation sizes these containers")


def test_otel_collector():
    s = "sidecar.opentelemetry.io/inject"
    assert otel_collector.trigger(meta({s: "true"})) == (True, f"annotation {s}=true")
    assert otel_collector.trigger(meta({s: "false"}, ns_ann={s: "true"})) == (
        False, f"annotation {s}=false")
    assert otel_collector.trigger(meta(ns_ann={s: "col"})) == (
        True, f"namespace ml annotation {s}=col")
    assert otel_collector.trigger(meta()) == (None, None)
    m = meta({s: "true"})
    got = otel_collector.containers(m, EMPTY)
    assert got == (C("otc-container", model.APP, {}, {}, "otel_collector"),)
    assert otel_collector.fix(m, EMPTY, got) == (
        "set spec.resources (requests == limits for cpu and memory) in the "
        "OpenTelemetryCollector (mode: sidecar) of namespace ml; no pod annotation sizes "
        "otc-container")
    col = {"apiVersion": "opentelemetry.io/v1beta1", "kind": "OpenTelemetryCollector",
           "metadata": {"name": "col", "namespace": "ml"},
           "spec": {"mode": "sidecar", "resources": {"limits": {"cpu": "200m",
                                                               "memory": "256Mi"}}}}
    ctx = InjectionContext.from_items([col])
    got = otel_collector.containers(m, ctx)
    assert got == (C("otc-container", model.APP, {"cpu": 200, "memory": 256},
                     {"cpu": 200, "memory": 256}, "otel_collector"),)
    assert otel_collector.fix(m, ctx, got) == ""


# --- GKE Cloud Storage FUSE ---------------------------------------------------------------

def test_gcsfuse_triggers():
    assert gcsfuse.trigger(meta({"gke-gcsfuse/volumes": "true"})) == (
        True, "annotation gke-gcsfuse/volumes=true")
    assert gcsfuse.trigger(meta({"gke-gcsfuse/volumes": "False"})) == (
        False, "annotation gke-gcsfuse/volumes=False")
    assert gcsfuse.trigger(meta()) == (None, None)


def test_gcsfuse_defaults_requests_only_native_sidecar():
    m = meta({"gke-gcsfuse/volumes": "true"})
    got = gcsfuse.containers(m, EMPTY)
    assert got == (C("gke-gcsfuse-sidecar", model.SIDECAR, {"cpu": 250, "memory": 256}, {},
                     "gcsfuse"),)
    assert gcsfuse.fix(m, EMPTY, got) == (
        "set the pod template annotations gke-gcsfuse/cpu-limit and gke-gcsfuse/memory-limit "
        "to non-zero values (the requests follow them), or gke-gcsfuse/cpu-request, "
        "gke-gcsfuse/cpu-limit, gke-gcsfuse/memory-request, gke-gcsfuse/memory-limit with "
        "request == limit (or spec.workloads.injection.gcsfuse cpu and memory, which krm-fn "
        "writes there)")
    off = gcsfuse.containers(meta({"gke-gcsfuse/volumes": "true",
                                   "gke-gcsfuse/enable-native-sidecar": "false"}), EMPTY)
    assert off[0].role == model.APP


@pytest.mark.parametrize("ann, req, lim", [
    ({"gke-gcsfuse/cpu-limit": "500m", "gke-gcsfuse/memory-limit": "1Gi"},
     {"cpu": 500, "memory": 1024}, {"cpu": 500, "memory": 1024}),
    ({"gke-gcsfuse/cpu-request": "1", "gke-gcsfuse/memory-request": "512Mi"},
     {"cpu": 1000, "memory": 512}, {"cpu": 1000, "memory": 512}),
    ({"gke-gcsfuse/cpu-limit": "0", "gke-gcsfuse/memory-limit": "0"},
     {"cpu": 250, "memory": 256}, {}),
], ids=["limits-alone", "requests-alone", "zero-limit-keeps-default-request"])
def test_gcsfuse_annotations(ann, req, lim):
    got = gcsfuse.containers(meta({"gke-gcsfuse/volumes": "true", **ann}), EMPTY)
    assert got == (C("gke-gcsfuse-sidecar", model.SIDECAR, req, lim, "gcsfuse"),)


def test_otel_instrumentation_apache_httpd_two_init_containers():
    a = "instrumentation.opentelemetry.io/inject-apache-httpd"
    m = meta({a: "true"})
    got = otel_instrumentation.containers(m, EMPTY)
    want = ({"cpu": 1, "memory": 128}, {"cpu": 500, "memory": 256})
    assert got == (
        C("otel-agent-source-container-clone", model.INIT, *want, "otel_instrumentation"),
        C("otel-agent-attach-apache", model.INIT, *want, "otel_instrumentation"))
    assert otel_instrumentation.fix(m, EMPTY, got) == (
        "set spec.apacheHttpd.resources (requests == limits for cpu and memory) in the "
        "Instrumentation of namespace ml; no pod annotation sizes these containers")


def test_context_for_config_carries_injection():
    from krm_fn import config
    cfg = config.load({"apiVersion": "krm-fn.dev/v1alpha1", "kind": "InferenceTuning",
                       "metadata": {"name": "pin"},
                       "spec": {"workloads": {"injection": {
                           "istio": {"cpu": "500m", "memory": "256Mi", "mode": "never"}}}}})
    ctx = InjectionContext.for_config([ns("ml", {"istio-injection": "enabled"})], cfg)
    assert ctx.injection is cfg.workloads.injection
    m = meta(ns_labels=ctx.namespace_meta("ml")[0])
    assert istio.trigger(m) == (True, "namespace ml label istio-injection=enabled")
    assert inj.injections(m, ctx) == ()          # mode: never


def test_for_pod_reads_the_tuned_pod_template_and_its_namespace():
    from krm_fn.pod import Edits, build_views
    from krm_fn.results import Ref
    from krm_fn.workloads import locations
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": "ml"},
           "spec": {"template": {"metadata": {"annotations": {
               "sidecar.istio.io/proxyCPU": "1", "sidecar.istio.io/proxyCPULimit": "1",
               "sidecar.istio.io/proxyMemory": "1Gi",
               "sidecar.istio.io/proxyMemoryLimit": "1Gi"}},
               "spec": {"containers": [{"name": "s", "image": "s"}]}}}}
    pod = build_views(obj, locations(obj)[0], Ref("apps/v1", "Deployment", "d", "ml"),
                      Edits(obj), [])
    ctx = InjectionContext.from_items([ns("ml", {"istio-injection": "enabled"})])
    got = inj.for_pod(pod, ctx)
    assert [(i.injector, i.why, i.guaranteed, i.fix) for i in got] == [
        ("istio", "namespace ml label istio-injection=enabled", True, "")]
    assert [c.name for c in got[0].containers] == ["istio-init", "istio-proxy"]
    assert got[0].containers[1].limits == {"cpu": NANO, "memory": GI}


# --- KubeRay ----------------------------------------------------------------------------------

def _ray(group, cluster):
    return meta(ray_group=group, ray_cluster=cluster, ray_cluster_path="spec.rayClusterConfig")


def test_kuberay_triggers_autoscaler_on_the_head_and_wait_gcs_ready_on_workers():
    assert kuberay.trigger(_ray("head", {"enableInTreeAutoscaling": "true"})) == (
        True, "spec.rayClusterConfig.enableInTreeAutoscaling is true")
    assert kuberay.trigger(_ray("head", {"enableInTreeAutoscaling": "false"})) == (None, None)
    assert kuberay.trigger(_ray("head", {})) == (None, None)
    assert kuberay.trigger(_ray("worker", {})) == (
        True, "KubeRay adds wait-gcs-ready to every worker pod")
    assert kuberay.trigger(meta()) == (None, None)


def test_kuberay_autoscaler_default_is_guaranteed_and_wait_gcs_ready_is_fixed():
    head = _ray("head", {"enableInTreeAutoscaling": "true"})
    assert kuberay.containers(head, EMPTY) == (
        C("autoscaler", model.APP, {"cpu": 500, "memory": 512}, {"cpu": 500, "memory": 512},
          "kuberay"),)
    assert kuberay.containers(_ray("worker", {}), EMPTY) == (
        C("wait-gcs-ready", model.INIT, {"cpu": 200, "memory": 256},
          {"cpu": 200, "memory": 256}, "kuberay"),)


def test_kuberay_autoscaler_options_resources_replace_the_default_as_a_whole():
    head = _ray("head", {"enableInTreeAutoscaling": "true", "autoscalerOptions": {
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                      "requests": {"cpu": "200m"}}}})
    got = kuberay.containers(head, EMPTY)
    assert got == (C("autoscaler", model.APP, {"cpu": 200, "memory": 1024},
                     {"cpu": 1000, "memory": 1024}, "kuberay"),)
    assert kuberay.fix(head, EMPTY, got) == (
        "set spec.rayClusterConfig.autoscalerOptions.resources with requests == limits for "
        "cpu and memory (it replaces KubeRay's default 500m / 512Mi as a whole), or remove it")


def test_storage_initializer_is_not_added_for_a_pvc_uri_mounted_directly():
    m = kmeta({"model": {"storageUri": "pvc://models/fraud"}})
    assert storage_initializer.trigger(m) == (True, "the pod has a storageUri")
    assert storage_initializer.containers(m, EMPTY) == ()
    assert [i.injector for i in inj.injections(m, EMPTY)] == ["queue_proxy"]
    off = InjectionContext.from_items([cm("inferenceservice-config", "kserve", {
        "storageInitializer": '{"enableDirectPvcVolumeMount": false}'})])
    assert [c.name for c in storage_initializer.containers(m, off)] == ["storage-initializer"]


def test_host_network_pods_get_no_mesh_sidecar():
    m = meta({"linkerd.io/inject": "enabled"}, {"sidecar.istio.io/inject": "true"},
             host_network=True)
    assert linkerd.trigger(m) == (False, "hostNetwork: true (Linkerd never injects such pods)")
    assert istio.trigger(m) == (False, "hostNetwork: true (Istio never injects such pods)")


def test_host_network_true_is_read_from_the_untyped_pod_spec():
    """As kubectl reads it (sigs.k8s.io/yaml on go-yaml v2, resolve.go: YAML 1.1's yes, on
    and y are booleans; the real API server refuses `hostNetwork: yes` under Pod Security
    baseline: tests/test_pod_security_admission.py)."""
    from krm_fn.numbers import yaml11_bool
    assert [yaml11_bool(v) for v in ("true", "True", "TRUE", True, "false", "yes", "On", "n",
                                   "tRuE", "1", None)] == [
        True, True, True, True, False, True, True, False, None, None, None]


def test_container_summary_writes_memory_as_kubernetes_canonicalizes_bytes():
    """show() prints memory with quantity.format_binary_si, the one byte formatter (Kubernetes'
    CanonicalizeBytes: below 1024 bytes DecimalSI, else the largest binary suffix that
    divides it, up to Ei): 1000 bytes is 1k, 1Pi stays 1Pi, 1536Mi stays 1536Mi."""
    from krm_fn.admission.injectors.base import show
    c = model.Container("agent", requests={"cpu": 100 * MILLI, "memory": 1000},
                        limits={"cpu": 2 * NANO, "memory": 1 << 50})
    assert show(c) == "agent requests cpu 100m, memory 1k; limits cpu 2, memory 1Pi"
    c = model.Container("s", requests={"memory": 1536 << 20})
    assert show(c) == "s requests memory 1536Mi; limits none"
