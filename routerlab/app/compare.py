"""Comparing stored runs: the one model of a session's comparison, and its renderings for ``routerlab compare``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from routerlab.app.defaults import DEFAULT_STORE_PATH

if TYPE_CHECKING:
    from routerlab.eval.analysis.model import SessionComparison

__all__ = ["FORMATS", "compare", "export_compared", "render_compared"]

#: what ``routerlab compare --format`` takes: text to print, or files to write
FORMATS: tuple[str, ...] = ("table", "markdown", "json", "csv", "parquet")


def compare(ids: str | Sequence[str], *, store: str = DEFAULT_STORE_PATH) -> SessionComparison:
    """The comparison of a session or of stored runs (``routerlab compare`` in Python); only reads the store.

    Args:
        ids: A session id, or run ids (``SESSION.ROUTER``) and session ids.
        store: The DuckDB results store; a missing one is an error, never created.

    Returns:
        Every figure any view shows, part by part (:class:`~routerlab.eval.analysis.model.SessionComparison`).

    Raises:
        ConfigError: No such store, session or run.
    """
    from routerlab.eval.analysis.build import build_comparison
    from routerlab.eval.store import ResultsStore

    return build_comparison(ResultsStore(store, read_only=True), [ids] if isinstance(ids, str) else list(ids))


def render_compared(model: SessionComparison, fmt: str = "table", *, width: int | None = None) -> str:
    """The comparison as ``routerlab compare`` prints it: ``table`` (fits ``width``), ``markdown`` or ``json``.

    Raises:
        ConfigError: Another format.
    """
    from routerlab.agents.errors import ConfigError
    from routerlab.eval.analysis.console import render_console
    from routerlab.eval.analysis.markdown import document

    if fmt == "table":
        return render_console(model, width=width)
    if fmt == "markdown":
        return document(model)
    if fmt == "json":
        return model.to_json() + "\n"
    raise ConfigError(
        f"format {fmt!r} is not printed",
        expected="table, markdown or json (csv and parquet are written as files)",
        found=repr(fmt),
        fix="pass --format table|markdown|json, or --format csv|parquet with --out-dir DIR",
    )


def export_compared(model: SessionComparison, out_dir: str | Path, fmt: str = "csv") -> list[Path]:
    """Write every part's tables as CSV or Parquet files into ``out_dir``.

    See :func:`routerlab.eval.analysis.frames.export`.
    """
    from routerlab.eval.analysis.frames import export

    return export(model, out_dir, fmt)
