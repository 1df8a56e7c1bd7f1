"""Record classes: the part of the standard library's `dataclasses` krm-fn uses, made cheap
to define.

Start-up is most of a small render's cost (docs/performance.md, P4). `dataclasses` imports
`inspect` (and with it `ast`, `dis`, `tokenize`: ~7 ms) and builds each class with one
`exec` per generated method (~0.45 ms a class; a render defines about 50). `dataclass` here
writes the same methods as `dataclasses.dataclass` for the options krm-fn uses, with one
`exec` per class, and imports nothing:

- `__init__(self, <fields in order>)`: defaults and `field(default_factory=...)`; a frozen
  record sets its fields through `object.__setattr__`; `__post_init__` is called when the
  class defines it;
- `__repr__`: `Name(a=1, b='x')` (fields with `repr=False` left out);
- `__eq__` (eq=True, the default): same class and equal field tuples (fields with
  `compare=False` left out), else NotImplemented;
- `__hash__`: frozen and eq: the hash of the field tuple; eq without frozen: None
  (unhashable, as for a dataclass), unless the class body defines `__hash__`;
- frozen: assigning or deleting a field raises `FrozenInstanceError` (an AttributeError);
- `slots=True`: the class is rebuilt with `__slots__` of its fields;
- `__match_args__`; `replace(obj, **changes)` is `dataclasses.replace`.

Annotations are read as written (`from __future__ import annotations` keeps them strings);
one naming `ClassVar` is not a field. Not supported (not used here): inheritance between
records, InitVar, kw_only, order, `dataclasses.fields` / `asdict` (modules that need those
use `dataclasses` itself). Semantics: the Python documentation of `dataclasses`
(https://docs.python.org/3/library/dataclasses.html).
"""
from __future__ import annotations

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Raised when a field of a frozen record is assigned or deleted."""


class Field:
    """What `field()` returns: `default` or `default_factory` (a zero-argument callable
    called once per instance), `repr` (in `__repr__`), `compare` (in `__eq__` and
    `__hash__`)."""

    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default, default_factory, repr, compare):
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(*, default=_MISSING, default_factory=_MISSING, repr: bool = True,
          compare: bool = True) -> Field:
    """A field with options, as `dataclasses.field` (only these four keywords)."""
    return Field(default, default_factory, repr, compare)


def dataclass(cls=None, /, *, frozen: bool = False, eq: bool = True, slots: bool = False):
    """`@dataclass` / `@dataclass(frozen=..., eq=..., slots=...)`: the class with the
    methods of the module docstring. Field names are the class's own annotations, in order."""
    def wrap(c):
        return _process(c, frozen, eq, slots)
    return wrap if cls is None else wrap(cls)


def _fields(cls) -> list[tuple[str, Field]]:
    out = []
    for name, ann in cls.__dict__.get("__annotations__", {}).items():
        if isinstance(ann, str) and ann.replace("typing.", "").startswith("ClassVar"):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if not isinstance(value, Field):
            value = Field(value, _MISSING, True, True)
        out.append((name, value))
    return out


def _process(cls, frozen: bool, eq: bool, slots: bool):
    fields = _fields(cls)
    names = [n for n, _ in fields]
    ns: dict = {"_MISSING": _MISSING, "_setattr": object.__setattr__,
                "FrozenInstanceError": FrozenInstanceError}
    params, body = [], []
    for name, f in fields:
        if f.default_factory is not _MISSING:
            ns[f"_f_{name}"] = f.default_factory
            params.append(f"{name}=_MISSING")
            value = f"_f_{name}() if {name} is _MISSING else {name}"
        else:
            if f.default is not _MISSING:
                ns[f"_d_{name}"] = f.default
                params.append(f"{name}=_d_{name}")
            else:
                params.append(name)
            value = name
        body.append(f"  _setattr(self, {name!r}, {value})" if frozen
                    else f"  self.{name} = {value}")
    if "__post_init__" in cls.__dict__:
        body.append("  self.__post_init__()")
    src = [f"def __init__(self, {', '.join(params)}):", *(body or ["  pass"])]
    shown = [n for n, f in fields if f.repr]
    parts = ", ".join(f"{n}={{self.{n}!r}}" for n in shown)
    src += ["def __repr__(self):",
            f"  return self.__class__.__qualname__ + f\"({parts})\""]
    compared = "".join(f"self.{n}," for n, f in fields if f.compare)
    other = compared.replace("self.", "other.")
    if eq:
        src += ["def __eq__(self, other):",
                "  if other.__class__ is self.__class__:",
                f"    return ({compared}) == ({other})",
                "  return NotImplemented"]
        if frozen:
            src += ["def __hash__(self):", f"  return hash(({compared}))"]
    if frozen:
        src += ["def __setattr__(self, name, value):",
                f"  if type(self) is __class or name in {tuple(names)!r}:",
                "    raise FrozenInstanceError(f'cannot assign to field {name!r}')",
                "  super(__class, self).__setattr__(name, value)",
                "def __delattr__(self, name):",
                f"  if type(self) is __class or name in {tuple(names)!r}:",
                "    raise FrozenInstanceError(f'cannot delete field {name!r}')",
                "  super(__class, self).__delattr__(name)"]
    if slots:
        d = {k: v for k, v in cls.__dict__.items()
             if k not in names and k not in ("__dict__", "__weakref__")}
        d["__slots__"] = tuple(names)
        cls = type(cls)(cls.__name__, cls.__bases__, d)
    ns["__class"] = cls
    exec("\n".join(src), ns)
    methods = ["__init__", "__repr__"]
    if eq:
        methods.append("__eq__")
        if frozen:
            methods.append("__hash__")
    if frozen:
        methods += ["__setattr__", "__delattr__"]
    for m in methods:
        fn = ns[m]
        fn.__qualname__ = f"{cls.__qualname__}.{m}"
        setattr(cls, m, fn)
    if eq and not frozen and "__hash__" not in cls.__dict__:
        cls.__hash__ = None
    for name, f in fields:
        if not slots and name in cls.__dict__:
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    cls.__match_args__ = tuple(names)
    cls.__record_fields__ = tuple(names)
    return cls


def replace(obj, /, **changes):
    """A copy of record `obj` with `changes` ({field: value}) applied, as
    `dataclasses.replace`: a new instance through `__init__` (so `__post_init__` runs
    again). Raises TypeError for a name that is not a field."""
    for name in obj.__record_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)
