"""What the sections of ``routerlab perf`` share.

The figure, a clock over wrapped functions, a zero-latency LM, the loopback stub LM in its own
process, generated schemas and the p95.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routerlab.agents.lm import scripted_lm
from routerlab.stub_lm import LatencyServer

__all__ = ["CATEGORIES", "THEMES", "Clock", "PerfFigure", "p95", "schema_db", "stub_server", "zero_latency_lm"]


@dataclass
class PerfFigure:
    """One measured figure.

    Attributes:
        section: Which measurement it belongs to.
        name: What was measured.
        value: The number.
        unit: Its unit.
        goal: The target, in words ("" when there is none).
        met: Whether the goal is met (None when there is no goal).
    """

    section: str
    name: str
    value: float
    unit: str
    goal: str = ""
    met: bool | None = None


class Clock:
    """Thread-safe accumulators of seconds per category, for wrapped functions."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def add(self, key: str, seconds: float) -> None:
        with self._lock:
            self.seconds[key] = self.seconds.get(key, 0.0) + seconds

    def wrap(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            # a guard call inside Database.execute is counted as guard, not as SQL: track nesting
            outer = getattr(self._local, "active", None)
            self._local.active = key
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                self._local.active = outer
                self.add(key, dt)
                if outer is not None:
                    self.add(outer, -dt)

        return timed


def zero_latency_lm() -> Any:
    def reply(request: Any) -> Any:
        if request.tools:
            return {"name": "chat", "args": {"message": "hi"}}
        # header-less single-field replies are accepted by the lenient adapter for every program
        return "SELECT count(*) FROM service_areas"

    return scripted_lm(reply)


def _serve_stub(delay_s: float, urls: Any) -> None:
    with LatencyServer(delay_s) as server:
        urls.put(server.url)
        threading.Event().wait()


@contextmanager
def stub_server(delay_s: float) -> Iterator[str]:
    """An OpenAI-compatible stub on loopback, in its own process as a remote provider would be.

    In-process, its request handling competed with the runner's threads for the interpreter
    lock and capped the concurrency figure.
    """
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    urls = ctx.Queue()
    proc = ctx.Process(target=_serve_stub, args=(delay_s, urls), daemon=True)
    proc.start()
    try:
        yield urls.get(timeout=60)
    finally:
        proc.terminate()
        proc.join(10)


THEMES = (
    "stations",
    "vehicles",
    "drivers",
    "routes",
    "tolls",
    "tickets",
    "parcels",
    "depots",
    "shifts",
    "invoices",
    "suppliers",
    "contracts",
    "inspections",
    "repairs",
    "tyres",
    "fuel_cards",
    "lanes",
    "cameras",
    "incidents",
    "permits",
    "weather_logs",
    "sensors",
    "bridges",
    "tunnels",
    "signs",
    "rest_stops",
    "chargers",
    "parking_bays",
    "kiosks",
    "menus",
    "orders",
    "refunds",
    "complaints",
    "staff_rosters",
    "trainings",
    "audits",
    "budgets",
    "leases",
    "utilities",
    "lamps",
)


CATEGORIES = ("north", "south", "east", "west")


def schema_db(path: Path, n_tables: int) -> list[tuple[str, str]]:
    """A DuckDB file of ``n_tables`` themed tables; returns (question, gold SQL) pairs on two of them."""
    import duckdb

    con = duckdb.connect(str(path))
    try:
        for i, name in enumerate(THEMES[:n_tables]):
            con.execute(
                f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, label VARCHAR, category VARCHAR, amount DOUBLE, "
                "recorded DATE)"
            )
            con.execute(
                f"INSERT INTO {name} SELECT r, '{name[:-1]} ' || r, "
                f"['north', 'south', 'east', 'west'][1 + (r + {i}) % 4], r * 1.5, "
                "DATE '2024-01-01' + CAST(r AS INTEGER) FROM range(1, 31) t(r)"
            )
    finally:
        con.close()
    picks = [THEMES[n_tables // 2], THEMES[n_tables - 1]]
    return [
        (
            f"How many {t.replace('_', ' ')} are in the {c} category?",
            f"SELECT count(*) FROM {t} WHERE category = '{c}'",
        )
        for t, c in zip(picks, CATEGORIES, strict=False)
    ]


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
