"""``routerlab perf``: speed of the harness, the EX scorer, concurrency and the embedded model.

Every figure is measured here, in a benchmark command, never asserted in a test. The machines
this runs on are shared and noisy, so each section also reports a ratio against a baseline
measured in the same run, which is what to compare across machines.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

__all__ = ["PerfFigure", "concurrency_scaling", "ex_throughput", "harness_overhead", "model_speed", "run_perf"]


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
    from agents.lm import scripted_lm

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
    import agents.db.database as database_mod
    import agents.tools.subagents as subagents_mod
    import benchmarks.runner as runner_mod
    from benchmarks.builtin import load_builtin
    from benchmarks.runner import RouterRun, RunConfig, build_scorers
    from benchmarks.selection import stratified_subset
    from eval.store import ResultsStore
    from eval.tracking import MlflowSink

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
        from benchmarks.dataset import Dataset

        ds = Dataset("builtin", "perf", list(examples), source="builtin")
        store.create_run("perf.rules", router="rules", lm="scripted", dataset=ds, split="all", config={}, params={})
        mlflow_id = sink.start_run(rr.router, "scripted", ds, {"perf": True}, run_key="perf.rules", split="all")
        rr.run_example(examples[0])  # warm-up: imports, first connections
        clock.seconds.clear()
        t0 = time.perf_counter()
        for e in examples:
            t = time.perf_counter()
            result = rr.run_example(e)
            clock.add("run_example", time.perf_counter() - t)
            t = time.perf_counter()
            store.add_result("perf.rules", result)
            sink.log_example(mlflow_id, result, question=e.question)
            clock.add("tracking", time.perf_counter() - t)
        wall = time.perf_counter() - t0
        sink.finish_run(mlflow_id, store.results("perf.rules"), status="FINISHED")
    s, n = clock.seconds, len(examples)
    graph = s.get("run_example", 0.0) - s.get("scoring", 0.0) - s.get("guard", 0.0) - s.get("sql", 0.0)
    per = {k: 1000 * v / n for k, v in {"graph": graph, **s}.items() if k != "run_example"}
    harness = per["graph"] + per.get("guard", 0.0) + per.get("tracking", 0.0) + per.get("scoring", 0.0)
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
        pairs.append((db, gold, pred))
        i += 1
    return pairs


def _plain_loop(pairs: Sequence[tuple[str, str, str]]) -> int:
    """The baseline: open, run both, compare, for every pair; no cache, one thread, no timeout."""
    from eval.scorers.execution import results_match

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

    Compares the plain sequential loop with the ``ex`` scorer (read-only connections, guard,
    real timeouts, gold results cached per database and SQL) on one thread and on ``workers``.

    Returns:
        Pairs per second for each way, and the speed-up over the plain loop.
    """
    from agents.trace import Trace
    from benchmarks.example import Example
    from eval.scorers.execution import ExecutionAccuracy

    with tempfile.TemporaryDirectory() as d:
        pairs = _ex_pairs(Path(d), n_pairs, n_dbs=4, rows=rows)
        t0 = time.perf_counter()
        base_hits = _plain_loop(pairs)
        base = time.perf_counter() - t0
        items = [
            (Example(f"p{i}", "q", "db", db, "sql", gold_sql=gold), Trace(f"p{i}", sql=pred))
            for i, (db, gold, pred) in enumerate(pairs)
        ]

        def scored(n_workers: int) -> tuple[float, int]:
            scorer = ExecutionAccuracy(timeout_s=10.0)
            t = time.perf_counter()
            if n_workers == 1:
                values = [scorer.score(e, tr).value for e, tr in items]
            else:
                with ThreadPoolExecutor(n_workers) as pool:
                    values = list(pool.map(lambda it: scorer.score(*it).value, items))
            return time.perf_counter() - t, int(sum(v or 0 for v in values))

        seq, seq_hits = scored(1)
        par, par_hits = scored(workers)
    if not base_hits == seq_hits == par_hits:
        raise RuntimeError(f"EX disagreement: plain {base_hits}, scorer {seq_hits}, parallel {par_hits}")
    rate = lambda s: round(len(pairs) / s, 1)  # noqa: E731
    return [
        PerfFigure("ex", "plain sequential loop", rate(base), "pairs/s"),
        PerfFigure("ex", "ex scorer, 1 thread, gold cache", rate(seq), "pairs/s"),
        PerfFigure("ex", f"ex scorer, {workers} threads, gold cache", rate(par), "pairs/s"),
        PerfFigure("ex", "speed-up over the plain loop", round(base / par, 2), "x", ">= 2x", base / par >= 2),
        PerfFigure("ex", "pairs scored (all three agree)", len(pairs), "pairs"),
    ]


class _StubHandler(BaseHTTPRequestHandler):
    delay_s = 0.2

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        time.sleep(self.delay_s)
        body = json.dumps(
            {
                "id": "stub",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "SELECT count(*) FROM service_areas"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _stub_server(delay_s: float) -> Iterator[str]:
    handler = type("Handler", (_StubHandler,), {"delay_s": delay_s})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def concurrency_scaling(workers: Sequence[int] = (1, 2, 4, 8, 16), n_examples: int = 32) -> list[PerfFigure]:
    """Runner throughput against an OpenAI-compatible stub on loopback that sleeps 200 ms a call.

    The ``rules`` router on built-in chat and explain requests: one LM call each, through LiteLLM
    exactly as a remote provider, with the response cache off.
    """
    from agents.lm import resolve_lm
    from benchmarks.builtin import load_builtin
    from benchmarks.runner import RouterRun, RunConfig, build_scorers, run_router

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


def model_speed(spec: str = "local", questions: int = 3) -> list[PerfFigure]:
    """SQL-generation latency of the embedded model on the built-in schema, and prefix reuse.

    Runs ``generate_sql``'s program on built-in questions twice: after a reset of the model's
    KV cache (cold) and right after another question on the same schema (warm, the shared
    prefix is reused); also counts prompt tokens with the full schema and after linking.
    """
    import dspy

    from agents.db import open_database
    from agents.lm import resolve_lm
    from agents.lm.adapter import lm_context
    from agents.tools.context import ToolContext
    from agents.tools.programs import SQLPrograms
    from agents.tools.subagents import _relevant_tables
    from benchmarks.builtin import builtin_database_path, load_builtin

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
        schema = db.schema_text(_relevant_tables(ctx, q))
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


def alternating_prefixes(spec: str = "local", questions: int = 2) -> list[PerfFigure]:
    """A router tool call and a ``generate_sql`` call, interleaved, with saved prefix states on and off.

    This is the ``llm`` router's pattern: the prompt switches between the router's (tool schemas +
    conversation) and a sub-agent's (schema + question) at every step, so the live KV cache alone
    never shares a prefix with the next prompt. The engine's saved prefix states
    (``LlamaEngine.prefix_states``) restore the longest matching earlier prompt instead.
    """
    from agents.db import open_database
    from agents.lm import resolve_lm
    from agents.lm.adapter import lm_context
    from agents.lm.chat import chat
    from agents.tools import DEFAULT_TOOLS
    from agents.tools.programs import SQLPrograms
    from benchmarks.builtin import builtin_database_path, load_builtin

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


def run_perf(*, quick: bool = False, model: bool = False, lm: str = "local") -> list[PerfFigure]:
    """Run every section (``quick``: smaller sizes; ``model``: also time the embedded model)."""
    figures = harness_overhead(24 if quick else 120)
    figures += ex_throughput(1000, rows=5_000 if quick else 20_000)
    figures += concurrency_scaling((1, 4, 16) if quick else (1, 2, 4, 8, 16), 32 if quick else 64)
    if model:
        figures += model_speed(lm, 2 if quick else 5)
        figures += alternating_prefixes(lm, 2 if quick else 3)
    return figures


def figures_json(figures: Sequence[PerfFigure]) -> str:
    """The figures as a JSON document."""
    return json.dumps([asdict(f) for f in figures], indent=2)
