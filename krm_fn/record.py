"""Record classes: the part of the standard library's `dataclasses` krm-fn uses, made cheap
to define.

Start-up is most of a small render's cost (docs/performance.md, P4). `dataclasses` imports
`inspect` (and with it `ast`, `dis`, `tokenize`: ~7 ms) and compiles generated source for
each class (~0.45 ms a class; a render defines about 50). `dataclass` here gives the same
methods as `dataclasses.dataclass` for the options krm-fn uses and imports nothing new:
`__init__` is a template per shape (number of fields, frozen, whether it has default
factories, whether it has `__post_init__`; krm_fn/record_init.py, loaded as bytecode)
renamed per class; the other methods are closures over the field names (C `attrgetter`):

- `__init__(self, <fields in order>)`: defaults and `field(default_factory=...)`; a frozen
  record stores its fields in the instance `__dict__` (what `object.__setattr__` does for
  a name no data descriptor of the class holds; a record's fields are plain class
  attributes at most, its defaults), or through `object.__setattr__` when the class has
  `__slots__` (`slots=True`, or its own);
  `__post_init__` is called when the class defines it;
- `__repr__`: `Name(a=1, b='x')` (fields with `repr=False` left out);
- `__eq__` (eq=True, the default): same class and equal field tuples (fields with
  `compare=False` left out), else NotImplemented;
- `__hash__`: frozen and eq: the hash of the field tuple; eq without frozen: None
  (unhashable, as for a dataclass), unless the class body defines `__hash__`;
- frozen: assigning or deleting a field raises `FrozenInstanceError` (an AttributeError);
- `slots=True`: the class is rebuilt with `__slots__` of its fields;
- `__match_args__`; `replace(obj, **changes)` is `dataclasses.replace`;
- `__dataclass_fields__`, made on first access (importing `dataclasses` then), so that
  `dataclasses.fields`, `asdict`, `replace` and `is_dataclass` work on records too.

Annotations are read as written (`from __future__ import annotations` keeps them strings);
one naming `ClassVar` is not a field. Not supported (not used here): inheritance between
records, InitVar, kw_only, order. Semantics: the Python documentation of `dataclasses`
(https://docs.python.org/3/library/dataclasses.html).
"""
from __future__ import annotations

import builtins
from operator import attrgetter
from types import FunctionType

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
    own = cls.__dict__
    for name, ann in own.get("__annotations__", {}).items():
        if isinstance(ann, str) and ann.replace("typing.", "").startswith("ClassVar"):
            continue
        value = own.get(name, _MISSING)
        if not isinstance(value, Field):
            value = Field(value, _MISSING, True, True)
        out.append((name, value))
    return out


def _process(cls, frozen: bool, eq: bool, slots: bool):
    fields = _fields(cls)
    names = tuple([n for n, _ in fields])
    if slots:
        d = {k: v for k, v in cls.__dict__.items()
             if k not in names and k not in ("__dict__", "__weakref__")}
        d["__slots__"] = names
        qualname = cls.__qualname__
        cls = type(cls)(cls.__name__, cls.__bases__, d)
        cls.__qualname__ = qualname
    # a frozen record whose instances have no __dict__ (slots) sets through object.__setattr__
    no_dict = frozen and "__slots__" in cls.__dict__
    cls.__init__ = _init(cls, fields, names, SLOTS_FROZEN if no_dict else frozen)
    cls.__repr__ = _repr(cls, tuple([n for n, f in fields if f.repr]))
    if eq:
        key = _key(tuple([n for n, f in fields if f.compare]))

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented
        _method(cls, __eq__)
        if frozen:
            def __hash__(self):
                return hash(key(self))
            _method(cls, __hash__)
        elif "__hash__" not in cls.__dict__:
            cls.__hash__ = None
    if frozen:
        _frozen(cls, names)
    if not slots:
        own = cls.__dict__
        for name, f in fields:
            if name in own:
                if f.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)
    cls.__match_args__ = names
    cls.__record_fields__ = names
    cls.__dataclass_fields__ = _DataclassFields(fields)
    return cls


class _DataclassFields:
    """A record class's `__dataclass_fields__`, made on first access by running
    `dataclasses.dataclass` on a stand-in class with the same fields (which imports
    dataclasses then, never on a render): so `dataclasses.fields`, `asdict`, `replace`
    and `is_dataclass` work on records as on dataclasses."""

    def __init__(self, fields: list):
        self.fields = fields

    def __get__(self, obj, cls):
        import dataclasses
        body: dict = {"__annotations__": {}}
        for name, f in self.fields:
            body["__annotations__"][name] = cls.__dict__.get("__annotations__", {}).get(name)
            kw = {"repr": f.repr, "compare": f.compare}
            if f.default_factory is not _MISSING:
                kw["default_factory"] = f.default_factory
            elif f.default is not _MISSING:
                kw["default"] = f.default
            body[name] = dataclasses.field(**kw)
        out = dataclasses.dataclass(type(cls.__name__, (), body)).__dataclass_fields__
        type.__setattr__(cls, "__dataclass_fields__", out)
        return out


def _method(cls, fn) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
    setattr(cls, fn.__name__, fn)


def _key(names: tuple):
    """A function of an instance: the tuple of its fields `names` (C attrgetter)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _repr(cls, shown: tuple):
    def __repr__(self):
        return self.__class__.__qualname__ + "(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in shown) + ")"
    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _frozen(cls, names: tuple) -> None:
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    _method(cls, __setattr__)
    _method(cls, __delattr__)


def _init(cls, fields: list, names: tuple, frozen: bool | int):
    """`__init__` for `fields` (their `names`, in order): the code template of its shape
    (field count, frozen (False, True or SLOTS_FROZEN), whether a field has a default
    factory, whether the class has __post_init__) with placeholder names `_pI`, renamed to the field names (argument and
    attribute names); defaults are the function's __defaults__. A field with a default
    factory defaults to _MISSING, which the template replaces by calling the global `_kI`
    (the factory)."""
    post_init = "__post_init__" in cls.__dict__
    factories = {}
    defaults = []
    misplaced = None        # the first required field after a default (refused below)
    for i, (name, f) in enumerate(fields):
        if f.default_factory is not _MISSING:
            factories[f"_k{i}"] = f.default_factory
            defaults.append(_MISSING)
        elif f.default is not _MISSING:
            defaults.append(f.default)
        elif defaults and misplaced is None:
            misplaced = name
    shape = (len(fields), frozen, bool(factories), post_init)
    _SHAPES_SEEN.setdefault(shape, cls.__module__)
    code = _INIT_CODE.get(shape)
    if code is None:
        code = _INIT_CODE[shape] = _init_code(*shape)
    for n in names:
        if n.startswith(("_p", "_k")) or n in ("self", "_MISSING", "_setattr", "_d"):
            raise TypeError(f"{cls.__name__}: a field name krm_fn.record reserves: "
                            f"{list(names)}")
    if misplaced is not None:
        raise TypeError(f"non-default argument {misplaced!r} follows default argument")
    rename = _renamer(names)
    code = code.replace(
        co_varnames=tuple([rename(v, v) for v in code.co_varnames]),
        co_names=tuple([rename(v, v) for v in code.co_names]),
        co_consts=tuple([rename(c, c) if isinstance(c, str) else c
                         for c in code.co_consts]),
        co_name="__init__", co_qualname=f"{cls.__qualname__}.__init__")
    ns = {"__builtins__": builtins, "_setattr": object.__setattr__, "_MISSING": _MISSING,
          **factories}
    return FunctionType(code, ns, "__init__", tuple(defaults) or None)


def _renamer(names: tuple):
    """`get(placeholder, default)` of the map `_pI` -> names[I]."""
    keys = _PLACEHOLDERS if len(names) <= len(_PLACEHOLDERS) else [
        f"_p{i}" for i in range(len(names))]
    return dict(zip(keys, names)).get


# the placeholder argument names of the templates, `_p0`, `_p1`, ... (more made on demand)
_PLACEHOLDERS = tuple([f"_p{i}" for i in range(24)])


_INIT_CODE: dict = {}
# shape -> the module of the first record class defined with it (package_shapes)
_SHAPES_SEEN: dict = {}


# `frozen` of the shape of a frozen record with slots=True (no instance __dict__)
SLOTS_FROZEN = 2


def _init_name(n: int, frozen: bool | int, factories: bool, post_init: bool) -> str:
    kind = "s" if frozen == SLOTS_FROZEN else "f" if frozen else "m"
    return f"i{n}{kind}{'k' if factories else ''}{'p' if post_init else ''}"


def _init_source(n: int, frozen: bool, factories: bool, post_init: bool) -> str:
    """One line: the __init__ template of a shape, named by _init_name. With `factories`
    every field's value is `_kI() if _pI is _MISSING else _pI` (only a factory field's
    argument can be _MISSING, so only those `_kI` are ever looked up)."""
    values = [f"_k{i}() if _p{i} is _MISSING else _p{i}" if factories else f"_p{i}"
              for i in range(n)]
    if frozen == SLOTS_FROZEN:
        body = [f"_setattr(self, '_p{i}', {v})" for i, v in enumerate(values)]
    elif frozen:
        body = ["_d = self.__dict__"] * (n > 0) + [f"_d['_p{i}'] = {v}"
                                                  for i, v in enumerate(values)]
    else:
        body = [f"self._p{i} = {v}" for i, v in enumerate(values)]
    if post_init:
        body.append("self.__post_init__()")
    params = "".join(f", _p{i}" for i in range(n))
    name = _init_name(n, frozen, factories, post_init)
    return f"def {name}(self{params}): {'; '.join(body) or 'pass'}"


def package_shapes() -> list[tuple[int, bool, bool, bool]]:
    """The shapes (field count, frozen, default factories, __post_init__) of every record
    class of the krm_fn package, sorted: imports every module of the package (the optional
    ones whose extra is not installed are skipped; `krm_fn.__main__`, which runs the
    command line, is not imported)."""
    import importlib
    import pkgutil

    import krm_fn
    for info in pkgutil.walk_packages(krm_fn.__path__, "krm_fn."):
        if info.name == "krm_fn.__main__":      # runs the command line
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            if info.name.startswith("krm_fn.probe"):    # the `probe` extra (aiohttp)
                continue
            raise
    return sorted(s for s, module in _SHAPES_SEEN.items() if module.startswith("krm_fn."))


def init_templates_source(shapes: list) -> str:
    """The text of krm_fn/record_init.py: the template of each shape of `shapes` (a list of
    (field count, frozen, default factories, __post_init__); package_shapes() for the file
    in the package: tests/test_record.py checks the file is this). Regenerate with
    `python -c 'from krm_fn import record; print(record.init_templates_source(record.package_shapes()), end="")' > krm_fn/record_init.py`."""
    lines = ['"""__init__ templates of krm_fn.record, one per shape (field count, frozen, '
             'default factories,\n__post_init__) of the package\'s records, loaded from '
             'bytecode so that defining a record\ncompiles nothing. Generated by '
             'krm_fn.record.init_templates_source(package_shapes());\ndo not edit."""',
             "# flake8: noqa"]
    lines += [_init_source(*shape) for shape in shapes]
    return "\n".join(lines) + "\n"


def _init_code(n: int, frozen: bool, factories: bool, post_init: bool):
    """The template code of a shape: from krm_fn/record_init.py (bytecode) when the
    package's records have that shape, else compiled (a record defined elsewhere, e.g. in
    a test, or a new shape before the file is regenerated)."""
    from krm_fn import record_init
    template = getattr(record_init, _init_name(n, frozen, factories, post_init), None)
    if template is not None:
        return template.__code__
    module = compile(_init_source(n, frozen, factories, post_init), "<krm_fn.record>", "exec")
    return next(c for c in module.co_consts if hasattr(c, "co_varnames"))


def replace(obj, /, **changes):
    """A copy of record `obj` with `changes` ({field: value}) applied, as
    `dataclasses.replace`: a new instance through `__init__` (so `__post_init__` runs
    again). Raises TypeError for a name that is not a field."""
    for name in obj.__record_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)
