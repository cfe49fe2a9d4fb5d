"""``routerlab perf``'s EX section: the ``ex`` scorer's throughput against a plain loop."""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from routerlab.agents.db.guard import clear_guard_cache
from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers.execution import ExecutionAccuracy, results_match
from routerlab.perf._common import PerfFigure

__all__ = ["ex_throughput"]


def _make_sqlite(path: Path, seed: int, rows: int) -> None:
    import random

    rnd = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE shop (id INTEGER PRIMARY KEY, city TEXT, kind TEXT);"
        "CREATE TABLE sale (id INTEGER PRIMARY KEY, shop_id INTEGER, day TEXT, amount REAL, qty INTEGER);"
    )
    cities, kinds = ["Xian", "Chengdu", "Baoji", "Hanzhong"], ["Fuel", "Food", "Store"]
    con.executemany(
        "INSERT INTO shop VALUES (?, ?, ?)", [(i, rnd.choice(cities), rnd.choice(kinds)) for i in range(50)]
    )
    con.executemany(
        "INSERT INTO sale VALUES (?, ?, ?, ?, ?)",
        [
            (
                i,
                rnd.randrange(50),
                f"2024-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}",
                rnd.random() * 500,
                rnd.randint(1, 9),
            )
            for i in range(rows)
        ],
    )
    con.commit()
    con.close()


_GOLDS = [
    "SELECT count(*) FROM sale WHERE qty > {k}",
    "SELECT city, sum(amount) FROM sale JOIN shop ON shop.id = sale.shop_id WHERE qty >= {k} GROUP BY city",
    "SELECT kind, count(*) FROM shop JOIN sale ON shop.id = sale.shop_id WHERE sale.qty = {k} GROUP BY kind",
    "SELECT shop_id, max(amount) FROM sale WHERE qty < {k} GROUP BY shop_id ORDER BY shop_id",
    "SELECT day, count(*) FROM sale WHERE qty = {k} GROUP BY day ORDER BY day",
]


_PREDS = [
    "{gold}",
    "SELECT * FROM ({gold}) AS t",
    "SELECT count(*) FROM sale WHERE qty > {k} + 1",
    "SELECT city FROM shop WHERE kind = 'Fuel'",
    "SELECT nosuchcolumn FROM sale",
]


def _ex_pairs(directory: Path, n_pairs: int, n_dbs: int, rows: int) -> list[tuple[str, str, str]]:
    dbs = []
    for i in range(n_dbs):
        path = directory / f"db{i}.sqlite"
        _make_sqlite(path, i, rows)
        dbs.append(str(path))
    pairs: list[tuple[str, str, str]] = []
    i = 0
    while len(pairs) < n_pairs:
        db = dbs[i % n_dbs]
        gold = _GOLDS[(i // n_dbs) % len(_GOLDS)].format(k=(i // (n_dbs * len(_GOLDS))) % 5 + 1)
        pred = _PREDS[i % len(_PREDS)].format(gold=gold, k=(i // n_dbs) % 5 + 1)
        # every prediction's text is unique, as a model's would be: no cache may answer it
        pairs.append((db, gold, f"{pred} /* pair {i} */"))
        i += 1
    return pairs


def _plain_loop(pairs: Sequence[tuple[str, str, str]]) -> int:
    """The baseline: open, run both, compare, for every pair; no cache, one thread, no timeout."""
    hits = 0
    for db, gold, pred in pairs:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            g = con.execute(gold).fetchall()
            try:
                p = con.execute(pred).fetchall()
            except sqlite3.Error:
                continue
            hits += results_match(p, g)[0]
        finally:
            con.close()
    return hits


def ex_throughput(n_pairs: int = 1000, workers: int = 2, rows: int = 20_000) -> list[PerfFigure]:
    """EX scoring throughput on (prediction, gold) pairs over SQLite files.

    Compares the plain sequential loop (open, run both, compare; no guard, no timeout) with the
    ``ex`` scorer (guard, read-only connections, real timeouts): on the first run of the dataset
    (gold results computed and stored) and on a later run (gold results read from the on-disk
    cache), on one thread and on ``workers``.

    Returns:
        Pairs per second for each way, and the speed-up over the plain loop.
    """
    with tempfile.TemporaryDirectory() as d:
        pairs = _ex_pairs(Path(d), n_pairs, n_dbs=4, rows=rows)
        cache = str(Path(d) / "gold.sqlite")
        t0 = time.perf_counter()
        base_hits = _plain_loop(pairs)
        base = time.perf_counter() - t0
        items = [
            (Example(f"p{i}", "q", "db", db, "sql", gold_sql=gold), Trace(f"p{i}", sql=pred))
            for i, (db, gold, pred) in enumerate(pairs)
        ]

        def scored(n_workers: int) -> tuple[float, int]:
            # a new scorer and guard cache is a new run: nothing in memory, only what the disk holds
            clear_guard_cache()
            scorer = ExecutionAccuracy(timeout_s=10.0, gold_cache=cache)
            t = time.perf_counter()
            if n_workers == 1:
                values = [scorer.score(e, tr).value for e, tr in items]
            else:
                with ThreadPoolExecutor(n_workers) as pool:
                    values = list(pool.map(lambda it: scorer.score(*it).value, items))
            return time.perf_counter() - t, int(sum(v or 0 for v in values))

        first, first_hits = scored(1)
        seq, seq_hits = scored(1)
        par, par_hits = scored(workers)
    if not base_hits == first_hits == seq_hits == par_hits:
        raise RuntimeError(
            f"EX disagreement: plain {base_hits}, first run {first_hits}, cached {seq_hits}, parallel {par_hits}"
        )
    rate = lambda s: round(len(pairs) / s, 1)  # noqa: E731
    return [
        PerfFigure("ex", "plain sequential loop", rate(base), "pairs/s"),
        PerfFigure("ex", "ex scorer, first run (gold computed), 1 thread", rate(first), "pairs/s"),
        PerfFigure("ex", "ex scorer, later run (gold from disk), 1 thread", rate(seq), "pairs/s"),
        PerfFigure("ex", f"ex scorer, later run (gold from disk), {workers} threads", rate(par), "pairs/s"),
        PerfFigure("ex", "speed-up over the plain loop", round(base / par, 2), "x", ">= 2x", base / par >= 2),
        PerfFigure("ex", "pairs scored (all four agree)", len(pairs), "pairs"),
    ]
