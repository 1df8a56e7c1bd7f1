#!/usr/bin/env python3
"""Generate krm_fn/node/data/kubelet_1_<minor>.py from Kubernetes source (docs/kubelet-data.md).

For each Kubernetes minor version this reads, from the Kubernetes source of one release (Go
modules in the module cache, which `go mod download` fills from the module proxy; a git
clone; or a directory), without building or running it:

- the KubeletConfiguration v1beta1 fields: staging/src/k8s.io/kubelet/config/v1beta1/types.go
  (JSON name, Go type, the simple type krm-fn checks values against, nested fields of the
  structs defined in the same file);
- the feature gates the kubelet's `--feature-gates` / `featureGates` accepts, with stage,
  default and LockToDefault at that version: pkg/features/kube_features.go (and
  versioned_kube_features.go in 1.31-1.32), k8s.io/apiserver/pkg/features,
  k8s.io/client-go/features, k8s.io/component-base/{logs/api/v1,metrics/features,
  zpages/features}/kube_features.go, and the featuregate package's own gates
  (AllAlpha/AllBeta, k8s.io/component-base/featuregate/feature_gate.go).

Usage:
    tools/gen_kubelet_data.py --module 1.35=v1.35.4 --module 1.36=v1.36.3 ... 1.35 1.36 ...
        # the Go module cache: pkg/... from k8s.io/kubernetes@v1.35.4 and
        # staging/src/k8s.io/<name>/... from k8s.io/<name>@v0.35.4, fetched with
        # `go mod download` (the module proxy) when they are not in the cache yet
    tools/gen_kubelet_data.py --git /path/to/kubernetes 1.35 1.36 ...
        # a clone of kubernetes/kubernetes with its release tags: reads v<minor>.0:<path>,
        # or the tag given with --ref 1.35=v1.35.4 (a patch release)
    tools/gen_kubelet_data.py --tree 1.35=/path/to/tree ...
        # a directory laid out like kubernetes/kubernetes (pkg/features/...,
        # staging/src/k8s.io/...) per version, e.g. exported from a vendor/ directory

A gate known at one version and unknown at a later one is written as removed at the later
version. Writes krm_fn/node/data/kubelet_<major>_<minor>.py, one module per version: a
docstring and `DATA = {...}`, a Python literal with sorted keys written by `module_text`
(a render imports it, compiled to bytecode on install, instead of importing `json`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TYPES = "staging/src/k8s.io/kubelet/config/v1beta1/types.go"
# CPU / Topology Manager policy options by maturity (read when the source has the file).
POLICY_OPTIONS = {"cpuManagerPolicyOptions": "pkg/kubelet/cm/cpumanager/policy_options.go",
                  "topologyManagerPolicyOptions":
                      "pkg/kubelet/cm/topologymanager/policy_options.go"}
# The Linux default of evictionHard (v1beta1 defaulting sets EvictionHard to it when unset).
EVICTION = "pkg/kubelet/eviction/defaults_linux.go"
# The featuregate package's own gates (AllAlpha, AllBeta: its defaultFeatures map), which
# every component's --feature-gates accepts.
FEATUREGATE = "staging/src/k8s.io/component-base/featuregate/feature_gate.go"
# Files whose maps the kubelet registers.
REGISTERED = (
    "pkg/features/kube_features.go",
    "pkg/features/versioned_kube_features.go",
    "staging/src/k8s.io/apiserver/pkg/features/kube_features.go",
    "staging/src/k8s.io/client-go/features/known_features.go",
    "staging/src/k8s.io/component-base/logs/api/v1/kube_features.go",
    "staging/src/k8s.io/component-base/metrics/features/kube_features.go",
    "staging/src/k8s.io/component-base/zpages/features/kube_features.go",
    FEATUREGATE,
)
# Files read only to resolve constant names (their gates reach the kubelet through
# pkg/features' relisting).
GATE_FILES = REGISTERED + (
    "staging/src/k8s.io/apiextensions-apiserver/pkg/features/kube_features.go",
    "staging/src/k8s.io/controller-manager/pkg/features/kube_features.go",
)
STAGING = "staging/src/k8s.io/"
OUT = Path(__file__).resolve().parent.parent / "krm_fn" / "node" / "data"
WIDTH = 99          # a value that fits on one line of this width is written on one line


def go_download(module: str, version: str) -> str:
    """The directory of Go module `module`@`version` in the module cache, fetched from the
    module proxy (GOPROXY) by `go mod download` when it is not there yet."""
    with tempfile.TemporaryDirectory() as empty:     # outside any go.mod
        try:
            r = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                               cwd=empty, capture_output=True, text=True,
                               env={**os.environ, "GO111MODULE": "on"})
        except FileNotFoundError:
            raise SystemExit("--module needs the go command (https://go.dev/dl/)") from None
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = {}
    if r.returncode or info.get("Error") or not info.get("Dir"):
        why = info.get("Error") or r.stderr.strip() or f"exit status {r.returncode}"
        raise SystemExit(f"go mod download {module}@{version}: {why}")
    return info["Dir"]


RELEASE = re.compile(r"v1\.(\d+)\.(\d+)")


class ModuleTree:
    """The kubernetes/kubernetes layout of release `tag` (v1.MINOR.PATCH) assembled from Go
    modules: `staging/src/k8s.io/<name>/X` is X of module k8s.io/<name> at v0.MINOR.PATCH
    (the staging repositories are published as their own modules: the k8s.io/kubernetes
    module zip holds no staging code), any other path is in k8s.io/kubernetes@`tag`. Each
    module is downloaded (`download(module, version)` -> its directory) on first use."""

    def __init__(self, tag: str, download=None):
        m = RELEASE.fullmatch(tag)
        if m is None:
            raise ValueError(f"{tag!r} is not a Kubernetes release tag such as v1.37.2")
        self.tag, self.staging = tag, f"v0.{m.group(1)}.{m.group(2)}"
        self.download, self.dirs = download or go_download, {}

    def path(self, path: str) -> Path:
        """Where `path` (relative to a kubernetes/kubernetes checkout) is on disk."""
        if path.startswith(STAGING):
            name, _, rest = path[len(STAGING):].partition("/")
            module, version = f"k8s.io/{name}", self.staging
        else:
            module, version, rest = "k8s.io/kubernetes", self.tag, path
        if module not in self.dirs:
            self.dirs[module] = self.download(module, version)
        return Path(self.dirs[module]) / rest

    def note(self) -> str:
        """The `source` of data read from these modules: the release and the modules."""
        staging = sorted(m for m in self.dirs if m != "k8s.io/kubernetes")
        return (f"kubernetes {self.tag}: Go modules k8s.io/kubernetes {self.tag} and "
                f"{', '.join(staging)} {self.staging}")


class Source:
    """Reads `path` of Kubernetes `minor` from a tree, Go modules (`modules[minor]`, a
    ModuleTree) or a git clone (tag `refs[minor]`, default v<minor>.0)."""

    def __init__(self, git: str | None, trees: dict[str, str],
                 refs: dict[str, str] | None = None,
                 modules: dict[str, ModuleTree] | None = None):
        self.git, self.trees, self.refs = git, trees, refs or {}
        self.modules = modules or {}

    def ref(self, minor: str) -> str:
        """The git tag (or any revision) read for `minor`."""
        return self.refs.get(minor, f"v{minor}.0")

    def note(self, minor: str) -> str:
        """Where the source of `minor` came from (the data's `source`)."""
        if minor in self.modules:
            return self.modules[minor].note()
        return f"kubernetes {self.ref(minor)}"

    def read(self, minor: str, path: str) -> str | None:
        if minor in self.trees or minor in self.modules:
            p = (self.modules[minor].path(path) if minor in self.modules
                 else Path(self.trees[minor]) / path)
            return p.read_text() if p.exists() else None
        r = subprocess.run(["git", "-C", self.git, "show", f"{self.ref(minor)}:{path}"],
                           capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None


TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|`[^`]*`', re.S)


def strip_comments(text: str) -> str:
    """`text` without Go comments (strings and raw strings kept as they are)."""
    return TOKEN.sub(lambda m: "" if m.group(0)[0] == "/" else m.group(0), text)


# --- feature gates ---------------------------------------------------------------------------

CONST = re.compile(r"\b(\w+)\s+(?:featuregate\.)?Feature\s*=\s*\"([\w-]+)\"")
MAP = re.compile(r"map\[(?:featuregate\.)?Feature\]"
                 r"(?:featuregate\.)?(FeatureSpec|VersionedSpecs)\s*\{")
SPEC = re.compile(r"\{([^{}]*)\}")


def block(text: str, start: int) -> str:
    """The text between the brace at `start` and its match."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i]
    raise ValueError("unbalanced braces")


def parse_spec(body: str) -> dict:
    """One FeatureSpec literal -> {version, default, stage, locked}."""
    version = re.search(r'Version:\s*version\.MustParse\("([\d.]+)"\)', body)
    default = re.search(r"Default:\s*(true|false)", body)
    stage = re.search(r"PreRelease:\s*(?:featuregate\.)?(\w+)", body)
    locked = re.search(r"LockToDefault:\s*(true|false)", body)
    compat = re.search(r'MinCompatibilityVersion:\s*version\.MustParse\("([\d.]+)"\)', body)
    return {"version": version.group(1) if version else None,
            "compat": compat.group(1) if compat else None,
            "default": default is not None and default.group(1) == "true",
            "stage": {"GA": "GA", "Alpha": "ALPHA", "Beta": "BETA", "Deprecated": "DEPRECATED",
                      "PreAlpha": "PREALPHA"}.get(stage.group(1), stage.group(1))
            if stage else "ALPHA",
            "locked": locked is not None and locked.group(1) == "true"}


def parse_maps(text: str) -> dict[str, list[dict]]:
    """key expression -> [spec, ...] of every feature map literal in `text`."""
    out: dict[str, list[dict]] = {}
    for m in MAP.finditer(text):
        body = block(text, m.end() - 1)
        i = 0
        for km in re.finditer(r"([\w.]+)\s*:\s*\{", body):
            if km.start() < i:
                continue
            inner = block(body, km.end() - 1)
            i = km.end() + len(inner)
            if m.group(1) == "FeatureSpec":
                out[km.group(1)] = [parse_spec(inner)]
            else:
                out[km.group(1)] = [parse_spec(s) for s in SPEC.findall(inner)]
    return out


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def at(specs: list[dict], minor: str) -> dict | None:
    """The spec in effect at `minor` (the last one whose version is not later), or None.
    A spec with a MinCompatibilityVersion later than the minor before `minor` is not in
    effect: the kubelet does not set --min-compatibility-version, and the featuregate
    package then takes its emulation version minus one minor
    (featureSpecAtEmulationAndMinCompatVersion, component-base/featuregate/feature_gate.go),
    so `{Version: 1.37, Default: true, MinCompatibilityVersion: 1.37}` is the default of 1.38."""
    best = None
    before = vkey(minor)[:-1] + (vkey(minor)[-1] - 1,)
    for s in specs:
        if s.get("compat") and vkey(s["compat"]) > before:
            continue
        if s["version"] is None or vkey(s["version"]) <= vkey(minor):
            if best is None or (s["version"] and (best["version"] is None
                                                  or vkey(s["version"]) >= vkey(best["version"]))):
                best = s
    return best


def gates(src: Source, minor: str) -> dict[str, dict]:
    """gate name -> {stage, default, locked} the kubelet of `minor` accepts."""
    texts = {p: strip_comments(t) for p in GATE_FILES if (t := src.read(minor, p)) is not None}
    if "pkg/features/kube_features.go" not in texts:
        raise SystemExit(f"{minor}: pkg/features/kube_features.go not found")
    names = {c: v for t in texts.values() for c, v in CONST.findall(t)}
    found: dict[str, dict] = {}
    if FEATUREGATE not in texts:
        raise SystemExit(f"{minor}: {FEATUREGATE} not found")
    for path, text in texts.items():
        if path not in REGISTERED:
            continue
        for key, specs in parse_maps(text).items():
            name = names.get(key.rpartition(".")[2], key.rpartition(".")[2])
            spec = at(specs, minor)
            if spec is None or spec["stage"] == "PREALPHA":
                continue
            found[name] = {"stage": spec["stage"], "default": spec["default"],
                           "locked": spec["locked"]}
    return found


# --- KubeletConfiguration fields -------------------------------------------------------------

FIELD = re.compile(r"^\s*(\w+)\s+([\w.\[\]*]+)\s+`json:\"([^\"]*)\"", re.M)
SIMPLE = {
    "bool": "bool", "int32": "int32", "int64": "int64", "int": "int64", "float64": "float",
    "string": "string", "metav1.Duration": "duration", "map[string]string": "string-map",
    "map[string]bool": "bool-map", "[]string": "string-list",
    "v1.ResourceList": "quantity-map", "corev1.ResourceList": "quantity-map",
}


# Structs of other packages KubeletConfiguration embeds (checked as mappings only).
EXTERNAL_STRUCTS = {"logsapi.LoggingConfiguration", "tracingapi.TracingConfiguration",
                    "v1.Taint", "corev1.Taint", "metav1.TypeMeta"}
ALIAS = re.compile(r"^type\s+(\w+)\s+(string|bool|int32|int64|float64)\s*$", re.M)


def structs(text: str) -> dict[str, str]:
    """struct name -> body of every `type X struct {...}` in `text`."""
    out = {}
    for m in re.finditer(r"type\s+(\w+)\s+struct\s*\{", text):
        out[m.group(1)] = block(text, m.end() - 1)
    return out


def field_type(go: str, known: dict, depth: int = 0) -> dict:
    """Go type expression -> {"type": simple type, "go": ..., "fields"/"items": ...}.
    A named basic type of the file (`type HairpinMode string`) is its basic type; a type
    of another package that is not a known struct is "any" (not checked)."""
    base = go.lstrip("*")
    if base in SIMPLE:
        return {"type": SIMPLE[base], "go": go}
    if base in known.get("", {}):
        return {"type": SIMPLE[known[""][base]], "go": go}
    if base.startswith("[]"):
        item = field_type(base[2:], known, depth + 1)
        return {"type": "list", "go": go, "items": item}
    if base.startswith("map["):
        return {"type": "map", "go": go}
    if base in known and depth < 4:
        return {"type": "object", "go": go, "fields": fields_of(known[base], known, depth + 1)}
    return {"type": "object" if base in EXTERNAL_STRUCTS or "." not in base else "any",
            "go": go}


def fields_of(body: str, known: dict, depth: int = 0) -> dict[str, dict]:
    out = {}
    for _go_name, go, tag in FIELD.findall(body):
        name = tag.split(",")[0]
        if not name or name == "-":
            continue
        out[name] = field_type(go, known, depth)
    return out


def kubelet_fields(src: Source, minor: str) -> dict[str, dict]:
    text = src.read(minor, TYPES)
    if text is None:
        raise SystemExit(f"{minor}: {TYPES} not found")
    clean = strip_comments(text)
    known: dict = structs(clean)
    known[""] = dict(ALIAS.findall(clean))      # named basic types of the file
    return fields_of(known["KubeletConfiguration"], known)


def policy_options(src: Source, minor: str) -> dict[str, dict[str, str]]:
    """field -> {option: "alpha"/"beta"/"ga"} from policy_options.go (alphaOptions,
    betaOptions, stableOptions), for each field whose file the source of `minor` has."""
    out = {}
    for field, path in POLICY_OPTIONS.items():
        text = src.read(minor, path)
        if text is None:
            continue
        text = strip_comments(text)
        names = dict(re.findall(r'\b(\w+)\s+string\s*=\s*"([\w-]+)"', text))
        options = {}
        for stage, var in (("alpha", "alphaOptions"), ("beta", "betaOptions"),
                           ("ga", "stableOptions")):
            m = re.search(var + r"\s*=\s*sets\.New\[string\]\(([^)]*)\)", text)
            for const in re.findall(r"\w+", m.group(1) if m else ""):
                options[names.get(const, const)] = stage
        out[field] = options
    return out


def eviction_default(src: Source, minor: str) -> dict[str, str] | None:
    """DefaultEvictionHard of `minor` (signal -> threshold), or None without the file."""
    text = src.read(minor, EVICTION)
    if text is None:
        return None
    m = re.search(r"DefaultEvictionHard\s*=\s*map\[string\]string\s*\{", text)
    return dict(re.findall(r'"([\w.]+)"\s*:\s*"([^"]+)"', block(text, m.end() - 1)))


def eviction_defaults(src: Source, minors: list[str]) -> dict[str, tuple[dict, str]]:
    """minor -> (DefaultEvictionHard, the minor it was read from): a minor whose source
    lacks the file takes the nearest later minor that has it, else the nearest earlier one
    (the default only ever gained signals)."""
    found = {m: d for m in minors if (d := eviction_default(src, m)) is not None}
    if not found:
        raise SystemExit(f"{EVICTION} not found for any minor")
    out = {}
    for i, m in enumerate(minors):
        later = [x for x in minors[i:] if x in found]
        earlier = [x for x in minors[:i] if x in found]
        use = later[0] if later else earlier[-1]
        out[m] = (found[use], use)
    return out


# --- the data module -------------------------------------------------------------------------

def module_name(minor: str) -> str:
    """"1.31" -> "kubelet_1_31" (the module of krm_fn/node/data that holds that minor)."""
    return "kubelet_" + minor.replace(".", "_")


def _entries(value: dict | list) -> tuple[str, list[tuple[str, object]]]:
    """The brackets of a dict (keys sorted) or list and its (key prefix, value) entries."""
    if isinstance(value, dict):
        return "{}", [(f"{k!r}: ", value[k]) for k in sorted(value)]
    return "[]", [("", v) for v in value]


def inline(value: object) -> str:
    """`value` as a one-line Python literal (dict keys sorted)."""
    if not isinstance(value, (dict, list)):
        return repr(value)
    brackets, entries = _entries(value)
    return brackets[0] + ", ".join(k + inline(v) for k, v in entries) + brackets[1]


def literal(value: object, indent: int = 0, used: int = 0) -> str:
    """`value` (dicts, lists, str, int, bool, None, as JSON has them) as a Python literal
    that starts `used` characters into a line indented by `indent`: on that line when it
    fits in WIDTH (with a comma after it), else one entry per line indented by 4 more.
    Dict keys sorted: deterministic, so a regenerate writes the same bytes."""
    one = inline(value)
    if used + len(one) + 1 <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return one
    brackets, entries = _entries(value)
    pad = " " * (indent + 4)
    rows = [f"{pad}{k}{literal(v, indent + 4, len(pad) + len(k))},\n" for k, v in entries]
    return brackets[0] + "\n" + "".join(rows) + " " * indent + brackets[1]


def module_text(data: dict) -> str:
    """The source of the data module of `data` (one minor): a one-line docstring saying
    where it came from, then `DATA = ` its literal."""
    doc = (f"Generated by tools/gen_kubelet_data.py (docs/kubelet-data.md) from "
           f"{data['source']}: do not edit.")
    return '"""' + doc.replace("\\", "\\\\").replace('"', '\\"') + '"""\n\nDATA = ' \
        + literal(data, 0, len("DATA = ")) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", action="append", default=[], metavar="MINOR=TAG",
                    help="read release TAG (e.g. 1.37=v1.37.2) from the Go module cache: "
                         "k8s.io/kubernetes@TAG and the staging modules k8s.io/<name>@v0.X.Y, "
                         "fetched with `go mod download` when missing")
    ap.add_argument("--git", help="kubernetes/kubernetes clone with release tags")
    ap.add_argument("--tree", action="append", default=[], metavar="MINOR=DIR",
                    help="source tree of one minor version (kubernetes/kubernetes layout)")
    ap.add_argument("--ref", action="append", default=[], metavar="MINOR=TAG",
                    help="with --git: the tag to read for a minor (default v<minor>.0)")
    ap.add_argument("--note", action="append", default=[], metavar="MINOR=TEXT",
                    help="where the source of a minor came from (written as `source`)")
    ap.add_argument("--inexact-gates", action="append", default=[], metavar="MINOR",
                    help="the pkg/features source given for MINOR is not that release's "
                         "(e.g. an earlier one evaluated at MINOR): written as "
                         "gatesExact: false, so an unknown gate is only a warning")
    ap.add_argument("--out", default=str(OUT),
                    help="where the kubelet_1_<minor>.py modules are written (default: %(default)s)")
    ap.add_argument("minors", nargs="+", help="minor versions in order, e.g. 1.35 1.36 1.37")
    a = ap.parse_args(argv)
    trees = dict(t.split("=", 1) for t in a.tree)
    notes = dict(n.split("=", 1) for n in a.note)
    refs = dict(r.split("=", 1) for r in a.ref)
    modules = {}
    for minor, tag in (m.split("=", 1) for m in a.module):
        try:
            modules[minor] = ModuleTree(tag)
        except ValueError as e:
            ap.error(f"--module {minor}={tag}: {e}")
        if not tag.startswith(f"v{minor}."):
            ap.error(f"--module {minor}={tag}: {tag} is not a {minor} release")
    if not a.git and set(a.minors) - set(trees) - set(modules):
        ap.error("give --git, or a --tree or --module for every minor")
    src = Source(a.git, trees, refs, modules)
    removed: dict[str, str] = {}
    previous: dict[str, dict] = {}
    first_field: dict[str, str] = {}
    evictions = eviction_defaults(src, a.minors)
    for minor in a.minors:
        g = gates(src, minor)
        for name in previous:
            if name not in g and name not in removed:
                removed[name] = minor
        for name in g:
            removed.pop(name, None)
        f = kubelet_fields(src, minor)
        for name in f:
            first_field.setdefault(name, minor)
        data = {"version": minor,
                "source": notes.get(minor) or src.note(minor),
                "fields": f, "gates": g, "removedGates": dict(removed),
                "fieldsSince": {n: first_field[n] for n in f if first_field[n] != a.minors[0]},
                # [signal, threshold] pairs in the source's order (the emitted order)
                "evictionHardDefault": [list(kv) for kv in evictions[minor][0].items()],
                "evictionHardDefaultFrom": evictions[minor][1],
                # option -> maturity, only where the source has policy_options.go
                "policyOptions": policy_options(src, minor)}
        if minor in a.inexact_gates:
            data["gatesExact"] = False
        Path(a.out, module_name(minor) + ".py").write_text(module_text(data))
        previous = g
        print(f"{minor}: {len(f)} fields, {len(g)} gates, {len(removed)} removed",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
