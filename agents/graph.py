"""The dispatch pipeline as a LangGraph graph.

``START -(intent_route)-> direct | route -> dispatch -> tools | ask_human | respond``; ``tools``
returns to ``dispatch``; ``ask_human`` interrupts (a checkpointer keeps the thread) and resumes to
``route`` with the user's reply; ``respond`` ends the turn. The router is a parameter.

Long because the graph's nodes are methods of one :class:`Pipeline` that share its tools, caches,
response formats and config; what is not a node (events, state, the store, replay, capture) lives
in its own module.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dspy.utils.exceptions import is_retryable_lm_error
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ValidationError

from routerlab.agents.capture import build_trace
from routerlab.agents.db import Database, open_database
from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.events import make_event, tool_event_fields
from routerlab.agents.lm.deadline import CallDeadlineExceeded, DeadlineScope, deadline_cut, within
from routerlab.agents.lm.usage import usage_scope
from routerlab.agents.plan import TOOL_INTENT, direct_call
from routerlab.agents.registry import component_spec
from routerlab.agents.replay import OutcomeCache, lm_identity, outcome_key, programs_digest, settings_dict
from routerlab.agents.retry import langgraph_retry, pipeline_retry_policy
from routerlab.agents.routing import RouteDecision, Router, RouterEnv
from routerlab.agents.run_config import langgraph_run_config
from routerlab.agents.state import PipelineState, initial_state
from routerlab.agents.store import MemoryStore
from routerlab.agents.tools import DEFAULT_TOOLS, SQLPrograms, Tool, ToolContext, ToolSettings
from routerlab.agents.tools.sql_program import sql_program_record
from routerlab.agents.trace import Trace

__all__ = ["NODES", "Pipeline", "PipelineConfig", "is_transient"]

NODES: tuple[str, ...] = ("direct", "route", "dispatch", "tools", "ask_human", "respond")

#: tool error classes fed back to the router instead of ending the turn (it may repair them)
RECOVERABLE_ERRORS: tuple[str, ...] = (
    "sql_error",
    "invalid_tool_args",
    # seed 004: output that does not fit the caller's schema, a store write past its bounds
    "invalid_structured_response",
    "store_full",
    "store_invalid",
)


def is_transient(exc: BaseException) -> bool:
    """Retry only errors that may pass: connection trouble, timeouts and rate limits."""
    name = type(exc).__name__.lower()
    if isinstance(exc, ToolError):
        return False
    # DSPy re-raises a provider's 5xx or dropped connection as LMServerError / LMTransportError,
    # whose names match none of the keywords below
    if isinstance(exc, Exception) and is_retryable_lm_error(exc):
        return True
    return isinstance(exc, ConnectionError | TimeoutError) or any(
        k in name for k in ("ratelimit", "timeout", "serviceunavailable", "apiconnection", "overloaded")
    )


@dataclass(frozen=True)
class PipelineConfig:
    """Bounds and knobs of the dispatch pipeline (recorded with every run).

    Attributes:
        max_steps: Router decisions allowed per turn (``remaining_steps``).
        timeout_s: Wall-clock deadline of a turn; it binds every model call too.
        call_timeout_s: Cap of one model call (a call also stops when the turn or run deadline passes).
        recoverable_errors: Tool error classes the router gets to react to.
        retry_attempts / retry_initial_s / retry_backoff: Retry policy of LM-calling nodes
            (jittered exponential backoff, transient errors only).
        tools: Tool settings (example values, timeouts, row caps...).
        replay: Reuse and store sub-agent outcomes across runs (see :mod:`routerlab.agents.replay`): True
            for the cache at its default path, a path for that file, False for none.
    """

    max_steps: int = 8
    # the embedded model needs one to two minutes per call on a 2-core CPU (measured: about 11
    # prompt tokens/s and 1 completion token/s); the deadline is checked between nodes
    timeout_s: float = 900.0
    # one model call may take at most this long, and never longer than the turn has left (see
    # routerlab.agents.lm.deadline); a silent server or a runaway generation ends here
    call_timeout_s: float = 600.0
    recoverable_errors: tuple[str, ...] = RECOVERABLE_ERRORS
    retry_attempts: int = 3
    retry_initial_s: float = 0.5
    retry_backoff: float = 2.0
    tools: ToolSettings = field(default_factory=ToolSettings)
    replay: bool | str = False


def _content(output: Any, rows_shown: int) -> str:
    """Compact JSON of a tool output for the router's context (result rows trimmed)."""
    if isinstance(output, dict) and "rows" in output:
        output = {**output, "rows": output["rows"][:rows_shown]}
    return json.dumps(output, default=str, ensure_ascii=False)


class Pipeline:
    """A compiled dispatch graph around one router.

    Args:
        router: The router (built through the ``router`` registry).
        lm: The LM the sub-agents (and LM routers) use; may be None for LM-free tests of tools
            that need none.
        tools: Tools the router may call.
        config: Bounds and settings.
        programs: DSPy programs of the sub-agents (default: fresh, unoptimised).
        response_formats: Seed 004's structured responses: a pydantic model per tool name. A
            successful call of such a tool has its output validated into the model; the record
            keeps the object's JSON (``structured_response``, also the state's latest), and
            :meth:`structured_response` returns the object. Output that does not validate makes
            the call a failure (error class ``invalid_structured_response``) the router sees.
        retry_policy: Seed 004's ``retry_policy`` of the model-calling nodes (``max_attempts``,
            ``backoff_factor``, ``jitter``, ``retry_on``, ``initial_interval``), over the
            config's (``routerlab.agents.retry``).

    Raises:
        ContractError: When the router and tools do not fit, a response format names an
            unknown tool or is not a pydantic model, or the retry policy is malformed (checked
            here, not mid-run).
    """

    def __init__(
        self,
        router: Router,
        lm: Any,
        *,
        tools: Sequence[Tool] = DEFAULT_TOOLS,
        config: PipelineConfig | None = None,
        programs: SQLPrograms | None = None,
        response_formats: Mapping[str, type[BaseModel]] | None = None,
        retry_policy: Mapping[str, Any] | None = None,
    ) -> None:
        self.router = router
        self.lm = lm
        self.tools = {t.name: t for t in tools}
        self.response_formats = dict(response_formats or {})
        for name, model in self.response_formats.items():
            if name not in self.tools or not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ContractError(
                    f"bad response format for {name!r}",
                    expected=f"a pydantic model per tool among {sorted(self.tools)}",
                    found=f"{name!r}: {model!r}",
                    fix="map a pipeline tool's name to a pydantic BaseModel subclass",
                )
        self.config = config or PipelineConfig()
        self.retry_policy = pipeline_retry_policy(self.config, retry_policy, is_transient)
        # a router may fix how its sub-agents work (single_call's schema view and framing are its
        # constructor arguments): those settings override the run's for this pipeline only
        overrides = dict(getattr(router, "tool_settings", None) or {})
        if overrides:
            self.config = replace(self.config, tools=replace(self.config.tools, **overrides))
        self.programs = programs or SQLPrograms()
        self._dbs: dict[str, Database] = {}
        self._db_lock = threading.Lock()
        replay = self.config.replay
        self._outcomes = None if replay is False else OutcomeCache(None if replay is True else replay)
        self._replay_fixed = {
            "lm": lm_identity(lm),
            "context": {
                "programs": programs_digest(self.programs),
                "tools": settings_dict(self.config.tools),
                # a compiled generate_sql program refit under the same name is a new key
                **({"sql_program": sql_program_record(p)} if (p := self.config.tools.sql_program) else {}),
            },
        }
        if not isinstance(router, Router):
            raise ContractError(
                "router does not implement the Router protocol",
                expected="an object with name, bind(env) and decide(state)",
                found=type(router).__name__,
                fix="build routers with routers.router.build(name, ...)",
            )
        router.bind(RouterEnv(tools=list(self.tools.values()), lm=lm, open_db=self.database))
        self.graph = self._compile()

    # -- databases -------------------------------------------------------------------------
    def database(self, path: str) -> Database:
        """The (cached) read-only database at ``path``."""
        with self._db_lock:
            if path not in self._dbs:
                self._dbs[path] = open_database(path)
            return self._dbs[path]

    # -- graph -----------------------------------------------------------------------------
    def _compile(self) -> Any:
        retry = langgraph_retry(self.retry_policy)
        g = StateGraph(PipelineState)
        g.add_node("direct", self._timed("direct", self._direct))
        g.add_node("route", self._timed("route", self._route), retry_policy=retry)
        g.add_node(
            "dispatch",
            self._timed("dispatch", self._dispatch),
            destinations=("tools", "ask_human", "respond", "route", "direct"),
        )
        g.add_node("tools", self._timed("tools", self._tools), retry_policy=retry)
        g.add_node("ask_human", self._ask_human, destinations=("route", "direct"))
        g.add_node("respond", self._timed("respond", self._respond))
        g.add_conditional_edges(START, self._intent_route, {"direct": "direct", "route": "route"})
        g.add_edge("direct", "dispatch")
        g.add_edge("route", "dispatch")
        g.add_edge("tools", "dispatch")
        g.add_edge("respond", END)
        return g.compile(checkpointer=InMemorySaver())

    def _timed(self, name: str, fn: Callable[[PipelineState], Any]) -> Callable[[PipelineState], Any]:
        def node(state: PipelineState) -> Any:
            t0 = time.perf_counter()
            out = fn(state)
            extra = {"path": [name], "node_latency": {name: time.perf_counter() - t0}}
            if isinstance(out, Command):
                return Command(goto=out.goto, update={**(out.update or {}), **extra})
            return {**(out or {}), **extra}

        node.__name__ = name
        return node

    def _conv(self, state: PipelineState) -> str:
        return state.get("conversation_id", "") or ""

    def _intent_route(self, state: PipelineState) -> Literal["direct", "route"]:
        agent = state.get("agent")
        return "direct" if agent and agent in self.tools else "route"

    def _ai_message(self, decision: RouteDecision) -> AIMessage:
        return AIMessage(
            content=decision.answer or "",
            tool_calls=[
                {"id": c["id"], "name": c["name"], "args": c["args"], "type": "tool_call"} for c in decision.tool_calls
            ],
            invalid_tool_calls=[
                {
                    "id": c.get("id"),
                    "name": c.get("name"),
                    "args": c.get("args"),
                    "error": c.get("error"),
                    "type": "invalid_tool_call",
                }
                for c in decision.invalid_tool_calls
            ],
        )

    def _decider(self, state: PipelineState) -> Literal["direct", "route"]:
        """Who picks the next step: the direct chain of an explicit agent request, else the router."""
        return self._intent_route(state)

    def _direct(self, state: PipelineState) -> dict[str, Any]:
        """An explicit agent request: the calls the agent cites, then the agent; never the router."""
        agent = str(state["agent"])
        conv = self._conv(state)
        records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
        if records and records[-1].get("status") == "error":
            # no router to repair it: a direct request ends with the error of its failed call
            last = records[-1]
            return {
                "error": f"{last['name']} failed: {last.get('output')}",
                "error_class": last.get("error_class") or "tool_error",
                "error_detail": dict(last.get("error_detail") or {}),
            }
        call = direct_call(state, agent)
        if call is None:
            answer = _answer_of(records[-1].get("output")) if records else ""
            return {
                "messages": [AIMessage(content=answer)],
                "events": [make_event("progress", "direct", f"{agent} done", conv)],
            }
        intent = TOOL_INTENT.get(agent, "sql")
        decision = RouteDecision(tool_calls=[call], intent=intent, method=f"direct:{agent}")
        details = f"explicit request for {agent}"
        if call["name"] != agent:
            details += f": {call['name']} first ({agent} needs its output)"
        return {
            "messages": [self._ai_message(decision)],
            "route": decision.summary("direct"),
            "events": [make_event("progress", "direct", details, conv, route=decision.summary("direct"))],
        }

    def _route(self, state: PipelineState) -> dict[str, Any]:
        conv = self._conv(state)
        if time.time() > state.get("deadline", float("inf")):
            return {"error": "the turn ran past its deadline", "error_class": "timeout"}
        if state.get("remaining_steps", 1) <= 0:
            return {"error": "the turn used all its router steps", "error_class": "step_limit"}
        with usage_scope() as log:
            try:
                decision = self.router.decide(state)
            except CallDeadlineExceeded as exc:
                return exc.turn_update()
            except Exception as exc:
                if is_transient(exc):
                    raise  # the node's retry policy takes it; exhausted, the run records a crash
                return self._internal_error(f"{type(exc).__name__}: {exc}", type(exc).__name__)
        if (cut := deadline_cut()) is not None:
            # a router that caught the cut call (and fell back) still ran out of time
            return cut.turn_update()
        measured = log.total()
        if decision.usage.lm_calls == 0 and measured.lm_calls:
            decision.usage = measured
        summary = decision.summary(self.router.name)
        update: dict[str, Any] = {
            "messages": [self._ai_message(decision)],
            "route": summary,
            "router_usage": [summary],
            "remaining_steps": state.get("remaining_steps", 1) - 1,
            "selected_tool_ids": list(decision.selected_tool_ids),
            "events": [
                *(make_event("progress", node, details, conv, **data) for node, details, data in decision.steps),
                make_event(
                    "progress",
                    "route",
                    f"{decision.method or self.router.name}: "
                    f"{', '.join(summary['tools']) or 'answer'} (intent {decision.intent}, "
                    f"confidence {decision.confidence:.2f})",
                    conv,
                    route=summary,
                ),
            ],
        }
        if not decision.tool_calls and decision.answer is None:
            records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
            if decision.invalid_tool_calls:
                update |= {
                    "error": "the router produced no valid tool call",
                    "error_class": "invalid_tool_call",
                }
            elif records and records[-1].get("status") == "error":
                last = records[-1]
                message = f"{last['name']} failed and the router gave up: {last.get('output')}"
                # seed 000: a tool error that ends the turn is an internal error
                update |= {
                    "error": message,
                    "error_class": last.get("error_class") or "tool_error",
                    "has_internal_error": True,
                    "internal_error_message": message,
                }
            else:
                update |= {"error": "the router produced no decision", "error_class": "no_decision"}
        return update

    def _internal_error(self, message: str, kind: str) -> dict[str, Any]:
        """The update of a router whose own call raised: the turn ends with an internal error.

        The class is ``crash:<exception type>``, the name the runner gives an exception that
        escaped the pipeline, so scoring and the crash verdict see the same failure either way.
        """
        text = f"the {self.router.name} router failed: {message}"
        return {
            "has_internal_error": True,
            "internal_error_message": text,
            "error": message,
            "error_class": f"crash:{kind}",
        }

    def _dispatch(self, state: PipelineState) -> Command:
        if state.get("has_internal_error") or state.get("error"):
            return Command(goto="respond")
        last = state["messages"][-1]
        if time.time() > state.get("deadline", float("inf")):
            return Command(goto="respond", update={"error": "deadline reached", "error_class": "timeout"})
        if isinstance(last, AIMessage):
            if not last.tool_calls:
                return Command(goto="respond", update={"answer": str(last.content)})
            return self._record_calls(state, last)
        if isinstance(last, ToolMessage):
            record = state["tool_calls"].get(last.tool_call_id, {})
            tool = self.tools.get(record.get("name", ""))
            if record.get("status") == "error":
                if record.get("error_class") in self.config.recoverable_errors:
                    return Command(goto=self._decider(state))
                # seed 000: a tool error no router may repair ends the turn as an internal error
                return Command(
                    goto="respond",
                    update={
                        "error": str(record.get("output")),
                        "error_class": record.get("error_class"),
                        "error_detail": dict(record.get("error_detail") or {}),
                        "has_internal_error": True,
                        "internal_error_message": f"{record.get('name')} failed: {record.get('output')}",
                    },
                )
            confirm = _confirmation(record.get("output"))
            if confirm:
                # seed 000: a tool that asks the user to confirm ends the turn with its question
                return Command(goto="respond", update={"confirmation": confirm, "answer": confirm})
            if tool is not None and tool.terminal:
                return Command(goto="respond")
            return Command(goto=self._decider(state))
        return Command(goto="respond")

    def _record_calls(self, state: PipelineState, msg: AIMessage) -> Command:
        records: dict[str, Any] = {}
        step = len(state.get("tool_calls", {}))
        for call in msg.tool_calls:
            tool = self.tools.get(call["name"])
            if tool is None:
                return Command(
                    goto="respond",
                    update={
                        "error": f"the router called an unknown tool {call['name']!r}",
                        "error_class": "unknown_tool",
                    },
                )
            parent = next((call["args"].get(p) for p in tool.refs if call["args"].get(p)), None)
            records[call["id"]] = {
                "id": call["id"],
                "name": call["name"],
                "args": dict(call["args"]),
                "parent": parent,
                "status": "pending",
                "step": step,
            }
            step += 1
        first = msg.tool_calls[0]
        if self.tools[first["name"]].interrupts:
            question = str(first["args"].get("question", ""))
            return Command(goto="ask_human", update={"tool_calls": records, "ask_human": question})
        return Command(goto="tools", update={"tool_calls": records})

    def _tools(self, state: PipelineState) -> dict[str, Any]:
        msg = state["messages"][-1]
        assert isinstance(msg, AIMessage)
        conv = self._conv(state)
        messages: list[ToolMessage] = []
        records: dict[str, Any] = {}
        events: list[dict[str, Any]] = []
        usage: list[dict[str, Any]] = []
        update: dict[str, Any] = {}
        known = dict(state.get("tool_calls", {}))
        # seed 004's InjectedStore: the conversation's store, shared by this step's calls
        memory = MemoryStore(state.get("store"))
        for call in msg.tool_calls:
            if deadline_cut() is not None:
                break  # the turn ran out of time: its remaining calls never start
            tool = self.tools[call["name"]]
            ctx = ToolContext(
                db=self.database(state["database"]),
                lm=self.lm,
                programs=self.programs,
                settings=self.config.tools,
                state={**state, "tool_calls": known},
            )
            started = time.time()
            error_detail: dict[str, Any] = {}
            key = self._outcome_key(tool, call["args"], ctx.state)
            replayed = self._outcomes.get(key) if self._outcomes is not None and key is not None else None
            if replayed is not None:
                output, status, error_class = replayed.output, "success", None
                # the convention of DSPy's response cache (docs/metrics.md §7): counted, free,
                # instant, and the cold cost is what the stored outcome cost when it was computed
                u = replayed.usage.as_cached()
            else:
                with usage_scope() as log:
                    try:
                        injected = tool.injections(ctx, memory, ctx.state)
                        output = tool(call["args"], **injected)
                        status, error_class = "success", None
                    except CallDeadlineExceeded as exc:
                        output, status, error_class = str(exc), "error", exc.error_class
                    except ToolError as exc:
                        output, status, error_class = str(exc), "error", exc.error_class
                        # what an error event shows: the offending statement and the guard rule
                        error_detail = _error_detail(exc, call["args"], known)
                    except Exception as exc:
                        if is_transient(exc):
                            raise  # the node's retry policy takes it
                        output, status, error_class = f"{type(exc).__name__}: {exc}", "error", "tool_crash"
                        # an LM or tool failure no router can repair (seed 000's internal error)
                        update |= {
                            "has_internal_error": True,
                            "internal_error_message": f"{tool.name} failed: {output}",
                            "error": f"{tool.name} failed: {output}",
                            "error_class": "tool_crash",
                        }
                if (cut := deadline_cut()) is not None:
                    # a cut model call ends the turn, even when the sub-agent caught it
                    output, status, error_class = str(cut), "error", cut.error_class
                    update |= cut.turn_update()
                u = log.total()
                if status == "success" and key is not None and self._outcomes is not None:
                    self._outcomes.put(key, tool.name, output, u)
            usage.append({"tool": tool.name, **u.__dict__})
            structured: dict[str, Any] | None = None
            if status == "success" and tool.name in self.response_formats:
                try:
                    structured = self.response_formats[tool.name].model_validate(output).model_dump(mode="json")
                except ValidationError as exc:
                    # the output is not what the caller asked for: a failed call the router sees
                    problems = "; ".join(
                        f"{'.'.join(map(str, e['loc'])) or '(output)'}: {e['msg']}" for e in exc.errors()
                    )
                    output = f"{tool.name} output does not fit {self.response_formats[tool.name].__name__}: {problems}"
                    status, error_class = "error", "invalid_structured_response"
            record = {
                **known.get(call["id"], {}),
                "output": output,
                "status": status,
                "error_class": error_class,
                "started": started,
                "ended": time.time(),
                **({"replayed": True} if replayed is not None else {}),
                **({"error_detail": error_detail} if error_detail else {}),
                **({"structured_response": structured} if structured is not None else {}),
            }
            if structured is not None:
                update["structured_response"] = structured
            records[call["id"]] = record
            known[call["id"]] = record
            messages.append(
                ToolMessage(
                    content=_content(output, self.config.tools.message_rows)
                    if status == "success"
                    else f"ERROR [{error_class}]: {output}",
                    tool_call_id=call["id"],
                    name=tool.name,
                    status=status,
                )
            )
            detail = f"{tool.name}: {status}" + (f" ({error_class})" if error_class else "")
            events.append(make_event("progress", "tools", detail, conv, **tool_event_fields(tool.name, status, output)))
            if status == "success" and isinstance(output, dict):
                if output.get("sql") and tool.name != "execute_sql_and_analyze_result":
                    update["sql"] = output["sql"]
                if "rows" in output:
                    update |= {"rows": output["rows"], "columns": output["columns"], "executed": True}
                    update |= {"row_count": output.get("row_count", len(output["rows"]))}
                    update |= {"summary": output.get("summary")}
            if status == "error" and tool.name == "execute_sql_and_analyze_result":
                update["executed"] = True
        if memory.changed:
            update["store"] = memory.snapshot()
        return {
            **update,
            "messages": messages,
            "tool_calls": records,
            "events": events,
            "subagent_usage": usage,
        }

    def _outcome_key(self, tool: Tool, args: Mapping[str, Any], state: Mapping[str, Any]) -> str | None:
        """The replay key of a call (None when replay is off or the call cannot be keyed)."""
        if self._outcomes is None or tool.interrupts:
            return None
        return outcome_key(tool.name, args, tool.refs, state, **self._replay_fixed)

    def _ask_human(self, state: PipelineState) -> Command:
        msg = state["messages"][-1]
        call = msg.tool_calls[0]
        question = str(call["args"].get("question", ""))
        reply = interrupt({"question": question, "tool_call_id": call["id"]})
        now = time.time()
        return Command(
            goto=self._decider(state),
            update={
                "messages": [
                    ToolMessage(content=str(reply), tool_call_id=call["id"], name=call["name"], status="success")
                ],
                "tool_calls": {
                    call["id"]: {
                        "output": {"reply": str(reply)},
                        "status": "success",
                        "started": now,
                        "ended": now,
                    }
                },
                "user_reply": str(reply),
                "path": ["ask_human"],
                "events": [make_event("progress", "ask_human", f"user replied: {reply}", self._conv(state))],
            },
        )

    def _respond(self, state: PipelineState) -> dict[str, Any]:
        conv = self._conv(state)
        if state.get("error") or state.get("has_internal_error"):
            error = state.get("error") or state.get("internal_error_message") or "internal error"
            answer = f"Sorry, I could not complete this request: {error}"
            detail = state.get("error_detail") or {}
            event = make_event(
                "error",
                "respond",
                error,
                conv,
                error_type=state.get("error_class") or "internal_error",
                sql=detail.get("sql") or state.get("sql"),
                rule=detail.get("rule"),
                has_internal_error=bool(state.get("has_internal_error")),
                internal_error_message=state.get("internal_error_message"),
                execution_path=[*state.get("path", []), "respond"],
                route=state.get("route"),
            )
            return {"answer": answer, "events": [event]}
        if state.get("confirmation"):
            question = str(state["confirmation"])
            event = make_event(
                "completed",
                "respond",
                "waiting for the user's confirmation",
                conv,
                answer=question,
                ask_human=question,
                confirmation=True,
                execution_path=[*state.get("path", []), "respond"],
                route=state.get("route"),
                classification=_classification(state),
            )
            return {"answer": question, "events": [event]}
        answer = state.get("answer")
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            record = state["tool_calls"].get(last.tool_call_id, {})
            out = record.get("output")
            if isinstance(out, dict):
                answer = out.get("answer") or out.get("explanation") or out.get("summary") or answer
        event = make_event(
            "completed",
            "respond",
            "done",
            conv,
            answer=answer,
            sql=state.get("sql"),
            rows=(state.get("rows") or [])[:20],
            columns=state.get("columns") or [],
            row_count=state.get("row_count", len(state.get("rows") or [])),
            summary=state.get("summary"),
            execution_path=[*state.get("path", []), "respond"],
            route=state.get("route"),
            classification=_classification(state),
        )
        return {"answer": answer, "events": [event]}

    # -- running ---------------------------------------------------------------------------
    def stream(
        self,
        question: str,
        database: str,
        *,
        reply: Callable[[str], str | None] | None = None,
        agent: str | None = None,
        hint: str = "",
        oracle_intent: str | None = None,
        conversation_id: str | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        store: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        run_name: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Run one request and yield its progress events live; the last is completed or error.

        Args:
            question: The user's request.
            database: Path of the database file.
            reply: Answers a clarifying question (returns None to leave it unanswered).
            agent: Explicit agent (tool) name, bypassing the router.
            hint: Evidence for SQL generation.
            oracle_intent: Gold intent (benchmarks; read only by the oracle baseline).
            conversation_id: Thread id; a fresh one by default.
            history: Earlier turns of the conversation (``routerlab.agents.turn_history.Turn``),
                oldest first; routers and sub-agents read them (a follow-up reuses the last
                data turn's SQL and tables).
            store: The conversation's store as its last turn left it (``MemoryStore.snapshot``);
                tools with an ``InjectedStore`` parameter read and write it; the final state's
                ``store`` is what to keep for the next turn.
            tags: Seed 004's ``RunnableConfig`` tags, passed to LangGraph with the run and kept
                in the state's ``run_config`` (the trace and the MLflow trace show them).
            metadata: ``RunnableConfig`` metadata, kept the same way.
            run_name: ``RunnableConfig`` run name, kept the same way (the MLflow trace's name).
            config: A seed-004 ``RunnableConfig`` dict (``routerlab.agents.run_config``): its
                tags, metadata and run name join the keywords'; ``callbacks``,
                ``max_concurrency``, ``recursion_limit`` and ``configurable`` go to LangGraph.
        """
        conv, cfg, run_config = langgraph_run_config(
            config,
            conversation_id=conversation_id,
            tags=tags,
            metadata=metadata,
            run_name=run_name,
            recursion_limit=4 * self.config.max_steps + 10,
        )
        state = initial_state(
            question,
            database,
            hint=hint,
            agent=agent,
            max_steps=self.config.max_steps,
            timeout_s=self.config.timeout_s,
            oracle_intent=oracle_intent,
            history=[dict(t) for t in history or []],
        )
        state["conversation_id"] = conv
        # every model call of the turn is bound by what the turn has left (and the per-call cap);
        # the scope is entered around each step only, never across a yield to the caller
        scope = DeadlineScope(
            at=time.monotonic() + self.config.timeout_s, bound="turn", cap_s=self.config.call_timeout_s
        )
        state["store"] = dict(store or {})
        state["run_config"] = run_config
        payload: Any = state
        turns = 0
        while True:
            turns += 1
            interrupted: dict[str, Any] | None = None
            steps = self.graph.stream(payload, cfg, stream_mode="updates", durability="exit")
            while True:
                with within(scope):
                    chunk = next(steps, None)
                if chunk is None:
                    break
                for node, update in chunk.items():
                    if node == "__interrupt__":
                        interrupted = update[0].value
                    elif isinstance(update, dict):
                        yield from update.get("events", [])
            if interrupted is None:
                break
            answer = reply(interrupted["question"]) if reply else None
            if answer is None:
                ev = make_event(
                    "completed",
                    "ask_human",
                    "waiting for the user's reply",
                    conv,
                    answer=interrupted["question"],
                    ask_human=interrupted["question"],
                )
                self.graph.update_state(cfg, {"answer": interrupted["question"], "events": [ev], "turns": turns})
                yield ev
                return
            payload = Command(resume=answer)
        self.graph.update_state(cfg, {"turns": turns})

    def run(self, question: str, database: str, *, example_id: str = "", **kwargs: Any) -> Trace:
        """Run one request to the end and return its trace (see :meth:`stream` for arguments)."""
        conv = kwargs.pop("conversation_id", None) or uuid.uuid4().hex[:12]
        t0 = time.perf_counter()
        for _ in self.stream(question, database, conversation_id=conv, **kwargs):
            pass
        state = self.final_state(conv)
        trace = build_trace(example_id, state, time.perf_counter() - t0)
        # checkpoints exist for interrupt/resume within a request; drop them so long runs stay flat
        self.graph.checkpointer.delete_thread(conv)
        return trace

    def structured_response(self, state: Mapping[str, Any]) -> BaseModel | None:
        """The turn's latest structured response as its pydantic object (None without one)."""
        records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
        for record in reversed(records):
            if "structured_response" in record and record.get("name") in self.response_formats:
                return self.response_formats[record["name"]].model_validate(record["structured_response"])
        return None

    def final_state(self, conversation_id: str) -> PipelineState:
        """The state of a finished conversation."""
        snap = self.graph.get_state({"configurable": {"thread_id": conversation_id}})
        return snap.values  # type: ignore[return-value]

    def spec(self) -> dict[str, Any]:
        """Recorded arguments of the pipeline and its router (for MLflow params)."""
        return {"router": component_spec(self.router), "config": _config_dict(self.config)}


#: the key of a tool output that asks the user to confirm before going on (seed 000)
CONFIRMATION_KEY = "needs_confirmation"


def _confirmation(output: Any) -> str | None:
    """The question of a tool output that asks for the user's confirmation, else None."""
    if isinstance(output, dict) and output.get(CONFIRMATION_KEY):
        return str(output[CONFIRMATION_KEY])
    return None


def _classification(state: PipelineState) -> dict[str, Any] | None:
    """The decision that classified the turn: the first with an intent (later ones follow its plan)."""
    first = next((d for d in state.get("router_usage", []) if d.get("intent")), None)
    return first or state.get("route") or None


def _answer_of(output: Any) -> str:
    """The answer a direct request gives when its agent is not terminal: what the agent produced."""
    if not isinstance(output, dict):
        return str(output or "")
    for key in ("answer", "explanation", "summary", "sql"):
        if output.get(key):
            return str(output[key])
    if output.get("tables"):
        return "Relevant tables: " + ", ".join(map(str, output["tables"]))
    return json.dumps(output, default=str, ensure_ascii=False)[:2000]


def _error_detail(exc: ToolError, args: Mapping[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """The statement a tool error is about and the guard rule that stopped it (when known)."""
    sql = getattr(exc, "sql", "") or args.get("sql") or ""
    if not sql:
        # execute cites the call that produced its SQL; that SQL is what failed
        for ref in ("sql_call_id", "failed_call_id"):
            out = known.get(str(args.get(ref) or ""), {}).get("output")
            if isinstance(out, dict) and out.get("sql"):
                sql = out["sql"]
                break
    detail = {"sql": sql} if sql else {}
    if getattr(exc, "rule", None):
        detail["rule"] = exc.rule
    return detail


def _config_dict(config: PipelineConfig) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(config)
