"""Intent classification by an LM in one forward pass, shared by the ``dspy`` and ``hybrid`` routers.

The prompt comes from a DSPy ``Predict`` over :class:`~routerlab.routers.dspy_router.RouteRequest`:
its (possibly optimized) instructions and few-shot demos form a chat prefix that never changes
between requests of one database, so the engine evaluates it once and keeps its KV state. Per
request only the request's own tokens are evaluated, and the intent is read from the next-token
probabilities of the six intent labels (:mod:`routerlab.agents.lm.scoring`). The probability of
the chosen intent is the router's confidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from routerlab.agents.lm.scoring import ChoiceScores, score_choices
from routerlab.agents.lm.usage import usage_scope
from routerlab.agents.state import INTENTS, Intent, PipelineState
from routerlab.agents.trace import Usage

if TYPE_CHECKING:
    import dspy

    from routerlab.agents.routing import RouterEnv

__all__ = ["ANSWER_RULE", "IntentPrompt", "OnePass", "classify_one_pass", "schema_summary", "tables_of"]

ANSWER_RULE = "Answer with the intent only, one word: " + ", ".join(INTENTS) + "."


def _user_turn(request: str, conversation: str, note: str = "") -> str:
    head = f"Conversation: {conversation}\n" if conversation else ""
    return head + f"Request: {request}" + (f"\n{note}" if note else "")


@dataclass(frozen=True)
class IntentPrompt:
    """Instructions and demos of an intent classifier, as a reusable chat prefix.

    Attributes:
        instructions: What each intent means.
        demos: ``(conversation, request, intent)`` examples shown before every request, or
            ``(conversation, request, intent, evidence)`` when the program reads the checks'
            findings (the evidence line is shown after the demo's request, as for a request).
    """

    instructions: str
    demos: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def from_predict(cls, predict: dspy.Predict) -> IntentPrompt:
        """The prompt of a (compiled or zero-shot) ``Predict``: its instructions and its demos."""
        return cls.of(predict.signature.instructions, predict.demos)

    @classmethod
    def of(cls, instructions: str, demos: Sequence[Any]) -> IntentPrompt:
        """The prompt of ``instructions`` and DSPy demos (dicts or ``dspy.Example``s).

        Demos without a request or with an intent outside the six are left out; a demo's
        ``evidence`` (the checks' findings it was recorded with) is kept when it has one.
        """
        kept: list[tuple[str, ...]] = []
        for d in demos:
            get = d.get if isinstance(d, dict) else lambda k, default="", d=d: getattr(d, k, default)
            if get("intent", "") in INTENTS and get("request", ""):
                demo = (str(get("conversation", "") or ""), str(get("request", "")), str(get("intent", "")))
                evidence = str(get("evidence", "") or "")
                kept.append((*demo, evidence) if evidence else demo)
        return cls(instructions, tuple(kept))

    def prefix(self, tables: str) -> list[dict[str, Any]]:
        """The stable chat prefix for a database whose tables are ``tables``."""
        system = self.instructions.strip() + "\n\n" + ANSWER_RULE
        if tables:
            system += f"\nTables of the database: {tables}"
        out: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for conversation, request, intent, *evidence in self.demos:
            out.append({"role": "user", "content": _user_turn(request, conversation, "".join(evidence))})
            out.append({"role": "assistant", "content": intent})
        return out

    @staticmethod
    def request(request: str, conversation: str = "", note: str = "") -> list[dict[str, Any]]:
        """The per-request messages (the only tokens a decision evaluates).

        ``note`` is evidence about the request, on a line after it (the schema check's finding).
        """
        return [{"role": "user", "content": _user_turn(request, conversation, note)}]


@dataclass(frozen=True)
class OnePass:
    """An intent read from label probabilities.

    Attributes:
        intent: The most probable intent.
        confidence: Its probability among the six intents.
        scores: The whole distribution and the call's token accounting.
        usage: The call's usage (one LM call, the whole prompt's tokens, no completion).
    """

    intent: Intent
    confidence: float
    scores: ChoiceScores
    usage: Usage


def classify_one_pass(
    lm: Any, prompt: IntentPrompt, *, tables: str, request: str, conversation: str = "", note: str = ""
) -> OnePass | None:
    """Classify ``request`` in one forward pass, or None when ``lm`` cannot score labels.

    ``note`` (evidence about the request, such as the schema check's finding) is part of the
    per-request message, never of the cached prefix.
    """
    with usage_scope() as log:
        scores = score_choices(lm, prompt.prefix(tables), prompt.request(request, conversation, note), INTENTS)
    if scores is None:
        return None
    # the choices scored are the intents, so the best of them is one
    return OnePass(cast(Intent, scores.best), scores.confidence, scores, log.total())


def schema_summary(table_names: list[str]) -> str:
    """The compact schema summary an intent classifier (and the DSPy router's program) sees."""
    return ", ".join(table_names)


def tables_of(env: RouterEnv | None, state: PipelineState) -> str:
    """The turn's database tables as the classifier sees them (empty without a database)."""
    if env is None or env.open_db is None or not state.get("database"):
        return ""
    return schema_summary([t.name for t in env.open_db(state["database"]).tables()])
