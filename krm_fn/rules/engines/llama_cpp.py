"""llama.cpp `llama-server`: `LLAMA_ARG_THREADS` = the thread count, unless `--threads`/`-t`
is in args (an arg wins over the env var from b3683); `--threads-batch`/`-tb` defaults to
`-t`. An arg above the count is warned about.

By build (the image tag's `bNNNN`, ggml-org/llama.cpp release tags): llama-server reads
`LLAMA_ARG_*` env vars since PR #9105 (August 2024; then an env var won over the arg);
PR #9308 (b3683, common/arg.cpp) kept `LLAMA_ARG_THREADS` and made the arg win. b3683 is
the first build krm-fn has verified, so an older build gets no env var (it may not read
it) and a warning naming `--threads`, the setting every build reads — krm-fn does not
rewrite args it did not write. An image without a build number (`:server`, `:server-cuda`,
a digest, another image) gets the env var, which a build that does not read it ignores,
and a warning saying so.
"""
from __future__ import annotations

import re

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import count_text, env_entry, flag, tokens
from krm_fn.rules.engines import recognition
from krm_fn.rules.engines.base import Engine, EnvSpec, Release, release_for
from krm_fn.rules.envvars import downward_ok, downward_refused, set_env

_SRC = "https://github.com/ggml-org/llama.cpp/blob/"
RELEASES = (
    Release((3683,), {"env": True}, _SRC + "b3683/common/arg.cpp",
            "`LLAMA_ARG_THREADS` read, an arg winning over it (PR #9308; the `LLAMA_ARG_*` "
            "env vars came with PR #9105, August 2024): older builds get no env var and a "
            "warning naming `--threads`", label="b3683"),
)
FIRST = RELEASES[0]
# ghcr.io/ggml-org/llama.cpp (or ggerganov/llama.cpp) tags: server, server-b4321,
# full-cuda-b4321, light-vulkan, ...: the build is the trailing bNNNN
_IMAGE = re.compile(r"(^|/)llama\.cpp$")
_BUILD = re.compile(r"(?:^|-)b([0-9]{1,6})$")
BATCH_FLAGS = ("--threads-batch", "-tb")


def build(c: ContainerView) -> tuple | None:
    """The llama.cpp build of container `c` as (N,) from a llama.cpp image tag such as
    `ghcr.io/ggml-org/llama.cpp:server-b4321` -> (4321,); None (unknown) for a tag without
    `-bNNNN` (`:server`, `:server-cuda`), a digest-only reference or another image."""
    image = c.data.get("image")
    if not isinstance(image, str) or len(image) > 512:
        return None
    name, _, tag = image.split("@", 1)[0].rpartition(":")
    if not name or "/" in tag or not _IMAGE.search(name.lower()):
        return None
    m = _BUILD.search(tag.lower())
    return (int(m.group(1)),) if m else None


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set LLAMA_ARG_THREADS to the count unless -t is in command/args (by build, see the
    module docstring); warn about -t or -tb above the count."""
    cnt, cfg = f.count, ctx.cfg
    toks = tokens(c)
    want = str(cnt.count)
    spec = ENGINE.env[0]
    _flag_above(pod, c, cnt, flag(toks, spec.flags), spec.name, want)
    _flag_above(pod, c, cnt, flag(toks, BATCH_FLAGS),
                f"{spec.name}, which -tb otherwise follows", want)
    if flag(toks, spec.flags) is not None:
        return
    v = build(c)
    image = c.data.get("image")
    if v is not None and release_for(RELEASES, v) is None:
        pod.warn(c.path + ("args",),
                 f"container {c.name!r}: llama.cpp build b{v[0]} (image {image!r}) is older "
                 f"than {FIRST.label}, the first build krm-fn knows to read {spec.name} "
                 f"(llama-server's LLAMA_ARG_* env vars came with PR #9105, August 2024), so "
                 f"nothing is set and llama.cpp picks its own thread count; add --threads "
                 f"{want} to args (every build reads it) or use a build >= {FIRST.label} "
                 f"({FIRST.source})")
        return
    had = env_entry(c, spec.name) is not None
    set_env(pod, c, spec.name, want, f"{ENGINE.name}: {cnt.why}", cfg,
            downward=downward_ok(cnt, cfg) and downward_refused(pod, ctx) is None)
    if v is None and not had:
        pod.warn(c.path + ("env",),
                 f"container {c.name!r}: the image {image!r} names no llama.cpp build "
                 f"(a -bNNNN tag), so {spec.name} is set, which builds before "
                 f"{FIRST.label} may not read (they ignore it); better: --threads {want} in "
                 f"args, which every build reads — or use a tag such as server-b{FIRST.since[0]}"
                 f" or later")


def _flag_above(pod: PodView, c: ContainerView, cnt, found, over: str, want: str) -> None:
    """Warn when the flag `found` (cmdline.flag) is not a whole number or above the count."""
    if found is None:
        return
    n = count_text(found[0])
    if n is None:
        pod.warn(found[1].path, f"container {c.name!r}: {ENGINE.name} "
                                f"{numbers.brief(found[2])} is not a whole number "
                                f"(ASCII digits) and is left alone; it wins over "
                                f"{over}: set it to {want}")
    elif n > cnt.count:
        pod.warn(found[1].path, f"container {c.name!r}: {ENGINE.name} {found[2]} "
                                f"asks for more threads than {cnt.why} and wins over "
                                f"{over}; set it to {want}")


ENGINE = Engine(
    recognition.of(__name__),
    env=(EnvSpec("LLAMA_ARG_THREADS", flags=("--threads", "-t")),),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_SRC + "17fce9be15411587700cda558a626e9f53e54a0b/common/common.cpp",
    recognised="`llama-server` in command/args; image `ghcr.io/ggml-org/llama.cpp:server*`; "
               "the build is the `-bNNNN` of a llama.cpp image tag",
    sets="`LLAMA_ARG_THREADS` = N, unless `--threads`/`-t` is in args (an arg wins over the "
         "env var; `--threads-batch`/`-tb` defaults to `-t` and has no env var); nothing "
         "for builds before b3683",
    warns="`-t`/`-tb` above N; a build before b3683 (add `--threads N`); no build in the "
          "tag (env var set, `--threads N` named as the setting every build reads)",
    sources=(("llama-server README",
              _SRC + "25d5b0c53f9a146f3d7a99a18610d9d623b5041e/tools/server/README.md"),
             ("PR #9105: LLAMA_ARG_* env vars",
              "https://github.com/ggml-org/llama.cpp/pull/9105")),
)
