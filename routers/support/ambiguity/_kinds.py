"""The kinds of ambiguity, one finding, and what a detector of one kind is."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["AMBIGUITY_KINDS", "Ambiguity", "AmbiguityKind", "Detector"]


AmbiguityKind = Literal[
    "relative_period",
    "unnamed_period",
    "several_values",
    "unspecified_value",
    "unnamed_entity",
    "vague_quantity",
    "open_reference",
    "everything_about",
    "which_table",
    "which_column",
    "missing_measure",
    "id_without_table",
]


#: the kinds in their order (the rules router's and the checks' order), read off the Literal: one list
AMBIGUITY_KINDS: tuple[str, ...] = get_args(AmbiguityKind)


@dataclass(frozen=True)
class Ambiguity:
    """One thing a request leaves open that the database cannot settle.

    Attributes:
        kind: One of :data:`AMBIGUITY_KINDS`.
        term: The request's words that leave it open.
        question: The clarifying question to ask the user about it.
    """

    kind: AmbiguityKind
    term: str
    question: str


Detector = Callable[[str, "Database", _dt.date | None, Sequence["Turn"]], list[Ambiguity]]
