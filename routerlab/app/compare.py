"""Comparing stored runs: the one model of a session's comparison, and its renderings for ``routerlab compare``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from routerlab.agents.errors import ConfigError
from routerlab.app.defaults import DEFAULT_STORE_PATH
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.analysis.frames import export, rates_frame
from routerlab.eval.analysis.markdown import document
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.store import ResultsStore

__all__ = ["FORMATS", "compare", "export_compared", "rates_csv", "render_compared"]

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
    return build_comparison(ResultsStore(store, read_only=True), [ids] if isinstance(ids, str) else list(ids))


def render_compared(model: SessionComparison, fmt: str = "table", *, width: int | None = None) -> str:
    """The comparison as ``routerlab compare`` prints it: ``table`` (fits ``width``), ``markdown`` or ``json``.

    Raises:
        ConfigError: Another format.
    """
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
    return export(model, out_dir, fmt)


def rates_csv(model: SessionComparison, fmt: str = "csv") -> str:
    """Every part's rates as one CSV text (a ``part`` column): ``compare --format csv`` without ``--out-dir``.

    Raises:
        ConfigError: ``parquet``, which only writes files.
    """
    if fmt != "csv":
        raise ConfigError(
            f"--format {fmt} writes files",
            expected="--out-dir DIR",
            found="no --out-dir",
            fix="pass --out-dir DIR (or --format csv to print the rates)",
        )
    frames = [rates_frame(model, p.key).reset_index().assign(part=p.key) for p in model.parts]
    return str(pd.concat(frames).to_csv(index=False))
