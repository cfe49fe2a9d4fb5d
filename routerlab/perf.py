"""``routerlab perf``: speed of the harness, the EX scorer, concurrency and the embedded model.

Long because each benchmark (harness, EX scorer, concurrency, model) is measured here end to end.

Every figure is measured here, in a benchmark command, never asserted in a test. The machines
this runs on are shared and noisy, so each section also reports a ratio against a baseline
measured in the same run, which is what to compare across machines.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from routerlab.agents.registry import Registry
from routerlab.stub_lm import LatencyServer

_log = logging.getLogger(__name__)

__all__ = [
    "PerfFigure",
    "candidate_decoding",
    "concurrency_scaling",
    "ex_throughput",
    "first_decision_cost",
    "harness_overhead",
    "model_speed",
    "perf_section",
    "pipeline_split",
    "router_replay",
    "routing_prefix_reuse",
    "rules_scaling",
    "run_perf",
    "schema_scaling",
    "stage_seconds",
]


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


class _Clock:
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


def _zero_latency_lm() -> Any:
    from routerlab.agents.lm import scripted_lm

    def reply(request: Any) -> Any:
        if request.tools:
            return {"name": "chat", "args": {"message": "hi"}}
        # header-less single-field replies are accepted by the lenient adapter for every program
        return "SELECT count(*) FROM service_areas"

    return scripted_lm(reply)


def harness_overhead(n_examples: int = 60) -> list[PerfFigure]:
    """The pipeline, scoring and tracking with a zero-latency scripted LM, split by component.

    Args:
        n_examples: Built-in examples replayed with the ``rules`` router.

    Returns:
        Milliseconds per example for graph, guard, SQL execution, scoring and tracking.
    """
    import routerlab.agents.db.database as database_mod
    import routerlab.agents.tools.subagents as subagents_mod
    import routerlab.runner as runner_mod
    from routerlab.benchmarks.builtin import load_builtin
    from routerlab.eval.store import ResultsStore
    from routerlab.eval.tracking import MlflowSink
    from routerlab.runner import RouterRun, RunConfig, build_scorers
    from routerlab.selection import stratified_subset

    examples = stratified_subset(load_builtin().split("all"), n_examples)
    config = RunConfig()
    clock = _Clock()
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(database_mod, "check_sql", clock.wrap("guard", database_mod.check_sql)))
        stack.enter_context(mock.patch.object(subagents_mod, "check_sql", clock.wrap("guard", subagents_mod.check_sql)))
        stack.enter_context(
            mock.patch.object(database_mod.Database, "execute", clock.wrap("sql", database_mod.Database.execute))
        )
        stack.enter_context(mock.patch.object(runner_mod, "score_trace", clock.wrap("scoring", runner_mod.score_trace)))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        rr = RouterRun("rules", {}, _zero_latency_lm(), config, build_scorers(config))
        store = ResultsStore(str(tmp / "results.duckdb"))
        sink = MlflowSink(f"sqlite:///{tmp}/mlflow.db")
        from routerlab.benchmarks.dataset import Dataset

        ds = Dataset("builtin", "perf", list(examples), source="builtin")
        store.create_run("perf.rules", router="rules", lm="scripted", dataset=ds, split="all", config={}, params={})
        mlflow_id = sink.start_run(rr.router, "scripted", ds, {"perf": True}, run_key="perf.rules", split="all")
        rr.run_example(examples[0])  # warm-up: imports, first connections
        writer = stack.enter_context(store.writer("perf.rules"))  # as the session stores results
        clock.seconds.clear()
        t0 = time.perf_counter()
        for e in examples:
            t = time.perf_counter()
            result = rr.run_example(e)
            clock.add("run_example", time.perf_counter() - t)
            t = time.perf_counter()
            writer.add(result)
            t_store = time.perf_counter()
            sink.log_example(mlflow_id, result, question=e.question)
            clock.add("tracking: results store", t_store - t)
            clock.add("tracking: mlflow", time.perf_counter() - t_store)
        wall = time.perf_counter() - t0
        sink.finish_run(mlflow_id, store.results("perf.rules"), status="FINISHED")
    s, n = clock.seconds, len(examples)
    graph = s.get("run_example", 0.0) - s.get("scoring", 0.0) - s.get("guard", 0.0) - s.get("sql", 0.0)
    per = {k: 1000 * v / n for k, v in {"graph": graph, **s}.items() if k != "run_example"}
    harness = sum(v for k, v in per.items() if k != "sql")
    figures = [PerfFigure("harness", f"{k} per example", round(v, 2), "ms") for k, v in sorted(per.items())]
    figures.append(PerfFigure("harness", "wall per example", round(1000 * wall / n, 2), "ms"))
    figures.append(
        PerfFigure(
            "harness", "harness excl. SQL execution", round(harness, 2), "ms", "<= 10 ms per example", harness <= 10
        )
    )
    return figures


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
    pairs = []
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
    from routerlab.eval.scorers.execution import results_match

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
    from routerlab.agents.db.guard import clear_guard_cache
    from routerlab.agents.trace import Trace
    from routerlab.benchmarks.example import Example
    from routerlab.eval.scorers.execution import ExecutionAccuracy

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


def _serve_stub(delay_s: float, urls: Any) -> None:
    with LatencyServer(delay_s) as server:
        urls.put(server.url)
        threading.Event().wait()


@contextmanager
def _stub_server(delay_s: float) -> Iterator[str]:
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


def concurrency_scaling(workers: Sequence[int] = (1, 2, 4, 8, 16), n_examples: int = 32) -> list[PerfFigure]:
    """Runner throughput against an OpenAI-compatible stub on loopback that sleeps 200 ms a call.

    The ``rules`` router on built-in chat and explain requests: one LM call each, through LiteLLM
    exactly as a remote provider, with the response cache off.
    """
    from routerlab.agents.lm import resolve_lm
    from routerlab.benchmarks.builtin import load_builtin
    from routerlab.runner import RouterRun, RunConfig, build_scorers, run_router

    pool = [e for e in load_builtin().split("all") if e.intent in ("chat", "explain")]
    examples = (pool * (n_examples // len(pool) + 1))[:n_examples]
    figures = []
    with _stub_server(0.2) as base:
        lm = resolve_lm("openai/stub", api_base=base, api_key="stub", cache=False)
        config = RunConfig(lm="openai/stub")
        rates = {}
        for k in workers:
            rr = RouterRun("rules", {}, lm, config, build_scorers(config))
            t = time.perf_counter()
            n = run_router(rr, examples, on_result=lambda _r: None, concurrency=k)
            rates[k] = n / (time.perf_counter() - t)
            figures.append(PerfFigure("concurrency", f"{k} workers", round(rates[k], 2), "examples/s"))
    top = max(workers)
    speedup = rates[top] / rates[min(workers)]
    figures.append(
        PerfFigure("concurrency", f"speed-up at {top} workers", round(speedup, 2), "x", ">= 10x at 16", speedup >= 10)
    )
    return figures


def router_replay(n_examples: int = 24, delay_s: float = 0.2) -> list[PerfFigure]:
    """What a second router costs when the first one's sub-agent outcomes are stored.

    Against the loopback stub LM (``delay_s`` per call, as a remote provider): ``rules`` runs
    fresh and stores its outcomes; then ``oracle`` runs fresh (nothing stored) and replaying
    what ``rules`` stored, on every example and on those where the two routed alike (the goal's
    condition). A replayed call makes no LM call and no query; routing always runs. The
    share of calls replayed counts sub-agent calls only: a call that waits for the user
    (``ask_human``) computes nothing, so nothing is stored for it.
    """
    from dataclasses import replace as _replace

    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.tools import DEFAULT_TOOLS
    from routerlab.benchmarks.builtin import load_builtin
    from routerlab.runner import RouterRun, RunConfig, build_scorers, run_router
    from routerlab.selection import stratified_subset

    examples = stratified_subset(load_builtin().split("all"), n_examples)
    figures: list[PerfFigure] = []
    with tempfile.TemporaryDirectory() as d, _stub_server(delay_s) as base:
        lm = resolve_lm("openai/stub", api_base=base, api_key="stub", cache=False)
        stored = str(Path(d) / "outcomes.sqlite")

        def timed(router: str, cache: str, chosen: Sequence[Any]) -> tuple[float, list[Any]]:
            config = RunConfig(lm="openai/stub")
            config = _replace(config, pipeline=_replace(config.pipeline, replay=cache))
            rr = RouterRun(router, {}, lm, config, build_scorers(config))
            results: list[Any] = []
            t = time.perf_counter()
            run_router(rr, chosen, on_result=results.append)
            return time.perf_counter() - t, results

        first_s, first = timed("rules", stored, examples)
        figures.append(PerfFigure("replay", "first router (rules), fresh, storing outcomes", round(first_s, 2), "s"))
        chains = {r.example_id: [c["name"] for c in r.trace.tool_calls] for r in first if r.trace is not None}
        for label, chosen in (
            ("all examples", examples),
            ("examples routed alike", [e for e in examples if e.intent == _first_intent(first, e.id)]),
        ):
            fresh_s, _ = timed("oracle", str(Path(d) / f"fresh-{len(figures)}.sqlite"), chosen)
            replay_s, replayed = timed("oracle", stored, chosen)
            waits = {t.name for t in DEFAULT_TOOLS if t.interrupts}
            calls = [c for r in replayed if r.trace is not None for c in r.trace.tool_calls if c["name"] not in waits]
            alike = sum(
                1 for r in replayed if r.trace and [c["name"] for c in r.trace.tool_calls] == chains.get(r.example_id)
            )
            share = replay_s / fresh_s
            goal = label == "examples routed alike"
            figures += [
                PerfFigure("replay", f"second router (oracle), fresh, {label} ({len(chosen)})", round(fresh_s, 2), "s"),
                PerfFigure("replay", f"second router (oracle), replaying, {label}", round(replay_s, 2), "s"),
                PerfFigure(
                    "replay",
                    f"tool calls replayed, {label}",
                    round(sum(1 for c in calls if c.get("replayed")) / max(len(calls), 1), 3),
                    "fraction",
                ),
                PerfFigure("replay", f"examples with the same tool chain, {label}", alike, "examples"),
                PerfFigure(
                    "replay",
                    f"replayed cost / fresh cost, {label}",
                    round(share, 3),
                    "fraction",
                    "<= 0.10" if goal else "",
                    share <= 0.10 if goal else None,
                ),
            ]
    return figures


#: the texts that made the rules router quadratic (issue 50, item 6): each keyword was tried
#: against the whole rest of the text
RULES_WORST_TEXTS: dict[str, str] = {
    "select": "select ",
    "update": "update ",
    "mixed": "how many select from the areas update what is a certain ",
}


def rules_scaling(sizes: Sequence[int] = (16_000, 128_000), repeats: int = 3) -> list[PerfFigure]:
    """Seconds of one ``rules`` decision on the worst texts at each length, and their ratio.

    The ratio of the longest to the shortest is the figure to compare across machines: a
    linear router takes about ``sizes[-1] / sizes[0]`` times as long, a quadratic one its square
    (137 s for 128k characters before the fix). Best of ``repeats``, after one warm-up decision.
    """
    from routerlab.routers.rules import RulesRouter

    router = RulesRouter()
    figures: list[PerfFigure] = []
    growth = sizes[-1] / sizes[0]
    for label, text in RULES_WORST_TEXTS.items():
        router.match(text * 10)  # compiles the patterns and warms sqlglot
        seconds: list[float] = []
        for n in sizes:
            request = text * (n // len(text))
            best = math.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                router.match(request)
                best = min(best, time.perf_counter() - t0)
            seconds.append(best)
            figures.append(PerfFigure("rules scaling", f"{label!r} text, {n:,} characters", round(best, 4), "s"))
        ratio = seconds[-1] / max(seconds[0], 1e-6)
        figures.append(
            PerfFigure(
                "rules scaling",
                f"{label!r} text, {sizes[-1]:,} / {sizes[0]:,} characters",
                round(ratio, 1),
                "x",
                f"<= {2 * growth:g} (linear: {growth:g}, quadratic: {growth * growth:g})",
                ratio <= 2 * growth,
            )
        )
    return figures


def _first_intent(results: Sequence[Any], example_id: str) -> str | None:
    """The intent of an example's first routing decision in ``results`` (None if absent)."""
    for r in results:
        if r.example_id == example_id:
            return r.predicted_intent
    return None


def model_speed(spec: str = "local", questions: int = 3) -> list[PerfFigure]:
    """SQL-generation latency of the embedded model on the built-in schema, and prefix reuse.

    Runs ``generate_sql``'s program on built-in questions twice: after a reset of the model's
    KV cache (cold) and right after another question on the same schema (warm, the shared
    prefix is reused); also counts prompt tokens with the full schema and after linking.
    """
    import dspy

    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.tools.context import ToolContext
    from routerlab.agents.tools.programs import SQLPrograms
    from routerlab.agents.tools.schema_linking import overlap_tables
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin

    lm = resolve_lm(spec, cache=False)
    engine = getattr(lm, "_engine_spec", None)
    llama = engine.llama() if hasattr(engine, "llama") else None
    forget = getattr(engine, "forget_prefixes", None)
    db = open_database(builtin_database_path())
    programs = SQLPrograms()
    ctx = ToolContext(db=db, lm=lm, programs=programs)
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][:questions]
    cold, warm, linked_tokens, full_tokens = [], [], [], []
    full_schema = db.schema_text()
    for q in qs:
        schema = db.schema_text(overlap_tables(db, q, ctx.settings.max_tables))
        for label in ("cold", "warm"):
            if label == "cold" and forget is not None:
                forget()
            t = time.perf_counter()
            with lm_context(lm):
                programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
            (cold if label == "cold" else warm).append(time.perf_counter() - t)
        usage = lm.history[-1].get("usage") or {}
        linked_tokens.append(usage.get("prompt_tokens", 0))
        if llama is not None:
            full_tokens.append(
                len(llama.tokenize(full_schema.encode())) + linked_tokens[-1] - len(llama.tokenize(schema.encode()))
            )
    del dspy
    figures = [
        PerfFigure(
            "model",
            "generate_sql median, cold KV cache",
            round(statistics.median(cold), 2),
            "s",
            "<= 2 s",
            statistics.median(cold) <= 2,
        ),
        PerfFigure("model", "generate_sql median, shared prefix reused", round(statistics.median(warm), 2), "s"),
        PerfFigure(
            "model", "prefix-reuse saving", round(1 - statistics.median(warm) / statistics.median(cold), 3), "fraction"
        ),
        PerfFigure("model", "prompt tokens after linking (median)", statistics.median(linked_tokens), "tokens"),
    ]
    if full_tokens:
        figures.append(
            PerfFigure("model", "prompt tokens with the full schema (median)", statistics.median(full_tokens), "tokens")
        )
    return figures


_THEMES = (
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
_CATEGORIES = ("north", "south", "east", "west")


def _schema_db(path: Path, n_tables: int) -> list[tuple[str, str]]:
    """A DuckDB file of ``n_tables`` themed tables; returns (question, gold SQL) pairs on two of them."""
    import duckdb

    con = duckdb.connect(str(path))
    try:
        for i, name in enumerate(_THEMES[:n_tables]):
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
    picks = [_THEMES[n_tables // 2], _THEMES[n_tables - 1]]
    return [
        (
            f"How many {t.replace('_', ' ')} are in the {c} category?",
            f"SELECT count(*) FROM {t} WHERE category = '{c}'",
        )
        for t, c in zip(picks, _CATEGORIES, strict=False)
    ]


def schema_scaling(spec: str = "local", sizes: Sequence[int] = (5, 15, 40)) -> list[PerfFigure]:
    """SQL generation on schemas of several sizes: the full schema against data_discovery's linking.

    Each size gets a DuckDB file of themed tables and two counting questions on different tables.
    Every generation starts from a cold KV cache (saved prefixes forgotten), so the prompt's
    length is what is timed. Accuracy is EX against the gold SQL on the same file.
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.tools.context import ToolContext
    from routerlab.agents.tools.programs import SQLPrograms, clean_sql
    from routerlab.agents.tools.schema_linking import overlap_tables
    from routerlab.eval.scorers.execution import results_match

    lm = resolve_lm(spec, cache=False)
    forget = getattr(getattr(lm, "_engine_spec", None), "forget_prefixes", None)
    programs = SQLPrograms()
    figures: list[PerfFigure] = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            path = Path(d) / f"schema{n}.duckdb"
            pairs = _schema_db(path, n)
            db = open_database(path)
            ctx = ToolContext(db=db, lm=lm, programs=programs)
            for way in ("full schema", "linked"):
                seconds, tokens, hits, failed = [], [], 0, []
                for question, gold in pairs:
                    tables = None if way == "full schema" else overlap_tables(db, question, ctx.settings.max_tables)
                    schema = db.schema_text(tables)
                    if forget is not None:
                        forget()
                    t = time.perf_counter()
                    try:
                        with lm_context(lm):
                            pred = programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=question)
                    except Exception as exc:  # e.g. a prompt beyond the model's context window
                        failed.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                        continue
                    seconds.append(time.perf_counter() - t)
                    tokens.append((lm.history[-1].get("usage") or {}).get("prompt_tokens", 0))
                    try:
                        got = db.execute(clean_sql(pred.sql or ""), max_rows=100)
                        hits += results_match(got.rows, db.execute(gold).rows)[0]
                    except Exception:  # a failing prediction is a miss, not a crash
                        pass
                if failed:
                    _log.warning("%d tables, %s: %d call(s) failed: %s", n, way, len(failed), failed[0])
                    figures.append(PerfFigure("schemas", f"{n} tables, {way}: calls that failed", len(failed), "calls"))
                if not seconds:
                    continue
                med = statistics.median(seconds)
                figures += [
                    PerfFigure(
                        "schemas", f"{n} tables, {way}: generate_sql median", round(med, 2), "s", "<= 2 s", med <= 2
                    ),
                    PerfFigure("schemas", f"{n} tables, {way}: generate_sql max", round(max(seconds), 2), "s"),
                    PerfFigure(
                        "schemas", f"{n} tables, {way}: prompt tokens (median)", statistics.median(tokens), "tokens"
                    ),
                    PerfFigure("schemas", f"{n} tables, {way}: EX", hits / len(pairs), "fraction"),
                ]
    return figures


def alternating_prefixes(spec: str = "local", questions: int = 2) -> list[PerfFigure]:
    """A router tool call and a ``generate_sql`` call, interleaved, with saved prefix states on and off.

    This is the ``llm`` router's pattern: the prompt switches between the router's (tool schemas +
    conversation) and a sub-agent's (schema + question) at every step, so the live KV cache alone
    never shares a prefix with the next prompt. The engine's saved prefix states
    (``LlamaEngine.prefix_states``) restore the longest matching earlier prompt instead.
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.lm.chat import chat
    from routerlab.agents.tools import DEFAULT_TOOLS
    from routerlab.agents.tools.programs import SQLPrograms
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin

    db = open_database(builtin_database_path())
    schema = db.schema_text()
    tools = [t.openai_schema() for t in DEFAULT_TOOLS]
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][:questions]
    medians: dict[int, float] = {}
    for states in (0, 6):
        lm = resolve_lm(spec, cache=False, max_tokens=48, prefix_states=states)
        engine = lm._engine_spec  # type: ignore[attr-defined]
        engine.forget_prefixes()
        programs = SQLPrograms()
        seconds: list[float] = []
        for q in qs:
            for step in ("route", "generate"):
                t = time.perf_counter()
                if step == "route":
                    chat(lm, [{"role": "user", "content": q}], tools, tool_choice="required")
                else:
                    with lm_context(lm):
                        programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
                seconds.append(time.perf_counter() - t)
        # the first router and generate calls are cold either way; the rest show the reuse
        medians[states] = statistics.median(seconds[2:])
    return [
        PerfFigure("model", "alternating router/generate call, no saved prefixes (median)", round(medians[0], 2), "s"),
        PerfFigure("model", "alternating router/generate call, 6 saved prefixes (median)", round(medians[6], 2), "s"),
        PerfFigure("model", "saving from saved prefixes", round(1 - medians[6] / medians[0], 3), "fraction"),
    ]


def routing_prefix_reuse(spec: str = "local", questions: int = 6) -> list[PerfFigure]:
    """One-pass intent decisions: the routing prefix evaluated once, then only each request's tokens.

    Uses the ``dspy`` router's compiled prompt (instructions and demos) on dev requests of every
    intent: the first decision evaluates the prefix (cold); later ones truncate the live context
    back to it; after a ``generate_sql`` call took the context, the prefix comes back from its
    saved state. The same requests through the program's generation path give the comparison.
    Wall times are of this machine as shared at the time of the run.
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.tools.programs import SQLPrograms
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
    from routerlab.routers.dspy_router import RouteProgram, load_program
    from routerlab.routers.support.lm_intent import IntentPrompt, classify_one_pass
    from routerlab.routers.support.schema_outline import schema_outline

    lm = resolve_lm(spec, cache=False, max_tokens=48)
    engine = getattr(lm, "engine", None)
    if not hasattr(engine, "score_choices"):
        return [PerfFigure("routing", f"one-pass routing needs the embedded engine, not {spec}", math.nan, "")]
    engine.forget_prefixes()
    program, _ = load_program("builtin")
    prompt = IntentPrompt.from_predict(program.route)
    db = open_database(builtin_database_path())
    # the database as the program sees it (its saved schema view), so the prefix is the router's
    names = ", ".join(t.name for t in db.tables())
    tables = {"columns": schema_outline(db), "tables": names}.get(program.route.schema, "")
    dev = load_builtin().split("dev")
    by_intent: dict[str, list[str]] = {}
    for e in dev:
        by_intent.setdefault(e.intent, []).append(e.question)
    qs = [q for i in range(questions) for qs_ in by_intent.values() for q in qs_[i : i + 1]][:questions]
    runs = [classify_one_pass(lm, prompt, tables=tables, request=q) for q in qs]
    cold, warm = runs[0], [r for r in runs[1:] if r is not None]
    assert cold is not None
    restored = []
    programs = SQLPrograms()
    for q in qs[:2]:
        with lm_context(lm):  # another prompt takes the context: the next decision restores the prefix
            programs.generate(db_schema=db.schema_text(), dialect=db.dialect, hint="", question=q)
        r = classify_one_pass(lm, prompt, tables=tables, request=q)
        assert r is not None
        restored.append(r.scores.seconds)
    gen_seconds = []
    gen_program = RouteProgram(one_pass=False)
    gen_program.load_state(program.dump_state())
    for q in qs[:2]:
        t = time.perf_counter()
        with lm_context(lm):
            try:
                gen_program(tables=tables, request=q)
            except Exception:  # an unparsable reply still cost its time; the time is what is measured
                pass
        gen_seconds.append(time.perf_counter() - t)
    warm_s = statistics.median(r.scores.seconds for r in warm)
    return [
        PerfFigure("routing", "routing prefix tokens (evaluated once)", cold.scores.prefix_tokens, "tokens"),
        PerfFigure("routing", "first decision, prefix evaluated (cold)", round(cold.scores.seconds, 2), "s"),
        PerfFigure(
            "routing",
            "one-pass decision, prefix reused (median)",
            round(warm_s, 2),
            "s",
            "<= 0.6 s",
            warm_s <= 0.6,
        ),
        PerfFigure(
            "routing",
            "one-pass decision after a sub-agent call, prefix restored (median)",
            round(statistics.median(restored), 2),
            "s",
        ),
        PerfFigure(
            "routing",
            "tokens evaluated per decision, prefix reused (median)",
            statistics.median(r.scores.evaluated_tokens for r in warm),
            "tokens",
        ),
        PerfFigure(
            "routing",
            "prompt tokens per decision (median)",
            statistics.median(r.scores.prompt_tokens for r in warm),
            "tokens",
        ),
        PerfFigure(
            "routing",
            "prefix-reuse saving in evaluated tokens",
            round(1 - sum(r.scores.evaluated_tokens for r in warm) / sum(r.scores.prompt_tokens for r in warm), 3),
            "fraction",
        ),
        PerfFigure("routing", "same program by generation (median)", round(statistics.median(gen_seconds), 2), "s"),
    ]


def _first_questions(databases: Path | None, n: int, tmp: Path) -> list[Any]:
    """One sql example on each of ``n`` databases: a Spider-layout folder's, else generated ones."""
    from routerlab.benchmarks.example import Example

    if databases is not None:
        from routerlab.benchmarks.loaders.spider import load_spider

        firsts: dict[str, Any] = {}
        for e in load_spider(str(databases)).examples:
            firsts.setdefault(e.db_id, e)
        return [firsts[db] for db in sorted(firsts)[:n]]
    out = []
    for i in range(n):
        # different sizes, so each database's schema (the router's prefix) differs
        size = 6 + 6 * i
        path = tmp / f"schema{size}.duckdb"
        question, gold = _schema_db(path, size)[0]
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
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.prefix_disk import configured_prefix_disk
    from routerlab.route_eval import first_decisions

    lm = resolve_lm(spec, cache=False)
    engine = getattr(lm, "engine", None)
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


def sql_decoding(spec: str = "local", questions: int = 5, draft: int = 10) -> list[PerfFigure]:
    """``generate_sql`` with and without prompt-lookup decoding, same prompts, same warm prefix.

    Each engine first evaluates the whole built-in schema once (a generate_sql call, timed as
    the cold prefill), then answers the same dev questions greedily with that prefix reused,
    as the pipeline does for consecutive questions on one database. Reported per engine: p50
    seconds per SQL call, completion tokens per second over those calls, and how many SQL
    outputs are identical to the plain engine's (greedy decoding must not change them).
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.lm.local import clear_models
    from routerlab.agents.tools.programs import SQLPrograms
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin

    db = open_database(builtin_database_path())
    schema = db.schema_text()
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][: questions + 1]
    runs: dict[int, tuple[float, list[float], list[int], list[str]]] = {}
    for n_draft in (0, draft):
        clear_models()  # one model in memory at a time; each engine starts cold
        # two saved prefixes: with a draft model every state also holds the logits of each token
        lm = resolve_lm(spec, cache=False, max_tokens=256, prefix_states=2, draft=n_draft)
        programs = SQLPrograms()
        seconds, tokens, sqls = [], [], []
        for i, q in enumerate(qs):
            t = time.perf_counter()
            with lm_context(lm):
                pred = programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
            dt = time.perf_counter() - t
            if i == 0:
                cold = dt
                continue
            seconds.append(dt)
            tokens.append((lm.history[-1].get("usage") or {}).get("completion_tokens", 0))
            sqls.append(pred.sql or "")
        runs[n_draft] = (cold, seconds, tokens, sqls)
    clear_models()
    figures = []
    for n_draft, (cold, seconds, tokens, _sqls) in runs.items():
        way = f"prompt lookup ({n_draft} drafted)" if n_draft else "plain decoding"
        figures += [
            PerfFigure("sql decoding", f"{way}: first call, schema prefill included", round(cold, 2), "s"),
            PerfFigure(
                "sql decoding", f"{way}: p50 per SQL call, prefix reused", round(statistics.median(seconds), 2), "s"
            ),
            PerfFigure("sql decoding", f"{way}: completion tokens/s", round(sum(tokens) / sum(seconds), 2), "tok/s"),
        ]
    plain, drafted = runs[0][3], runs[draft][3]
    same = sum(a == b for a, b in zip(plain, drafted, strict=True))
    speedup = statistics.median(runs[0][1]) / statistics.median(runs[draft][1])
    figures += [
        PerfFigure("sql decoding", "identical SQL with and without prompt lookup", same, f"of {len(plain)}"),
        PerfFigure(
            "sql decoding",
            "p50 speed-up from prompt lookup",
            round(speedup, 2),
            "x",
            "> 1 and identical",
            speedup > 1 and same == len(plain),
        ),
    ]
    return figures


def candidate_decoding(
    spec: str = "local", questions: int = 3, sizes: Sequence[int] = (1, 2, 4, 8), temperature: float = 0.7
) -> list[PerfFigure]:
    """N SQL candidates per question decoded together (one batch) against one after another.

    The chat framing's request (``agents/tools/framing.py``) on built-in dev questions, with the
    schema prefix warm in both ways (a first question, not timed, evaluates it). Batched: one
    :meth:`LlamaEngine.sample_candidates` call per question (greedy sequence plus N-1 samples).
    One by one: the greedy chat call and N-1 sampled ones (seeds 1..N-1), as execution-guided
    selection samples today. Reported per N: p50 seconds per question each way, generated tokens
    per second of the batched decode, and distinct candidates per question.
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.tools.framing import CHAT_MAX_TOKENS, chat_messages
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin

    lm = resolve_lm(spec, cache=False)
    engine = getattr(lm, "_engine_spec", None)
    if not hasattr(engine, "sample_candidates"):
        return [PerfFigure("sql candidates", "skipped: not the embedded engine", 0, "")]
    llm = engine.llama()
    db = open_database(builtin_database_path())
    schema = db.schema_text()
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][: questions + 1]
    msgs = [chat_messages(schema=schema, dialect=db.dialect, hint="", question=q) for q in qs]
    # warm both contexts on the schema prefix (not timed)
    engine.sample_candidates(msgs[0], 1, max_tokens=CHAT_MAX_TOKENS)
    llm.create_chat_completion(messages=msgs[0], max_tokens=CHAT_MAX_TOKENS, temperature=0.0)
    figures = []
    for n in sizes:
        batched, one_by_one, rates, distinct, same_greedy = [], [], [], [], 0
        for m in msgs[1:]:
            t = time.perf_counter()
            got = engine.sample_candidates(m, n, temperature=temperature, max_tokens=CHAT_MAX_TOKENS)
            batched.append(time.perf_counter() - t)
            rates.append(got.generated_tokens / max(got.decode_seconds, 1e-9))
            distinct.append(len(set(got.texts)))
            t = time.perf_counter()
            greedy = ""
            for seed in range(n):
                out = llm.create_chat_completion(
                    messages=m,
                    max_tokens=CHAT_MAX_TOKENS,
                    temperature=0.0 if seed == 0 else temperature,
                    seed=seed,
                )
                greedy = greedy or out["choices"][0]["message"].get("content") or ""
            one_by_one.append(time.perf_counter() - t)
            same_greedy += greedy.strip() == got.texts[0].strip()
        b, o = statistics.median(batched), statistics.median(one_by_one)
        figures += [
            PerfFigure("sql candidates", f"N={n}: batched, p50 s per question", round(b, 2), "s"),
            PerfFigure("sql candidates", f"N={n}: one by one, p50 s per question", round(o, 2), "s"),
            PerfFigure(
                "sql candidates",
                f"N={n}: batched decode, generated tok/s (p50)",
                round(statistics.median(rates), 2),
                "tok/s",
            ),
            PerfFigure(
                "sql candidates",
                f"N={n}: distinct candidates per question (p50)",
                statistics.median(distinct),
                f"of {n}",
            ),
            PerfFigure(
                "sql candidates",
                f"N={n}: greedy candidate equals the plain greedy call",
                same_greedy,
                f"of {len(batched)}",
            ),
            PerfFigure(
                "sql candidates", f"N={n}: speed-up of batching", round(o / b, 2), "x", "> 1 for N > 1", n == 1 or o > b
            ),
        ]
    return figures


#: the pipeline's stages, by the tool whose call is timed as that stage
_STAGES: dict[str, str] = {
    "data_discovery": "discovery",
    "generate_sql": "generation",
    "execute_sql_and_analyze_result": "execution",
    "fix_sql": "repair",
}
_STAGE_ORDER = ("routing", "discovery", "generation", "execution", "repair", "other")


def stage_seconds(trace: Any) -> dict[str, float]:
    """One question's wall time split by stage: the router's decisions, each tool's calls, the rest.

    ``routing`` is the ``route`` node; each tool stage sums its calls' ``ended - started``;
    ``other`` is what remains of the example's wall time (dispatch, graph overhead, scoring
    excluded). Every stage is present, 0.0 when it did not run.
    """
    out = dict.fromkeys(_STAGE_ORDER, 0.0)
    out["routing"] = float(trace.node_latency_s.get("route", 0.0))
    for call in trace.tool_calls:
        stage = _STAGES.get(call.get("name", ""))
        if stage is not None and call.get("ended") and call.get("started"):
            out[stage] += call["ended"] - call["started"]
    out["other"] = max(0.0, trace.total_latency_s - sum(out.values()))
    return out


def _split_examples(databases: Path | None, n: int) -> list[Any]:
    """``n`` sql questions spread over the databases: a Spider-layout folder's, else the built-in dev split's."""
    if databases is None:
        from routerlab.benchmarks.builtin import load_builtin

        return [e for e in load_builtin().split("dev") if e.intent == "sql"][:n]
    from routerlab.benchmarks.loaders.spider import load_spider

    by_db: dict[str, list[Any]] = {}
    for e in load_spider(str(databases)).examples:
        by_db.setdefault(e.db_id, []).append(e)
    # round-robin over the databases, so every schema's prefill is in the figures
    out: list[Any] = []
    queues = [by_db[k] for k in sorted(by_db)]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def pipeline_split(
    spec: str = "local",
    databases: Path | None = None,
    n: int = 12,
    tools: dict[str, Any] | None = None,
    routers_: Sequence[str] = ("single_call", "oracle"),
) -> list[PerfFigure]:
    """Where a question's time goes: the routed pipeline's p50 per stage next to the plain call's.

    Runs the same ``n`` sql questions through each router (``single_call``: the plain call;
    ``oracle``: the pipeline with perfect routing) and reports, per router, the p50 seconds per
    question of each stage (:func:`stage_seconds`), the p50 and p95 per question, and the
    pipeline's p50 minus the plain call's (issue 40's target: at most 1 s). Each router starts
    with no evaluated prompt prefix (in memory or on disk), so the order of ``routers_`` does not
    change the figures; within a router, questions on one database reuse their schema prefix as
    a run does.

    Args:
        spec: The LM.
        databases: A Spider-layout folder (None: the built-in benchmark's dev split).
        n: Questions.
        tools: Tool settings of the pipeline (``pipeline.tools`` of a run config; None: the defaults).
        routers_: The routers compared, the plain call first.
    """
    from routerlab import routers
    from routerlab.agents.graph import Pipeline, PipelineConfig
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.tools import ToolSettings

    lm = resolve_lm(spec, cache=False)
    forget = getattr(getattr(lm, "_engine_spec", None), "forget_prefixes", None)
    examples = _split_examples(databases, n)
    config = PipelineConfig(tools=ToolSettings(**(tools or {})))
    figures: list[PerfFigure] = []
    p50: dict[str, float] = {}
    for name in routers_:
        pipe = Pipeline(routers.router.build(name), lm, config=config)
        splits, totals = [], []
        # every router starts cold: without this the second one finds the first one's schema
        # prefixes evaluated (in memory or on disk) and its figures depend on the run order
        # (measured 2026-11-26: the pipeline came out 3.9 s below the plain call it runs after)
        if forget is not None:
            forget()
        with mock.patch.dict(os.environ, {"ROUTERLAB_PREFIX_CACHE": "off"}):
            for e in examples:
                trace = pipe.run(e.question, e.db_path, oracle_intent="sql", example_id=e.id)
                splits.append(stage_seconds(trace))
                totals.append(trace.total_latency_s)
        p50[name] = statistics.median(totals)
        for stage in _STAGE_ORDER:
            value = statistics.median(s[stage] for s in splits)
            figures.append(PerfFigure("pipeline split", f"{name}: p50 {stage}", round(value, 3), "s"))
        figures += [
            PerfFigure("pipeline split", f"{name}: p50 per question", round(p50[name], 3), "s"),
            PerfFigure("pipeline split", f"{name}: p95 per question", round(_p95(totals), 3), "s"),
        ]
    if len(routers_) > 1:
        plain, routed = routers_[0], routers_[-1]
        gap = p50[routed] - p50[plain]
        figures.append(
            PerfFigure(
                "pipeline split",
                f"{routed} p50 minus {plain} p50",
                round(gap, 3),
                "s",
                "<= 1 s",
                gap <= 1.0,
            )
        )
    return figures


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass(frozen=True)
class _Sizes:
    """What every section is told: the sizes asked for, the LM and the databases."""

    quick: bool
    lm: str
    databases: Path | None


_Measure = Callable[["_Sizes"], list["PerfFigure"]]

#: the sections of ``routerlab perf`` by name, in the order a full run measures them; a model
#: section is run by ``--model`` or when named with ``--section``
perf_section: Registry[Callable[[_Sizes], list[PerfFigure]]] = Registry("perf section")
_ORDER: list[tuple[str, bool]] = []  # (name, runs the model), in measuring order


def _section(name: str, *, model: bool = False) -> Callable[[_Measure], _Measure]:
    def register(fn: _Measure) -> _Measure:
        _ORDER.append((name, model))
        return perf_section(name)(fn)

    return register


@_section("harness")
def _harness(z: _Sizes) -> list[PerfFigure]:
    return harness_overhead(24 if z.quick else 120)


@_section("ex throughput")
def _ex(z: _Sizes) -> list[PerfFigure]:
    return ex_throughput(1000, rows=5_000 if z.quick else 20_000)


@_section("concurrency")
def _concurrency(z: _Sizes) -> list[PerfFigure]:
    return concurrency_scaling((1, 4, 16) if z.quick else (1, 2, 4, 8, 16), 32 if z.quick else 64)


@_section("router replay")
def _replay(z: _Sizes) -> list[PerfFigure]:
    return router_replay(12 if z.quick else 36)


@_section("rules scaling")
def _rules_scaling(z: _Sizes) -> list[PerfFigure]:
    return rules_scaling(repeats=1 if z.quick else 3)


@_section("model speed", model=True)
def _model_speed(z: _Sizes) -> list[PerfFigure]:
    return model_speed(z.lm, 2 if z.quick else 5)


@_section("alternating prefixes", model=True)
def _alternating(z: _Sizes) -> list[PerfFigure]:
    return alternating_prefixes(z.lm, 2 if z.quick else 3)


@_section("routing prefix reuse", model=True)
def _routing_prefix(z: _Sizes) -> list[PerfFigure]:
    # its cold figure is a prefix evaluated, never one restored from an earlier run's disk state
    with mock.patch.dict(os.environ, {"ROUTERLAB_PREFIX_CACHE": "off"}):
        return routing_prefix_reuse(z.lm, 6 if z.quick else 12)


@_section("first decision", model=True)
def _first_decision(z: _Sizes) -> list[PerfFigure]:
    return first_decision_cost(z.lm, z.databases, 2 if z.quick else 3)


@_section("schema scaling", model=True)
def _schema(z: _Sizes) -> list[PerfFigure]:
    return schema_scaling(z.lm, (5, 15) if z.quick else (5, 15, 40))


@_section("sql decoding", model=True)
def _sql_decoding(z: _Sizes) -> list[PerfFigure]:
    return sql_decoding(z.lm, 3 if z.quick else 6)


@_section("sql candidates", model=True)
def _candidates(z: _Sizes) -> list[PerfFigure]:
    return candidate_decoding(z.lm, 2 if z.quick else 4, (1, 4) if z.quick else (1, 2, 4, 8))


@_section("pipeline split", model=True)
def _pipeline(z: _Sizes) -> list[PerfFigure]:
    return pipeline_split(z.lm, z.databases, 4 if z.quick else 12)


def run_perf(
    *,
    quick: bool = False,
    model: bool = False,
    lm: str = "local",
    databases: Path | None = None,
    sections: Sequence[str] = (),
) -> list[PerfFigure]:
    """Run every section (``quick``: smaller sizes; ``model``: also time the embedded model).

    ``databases``: a Spider-layout folder whose databases the first-decision cost is measured on
    (None: generated schemas; see :func:`first_decision_cost`). ``sections``: only these (by name,
    model sections included); every name is checked before anything is measured.

    Raises:
        UnknownComponentError: A section name that does not exist (the known ones listed).
    """
    chosen = [perf_section.get(name) for name in sections]  # a typo is said before any measuring
    if not sections:
        chosen = [perf_section.get(name) for name, needs_model in _ORDER if model or not needs_model]
    sizes = _Sizes(quick, lm, databases)
    return [figure for fn in chosen for figure in fn(sizes)]


def figures_json(figures: Sequence[PerfFigure]) -> str:
    """The figures as a JSON document."""
    return json.dumps([asdict(f) for f in figures], indent=2)
