"""The unit every dataset yields and every run replays."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from routerlab.agents.state import INTENTS

__all__ = ["DIFFICULTIES", "MAX_QUESTION_CHARS", "SPLITS", "Example"]

#: longest question a dataset may hold: the longest SQL the guard reads (a question that quotes a
#: query for explain or fix stays far below it; the API's bound is 8,000)
MAX_QUESTION_CHARS = 20_000

SPLITS: tuple[str, ...] = ("train", "dev", "test")
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "extra")


@dataclass(frozen=True)
class Example:
    """One request to the assistant, with everything needed to score it.

    Attributes:
        id: Unique within its dataset.
        question: The request exactly as the user sends it (for explain/fix it contains the SQL,
            and for fix the error text).
        db_id: Database identifier within the dataset.
        db_path: Path of the DuckDB or SQLite file the request is about.
        intent: Gold intent: one of ``sql, explain, fix, chat, clarify, refuse``.
        alt_intents: Other intents that are honestly acceptable for this request.
        gold_sql: Gold SQL (required for ``sql`` and ``fix``; for ``clarify``, the SQL that
            answers the question once the scripted reply is known).
        expected_chain: The expected tool names in order (trajectory reference).
        difficulty: Spider-style hardness of ``gold_sql`` (easy/medium/hard/extra) or None.
        split: ``train``, ``dev`` or ``test``.
        user_reply: Scripted reply to the clarifying question (``clarify`` only).
        hint: Evidence passed to SQL generation (BIRD), may be empty.
        input_sql: The SQL given inside explain/fix requests.
        error_text: The real error text of ``input_sql`` (fix requests).
        dataset: Name of the dataset the example came from.
        conversation: Id of the multi-turn conversation the request belongs to (None: a single
            request). The runner replays a conversation's turns in order, each seeing the
            earlier turns as the pipeline answered them.
        turn: Position of the request in its conversation, from 1 (1 for a single request).
        turns: Number of turns of its conversation (1 for a single request).
        meta: Loader-specific extra fields (kept, never interpreted by scorers).
    """

    id: str
    question: str
    db_id: str
    db_path: str
    intent: str
    alt_intents: tuple[str, ...] = ()
    gold_sql: str | None = None
    expected_chain: tuple[str, ...] = ()
    difficulty: str | None = None
    split: str = "dev"
    user_reply: str | None = None
    hint: str = ""
    input_sql: str | None = None
    error_text: str | None = None
    dataset: str = ""
    conversation: str | None = None
    turn: int = 1
    turns: int = 1
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Validation lives here so every loader gets it; loaders wrap the ValueError with the
        # file/record/field context in a DatasetError.
        if self.intent not in INTENTS:
            raise ValueError(f"intent must be one of {INTENTS}, got {self.intent!r}")
        if isinstance(self.question, str) and len(self.question) > MAX_QUESTION_CHARS:
            raise ValueError(
                f"question must be at most {MAX_QUESTION_CHARS} characters, got {len(self.question)}: shorten it"
            )
        if isinstance(self.question, str):
            try:
                self.question.encode("utf-8")
            except UnicodeEncodeError as exc:
                # a lone surrogate (from a JSON escape) would crash the example mid-run, not here
                raise ValueError(
                    f"question must be valid Unicode text, got a lone surrogate at character {exc.start}"
                ) from None
        bad_alt = [i for i in self.alt_intents if i not in INTENTS]
        if bad_alt:
            raise ValueError(f"alt_intents must be among {INTENTS}, got {bad_alt}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.difficulty is not None and self.difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {DIFFICULTIES} or None, got {self.difficulty!r}")
        if self.intent in ("sql", "fix") and not self.gold_sql:
            raise ValueError(f"a {self.intent!r} example needs gold_sql")
        if self.intent == "clarify" and not self.user_reply:
            raise ValueError("a 'clarify' example needs the scripted user_reply")
        if self.intent == "fix" and not (self.input_sql and self.error_text):
            raise ValueError("a 'fix' example needs input_sql and its real error_text")
        for name, value in (("turn", self.turn), ("turns", self.turns)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.turn > self.turns:
            raise ValueError(f"turn {self.turn} is past the conversation's {self.turns} turns")
        if self.turn > 1 and not self.conversation:
            raise ValueError("a later turn (turn > 1) needs the id of its conversation")

    @property
    def accepted_intents(self) -> tuple[str, ...]:
        """The gold intent followed by the acceptable alternates."""
        return (self.intent, *self.alt_intents)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (tuples become lists)."""
        d = asdict(self)
        d["alt_intents"] = list(self.alt_intents)
        d["expected_chain"] = list(self.expected_chain)
        return d
