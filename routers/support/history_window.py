"""Which earlier turns an LM router's prompt shows: the ``history`` argument of ``llm``, ``hybrid``, ``dspy``.

Routing on the whole history can hurt deep conversations (issue 49: the zero-shot ``llm`` router
treats follow-ups as things to ask about; a production study found the last user turn plus the
assistant's reply restored accuracy that the whole history lost). A window is chosen by name
from the :data:`history_window` registry, so a study compares them as constructor arguments that
every run records (``--router-arg llm.history=last``):

* ``none``: no earlier turn (``llm``'s default);
* ``last``: the last turn, the user's request and the assistant's reply;
* ``last_k``: the last :data:`~routerlab.agents.turn_history.HISTORY_TURNS` turns (the behaviour
  before windows existed; ``hybrid``'s and ``dspy``'s default).

* ``rewrite``: the follow-up turned into one standalone request by the model
  (``routerlab.agents.rewrite.standalone_question``, the same rewrite SQL generation uses with
  ``followup_context="rewrite"``), routed with no earlier turn; a first turn is not rewritten,
  and a failed rewrite falls back to ``last``, the context the model would otherwise have had.
  It costs one LM call per follow-up, counted in the decision's usage.

Each default was chosen per router on CoSQL's tune databases by a rule written before the study
(docs/results/2026-11-28-history-windows.md): ``llm`` scored 0.73 with ``none`` against 0.35 with
``last_k`` (24 turns won, 1 lost); for ``hybrid`` and ``dspy`` no window beat ``last_k`` by the
rule's margin, so they keep it.

Whatever the window, a question the assistant's last turn left pending is shown with it
(:func:`window_of`): a reply such as "yes" is routed with the question it answers.

A window may rewrite the request itself (:attr:`Window.request`); a new window is one more
registered function here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from routerlab.agents.errors import ConfigError, UnknownComponentError
from routerlab.agents.registry import Registry
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import HISTORY_TURNS, Turn, history_of

__all__ = ["DEFAULT_WINDOW", "HistoryWindow", "Window", "check_window", "history_window", "window_of"]

#: the window an LM router uses unless its own study chose another (``llm``: ``none``); the
#: history-window study kept it for ``hybrid`` and ``dspy`` (docs/results/2026-11-28-history-windows.md)
DEFAULT_WINDOW = "last_k"


@dataclass(frozen=True)
class Window:
    """What a routing prompt shows of the conversation.

    Attributes:
        turns: Earlier turns to show, oldest first.
        request: The request to route in place of the user's words (a rewritten follow-up);
            None: the request as the user wrote it.
        usage: What building the window cost (the ``rewrite`` window's model call); the router
            adds it to its decision's usage, so the decision's cost counts it.
    """

    turns: list[Turn] = field(default_factory=list)
    request: str | None = None
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class HistoryWindow(Protocol):
    """Chooses what a routing prompt shows of the conversation before ``request``."""

    def __call__(self, request: str, history: Sequence[Turn], lm: Any) -> Window:
        """The window for ``request``.

        Args:
            request: The user's request.
            history: The conversation's earlier turns, oldest first.
            lm: The router's LM (for a window that asks the model; the built-in ones do not).
        """
        ...


history_window: Registry[Window] = Registry("history window")
"""Registry of history windows by name (the LM routers' ``history`` argument)."""


@history_window("none")
def no_history(request: str, history: Sequence[Turn], lm: Any) -> Window:
    """No earlier turn: the request is routed alone."""
    return Window()


@history_window("last")
def last_turn(request: str, history: Sequence[Turn], lm: Any) -> Window:
    """The last turn: the user's request and the assistant's reply (its answer, or the SQL that ran)."""
    return Window(turns=list(history[-1:]))


@history_window("last_k")
def last_k_turns(request: str, history: Sequence[Turn], lm: Any) -> Window:
    """The last ``HISTORY_TURNS`` turns (the routers' behaviour before windows existed)."""
    return Window(turns=list(history[-HISTORY_TURNS:]))


@history_window("rewrite")
def rewritten(request: str, history: Sequence[Turn], lm: Any) -> Window:
    """The follow-up rewritten into a standalone request (no earlier turn shown); ``last`` if that fails."""
    if lm is None:  # a router bound without an LM cannot rewrite; its contract check names the LM
        raise ConfigError(
            "the 'rewrite' history window needs the router's LM",
            expected="a router bound with an LM (--lm)",
            found="no LM",
            fix="use history=last or history=none for a router without an LM",
        )
    # imported here: the rewrite pulls in the LM layer, which the other windows never need
    from routerlab.agents.rewrite import standalone_question

    done = standalone_question(lm, request, history)
    if not done.rewritten:  # a first turn, or no earlier data turn to read: the request as written
        return Window(turns=list(history[-1:]))
    if not done.text:  # the call was made and failed: the last turn, and the call still counts
        return Window(turns=list(history[-1:]), usage=done.usage)
    return Window(turns=[], request=done.text, usage=done.usage)


def check_window(router_name: str, name: str) -> str:
    """``name`` if it names a registered window, else a ``ConfigError`` naming the known ones.

    Args:
        router_name: The router whose ``history`` argument it is, for the message.
        name: The window's name.
    """
    try:
        history_window.get(name)
    except UnknownComponentError as exc:
        raise ConfigError(
            f"bad value for {router_name} router argument 'history'",
            expected=f"a history window: {', '.join(history_window.names())}",
            found=repr(name),
            fix=f"pass e.g. --router-arg {router_name}.history=last ({exc.fix})",
            details={"kind": "router", "name": router_name, "argument": "history"},
        ) from None
    return name


def window_of(name: str, state: Any, lm: Any = None) -> Window:
    """The window ``name`` over the conversation of ``state`` (its question and its history).

    Whatever the window, a question the last turn left pending (the state's ``pending_question``)
    is shown: the request is its answer and means little without it ("yes").
    """
    history = history_of(state)
    window = history_window.get(name)(str(state.get("question", "") or ""), history, lm)
    if state.get("pending_question") and history and window.turns[-1:] != history[-1:]:
        window = replace(window, turns=[*window.turns, history[-1]])
    return window
