"""``routerlab perf``'s first-decision section: the first routing decision on each database, cold and restored."""

from __future__ import annotations

import logging
import math
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from routerlab._routing_eval.decisions import first_decisions
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.prefix_disk import configured_prefix_disk
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders.spider import load_spider
from routerlab.perf._common import PerfFigure, schema_db

__all__ = ["first_decision_cost"]

_log = logging.getLogger(__name__)


def _first_questions(databases: Path | None, n: int, tmp: Path) -> list[Any]:
    """One sql example on each of ``n`` databases: a Spider-layout folder's, else generated ones."""
    if databases is not None:
        firsts: dict[str, Any] = {}
        for e in load_spider(str(databases)).examples:
            firsts.setdefault(e.db_id, e)
        return [firsts[db] for db in sorted(firsts)[:n]]
    out = []
    for i in range(n):
        # different sizes, so each database's schema (the router's prefix) differs
        size = 6 + 6 * i
        path = tmp / f"schema{size}.duckdb"
        question, gold = schema_db(path, size)[0]
        out.append(Example(f"perf-{size}", question, f"schema{size}", str(path), "sql", gold_sql=gold))
    return out


def first_decision_cost(spec: str = "local", databases: Path | None = None, n: int = 3) -> list[PerfFigure]:
    """The ``llm`` router's first decision on each database: prefix evaluated (cold) vs restored from disk (warm).

    The router's prompt prefix holds the database's schema outline, so the first decision on a
    database evaluates it. Per database: a first decision with no state of that prefix anywhere
    (cold; it is saved to a fresh disk store), then the in-memory states are dropped, as in a new
    process, and the same decision runs again (warm: the prefix comes back from disk). Wall times
    are of this machine as shared at the time of the run.

    Args:
        spec: The LM (the disk store only exists for the embedded engine).
        databases: A Spider-layout folder (e.g. ``../shared/data/spider-dev-a``); each of its
            first ``n`` databases (by name) with its first question. None: generated DuckDB
            schemas of 6, 12, 18... tables.
        n: How many databases.
    """
    lm = resolve_lm(spec, cache=False)
    engine: Any = getattr(lm, "engine", None)  # the embedded engine, when the LM has one
    if not hasattr(engine, "forget_prefixes"):
        return [PerfFigure("first decision", f"disk prefix states need the embedded engine, not {spec}", math.nan, "")]
    figures: list[PerfFigure] = []
    warm_all: list[float] = []
    with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"ROUTERLAB_PREFIX_CACHE": d + "/prefixes"}):
        disk = configured_prefix_disk()
        assert disk is not None
        for e in _first_questions(databases, n, Path(d)):
            runs = []
            for _ in ("cold", "warm"):
                engine.forget_prefixes()  # memory empty: cold finds nothing, warm finds only the disk
                (fd,) = first_decisions("llm", {}, [e], lm)
                if fd.error is not None:
                    raise RuntimeError(f"the llm router failed on {e.db_id}: {fd.error}")
                runs.append(fd)
            cold, warm = runs
            warm_all.append(warm.seconds)
            _log.info(
                "%s: first decision cold %.2f s (%d tokens evaluated), warm %.2f s (%d)",
                e.db_id,
                cold.seconds,
                cold.scored_tokens,
                warm.seconds,
                warm.scored_tokens,
            )
            figures += [
                PerfFigure("first decision", f"{e.db_id}: cold, prefix evaluated", round(cold.seconds, 2), "s"),
                PerfFigure("first decision", f"{e.db_id}: warm, prefix from disk", round(warm.seconds, 2), "s"),
                PerfFigure("first decision", f"{e.db_id}: tokens evaluated cold", cold.scored_tokens, "tokens"),
                PerfFigure("first decision", f"{e.db_id}: tokens evaluated warm", warm.scored_tokens, "tokens"),
            ]
        n_files = len(disk.entries())
        figures += [
            PerfFigure(
                "first decision",
                "warm first decision (median over databases)",
                round(statistics.median(warm_all), 2),
                "s",
                "<= 1 s",
                statistics.median(warm_all) <= 1,
            ),
            PerfFigure("first decision", "warm first decision (max)", round(max(warm_all), 2), "s"),
            PerfFigure(
                "first decision",
                "disk per saved prefix state (mean)",
                round(disk.total_bytes() / max(n_files, 1) / (1 << 20), 1),
                "MB",
            ),
        ]
    return figures
