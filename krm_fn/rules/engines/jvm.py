"""JVM: `-XX:ActiveProcessorCount=N` appended to `JAVA_TOOL_OPTIONS` (N = CPUs minus
reservedCpus: a JVM is one process), never replacing its other options; a higher count
later on the command line wins and is warned about.
"""
from __future__ import annotations

import re

from krm_fn import numbers
from krm_fn.pod import ContainerView, PodView
from krm_fn.results import WARNING
from krm_fn.rules.cmdline import count_text, env_entry, tokens
from krm_fn.rules.engines.base import Engine
from krm_fn.rules.envvars import add_env

_APC = re.compile(r"-XX:ActiveProcessorCount=(\S*)")


def check(pod: PodView, c: ContainerView, f, ctx, seen: dict) -> None:
    """Make JAVA_TOOL_OPTIONS carry -XX:ActiveProcessorCount=<base count>, then warn about
    a higher count in JAVA_OPTS, JDK_JAVA_OPTIONS or the command line."""
    cnt = f.count
    n = cnt.base
    want = f"-XX:ActiveProcessorCount={n}"
    why = (f"{cnt.base_why}; a JVM's availableProcessors() is min(affinity, cpu quota "
           f"rounded up), or the host count on JVMs that do not see the cgroup")
    entry = env_entry(c, "JAVA_TOOL_OPTIONS")
    if entry is None:
        add_env(pod, c, {"name": "JAVA_TOOL_OPTIONS", "value": want},
                f"container {c.name!r}: JAVA_TOOL_OPTIONS set to {want} ({why})")
    else:
        _tool_options(pod, c, entry, cnt, want, why)
    later = [(var, env_entry(c, var)) for var in ("JAVA_OPTS", "JDK_JAVA_OPTIONS")]
    sources = [(f"env {var}", c.path + ("env", ent[0], "value"), str(ent[1].get("value") or ""))
               for var, ent in later if ent is not None and "valueFrom" not in ent[1]]
    sources += [("the command line", t.path, t.text) for t in tokens(c)]
    for what, path, value in sources:
        for m in _APC.finditer(value):
            have = count_text(m.group(1))
            if have is None or have > n:
                pod.warn(path, f"container {c.name!r}: -XX:ActiveProcessorCount="
                               f"{numbers.brief(m.group(1))} in {what} comes after "
                               f"JAVA_TOOL_OPTIONS on the JVM command line and wins"
                               + ("" if have is not None else
                                  " (and is not a whole number: the JVM refuses to start)")
                               + f"; set it to {n} or remove it")


def _tool_options(pod: PodView, c: ContainerView, entry: tuple, cnt, want: str,
                  why: str) -> None:
    """An existing JAVA_TOOL_OPTIONS: append the flag, or lower a higher count."""
    n = cnt.base
    i, e = entry
    if "valueFrom" in e:
        pod.warn(c.path + ("env", i, "valueFrom"),
                 f"container {c.name!r}: JAVA_TOOL_OPTIONS comes from valueFrom and is "
                 f"left alone; make sure it holds {want}")
        return
    value = str(e.get("value") or "")
    m = None
    for m in _APC.finditer(value):
        pass
    if m is None:
        new = (value.rstrip() + " " + want).strip()
        pod.set(c.path + ("env", i, "value"), new,
                f"container {c.name!r}: {want} appended to JAVA_TOOL_OPTIONS ({why})",
                e.get("value"))
        return
    have = count_text(m.group(1))
    if have is None:
        pod.warn(c.path + ("env", i, "value"),
                 f"container {c.name!r}: JAVA_TOOL_OPTIONS -XX:ActiveProcessorCount="
                 f"{numbers.brief(m.group(1))} is not a whole number (ASCII digits) and is "
                 f"left alone; the JVM refuses to start with it: set {want}")
        return
    if have > n:
        new = value[:m.start()] + want + value[m.end():]
        pod.set(c.path + ("env", i, "value"), new,
                f"container {c.name!r}: JAVA_TOOL_OPTIONS "
                f"-XX:ActiveProcessorCount={m.group(1)} -> {n}: more processors "
                f"than {cnt.base_why}", e.get("value"),
                severity=WARNING)


ENGINE = Engine(
    "JVM",
    images=(r"(^|/)(eclipse-temurin|openjdk|amazoncorretto|ibm-semeru-runtimes|"
            r"sapmachine|zulu-openjdk[\w-]*|adoptopenjdk|djl-serving|tomcat|jetty)"
            r"(:|@|$)",),
    commands=(r"^(\S*/)?java(\s|$)",),
    env_names=("JAVA_TOOL_OPTIONS", "JAVA_OPTS", "JDK_JAVA_OPTIONS"),
    check=check,
    recognised="JDK/JRE images (`eclipse-temurin`, `openjdk`, `amazoncorretto`, …), "
               "`djl-serving`, `tomcat`, `jetty`; command `java`; "
               "`JAVA_TOOL_OPTIONS`/`JAVA_OPTS`/`JDK_JAVA_OPTIONS` present",
    sets="`-XX:ActiveProcessorCount=N` appended to `JAVA_TOOL_OPTIONS` (never replacing "
         "other options; a lower count kept, a higher one lowered). N = CPUs − "
         "`reservedCpus`, not divided by workers",
    warns="a higher count in `JAVA_OPTS`, `JDK_JAVA_OPTIONS` or the command line (it comes "
          "later and wins)",
    sources=(("java launcher: -XX:ActiveProcessorCount, JDK_JAVA_OPTIONS",
              "https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html"),
             ("JDK-8281181", "https://bugs.openjdk.org/browse/JDK-8281181")),
)
