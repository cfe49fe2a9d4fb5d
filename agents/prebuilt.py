"""Seed 004's LangGraph prebuilt names, as entry points into routerlab's own parts.

``create_react_agent(model, tools, response_format=..., retry_policy=...)`` is the swarm runner
(:class:`routerlab.agents.swarm.Swarm`: the model calls tools until it answers) behind
LangGraph's call shape: ``agent.invoke({"messages": [...], ...}, config)`` returns the state
(:class:`AgentState`), with ``structured_response`` as the model object when a response format
is given. Messages are LangChain's (``AIMessage.tool_calls`` of :class:`ToolCall` dicts,
``ToolMessage`` with ``status``) merged by ``add_messages``. Tools are plain functions,
:func:`tool` / :meth:`StructuredTool.from_function` objects or :class:`BaseTool` subclasses
(:mod:`routerlab.agents.prebuilt_tools`), run as seed 004's ToolNode runs them: parameters
annotated ``InjectedState`` receive a read-only copy of the run's state and ``InjectedStore``
the agent's :class:`~routerlab.agents.tools.store.MemoryStore`, an exception becomes an error tool
message (``status="error"``) unless the tool opts out, and a reply asking for tools with fewer
than 2 of the ``recursion_limit``'s steps left ends the run with
:data:`~routerlab.agents.swarm.runner.NEED_MORE_STEPS`. Retries follow the seed's defaults
(:data:`~routerlab.agents.retry.SEED_RETRY_POLICY`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from routerlab.agents.errors import ContractError, reject_unknown_keys
from routerlab.agents.lm.chat import chat
from routerlab.agents.prebuilt_messages import ToolCall, add_messages, merged, to_chat, to_messages
from routerlab.agents.prebuilt_tools import BaseTool, StructuredTool, tool, tool_content
from routerlab.agents.retry import SEED_RETRY_POLICY, RetryPolicy, merge_retry_policy, should_retry
from routerlab.agents.swarm.agent import Agent
from routerlab.agents.swarm.context import ContextVariables
from routerlab.agents.swarm.events import SwarmEvent
from routerlab.agents.swarm.runner import Swarm
from routerlab.agents.swarm.tools import FunctionTool
from routerlab.agents.tools.base import Tool, read_only
from routerlab.agents.tools.schema import InjectedState, InjectedStore
from routerlab.agents.tools.store import MemoryStore

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "RUNNABLE_CONFIG_KEYS",
    "STRUCTURED_RESPONSE_PROMPT",
    "AgentState",
    "AgentStateWithStructuredResponse",
    "BaseStore",
    "BaseTool",
    "InjectedState",
    "InjectedStore",
    "ReactAgent",
    "RetryPolicy",
    "RunnableConfig",
    "StructuredTool",
    "ToolCall",
    "add_messages",
    "create_react_agent",
    "tool",
]

#: LangGraph's default recursion limit: steps (model replies and tool runs) one invoke may take
DEFAULT_RECURSION_LIMIT = 25
#: the instruction of the call that writes the structured response (the JSON schema follows it)
STRUCTURED_RESPONSE_PROMPT = "Reply with one JSON object that validates against this JSON schema:"

BaseStore = MemoryStore
"""Seed 004's ``BaseStore``: routerlab's bounded store (``get``, ``put``, ``delete``, ``search``)."""


class AgentState(TypedDict, total=False):
    """The state :meth:`ReactAgent.invoke` returns (seed 004's ``AgentState``).

    Attributes:
        messages: The conversation as LangChain messages, merged with ``add_messages``, the
            answer last.
        remaining_steps: Steps left of the recursion limit when the run ended (never negative).
    """

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: NotRequired[int]


class AgentStateWithStructuredResponse(AgentState, total=False):
    """:class:`AgentState` with the response format's object (``structured_response``)."""

    structured_response: Any


class RunnableConfig(TypedDict, total=False):
    """Seed 004's ``RunnableConfig``, every key of which :meth:`ReactAgent.invoke` accepts."""

    tags: list[str]
    metadata: dict[str, Any]
    callbacks: list[Callable[[SwarmEvent], Any]]
    run_name: str
    max_concurrency: int | None
    recursion_limit: int
    configurable: dict[str, Any]


RUNNABLE_CONFIG_KEYS = frozenset(RunnableConfig.__annotations__)


def _retry(policy: Mapping[str, Any] | None) -> RetryPolicy:
    return merge_retry_policy(policy, SEED_RETRY_POLICY)


def _config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    given = dict(config or {})
    reject_unknown_keys("RunnableConfig", given, RUNNABLE_CONFIG_KEYS)
    return given


class ReactAgent:
    """What :func:`create_react_agent` returns: ``invoke`` runs the swarm loop once.

    Attributes:
        agent: The swarm agent (instruction and tools).
        model: The DSPy LM.
        response_format: The pydantic model of ``structured_response``, or None.
        retry_policy: The merged retry policy.
        store: The store ``InjectedStore`` parameters receive (kept across invokes).
    """

    def __init__(
        self,
        agent: Agent,
        model: Any,
        response_format: type[BaseModel] | None,
        retry_policy: RetryPolicy,
        store: MemoryStore,
        sleep: Callable[[float], None],
    ) -> None:
        self.agent = agent
        self.model = model
        self.response_format = response_format
        self.retry_policy = retry_policy
        self.store = store
        self._sleep = sleep

    def invoke(self, input: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run the agent on ``input["messages"]``; the other input keys are the state tools see.

        Args:
            input: ``{"messages": [...], ...}``: OpenAI-style message dicts (or plain strings,
                read as user messages); other keys are state ``InjectedState`` tools receive.
            config: A :class:`RunnableConfig`: ``recursion_limit`` bounds the steps,
                ``callbacks`` are called with every trace event, ``tags``/``metadata``/
                ``run_name``/``configurable``/``max_concurrency`` are kept in the result's
                ``run_config`` (tools run one after another, so any ``max_concurrency`` holds).

        Returns:
            The final state: ``messages``, ``remaining_steps``, ``run_config``, the input's own
            keys, and ``structured_response`` (the model object) with a response format.

        Raises:
            ContractError: For messages that are not dicts or strings, an unknown config key,
                or a structured response that does not validate.
        """
        cfg = _config(config)
        messages = to_messages(input.get("messages", []))
        chat_messages = [to_chat(m) for m in messages]
        limit = int(cfg.get("recursion_limit") or DEFAULT_RECURSION_LIMIT)
        callbacks = list(cfg.get("callbacks") or [])

        def on_event(event: SwarmEvent) -> None:
            for cb in callbacks:
                cb(event)

        swarm = Swarm(self.model, step_limit=limit, on_event=on_event if callbacks else None)
        state = ContextVariables({k: v for k, v in input.items() if k != "messages"})
        state["messages"] = messages
        resp = self._with_retries(lambda: swarm.run(self.agent, chat_messages, context_variables=state))
        out: dict[str, Any] = {k: v for k, v in resp.context_variables.items() if k != "messages"}
        out["messages"] = merged(messages, resp.messages[len(chat_messages) :])
        out["remaining_steps"] = max(0, limit - resp.status.steps)
        out["run_config"] = {
            k: cfg[k] for k in ("tags", "metadata", "run_name", "configurable", "max_concurrency") if k in cfg
        }
        if self.response_format is not None:
            out["structured_response"] = self._with_retries(lambda: self._structured(resp.messages))
        return out

    async def ainvoke(self, input: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The awaitable :meth:`invoke` (LangGraph's ``ainvoke``): the run in a worker thread."""
        return await asyncio.to_thread(self.invoke, input, config)

    def _with_retries(self, fn: Callable[[], Any]) -> Any:
        policy = self.retry_policy
        delay = float(policy["initial_interval"])
        for attempt in range(1, int(policy["max_attempts"]) + 1):
            try:
                return fn()
            except Exception as exc:
                if attempt == int(policy["max_attempts"]) or not should_retry(policy, exc):
                    raise
                self._sleep(delay * (random.uniform(0.5, 1.5) if policy["jitter"] else 1.0))
                delay *= float(policy["backoff_factor"])
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _structured(self, messages: list[dict[str, Any]]) -> BaseModel:
        assert self.response_format is not None
        schema = json.dumps(self.response_format.model_json_schema(), ensure_ascii=False)
        system = {"role": "system", "content": f"{STRUCTURED_RESPONSE_PROMPT}\n{schema}"}
        reply = chat(self.model, [system, *messages])
        text = reply.text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
        try:
            return self.response_format.model_validate_json(text)
        except ValidationError as exc:
            raise ContractError(
                f"the model's structured response does not validate as {self.response_format.__name__}",
                expected="JSON matching the response format",
                found=text[:120],
                fix="use a model that follows the schema, or loosen the response format",
            ) from exc


def _swarm_tool(t: Tool, store: MemoryStore) -> FunctionTool:
    """A routerlab :class:`Tool` as a tool the swarm runs (seed 004's ToolNode semantics).

    The state comes from the context as a read-only copy, the store is bound, a return value
    that is not text becomes JSON (the tool message's content), and an exception becomes an
    error tool message unless the tool opts out (``handle_errors``).
    """
    others = [n for n in t.injected if n not in t.stores and n not in t.states]
    if others:
        raise ContractError(
            f"tool {t.name!r} asks for injected values a react agent does not have",
            expected="InjectedState and InjectedStore parameters only",
            found=str(others),
            fix="make it a pipeline tool (Pipeline runs ToolContext tools)",
        )

    def call(**kwargs: Any) -> str:
        for n in t.states:
            kwargs[n] = read_only(kwargs[n])
        return tool_content(t.fn(**kwargs, **dict.fromkeys(t.stores, store)))

    bound = dataclasses.replace(t, fn=call, injected=t.states, stores=(), states=())
    return FunctionTool(tool=bound, context_params=t.states)


def _as_tool(t: Callable[..., Any] | BaseTool | Tool) -> Tool:
    if isinstance(t, Tool):
        return t
    if isinstance(t, BaseTool):
        return t.as_tool()
    if callable(t):
        return tool(t).as_tool()
    raise ContractError(
        "a tool of create_react_agent is not a tool",
        expected="a function, a BaseTool (@tool, StructuredTool, a subclass) or a routerlab Tool",
        found=type(t).__name__,
        fix="pass functions or tool objects",
    )


def create_react_agent(
    model: Any,
    tools: Sequence[Callable[..., Any] | BaseTool | Tool],
    *,
    prompt: str = "",
    response_format: type[BaseModel] | None = None,
    retry_policy: Mapping[str, Any] | None = None,
    store: MemoryStore | None = None,
    name: str = "react_agent",
    sleep: Callable[[float], None] = time.sleep,
) -> ReactAgent:
    """Seed 004's ``create_react_agent``: a model that calls ``tools`` until it answers.

    Args:
        model: A DSPy LM (``routerlab.agents.lm.resolve_lm``).
        tools: Functions (read leniently) and :class:`Tool` objects.
        prompt: The system message.
        response_format: A pydantic model: after the answer, one more model call writes it
            (``structured_response``, the validated object).
        retry_policy: A :class:`RetryPolicy` dict (``max_attempts``, ``backoff_factor``,
            ``jitter``, ``retry_on``, ``initial_interval``): a run, or the structured call,
            raising one of ``retry_on`` is retried.
        store: The store for ``InjectedStore`` parameters (a fresh one by default).
        name: The agent's name in trace events.
        sleep: Waits between retries (tests pass a recorder).

    Raises:
        ContractError: For a missing model, unknown retry keys, or tools it cannot run.
    """
    if model is None:
        raise ContractError(
            "create_react_agent needs a model",
            expected="a DSPy LM",
            found="None",
            fix="pass routerlab.agents.lm.resolve_lm(...) or a scripted LM",
        )
    memory = store if store is not None else MemoryStore()
    built = [_swarm_tool(_as_tool(t), memory) for t in tools]
    agent = Agent(name, prompt, built, lm=model)
    return ReactAgent(agent, model, response_format, _retry(retry_policy), memory, sleep)
