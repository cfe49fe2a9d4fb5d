"""The dispatch pipeline as a LangGraph graph.

``START -(intent_route)-> direct | route -> dispatch -> tools | ask_human | respond``; ``tools``
returns to ``dispatch``; ``ask_human`` interrupts (a checkpointer keeps the thread) and resumes to
``route`` with the user's reply; ``respond`` ends the turn. The router is a parameter.

Each node is a function in its own module of :mod:`routerlab.agents.nodes`; :class:`Pipeline`
builds what they share (:class:`~routerlab.agents.nodes.NodeEnv`), wires them into the graph and
runs requests through it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel

from routerlab.agents.capture import build_trace
from routerlab.agents.db import Database, open_database
from routerlab.agents.errors import ContractError
from routerlab.agents.events import make_event
from routerlab.agents.lm.deadline import DeadlineScope, within
from routerlab.agents.nodes import (
    RECOVERABLE_ERRORS,
    CallReplay,
    NodeEnv,
    PipelineConfig,
    ask_human_node,
    config_dict,
    direct_node,
    dispatch_node,
    is_transient,
    pick_decider,
    respond_node,
    route_node,
    timed,
    tools_node,
)
from routerlab.agents.registry import component_spec
from routerlab.agents.retry import langgraph_retry, pipeline_retry_policy
from routerlab.agents.routing import Router, RouterEnv
from routerlab.agents.run_config import langgraph_run_config
from routerlab.agents.state import PipelineState, initial_state
from routerlab.agents.tools import DEFAULT_TOOLS, SQLPrograms, Tool
from routerlab.agents.trace import Trace

__all__ = ["NODES", "RECOVERABLE_ERRORS", "Pipeline", "PipelineConfig", "is_transient"]

NODES: tuple[str, ...] = ("direct", "route", "dispatch", "tools", "ask_human", "respond")


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

    Attributes:
        replay: The sub-agent outcome cache and what its keys share (off unless
            ``config.replay``).
        env: What the graph's nodes share.

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
        _check_formats(self.response_formats, self.tools)
        self.config = config or PipelineConfig()
        self.retry_policy = pipeline_retry_policy(self.config, retry_policy, is_transient)
        # a router may fix how its sub-agents work (single_call's schema view and framing are its
        # constructor arguments): those settings override the run's for this pipeline only
        overrides = dict(getattr(router, "tool_settings", None) or {})
        if overrides:
            self.config = replace(self.config, tools=replace(self.config.tools, **overrides))
        # and may need to see tool errors that end other routers' turns (answer_first reads a
        # guard refusal of its drafted SQL as the evidence of a write)
        reacts_to = tuple(getattr(router, "recoverable_errors", None) or ())
        if set(reacts_to) - set(self.config.recoverable_errors):
            errors = tuple(dict.fromkeys((*self.config.recoverable_errors, *reacts_to)))
            self.config = replace(self.config, recoverable_errors=errors)
        self.programs = programs or SQLPrograms()
        self._dbs: dict[str, Database] = {}
        self._db_lock = threading.Lock()
        self.replay = CallReplay.of(self.config.replay, lm, self.programs, self.config.tools)
        if not isinstance(router, Router):
            raise ContractError(
                "router does not implement the Router protocol",
                expected="an object with name, bind(env) and decide(state)",
                found=type(router).__name__,
                fix="build routers with routers.router.build(name, ...)",
            )
        router.bind(RouterEnv(tools=list(self.tools.values()), lm=lm, open_db=self.database))
        self.env = NodeEnv(
            router=router,
            lm=lm,
            tools=self.tools,
            config=self.config,
            programs=self.programs,
            database=self.database,
            replay=self.replay,
            response_formats=self.response_formats,
        )
        self.graph = self._compile()

    def database(self, path: str) -> Database:
        """The (cached) read-only database at ``path``."""
        with self._db_lock:
            if path not in self._dbs:
                self._dbs[path] = open_database(path)
            return self._dbs[path]

    def _compile(self) -> Any:
        """The graph: each node of :mod:`routerlab.agents.nodes` bound to this pipeline's env."""
        env = self.env
        retry = langgraph_retry(self.retry_policy)
        decider = partial(pick_decider, self.tools)
        g = StateGraph(PipelineState)
        g.add_node("direct", timed("direct", partial(direct_node, env)))
        g.add_node("route", timed("route", partial(route_node, env)), retry_policy=retry)
        g.add_node(
            "dispatch",
            timed("dispatch", partial(dispatch_node, env)),
            destinations=("tools", "ask_human", "respond", "route", "direct"),
        )
        g.add_node("tools", timed("tools", partial(tools_node, env)), retry_policy=retry)
        g.add_node("ask_human", partial(ask_human_node, env), destinations=("route", "direct"))
        g.add_node("respond", timed("respond", respond_node))
        g.add_conditional_edges(START, decider, {"direct": "direct", "route": "route"})
        g.add_edge("direct", "dispatch")
        g.add_edge("route", "dispatch")
        g.add_edge("tools", "dispatch")
        g.add_edge("respond", END)
        return g.compile(checkpointer=InMemorySaver())

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
        clarification: str | None = None,
        conversation_id: str | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        store: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        run_name: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> Generator[dict[str, Any], None, None]:
        """Run one request and yield its progress events live; the last is completed or error.

        Args:
            question: The user's request.
            database: Path of the database file.
            reply: Answers a clarifying question (returns None to leave it unanswered).
            agent: Explicit agent (tool) name, bypassing the router.
            hint: Evidence for SQL generation.
            oracle_intent: Gold intent (benchmarks; read only by the oracle baseline).
            clarification: The dataset's clarifying question of a clarify turn (benchmarks): the
                question asked, and the one SQL generation reads with the scripted reply.
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
            clarification=clarification,
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
        return snap.values

    def spec(self) -> dict[str, Any]:
        """Recorded arguments of the pipeline and its router (for MLflow params)."""
        return {"router": component_spec(self.router), "config": config_dict(self.config)}


def _check_formats(formats: Mapping[str, Any], tools: Mapping[str, Tool]) -> None:
    """Every response format is a pydantic model of a pipeline tool.

    Raises:
        ContractError: Naming the format that is not.
    """
    for name, model in formats.items():
        if name not in tools or not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ContractError(
                f"bad response format for {name!r}",
                expected=f"a pydantic model per tool among {sorted(tools)}",
                found=f"{name!r}: {model!r}",
                fix="map a pipeline tool's name to a pydantic BaseModel subclass",
            )
