"""JVM: `-XX:ActiveProcessorCount=N` appended to `JAVA_TOOL_OPTIONS` (N = CPUs minus
reservedCpus: a JVM is one process), never replacing its other options (an existing lower
count is kept, a higher one lowered with a warning); a higher count in `JAVA_OPTS`,
`JDK_JAVA_OPTIONS`, later on the command line or in `_JAVA_OPTIONS` (which HotSpot reads
after the command line: openjdk src/hotspot/share/runtime/arguments.cpp
`Arguments::parse_vm_init_args`) wins over `JAVA_TOOL_OPTIONS` and is warned about.

By JDK version (from the image tag: `eclipse-temurin:17-jre`, `openjdk:8u181-jdk`,
`amazoncorretto:11`, `tomcat:10-jdk17`): the option exists from JDK 10 (JDK-8146115) and
8u191 (its backport); JDK 9 and JDKs before 8u191 refuse to start with it ("Unrecognized
VM option", cloudfoundry/java-buildpack#658). An unknown -XX option is fatal, so krm-fn
adds it only when the JDK is known to have it: a version in the tag, or an image family
that never shipped a JDK without it (`eclipse-temurin`: its first binaries came in 2021).
Otherwise (an unknown version, `8` without an update number, a server image such as
`djl-serving` whose tag is no JDK version) nothing is added and a warning names it. A
count already in JAVA_TOOL_OPTIONS is the JVM's own (it starts with it) and is lowered as
before.
"""
from __future__ import annotations

import re

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.results import INFO, WARNING
from krm_fn.rules.cmdline import count_text, env_entry, tokens
from krm_fn.rules.engines import programs, recognition
from krm_fn.rules.engines.base import Engine, Release, release_for
from krm_fn.rules.envvars import add_env

# regexes as text: re compiles (and caches) each on its first use, so a render that meets
# no JVM container, or no JDK tag, compiles none of them
_APC = r"-XX:ActiveProcessorCount=(\S*)"
JDK_8146115 = "https://bugs.openjdk.org/browse/JDK-8146115"
RELEASES = (
    Release((8, 191), {"apc": True},
            "https://www.oracle.com/technetwork/java/javase/8u191-relnotes-5032181.html#JDK-8146115",
            "`-XX:ActiveProcessorCount` appears (JDK-8146115 backported); older JDKs refuse "
            "to start with it (\"Unrecognized VM option\")", label="8u191"),
    Release((9, 0), {"apc": False}, JDK_8146115,
            "JDK 9 does not have it (JDK-8146115 is fixed in 10)", label="9"),
    Release((10, 0), {"apc": True}, JDK_8146115, "every JDK from 10 has it", label="10"),
)
# families that never shipped a JDK without the option (Adoptium's first Temurin
# binaries, 2021: https://www.infoq.com/news/2021/10/adoptium-releases-temurin-jdk/)
ALWAYS_HAVE = ("eclipse-temurin",)
_JDK_NAME = r"(^|/)(" + "|".join(recognition.JDK_IMAGES) + r")$"
_ALWAYS = r"(^|/)(" + "|".join(ALWAYS_HAVE) + r")$"
_LEADING = (r"(?:open-)?([0-9]{1,3})(?:u([0-9]{1,4})|\.[0-9]{1,4}\.([0-9]{1,4}))?"
            r"(?![0-9])")
_IN_TAG = (r"(?:^|[-_.])(?:jdk|jre|java|openjdk)-?([0-9]{1,3})(?:u([0-9]{1,4}))?"
           r"(?![0-9])")


def jdk_version(c: ContainerView) -> tuple[tuple | None, str | None, str]:
    """(version, as written, image name) of the JDK the image tag of `c` names: version
    (feature, update) such as (8, 181) for `openjdk:8u181-jdk`, (17, 9) for
    `eclipse-temurin:17.0.9_9-jre`, (17, 0) for `tomcat:10-jdk17`; None when unknown —
    no tag, a digest only, no JDK version in the tag, or `8` without an update number
    (then "as written" is "8")."""
    image = c.data.get("image")
    if not isinstance(image, str) or len(image) > 512:
        return None, None, ""
    ref = image.split("@", 1)[0].lower()
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return None, None, ref              # no tag (a registry port is not one)
    m = re.match(_LEADING, tag) if re.search(_JDK_NAME, name) else None
    m = m or re.search(_IN_TAG, tag)
    if m is None:
        return None, None, name
    feature = int(m.group(1))
    update = m.group(2) or (m.group(3) if m.re.pattern == _LEADING else None)
    if feature == 8 and update is None:
        return None, "8", name
    shown = f"8u{int(update)}" if feature == 8 else str(feature)
    return (feature, int(update or 0)), shown, name


def has_option(c: ContainerView) -> tuple[bool | None, str | None]:
    """(whether the JDK of `c` knows -XX:ActiveProcessorCount: True, False or None for
    unknown; the JDK version as written) — by RELEASES, or ALWAYS_HAVE for an image
    family whose every JDK has it."""
    version, shown, name = jdk_version(c)
    if version is not None:
        rel = release_for(RELEASES, version)
        return rel is not None and rel.facts["apc"], shown
    if re.search(_ALWAYS, name):
        return True, shown
    return None, shown


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Make JAVA_TOOL_OPTIONS carry -XX:ActiveProcessorCount=<base count>, then warn about
    a higher count in JAVA_OPTS, JDK_JAVA_OPTIONS, the command line or _JAVA_OPTIONS."""
    cnt = f.count
    n = cnt.base
    want = f"-XX:ActiveProcessorCount={n}"
    why = (f"{cnt.base_why}; a JVM's availableProcessors() is min(affinity, cpu quota "
           f"rounded up), or the host count on JVMs that do not see the cgroup")
    entry = env_entry(c, "JAVA_TOOL_OPTIONS")
    has, shown = has_option(c)
    if entry is None:
        if has:
            add_env(pod, c, {"name": "JAVA_TOOL_OPTIONS", "value": want},
                    f"container {c.name!r}: JAVA_TOOL_OPTIONS set to {want} ({why})")
        else:
            _not_added(pod, c, c.path + ("env",), want, has, shown)
    else:
        _tool_options(pod, c, entry, cnt, want, why, (has, shown))
    later = [(var, env_entry(c, var))
             for var in ("JAVA_OPTS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")]
    sources = [(f"env {var}", c.path + ("env", ent[0], "value"), str(ent[1].get("value") or ""))
               for var, ent in later if ent is not None and "valueFrom" not in ent[1]]
    sources += [("the command line", t.path, t.text) for t in jvm_options(tokens(c))]
    for what, path, value in sources:
        for m in re.finditer(_APC, value):
            have = apc_value(m.group(1))
            if have is None or have > n or have <= 0:
                pod.warn(path, f"container {c.name!r}: -XX:ActiveProcessorCount="
                               f"{numbers.brief(m.group(1))} in {what} comes after "
                               f"JAVA_TOOL_OPTIONS on the JVM command line and wins"
                               + (" (and is not a whole number: the JVM refuses to start)"
                                  if have is None else
                                  " (a count of 0 or less: the JVM detects the processors "
                                  "itself)" if have <= 0 else "")
                               + f"; set it to {n} or remove it")


# java launcher options whose value is the next word (`java -help`): a word after them is
# no main class
_WITH_VALUE = frozenset(("-cp", "-classpath", "--class-path", "-p", "--module-path",
                         "--upgrade-module-path", "--add-modules", "--enable-native-access",
                         "--limit-modules", "--add-reads", "--add-exports", "--add-opens",
                         "--patch-module", "--source"))


def jvm_options(toks: list) -> list:
    """The words of `toks` that a java launcher reads as its own options: after each `java`
    word in program position (engines/programs.py: not `echo java ...`; a path ending in
    /java too; a script may run java more than once) up to the main class, `-jar <file>`
    or `-m`/`--module <module>` (java -help: what follows them is the application's
    arguments); an `@argfile` word is kept in place (the launcher expands it there and
    reads on). All of `toks` when no word in program position runs java (the image's
    entrypoint does, and which of the words are its options is not known)."""
    starts = programs.named(toks, ("java",))
    if not starts:
        return toks
    out = []
    for start in starts:
        i = start + 1
        while i < len(toks):
            word = toks[i].text
            if not word.startswith(("-", "@")) or word == ";":
                break
            out.append(toks[i])
            if word in ("-jar", "-m", "--module"):
                break
            i += 2 if word in _WITH_VALUE else 1
    return out


def apc_value(text: str) -> int | None:
    """The int HotSpot reads in `-XX:ActiveProcessorCount=<text>` (an int flag, default -1:
    a value of 0 or less makes os::active_processor_count() detect the processors;
    src/hotspot/share/runtime/globals.hpp), or None where it refuses to start (not a whole
    number, or beyond a 32-bit int)."""
    digits = text[1:] if text.startswith("-") else text
    n = count_text(digits) if digits.isdigit() else None
    if n is None or n > 2**31 - 1:
        return None
    return -n if text.startswith("-") else n


def _not_added(pod: PodView, c: ContainerView, path: tuple, want: str, has: bool | None,
               shown: str | None) -> None:
    """Warn that `want` is not added because the image's JDK does not know it (`has`
    False) or its version is unknown (None); `shown`: the JDK version as written."""
    image = c.data.get("image")
    if has is False:
        why = (f"the image {image!r} runs JDK {shown}, which does not know the option (it "
               f"came with JDK 10 and 8u191: JDK-8146115) and refuses to start with it "
               f"(\"Unrecognized VM option\"), so the JVM sizes its thread pools from the "
               f"CPUs it detects; use a JDK 8u191+ or 10+ image to get it")
    else:
        found = " (8 without an update number)" if shown else ""
        why = (f"the image {image!r} names no JDK version krm-fn can read{found}, and a JDK "
               f"before 8u191, or 9, refuses to start with an option it does not know "
               f"(\"Unrecognized VM option\"); better: add it yourself when the JDK is "
               f"8u191+ or 10+, or use a tag that names the JDK (eclipse-temurin:21-jre, "
               f"openjdk:8u392-jre, tomcat:10-jdk17)")
    pod.warn(path, f"container {c.name!r}: {want} not added to JAVA_TOOL_OPTIONS: {why} "
                   f"({JDK_8146115})")


def _tool_options(pod: PodView, c: ContainerView, entry: tuple, cnt, want: str,
                  why: str, jdk: tuple) -> None:
    """An existing JAVA_TOOL_OPTIONS: append the flag when the JDK (`jdk`: has_option)
    knows it, or lower a higher count."""
    n = cnt.base
    i, e = entry
    if "valueFrom" in e:
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: JAVA_TOOL_OPTIONS comes from valueFrom and is "
                 f"left alone; make sure it holds {want}")
        return
    value = str(e.get("value") or "")
    m = None
    for m in re.finditer(_APC, value):
        pass
    if m is None:
        if not jdk[0]:
            _not_added(pod, c, c.path + ("env", i, "value"), want, *jdk)
            return
        new = (value.rstrip() + " " + want).strip()
        pod.set(c.path + ("env", i, "value"), new,
                f"container {c.name!r}: {want} appended to JAVA_TOOL_OPTIONS ({why})",
                e.get("value"))
        return
    have = apc_value(m.group(1))
    if have is None:
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: JAVA_TOOL_OPTIONS -XX:ActiveProcessorCount="
                 f"{numbers.brief(m.group(1))} is not a whole number (ASCII digits) and is "
                 f"left alone; the JVM refuses to start with it: set {want}")
        return
    if have <= 0 or have > n:
        detect = have <= 0
        pod.set(c.path + ("env", i, "value"), value[:m.start()] + want + value[m.end():],
                f"container {c.name!r}: JAVA_TOOL_OPTIONS "
                f"-XX:ActiveProcessorCount={m.group(1)} -> {n}: "
                + (f"a count of 0 or less makes the JVM detect the processors itself ({why})"
                   if detect else f"more processors than {cnt.base_why}"),
                e.get("value"), severity=INFO if detect else WARNING)


ENGINE = Engine(
    recognition.of(__name__),
    check=check,
    releases=RELEASES,
    recognised="JDK/JRE images (`eclipse-temurin`, `openjdk`, `amazoncorretto`, …), "
               "`djl-serving`, `tomcat`, `jetty`; command `java`; "
               "`JAVA_TOOL_OPTIONS`/`JAVA_OPTS`/`JDK_JAVA_OPTIONS` present; the JDK version "
               "from the tag (`17-jre`, `8u181-jdk`, `10-jdk17`)",
    sets="`-XX:ActiveProcessorCount=N` appended to `JAVA_TOOL_OPTIONS` (never replacing "
         "other options; a lower count kept, a higher one lowered) when the JDK is known to "
         "have it: 8u191+ or 10+ in the tag, or an `eclipse-temurin` image (every Temurin "
         "JDK has it). N = CPUs − `reservedCpus`, not divided by workers",
    warns="a JDK without the option (before 8u191, 9: it refuses to start with it) or of "
          "unknown version (`latest`, `8`, a server's own tag): nothing added; a higher "
          "count in `JAVA_OPTS`, `JDK_JAVA_OPTIONS`, the command line's JVM options (before "
          "the main class, `-jar <file>` or `-m <module>`) or `_JAVA_OPTIONS` (it comes "
          "later and wins)",
    sources=(("java launcher: -XX:ActiveProcessorCount, JDK_JAVA_OPTIONS",
              "https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html"),
             ("JDK-8281181", "https://bugs.openjdk.org/browse/JDK-8281181"),
             ("cloudfoundry/java-buildpack#658: Unrecognized VM option before 8u191",
              "https://github.com/cloudfoundry/java-buildpack/issues/658")),
)
