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
