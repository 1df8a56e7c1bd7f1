"""Ray (`ray start` in command/args): no pod-wide thread vars, since Ray sets
`OMP_NUM_THREADS` of each worker process from its `num_cpus` when unset (a pod-wide value
would give every worker the whole count); `ray start` must carry `--num-cpus` <= the CPUs
(a warning otherwise). KubeRay's `rayStartParams.num-cpus` is set by the `ray` rule.
"""
from __future__ import annotations

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView, path_str
from krm_fn.results import INFO, Result
from krm_fn.rules.cmdline import Token, count_text, env_entry, flag, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine


def ray_start(c: ContainerView) -> tuple[Token, list[Token]] | None:
    """(the `start` word, the words after it up to the end of that shell command) when the
    container runs `ray start`, else None."""
    toks = tokens(c)
    for i in range(len(toks) - 1):
        if toks[i].text.rsplit("/", 1)[-1] == "ray" and toks[i + 1].text == "start":
            rest = toks[i + 2:]
            for j, t in enumerate(rest):
                if t.text in (";", "&&", "||", "|"):
                    return toks[i + 1], rest[:j]
                if t.text.endswith(";"):
                    return toks[i + 1], rest[:j + 1]
            return toks[i + 1], rest
    return None


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Say why no thread vars were set; warn about --num-cpus missing or above the CPUs
    and about OMP_NUM_THREADS / MKL_NUM_THREADS set for the whole container."""
    found = ray_start(c)
    where, rest = (found[0].path, found[1]) if found is not None else (c.path, [])
    n_cpus = f.count.base
    pod.results.append(Result(f"container {c.name!r} runs ray start: thread env vars not set; "
                              f"Ray sets OMP_NUM_THREADS for each worker process from its "
                              f"num_cpus when unset, and a pod-wide value would give every "
                              f"worker {n_cpus} threads", INFO, pod.ref,
                              path_str(c.path + ("env",))))
    num = flag(rest, ("--num-cpus",))
    if num is None:
        pod.warn(where, f"container {c.name!r}: ray start has no --num-cpus, so Ray detects "
                        f"the CPU count itself and may schedule more tasks than the "
                        f"{n_cpus} pinned CPUs; add --num-cpus={n_cpus}")
    else:
        n = count_text(num[0])
        if n is None:
            pod.warn(num[1].path, f"container {c.name!r}: ray start --num-cpus "
                                  f"{numbers.brief(num[0])} is not a whole number (ASCII "
                                  f"digits) and is left alone; set --num-cpus={n_cpus}")
        elif n > n_cpus:
            pod.warn(num[1].path, f"container {c.name!r}: ray start --num-cpus {num[0]} is "
                                  f"more than the {n_cpus} pinned CPUs; set "
                                  f"--num-cpus={n_cpus}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        entry = env_entry(c, var)
        if entry is not None:
            pod.warn(c.path + ("env", entry[0]),
                     f"container {c.name!r}: {var} is set for the whole container and "
                     f"overrides the per-worker value Ray derives from num_cpus, so every "
                     f"Ray worker uses that many threads; remove it unless every task uses "
                     f"all {n_cpus} CPUs")


ENGINE = Engine(
    recognition.of(__name__),
    thread_env=False,
    check=check,
    recognised="`ray start` in command/args",
    sets="no pod-wide thread vars: Ray sets `OMP_NUM_THREADS` per worker from its "
         "`num_cpus`, a pod-wide value would give every worker N",
    warns="`ray start` without `--num-cpus` or above the CPUs; "
          "`OMP_NUM_THREADS`/`MKL_NUM_THREADS` set pod-wide. KubeRay's Ray container "
          "(`containers[0]`) gets no thread vars either: its `rayStartParams.num-cpus` "
          "follows the pinned CPUs (the ray rule)",
    sources=(("Ray: set_omp_num_threads_if_unset",
              "https://github.com/ray-project/ray/blob/f0cfdad9e9d7823676609c680034903201203304/"
              "python/ray/_private/utils.py"),
             ("Ray resources",
              "https://docs.ray.io/en/latest/ray-core/scheduling/resources.html")),
)
