"""The types of function config fields. Each type converts and checks a value (raising
`ConfigError` with the field path), reads the ConfigMap (flat) spelling of a value,
describes itself for `krm-fn explain` and the docs, and gives its JSON Schema.

`kind` is the short name `krm-fn explain` shows (`<int>`); `label` how the type reads to a
person. `nullable`: whether the type takes null for a field whose default is null. Objects
and object lists (`Object`, `ObjectList`, in krm_fn.config.fields) are types too.
"""
from __future__ import annotations

import re

from krm_fn.config.checks import MAX_EXTRA_DEPTH, check_plain
from krm_fn.config.values import (FIELD_NAME, MAX_LONG_TEXT, MAX_QUANTITY_TEXT, MAX_TEXT,
                                  ConfigError, check_text, control_char, num,
                                  parse_quantity, scalar_str, short, type_name)
from krm_fn.matching import LazyPattern
from krm_fn.quantity import ratio

TRUE = ("true", "True", "TRUE")
FALSE = ("false", "False", "FALSE")


class Type:
    """Base of the field types. Subclasses override `convert` (a non-null value -> its
    Python form, or ConfigError naming `path`) and `json_schema`."""

    kind = ""
    label = ""
    nullable = True
    leaf = True                 # not an object or a list of objects

    def convert(self, v: object, path: str, flat: bool) -> object:
        """`v` (not None) as its Python value; `flat`: `v` comes from a ConfigMap `data`
        value (strings stand for lists, maps and JSON). Raises ConfigError naming `path`."""
        raise NotImplementedError(self.kind)

    def default_value(self, default: object) -> object:
        """The Python value of a field default (a fresh copy of lists and mappings)."""
        if isinstance(default, (list, dict)):
            return type(default)(default)
        return default

    def facts(self) -> list[tuple[str, str]]:
        """(heading, text) rows `krm-fn explain` shows: VALUES, RANGE, MIN ITEMS."""
        return []

    def json_schema(self, flat: bool = False) -> dict:
        """JSON Schema of a value (without description/default). `flat`: as a ConfigMap
        `data` value. Raises ValueError for a type without one, so a new type fails the
        schema tests instead of being let through."""
        raise ValueError(f"no JSON Schema for config field kind {self.kind!r}")


def _scalar_schema() -> dict:
    """A value scalar_str turns into a string: string, number or boolean."""
    return {"type": ["string", "number", "boolean"], "maxLength": MAX_TEXT}


class Str(Type):
    """A string; a YAML number or boolean is taken as its text."""

    kind, label = "str", "string"

    def convert(self, v, path, flat):
        return scalar_str(v, path, text=True)

    def json_schema(self, flat=False):
        return _scalar_schema()


class Text(Type):
    """Multi-line text of at most MAX_LONG_TEXT characters, without control characters."""

    kind, label = "text", "string (multi-line text)"

    def convert(self, v, path, flat):
        if not isinstance(v, str):
            raise ConfigError(path, f"expected text, found {type_name(v)}")
        if len(v) > MAX_LONG_TEXT:
            raise ConfigError(path, f"is {len(v)} characters long; at most {MAX_LONG_TEXT} are "
                                    f"accepted")
        for n, line in enumerate(v.splitlines(), 1):
            c = control_char(line.rstrip("\r"))
            if c is not None:
                raise ConfigError(path, f"line {n} contains the control character {c!r}")
        return v

    def json_schema(self, flat=False):
        return {"type": "string", "maxLength": MAX_LONG_TEXT}


class Int(Type):
    """A whole number from `minimum` to `maximum` (inclusive, None: unbounded); a string of
    digits (surrounding whitespace, leading zeros allowed) is read as the number."""

    kind, label = "int", "integer"

    def __init__(self, minimum: int | None = None, maximum: int | None = None):
        self.minimum, self.maximum = minimum, maximum

    def convert(self, v, path, flat):
        if isinstance(v, bool) or not isinstance(v, (int, str)) or \
                (isinstance(v, str) and not re.fullmatch(r"-?[0-9]+", v.strip())):
            raise ConfigError(path, f"expected a whole number, found {short(v)}")
        if isinstance(v, str):
            digits = v.strip().lstrip("-").lstrip("0")
            if len(digits) > 30:  # beyond every bound; int() refuses > 4300 digits anyway
                negative = v.strip().startswith("-")
                bound = (f"at least {self.minimum}" if negative and self.minimum is not None
                         else f"at most {self.maximum}" if not negative
                         and self.maximum is not None else "a smaller number")
                raise ConfigError(path, f"must be {bound}, found a {len(digits)}-digit number")
        n = int(v)
        if self.minimum is not None and n < self.minimum:
            raise ConfigError(path, f"must be at least {self.minimum}, found {num(n)}")
        if self.maximum is not None and n > self.maximum:
            raise ConfigError(path, f"must be at most {self.maximum}, found {num(n)}")
        return n

    def facts(self):
        if self.minimum is None and self.maximum is None:
            return []
        lo = "" if self.minimum is None else str(self.minimum)
        hi = "" if self.maximum is None else str(self.maximum)
        return [("RANGE", f"{lo}..{hi}")]

    def json_schema(self, flat=False):
        from krm_fn.config.patterns import int_pattern
        s: dict[str, object] = {"type": ["integer", "string"],
                             "pattern": int_pattern(self.minimum, self.maximum)}
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        return s


class Bool(Type):
    """true or false; also the strings true/True/TRUE/false/False/FALSE."""

    kind, label = "bool", "boolean"

    def convert(self, v, path, flat):
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and (v in TRUE or v in FALSE):
            return v in TRUE
        raise ConfigError(path, f"expected true or false, found {short(v)}")

    def json_schema(self, flat=False):
        return {"type": ["boolean", "string"], "enum": [True, False, *sorted(TRUE),
                                                         *sorted(FALSE)]}


class Quantity(Type):
    """A Kubernetes quantity greater than zero, as a `krm_fn.quantity.Quantity`: `Cpu`
    ("4", "500m"; `nanos`: nanocores), `Memory` ("128Mi"; `whole`: bytes)."""

    def convert(self, v, path, flat):
        s = scalar_str(v, path)
        q = parse_quantity(s, self.kind, path)
        if q.nanos == 0:
            raise ConfigError(path, f"must be greater than zero, found {s!r}")
        return q

    def default_value(self, default):
        return None if default is None else self.convert(default, "", False)

    def json_schema(self, flat=False):
        from krm_fn.config.patterns import QUANTITY
        return {"type": ["string", "number"], "pattern": QUANTITY, "exclusiveMinimum": 0,
                "maxLength": MAX_QUANTITY_TEXT}


class Cpu(Quantity):
    """A CPU quantity in cores."""

    kind, label = "cpu", "CPU quantity in cores (\"4\", \"500m\")"


class Memory(Quantity):
    """A memory quantity in bytes."""

    kind, label = "memory", "memory quantity in bytes with a unit (\"128Mi\", \"2Gi\")"


DURATION = LazyPattern(r"(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|μs|ms|s|m|h))+")
_DURATION_PART = LazyPattern(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_NS = {"ns": 1, "us": 10 ** 3, "µs": 10 ** 3, "μs": 10 ** 3, "ms": 10 ** 6,
                "s": 10 ** 9, "m": 60 * 10 ** 9, "h": 3600 * 10 ** 9}
# Go's time.Duration is an int64 of nanoseconds: 2562047h47m16.854775807s at most.
_MAX_DURATION_NS = 2 ** 63 - 1


class Duration(Type):
    """A Go duration greater than zero ("30s", "1m30s"), kept as written."""

    kind, label, nullable = "duration", "Go duration (\"30s\", \"1m30s\")", False

    def convert(self, v, path, flat):
        s = scalar_str(v, path)
        if len(s) > MAX_QUANTITY_TEXT or not DURATION.fullmatch(s):
            raise ConfigError(path, f"expected a duration such as 30s or 1m30s, found "
                                    f"{short(s)}")
        parts = [(ratio(n), _DURATION_NS[unit]) for n, unit in _DURATION_PART.findall(s)]
        scale = max(d for (_, d), _ in parts)       # powers of 10: a multiple of every d
        ns = sum(n * (scale // d) * unit for (n, d), unit in parts)     # ns * scale, exactly
        if ns > _MAX_DURATION_NS * scale:
            raise ConfigError(path, f"{short(s)} is longer than the longest Go duration "
                                    f"(2562047h47m16.854775807s); the kubelet cannot parse it")
        if ns < scale:
            raise ConfigError(path, f"must be greater than zero, found {short(s)}")
        return s

    def json_schema(self, flat=False):
        return {"type": "string", "pattern": f"^(?:{DURATION.pattern})$",
                "maxLength": MAX_QUANTITY_TEXT}


class Enum(Type):
    """One of `choices` (strings, case-sensitive)."""

    kind, label = "choice", "string, one of VALUES"

    def __init__(self, *choices: str):
        self.choices = tuple(choices)

    def convert(self, v, path, flat):
        s = scalar_str(v, path, text=True)
        if s not in self.choices:
            same = [c for c in self.choices if c.lower() == s.lower()]
            hint = f" (write {same[0]!r}: the spelling is case-sensitive)" if same else ""
            raise ConfigError(path, f"must be one of {', '.join(self.choices)}; found "
                                    f"{short(s)}{hint}")
        return s

    def facts(self):
        return [("VALUES", ", ".join(self.choices))]

    def json_schema(self, flat=False):
        return {"type": "string", "enum": list(self.choices)}


MAX_ITEMS = 1024     # entries of a config list, unless the field sets its own bound


def check_count(n: int, min_items: int, max_items: int, item: str, path: str) -> None:
    """Raise ConfigError at `path` when a list of `n` entries (each one `item`) is shorter
    than `min_items` or longer than `max_items`."""
    if n < min_items:
        raise ConfigError(path, f"must list at least {'one' if min_items == 1 else min_items} "
                                f"{item}")
    if n > max_items:
        raise ConfigError(path, f"has {n} entries; at most {max_items} are accepted")


class List(Type):
    """A list of distinct strings (`of`: an Enum limits them to its choices), at least
    `min_items` long (`item` names one entry in that error); the ConfigMap spelling is
    comma-separated."""

    nullable = False

    def __init__(self, of: Enum | None = None, min_items: int = 0, item: str = "entry",
                 max_items: int = MAX_ITEMS):
        self.of, self.min_items, self.item, self.max_items = of, min_items, item, max_items
        self.kind = "choicelist" if of else "list"
        self.label = "list of VALUES" if of else "list of strings"

    def convert(self, v, path, flat):
        if flat and isinstance(v, str):
            items = [x.strip() for x in v.split(",") if x.strip()]
            for i, x in enumerate(items):
                check_text(x, f"{path}[{i}]")
        elif isinstance(v, list):
            items = [scalar_str(x, f"{path}[{i}]", text=True) for i, x in enumerate(v)]
        elif isinstance(v, str) and control_char(v) is None and len(v) <= 200:
            raise ConfigError(path, f"expected a list, found a string (write [{v}])")
        else:
            raise ConfigError(path, f"expected a list, found {type_name(v)}")
        check_count(len(items), self.min_items, self.max_items, self.item, path)
        seen: set = set()
        for i, x in enumerate(items):
            if self.of and x not in self.of.choices:
                raise ConfigError(f"{path}[{i}]", f"must be one of {', '.join(self.of.choices)};"
                                                  f" found {short(x)}")
            if x in seen:
                raise ConfigError(f"{path}[{i}]", f"{short(x)} is listed twice")
            seen.add(x)
        return items

    def facts(self):
        return ((self.of.facts() if self.of else [])
                + ([("MIN ITEMS", str(self.min_items))] if self.min_items else [])
                + ([("MAX ITEMS", str(self.max_items))] if self.max_items != MAX_ITEMS
                   else []))

    def json_schema(self, flat=False):
        s: dict[str, object] = {"type": ["array", "string"] if flat else "array",
                             "items": self.of.json_schema() if self.of else _scalar_schema(),
                             "uniqueItems": True}
        if self.min_items:
            s["minItems"] = self.min_items
        s["maxItems"] = self.max_items
        choices = self.of.choices if self.of else ()
        if flat and choices and all(re.fullmatch(r"[A-Za-z0-9-]+", c) for c in choices):
            one = "(" + "|".join(choices) + r")\s*(,[\s,]*|$)"
            s["pattern"] = rf"^[\s,]*({one}){'+' if self.min_items else '*'}$"
        return s


class StrMap(Type):
    """A mapping of string to string; the ConfigMap spelling is `k=v,k2=v2`. `labels`: its
    values are text (label values), so an unquoted decimal number is refused
    (values.scalar_str); else a value may be a number (`kubeReserved: {cpu: 0.5}`)."""

    kind, label = "map", "mapping of string to string"

    def __init__(self, labels: bool = False):
        self.labels = labels

    def convert(self, v, path, flat):
        if flat and isinstance(v, str):
            return _flat_map(v, path)
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {type_name(v)}")
        out: dict[str, str] = {}
        for a, b in v.items():
            if a is None or isinstance(a, (dict, list)):
                raise ConfigError(path, f"keys must be strings, found {type_name(a)}")
            key = scalar_str(a, path, text=True)
            if key in out:
                raise ConfigError(f"{path}.{key}", f"key {short(key)} is given twice")
            out[key] = scalar_str(b, f"{path}.{key}", text=self.labels)
        return out

    def json_schema(self, flat=False):
        return {"type": ["object", "string"] if flat else "object",
                "additionalProperties": _scalar_schema()}


def _flat_map(v: str, path: str) -> dict[str, str]:
    """`k=v,k2=v2` as a mapping; raises ConfigError naming `path`."""
    out: dict[str, str] = {}
    for part in [p.strip() for p in v.split(",") if p.strip()]:
        if "=" not in part:
            raise ConfigError(path, f"expected key=value pairs separated by commas, "
                                    f"found {short(part)}")
        a, b = (x.strip() for x in part.split("=", 1))
        check_text(a, path)
        if not a:
            raise ConfigError(path, f"empty key in {short(part)}")
        if a in out:
            raise ConfigError(f"{path}.{a}", f"key {short(a)} is given twice")
        out[a] = check_text(b, f"{path}.{a}")
    return out


class _JsonError(ValueError):
    pass


def _json_constant(name: str) -> object:
    raise _JsonError(f"{name} is not a JSON number")


def _json_pairs(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _JsonError(f"duplicate key {short(key)}")
        out[key] = value
    return out


class PlainMap(Type):
    """A mapping of plain data (check_plain) keyed by KubeletConfiguration field names; the
    ConfigMap spelling is a JSON object."""

    kind, label = "any", "mapping of plain data"

    def convert(self, v, path, flat):
        if flat and isinstance(v, str):
            import json
            text = v
            try:
                v = json.loads(text, parse_constant=_json_constant,
                               object_pairs_hook=_json_pairs) if text.strip() else {}
            except RecursionError:
                raise ConfigError(path, f"JSON nested more than {MAX_EXTRA_DEPTH} levels "
                                        f"deep") from None
            except _JsonError as e:
                raise ConfigError(path, f"{e}; write a plain JSON object such as "
                                        f"{{\"maxPods\": 110}}") from None
            except ValueError as e:
                raise ConfigError(path, f"expected a JSON object such as "
                                        f"{{\"maxPods\": 110}}, found {short(text)} "
                                        f"({short(str(e), 200)[1:-1]})") from None
        if not isinstance(v, dict):
            raise ConfigError(path, f"expected a mapping, found {type_name(v)}")
        check_plain(v, path)
        return v

    def json_schema(self, flat=False):
        return {"type": ["object", "string"] if flat else "object",
                "propertyNames": {"pattern": f"^{FIELD_NAME.pattern}$"}}


class PlainData(Type):
    """Plain data of any shape, checked by the code that reads it (e.g.
    krm_fn.node.memory.parse); the ConfigMap form keeps the string as written."""

    kind, label = "data", "plain data of any shape"

    def convert(self, v, path, flat):
        if not (flat and isinstance(v, str)):
            check_plain(v, path, 2)
        return v

    def json_schema(self, flat=False):
        return {}
