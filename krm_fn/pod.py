"""PodView and ContainerView: one normalised view of a pod spec, whatever the workload kind.

Rules see only these views (kube-score style: kinds are normalised away before checks,
https://github.com/zegl/kube-score). Every write goes through `Edits.set`, which changes the
plain-data copy the rules read and records a `Change` (krm_fn/changes.py: path, value before
and after, the rule writing); the YAML layer writes the changes' values into the original
text, so comments, order and quoting of everything else are kept, and the KRM results are
derived from the changes.
"""
from __future__ import annotations

from krm_fn.changes import Change, path_str, rule_tags  # path_str: for the rules
from krm_fn.numbers import yaml11_bool, yaml11_int
from krm_fn.results import ERROR, INFO, WARNING, Ref, Result
from krm_fn.workloads import PodSpecAt, get_path, model_names


class ShapeError(ValueError):
    """A pod spec part that is not of the shape Kubernetes requires. `path` is the field
    path tuple from the object root."""

    def __init__(self, path: tuple, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


class Edits:
    """The writes on one item's plain data (`root`, krm-fn's working copy of the item):
    `changes` is the list of Change records, in write order. `index`/`ref`: the item's
    index in the input and identity, copied into each Change; `rule`: ID of the rule now
    writing (krm_fn.rules.run sets it through PodView.rule). `retyped`: f(index, path) ->
    bool, True where the input item holds a plain scalar a YAML reader types as no string
    (krm_fn.resourcelist.retyped); None when not known."""

    __slots__ = ("root", "changes", "index", "ref", "rule", "retyped")

    def __init__(self, root: dict, changes: list | None = None, index: int | None = None,
                 ref: Ref | None = None, rule: str | None = None,
                 retyped: object = None) -> None:
        self.root = root
        self.changes = [] if changes is None else changes
        self.index = index
        self.ref = ref
        self.rule = rule
        self.retyped = retyped

    def unquoted(self, path: tuple) -> bool:
        """True when the input holds the value at `path` (from the item root) as a plain
        scalar that kubectl's and the API server's YAML reader types as a boolean, number
        or null, so a string field there is refused (krm_fn.resourcelist.retyped)."""
        return (self.retyped is not None and self.index is not None
                and self.retyped(self.index, tuple(path)))

    def plain(self, path: tuple) -> bool | None:
        """Whether the input writes the number-like value at `path` (from the item root)
        unquoted, which kubectl and the API server read as a YAML 1.1 number
        (krm_fn.numbers.api_quantity), or quoted (False); None when not known."""
        if self.retyped is None or self.index is None:
            return None
        return self.retyped(self.index, tuple(path))

    def yaml_type(self, path: tuple) -> str | None:
        """The JSON type ("string", "number", "boolean", "null") kubectl and the API server
        give the input's scalar at `path` (from the item root) as written
        (krm_fn.resourcelist.yaml_type); None when not known or not a scalar."""
        type_of = getattr(self.retyped, "type_of", None)
        if type_of is None or self.index is None:
            return None
        return type_of(self.index, tuple(path))

    def set(self, path: tuple, value: object, message: str | None = None,
            severity: str = INFO) -> Change:
        """Set `path` to `value` in the plain data (creating missing mappings; an int key
        equal to the list length appends), record and return the Change (`message` and
        `severity` as given: None for a write reported by a separate result)."""
        if path.__class__ is not tuple:
            path = tuple(path)
        cur = self._node(path[:-1], path[-1])
        change = Change(self.index, self.ref, path, _put(cur, path[-1], value), value,
                        self.rule, severity, message)
        self.changes.append(change)
        return change

    def set_all(self, base: tuple, items: list) -> None:
        """`set(base + (key,), value)` for each (key, value) of `items` in order, without
        messages, walking to `base` once (a write below `base` changes nothing on the way
        to it)."""
        if not items:
            return
        cur = self._node(base, items[0][0])
        for key, value in items:
            path = base + (key,)
            self.changes.append(Change(self.index, self.ref, path, _put(cur, key, value),
                                       value, self.rule, INFO, None))

    def _node(self, path: tuple, child: object) -> object:
        """The node at `path` in the plain data, each missing or scalar step replaced by a
        new list when the key after it (`child` after the last) is an int, else a mapping."""
        cur = self.root
        n = len(path)
        i = 0
        for key in path:
            i += 1              # the index of the next key
            t = cur.__class__   # exact dict/list first: isinstance only for other types
            nxt = cur.get(key) if t is dict else cur[key] if t is list or isinstance(
                cur, list) else cur.get(key)
            t = nxt.__class__
            if t is not dict and t is not list and not isinstance(nxt, (dict, list)):
                nxt = cur[key] = [] if isinstance(path[i] if i < n else child, int) else {}
            cur = nxt
        return cur


def _put(cur: object, last: object, value: object) -> object:
    """Write `value` at key `last` of the node `cur` (an int equal to a list's length
    appends); returns the value there before (None when absent)."""
    if isinstance(cur, list):
        old = cur[last] if last < len(cur) else None
        if last == len(cur):
            cur.append(value)
        else:
            cur[last] = value
        return old
    old = cur.get(last)
    cur[last] = value
    return old


class Findings(list):
    """A pod's findings list (PodView.results) that tags each plain Result appended while a
    rule runs with that rule's ID (`tags: {rule: ID}`; the rule is `edits.rule`), so results
    the rules append directly carry the rule like those derived from their Changes."""

    def __init__(self, edits: "Edits"):
        super().__init__()
        self.edits = edits

    def tags(self) -> tuple:
        """The tags of a result the running rule adds now (() while no rule runs)."""
        return rule_tags(self.edits.rule)

    def append(self, finding) -> None:
        """Append `finding` (a Change, or a Result tagged with the running rule)."""
        if isinstance(finding, Result) and not finding.tags:
            tags = self.tags()
            if tags:
                f = finding
                finding = Result(f.message, f.severity, f.ref, f.path, f.current,
                                 f.proposed, f.file, tags)
        super().append(finding)


class ContainerView:
    """One container. `role` is `app` (containers[] or a KServe framework key), `init`
    (a run-to-completion init container) or `sidecar` (an init container with
    `restartPolicy: Always`, KEP-753). `path` is the container's path from the object root.
    `memo`: what rules derive from the container and ask for more than once (e.g. its
    command/args tokens, keyed by the content they came from); it lives as long as the view,
    one item."""

    __slots__ = ("name", "role", "path", "data", "memo")

    def __init__(self, name: str, role: str, path: tuple, data: dict,
                 memo: dict | None = None) -> None:
        self.name = name
        self.role = role
        self.path = path
        self.data = data
        self.memo = {} if memo is None else memo

    def get(self, *keys: str) -> object:
        return get_path(self.data, keys)


class PodView:
    """One pod spec of a workload: containers, volumes, nodeSelector and annotations,
    with helpers that write through `Edits` and collect findings. `results`: the pod's
    findings in order, Changes with a message (from `set`) and plain Results (warnings,
    errors, infos that are not writes); krm_fn.changes.results turns them into KRM results.
    `memo`: what is derived from the pod and asked for more than once (e.g. its injector
    metadata, krm_fn.admission.injectors.base.meta_of), each entry checked against the
    item's edits so far; it lives as long as the view."""

    __slots__ = ("ref", "at", "spec", "meta", "containers", "edits", "results", "memo")

    def __init__(self, ref: Ref, at: PodSpecAt, spec: dict, meta: dict | None,
                 containers: list[ContainerView], edits: Edits, results: list,
                 memo: dict | None = None) -> None:
        self.ref = ref
        self.at = at
        self.spec = spec
        self.meta = meta
        self.containers = containers
        self.edits = edits
        self.results = results
        self.memo = {} if memo is None else memo

    @property
    def rule(self) -> str | None:
        """ID of the rule now writing (krm_fn.rules.run sets it); goes into each Change."""
        return self.edits.rule

    @rule.setter
    def rule(self, rule_id: str | None) -> None:
        self.edits.rule = rule_id

    @property
    def annotations(self) -> dict:
        a = self.meta.get("annotations") if isinstance(self.meta, dict) else None
        return a if isinstance(a, dict) else {}

    def spec_path(self, *rest) -> tuple:
        return self.at.spec + tuple(rest)

    def set(self, path: tuple, value: object, message: str, current: object = None,
            severity: str = INFO) -> None:
        """Write `value` at `path` (from the object root) as a Change with `message` (info
        unless the change deserves a warning), added to the findings. `current`: the value
        the rule read there, for the caller's own use (the Change holds the value before)."""
        self.results.append(self.edits.set(path, value, message, severity))

    def warn(self, path: tuple | None, message: str) -> None:
        self.note(WARNING, path, message)

    def error(self, path: tuple | None, message: str) -> None:
        self.note(ERROR, path, message)

    def note(self, severity: str, path: tuple | None, message: str,
             current: str | None = None, proposed: str | None = None) -> None:
        """Add a plain result (not a write) with `severity` at `path` (None: the item),
        tagged with the running rule as a Findings list tags it when appended (built
        once, tagged)."""
        tags = self.results.tags() if isinstance(self.results, Findings) else ()
        self.results.append(Result(message, severity, self.ref,
                                   path_str(path) if path else None, current, proposed,
                                   None, tags))


VALIDATION_SRC = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"


def host_ports(c: dict, host_network: bool) -> list:
    """[(protocol, hostIP, port, index)] of the host ports container `c` (plain data) asks
    for, as the API server stores them (protocol TCP when not written:
    SetDefaults_ContainerPort; under hostNetwork a port without hostPort takes its
    containerPort: defaults.go defaultHostNetworkPorts; hostIP "" when not written),
    index: the entry of `ports`. Entries not of the API's types are skipped (their type
    error is reported elsewhere)."""
    ports = c.get("ports")
    out = []
    for i, p in enumerate(ports if isinstance(ports, list) else ()):
        if not isinstance(p, dict):
            continue
        port = yaml11_int(p.get("hostPort"))
        if host_network and not port:
            port = yaml11_int(p.get("containerPort"))
        proto, ip = p.get("protocol") or "TCP", p.get("hostIP") or ""
        if port and isinstance(proto, str) and isinstance(ip, str):
            out.append((proto, ip, port, i))
    return out


def _host_ports(containers: list, host_network: bool) -> None:
    """Raise ShapeError at a host port the pod asks for twice: across its containers, and
    within each init container (they run one by one): the API server refuses the pod
    (validation.go checkHostPortConflicts, AccumulateUniqueHostPorts: "Duplicate
    value")."""
    seen: dict = {}
    for c in containers:
        if c.path[-2] not in ("containers", "initContainers"):
            continue
        mine = seen if c.path[-2] == "containers" else {}
        for proto, ip, port, i in host_ports(c.data, host_network):
            key, path = f"{proto}/{ip}/{port}", c.path + ("ports", i, "hostPort")
            if key in mine:
                from krm_fn.apivalidation import go_quote
                raise ShapeError(path, f"Duplicate value: {go_quote(key)}: {path_str(mine[key])}"
                                       f" takes the same host port, so the API server refuses "
                                       f"the pod: give one of them another hostPort, or none "
                                       f"({VALIDATION_SRC} checkHostPortConflicts)")
            mine[key] = path


def _no_ephemeral(spec: dict, at: PodSpecAt, ref: Ref) -> None:
    """Raise ShapeError when the pod spec sets `ephemeralContainers`: the API server
    refuses them on create (ValidatePodCreate: "cannot be set on create"; they are only
    added to a running pod through the pods/ephemeralcontainers subresource, e.g.
    `kubectl debug`) and in every pod template (ValidatePodTemplateSpec: "ephemeral
    containers not allowed in pod template")."""
    if spec.get("ephemeralContainers") in (None, []):
        return
    pod = ref.kind == "Pod" and tuple(at.spec) == ("spec",)
    said = ("Forbidden: cannot be set on create" if pod
            else "Forbidden: ephemeral containers not allowed in pod template")
    raise ShapeError(at.spec + ("ephemeralContainers",),
                     f"{said}: the API server refuses the "
                     f"{'pod' if pod else 'workload'}; ephemeral containers are added to a "
                     f"running pod with `kubectl debug` (the pods/ephemeralcontainers "
                     f"subresource), never in a manifest: remove spec.ephemeralContainers "
                     f"({VALIDATION_SRC} "
                     f"{'ValidatePodCreate' if pod else 'ValidatePodTemplateSpec'}; "
                     f"https://kubernetes.io/docs/concepts/workloads/pods/ephemeral-containers/)")


def _tolerations(spec: dict, at: PodSpecAt, ref: Ref) -> None:
    """Raise ShapeError when the API server refuses the pod spec's tolerations
    (krm_fn.apivalidation.tolerations: validation.go ValidateTolerations)."""
    from krm_fn import apivalidation
    pod = ref.kind == "Pod" and tuple(at.spec) == ("spec",)
    refused = apivalidation.tolerations(spec, tuple(at.spec), "pod" if pod else "workload")
    if refused is not None:
        raise ShapeError(*refused)


_APPS_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
_APPS_SRC = "kubernetes/kubernetes pkg/apis/apps/validation/validation.go"
_JOB_SRC = "kubernetes/kubernetes pkg/apis/batch/validation/validation.go validateJobSpec"


def _restart_policy(obj: dict, spec: dict, at: PodSpecAt, ref: Ref) -> None:
    """Raise ShapeError when the API server refuses the `restartPolicy` of pod template spec
    `spec` (of workload `obj`, at `at`) for the workload's kind: a Deployment's,
    ReplicaSet's, StatefulSet's or DaemonSet's must be Always (apps validation.go:
    NotSupported); a Job's (PodSpecAt.job_restart: a Job's, CronJob's or JobSet's) OnFailure
    or Never, unset refused (defaulted to Always; validateJobSpec: Required) unless the
    controller's webhook sets it (a JobSet's: OnFailure); only Never with a podFailurePolicy."""
    policy = spec.get("restartPolicy")
    policy = "" if policy is None else str(policy)
    if ref.kind in _APPS_KINDS and ref.api_version.startswith("apps/"):
        if policy in ("", "Always"):
            return
        said, fix, src = (f"Unsupported value: {_quote(policy)}: supported values: "
                          f"\"Always\"", "remove restartPolicy or write Always", _APPS_SRC)
    elif at.job_restart is not None:            # workloads.PodSpecAt.job_restart
        job = get_path(obj, at.spec[:-2])       # the Job spec holding the template
        policy = policy or at.job_restart
        if policy in ("", "Always"):
            said = 'Required value: valid values: "OnFailure", "Never"'
        elif policy not in ("OnFailure", "Never"):
            said = (f"Unsupported value: {_quote(policy)}: supported values: \"OnFailure\", "
                    f"\"Never\"")
        elif policy != "Never" and isinstance(job, dict) and job.get("podFailurePolicy"):
            said = (f"Invalid value: {_quote(policy)}: only \"Never\" is supported when "
                    f"podFailurePolicy is specified")
        else:
            return
        fix, src = ("write restartPolicy: " + ("Never" if policy == "OnFailure" else
                                               "OnFailure or Never")
                    + " in the Job's pod template", _JOB_SRC)
    else:
        return
    raise ShapeError(at.spec + ("restartPolicy",),
                     f"{said}: the API server refuses the workload; {fix} ({src}; "
                     f"https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/"
                     f"#restart-policy)")


_PROBES = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _container_refusal(c: dict, role: str, p: tuple, spec: dict, at: PodSpecAt,
                       ref: Ref) -> None:
    """Raise ShapeError when the API server refuses container `c` (at `p`, of pod spec
    `spec`): a regular init container (`role` "init") with `lifecycle` or a probe, which
    only a sidecar (restartPolicy Always) may have (validateInitContainers: "may not be set
    for init containers without restartPolicy=Always"); a `resources.claims` entry naming
    no entry of the pod's `resourceClaims` (validateResourceClaimNames: Not found)."""
    what = "pod" if ref.kind == "Pod" and tuple(at.spec) == ("spec",) else "workload"
    if ref.api_version.partition("/")[0] not in ("v1", "apps", "batch"):
        what = "pods the workload's controller creates"     # a custom resource's schema
    for field in _PROBES if role == "init" else ():
        if c.get(field) is not None:
            raise ShapeError(p + (field,), f"Forbidden: may not be set for init containers "
                                           f"without restartPolicy=Always: the API server "
                                           f"refuses the {what}; remove {field}, or make the "
                                           f"container a sidecar (restartPolicy: Always) "
                                           f"({VALIDATION_SRC} validateInitContainers)")
    claims = c.get("resources").get("claims") if isinstance(c.get("resources"), dict) else None
    if not isinstance(claims, list):
        return
    pod_claims = spec.get("resourceClaims")
    names = sorted({str(r.get("name")) for r in pod_claims if isinstance(r, dict)}
                   if isinstance(pod_claims, list) else ())
    for j, claim in enumerate(claims):
        name = claim.get("name") if isinstance(claim, dict) else None
        if isinstance(name, str) and name not in names:
            raise ShapeError(p + ("resources", "claims", j), (
                f"Not found: {_quote(name)}: must be one of the names in pod.spec."
                f"resourceClaims" + (f": {', '.join(names)}" if names else " which is empty")
                + f": the API server refuses the {what}; add a resourceClaims entry of that "
                  f"name to the pod spec, or remove the claim ({VALIDATION_SRC} "
                  f"validateResourceClaimNames; https://kubernetes.io/docs/concepts/"
                  f"scheduling-eviction/dynamic-resource-allocation/)"))


def _quote(s: str) -> str:
    """%q of a Go string (apivalidation.go_quote), imported only for a refusal."""
    from krm_fn.apivalidation import go_quote
    return go_quote(s)


def _unique(containers: list, name: str, path: tuple) -> None:
    """Raise ShapeError at `path` + name when `name` is already the name of one of
    `containers`: container names are one namespace across containers, initContainers
    and ephemeralContainers, and the API server refuses a duplicate
    (validateContainers / validateInitContainers: field.Duplicate)."""
    first = next((c for c in containers if c.name == name), None)
    if first is None:
        return
    raise ShapeError(path + ("name",),
                     f"Duplicate value: \"{name}\": {path_str(first.path)} has the same name; "
                     f"container names must be unique across initContainers, containers "
                     f"and ephemeralContainers, so the API server refuses the pod: rename "
                     f"one of them ({VALIDATION_SRC} validateInitContainers, "
                     f"validateContainers)")


def build_views(obj: dict, at: PodSpecAt, ref: Ref, edits: Edits,
                results: list[Result]) -> PodView | None:
    """The PodView for one concrete location of `obj` (None when an optional pod spec is
    absent). Raises ShapeError naming the field when a required pod spec is missing or a
    container list or container is not of the right shape."""
    cur: object = obj
    for i, key in enumerate(at.spec):
        nxt = cur[key] if isinstance(cur, list) else cur.get(key)
        if nxt is None:
            if at.optional:
                return None
            raise ShapeError(at.spec[:i + 1], f"missing: a {obj.get('kind')} keeps its pod "
                                              f"spec at {path_str(at.spec)}")
        want_list = i + 1 < len(at.spec) and isinstance(at.spec[i + 1], int)
        if not isinstance(nxt, list if want_list else dict):
            raise ShapeError(at.spec[:i + 1], "must be a list" if want_list else
                             "must be a mapping")
        cur = nxt
    spec = cur
    meta = get_path(obj, at.meta) if at.meta is not None else None
    _no_ephemeral(spec, at, ref)
    if at.job_restart is not None or ref.api_version.startswith("apps/"):
        _restart_policy(obj, spec, at, ref)
    if spec.get("tolerations"):
        _tolerations(spec, at, ref)
    containers: list[ContainerView] = []
    for list_key in ("containers", "initContainers"):
        lst = spec.get(list_key)
        if lst is None:
            continue
        if not isinstance(lst, list):
            raise ShapeError(at.spec + (list_key,), "must be a list")
        for i, c in enumerate(lst):
            p = at.spec + (list_key, i)
            if not isinstance(c, dict):
                raise ShapeError(p, "must be a mapping (a container)")
            name = c.get("name")
            if name is None and at.unnamed_container and list_key == "containers":
                # the platform names it at admission (Knative: revision_defaults.go)
                name = at.unnamed_container + (f"-{i}" if len(lst) > 1 else "")
            if not isinstance(name, str) or not name:
                raise ShapeError(p + ("name",), "every container needs a name")
            _unique(containers, name, p)
            role = "app"
            if list_key == "initContainers":
                role = "sidecar" if c.get("restartPolicy") == "Always" else "init"
            if role == "init" or c.get("resources"):
                _container_refusal(c, role, p, spec, at, ref)
            containers.append(ContainerView(name, role, p, c))
    for key in at.container_keys:
        c = spec.get(key)
        if c is None:
            continue
        p = at.spec + (key,)
        if not isinstance(c, dict):
            raise ShapeError(p, "must be a mapping (a container)")
        name = c.get("name") or next(iter(model_names(at)), None) or key
        containers.insert(0, ContainerView(str(name), "app", p, c))
    if any("ports" in c.data for c in containers):
        _host_ports(containers, yaml11_bool(spec.get("hostNetwork")) is True)
    if at.needs_containers and not any(c.role == "app" for c in containers):
        raise ShapeError(at.spec + ("containers",),
                         "Required value: a pod needs at least one container in containers, "
                         "so the API server refuses it (pkg/apis/core/validation/"
                         "validation.go validateContainers)")
    return PodView(ref, at, spec, meta if isinstance(meta, dict) else None, containers,
                   edits, results)
