"""A container's command line and env, read (never written): the shell words of command
and args with the field path each came from, `--flag value` lookup, and env entries by name.

Shared by the per-container facts (krm_fn/rules/facts.py) and the serving-engine checks
(krm_fn/rules/engines/); not a rule. Words are split with shell rules
(https://docs.python.org/3/library/shlex.html), as a `bash -c` script is
(krm_fn/shellwords.py).
"""
from __future__ import annotations

import functools
from collections import namedtuple

from krm_fn import numbers
from krm_fn.matching import DIGITS, span
from krm_fn.pod import ContainerView
from krm_fn.shellwords import (PARAMETERS, QUOTED_PARAMETERS, SHELL_LONG_ARGS,  # noqa: F401
                               SHELLS, script_start, unquoted_parameters, words)

# Engines are recognised from the first 64 KiB of a container's command and args (a
# launcher script longer than that is not read further): the words and the regexes run
# over them stay bounded whatever the input holds.
MAX_COMMAND_TEXT = 64 * 1024


class Token(namedtuple("Token", "text path")):
    """One word of the container's command/args: `text`, and where it was written (the
    field path of the command/args entry it came from)."""

    __slots__ = ()


def tokens(c: ContainerView) -> list[Token]:
    """command then args as the kubelet runs them (`$(VAR)` references expanded against the
    container's env: `expand`, `env_mapping`), split into words (an entry such as a
    `bash -c` script is split with shell rules, a `;` word between its lines), each with
    the path of its entry. Kept in the container view's memo (one item) for as long as
    command, args and the env they refer to are the same: the facts and the engine checks
    ask several times per container."""
    command, args = c.data.get("command"), c.data.get("args")
    key = (tuple(command) if isinstance(command, list) else None,
           tuple(args) if isinstance(args, list) else None)
    mapping = None
    if any(isinstance(e, str) and "$" in e for lst in key if lst for e in lst):
        mapping = env_mapping(c)
        key += (tuple(mapping.items()),)
    hit = c.memo.get("tokens")
    if hit is not None and hit[0] == key:
        return list(hit[1])
    entries: list[tuple] = []
    for k, lst in (("command", command), ("args", args)):
        for i, entry in enumerate(lst if isinstance(lst, list) else ()):
            if isinstance(entry, (dict, list)) or entry is None:
                continue
            entry = str(entry)
            if mapping is not None and "$" in entry:
                entry = expand(entry, mapping)
            entries.append((entry, c.path + (k, i)))
    script = _script_entry(entries) if isinstance(command, list) and command else None
    fields = script is not None and script >= 0 and unquoted_parameters(entries[script][0])
    out: list[Token] = []
    budget = MAX_COMMAND_TEXT
    for n, (entry, path) in enumerate(entries):
        if budget < 0:
            break
        if fields and n > script + 1:     # a positional parameter the script splits ($@)
            budget -= len(entry) + 1
            out.extend(Token(w, path) for w in entry.split())
            continue
        if script is not None and n != script or not entry:
            budget -= len(entry) + 1
            if budget >= 0:
                out.append(Token(entry, path))  # one argument, an empty one too
            continue
        for m, line in enumerate(entry.splitlines()):
            budget -= len(line) + 1
            if budget < 0:
                break
            if m:
                out.append(Token(";", path))    # a script's next line
            out.extend(Token(w, path) for w in words(line))
    start = script_start(out) if mapping else None
    if start is not None:
        out[start:] = _split_references(out[start:], mapping)
    c.memo["tokens"] = (key, tuple(out))
    return out


def _script_entry(entries: list) -> int:
    """The index in `entries` ((text, path) of each command and args entry) of the script a
    shell in them runs (`sh -c SCRIPT`, `tini -- bash -ec SCRIPT`: script_start), which
    is split into words with shell rules; -1 when no shell runs one: each entry is then
    one argument, as the kubelet hands it to the program (`--threads 4` is one word)."""
    for j, (entry, _) in enumerate(entries):
        if entry.rsplit("/", 1)[-1] in SHELLS:
            toks = [Token(e, p) for e, p in entries[j:j + 34]]
            start = script_start(toks)
            if start is not None:
                return j + start + (toks[start].text == "--" and start + 1 < len(toks))
    return -1


def _split_references(toks: list[Token], mapping: dict) -> list[Token]:
    """A script's words (`toks`) with each word that is one reference `$NAME` or `${NAME}`
    to an env var of the container whose known value (`mapping`, env_mapping) holds blanks
    replaced by that value's words: the shell splits an unquoted expansion at blanks
    (POSIX Shell Command Language 2.6.5, field splitting), so `exec server $EXTRA_ARGS`
    with EXTRA_ARGS="-t 32" runs `server -t 32`; a one-word value too where the word
    starts a command or follows `exec` (the program it names runs: `exec $SERVER -t 4`).
    Not when the script assigns NAME itself (_assigned, as `assignments` reads the
    script's words)."""
    own: dict = {}
    _assigned([t for t in toks if t.path == toks[0].path], True, own)
    out: list[Token] = []
    for t in toks:
        w = t.text
        name = w[2:-1] if w.startswith("${") and w.endswith("}") else w[1:]
        value = mapping.get(name) if w[:1] == "$" and _name(name) else None
        if value is None or not value.strip() or name in own:
            out.append(t)
        elif value.split() != [value] or "$" not in value and (
                not out or out[-1].text in (*SEPARATORS, "exec") or out[-1].text.endswith(";")):
            out.extend(Token(part, t.path) for part in value.split())
        else:
            out.append(t)
    return out


def expand(s: str, mapping: dict) -> str:
    """`s` with the kubelet's variable expansion (k8s.io/kubernetes
    third_party/forked/golang/expansion Expand, which ExpandContainerCommandAndArgs applies
    to each command and args entry): `$(NAME)` becomes mapping[NAME] when NAME is there and
    stays as written otherwise, `$$` becomes `$`, any other `$` stays."""
    out = []
    checkpoint = i = 0
    n = len(s)
    while i < n:
        if s[i] == "$" and i + 1 < n:
            out.append(s[checkpoint:i])
            nxt = s[i + 1]
            close = s.find(")", i + 2) if nxt == "(" else -1
            if nxt == "$":
                out.append("$")
                i += 1
            elif close >= 0:
                name = s[i + 2:close]
                out.append(mapping[name] if name in mapping else f"$({name})")
                i = close
            else:
                out.append("$" + nxt)
                i += 1
            checkpoint = i + 1
        i += 1
    return "".join(out) + s[checkpoint:]


def env_mapping(c: ContainerView) -> dict:
    """{name: value} of the container's env as the kubelet expands command and args with
    it (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: each literal value expanded
    against the entries before it; a later entry of a name wins). A resourceFieldRef on the
    container's own cpu is known: ceil(cpu / divisor) (envvars.field_ref_value, as the
    kubelet's containerResourceRuntimeValue gives it). A name whose value comes from
    elsewhere (another valueFrom, envFrom, service links) is unknown at render time and left
    out, so a reference to it stays unexpanded (`runtime_only` says so)."""
    out: dict = {}
    env = c.data.get("env")
    for e in env if isinstance(env, list) else ():
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        if e.get("valueFrom") is not None:
            from krm_fn.rules.envvars import field_ref_value
            out.pop(e["name"], None)
            known = field_ref_value(c, e["valueFrom"])
            if known is not None:
                out[e["name"]] = str(known)
            continue
        value = e.get("value")
        value = "" if value is None else str(value)
        value = expand(value, out) if value else value    # the entries before it
        out.pop(e["name"], None)            # insertion order: the last entry's place
        out[e["name"]] = value
    return out


def shell_script(toks: list[Token]) -> bool:
    """Whether the command line is a shell running a script (`sh -c '...'`, `bash -ec`,
    `/bin/sh -c`, `bash -euo pipefail -c`, `bash --norc -c`): its words then hold the
    shell's own expansions (`$VAR`, `$(cmd)`), which the shell makes at run time. The
    shell's options before `-c` are read as bash reads them ("Invoking Bash": `bash
    [options] [-o option] [-O shopt_option] -c string`): `-o` and `-O` (also `+o`, and in
    a cluster such as `-euo`) take the next word."""
    return script_start(toks) is not None


# what ends a simple command in a script's words (shlex keeps a `;` glued to the word before)
SEPARATORS = (";", "&&", "||", "|", "&", "|&")


def own_command(toks: list[Token], programs: tuple, spans: tuple,
                launcher: bool = False) -> list[Token]:
    """The words of the simple command that runs one of `programs` (a word whose last path
    part is one of them) in program position, from that word to the next separator (the
    last such command when there are several): not another command's flags (`curl -w`),
    the words that only name the program (`echo gunicorn -w 4`) or a wrapper's options
    before it (`numactl -C 0-3`). `spans`: the words in program position, (start, end)
    offsets in text(toks) (engines/programs.py spans(toks)); a word glued after `;` (`cd
    /a;prog`) starts at its offset. When no such word is in program
    position: then the command of the last word in program position, which may run the
    engine with its words (a script file, `/start.sh -tp 2`, or the image's entrypoint
    given the args: `serve m -tp 2`), not the words of the commands a script runs before
    it (`echo -tp 8; exec /start.sh`); the whole `toks` when no word is in program
    position (args that start with an option: the image's entrypoint gets them all).
    `launcher`: the program is a launcher whose parser leaves the words from the program it
    runs on to that program (argparse REMAINDER: `torchrun --nproc-per-node 2 serve.py
    --nproc-per-node 8` runs 2), so its words end before the next word in program
    position."""
    if not spans:
        return toks
    line = text(toks)
    at = next((a for a, b in reversed(spans) if line[a:b].rsplit("/", 1)[-1] in programs),
              spans[-1][0])
    offset = i = 0
    while offset + len(toks[i].text) < at:
        offset += len(toks[i].text) + 1
        i += 1
    first = toks[i] if at == offset else Token(toks[i].text[at - offset:], toks[i].path)
    out = []
    starts = {a for a, _ in spans if a > at} if launcher else ()
    for t in [first, *toks[i + 1:]]:
        if t.text in SEPARATORS or offset in starts:
            break
        offset += len(toks[i].text if t is first else t.text) + 1
        if t.text.endswith(";"):
            out.append(Token(t.text.rstrip(";"), t.path))
            break
        out.append(t)
    return out


_DECLARERS = frozenset(("export", "declare", "typeset", "readonly"))
_ASSIGN_LEADERS = _DECLARERS | {"exec", "command"}


def _name(word: str) -> bool:
    """Whether `word` is a shell variable name (letters, digits, `_`, not a digit first)."""
    return bool(word) and not word[0].isdigit() and all(
        ch.isalnum() and ch.isascii() or ch == "_" for ch in word)


def assignments(c: ContainerView) -> dict:
    """{NAME: (value as written, Token)} of the env assignments the container's command
    line makes itself, the last of each name: in a shell script, a `NAME=value` word that
    starts a simple command or follows `export`, `declare`/`typeset`/`readonly` (and their
    options), `exec`, `command`, `env` or another assignment; outside a script, those `env`
    (coreutils) takes before the program when it is the command (`env [-i] [-u NAME]
    NAME=value ... program`). The shell or `env` gives them to the program in place of the
    container's env of that name (POSIX Shell Command Language 2.9.1; a variable from the
    environment is exported already, so a plain assignment changes what later commands
    get). Kept in the container view's memo with the tokens they are read from."""
    toks = tokens(c)
    hit = c.memo.get("assignments")
    if hit is not None and hit[0] is c.memo["tokens"]:
        return hit[1]
    out: dict = {}
    start = script_start(toks)
    if start is not None:           # the script: the words of its command or args entry
        path = toks[start].path
        _assigned([t for t in toks[start:] if t.path == path], True, out)
    elif toks and toks[0].text.rsplit("/", 1)[-1] == "env":
        _assigned(toks, False, out)
    c.memo["assignments"] = (c.memo["tokens"], out)
    return out


def _assigned(toks: list[Token], script: bool, out: dict) -> None:
    """Fill `out` (assignments) from the words `toks` of a script (`script`) or of an
    `env` command line."""
    start, leader = True, "" if script else "env"   # at a command start; after which leader
    skip = False
    for t in toks if script else toks[1:]:
        w = t.text
        end = script and w.endswith(";")
        if end:
            w = w.rstrip(";")
        if script and w in SEPARATORS:
            start, leader = True, ""
            continue
        if skip:
            skip = False
        elif start:
            name, eq, value = w.partition("=")
            if eq and _name(name):
                out[name] = (value, t)
            elif w.rsplit("/", 1)[-1] == "env" or w in _ASSIGN_LEADERS:
                leader = "env" if w.rsplit("/", 1)[-1] == "env" else w
            elif leader and w[:1] == "-":
                skip = leader == "env" and w in ("-u", "--unset", "-C", "--chdir")
            elif leader in _DECLARERS and _name(w):
                pass                    # `export A B=1`: names and assignments
            else:
                start = False
                if not script:
                    return
        if end:
            start, leader = True, ""


def runtime_only(c: ContainerView, script: bool, word: str) -> bool:
    """Whether `word` (a word of the container's command line after the kubelet's
    expansion; `script`: it is a shell script's, shell_script) holds a value only known
    when the container starts: any `$` in a script's word (the shell expands it), or a
    `$(NAME)` the kubelet leaves for env it resolves at run time (a valueFrom other than the
    container's own cpu, envFrom)."""
    if "$" not in word:
        return False
    if script:
        return True
    if "$(" not in word:
        return False
    env = c.data.get("env")
    dynamic = {e.get("name") for e in env if isinstance(e, dict) and e.get("valueFrom")} \
        if isinstance(env, list) else set()
    return bool(c.data.get("envFrom")) or any(f"$({n})" in word for n in dynamic
                                              if isinstance(n, str))


def shell_value(c: ContainerView, script: bool, word: str) -> str | None:
    """What the shell of a script (`script`: shell_script of the command line) makes of
    `word` when it is one reference `$NAME` or `${NAME}` to an env var the container sets
    with a known value (env_mapping), or that the script assigns a value without `$`
    (assignments: its last); None for any other word."""
    if not (script and word.startswith("$")):
        return None
    name = word[2:-1] if word.startswith("${") and word.endswith("}") else word[1:]
    if not _name(name):
        return None
    own = assignments(c).get(name)
    if own is not None:
        return None if "$" in own[0] else own[0]
    return env_mapping(c).get(name)


def text(toks: list[Token]) -> str:
    """The words joined by single spaces (what the engine regexes run over)."""
    return " ".join(t.text for t in toks)


def flag(toks: list[Token], names: tuple) -> tuple[str, Token, str] | None:
    """(value, token holding the value, the flag as written) of the last `--flag value` /
    `--flag=value` with a name in `names`, or None. A one-letter short option (`-w`) also
    takes its value glued on (`-w4`), as argparse and click read it. A `--` word ends the
    options: the words after it are positional (argparse, click, clap and getopt alike),
    `gunicorn -- app:app -w 3` sets no workers."""
    found = None
    short = tuple(n for n in names if len(n) == 2 and n[0] == "-" and n[1] != "-")
    for i, t in enumerate(toks):
        s = t.text
        if s == "--":
            break
        if "=" not in s and s not in names and not (short and s.startswith(short)):
            continue                # neither `--flag value` nor `--flag=value` (most words)
        for n in names:
            if s == n and i + 1 < len(toks):
                found = (toks[i + 1].text, toks[i + 1], f"{n} {toks[i + 1].text}")
            elif s.startswith(n + "="):
                found = (s[len(n) + 1:], t, s)
            elif n in short and len(s) > 2 and s.startswith(n):
                found = (s[2:], t, s)
    return found


def count_text(value: str) -> int | None:
    """A whole number written as ASCII digits (surrounding blanks allowed), at most
    numbers.MAX_COUNT, else None (krm_fn/numbers.py: never raises)."""
    return numbers.count(value)


def image_version(c: ContainerView) -> tuple | None:
    """The version an image tag names: `vllm-cpu:v0.8.5` -> (0, 8, 5), `x:0.9.0-cpu` ->
    (0, 9, 0), `x:2.1` -> (2, 1, 0); None for no tag, `latest`, a digest-only reference or
    a tag that does not start with a version (the engine's version is then unknown). A tag
    with a digest (`x:v0.9.1@sha256:...`) still names its version."""
    image = c.data.get("image")
    if not isinstance(image, str) or len(image) > 512:
        return None
    return _image_version(image)


@functools.lru_cache(maxsize=1024)
def _image_version(image: str) -> tuple | None:
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return None                     # no tag (a registry port is not one)
    return tag_version(tag)


def tag_version(tag: str) -> tuple | None:
    """The version a tag starts with: an optional `v`, then two to four dot-separated
    numbers of 1-6 ASCII digits, not followed by a digit (the regular expression
    `v?([0-9]{1,6})\\.([0-9]{1,6})(?:\\.([0-9]{1,6}))?(?:\\.([0-9]{1,6}))?(?![0-9])` with
    `match`, as a character test): (major, minor, patch, 0 when absent) plus the fourth
    number when there is one; None when the tag starts otherwise."""
    i = 1 if tag[:1] == "v" else 0
    parts = []
    for n in range(4):
        if n:
            if tag[i:i + 1] != ".":
                break
            i += 1
        j = span(tag, i, DIGITS)
        if not 1 <= j - i <= 6 or n == 0 and tag[j:j + 1] != ".":
            if n < 2:
                return None             # major and minor are required
            break                       # a third or fourth number is optional
        parts.append(int(tag[i:j]))
        i = j
    return (*parts, *(0,) * (3 - len(parts)))


def env_value(c: ContainerView, name: str) -> str | None:
    """The literal value of env `name` (last entry wins), None when absent or valueFrom;
    without an env entry of that name, the value the container's envFrom gives from a
    ConfigMap of the input (env_from: env wins over envFrom)."""
    value, found = None, False
    for e in c.data.get("env") or []:
        if isinstance(e, dict) and e.get("name") == name:
            value = None if "valueFrom" in e else str(e.get("value") or "")
            found = True
    if not found and c.data.get("envFrom"):
        got = env_from(c).get(name)
        return None if got is None else got[0]
    return value


def env_from(c: ContainerView) -> dict:
    """{name: (value, field path of its envFrom entry)} of the env the container's envFrom
    gives from the input's ConfigMaps, as the kubelet builds it (pkg/kubelet/kubelet_pods.go
    makeEnvironmentVariables: the sources in order, each key with the source's prefix, a
    later source winning). The ConfigMaps are c.memo["configmaps"] = ({(namespace, name):
    ConfigMap}, the pod's namespace), which facts.compute sets; a source not in the input
    gives nothing (its values are known only in the cluster)."""
    src = c.memo.get("configmaps")
    if src is None:
        return {}
    hit = c.memo.get("env_from")
    if hit is not None:
        return hit
    out: dict = {}
    cms, namespace = src
    sources = c.data.get("envFrom")
    for i, e in enumerate(sources if isinstance(sources, list) else ()):
        ref = e.get("configMapRef") if isinstance(e, dict) else None
        cm = cms.get((namespace, str(ref.get("name") or ""))) if isinstance(ref, dict) \
            else None
        data = cm.get("data") if isinstance(cm, dict) else None
        if not isinstance(data, dict):
            continue
        prefix = e.get("prefix")
        prefix = prefix if isinstance(prefix, str) else ""
        for k, v in data.items():
            out[prefix + str(k)] = ("" if v is None else str(v), c.path + ("envFrom", i))
    c.memo["env_from"] = out
    return out


def env_names(c: ContainerView) -> frozenset:
    """The names of the container's env entries (entries without a string name skipped)."""
    env = c.data.get("env")
    return frozenset(e["name"] for e in env
                     if isinstance(e, dict) and isinstance(e.get("name"), str)) \
        if isinstance(env, list) else frozenset()


def env_entry(c: ContainerView, name: str) -> tuple[int, dict] | None:
    """(index, entry) of the last env entry named `name`, or None."""
    found = None
    for i, e in enumerate(c.data.get("env") or []):
        if isinstance(e, dict) and e.get("name") == name:
            found = (i, e)
    return found


def env_path(c: ContainerView, name: str) -> tuple:
    """The field path of the last env entry named `name`, else of the envFrom entry that
    gives it (env_from), else of `env` itself."""
    found = env_entry(c, name)
    if found is not None:
        return c.path + ("env", found[0])
    got = env_from(c).get(name) if c.data.get("envFrom") else None
    return got[1] if got is not None else c.path + ("env",)


def env_ok(c: ContainerView) -> bool:
    """True when env is absent or a list of mappings each with a non-empty string name."""
    env = c.data.get("env")
    return env is None or (isinstance(env, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"] for e in env))
