"""Rewrite-first: a follow-up request turned into one standalone question by one LM call.

"and in 2023?" after "List the orders of Acme" becomes "List the orders of Acme in 2023". The
rewrite reads the follow-up and the earlier data turns (their questions and the SQL that answered
them, the last :data:`REWRITE_TURNS` at most) and writes a question that needs no conversation.
SQL generation (``ToolSettings.followup_context="rewrite"``) then sees that question as it would a
first turn, so the schema prefix llama.cpp holds is reused; a router can route the very same
rewrite (issue 49), which is why it lives here and not inside a tool.

A first turn (no earlier data turn) is never rewritten and costs no call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from routerlab.agents.lm.chat import chat
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import Turn

if TYPE_CHECKING:
    import dspy

__all__ = ["REWRITE_MAX_TOKENS", "REWRITE_TURNS", "Rewrite", "rewrite_messages", "standalone_question"]

#: earlier data turns the rewrite reads (the most recent ones)
REWRITE_TURNS = 3

#: completion budget of the rewrite: one question, not an essay
REWRITE_MAX_TOKENS = 96

#: a reply that starts like a query is a query, not a question
_SQL_START = re.compile(r"^\s*(SELECT\b.*\bFROM\b|WITH\s+\w+\s+AS\s*\()", re.IGNORECASE | re.DOTALL)

#: a label the model may put before its question ("Standalone question: ...")
_LABEL = re.compile(r"^\s*(standalone question|rewritten question|question)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Rewrite:
    """The outcome of one rewrite.

    Attributes:
        text: The standalone question; the follow-up itself when nothing was rewritten; empty
            when the rewrite failed (see ``failure``).
        rewritten: An LM call wrote ``text`` (False for a first turn).
        failure: Why the model's reply is no usable question (``""`` when it is): the caller
            falls back to its own way of giving the context.
        reply: The model's raw reply (``""`` without a call).
        usage: The call's tokens and latency (also recorded in every active usage scope, so a
            turn counts it with its other sub-agent calls).
    """

    text: str
    rewritten: bool = False
    failure: str = ""
    reply: str = ""
    usage: Usage = field(default_factory=Usage)

    @property
    def ok(self) -> bool:
        """The rewrite gave a usable standalone question (or none was needed)."""
        return not self.failure


def _data_turns(history: Sequence[Turn]) -> list[Turn]:
    """The last :data:`REWRITE_TURNS` turns whose SQL ran, oldest first."""
    ran = [t for t in history if t.get("sql") and not t.get("error_class")]
    return ran[-REWRITE_TURNS:]


def rewrite_messages(question: str, turns: Sequence[Turn]) -> list[dict[str, str]]:
    """The chat exchange asking for the standalone question (general wording, no dataset tuning)."""
    earlier = "\n".join(
        f"{i}. Request: {t.get('question', '')}\n   SQL: {t.get('sql', '')}" for i, t in enumerate(turns, 1)
    )
    user = (
        f"Earlier requests in a conversation about a database, oldest first, with the SQL that answered each:\n"
        f"{earlier}\n\n"
        f"Follow-up request: {question}\n\n"
        "Rewrite the follow-up request as one standalone question that can be answered without the conversation. "
        "Keep every table, condition and entity of the earlier requests that the follow-up still relies on; "
        "when the follow-up names a new entity or value, it replaces the one it stands in for. "
        "If the follow-up does not depend on the earlier requests, repeat it unchanged. "
        "Reply with the question only."
    )
    return [
        {"role": "system", "content": "You rewrite follow-up requests into standalone questions."},
        {"role": "user", "content": user},
    ]


def _question_of(reply: str) -> str:
    """The question in the model's reply: its first non-empty line, without a label or quotes."""
    unfenced = re.sub(r"```\w*", "", reply)
    line = next((ln.strip() for ln in unfenced.strip().splitlines() if ln.strip()), "")
    line = _LABEL.sub("", line).strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    return line


def standalone_question(lm: dspy.LM, question: str, history: Sequence[Turn]) -> Rewrite:
    """``question`` as a standalone question, written by ``lm`` from the earlier data turns.

    Args:
        lm: The model (one greedy call, through :func:`routerlab.agents.lm.chat`).
        question: The follow-up as the user sent it.
        history: The earlier turns, oldest first (``PipelineState.history``).

    Returns:
        Without an earlier data turn, ``question`` unchanged and no call. Otherwise the model's
        question, or an empty ``text`` with ``failure`` set when the reply is empty or is a SQL
        query instead of a question.
    """
    turns = _data_turns(history)
    if not turns:
        return Rewrite(text=question)
    result = chat(lm, rewrite_messages(question, turns), max_tokens=REWRITE_MAX_TOKENS)
    text = _question_of(result.text)
    failure = ""
    if not text:
        failure = "empty rewrite"
    elif _SQL_START.match(re.sub(r"```\w*", "", result.text).strip()):
        # a model that answers with the query has not written a question
        failure = "the rewrite is a SQL query, not a question"
    return Rewrite(
        text="" if failure else text,
        rewritten=True,
        failure=failure,
        reply=result.text,
        usage=result.usage,
    )
