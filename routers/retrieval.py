"""The ``retrieval`` router: find the right tools first, then call one.

With hundreds of tools their schemas no longer fit a small model's prompt. This router binds the
LM to a single tool at first, ``retrieve_tools(query)``; the query is searched in an index over
every tool's ``"name: description"`` (:mod:`routerlab.agents.tools.index`), and the names found join the
turn's ``selected_tool_ids`` (no duplicates, first-seen order: :func:`add_new`). The LM is then
bound to ``retrieve_tools`` plus the selected tools and makes the call (or searches again).

Retrieval runs inside one decision, like the handoff router's transfers: the pipeline sees one
route decision whose ``steps`` report each search (node ``route``, ``"retrieved: a, b, c"``) and
whose usage is the router's LM calls. The selected ids go into the pipeline state's
``selected_tool_ids`` (seed 001's field, merged by :func:`add_new`), so the next decision of the
same turn starts from them; each decision's summary keeps the selection as it stood then.

The index is any kind of :data:`routerlab.agents.tools.index.tool_index` or the import path of
a retrieval function (seed 001's ``retrieve_tools_function``). When it cannot be built (the
embedding model's package missing, say), the router falls back, as seed 001 does, to ``fallback``
(BM25 over the same descriptions by default), and when even that fails to the pipeline's own
tools bound at once with no search (the default toolset). The fallback is in every decision's
``method`` (``retrieval:bm25(fallback:embedding)``, ``retrieval:default_toolset(fallback:...)``)
and its ``retrieval_fallback`` summary field (requested, used, why), which the trace and the
MLflow decision spans keep. A search that fails later (the plug-in raises, or finds nothing)
falls back the same way, from that search on: the fallback index searches the same query, and
when it fails or finds nothing too, the default toolset is bound.

A retrieval function may also have seed 001's forms (:func:`routerlab.agents.tools.index.retrieval_form`):
``(query, *, store)`` searching a store of the tool descriptions, or a function whose own
parameters the model fills (``category: Literal[...]``), which is then the retrieval tool the
model sees.

The toolset searched is the pipeline's tools padded with deterministic distractors up to
``tool_scale`` (:func:`routerlab.agents.tools.distractors.tool_registry`); a call to a distractor is not a
pipeline tool, so the pipeline ends the turn with ``unknown_tool``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from routerlab.agents.errors import ConfigError, ContractError, RunError, require_positive
from routerlab.agents.lm.chat import chat
from routerlab.agents.plan import TOOL_INTENT
from routerlab.agents.routing import PlannedCall, RouteDecision, RouterEnv
from routerlab.agents.state import Intent, PipelineState, add_new
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.distractors import tool_registry
from routerlab.agents.tools.index import ToolIndex, index_factory
from routerlab.agents.tools.schema import INJECTED, function_schema
from routerlab.agents.trace import Usage
from routerlab.routers.base import require_lm, router, turn_database
from routerlab.routers.llm import SYSTEM_PROMPT as LLM_POLICY
from routerlab.routers.llm import to_openai_messages
from routerlab.routers.support.reply import continue_pending

__all__ = ["RETRIEVE_TOOL", "SYSTEM_PROMPT", "RetrievalDecision", "RetrievalRouter", "add_new", "retrieve_tools"]

# add_new lives with the state it reduces (``selected_tool_ids``); re-exported here

SYSTEM_PROMPT = (
    LLM_POLICY
    + """
You do not see every tool at once. Call retrieve_tools with a few words describing the tool the \
next step needs (for example "find the tables and columns for a data question"); the tools it \
finds become callable. Then call the right one of them."""
)


def retrieve_tools(query: str, index: Annotated[ToolIndex, INJECTED], k: Annotated[int, INJECTED]) -> list[str]:
    """Search the tool catalogue and make the best matching tools callable.

    Describe the tool the next step needs in a few words, for example "explain a SQL query" or
    "decline a request to change data". Returns the names of the tools found.

    Args:
        query: What the needed tool does, in a few words.
        index: The index searched (injected by the router, not shown to the model).
        k: How many tools to return (injected likewise).
    """
    return [hit.name for hit in index.search(query, k)]


def _retrieval_tool() -> Tool:
    description, parameters, injected = function_schema(retrieve_tools)
    return Tool(
        name="retrieve_tools", description=description, parameters=parameters, fn=retrieve_tools, injected=injected
    )


#: the one tool the LM sees before anything is selected; run by the router, never by the pipeline
RETRIEVE_TOOL: Tool = _retrieval_tool()


@dataclass
class RetrievalDecision(RouteDecision):
    """A :class:`RouteDecision` that also records what the router searched and selected.

    Its :meth:`summary` adds ``queries``, ``retrieved`` (this decision's hits),
    ``selected_tool_ids`` (the turn's selection after this decision; the pipeline merges the
    base class's field of the same name into the state) and ``retrieval_fallback``.

    Attributes:
        queries: The LM's search queries, in order.
        retrieved: Tool names the searches returned, merged without duplicates.
        retrieval_fallback: ``{"requested", "used", "reason"}`` when the requested index could
            not be built, else None.
    """

    queries: list[str] = field(default_factory=list)
    retrieved: list[str] = field(default_factory=list)
    retrieval_fallback: dict[str, str] | None = None

    def summary(self, strategy: str) -> dict[str, Any]:
        """The base summary plus ``queries``, ``retrieved``, ``selected_tool_ids`` and ``retrieval_fallback``."""
        return {
            **super().summary(strategy),
            "queries": list(self.queries),
            "retrieved": list(self.retrieved),
            "selected_tool_ids": list(self.selected_tool_ids),
            "retrieval_fallback": dict(self.retrieval_fallback) if self.retrieval_fallback else None,
        }


@router("retrieval")
class RetrievalRouter:
    """Retrieve tools by a search query, then call one of them .

    Args:
        k: Tools returned by one search.
        index: ``embedding`` (packaged all-MiniLM-L6-v2), ``bm25`` (lexical, no model), another
            registered index kind, or the import path of a retrieval function
            (``package.module:function``, called as ``function(query, tools, k)``).
        fallback: The index built when ``index`` is unavailable (``""``: none); when that fails
            too, the pipeline's tools are bound at once (the default toolset).
        tool_scale: Size of the searched toolset: the pipeline's tools plus distractors up to
            this many (8 with the default tools means the real sub-agents only).
        max_tokens: Completion budget of one LM call.
        max_retrievals: Searches allowed in one decision; after the last one the LM must call a
            selected tool.
        seed: Picks and orders the distractors.
        system_prompt: Instructions shown to the LM (default :data:`SYSTEM_PROMPT`).

    Raises:
        ConfigError: For a non-positive number or an unknown index.
    """

    def __init__(
        self,
        k: int = 5,
        index: str = "embedding",
        fallback: str = "bm25",
        tool_scale: int = 9,
        max_tokens: int = 256,
        max_retrievals: int = 2,
        seed: int = 0,
        system_prompt: str | None = None,
    ) -> None:
        require_positive("the retrieval router", k=k, tool_scale=tool_scale, max_tokens=max_tokens)
        if max_retrievals < 1:
            raise ConfigError(
                "the retrieval router must be allowed at least one search",
                expected="max_retrievals >= 1",
                found=repr(max_retrievals),
                fix="pass max_retrievals=1 or more",
            )
        for label, kind in (("index", index), ("fallback", fallback)):
            if label == "fallback" and not kind:
                continue
            try:
                index_factory(kind)  # a mistyped kind or import path is bad input, not a fallback
            except RunError as exc:
                raise ConfigError(
                    f"unknown tool {label} {kind!r}",
                    expected=f"a registered index kind ({exc.expected}) or package.module:function",
                    found=exc.found,
                    fix=exc.fix,
                ) from None
        self.k = k
        self.index_kind = index
        self.fallback = fallback
        self.tool_scale = tool_scale
        self.max_tokens = max_tokens
        self.max_retrievals = max_retrievals
        self.seed = seed
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.env: RouterEnv | None = None
        self.registry: dict[str, Tool] = {}
        self.index: ToolIndex | None = None
        #: what bind (or a failed search) fell back to, or None (requested, used, reason)
        self.fallback_info: dict[str, str] | None = None
        #: the tool the model searches with (the plug-in's own for a model-form function)
        self.retrieve_tool: Tool = RETRIEVE_TOOL
        self._tools: list[Tool] = []
        self._defaults: list[Tool] = []

    def bind(self, env: RouterEnv) -> None:
        """Build the toolset (pipeline tools plus distractors) and its index; needs an LM."""
        require_lm(env, "the retrieval router")
        if any(t.name == RETRIEVE_TOOL.name for t in env.tools):
            raise ContractError(
                "a pipeline tool shadows the retrieval router's own tool",
                expected=f"no pipeline tool named {RETRIEVE_TOOL.name!r}",
                found=f"{RETRIEVE_TOOL.name!r} among the pipeline's tools",
                fix="rename that tool",
            )
        tools = tool_registry(self.tool_scale, seed=self.seed, tools=env.tools)
        self.registry = {t.name: t for t in tools}
        self._tools, self._defaults = list(tools), list(env.tools)
        self.index, self.fallback_info = self._build_index(tools, env.tools)
        own = getattr(self.index, "retrieve_tool", None)
        self.retrieve_tool = (own() if callable(own) else None) or RETRIEVE_TOOL
        self.env = env

    def _build_index(self, tools: Sequence[Tool], defaults: Any) -> tuple[ToolIndex | None, dict[str, str] | None]:
        """The requested index, else the fallback one, else None (the default toolset).

        Only an index that cannot be built falls back (a missing model package, a plug-in that
        raises); a name that names nothing was refused in the constructor.
        """
        reasons: list[str] = []
        for kind in dict.fromkeys(k for k in (self.index_kind, self.fallback) if k):
            try:
                index = index_factory(kind)(tools)
            except Exception as exc:  # any failure to build means "unavailable": try the next
                reasons.append(f"{kind}: {type(exc).__name__}: {getattr(exc, 'what', None) or exc}")
                continue
            used = None if kind == self.index_kind else kind
            return index, self._fallback(used, reasons)
        # even the fallback failed: the pipeline's own tools, bound at once, are the toolset
        self.registry = {t.name: t for t in defaults}
        return None, self._fallback("default_toolset", reasons)

    def _search(self, args: dict[str, Any]) -> list[str]:
        """The tools a search finds; a search that raises or finds nothing falls back (recorded).

        The fallback index (built now, over the same tools) searches the same query; when it
        cannot be built, raises or finds nothing too, the default toolset is bound from here on
        and nothing is returned (the caller then binds every default tool).
        """
        assert self.index is not None
        query = str(args.get("query", "") or json.dumps(args, ensure_ascii=False, sort_keys=True))
        kinds = [getattr(self.index, "kind", self.index_kind)]
        reasons: list[str] = []
        index: ToolIndex | None = self.index
        fallback_tried = False
        while index is not None:
            try:
                search_args = getattr(index, "search_args", None)
                if callable(search_args) and self.retrieve_tool is not RETRIEVE_TOOL and index is self.index:
                    hits = search_args(dict(args), self.k)
                else:
                    hits = index.search(query, self.k)
                found = [h.name for h in hits]
            except Exception as exc:  # any search failure: fall back, never end the turn
                reasons.append(f"search {kinds[-1]}: {type(exc).__name__}: {exc}")
                found = []
            else:
                if not found:
                    reasons.append(f"search {kinds[-1]}: found nothing for {query!r}")
            if found:
                if index is not self.index:
                    self.index = index
                    self.retrieve_tool = RETRIEVE_TOOL
                    self.fallback_info = self._fallback(self.fallback, reasons)
                return found
            index = None
            if self.fallback and not fallback_tried and self.fallback not in kinds:
                fallback_tried = True
                kinds.append(self.fallback)
                try:
                    index = index_factory(self.fallback)(self._tools)
                except Exception as exc:  # the fallback cannot be built either
                    reasons.append(f"{self.fallback}: {type(exc).__name__}: {exc}")
        self.index = None
        self.registry = {t.name: t for t in self._defaults}
        self.fallback_info = self._fallback("default_toolset", reasons)
        return []

    def _fallback(self, used: str | None, reasons: list[str]) -> dict[str, str] | None:
        if used is None:
            return None
        return {"requested": self.index_kind, "used": used, "reason": "; ".join(reasons)}

    @property
    def method(self) -> str:
        """The decisions' ``method``: ``retrieval:<index>``, with the fallback when there was one."""
        if self.fallback_info is None:
            return f"retrieval:{self.index_kind}"
        return f"retrieval:{self.fallback_info['used']}(fallback:{self.index_kind})"

    def _selected(self, state: PipelineState) -> list[str]:
        """The turn's selection so far: the state's ``selected_tool_ids``, then tools already called."""
        if self.index is None:  # the default toolset: everything is selected, nothing is searched
            return list(self.registry)
        selected = list(state.get("selected_tool_ids") or [])
        records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
        # a call made outside this router (an explicit agent) stays callable for the next step
        selected = add_new(selected, [r.get("name", "") for r in records])
        return [n for n in selected if n in self.registry]

    def decide(self, state: PipelineState) -> RouteDecision:
        """Search (once or more) and call one tool, all inside one decision."""
        assert self.env is not None and self.env.lm is not None
        selected = self._selected(state)
        messages = to_openai_messages(state, self.system_prompt)
        usage = Usage()
        queries: list[str] = []
        retrieved: list[str] = []
        steps: list[tuple[str, str, dict[str, Any]]] = []
        searches = 0
        while True:
            can_search = self.index is not None and searches < self.max_retrievals
            if self.index is None:  # the default toolset (bound at start or after a failed search)
                selected = list(self.registry)
            bound = [self.retrieve_tool] if can_search else []
            bound += [self.registry[n] for n in selected]
            result = chat(
                self.env.lm,
                messages,
                tools=[t.openai_schema() for t in bound],
                tool_choice="required",
                max_tokens=self.max_tokens,
            )
            usage = usage.add(result.usage)
            searches_now = [c for c in result.tool_calls if c["name"] == RETRIEVE_TOOL.name]
            calls = [c for c in result.tool_calls if c["name"] != RETRIEVE_TOOL.name]
            if not searches_now or calls:
                break
            for c in searches_now:
                query = str(c["args"].get("query", "") or json.dumps(c["args"], ensure_ascii=False, sort_keys=True))
                found = self._search(dict(c["args"])) if self.index is not None else []
                searches += 1
                queries.append(query)
                retrieved = add_new(retrieved, found)
                selected = add_new(selected, found)
                steps.append(("route", f"retrieved: {', '.join(found)}", {"query": query, "retrieved": list(found)}))
                messages += [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                        ],
                    },
                    {
                        "role": "tool",
                        "tool_call_id": c["id"],
                        "content": f"[retrieve_tools tool_call_id={c['id']}] now callable: {', '.join(found)}",
                    },
                ]
        decision = self._decision(
            state, result.text, calls, result.invalid_tool_calls, usage, steps, queries, retrieved, selected
        )
        # a reply to the assistant's pending question continues its request (routers/support/reply.py)
        return continue_pending(decision, state, turn_database(self.env, state))

    def _decision(
        self,
        state: PipelineState,
        text: str,
        calls: list[dict[str, Any]],
        invalid: list[dict[str, Any]],
        usage: Usage,
        steps: list[tuple[str, str, dict[str, Any]]],
        queries: list[str],
        retrieved: list[str],
        selected: list[str],
    ) -> RetrievalDecision:
        known = state.get("tool_calls", {})
        chosen: list[PlannedCall] = []
        for c in calls[:1]:  # one step at a time: later calls must cite this one's id
            cid = c["id"] if c["id"] not in known else f"{c['id']}_{len(known)}"
            chosen.append({"id": cid, "name": c["name"], "args": dict(c["args"])})
        route = state.get("route") or {}
        first = chosen[0]["name"] if chosen else None
        intent: Intent | None = route.get("intent") if known and route.get("intent") else TOOL_INTENT.get(first or "")
        return RetrievalDecision(
            tool_calls=chosen,
            answer=None if chosen else (text or None),
            intent=intent,
            confidence=1.0 if chosen else 0.0,
            method=self.method,
            usage=usage,
            invalid_tool_calls=list(invalid),
            steps=steps,
            queries=queries,
            retrieved=retrieved,
            selected_tool_ids=selected,
            retrieval_fallback=self.fallback_info,
        )
