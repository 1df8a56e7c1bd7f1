"""krm_fn.record behaves as the standard library's dataclasses for the options krm-fn uses:
the same __init__ signature, repr, equality, hashing, frozen errors, slots and replace."""
import dataclasses

import pytest

from krm_fn import record


def _classes(dc, field):
    """The same four class definitions made by `dc` / `field` (dataclasses or record)."""
    @dc(frozen=True)
    class Frozen:
        """A frozen record with defaults and factories."""
        a: int
        b: str = "q"
        c: list = field(default_factory=list)
        d: dict = field(default_factory=dict, repr=False, compare=False)

    @dc(slots=True)
    class Slotted:
        """A record with slots."""
        x: int
        y: object = None

    @dc
    class Plain:
        """A mutable record with __post_init__."""
        x: int
        seen: list = field(default_factory=list)

        def __post_init__(self):
            self.seen.append(self.x)

    @dc(frozen=True, eq=False)
    class Identity:
        """Frozen, compared by identity."""
        v: int

    @dc(frozen=True, slots=True)
    class FrozenSlotted:
        """Frozen with slots: no instance __dict__ to store the fields in."""
        x: int
        y: object = None
    return Frozen, Slotted, Plain, Identity, FrozenSlotted


STD = _classes(dataclasses.dataclass, dataclasses.field)
OWN = _classes(record.dataclass, record.field)


def _observe(classes):
    frozen, slotted, plain, identity, frozen_slotted = classes
    fs = frozen_slotted(1)
    a, a2 = frozen(1), frozen(1, "q", [], {"k": 1})
    p = plain(4)
    out = [repr(a), a == a2, a == frozen(2), hash(frozen(1, "q", ())) == hash((1, "q", ())),
           repr(frozen(a=5, c=[1])), repr(slotted(1)), slotted(1) == slotted(1, None),
           slotted.__slots__, hasattr(slotted(1), "__dict__"), repr(p), p.seen,
           plain.__hash__, frozen.__match_args__, identity(1) == identity(1),
           hash(identity(1)) != 0, frozen(1) != (1,), frozen(1).__eq__((1, "q")) is NotImplemented,
           repr(fs), fs == frozen_slotted(1, None), hash(fs) == hash((1, None)),
           frozen_slotted.__slots__, hasattr(fs, "__dict__"), (fs.x, fs.y)]
    for obj, name in ((a, "a"), (a, "other"), (fs, "x"), (fs, "y")):
        try:
            setattr(obj, name, 3)
        except AttributeError as e:
            out.append((name, str(e)))
    try:
        del a.b
    except AttributeError as e:
        out.append(str(e))
    for args in ((), (1, 2, 3, 4, 5)):
        try:
            frozen(*args)
        except TypeError:
            out.append(("TypeError", len(args)))
    return out


def test_record_classes_behave_as_dataclasses():
    assert _observe(OWN) == _observe(STD)


def test_frozen_errors_are_attribute_errors():
    with pytest.raises(AttributeError, match="cannot assign to field 'a'"):
        OWN[0](1).a = 2
    assert issubclass(record.FrozenInstanceError, AttributeError)


@pytest.mark.parametrize("i", range(4))
def test_replace_is_dataclasses_replace(i):
    args = [(1, "x", [2]), (3,), (5,), (7,)][i]
    own, std = OWN[i](*args), STD[i](*args)
    name = ("b", "y", "x", "v")[i]
    value = "z" if i < 2 else 9
    assert repr(record.replace(own, **{name: value})) == \
        repr(dataclasses.replace(std, **{name: value}))


def test_replace_of_an_unknown_field_is_a_type_error():
    with pytest.raises(TypeError):
        record.replace(OWN[0](1), nope=2)


def test_a_default_before_a_required_field_is_refused():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @record.dataclass
        class Bad:
            """Wrong order."""
            a: int = 1
            b: int


_REGENERATE = ("regenerate krm_fn/record_init.py: python -c 'from krm_fn import record; "
               "print(record.init_templates_source(record.package_shapes()), end=\"\")' "
               "> krm_fn/record_init.py")


def test_the_init_templates_file_is_generated():
    """record_init.py holds the template of exactly the shapes the package's records have."""
    path = record.__file__.replace("record.py", "record_init.py")
    shapes = record.package_shapes()
    assert (4, True, False, False) in shapes and len(shapes) > 20
    with open(path) as f:
        assert f.read() == record.init_templates_source(shapes), (
            "krm_fn/record_init.py is not the generated file (a record shape was added or "
            "is gone): " + _REGENERATE)


def test_a_render_defines_records_of_the_template_shapes_only():
    """No record a render defines compiles its __init__ (a shape missing from the file)."""
    import subprocess
    import sys
    code = ("import sys\nfrom krm_fn import record\nsys.argv = ['krm-fn']\n"
            "import krm_fn.pipeline, krm_fn.resourcelist\n"
            "from krm_fn import record_init\n"
            "missing = [s for s in record._SHAPES_SEEN "
            "if not hasattr(record_init, record._init_name(*s))]\n"
            "print(len(record._SHAPES_SEEN), missing)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert int(out[0]) > 20 and out[1:] == ["[]"], (
        f"record shapes (fields, frozen, default factories, __post_init__) a render defines "
        f"with no template in krm_fn/record_init.py: {' '.join(out[1:])}; " + _REGENERATE)


def test_a_record_of_a_shape_not_in_the_templates_is_compiled():
    from krm_fn import record_init
    n = 30
    assert not hasattr(record_init, record._init_name(n, False, False, False))
    names = [f"f{i}" for i in range(n)]
    cls = record.dataclass(type("Wide", (), {"__annotations__": dict.fromkeys(names, "int")}))
    obj = cls(*range(len(names)))
    assert (obj.f0, getattr(obj, names[-1])) == (0, len(names) - 1)
    assert cls.__init__.__code__.co_varnames[:3] == ("self", "f0", "f1")


@pytest.mark.parametrize("i", range(4))
def test_dataclasses_functions_work_on_records(i):
    args = [(1, "x", [2]), (3,), (5,), (7,)][i]
    own, std = OWN[i](*args), STD[i](*args)
    assert dataclasses.is_dataclass(own)
    assert [(f.name, f.repr, f.compare) for f in dataclasses.fields(own)] == \
        [(f.name, f.repr, f.compare) for f in dataclasses.fields(std)]
    assert dataclasses.asdict(own) == dataclasses.asdict(std)
    name = ("b", "y", "x", "v")[i]
    assert repr(dataclasses.replace(own, **{name: 9})) == \
        repr(dataclasses.replace(std, **{name: 9}))


@pytest.mark.parametrize("name", ["self", "_MISSING", "_setattr", "_d", "_p0", "_k1"])
def test_a_field_name_the_templates_use_is_refused(name):
    """The __init__ templates' own names (arguments, globals, the frozen template's `_d`)
    cannot be field names: a renamed template would read the wrong value."""
    cls = type("Bad", (), {"__annotations__": {name: "int"}, "__module__": __name__})
    with pytest.raises(TypeError) as e:
        record.dataclass(frozen=True)(cls)
    assert str(e.value) == f"Bad: a field name krm_fn.record reserves: [{name!r}]"


def test_a_frozen_record_with_its_own_slots_sets_its_fields():
    """A frozen record that declares `__slots__` itself (no instance __dict__) is built
    through object.__setattr__, as one made with slots=True."""
    @record.dataclass(frozen=True)
    class Own:
        __slots__ = ("a", "b")
        a: int
        b: int

    own = Own(1, 2)
    assert (own.a, own.b, repr(own), hasattr(own, "__dict__")) == (
        1, 2, f"{Own.__qualname__}(a=1, b=2)", False)
