import json
import threading

import pytest

from routerlab.agents.errors import ConfigError, ContractError, UnknownComponentError
from routerlab.agents.registry import Registry, component_spec


class Widget:
    def __init__(self, size: int = 3, color: str = "red") -> None:
        self.size = size
        self.color = color


@pytest.fixture
def reg() -> Registry:
    r: Registry = Registry("widget")
    r("widget")(Widget)
    r("gadget")(Widget)
    return r


def test_build_records_bound_arguments_with_defaults(reg):
    w = reg.build("widget", size=5)
    assert component_spec(w) == {"kind": "widget", "name": "widget", "args": {"size": 5, "color": "red"}}


def test_rebuild_from_spec_gives_equal_component(reg):
    w = reg.build("widget", size=7, color="blue")
    w2 = reg.rebuild(component_spec(w))
    assert (w2.size, w2.color) == (7, "blue")
    assert component_spec(w2) == component_spec(w)


def test_unknown_name_lists_known_and_suggests_closest(reg):
    with pytest.raises(UnknownComponentError) as info:
        reg.get("widgte")
    msg = str(info.value)
    assert "gadget, widget" in msg
    assert "did you mean 'widget'" in msg
    assert info.value.details["suggestion"] == ["widget"]


def test_bad_constructor_arguments_are_a_config_error(reg):
    with pytest.raises(ConfigError) as info:
        reg.build("widget", weight=2)
    assert "size" in str(info.value) and "weight" in str(info.value)


def test_duplicate_registration_refused(reg):
    with pytest.raises(ConfigError):
        reg("widget")(dict)


def test_scoped_override_restores(reg):
    with reg.scoped("widget", dict):
        assert reg.get("widget") is dict
    assert reg.get("widget") is Widget
    with reg.scoped("new", dict):
        assert "new" in reg
    assert "new" not in reg


def test_restoring_puts_back_its_names_only(reg):
    with reg.restoring("widget", "page"):
        reg._factories.pop("widget")  # lifted for the block
        reg("page")(dict)  # the block's own registration
        reg("imported")(list)  # what a module's first import registers meanwhile
    assert reg.get("widget") is Widget and "page" not in reg
    # a module registers once, at its first import: the registration outlives the block
    assert reg.get("imported") is list and reg.get("gadget") is Widget


def test_rebuild_rejects_wrong_kind(reg):
    with pytest.raises(ConfigError):
        reg.rebuild({"kind": "router", "name": "widget", "args": {}})


def test_recorded_arguments_rebuild_the_component():
    """Dataclass arguments are recorded as dicts, and the rebuilt component is the same one."""
    from routerlab.routers import router
    from routerlab.routers.rules import Rule

    table = (Rule("hello", "chat", 0.9, pattern=r"\bhello\b"), Rule("rows", "sql", 0.5, pattern=r"\brows?\b"))
    built = router.build("rules", rules=table)
    spec = component_spec(built)
    assert spec["args"]["rules"][0] == {
        "name": "hello",
        "intent": "chat",
        "confidence": 0.9,
        "pattern": r"\bhello\b",
        "detector": None,
    }
    rebuilt = router.rebuild(json.loads(json.dumps(spec)))
    assert rebuilt.rules == built.rules


def test_arguments_without_a_plain_form_are_refused_at_build_time():
    reg: Registry[object] = Registry("thing")
    reg("holder")(lambda value=None: object())
    with pytest.raises(ContractError, match="cannot be recorded") as err:
        reg.build("holder", value=threading.Lock())
    assert "value=lock" in err.value.found


def test_the_decorator_writes_the_name_once():
    """With ``name_attr``, the decorator sets a registered class's name; the body never repeats it."""
    named: Registry = Registry("thing", name_attr="name")

    @named("first")
    class First:
        pass

    @named("second")
    class Second(First):
        pass

    assert (First.name, Second.name) == ("first", "second")  # type: ignore[attr-defined]
    assert named.build("second").name == "second" and named.build("first").name == "first"


def test_a_class_naming_itself_otherwise_is_refused():
    """A name written twice, and differently, is refused where it is registered, naming both."""
    named: Registry = Registry("thing", name_attr="name")

    class Stale:
        name = "old"

    with pytest.raises(ContractError, match="named twice") as info:
        named("new")(Stale)
    assert "'new'" in info.value.expected and "name = 'old'" in info.value.found
    assert "new" not in named

    class Same:
        name = "same"

    assert named("same")(Same) is Same  # the same name written twice still registers


def test_one_class_takes_one_name():
    named: Registry = Registry("thing", name_attr="name")

    class Once:
        pass

    named("one")(Once)
    with pytest.raises(ContractError) as info:
        named("two")(Once)
    assert "registered as 'one'" in info.value.found


def test_functions_and_registries_without_name_attr_are_left_alone(reg):
    """A loader function keeps its attributes; a registry without ``name_attr`` sets nothing."""
    named: Registry = Registry("thing", name_attr="name")

    def make() -> dict:
        return {}

    named("maker")(make)
    assert not hasattr(make, "name")
    assert not hasattr(Widget, "name")  # registered twice by the fixture's plain registry
