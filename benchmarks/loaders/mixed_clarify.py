"""The mixer's ``clarify`` requests: a detail of the question (a WHERE literal, a LIMIT count) made vague.

The removed detail becomes the scripted user reply; the gold SQL stays the original.
"""

from __future__ import annotations

import random
import re

from sqlglot import exp

from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders import mixed_common as common

__all__ = ["derive_clarify"]

_REPLY_TEMPLATES: tuple[str, ...] = (
    "I mean {value}.",
    "The {column} I have in mind is {value}.",
    "{value}, please.",
    "Sorry, I meant {value}.",
)

#: vague phrases replacing a removed literal; ``{what}`` is the column in words
_VAGUE_PHRASES: tuple[str, ...] = (
    "a certain {what}",
    "a particular {what}",
    "the {what} I mentioned",
    "that {what}",
    "one specific {what}",
    "the {what} we talked about",
)

#: replies to a clarifying question about a removed LIMIT count
_LIMIT_REPLIES: tuple[str, ...] = ("The top {n}, please.", "Just {n}.", "I need {n} of them.")
_NUMBER_WORDS: dict[int, str] = {
    2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten",
}  # fmt: skip

#: (reason, template); templates using {column} are used only when a column of the table is known


def _literal_pattern(value: str) -> re.Pattern[str]:
    # the question may quote the value; the quotes go with it
    return re.compile(rf"(?<!\w)(['\"]?){re.escape(value)}\1(?!\w)", re.IGNORECASE)


def _clarify_candidates(tree: exp.Expr, question: str) -> list[tuple[str, str | None, bool]]:
    """``(value, column, is_string)`` of WHERE literals that appear in the question."""
    seen: set[str] = set()
    out: list[tuple[str, str | None, bool]] = []
    for where in tree.find_all(exp.Where):
        for lit in where.find_all(exp.Literal):
            value = str(lit.this)
            predicate = lit.find_ancestor(exp.Predicate)
            if isinstance(predicate, exp.Like | exp.ILike):
                value = value.strip("%")
            value = value.strip()
            # one character ("M", "3") matches too much ordinary text to be removed honestly
            if len(value) < 2 or value.lower() in seen or not _literal_pattern(value).search(question):
                continue
            seen.add(value.lower())
            column = predicate.find(exp.Column) if predicate is not None else None
            out.append((value, column.name if column is not None else None, bool(lit.is_string)))
    return out


def _clarify_literal(e: Example, rng: random.Random, tree: exp.Expr) -> Example | None:
    candidates = _clarify_candidates(tree, e.question)
    # prefer names over numbers: a vague "a certain country" reads better than "a certain year"
    strings = [c for c in candidates if c[2]]
    for value, column, _ in rng.sample(strings, len(strings)) + [c for c in candidates if not c[2]]:
        what = common.words(column) if column else "value"
        phrase = rng.choice(_VAGUE_PHRASES).format(what=what)
        pattern = _literal_pattern(value)
        question = pattern.sub(phrase, e.question)
        hint = pattern.sub(phrase, e.hint)
        if value.lower() in question.lower() or value.lower() in hint.lower():
            continue  # the vague phrase itself contains the value (e.g. a column named like it)
        templates = _REPLY_TEMPLATES if column else tuple(t for t in _REPLY_TEMPLATES if "{column}" not in t)
        reply = rng.choice(templates).format(value=value, column=what)
        return common.derived(
            e,
            "clarify",
            question,
            gold_sql=e.gold_sql,
            difficulty=e.difficulty,
            hint=hint,
            user_reply=reply,
            meta={"removed": "literal", "removed_literal": value, "column": column, "original_question": e.question},
        )
    return None


def _clarify_limit(e: Example, rng: random.Random, tree: exp.Expr) -> Example | None:
    """Replace the LIMIT count named in the question ("the 3 oldest") by "a few"."""
    limit = tree.args.get("limit")
    count = limit.expression if isinstance(limit, exp.Limit) else None
    if not isinstance(count, exp.Literal) or not str(count.this).isdigit() or int(str(count.this)) < 2:
        return None
    n = int(str(count.this))
    for text in (str(n), _NUMBER_WORDS.get(n)):
        pattern = re.compile(rf"(?<![\w.]){text}(?![\w.])", re.IGNORECASE) if text else None
        if pattern is None or len(pattern.findall(e.question)) != 1:
            continue  # absent, or ambiguous about which number is the count
        question = pattern.sub("a few", e.question)
        return common.derived(
            e,
            "clarify",
            question,
            gold_sql=e.gold_sql,
            difficulty=e.difficulty,
            hint=e.hint,
            user_reply=rng.choice(_LIMIT_REPLIES).format(n=text),
            meta={"removed": "limit", "removed_literal": text, "column": None, "original_question": e.question},
        )
    return None


def derive_clarify(e: Example, rng: random.Random, dbs: common.Databases) -> Example | None:
    """A ``clarify`` request from ``e``: a detail of its question made vague, or None (it stays ``sql``)."""
    db = dbs.get(e.db_path)
    tree = common.parse_query(e.gold_sql or "", db.dialect if db else None)
    if tree is None:
        return None
    makers = [_clarify_literal, _clarify_limit]
    rng.shuffle(makers)
    for make in makers:
        derived = make(e, rng, tree)
        if derived is not None:
            return derived
    return None
