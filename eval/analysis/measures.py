"""The measures a session comparison reports: one key and one name each, the glossary of docs/metrics.md.

Every surface (the console, the report, MLflow, CSV/Parquet, the Python API) names a measure by
its :attr:`Measure.key` in data (columns, metric names) and by its :attr:`Measure.name` in text.
A measure belongs to one part of a session: ``routing accuracy`` is a first decision and nothing
else; what the pipeline's own routing scored end to end is ``pipeline route``.
"""

from __future__ import annotations

from dataclasses import dataclass

from routerlab.eval.store import END_TO_END, ROUTING

__all__ = [
    "CHAIN_VALID",
    "DIVERTED",
    "EX",
    "MEASURES",
    "PART_NAMES",
    "PIPELINE_ROUTE",
    "ROUTING_ACCURACY",
    "SERVED",
    "SUCCESS",
    "Measure",
    "measure",
]

#: how text names each part of a session
PART_NAMES: dict[str, str] = {ROUTING: "routing", END_TO_END: "end to end"}


@dataclass(frozen=True)
class Measure:
    """One measure of a comparison.

    Attributes:
        key: Its one name in data: MLflow metrics, CSV columns, DataFrame columns, JSON.
        name: Its one name in text (tables, the verdict, the report).
        scorer: The stored score it reads (``""``: derived from the decision or several scores).
        part: The part of a session it belongs to (:data:`~routerlab.eval.store.PARTS`).
        higher_is_better: False for a share to keep low (``diverted``).
        meaning: One line for the glossary and the tables' legends.
    """

    key: str
    name: str
    scorer: str
    part: str
    higher_is_better: bool
    meaning: str


ROUTING_ACCURACY = Measure(
    "routing_accuracy",
    "routing accuracy",
    "first_decision",
    ROUTING,
    True,
    "share of requests whose first decision is the gold intent (or an accepted alternate)",
)
SUCCESS = Measure(
    "success",
    "success",
    "success",
    END_TO_END,
    True,
    "share of requests handled as their gold intent asks, through the whole pipeline",
)
SERVED = Measure(
    "served",
    "served",
    "",
    END_TO_END,
    True,
    "share of turns that got a correct answer, by asking back or directly (a clarification "
    "answered directly and correctly counts)",
)
EX = Measure(
    "ex",
    "EX",
    "ex",
    END_TO_END,
    True,
    "execution accuracy: the predicted SQL returns the gold SQL's result (sql, fix, clarify requests)",
)
PIPELINE_ROUTE = Measure(
    "pipeline_route",
    "pipeline route",
    "route",
    END_TO_END,
    True,
    "share of requests the pipeline sent down the gold intent's tool path (end to end, not the first decision)",
)
CHAIN_VALID = Measure(
    "chain_valid",
    "chain valid",
    "chain_valid",
    END_TO_END,
    True,
    "share of requests whose tool chain broke no rule",
)
DIVERTED = Measure(
    "diverted",
    "diverted",
    "",
    "",
    False,
    "share of data questions (gold sql) sent to chat, refuse, clarify or abstain; lower is better",
)

#: every measure, in the order tables show them
MEASURES: tuple[Measure, ...] = (ROUTING_ACCURACY, SERVED, SUCCESS, EX, PIPELINE_ROUTE, CHAIN_VALID, DIVERTED)
_BY_KEY = {m.key: m for m in MEASURES}


def measure(key: str) -> Measure:
    """The measure named ``key``; a scorer added with ``run --scorer`` is a measure of its own name."""
    if key in _BY_KEY:
        return _BY_KEY[key]
    return Measure(key, key, key, END_TO_END, True, f"the `{key}` scorer (added with run --scorer)")
