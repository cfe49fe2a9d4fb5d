"""Every registered router passes the same suite. A new router is done when it passes unchanged."""

from __future__ import annotations

import pkgutil
import re

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.registry import component_spec
from routerlab.agents.routing import RouteDecision, RouterEnv
from routerlab.agents.state import INTENTS, initial_state
from routerlab.agents.tools import DEFAULT_TOOLS

INPUTS = [
    "How many service areas have EV charging?",
    "Explain: SELECT count(*) FROM branches",
    'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found',
    "hello!",
    "How did that area do recently?",
    "Delete all rows from the revenue table",
    "",
    "ignore " * 2000,
    "请问上个月收入最高的服务区是哪个？",
    "SELECT name FROM areas",
]
TOOL_NAMES = {t.name for t in DEFAULT_TOOLS}


def scripted_router_lm():
    """Answers routing requests with a plausible tool call, and the dspy router's program."""
    from routerlab.agents.lm import scripted_lm

    def reply(request):
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        if request.tools:
            if [t.name for t in request.tools] == ["retrieve_tools"]:  # the retrieval router's first search
                refusal = re.search(r"delete|drop", text, re.I)
                wanted = "decline a request to change data" if refusal else "find the tables for a data question"
                return {"name": "retrieve_tools", "args": {"query": wanted}}
            if re.search(r"delete|drop", text, re.I):
                return {"name": "refuse", "args": {"reason": "read-only"}}
            if any(t.name == "transfer_to_sql" for t in request.tools):  # the handoff router's triage agent
                return {"name": "transfer_to_sql", "args": {}}
            return {"name": "data_discovery", "args": {"question": "q"}}
        if "`intent`" in str(request.system or ""):
            return {"fields": {"intent": "sql"}}
        return {"fields": {"reply": "ok"}}

    return scripted_lm(reply)


def build(name, lm, db):
    r = routers.router.build(name)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    return r


@pytest.fixture(scope="module")
def lm():
    return scripted_router_lm()


def check_decision(d: RouteDecision, state) -> None:
    assert isinstance(d, RouteDecision)
    assert d.tool_calls or d.answer is not None or d.invalid_tool_calls
    assert 0.0 <= d.confidence <= 1.0
    assert d.intent is None or d.intent in INTENTS
    for c in d.tool_calls:
        assert c["id"] and c["name"] in TOOL_NAMES and isinstance(c["args"], dict)
        assert c["id"] not in state.get("tool_calls", {})
    assert d.method


@pytest.mark.parametrize("name", routers.router.names())
@pytest.mark.parametrize("text", INPUTS, ids=range(len(INPUTS)))
def test_first_decision_is_well_formed(name, text, lm, sales_db):
    r = build(name, lm, sales_db)
    state = initial_state(text, str(sales_db), oracle_intent="sql")
    check_decision(r.decide(state), state)


@pytest.mark.parametrize("name", routers.router.names())
@pytest.mark.parametrize("intent", INTENTS)
def test_every_intent_gets_a_decision(name, intent, lm, sales_db):
    r = build(name, lm, sales_db)
    state = initial_state("How many areas have EV charging?", str(sales_db), oracle_intent=intent)
    check_decision(r.decide(state), state)


@pytest.mark.parametrize("name", routers.router.names())
def test_deterministic(name, lm, sales_db):
    r = build(name, lm, sales_db)
    s = initial_state("How many areas have EV charging?", str(sales_db), oracle_intent="sql")
    a, b = r.decide(s), r.decide(s)
    assert [(c["name"], c["args"]) for c in a.tool_calls] == [(c["name"], c["args"]) for c in b.tool_calls]
    assert (a.intent, a.confidence, a.answer) == (b.intent, b.confidence, b.answer)


@pytest.mark.parametrize("name", routers.router.names())
def test_recorded_arguments_rebuild_an_equal_router(name):
    r = routers.router.build(name)
    spec = component_spec(r)
    r2 = routers.router.rebuild(spec)
    assert component_spec(r2) == spec
    assert type(r2) is type(r)


def test_unknown_router_suggests_the_closest():
    from routerlab.agents.errors import UnknownComponentError

    with pytest.raises(UnknownComponentError) as info:
        routers.router.build("rulez")
    assert "did you mean 'rules'" in str(info.value)


def test_baselines_are_labelled():
    assert routers.label("oracle") == "oracle (baseline)" and routers.label("rules") == "rules"


@pytest.mark.model
@pytest.mark.parametrize("name", ["llm", "hybrid", "dspy"])
def test_lm_routers_on_the_embedded_model(name, sales_db):
    from routerlab.agents.lm import resolve_lm

    # the 0.5B model: this checks the contract on real model output, not routing quality (the
    # benchmark measures that), and it is about twice as fast on a CPU
    lm = resolve_lm("local:0.5b", max_tokens=96)
    r = build(name, lm, sales_db)
    for text in (INPUTS[0], INPUTS[3], INPUTS[5]):
        state = initial_state(text, str(sales_db))
        check_decision(r.decide(state), state)


def test_every_router_module_registers_a_router():
    """One module per router: every module of routers/ (the registry, base.py, aside) registers one.

    Replaces a hand-kept list: adding a router needs no edit anywhere; a helper that is not a router
    belongs in routers/support/, and this says so.
    """
    registered_from = {routers.router.get(name).__module__ for name in routers.router.names()}
    modules = {f"routerlab.routers.{m.name}" for m in pkgutil.iter_modules(routers.__path__) if not m.ispkg}
    idle = sorted(modules - registered_from - {"routerlab.routers.base"})
    assert not idle, f"{idle} register no router: put what is not a router in routerlab.routers.support"


@pytest.mark.parametrize("name", routers.router.names())
def test_the_decorator_names_the_router(name):
    """``@router("x")`` sets ``name``: the class never writes it, and every reader sees the registry name."""
    built = routers.router.build(name)
    # on the class itself, so a registered subclass (single_call_fields) does not read its parent's
    assert built.name == name == vars(type(built))["name"]


def test_routers_command_lists_every_registered_router():
    """``routerlab routers`` is the list a newcomer reads; it comes from the registry, so it is never stale."""
    from typer.testing import CliRunner

    from routerlab.cli import app

    result = CliRunner().invoke(app, ["routers"])
    assert result.exit_code == 0, result.output
    shown = [line.strip() for line in result.output.splitlines() if line.strip()]
    assert shown == [routers.label(name) for name in routers.router.names()]
