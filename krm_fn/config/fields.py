"""Fields and the objects made of them: `Field` (a name, a type from krm_fn.config.types,
a default, the documentation, the ConfigMap key), `Object` (a mapping of fields, loaded
as an instance of a `Record` subclass) and `ObjectList` (a list of such objects).
"""
from __future__ import annotations


from krm_fn.config.types import MAX_ITEMS, Type, check_count
from krm_fn.config.values import ConfigError, raise_all, type_name, unknown_fields


class Field:
    """One config field: `name`, `type` (a Type), `default` (as a user writes it; None:
    null, or an object's defaults), `doc` (one paragraph for explain, the schema and the
    docs), `flat` (its key in the ConfigMap form; default: `name`; "-": typed form only;
    leaves under `nodePools` configure the first node pool)."""

    __slots__ = ("name", "type", "default", "doc", "flat")

    def __init__(self, name: str, type: Type, default: object = None, doc: str = "",
                 flat: str | None = None):
        self.name, self.type, self.default, self.doc, self.flat = name, type, default, doc, flat

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type.kind})"

    @property
    def kind(self) -> str:
        """The type's short name (`int`, `object`...)."""
        return self.type.kind

    @property
    def fields(self) -> tuple:
        """The fields of an object or object-list field; () for a leaf."""
        return getattr(self.type, "fields", ())

    @property
    def nullable(self) -> bool:
        """Whether the loader takes null for this leaf: its default is null and its type
        allows it."""
        return self.type.leaf and self.type.nullable and self.default is None

    def convert(self, v: object, path: str, flat: bool = False) -> object:
        """The value `v` given for this field at `path` as its Python form (null: None when
        nullable, an object's defaults for an object). Raises ConfigError."""
        if v is None and self.type.leaf:
            if self.nullable:
                return None
            raise ConfigError(path, "must not be null")
        return self.type.convert(v, path, flat)

    def default_value(self) -> object:
        """The Python value of the field when it is not given."""
        return self.type.default_value(self.default)

    def value_schema(self, flat: bool = False) -> dict:
        """JSON Schema of the field's value (its type's, taking null when the field does),
        without description and default; `flat`: as a ConfigMap `data` value. Raises
        ValueError for a type without a JSON Schema."""
        try:
            s = self.type.json_schema(flat)
        except ValueError as e:
            raise ValueError(f"{e} (field {self.name})") from None
        if self.nullable and "type" in s:
            s["type"] = [*s["type"], "null"] if isinstance(s["type"], list) else \
                [s["type"], "null"]
            if "enum" in s:
                s["enum"] = [*s["enum"], None]
        return s

    def json_schema(self) -> dict:
        """JSON Schema of the field in the typed form, with description and default."""
        s = self.value_schema()
        out = {"description": self.doc, **s} if self.doc else s
        if (self.type.leaf or self.default == []) and self.default is not None:
            out["default"] = self.default
        return out


class Record:
    """Base of the loaded config objects: one attribute per field of its Object, named as
    the field. Subclasses add the checks across their fields (`check(path)`, with `path`
    the object's own field path, so errors name where they are)."""

    FIELDS: tuple = ()

    def __init__(self, **values: object):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  (mutable, like the dicts it holds)


class Object(Type):
    """A mapping of `fields` loaded as an instance of `cls` (a Record subclass, given the
    fields as `FIELDS`). Unknown keys are errors; null means every default."""

    kind, label, leaf = "object", "object", False

    def __init__(self, cls: type, fields: tuple):
        self.cls, self.fields = cls, tuple(fields)
        self._by_name = {f.name: f for f in self.fields}
        cls.FIELDS = self.fields

    def convert(self, v, path, flat):
        return self.build({} if v is None else v, path, flat)

    def default_value(self, default):
        return self.build({}, "")

    def build(self, data: object, path: str, flat: bool = False) -> Record:
        """Load the mapping `data` (at field path `path`) as a `cls`; raises ConfigError
        carrying every problem of every field (shape and type checks only)."""
        if not isinstance(data, dict):
            raise ConfigError(path, f"expected a mapping, found {type_name(data)}")
        errors: list[ConfigError] = []
        unknown = [k for k in data if k not in self._by_name]
        if unknown:
            errors.append(unknown_fields(unknown, list(self._by_name), path))
        values = {}
        for f in self.fields:
            if f.name not in data:
                values[f.name] = f.default_value()
                continue
            try:
                values[f.name] = f.convert(data[f.name], f"{path}.{f.name}" if path else f.name,
                                           flat)
            except ConfigError as e:
                errors.extend(e.errors)
        raise_all(errors)
        obj = self.cls.__new__(self.cls)
        obj.__dict__.update(values)
        return obj

    def json_schema(self, flat=False):
        return {"type": ["object", "null"], **self.properties_schema()}

    def properties_schema(self) -> dict:
        """`additionalProperties: false` and the schema of each field."""
        return {"additionalProperties": False,
                "properties": {f.name: f.json_schema() for f in self.fields}}


class ObjectList(Type):
    """A list of `of` objects, at least `min_items` long (`item` names one entry in that
    error). A field default of [] means empty, None one entry with every default."""

    kind, label, nullable, leaf = "objectlist", "list of objects", False, False

    def __init__(self, of: Object, min_items: int = 0, item: str = "entry",
                 max_items: int = MAX_ITEMS):
        self.of, self.min_items, self.item, self.max_items = of, min_items, item, max_items
        self.fields = of.fields

    def convert(self, v, path, flat):
        if not isinstance(v, list):
            raise ConfigError(path, f"expected a list, found {type_name(v)}")
        check_count(len(v), self.min_items, self.max_items, self.item, path)
        built, errors = [], []
        for i, x in enumerate(v):
            try:
                built.append(self.of.build(x, f"{path}[{i}]", flat))
            except ConfigError as e:
                errors.extend(e.errors)
        raise_all(errors)
        return built

    def default_value(self, default):
        return [] if default == [] else [self.of.build({}, "")]

    def facts(self):
        return ([("MIN ITEMS", str(self.min_items))] if self.min_items else []) + (
            [("MAX ITEMS", str(self.max_items))] if self.max_items != MAX_ITEMS else [])

    def json_schema(self, flat=False):
        s: dict[str, object] = {"type": "array"}
        if self.min_items:
            s["minItems"] = self.min_items
        s["maxItems"] = self.max_items
        s["items"] = {"type": "object", **self.of.properties_schema()}
        return s
