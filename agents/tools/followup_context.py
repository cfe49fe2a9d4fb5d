"""How the routed pipeline's SQL generation sees a follow-up: the ``followup_context`` modes.

``ToolSettings.followup_context`` names one mode of the registry :data:`followup_context`:

* ``parenthesis``: the new request, then the last data turn's question, SQL and result summary
  in a parenthesis (:func:`routerlab.agents.turn_history.question_in_context`), byte for byte
  the prompt before the setting existed (the default until the 2026-11-28 follow-up study).
* ``edit`` (the default, chosen by that study, docs/results/2026-11-28-followups.md): the last
  data turn's question and SQL first, then the new request as an edit instruction on that
  query (keep its FROM/JOIN/WHERE unless the request changes them, a newly named entity
  replaces the one it stands in for, "how many" counts the previous result's rows).
* ``rewrite``: one LM call (:func:`routerlab.agents.rewrite.standalone_question`) turns the
  follow-up and up to three earlier data turns into one standalone question, which SQL
  generation sees as a first turn; an empty or unusable rewrite falls back to ``parenthesis``.

A first turn (no earlier data turn) is the question unchanged in every mode, at no cost. The
mode applies only to ``generate_sql`` with a ``data_discovery`` call (the routed pipeline); the
plain call (``single_call``) always uses ``parenthesis``, so the baseline stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from routerlab.agents.registry import Registry
from routerlab.agents.rewrite import standalone_question
from routerlab.agents.turn_history import Turn, last_data_turn, question_in_context

if TYPE_CHECKING:
    import dspy

__all__ = ["FollowupContext", "InContext", "edit_instruction", "followup_context"]


@dataclass(frozen=True)
class InContext:
    """A request as SQL generation sees it, and what the trace should show about how.

    Attributes:
        question: The text SQL generation gets as its question.
        record: Keys added to generate_sql's output (``standalone``, ``rewrite_failed``); empty
            when there is nothing to show.
    """

    question: str
    record: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class FollowupContext(Protocol):
    """Gives SQL generation a request with the conversation it may follow up on."""

    def __call__(self, lm: dspy.LM, question: str, history: Sequence[Turn]) -> InContext:
        """The request in context.

        Args:
            lm: The model (only a mode that makes its own call uses it).
            question: The request (with any clarification the user gave).
            history: The earlier turns, oldest first.
        """
        ...


followup_context: Registry[InContext] = Registry("follow-up context mode")
"""Registry of the ways a follow-up reaches SQL generation, by name."""


@followup_context("parenthesis")
def parenthesis_context(lm: dspy.LM, question: str, history: Sequence[Turn]) -> InContext:
    """The request, then the last data turn in a parenthesis (the behaviour before the setting)."""
    return InContext(question_in_context(question, history))


def edit_instruction(question: str, history: Sequence[Turn]) -> str:
    """The request as an edit of the last data turn's query (``question`` alone without one).

    The previous question and SQL come first, then the request and the editing rules; the
    wording is general on purpose, not tuned to any dataset's questions.
    """
    last = last_data_turn(history)
    if last is None:
        return question
    return (
        f"Previous request: {last.get('question', '')}\n"
        f"Previous SQL: {last['sql']}\n"
        f"New request: {question}\n"
        "Write the query for the new request by editing the previous SQL. Keep its FROM, JOIN and WHERE "
        "unless the new request changes them. A newly named entity or value replaces the one it stands "
        "in for; do not add it with AND. 'How many' or 'count' about the previous list counts the rows "
        "of the previous query's result. If the new request does not follow up on the previous one, "
        "write a new query for it."
    )


@followup_context("edit")
def edit_context(lm: dspy.LM, question: str, history: Sequence[Turn]) -> InContext:
    """The request as an edit instruction on the last data turn's query."""
    return InContext(edit_instruction(question, history))


@followup_context("rewrite")
def rewrite_context(lm: dspy.LM, question: str, history: Sequence[Turn]) -> InContext:
    """The standalone question one LM call writes; ``parenthesis`` when the rewrite fails."""
    rewrite = standalone_question(lm, question, history)
    if not rewrite.rewritten:
        return InContext(question)  # a first turn: no call, nothing to show
    if not rewrite.ok:
        return InContext(
            question_in_context(question, history),
            {"standalone": None, "rewrite_failed": rewrite.failure, "fallback": "parenthesis"},
        )
    return InContext(rewrite.text, {"standalone": rewrite.text})
