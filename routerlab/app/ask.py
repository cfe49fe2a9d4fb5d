"""``routerlab ask``: one request through the pipeline, progress shown live.

The request is checked as the HTTP API checks its body (:func:`check_request`), its pipeline
built by :func:`routerlab.routers.build_pipeline` and its agent checked as the server builds and
checks them (:func:`check_agent`, which :mod:`routerlab.serve.app` calls too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from routerlab import routers
from routerlab.agents.capture import build_trace
from routerlab.agents.errors import ConfigError, DatabaseError, UnknownComponentError
from routerlab.agents.lm import resolve_lm
from routerlab.agents.tools import tools as tool_registry
from routerlab.agents.turn_history import turn_from_trace
from routerlab.app.ask_request import AskRequest, describe_validation_errors
from routerlab.benchmarks.builtin import builtin_database_path
from routerlab.conversation_store import ConversationStore, default_path, new_conversation_id

__all__ = ["ask", "check_agent", "check_request", "print_event"]

#: the command-line option of each field of the HTTP API's request body
_OPTIONS = {
    "question": "QUESTION",
    "agent": "--agent",
    "reply": "--reply",
    "router": "--router",
    "conversation_id": "--conversation",
}


def check_request(
    question: str, router_name: str, agent: str | None, reply: str | None, conversation: str | None = None
) -> None:
    """Validate a command-line request exactly as the HTTP API validates its body.

    An empty question, one over the length cap, or a bad ``--reply`` is refused before a model
    loads, with the same expectations the API states.

    Raises:
        ConfigError: Naming the option, what was expected and what was found.
    """
    try:
        AskRequest(
            question=question,
            router=router_name,
            mode="direct" if agent else "auto",
            agent=agent,
            reply=reply,
            conversation_id=conversation,
        )
    except ValidationError as exc:
        first = describe_validation_errors(exc.errors())[0]
        option = _OPTIONS.get(first["field"].split(".")[0], first["field"])
        raise ConfigError(
            f"invalid {option}",
            expected=first["expected"],
            found=first["found"],
            fix=f"pass a valid {option}",
            details={"option": option},
        ) from None


def check_agent(pipeline: Any, agent: str, *, option: str | None = None) -> None:
    """Refuse an agent that is not a registered tool of the pipeline, listing those it offers.

    Args:
        pipeline: The request's pipeline.
        agent: The agent the request names.
        option: The command-line option that named it (``--agent``), for the message; None for
            an HTTP request (its error envelope names the field).

    Raises:
        UnknownComponentError: No such tool, or not one of the pipeline's.
    """
    tool_registry.get(agent)
    if agent not in pipeline.tools:
        raise UnknownComponentError(
            f"agent {agent!r} is not one of the pipeline's tools",
            expected=f"one of: {', '.join(pipeline.tools)}",
            found=repr(agent),
            fix="pick an agent the pipeline offers" + (f" ({option} NAME)" if option else ""),
            details={"option": option} if option else {},
        )


def print_event(console: Console, ev: dict[str, Any]) -> None:
    """Print one progress / completed / error event as a line."""
    style = {"progress": "cyan", "completed": "green", "error": "red"}.get(ev["type"], "white")
    console.print(
        f"[{style}]{ev['type']:>9}[/] {escape(str(ev['display_name']))}: {escape(str(ev['details']))}", highlight=False
    )


def ask(
    question: str,
    db: Path | None,
    router_name: str,
    lm_spec: str,
    api_base: str | None,
    agent: str | None,
    reply: str | None,
    console: Console,
    *,
    conversation: str | None = None,
    store_path: Path | None = None,
    user: str | None = None,
    shared_conversations: bool = False,
) -> int:
    """Run one request and print events, answer, SQL and rows. Returns the exit code.

    The request is checked as the HTTP API checks it (non-blank, length cap, known agent) before
    anything runs; a bad one raises ``ConfigError`` (exit 2).

    A clarifying question is answered by ``reply``, else by the terminal user when stdin is
    interactive, else left unanswered (the turn ends with the question).

    Every request is a turn of a conversation kept on disk (``store_path``, by default
    ``<cache>/conversations.sqlite``): ``conversation`` continues one (its earlier turns are the
    context of this one), else a new one starts; its id is printed last. A conversation belongs
    to the ``user`` who started it: another user continuing it is refused (``ConversationForbidden``,
    exit 2) before anything runs, unless ``shared_conversations``.
    """
    check_request(question, router_name, agent, reply, conversation)
    path = Path(db) if db is not None else builtin_database_path()
    if not path.exists():
        raise DatabaseError(
            f"database file not found: {path}",
            expected="a DuckDB or SQLite file",
            found="no such file",
            fix="pass --db PATH to an existing database file",
        )
    store = ConversationStore(store_path or default_path(), shared=shared_conversations)
    conv = conversation or new_conversation_id()
    try:
        # another user's conversation stops here, before a model loads or anything is shown
        history = store.history(conv, user_id=user)
    except BaseException:
        store.close()
        raise
    lm = resolve_lm(lm_spec, api_base=api_base)
    pipeline = routers.build_pipeline(router_name, lm)
    if agent is not None:
        check_agent(pipeline, agent, option="--agent")

    def answer_question(q: str) -> str | None:
        if reply is not None:
            console.print(
                f"[yellow]  asked:[/] {escape(str(q))}\n[yellow]replied:[/] {escape(str(reply))}", highlight=False
            )
            return reply
        if sys.stdin.isatty():
            return console.input(f"[yellow]{q}[/] > ") or None
        return None

    if conversation is not None:
        console.print(f"[dim]conversation {escape(str(conv))}: {len(history)} earlier turn(s)[/]", highlight=False)
    last: dict[str, Any] = {}
    for ev in pipeline.stream(
        question,
        str(path),
        reply=answer_question,
        agent=agent,
        conversation_id=conv,
        history=history,
        store=store.store(conv),
    ):
        print_event(console, ev)
        last = ev
    final = pipeline.final_state(conv)
    turn = turn_from_trace(question, build_trace("", final, 0.0))
    turns = store.append(conv, turn, user_id=user, store=final.get("store"))
    store.close()
    console.print()
    if last.get("type") == "error":
        console.print(f"[red]{escape(str(last.get('details')))}[/]", highlight=False)
        _print_conversation(console, conv, turns)
        return 1
    console.print(f"[bold]answer:[/] {escape(str(last.get('answer')))}", highlight=False)
    if last.get("sql"):
        console.print(f"[bold]sql:[/] {escape(str(last['sql']))}", highlight=False)
    if last.get("rows"):
        table = Table(*last.get("columns", []))
        for row in last["rows"][:20]:
            table.add_row(*[str(v) for v in row])
        console.print(table)
    _print_conversation(console, conv, turns)
    return 0


def _print_conversation(console: Console, conv: str, turns: int) -> None:
    console.print(
        f"conversation: {conv} (turn {turns}; continue with --conversation {conv})", highlight=False, markup=False
    )
