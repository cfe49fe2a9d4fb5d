"""``routerlab perf``'s SQL-decoding section: plain against speculative decoding, per SQL call.

Both ways run on one loaded model, question by question and in alternating order (plain first on
odd questions, speculative first on even ones), so load from other processes falls on both
alike. Every timed call starts from the same context: the schema prefix every question shares
(the first, untimed call evaluates it), so each evaluates its own question's tokens and then
decodes; only the decoding differs. The model's saved prompt states are off here: they would let
the second way of a question restore the first way's whole prompt.

Reported: p50 seconds per SQL call each way with a distribution-free 95 % interval (order
statistics), the p50 speed-up with a bootstrap interval over questions, completion tokens per
second, how many drafted tokens the model kept, the speed-up per question, and how many
questions got the same SQL. For a question whose reply differs, the first differing token and
its top-2 logit margin in the speculative run are listed (a near-tie: a batch of another shape
sums floats in another order).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binom

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.local import clear_models
from routerlab.agents.lm.speculative import NEAR_TIE, OFF
from routerlab.agents.tools.programs import SQLPrograms
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.perf._common import PerfFigure

__all__ = ["first_difference", "median_interval", "sql_decoding"]

_SECTION = "sql decoding"

#: the issue's goals for the p50 speed-up, per embedded model (other models: faster at all)
_GOALS = {"local": 1.8, "local:1.5b": 1.8, "local:0.5b": 1.5}


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval of the median: the order statistics a binomial count puts around it.

    With ``n`` values the ``l``-th and ``n + 1 - l``-th smallest cover the median with probability
    ``1 - 2 P(Bin(n, 1/2) < l)``; the largest ``l`` keeping that at least ``confidence`` is taken
    (too few values for it: the range).
    """
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return (math.nan, math.nan)
    low = 1
    while low + 1 <= n // 2 and 1 - 2 * binom.cdf(low, n, 0.5) >= confidence:
        low += 1
    return (ordered[low - 1], ordered[n - low])


def _speedup_interval(plain: list[float], fast: list[float], resamples: int = 2000) -> tuple[float, float]:
    """Bootstrap interval of ``p50(plain) / p50(fast)``, questions resampled as pairs."""
    a, b = np.asarray(plain), np.asarray(fast)
    rng = np.random.default_rng(0)
    pick = rng.integers(0, a.size, size=(resamples, a.size))
    ratios = np.median(a[pick], axis=1) / np.median(b[pick], axis=1)
    return (float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975)))


@dataclass
class _Call:
    seconds: float
    tokens: int
    sql: str
    reply: str


def first_difference(llm: Any, plain: str, decoded: Any) -> tuple[int, str, float]:
    """The first token of the speculative reply that leaves the plain reply, and its top-2 margin."""
    for j in range(len(decoded.tokens)):
        if not plain.startswith(llm.detokenize(decoded.tokens[: j + 1]).decode(errors="ignore")):
            piece = llm.detokenize([decoded.tokens[j]]).decode(errors="replace")
            return j, piece, decoded.margins[j]
    # the speculative reply is a prefix of the plain one: it ended first
    j = len(decoded.tokens)
    return j, "<end>", decoded.margins[j] if j < len(decoded.margins) else math.nan


def sql_decoding(spec: str = "local", questions: int = 6, drafter: str = "prompt_lookup") -> list[PerfFigure]:
    """``generate_sql`` decoded plainly and speculatively with ``drafter``, question by question.

    See the module docstring for the protocol. Questions are the built-in dev split's SQL
    questions after the first (which only warms the schema prefix).
    """
    db = open_database(builtin_database_path())
    schema = db.schema_text()
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][: questions + 1]
    clear_models()  # the only model in memory
    ways = (OFF, drafter)
    lms = {way: resolve_lm(spec, cache=False, max_tokens=256, prefix_states=0, speculative=way) for way in ways}
    engine: Any = getattr(lms[drafter], "_engine_spec", None)  # the embedded engine, when the LM has one
    if not hasattr(engine, "last_decoded"):
        return [PerfFigure(_SECTION, "skipped: not the embedded engine", 0, "")]
    llm = engine.llama()  # both engines share this loaded model
    programs = SQLPrograms()

    def ask(way: str, question: str) -> _Call:
        lm = lms[way]
        t = time.perf_counter()
        with lm_context(lm):
            pred = programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=question)
        seconds = time.perf_counter() - t
        reply = lm.history[-1]["outputs"][0]
        reply = reply if isinstance(reply, str) else str(reply.get("text", reply))
        tokens = (lm.history[-1].get("usage") or {}).get("completion_tokens", 0)
        return _Call(seconds, tokens, pred.sql or "", reply)

    t = time.perf_counter()
    ask(OFF, qs[0])
    cold = time.perf_counter() - t
    warm = [int(x) for x in llm.input_ids[: llm.n_tokens]]
    shared: int | None = None
    calls: dict[str, list[_Call]] = {OFF: [], drafter: []}
    decoded: list[Any] = []
    drafted = accepted = 0
    for i, q in enumerate(qs[1:]):
        for way in (OFF, drafter) if i % 2 == 0 else (drafter, OFF):
            if shared is not None:
                # back to the shared schema prefix: each call evaluates its own question
                llm.n_tokens = min(llm.n_tokens, shared)
            calls[way].append(ask(way, q))
            if shared is None:
                now = [int(x) for x in llm.input_ids[: llm.n_tokens]]
                shared = next((k for k, (a, b) in enumerate(zip(warm, now, strict=False)) if a != b), len(now))
            if way == drafter:
                decoded.append(engine.last_decoded)
                drafted += engine.last_decoded.drafted
                accepted += engine.last_decoded.accepted
    figures = [PerfFigure(_SECTION, "first call, schema prefill included (plain)", round(cold, 2), "s")]
    p50 = {}
    for way, got in calls.items():
        name = f"speculative ({way})" if way != OFF else "plain decoding"
        seconds = [c.seconds for c in got]
        p50[way] = statistics.median(seconds)
        low, high = median_interval(seconds)
        label = f"{name}: p50 per SQL call (95% interval {low:.2f}-{high:.2f} s)"
        figures += [
            PerfFigure(_SECTION, label, round(p50[way], 2), "s"),
            PerfFigure(
                _SECTION, f"{name}: completion tokens/s", round(sum(c.tokens for c in got) / sum(seconds), 2), "tok/s"
            ),
        ]
    plain, fast = calls[OFF], calls[drafter]
    speedup = p50[OFF] / p50[drafter]
    low, high = _speedup_interval([c.seconds for c in plain], [c.seconds for c in fast])
    same = sum(a.sql == b.sql for a, b in zip(plain, fast, strict=True))
    ties = True  # every differing reply parts at a near-tie
    goal = _GOALS.get(spec)
    figures += [
        PerfFigure(
            _SECTION, f"drafted tokens the model kept (of {drafted})", round(accepted / max(drafted, 1), 3), "share"
        ),
        PerfFigure(_SECTION, "identical SQL with and without speculative decoding", same, f"of {len(plain)}"),
    ]
    for i, (a, b, d) in enumerate(zip(plain, fast, decoded, strict=True), start=1):
        verdict = "same SQL" if a.sql == b.sql else "SQL differs"
        figures.append(
            PerfFigure(
                _SECTION,
                f"q{i}: speed-up ({verdict}; {a.seconds:.2f} s plain, {b.seconds:.2f} s speculative, "
                f"{d.accepted}/{d.drafted} drafts kept, {len(d.tokens)} tokens)",
                round(a.seconds / b.seconds, 2),
                "x",
            )
        )
        if a.reply != b.reply:
            j, piece, margin = first_difference(llm, a.reply, d)
            ties = ties and margin < NEAR_TIE
            label = f"q{i}: replies part at token {j} ({piece!r}): top-2 logit margin"
            figures.append(PerfFigure(_SECTION, label, round(margin, 4), "logit"))
    figures.append(
        PerfFigure(
            _SECTION,
            f"p50 speed-up from speculative decoding (95% interval {low:.2f}-{high:.2f})",
            round(speedup, 2),
            "x",
            f">= {goal}x, replies identical or parting at a near-tie (margin < {NEAR_TIE})"
            if goal
            else "> 1x, replies identical or parting at a near-tie",
            speedup >= (goal or 1.0) and ties,
        )
    )
    clear_models()
    return figures
