#!/usr/bin/env python3
"""Benchmark krm-fn against the floors named in issue #5 and print the ratios.

P1  krm-fn on the 2,000-item ResourceList vs PyYAML's C loader + C dumper on the same text
    (the floor for any Python function that reads and writes YAML).      target <= 1.5x
P2  `kubectl kustomize --enable-alpha-plugins` on the 2,000-item overlay with krm-fn as the
    transformer (legacy exec plugin) vs the same build with an identity transformer.
                                                                         target <= 1.15x
P2-floor (info) the same build with a transformer that drains its input and prints krm-fn's
    output, saved from one krm-fn run: what kustomize costs for krm-fn's (larger) output
    alone, whoever computes it. P2 - floor is krm-fn's own process time inside the build.
P3  krm-fn on the 10-item list vs a Python identity function that imports ruamel.yaml.
                                                                         target <= 1.3x
MEM peak RSS of krm-fn on the 2,000-item input vs the PyYAML floor.      target <  4x

Every measurement is a fresh process (interpreter start-up included on both sides), repeated
`--reps` times; the median is reported. Inputs come from ../shared/bench/gen_resourcelist.py.
Usage: python bench/run.py [--reps 9] [--gen PATH]
(about 7 minutes with the default 9 reps on the 2-CPU project machine)
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

FLOOR = ("import sys, yaml\n"
         "d = yaml.load(sys.stdin.read(), Loader=yaml.CSafeLoader)\n"
         "sys.stdout.write(yaml.dump(d, Dumper=yaml.CSafeDumper))\n")
RUAMEL_IDENTITY = ("import sys\nfrom ruamel.yaml import YAML\n"
                   "y = YAML()\ny.dump(y.load(sys.stdin.read()), sys.stdout)\n")
IDENTITY_PLUGIN = "#!/bin/sh\nexec cat\n"
# P2-floor: runs krm-fn once and keeps its output; then a transformer that drains its input
# and prints that output (what any transformer making krm-fn's changes hands to kustomize).
CAPTURE_PLUGIN = '#!/bin/sh\n"{fn}" "$@" > "{out}" || exit 1\nexec cat "{out}"\n'
FLOOR_PLUGIN = '#!/bin/sh\ncat > /dev/null\nexec cat "{out}"\n'


def measure(cmd, stdin_path=None, env=None, cwd=None):
    """(seconds, peak RSS in KiB) of one run of `cmd`; raises on a non-zero exit."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdin_path:
        stdin.close()
    if proc.returncode:
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {err[-500:]}")
    return elapsed, usage.ru_maxrss


def median(cmd, reps, **kw):
    runs = [measure(cmd, **kw) for _ in range(reps)]
    return statistics.median(t for t, _ in runs), max(m for _, m in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--gen", default=str(ROOT.parent / "shared" / "bench" /
                                         "gen_resourcelist.py"))
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="krm-fn-bench-"))
    big, small = tmp / "rl-2000.yaml", tmp / "rl-10.yaml"
    for path, n in ((big, 2000), (small, 10)):
        with open(path, "w") as f:
            subprocess.run([PY, a.gen, "--items", str(n), "--inference-percent", "100"],
                           stdout=f, check=True)
    krm = [PY, "-m", "krm_fn"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = []
    p2_note = p2_rounds = None

    t_fn, m_fn = median(krm, a.reps, stdin_path=big, env=env)
    t_floor, m_floor = median([PY, "-c", FLOOR], a.reps, stdin_path=big)
    rows.append(("P1 2,000 items: krm-fn / PyYAML C load+dump", t_fn, t_floor, 1.5))

    kubectl = shutil.which("kubectl")
    if kubectl:
        kdir = tmp / "overlay"
        subprocess.run([PY, a.gen, "--items", "2000", "--inference-percent", "100",
                        "--format", "kustomize", "--dir", str(kdir)], check=True)
        (kdir / "pin.yaml").write_text("apiVersion: krm-fn.dev/v1alpha1\nkind: InferenceTuning\n"
                                       "metadata:\n  name: bench\nspec:\n  selector:\n"
                                       "    matchLabels: {tier: inference}\n")
        with open(kdir / "kustomization.yaml", "a") as f:
            f.write("transformers:\n- pin.yaml\n")
        fn_output = tmp / "krm-fn-output.yaml"
        fn_plugin = ROOT / "plugin" / "krm-fn.dev" / "v1alpha1" / "inferencetuning" / \
            "InferenceTuning"
        ident, capture, floor = (tmp / "identity-plugin", tmp / "capture-plugin",
                                 tmp / "floor-plugin")
        for home, script in ((ident, IDENTITY_PLUGIN),
                             (capture, CAPTURE_PLUGIN.format(fn=fn_plugin, out=fn_output)),
                             (floor, FLOOR_PLUGIN.format(out=fn_output))):
            plugin_dir = home / "krm-fn.dev" / "v1alpha1" / "inferencetuning"
            plugin_dir.mkdir(parents=True)
            (plugin_dir / "InferenceTuning").write_text(script)
            (plugin_dir / "InferenceTuning").chmod(0o755)
        cmd = [kubectl, "kustomize", "--enable-alpha-plugins", str(kdir)]
        venv_bin = str(Path(PY).parent)
        fn_env = dict(env, KUSTOMIZE_PLUGIN_HOME=str(ROOT / "plugin"),
                      PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
        id_env = dict(env, KUSTOMIZE_PLUGIN_HOME=str(ident))
        measure(cmd, env=dict(fn_env, KUSTOMIZE_PLUGIN_HOME=str(capture)))
        fl_env = dict(env, KUSTOMIZE_PLUGIN_HOME=str(floor))
        runs: dict = {"id": [], "floor": [], "fn": []}
        for _ in range(a.reps):       # interleaved: the machine's load drifts between runs
            for k, e in (("id", id_env), ("floor", fl_env), ("fn", fn_env)):
                runs[k].append(measure(cmd, env=e)[0])
        t_id, t_fl, t_k = (statistics.median(runs[k]) for k in ("id", "floor", "fn"))
        # the ratio is the median of the per-round ratios (each round runs the three builds
        # back to back), which the machine's load drift between rounds does not skew
        r_k = statistics.median(k / i for k, i in zip(runs["fn"], runs["id"]))
        r_fl = statistics.median(f / i for f, i in zip(runs["floor"], runs["id"]))
        rows.append(("P2 kubectl kustomize 2,000 items: krm-fn / identity", t_k, t_id, 1.15,
                     r_k))
        rows.append(("P2-floor same, `cat` of krm-fn's saved output / identity", t_fl, t_id,
                     None, r_fl))
        p2_rounds = "P2 per-round ratios: " + " ".join(
            f"{k / i:.2f}" for k, i in zip(runs["fn"], runs["id"]))
        p2_note = (f"P2 extra over identity {t_k - t_id:.2f}s = kustomize reading krm-fn's "
                   f"larger output {t_fl - t_id:.2f}s (floor - identity) + krm-fn's process "
                   f"{t_k - t_fl:.2f}s (P2 - floor)")
    else:
        print("P2 skipped: kubectl not on PATH")

    t_s, _ = median(krm, a.reps, stdin_path=small, env=env)
    t_r, _ = median([PY, "-c", RUAMEL_IDENTITY], a.reps, stdin_path=small)
    rows.append(("P3 10 items: krm-fn / ruamel identity", t_s, t_r, 1.3))

    print(f"{'measure':55} {'krm-fn':>9} {'floor':>9} {'ratio':>7} {'target':>7}")
    ok = True
    for name, t1, t2, target, *given in rows:
        ratio = given[0] if given else t1 / t2
        met = target is None or ratio <= target
        ok &= met
        print(f"{name:55} {t1:8.3f}s {t2:8.3f}s {ratio:6.2f}x "
              f"{'   info' if target is None else f'{target:6.2f}x'}{'' if met else '  MISSED'}")
    ratio = m_fn / m_floor
    ok &= ratio < 4
    print(f"{'MEM peak RSS 2,000 items: krm-fn / PyYAML floor':55} {m_fn / 1024:7.1f}MB "
          f"{m_floor / 1024:7.1f}MB {ratio:6.2f}x {4:6.2f}x{'' if ratio < 4 else '  MISSED'}")
    if p2_note:
        print(p2_note)
        print(p2_rounds)
    shutil.rmtree(tmp)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
