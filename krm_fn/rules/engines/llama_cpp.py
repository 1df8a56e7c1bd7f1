"""llama.cpp `llama-server`: `LLAMA_ARG_THREADS` = the thread count, unless `--threads`/`-t`
is in args (an arg wins over the env var from b3683); `--threads-batch`/`-tb` defaults to
`-t`. An arg above the count is warned about, as are the draft model's (speculative
decoding) `-td` and `-tbd`, which default to `-t` and `-td`. Without a model (`-m`, `-hf`,
...) llama-server is a router running each loaded model in a child llama-server
(`_router`).

The args are read as llama.cpp's own parser reads them (common/arg.cpp,
`common_params_parse_ex`, the same since b3683; tests/engines/test_llama_args.py runs that
parser on the same argv): a flag is a whole word, a word starting with `--` has `_` read as
`-` (`--threads_batch`), and the value is the next word, read by `std::stoi` (leading blanks
and a sign allowed, trailing text ignored: `8x` is 8); a value <= 0 means
`std::thread::hardware_concurrency()`, every CPU the node has online. `--threads=8`, `-t8`,
a missing value or a value `std::stoi` refuses stop llama-server at start-up ("error:
invalid argument"), so they are errors. A value set when the container starts is read as
the kubelet and the shell make it: `$(CPUS)` from a resourceFieldRef on the container's
cpu is its value, a script's `$THREADS` the env var's; one only known then (`$(nproc)`,
a variable from envFrom) is warned about, never an error. In a shell script only the
words of the command that runs `llama-server` count (`ls -t` is not its `-t`).

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
from typing import NamedTuple

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.rules.cmdline import (Token, env_entry, env_from, env_value, own_command,
                                  runtime_only, shell_script, shell_value, tokens)
from krm_fn.rules.engines import programs, recognition
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
# the draft model of speculative decoding (common/arg.cpp): its own pools, defaulting to
# -t and -td, a value <= 0 meaning every CPU of the node, as for -t
DRAFT_FLAGS = ("--spec-draft-threads", "-td", "--threads-draft")
DRAFT_BATCH_FLAGS = ("--spec-draft-threads-batch", "-tbd", "--threads-batch-draft")
# the server's program: in a shell script only its own command's flags count
PROGRAMS = ("llama-server",)


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


_INT32 = 2 ** 31
# std::stoi: strtol's leading white space, an optional sign, decimal digits; the rest ignored
_STOI = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


class Arg(NamedTuple):
    """One thread flag as llama-server's parser reads it: `threads` is what it sets (None
    when the node's CPU count is meant: a value <= 0), `refused` the start-up error when the
    parser stops instead, `token` the word to point at, `written` the flag as written,
    `ignored` what std::stoi left unread after the digits (e.g. ".0" of "4.0"); `unknown`:
    the value is only known when the container starts (cmdline.runtime_only: a shell's
    `$(nproc)`, a `$(VAR)` from envFrom), so `threads` is None without meaning <= 0."""

    threads: int | None
    refused: str | None
    token: Token
    written: str
    ignored: str = ""
    unknown: bool = False


def stoi(text: str) -> int | None:
    """`std::stoi(text)` as llama.cpp calls it: the int it gives, None where it throws
    (no digits: std::invalid_argument; outside int32: std::out_of_range)."""
    return _stoi(text)[0]


def _stoi(text: str) -> tuple[int | None, str]:
    """(stoi(text), the text it left unread)."""
    m = _STOI.match(text)
    if m is None:
        return None, ""
    rest = text[m.end():]
    n = _int32(m.group(1))
    return n, rest if n is not None else ""


def _int32(text: str) -> int | None:
    """The int32 `text` (sign and ASCII digits) is, None when out of range."""
    if len(text.lstrip("+-").lstrip("0")) > 10:   # past int32 whatever the digits
        return None
    n = int(text)
    return n if -_INT32 <= n < _INT32 else None


def flag_word(text: str) -> str:
    """A word as common/arg.cpp matches it against its flags: a `--` word with `_` read as
    `-` (`--threads_batch` is `--threads-batch`), any other word as written."""
    return text.replace("_", "-") if text.startswith("--") else text


def read_args(toks: list[Token], names: tuple, c: ContainerView | None = None,
              script: bool = False) -> list[Arg]:
    """Every occurrence of the flags `names` (e.g. ("--threads", "-t")) in `toks`, read as
    common/arg.cpp does (module docstring): the last one with a value is the setting, and
    any refused one stops the server. Given the container `c` (`script`: its command line
    is a shell script, cmdline.shell_script), a value the shell expands from a known env
    var is read as that value, and one only known at run time is `unknown` (never
    refused)."""
    out: list[Arg] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        word = flag_word(t.text)
        if word in names:
            if i + 1 >= len(toks) or toks[i + 1].text == ";":
                out.append(Arg(None, "expected value for argument", t, t.text))
            else:
                v = toks[i + 1]
                value = v.text
                written = f"{t.text} {v.text}"
                if c is not None and "$" in value:
                    value = shell_value(c, script, value) or value
                    if "$" in value and runtime_only(c, script, value):
                        out.append(Arg(None, None, v, written, unknown=True))
                        i += 2
                        continue
                n, rest = _stoi(value)
                out.append(Arg(n if n is None or n > 0 else None,
                               None if n is not None else f"std::stoi refuses {v.text!r}",
                               v, written, rest))
                i += 1
        elif any(word.startswith(n) and (word[len(n):][:1] == "=" or
                                          (len(n) <= 3 and word[len(n):].isdigit()))
                 for n in names):
            out.append(Arg(None, f"error: invalid argument: {word}", t, t.text))
        i += 1
    return out


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Set LLAMA_ARG_THREADS to the count unless -t is in command/args (by build, see the
    module docstring); warn about -t or -tb above the count or meaning every node CPU; an
    error for a thread flag llama-server refuses at start-up."""
    cnt, cfg = f.count, ctx.cfg
    whole = tokens(c)
    toks, script = own_command(whole, PROGRAMS, programs.spans(whole)), shell_script(whole)
    want = str(cnt.count)
    spec = ENGINE.env[0]
    threads = read_args(toks, spec.flags, c, script)
    batch = read_args(toks, BATCH_FLAGS, c, script)
    draft = read_args(toks, DRAFT_FLAGS, c, script)
    draft_batch = read_args(toks, DRAFT_BATCH_FLAGS, c, script)
    for name, args in (("--threads", threads), ("--threads-batch", batch),
                       ("--threads-draft", draft), ("--threads-batch-draft", draft_batch)):
        for a in (a for a in args if a.refused is not None):
            pod.error(a.token.path,
                      f"container {c.name!r}: llama-server stops at start-up on "
                      f"{numbers.brief(a.written)} ({a.refused}; its parser, common/arg.cpp, "
                      f"takes the value as the next word, read by std::stoi): write "
                      f"{name} {want} ({_SRC}b3683/common/arg.cpp)")
    set_ = [a for a in threads if a.refused is None]
    _above(pod, c, cnt, set_[-1] if set_ else None, spec.name, want)
    set_b = [a for a in batch if a.refused is None]
    _above(pod, c, cnt, set_b[-1] if set_b else None,
           f"{spec.name}, which -tb otherwise follows", want)
    for args, follows in ((draft, "-t"), (draft_batch, "-td")):
        set_d = [a for a in args if a.refused is None]
        _above(pod, c, cnt, set_d[-1] if set_d else None,
               f"{follows}, which the draft model's threads otherwise follow", want)
    _router(pod, c, toks, script, want)
    if threads:
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


# the model-naming flags (common/arg.cpp) and their env vars: without any, llama-server is a
# router (tools/server/server.cpp `is_router_server`) that runs each model it loads as a
# child llama-server with its own environment and args, up to --models-max at once
# (tools/server/server.cpp `is_router_server` reads the path, hf_repo and docker_repo;
# --model-url alone leaves the path empty for the server, which is then a router too)
MODEL_FLAGS = ("-m", "--model", "-hf", "-hfr", "--hf-repo", "-dr", "--docker-repo")
MODEL_ENV = ("LLAMA_ARG_MODEL", "LLAMA_ARG_HF_REPO", "LLAMA_ARG_DOCKER_REPO")
MODELS_MAX, MODELS_MAX_ENV, MODELS_MAX_DEFAULT = ("--models-max",), "LLAMA_ARG_MODELS_MAX", 4
_ROUTER_SRC = _SRC + "0c1e57098/tools/server/server.cpp"   # llama-cpp-python 0.3.36's


def _router(pod: PodView, c: ContainerView, toks: list, script: bool, want: str) -> None:
    """Warn when llama-server names no model and may load more than one at once: a router
    whose every loaded model is a child llama-server with the same thread count, so up to
    --models-max (LLAMA_ARG_MODELS_MAX, default 4, 0 unlimited) pools of `want` threads."""
    words = {flag_word(t.text) for t in toks}
    if words & set(MODEL_FLAGS) or any(env_entry(c, n) is not None for n in MODEL_ENV) or (
            c.data.get("envFrom") and any(n in env_from(c) for n in MODEL_ENV)):
        return
    given = [a for a in read_args(toks, MODELS_MAX, c, script) if a.refused is None]
    if given:
        most, what = (given[-1].threads or 0), numbers.brief(given[-1].written)
    else:
        text = env_value(c, MODELS_MAX_ENV)
        n = None if text is None else stoi(text)
        most = MODELS_MAX_DEFAULT if n is None else n
        what = (f"{MODELS_MAX_ENV}={numbers.brief(text)}" if n is not None
                else f"--models-max {MODELS_MAX_DEFAULT} (the default)")
    if most == 1:
        return
    many = "any number of" if most <= 0 else f"up to {most}"
    pod.warn(c.path, f"container {c.name!r}: llama-server names no model (-m, -hf, "
                     f"--docker-repo or their LLAMA_ARG_* env vars), so it runs "
                     f"as a router that loads each requested model in a child llama-server "
                     f"with the same environment and args, {want} threads each; {what} lets "
                     f"{many} models run at once, each pool on the same pinned CPUs; set "
                     f"--models-max 1 (or {MODELS_MAX_ENV}=1), or serve one model per "
                     f"Deployment with -m ({_ROUTER_SRC})")


def _above(pod: PodView, c: ContainerView, cnt, a: Arg | None, over: str,
           want: str) -> None:
    """Warn when the flag `a` (read_args) sets more threads than the count, a value <= 0
    (every CPU of the node), or one std::stoi reads only in part ("1e3" is 1)."""
    if a is None:
        return
    if a.unknown:
        pod.warn(a.token.path, f"container {c.name!r}: {ENGINE.name} "
                               f"{numbers.brief(a.written)} is only known when the container "
                               f"starts, so krm-fn cannot check it against {cnt.why}; it wins "
                               f"over {over}: make sure it is at most {want}")
    elif a.ignored and (a.threads or 0) <= cnt.count:
        shown = "<= 0, every CPU of the node," if a.threads is None else a.threads
        pod.warn(a.token.path, f"container {c.name!r}: {ENGINE.name} "
                               f"{numbers.brief(a.written)} is read as {shown}: std::stoi "
                               f"stops at {numbers.brief(a.ignored)!r}; it wins over {over}: "
                               f"set it to {want}")
    elif a.threads is None:
        pod.warn(a.token.path, f"container {c.name!r}: {ENGINE.name} "
                               f"{numbers.brief(a.written)} is <= 0, which llama.cpp reads "
                               f"as std::thread::hardware_concurrency(), every CPU of the "
                               f"node rather than {cnt.why}; it wins over {over}: set it to "
                               f"{want}")
    elif a.threads > cnt.count:
        pod.warn(a.token.path, f"container {c.name!r}: {ENGINE.name} "
                               f"{numbers.brief(a.written)} asks for more threads than "
                               f"{cnt.why} and wins over {over}; set it to {want}")


ENGINE = Engine(
    recognition.of(__name__),
    env=(EnvSpec("LLAMA_ARG_THREADS", flags=("--threads", "-t")),),
    check=check,
    releases=RELEASES,
    per_core="physical",
    per_core_source=_SRC + "17fce9be15411587700cda558a626e9f53e54a0b/common/common.cpp",
    recognised="`llama-server` in command/args; image `ghcr.io/ggml-org/llama.cpp:server*`, "
               "or `:full*` (its tools.sh runs llama-server for `--server`); "
               "the build is the `-bNNNN` of a llama.cpp image tag",
    sets="`LLAMA_ARG_THREADS` = N, unless `--threads`/`-t` is in args (an arg wins over the "
         "env var; `--threads-batch`/`-tb` defaults to `-t` and has no env var); nothing "
         "for builds before b3683",
    warns="`-td`/`-tbd` (the draft model's threads) set like `-t` below; "
          "no model named (`-m`, `-hf`, `--docker-repo`, or `LLAMA_ARG_MODEL`, "
          "`LLAMA_ARG_HF_REPO`, ...): a router running each loaded model in a child "
          "llama-server of N threads, up to `--models-max` (default 4) at once, unless that is "
          "1; `-t`/`-tb` above N, <= 0 (every node CPU), or read by `std::stoi` only in part "
          "(`1e3` is 1), or only known when the container starts (`$(nproc)`); a build "
          "before b3683 (add "
          "`--threads N`); no build in the tag (env var set, `--threads N` named as the "
          "setting every build reads); `--threads=N`, `-tN`, a missing value or one "
          "`std::stoi` refuses stop llama-server at start-up: an **error** (args read as "
          "common/arg.cpp reads them, `_` as `-` in long flags)",
    sources=(("llama-server README",
              _SRC + "25d5b0c53f9a146f3d7a99a18610d9d623b5041e/tools/server/README.md"),
             ("PR #9105: LLAMA_ARG_* env vars",
              "https://github.com/ggml-org/llama.cpp/pull/9105")),
)
